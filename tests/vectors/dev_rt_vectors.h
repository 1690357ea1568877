/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dev_rt_vectors.h - guest -> device -> guest round trip for every opcode
 * of the shared table (vqf_fuse_ops.h), shared by the cmocka test and the
 * in-kernel KTAP module.
 *
 * For each opcode, built from the table alone: the guest fills a vqf_req
 * (fixed args with a byte pattern and consistent count fields, names,
 * payloads - in pages where Linux uses pages -, a request extension where
 * the table allows one, out args likewise), lays
 * it out (argbuf + sg chain); the device maps the readable elements to
 * segments and parses them with vqf_dev_parse(), which must accept and
 * hand back exactly what was sent (fixed copy, names, payload view, and a
 * flattened /dev/fuse message equal to header + in args); the device then
 * replies with a pattern per out arg (the variable last arg short, as
 * argvar allows) into the writable elements, and the guest validates and
 * copies out with vqf_req_complete(), which must deliver the pattern.
 * Vector 2k runs opcode k with a success reply, 2k + 1 with -ENOENT.
 *
 * Kernel-clean like dev_vectors.h: static storage, no libc.
 */
#ifndef VQF_DEV_RT_VECTORS_H
#define VQF_DEV_RT_VECTORS_H

#include "vqf_dev.h"
#include "vqf_req.h"

#define VQF_RT_PAYLOAD	24	/* WRITE/IOCTL/SETXATTR payload bytes */
#define VQF_RT_OFFER	64	/* out data the guest offers (READ size) */
#define VQF_RT_SHORT	10	/* out data the device returns */
#define VQF_RT_ARRAY	2	/* BATCH_FORGET / REMOVEMAPPING entries */
#define VQF_RT_BUF	512

struct vqf_dev_rt_ctx {
	/* guest */
	struct vqf_req req;
	u8 in_fixed[VQF_RT_BUF];
	u8 payload[VQF_RT_BUF];
	u8 ext[24];
	u8 out_buf[VQF_REQ_MAX_OUT][VQF_RT_BUF];
	u8 in_page[2][VQF_RT_BUF];
	u8 out_page[2][VQF_RT_BUF];
	struct vqf_page_desc in_pv[2], out_pv[2];
	u8 argbuf[2048];
	struct vqf_sg sg[16];
	struct vqf_sg_counts counts;
	struct vqf_req_stats rst;
	/* device */
	struct vqf_dev_conn conn;
	struct vqf_dev_req dreq;
	struct vqf_dev_stats dst;
	struct vqf_dev_seg seg[16];
	struct vqf_dev_wseg ws[16];
	struct vqf_dev_piece pc[VQF_REQ_MAX_OUT];
	u8 dev_out[VQF_REQ_MAX_OUT][VQF_RT_BUF];
	u8 flat[2048];
	u8 expect[2048];
	u8 scratch[VQF_RT_BUF];
	int line;
};

static inline struct vqf_dev_rt_ctx *vqf_dev_rt_ctx(void)
{
	static struct vqf_dev_rt_ctx ctx;

	return &ctx;
}

static inline unsigned int vqf_dev_rt_vectors_count(void)
{
	return 2 * vqf_fuse_op_count();
}

/* "LOOKUP" for the success reply, "LOOKUP/enoent" for the error reply. */
static inline const char *vqf_dev_rt_vectors_name(unsigned int i)
{
	static char names[2 * 64][32];
	const struct vqf_fuse_op *op = vqf_fuse_op_at(i / 2);
	u32 n;

	if (!op || i >= ARRAY_SIZE(names))
		return "?";
	if (!(i & 1))
		return op->name;
	if (!names[i][0]) {
		n = VQF_MIN((u32)strlen(op->name), (u32)sizeof(names[i]) - 8);
		memcpy(names[i], op->name, n);
		memcpy(names[i] + n, "/enoent", 8);
	}
	return names[i];
}

#define VQF_RT_CHECK(x) do {						\
	if (!(x)) {							\
		t->line = __LINE__;					\
		return __LINE__;					\
	}								\
} while (0)

static inline void vqf_rt_pattern(u8 *p, u32 n, u32 seed)
{
	u32 k;

	for (k = 0; k < n; k++)
		p[k] = (u8)(seed * 31 + k * 7 + 1);
}

