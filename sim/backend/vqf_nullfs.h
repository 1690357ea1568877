/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_nullfs.h - a libfuse3 low-level filesystem that answers from memory.
 *
 * The third backend beside vqfuse's passthrough and passthrough_ll: it
 * makes no system call, so a round trip through the simulator over it
 * costs the transport alone (client, driver, ring, device, libfuse's
 * session processing, reply).  It is not a filesystem one can use: the
 * root (nodeid 1) is an empty directory and every name looked up or
 * created in it is the same empty regular file (nodeid 2), so an
 * exclusive create fails with EEXIST in the guest's client; FLUSH,
 * RELEASE, FSYNC, UNLINK and RENAME succeed, READ returns no data, WRITE
 * takes every byte, GETXATTR says ENODATA; MKDIR and the rest are
 * ENOSYS.  Enough for a stat loop and an open/read/write/close cycle.
 */
#ifndef VQF_NULLFS_H
#define VQF_NULLFS_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <stdbool.h>

/*
 * For vqf_backend_config.hostile_safe: it keeps no state a request could
 * name wrongly and touches no host file.
 */
#define VQF_NULLFS_HOSTILE_SAFE	true

/* What vqf_backend_new() takes; the userdata is NULL (no state). */
const struct fuse_lowlevel_ops *vqf_nullfs_ops(size_t *op_size);

#endif /* VQF_NULLFS_H */
