# shellcheck shell=sh
# Host-side helpers shared by vqf-qemu, run-test.sh and bench-qemu.sh:
# locate the installed Debian kernel, build the initramfs, start virtiofsd,
# boot QEMU (TCG, always under timeout) and scan the guest console.
#
# Callers set before sourcing:
#   VQF_QEMU_SRC   this folder (tests/qemu in the source tree)
#   VQF_QEMU_BIN   the build folder holding vqf-posix and vqf-bench
# Optional environment:
#   VQF_KVER       kernel version (default: <ko dir>/kernel-version, else the
#                  newest /boot/vmlinuz-$VQF_KSERIES.*-amd64 with modules.dep)
#   VQF_KSERIES    kernel series the guest boots when VQF_KVER and the ko
#                  dir do not say: 6.1 (default) or 6.12
#   VQF_KROOT      root the guest kernel is installed under (default /:
#                  Debian's images, /boot/vmlinuz-KVER and
#                  /lib/modules/KVER); scripts/build-kernel.sh's cache entry
#                  for the 6.12 guest kernel with fuse as a module
#   VQF_WORK_TAG   appended to the tests' work folders (per-kernel twins)
#   VQF_KO_DIR     folder with vqfuse.ko / vqfuse_test.ko and the patched
#                  fuse.ko (default <build>/kernel)
#   VQF_QEMU_MEM   guest memory (default 1G; the memfd backend matches it)
#   VQF_QEMU_SMP   guest vCPUs (default 2)
#   VQF_QEMU_NREQ  request virtqueues of the virtio-fs device (default 1)
#   VQF_QEMU       the QEMU binary (default qemu-system-x86_64 from PATH,
#                  Debian's; build/qemu/qemu-system-x86_64 is the patched
#                  one that scripts/build-qemu.sh makes, see qemu/)
#   VQF_QEMU_DEVOPTS  appended to the -device vhost-user-fs-pci options
#                  (e.g. ",cache-size=32M" with the patched QEMU)
#   VQF_QEMU_EXTRA    more QEMU arguments, split at blanks
#   VQF_QEMU_ACCEL    the -accel argument (default tcg: multi-threaded;
#                  tcg,thread=single avoids vqf_tcg_stale()'s flake at
#                  about 1.5x the time of a guest that uses both vCPUs)
#   VQF_DAEMON     the vhost-user back-end: virtiofsd (default, QEMU's C
#                  virtiofsd), sim (vqfuse-sim vhost-user, from
#                  VQF_SIM_BIN, default <build>/sim/cli/vqfuse-sim) or
#                  libvirt (its vqfuse-virtiofsd name beside VQF_SIM_BIN,
#                  started as libvirt starts virtiofsd: a listening socket
#                  made by the caller, --fd=N and the options libvirt
#                  picks from --print-capabilities)

VQF_TAG=vqf
VQF_9P_TAG=vqf9p
: "${VQF_QEMU_MEM:=1G}"
: "${VQF_QEMU_SMP:=2}"
# Request virtqueues of the device.  QEMU 7.2's C virtiofsd serves one only:
# with 2 it stops on "libvhost-user: Invalid queue index: 2".
: "${VQF_QEMU_NREQ:=1}"

vqf_die()
{
	echo "vqf-qemu: $*" >&2
	exit 1
}

