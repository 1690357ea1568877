#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dkms-make.sh KVER KDIR VERSION - what DKMS runs (debian/vqfuse-dkms.dkms, MAKE):
# vqfuse.ko and the patched fuse.ko for kernel KVER, in build/kernel.
#
# fs/fuse must be the source of the kernel being built for, so it comes
# from Debian's linux-source-X.Y of KVER's series, as the project's own
# build takes it (kernel/Makefile, fuse-tree.sh).  That package follows
# the newest kernel of its series: for an older KVER of the same series
# the sources may be a few stable releases apart, which is said, not
# refused (fs/fuse's interface to the rest of the kernel is stable
# within a series; a mismatch would fail here, at build time).
set -eu

kver=$1
kdir=$2
version=$3
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

series=$(echo "$kver" | sed -n 's/^\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
if [ -z "$series" ]; then
	echo "vqfuse-dkms: cannot read a kernel series from '$kver'" >&2
	exit 1
fi
tarball=/usr/src/linux-source-$series.tar.xz
if [ ! -f "$tarball" ]; then
	echo "vqfuse-dkms: $tarball missing: fs/fuse for $kver comes from" \
		"it (apt install linux-source-$series)" >&2
	exit 1
fi

src_ver=$(dpkg-query -W -f '${Version}' "linux-source-$series" \
	2>/dev/null || true)
hdr_ver=$(dpkg-query -W -f '${Version}' "linux-headers-$kver" \
	2>/dev/null || true)
if [ -n "$src_ver" ] && [ -n "$hdr_ver" ] && [ "$src_ver" != "$hdr_ver" ]; then
	echo "vqfuse-dkms: note: fs/fuse from linux-source-$series $src_ver," \
		"kernel $kver is $hdr_ver" >&2
fi

exec make -C "$here" KVER="$kver" KDIR="$kdir" \
	VQF_OUT="$top/build/kernel" VQF_WERROR=0 VQF_VERSION="$version" \
	LINUX_TARBALL="$tarball" LINUX_TOPDIR="linux-source-$series" \
	modules
