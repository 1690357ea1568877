#!/bin/sh
# One QEMU test (a ctest entry): boots the guest once and judges it.
#
#   run-test.sh MODE BINDIR
#
# MODE
#   virtiofs-intree  3 x (load -> mount -t virtiofs -> suite -> unmount ->
#                    remount -> verify -> unmount -> unload), results of the
#                    three cycles must match
#   vqfuse           the same with vqfuse.ko, then one in-tree virtiofs
#                    cycle in the same boot: all results must match
#   vqfuse-mq        the vqfuse cycles and one virtiofs cycle against
#                    `vqfuse-sim vhost-user` (the simulator's device, not
#                    virtiofsd) with 4 request queues and 4 vCPUs, then a
#                    workload pinned to each CPU: every request queue must
#                    carry requests (guest debugfs and the daemon's count)
#   virtiofs-libvirt one in-tree virtiofs cycle against vqfuse-virtiofsd
#                    started exactly as libvirt starts virtiofsd (a socket
#                    the caller made, --fd=N, --shared-dir DIR ... as
#                    libvirt passes them to a "separate-options" daemon):
#                    a guest defined for virtiofsd, our daemon in its place
#   vqfuse-dax       DAX through the device's window (vqfuse-sim vhost-user
#                    --dax-window, the patched QEMU): 2 vqfuse.ko cycles and
#                    1 in-tree virtiofs cycle with -o dax=always (results
#                    must match), then the reclaim stress (vqf_dax_stress)
#   vqfuse-daxauto   -o dax=auto (fs/fuse 0007) through the device's window
#                    (vqfuse-sim vhost-user --dax-window 32M, the patched
#                    QEMU), on vqfuse.ko and on the in-tree virtiofs rebuilt
#                    with the patched fuse.ko: which files went through the
#                    window (vqf_dax_auto: a small file read once does
#                    not, read again it does, a file streamed does, random
#                    reads of a file 4x the window back off to READ), the
#                    bytes right either way.  Skipped where fuse is built
#                    in (Debian's 6.12): the series cannot load there
#   vqfuse-version   vqfuse.ko + the patched fuse.ko over the device's
#                    version table (shm region 1, the patched QEMU): 20
#                    stats of an unchanged file send no request, a host
#                    append is seen, then one POSIX cycle with the table on
#   dkms             the modules vqfuse-dkms installs, from VQF_KO_DIR:
#                    their versions as the guest sees them, one vqfuse.ko
#                    cycle on the patched fuse.ko, then one in-tree
#                    virtiofs cycle on the virtiofs.ko rebuilt with it;
#                    results must match (tests/package boots DKMS's build)
#   vqfuse-ktap      vqfuse_test.ko's in-kernel KTAP run, and the patched
#                    fuse.ko's DAX vectors (dax_selftest=1)
#   kill-vqfuse      kill -9 virtiofsd while the guest writes: the writer
#                    gets an error, nothing oopses, unmount and rmmod work
#   kill-virtiofs    the same on the in-tree module as a baseline: nothing
#                    oopses and the mount can be detached (upstream leaves
#                    the writer blocked, see docs/qemu-tests.md)
#   dax              the in-tree virtiofs with -o dax=always against
#                    `vqfuse-sim vhost-user --dax-window` through the
#                    patched QEMU (VQF_QEMU, see qemu/): 2 suite cycles;
#                    the daemon must have mapped and unmapped ranges and
#                    served no FUSE_READ
#   dax-reclaim      a 64 MiB file through an 8 MiB window: read, rewritten
#                    in place (pwrite and mmap) and read again; the host
#                    checks every byte; no FUSE_READ or FUSE_WRITE
#   dax-hostile      QEMU shows a 32 MiB window over the daemon's 8 MiB
#                    (cache-size): the SETUPMAPPINGs past 8 MiB are
#                    refused, the read fails, the guest carries on
# BINDIR is the build folder holding vqf-posix and vqf-bench.
#
# Fails on: a QEMU timeout (hang), any "not ok", any Oops/BUG/WARNING/GPF/
# KASAN/refcount/list corruption/panic/stall in the console or kernel log,
# a missing end marker, a host-side content mismatch, differing results.
# Exits 77 (ctest SKIP_RETURN_CODE) for a vqfuse MODE only when vqfuse.ko
# is absent and VQF_REQUIRE_VQFUSE is not 1.
set -u
mode=$1
VQF_QEMU_SRC=$(cd "$(dirname "$0")" && pwd)
VQF_QEMU_BIN=$(cd "$2" && pwd)
. "$VQF_QEMU_SRC/qemu-lib.sh"
vqf_once_more "$0" "$@"