# The kernel the guest boots: never `uname -r`, which is this host's.
vqf_kver()
{
	if [ -n "${VQF_KVER:-}" ]; then
		echo "$VQF_KVER"
		return
	fi
	# the kernel vqfuse.ko was built for, as kernel/ records it
	kvf=${VQF_KO_DIR:-$VQF_QEMU_BIN/../../kernel}/kernel-version
	if [ -f "$kvf" ] && [ -f "${VQF_KROOT:-}/lib/modules/$(cat "$kvf")/modules.dep" ]; then
		cat "$kvf"
		return
	fi
	ks=${VQF_KSERIES:-6.1}
	for k in $(ls -1 "${VQF_KROOT:-}"/boot/vmlinuz-"$ks".* 2>/dev/null |
		   sort -V -r); do
		v=${k#"${VQF_KROOT:-}"/boot/vmlinuz-}
		if [ -f "${VQF_KROOT:-}/lib/modules/$v/modules.dep" ]; then
			echo "$v"
			return
		fi
	done
	vqf_die "no /boot/vmlinuz-$ks.*-amd64 with modules (apt-get install linux-image-$ks-amd64)"
}

# vqf_mod_builtin KVER NAME: NAME is built into the kernel (modules.builtin;
# Debian's 6.12 builds virtio_pci, fuse and virtiofs in).
vqf_mod_builtin()
{
	grep -qE "(^|/)$2\.ko$" "${VQF_KROOT:-}/lib/modules/$1/modules.builtin" \
		2>/dev/null
}

# Module files for NAME and everything it needs, dependencies first, as
# paths relative to /lib/modules/<ver>.  modules.dep lists each module's
# full transitive closure, the module to load last first.  A built-in
# module has no file and needs none.
vqf_mod_closure()
{
	kv=$1
	shift
	for m in "$@"; do
		vqf_mod_builtin "$kv" "$m" && continue
		line=$(grep -E "(^|/)$m\.ko(\.[a-z]+)?:" \
			"${VQF_KROOT:-}/lib/modules/$kv/modules.dep") ||
			vqf_die "module $m not in modules.dep of $kv"
		self=${line%%:*}
		deps=${line#*:}
		# reverse the dependency list, then the module itself
		for d in $deps; do echo "$d"; done | tac
		echo "$self"
	done | awk '!seen[$0]++'
}

# Module set name -> ordered .ko basenames in the guest.  Written into the
# initramfs as /etc/vqf-modsets so the guest never hard-codes load order.
vqf_write_modsets()
{
	kv=$1 out=$2
	: >"$out"
	for set in "virtio:virtio_pci" "fuse:fuse" "virtiofs:virtiofs" \
		   "9p:9pnet_virtio 9p"; do
		name=${set%%:*}
		# shellcheck disable=SC2086
		mods=$(vqf_mod_closure "$kv" ${set#*:} | sed 's|.*/||; s|\.ko.*||' |
		       tr '\n' ' ')
		echo "$name: $mods" >>"$out"
	done
	builtin=
	for m in virtio_pci fuse virtiofs cuse 9pnet_virtio 9pnet 9p netfs; do
		vqf_mod_builtin "$kv" "$m" && builtin="$builtin $m"
	done
	echo "builtin:$builtin" >>"$out"
}

# vqf_mkinitramfs WORKDIR -> WORKDIR/initramfs.cpio
vqf_mkinitramfs()
{
	w=$1
	kv=$(vqf_kver)
	root=$w/initramfs
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" \
		"$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/mnt" \
		"$root/etc" "$root/lib/vqf" "$root/root"
	bb=$(command -v busybox) || vqf_die "busybox-static is missing"
	file -L "$bb" | grep -q 'statically linked' ||
		vqf_die "$bb is not static (apt-get install busybox-static)"
	cp "$bb" "$root/bin/busybox"
	# every module of every set, debug info stripped
	# shellcheck disable=SC2046
	for rel in $(vqf_mod_closure "$kv" virtio_pci fuse virtiofs 9pnet_virtio 9p); do
		src=${VQF_KROOT:-}/lib/modules/$kv/$rel
		base=$(basename "$rel")
		case $base in
		*.ko) strip --strip-debug -o "$root/lib/vqf/$base" "$src" ;;
		*.ko.xz) xz -dc "$src" >"$root/lib/vqf/${base%.xz}" &&
			 strip --strip-debug "$root/lib/vqf/${base%.xz}" ;;
		*.ko.zst) zstd -qdc "$src" >"$root/lib/vqf/${base%.zst}" &&
			  strip --strip-debug "$root/lib/vqf/${base%.zst}" ;;
		*) vqf_die "unknown module format $base" ;;
		esac
	done
	vqf_write_modsets "$kv" "$root/etc/vqf-modsets"
	ko=${VQF_KO_DIR:-$VQF_QEMU_BIN/../../kernel}
	for m in vqfuse vqfuse_test; do
		if [ -f "$ko/$m.ko" ]; then
			strip --strip-debug -o "$root/lib/vqf/$m.ko" "$ko/$m.ko"
		fi
	done
	# kernel/fuse-X.Y/'s patched fuse.ko, for vqfuse runs only, and the
	# cuse.ko and virtiofs.ko rebuilt with it (fs type virtiofs-vqf)
	for m in fuse cuse virtiofs; do
		if [ -f "$ko/$m.ko" ]; then
			strip --strip-debug -o "$root/lib/vqf/$m-vqf.ko" "$ko/$m.ko"
		fi
	done
	for p in vqf-posix vqf-bench vqf-daxstress vqf-cohere; do
		[ -x "$VQF_QEMU_BIN/$p" ] || vqf_die "$VQF_QEMU_BIN/$p not built"
		cp "$VQF_QEMU_BIN/$p" "$root/bin/$p"
	done
	# optional: only bench-qemu's paired mode runs it
	[ -x "$VQF_QEMU_BIN/vqf-req-bench" ] &&
		cp "$VQF_QEMU_BIN/vqf-req-bench" "$root/bin/vqf-req-bench"
	cp "$VQF_QEMU_SRC/guest-init.sh" "$root/init"
	cp "$VQF_QEMU_SRC/guest-lib.sh" "$root/etc/vqf-guest-lib.sh"
	chmod 755 "$root/init"
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) \
		>"$w/initramfs.cpio" || vqf_die "cpio failed"
}

