# shellcheck shell=sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# daemon-lib.sh - sourced: start a vhost-user-fs back-end for
# `vqfuse-sim run --connect` / `mount --connect`, wait until it listens,
# stop or kill it, judge how it ended.  Used by with-daemon.sh, killed.sh
# and tests/mount/test-mount.sh (VQF_MOUNT_DAEMON).
#
# Kinds:
#   virtiofsd  Debian's C virtiofsd (/usr/lib/qemu/virtiofsd, or
#              $VQF_VIRTIOFSD): --socket-path=SOCK -o source=DIR OPTIONS
#   vqfuse     BIN vhost-user --socket SOCK --shared DIR OPTIONS
# Both serve one front-end and exit when it hangs up; both need root here
# (virtiofsd for its namespace sandbox).

VQF_VIRTIOFSD=${VQF_VIRTIOFSD:-/usr/lib/qemu/virtiofsd}
VQF_DAEMON_PID=
VQF_DAEMON_RC=
# What a crashed or sanitizer-stopped daemon leaves in its log.
VQF_CRASH_RE='killed by signal|Segmentation fault|Assertion|Aborted|AddressSanitizer|runtime error:'

# vqf_virtiofsd_arenas: glibc's default malloc arena limit here (8 per
# CPU), for virtiofsd's MALLOC_ARENA_MAX.  Unset, glibc looks the CPU
# count up when a process makes its 9th arena; in virtiofsd's sandbox
# /sys and /proc/stat are gone, glibc falls back to sched_getaffinity(),
# which virtiofsd 7.2's seccomp allowlist lacks, and the pool thread is
# killed with SIGSYS (docs/bench-daemons.md).  A value the caller set
# is kept.
vqf_virtiofsd_arenas()
{
	echo "${MALLOC_ARENA_MAX:-$((8 * $(nproc)))}"
}

# vqf_daemon_usable KIND: prints why KIND cannot run here, returns 1.
vqf_daemon_usable()
{
	[ "$(id -u)" -eq 0 ] || {
		echo "the $1 back-end runs as root here (namespace sandbox)"
		return 1
	}
	case $1 in
	virtiofsd)
		[ -x "$VQF_VIRTIOFSD" ] || {
			echo "no $VQF_VIRTIOFSD (qemu-system-common)"
			return 1
		} ;;
	vqfuse) ;;
	*)
		echo "unknown back-end kind '$1'"
		return 1 ;;
	esac
	return 0
}

# vqf_daemon_listening SOCK: a unix socket bound at SOCK is listening
# (__SO_ACCEPTCON in /proc/net/unix).  Connecting to find out would be
# taken for the one front-end the daemon serves.
vqf_daemon_listening()
{
	awk -v p="$1" '$NF == p && $4 == "00010000" { f = 1 }
		END { exit !f }' /proc/net/unix
}

# vqf_daemon_start KIND BIN SOCK SHARED LOG [OPTIONS...]: starts the
# back-end in the background (VQF_DAEMON_PID) and returns 0 once SOCK
# listens; 1, with the log shown, if the daemon ended first or 60 s went.
vqf_daemon_start()
{
	_kind=$1
	_bin=$2
	_sock=$3
	_shared=$4
	_log=$5
	shift 5
	case $_kind in
	virtiofsd)
		# glibc's arena limit, set, keeps virtiofsd 7.2's seccomp
		# from killing it (vqf_virtiofsd_arenas).
		MALLOC_ARENA_MAX=$(vqf_virtiofsd_arenas) \
		"$VQF_VIRTIOFSD" --socket-path="$_sock" -o source="$_shared" \
			"$@" > "$_log" 2>&1 & ;;
	vqfuse)
		"$_bin" vhost-user --socket "$_sock" --shared "$_shared" \
			"$@" > "$_log" 2>&1 & ;;
	*)
		echo "unknown back-end kind '$_kind'"
		return 1 ;;
	esac
	VQF_DAEMON_PID=$!
	VQF_DAEMON_RC=
	_i=0
	while ! vqf_daemon_listening "$_sock"; do
		if ! kill -0 "$VQF_DAEMON_PID" 2>/dev/null; then
			_rc=0
			wait "$VQF_DAEMON_PID" || _rc=$?
			VQF_DAEMON_PID=
			echo "the $_kind back-end exited ($_rc) before listening:"
			sed 's/^/  | /' "$_log"
			return 1
		fi
		_i=$((_i + 1))
		if [ $_i -gt 600 ]; then
			echo "the $_kind back-end did not listen on $_sock in 60 s:"
			sed 's/^/  | /' "$_log"
			return 1
		fi
		sleep 0.1
	done
	return 0
}

