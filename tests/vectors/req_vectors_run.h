/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * req_vectors_run.h - runs one reply-validation vector (req_vectors.h).
 *
 * Shared by the cmocka test (tests/unit/req) and the in-kernel KTAP module:
 * plain C over lib/ and vqf_compat.h only, no allocation, no I/O.  The
 * caller provides the scratch memory (a few KiB: keep it off a kernel
 * stack) and reports the verdict its own way.
 *
 * What one run does:
 *   - builds the request the vector describes (one linear in arg, up to 3
 *     linear out args, optionally an out arg in page descs carved from
 *     scratch "pages" whose cookie is a plain pointer);
 *   - lays it out with vqf_req_build_sg();
 *   - plays the device: writes the vector's out header and a byte pattern
 *     through the writable sg elements in order, as far as they reach;
 *   - calls vqf_req_complete() with the vector's used length;
 *   - checks the return, that exactly the expected counter moved, what
 *     was copied, the argvar size, page zeroing, and that no byte outside
 *     what the reply may touch changed.
 */
#ifndef VQF_REQ_VECTORS_RUN_H
#define VQF_REQ_VECTORS_RUN_H

#include "vqf_req.h"

#define VQF_VEC_ARGBUF		1024
#define VQF_VEC_OUT_MAX		256
#define VQF_VEC_NR_PAGES	4
#define VQF_VEC_PAGE		256
#define VQF_VEC_CANARY		0xa5
#define VQF_VEC_MAX_SG		16

/**
 * struct vqf_req_vector - one reply-validation case
 * @name: shown on failure.
 * @opcode: FUSE opcode (vqf_req_init() must know it).
 * @in_size: bytes of one linear in arg (0 = none).
 * @nr_out: linear out args.
 * @out_size: their sizes.
 * @argvar: last out arg (linear or pages) is variable.
 * @out_page_size: bytes offered in pages as the last out arg, 0 = none.
 * @nr_pages: page descs (each @page_len bytes at @page_off of its page).
 * @page_len: length of each desc.
 * @page_off: offset of each desc inside its page.
 * @zeroing: page_zeroing.
 * @used_len: the used ring len the device reports.
 * @oh_len: out_h.len the device writes.
 * @oh_error: out_h.error the device writes.
 * @unique_delta: added to the request's unique in the reply header.
 * @payload_len: pattern bytes the device writes after the header (clipped
 *	to what the chain offers).
 * @err: expected return of vqf_req_complete().
 * @argvar_size: expected size of the argvar last arg on success.
 */
struct vqf_req_vector {
	const char *name;
	u32 opcode;
	u32 in_size;
	u8 nr_out;
	u32 out_size[3];
	bool argvar;
	u32 out_page_size;
	u8 nr_pages;
	u32 page_len;
	u32 page_off;
	bool zeroing;
	u32 used_len;
	u32 oh_len;
	s32 oh_error;
	s64 unique_delta;
	u32 payload_len;
	int err;
	u32 argvar_size;
};

/* Caller-provided memory of one run. */
struct vqf_req_vec_scratch {
	struct vqf_req req;
	struct vqf_req_stats stats;
	u8 in_val[VQF_VEC_OUT_MAX];
	u8 argbuf[VQF_VEC_ARGBUF];
	u8 out_val[3][VQF_VEC_OUT_MAX];
	u8 pages[VQF_VEC_NR_PAGES][VQF_VEC_PAGE];
	struct vqf_page_desc pv[VQF_VEC_NR_PAGES];
	struct vqf_sg sg[VQF_VEC_MAX_SG];
	const char *why;	/* set on failure */
	int ret;		/* what vqf_req_complete() returned */
};

static inline u8 vqf_vec_pattern(u32 i)
{
	return (u8)(i * 7 + 3);
}

static inline void vqf_vec_zero(void *ctx, void *page, u32 off, u32 len)
{
	(void)ctx;
	memset((u8 *)page + off, 0, len);
}

/* Which stats counter an expected result must move. */
static inline u64 *vqf_vec_counter(struct vqf_req_stats *s,
				   const struct vqf_req_vector *v)
{
	switch (v->err) {
	case 0:
		if (v->opcode == FUSE_FORGET ||
		    v->opcode == FUSE_BATCH_FORGET ||
		    v->opcode == FUSE_INTERRUPT)
			return &s->ok_noreply;
		return v->oh_error ? &s->ok_error : &s->ok;
	case -ENODATA:
		return &s->short_header;
	case -EOVERFLOW:
		return &s->len_overflow;
	case -EFBIG:
		return &s->page_overflow;
	case -EBADMSG:
		return &s->len_mismatch;
	case -ENOMSG:
		return &s->unique_mismatch;
	case -ERANGE:
		return &s->bad_error;
	case -EPROTO:
		return &s->error_payload;
	case -EREMOTEIO:
		return &s->short_fixed_arg;
	}
	return NULL;
}