# vqf_add_run_script WORKDIR SCRIPT -> WORKDIR/boot.cpio: the base archive
# plus /run.sh.  The kernel unpacks concatenated newc archives in order.
vqf_add_run_script()
{
	w=$1 script=$2
	rm -rf "$w/runfs" && mkdir -p "$w/runfs"
	printf '%s\n' "$script" >"$w/runfs/run.sh"
	(cd "$w/runfs" && echo run.sh | cpio -o -H newc --quiet) >"$w/run.cpio"
	cat "$w/initramfs.cpio" "$w/run.cpio" >"$w/boot.cpio"
}

# vqf_start_virtiofsd SHARED SOCK LOG: background virtiofsd (or, with
# VQF_DAEMON=sim, vqfuse-sim vhost-user with VQF_QEMU_NREQ request queues),
# sets VQF_VIRTIOFSD_PID once the socket is there.
vqf_start_virtiofsd()
{
	shared=$1 sock=$2 log=$3
	rm -f "$sock"
	if [ "${VQF_DAEMON:-virtiofsd}" = libvirt ]; then
		sim=${VQF_SIM_BIN:-$VQF_QEMU_BIN/../../sim/cli/vqfuse-sim}
		vfsd=$(dirname "$sim")/vqfuse-virtiofsd
		[ -x "$vfsd" ] || vqf_die "$vfsd missing: build vqfuse-sim first"
		# libvirt's qemuVirtioFSStart() for docs/virtiofsd-compat.md's
		# domain (<binary xattr='on'>, <sandbox mode='chroot'/>,
		# <thread_pool size='2'/>, no <cache>): it asks the binary
		# --print-capabilities, binds and listens on the socket itself
		# and hands the daemon the descriptor, with the separate
		# options when the daemon lists "separate-options" (ours
		# does), else the legacy -o list.  python3 stands in for
		# libvirt: make the socket, exec the daemon (same pid).
		python3 -c '
import json, os, socket, subprocess, sys
sock, vfsd, shared = sys.argv[1:4]
caps = json.loads(subprocess.run([vfsd, "--print-capabilities"],
                                 check=True, capture_output=True).stdout)
assert caps["type"] == "fs", caps
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sock)
s.listen(1)
os.set_inheritable(s.fileno(), True)
argv = [vfsd, "--fd=%d" % s.fileno()]
if "separate-options" in caps.get("features", []):
    argv += ["--shared-dir", shared, "--sandbox", "chroot", "--xattr"]
else:
    argv += ["-o", "source=%s,sandbox=chroot,xattr" %
             shared.replace(",", ",,")]
