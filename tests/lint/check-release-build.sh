#!/bin/sh
# Configures and builds the Release configuration (gcc -O3) with -Werror into
# its own folder: -O3 inlines across functions and finds warnings (maybe-
# uninitialized, format-truncation) that RelWithDebInfo's -O2 does not.
# Only lib/, the simulator's libraries and vqfuse-sim are built, to keep CI
# cheap; ccache is used when present.
#   check-release-build.sh SRCDIR BUILDDIR
set -eu
src=$1
b=$2
launcher=
if command -v ccache >/dev/null 2>&1; then
	launcher=-DCMAKE_C_COMPILER_LAUNCHER=ccache
fi
mkdir -p "$b"
# shellcheck disable=SC2086 # $launcher is empty or one word
if ! cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DVQFUSE_WERROR=ON \
	-DVQFUSE_SANITIZE=OFF -DVQFUSE_KERNEL=OFF $launcher \
	>"$b/release-configure.log" 2>&1; then
	cat "$b/release-configure.log" >&2
	exit 1
fi
if ! cmake --build "$b" --target vqfuse-sim -j "${VQF_RELEASE_JOBS:-2}" \
	>"$b/release-build.log" 2>&1; then
	grep -B2 -A6 -e 'error' "$b/release-build.log" >&2 ||
		cat "$b/release-build.log" >&2
	exit 1
fi
echo "Release build with -Werror: ok"
