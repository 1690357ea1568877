#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# test-vhost-cli.sh VQFUSE_SIM - `vqfuse-sim vhost-user`: usage errors,
# --poll-us taken (0..10000) and refused out of range, RLIMIT_NOFILE
# raised as virtiofsd raises it (or left), a clean exit 0
# at SIGTERM and SIGINT while waiting for QEMU, and at the
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
# shellcheck source=tests/vhost/vu-cli-lib.sh
. "$(dirname "$0")/vu-cli-lib.sh"
vu_tmp vqf-vhost-cli
mkdir "$T/shared"
S=$T/vfs.sock

# expect_usage NEEDLE ARGS...: exit 2 and NEEDLE named on stderr.
expect_usage() {
	needle=$1
	shift
	timeout 300 $WRAP "$SIM" vhost-user "$@" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc = 2 ] || fail "vhost-user $*: exit $rc, expected 2"
	grep -q -- "$needle" "$T/err" ||
		fail "vhost-user $*: stderr does not name '$needle'"
}

timeout 300 $WRAP "$SIM" vhost-user --help | grep -q -- "--socket PATH" ||
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
# the per-file policy needs a window to send files to, and a size
expect_usage "--dax-inode-min: needs --dax-window" --socket "$S" \
	--shared "$T/shared" --dax-inode-min 512K
expect_usage "--dax-inode-min" --socket "$S" --shared "$T/shared" \
	--dax-window 2M --dax-inode-min 0
expect_usage "--version-table" --socket "$S" --shared "$T/shared" \
	--version-table=1
expect_usage "--trust-guest" --socket "$S" --shared "$T/shared" \
	--backend passthrough_ll
expect_usage "need at least" --socket "$S" --shared "$T/shared" \
	--rlimit-nofile=8
expect_usage "--poll-us" --socket "$S" --shared "$T/shared" --poll-us 10001
expect_usage "--poll-us" --socket "$S" --shared "$T/shared" --poll-us -1
expect_usage "--poll-us" --socket "$S" --shared "$T/shared" --poll-us x

# start ARGS...: the daemon in the background, once its socket exists
start() {
	vu_start socket $WRAP "$SIM" vhost-user --socket "$S" \
		--shared "$T/shared" --queues 2 $CONF "$@"
}

for sig in TERM INT; do
	start
	kill -$sig $pid
	vu_finish "SIG$sig while listening"
done

# --poll-us: parsed and taken (the listening line names the window; the
# window's effect on speed is bench-daemons', never a test's)
for us in 0 50 10000; do
	vu_start listening $WRAP "$SIM" vhost-user --socket "$S" \
		--shared "$T/shared" $CONF --poll-us $us
	if [ $us = 0 ]; then
		! grep -q "polling" "$T/log" || fail "--poll-us 0: polling"
	else
		grep -q "polling up to $us us" "$T/log" ||
			fail "--poll-us $us: not in the listening line"
	fi
	vu_stop "--poll-us $us"
done

# RLIMIT_NOFILE: virtiofsd's default raise, and --rlimit-nofile=0 that
# leaves it (not under valgrind, which keeps descriptors of its own).
if [ -z "$WRAP" ]; then
	hard=$(ulimit -Hn)
	want=$(($(cat /proc/sys/fs/file-max) - 16384))
	[ "$want" -gt 1000000 ] && want=1000000
	[ "$hard" != unlimited ] && [ "$hard" -lt "$want" ] && want=$hard
	for arg in "" --rlimit-nofile=0; do
		vu_start listening sh -c 'ulimit -Sn 64 && exec "$@"' sh \
			"$SIM" vhost-user --socket "$S" --shared "$T/shared" \
			$CONF $arg
		soft=$(awk '/^Max open files/ { print $4 }' /proc/$pid/limits)
		if [ -z "$arg" ]; then
			[ "$soft" -ge "$want" ] ||
				fail "RLIMIT_NOFILE $soft, not raised to $want"
		else
			[ "$soft" = 64 ] || fail "$arg: RLIMIT_NOFILE $soft"
		fi
		vu_stop "RLIMIT_NOFILE ${arg:-default}"
	done
fi

if command -v python3 >/dev/null; then
	start --verbose
	vu_hello "front-end disconnect" 3
	grep -q "front-end disconnected" "$T/log" ||
		fail "disconnect not reported"
	grep -q "GET_QUEUE_NUM (17) size 0 fds 0 idx 0: ok" "$T/log" ||
		fail "--verbose did not log the messages"
else
	echo "SKIP: no python3, disconnect case not run"
fi

vu_result
