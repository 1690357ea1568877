# shellcheck shell=sh
# Guest-side steps of the QEMU tests, sourced by /init and by /run.sh.
# Module load order comes from /etc/vqf-modsets, which the host derived
# from the guest kernel's modules.dep.
VQF_TAG=vqf
VQF_9P_TAG=vqf9p
MNT=/mnt

vqf_loaded()
{
	[ -d "/sys/module/$(echo "$1" | tr - _)" ]
}

# vqf_builtin NAME: NAME is built into the guest kernel (Debian's 6.12 has
# virtio_pci, fuse and virtiofs built in), so there is nothing to load or
# unload.  The host lists them on the modsets' "builtin:" line.
vqf_builtin()
{
	sed -n 's/^builtin: //p' /etc/vqf-modsets | tr ' ' '\n' |
		grep -qx "$1"
}

# vqf_rmmod NAME...: rmmod each NAME that is not built in.
vqf_rmmod()
{
	for m in "$@"; do
		vqf_builtin "$m" || rmmod "$m" || return 1
	done
}

# vqf_modset SET: insmod every module of SET not yet loaded, in order.  A
# set whose modules are all built in is empty and loads nothing.
vqf_modset()
{
	grep -q "^$1:" /etc/vqf-modsets || { echo "# no module set $1"; return 1; }
	mods=$(sed -n "s/^$1: *//p" /etc/vqf-modsets)
	for m in $mods; do
		vqf_loaded "$m" && continue
		insmod "/lib/vqf/$m.ko" || { echo "# insmod $m failed"; return 1; }
	done
}

# vqf_fuse_load [PARAM=VALUE...]: fuse.ko for vqfuse.ko, the patched one of
# kernel/fuse-X.Y/ (DAX range management from lib/) when it was built; the
# in-tree fuse.ko stays the baseline of virtiofs and 9p.
vqf_fuse_load()
{
	vqf_loaded fuse && return 0
	if [ -f /lib/vqf/fuse-vqf.ko ]; then
		insmod /lib/vqf/fuse-vqf.ko "$@" ||
			{ echo "# insmod fuse-vqf failed"; return 1; }
	else
		vqf_modset fuse
	fi
}

# vqf_vqfuse_take / vqf_vqfuse_give: a built-in virtiofs (Debian's 6.12)
# binds every virtio-fs device at boot, before vqfuse.ko exists; move them
# to vqfuse once it is loaded, and back to virtiofs once it is gone.
vqf_vqfuse_take()
{
	vqf_builtin virtiofs || return 0
	for vqf_dev in /sys/bus/virtio/drivers/virtiofs/virtio*; do
		[ -e "$vqf_dev" ] || continue
		echo "${vqf_dev##*/}" >/sys/bus/virtio/drivers/virtiofs/unbind &&
			echo "${vqf_dev##*/}" >/sys/bus/virtio/drivers/vqfuse/bind ||
			{ echo "# ${vqf_dev##*/}: virtiofs -> vqfuse failed"; return 1; }
	done
}

vqf_vqfuse_give()
{
	vqf_builtin virtiofs || return 0
	for vqf_dev in /sys/bus/virtio/devices/virtio*; do
		[ "$(cat "$vqf_dev/device")" = 0x001a ] && [ ! -e "$vqf_dev/driver" ] ||
			continue
		echo "${vqf_dev##*/}" >/sys/bus/virtio/drivers/virtiofs/bind ||
			{ echo "# ${vqf_dev##*/}: -> virtiofs failed"; return 1; }
	done
}

# vqf_fs_load FSTYPE [PARAM=VALUE...] / vqf_fs_unload FSTYPE: the
# filesystem module (with vqfuse.ko's parameters) and fuse.ko, both loaded
# and unloaded on every cycle.
vqf_fs_load()
{
	case $1 in
	vqfuse) shift; vqf_fuse_load && insmod /lib/vqf/vqfuse.ko "$@" &&
		vqf_vqfuse_take ;;
	virtiofs) vqf_modset fuse && vqf_modset virtiofs ;;
	# in-tree virtiofs rebuilt with the patched fuse.ko (vqfuse-dkms)
	virtiofs-vqf) vqf_fuse_load && insmod /lib/vqf/virtiofs-vqf.ko ;;
	9p) vqf_modset fuse && vqf_modset 9p ;;
	esac
}

vqf_fs_unload()
{
	case $1 in
	virtiofs|virtiofs-vqf) vqf_rmmod virtiofs || return 1 ;;
	vqfuse) rmmod vqfuse && vqf_vqfuse_give || return 1 ;;
	9p) vqf_rmmod 9p 9pnet_virtio 9pnet || return 1; return 0 ;;
	esac
	vqf_rmmod fuse
}

# vqf_pair_load OTHER: bench-qemu's paired mode (VQF_BENCH_PAIRED=1).
# The guest has two virtio-fs devices, tags $VQF_TAG and ${VQF_TAG}2:
# vqfuse.ko binds every one, then the last is moved to OTHER (virtiofs-vqf,
# the in-tree virtiofs.ko over the same patched fuse.ko; or virtiofs where
# fuse.ko is the kernel's own); vqfuse is mounted on $MNT/vqfuse, OTHER on
# $MNT/OTHER.  Nothing is loaded again until the guest ends, so both
# drivers run with one module placement, one interrupt setup, one fuse.ko.
# The allocator gives the two devices' request interrupts different CPUs
# (one of them the workload's, whose completions then wake it without an
# IPI: stat 0.53x in the first paired run), so with VQF_BENCH_IRQ_CPU=N
# every queue's interrupt (hiprio too) is moved to CPU N (not for a
# managed interrupt, 6.12's: that is said, and the run goes on).
vqf_pair_load()
{
	vqf_fs_load vqfuse || return 1
	case $1 in
	virtiofs-vqf) insmod /lib/vqf/virtiofs-vqf.ko || return 1 ;;
	virtiofs) vqf_builtin virtiofs || vqf_modset virtiofs || return 1 ;;
	*) echo "# vqf_pair_load: no driver $1"; return 1 ;;
	esac
	# VQF_BENCH_PAIR_SWAP=1: OTHER gets the first device instead, to
	# tell a driver from a device (PCI slot, daemon) that is slower
	vqf_pair_dev=
	for vqf_dev in /sys/bus/virtio/devices/virtio*; do
		[ "$(cat "$vqf_dev/device")" = 0x001a ] || continue
		[ "${VQF_BENCH_PAIR_SWAP:-0}" = 1 ] && [ -n "$vqf_pair_dev" ] &&
			continue
		vqf_pair_dev=${vqf_dev##*/}
	done
	echo "$vqf_pair_dev" >/sys/bus/virtio/drivers/vqfuse/unbind &&
		echo "$vqf_pair_dev" >/sys/bus/virtio/drivers/virtiofs/bind || {
		echo "# $vqf_pair_dev: vqfuse -> $1 failed"
		return 1
	}
	mkdir -p "$MNT/vqfuse" "$MNT/$1"
	# which tag sits on which device is PCI order; a mount tells
	for vqf_t in "$VQF_TAG" "${VQF_TAG}2"; do
		mount -t vqfuse "$vqf_t" "$MNT/vqfuse" 2>/dev/null || continue
		[ "$vqf_t" = "$VQF_TAG" ] && vqf_t=${VQF_TAG}2 || vqf_t=$VQF_TAG
		mount -t virtiofs "$vqf_t" "$MNT/$1" || {
			umount "$MNT/vqfuse"
			break
		}
		[ -z "${VQF_BENCH_IRQ_CPU:-}" ] && return 0
		grep -E 'virtio[0-9]+-(requests|hiprio)' /proc/interrupts |
		while read -r vqf_irq vqf_rest; do
			vqf_irq=${vqf_irq%:}
			echo "$VQF_BENCH_IRQ_CPU" \
				>"/proc/irq/$vqf_irq/smp_affinity_list" 2>/dev/null ||
				echo "# irq $vqf_irq stays where the kernel put it"
		done
		return 0
	done
	echo "# vqf_pair_load: mounting vqfuse and $1 failed"
	return 1
}

