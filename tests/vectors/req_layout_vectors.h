/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * req_layout_vectors.h - descriptor-chain layout cases for vqf_req.
 *
 * Plain C over lib/ (no cmocka, no allocation, no I/O), iterated by
 * tests/unit/req/test_req_layout.c and, through the AREA convention
 * (vqf_req_layout_vectors_count/_name/_run), by the in-kernel KTAP module.
 *
 * Each case gives a request shape and the chain it must become: argbuf
 * size, in_h.len, readable/writable split and the length of every element
 * in order.  The runner also checks what each element points at: headers
 * at the request's own in_h/out_h, linear args at the right argbuf offset,
 * page elements at the right cookie and offset.
 */
#ifndef VQF_REQ_LAYOUT_VECTORS_H
#define VQF_REQ_LAYOUT_VECTORS_H

#include "vqf_req.h"

#define VQF_LV_MAX_SG	40
#define VQF_LV_MAX_PV	36

struct vqf_req_layout_vector {
	const char *name;
	u32 opcode;
	u8 nr_in;		/* linear in args */
	u32 in_size[3];
	u32 in_page_size;	/* 0: no in pages */
	u8 nr_in_pv;
	u32 in_pv_len;
	u32 in_pv_off;
	u8 nr_out;		/* linear out args */
	u32 out_size[3];
	u32 out_page_size;	/* 0: no out pages */
	u8 nr_out_pv;
	u32 out_pv_len;
	u32 out_pv_off;
	bool shared_pv;		/* out pages are the in page array */
	u32 cap;		/* sg capacity given, 0 = VQF_LV_MAX_SG */
	int err;		/* expected from vqf_req_build_sg() */
	u32 argbuf;
	u32 in_len;
	u8 nr_readable;
	u8 nr_writable;
	u32 sg_len[VQF_LV_MAX_SG];
};

