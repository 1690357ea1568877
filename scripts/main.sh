#!/bin/sh
# README's first command: set up, build, run the main job - the RFC's
# smallfile workload as a simulated guest over a temporary shared
# directory (vqfuse-sim run), after the short walk through lib/.
set -eu
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
B=${VQF_BUILD:-build}
"$B/tests/demo/vqf-demo"
shared=$(mktemp -d)
trap 'rm -rf "$shared"' EXIT
"$B/sim/cli/vqfuse-sim" run --shared "$shared" --workload smallfile \
	--files 1000 --inline --cache=all
