# SPDX-License-Identifier: GPL-2.0 OR MIT
# shellcheck shell=sh
#
# vu-cli-lib.sh - sourced by test-vhost-cli.sh, test-virtiofsd-cli.sh and
# test-confine.sh: the daemon (`vqfuse-sim vhost-user` or
# vqfuse-virtiofsd) started in the background on socket $S with its
# stderr in $T/log, a front-end's first messages, its end.  The caller
# sets T (vu_tmp) and S; $pid is the daemon's.
#
# Waits are for events (a line in the log, the socket, the exit) and poll
# every 0.1 s; VU_HANG polls (300 s and more) only catch a hang, far
# beyond any phase of a run under valgrind on a loaded machine (ctest's
# TIMEOUT may end the test first).

VU_HANG=3000
fails=0
pid=

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# vu_tmp NAME: $T, a fresh directory removed at the end (with any daemon
# still running)
vu_tmp() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
	trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$T"' EXIT
	trap 'exit 1' INT TERM
}

# vu_start UNTIL CMD...: CMD in the background ($pid), stderr to $T/log;
# returns 0 once UNTIL happened - "listening" (the daemon's listening
# line) or "socket" ($S exists) - and 1 if the daemon ended first.
vu_start() {
	what=$1
	shift
	rm -f "$T/log"
	"$@" 2>"$T/log" &
	pid=$!
	i=0
	while [ $i -lt $VU_HANG ] && kill -0 "$pid" 2>/dev/null; do
		if [ "$what" = socket ]; then
			[ -S "$S" ] && return 0
		else
			grep -q "listening on" "$T/log" 2>/dev/null && return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	fail "the daemon ended (or hung) before: $what"
	sed 's/^/  | /' "$T/log"
	return 1
}

# vu_finish DESC: the daemon ends by itself, exit 0, socket gone
vu_finish() {
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt $VU_HANG ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		fail "$1: still running"
		kill -9 "$pid"
	fi
	wait "$pid"
	rc=$?
	pid=
	[ $rc = 0 ] || { fail "$1: exit $rc"; sed 's/^/  | /' "$T/log"; }
	[ ! -e "$S" ] || fail "$1: socket left behind"
}

# vu_stop DESC: SIGTERM, then vu_finish
vu_stop() {
	kill -TERM "$pid" 2>/dev/null
	vu_finish "$1"
}

# vu_hello DESC QUEUES: a front-end on $S: GET_FEATURES (VERSION_1 and
# PROTOCOL_FEATURES offered), GET_QUEUE_NUM (QUEUES), hang-up; then the
# daemon ends by itself (vu_finish).
vu_hello() {
	python3 - "$S" "$2" <<'PY' || fail "$1: front-end"
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(struct.pack("<III", 1, 1, 0))        # GET_FEATURES
req, flags, size = struct.unpack("<III", s.recv(12, socket.MSG_WAITALL))
feat, = struct.unpack("<Q", s.recv(size, socket.MSG_WAITALL))
assert req == 1 and flags == 5 and feat & (1 << 32) and feat & (1 << 30), \
    (req, flags, feat)
s.sendall(struct.pack("<III", 17, 1, 0))       # GET_QUEUE_NUM
req, flags, size = struct.unpack("<III", s.recv(12, socket.MSG_WAITALL))
n, = struct.unpack("<Q", s.recv(size, socket.MSG_WAITALL))
assert req == 17 and n == int(sys.argv[2]), (req, n)
s.close()
PY
	vu_finish "$1"
}

# vu_result: PASS and exit 0, or the failure count and exit 1
vu_result() {
	[ $fails = 0 ] && echo "PASS" && exit 0
	echo "$fails failure(s)"
	exit 1
}
