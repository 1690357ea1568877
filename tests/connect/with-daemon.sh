#!/bin/sh
# shellcheck source-path=SCRIPTDIR
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# with-daemon.sh [--empty] KIND SIM OPTS COMMAND [ARGS...]
#
# Starts a vhost-user-fs back-end of KIND (virtiofsd: Debian's
# /usr/lib/qemu/virtiofsd; vqfuse: SIM vhost-user) with OPTS (one
# argument, its words the daemon's options; "-" for none) on
# a temporary socket over a temporary shared directory, waits until the
# socket listens, runs COMMAND with $VQF_SOCKET and $VQF_SHARED set (and
# the words @SOCKET@ and @SHARED@ of its arguments replaced by them),
# then waits for the back-end to exit by itself (both end when their
# front-end hangs up) and checks that it ended cleanly: exit 0, no crash;
# ours also with nothing refused (daemon-lib.sh's vqf_daemon_clean).
# --empty: the shared directory must be empty afterwards (the smallfile
# workload leaves it as it found it).
# $VQF_CONNECT_TIMEOUT (default 900) bounds COMMAND in seconds.
#
# Exit 0 pass, 1 fail, 77 skipped (not root; no virtiofsd for KIND
# virtiofsd).
set -u -f
empty=0
if [ "${1:-}" = --empty ]; then
	empty=1
	shift
fi
KIND=${1:?usage: with-daemon.sh [--empty] KIND SIM OPTS COMMAND...}
SIM=${2:?usage: with-daemon.sh [--empty] KIND SIM OPTS COMMAND...}
DOPTS=${3:?usage: with-daemon.sh [--empty] KIND SIM OPTS COMMAND...}
shift 3
[ $# -gt 0 ] || { echo "with-daemon.sh: no COMMAND"; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=daemon-lib.sh
. "$HERE/daemon-lib.sh"

if ! why=$(vqf_daemon_usable "$KIND"); then
	echo "SKIP: $why"
	exit 77
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/vqf-connect.XXXXXX") || exit 1
VQF_SOCKET=$T/vhost.sock
VQF_SHARED=$T/shared
export VQF_SOCKET VQF_SHARED
mkdir "$VQF_SHARED"
# The daemons' own users (root here) and the workload's reach it.
chmod 755 "$T"

cleanup() {
	vqf_daemon_kill
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# "$@" is COMMAND...: the placeholders replaced.
total=$#
i=0
while [ $i -lt $total ]; do
	a=$1
	shift
	case $a in
	@SOCKET@) a=$VQF_SOCKET ;;
	@SHARED@) a=$VQF_SHARED ;;
	esac
	set -- "$@" "$a"
	i=$((i + 1))
done
[ "$DOPTS" = - ] && DOPTS=
echo "back-end: $KIND $DOPTS"
echo "front-end: $*"
# shellcheck disable=SC2086 # DOPTS is a word list (no globbing: set -f)
vqf_daemon_start "$KIND" "$SIM" "$VQF_SOCKET" "$VQF_SHARED" \
	"$T/daemon.log" $DOPTS || exit 1

fails=0
rc=0
timeout "${VQF_CONNECT_TIMEOUT:-900}" "$@" || rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: the front-end command exited with $rc"
	fails=$((fails + 1))
fi

if ! vqf_daemon_end 30; then
	echo "FAIL: the $KIND back-end did not exit within 30 s of its front-end's end"
	fails=$((fails + 1))
fi
if ! vqf_daemon_clean "$KIND" "$T/daemon.log"; then
	fails=$((fails + 1))
elif [ "$KIND" = vqfuse ]; then
	grep -E 'requests by opcode|guard:|hub:|dax:' "$T/daemon.log" |
		sed 's/^/  back-end: /'
fi
if [ $empty -eq 1 ] && [ -n "$(ls -A "$VQF_SHARED")" ]; then
	echo "FAIL: left in the shared directory: $(ls -A "$VQF_SHARED")"
	fails=$((fails + 1))
fi
echo "with-daemon $KIND: $fails failures"
[ $fails -eq 0 ]