# vqf_irq_mark / vqf_irq_since: "# irq:" lines of the virtio interrupts
# taken since the mark, per CPU (/proc/interrupts counts from the vector's
# request, which a paired run makes once).
vqf_irq_mark()
{
	grep virtio /proc/interrupts >/tmp/vqf-irq0
}

vqf_irq_since()
{
	grep CPU /proc/interrupts | sed 's/^/# irq: /'
	grep virtio /proc/interrupts | awk '
	NR == FNR { for (i = 2; i < NF; i++) was[$1, i] = $i; next }
	{
		line = $1
		for (i = 2; i <= NF; i++)
			if ($i ~ /^[0-9]+$/ && (($1, i) in was))
				line = line " " ($i - was[$1, i])
			else
				line = line " " $i
		print "# irq: " line
	}' /tmp/vqf-irq0 -
}

# vqf_mount FSTYPE: on /mnt, with the options in VQF_MOUNT_OPTS (e.g.
# dax=always), which /proc/mounts must then show.
vqf_mount()
{
	case $1 in
	9p) mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 \
		"$VQF_9P_TAG" "$MNT" ;;
	virtiofs-vqf) vqf_mount virtiofs ;;
	# VQF_MOUNT_OPTS: e.g. dax=always
	*) mount -t "$1" ${VQF_MOUNT_OPTS:+-o "$VQF_MOUNT_OPTS"} \
		"$VQF_TAG" "$MNT" || return 1
	   [ -z "${VQF_MOUNT_OPTS:-}" ] && return 0
	   grep -q " $MNT .*[ ,]$VQF_MOUNT_OPTS[ ,]" /proc/mounts && return 0
	   echo "# $1 mounted without $VQF_MOUNT_OPTS: $(grep " $MNT " /proc/mounts)"
	   umount "$MNT"
	   return 1 ;;
	esac
}

# vqf_dax_mount: virtiofs mounted with -o dax=always, which the in-tree
# driver refuses without a DAX window; /proc/mounts must say dax=always.
vqf_dax_mount()
{
	VQF_MOUNT_OPTS=dax=always
	vqf_fs_load virtiofs && vqf_mount virtiofs || return 1
	grep " $MNT " /proc/mounts | sed 's/^/# mount: /'
	grep " $MNT " /proc/mounts | grep -q 'dax=always' ||
		{ echo "# not mounted with dax=always"; return 1; }
}

# vqf_dax_suite N: the POSIX suite cycles with -o dax=always.
vqf_dax_suite()
{
	echo "VQF-BEGIN dax-mount"
	rc=1
	if vqf_dax_mount; then
		rc=0
		umount "$MNT" || rc=1
		vqf_fs_unload virtiofs || rc=1
	fi
	echo "VQF-END dax-mount rc=$rc"
	VQF_MOUNT_OPTS=dax=always vqf_suite_cycles virtiofs "$1" && [ $rc = 0 ]
}

# vqf_dax_reclaim FILE: a file larger than the window, every byte read,
# rewritten in place (pwrite and mmap stores) and read again through DAX,
# so that ranges are reclaimed and mapped again all along.  The host then
# checks the new content.
vqf_dax_reclaim()
{
	echo "VQF-BEGIN dax-reclaim"
	rc=1
	if vqf_dax_mount; then
		vqf-bench rewrite "$MNT/$1" 77 78 && rc=0
		umount "$MNT" || rc=1
		vqf_fs_unload virtiofs || rc=1
	fi
	echo "VQF-END dax-reclaim rc=$rc"
	return $rc
}

# vqf_dax_inode: the daemon's --dax-inode-min policy through the kernel's
# own virtiofs.  Mounted -o dax=inode (and with no dax option: the same
# default), the 8 MiB big.bin is read through the window (none of it in
# this guest's page cache afterwards) and the 4 KiB small.bin through
# FUSE READ (in the page cache); mounted -o dax=never, big.bin is in the
# page cache too.  A fresh mount each time: the kernel decides DAX when
# it first sees the inode.
vqf_dax_inode()
{
	echo "VQF-BEGIN dax-inode"
	rc=0
	for o in dax=inode '' dax=never; do
		VQF_MOUNT_OPTS=$o
		if ! vqf_fs_load virtiofs || ! vqf_mount virtiofs; then
			echo "# mount with '$o' failed"
			rc=1
			continue
		fi
		for f in big.bin small.bin; do
			out=$(vqf-cohere readfile "$MNT/$f") || rc=1
			in=$(echo " $out " | sed -n 's/.* incore=\([0-9]*\) .*/\1/p')
			want=some
			[ $f = big.bin ] && [ "$o" != dax=never ] && want=0
			echo "# '$o' $f: $out (page cache: want $want)"
			case $want:${in:-x} in
			0:0) ;;
			some:0|*:x) rc=1 ;;
			0:*) rc=1 ;;
			esac
		done
		umount "$MNT" || rc=1
		vqf_fs_unload virtiofs || rc=1
	done
	VQF_MOUNT_OPTS=
	echo "VQF-END dax-inode rc=$rc"
	return $rc
}

# vqf_dax_hostile FILE: the guest sees a window larger than the daemon's
# (QEMU's cache-size), so the driver asks SETUPMAPPING for ranges the
# daemon must refuse.  Reading FILE (larger than the daemon's window) must
# fail with an error, not oops; the guest carries on: a remount reads the
# start of FILE through DAX again, and the suite runs without DAX.
vqf_dax_hostile()
{
	echo "VQF-BEGIN dax-hostile"
	rc=1
	if vqf_dax_mount; then
		rc=0
		if out=$(dd if="$MNT/$1" of=/dev/null bs=1M 2>&1); then
			echo "# read of $1 did not fail: $out"
			rc=1
		else
			echo "$out" | sed 's/^/# dd: /'
		fi
		umount "$MNT" || rc=1
		vqf_fs_unload virtiofs || rc=1
	else
		rc=1
	fi
	# the device and the driver keep working
	if vqf_dax_mount; then
		dd if="$MNT/$1" of=/dev/null bs=1M count=4 2>&1 |
			sed 's/^/# dd again: /'
		dd if="$MNT/$1" of=/dev/null bs=1M count=4 2>/dev/null ||
			{ echo "# the start of $1 does not read again"; rc=1; }
		umount "$MNT" || rc=1
		vqf_fs_unload virtiofs || rc=1
	else
		rc=1
	fi
	echo "VQF-END dax-hostile rc=$rc"
	VQF_MOUNT_OPTS= vqf_suite_cycles virtiofs 1 && [ $rc = 0 ]
}

