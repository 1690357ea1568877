#!/bin/sh
# README's second command: set up, build, run every test.
#   1. every libFuzzer target for VQF_FUZZ_SECONDS (default 30) each, built
#      with clang into $B-fuzz; seeds and regressions are replayed first.
#      30 s: the whole command must stay within 45 minutes on a busy
#      2-core machine, and at 60 s it took 49 (2026-12-07, warm caches);
#      a fuzzing session is tests/fuzz/run-all.sh 600;
#   2. ctest: unit, valgrind, sanitize, helgrind, lint, kernel (module build
#      and checkpatch) and qemu (the module booted under QEMU) entries.
# The patched QEMU (qemu/, scripts/build-qemu.sh) and then the 6.12 guest
# kernel with modular fuse (scripts/build-kernel.sh) build in the
# background meanwhile: the fuzz stage runs one target at a time and leaves
# a core idle; ctest's qemu-shmem-build and guest-kernel-6.12 entries then
# only link the cached builds (or report a build's failure).  A warm cache
# makes them no-ops.
# A fuzz failure is reported after ctest has run, so one run shows both.
set -eu
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
B=${VQF_BUILD:-build}
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p "$B/qemu"
(
	rc=0
	VQF_BUILD=$B scripts/build-qemu.sh >/dev/null \
		2>"$B/qemu/build-bg.err" || rc=1
	scripts/build-kernel.sh >/dev/null \
		2>"$B/qemu/build-kernel-bg.err" || rc=1
	exit $rc
) &
qemu_pid=$!
fuzz_rc=0
VQF_FUZZ_BUILD="$B-fuzz" tests/fuzz/run-all.sh "${VQF_FUZZ_SECONDS:-30}" ||
	fuzz_rc=$?
# a failure shows in ctest's qemu-shmem-build or guest-kernel-6.12 entry,
# which retries
wait $qemu_pid || cat "$B/qemu/build-bg.err" "$B/qemu/build-kernel-bg.err" >&2
ctest --test-dir "$B" -j "$jobs" --output-on-failure --no-tests=error
exit $fuzz_rc
