#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# test-virtiofsd-cli.sh VQFUSE_VIRTIOFSD - the daemon started as virtiofsd
# is started (docs/virtiofsd-compat.md), through its vqfuse-virtiofsd
# name: --print-capabilities (JSON that parses, type fs), unknown and
# unsupported options refused with exit 2 and named, and each option that
# changes what the daemon does seen doing it: the policy it reports for
# --cache, -o, --thread-pool-size, --xattr, --writeback, --no-readdirplus,
# --allow-direct-io and the lock options; --fd serving a socket made by
# the caller (python3, as libvirt: skipped without python3);
# --socket-group, --rlimit-nofile (and at its floor, serving), --log-level,
# -d, --syslog.  $WRAP (a word list on purpose) runs it under valgrind.
# shellcheck disable=SC2086
set -u
VFSD=${1:?usage: test-virtiofsd-cli.sh path/to/vqfuse-virtiofsd}
WRAP=${VQF_CLI_WRAP:-}
# Under valgrind the daemon runs unconfined (valgrind's own system calls
# are not on the seccomp allowlist; it cannot follow the sandbox's fork
# into new namespaces); plain and sanitize runs keep the default.
CONF=
[ "${VQF_UNDER_VALGRIND:-0}" = 1 ] && CONF="--sandbox=none --seccomp=none"
# shellcheck source=tests/vhost/vu-cli-lib.sh
. "$(dirname "$0")/vu-cli-lib.sh"
vu_tmp vqf-vfsd-cli
mkdir "$T/shared"
S=$T/vfs.sock

# --print-capabilities: one JSON object, "type": "fs", nothing else said
timeout 300 $WRAP "$VFSD" --print-capabilities >"$T/caps" 2>"$T/err" ||
	fail "--print-capabilities: exit $?"
[ -s "$T/err" ] && fail "--print-capabilities wrote to stderr"
if command -v python3 >/dev/null; then
	python3 - "$T/caps" <<'PY' || fail "capabilities JSON"
import json, sys
c = json.load(open(sys.argv[1]))
assert c["type"] == "fs", c
assert "separate-options" in c["features"], c
PY
else
	grep -q '"type": "fs"' "$T/caps" || fail "capabilities: no type fs"
fi
timeout 300 $WRAP "$VFSD" -V | grep -q '^vqfuse-virtiofsd [0-9]' ||
	fail "-V"

# expect_usage NEEDLE ARGS...: exit 2 and NEEDLE named on stderr
expect_usage() {
	needle=$1
	shift
	timeout 300 $WRAP "$VFSD" "$@" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc = 2 ] || fail "$*: exit $rc, expected 2"
	grep -q -- "$needle" "$T/err" ||
		fail "$*: stderr does not name '$needle'"
}

expect_usage "--bogus" --socket-path="$S" --shared-dir="$T/shared" --bogus
expect_usage "-o norace" --socket-path="$S" -o source="$T/shared",norace
expect_usage "--uid-map" --fd=3 --shared-dir="$T/shared" --uid-map=:0:0:1
expect_usage "squash-guest" --fd=3 --shared-dir="$T/shared" \
	--translate-uid=squash-guest:0:1000:65536
expect_usage "--modcaps" --fd=3 --shared-dir="$T/shared" --modcaps=+nosuch
expect_usage "sometimes" --socket-path="$S" --shared-dir="$T/shared" \
	--cache=sometimes
expect_usage "exclude" --fd=3 --socket-path="$S" -o source="$T/shared"

# start_daemon ARGS...: in the background on $S, once it has said it
# listens
start_daemon() {
	vu_start listening $WRAP "$VFSD" --socket-path="$S" $CONF "$@"
}

# expect_policy DESC REGEX ARGS...: the daemon's listening line matches
expect_policy() {
	desc=$1 re=$2
	shift 2
	start_daemon "$@"
	grep "listening on" "$T/log" | grep -qE -- "$re" ||
		{ fail "$desc: policy not /$re/"; sed 's/^/  | /' "$T/log"; }
	vu_stop "$desc"
}

expect_policy "default" \
	"1 request queues, 2 threads.*cache auto: timeout 1 s; readdirplus on, xattr off, writeback off, posix locks guest, flock guest, O_DIRECT dropped" \
	--shared-dir="$T/shared"
expect_policy "--cache=never --thread-pool-size=3 --allow-direct-io" \
	"3 threads.*cache never: timeout 0 s, direct I/O; readdirplus off.*O_DIRECT kept" \
	--shared-dir="$T/shared" --cache=never --thread-pool-size=3 \
	--allow-direct-io
expect_policy "--cache metadata --xattr --writeback --no-readdirplus" \
	"cache metadata: timeout 86400 s, direct I/O; readdirplus off, xattr on, writeback on" \
	--shared-dir "$T/shared" --cache metadata --xattr --writeback \
	--no-readdirplus
