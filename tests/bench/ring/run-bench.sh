#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# Compare the vqfuse split virtqueue with the kernel's ringtest
# virtio_ring_0_9 on this machine, in this run.
#
#   run-bench.sh WORKDIR BENCH_RING [extra ringtest options...]
#
# Extracts tools/virtio/ringtest from /usr/src/linux-source-6.1.tar.xz into
# WORKDIR/ringtest (once), builds virtio_ring_0_9 there with its own
# Makefile, then runs both with the same options ROUNDS times, alternating,
# and prints buffers/s, ns/buffer and the ratio of the medians.
# Env: ROUNDS (5), CYCLES (10000000: ringtest's default), LINUX_TARBALL,
# PIN (1: pin as run-on-all.sh does; 0: let the scheduler place threads).
set -eu

work=$1
ours=$2
shift 2
rounds=${ROUNDS:-5}
cycles=${CYCLES:-10000000}
tarball=${LINUX_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
top=linux-source-6.1
rt=$work/ringtest/$top/tools/virtio/ringtest

if [ ! -x "$rt/virtio_ring_0_9" ]; then
	echo "bench-ring: extracting ringtest from $tarball" >&2
	mkdir -p "$work/ringtest"
	tar -xJf "$tarball" -C "$work/ringtest" "$top/tools/virtio/ringtest"
	make -s -C "$rt" virtio_ring_0_9 >&2
fi

# ringtest's run-on-all.sh pins the host to the last CPU, the guest to
# another; do the same for both programs when there are two CPUs.
pin=
last=$(($(nproc) - 1))
if [ "$last" -ge 1 ] && [ "${PIN:-1}" != 0 ]; then
	pin="--host-affinity $last --guest-affinity 0"
fi
opts="--run-cycles $cycles $pin $*"

now() { date +%s.%N; }

# One timed run; prints elapsed seconds.
timed() {
	t0=$(now)
	"$@" >/dev/null
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }'
}

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "options: $opts (ring 256, batch 1, polling unless --sleep)"
: > "$work/ours.times"
: > "$work/ringtest.times"
i=1
while [ "$i" -le "$rounds" ]; do
	# shellcheck disable=SC2086
	r=$(timed "$rt/virtio_ring_0_9" $opts)
	# shellcheck disable=SC2086
	o=$(timed "$ours" $opts)
	echo "$r" >> "$work/ringtest.times"
	echo "$o" >> "$work/ours.times"
	printf 'round %d: ringtest virtio_ring_0_9 %.3f s, vqfuse %.3f s\n' \
		"$i" "$r" "$o"
	i=$((i + 1))
done
mr=$(median < "$work/ringtest.times")
mo=$(median < "$work/ours.times")
# The fastest run is the one the rest of the machine disturbed least.
br=$(sort -g "$work/ringtest.times" | head -n 1)
bo=$(sort -g "$work/ours.times" | head -n 1)
echo "machine after: load average $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v c="$cycles" -v r="$mr" -v o="$mo" -v br="$br" -v bo="$bo" 'BEGIN {
	printf "ringtest virtio_ring_0_9: median %.0f buffers/s (%.1f ns/buffer), best %.0f buffers/s (%.1f ns/buffer)\n", c / r, r * 1e9 / c, c / br, br * 1e9 / c
	printf "vqfuse ring (validated):  median %.0f buffers/s (%.1f ns/buffer), best %.0f buffers/s (%.1f ns/buffer)\n", c / o, o * 1e9 / c, c / bo, bo * 1e9 / c
	printf "ratio vqfuse/ringtest throughput: %.2fx (medians), %.2fx (best runs)\n", r / o, br / bo
}'