/* Store @val in the count field @sh refers to inside in[0]. */
static inline void vqf_rt_set_count(u8 *in0, const struct vqf_arg_shape *sh,
				    u64 val)
{
	u32 v32 = (u32)val;

	if (sh->count_width == 4)
		memcpy(in0 + sh->count_off, &v32, 4);
	else if (sh->count_width == 8)
		memcpy(in0 + sh->count_off, &val, 8);
}

/* Split @n bytes of @buf over the two page descs (uneven, odd offset). */
static inline void vqf_rt_pages(struct vqf_page_desc *pv, u8 (*pg)[VQF_RT_BUF],
				u32 n)
{
	pv[0].page = pg[0];
	pv[0].offset = 100;
	pv[0].length = n / 3;
	pv[1].page = pg[1];
	pv[1].offset = 0;
	pv[1].length = n - n / 3;
}

/* Guest side: build the request from the table. */
static inline int vqf_rt_build(struct vqf_dev_rt_ctx *t,
			       const struct vqf_fuse_op *op, u64 unique)
{
	static const char name1[] = "name1", name2[] = "name2";
	static const char target[] = "/sym/target";
	u32 fixed = 0, k, n, nnames = 0;
	int ret;

	VQF_RT_CHECK(!vqf_req_init(&t->req, op->opcode, 1, unique));
	for (k = 0; k < op->nr_in; k++) {
		const struct vqf_arg_shape *sh = &op->in[k];

		switch (sh->kind) {
		case VQF_ARG_FIXED:
			fixed = vqf_fuse_op_in_fixed_size(op, 0, true);
			VQF_RT_CHECK(fixed <= VQF_RT_BUF);
			vqf_rt_pattern(t->in_fixed, fixed, op->opcode);
			if (op->opcode == FUSE_INIT) {
				struct fuse_init_in *ii = (void *)t->in_fixed;

				ii->major = FUSE_KERNEL_VERSION;
				ii->minor = FUSE_KERNEL_MINOR_VERSION;
			}
			ret = vqf_req_add_in(&t->req, t->in_fixed, fixed);
			break;
		case VQF_ARG_NAME:
			if (op->opcode == FUSE_SYMLINK && nnames)
				ret = vqf_req_add_in(&t->req, target,
						     sizeof(target));
			else
				ret = vqf_req_add_in(&t->req,
						     nnames ? name2 : name1,
						     sizeof(name1));
			nnames++;
			break;
		case VQF_ARG_PAYLOAD:
		case VQF_ARG_ARRAY:
			n = sh->kind == VQF_ARG_ARRAY ?
			    VQF_RT_ARRAY * sh->size : VQF_RT_PAYLOAD;
			vqf_rt_set_count(t->in_fixed, sh,
					 sh->kind == VQF_ARG_ARRAY ?
					 VQF_RT_ARRAY : n);
			vqf_rt_pattern(t->payload, n, op->opcode + 1);
			if (op->flags & VQF_OPF_IN_PAGES) {
				vqf_rt_pages(t->in_pv, t->in_page, n);
				memcpy(t->in_page[0] + 100, t->payload, n / 3);
				memcpy(t->in_page[1], t->payload + n / 3,
				       n - n / 3);
				ret = vqf_req_set_in_pages(&t->req, t->in_pv,
							   2, n);
			} else {
				ret = vqf_req_add_in(&t->req, t->payload, n);
			}
			break;
		default:
			ret = -EINVAL;
		}
		VQF_RT_CHECK(!ret);
	}
	/*
	 * Opcodes that may carry one get a request extension: one security
	 * context (header, fuse_secctx of a 1-byte value, name "a", value,
	 * padding), the value and padding patterned per opcode.
	 */
	if (op->flags & VQF_OPF_EXT) {
		const struct fuse_secctx_header eh = { 24, 1 };
		const struct fuse_secctx ec = { 1, 0 };

		vqf_rt_pattern(t->ext, sizeof(t->ext), op->opcode + 2);
		memcpy(t->ext, &eh, sizeof(eh));
		memcpy(t->ext + 8, &ec, sizeof(ec));
		memcpy(t->ext + 16, "a", 2);
		VQF_RT_CHECK(!vqf_req_add_in(&t->req, t->ext, sizeof(t->ext)));
		t->req.in_ext = true;
	}
	if (t->req.noreply)
		return 0;
	for (k = 0; k < op->nr_out; k++) {
		const struct vqf_arg_shape *sh = &op->out[k];

		if (sh->kind == VQF_ARG_FIXED) {
			n = k ? sh->size : vqf_fuse_op_out_fixed_size(op, 0);
			ret = vqf_req_add_out(&t->req, t->out_buf[k], n);
		} else {
			if (sh->count_width)
				vqf_rt_set_count(t->in_fixed, sh,
						 VQF_RT_OFFER);
			if (op->flags & VQF_OPF_OUT_PAGES) {
				vqf_rt_pages(t->out_pv, t->out_page,
					     VQF_RT_OFFER);
				ret = vqf_req_set_out_pages(&t->req, t->out_pv,
							    2, VQF_RT_OFFER,
							    false);
			} else {
				ret = vqf_req_add_out(&t->req, t->out_buf[k],
						      VQF_RT_OFFER);
			}
		}
		VQF_RT_CHECK(!ret);
	}
	return 0;
}

