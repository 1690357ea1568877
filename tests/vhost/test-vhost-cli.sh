#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# test-vhost-cli.sh VQFUSE_SIM - `vqfuse-sim vhost-user`: usage errors,
# a clean exit 0 at SIGTERM and SIGINT while waiting for QEMU, and at the
# front-end's disconnect (a python3 client sends GET_FEATURES, reads the
# reply and closes; skipped without python3), the socket removed after.
# $WRAP is a word list on purpose.
# shellcheck disable=SC2086
set -u
SIM=${1:?usage: test-vhost-cli.sh path/to/vqfuse-sim}
WRAP=${VQF_CLI_WRAP:-}
# Under valgrind the daemon runs unconfined: valgrind's own system calls
# are not on the seccomp allowlist, and it cannot follow the sandbox's
# fork into new namespaces.  The plain and sanitize runs keep the
# default confinement (namespace, seccomp kill).
CONF=
[ "${VQF_UNDER_VALGRIND:-0}" = 1 ] && CONF="--sandbox=none --seccomp=none"
T=$(mktemp -d "${TMPDIR:-/tmp}/vqf-vhost-cli.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
mkdir "$T/shared"
S=$T/vfs.sock
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# expect_usage NEEDLE ARGS...: exit 2 and NEEDLE named on stderr.
expect_usage() {
	needle=$1
	shift
	timeout 60 $WRAP "$SIM" vhost-user "$@" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc = 2 ] || fail "vhost-user $*: exit $rc, expected 2"
	grep -q -- "$needle" "$T/err" ||
		fail "vhost-user $*: stderr does not name '$needle'"
}

timeout 60 $WRAP "$SIM" vhost-user --help | grep -q -- "--socket PATH" ||
	fail "vhost-user --help"
expect_usage "--socket" --shared "$T/shared"
expect_usage "--shared" --socket "$S"
expect_usage "not a directory" --socket "$S" --shared "$T/none"
expect_usage "--queues" --socket "$S" --shared "$T/shared" --queues 0
expect_usage "--queues" --socket "$S" --shared "$T/shared" --queues 65
expect_usage "--queue-size" --socket "$S" --shared "$T/shared" \
	--queue-size 100
expect_usage "--backend" --socket "$S" --shared "$T/shared" --backend x
expect_usage "--verbose" --socket "$S" --shared "$T/shared" --verbose=1
expect_usage "--bogus" --socket "$S" --shared "$T/shared" --bogus
expect_usage "--dax-window" --socket "$S" --shared "$T/shared" \
	--dax-window 3M
expect_usage "--dax-window" --socket "$S" --shared "$T/shared" \
	--dax-window 1K
expect_usage "--dax-window" --socket "$S" --shared "$T/shared" \
	--dax-window 2M --backend passthrough_ll
expect_usage "--version-table" --socket "$S" --shared "$T/shared" \
	--version-table=1
expect_usage "--trust-guest" --socket "$S" --shared "$T/shared" \
	--backend passthrough_ll
expect_usage "need at least" --socket "$S" --shared "$T/shared" \
	--rlimit-nofile=8

# start: background daemon, waits for its socket
start() {
	$WRAP "$SIM" vhost-user --socket "$S" --shared "$T/shared" \
		--queues 2 $CONF "$@" 2>"$T/log" &
	pid=$!
	i=0
	while [ ! -S "$S" ] && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -S "$S" ] || fail "no socket after 30 s"
}

# finish DESC: the daemon exits 0 within 30 s, socket gone
finish() {
	i=0
	while kill -0 $pid 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 $pid 2>/dev/null; then
		fail "$1: still running"
		kill -9 $pid
	fi
	wait $pid
	rc=$?
	[ $rc = 0 ] || { fail "$1: exit $rc"; sed 's/^/  | /' "$T/log"; }
	[ ! -e "$S" ] || fail "$1: socket left behind"
}

for sig in TERM INT; do
	start
	kill -$sig $pid
	finish "SIG$sig while listening"
done

if command -v python3 >/dev/null; then
	start --verbose
	python3 - "$S" <<'PY' || fail "python3 client"
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(struct.pack("<III", 1, 1, 0))        # GET_FEATURES
req, flags, size = struct.unpack("<III", s.recv(12, socket.MSG_WAITALL))
feat, = struct.unpack("<Q", s.recv(size, socket.MSG_WAITALL))
assert req == 1 and flags == 5 and feat & (1 << 32) and feat & (1 << 30)
s.sendall(struct.pack("<III", 17, 1, 0))       # GET_QUEUE_NUM
req, flags, size = struct.unpack("<III", s.recv(12, socket.MSG_WAITALL))
n, = struct.unpack("<Q", s.recv(size, socket.MSG_WAITALL))
assert n == 3, n
s.close()
PY
	finish "front-end disconnect"
	grep -q "front-end disconnected" "$T/log" ||
		fail "disconnect not reported"
	grep -q "GET_QUEUE_NUM (17) size 0 fds 0 idx 0: ok" "$T/log" ||
		fail "--verbose did not log the messages"
else
	echo "SKIP: no python3, disconnect case not run"
fi

[ $fails = 0 ] && echo "PASS" && exit 0
echo "$fails failure(s)"
exit 1
