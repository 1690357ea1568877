#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# checkpatch.sh MAKE KERNELDIR OUTDIR SRCDIR
#
# Runs the 6.1 tarball's scripts/checkpatch.pl --no-tree -f over every
# .c/.h of kernel/ and lib/, and checkpatch.pl --no-tree over the fs/fuse
# series kernel/fuse/*.patch (what a patch adds, and its message:
# description, Signed-off-by).  checkpatch.pl, spelling.txt and
# const_structs.checkpatch are extracted into OUTDIR/checkpatch once.
#
# Ignored everywhere:
#   ENOSYS  - FUSE's "operation not implemented" reply is ENOSYS by protocol
#             (fs/fuse relies on it, e.g. fc->no_* flags); the check is
#             about syscall return values, which lib/ has none of.
# Ignored per file:
#   lib/vqf_compat.h  MEMORY_BARRIER - it defines the barrier macros for
#                     userspace; "barrier without comment" fires on the
#                     definitions, and every use in lib/ is still checked.
#   kernel/fuse/*.patch  FILE_PATH_CHANGES - "does MAINTAINERS need
#                     updating?" for a new file: the series is not sent
#                     upstream with a MAINTAINERS entry.
set -eu

make=$1
kdir=$2
out=$3
src=$4

"$make" -s -C "$kdir" VQF_OUT="$out" checkpatch-tools >/dev/null
cp="$out/checkpatch/checkpatch.pl"

status=0
for f in "$src"/kernel/*.c "$src"/kernel/*.h "$src"/lib/*.c "$src"/lib/*.h; do
	[ -e "$f" ] || continue
	rel=${f#"$src"/}
	extra="--ignore ENOSYS"
	case "$rel" in
	lib/vqf_compat.h) extra="--ignore ENOSYS,MEMORY_BARRIER" ;;
	esac
	# shellcheck disable=SC2086
	if ! res=$(cd "$src" && perl "$cp" --no-tree --no-summary --terse \
			--show-types $extra -f "$rel" 2>&1); then
		status=1
	fi
	[ -z "$res" ] || printf '%s\n' "$res"
done
# Patches by absolute name: given "kernel/fuse/...", checkpatch.pl takes
# every context line of a blank source line for trailing whitespace.
for f in "$src"/kernel/fuse/*.patch; do
	[ -e "$f" ] || continue
	if ! res=$(perl "$cp" --no-tree --no-summary --terse \
			--show-types --ignore FILE_PATH_CHANGES "$f" 2>&1); then
		status=1
	fi
	[ -z "$res" ] || printf '%s\n' "$res"
done
[ $status -eq 0 ] && echo "checkpatch: kernel/, lib/ and kernel/fuse/ clean"
exit $status