static inline bool vqf_vec_all(const u8 *p, u32 len, u8 val)
{
	u32 i;

	for (i = 0; i < len; i++)
		if (p[i] != val)
			return false;
	return true;
}

static inline int vqf_vec_fail(struct vqf_req_vec_scratch *s, const char *why)
{
	s->why = why;
	return -1;
}

/* The device side: scatter header + pattern over the writable elements. */
static inline void vqf_vec_device_write(struct vqf_req_vec_scratch *s,
					const struct vqf_req_vector *v,
					unsigned int nr_sg)
{
	struct fuse_out_header oh = {
		.len = v->oh_len,
		.error = v->oh_error,
		.unique = s->req.in_h.unique + v->unique_delta,
	};
	u32 total = sizeof(oh) + v->payload_len, pos = 0;
	unsigned int i;

	for (i = 0; i < nr_sg && pos < total; i++) {
		struct vqf_sg *e = &s->sg[i];
		u8 *dst;
		u32 j;

		if (!(e->flags & VQF_SG_WRITE))
			continue;
		dst = e->addr ? (u8 *)e->addr : (u8 *)e->page + e->offset;
		for (j = 0; j < e->len && pos < total; j++, pos++) {
			if (pos < sizeof(oh))
				dst[j] = ((const u8 *)&oh)[pos];
			else
				dst[j] = vqf_vec_pattern(pos - sizeof(oh));
		}
	}
}

/* Page bytes: pattern from @base for @written bytes, then zero or canary. */
static inline int vqf_vec_check_pages(struct vqf_req_vec_scratch *s,
				      const struct vqf_req_vector *v,
				      u32 written, u32 base)
{
	u32 i, j, pos = 0;

	for (i = 0; i < VQF_VEC_NR_PAGES; i++) {
		for (j = 0; j < VQF_VEC_PAGE; j++) {
			u8 b = s->pages[i][j];
			bool in_desc = i < v->nr_pages && j >= v->page_off &&
				       j < v->page_off + v->page_len;

			if (!in_desc) {
				if (b != VQF_VEC_CANARY)
					return vqf_vec_fail(s, "byte outside page descs changed");
				continue;
			}
			if (pos < written) {
				if (b != vqf_vec_pattern(base + pos))
					return vqf_vec_fail(s, "page data differs");
			} else if (v->zeroing && !v->oh_error) {
				if (b)
					return vqf_vec_fail(s, "page tail not zeroed");
			} else if (b != VQF_VEC_CANARY) {
				return vqf_vec_fail(s, "unwritten page byte changed");
			}
			pos++;
		}
	}
	return 0;
}

/**
 * vqf_req_vector_run() - run one vector
 * @v: the vector.
 * @s: scratch memory; @s->why says what failed.
 *
 * Return: 0 if every check passed, -1 otherwise.
 */
static inline int vqf_req_vector_run(const struct vqf_req_vector *v,
				     struct vqf_req_vec_scratch *s)
{
	const struct vqf_page_ops ops = { .zero = vqf_vec_zero };
	struct vqf_req_stats before;
	struct vqf_req *req = &s->req;
	u32 linear_out = 0, payload, copied, pos, i, page_written;
	int n, ret;
	u64 *ctr;

	memset(s, 0, sizeof(*s));
	memset(s->out_val, VQF_VEC_CANARY, sizeof(s->out_val));
	memset(s->pages, VQF_VEC_CANARY, sizeof(s->pages));
	/* Unlike the canary, so that copying unreceived bytes shows. */
	memset(s->argbuf, 0x5a, sizeof(s->argbuf));
	for (i = 0; i < sizeof(s->in_val); i++)
		s->in_val[i] = (u8)~i;

