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
#   vqfuse-ktap      vqfuse_test.ko's in-kernel KTAP run
#   kill-vqfuse      kill -9 virtiofsd while the guest writes: the writer
#                    gets an error, nothing oopses, unmount and rmmod work
#   kill-virtiofs    the same on the in-tree module as a baseline: nothing
#                    oopses and the mount can be detached (upstream leaves
#                    the writer blocked, see docs/qemu-tests.md)
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
*)
	vqf_die "unknown mode $mode" ;;
esac

W=$VQF_QEMU_BIN/work/$mode
rm -rf "$W"
mkdir -p "$W/shared"
trap 'vqf_stop_virtiofsd' EXIT INT TERM
start=$(date +%s)
killed=0

vqf_mkinitramfs "$W"
vqf_add_run_script "$W" "$script"
vqf_start_virtiofsd "$W/shared" "$W/vfs.sock" "$W/virtiofsd.log"

vqf_run_qemu "$W/boot.cpio" "$W/vfs.sock" >"$W/console.log" 2>&1 </dev/null &
qpid=$!

case $mode in
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
		;;
	kill-*)
		[ $killed = 1 ] || flag "writer never started, virtiofsd not killed"
		;;
	mq-spread)
		sed -n '/^VQF-BEGIN mq-spread$/,/^VQF-END mq-spread /p' \
			"$W/console.txt" | grep '^# vqfuse'
		;;
	esac
done

# vqfuse-sim vhost-user: it must have seen the disconnect, refused
# nothing and popped requests from every request queue.
if [ "${VQF_DAEMON:-virtiofsd}" = sim ]; then
	echo "host: vqfuse-sim vhost-user log:"
	grep -v '^vhost-user: ' "$W/virtiofsd.log"
	grep -q 'front-end disconnected' "$W/virtiofsd.log" ||
		flag "vqfuse-sim did not see QEMU disconnect"
	grep -q ' messages, 0 refused' "$W/virtiofsd.log" ||
		flag "vqfuse-sim refused vhost-user messages"
	grep -q ' 0 refused, 0 queue breaks' "$W/virtiofsd.log" ||
		flag "vqfuse-sim refused requests or saw a ring broken"
	q=1
	while [ $q -le "$VQF_QEMU_NREQ" ]; do
		grep -qE "requests per queue:.* q$q=[1-9]" "$W/virtiofsd.log" ||
			flag "vqfuse-sim saw no request on request queue $q"
		q=$((q + 1))
	done
fi

echo "qemu-$mode: $((end - start)) s, QEMU status $qrc"
[ $bad = 0 ] && echo "PASS" && rm -rf "$W/shared" "$W/initramfs"
exit $bad