# vqf_dax_auto FSTYPE: FSTYPE (vqfuse, or virtiofs-vqf: the in-tree
# virtiofs on the patched fuse.ko) mounted with -o dax=auto (fs/fuse 0007:
# lib's policy decides per range whether read() and write() map it) over
# the host's auto/ folder (run-test.sh vqfuse-daxauto: 12 files s1..s12 of
# 4 KiB, w1 of 4 KiB zeros, big.bin of 128 MiB, 4x the 32 MiB window;
# auto.md5).  Which files went through the window, told by the FUSE
# requests of each phase (kprobes: SETUPMAPPING 48, READ 15, WRITE 16):
#   small1    the 12 small files read once: READs, no SETUPMAPPING
#   small2    read again: each maps (12 SETUPMAPPINGs), no READ
#   write     w1, never read, overwritten in place: a WRITE, no mapping
#   readback  w1 read again: mapped, and it holds what was written
#   seq       big.bin read in order: range by range through the window
#             (at least its 64 ranges mapped), no READ; the small files'
#             ranges are reclaimed meanwhile, never used again
#   rand      2000 random 4 KiB reads of big.bin: the window thrashes, the
#             file backs off to READ (dax=always: about 1500 mappings)
#   small3    the small files a third time: their mappings were wasted,
#             so small files back off together (the crowd): READs only
# Every byte read is checked (md5sums against the host's, psyncop's
# pattern); the host checks w1.  fuse.ko's policy counters at unmount
# must show the small-file rule, a thrash verdict, a backoff and the
# crowd.
VQF_AUTO_PHASES="small1 small2 write readback seq rand small3"
vqf_dax_auto()
{
	fs=$1
	echo "VQF-BEGIN daxauto-$fs"
	rc=1
	if vqf_fs_load "$fs" && VQF_MOUNT_OPTS=dax=auto vqf_mount "$fs"; then
		rc=0
		d=$MNT/auto
		# read before the count starts
		sums=$(cat "$MNT/auto.md5") && [ -n "$sums" ] ||
			{ echo "# daxauto: no auto.md5"; rc=1; }
		yes vqf-daxauto | head -c 4096 >/tmp/pat
		vqf_trace_start ||
			vqf_auto_bad "no kprobe tracing, nothing to count with"
		for ph in $VQF_AUTO_PHASES; do
			[ -z "${VQF_BENCH_MARK:-}" ] ||
				echo "vqf-phase $ph" >"$VQF_BENCH_MARK"
			case $ph in
			small*) vqf_auto_md5 $ph s1 s2 s3 s4 s5 s6 s7 s8 s9 \
					s10 s11 s12 ;;
			seq) vqf_auto_md5 $ph big.bin ;;
			rand) vqf-bench psyncop "$d/big.bin" randread 2000 ||
					vqf_auto_bad "rand: psyncop failed" ;;
			write) dd if=/tmp/pat of="$d/w1" bs=4096 count=1 \
					conv=notrunc 2>/dev/null ||
					vqf_auto_bad "write failed" ;;
			readback) cmp /tmp/pat "$d/w1" ||
					vqf_auto_bad "w1 reads back wrong" ;;
			esac
		done
		[ -z "${VQF_BENCH_MARK:-}" ] || echo "vqf-phase end" >"$VQF_BENCH_MARK"
		VQF_AUTO_OPS=$(vqf_trace_counts)
		echo "$VQF_AUTO_OPS"
		umount "$MNT" || vqf_auto_bad "umount failed"
		vqf_fs_unload "$fs" || vqf_auto_bad "unload failed"
		echo "# daxauto $fs: SETUPMAPPING/READ/WRITE per phase:" \
			"$(for ph in $VQF_AUTO_PHASES; do
				printf '%s %s/%s/%s ' $ph "$(vqf_auto_n $ph 48)" \
					"$(vqf_auto_n $ph 15)" "$(vqf_auto_n $ph 16)"
			done)"
		[ "$(vqf_auto_n small1 48)" = 0 ] ||
			vqf_auto_bad "small1 mapped a small file read once"
		[ "$(vqf_auto_n small1 15)" -ge 12 ] ||
			vqf_auto_bad "small1: fewer than 12 READs"
		[ "$(vqf_auto_n small2 48)" = 12 ] ||
			vqf_auto_bad "small2: not one mapping per file"
		[ "$(vqf_auto_n small2 15)" = 0 ] ||
			vqf_auto_bad "small2: READs of files read before"
		[ "$(vqf_auto_n seq 48)" -ge 64 ] ||
			vqf_auto_bad "seq: big.bin not mapped range by range"
		[ "$(vqf_auto_n seq 15)" = 0 ] ||
			vqf_auto_bad "seq: READs of a file streamed"
		[ "$(vqf_auto_n rand 15)" -ge 1000 ] ||
			vqf_auto_bad "rand: no backoff to READ"
		[ "$(vqf_auto_n rand 48)" -le 400 ] ||
			vqf_auto_bad "rand: the window still thrashes"
		[ "$(vqf_auto_n write 48)" = 0 ] ||
			vqf_auto_bad "write: mapped a small file for a write"
		[ "$(vqf_auto_n write 16)" -ge 1 ] ||
			vqf_auto_bad "write: no WRITE"
		[ "$(vqf_auto_n readback 48)" = 1 ] ||
			vqf_auto_bad "readback: w1 not mapped"
		[ "$(vqf_auto_n readback 15)" = 0 ] ||
			vqf_auto_bad "readback: READ of w1"
		[ "$(vqf_auto_n small3 48)" = 0 ] ||
			vqf_auto_bad "small3: the crowd of small files still maps"
		[ "$(vqf_auto_n small3 15)" -ge 12 ] ||
			vqf_auto_bad "small3: fewer than 12 READs"
		# fuse.ko's policy counters of this mount (fs/fuse 0007)
		c=$(dmesg | grep 'fuse: dax: auto: ' | tail -n 1)
		echo "$c" | sed 's/^[^]]*] /# /'
		for k in small:12 thrash:1 backoff:1 crowd:1; do
			v=$(echo "$c" | sed -n "s/.* ${k%:*}=\([0-9]*\).*/\1/p")
			[ "${v:-0}" -ge "${k#*:}" ] ||
				vqf_auto_bad "fuse.ko counted ${k%:*}=${v:-none}, want >= ${k#*:}"
		done
	else
		echo "# load or dax=auto mount of $fs failed"
	fi
	echo "VQF-END daxauto-$fs rc=$rc"
	return $rc
}

# vqf_dax_auto's helpers (fs, d, sums, rc are its variables):
# vqf_auto_bad WHY fails the cycle; vqf_auto_md5 PHASE FILE... reads each
# FILE of $d whole and checks it against auto.md5; vqf_auto_n PHASE OP is
# the phase's count of opcode OP (0 when none was seen).
vqf_auto_bad()
{
	echo "# daxauto $fs: $*"
	rc=1
}

vqf_auto_md5()
{
	p=$1
	shift
	for f in "$@"; do
		got=$(md5sum <"$d/$f") ||
			{ vqf_auto_bad "$p: reading $f failed"; continue; }
		want=$(echo "$sums" | awk -v f="$f" '$2 == f { print $1 }')
		[ -n "$want" ] && [ "${got%% *}" = "$want" ] ||
			vqf_auto_bad "$p: $f is not the host's (md5 ${got%% *}, want $want)"
	done
}

vqf_auto_n()
{
	echo "$VQF_AUTO_OPS" | awk -v p="$1" -v o="$2" \
		'$2 == p && $3 == o { c = $4 } END { print c + 0 }'
}

# vqf_suite_cycles FSTYPE N: N times load -> mount -> suite -> users part
# -> unmount -> remount -> verify (read back from the host, not the page
# cache) -> unmount -> unload.  Each cycle writes its own folders FSTYPE-i
# and FSTYPE-i-users.
vqf_suite_cycles()
{
	fs=$1 n=$2 i=1 bad=0
	while [ "$i" -le "$n" ]; do
		d=$fs-$i
		echo "VQF-BEGIN $d"
		rc=1
		if vqf_fs_load "$fs" && vqf_mount "$fs"; then
			vqf-posix run "$MNT/$d"
			rc=$?
			vqf-posix users "$MNT/$d-users" || rc=1
			umount "$MNT" || { echo "# umount failed"; rc=1; }
			if vqf_mount "$fs"; then
				vqf-posix verify "$MNT/$d" || rc=1
				umount "$MNT" || { echo "# umount failed"; rc=1; }
			else
				rc=1
			fi
			[ "$fs" = vqfuse ] && { vqf_vqfuse_counters || rc=1; }
			vqf_fs_unload "$fs" || { echo "# unload failed"; rc=1; }
		else
			echo "# load or mount of $fs failed"
		fi
		echo "VQF-END $d rc=$rc"
		[ "$rc" = 0 ] || bad=1
		i=$((i + 1))
	done
	return $bad
}

