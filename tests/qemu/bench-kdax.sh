#!/bin/sh
# DAX benchmark (not a test): 4 KiB psync sequential and random reads and
# writes of a file larger than the guest's page cache, on vqfuse.ko over
# the patched fuse.ko (lib's range management) and on the in-tree
# virtiofs.ko + fuse.ko (upstream dax.c), each with dax=always and with
# dax=never, and vqfuse.ko with dax=auto (fs/fuse 0007: lib's policy maps a
# range or sends READ/WRITE), against `vqfuse-sim vhost-user --dax-window`
# under the patched QEMU.  Two boots: a window as large as the file, and a quarter of it
# (reclaim on most misses).  Prints one table with the ratios.
#
#   bench-kdax.sh BINDIR [FILE_MIB [RAND_OPS [ROUNDS]]]
#	(defaults 512, 32768, 2)
#   cmake --build build --target bench-kdax
#
# Each boot runs ROUNDS rounds of its rows, the order reversed every other
# round, so that vqfuse.ko and virtiofs.ko see the same load on average.
# The table has the best round of each figure; "median" rows give the
# median over rounds of the per-round ratio vqfuse/virtiofs (the two ran
# minutes apart at most: the steadier figure on a shared machine).
# VQF_BENCH_TRACE=1 counts SETUPMAPPING/REMOVEMAPPING/READ/WRITE per phase
# (kprobes, which slow every request: take counts from such a run, timings
# from another).
#
# The guest has VQF_BENCH_MEM (default 256M) of memory, so the page cache
# holds less than the file; sequential runs go over the whole file once.
# VQF_QEMU defaults to <build>/qemu/qemu-system-x86_64 (scripts/build-qemu.sh).
# TCG makes absolute figures slow: compare the ratios.
set -u
VQF_QEMU_SRC=$(cd "$(dirname "$0")" && pwd)
VQF_QEMU_BIN=$(cd "$1" && pwd)
mib=${2:-512}
rops=${3:-32768}
rounds=${4:-2}
trace=${VQF_BENCH_TRACE:-}
: "${VQF_QEMU:=$VQF_QEMU_BIN/../../qemu/qemu-system-x86_64}"
VQF_QEMU_MEM=${VQF_BENCH_MEM:-256M}
VQF_DAEMON=sim
export VQF_QEMU VQF_QEMU_MEM VQF_DAEMON
. "$VQF_QEMU_SRC/qemu-lib.sh"

[ -x "$VQF_QEMU" ] || vqf_die "$VQF_QEMU missing: scripts/build-qemu.sh"
ko=${VQF_KO_DIR:-$VQF_QEMU_BIN/../../kernel}
[ -f "$ko/vqfuse.ko" ] && [ -f "$ko/fuse.ko" ] ||
	vqf_die "$ko/vqfuse.ko or fuse.ko missing: build kernel-module"

sops=$((mib * 256))
tmib=$((mib < 64 ? mib : 64))
W=$VQF_QEMU_BIN/work/bench-kdax
rm -rf "$W"
mkdir -p "$W/shared"
trap 'vqf_stop_virtiofsd' EXIT INT TERM
"$VQF_QEMU_BIN/vqf-bench" mkfile "$W/shared/f.bin" "$mib" || exit 1

# The guest's side of a boot: rounds of rows, a row being FS:DAXMODE or
# FS:DAXMODE:VARIANT.  Variants: ra0, the bdi's read_ahead_kb at 0 (one
# 4 KiB FUSE_READ per read(), as with cache=none; reads only, RAND_OPS
# of each); mmap, 4 KiB memcpy()s out of a mapping of the DAX file (the
# window's memory itself).  tmpfs:- reads and writes a TMPFS_MIB file in
# the guest's tmpfs: the page cache's copy, which bounds a DAX read()
# under the same CPU emulation.
guest_rows()
{
	case $fs:$var in
	tmpfs:*) echo "seqread randread seqwrite randwrite" ;;
	*:ra0) echo "seqread randread" ;;
	*:mmap) echo mmapread ;;
	*) echo "seqread randread seqwrite randwrite" ;;
	esac
}

