# shellcheck shell=sh
# The RFC's psync rows under QEMU, sourced by bench-qemu.sh when
# VQF_BENCH_DAX=1: one thread of 4 KiB pread()s, sequential and random,
# over a file larger than the guest's page cache can keep, and the
# smallfile workload, on
#   virtiofs+dax  in-tree virtiofs -o dax=always, the patched QEMU
#                 (VQF_QEMU, see qemu/) and vqfuse-sim vhost-user
#                 --dax-window
#   virtiofs+auto the same boot, daemon and file, -o dax=auto: the in-tree
#                 virtiofs rebuilt with the patched fuse.ko of VQF_KO_DIR
#                 (fs/fuse 0007: lib's policy maps a range or sends READ/
#                 WRITE; lib's range management, where virtiofs+dax runs
#                 on upstream's dax.c)
#   virtiofs+inode the same boot, daemon and file, the in-tree virtiofs
#                 -o dax=inode: the daemon's --dax-inode-min 512K marks the
#                 big file DAX and the smallfile files not
#   virtiofs-vqf  the same boot, daemon and file, -o dax=never on the
#                 patched fuse.ko: what virtiofs+auto is without DAX, so
#                 auto/vqf is the policy's own effect, with no other
#                 fuse.ko in the comparison
#   virtiofs      the same boot, daemon and file, -o dax=never
#   9p            virtio-9p (cache=none) over the same folder, in a second
#                 boot of Debian's QEMU (the patched build has no 9p)
# in ROUNDS rounds; per figure the median of the rounds, and per ratio
# the median of the per-round ratios (the rows of a round ran in the same
# minute of the same boot).  Every other round runs the rows in reverse
# order, so that no row always comes right after another's psync runs
# or first in a round (a pair's ratio would carry that position).
#
#   VQF_BENCH_SECONDS   seconds per psync run (default 10)
#   VQF_BENCH_FILE_MIB  the file (default 1536, guest memory 1G)
#   VQF_BENCH_WINDOW    the DAX window (default 512M)
bench_dax()
{
	n=$1 rounds=$2
	secs=${VQF_BENCH_SECONDS:-10}
	mib=${VQF_BENCH_FILE_MIB:-1536}
	[ -n "${VQF_QEMU:-}" ] ||
		vqf_die "VQF_BENCH_DAX=1 needs VQF_QEMU, the patched QEMU (scripts/build-qemu.sh)"
	ko=${VQF_KO_DIR:-$VQF_QEMU_BIN/../../kernel}
	[ -f "$ko/fuse.ko" ] && [ -f "$ko/virtiofs.ko" ] ||
		vqf_die "$ko/fuse.ko or virtiofs.ko missing (virtiofs+auto): build kernel-module"
	patched=$VQF_QEMU
	W=$VQF_QEMU_BIN/work/bench-dax
	rm -rf "$W"
	mkdir -p "$W/shared"
	trap 'vqf_stop_virtiofsd' EXIT INT TERM
	"$VQF_QEMU_BIN/vqf-bench" mkfile "$W/shared/psync.bin" "$mib" || return 1
	echo "bench-qemu: DAX rows, $mib MiB file, $secs s per psync run," \
		"$n files, $rounds rounds" >&2

	: >"$W/console.txt"
	for boot in dax 9p; do
		case $boot in
		dax) fss="virtiofs+dax virtiofs+auto virtiofs+inode virtiofs-vqf virtiofs" ;;
		9p) fss="9p" ;;
		esac
		rev=
		for fs in $fss; do rev="$fs $rev"; done
		script="r=1
while [ \$r -le $rounds ]; do
	order=\"$fss\"
	[ \$((r % 2)) = 1 ] || order=\"$rev\"
	for fs in \$order; do
		echo \"VQF-BENCH-FS \$fs round \$r\"
		case \$fs in
		virtiofs+dax) VQF_MOUNT_OPTS=dax=always; m=virtiofs ;;
		virtiofs+auto) VQF_MOUNT_OPTS=dax=auto; m=virtiofs-vqf ;;
		virtiofs-vqf) VQF_MOUNT_OPTS=dax=never; m=virtiofs-vqf ;;
		virtiofs+inode) VQF_MOUNT_OPTS=dax=inode; m=virtiofs ;;
		virtiofs) VQF_MOUNT_OPTS=dax=never; m=virtiofs ;;
		*) m=\$fs ;;
		esac
		vqf_fs_load \$m && vqf_mount \$m || { echo '# mount failed'; exit 1; }
		grep \" \$MNT \" /proc/mounts | sed 's/^/# mount: /'
		vqf-bench psync \$MNT/psync.bin seq $secs || exit 1
		vqf-bench psync \$MNT/psync.bin rand $secs || exit 1
		vqf-bench smallfile \$MNT/sf-\$boot-\$r $n || exit 1
		umount \$MNT && vqf_fs_unload \$m || exit 1
		[ \$fs != virtiofs+auto ] ||
			dmesg | grep 'fuse: dax: auto: ' | tail -n 1 | sed 's/^[^]]*] /# /'
	done
	r=\$((r + 1))
