#!/bin/sh
# QEMU benchmark (not a test): in one boot, the smallfile workload and a
# 64 MiB cold sequential read on vqfuse.ko, the in-tree virtiofs.ko (the
# same virtiofsd) and virtio-9p (-virtfs local over the same folder), in
# ROUNDS interleaved rounds; prints the best round of each as a table with
# ratios.  TCG makes absolute figures slow: compare the ratios.
#
#   bench-qemu.sh BINDIR [NFILES [ROUNDS]]     (defaults 1000 files, 2 rounds)
#   cmake --build build --target bench-qemu
#
# vqfuse.ko is measured when it exists in VQF_KO_DIR (default build/kernel).
# VQF_BENCH_DAX=1 measures virtiofs with a DAX window instead (see
# bench-dax.sh and docs/qemu-tests.md); VQF_BENCH_GUESTS=1 runs the
# two-guest benchmark (bench-guests.sh BINDIR [NFILES [CHUNKS]]).
#
# VQF_BENCH_PAIRED=1: vqfuse against the in-tree virtiofs without
# reloading anything between rounds.  The guest gets two virtio-fs devices
# (two daemons, one folder each); vqfuse.ko drives one, the in-tree
# virtiofs.ko the other (virtiofs-vqf: rebuilt over the same patched
# fuse.ko when VQF_KO_DIR has one, else the kernel's own virtiofs), both
# mounted at once, and the rounds alternate between them.  What differs
# between the two columns is then the transport alone: one fuse.ko, one
# module placement and interrupt setup for the whole boot, while a
# reloading round changes all three (compare virtiofs-vqf/vfs in a
# reloading run, VQF_BENCH_FS="virtiofs virtiofs-vqf").  The two devices'
# request interrupts land on different CPUs unless VQF_BENCH_IRQ_CPU=N
# moves both to guest CPU N (see the "request irq" table; with
# VQF_BENCH_CPU=N too, every completion is on the workload's CPU).
# VQF_BENCH_PAIR_SWAP=1 gives vqfuse the second device instead of the
# first, to tell a driver from a device or daemon that is slower.  After
# the rounds, "vqf-bench pair" times single requests (a forced GETATTR, a
# 4 KiB O_DIRECT READ) alternating between the mounts every 200 requests
# for VQF_BENCH_PAIR_CHUNKS (100) pairs: the ratio of the two drivers'
# round trip under the same host conditions (the "pair" lines).
# The pair lines also give the guest CPU per request of each driver (the
# caller's and the completion workers'); under -icount shift=0
# (VQF_QEMU_EXTRA, with VQF_QEMU_SMP=1: QEMU 7.2 does not bring up a second
# vCPU under icount) it counts guest instructions, whatever the host does.
# VQF_BENCH_FGRAPH=1 then splits it by transport function (function_graph,
# see vqf_fgraph_pair in guest-lib.sh).
# tests/qemu/bench-pool.sh pools the rounds of several such runs.  Last,
# req-bench (tests/unit/req) times lib's marshalling and validation against
# an upstream-style copy on the guest's CPU ("in this guest").
set -u
VQF_QEMU_SRC=$(cd "$(dirname "$0")" && pwd)
VQF_QEMU_BIN=$(cd "$1" && pwd)
n=${2:-1000}
rounds=${3:-2}
. "$VQF_QEMU_SRC/qemu-lib.sh"

if [ "${VQF_BENCH_GUESTS:-0}" = 1 ]; then
	shift
	exec "$VQF_QEMU_SRC/bench-guests.sh" "$VQF_QEMU_BIN" "$@"
fi

# VQF_BENCH_DAX=1: the RFC's psync rows instead (bench_dax below).
if [ "${VQF_BENCH_DAX:-0}" = 1 ]; then
	. "$VQF_QEMU_SRC/bench-dax.sh"
	bench_dax "$n" "$rounds"
	exit $?
fi

ko=${VQF_KO_DIR:-$VQF_QEMU_BIN/../../kernel}
fss=${VQF_BENCH_FS:-virtiofs 9p}
paired=${VQF_BENCH_PAIRED:-0}
# the driver every ratio is taken against
ref=virtiofs
if [ -f "$ko/vqfuse.ko" ]; then
	fss="vqfuse $fss"
