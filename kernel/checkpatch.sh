#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# checkpatch.sh OUTDIR SRCDIR
#
# For every kernel series X.Y with an fs/fuse series kernel/fuse-X.Y/ (6.1,
# 6.12), that series' tarball's scripts/checkpatch.pl runs
#   --no-tree -f over every .c/.h of kernel/ and lib/ (they build for every
#     series, so every series' checkpatch judges them), and
#   --no-tree over kernel/fuse-X.Y/*.patch (what a patch adds, and its
#     message: description, Signed-off-by): a series is checked by the
#     checkpatch of the kernel it is written for.
# checkpatch.pl, spelling.txt and const_structs.checkpatch are extracted
# from /usr/src/linux-source-X.Y.tar.xz into OUTDIR/checkpatch-X.Y once.
#
# Ignored everywhere:
#   ENOSYS  - FUSE's "operation not implemented" reply is ENOSYS by protocol
#             (fs/fuse relies on it, e.g. fc->no_* flags); the check is
#             about syscall return values, which lib/ has none of.
# Ignored per file:
#   lib/vqf_compat.h  MEMORY_BARRIER - it defines the barrier macros for
#                     userspace; "barrier without comment" fires on the
#                     definitions, and every use in lib/ is still checked.
#   kernel/vqfuse_compat.h  LINUX_VERSION_CODE - the one place that tells
#                     the kernel series apart, as an out-of-tree module
#                     must; in-tree code never needs it.
#   kernel/fuse-X.Y/*.patch  FILE_PATH_CHANGES - "does MAINTAINERS need
#                     updating?" for a new file: the series is not sent
#                     upstream with a MAINTAINERS entry.
set -eu

out=$1
src=$2

status=0
for series_dir in "$src"/kernel/fuse-*; do
	[ -d "$series_dir" ] || continue
	ks=${series_dir##*/fuse-}
	tools=$out/checkpatch-$ks
	cp="$tools/checkpatch.pl"
	if [ ! -f "$cp" ]; then
		tarball=/usr/src/linux-source-$ks.tar.xz
		if [ ! -f "$tarball" ]; then
			echo "checkpatch: $tarball missing" \
				"(apt-get install linux-source-$ks)" >&2
			exit 1
		fi
		mkdir -p "$tools.tmp"
		tar -xJf "$tarball" -C "$tools.tmp" --strip-components=2 \
			"linux-source-$ks/scripts/checkpatch.pl" \
			"linux-source-$ks/scripts/spelling.txt" \
			"linux-source-$ks/scripts/const_structs.checkpatch"
		rm -rf "$tools" && mv "$tools.tmp" "$tools"
	fi
	for f in "$src"/kernel/*.c "$src"/kernel/*.h "$src"/lib/*.c \
		 "$src"/lib/*.h; do
		[ -e "$f" ] || continue
		rel=${f#"$src"/}
		extra="--ignore ENOSYS"
		case "$rel" in
		lib/vqf_compat.h) extra="--ignore ENOSYS,MEMORY_BARRIER" ;;
		kernel/vqfuse_compat.h)
			extra="--ignore ENOSYS,LINUX_VERSION_CODE" ;;
		esac
		# shellcheck disable=SC2086
		if ! res=$(cd "$src" && perl "$cp" --no-tree --no-summary \
				--terse --show-types $extra -f "$rel" 2>&1); then
			status=1
		fi
		[ -z "$res" ] || printf '%s (checkpatch %s)\n' "$res" "$ks"
	done
	# Patches by absolute name: given "kernel/fuse-X.Y/...", checkpatch.pl
	# takes every context line of a blank source line for trailing
	# whitespace.
	for f in "$series_dir"/*.patch; do
		[ -e "$f" ] || continue
		if ! res=$(perl "$cp" --no-tree --no-summary --terse \
				--show-types --ignore FILE_PATH_CHANGES "$f" 2>&1); then
			status=1
		fi
		[ -z "$res" ] || printf '%s\n' "$res"
	done
	[ $status -ne 0 ] || echo "checkpatch $ks: kernel/, lib/ and kernel/fuse-$ks/ clean"
done
exit $status
