// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_req.c - a fuse_req handed to lib/vqf_req.h and back.
 *
 * lib/ does the marshalling and the reply validation; this file only
 * translates: struct fuse_args (+ fuse_args_pages) into a struct vqf_req,
 * lib's struct vqf_sg list into scatterlists, and the validated reply back
 * into the fuse_req.  Everything the device may read or write (the headers
 * inside struct vqf_req and the argbuf) sits in one kmalloc'ed block behind
 * req->argbuf, so nothing on a stack or in vmalloc space is ever mapped.
 */
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include "fuse_i.h"
#include "vqfuse_compat.h"
#include "vqf_req.h"
#include "vqfuse_req.h"

/* Per-request state behind req->argbuf. */
struct vqfk_kreq {
	struct vqf_req vr;		/* headers are device-visible */
	u32 used_len;			/* from the used ring, untrusted */
	u32 argbuf_size;
	u8 *argbuf;
	struct vqf_page_desc pv[];	/* then the argbuf */
};

/* Whether @kr fits a cache block (so it was given one, see _alloc()). */
static bool vqfk_kreq_is_block(const struct vqfk_kreq *kr)
{
	return kr->argbuf - (const u8 *)kr + kr->argbuf_size <=
	       VQFK_KREQ_BLOCK;
}

void vqfk_kreq_cache_init(struct vqfk_kreq_cache *c)
{
	spin_lock_init(&c->lock);
	c->nr = 0;
	c->free = NULL;
	c->allocs = 0;
}

void vqfk_kreq_cache_drain(struct vqfk_kreq_cache *c)
{
	void *b;

	while ((b = c->free)) {
		c->free = *(void **)b;
		kfree(b);
	}
	c->nr = 0;
}

static void *vqfk_block_get(struct vqfk_kreq_cache *c, gfp_t gfp)
{
	void *b = NULL;

	if (c) {
		spin_lock(&c->lock);
		b = c->free;
		if (b) {
			c->free = *(void **)b;
			c->nr--;
		} else {
			c->allocs++;
		}
		spin_unlock(&c->lock);
	}
	return b ? b : kmalloc(VQFK_KREQ_BLOCK, gfp);
}

static void vqfk_kreq_free(struct vqfk_kreq *kr, struct vqfk_kreq_cache *c)
{
	if (c && vqfk_kreq_is_block(kr)) {
		spin_lock(&c->lock);
		if (c->nr < VQFK_KREQ_CACHE_MAX) {
			*(void **)kr = c->free;
			c->free = kr;
			c->nr++;
			kr = NULL;
		}
		spin_unlock(&c->lock);
	}
	kfree(kr);
}

static void vqfk_kzero(void *ctx, void *page, u32 offset, u32 len)
{
	zero_user_segment(page, offset, offset + len);
}

static const struct vqf_page_ops vqfk_kpage_ops = {
	.zero = vqfk_kzero,
};

static void vqfk_req_point_pages(struct vqfk_kreq *kr, struct fuse_args *args)
{
	/* IOCTL's in and out data share one page array, as in lib/. */
	kr->vr.in_pv = args->in_pages ? kr->pv : NULL;
	kr->vr.out_pv = args->out_pages ? kr->pv : NULL;
}

/*
 * lib's descriptor, page descs and argbuf for @req in one kmalloc'ed block;
 * the argbuf is not filled yet.
 */
static struct vqfk_kreq *vqfk_req_alloc(struct fuse_req *req,
					struct vqfk_kreq_cache *cache,
					gfp_t gfp)
{
	struct fuse_args *args = req->args;
	struct fuse_args_pages *ap = container_of(args, typeof(*ap), args);
	unsigned int i, npages = 0;
	struct vqfk_kreq *kr;
	struct vqf_req vr;
	size_t head;
	u32 size;

	if (args->in_pages || args->out_pages)
		npages = vqfk_ap_count(ap);

	/*
	 * Filled on the stack first: lib/ sizes the argbuf from counts and
	 * sizes alone, so header, page descs and argbuf come from a single
	 * kmalloc (no krealloc, which moved most requests to a bigger slab).
	 */
	memset(&vr, 0, sizeof(vr));
	vr.in_h = req->in.h;
	vr.in_numargs = args->in_numargs;
	vr.out_numargs = args->out_numargs;
	vr.in_pages = args->in_pages;
	vr.out_pages = args->out_pages;
	vr.noreply = !test_bit(FR_ISREPLY, &req->flags);
	vr.out_argvar = args->out_argvar;
	vr.page_zeroing = args->out_pages && args->page_zeroing;
	for (i = 0; i < args->in_numargs; i++) {
		vr.in_args[i].size = args->in_args[i].size;
		vr.in_args[i].value = args->in_args[i].value;
	}
	for (i = 0; i < args->out_numargs; i++) {
		vr.out_args[i].size = args->out_args[i].size;
		vr.out_args[i].value = args->out_args[i].value;
	}
	/* lib/ checks the page descs against the page arg's size. */
	vr.nr_in_pv = args->in_pages ? npages : 0;
	vr.nr_out_pv = args->out_pages ? npages : 0;

	head = struct_size(kr, pv, npages);
	size = vqf_req_argbuf_size(&vr);
	if (head + size <= VQFK_KREQ_BLOCK)
		kr = vqfk_block_get(cache, gfp);
	else
		kr = kmalloc(head + size, gfp);
	if (!kr)
		return NULL;
	kr->vr = vr;
	for (i = 0; i < npages; i++) {
		struct page *page;

		vqfk_ap_piece(ap, i, &page, &kr->pv[i].offset,
			      &kr->pv[i].length);
		kr->pv[i].page = page;
	}
	vqfk_req_point_pages(kr, args);
	kr->used_len = 0;
	kr->argbuf_size = size;
	kr->argbuf = (u8 *)kr + head;
	return kr;
}