argv.append("--thread-pool-size=2")
print("libvirt:", " ".join(argv), flush=True)
os.execv(vfsd, argv)
' "$sock" "$vfsd" "$shared" >"$log" 2>&1 &
	elif [ "${VQF_DAEMON:-virtiofsd}" = sim ]; then
		sim=${VQF_SIM_BIN:-$VQF_QEMU_BIN/../../sim/cli/vqfuse-sim}
		[ -x "$sim" ] || vqf_die "$sim missing: build vqfuse-sim first"
		# --xattr: as virtiofsd below (both default to no xattrs)
		"$sim" vhost-user --socket "$sock" --shared "$shared" \
			--queues "$VQF_QEMU_NREQ" --threads 2 --xattr \
			${VQF_SIM_ARGS:-} >"$log" 2>&1 &
	else
		# glibc's own arena limit, set: unset, glibc's CPU count
		# lookup ends in sched_getaffinity() inside virtiofsd's
		# sandbox, which its seccomp kills (docs/bench-daemons.md).
		MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-$((8 * $(nproc)))} \
		/usr/lib/qemu/virtiofsd --socket-path="$sock" \
			-o source="$shared" -o cache=auto -o xattr \
			>"$log" 2>&1 &
	fi
	VQF_VIRTIOFSD_PID=$!
	i=0
	while [ ! -S "$sock" ]; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$VQF_VIRTIOFSD_PID" 2>/dev/null; then
			cat "$log" >&2
			vqf_die "virtiofsd did not start"
		fi
		sleep 0.1
	done
}

# vqf_daemon_confined LOG SANDBOX: vqfuse-sim vhost-user ran as it runs by
# default for an untrusted guest (issue 26): in the SANDBOX mode named,
# under seccomp kill (a syscall missing from the allowlist kills it, and
# its exit status says so), and its guard refused nothing the guest
# kernel sent.  Prints what is wrong and returns 1.
vqf_daemon_confined()
{
	_rc=0
	grep -q "confined: sandbox $2 .*seccomp kill" "$1" || {
		echo "host: the daemon did not run confined (sandbox $2, seccomp kill)"
		_rc=1
	}
	grep -q 'killed by signal' "$1" && {
		echo "host: the daemon's sandboxed process was killed by a signal"
		_rc=1
	}
	[ "$(grep -c 'guard: 0 refused' "$1")" = "$(grep -c 'guard: ' "$1")" ] &&
		grep -q 'guard: ' "$1" || {
		echo "host: the device's guard refused requests of an honest guest kernel"
		_rc=1
	}
	return $_rc
}

vqf_stop_virtiofsd()
{
	if [ -n "${VQF_VIRTIOFSD_PID:-}" ]; then
		# vqfuse-sim exits by itself once QEMU has disconnected
		i=0
		while [ "${VQF_DAEMON:-virtiofsd}" != virtiofsd ] &&
			[ $i -lt 100 ] &&
			kill -0 "$VQF_VIRTIOFSD_PID" 2>/dev/null; do
			sleep 0.1
			i=$((i + 1))
		done
		kill "$VQF_VIRTIOFSD_PID" 2>/dev/null
		# its status: a daemon that seccomp killed (a hole in the
		# allowlist) exits 1 after saying so (vu_sandbox.c)
		VQF_VIRTIOFSD_RC=0
		wait "$VQF_VIRTIOFSD_PID" 2>/dev/null || VQF_VIRTIOFSD_RC=$?
		VQF_VIRTIOFSD_PID=
	fi
}

# vqf_run_qemu INITRD SOCK [9P_DIR]: boots the guest under timeout
# (VQF_QEMU_TIMEOUT seconds, 0 = none, for interactive use).  No NIC (no
# option ROM to load), serial console on stdio, an oops or panic ends QEMU
# (panic=-1 with -no-reboot).  Extra kernel arguments: VQF_QEMU_APPEND.
# no_timer_check: on a busy host, TCG can deliver the IO-APIC timer's first
# ticks too late for check_timer(), which then panics the boot ("IO-APIC +
# timer doesn't work!") so early that the reboot does not end QEMU either:
# the guest hangs until the harness's timeout.  KVM guests skip that check
# by default (kvm-clock sets it); so do ours.  rcu_cpu_stall_timeout=300:
# a host that starves the guest's vCPU threads for tens of seconds (a CI
# machine at load 10) makes RCU report a stall on a guest that only did
# not run; the 21 s default fired so.  A CPU really stuck in our code
# still shows: as a stall after 300 s, or as the harness's own timeout.
# watchdog_thresh=60 does the same for the soft-lockup detector (a report
# after 120 s instead of 20 s), which a starved guest trips alike.
vqf_run_qemu()
{
	initrd=$1 sock=$2 ninep=${3:-}
	kv=$(vqf_kver)
	set -- -accel "${VQF_QEMU_ACCEL:-tcg}" -cpu max \
		-smp "$VQF_QEMU_SMP" -m "$VQF_QEMU_MEM" \
		-nographic -no-reboot -nic none \
		-kernel "${VQF_KROOT:-}/boot/vmlinuz-$kv" -initrd "$initrd" \
		-append "console=ttyS0 loglevel=5 panic=-1 no_timer_check rcupdate.rcu_cpu_stall_timeout=300 watchdog_thresh=60 ${VQF_QEMU_APPEND:-}" \
		-object "memory-backend-memfd,id=mem,size=$VQF_QEMU_MEM,share=on" \
		-numa node,memdev=mem \
		-chardev "socket,id=vfs,path=$sock" \
		-device "vhost-user-fs-pci,chardev=vfs,tag=$VQF_TAG,num-request-queues=$VQF_QEMU_NREQ${VQF_QEMU_DEVOPTS:-}"
	# VQF_QEMU_EXTRA: more arguments (bench-qemu's second device)
	# shellcheck disable=SC2086
	[ -n "${VQF_QEMU_EXTRA:-}" ] && set -- "$@" $VQF_QEMU_EXTRA
	if [ -n "$ninep" ]; then
		set -- "$@" -virtfs \
			"local,path=$ninep,mount_tag=$VQF_9P_TAG,security_model=none"
	fi
	if [ "${VQF_QEMU_TIMEOUT:-360}" = 0 ]; then
		"${VQF_QEMU:-qemu-system-x86_64}" "$@"
	else
		timeout -k 5 "${VQF_QEMU_TIMEOUT:-360}" \
			"${VQF_QEMU:-qemu-system-x86_64}" "$@"
	fi
}