ko=${VQF_KO_DIR:-$VQF_QEMU_BIN/../../kernel}
need_ko()
{
	[ -f "$ko/$1" ] && return 0
	if [ "${VQF_REQUIRE_VQFUSE:-0}" = 1 ]; then
		vqf_die "$ko/$1 missing: build the kernel-module target first"
	fi
	echo "SKIP: $ko/$1 not built (kernel/ has no module yet)"
	exit 77
}

# Debian's QEMU 7.2 gives vhost-user-fs no shared memory (the DAX window,
# shm region 0; the version table, region 1): those modes need VQF_QEMU.
need_shmem_qemu()
{
	[ -x "${VQF_QEMU:-}" ] && return 0
	echo "SKIP: VQF_QEMU='${VQF_QEMU:-}' is not the patched QEMU" \
		"(scripts/build-qemu.sh builds build/qemu/qemu-system-x86_64)"
	exit 77
}

case $mode in
virtiofs-intree)
	script='vqf_suite_cycles virtiofs 3'
	labels='virtiofs-1 virtiofs-2 virtiofs-3' ;;
vqfuse)
	need_ko vqfuse.ko
	script='vqf_suite_cycles vqfuse 3; r=$?; vqf_suite_cycles virtiofs 1 && [ $r = 0 ]'
	labels='vqfuse-1 vqfuse-2 vqfuse-3 virtiofs-1' ;;
vqfuse-mq)
	need_ko vqfuse.ko
	VQF_DAEMON=sim VQF_QEMU_NREQ=4 VQF_QEMU_SMP=4
	script='vqf_suite_cycles vqfuse 3; r=$?; vqf_suite_cycles virtiofs 1 || r=1; vqf_mq_spread 4 && [ $r = 0 ]'
	labels='vqfuse-1 vqfuse-2 vqfuse-3 virtiofs-1 mq-spread' ;;
virtiofs-libvirt)
	VQF_DAEMON=libvirt
	script='vqf_suite_cycles virtiofs 1'
	labels='virtiofs-1' ;;
vqfuse-dax)
	need_ko vqfuse.ko
	# the patched fuse.ko, unless the kernel's own is built in (6.12)
	vqf_mod_builtin "$(vqf_kver)" fuse || need_ko fuse.ko
	need_shmem_qemu
	# the simulator's device with a window; the patched QEMU exposes it
	VQF_DAEMON=sim
	VQF_SIM_ARGS="--dax-window ${VQF_DAX_WINDOW:-16M}"
	# the stress last: after the POSIX cycles is the order that once
	# hung (docs/kernel-dax.md); a hang ends in a dump, not a timeout
	script='VQF_MOUNT_OPTS=dax=always vqf_suite_cycles vqfuse 2; r=$?; VQF_MOUNT_OPTS=dax=always vqf_suite_cycles virtiofs 1 || r=1; vqf_dax_stress 4 32 ${VQF_DAX_OPS:-1500} || r=1; vqf_dax_stale_check && [ $r = 0 ]'
	labels='vqfuse-1 vqfuse-2 virtiofs-1 daxstress daxstale' ;;
vqfuse-daxauto)
	need_ko vqfuse.ko
	if vqf_mod_builtin "$(vqf_kver)" fuse; then
		echo "SKIP: fuse is built into $(vqf_kver): dax=auto is fs/fuse" \
			"0007, and the patched fuse.ko cannot replace a built-in" \
			"fuse (kernel/README.md); the 6.12-vqf guest kernel runs it"
		exit 77
	fi
	need_ko fuse.ko
	need_ko virtiofs.ko
	need_shmem_qemu
	VQF_DAEMON=sim
	VQF_SIM_ARGS="--dax-window 32M"
	script='vqf_dax_auto vqfuse; r=$?; vqf_dax_auto virtiofs-vqf && [ $r = 0 ]'
	labels='daxauto-vqfuse daxauto-virtiofs-vqf' ;;
