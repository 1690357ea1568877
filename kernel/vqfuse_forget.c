// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_forget.c - forgets queued on the fuse_iqueue as hiprio requests.
 *
 * BATCH_FORGET needs protocol 7.16; before INIT has answered (minor 0) or
 * with a single forget queued, a plain FORGET is sent.
 */
#include <linux/slab.h>
#include "fuse_i.h"
#include "vqfuse_forget.h"

/* 4 KiB of fuse_forget_one: what virtiofsd reads in one element. */
#define VQF_FORGET_BATCH_MAX	254

struct vqf_kforget *vqf_forget_build(struct fuse_iqueue *fiq)
{
	struct fuse_conn *fc = container_of(fiq, struct fuse_conn, iq);
	struct fuse_forget_link *head, *link;
	struct fuse_in_header *ih;
	struct vqf_kforget *f;
	unsigned int count, max, len, i;
	u64 unique;

	spin_lock(&fiq->lock);
	if (!fiq->connected || !fiq->forget_list_head.next) {
		spin_unlock(&fiq->lock);
		return NULL;
	}
	max = fc->minor >= 16 ? VQF_FORGET_BATCH_MAX : 1;
	head = fuse_dequeue_forget(fiq, max, &count);
	unique = fuse_get_unique(fiq);
	spin_unlock(&fiq->lock);

	len = sizeof(*ih);
	if (count == 1)
		len += sizeof(struct fuse_forget_in);
	else
		len += sizeof(struct fuse_batch_forget_in) +
		       count * sizeof(struct fuse_forget_one);
	f = kzalloc(sizeof(*f) + len, GFP_NOFS | __GFP_NOFAIL);
	f->len = len;
	ih = (struct fuse_in_header *)f->buf;
	*ih = (struct fuse_in_header) {
		.len = len,
		.unique = unique,
	};
	if (count == 1) {
		struct fuse_forget_in *arg = (void *)(ih + 1);

		ih->opcode = FUSE_FORGET;
		ih->nodeid = head->forget_one.nodeid;
		arg->nlookup = head->forget_one.nlookup;
	} else {
		struct fuse_batch_forget_in *arg = (void *)(ih + 1);
		struct fuse_forget_one *one = (void *)(arg + 1);

		ih->opcode = FUSE_BATCH_FORGET;
		arg->count = count;
		for (link = head, i = 0; link; link = link->next, i++)
			one[i] = link->forget_one;
	}
	while (head) {
		link = head->next;
		kfree(head);
		head = link;
	}
	return f;
}
