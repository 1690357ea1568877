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
# VQF_BENCH_TRACE=1 also by opcode, through kprobes, which slows A).  The
# first pass over the tree (A's cold cache) is run before and not counted.
#
# Then the DAX rows (issue 27), two more sessions of `--guests 2 --cache
# auto`, both guests mounting with the version table: "dax" with
# `--dax-window` and -o dax=always, "nodax" without.  Printed: the
# cross-guest ping-pong (vqf-cohere pingpong-*: A stores an odd number in
# one u64, B answers with the next even one) through a MAP_SHARED mapping
# of a DAX file against the same through pwrite/pread of an O_DIRECT file
# without DAX, where each is one FUSE WRITE or READ (and, for scale,
# through pwrite/pread of the DAX file: the window, no request), in round
# trips per second by A's clock, and mmap's ratio to FUSE; then A and
# then B (one after the other, never at once) each read one file of
# VQF_BENCH_READ_MB MiB (default 64) twice with read(): MB/s of the
# first (cold) and second (warm) pass, each guest's page cache growth
# (/proc/meminfo Cached) and the file's pages in it (mincore), each
# QEMU's RSS growth over the cold pass (RssShmem: the guest's memory, a
# memfd; RssFile: the host file's pages the window maps), and the host's
# page cache of the file (fincore; emptied before the guests boot).
#
#   VQF_BENCH_ONLY=dax|dirs      only the DAX rows, or only the sessions
#                                above (default: both)
#   VQF_BENCH_PP_MMAP=N          the mmap ping-pong's round trips (100000)
#   VQF_BENCH_PP_FUSE=N          the pwrite/pread ones' (2000)
#   VQF_BENCH_READ_MB=N          the read file's size (64)
#   VQF_BENCH_WINDOW=SIZE        each guest's DAX window (128M: the file
#                                and the ping-pong files' 2 MiB ranges
#                                fit it, so the warm pass maps nothing)
#
# A program, not a test: TCG on a shared machine.
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

# ---- the DAX rows (issue 27) -----------------------------------------

PPM=${VQF_BENCH_PP_MMAP:-100000}
PPF=${VQF_BENCH_PP_FUSE:-2000}
RMB=${VQF_BENCH_READ_MB:-64}
WIN=${VQF_BENCH_WINDOW:-128M}

# VQF_BENCH_TRACE=1: the guest's kprobes on, one phase (one line: the
# guest reads a command per line)
TRACE_ON='vqf_trace_start && echo vqf-phase x >$T/trace_marker'

# kv NAME: the value of NAME=... in OUT
kv()
{
	echo " $OUT " | sed -n "s/.* $1=\([^ ]*\) .*/\1/p"
}

# rss a|b FIELD: FIELD (RssShmem, RssFile) of that guest's QEMU, in kB.
# Its pid: the qemu-system-x86_64 (not the timeout above it) whose
# command line names the guest's socket.
rss()
{
	n=0
	[ $1 = b ] && n=1
	for p in $(pgrep -f "path=$S/vfs.sock.$n"); do
		[ "$(cat /proc/$p/comm 2>/dev/null)" = qemu-system-x86 ] ||
			continue
		sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" /proc/$p/status
		return
	done
	echo 0
}

# hostcache: the host's page cache of the read file, in bytes
hostcache()
{
	fincore -b -n -o RES "$S/shared/p/big"
}

# pp KIND FILE N: A and B play N round trips at once; one "pp" line.
# With VQF_BENCH_TRACE=1, A's requests by opcode too (kprobes: slower).
pp()
{
	[ "${VQF_BENCH_TRACE:-0}" = 1 ] &&
		g_cmd a "$TRACE_ON" >/dev/null
	g_cmd a vqf_sent >/dev/null
	r0=$OUT
	g_send a "vqf-cohere pingpong-$1 /mnt/p/$2 a $3"
	g_send b "vqf-cohere pingpong-$1 /mnt/p/$2 b $3"
	g_reap a || flag "$sess: A's ping-pong $2: $OUT"
	rt=$(kv rt) sec=$(kv sec) polls=$(kv polls)
	p50=$(kv p50us) p99=$(kv p99us)
	g_reap b || flag "$sess: B's ping-pong $2: $OUT"
	g_cmd a vqf_sent >/dev/null
	r1=$OUT
	if [ "${VQF_BENCH_TRACE:-0}" = 1 ]; then
		g_cmd a vqf_trace_counts >/dev/null
		echo "$sess: ping-pong $2: A's requests by opcode: $OUT" >&2
	fi
	OUT=$r1
	[ -n "$rt" ] &&
		echo "pp $sess-$2 $rt $sec $polls $((OUT - r0)) $p50 $p99" \
			>>"$W/dax-results"
}

