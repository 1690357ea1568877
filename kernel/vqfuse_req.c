// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_req.c - a fuse_req as virtio-fs buffers, and its reply checked.
 *
 * The request's in args are bounced into one kmalloc'ed argbuf (stack and
 * vmalloc'ed args cannot be mapped), followed by room for the out args; the
 * device-readable and device-writable parts become one scatterlist each in
 * virtio-fs order.  When the device hands the buffer back, the reply is
 * validated before anything is copied out of the argbuf: the device is not
 * trusted.
 */
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include "fuse_i.h"
#include "vqfuse.h"
#include "vqfuse_req.h"

static unsigned int vqf_len_args(unsigned int n, const struct fuse_arg *args)
{
	unsigned int i, len = 0;

	for (i = 0; i < n; i++)
		len += args[i].size;
	return len;
}

static unsigned int vqf_count_pages(const struct fuse_args_pages *ap,
				    unsigned int total)
{
	unsigned int i;

	for (i = 0; i < ap->num_pages && total; i++)
		total -= min(ap->descs[i].length, total);
	return i;
}

unsigned int vqf_req_sg_count(struct fuse_req *req)
{
	struct fuse_args *args = req->args;
	struct fuse_args_pages *ap = container_of(args, typeof(*ap), args);
	unsigned int n = 1;	/* fuse_in_header */

	if (args->in_numargs - args->in_pages)
		n++;
	if (args->in_pages)
		n += vqf_count_pages(ap,
				     args->in_args[args->in_numargs - 1].size);
	if (!test_bit(FR_ISREPLY, &req->flags))
		return n;
	n++;			/* fuse_out_header */
	if (args->out_numargs - args->out_pages)
		n++;
	if (args->out_pages)
		n += vqf_count_pages(ap,
				     args->out_args[args->out_numargs - 1].size);
	return n;
}

int vqf_req_prepare(struct fuse_req *req, gfp_t gfp)
{
	struct fuse_args *args = req->args;
	unsigned int num_in = args->in_numargs - args->in_pages;
	unsigned int num_out = args->out_numargs - args->out_pages;
	struct vqf_kreq *kr;
	unsigned int in_len, out_len, i, off = 0;

	in_len = vqf_len_args(num_in, (struct fuse_arg *)args->in_args);
	out_len = vqf_len_args(num_out, args->out_args);
	kr = kmalloc(sizeof(*kr) + in_len + out_len, gfp);
	if (!kr)
		return -ENOMEM;
	kr->in_len = in_len;
	kr->out_len = out_len;
	kr->used_len = 0;
	for (i = 0; i < num_in; i++) {
		memcpy(kr->buf + off, args->in_args[i].value,
		       args->in_args[i].size);
		off += args->in_args[i].size;
	}
	req->argbuf = kr;
	return 0;
}

void vqf_req_release(struct fuse_req *req)
{
	kfree(req->argbuf);
	req->argbuf = NULL;
}

static unsigned int vqf_sg_pages(struct scatterlist *sg,
				 const struct fuse_args_pages *ap,
				 unsigned int total)
{
	unsigned int i, len;

	for (i = 0; i < ap->num_pages && total; i++) {
		len = min(ap->descs[i].length, total);
		sg_init_table(&sg[i], 1);
		sg_set_page(&sg[i], ap->pages[i], len, ap->descs[i].offset);
		total -= len;
	}
	return i;
}

void vqf_req_fill_sg(struct fuse_req *req, struct scatterlist *sg,
		     unsigned int *out_sgs, unsigned int *in_sgs)
{
	struct fuse_args *args = req->args;
	struct fuse_args_pages *ap = container_of(args, typeof(*ap), args);
	struct vqf_kreq *kr = req->argbuf;
	unsigned int n = 0, out;

	sg_init_one(&sg[n++], &req->in.h, sizeof(req->in.h));
	if (kr->in_len)
		sg_init_one(&sg[n++], kr->buf, kr->in_len);
	if (args->in_pages)
		n += vqf_sg_pages(&sg[n], ap,
				  args->in_args[args->in_numargs - 1].size);
	out = n;
	if (test_bit(FR_ISREPLY, &req->flags)) {
		sg_init_one(&sg[n++], &req->out.h, sizeof(req->out.h));
		if (kr->out_len)
			sg_init_one(&sg[n++], kr->buf + kr->in_len,
				    kr->out_len);
		if (args->out_pages)
			n += vqf_sg_pages(&sg[n], ap,
				args->out_args[args->out_numargs - 1].size);
	}
	*out_sgs = out;
	*in_sgs = n - out;
}

/* Bytes the device may write after fuse_out_header. */
static unsigned int vqf_out_capacity(struct fuse_req *req)
{
	struct fuse_args *args = req->args;
	struct vqf_kreq *kr = req->argbuf;
	unsigned int cap = kr->out_len;

	if (args->out_pages)
		cap += args->out_args[args->out_numargs - 1].size;
	return cap;
}

static int vqf_req_check(struct fuse_req *req)
{
	struct fuse_args *args = req->args;
	struct vqf_kreq *kr = req->argbuf;
	struct fuse_out_header oh;
	unsigned int remaining, off, num_out, i, argsize = 0;

	/* The device may still scribble on out.h: read it once. */
	memcpy(&oh, &req->out.h, sizeof(oh));
	if (kr->used_len < sizeof(oh))
		return VQF_BAD_SHORT;
	if (oh.len != kr->used_len)
		return VQF_BAD_LEN;
	if (oh.len - sizeof(oh) > vqf_out_capacity(req))
		return VQF_BAD_OVERFLOW;
	if (oh.unique != req->in.h.unique)
		return VQF_BAD_UNIQUE;
	if (oh.error > 0 || oh.error < -4095)
		return VQF_BAD_ERROR;
	if (oh.error && oh.len != sizeof(oh))
		return VQF_BAD_ERROR_PAYLOAD;
	req->out.h = oh;
	if (oh.error)
		return 0;

	remaining = oh.len - sizeof(oh);
	num_out = args->out_numargs - args->out_pages;
	off = kr->in_len;
	for (i = 0; i < args->out_numargs; i++) {
		bool last = i == args->out_numargs - 1;

		argsize = args->out_args[i].size;
		if (argsize > remaining) {
			if (!last || !args->out_argvar)
				return VQF_BAD_SHORT_ARG;
			argsize = remaining;
		}
		if (i < num_out) {
			memcpy(args->out_args[i].value, kr->buf + off,
			       argsize);
			off += argsize;
		}
		remaining -= argsize;
	}
	if (remaining)
		return VQF_BAD_LEN;
	if (args->out_argvar)
		args->out_args[args->out_numargs - 1].size = argsize;

	if (args->out_pages && args->page_zeroing) {
		struct fuse_args_pages *ap =
			container_of(args, typeof(*ap), args);
		unsigned int len = args->out_args[args->out_numargs - 1].size;

		for (i = 0; i < ap->num_pages; i++) {
			unsigned int thislen = ap->descs[i].length;

			if (len < thislen) {
				zero_user_segment(ap->pages[i],
						  ap->descs[i].offset + len,
						  ap->descs[i].offset + thislen);
				len = 0;
			} else {
				len -= thislen;
			}
		}
	}
	return 0;
}

int vqf_req_complete(struct fuse_req *req)
{
	int cause = vqf_req_check(req);

	vqf_req_release(req);
	return cause;
}
