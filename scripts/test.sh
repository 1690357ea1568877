#!/bin/sh
# README's second command: set up, build, run every test.
set -eu
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
B=${VQF_BUILD:-build}
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir "$B" -j "$jobs" --output-on-failure --no-tests=error