# rd G PASS: G reads the file; one "rd" line.  With VQF_BENCH_TRACE=1,
# G's requests by opcode too.
rd()
{
	[ "${VQF_BENCH_TRACE:-0}" = 1 ] &&
		g_cmd $1 "$TRACE_ON" >/dev/null
	s0=$(rss $1 RssShmem) f0=$(rss $1 RssFile)
	g_cmd $1 vqf_sent >/dev/null
	r0=$OUT
	g_cmd $1 "vqf-cohere readfile /mnt/p/big" ||
		flag "$sess: $1's read: $OUT"
	by=$(kv bytes) sec=$(kv sec) c0=$(kv cached0) c1=$(kv cached1)
	inc=$(kv incore) sum=$(kv sum)
	g_cmd $1 vqf_sent >/dev/null
	req=$((OUT - r0))
	s1=$(rss $1 RssShmem) f1=$(rss $1 RssFile)
	if [ "${VQF_BENCH_TRACE:-0}" = 1 ]; then
		g_cmd $1 vqf_trace_counts >/dev/null
		echo "$sess: $1's $2 read: requests by opcode: $OUT" >&2
	fi
	[ "$sum" = "$want" ] ||
		flag "$sess: $1 read sum '$sum', the host's $want"
	[ -n "$by" ] && echo "rd $sess $1 $2 $by $sec $c0 $c1 $inc" \
		"$((s1 - s0)) $((f1 - f0)) $req" >>"$W/dax-results"
}

# dax_session NAME MOUNT-OPTS DAEMON-ARGS...
dax_session()
{
	sess=$1 mo=$2
	shift 2
	S=$W/$sess
	mkdir -p "$S/shared/p"
	for f in pp-mmap pp-sys pp-fuse; do
		head -c 4096 /dev/zero >"$S/shared/p/$f"
	done
	head -c $((RMB * 1048576)) /dev/urandom >"$S/shared/p/big"
	OUT=$("$cohere" readfile "$S/shared/p/big")
	want=$(kv sum)
	"$cohere" evict "$S/shared/p/big" || flag "$sess: evict"
	g_daemon --cache auto "$@"
	g_start a "$S/vfs.sock.0"
	g_start b "$S/vfs.sock.1"
	if g_wait a '^VQF-READY' && g_wait b '^VQF-READY' &&
	   g_cmd a "vqf_g_mount $mo" >/dev/null &&
	   g_cmd b "vqf_g_mount $mo" >/dev/null; then
		if [ $sess = dax ]; then
			pp mmap pp-mmap "$PPM"
			pp fuse pp-sys "$PPF"
		else
			pp fuse pp-fuse "$PPF"
		fi
		h0=$(hostcache)
		rd a cold
		rd b cold
		h1=$(hostcache)
		rd a warm
		rd b warm
		echo "host $sess $h0 $h1 $(hostcache)" >>"$W/dax-results"
		g_cmd a vqf_g_umount >/dev/null
		g_cmd b vqf_g_umount >/dev/null
	else
		flag "$sess: a guest did not boot or mount ($mo)"
	fi
	g_end
	grep -h 'hub:\|dax:\|windows:' "$S/daemon.log" >&2
	rm -f "$S/shared/p/big"
}