int vqfk_req_prepare(struct fuse_req *req, struct vqfk_kreq_cache *cache,
		     gfp_t gfp)
{
	struct vqfk_kreq *kr = vqfk_req_alloc(req, cache, gfp);
	int ret;

	if (!kr)
		return -ENOMEM;
	ret = vqf_req_to_argbuf(&kr->vr, kr->argbuf, kr->argbuf_size);
	if (ret < 0) {
		vqfk_kreq_free(kr, cache);
		return ret;
	}
	req->argbuf = kr;
	return 0;
}

/* lib's elements as one-entry scatterlists. */
static void vqfk_sg_from_vsg(struct scatterlist *sg, const struct vqf_sg *vsg,
			     int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (vsg[i].addr) {
			sg_init_one(&sg[i], vsg[i].addr, vsg[i].len);
		} else {
			sg_init_table(&sg[i], 1);
			sg_set_page(&sg[i], vsg[i].page, vsg[i].len,
				    vsg[i].offset);
		}
	}
}

unsigned int vqfk_req_sg_bound(struct fuse_req *req)
{
	struct fuse_args *args = req->args;
	struct fuse_args_pages *ap = container_of(args, typeof(*ap), args);
	unsigned int n = 4;

	/* Two headers, two argbuf parts, a page desc per element. */
	if (args->in_pages)
		n += vqfk_ap_count(ap);
	if (args->out_pages)
		n += vqfk_ap_count(ap);
	return n;
}

int vqfk_req_marshal(struct fuse_req *req, struct vqfk_kreq_cache *cache,
		     gfp_t gfp, struct vqf_sg *vsg, struct scatterlist *sg,
		     unsigned int cap, unsigned int *out_sgs,
		     unsigned int *in_sgs)
{
	struct vqfk_kreq *kr = vqfk_req_alloc(req, cache, gfp);
	struct vqf_sg_counts counts;
	int n;

	if (!kr)
		return -ENOMEM;
	n = vqf_req_marshal(&kr->vr, kr->argbuf, kr->argbuf_size, vsg, cap,
			    &counts);
	if (n < 0) {
		vqfk_kreq_free(kr, cache);
		return n;
	}
	req->argbuf = kr;
	vqfk_sg_from_vsg(sg, vsg, n);
	*out_sgs = counts.nr_readable;
	*in_sgs = counts.nr_writable;
	return n;
}

void vqfk_req_release(struct fuse_req *req, struct vqfk_kreq_cache *cache)
{
	struct vqfk_kreq *kr = req->argbuf;

	req->argbuf = NULL;
	if (kr)
		vqfk_kreq_free(kr, cache);
}

unsigned int vqfk_req_nr_sg(struct fuse_req *req)
{
	struct vqfk_kreq *kr = req->argbuf;

	return vqf_req_sg_count(&kr->vr);
}

int vqfk_req_fill_sg(struct fuse_req *req, struct vqf_sg *vsg,
		    struct scatterlist *sg, unsigned int cap,
		    unsigned int *out_sgs, unsigned int *in_sgs)
{
	struct vqfk_kreq *kr = req->argbuf;
	struct vqf_sg_counts counts;
	int n;

	n = vqf_req_build_sg(&kr->vr, kr->argbuf, vsg, cap, &counts);
	if (n < 0)
		return n;
	vqfk_sg_from_vsg(sg, vsg, n);
	*out_sgs = counts.nr_readable;
	*in_sgs = counts.nr_writable;
	return n;
}

void vqfk_req_set_used(struct fuse_req *req, unsigned int len)
{
	struct vqfk_kreq *kr = req->argbuf;

	kr->used_len = len;
}

int vqfk_req_finish(struct fuse_req *req, struct vqfk_kreq_cache *cache)
{
	struct fuse_args *args = req->args;
	struct vqfk_kreq *kr = req->argbuf;
	int ret;

	ret = vqf_req_complete(&kr->vr, kr->argbuf, kr->used_len,
			       &vqfk_kpage_ops, NULL, NULL);
	/* The validated snapshot, or {-EIO} when the reply was refused. */
	req->out.h = kr->vr.out_h;
	if (!ret && args->out_argvar)
		args->out_args[args->out_numargs - 1].size =
			kr->vr.out_args[args->out_numargs - 1].size;
	vqfk_req_release(req, cache);
	return ret;
}
