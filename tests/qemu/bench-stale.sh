#!/bin/sh
# Deferred teardown at evict (fs/fuse 0008; docs/dax.md, "Deferred
# teardown at evict") on and off in one boot (a benchmark, not a test):
# in-tree virtiofs rebuilt over the patched fuse.ko ("virtiofs-vqf"),
# -o dax=always, against vqfuse-sim vhost-user --dax-window 512M under the
# patched QEMU.  Each mount sets fuse.dax_stale_max (0: off; -1: the
# default bound), runs vqf-bench smallfile DIR N and VQF_CYCLE (200)
# shell cycles of one file (echo x >f; cat f; rm f), and unmounts; the
# settings alternate mount by mount, the order swapped every round.
# Prints the BENCH lines, fuse.ko's window report of each mount (the
# stale counters) and the daemon's dax:/shmem:/opcode lines.
#
#   scripts/build-qemu.sh
#   VQF_QEMU=build/qemu/qemu-system-x86_64 chrt -r 10 \
#       tests/qemu/bench-stale.sh build/tests/qemu [N [ROUNDS]]
set -u
VQF_QEMU_SRC=$(cd "$(dirname "$0")" && pwd)
VQF_QEMU_BIN=$(cd "$1" && pwd)
n=${2:-500}
rounds=${3:-2}
cyc=${VQF_CYCLE:-200}
. "$VQF_QEMU_SRC/qemu-lib.sh"
[ -n "${VQF_QEMU:-}" ] ||
	vqf_die "VQF_QEMU=build/qemu/qemu-system-x86_64 (the patched QEMU) is needed"
W=$VQF_QEMU_BIN/work/bench-stale
rm -rf "$W"
mkdir -p "$W/shared"
trap 'vqf_stop_virtiofsd' EXIT INT TERM
script="r=1
while [ \$r -le $rounds ]; do
  case \$((r % 2)) in 1) order='off on' ;; *) order='on off' ;; esac
  for s in \$order; do
	echo \"VQF-BENCH-FS stale-\$s round \$r\"
	VQF_MOUNT_OPTS=dax=always
	vqf_fs_load virtiofs-vqf || exit 1
	case \$s in
	off) echo 0 >/sys/module/fuse/parameters/dax_stale_max ;;
	on) echo -1 >/sys/module/fuse/parameters/dax_stale_max ;;
	esac
	echo \"# dax_stale_max=\$(cat /sys/module/fuse/parameters/dax_stale_max)\"
	vqf_mount virtiofs-vqf || { echo '# mount failed'; exit 1; }
	vqf-bench smallfile \$MNT/sf-\$s-\$r $n || exit 1
	cd=\$MNT/cy-\$s-\$r
	mkdir \$cd
	t0=\$(cat /proc/uptime)
	i=0
	while [ \$i -lt $cyc ]; do
		echo x >\$cd/f\$i; cat \$cd/f\$i >/dev/null; rm \$cd/f\$i
		i=\$((i + 1))
	done
	t1=\$(cat /proc/uptime)
	echo \"BENCH cycle stale-\$s files=$cyc t0=\${t0%% *} t1=\${t1%% *}\"
	umount \$MNT && vqf_fs_unload virtiofs-vqf || exit 1
	dmesg | grep 'fuse: dax: ' | tail -n 3 | sed 's/^[^]]*] /# /'
  done
  r=\$((r + 1))
done"
vqf_mkinitramfs "$W"
vqf_add_run_script "$W" "$script"
VQF_DAEMON=sim VQF_SIM_ARGS="--dax-window ${VQF_BENCH_WINDOW:-512M}"
export VQF_DAEMON VQF_SIM_ARGS
vqf_start_virtiofsd "$W/shared" "$W/vfs.sock" "$W/daemon.log"
VQF_QEMU_TIMEOUT=${VQF_QEMU_TIMEOUT:-3600} \
	vqf_run_qemu "$W/boot.cpio" "$W/vfs.sock" >"$W/console.log" 2>&1 </dev/null
qrc=$?
vqf_stop_virtiofsd
sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\r$//' "$W/console.log" >"$W/console.txt"
if [ $qrc != 0 ] || ! grep -q '^VQF-GUEST-EXIT rc=0' "$W/console.txt"; then
	grep -v '^\[' "$W/console.txt" | tail -30
	echo "bench-stale: guest run failed (QEMU status $qrc), see $W/console.txt" >&2
	exit 1
fi
grep -E '^VQF-BENCH-FS|^BENCH|^# ' "$W/console.txt"
grep -E ' dax: | shmem: |by opcode' "$W/daemon.log" | sed 's/^/# daemon: /'