# vqf_modversions: which modules the guest runs, as /sys/module says
# (MODULE_VERSION): fuse.ko and vqfuse.ko, and the rebuilt cuse.ko and
# virtiofs.ko where they were packed, for the host to compare with the
# files it packed.
vqf_modversions()
{
	echo "VQF-BEGIN modver"
	rc=1
	if vqf_fs_load vqfuse; then
		line="fuse=$(cat /sys/module/fuse/version 2>/dev/null)"
		line="$line vqfuse=$(cat /sys/module/vqfuse/version 2>/dev/null)"
		rmmod vqfuse && vqf_vqfuse_give && rc=0
		for m in cuse virtiofs; do
			[ -f "/lib/vqf/$m-vqf.ko" ] || continue
			if insmod "/lib/vqf/$m-vqf.ko"; then
				line="$line $m=$(cat /sys/module/$m/version 2>/dev/null)"
				rmmod "$m" || rc=1
			else
				echo "# insmod $m-vqf failed"
				rc=1
			fi
		done
		echo "# modver $line"
		vqf_rmmod fuse || rc=1
	fi
	echo "VQF-END modver rc=$rc"
	return $rc
}

# vqf_vqfuse_counters: vqfuse.ko's debugfs counters after a clean run:
# no refused reply and nothing left in flight on any queue.
vqf_vqfuse_counters()
{
	grep -q ' /sys/kernel/debug ' /proc/mounts ||
		mount -t debugfs none /sys/kernel/debug
	q=$(cat /sys/kernel/debug/vqfuse/*/queues 2>/dev/null)
	if [ -z "$q" ]; then
		echo "# vqfuse counters: no /sys/kernel/debug/vqfuse/*/queues"
		return 1
	fi
	echo "$q" | sed 's/^/# vqfuse: /'
	sed 's/^/# vqfuse-ver: /' /sys/kernel/debug/vqfuse/*/version
	if echo "$q" | grep -qE 'bad_reply=[1-9]|in_flight=[1-9]'; then
		echo "# vqfuse counters: refused replies or requests in flight"
		return 1
	fi
}

# vqf_sent: FUSE requests vqfuse.ko sent so far, over every queue.
vqf_sent()
{
	vqf_sent_n
	echo "$VQF_N"
}

# vqf_sent_n: the same in VQF_N, with shell builtins only: under TCG each
# fork costs more than the stat it counts.
vqf_sent_n()
{
	VQF_N=0
	for q in /sys/kernel/debug/vqfuse/*/queues; do
		# the kernel's own virtiofs has no counters: 0
		[ -e "$q" ] || continue
		while read -r l; do
			case $l in
			requests*" sent="*)
				l=${l#* sent=}
				VQF_N=$((VQF_N + ${l%% *})) ;;
			esac
		done <"$q"
	done
}

# vqf_version_table: vqfuse.ko over a device with the shared version table
# (shm region 1).  Once the file's versions are cached and its 1 s
# timeouts have run out, only the table can save a round trip: 20 stats
# must send no request;
# then the host appends to the file (run-test.sh waits for ver-req) and
# the next stat sees the new size.
vqf_version_table()
{
	echo "VQF-BEGIN version"
	rc=1
	v=/sys/kernel/debug/vqfuse/*/version
	if vqf_fs_load vqfuse && vqf_mount vqfuse; then
		rc=0
		grep -q ' /sys/kernel/debug ' /proc/mounts ||
			mount -t debugfs none /sys/kernel/debug
		grep -q '^slots [1-9]' $v || { echo "# no version table"; rc=1; }
		echo v1 >"$MNT/ver-file" || rc=1
		stat -c %s "$MNT/ver-file" >/dev/null || rc=1
		stat -c %s "$MNT/ver-file" >/dev/null || rc=1
		sleep 2
		# Revalidated once: the reply to CREATE carried no usable
		# version (the device's files changed while it was served).
		stat -c %s "$MNT/ver-file" >/dev/null || rc=1
		before=$(vqf_sent)
		i=0
		while [ $i -lt 20 ]; do
			stat -c %s "$MNT/ver-file" >/dev/null || rc=1
			i=$((i + 1))
		done
		after=$(vqf_sent)
		echo "# version: 20 stats of an unchanged file sent $((after - before)) requests"
		[ "$after" = "$before" ] || rc=1
		: >"$MNT/ver-req"
		i=0
		while [ ! -e "$MNT/ver-ack" ] && [ $i -lt 3000 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		[ -e "$MNT/ver-ack" ] || { echo "# host never changed the file"; rc=1; }
		size=$(stat -c %s "$MNT/ver-file")
		echo "# version: size after the host's append: $size"
		[ "$size" = 11 ] || rc=1
		vqf_version_dirplus || rc=1
		vqf_version_hostile || rc=1
		cat $v | sed 's/^/# version: /'
		rm -f "$MNT/ver-file" "$MNT/ver-req" "$MNT/ver-ack" || rc=1
		umount "$MNT" || { echo "# umount failed"; rc=1; }
		vqf_vqfuse_counters || rc=1
		vqf_fs_unload vqfuse || { echo "# unload failed"; rc=1; }
	else
		echo "# load or mount of vqfuse failed"
	fi
	echo "VQF-END version rc=$rc"
	return $rc
}

# vqf_ver_count FILE PHASE OPCODE: requests of OPCODE in PHASE, from the
# VQF-OPS lines vqf_trace_counts left in FILE.
vqf_ver_count()
{
	awk -v p="$2" -v o="$3" '$2 == p && $3 == o { n = $4 }
		END { print n + 0 }' "$1"
}

# vqf_ver_stat NAME: one counter of debugfs "version".
vqf_ver_stat()
{
	sed -n "s/^$1 //p" /sys/kernel/debug/vqfuse/*/version
}

# vqf_version_dirplus: READDIRPLUS carries no versions (patch 0011):
# names an `ls -l` linked are proven by their unchanged directory, so
# once their 1 s timeouts ran out, stats of them send no LOOKUP (only
# GETATTRs: their inodes have no slot yet); after the directory changed,
# every one of them is looked up again.
vqf_version_dirplus()
{
	r=0
	n=40
	mkdir "$MNT/dp" || return 1
	i=1
	while [ $i -le $n ]; do
		echo "$i" >"$MNT/dp/f$i" || r=1
		i=$((i + 1))
	done
	# forget every dentry and inode: the next names come from READDIRPLUS
	sync
	echo 2 >/proc/sys/vm/drop_caches
	vqf_trace_start || { echo "# no kprobe tracing"; return 1; }
	echo "vqf-phase dp-ls" >$VQF_BENCH_MARK
	ls -l "$MNT/dp" >/dev/null || r=1
	echo "vqf-phase idle" >$VQF_BENCH_MARK
	sleep 2
	echo "vqf-phase dp-same" >$VQF_BENCH_MARK
	i=1
	while [ $i -le $n ]; do
		stat -c %s "$MNT/dp/f$i" >/dev/null || r=1
		i=$((i + 1))
	done
	echo "vqf-phase idle" >$VQF_BENCH_MARK
	: >"$MNT/dp/new" || r=1
	echo "vqf-phase dp-changed" >$VQF_BENCH_MARK
	i=1
	while [ $i -le $n ]; do
		stat -c %s "$MNT/dp/f$i" >/dev/null || r=1
		i=$((i + 1))
	done
	echo "vqf-phase end" >$VQF_BENCH_MARK
	vqf_trace_counts >/tmp/dp-ops
	sed 's/^/# version: /' /tmp/dp-ops
	rdp=$(vqf_ver_count /tmp/dp-ops dp-ls 44)
	l1=$(vqf_ver_count /tmp/dp-ops dp-same 1)
	l2=$(vqf_ver_count /tmp/dp-ops dp-changed 1)
	echo "# version: dirplus: READDIRPLUS=$rdp, LOOKUPs of $n names: $l1 (directory unchanged), $l2 (changed)"
	[ "$rdp" -ge 1 ] || r=1
	[ "$l1" = 0 ] || r=1
	[ "$l2" -ge $n ] || r=1
	rm -rf "$MNT/dp" || r=1
	return $r
}

# vqf_version_hostile: the daemon (--ver-hostile 1) lies in every entry
# reply while .vqf-hostile exists: a version ahead of its slot (seed 010's
# "versions going backwards") and another slot (its "version_ptr
# changing"), in turn.  Each lie must be counted (debugfs backward,
# index_changed) and answered with a round trip: what the guest reads,
# through names looked up again and again, must stay true.
vqf_version_hostile()
{
	r=0
	b0=$(vqf_ver_stat backward)
	c0=$(vqf_ver_stat index_changed)
	mkdir "$MNT/hs" || return 1
	: >"$MNT/.vqf-hostile" || return 1
	round=1
	while [ $round -le 3 ]; do
		i=1
		while [ $i -le 8 ]; do
			echo "r$round-$i" >>"$MNT/hs/g$i" || r=1
			chmod 60$((i % 8)) "$MNT/hs/g$i" || r=1
			i=$((i + 1))
		done
		# the directory changes, so its names are looked up again
		# (each lookup lied about); in the last round on fresh inodes
		: >"$MNT/hs/round$round" || r=1
		if [ $round = 3 ]; then
			sync
			echo 2 >/proc/sys/vm/drop_caches
		fi
		i=1
		while [ $i -le 8 ]; do
			m=$(stat -c %a "$MNT/hs/g$i")
			[ "$m" = 60$((i % 8)) ] ||
				{ echo "# hostile: g$i mode $m"; r=1; }
			l=$(wc -l <"$MNT/hs/g$i")
			[ "$l" = $round ] ||
				{ echo "# hostile: g$i has $l lines"; r=1; }
			i=$((i + 1))
		done
		round=$((round + 1))
	done
	rm -f "$MNT/.vqf-hostile"
	b1=$(vqf_ver_stat backward)
	c1=$(vqf_ver_stat index_changed)
	echo "# version: hostile: backward $b0 -> $b1, index_changed $c0 -> $c1"
	[ "$b1" -gt "$b0" ] || r=1
	[ "$c1" -gt "$c0" ] || r=1
	rm -rf "$MNT/hs" || r=1
	return $r
}

# vqf_mq_spread N: vqfuse.ko over a device with N request queues and N
# vCPUs (vqfuse.ko maps CPU i to request queue i): a smallfile workload
# pinned to each CPU, then every request queue's debugfs counters must show
# requests, none refused, none left in flight.
vqf_mq_spread()
{
	n=$1
	echo "VQF-BEGIN mq-spread"
	rc=1
	if vqf_fs_load vqfuse && vqf_mount vqfuse; then
		rc=0
		pids= cpu=0
		while [ $cpu -lt "$n" ]; do
			taskset -c $cpu vqf-bench smallfile "$MNT/mq-cpu$cpu" 100 \
				>/dev/null &
			pids="$pids $!"
			cpu=$((cpu + 1))
		done
		for p in $pids; do
			wait "$p" || { echo "# smallfile $p failed"; rc=1; }
		done
		rm -rf "$MNT"/mq-cpu* || rc=1
		umount "$MNT" || { echo "# umount failed"; rc=1; }
		vqf_vqfuse_counters || rc=1
		used=$(cat /sys/kernel/debug/vqfuse/*/queues |
			grep '^requests\.' | grep -vc ' sent=0 ')
		echo "# vqfuse request queues used: $used of $n"
		[ "$used" = "$n" ] || rc=1
		vqf_fs_unload vqfuse || { echo "# unload failed"; rc=1; }
	else
		echo "# load or mount of vqfuse failed"
	fi
	echo "VQF-END mq-spread rc=$rc"
	return $rc
}

# vqf_ktap_module: the in-kernel test vectors: the patched fuse.ko's DAX
# vectors (dax_selftest=1), then vqfuse_test.ko's suites.  KTAP goes to the
# kernel log, which /init prints between markers; each module's load status
# says whether its cases passed.
vqf_ktap_module()
{
	echo "VQF-BEGIN ktap"
	rc=0
	if [ -f /lib/vqf/fuse-vqf.ko ]; then
		vqf_fuse_load dax_selftest=1 || { rc=1; vqf_modset fuse; }
	else
		vqf_modset fuse
	fi
	insmod /lib/vqf/vqfuse_test.ko || rc=1
	vqf_loaded vqfuse_test && rmmod vqfuse_test
	vqf_rmmod fuse || rc=1
	echo "VQF-END ktap rc=$rc"
	return $rc
}

# vqf_wait_gone PID SECONDS: 0 once PID has exited, 1 if still running.
vqf_wait_gone()
{
	t=0
	while kill -0 "$1" 2>/dev/null; do
		[ $t -ge "$2" ] && return 1
		sleep 1
		t=$((t + 1))
	done
	return 0
}

# vqf_kill_scenario FSTYPE STRICT: a writer runs until the host kills
# virtiofsd (the host watches for the file "started" in the shared folder).
# Prints one "VQF-KILL" line with what happened:
#   writer=error|blocked|noerror  the writer's first failing write() returned
#                                 an error / never returned / none failed
#   umount=plain|forced|lazy|failed  which unmount detached /mnt
#   unload=ok|failed|skipped     rmmod of the module afterwards
# STRICT=1 (vqfuse) requires writer=error, umount plain or forced and
# unload=ok.  STRICT=0 (the in-tree baseline) only requires that the mount
# can be detached; the kernel-log scan still fails the test on any oops.
vqf_kill_scenario()
{
	fs=$1 strict=$2
	echo "VQF-BEGIN kill-$fs"
	# vqfuse.ko declares a device dead after dead_timeout seconds
	# without completions (0, the default, waits forever as upstream)
	params=
	[ "$fs" = vqfuse ] && params="dead_timeout=${VQF_DEAD_TIMEOUT:-5}"
	# shellcheck disable=SC2086
	if ! vqf_fs_load "$fs" $params || ! vqf_mount "$fs"; then
		echo "VQF-END kill-$fs rc=1"
		return 1
	fi
	vqf-bench writer "$MNT/kill-$fs" "$MNT/started" 60 &
	wpid=$!
	writer=blocked umount=failed unload=skipped
	# a driver that notices the dead device fails the writer by itself
	if ! vqf_wait_gone $wpid "${VQF_KILL_GRACE:-15}"; then
		# fuse aborts the connection on MNT_FORCE unless the driver
		# opted out (upstream virtiofs sets no_force_umount)
		echo "# writer still running: umount -f"
		umount -f "$MNT" 2>&1 && umount=forced
		vqf_wait_gone $wpid 10
	fi
	if ! kill -0 $wpid 2>/dev/null; then
		wait $wpid
		case $? in
		3) writer=error ;;
		*) writer=noerror ;;
		esac
	else
		echo "# writer $(cat /proc/$wpid/wchan 2>/dev/null) state: $(sed -n 's/^State:\t//p' /proc/$wpid/status)"
	fi
	if [ $umount = failed ]; then
		if [ $writer != blocked ] && umount "$MNT"; then
			umount=plain
		elif [ $writer != blocked ] && umount -f "$MNT"; then
			umount=forced
		elif umount -l "$MNT"; then
			umount=lazy
		fi
	fi
	grep -q " $MNT " /proc/mounts && umount=failed
	# unloading waits for in-flight requests: only once nothing is blocked
	if [ $writer != blocked ] && [ $umount != lazy ]; then
		vqf_fs_unload "$fs" && unload=ok || unload=failed
	fi
	# the rest of the guest keeps working
	echo ok >/tmp/alive && grep -q ok /tmp/alive || echo "# tmpfs broken"
	echo "VQF-KILL fs=$fs writer=$writer umount=$umount unload=$unload"
	rc=0
	[ $umount != failed ] || rc=1
	if [ "$strict" = 1 ]; then
		[ $writer = error ] && [ $umount != lazy ] && [ $unload = ok ] || rc=1
	fi
	echo "VQF-END kill-$fs rc=$rc"
	return $rc
}

# vqf_trace_start / vqf_trace_counts: count the FUSE requests of each phase
# that a program marks with "vqf-phase NAME" in VQF_BENCH_MARK (kprobes on
# fuse_simple_request/_background: the opcode is at offset 8 of fuse_args).
# Prints "VQF-OPS PHASE OPCODE COUNT" lines.
VQF_TRACE=/sys/kernel/tracing

# vqf_trace_prep / vqf_trace_stop: tracefs mounted, tracing off and the
# buffer empty; and tracing and the kprobes off again, the marker unset.
vqf_trace_prep()
{
	T=$VQF_TRACE
	grep -q " $T " /proc/mounts || mount -t tracefs nodev $T || return 1
	echo 0 >$T/tracing_on
	echo >$T/trace
}

vqf_trace_stop()
{
	T=$VQF_TRACE
	echo 0 >$T/tracing_on
	echo 0 >$T/events/kprobes/enable
	unset VQF_BENCH_MARK
}

vqf_trace_start()
{
	vqf_trace_prep || return 1
	# 6.12: fuse_simple_request() is an inline around
	# __fuse_simple_request(idmap, fm, args): args in the third register
	if grep -qE ' __fuse_simple_request([[:space:]]|$)' /proc/kallsyms; then
		echo 'p:vqfsync __fuse_simple_request op=+8(%dx):u32'
	else
		echo 'p:vqfsync fuse_simple_request op=+8(%si):u32'
	fi >>$T/kprobe_events &&
	echo 'p:vqfbg fuse_simple_background op=+8(%si):u32' >>$T/kprobe_events &&
	echo 1 >$T/events/kprobes/enable && echo 1 >$T/tracing_on || return 1
	export VQF_BENCH_MARK=$T/trace_marker
}

vqf_trace_counts()
{
	vqf_trace_stop
	awk '/tracing_mark_write: vqf-phase/ { ph = $NF; next }
		/ vqf(sync|bg): / && ph != "" && ph != "end" {
			split($NF, o, "="); c[ph " " o[2]]++ }
		END { for (k in c) print "VQF-OPS " k " " c[k] }' $T/trace | sort
	echo >$T/trace
	echo >$T/kprobe_events
}

# vqf_stage_start FS / vqf_stage_report TAG: where a request's time goes
# inside the guest (bench-qemu.sh, VQF_BENCH_STAGES=1).  Kprobes with the
# mono clock (one clock for every CPU: the completion work may run on
# another CPU than the caller) on the points every synchronous request of
# either driver passes, in order:
#   S  fuse core takes the request        (__)fuse_simple_request
#   Q  the transport gets it              virtio_fs_enqueue_req / vqfk_enqueue_req
#   K  the kick (doorbell) starts, k ends virtqueue_notify, its return
#   I  the used-ring interrupt            vring_interrupt
#   W  the completion work starts         virtio_fs_requests_done_work / vqfk_...
#   E  the reply is handed to fuse core   fuse_request_end
#   R  the caller has its answer          return of (__)fuse_simple_request
# Stages: core (S-Q: fuse core's request setup, queueing), enqueue (Q-K:
# argbuf, sg list, ring add), kick (K-k), device (k-I: the host's time,
# daemon included), irq (I-W: interrupt to work), complete (W-E: used
# ring, reply validation and copy), wake (E-R: fuse_request_end, wake-up,
# the caller's return), total (S-R).  A request whose span holds another
# request's events (a background RELEASE, a FORGET on hiprio) is left
# out, so every stage is a single request's; how many were kept shows,
# and of those how many completed on another CPU than the caller's (its
# wake-up is then an IPI).
# The probes cost the same on both drivers (the same eight per request),
# so compare the drivers, not these figures with untraced ones.
vqf_stage_start()
{
	vqf_trace_prep || return 1
	echo >$T/kprobe_events
	echo mono >$T/trace_clock 2>/dev/null || echo global >$T/trace_clock
	echo 16384 >$T/buffer_size_kb
	sync=fuse_simple_request
	grep -qE ' __fuse_simple_request([[:space:]]|$)' /proc/kallsyms &&
		sync=__fuse_simple_request
	case $1 in
	vqfuse) q=vqfk_enqueue_req w=vqfk_requests_done_work ;;
	*) q=virtio_fs_enqueue_req w=virtio_fs_requests_done_work ;;
	esac
	for p in "p:vqfS $sync" "r:vqfR $sync" "p:vqfQ $q" \
		 "p:vqfK virtqueue_notify" "r:vqfk virtqueue_notify" \
		 "p:vqfI vring_interrupt" "p:vqfW $w" "p:vqfE fuse_request_end"; do
		echo "$p" >>$T/kprobe_events 2>/dev/null ||
			echo "# stage probe not placed: $p"
	done
	echo 1 >$T/events/kprobes/enable && echo 1 >$T/tracing_on || return 1
	export VQF_BENCH_MARK=$T/trace_marker
}

vqf_stage_report()
{
	vqf_trace_stop
	d=/tmp/vqf-stage
	rm -rf $d
	mkdir -p $d
	grep -q 'lost\|overrun' $T/per_cpu/cpu0/stats 2>/dev/null &&
		grep -H 'overrun' $T/per_cpu/cpu*/stats | sed 's/^/# stage: /'
	awk -v d=$d -v tag="$1" '
	function put(st, v) { print v >> (d "/" ph "." st) }
	/tracing_mark_write: vqf-phase/ { ph = $NF; open_ = 0; next }
	ph == "" || ph == "end" { next }
	{
		ev = ""
		for (i = 1; i < NF; i++)
			if ($i ~ /^\[[0-9]+\]$/)
				cpu = $i
			else if ($i ~ /^[0-9]+\.[0-9]+:$/) {
				t = substr($i, 1, length($i) - 1) * 1000000
				ev = $(i + 1)
				break
			}
		if (ev !~ /^vqf[SRQKkIWE]:$/) next
		e = substr(ev, 4, 1)
	}
	e == "S" { if (open_) dropped[ph]++; open_ = 1
		   split("", at); split("", cnt); at["S"] = t; scpu = cpu
		   next }
	!open_ { next }
	e == "W" && !("W" in at) { wcpu = cpu }
	e != "R" { cnt[e]++; if (!(e in at)) at[e] = t; next }
	{
		open_ = 0
		ok = cnt["Q"] == 1 && cnt["K"] == 1 && cnt["I"] == 1 &&
		     cnt["W"] == 1 && cnt["E"] == 1 && cnt["k"] <= 1
		if (ok) ok = at["S"] <= at["Q"] && at["Q"] <= at["K"] &&
			     at["K"] <= at["I"] && at["I"] <= at["W"] &&
			     at["W"] <= at["E"] && at["E"] <= t
		if (!ok) { dropped[ph]++; next }
		kend = ("k" in at) && at["k"] < at["I"] ? at["k"] : at["I"]
		put("core", at["Q"] - at["S"])
		put("enqueue", at["K"] - at["Q"])
		put("kick", kend - at["K"])
		put("device", at["I"] - kend)
		put("irq", at["W"] - at["I"])
		put("complete", at["E"] - at["W"])
		put("wake", t - at["E"])
		put("total", t - at["S"])
		kept[ph]++
		if (wcpu != scpu)
			xcpu[ph]++
	}
	END { for (p in kept) print "VQF-STAGE-KEPT", tag, p, kept[p],
				   dropped[p] + 0, xcpu[p] + 0 }
	' $T/trace
	for f in $d/*; do
		[ -f "$f" ] || continue
		b=${f##*/}
		n=$(wc -l <"$f")
		m=$(sort -n "$f" | awk -v n="$n" 'NR == int((n + 1) / 2) { print; exit }')
		echo "VQF-STAGE $1 ${b%%.*} ${b#*.} $m $n"
	done
	rm -rf $d
	echo >$T/trace
	echo >$T/kprobe_events
}

# vqf_fgraph_pair OP A B CHUNK CHUNKS: the guest CPU of each transport
# function per request, for vqf-bench pair's two mounts (bench-qemu.sh,
# VQF_BENCH_FGRAPH=1).  function_graph at depth 1 times the functions of
# one pass: those called inside another of the same pass are not timed, so
# each pass lists functions that do not nest: the transport's entry points
# (the submit and the completion), then their parts, then the parts'
# parts.  With sleep-time off a function's time is its CPU time (a kworker
# preempted by the task it woke is not charged for it).  trace_clock local
# is the guest's sched_clock: under -icount shift=0, 1 ns is one guest
# instruction, so the figures do not depend on the host.  Only the
# pass's functions are hooked (set_ftrace_filter too): function_graph
# otherwise hooks every function, and a driver that makes more calls
# inside a timed function would pay the tracer for each.  One hook's cost
# is inside every figure alike (an empty function shows about 700):
# compare drivers and functions, not these with an untraced run.
# Functions a kernel does not have (inlined, or the other kernel's names)
# are skipped.  Prints
# "VQF-FGRAPH OP PASS SIDE FUNC CALLS NS" per function and side (a = A),
# then "VQF-FGRAPH-OPS OP N", the operations each side ran.  VQF_PIN: the
# vqf-bench command's prefix (a taskset).
vqf_fgraph_pair()
{
	vqf_trace_prep || return 1
	echo nop >$T/current_tracer
	echo local >$T/trace_clock
	echo 32768 >$T/buffer_size_kb
	echo 1 >$T/max_graph_depth || return 1
	echo 0 >$T/options/sleep-time 2>/dev/null
	p=0
	# which of the names this kernel can hook: one read of the big list
	awk '{ print $1 }' $T/available_filter_functions >/tmp/vqf-fgraph-avail
	for pass in \
	    "vqfk_fiq_ops_wake_pending_and_unlock vqfk_fiq_ops_send_req virtio_fs_wake_pending_and_unlock virtio_fs_send_req vqfk_vq_done virtio_fs_vq_done vqfk_requests_done_work virtio_fs_requests_done_work vqfk_complete_req_work virtio_fs_complete_req_work" \
	    "vqfk_enqueue_req virtio_fs_enqueue_req vqfk_request_complete virtio_fs_request_complete virtqueue_get_buf virtqueue_enable_cb virtqueue_disable_cb" \
	    "vqfk_req_alloc vqf_req_marshal vqfk_sg_from_vsg sg_init_fuse_args sg_init_fuse_args.isra.0 virtqueue_add_sgs virtqueue_kick_prepare virtqueue_notify vqfk_req_finish copy_args_from_argbuf fuse_request_end vqfk_dec_in_flight" \
	    "vqf_req_complete __kmalloc __kmalloc_noprof kmalloc_trace kmalloc_trace_noprof kfree"; do
		p=$((p + 1))
		echo >$T/set_graph_function
		echo >$T/set_ftrace_filter
		for f in $pass; do
			grep -qxF "$f" /tmp/vqf-fgraph-avail || continue
			echo "$f" >>$T/set_graph_function &&
				echo "$f" >>$T/set_ftrace_filter || return 1
		done
		echo function_graph >$T/current_tracer || return 1
		echo >$T/trace
		echo 1 >$T/tracing_on
		VQF_BENCH_MARK=$T/trace_marker ${VQF_PIN:-} vqf-bench pair \
			"$1" "$2" "$3" \
			"$4" "$5" >/dev/null || return 1
		echo 0 >$T/tracing_on
		grep -h 'overrun: [1-9]' $T/per_cpu/cpu*/stats |
			sed 's/^/# fgraph: /'
		awk -v p=$p -v op="$1" -v list=" $pass " '
		/vqf-phase pair-a/ { side = "a"; next }
		/vqf-phase pair-b/ { side = "b"; next }
		/vqf-phase end/ { side = ""; next }
		side == "" { next }
		/\(\);/ {
			for (i = 1; i < NF; i++)
				if ($(i + 1) == "us" && $i ~ /^[0-9.]+$/)
					break
			if (i == NF) next
			# "name();", or "name [module]();"
			f = $NF ~ /^\[/ ? $(NF - 1) : $NF
			sub(/\(\);$/, "", f)
			# an interrupt is its own root at depth 1: not ours
			if (index(list, " " f " ") == 0) next
			n[side " " f]++; ns[side " " f] += $i * 1000
		}
		END { for (k in n) printf "VQF-FGRAPH %s %d %s %d %.0f\n", op,
					   p, k, n[k], ns[k] }' $T/trace | sort
		echo nop >$T/current_tracer
	done
	rm -f /tmp/vqf-fgraph-avail
	echo >$T/set_graph_function
	echo >$T/set_ftrace_filter
	echo >$T/trace
	echo 1 >$T/options/sleep-time 2>/dev/null
	echo 0 >$T/max_graph_depth
	echo "VQF-FGRAPH-OPS $1 $(($4 * $5))"
}

# vqf_wait_or_dump PID SECONDS: wait for PID; if it still runs after
# SECONDS (far beyond any normal run: work is bounded by operations), dump
# what a hang needs (vqfuse's queues: a request in flight without a reply
# is the transport's; the kernel stacks of the tasks in fuse/dax code: a
# wait for a free range is the window's; sysrq-w), kill it and fail.
vqf_wait_or_dump()
{
	n=0
	while kill -0 "$1" 2>/dev/null && [ $n -lt "$2" ]; do
		sleep 5
		n=$((n + 5))
	done
	if kill -0 "$1" 2>/dev/null; then
		echo "# no end after $n s: dump follows"
		grep -q ' /sys/kernel/debug ' /proc/mounts ||
			mount -t debugfs none /sys/kernel/debug
		cat /sys/kernel/debug/vqfuse/*/queues 2>/dev/null |
			sed 's/^/# vqfuse: /'
		for p in /proc/[0-9]*; do
			st=$(cat "$p/stack" 2>/dev/null)
			case "$st" in
			*fuse*|*dax*|*iomap*)
				echo "# task ${p#/proc/} $(cat "$p/comm")" \
					"$(grep State "$p/status")"
				echo "$st" | sed 's/^/#   /' ;;
			esac
		done
		echo w >/proc/sysrq-trigger
		pkill -9 -P "$1" 2>/dev/null
		kill -9 "$1" 2>/dev/null
		wait "$1"
		return 1
	fi
	wait "$1"
}

# vqf_dax_stress NPROC FILE_MIB OPS: vqfuse.ko with dax=always, NPROC
# processes writing and mmap-ing their own FILE_MIB file OPS times each
# (files several times the window), every byte checked in the guest (and
# by the host afterwards: the folder is daxstress).  Fails unless the
# stress and verify phases sent SETUPMAPPING and REMOVEMAPPING (opcodes 48,
# 49) and no READ or WRITE (15, 16): mapped data never goes through FUSE
# I/O.  fuse.ko's counters (logged at unmount) must show reclaim and no
# errors.
vqf_dax_stress()
{
	echo "VQF-BEGIN daxstress"
	rc=1
	if vqf_fs_load vqfuse && VQF_MOUNT_OPTS=dax=always vqf_mount vqfuse; then
		mkdir -p "$MNT/daxstress"
		vqf_trace_start || echo "# no kprobe tracing"
		vqf-daxstress run "$MNT/daxstress" "$1" "$2" "$3" 1 &
		vqf_wait_or_dump $! "${VQF_DAX_STRESS_WAIT:-420}"
		rc=$?
		ops=$(vqf_trace_counts)
		echo "$ops"
		for ph in stress verify; do
			if echo "$ops" | grep -qE "^VQF-OPS $ph (15|16) "; then
				echo "# daxstress: FUSE READ/WRITE in phase $ph"
				rc=1
			fi
		done
		for op in 48 49; do
			echo "$ops" | grep -qE "^VQF-OPS stress $op [1-9]" || {
				echo "# daxstress: no opcode $op in phase stress"
				rc=1
			}
		done
		umount "$MNT" || { echo "# umount failed"; rc=1; }
		vqf_vqfuse_counters || rc=1
		vqf_fs_unload vqfuse || { echo "# unload failed"; rc=1; }
		# fuse.ko's window counters of this mount (patch 0005); a
		# built-in fuse (Debian's 6.12) is the kernel's own, without
		# them: there REMOVEMAPPING in phase stress (checked above),
		# with the window smaller than the files, is the reclaim
		if vqf_builtin fuse; then
			echo "# daxstress: built-in fuse, no window counters"
		else
			c=$(dmesg | grep 'fuse: dax: ' | tail -n 3)
			echo "$c" | sed 's/^[^]]*] /# /'
			if ! echo "$c" |
			     grep -qE 'reclaimed_bg=[1-9]|reclaimed_direct=[1-9]'; then
				echo "# daxstress: no range was reclaimed"
				rc=1
			fi
			# REMOVEMAPPINGs of evictions at unmount may meet the
			# ended connection (ENOTCONN, as upstream): not
			# counted against it
			if echo "$c" | grep 'errors:' | sed 's/ remove=[0-9]*//' |
					grep -qE '=[1-9]'; then
				echo "# daxstress: fuse.ko counted DAX errors"
				rc=1
			fi
		fi
	else
		echo "# load or dax=always mount of vqfuse failed"
	fi
	echo "VQF-END daxstress rc=$rc"
	return $rc
}

# vqf_dax_stale_check: fs/fuse 0008's deferred teardown at evict, through
# vqfuse.ko -o dax=always.  Files written, read through the window and
# deleted leave their read-only ranges stale (no REMOVEMAPPING), the next
# file's SETUPMAPPING replaces one in place, and the unmount flushes what
# is left; with fuse.dax_stale_max=0 every eviction removes at once, as
# before 0008.  fuse.ko's window report (0005) of each mount says which.
# A built-in fuse (Debian's 6.12) is the kernel's own dax.c: skipped.
vqf_dax_stale_check()
{
	echo "VQF-BEGIN daxstale"
	rc=0
	if vqf_builtin fuse; then
		echo "# daxstale: built-in fuse, no deferral to check"
		echo "VQF-END daxstale rc=0"
		return 0
	fi
	for s in -1 0; do
		vqf_fs_load vqfuse &&
			echo "$s" >/sys/module/fuse/parameters/dax_stale_max &&
			VQF_MOUNT_OPTS=dax=always vqf_mount vqfuse ||
			{ echo "# daxstale: load or mount failed"; rc=1; break; }
		d=$MNT/daxstale-$s
		mkdir -p "$d"
		i=0
		while [ $i -lt 6 ]; do
			echo x >"$d/f$i" && cat "$d/f$i" >/dev/null &&
				rm "$d/f$i" || rc=1
			i=$((i + 1))
		done
		rmdir "$d"
		umount "$MNT" && vqf_fs_unload vqfuse ||
			{ echo "# daxstale: umount or unload failed"; rc=1; break; }
		c=$(dmesg | grep 'fuse: dax: ' | tail -n 3 | head -n 1)
		echo "$c" | sed 's/^[^]]*] /# daxstale: /'
		case $s in
		-1) echo "$c" | grep -qE ' stale_max=[1-9]' &&
			echo "$c" | grep -qE ' stale_deferred=[1-9]' &&
			echo "$c" | grep -qE ' stale_reused=[1-9]' &&
			echo "$c" | grep -qE ' stale_flushes=[1-9]' &&
			echo "$c" | grep -qE ' stale=0( |$)' || {
			echo "# daxstale: default bound: nothing deferred, reused or flushed"
			rc=1
		} ;;
		0) echo "$c" | grep -qE ' stale_max=0 .* stale_deferred=0 ' &&
			echo "$c" | grep -qE ' remove_requests=[1-9]' || {
			echo "# daxstale: dax_stale_max=0 still deferred"
			rc=1
		} ;;
		esac
	done
	echo "VQF-END daxstale rc=$rc"
	return $rc
}