# kdax_trace_start: vqf_trace_start's opcode counts, a trace buffer that
# holds a whole row (the seqwrite phase alone is 64 Ki events; an overrun
# drops the oldest phases), and the size of every FUSE_READ (only READs
# recorded)
# (fuse_read_in.size: args->in_args[0].value + 16, in_args at 24).
kdax_trace_start()
{
	vqf_trace_start || return 1
	echo 8192 >$VQF_TRACE/buffer_size_kb || return 1
	for p in vqfrs:fuse_simple_request vqfrb:fuse_simple_background; do
		echo "p:${p%%:*} ${p#*:} op=+8(%si):u32 sz=+16(+32(%si)):u32" \
			>>$VQF_TRACE/kprobe_events &&
		echo 'op == 15' >$VQF_TRACE/events/kprobes/${p%%:*}/filter &&
		echo 1 >$VQF_TRACE/events/kprobes/${p%%:*}/enable || return 1
	done
}

# kdax_trace_counts: VQF-READSZ PHASE COUNT BYTES of the FUSE_READs, lost
# events (must be 0 for the counts to hold), then vqf_trace_counts.
kdax_trace_counts()
{
	echo 0 >$VQF_TRACE/tracing_on
	awk '/tracing_mark_write: vqf-phase/ { ph = $NF; next }
		/ vqfr[sb]: / && / op=15 / && ph != "" {
			split($NF, z, "="); n[ph]++; b[ph] += z[2] }
		END { for (p in n) print "VQF-READSZ " p " " n[p] " " b[p] }' \
		$VQF_TRACE/trace
	lost=$(cat $VQF_TRACE/per_cpu/cpu*/stats |
		awk '/^overrun:/ { s += $2 } END { print s + 0 }')
	[ "$lost" = 0 ] || echo "VQF-TRACE-LOST $lost"
	vqf_trace_counts
}

guest_boot()
{
	vqf-bench mkfile /tmp/f.bin $tmib || exit 1
	r=1
	while [ $r -le $rounds ]; do
	if [ $((r % 2)) = 1 ]; then rows=$fwd; else rows=$rev; fi
	for row in $rows; do
		fs=${row%%:*} rest=${row#*:}
		dax=${rest%%:*} var=${rest#*:}
		[ "$var" != "$rest" ] || var=-
		echo "VQF-KDAX $fs $dax $win $r $var"
		phases=$(guest_rows) dev=/tmp
		if [ $fs != tmpfs ]; then
			dev=$MNT
			vqf_fs_load $fs && VQF_MOUNT_OPTS=dax=$dax vqf_mount $fs ||
				{ echo '# mount failed'; exit 1; }
			bdi=$(awk -v m=$MNT '$5 == m { print $3 }' \
				/proc/self/mountinfo)
			ra=/sys/class/bdi/$bdi/read_ahead_kb
			[ $var != ra0 ] || echo 0 >$ra || exit 1
			echo "# bdi $bdi read_ahead_kb $(cat $ra)"
			[ -z "$trace" ] || kdax_trace_start || exit 1
		fi
		for m in $phases; do
			case $m in
			seq*|mmap*) n=$sops ;;
			*) n=$rops ;;
			esac
			[ $var != ra0 ] || n=$rops
			[ -z "$trace" ] || [ $fs = tmpfs ] ||
				echo vqf-phase $m >$VQF_BENCH_MARK
			case $m in
			mmapread) vqf-bench mmapread $dev/f.bin $n ;;
			*) vqf-bench psyncop $dev/f.bin $m $n ;;
			esac || exit 1
		done
		[ $fs = tmpfs ] && continue
		[ -z "$trace" ] || kdax_trace_counts
		umount $MNT && vqf_fs_unload $fs || exit 1
		case $fs:$dax in
		vqfuse:always) n=3 ;;
		vqfuse:auto) n=4 ;;
		*) n=0 ;;
		esac
		[ $n = 0 ] ||
			dmesg | grep 'fuse: dax: ' | tail -n $n | sed 's/^[^]]*] /# /'
	done
	r=$((r + 1))
	done
	rm -f /tmp/f.bin
}