# vqf_scan_console LOG: prints every line that fails a run; status 1 if any.
vqf_scan_console()
{
	grep -n -E '^not ok|[^a-z]not ok [0-9]|Oops|BUG:|WARNING:|general protection fault|KASAN|refcount_t|list_add corruption|list_del corruption|Kernel panic|Call Trace|blocked for more than|soft lockup|hard LOCKUP|RCU stall|rcu_sched self-detected' \
		"$1" && return 1
	return 0
}

# vqf_tcg_stale CONSOLE...: status 0 when a console shows a vCPU running
# guest code in its old translation after another vCPU patched it.
# Linux patches its text live (static keys, static calls, alternatives
# at module load: text_poke_bp() writes an int3, the new bytes, then
# IPIs every CPU), and QEMU 7.2's multi-threaded TCG sometimes lets a
# vCPU run the old translation after that.  Seen three times in a day
# of test runs, each in a different entry, on Debian's 6.12 guests:
# "Oops: int3" in blake2s_compress at 1 s of boot (crng_reseed turning a
# static key on), in sched_clock_tick at 3.8 s, and __schedule running
# from the middle of a 5-byte NOP (Code: ... 0f <1f> 44 00 00) just
# after a module unload.  Neither is something our code can cause: it
# patches no text, and its BUG()s are ud2 (<0f> 0b), "invalid opcode".
vqf_tcg_stale()
{
	grep -q -E 'Oops: int3|Code: .*0f <1f> 44 00 00' "$@" 2>/dev/null
}

# vqf_once_more SCRIPT ARGS...: called by a test script right after it
# sources this file, with "$0" "$@".  Runs the script (VQF_TRY=1); when
# that run failed only by vqf_tcg_stale() (vqf_stale_exit: status 75),
# runs it once more (VQF_TRY=2), whose verdict is final.  A second
# stale-code failure fails the entry: twice in a row is not the flake's
# rate.  Any other status is the first run's own.
vqf_once_more()
{
	[ -z "${VQF_TRY:-}" ] || return 0
	VQF_TRY=1 "$@"
	rc=$?
	[ $rc = 75 ] || exit $rc
	echo "host: QEMU ran stale guest code (vqf_tcg_stale in qemu-lib.sh):"
	echo "host: not this entry's failure; it runs once more"
	VQF_TRY=2 exec "$@"
}

# vqf_stale_exit BAD CONSOLE...: in a script's first run (VQF_TRY=1), a
# failed verdict (BAD not 0) whose consoles show vqf_tcg_stale() exits
# 75 for vqf_once_more to run it again; otherwise returns.
vqf_stale_exit()
{
	_bad=$1
	shift
	[ "$_bad" != 0 ] && [ "${VQF_TRY:-}" = 1 ] && vqf_tcg_stale "$@" &&
		exit 75
	return 0
}
