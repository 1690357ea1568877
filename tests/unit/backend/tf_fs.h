/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * tf_fs.h - a temporary shared directory served by one of the two
 * passthrough filesystems through vqf_backend, INIT already done.
 */
#ifndef VQF_TF_FS_H
#define VQF_TF_FS_H

#include "tf.h"
#include "vqf_passthrough.h"

enum tf_kind {
	TF_VQF_PT,		/* vqfuse's passthrough, io_uring if present */
	TF_VQF_PT_PREAD,	/* ...with the pread/pwrite fallback */
	TF_PTLL,		/* libfuse3's example passthrough_ll */
};

struct tf_fs {
	enum tf_kind kind;
	char dir[64];		/* the shared directory */
	char out[64];		/* a sibling: must never be touched */
	int made;		/* bit 0: dir, bit 1: out exist */
	struct vqf_pt *pt;
	void *ptll;
	struct tf t;
};

/* NULL on failure (cmocka setups return -1 then). */
struct tf_fs *tf_fs_new(enum tf_kind kind);
void tf_fs_free(struct tf_fs *f);
/* Host path of @name inside the shared directory (static buffer). */
const char *tf_host(struct tf_fs *f, const char *name);
struct vqf_pt_stats tf_pt_stats(struct tf_fs *f);

#endif /* VQF_TF_FS_H */