expect_policy "-o legacy list" \
	"cache always: timeout 86400 s, keep cache; readdirplus on, xattr on, writeback off, posix locks host, flock host" \
	-o source="$T/shared",cache=always,xattr,posix_lock,flock
expect_policy "-o cache=none,timeout=3 --sandbox --seccomp --announce-submounts" \
	"cache never: timeout 3 s, direct I/O" \
	-o source="$T/shared" -o cache=none,timeout=3 --sandbox=namespace \
	--seccomp=kill --announce-submounts $CONF
[ -n "$CONF" ] || grep -q "confined: sandbox namespace.*seccomp kill" \
	"$T/log" || fail "--sandbox, --seccomp: not said to be in force"
grep -q "announce-submounts: libfuse" "$T/log" ||
	fail "--announce-submounts: no word on what is done instead"

# --socket-group: the socket belongs to the group, mode 0660
grp=$(awk -F: '$3 != 0 { print $1; exit }' /etc/group)
if [ -n "$grp" ]; then
	start_daemon --shared-dir="$T/shared" --socket-group="$grp" \
		--rlimit-nofile=512
	[ "$(stat -c %G:%a "$S" 2>/dev/null)" = "$grp:660" ] ||
		fail "--socket-group=$grp: socket is $(stat -c %G:%a "$S")"
	# --rlimit-nofile: the daemon's own limit (valgrind only emulates
	# it: the process keeps its real one)
	lim=$(awk '/^Max open files/ { print $4 }' /proc/$pid/limits)
	[ "${VQF_UNDER_VALGRIND:-0}" = 1 ] || [ "$lim" = 512 ] ||
		fail "--rlimit-nofile=512: limit is $lim"
	vu_stop "--socket-group"
fi

# --rlimit-nofile at the floor its refusal names: the daemon starts and
# serves with that many descriptors (a floor below what it holds passes
# the check and then fails the start)
floor=$(timeout 300 $WRAP "$VFSD" --socket-path="$S" \
	--shared-dir="$T/shared" --rlimit-nofile=1 2>&1 |
	sed -n 's/.*too few descriptors: need at least \([0-9]*\).*/\1/p')
if [ -z "$floor" ]; then
	fail "--rlimit-nofile=1: not refused with the floor named"
elif command -v python3 >/dev/null &&
     start_daemon --shared-dir="$T/shared" --rlimit-nofile="$floor"; then
	vu_hello "--rlimit-nofile=$floor" 2
fi

# --log-level=error and --syslog: the daemon says nothing on stderr while
# all goes well, past its listening line (a front-end was served)
if command -v python3 >/dev/null; then
	for q in --log-level=error --syslog; do
		vu_start socket $WRAP "$VFSD" --socket-path="$S" $CONF \
			--shared-dir="$T/shared" $q
		vu_hello "$q" 2
		grep -q "^vqfuse-virtiofsd: " "$T/log" &&
			{ fail "$q: on stderr:"; sed 's/^/  | /' "$T/log"; }
	done
fi

# --fd: libvirt's way.  The caller makes and listens on the socket, the
# daemon serves it (-d logs each message), exits 0 at the disconnect and
# leaves the socket file to its owner.
if command -v python3 >/dev/null; then
	python3 - "$T" "$VFSD" "$CONF" $WRAP <<'PY' || fail "--fd"
import os, socket, struct, subprocess, sys
t, cmd = sys.argv[1], sys.argv[4:] + [sys.argv[2]] + sys.argv[3].split()
path = os.path.join(t, "fd.sock")
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ls.bind(path)
ls.listen(1)
fd = ls.fileno()
log = open(os.path.join(t, "fd.log"), "w")
p = subprocess.Popen(cmd + ["--fd=%d" % fd, "-o", "source=%s/shared" % t,
                            "--cache=auto", "-d"],
                     pass_fds=[fd], stderr=log, stdin=subprocess.DEVNULL)
ls.close()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
s.sendall(struct.pack("<III", 17, 1, 0))       # GET_QUEUE_NUM
req, flags, size = struct.unpack("<III", s.recv(12, socket.MSG_WAITALL))
n, = struct.unpack("<Q", s.recv(size, socket.MSG_WAITALL))
assert req == 17 and n == 2, (req, n)
s.close()
rc = p.wait(timeout=600)
text = open(os.path.join(t, "fd.log")).read()
assert rc == 0, (rc, text)
assert "listening on --fd=" in text, text
assert "GET_QUEUE_NUM" in text, text
assert "front-end disconnected" in text, text
assert os.path.exists(path), "the caller's socket file was removed"
# a descriptor that is no listening socket: refused where it enters
r = subprocess.run(cmd + ["--fd=0", "--shared-dir=%s/shared" % t],
                   stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   timeout=600)
assert r.returncode == 1 and b"not a listening" in r.stderr, r
PY
else
	echo "SKIP: no python3, --fd case not run"
fi

vu_result
