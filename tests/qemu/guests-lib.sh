# Host side of two guests driven over their serial consoles (run-guests.sh,
# bench-guests.sh); the guest side is guest-lib.sh's vqf_g_serve.  Needs
# qemu-lib.sh, S (the session's folder), sess (its name), WAIT (a count of
# 0.1 s waits) and a flag function.

# g_require [virtiofs]: what a two-guest test needs, or its verdict:
# vqfuse.ko and the patched fuse.ko in VQF_KO_DIR (sets ko; not for guests
# of the kernel's own virtiofs), the patched QEMU in VQF_QEMU (a skip,
# exit 77, without it), vqfuse-sim (sets sim).
g_require()
{
	ko=${VQF_KO_DIR:-$VQF_QEMU_BIN/../../kernel}
	if [ "${1:-}" != virtiofs ]; then
		[ -f "$ko/vqfuse.ko" ] && [ -f "$ko/fuse.ko" ] ||
			vqf_die "$ko/vqfuse.ko or fuse.ko missing: build kernel-module first"
	fi
	if [ ! -x "${VQF_QEMU:-}" ]; then
		echo "SKIP: VQF_QEMU='${VQF_QEMU:-}' is not the patched QEMU" \
			"(scripts/build-qemu.sh builds build/qemu/qemu-system-x86_64)"
		exit 77
	fi
	sim=${VQF_SIM_BIN:-$VQF_QEMU_BIN/../../sim/cli/vqfuse-sim}
	[ -x "$sim" ] || vqf_die "$sim missing: build vqfuse-sim first"
}

# g_start a|b SOCK: boots the guest with its console input on a FIFO the
# host writes commands to (fd 7 for A, 8 for B).  QEMU's stderr goes to
# S/G.err, not the console's log: a warning comes at any moment (the
# patched QEMU's about the pages it replaced, qemu/0007) and could split
# the line the host waits for.
g_start()
{
	mkfifo "$S/$1.in"
	case $1 in
	a) exec 7<>"$S/$1.in"
	   vqf_run_qemu "$W/boot.cpio" "$2" <&7 >"$S/$1.log" 2>"$S/$1.err" & ;;
	b) exec 8<>"$S/$1.in"
	   vqf_run_qemu "$W/boot.cpio" "$2" <&8 >"$S/$1.log" 2>"$S/$1.err" & ;;
	esac
	echo $! >"$S/$1.pid"
}

# g_kill: a script that dies (vqf_die, a shell error) takes its guests
# and daemon with it, rather than leaving ctest waiting on their output
# until the entry's timeout.
g_kill()
{
	for g in a b; do
		p=$(cat "$S/$g.pid" 2>/dev/null) && pkill -P "$p" 2>/dev/null
	done
	[ -z "${dpid:-}" ] || kill "$dpid" 2>/dev/null
	return 0
}
trap g_kill EXIT

# g_wait a|b PATTERN: waits for a console line; 1 if the guest ended first.
g_wait()
{
	i=0
	until tr -d '\r' <"$S/$1.log" | grep -aq "$2"; do
		kill -0 "$(cat "$S/$1.pid")" 2>/dev/null || return 1
		i=$((i + 1))
		[ $i -le "$WAIT" ] || return 1
		sleep 0.1
	done
}

# g_send a|b COMMAND: sends it, does not wait; g_reap a|b waits for the
# answer to the last command sent to that guest: OUT is its output, the
# status its rc.  g_cmd a|b COMMAND does both.
seq=0
g_send()
{
	seq=$((seq + 1))
	eval "sent_$1=$seq"
	case $1 in
	a) echo "$seq $2" >&7 ;;
	b) echo "$seq $2" >&8 ;;
	esac
	eval "cmd_$1=\$2"
}

g_reap()
{
	n=$(eval echo "\$sent_$1")
	if ! g_wait "$1" "^VQF-DONE $n rc=.* VQF-END\$"; then
		flag "$sess: guest $1 gave no answer to: $(eval "printf '%s' \"\$cmd_$1\"")"
		OUT=
		return 1
	fi
	line=$(tr -d '\r' <"$S/$1.log" | grep -a "^VQF-DONE $n rc=" | head -1)
	OUT=$(echo "$line" | sed 's/^VQF-DONE [0-9]* rc=[0-9]* *//; s/ *VQF-END$//')
	echo "$sess: $1: $(eval "printf '%s' \"\$cmd_$1\"") -> $OUT"
	return "$(echo "$line" | sed 's/^VQF-DONE [0-9]* rc=\([0-9]*\).*/\1/')"
}

g_cmd()
{
	g_send "$1" "$2"
	g_reap "$1"
}

# g_daemon ARGS...: vqfuse-sim vhost-user --guests 2 on S/vfs.sock.{0,1};
# sets dpid.
g_daemon()
{
	"$sim" vhost-user --socket "$S/vfs.sock" --shared "$S/shared" \
		--guests 2 --threads 2 --xattr "$@" >"$S/daemon.log" 2>&1 &
	dpid=$!
	i=0
	until [ -S "$S/vfs.sock.0" ] && [ -S "$S/vfs.sock.1" ]; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 $dpid 2>/dev/null; then
			cat "$S/daemon.log"
			vqf_die "$sess: vqfuse-sim --guests 2 did not start"
		fi
		sleep 0.1
	done
}

# g_end: both guests told to stop, their QEMUs and the daemon waited for.
g_end()
{
	echo "quit" >&7
	echo "quit" >&8
	for g in a b; do
		wait "$(cat "$S/$g.pid")"
		r=$?
		[ $r = 0 ] || flag "$sess: QEMU of guest $g ended with $r"
	done
	exec 7>&- 8>&-
	i=0
	while kill -0 $dpid 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill $dpid 2>/dev/null
	wait $dpid || flag "$sess: the daemon exited with $?"
	for g in a b; do
		tr -d '\r' <"$S/$g.log" |
			sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g' >"$S/$g.txt"
	done
}
