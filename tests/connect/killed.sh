#!/bin/sh
# cleanup runs from the trap; $VQF_SIM_WRAP is a word list.
# shellcheck disable=SC2317,SC2086
# shellcheck source-path=SCRIPTDIR
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# killed.sh KIND SIM FRONT CASE [FRONT OPTIONS...] - a vhost-user-fs
# back-end of KIND (virtiofsd or vqfuse, daemon-lib.sh; SIM is
# vqfuse-sim for the latter) SIGKILLed under the front-end FRONT
# (vqfuse-sim, or its sanitizer build):
#   run    `FRONT run --connect` of 20,000 files; the daemon dies once a
#          few hundred exist.  The run must end (no hang: 120 s) with exit
#          1 and an errno naming the lost back-end (ENOTCONN) on stderr.
#   mount  `FRONT mount --connect` with a file written; the daemon dies.
#          Then an operation on the mount fails with ENOTCONN or EIO (no
#          hang), stderr says the back-end is lost, fusermount3 -u
#          unmounts and the front-end exits by itself, not by a signal.
# $VQF_SIM_WRAP, if set, runs FRONT under it (valgrind: give it an
# --error-exitcode other than 1).
# Exit 0 pass, 1 fail, 77 skipped (not root, no virtiofsd, no FUSE).
set -u
KIND=${1:?usage: killed.sh KIND SIM FRONT run|mount [options]}
SIM=${2:?usage: killed.sh KIND SIM FRONT run|mount [options]}
FRONT=${3:?usage: killed.sh KIND SIM FRONT run|mount [options]}
CASE=${4:?usage: killed.sh KIND SIM FRONT run|mount [options]}
shift 4
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=daemon-lib.sh
. "$HERE/daemon-lib.sh"

if ! why=$(vqf_daemon_usable "$KIND"); then
	echo "SKIP: $why"
	exit 77
fi
if [ "$CASE" = mount ]; then
	[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
	command -v fusermount3 > /dev/null || {
		echo "SKIP: no fusermount3"
		exit 77
	}
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/vqf-killed.XXXXXX") || exit 1
D=$T/shared
M=$T/mnt
S=$T/vhost.sock
mkdir "$D" "$M"
FPID=
fails=0

mounted() {
	awk -v m="$M" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo
}

cleanup() {
	vqf_daemon_kill
	[ -n "$FPID" ] && kill -KILL "$FPID" 2>/dev/null
	if mounted; then
		fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M"
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

finish() {
	if [ -s "$T/err" ]; then
		echo "front-end stderr:"
		sed 's/^/  | /' "$T/err"
	fi
	echo "killed $KIND $CASE: $fails failures"
	[ $fails -eq 0 ]
	exit $?
}

# front_end SECONDS: the front-end ends within SECONDS (sets frc); else
# it hangs: killed, and a failure.
front_end() {
	i=0
	while kill -0 "$FPID" 2>/dev/null && [ $i -lt $(($1 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$FPID" 2>/dev/null; then
		fail "the front-end still runs $1 s after the back-end died"
		kill -KILL "$FPID"
	fi
	frc=0
	wait "$FPID" || frc=$?
	FPID=
}

# The back-end's own options: both as they run by default, xattrs on.
case $KIND in
virtiofsd) vqf_daemon_start "$KIND" "$SIM" "$S" "$D" "$T/daemon.log" \
		-o cache=auto -o xattr || exit 1 ;;
*) vqf_daemon_start "$KIND" "$SIM" "$S" "$D" "$T/daemon.log" \
		--cache auto --xattr || exit 1 ;;
esac
echo "back-end: $KIND, pids $(vqf_daemon_tree "$VQF_DAEMON_PID" | tr '\n' ' ')"

if [ "$CASE" = run ]; then
	${VQF_SIM_WRAP:-} "$FRONT" run --connect "$S" --files 20000 --quiet "$@" \
		> "$T/out" 2> "$T/err" &
	FPID=$!
	# Mid-workload: a few hundred files of the 20,000 made.  Bounded by
	# the workload itself (it ends, or makes them), not by a time: a
	# front-end that hangs before is ctest's timeout.
	while [ "$(find "$D" -mindepth 2 | head -n 300 | wc -l)" -lt 300 ]; do
		if ! kill -0 "$FPID" 2>/dev/null; then
			fail "the workload ended before the back-end was killed"
			front_end 1
			finish
		fi
		sleep 0.1
	done
	echo "killing the back-end with $(find "$D" -mindepth 2 | wc -l) entries made"
	vqf_daemon_kill
	front_end 120
	echo "front-end: exit $frc"
	[ "$frc" -eq 1 ] || fail "the front-end exited with $frc, expected 1"
	grep -q -E 'ENOTCONN|Transport endpoint is not connected|errno 107' \
		"$T/err" || fail "no ENOTCONN on the front-end's stderr"
	grep -q 'the vhost-user back-end of guest 0 is lost' "$T/err" ||
		fail "the front-end did not name the lost back-end"
	grep -q -E "$VQF_CRASH_RE" "$T/err" &&
		fail "the front-end crashed or a sanitizer stopped it"
elif [ "$CASE" = mount ]; then
	env --default-signal=INT ${VQF_SIM_WRAP:-} "$FRONT" mount "$M" \
		--connect "$S" "$@" \
		> "$T/out" 2> "$T/err" &
	FPID=$!
	i=0
	while ! mounted; do
		if ! kill -0 "$FPID" 2>/dev/null || [ $i -gt 600 ]; then
			fail "no mount within 60 s"
			finish
		fi
		i=$((i + 1))
		sleep 0.1
	done
	echo before > "$M/before" || fail "write before the kill"
	[ "$(cat "$D/before")" = before ] || fail "the file is not in DIR"
	vqf_daemon_kill
	# Whatever crosses the dead device fails, and at once.
	for op in "touch $M/after" "ls $M/" "cat $M/before"; do
		# shellcheck disable=SC2086 # op is a command line
		timeout 60 $op > /dev/null 2> "$T/op.err"
		rc=$?
		echo "after the kill: $op: exit $rc: $(cat "$T/op.err")"
		if [ $rc -eq 124 ]; then
			fail "$op hung"
		elif [ $rc -eq 0 ]; then
			# cat and ls may be answered from the host's cache
			[ "$op" = "touch $M/after" ] &&
				fail "$op succeeded on a dead back-end"
		elif ! grep -q -E 'Transport endpoint is not connected|Input/output error' "$T/op.err"
		then
			fail "$op: neither ENOTCONN nor EIO"
		fi
	done
	grep -q "back-end is lost" "$T/err" ||
		fail "the front-end did not say the back-end is lost"
	timeout 60 fusermount3 -u "$M" || fail "fusermount3 -u: exit $?"
	front_end 30
	echo "front-end: exit $frc"
	[ "$frc" -lt 128 ] || fail "the front-end ended by signal $((frc - 128))"
	grep -q -E "$VQF_CRASH_RE" "$T/err" &&
		fail "the front-end crashed or a sanitizer stopped it"
	mounted && fail "still mounted"
	sed 's/^/  /' "$T/out"
else
	echo "unknown case '$CASE'"
	exit 1
fi
vqf_daemon_end 10 || fail "the killed back-end's processes outlived SIGKILL"
echo "back-end: exit $VQF_DAEMON_RC"
finish