# ---- two guests on one daemon (run-guests.sh) ------------------------------

# vqf_g_serve: the guest side of run-guests.sh.  Reads "N COMMAND" lines
# from the console and answers each with one line "VQF-DONE N rc=RC OUT
# VQF-END" (OUT: the command's output on one line).  The end mark tells
# the host the line is whole: the console reaches its log in pieces, so
# the line's start may be there long before its end.  "quit" ends it.
vqf_g_serve()
{
	echo "VQF-READY"
	while read -r n cmd; do
		[ "$n" = quit ] && return 0
		out=$(eval "$cmd" 2>&1)
		rc=$?
		echo "VQF-DONE $n rc=$rc" $out VQF-END
	done
	return 1
}

# vqf_g_mount [-o OPTS] [PARAM=VALUE...]: vqfuse.ko (with its parameters)
# on /mnt, with mount options OPTS (one, as /proc/mounts shows it).  An
# observer mounts noatime: every read marks atime stale, and without
# noatime (patch 0014) its next stat is a GETATTR in every cache mode.
vqf_g_mount()
{
	o=
	[ "${1:-}" = -o ] && { o=$2; shift 2; }
	vqf_fs_load vqfuse "$@" && VQF_MOUNT_OPTS=$o vqf_mount vqfuse ||
		return 1
	grep -q ' /sys/kernel/debug ' /proc/mounts ||
		mount -t debugfs none /sys/kernel/debug
	echo "table-slots=$(sed -n 's/^slots //p' /sys/kernel/debug/vqfuse/*/version)"
}

