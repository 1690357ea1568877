/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_fuse_ext.h - FUSE wire extensions that upstream never merged.
 *
 * The 2018 virtio-fs RFC (seed 010, "fuse: add shared version support")
 * appends struct fuse_entryver_out to the replies that create or look up a
 * directory entry, so that the guest can find the entry's slot in the
 * shared version table.  It is the last out-arg and variable (argvar): a
 * server that does not know the extension replies without it, and the guest
 * then sees a zero-length last argument and treats the inode as unversioned.
 *
 * Opcodes that carry it: LOOKUP, CREATE, MKNOD, MKDIR, SYMLINK, LINK (see
 * VQF_OPF_ENTRYVER in vqf_fuse_ops.h).
 */
#ifndef VQF_FUSE_EXT_H
#define VQF_FUSE_EXT_H

#include "vqf_compat.h"

/**
 * struct fuse_entryver_out - shared version slot of a directory entry
 * @version_index: index into the device's version table; 0 = unversioned.
 *	Untrusted: whoever uses it bounds it by the table size.
 * @initial_version: version of the inode when the reply was produced.
 */
struct fuse_entryver_out {
	u64 version_index;
	s64 initial_version;
};

#define VQF_FUSE_ENTRYVER_OUT_SIZE	16

#endif /* VQF_FUSE_EXT_H */
