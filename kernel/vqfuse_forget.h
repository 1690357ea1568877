/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vqfuse_forget.h - FORGET / BATCH_FORGET requests for the hiprio queue.
 */
#ifndef VQFUSE_FORGET_H
#define VQFUSE_FORGET_H

#include <linux/list.h>
#include <linux/types.h>

struct fuse_iqueue;

/* One device-readable buffer: fuse_in_header + args; no reply. */
struct vqf_kforget {
	struct list_head list;	/* on vqf_kvq.queued while the ring is full */
	unsigned int len;
	u8 buf[] __aligned(8);
};

/*
 * Takes the forgets queued on @fiq (as many as one request carries) and
 * returns them as one request, or NULL if none are queued or @fiq is
 * disconnected.  May sleep (allocates with __GFP_NOFAIL).
 */
struct vqf_kforget *vqf_forget_build(struct fuse_iqueue *fiq);

#endif /* VQFUSE_FORGET_H */