# boot WINDOW_MIB ROWS...: one guest
boot()
{
	win=$1
	shift
	rev=
	for row in "$@"; do rev="$row $rev"; done
	script="win=$win rounds=$rounds sops=$sops rops=$rops tmib=$tmib
	trace='$trace' fwd='$*' rev='$rev'
	$(sed -n '/^guest_rows()/,/^}/p; /^kdax_trace_start()/,/^}/p;
		/^kdax_trace_counts()/,/^}/p; /^guest_boot()/,/^}/p' "$0")
	guest_boot"
	vqf_mkinitramfs "$W"
	vqf_add_run_script "$W" "$script"
	VQF_SIM_ARGS="--dax-window ${win}M"
	vqf_start_virtiofsd "$W/shared" "$W/vfs.sock" "$W/daemon-$win.log"
	VQF_QEMU_TIMEOUT=${VQF_QEMU_TIMEOUT:-3600} \
		vqf_run_qemu "$W/boot.cpio" "$W/vfs.sock" \
		>"$W/console-$win.log" 2>&1 </dev/null
	qrc=$?
	vqf_stop_virtiofsd
	sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\r$//' "$W/console-$win.log" \
		>"$W/console-$win.txt"
	if [ $qrc != 0 ] || ! grep -q '^VQF-GUEST-EXIT rc=0' "$W/console-$win.txt" ||
	   ! vqf_scan_console "$W/console-$win.txt"; then
		grep -v '^\[' "$W/console-$win.txt" | tail -30
		vqf_die "guest run failed (QEMU status $qrc), see $W/console-$win.txt"
	fi
	cat "$W/console-$win.txt" >>"$W/all.txt"
}

q=$((mib / 4))
echo "bench-kdax: ${mib} MiB file, ${VQF_QEMU_MEM} guest, windows $mib and $q MiB, $rops random ops, $rounds rounds (TCG, slow)" >&2
: >"$W/all.txt"
boot "$mib" vqfuse:always virtiofs:always vqfuse:auto vqfuse:never \
	virtiofs:never vqfuse:never:ra0 virtiofs:never:ra0 tmpfs:- \
	vqfuse:always:mmap
boot "$q" vqfuse:always virtiofs:always vqfuse:auto