	if (v->nr_out > 3 || v->nr_pages > VQF_VEC_NR_PAGES ||
	    v->page_off + v->page_len > VQF_VEC_PAGE ||
	    v->in_size > VQF_VEC_OUT_MAX)
		return vqf_vec_fail(s, "vector out of runner limits");
	if (vqf_req_init(req, v->opcode, 1, 0x1000 + v->opcode))
		return vqf_vec_fail(s, "vqf_req_init failed");
	req->out_argvar = v->argvar;
	if (v->in_size && vqf_req_add_in(req, s->in_val, v->in_size))
		return vqf_vec_fail(s, "add_in failed");
	for (i = 0; i < v->nr_out; i++) {
		if (v->out_size[i] > VQF_VEC_OUT_MAX)
			return vqf_vec_fail(s, "out arg too large for runner");
		vqf_req_add_out(req, s->out_val[i], v->out_size[i]);
		linear_out += v->out_size[i];
	}
	for (i = 0; i < v->nr_pages; i++) {
		s->pv[i].page = s->pages[i];
		s->pv[i].offset = v->page_off;
		s->pv[i].length = v->page_len;
	}
	if (v->out_page_size &&
	    vqf_req_set_out_pages(req, s->pv, v->nr_pages, v->out_page_size,
				  v->zeroing))
		return vqf_vec_fail(s, "set_out_pages failed");
	if (vqf_req_argbuf_size(req) > sizeof(s->argbuf))
		return vqf_vec_fail(s, "argbuf too large for runner");
	if (vqf_req_to_argbuf(req, s->argbuf, sizeof(s->argbuf)))
		return vqf_vec_fail(s, "to_argbuf failed");
	n = vqf_req_build_sg(req, s->argbuf, s->sg, VQF_VEC_MAX_SG, NULL);
	if (n <= 0)
		return vqf_vec_fail(s, "build_sg failed");

	vqf_vec_device_write(s, v, n);
	before = s->stats;
	ret = vqf_req_complete(req, s->argbuf, v->used_len, &ops, NULL,
			       &s->stats);
	s->ret = ret;
	if (ret != v->err)
		return vqf_vec_fail(s, "unexpected return");

	/* Exactly one counter moved by one. */
	ctr = vqf_vec_counter(&s->stats, v);
	if (!ctr)
		return vqf_vec_fail(s, "vector expects an undocumented errno");
	(*ctr)--;
	if (memcmp(&before, &s->stats, sizeof(before)))
		return vqf_vec_fail(s, "wrong counter moved");

	if (ret) {
		if (req->out_h.error != -EIO ||
		    req->out_h.unique != req->in_h.unique)
			return vqf_vec_fail(s, "rejected reply not turned into -EIO");
		for (i = 0; i < 3; i++)
			if (!vqf_vec_all(s->out_val[i], VQF_VEC_OUT_MAX,
					 VQF_VEC_CANARY))
				return vqf_vec_fail(s, "out arg written on rejection");
		/* No zeroing: pages hold only what the device wrote. */
		return 0;
	}
	if (req->noreply)
		return 0;
	if (req->out_h.len != v->oh_len || req->out_h.error != v->oh_error)
		return vqf_vec_fail(s, "out_h not the validated snapshot");

	payload = v->oh_error ? 0 : v->oh_len - sizeof(struct fuse_out_header);
	/* Linear out args hold the pattern up to what arrived, canary after. */
	pos = 0;
	for (i = 0; i < v->nr_out; i++) {
		u32 j, sz = v->out_size[i];

		copied = payload > pos ? VQF_MIN(sz, payload - pos) : 0;
		for (j = 0; j < copied; j++)
			if (s->out_val[i][j] != vqf_vec_pattern(pos + j))
				return vqf_vec_fail(s, "out arg data differs");
		if (!vqf_vec_all(s->out_val[i] + copied,
				 VQF_VEC_OUT_MAX - copied, VQF_VEC_CANARY))
			return vqf_vec_fail(s, "out arg written past the reply");
		pos += sz;
	}
	if (!v->out_page_size) {
		for (i = v->nr_out; i < 3; i++)
			if (!vqf_vec_all(s->out_val[i], VQF_VEC_OUT_MAX,
					 VQF_VEC_CANARY))
				return vqf_vec_fail(s, "unused out value written");
	}
	if (v->argvar && !v->oh_error &&
	    req->out_args[req->out_numargs - 1].size != v->argvar_size)
		return vqf_vec_fail(s, "argvar size differs");
	page_written = 0;
	if (v->out_page_size && payload > linear_out)
		page_written = payload - linear_out;
	return vqf_vec_check_pages(s, v, page_written, linear_out);
}

#endif /* VQF_REQ_VECTORS_RUN_H */