static const struct vqf_req_layout_vector vqf_req_layout_vectors[] = {
	{
		.name = "destroy: headers only", .opcode = FUSE_DESTROY,
		.argbuf = 0, .in_len = 40, .nr_readable = 1,
		.nr_writable = 1, .sg_len = { 40, 16 },
	},
	{
		.name = "forget: no writable part", .opcode = FUSE_FORGET,
		.nr_in = 1, .in_size = { 8 }, .argbuf = 8, .in_len = 48,
		.nr_readable = 2, .nr_writable = 0, .sg_len = { 40, 8 },
	},
	{
		.name = "lookup + entryver", .opcode = FUSE_LOOKUP,
		.nr_in = 1, .in_size = { 6 }, .nr_out = 2,
		.out_size = { 128, 16 }, .argbuf = 150, .in_len = 46,
		.nr_readable = 2, .nr_writable = 2,
		.sg_len = { 40, 6, 16, 144 },
	},
	{
		.name = "rename: three in args in one element",
		.opcode = FUSE_RENAME, .nr_in = 3, .in_size = { 8, 4, 5 },
		.argbuf = 17, .in_len = 57, .nr_readable = 2,
		.nr_writable = 1, .sg_len = { 40, 17, 16 },
	},
	{
		.name = "zero-size in arg takes no element",
		.opcode = FUSE_GETATTR, .nr_in = 1, .in_size = { 0 },
		.nr_out = 1, .out_size = { 104 }, .argbuf = 104,
		.in_len = 40, .nr_readable = 1, .nr_writable = 2,
		.sg_len = { 40, 16, 104 },
	},
	{
		.name = "readlink: pages only", .opcode = FUSE_READLINK,
		.out_page_size = 4095, .nr_out_pv = 1, .out_pv_len = 4096,
		.argbuf = 0, .in_len = 40, .nr_readable = 1,
		.nr_writable = 2, .sg_len = { 40, 16, 4095 },
	},
	{
		.name = "read 4 pages at offset 100", .opcode = FUSE_READ,
		.nr_in = 1, .in_size = { 40 }, .out_page_size = 4 * 3996,
		.nr_out_pv = 4, .out_pv_len = 3996, .out_pv_off = 100,
		.argbuf = 40, .in_len = 80, .nr_readable = 2,
		.nr_writable = 5,
		.sg_len = { 40, 40, 16, 3996, 3996, 3996, 3996 },
	},
	{
		.name = "read size ends inside the 2nd desc",
		.opcode = FUSE_READ, .nr_in = 1, .in_size = { 40 },
		.out_page_size = 5000, .nr_out_pv = 4, .out_pv_len = 4096,
		.argbuf = 40, .in_len = 80, .nr_readable = 2,
		.nr_writable = 3, .sg_len = { 40, 40, 16, 4096, 904 },
	},
	{
		.name = "read 32 pages: 35 elements", .opcode = FUSE_READ,
		.nr_in = 1, .in_size = { 40 }, .out_page_size = 32 * 4096,
		.nr_out_pv = 32, .out_pv_len = 4096, .argbuf = 40,
		.in_len = 80, .nr_readable = 2, .nr_writable = 33,
		.sg_len = { 40, 40, 16, 4096, 4096, 4096, 4096, 4096, 4096,
			    4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096,
			    4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096,
			    4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096,
			    4096, 4096 },
	},
	{
		.name = "read 32 pages, capacity 34", .opcode = FUSE_READ,
		.nr_in = 1, .in_size = { 40 }, .out_page_size = 32 * 4096,
		.nr_out_pv = 32, .out_pv_len = 4096, .cap = 34,
		.err = -ENOSPC, .argbuf = 40, .in_len = 80,
	},
	{
		.name = "write 3 pages + write_out", .opcode = FUSE_WRITE,
		.nr_in = 1, .in_size = { 40 }, .in_page_size = 10000,
		.nr_in_pv = 3, .in_pv_len = 4000, .nr_out = 1,
		.out_size = { 8 }, .argbuf = 48, .in_len = 10080,
		.nr_readable = 5, .nr_writable = 2,
		.sg_len = { 40, 40, 4000, 4000, 2000, 16, 8 },
	},
	{
		.name = "ioctl: in and out share pages", .opcode = FUSE_IOCTL,
		.nr_in = 1, .in_size = { 32 }, .in_page_size = 100,
		.nr_in_pv = 2, .in_pv_len = 64, .nr_out = 1,
		.out_size = { 16 }, .out_page_size = 128, .shared_pv = true,
		.argbuf = 48, .in_len = 172, .nr_readable = 4,
		.nr_writable = 4, .sg_len = { 40, 32, 64, 36, 16, 16, 64, 64 },
	},
	{
		.name = "create + ext: 3 in args, 3 out args",
		.opcode = FUSE_CREATE, .nr_in = 3, .in_size = { 16, 2, 32 },
		.nr_out = 3, .out_size = { 128, 16, 16 }, .argbuf = 210,
		.in_len = 90, .nr_readable = 2, .nr_writable = 2,
		.sg_len = { 40, 50, 16, 160 },
	},
	{
		.name = "capacity 1 for a 2-element chain",
		.opcode = FUSE_DESTROY, .cap = 1, .err = -ENOSPC,
		.in_len = 40,
	},
};

#define VQF_REQ_NR_LAYOUT_VECTORS	ARRAY_SIZE(vqf_req_layout_vectors)

/* Memory of one run: static, so the kernel stack stays small. */
struct vqf_req_layout_scratch {
	struct vqf_req req;
	u8 in_val[3][64];
	u8 out_val[3][256];
	u8 argbuf[512];
	u8 page_cookie[VQF_LV_MAX_PV];	/* cookies are addresses in here */
	struct vqf_page_desc in_pv[VQF_LV_MAX_PV];
	struct vqf_page_desc out_pv[VQF_LV_MAX_PV];
	struct vqf_sg sg[VQF_LV_MAX_SG];
	const char *why;
};

