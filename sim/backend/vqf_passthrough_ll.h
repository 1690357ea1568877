/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_passthrough_ll.h - libfuse3's example passthrough_ll.c as a backend.
 *
 * The example is compiled from the libfuse3-dev installation into the build
 * folder (it is not part of this repository); this is its only entry point.
 * It proves that a libfuse3 low-level filesystem plugs into vqf_backend.
 *
 * Three of its ops are replaced here (the rest is upstream's): LOOKUP
 * refuses "." and ".." (EPERM); OPEN opens only a regular file (EPERM
 * otherwise, checked on the node's O_PATH descriptor before any open);
 * CREATE never follows a symlink (ELOOP) nor opens an existing FIFO,
 * socket or device node (EPERM): O_CREAT|O_EXCL first, then O_NOFOLLOW |
 * O_NONBLOCK with an fstat() of the descriptor; no open blocks on a FIFO.
 *
 * It is still not hardened (VQF_PTLL_HOSTILE_SAFE is false): it casts
 * guest node ids and directory handles to pointers, so a forged one is
 * memory corruption unless the device's guard (sim/device/vqf_guard.h)
 * stops it first; see docs/guard.md for what remains unaudited.
 */
#ifndef VQF_PASSTHROUGH_LL_H
#define VQF_PASSTHROUGH_LL_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <stdbool.h>

struct vqf_ptll;

/* For vqf_backend_config.hostile_safe: see above and docs/guard.md. */
#define VQF_PTLL_HOSTILE_SAFE	false

/*
 * Serves @source (a directory) with the example's options xattr, flock and
 * timeout=0 (cache=never).  Returns NULL with errno set (ENOMEM, or what
 * open(@source, O_PATH) failed with).
 */
struct vqf_ptll *vqf_ptll_new(const char *source);
void vqf_ptll_free(struct vqf_ptll *p);

/* What vqf_backend_new() takes: ops, their size, and the userdata. */
const struct fuse_lowlevel_ops *vqf_ptll_ops(size_t *op_size);
void *vqf_ptll_userdata(struct vqf_ptll *p);

#endif /* VQF_PASSTHROUGH_LL_H */
