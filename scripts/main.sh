#!/bin/sh
# README's first command: set up, build, run the main job.
set -eu
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
B=${VQF_BUILD:-build}
exec "$B/tests/demo/vqf-demo"