# vqf_daemon_tree PID: PID and every descendant, parents first (both
# daemons fork into their sandbox; the child serves).
vqf_daemon_tree()
{
	echo "$1"
	for _c in $(ps -o pid= --ppid "$1"); do
		vqf_daemon_tree "$_c"
	done
}

# vqf_daemon_kill: SIGKILL to every process of the back-end at once, as
# a crash takes it: the connection drops with requests in flight.
vqf_daemon_kill()
{
	[ -n "$VQF_DAEMON_PID" ] || return 0
	# shellcheck disable=SC2046 # one pid a word
	kill -KILL $(vqf_daemon_tree "$VQF_DAEMON_PID") 2>/dev/null
	return 0
}

# vqf_daemon_end SECONDS: waits up to SECONDS for the back-end to exit by
# itself (its front-end left), then SIGTERM, then SIGKILL.  Sets
# VQF_DAEMON_RC; returns 1 if it had to be signalled.
vqf_daemon_end()
{
	[ -n "$VQF_DAEMON_PID" ] || return 0
	_i=0
	while kill -0 "$VQF_DAEMON_PID" 2>/dev/null &&
	      [ $_i -lt $(($1 * 10)) ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
	_self=0
	if kill -0 "$VQF_DAEMON_PID" 2>/dev/null; then
		_self=1
		kill -TERM "$VQF_DAEMON_PID" 2>/dev/null
		_i=0
		while kill -0 "$VQF_DAEMON_PID" 2>/dev/null &&
		      [ $_i -lt 50 ]; do
			sleep 0.1
			_i=$((_i + 1))
		done
		vqf_daemon_kill
	fi
	VQF_DAEMON_RC=0
	wait "$VQF_DAEMON_PID" 2>/dev/null || VQF_DAEMON_RC=$?
	VQF_DAEMON_PID=
	return $_self
}

# vqf_daemon_clean KIND LOG: after vqf_daemon_end, the back-end ended as
# it should after serving an honest front-end: exit 0, no crash; ours
# also refused no vhost-user message and no request (its guard's lines,
# as tests/qemu's vqf_daemon_confined reads them).  Prints what is wrong
# and returns 1.
vqf_daemon_clean()
{
	_bad=0
	if [ "$VQF_DAEMON_RC" != 0 ]; then
		echo "the $1 back-end exited with $VQF_DAEMON_RC"
		_bad=1
	fi
	if grep -q -E "$VQF_CRASH_RE" "$2"
	then
		echo "the $1 back-end crashed:"
		grep -E "$VQF_CRASH_RE" "$2" | sed 's/^/  | /'
		_bad=1
	fi
	if [ "$1" = vqfuse ]; then
		grep -q 'front-end disconnected' "$2" || {
			echo "the vqfuse back-end did not see its front-end leave"
			_bad=1
		}
		grep -q ' messages, 0 refused' "$2" || {
			echo "the vqfuse back-end refused vhost-user messages"
			_bad=1
		}
		grep -q ' 0 refused, 0 queue breaks' "$2" || {
			echo "the vqfuse back-end refused requests or saw a ring broken"
			_bad=1
		}
		if ! grep -q 'guard: ' "$2" || [ "$(grep -c 'guard: 0 refused' "$2")" != "$(grep -c 'guard: ' "$2")" ]
		then
			echo "the vqfuse back-end's guard refused requests of an honest front-end"
			_bad=1
		fi
	fi
	if [ $_bad -ne 0 ]; then
		echo "its log:"
		sed 's/^/  | /' "$2"
	fi
	return $_bad
}
