/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vqfuse_req.h - a fuse_req as virtio-fs buffers, through lib/vqf_req.h.
 *
 * Life of a request: vqfk_req_prepare() builds lib's descriptor and bounces
 * the in args into the argbuf behind req->argbuf; vqfk_req_nr_sg() sizes
 * and vqfk_req_fill_sg() fills the scatterlist (vqfk_req_marshal() does
 * all three, with one check of the request); when the device returns the
 * buffer, vqfk_req_set_used() records the used length and vqfk_req_finish()
 * has lib/ validate the reply, copies it out and frees the argbuf.
 * vqfk_req_release() frees it when the request never reached the ring.
 */
#ifndef VQFUSE_REQ_H
#define VQFUSE_REQ_H

#include <linux/types.h>
#include <linux/spinlock.h>

struct fuse_req;
struct scatterlist;
struct vqf_sg;

/*
 * Free request blocks a request queue keeps for its next requests.  Each
 * request needs one block for lib's descriptor, its page descs and the
 * argbuf (device-visible, so never on a stack).  A kmalloc per request
 * costs the allocator's path and, with init_on_alloc (Debian's default),
 * the zeroing of the whole slab object, all of which lib writes or the
 * device fills; under TCG that zeroing alone was a third of what vqfuse.ko
 * cost per GETATTR over virtiofs.ko (docs/kernel.md).  A block back from
 * an ended request is taken as it is: lib writes every byte the device is
 * given, the in args and a cleared out part (an earlier request's page
 * descs, kernel pointers, may lie where this one's out part is).  A
 * request bigger than a block gets its own kmalloc, as before.
 */
#define VQFK_KREQ_BLOCK		512
#define VQFK_KREQ_CACHE_MAX	32

struct vqfk_kreq_cache {
	spinlock_t lock;
	unsigned int nr;		/* blocks on @free */
	void *free;			/* each free block links the next */
	unsigned long allocs;		/* blocks that had to be kmalloc'ed */
};

void vqfk_kreq_cache_init(struct vqfk_kreq_cache *c);
/* Frees the cached blocks; nothing may use @c any more. */
void vqfk_kreq_cache_drain(struct vqfk_kreq_cache *c);

/*
 * In all of what follows, @cache may be NULL: every block is then
 * kmalloc'ed and freed.  A request's block goes back to the @cache given
 * when it ends, which need not be the one it came from.
 */

/* 0, -ENOMEM, or -EINVAL if lib/ refuses the request's shape. */
int vqfk_req_prepare(struct fuse_req *req, struct vqfk_kreq_cache *cache,
		     gfp_t gfp);
unsigned int vqfk_req_nr_sg(struct fuse_req *req);
/*
 * Fills @sg[0..n) (each a one-entry list) using @vsg as lib's scratch,
 * both of @cap entries.  Returns n, or lib's negative errno.
 */
int vqfk_req_fill_sg(struct fuse_req *req, struct vqf_sg *vsg,
		    struct scatterlist *sg, unsigned int cap,
		    unsigned int *out_sgs, unsigned int *in_sgs);
/*
 * At least the elements the request will take, from its arg counts alone
 * (no walk of lib's checks): sizes the arrays for vqfk_req_marshal().
 */
unsigned int vqfk_req_sg_bound(struct fuse_req *req);
/*
 * vqfk_req_prepare() and vqfk_req_fill_sg() in one, @vsg and @sg of @cap
 * entries (vqfk_req_sg_bound() is always enough): returns n; or -ENOMEM,
 * or lib's errno (-ENOSPC if @cap is too small), with nothing kept.
 */
int vqfk_req_marshal(struct fuse_req *req, struct vqfk_kreq_cache *cache,
		     gfp_t gfp, struct vqf_sg *vsg, struct scatterlist *sg,
		     unsigned int cap, unsigned int *out_sgs,
		     unsigned int *in_sgs);
void vqfk_req_set_used(struct fuse_req *req, unsigned int len);
/*
 * 0, or the errno of vqf_req_complete() (see lib/vqf_req.h) for a refused
 * reply; req->out.h.error is then -EIO.  Frees the argbuf either way.
 */
int vqfk_req_finish(struct fuse_req *req, struct vqfk_kreq_cache *cache);
void vqfk_req_release(struct fuse_req *req, struct vqfk_kreq_cache *cache);

#endif /* VQFUSE_REQ_H */