else
	echo "bench-qemu: no $ko/vqfuse.ko, measuring $fss only" >&2
fi
if [ "$paired" = 1 ]; then
	[ -f "$ko/vqfuse.ko" ] || vqf_die "VQF_BENCH_PAIRED=1 needs $ko/vqfuse.ko"
	[ "${VQF_BENCH_STAGES:-0}" = 1 ] &&
		vqf_die "VQF_BENCH_PAIRED=1 has no VQF_BENCH_STAGES"
	ref=virtiofs
	[ -f "$ko/fuse.ko" ] && ref=virtiofs-vqf
	fss="vqfuse $ref"
fi

W=$VQF_QEMU_BIN/work/bench
rm -rf "$W"
mkdir -p "$W/shared"
pid2=
stop_daemons()
{
	vqf_stop_virtiofsd
	if [ -n "$pid2" ]; then
		VQF_VIRTIOFSD_PID=$pid2
		pid2=
		vqf_stop_virtiofsd
	fi
}
trap 'stop_daemons' EXIT INT TERM
"$VQF_QEMU_BIN/vqf-bench" mkfile "$W/shared/seq64.bin" 64 || exit 1

# VQF_BENCH_TRACE=1: count the FUSE requests of each smallfile phase
# (guest-lib.sh's vqf_trace_start: kprobes on (__)fuse_simple_request and
# fuse_simple_background, by opcode; FORGETs are not counted) and print
# them as "VQF-OPS FS PHASE OPCODE COUNT" lines.  The probes slow every
# request: use it for counts, not for timings.
trace_on=:
trace_off=:
if [ "${VQF_BENCH_TRACE:-0}" = 1 ]; then
	trace_on="if [ \$fs != 9p ]; then
		vqf_trace_start && echo 8192 >\$T/buffer_size_kb || exit 1
	fi"
	trace_off="if [ \$fs != 9p ]; then
		vqf_trace_counts | sed \"s/^VQF-OPS /VQF-OPS \$fs /\"
	fi"
fi

# 9p without a page cache (its default cache=none) and virtio-fs with
# cache=auto: each as it is normally mounted; seqread drops the guest's
# caches first, so every byte crosses the transport.
# VQF_BENCH_CPU=N pins the workload to guest CPU N (where the request
# queue's interrupt lands matters: see "# irq:" in the console log).
pin=${VQF_BENCH_CPU:+taskset -c $VQF_BENCH_CPU}

# VQF_BENCH_STAGES=1: after each driver's timed smallfile run, a second,
# traced one (a fresh folder) gives the per-stage breakdown of its
# synchronous requests (guest-lib.sh's vqf_stage_start/_report): medians
# in microseconds of the guest's mono clock, per phase and stage, and the
# difference vqfuse - virtiofs.  The timed runs stay untraced.
stages=:
if [ "${VQF_BENCH_STAGES:-0}" = 1 ]; then
	stages="if [ \$fs != 9p ]; then
		vqf_stage_start \$fs &&
		$pin vqf-bench smallfile \$MNT/st-\$fs-\$r $n >/dev/null &&
		vqf_stage_report \"\$fs \$r\" || exit 1
	fi"