awk -v full="$mib" -v q="$q" -v rounds="$rounds" -v tmib="$tmib" '
function med(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^VQF-KDAX / {
	key = $2 " " $3 " " ($3 == "always" || $3 == "auto" ? $4 : "-") " " $6
	rd = $5; next
}
/^BENCH psyncop / {
	ph = $3 == "mmapread" ? "seqread" : $3
	split($6, v, "="); x = v[2] + 0
	per[key, ph, rd] = x
	if (x > mb[key, ph]) mb[key, ph] = x
}
/^VQF-OPS / { ops[key, rd, $2, $3] = $4 }
/^VQF-READSZ / { rsz[key, rd, $2] = $4 / $3 / 1024 }
/^VQF-TRACE-LOST / { lost[key, rd] = $2 }
function row(k, label,    j) {
	printf "%-44s", label
	for (j = 1; j <= nm; j++)
		if ((k, m[j]) in mb) printf " %9.1f", mb[k, m[j]]
		else printf " %9s", "-"
	printf "\n"
}
function ratio(a, b, label,    j, d) {
	printf "%-44s", label
	for (j = 1; j <= nm; j++) {
		d = mb[b, m[j]]
		if (d && ((a, m[j]) in mb)) printf " %8.2fx", mb[a, m[j]] / d
		else printf " %9s", "-"
	}
	printf "\n"
}
BEGIN {
	nm = split("seqread randread seqwrite randwrite", m, " ")
	F = "vqfuse always " full " -"; VF = "virtiofs always " full " -"
	Q = "vqfuse always " q " -"; VQ = "virtiofs always " q " -"
	A = "vqfuse auto " full " -"; AQ = "vqfuse auto " q " -"
	N = "vqfuse never - -"; VN = "virtiofs never - -"
	N0 = "vqfuse never - ra0"; VN0 = "virtiofs never - ra0"
	T = "tmpfs - - -"; MM = "vqfuse always " full " mmap"
}
END {
	printf "%-44s", "MB/s (4 KiB psync), best round"
	for (j = 1; j <= nm; j++) printf " %9s", m[j]
	printf "\n"
	row(F, "vqfuse dax=always win=" full "M")
	row(VF, "virtiofs dax=always win=" full "M")
	row(Q, "vqfuse dax=always win=" q "M")
	row(VQ, "virtiofs dax=always win=" q "M")
	row(A, "vqfuse dax=auto win=" full "M")
	row(AQ, "vqfuse dax=auto win=" q "M")
	row(N, "vqfuse dax=never (readahead)")
	row(VN, "virtiofs dax=never (readahead)")
	row(N0, "vqfuse dax=never read_ahead_kb=0")
	row(VN0, "virtiofs dax=never read_ahead_kb=0")
	row(T, "ceiling: guest tmpfs " tmib "M (page cache)")
	row(MM, "ceiling: memcpy from the mapped window")

	printf "\nratios (best rounds)\n"
	ratio(F, VF, "vqfuse DAX / virtiofs DAX, win=" full "M")
	ratio(Q, VQ, "vqfuse DAX / virtiofs DAX, win=" q "M")
	ratio(F, N, "vqfuse DAX / vqfuse no DAX (readahead)")
	ratio(A, N, "vqfuse auto / no DAX, win=" full "M")
	ratio(AQ, N, "vqfuse auto / no DAX, win=" q "M")
	ratio(A, F, "vqfuse auto / always, win=" full "M")
	ratio(AQ, Q, "vqfuse auto / always, win=" q "M")
	ratio(VF, VN, "virtiofs DAX / virtiofs no DAX (readahead)")
	ratio(F, N0, "vqfuse DAX / vqfuse no DAX read_ahead_kb=0")
	ratio(VF, VN0, "virtiofs DAX / virtiofs no DAX ra=0")
	ratio(F, T, "vqfuse DAX / tmpfs ceiling")
	ratio(VF, T, "virtiofs DAX / tmpfs ceiling")
	ratio(N, T, "vqfuse no DAX / tmpfs ceiling")
	ratio(T, N, "tmpfs ceiling / vqfuse no DAX (max gain)")
	ratio(T, VN, "tmpfs ceiling / virtiofs no DAX (max gain)")

	printf "\nper round and median\n"
	split(F "/" VF "|" Q "/" VQ "|" F "/" N "|" VF "/" VN "|" A "/" N "|" \
	      AQ "/" N, c, "|")
	split("vqfuse/virtiofs DAX win=" full "M|vqfuse/virtiofs DAX win=" q \
	      "M|vqfuse DAX/no DAX|virtiofs DAX/no DAX|vqfuse auto/no DAX win=" \
	      full "M|vqfuse auto/no DAX win=" q "M", cn, "|")
	for (i = 1; i <= 6; i++) {
		split(c[i], ab, "/")
		for (rd = 1; rd <= rounds; rd++) {
			printf "%-44s", cn[i] " r" rd
			for (j = 1; j <= nm; j++) {
				b = per[ab[2], m[j], rd]
				rt[j, rd] = b ? per[ab[1], m[j], rd] / b : 0
				printf " %8.2fx", rt[j, rd]
			}
			printf "\n"
		}
		printf "%-44s", cn[i] " median"
		for (j = 1; j <= nm; j++) {
			for (rd = 1; rd <= rounds; rd++) a[rd] = rt[j, rd]
			printf " %8.2fx", med(a, rounds)
		}
		printf "\n"
	}
	if (length(ops)) {
		printf "\nrequests per phase, round 1: SETUPMAPPING/REMOVEMAPPING/READ/WRITE, mean READ KiB\n"
		split(F "|" VF "|" Q "|" VQ "|" A "|" AQ "|" N "|" VN "|" N0 "|" \
		      VN0 "|" MM, rr, "|")
		for (i = 1; i <= 11; i++) {
			printf "%-30s", rr[i]
			for (j = 1; j <= nm; j++) {
				p = m[j]
				if (rr[i] == MM) p = j == 1 ? "mmapread" : ""
				if (p == "") continue
				printf " %s:%d/%d/%d/%d", substr(p, 1, 5), \
				       ops[rr[i], 1, p, 48], ops[rr[i], 1, p, 49], \
				       ops[rr[i], 1, p, 15], ops[rr[i], 1, p, 16]
				if ((rr[i], 1, p) in rsz)
					printf "@%.0f", rsz[rr[i], 1, p]
			}
			if ((rr[i], 1) in lost)
				printf " (trace lost %d events: counts low)", lost[rr[i], 1]
			printf "\n"
		}
	}
}' "$W/all.txt" | tee "$W/table.txt"
rm -rf "$W/shared" "$W/initramfs"
