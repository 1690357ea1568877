/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vqfuse_req.h - a fuse_req as virtio-fs buffers (vqfuse_req.c).
 *
 * Life of a request: vqf_req_prepare() bounces the in args into
 * req->argbuf; vqf_req_sg_count() sizes and vqf_req_fill_sg() fills the
 * scatterlist; after the device returned the buffer with @used_len bytes
 * written, vqf_req_complete() validates the reply, copies the out args back
 * and frees the argbuf.  vqf_req_release() frees it on a submission error.
 */
#ifndef VQFUSE_REQ_H
#define VQFUSE_REQ_H

#include <linux/types.h>

struct fuse_req;
struct scatterlist;

/* Why a reply was refused: index into vqf_kfs.bad_reply[]. */
enum vqf_bad_reply {
	VQF_BAD_NONE,
	VQF_BAD_SHORT,		/* used len < sizeof(fuse_out_header) */
	VQF_BAD_LEN,		/* out.h.len != used len / != sum of args */
	VQF_BAD_OVERFLOW,	/* more than the out buffers offered */
	VQF_BAD_UNIQUE,		/* out.h.unique != in.h.unique */
	VQF_BAD_ERROR,		/* error outside [-4095, 0] */
	VQF_BAD_ERROR_PAYLOAD,	/* error reply carrying payload */
	VQF_BAD_SHORT_ARG,	/* fixed-size out arg came back short */
	VQF_BAD_NR,
};

/* Per-request state behind req->argbuf. */
struct vqf_kreq {
	unsigned int used_len;	/* device-written bytes (used ring) */
	unsigned int in_len;	/* in args bounced into buf */
	unsigned int out_len;	/* room for out args after them */
	u8 buf[];
};

unsigned int vqf_req_sg_count(struct fuse_req *req);
int vqf_req_prepare(struct fuse_req *req, gfp_t gfp);
void vqf_req_fill_sg(struct fuse_req *req, struct scatterlist *sg,
		     unsigned int *out_sgs, unsigned int *in_sgs);
/* Returns 0, or the enum vqf_bad_reply cause (req->out.h then unchanged). */
int vqf_req_complete(struct fuse_req *req);
void vqf_req_release(struct fuse_req *req);

#endif /* VQFUSE_REQ_H */