dax_table()
{
	r=$W/dax-results
	echo
	echo "ping-pong between guests A and B through one u64;" \
		"round trips by A's clock"
	printf '%-24s %7s %9s %8s %8s %8s %8s %7s\n' how rt rt/s us/rt \
		'p50 us' 'p99 us' polls/rt req/rt
	awk '$1 == "pp" { n = $2
		if (n == "dax-pp-mmap") n = "mmap, DAX"
		if (n == "dax-pp-sys") n = "pwrite/pread, DAX"
		if (n == "nodax-pp-fuse") n = "FUSE (O_DIRECT), no DAX"
		printf "%-24s %7d %9.1f %8.2f %8.2f %8.2f %8.2f %7.2f\n", n, $3,
			$3 / $4, 1e6 * $4 / $3, $7, $8, $5 / $3, $6 / $3 }' "$r"
	# the median's ratio too: a loaded host stretches a few round trips
	# of either by milliseconds, and they weigh on the mean alone
	awk '$2 == "dax-pp-mmap" { m = $3 / $4; mp = $7 }
	     $2 == "nodax-pp-fuse" { f = $3 / $4; fp = $7 }
	     END { if (m && f && mp > 0)
		printf "mmap (DAX) / FUSE: %.1fx by rt/s (goal: 100x), %.1fx" \
			" by the median round trip\n", m / f, fp / mp }' "$r"
	echo
	echo "$RMB MiB file read by A, then B (cold), then A, B again" \
		"(warm); MiB"
	printf '%-6s %-2s %9s %9s %11s %7s %10s %9s %9s\n' sess g 'cold MB/s' \
		'warm MB/s' 'guest cache' incore 'QEMU shmem' 'QEMU file' \
		'req c/w'
	awk '$1 == "rd" && $4 == "cold" { k = $2 " " $3; order[++n] = k
		cold[k] = $5 / 1e6 / $6; gc[k] = ($8 - $7) / 1024
		inc[k] = $9 / 256; sh[k] = $10 / 1024; fi[k] = $11 / 1024
		rq[k] = $12 }
	     $1 == "rd" && $4 == "warm" { k = $2 " " $3
		warm[k] = $5 / 1e6 / $6; wq[k] = $12 }
	     END { for (i = 1; i <= n; i++) { k = order[i]; split(k, p, " ")
		printf "%-6s %-2s %9.1f %9.1f %11.1f %7.1f %10.1f %9.1f %9s\n",
			p[1], p[2], cold[k], warm[k], gc[k], inc[k], sh[k],
			fi[k], rq[k] "/" wq[k] } }' "$r"
	echo "(guest cache: Cached growth over the cold pass; incore: the"
	echo " file's pages in the guest's page cache after it; QEMU: RSS"
	echo " growth over it)"
	awk '$1 == "host" { printf "host page cache of the file, %s: %.1f MiB" \
		" before, %.1f after the cold passes, %.1f at the end\n",
		$2, $3 / 1048576, $4 / 1048576, $5 / 1048576 }' "$r"
	awk '$1 == "host" { h[$2] = $5 / 1048576 }
	     $1 == "rd" && $4 == "cold" { g[$2] += $9 / 256 }
	     END { for (s in h) printf "the file in memory, %s: host %.1f" \
		" + guests %.1f = %.1f MiB\n", s, h[s], g[s], h[s] + g[s] }' \
		"$r" | sort
}

if [ "${VQF_BENCH_ONLY:-}" != dax ]; then
	session never never none
	session always always always
	session auto auto auto shared
	printf '%-8s %10s %10s %12s %12s %10s %8s\n' mode ops ops/s 'stale(B)' \
		'stale(host)' '/always' 'req/op'
	aops=$(awk '$1 == "always" { print $2 / $3 }' "$W/results")
	awk -v a="$aops" '{ r = $2 / $3
		printf "%-8s %10d %10.1f %12d %12d %9.2fx %8.3f\n", $1, $2, r,
			$4, $5, r / a, $6 / $2 }' "$W/results"
fi
if [ "${VQF_BENCH_ONLY:-}" != dirs ]; then
	: >"$W/dax-results"
	dax_session dax '-o dax=always' --dax-window "$WIN"
	dax_session nodax ''
	dax_table
fi
