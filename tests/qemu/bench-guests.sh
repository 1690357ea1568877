#!/bin/sh
# The two-guest benchmark (issue 17 item 5): guest A's `ls -l` of NFILES
# files and DEPTH-deep path walks (vqf-cohere run) while guest B and the
# host rename one name after every CHUNK of A's operations, under cache
# none, always, auto and shared, on one `vqfuse-sim vhost-user --guests 2`
# per daemon cache mode, as qemu-vqfuse-guests boots them.
#
#   bench-guests.sh BINDIR [NFILES [CHUNKS]]
#
# Printed per mode: A's operations per second (its own clock, over the
# chunks only: the changes and the console round trips between them are
# not counted), the stale answers A got after guest B's changes and
# after the host's, and A's FUSE requests per operation (debugfs; with
# VQF_BENCH_TRACE=1 also by opcode, through kprobes, which slows A).  The first pass over the tree (A's cold cache) is run
# before and not counted.  A program, not a test: TCG on a shared machine.
set -u
VQF_QEMU_SRC=$(cd "$(dirname "$0")" && pwd)
VQF_QEMU_BIN=$(cd "$1" && pwd)
NFILES=${2:-10000}
CHUNKS=${3:-40}
CHUNK=${VQF_BENCH_CHUNK:-500}
DEPTH=16
. "$VQF_QEMU_SRC/qemu-lib.sh"
. "$VQF_QEMU_SRC/guests-lib.sh"

ko=${VQF_KO_DIR:-$VQF_QEMU_BIN/../../kernel}
[ -f "$ko/vqfuse.ko" ] && [ -f "$ko/fuse.ko" ] ||
	vqf_die "$ko/vqfuse.ko or fuse.ko missing: build kernel-module first"
: "${VQF_QEMU:=$VQF_QEMU_BIN/../../qemu/qemu-system-x86_64}"
[ -x "$VQF_QEMU" ] || vqf_die "$VQF_QEMU: the patched QEMU (scripts/build-qemu.sh)"
sim=${VQF_SIM_BIN:-$VQF_QEMU_BIN/../../sim/cli/vqfuse-sim}
VQF_QEMU_MEM=1G
VQF_QEMU_SMP=2
: "${VQF_QEMU_TIMEOUT:=3600}"
WAIT=36000
W=$VQF_QEMU_BIN/work/bench-guests
rm -rf "$W"
mkdir -p "$W"
flag()
{
	echo "bench-guests: $*" >&2
}
vqf_mkinitramfs "$W"
vqf_add_run_script "$W" 'vqf_g_serve'
cohere=$VQF_QEMU_BIN/vqf-cohere

# measure MODE: A mounts, warms its cache with one pass, then CHUNKS
# chunks, each followed by one rename (odd chunks guest B's, even ones the
# host's; big/r-K and the deep f-K in turn).
measure()
{
	m=$1
	t=$S/shared/t-$m
	mkdir -p "$t"
	"$cohere" mktree "$t" "$NFILES" $DEPTH || vqf_die "mktree $t"
	p='-o noatime version_table=0'
	[ $m = shared ] && p='-o noatime'
	g_cmd a "vqf_g_mount $p" >/dev/null || return 1
	g_cmd a "vqf-cohere run /mnt/t-$m $NFILES $DEPTH $NFILES 0 0 0" >/dev/null
	# A's requests over the chunks only (the renames are B's and the
	# host's); with VQF_BENCH_TRACE=1 also by opcode (kprobes: slower)
	[ "${VQF_BENCH_TRACE:-0}" = 1 ] &&
		g_cmd a 'vqf_trace_start && echo 32768 >$T/buffer_size_kb && echo vqf-phase chunks >$T/trace_marker' >/dev/null
	g_cmd a vqf_sent >/dev/null
	r0=$OUT
	bk=0 dk=0 pos=0 ops=0 sec=0 sb=0 sh=0 c=1 last=
	while [ $c -le "$CHUNKS" ]; do
		g_cmd a "vqf-cohere run /mnt/t-$m $NFILES $DEPTH $CHUNK $bk $dk $pos" >/dev/null
		set -- $(echo "$OUT" | sed -n 's/.*COHERE ops=\([0-9]*\) sec=\([0-9.]*\) stale=\([0-9]*\) pos=\([0-9]*\).*/\1 \2 \3 \4/p')
		[ $# = 4 ] || { flag "$m: chunk $c: $OUT"; return 1; }
		ops=$((ops + $1))
		sec=$(awk -v a="$sec" -v b="$2" 'BEGIN { print a + b }')
		case $last in
		b) sb=$((sb + $3)) ;;
		h) sh=$((sh + $3)) ;;
		esac
		pos=$4
		if [ $(((c - 1) / 2 % 2)) = 0 ]; then
			from=big/r-$bk to=big/r-$((bk + 1))
			bk=$((bk + 1))
		else
			d=$(i=1; while [ $i -le $DEPTH ]; do printf 'd%02d/' $i; i=$((i + 1)); done)
			from=deep/${d}f-$dk to=deep/${d}f-$((dk + 1))
			dk=$((dk + 1))
		fi
		if [ $((c % 2)) = 1 ]; then
			g_cmd b "mv /mnt/t-$m/$from /mnt/t-$m/$to" >/dev/null ||
				flag "$m: B's rename failed"
			last=b
		else
			mv "$t/$from" "$t/$to"
			last=h
		fi
		c=$((c + 1))
	done
	g_cmd a vqf_sent >/dev/null
	req=$((OUT - r0))
	if [ "${VQF_BENCH_TRACE:-0}" = 1 ]; then
		g_cmd a "vqf_trace_counts" >/dev/null
		echo "$m: A's requests by opcode:" \
			"$(echo " $OUT" | sed 's/ VQF-OPS chunks/\n /g' | tail -n +2 | tr '\n' ',')" >&2
	fi
	g_cmd a vqf_g_umount >/dev/null
	echo "$m $ops $sec $sb $sh $req" >>"$W/results"
	echo "$m: $ops ops in $sec s, stale answers after B's changes $sb, after the host's $sh; A sent $req requests" >&2
}

session()
{
	sess=$1 cache=$2
	shift 2
	S=$W/$sess
	mkdir -p "$S/shared"
	g_daemon --cache "$cache"
	g_start a "$S/vfs.sock.0"
	g_start b "$S/vfs.sock.1"
	if g_wait a '^VQF-READY' && g_wait b '^VQF-READY' &&
	   g_cmd b vqf_g_mount >/dev/null; then
		for mode; do
			measure "$mode"
		done
		g_cmd b vqf_g_umount >/dev/null
	else
		flag "$sess: a guest did not boot"
	fi
	g_end
	grep -h 'hub:' "$S/daemon.log" >&2
}

session never never none
session always always always
session auto auto auto shared
printf '%-8s %10s %10s %12s %12s %10s %8s\n' mode ops ops/s 'stale(B)' \
	'stale(host)' '/always' 'req/op'
aops=$(awk '$1 == "always" { print $2 / $3 }' "$W/results")
awk -v a="$aops" '{ r = $2 / $3
	printf "%-8s %10d %10.1f %12d %12d %9.2fx %8.3f\n", $1, $2, r, $4, $5,
		r / a, $6 / $2 }' "$W/results"
