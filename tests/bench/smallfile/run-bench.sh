#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR MIT
#
# run-bench.sh [BUILD_DIR] [bench-smallfile options...]
#
# Builds bench-smallfile (and the passthrough_ll it mounts) in BUILD_DIR
# (default: build) and runs it; the defaults are the RFC's table: 1000
# files of 4 KiB, 3 rounds.  Env TIMEOUT (seconds, 1800) bounds the run.
set -eu
b=${1:-build}
[ $# -gt 0 ] && shift
cmake --build "$b" --target bench-smallfile -- --no-print-directory >&2
exec timeout "${TIMEOUT:-1800}" "$b/tests/bench/smallfile/bench-smallfile" "$@"
