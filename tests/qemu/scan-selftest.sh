#!/bin/sh
# The console scan must flag every kind of failure line the QEMU tests rely
# on, and must pass a clean log (KTAP "ok", taint notices, our markers).
set -u
VQF_QEMU_SRC=$(cd "$(dirname "$0")" && pwd)
. "$VQF_QEMU_SRC/qemu-lib.sh"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
bad=0

cat >"$t/clean" <<'LOG'
[    4.122371] virtio_ring: module verification failed: signature and/or required key missing - tainting kernel
[    4.750979] virtiofs virtio0: virtio_fs_setup_dax: No cache capability
KTAP version 1
1..2
ok 1 create # 17 ms
ok 2 open # SKIP not here
[    5.000000]     ok 3 vqf_vectors_req
VQF-END virtiofs-1 rc=0
LOG
if ! vqf_scan_console "$t/clean" >/dev/null; then
	echo "clean log flagged"
	bad=1
fi

while IFS= read -r line; do
	printf '%s\n' "$line" >"$t/one"
	if vqf_scan_console "$t/one" >/dev/null; then
		echo "not flagged: $line"
		bad=1
	fi
done <<'LOG'
not ok 3 write_read
[    5.000000]     not ok 7 vqf_vectors_sg
[   12.1] BUG: kernel NULL pointer dereference, address: 0000000000000008
[   12.1] Oops: 0002 [#1] PREEMPT SMP NOPTI
[   12.1] WARNING: CPU: 1 PID: 77 at fs/fuse/dev.c:300 fuse_request_end+0x1/0x2
[   12.1] general protection fault, probably for non-canonical address 0xdead000000000100
[   12.1] BUG: KASAN: slab-use-after-free in vqf_reply_check+0x10/0x20
[   12.1] refcount_t: underflow; use-after-free.
[   12.1] list_add corruption. prev->next should be next (ffff8881), but was 0000.
[   12.1] list_del corruption, ffff888100000000->next is LIST_POISON1
[   12.1] Kernel panic - not syncing: Fatal exception
[  130.1] INFO: task vqf-posix:88 blocked for more than 120 seconds.
[   30.1] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [kworker/0:1:12]
[   30.1] rcu: INFO: rcu_sched self-detected stall on CPU
LOG
[ $bad = 0 ] && echo "scan: all failure kinds flagged, clean log passes"
exit $bad
