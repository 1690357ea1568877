#!/bin/busybox sh
# /init of the test guest.  Runs /run.sh (appended by the host as a second
# cpio archive) or, without one, an interactive shell on the console; then
# prints the kernel log between markers, so warnings below the console
# loglevel still reach the host's scan, and powers off (QEMU exits, as it
# runs with -no-reboot).
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
. /etc/vqf-guest-lib.sh
vqf_modset virtio

if [ -f /run.sh ]; then
	echo "VQF-GUEST-START"
	sh -c '. /etc/vqf-guest-lib.sh; . /run.sh'
	echo "VQF-GUEST-EXIT rc=$?"
else
	echo "vqf guest: no /run.sh, interactive shell (exit or poweroff -f to stop)"
	ENV=/etc/vqf-guest-lib.sh setsid cttyhack sh
fi
echo "VQF-DMESG-BEGIN"
dmesg
echo "VQF-DMESG-END"
# -n: no sync(), which a filesystem whose device died blocks forever
poweroff -n -f