vqfuse-version)
	need_ko vqfuse.ko
	need_ko fuse.ko
	need_shmem_qemu
	VQF_DAEMON=sim VQF_SIM_ARGS='--version-table --ver-hostile 1'
	script='vqf_version_table; r=$?; vqf_suite_cycles vqfuse 1 && [ $r = 0 ]'
	labels='version vqfuse-1' ;;
dkms)
	need_ko vqfuse.ko
	need_ko fuse.ko
	need_ko virtiofs.ko
	script='vqf_modversions; r=$?; vqf_suite_cycles vqfuse 1 || r=1; vqf_suite_cycles virtiofs-vqf 1 && [ $r = 0 ]'
	labels='modver vqfuse-1 virtiofs-vqf-1' ;;
vqfuse-ktap)
	need_ko vqfuse_test.ko
	script='vqf_ktap_module'
	labels='ktap' ;;
kill-virtiofs)
	script='vqf_kill_scenario virtiofs 0'
	labels='kill-virtiofs' ;;
kill-vqfuse)
	need_ko vqfuse.ko
	script='vqf_kill_scenario vqfuse 1'
	labels='kill-vqfuse' ;;
dax|dax-reclaim|dax-hostile|dax-inode)
	[ -n "${VQF_QEMU:-}" ] ||
		vqf_die "$mode needs VQF_QEMU, the patched QEMU (scripts/build-qemu.sh)"
	VQF_DAEMON=sim
	case $mode in
	dax)
		VQF_SIM_ARGS="--dax-window 64M --version-table"
		script='vqf_dax_suite 2'
		labels='dax-mount virtiofs-1 virtiofs-2' ;;
	dax-reclaim)
		VQF_SIM_ARGS="--dax-window 8M"
		script='vqf_dax_reclaim big.bin'
		labels='dax-reclaim' ;;
	dax-hostile)
		VQF_SIM_ARGS="--dax-window 8M"
		VQF_QEMU_DEVOPTS=",cache-size=32M"
		script='vqf_dax_hostile big.bin'
		labels='dax-hostile virtiofs-1' ;;
	dax-inode)
		# the daemon marks files of 512 KiB and more (lib's small-file
		# bound for 2 MiB ranges); the guest's default dax=inode obeys
		VQF_SIM_ARGS="--dax-window 16M --dax-inode-min 512K"
		script='vqf_dax_inode'
		labels='dax-inode' ;;
	esac ;;
*)
	vqf_die "unknown mode $mode" ;;
esac

W=$VQF_QEMU_BIN/work/$mode${VQF_WORK_TAG:-}
rm -rf "$W"
mkdir -p "$W/shared"
trap 'vqf_stop_virtiofsd' EXIT INT TERM
start=$(date +%s)
killed=0

vqf_mkinitramfs "$W"
vqf_add_run_script "$W" "$script"
case $mode in
dax-reclaim|dax-hostile)
	"$VQF_QEMU_BIN/vqf-bench" mkfile "$W/shared/big.bin" 64 || exit 1 ;;
dax-inode)
	"$VQF_QEMU_BIN/vqf-bench" mkfile "$W/shared/big.bin" 8 || exit 1
	head -c 4096 /dev/urandom >"$W/shared/small.bin" || exit 1 ;;
vqfuse-daxauto)
	# vqf_dax_auto's files: 12 small ones, w1 to overwrite, big.bin 4x the
	# window, and what they hold
	a=$W/shared/auto
	mkdir -p "$a"
	"$VQF_QEMU_BIN/vqf-bench" mkfile "$a/big.bin" 128 || exit 1
	i=1
	while [ $i -le 12 ]; do
		head -c 4096 /dev/urandom >"$a/s$i" || exit 1
		i=$((i + 1))
	done
	head -c 4096 /dev/zero >"$a/w1"
	(cd "$a" && md5sum big.bin s[0-9]*) >"$W/shared/auto.md5" || exit 1 ;;
esac
vqf_start_virtiofsd "$W/shared" "$W/vfs.sock" "$W/virtiofsd.log"

vqf_run_qemu "$W/boot.cpio" "$W/vfs.sock" >"$W/console.log" 2>&1 </dev/null &
qpid=$!

