#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# run-bench.sh [BUILD_DIR] [bench-daemons options...]
#
# Builds bench-daemons and vqfuse-sim in BUILD_DIR (default: build) and
# runs it: 5 rounds per pool size (64, 0), ours and virtiofsd alternating.
# Env TIMEOUT (seconds, 900) bounds the run.
set -eu
b=${1:-build}
[ $# -gt 0 ] && shift
cmake --build "$b" --target bench-daemons -- --no-print-directory >&2
exec timeout "${TIMEOUT:-900}" "$b/tests/bench/daemons/bench-daemons" "$@"
