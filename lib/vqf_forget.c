// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_forget.c - FORGET / BATCH_FORGET requests (see vqf_forget.h).
 *
 * Seed 005 sent one FORGET per queued entry and dropped it when the ring
 * was full; here entries wait in the caller's queue until a request
 * carrying them has really been added, and queued entries are batched.
 */
#include "vqf_forget.h"

int vqf_forget_queue_init(struct vqf_forget_queue *q,
			  struct fuse_forget_one *slots, u32 cap)
{
	if (!q || !slots || !cap)
		return -EINVAL;
	q->slots = slots;
	q->cap = cap;
	q->head = 0;
	q->count = 0;
	return 0;
}

int vqf_forget_queue_push(struct vqf_forget_queue *q, u64 nodeid,
			  u64 nlookup)
{
	struct fuse_forget_one *e;

	if (!nodeid || !nlookup)
		return -EINVAL;
	if (q->count >= q->cap)
		return -ENOSPC;
	/* head < cap and count < cap, so the sum stays far below 2^32. */
	e = &q->slots[(q->head + q->count) % q->cap];
	e->nodeid = nodeid;
	e->nlookup = nlookup;
	q->count++;
	return 0;
}

u32 vqf_forget_queue_len(const struct vqf_forget_queue *q)
{
	return q->count;
}

int vqf_forget_build_one(struct vqf_forget_req *f, u64 unique, u64 nodeid,
			 u64 nlookup)
{
	if (!nodeid || !nlookup)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	f->ih.len = sizeof(*f);
	f->ih.opcode = FUSE_FORGET;
	f->ih.unique = unique;
	f->ih.nodeid = nodeid;
	f->arg.nlookup = nlookup;
	return 0;
}

u32 vqf_forget_max_batch(u32 max_req)
{
	if (max_req < VQF_FORGET_BATCH_HDR_SIZE)
		return 0;
	return (max_req - VQF_FORGET_BATCH_HDR_SIZE) /
	       sizeof(struct fuse_forget_one);
}

int vqf_forget_build(const struct vqf_forget_queue *q, void *buf, u32 buf_size,
		     u32 max_req, u64 unique, bool batch_ok, u32 *nr)
{
	u32 limit = VQF_MIN(buf_size, max_req);
	const struct fuse_forget_one *head;
	struct fuse_batch_forget_in bin;
	struct fuse_in_header ih;
	u8 *p = buf;
	u32 n, i;

	if (!q || !buf || !nr)
		return -EINVAL;
	*nr = 0;
	if (!q->count)
		return -ENOENT;
	if (limit < VQF_FORGET_ONE_SIZE)
		return -ENOSPC;
	head = &q->slots[q->head];

	n = batch_ok ? VQF_MIN(q->count, vqf_forget_max_batch(limit)) : 1;
	if (n <= 1) {
		struct vqf_forget_req f;

		vqf_forget_build_one(&f, unique, head->nodeid, head->nlookup);
		memcpy(p, &f, sizeof(f));
		*nr = 1;
		return sizeof(f);
	}

	memset(&ih, 0, sizeof(ih));
	ih.len = VQF_FORGET_BATCH_HDR_SIZE + n * sizeof(struct fuse_forget_one);
	ih.opcode = FUSE_BATCH_FORGET;
	ih.unique = unique;
	memset(&bin, 0, sizeof(bin));
	bin.count = n;
	memcpy(p, &ih, sizeof(ih));
	memcpy(p + sizeof(ih), &bin, sizeof(bin));
	p += VQF_FORGET_BATCH_HDR_SIZE;
	for (i = 0; i < n; i++) {
		memcpy(p, &q->slots[(q->head + i) % q->cap],
		       sizeof(struct fuse_forget_one));
		p += sizeof(struct fuse_forget_one);
	}
	*nr = n;
	return ih.len;
}

int vqf_forget_consume(struct vqf_forget_queue *q, u32 n)
{
	if (n > q->count || !q->cap)
		return -EINVAL;
	q->head = (q->head + n) % q->cap;
	q->count -= n;
	return 0;
}
