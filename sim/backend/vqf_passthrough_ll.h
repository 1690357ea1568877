/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_passthrough_ll.h - libfuse3's example passthrough_ll.c as a backend.
 *
 * The example is compiled from the libfuse3-dev installation into the build
 * folder (it is not part of this repository); this is its only entry point.
 * It proves that an unmodified libfuse3 low-level filesystem plugs into
 * vqf_backend.  It is not hardened: it casts guest nodeids to pointers, so
 * it must only ever serve a trusted guest (the tests).
 */
#ifndef VQF_PASSTHROUGH_LL_H
#define VQF_PASSTHROUGH_LL_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

struct vqf_ptll;

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
