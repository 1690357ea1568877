#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# guest-kernel.sh link LINK
#     scripts/build-kernel.sh (the 6.12 guest kernel with fuse as a module,
#     cached outside the build), then LINK -> its cache entry
# guest-kernel.sh modules LINK OUT [MAKE]
#     vqfuse.ko, vqfuse_test.ko and the patched fuse.ko (kernel/fuse-6.12)
#     built against that kernel into OUT
#
# What the CMake targets guest-kernel-6.12 and kernel-module-6.12-vqf run:
# the cache entry's name holds a hash known only once it is built.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
case ${1:-} in
link)
	entry=$("$here/../scripts/build-kernel.sh")
	[ -f "$entry/kernel-version" ] ||
		{ echo "guest-kernel: no kernel in '$entry'" >&2; exit 1; }
	ln -sfn "$entry" "$2"
	;;
modules)
	[ -f "$2/kernel-version" ] ||
		{ echo "guest-kernel: $2 is no guest kernel (run link)" >&2; exit 1; }
	exec "${4:-make}" -C "$here" KDIR="$2/build" \
		KVER="$(cat "$2/kernel-version")" VQF_OUT="$3" modules
	;;
*)
	echo "usage: guest-kernel.sh link LINK | modules LINK OUT [MAKE]" >&2
	exit 2
	;;
esac
