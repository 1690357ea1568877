#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fuse-tree.sh SRC OUT TARBALL TOPDIR VERSION SERIES BUILTIN - the patched
# fs/fuse for kbuild.
#
#   OUT/fuse-tree/fs/fuse/       fs/fuse of the linux-source tarball (the
#                                exact source of the guests' fuse.ko) with
#                                SERIES/*.patch (kernel/fuse-X.Y/, the
#                                series written for the tarball's kernel)
#                                applied in order
#   OUT/fuse-tree/fs/fuse/vqf/   symlinks to SRC/lib/*.[ch] and the DAX
#                                vectors (0001 builds them into fuse.ko)
#   OUT/fuse/fuse_i.h            the fuse_i.h vqfuse.ko is built against:
#                                the patched one, or with BUILTIN=1 (the
#                                kernel's fuse is built in and cannot be
#                                replaced, see kernel/Makefile) the
#                                tarball's own, kept in
#                                OUT/fuse-tree/intree/
#
# Each module of the tree (fuse.ko, and cuse.ko and virtiofs.ko, rebuilt
# because their symbol versions follow the patched fuse_i.h) gets a line
# MODULE_VERSION("vqfuse-VERSION") at the end of its main file.  The stamp
# is not part of the series, which stays as it would be sent upstream.  It
# is what tells the patched modules from the in-tree ones (`modinfo fuse`),
# and what lets DKMS install them: DKMS refuses to replace a module whose
# version equals the kernel's, and neither has one.
#
# The tree is extracted and patched again only when a patch, the tarball
# or this script changed (a stamp holds their checksums), so a rebuild
# does not recompile fuse.ko for nothing.  Nothing is written to SRC.
set -eu

src=$1
out=$2
tarball=$3
topdir=$4
version=${5:-unknown}
series=${6:-$src/kernel/fuse-6.1}
builtin=${7:-0}

tree=$out/fuse-tree
fuse=$tree/fs/fuse
stamp=$tree/stamp

want=$( (ls -l "$tarball"; echo "$version"; echo "$series"; cat "$0" "$series"/*.patch) |
	cksum)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
	rm -rf "$tree"
	mkdir -p "$tree"
	tar -xJf "$tarball" -C "$tree" --strip-components=1 "$topdir/fs/fuse"
	mkdir -p "$tree/intree"
	cp "$fuse/fuse_i.h" "$tree/intree/fuse_i.h"
	for p in "$series"/*.patch; do
		[ -e "$p" ] || continue
		if ! patch -p1 -s -N -d "$tree" --no-backup-if-mismatch \
				<"$p"; then
			echo "vqfuse: $(basename "$p") does not apply to" \
				"$topdir/fs/fuse" >&2
			exit 1
		fi
	done
	# each module's release stamp, appended to its main file
	for f in inode.c cuse.c virtio_fs.c; do
		printf '\n/* vqfuse build (kernel/fuse-tree.sh), not the series */\n%s\n' \
			"MODULE_VERSION(\"vqfuse-$version\");" >>"$fuse/$f"
	done
	echo "$want" >"$stamp"
fi

mkdir -p "$fuse/vqf"
for f in "$src"/lib/*.c "$src"/lib/*.h "$src"/tests/vectors/dax_vectors.h; do
	[ -e "$f" ] && ln -sfn "$f" "$fuse/vqf/$(basename "$f")"
done
find "$fuse/vqf" -maxdepth 1 -type l ! -exec test -e {} \; -delete

# Rewritten only on change: vqfuse.ko's objects depend on it.
mkdir -p "$out/fuse"
hdr=$fuse/fuse_i.h
[ "$builtin" != 1 ] || hdr=$tree/intree/fuse_i.h
if ! cmp -s "$hdr" "$out/fuse/fuse_i.h"; then
	cp "$hdr" "$out/fuse/fuse_i.h"
fi
