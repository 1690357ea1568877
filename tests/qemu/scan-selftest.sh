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
# QEMU's stale-code flake (vqf_tcg_stale) and nothing else.
cat >"$t/int3" <<'LOG'
[    0.995] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI
LOG
cat >"$t/nop5" <<'LOG'
[   81.2] Oops: invalid opcode: 0000 [#1] PREEMPT SMP NOPTI
[   81.2] Code: 48 89 e5 41 57 41 56 0f <1f> 44 00 00 41 55 41 54
LOG
cat >"$t/ours" <<'LOG'
[   81.2] Oops: invalid opcode: 0000 [#1] PREEMPT SMP NOPTI
[   81.2] Code: 48 89 e5 41 57 41 56 0f 1f 44 00 00 41 55 <0f> 0b
LOG
for f in int3 nop5; do
	vqf_tcg_stale "$t/clean" "$t/$f" || {
		echo "stale code not seen: $f"
		bad=1
	}
done
for f in clean ours one; do
	vqf_tcg_stale "$t/$f" && {
		echo "taken for stale code: $f"
		bad=1
	}
done

# vqf_once_more: a first run that failed by the flake runs once more, a
# second such failure is final, any other failure is final at once.
cat >"$t/entry" <<ENTRY
#!/bin/sh
. "$VQF_QEMU_SRC/qemu-lib.sh"
vqf_once_more "\$0" "\$@"
echo run >>"$t/runs"
case \$1:\$VQF_TRY in
flake:1|flaketwice:*) c="$t/int3" ;;
*) c="$t/clean" ;;
esac
b=1
[ \$1 = flake ] && [ \$VQF_TRY = 2 ] && b=0
vqf_stale_exit \$b "\$c"
exit \$b
ENTRY
chmod +x "$t/entry"
for c in flake:0:2 flaketwice:1:2 other:1:1; do
	rm -f "$t/runs"
	"$t/entry" "${c%%:*}" >/dev/null
	rc=$?
	n=$(wc -l <"$t/runs")
	if [ "$rc:$n" != "${c#*:}" ]; then
		echo "once more, ${c%%:*}: status:runs $rc:$n, want ${c#*:}"
		bad=1
	fi
done

[ $bad = 0 ] && echo "scan: all failure kinds flagged, clean log passes, stale code retried once"
exit $bad
