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

/*
 * Negotiation.  A guest that maps the version table asks for the extension
 * with this bit of fuse_init_in.flags2 (bit 63 of the 64-bit INIT flags,
 * which upstream has not allocated); a device that will append
 * fuse_entryver_out sets it in fuse_init_out.flags2.  Without it in both,
 * no reply carries the extension, so a guest that did not reserve room for
 * it never gets a reply longer than it expects.
 */
#define VQF_FUSE_INIT_SHARED_VERSION	(1U << 31)	/* in flags2 */

/*
 * With the extension negotiated, slot 1 is the root's (FUSE_ROOT_ID): no
 * reply ever names the root, yet every top-level entry needs its version.
 */
#define VQF_VER_ROOT_INDEX	1ULL

/*
 * Request extensions (fuse_in_header.total_extlen): a header whose type is
 * at most this is a fuse_secctx_header and the type its nr_secctx (Linux
 * 6.3's FUSE_MAX_NR_SECCTX; 6.1's headers do not name it).
 */
#define VQF_FUSE_MAX_NR_SECCTX	31

/* The virtio-fs shared memory region id of the table (seed 010). */
#define VQF_VIRTIO_FS_SHMCAP_ID_VERSION	1

#endif /* VQF_FUSE_EXT_H */
