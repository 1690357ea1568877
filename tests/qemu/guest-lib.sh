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

# vqf_modset SET: insmod every module of SET not yet loaded, in order.
vqf_modset()
{
	mods=$(sed -n "s/^$1: //p" /etc/vqf-modsets)
	[ -n "$mods" ] || { echo "# no module set $1"; return 1; }
	for m in $mods; do
		vqf_loaded "$m" && continue
		insmod "/lib/vqf/$m.ko" || { echo "# insmod $m failed"; return 1; }
	done
}

# vqf_fs_load FSTYPE [PARAM=VALUE...] / vqf_fs_unload FSTYPE: the
# filesystem module (with vqfuse.ko's parameters) and fuse.ko, both loaded
# and unloaded on every cycle.
vqf_fs_load()
{
	vqf_modset fuse || return 1
	case $1 in
	virtiofs) vqf_modset virtiofs ;;
	vqfuse) shift; insmod /lib/vqf/vqfuse.ko "$@" ;;
	9p) vqf_modset 9p ;;
	esac
}

vqf_fs_unload()
{
	case $1 in
	virtiofs) rmmod virtiofs || return 1 ;;
	vqfuse) rmmod vqfuse || return 1 ;;
	9p) rmmod 9p 9pnet_virtio 9pnet || return 1; return 0 ;;
	esac
	rmmod fuse
}

vqf_mount()
{
	case $1 in
	9p) mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 \
		"$VQF_9P_TAG" "$MNT" ;;
	*) mount -t "$1" "$VQF_TAG" "$MNT" ;;
	esac
}

# vqf_suite_cycles FSTYPE N: N times load -> mount -> suite -> unmount ->
# remount -> verify (read back from the host, not the page cache) ->
# unmount -> unload.  Each cycle writes its own folder FSTYPE-i.
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
	if echo "$q" | grep -qE 'bad_reply=[1-9]|in_flight=[1-9]'; then
		echo "# vqfuse counters: refused replies or requests in flight"
		return 1
	fi
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

# vqf_ktap_module: the in-kernel test vectors.  KTAP goes to the kernel log,
# which /init prints between markers; the module's load status says whether
# it ran.
vqf_ktap_module()
{
	echo "VQF-BEGIN ktap"
	vqf_modset fuse
	insmod /lib/vqf/vqfuse_test.ko
	rc=$?
	vqf_loaded vqfuse_test && rmmod vqfuse_test
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