vqf_g_umount()
{
	umount "$MNT" && vqf_vqfuse_counters >/dev/null && vqf_fs_unload vqfuse
}

# vqf_g_look NAME...: for each file of $MNT/g,
# NAME=SIZE:MODE:CTIME:CONTENT/SENT (NAME=none/SENT when it does not
# exist; CTIME with nanoseconds, _ for blanks), SENT being the FUSE
# requests its stat sent (debugfs; the content is read after counting).
vqf_g_look()
{
	for f; do
		vqf_sent_n
		b=$VQF_N
		s=$(stat -c %s:%a:%z "$MNT/g/$f" 2>/dev/null)
		vqf_sent_n
		if [ -n "$s" ]; then
			set -- $s
			c=
			read -r c 2>/dev/null <"$MNT/g/$f"
			printf '%s=%s_%s_%s:%s/%s ' "$f" "$1" "$2" "$3" "$c" \
				$((VQF_N - b))
		else
			printf '%s=none/%s ' "$f" $((VQF_N - b))
		fi
	done
	echo
}

# vqf_g_change KIND NAME: guest B's change of $MNT/g/NAME (as the host's
# in run-guests.sh): create it (10 bytes), unlink it, rename it to
# NAME.new, chmod 600, truncate to 3 bytes, overwrite its 10 bytes in
# place, or set the xattr user.k.
vqf_g_change()
{
	case $1 in
	create) printf 0123456789 >"$MNT/g/$2" ;;
	unlink) rm "$MNT/g/$2" ;;
	name) mv "$MNT/g/$2" "$MNT/g/$2.new" ;;
	chmod) chmod 600 "$MNT/g/$2" ;;
	truncate) truncate -s 3 "$MNT/g/$2" ;;
	write) printf abcdefghij | dd of="$MNT/g/$2" conv=notrunc 2>/dev/null ;;
	setxattr) vqf-cohere setxattr "$MNT/g/$2" user.k v ;;
	*) return 1 ;;
	esac
}
