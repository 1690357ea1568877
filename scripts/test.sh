#!/bin/sh
# README's second command: set up, build, run every test.
#   1. every libFuzzer target for VQF_FUZZ_SECONDS (default 60) each, built
#      with clang into $B-fuzz; seeds and regressions are replayed first;
#   2. ctest: unit, valgrind, sanitize, helgrind, lint, kernel (module build
#      and checkpatch) and qemu (the module booted under QEMU) entries.
# A fuzz failure is reported after ctest has run, so one run shows both.
set -eu
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
B=${VQF_BUILD:-build}
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_rc=0
VQF_FUZZ_BUILD="$B-fuzz" tests/fuzz/run-all.sh "${VQF_FUZZ_SECONDS:-60}" ||
	fuzz_rc=$?
ctest --test-dir "$B" -j "$jobs" --output-on-failure --no-tests=error
exit $fuzz_rc