case $mode in
vqfuse-version)
	# The host's change, once the guest asks for it (bounded by QEMU's
	# own timeout: the loop ends with QEMU).
	while [ ! -e "$W/shared/ver-req" ] && kill -0 $qpid 2>/dev/null; do
		sleep 0.2
	done
	if [ -e "$W/shared/ver-req" ]; then
		echo "host: append to ver-file"
		echo host-v2 >>"$W/shared/ver-file"
		: >"$W/shared/ver-ack"
	fi
	;;
kill-*)
	# kill virtiofsd once the guest's writer is well under way
	while [ ! -e "$W/shared/started" ] && kill -0 $qpid 2>/dev/null; do
		sleep 0.2
	done
	if [ -e "$W/shared/started" ]; then
		sleep 1
		echo "host: kill -9 virtiofsd ($VQF_VIRTIOFSD_PID)"
		kill -9 "$VQF_VIRTIOFSD_PID" && killed=1
	fi
	;;
esac
wait $qpid
qrc=$?
vqf_stop_virtiofsd
end=$(date +%s)

# the console without terminal control sequences, for reading and grepping
sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g; s/\r$//' "$W/console.log" \
	>"$W/console.txt"
cat "$W/console.txt"
echo "----"

bad=0
flag()
{
	echo "FAIL: $*"
	bad=1
}

[ $qrc = 124 ] || [ $qrc = 137 ] && flag "QEMU timed out (guest hang)"
[ $qrc = 0 ] || [ $qrc = 124 ] || [ $qrc = 137 ] || flag "QEMU exit status $qrc"
vqf_scan_console "$W/console.txt" || flag "error lines in the guest output (above)"
grep -q '^VQF-GUEST-EXIT rc=0' "$W/console.txt" || flag "guest script did not finish with rc=0"
grep -q '^VQF-DMESG-END' "$W/console.txt" || flag "guest did not reach the end of /init"

# Each cycle's KTAP results without timings; all must agree.
results()
{
	sed -n "/^VQF-BEGIN $1\$/,/^VQF-END $1 /p" "$W/console.txt" |
		grep -E '^(not )?ok [0-9]+ ' | sed 's/ # [0-9]* ms$//'
}

first=
for l in $labels; do
	grep -q "^VQF-END $l rc=0" "$W/console.txt" || flag "$l did not pass in the guest"
	case $l in
	virtiofs-*|vqfuse-*)
		results "$l" >"$W/results.$l"
		[ -s "$W/results.$l" ] || flag "$l printed no KTAP results"
		if [ -z "$first" ]; then
			first=$l
		elif ! diff -u "$W/results.$first" "$W/results.$l"; then
			flag "$l results differ from $first"
		fi
		# what reached the host's folder, byte for byte
		echo "host: vqf-posix verify $W/shared/$l"
		"$VQF_QEMU_BIN/vqf-posix" verify "$W/shared/$l" >"$W/host-verify.$l" 2>&1 ||
			flag "host-side check of $l"
		cat "$W/host-verify.$l"
		;;
	ktap)
		dm=$(sed -n '/^VQF-DMESG-BEGIN/,/^VQF-DMESG-END/p' "$W/console.txt")
		echo "$dm" | grep -qE '\] +ok [0-9]+ ' || flag "no KTAP ok lines in the kernel log"
		echo "$dm" | grep -qE '\] +1\.\.[0-9]+' || flag "no KTAP plan in the kernel log"
		# the patched fuse.ko's own run of lib's DAX vectors
		if [ -f "$ko/fuse.ko" ]; then
			echo "$dm" | grep -qE '\] +# Subtest: fuse_dax' ||
				flag "fuse.ko dax_selftest=1 printed no KTAP"
			echo "$dm" | grep -qE '\] +ok 1 fuse_dax' ||
				flag "fuse.ko's DAX vectors did not pass"
		fi
		;;
	kill-*)
		[ $killed = 1 ] || flag "writer never started, virtiofsd not killed"
		;;
	version)
		sed -n '/^VQF-BEGIN version$/,/^VQF-END version /p' \
			"$W/console.txt" | grep '^# version'
		;;
	modver)
		# the guest ran the modules of VQF_KO_DIR, not the in-tree ones
		got=$(sed -n 's/^# modver //p' "$W/console.txt")
		want="fuse=$(modinfo -F version "$ko/fuse.ko") vqfuse=$(modinfo -F version "$ko/vqfuse.ko")"
		for m in cuse virtiofs; do
			[ -f "$ko/$m.ko" ] &&
				want="$want $m=$(modinfo -F version "$ko/$m.ko")"
		done
		echo "host: guest runs $got (want $want)"
		[ "$got" = "$want" ] || flag "the guest's fuse/vqfuse are not $ko's"
		# an unstamped module would pass for the in-tree one
		case " $want " in
		*"= "*) flag "a module of $ko carries no MODULE_VERSION" ;;
		esac
		;;
	mq-spread)
		sed -n '/^VQF-BEGIN mq-spread$/,/^VQF-END mq-spread /p' \
			"$W/console.txt" | grep '^# vqfuse'
		;;
	daxauto-*)
		sed -n "/^VQF-BEGIN $l\$/,/^VQF-END $l /p" "$W/console.txt" |
			grep '^# daxauto\|^# fuse: dax: auto'
		# the guest's in-place write reached the host
		yes vqf-daxauto | head -c 4096 | cmp - "$W/shared/auto/w1" ||
			flag "the host's w1 is not what $l wrote"
		;;
	daxstress)
		echo "host: vqf-daxstress verify $W/shared/daxstress"
		"$VQF_QEMU_BIN/vqf-daxstress" verify "$W/shared/daxstress" 4 32 ||
			flag "host-side check of the DAX stress files"
		;;
	esac
