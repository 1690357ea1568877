#!/bin/sh
# Configures and builds into ./build (or $VQF_BUILD).
set -eu
cd "$(dirname "$0")/.."
B=${VQF_BUILD:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVQFUSE_WERROR=ON >/dev/null
cmake --build "$B" -j "$jobs" -- --no-print-directory >/dev/null