done"
		B=$W/$boot
		mkdir -p "$B"
		vqf_mkinitramfs "$B"
		vqf_add_run_script "$B" "$script"
		if [ $boot = dax ]; then
			VQF_QEMU=$patched VQF_DAEMON=sim \
			VQF_SIM_ARGS="--dax-window ${VQF_BENCH_WINDOW:-512M} --dax-inode-min 512K"
			export VQF_QEMU VQF_DAEMON VQF_SIM_ARGS
			ninep=
		else
			unset VQF_QEMU VQF_SIM_ARGS
			VQF_DAEMON=virtiofsd
			ninep=$W/shared
		fi
		vqf_start_virtiofsd "$W/shared" "$B/vfs.sock" "$B/daemon.log"
		VQF_QEMU_TIMEOUT=${VQF_QEMU_TIMEOUT:-3600} \
			vqf_run_qemu "$B/boot.cpio" "$B/vfs.sock" $ninep \
			>"$B/console.log" 2>&1 </dev/null
		qrc=$?
		vqf_stop_virtiofsd
		sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\r$//' "$B/console.log" \
			>"$B/console.txt"
		if [ $qrc != 0 ] ||
		   ! grep -q '^VQF-GUEST-EXIT rc=0' "$B/console.txt" ||
		   ! vqf_scan_console "$B/console.txt"; then
			grep -v '^\[' "$B/console.txt" | tail -30
			echo "bench-qemu: $boot boot failed (QEMU status $qrc)," \
				"see $B/console.txt" >&2
			return 1
		fi
		cat "$B/console.txt" >>"$W/console.txt"
	done
	grep -E ' dax: | shmem: |by opcode' "$W/dax/daemon.log" | sed 's/^/# daemon: /'

	awk '
function med(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# the median over the rounds of x[f, m, r], or of x[f, m, r] / x[g, m, r]
function mfig(f, m,    r, n, a) {
	n = 0
	for (r = 1; r <= nr; r++)
		if ((f, m, r) in x) a[++n] = x[f, m, r]
	return n ? med(a, n) : 0
}
function mrat(f, g, m,    r, n, a) {
	n = 0
	for (r = 1; r <= nr; r++)
		if ((f, m, r) in x && x[g, m, r] > 0)
			a[++n] = x[f, m, r] / x[g, m, r]
	return n ? med(a, n) : 0
}
/^VQF-BENCH-FS / { fs = $2; rd = $4; if (rd > nr) nr = rd; next }
/^BENCH psync-/ { split($5, v, "="); x[fs, $2, rd] = v[2]; next }
/^BENCH smallfile / { split($6, v, "="); x[fs, $3, rd] = v[2] }
END {
	nf = split("virtiofs+dax virtiofs+auto virtiofs+inode virtiofs-vqf virtiofs 9p", f, " ")
	nm = split("psync-seq psync-rand create stat read append rename delete all", m, " ")
	printf "%-16s", "figure"
	for (i = 1; i <= nf; i++) printf " %14s", f[i]
	printf " %9s %9s %9s %10s %9s\n", "dax/vfs", "auto/vfs", "auto/vqf",
		"inode/vfs", "dax/9p"
	for (j = 1; j <= nm; j++) {
		unit = (m[j] ~ /^psync/) ? "MB/s" : "ops/s"
		printf "%-16s", m[j] " " unit
		for (i = 1; i <= nf; i++) printf " %14.1f", mfig(f[i], m[j])
		printf " %8.2fx %8.2fx %8.2fx %9.2fx %8.2fx\n",
			mrat("virtiofs+dax", "virtiofs", m[j]),
			mrat("virtiofs+auto", "virtiofs", m[j]),
			mrat("virtiofs+auto", "virtiofs-vqf", m[j]),
			mrat("virtiofs+inode", "virtiofs", m[j]),
			mrat("virtiofs+dax", "9p", m[j])
	}
	printf "(medians of %d rounds; auto/vqf: dax=auto against dax=never on the same patched fuse.ko; inode/vfs: the in-tree dax=inode with the daemon marking files of 512 KiB+, against the in-tree dax=never)\n", nr
}' "$W/console.txt" | tee "$W/table.txt"
	rm -rf "$W/shared" "$W/dax/initramfs" "$W/9p/initramfs"
}