done

# The POSIX cycle of vqfuse-version ran with the table on (a fresh
# vqfuse.ko, so its counters are the cycle's own): the table was asked
# and found the suite's own changes, and the honest device told no lie
# (initial_nonpositive is not one: the hub answers 0, "no usable
# version", for an entry that raced a change).
if [ $mode = vqfuse-version ]; then
	ver=$(sed -n '/^VQF-BEGIN vqfuse-1$/,/^VQF-END vqfuse-1 /p' \
		"$W/console.txt" | sed -n 's/^# vqfuse-ver: //p')
	echo "$ver" | grep -q '^slots [1-9]' ||
		flag "the POSIX cycle ran without the version table"
	echo "$ver" | grep -qE '^(dentry|attr|negative)_stale [1-9]' ||
		flag "the POSIX cycle never found a change through the table"
	echo "$ver" | grep -E '^(index_out_of_range|index_changed|backward|entryver_short|entryver_long) [1-9]' &&
		flag "the honest device's table was counted as lying (above)"
fi

# vqfuse-sim vhost-user: it must have seen the disconnect, refused
# nothing and popped requests from every request queue.
if [ "${VQF_DAEMON:-virtiofsd}" = libvirt ]; then
	echo "host: vqfuse-virtiofsd log:"
	cat "$W/virtiofsd.log"
	grep -q 'listening on --fd=.*cache auto: timeout 1 s.*xattr on' \
		"$W/virtiofsd.log" ||
		flag "vqfuse-virtiofsd did not serve --fd with cache=auto, xattr"
	grep -q 'front-end disconnected' "$W/virtiofsd.log" ||
		flag "vqfuse-virtiofsd did not see QEMU disconnect"
	grep -q ' messages, 0 refused' "$W/virtiofsd.log" ||
		flag "vqfuse-virtiofsd refused vhost-user messages"
	grep -q ' 0 refused, 0 queue breaks' "$W/virtiofsd.log" ||
		flag "vqfuse-virtiofsd refused requests or saw a ring broken"
	# libvirt's <sandbox mode='chroot'/>, entered
	vqf_daemon_confined "$W/virtiofsd.log" chroot ||
		flag "vqfuse-virtiofsd's confinement (above)"
	[ "${VQF_VIRTIOFSD_RC:-0}" = 0 ] ||
		flag "vqfuse-virtiofsd exited with $VQF_VIRTIOFSD_RC"