static inline int vqf_lv_fail(struct vqf_req_layout_scratch *s,
			      const char *why)
{
	s->why = why;
	return -1;
}

/* Element @e is page desc @d clipped to @len. */
static inline bool vqf_lv_is_page(const struct vqf_sg *e,
				  const struct vqf_page_desc *d, u32 len)
{
	return !e->addr && e->page == d->page && e->offset == d->offset &&
	       e->len == len;
}

/* Checks the page elements from @i on against @pv for @total bytes. */
static inline int vqf_lv_pages(struct vqf_req_layout_scratch *s,
			       unsigned int *i, const struct vqf_page_desc *pv,
			       u32 nr, u32 total, u32 flags)
{
	u32 k;

	for (k = 0; k < nr && total; k++) {
		u32 len = VQF_MIN(pv[k].length, total);

		if (!len)
			continue;
		if (!vqf_lv_is_page(&s->sg[*i], &pv[k], len) ||
		    s->sg[*i].flags != flags)
			return vqf_lv_fail(s, "page element differs");
		(*i)++;
		total -= len;
	}
	return 0;
}

static inline int
vqf_req_layout_vector_run(const struct vqf_req_layout_vector *v,
			  struct vqf_req_layout_scratch *s)
{
	struct vqf_req *req = &s->req;
	struct vqf_sg_counts c;
	unsigned int i, k;
	u32 in_lin = 0, out_lin = 0;
	int n;

	memset(s, 0, sizeof(*s));
	if (v->nr_in > 3 || v->nr_out > 3 || v->nr_in_pv > VQF_LV_MAX_PV ||
	    v->nr_out_pv > VQF_LV_MAX_PV)
		return vqf_lv_fail(s, "vector out of runner limits");
	if (vqf_req_init(req, v->opcode, 3, 0x77))
		return vqf_lv_fail(s, "vqf_req_init failed");
	for (k = 0; k < v->nr_in; k++) {
		if (v->in_size[k] > sizeof(s->in_val[k]))
			return vqf_lv_fail(s, "in arg too large for runner");
		memset(s->in_val[k], 0x10 + k, sizeof(s->in_val[k]));
		vqf_req_add_in(req, s->in_val[k], v->in_size[k]);
		in_lin += v->in_size[k];
	}
	if (v->opcode == FUSE_CREATE && v->nr_in == 3)
		req->in_ext = true;
	for (k = 0; k < v->nr_in_pv; k++) {
		s->in_pv[k].page = &s->page_cookie[k];
		s->in_pv[k].offset = v->in_pv_off;
		s->in_pv[k].length = v->in_pv_len;
	}
	if (v->in_page_size &&
	    vqf_req_set_in_pages(req, s->in_pv, v->nr_in_pv, v->in_page_size))
		return vqf_lv_fail(s, "set_in_pages failed");
	for (k = 0; k < v->nr_out; k++) {
		if (v->out_size[k] > sizeof(s->out_val[k]))
			return vqf_lv_fail(s, "out arg too large for runner");
		vqf_req_add_out(req, s->out_val[k], v->out_size[k]);
		out_lin += v->out_size[k];
	}
	for (k = 0; k < v->nr_out_pv; k++) {
		s->out_pv[k].page = &s->page_cookie[k];
		s->out_pv[k].offset = v->out_pv_off;
		s->out_pv[k].length = v->out_pv_len;
	}
	if (v->out_page_size &&
	    vqf_req_set_out_pages(req,
				  v->shared_pv ? s->in_pv : s->out_pv,
				  v->shared_pv ? v->nr_in_pv : v->nr_out_pv,
				  v->out_page_size, false))
		return vqf_lv_fail(s, "set_out_pages failed");