fi
# Even rounds run the filesystems in reverse order, so that none always
# runs first (after the previous round's unmount) or last.
rfss=
for fs in $fss; do rfss="$fs $rfss"; done
script="r=1
while [ \$r -le $rounds ]; do
	order='$fss'
	[ \$((r % 2)) = 0 ] && order='$rfss'
	for fs in \$order; do
		echo \"VQF-BENCH-FS \$fs round \$r\"
		vqf_fs_load \$fs && vqf_mount \$fs || { echo '# mount failed'; exit 1; }
		vqf_irq_mark
		$trace_on
		$pin vqf-bench smallfile \$MNT/sf-\$fs-\$r $n || exit 1
		$trace_off
		$stages
		$pin vqf-bench seqread \$MNT/seq64.bin || exit 1
		if [ \$fs = vqfuse ]; then vqf_vqfuse_counters; fi
		vqf_irq_since
		for d in /sys/bus/virtio/devices/*; do
			[ \"\$(cat \$d/device)\" = 0x001a ] &&
				echo \"# features: \$(cat \$d/features)\"
		done
		umount \$MNT && vqf_fs_unload \$fs || exit 1
	done
	r=\$((r + 1))
done"

if [ "$paired" = 1 ]; then
	# then one request type at a time, alternating every 200 requests
	pair_chunks=${VQF_BENCH_PAIR_CHUNKS:-100}
	script="VQF_BENCH_IRQ_CPU=${VQF_BENCH_IRQ_CPU:-}
VQF_BENCH_PAIR_SWAP=${VQF_BENCH_PAIR_SWAP:-0}
vqf_pair_load $ref || exit 1
r=1
while [ \$r -le $rounds ]; do
	order='vqfuse $ref'
	[ \$((r % 2)) = 0 ] && order='$ref vqfuse'
	for fs in \$order; do
		echo \"VQF-BENCH-FS \$fs round \$r\"
		vqf_irq_mark
		$trace_on
		$pin vqf-bench smallfile \$MNT/\$fs/sf-\$r $n || exit 1
		$trace_off
		$pin vqf-bench seqread \$MNT/\$fs/seq64.bin || exit 1
		vqf_irq_since
	done
	r=\$((r + 1))
done
for op in getattr read4k create rename write; do
	$pin vqf-bench pair \$op \$MNT/vqfuse/seq64.bin \$MNT/$ref/seq64.bin \
		200 $pair_chunks || exit 1
done
if [ '${VQF_BENCH_FGRAPH:-0}' = 1 ]; then
	for op in getattr read4k; do
		VQF_PIN='$pin' vqf_fgraph_pair \$op \$MNT/vqfuse/seq64.bin \
			\$MNT/$ref/seq64.bin 100 ${VQF_BENCH_FGRAPH_CHUNKS:-10} ||
			echo '# fgraph failed'
	done
fi
if [ -x /bin/vqf-req-bench ]; then $pin vqf-req-bench 100000 | sed 's/^/REQBENCH /'; fi
vqf_vqfuse_counters
umount \$MNT/vqfuse && umount \$MNT/$ref"
	mkdir -p "$W/shared2"
	"$VQF_QEMU_BIN/vqf-bench" mkfile "$W/shared2/seq64.bin" 64 || exit 1
	vqf_start_virtiofsd "$W/shared2" "$W/vfs2.sock" "$W/virtiofsd2.log"
	pid2=$VQF_VIRTIOFSD_PID
	VQF_QEMU_EXTRA="${VQF_QEMU_EXTRA:-} -chardev socket,id=vfs2,path=$W/vfs2.sock -device vhost-user-fs-pci,chardev=vfs2,tag=${VQF_TAG}2,num-request-queues=$VQF_QEMU_NREQ${VQF_QEMU_DEVOPTS:-}"
	export VQF_QEMU_EXTRA
fi

vqf_mkinitramfs "$W"
vqf_add_run_script "$W" "$script"
vqf_start_virtiofsd "$W/shared" "$W/vfs.sock" "$W/virtiofsd.log"
echo "bench-qemu: $fss; $n files, 64 MiB, $rounds rounds (TCG, ~$((rounds * 2)) min)" >&2
VQF_QEMU_TIMEOUT=${VQF_QEMU_TIMEOUT:-1800} \
	vqf_run_qemu "$W/boot.cpio" "$W/vfs.sock" "$W/shared" \
	>"$W/console.log" 2>&1 </dev/null
qrc=$?
stop_daemons
sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\r$//' "$W/console.log" >"$W/console.txt"
if [ $qrc != 0 ] || ! grep -q '^VQF-GUEST-EXIT rc=0' "$W/console.txt" ||
   ! vqf_scan_console "$W/console.txt"; then
	grep -v '^\[' "$W/console.txt" | tail -30
	echo "bench-qemu: guest run failed (QEMU status $qrc), see $W/console.txt" >&2
	exit 1
fi

# Best round per (fs, figure); ratios against in-tree virtiofs and 9p.
awk -v fss="$fss" -v ref="$ref" '
/^VQF-BENCH-FS / { fs = $2; rnd = $4; if (rnd > nr) nr = rnd; next }
/^BENCH smallfile / {
	split($6, v, "="); key = fs SUBSEP $3
	if (v[2] > best[key]) best[key] = v[2]
	val[fs, rnd, $3] = v[2]
	next
}
/^BENCH seqread / {
	split($5, v, "="); key = fs SUBSEP "seqread"
	if (v[2] > best[key]) best[key] = v[2]
	val[fs, rnd, "seqread"] = v[2]
}
END {
	nf = split(fss, f, " ")
	for (i = 1; i <= nf; i++) inset[f[i]] = 1
	nm = split("create stat read append rename delete all seqread", m, " ")
	printf "%-14s", "figure"
	for (i = 1; i <= nf; i++) printf " %12s", f[i]
	has_vq = (f[1] == "vqfuse")
	# without 9p (VQF_BENCH_FS=virtiofs) its columns would be zeros
	has_9p = (f[nf] == "9p")
	if (has_vq) printf " %11s", "vqfuse/vfs"
	if (has_vq && has_9p) printf " %11s", "vqfuse/9p"
	if (has_9p) printf " %11s", "vfs/9p"
	printf "\n"
	for (j = 1; j <= nm; j++) {
		unit = (m[j] == "seqread") ? "MB/s" : "ops/s"
		printf "%-14s", m[j] " " unit
		for (i = 1; i <= nf; i++) printf " %12.1f", best[f[i], m[j]]
		vfs = best[ref, m[j]]; p9 = best["9p", m[j]]
		if (has_vq) printf " %10.2fx", \
			vfs ? best["vqfuse", m[j]] / vfs : 0
		if (has_vq && has_9p) printf " %10.2fx", \
			p9 ? best["vqfuse", m[j]] / p9 : 0
		if (has_9p) printf " %10.2fx", p9 ? vfs / p9 : 0
		printf "\n"
	}
	# Rounds run back to back, so the ratio within a round compares the two
	# drivers under about the same load; the median of those is steadier
	# than the ratio of bests.  Every driver but ref and 9p gets one:
	# with virtiofs-vqf (in-tree virtiofs.ko over our fuse.ko) beside
	# vqfuse, a loss splits into the part of fuse.ko and that of the
	# transport.
	if (!(ref in inset))
		exit
	for (i = 1; i <= nf; i++) {
		x = f[i]
		if (x == ref || x == "9p")
			continue
		printf "\n%-14s", x "/vfs"
		for (r = 1; r <= nr; r++) printf " %6s", "r" r
		printf " %7s\n", "median"
		for (j = 1; j <= nm; j++) {
			printf "%-14s", m[j]
			k = 0
			for (r = 1; r <= nr; r++) {
				a = val[x, r, m[j]]; b = val[ref, r, m[j]]
				if (!a || !b) { printf " %6s", "-"; continue }
				q = a / b; printf " %5.2fx", q
				for (l = k++; l > 0 && rs[l - 1] > q; l--)
					rs[l] = rs[l - 1]
				rs[l] = q
			}
			med = !k ? 0 : k % 2 ? rs[(k - 1) / 2] : \
				(rs[k / 2 - 1] + rs[k / 2]) / 2
			printf " %6.2fx\n", med
		}
	}
}' "$W/console.txt" | tee "$W/table.txt"

# The guest's CPU time per operation (vqf-bench's cpu_us_op: every CPU,
# the interrupt and completion work included), median over the rounds;
# and with VQF_BENCH_STAGES=1 the stage medians (median over the rounds
# of each round's median).
awk -v fss="$fss" -v ref="$ref" '
function med(key,    n, i, j, a, t) {
	n = split(vals[key], a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return !n ? "" : n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(key, v) { vals[key] = vals[key] (key in vals ? " " : "") v }
/^VQF-BENCH-FS / { fs = $2; next }
/^BENCH smallfile / && $7 ~ /^cpu_us_op=/ {
	split($7, v, "="); if (v[2] >= 0) add("cpu" SUBSEP fs SUBSEP $3, v[2])
	next
}
/^BENCH seqread / && $6 ~ /^cpu_us_mb=/ {
	split($6, v, "="); if (v[2] >= 0) add("cpu" SUBSEP fs SUBSEP "seqread", v[2])
	next
}
/^VQF-STAGE / { add("st" SUBSEP $2 SUBSEP $4 SUBSEP $5, $6); stages = 1; next }
/^VQF-STAGE-KEPT / {
	key = $2 SUBSEP $4
	kept[key] += $5; dropped[key] += $6; xcpu[key] += $7
}
END {
	nm = split("create stat read append rename delete all", m, " ")
	if (("cpu" SUBSEP "vqfuse" SUBSEP "all") in vals &&
	    ("cpu" SUBSEP ref SUBSEP "all") in vals) {
		printf "\n%-14s %9s %12s %11s\n", "guest CPU", "vqfuse",
		       ref, "vqfuse/vfs"
		for (j = 1; j <= nm; j++) {
			a = med("cpu" SUBSEP "vqfuse" SUBSEP m[j])
			b = med("cpu" SUBSEP ref SUBSEP m[j])
			printf "%-14s %9.1f %12.1f %10.2fx\n", m[j] " us/op",
			       a, b, b ? a / b : 0
		}
		a = med("cpu" SUBSEP "vqfuse" SUBSEP "seqread")
		b = med("cpu" SUBSEP ref SUBSEP "seqread")
		if (a != "" && b != "")
			printf "%-14s %9.1f %12.1f %10.2fx\n", "seqread us/MB",
			       a, b, b ? a / b : 0
	}
	if (!stages)
		exit
	ns = split("core enqueue kick device irq complete wake total", st, " ")
	nf = split(fss, f, " ")
	printf "\nstages, us (medians)%10s", ""
	for (k = 1; k <= ns; k++) printf " %8s", st[k]
	printf " %8s %8s\n", "kept", "xcpu"
	for (j = 1; j < nm; j++) {
		for (i = 1; i <= nf; i++) {
			key = "st" SUBSEP f[i] SUBSEP m[j] SUBSEP "total"
			if (!(key in vals))
				continue
			printf "%-8s %-21s", m[j], f[i]
			for (k = 1; k <= ns; k++)
				printf " %8s", med("st" SUBSEP f[i] SUBSEP \
						   m[j] SUBSEP st[k])
			key = f[i] SUBSEP m[j]
			printf " %3d/%-4d %8d\n", kept[key],
			       kept[key] + dropped[key], xcpu[key]
		}
	}
	printf "(kept: requests with no other request in their span, " \
	       "of all; xcpu: of those, completed on another CPU)\n"
}' "$W/console.txt" | tee -a "$W/table.txt"

# The paired mode's single-request comparison.
# Then the guest CPU per request: the caller's own ("self") and every other
# task's ("others": the completion workers), and the per-pair ratio of the
# two drivers' totals (under -icount, instructions: VQF_QEMU_EXTRA).
grep '^BENCH pair ' "$W/console.txt" | awk -v ref="$ref" '
NR == 1 {
	r = "/" (ref == "virtiofs" ? "vfs" : "ref")
	printf "\n%-14s %9s %12s %9s %7s %7s\n", "request", "vqfuse us",
	       ref " us", "vqfuse" r, "q1", "q3"
}
{
	for (i = 4; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	printf "%-14s %9.1f %12.1f %8.3fx %6.3fx %6.3fx\n", $3, v["a_us"],
	       v["b_us"], v["ratio"], v["q1"], v["q3"]
	if ("cpu_ratio" in v)
		cpu[++ncpu] = sprintf("%-14s %7.2f %7.2f %7.2f %7.2f %8.3fx %6.3fx %6.3fx",
			$3, v["a_self_us"], v["a_oth_us"], v["b_self_us"],
			v["b_oth_us"], v["cpu_ratio"], v["cpu_q1"], v["cpu_q3"])
}
END {
	if (!ncpu)
		exit
	printf "\n%-14s %7s %7s %7s %7s %9s %7s %7s\n", "guest CPU us",
	       "vqf", "vqf oth", "ref", "ref oth", "vqfuse" r, "q1", "q3"
	for (i = 1; i <= ncpu; i++)
		print cpu[i]
}' | tee -a "$W/table.txt"

# VQF_BENCH_FGRAPH=1: each transport function's guest CPU per request
# (vqf_fgraph_pair in guest-lib.sh), vqfuse (side a) beside the reference
# (side b): calls per request and ns per request, in instructions under
# -icount shift=0.
awk -v ref="$ref" '
/^VQF-FGRAPH-OPS / { ops[$2] = $3; next }
/^VQF-FGRAPH / {
	k = $2 " " $3 " " $5
	if (!(k in seen)) { seen[k] = 1; key[++nk] = k }
	calls[k, $4] = $6; ns[k, $4] = $7
}
END {
	if (!nk)
		exit
	printf "\n%-8s %-4s %-38s %9s %9s %9s %9s\n", "fgraph", "pass",
	       "function", "vqf n/op", "vqf ns/op", "ref n/op", "ref ns/op"
	for (i = 1; i <= nk; i++) {
		split(key[i], f, " ")
		o = ops[f[1]] ? ops[f[1]] : 1
		printf "%-8s %-4s %-38s %9.2f %9.0f %9.2f %9.0f\n", f[1], f[2],
		       f[3], calls[key[i], "a"] / o, ns[key[i], "a"] / o,
		       calls[key[i], "b"] / o, ns[key[i], "b"] / o
	}
	printf "(ref: %s; n/op: calls per request, ns/op: their time per " \
	       "request, sleep excluded)\n", ref
}' "$W/console.txt" | tee -a "$W/table.txt"

# lib's own part of a request as this guest runs it (paired mode): the
# same req-bench as tests/unit/req, ns per request.
if grep -q '^REQBENCH ' "$W/console.txt"; then
	printf '\nin this guest: ' | tee -a "$W/table.txt"
	sed -n 's/^REQBENCH //p' "$W/console.txt" | tee -a "$W/table.txt"
fi

# Which guest CPU took each round's request-queue interrupts (the guest
# prints what each counter gained during the round: vqf_irq_since).  A
# completion on the workload's own CPU saves a cross-CPU wake-up per
# request, so a driver whose interrupt moved between loads would move
# between two speeds.
# "CPU1 98%" = CPU1 took 98 % of that round's request interrupts.
awk '
/^VQF-BENCH-FS / {
	fs = $2; rnd = $4; if (rnd > nr) nr = rnd
	if (!(fs in seen)) { seen[fs] = 1; order[++nf] = fs }
	next
}
/^# irq: +CPU/ { ncpu = NF - 2; next }
/^# irq: / && $NF ~ /-requests\.[0-9]+$/ {
	for (c = 0; c < ncpu; c++) n[fs, rnd, c] += $(4 + c)
	any[fs, rnd] = 1
}
END {
	if (!nf || !ncpu)
		exit
	printf "\n%-14s", "request irq"
	for (r = 1; r <= nr; r++) printf " %9s", "r" r
	printf "\n"
	for (i = 1; i <= nf; i++) {
		fs = order[i]
		if (fs == "9p")
			continue
		printf "%-14s", fs
		for (r = 1; r <= nr; r++) {
			if (!((fs, r) in any)) { printf " %9s", "-"; continue }
			best = 0; tot = 0
			for (c = 0; c < ncpu; c++) {
				tot += n[fs, r, c]
				if (n[fs, r, c] > n[fs, r, best]) best = c
			}
			printf " CPU%d %3d%%", best,
			       tot ? 100 * n[fs, r, best] / tot : 0
		}
		printf "\n"
	}
}' "$W/console.txt" | tee -a "$W/table.txt"
rm -rf "$W/shared" "$W/initramfs"