/* sg element -> host pointer (the simulator's guest memory map). */
static inline u8 *vqf_rt_sg_ptr(const struct vqf_sg *sg)
{
	return sg->addr ? (u8 *)sg->addr : (u8 *)sg->page + sg->offset;
}

static inline int vqf_dev_rt_vectors_run(unsigned int i)
{
	struct vqf_dev_rt_ctx *t = vqf_dev_rt_ctx();
	const struct vqf_fuse_op *op = vqf_fuse_op_at(i / 2);
	bool err_reply = i & 1;
	u64 unique = 0x9000 + 2 * (u64)i;
	u32 k, n, nr, nw, off, used, npc = 0, flat_len;
	int ret;

	if (!op)
		return __LINE__;
	memset(t, 0, sizeof(*t));
	ret = vqf_rt_build(t, op, unique);
	if (ret)
		return ret;

	/* Lay out. */
	n = vqf_req_argbuf_size(&t->req);
	VQF_RT_CHECK(n <= sizeof(t->argbuf));
	VQF_RT_CHECK(!vqf_req_to_argbuf(&t->req, t->argbuf, n));
	ret = vqf_req_build_sg(&t->req, t->argbuf, t->sg, ARRAY_SIZE(t->sg),
			       &t->counts);
	VQF_RT_CHECK(ret > 0 && (u32)ret == vqf_req_sg_count(&t->req));
	nr = t->counts.nr_readable;
	nw = t->counts.nr_writable;
	VQF_RT_CHECK(nr + nw == (u32)ret);
	VQF_RT_CHECK(t->req.noreply ? nw == 0 : nw > 0);
	for (k = 0; k < nr; k++) {
		VQF_RT_CHECK(!(t->sg[k].flags & VQF_SG_WRITE));
		t->seg[k].base = vqf_rt_sg_ptr(&t->sg[k]);
		t->seg[k].len = t->sg[k].len;
	}
	for (k = 0; k < nw; k++) {
		VQF_RT_CHECK(t->sg[nr + k].flags & VQF_SG_WRITE);
		t->ws[k].base = vqf_rt_sg_ptr(&t->sg[nr + k]);
		t->ws[k].len = t->sg[nr + k].len;
	}

	/* Device: parse. */
	vqf_dev_conn_init(&t->conn);
	t->conn.flags = FUSE_SETXATTR_EXT;
	if (op->opcode != FUSE_INIT) {
		t->conn.initialized = true;
		t->conn.minor = FUSE_KERNEL_MINOR_VERSION;
	}
	ret = vqf_dev_parse(&t->conn, t->seg, nr,
			    !(op->flags & VQF_OPF_REQUEST_Q), &t->dreq,
			    &t->dst);
	VQF_RT_CHECK(ret == 0);
	VQF_RT_CHECK(t->dreq.in.opcode == op->opcode);
	VQF_RT_CHECK(t->dreq.in.unique == unique);
	VQF_RT_CHECK(t->dreq.in.len == t->req.in_h.len);
	VQF_RT_CHECK(t->dreq.noreply == t->req.noreply);

	/* What /dev/fuse would carry: header + every in arg. */
	memcpy(t->expect, &t->req.in_h, sizeof(t->req.in_h));
	off = sizeof(t->req.in_h);
	for (k = 0; k < nr; k++) {
		if (k == 0)
			continue;
		memcpy(t->expect + off, t->seg[k].base, t->seg[k].len);
		off += t->seg[k].len;
	}
	VQF_RT_CHECK(off == t->req.in_h.len);
	flat_len = vqf_dev_flat_len(&t->dreq);
	VQF_RT_CHECK(flat_len == off);
	VQF_RT_CHECK(vqf_dev_flatten(&t->dreq, t->flat, sizeof(t->flat)) ==
		     (int)off);
	VQF_RT_CHECK(!memcmp(t->flat, t->expect, off));
	if (t->dreq.arg_size)
		VQF_RT_CHECK(!memcmp(&t->dreq.arg, t->in_fixed,
				     t->dreq.arg_size));
	VQF_RT_CHECK(t->dreq.ext.len ==
		     ((op->flags & VQF_OPF_EXT) ? sizeof(t->ext) : 0));
	if (t->dreq.ext.len) {
		VQF_RT_CHECK(t->dreq.in.total_extlen == sizeof(t->ext) / 8);
		VQF_RT_CHECK(!vqf_dev_view_copy(&t->dreq.ext, 0, t->scratch,
						sizeof(t->ext)));
		VQF_RT_CHECK(!memcmp(t->scratch, t->ext, sizeof(t->ext)));
	}
	if (t->dreq.data.len) {
		VQF_RT_CHECK(!vqf_dev_view_copy(&t->dreq.data, 0, t->scratch,
						t->dreq.data.len));
		VQF_RT_CHECK(!memcmp(t->scratch, t->payload,
				     t->dreq.data.len));
	}

	/* Device: reply. */
	if (t->req.noreply) {
		VQF_RT_CHECK(vqf_dev_reply_req(&t->dreq, 0, NULL, 0, t->ws, nw,
					       &t->dst) == 0);
		ret = vqf_req_complete(&t->req, t->argbuf, 0, NULL, NULL,
				       &t->rst);
		VQF_RT_CHECK(ret == 0 && t->rst.ok_noreply == 1);
		return 0;
	}
	for (k = 0; k < t->req.out_numargs; k++) {
		u32 size = t->req.out_args[k].size;

		if (t->req.out_argvar && k + 1 == t->req.out_numargs &&
		    op->out[k].kind == VQF_ARG_DATA)
			size = VQF_RT_SHORT;
		vqf_rt_pattern(t->dev_out[k], size, op->opcode + 7 * k + 3);
		t->pc[npc].base = t->dev_out[k];
		t->pc[npc++].len = size;
	}
	if (err_reply)
		ret = vqf_dev_reply_req(&t->dreq, -ENOENT, NULL, 0, t->ws, nw,
					&t->dst);
	else
		ret = vqf_dev_reply_req(&t->dreq, 0, t->pc, npc, t->ws, nw,
					&t->dst);
	VQF_RT_CHECK(ret >= (int)sizeof(struct fuse_out_header));
	used = ret;

	/* Guest: validate and copy out. */
	ret = vqf_req_complete(&t->req, t->argbuf, used, NULL, NULL, &t->rst);
	VQF_RT_CHECK(ret == 0);
	VQF_RT_CHECK(t->req.out_h.unique == unique);
	if (err_reply) {
		VQF_RT_CHECK(t->req.out_h.error == -ENOENT);
		VQF_RT_CHECK(used == sizeof(struct fuse_out_header));
		VQF_RT_CHECK(t->rst.ok_error == 1);
		return 0;
	}
	VQF_RT_CHECK(t->req.out_h.error == 0 && t->rst.ok == 1);
	for (k = 0; k < npc; k++) {
		const u8 *got = t->req.out_args[k].value;

		VQF_RT_CHECK(t->req.out_args[k].size == t->pc[k].len);
		if (t->req.out_pages && k + 1 == t->req.out_numargs) {
			u32 a = VQF_MIN(t->pc[k].len, t->out_pv[0].length);

			VQF_RT_CHECK(!memcmp(t->out_page[0] + 100,
					     t->dev_out[k], a));
			VQF_RT_CHECK(!memcmp(t->out_page[1], t->dev_out[k] + a,
					     t->pc[k].len - a));
		} else {
			VQF_RT_CHECK(!memcmp(got, t->dev_out[k],
					     t->pc[k].len));
		}
	}

	/* INIT: the connection learns the result. */
	if (op->opcode == FUSE_INIT) {
		struct fuse_init_out *io = (void *)t->dev_out[0];

		io->major = 7;
		io->minor = 38;
		io->max_write = 65536;
		VQF_RT_CHECK(!vqf_dev_conn_init_done(&t->conn, &t->dreq, io,
						     sizeof(*io)));
		VQF_RT_CHECK(t->conn.initialized && t->conn.minor == 38 &&
			     t->conn.max_write == 65536);
	}
	return 0;
}

#endif /* VQF_DEV_RT_VECTORS_H */