	if (vqf_req_argbuf_size(req) != v->argbuf)
		return vqf_lv_fail(s, "argbuf size differs");
	if (v->argbuf > sizeof(s->argbuf))
		return vqf_lv_fail(s, "argbuf too large for runner");
	if (vqf_req_to_argbuf(req, s->argbuf, sizeof(s->argbuf)))
		return vqf_lv_fail(s, "to_argbuf failed");
	if (req->in_h.len != v->in_len)
		return vqf_lv_fail(s, "in_h.len differs");
	for (k = 0, i = 0; k < v->nr_in; k++)
		for (n = 0; (u32)n < v->in_size[k]; n++, i++)
			if (s->argbuf[i] != 0x10 + k)
				return vqf_lv_fail(s, "argbuf in part differs");

	n = vqf_req_build_sg(req, s->argbuf, s->sg,
			     v->cap ? v->cap : VQF_LV_MAX_SG, &c);
	if (v->err)
		return n == v->err ? 0 : vqf_lv_fail(s, "expected an error");
	if (n < 0)
		return vqf_lv_fail(s, "build_sg failed");
	if ((unsigned int)n != vqf_req_sg_count(req))
		return vqf_lv_fail(s, "sg count differs from vqf_req_sg_count");
	if (c.nr_readable != v->nr_readable || c.nr_writable != v->nr_writable)
		return vqf_lv_fail(s, "readable/writable split differs");
	for (k = 0; k < (unsigned int)n; k++)
		if (s->sg[k].len != v->sg_len[k])
			return vqf_lv_fail(s, "element length differs");
	if (n < VQF_LV_MAX_SG && v->sg_len[n])
		return vqf_lv_fail(s, "fewer elements than expected");

	/* What the elements point at, in virtio-fs order. */
	i = 0;
	if (s->sg[i].addr != &req->in_h || s->sg[i++].flags)
		return vqf_lv_fail(s, "element 0 is not the in header");
	if (in_lin && (s->sg[i].addr != s->argbuf || s->sg[i++].flags))
		return vqf_lv_fail(s, "in args not at argbuf start");
	if (v->in_page_size &&
	    vqf_lv_pages(s, &i, s->in_pv, v->nr_in_pv, v->in_page_size, 0))
		return -1;
	if (i != c.nr_readable)
		return vqf_lv_fail(s, "readable part has extra elements");
	if (c.nr_writable) {
		if (s->sg[i].addr != &req->out_h ||
		    s->sg[i++].flags != VQF_SG_WRITE)
			return vqf_lv_fail(s, "no out header after in part");
		if (out_lin && (s->sg[i].addr != s->argbuf + in_lin ||
				s->sg[i++].flags != VQF_SG_WRITE))
			return vqf_lv_fail(s, "out args not after in args");
		if (v->out_page_size &&
		    vqf_lv_pages(s, &i, v->shared_pv ? s->in_pv : s->out_pv,
				 v->shared_pv ? v->nr_in_pv : v->nr_out_pv,
				 v->out_page_size, VQF_SG_WRITE))
			return -1;
	}
	if (i != (unsigned int)n)
		return vqf_lv_fail(s, "chain has extra elements");
	return 0;
}

/* The AREA interface (kernel KTAP runner). */
static struct vqf_req_layout_scratch vqf_req_layout_scratch;

static inline unsigned int vqf_req_layout_vectors_count(void)
{
	return VQF_REQ_NR_LAYOUT_VECTORS;
}

static inline const char *vqf_req_layout_vectors_name(unsigned int i)
{
	return i < VQF_REQ_NR_LAYOUT_VECTORS ?
	       vqf_req_layout_vectors[i].name : "?";
}

/* 0 = pass; vqf_req_layout_scratch.why says what failed. */
static inline int vqf_req_layout_vectors_run(unsigned int i)
{
	if (i >= VQF_REQ_NR_LAYOUT_VECTORS)
		return -1;
	return vqf_req_layout_vector_run(&vqf_req_layout_vectors[i],
					 &vqf_req_layout_scratch);
}

#endif /* VQF_REQ_LAYOUT_VECTORS_H */