fi
if [ "${VQF_DAEMON:-virtiofsd}" = sim ]; then
	echo "host: vqfuse-sim vhost-user log:"
	grep -v '^vhost-user: ' "$W/virtiofsd.log"
	grep -q 'front-end disconnected' "$W/virtiofsd.log" ||
		flag "vqfuse-sim did not see QEMU disconnect"
	grep -q ' messages, 0 refused' "$W/virtiofsd.log" ||
		flag "vqfuse-sim refused vhost-user messages"
	grep -q ' 0 refused, 0 queue breaks' "$W/virtiofsd.log" ||
		flag "vqfuse-sim refused requests or saw a ring broken"
	# its default confinement as root: namespaces, seccomp kill
	vqf_daemon_confined "$W/virtiofsd.log" namespace ||
		flag "vqfuse-sim's confinement (above)"
	[ "${VQF_VIRTIOFSD_RC:-0}" = 0 ] ||
		flag "vqfuse-sim exited with $VQF_VIRTIOFSD_RC"
	# with a window: the guests mapped and unmapped through it
	if [ $mode = vqfuse-dax ]; then
		grep -qE 'dax: [1-9][0-9]* setups' "$W/virtiofsd.log" ||
			flag "vqfuse-sim served no SETUPMAPPING"
		grep -qE ' [1-9][0-9]* remove batches' "$W/virtiofsd.log" ||
			flag "vqfuse-sim served no REMOVEMAPPING"
	fi
	q=1
	while [ $q -le "$VQF_QEMU_NREQ" ]; do
		grep -qE "requests per queue:.* q$q=[1-9]" "$W/virtiofsd.log" ||
			flag "vqfuse-sim saw no request on request queue $q"
		q=$((q + 1))
	done
fi

# DAX: what the daemon counted.  Mapped data moves without FUSE_READ (and,
# where nothing extends a file, without FUSE_WRITE).
dax_count()
{
	sed -n "s/.*$1 *\([0-9][0-9]*\).*/\1/p" "$W/virtiofsd.log" | head -1
}
case $mode in
dax*)
	setups=$(dax_count 'dax:')
	removes=$(sed -n 's/.* \([0-9][0-9]*\) remove batches.*/\1/p' "$W/virtiofsd.log" | head -1)
	refused=$(sed -n 's/.* \([0-9][0-9]*\) refused, [0-9]* bad fh.*/\1/p' "$W/virtiofsd.log" | head -1)
	reads=$(sed -n 's/.* READ=\([0-9][0-9]*\).*/\1/p' "$W/virtiofsd.log" | head -1)
	writes=$(sed -n 's/.* WRITE=\([0-9][0-9]*\).*/\1/p' "$W/virtiofsd.log" | head -1)
	echo "host: DAX: ${setups:-?} SETUPMAPPING, ${removes:-?} REMOVEMAPPING batches, ${refused:-?} refused, FUSE_READ ${reads:-0}, FUSE_WRITE ${writes:-0}"
	[ "${setups:-0}" -gt 0 ] || flag "the daemon mapped nothing"
	grep -q ' 0 map refused, 0 unmap refused' "$W/virtiofsd.log" ||
		flag "QEMU refused a SHMEM_MAP/UNMAP of the daemon"
	case $mode in
	dax-hostile)
		[ "${refused:-0}" -gt 0 ] ||
			flag "the daemon refused no SETUPMAPPING past its window" ;;
	dax-inode)
		# small.bin and the dax=never mount read by FUSE READ; the
		# files marked (LOOKUP of big.bin in two mounts, at least)
		[ "${reads:-0}" -gt 0 ] ||
			flag "no FUSE_READ: small files went through the window"
		grep -q ', [2-9][0-9]* attributes marked DAX$\|, [1-9][0-9][0-9]* attributes marked DAX$' \
			"$W/virtiofsd.log" ||
			flag "the daemon marked fewer than 2 files DAX" ;;
	*)
		[ "${removes:-0}" -gt 0 ] || flag "the daemon unmapped nothing"
		[ "${refused:-0}" = 0 ] || flag "the daemon refused mappings"
		[ "${reads:-0}" = 0 ] || flag "FUSE_READ of mapped data" ;;
	esac
	if [ $mode = dax-reclaim ]; then
		[ "${writes:-0}" = 0 ] || flag "FUSE_WRITE of mapped data"
		[ "${setups:-0}" -gt 4 ] || flag "no reclaim: ${setups:-0} mappings for 4 ranges"
		echo "host: vqf-bench checkfile $W/shared/big.bin 78 64"
		"$VQF_QEMU_BIN/vqf-bench" checkfile "$W/shared/big.bin" 78 64 ||
			flag "host-side check of the rewritten file"
	fi ;;
esac

echo "qemu-$mode: $((end - start)) s, QEMU status $qrc"
[ $bad = 0 ] && echo "PASS" && rm -rf "$W/shared" "$W/initramfs"
vqf_stale_exit $bad "$W/console.txt"
exit $bad
