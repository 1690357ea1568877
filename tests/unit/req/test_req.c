// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * lib/vqf_req: descriptor checks, argbuf, sg layout (order, flags, counts,
 * more than 6 elements, capacity), helpers, and a randomized reply test
 * against a simple model of the validation rules.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <cmocka.h>

#include "vqf_req.h"

#define H_IN	((u32)sizeof(struct fuse_in_header))
#define H_OUT	((u32)sizeof(struct fuse_out_header))

static void expect_linear(const struct vqf_sg *e, const void *addr, u32 len,
			  bool w)
{
	assert_ptr_equal(e->addr, addr);
	assert_null(e->page);
	assert_int_equal(e->len, len);
	assert_int_equal(!!(e->flags & VQF_SG_WRITE), w);
}

static void expect_page(const struct vqf_sg *e, const struct vqf_page_desc *d,
			u32 len, bool w)
{
	assert_null(e->addr);
	assert_ptr_equal(e->page, d->page);
	assert_int_equal(e->offset, d->offset);
	assert_int_equal(e->len, len);
	assert_int_equal(!!(e->flags & VQF_SG_WRITE), w);
}

static void test_lookup_layout(void **state)
{
	struct vqf_req req;
	struct fuse_entry_out entry;
	struct fuse_entryver_out ver;
	struct vqf_sg sg[8];
	struct vqf_sg_counts c;
	u8 argbuf[256];

	(void)state;
	assert_int_equal(vqf_req_init_lookup(&req, 77, 1, "hello", 5, &entry,
					     &ver), 0);
	assert_int_equal(vqf_req_check(&req), 0);
	assert_false(req.noreply);
	assert_true(req.out_argvar);
	assert_int_equal(vqf_req_argbuf_size(&req), 6 + 128 + 16);
	assert_int_equal(vqf_req_sg_count(&req), 4);
	assert_int_equal(vqf_req_reply_capacity(&req), H_OUT + 144);
	memset(argbuf, 0xee, sizeof(argbuf));
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)), 0);
	assert_int_equal(req.in_h.len, H_IN + 6);
	assert_int_equal(req.in_h.opcode, FUSE_LOOKUP);
	assert_int_equal(req.in_h.unique, 77);
	assert_int_equal(req.in_h.nodeid, 1);
	assert_memory_equal(argbuf, "hello", 6);
	assert_int_equal(argbuf[6], 0);		/* out part cleared, */
	assert_int_equal(argbuf[6 + 143], 0);
	assert_int_equal(argbuf[6 + 144], 0xee);	/* nothing past it */
	assert_int_equal(vqf_req_build_sg(&req, argbuf, sg, 8, &c), 4);
	assert_int_equal(c.nr_readable, 2);
	assert_int_equal(c.nr_writable, 2);
	expect_linear(&sg[0], &req.in_h, H_IN, false);
	expect_linear(&sg[1], argbuf, 6, false);
	expect_linear(&sg[2], &req.out_h, H_OUT, true);
	expect_linear(&sg[3], argbuf + 6, 144, true);
}

static void test_zero_arg_request(void **state)
{
	struct vqf_req req;
	struct vqf_sg sg[2];
	struct vqf_sg_counts c;
	struct vqf_req_stats st = { 0 };

	(void)state;
	assert_int_equal(vqf_req_init(&req, FUSE_DESTROY, 0, 5), 0);
	assert_int_equal(vqf_req_argbuf_size(&req), 0);
	assert_int_equal(vqf_req_to_argbuf(&req, NULL, 0), 0);
	assert_int_equal(req.in_h.len, H_IN);
	assert_int_equal(vqf_req_build_sg(&req, NULL, sg, 2, &c), 2);
	assert_int_equal(c.nr_readable, 1);
	assert_int_equal(c.nr_writable, 1);
	expect_linear(&sg[0], &req.in_h, H_IN, false);
	expect_linear(&sg[1], &req.out_h, H_OUT, true);
	req.out_h = (struct fuse_out_header){ .len = H_OUT, .unique = 5 };
	assert_int_equal(vqf_req_complete(&req, NULL, H_OUT, NULL, NULL, &st),
			 0);
	assert_int_equal(st.ok, 1);
}

static void test_noreply_layout(void **state)
{
	struct vqf_req req;
	struct fuse_forget_in fi = { .nlookup = 3 };
	struct vqf_sg sg[2];
	struct vqf_sg_counts c;
	u8 argbuf[8];

	(void)state;
	assert_int_equal(vqf_req_init(&req, FUSE_FORGET, 9, 1), 0);
	assert_true(req.noreply);
	assert_int_equal(vqf_req_add_in(&req, &fi, sizeof(fi)), 0);
	assert_int_equal(vqf_req_argbuf_size(&req), 8);
	assert_int_equal(vqf_req_reply_capacity(&req), 0);
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, 8), 0);
	assert_int_equal(vqf_req_build_sg(&req, argbuf, sg, 2, &c), 2);
	assert_int_equal(c.nr_readable, 2);
	assert_int_equal(c.nr_writable, 0);
	/* A reply-less request may not take out args. */
	req.out_numargs = 1;
	req.out_args[0].size = 0;
	assert_int_equal(vqf_req_check(&req), -EINVAL);
}

static u8 pagemem[40][64];

static void test_many_pages(void **state)
{
	struct vqf_page_desc pv[40];
	struct fuse_read_in ri = { .size = 32 * 64 };
	struct vqf_req req;
	struct vqf_sg sg[40];
	struct vqf_sg_counts c;
	u8 argbuf[64];
	unsigned int i;

	(void)state;
	for (i = 0; i < 40; i++)
		pv[i] = (struct vqf_page_desc){ pagemem[i], 0, 64 };
	/* 40 descs offered, but only the 32 that the size reaches count. */
	assert_int_equal(vqf_req_init_read(&req, FUSE_READ, 1, 2, &ri, pv, 40,
					   true), 0);
	assert_int_equal(vqf_req_sg_count(&req), 3 + 32);
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)), 0);
	/* Too small: -ENOSPC and nothing written past the capacity. */
	memset(sg, 0x77, sizeof(sg));
	assert_int_equal(vqf_req_build_sg(&req, argbuf, sg, 34, &c), -ENOSPC);
	for (i = 34; i < 40; i++) {
		const u8 *b = (const u8 *)&sg[i];
		unsigned int j;

		for (j = 0; j < sizeof(sg[i]); j++)
			assert_int_equal(b[j], 0x77);
	}
	assert_int_equal(vqf_req_build_sg(&req, argbuf, sg, 35, &c), 35);
	assert_int_equal(c.nr_readable, 2);
	assert_int_equal(c.nr_writable, 33);
	expect_linear(&sg[1], argbuf, sizeof(ri), false);
	expect_linear(&sg[2], &req.out_h, H_OUT, true);
	for (i = 0; i < 32; i++)
		expect_page(&sg[3 + i], &pv[i], 64, true);
	/* A size ending inside a desc clips that element. */
	ri.size = 100;
	assert_int_equal(vqf_req_init_read(&req, FUSE_READ, 1, 2, &ri, pv, 40,
					   true), 0);
	assert_int_equal(vqf_req_build_sg(&req, argbuf, sg, 40, &c), 5);
	expect_page(&sg[3], &pv[0], 64, true);
	expect_page(&sg[4], &pv[1], 36, true);
}

static void test_write_in_pages(void **state)
{
	struct vqf_page_desc pv[3] = {
		{ pagemem[0], 10, 54 }, { pagemem[1], 0, 0 },
		{ pagemem[2], 0, 64 },
	};
	struct fuse_write_in wi = { .size = 100 };
	struct fuse_write_out wo;
	struct vqf_req req;
	struct vqf_sg sg[8];
	struct vqf_sg_counts c;
	u8 argbuf[64];

	(void)state;
	assert_int_equal(vqf_req_init_write(&req, 3, 4, &wi, pv, 3, &wo), 0);
	/* Zero-length descs take no element. */
	assert_int_equal(vqf_req_sg_count(&req), 6);
	assert_int_equal(vqf_req_argbuf_size(&req), sizeof(wi) + sizeof(wo));
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)), 0);
	assert_int_equal(req.in_h.len, H_IN + sizeof(wi) + 100);
	assert_int_equal(vqf_req_build_sg(&req, argbuf, sg, 8, &c), 6);
	assert_int_equal(c.nr_readable, 4);
	expect_page(&sg[2], &pv[0], 54, false);
	expect_page(&sg[3], &pv[2], 46, false);
	expect_linear(&sg[4], &req.out_h, H_OUT, true);
	expect_linear(&sg[5], argbuf + sizeof(wi), sizeof(wo), true);
	/* Pages that do not reach the size are a caller bug. */
	wi.size = 200;
	vqf_req_init_write(&req, 3, 4, &wi, pv, 3, &wo);
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	assert_int_equal(vqf_req_sg_count(&req), 0);
	assert_int_equal(vqf_req_build_sg(&req, argbuf, sg, 8, &c), -EINVAL);
}

/* Pages-only: READLINK has no in args and its only out arg is in pages. */
static void test_pages_only(void **state)
{
	struct vqf_page_desc pv = { pagemem[5], 0, 64 };
	struct vqf_req req;
	struct vqf_sg sg[4];
	struct vqf_sg_counts c;

	(void)state;
	assert_int_equal(vqf_req_init(&req, FUSE_READLINK, 8, 9), 0);
	assert_int_equal(vqf_req_set_out_pages(&req, &pv, 1, 63, true), 0);
	assert_int_equal(vqf_req_argbuf_size(&req), 0);
	assert_int_equal(vqf_req_to_argbuf(&req, NULL, 0), 0);
	assert_int_equal(vqf_req_build_sg(&req, NULL, sg, 4, &c), 3);
	assert_int_equal(c.nr_readable, 1);
	expect_linear(&sg[1], &req.out_h, H_OUT, true);
	expect_page(&sg[2], &pv, 63, true);
}

/* IOCTL: in and out data share one page array, as Linux does. */
static void test_shared_pages(void **state)
{
	struct vqf_page_desc pv[2] = { { pagemem[6], 0, 64 },
				       { pagemem[7], 0, 64 } };
	struct fuse_ioctl_in ii = { .in_size = 70, .out_size = 128 };
	struct fuse_ioctl_out io;
	struct vqf_req req;
	struct vqf_sg sg[8];
	struct vqf_sg_counts c;
	u8 argbuf[64];

	(void)state;
	assert_int_equal(vqf_req_init(&req, FUSE_IOCTL, 1, 1), 0);
	vqf_req_add_in(&req, &ii, sizeof(ii));
	assert_int_equal(vqf_req_set_in_pages(&req, pv, 2, 70), 0);
	vqf_req_add_out(&req, &io, sizeof(io));
	assert_int_equal(vqf_req_set_out_pages(&req, pv, 2, 128, false), 0);
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)), 0);
	assert_int_equal(vqf_req_build_sg(&req, argbuf, sg, 8, &c), 8);
	assert_int_equal(c.nr_readable, 4);
	assert_int_equal(c.nr_writable, 4);
	expect_page(&sg[3], &pv[1], 6, false);
	expect_linear(&sg[5], argbuf + sizeof(ii), sizeof(io), true);
	expect_page(&sg[7], &pv[1], 64, true);
}

/*
 * An argvar last out arg only where the opcode's reply shape has one:
 * otherwise vqf_req_complete() would take a truncated fixed reply (a LOOKUP
 * with only fuse_entry_out accepted 0 or 24 bytes of it).
 */
/*
 * vqf_req_marshal() is to_argbuf() + build_sg() with one check: the same
 * argbuf, in_h and elements; its own errno for each step that refuses.
 */
static void test_marshal(void **state)
{
	struct fuse_write_in wi = { .size = 32 * 64 };
	struct vqf_page_desc pv[40];
	struct vqf_sg sg[40], sg2[40];
	struct vqf_sg_counts c, c2;
	u8 argbuf[128], argbuf2[128];
	struct fuse_write_out wo;
	struct fuse_attr_out ao;
	struct vqf_req req, req2;
	unsigned int i;

	(void)state;
	for (i = 0; i < 40; i++)
		pv[i] = (struct vqf_page_desc){ pagemem[i], 0, 64 };
	assert_int_equal(vqf_req_init_write(&req, 9, 4, &wi, pv, 40, &wo), 0);
	req2 = req;
	memset(argbuf, 0xee, sizeof(argbuf));
	memset(argbuf2, 0xee, sizeof(argbuf2));
	memset(sg, 0, sizeof(sg));
	memset(sg2, 0, sizeof(sg2));
	assert_int_equal(vqf_req_marshal(&req, argbuf, sizeof(argbuf), sg, 40,
					 &c), 4 + 32);
	assert_int_equal(vqf_req_to_argbuf(&req2, argbuf2, sizeof(argbuf2)), 0);
	assert_int_equal(vqf_req_build_sg(&req2, argbuf2, sg2, 40, &c2),
			 4 + 32);
	assert_memory_equal(&req.in_h, &req2.in_h, sizeof(req.in_h));
	assert_memory_equal(argbuf, argbuf2, sizeof(argbuf));
	assert_int_equal(c.nr_readable, c2.nr_readable);
	assert_int_equal(c.nr_writable, c2.nr_writable);
	assert_int_equal(c.nr_readable, 2 + 32);
	for (i = 0; i < 4 + 32; i++) {
		/* Same layout; linear elements point into each one's copy. */
		assert_int_equal(sg[i].len, sg2[i].len);
		assert_int_equal(sg[i].flags, sg2[i].flags);
		assert_ptr_equal(sg[i].page, sg2[i].page);
	}
	expect_linear(&sg[0], &req.in_h, H_IN, false);
	expect_linear(&sg[1], argbuf, sizeof(wi), false);
	expect_linear(&sg[34], &req.out_h, H_OUT, true);

	/* @sg too small: -ENOSPC, the argbuf is ready for build_sg(). */
	memset(argbuf, 0xee, sizeof(argbuf));
	req.in_h.len = 0;
	assert_int_equal(vqf_req_marshal(&req, argbuf, sizeof(argbuf), sg, 8,
					 &c), -ENOSPC);
	assert_int_equal(req.in_h.len, H_IN + sizeof(wi) + 32 * 64);
	assert_memory_equal(argbuf, &wi, sizeof(wi));
	assert_int_equal(vqf_req_build_sg(&req, argbuf, sg, 40, &c), 4 + 32);

	/* argbuf too small: its own errno, nothing copied. */
	memset(argbuf, 0xee, sizeof(argbuf));
	assert_int_equal(vqf_req_marshal(&req, argbuf, sizeof(wi) - 1, sg, 40,
					 &c), -EMSGSIZE);
	assert_int_equal(argbuf[0], 0xee);

	/* Invalid and argvar-refused requests as vqf_req_to_argbuf(). */
	req.in_numargs = VQF_REQ_MAX_IN + 1;
	assert_int_equal(vqf_req_marshal(&req, argbuf, sizeof(argbuf), sg, 40,
					 &c), -EINVAL);
	vqf_req_init(&req, FUSE_GETATTR, 1, 8);
	vqf_req_add_out(&req, &ao, sizeof(ao));
	req.out_argvar = true;
	assert_int_equal(vqf_req_marshal(&req, argbuf, sizeof(argbuf), sg, 40,
					 &c), -EPROTOTYPE);
	assert_int_equal(argbuf[0], 0xee);
}

static void test_argvar_refused(void **state)
{
	struct fuse_getxattr_in gi = { .size = 0 };
	struct fuse_entry_out entry;
	struct fuse_entryver_out ver;
	struct fuse_getxattr_out go;
	struct fuse_init_out io;
	struct fuse_attr_out ao;
	u8 argbuf[512], val[16];
	struct vqf_req req;

	(void)state;
	/* LOOKUP from the table with one out arg keeps the table's argvar. */
	vqf_req_init(&req, FUSE_LOOKUP, 1, 7);
	vqf_req_add_in(&req, "a", 2);
	vqf_req_add_out(&req, &entry, sizeof(entry));
	assert_true(req.out_argvar);
	memset(argbuf, 0xee, sizeof(argbuf));
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)),
			 -EPROTOTYPE);
	assert_int_equal(req.in_h.len, 0);
	assert_int_equal(argbuf[0], 0xee);
	/* ... and is accepted with the extension the argvar is for. */
	vqf_req_add_out(&req, &ver, sizeof(ver));
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)), 0);

	/* An opcode whose reply has no variable part. */
	vqf_req_init(&req, FUSE_GETATTR, 1, 8);
	vqf_req_add_out(&req, &ao, sizeof(ao));
	req.out_argvar = true;
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)),
			 -EPROTOTYPE);

	/* An xattr size probe: fuse_getxattr_out is fixed. */
	vqf_req_init(&req, FUSE_GETXATTR, 1, 9);
	vqf_req_add_in(&req, &gi, sizeof(gi));
	vqf_req_add_in(&req, "user.x", 7);
	vqf_req_add_out(&req, &go, sizeof(go));
	assert_true(req.out_argvar);
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)),
			 -EPROTOTYPE);
	req.out_argvar = false;
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)), 0);
	/* With a size it is the value, which may come back short. */
	gi.size = sizeof(val);
	vqf_req_init(&req, FUSE_GETXATTR, 1, 10);
	vqf_req_add_in(&req, &gi, sizeof(gi));
	vqf_req_add_in(&req, "user.x", 7);
	vqf_req_add_out(&req, val, sizeof(val));
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)), 0);

	/* An opcode virtio-fs does not carry has no reply shape at all. */
	vqf_req_init(&req, FUSE_GETATTR, 1, 11);
	req.in_h.opcode = FUSE_BMAP;
	vqf_req_add_out(&req, &ao, sizeof(ao));
	req.out_argvar = true;
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)),
			 -EPROTOTYPE);

	/* INIT's argvar (an older server's shorter init_out) stays allowed. */
	vqf_req_init(&req, FUSE_INIT, 0, 12);
	vqf_req_add_out(&req, &io, sizeof(io));
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)), 0);
}

static void test_argbuf_errors(void **state)
{
	struct vqf_req req;
	struct fuse_entry_out e;
	u8 argbuf[16];

	(void)state;
	vqf_req_init_lookup(&req, 1, 1, "x", 1, &e, NULL);
	assert_int_equal(vqf_req_argbuf_size(&req), 2 + 128);
	assert_int_equal(vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf)),
			 -ENOSPC);
	assert_int_equal(vqf_req_to_argbuf(&req, NULL, 500), -EINVAL);
}

/*
 * The device can read the part it is given to write: both ways of filling
 * the argbuf clear it, whatever was there (a reused block's old bytes),
 * and touch nothing past it.
 */
static void test_out_part_cleared(void **state)
{
	struct fuse_getattr_in gi = { .fh = 0x1122334455667788ULL };
	u32 in = sizeof(gi), out = sizeof(struct fuse_attr_out);
	struct fuse_attr_out ao;
	struct vqf_sg sg[8];
	struct vqf_req req;
	u8 argbuf[256];
	unsigned int way, i;

	(void)state;
	for (way = 0; way < 2; way++) {
		vqf_req_init_getattr(&req, 7, 2, &gi, &ao);
		assert_int_equal(vqf_req_argbuf_size(&req), in + out);
		memset(argbuf, 0xa5, sizeof(argbuf));
		if (way)
			assert_int_equal(vqf_req_marshal(&req, argbuf,
							 sizeof(argbuf), sg, 8,
							 NULL), 4);
		else
			assert_int_equal(vqf_req_to_argbuf(&req, argbuf,
							   sizeof(argbuf)), 0);
		assert_memory_equal(argbuf, &gi, in);
		for (i = in; i < in + out; i++)
			assert_int_equal(argbuf[i], 0);
		for (; i < sizeof(argbuf); i++)
			assert_int_equal(argbuf[i], 0xa5);
	}
}

static void test_check_rejects(void **state)
{
	struct vqf_page_desc pv = { pagemem[0], 0, 64 };
	struct vqf_page_desc bad = { NULL, 0, 64 };
	struct vqf_page_desc wrap = { pagemem[0], 0xfffffff0u, 64 };
	struct vqf_req req;
	u8 v[8];

	(void)state;
	assert_int_equal(vqf_req_check(NULL), -EINVAL);
	vqf_req_init(&req, FUSE_GETATTR, 1, 1);
	req.in_numargs = 4;
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	vqf_req_init(&req, FUSE_GETATTR, 1, 1);
	req.out_numargs = 4;
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	vqf_req_init(&req, FUSE_GETATTR, 1, 1);
	req.in_pages = true;		/* no arg to hold the pages */
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	vqf_req_init(&req, FUSE_GETATTR, 1, 1);
	vqf_req_add_in(&req, NULL, 8);	/* NULL value, non-zero size */
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	vqf_req_init(&req, FUSE_GETATTR, 1, 1);
	vqf_req_add_out(&req, v, 8);
	req.page_zeroing = true;	/* zeroing without out pages */
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	vqf_req_init(&req, FUSE_READ, 1, 1);	/* argvar, no out arg */
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	vqf_req_init(&req, FUSE_READ, 1, 1);
	vqf_req_set_out_pages(&req, &bad, 1, 64, false);	/* NULL page */
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	vqf_req_init(&req, FUSE_READ, 1, 1);
	vqf_req_set_out_pages(&req, &wrap, 1, 64, false);	/* wraps */
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	vqf_req_init(&req, FUSE_READ, 1, 1);
	vqf_req_set_out_pages(&req, NULL, 1, 64, false);
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	/* The argbuf size is known before the page descs are. */
	vqf_req_init(&req, FUSE_WRITE, 1, 1);
	vqf_req_add_in(&req, v, 8);
	vqf_req_set_in_pages(&req, NULL, 4, 100);
	vqf_req_add_out(&req, v, 8);
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	assert_int_equal(vqf_req_argbuf_size(&req), 16);
	req.in_numargs = 4;
	assert_int_equal(vqf_req_argbuf_size(&req), 0);
	/* Sizes whose sum leaves u32. */
	vqf_req_init(&req, FUSE_WRITE, 1, 1);
	vqf_req_add_in(&req, v, 0x7fffffff);
	vqf_req_add_in(&req, v, 0x7fffffff);
	vqf_req_add_in(&req, v, 0x7fffffff);
	assert_int_equal(vqf_req_check(&req), -EINVAL);
	assert_int_equal(vqf_req_argbuf_size(&req), 0);
	/* A good one to compare against. */
	vqf_req_init(&req, FUSE_READ, 1, 1);
	vqf_req_set_out_pages(&req, &pv, 1, 64, true);
	assert_int_equal(vqf_req_check(&req), 0);
}

static void test_helpers(void **state)
{
	struct vqf_page_desc pv = { pagemem[0], 0, 64 };
	struct fuse_read_in ri = { .size = 64 };
	struct fuse_entry_out e;
	struct vqf_req req;
	char longname[VQF_FUSE_NAME_MAX + 2];
	u8 v[1];

	(void)state;
	assert_int_equal(vqf_req_init(&req, FUSE_BMAP, 1, 1), -EOPNOTSUPP);
	assert_int_equal(vqf_req_init(&req, 12345, 1, 1), -EOPNOTSUPP);
	memset(longname, 'a', sizeof(longname));
	longname[VQF_FUSE_NAME_MAX + 1] = 0;
	assert_int_equal(vqf_req_init_lookup(&req, 1, 1, longname,
					     VQF_FUSE_NAME_MAX + 1, &e, NULL),
			 -ENAMETOOLONG);
	longname[VQF_FUSE_NAME_MAX] = 0;
	assert_int_equal(vqf_req_init_lookup(&req, 1, 1, longname,
					     VQF_FUSE_NAME_MAX, &e, NULL), 0);
	assert_int_equal(vqf_req_init_lookup(&req, 1, 1, "", 0, &e, NULL),
			 -EINVAL);
	assert_int_equal(vqf_req_init_read(&req, FUSE_WRITE, 1, 1, &ri, &pv,
					   1, false), -EINVAL);
	assert_int_equal(vqf_req_init_read(&req, FUSE_READDIRPLUS, 1, 1, &ri,
					   &pv, 1, false), 0);
	assert_true(req.out_argvar);
	vqf_req_init(&req, FUSE_RENAME, 1, 1);
	assert_int_equal(vqf_req_add_in(&req, v, 1), 0);
	assert_int_equal(vqf_req_add_in(&req, v, 1), 0);
	assert_int_equal(vqf_req_add_in(&req, v, 1), 0);
	assert_int_equal(vqf_req_add_in(&req, v, 1), -E2BIG);
	assert_int_equal(vqf_req_set_in_pages(&req, &pv, 1, 1), -E2BIG);
	vqf_req_init(&req, FUSE_CREATE, 1, 1);
	assert_int_equal(vqf_req_add_out(&req, v, 1), 0);
	assert_int_equal(vqf_req_add_out(&req, v, 1), 0);
	assert_int_equal(vqf_req_add_out(&req, v, 1), 0);
	assert_int_equal(vqf_req_add_out(&req, v, 1), -E2BIG);
	vqf_req_init(&req, FUSE_READ, 1, 1);
	assert_int_equal(vqf_req_set_out_pages(&req, &pv, 1, 1, 0), 0);
	assert_int_equal(vqf_req_set_out_pages(&req, &pv, 1, 1, 0), -EINVAL);
	assert_int_equal(vqf_req_add_out(&req, v, 1), -E2BIG);
}

static void test_complete_caller_bugs(void **state)
{
	struct vqf_page_desc pv = { pagemem[0], 0, 64 };
	struct fuse_read_in ri = { .size = 64 };
	struct vqf_req_stats st = { 0 }, zero = { 0 };
	struct vqf_page_ops noops = { NULL };
	struct vqf_req req;
	u8 argbuf[64];

	(void)state;
	vqf_req_init_read(&req, FUSE_READ, 1, 1, &ri, &pv, 1, true);
	vqf_req_to_argbuf(&req, argbuf, sizeof(argbuf));
	req.out_h = (struct fuse_out_header){ .len = H_OUT, .unique = 1 };
	assert_int_equal(vqf_req_complete(&req, argbuf, H_OUT, NULL, NULL,
					  &st), -EINVAL);
	assert_int_equal(vqf_req_complete(&req, argbuf, H_OUT, &noops, NULL,
					  &st), -EINVAL);
	assert_memory_equal(&st, &zero, sizeof(st));
	assert_int_equal(vqf_req_complete(&req, NULL, H_OUT, NULL, NULL, NULL),
			 -EINVAL);
}

/*
 * Randomized: random shapes and replies, each checked against a model of
 * the rules written independently of lib/ (straight from the header doc).
 */
static u64 rng_state;

static u32 rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (u32)(rng_state >> 11);
}

static u32 pick_len(u32 exact)
{
	switch (rnd() % 8) {
	case 0:
		return rnd() % (exact + 32);
	case 1:
		return exact + 1;
	case 2:
		return exact ? exact - 1 : 0;
	case 3:
		return rnd();
	default:
		return exact;
	}
}

struct model_case {
	u32 nr_out, out_size[3], page_size, used, oh_len;
	bool argvar, pages, zeroing;
	s32 error;
	u64 unique;
};

static int model(const struct model_case *m, u32 *argvar_size)
{
	u32 linear = 0, fixed = 0, offered, payload, i;

	for (i = 0; i < m->nr_out; i++)
		linear += m->out_size[i];
	offered = H_OUT + linear + (m->pages ? m->page_size : 0);
	for (i = 0; i < m->nr_out; i++)
		if (!(m->argvar && !m->pages && i == m->nr_out - 1))
			fixed += m->out_size[i];
	if (m->pages && !m->argvar)
		fixed += m->page_size;
	if (m->used < H_OUT)
		return -ENODATA;
	if (m->used > offered)
		return m->pages ? -EFBIG : -EOVERFLOW;
	if (m->oh_len != m->used)
		return -EBADMSG;
	if (m->unique != 0x55)
		return -ENOMSG;
	if (m->error > 0 || m->error < -4095)
		return -ERANGE;
	payload = m->oh_len - H_OUT;
	if (m->error)
		return payload ? -EPROTO : 0;
	if (payload < fixed)
		return -EREMOTEIO;
	*argvar_size = payload - fixed;
	return 0;
}

static void zero_cb(void *ctx, void *page, u32 off, u32 len)
{
	(*(unsigned int *)ctx)++;
	memset((u8 *)page + off, 0, len);
}

/* @a's linear address in @ra / @aa, moved to the same place in @rb / @ab. */
static const void *moved(const void *a, const struct vqf_req *ra,
			 const u8 *aa, const struct vqf_req *rb, const u8 *ab)
{
	const u8 *p = a;

	if (p >= (const u8 *)ra && p < (const u8 *)(ra + 1))
		return (const u8 *)rb + (p - (const u8 *)ra);
	if (aa && p >= aa && p < aa + 512)
		return ab + (p - aa);
	return NULL;
}

/*
 * vqf_req_marshal() against its definition - vqf_req_to_argbuf() then
 * vqf_req_build_sg(), -ENOSPC of the argbuf renamed -EMSGSIZE - over
 * random requests, most of them broken in some way: the same result,
 * header, argbuf bytes and elements, for every input.
 */
static void test_marshal_model(void **state)
{
	static const u32 ops[] = { FUSE_GETATTR, FUSE_LOOKUP, FUSE_READ,
				   FUSE_WRITE, FUSE_IOCTL, FUSE_FORGET,
				   FUSE_CREATE, FUSE_LISTXATTR };
	static const int outcomes[] = { 0, -EINVAL, -EPROTOTYPE, -EMSGSIZE,
					-ENOSPC };
	unsigned int seen[ARRAY_SIZE(outcomes)] = { 0 };
	const char *seed_env = getenv("VQF_SEED");
	unsigned int iters = getenv("VQF_UNDER_VALGRIND") ? 3000 : 100000;
	static u8 inv[3][48], outv[3][48], pg[5][64];
	static u8 abuf_a[512], abuf_b[512];
	unsigned int it, i;

	(void)state;
	rng_state = seed_env ? strtoull(seed_env, NULL, 0) : 0x3a75a1ULL;
	if (!rng_state)
		rng_state = 1;
	for (i = 0; i < sizeof(inv); i++)
		((u8 *)inv)[i] = (u8)(i * 7);
	for (it = 0; it < iters; it++) {
		struct vqf_page_desc pv_in[5], pv_out[5];
		struct vqf_sg sg_a[12], sg_b[12];
		struct vqf_sg_counts c_a = { 0 }, c_b = { 0 };
		struct vqf_req a, b;
		unsigned int cap = rnd() % 13;
		u8 *argbuf_a = rnd() % 16 ? abuf_a : NULL;
		u8 *argbuf_b = argbuf_a ? abuf_b : NULL;
		u32 asz, need;
		int ra, rb;

		memset(&a, 0, sizeof(a));
		a.in_h.opcode = ops[rnd() % ARRAY_SIZE(ops)];
		a.in_h.unique = it;
		a.in_h.len = rnd();
		a.in_numargs = rnd() % 16 ? rnd() % 4 : 4;
		a.out_numargs = rnd() % 16 ? rnd() % 4 : 4;
		a.in_pages = rnd() % 3 == 0;
		a.out_pages = rnd() % 3 == 0;
		a.noreply = rnd() % 10 == 0;
		a.out_argvar = rnd() % 3 == 0;
		a.page_zeroing = rnd() % 4 == 0;
		a.in_ext = rnd() % 10 == 0;
		for (i = 0; i < 3; i++) {
			a.in_args[i].size = rnd() % 12 ? rnd() % 49 : 8;
			a.in_args[i].value = rnd() % 20 ? inv[i] : NULL;
			a.out_args[i].size = rnd() % 49;
			a.out_args[i].value = rnd() % 20 ? outv[i] : NULL;
		}
		for (i = 0; i < 5; i++) {
			struct vqf_page_desc *d = rnd() % 2 ? &pv_in[i] :
							      &pv_out[i];

			pv_in[i] = (struct vqf_page_desc){ pg[i], rnd() % 64,
							   rnd() % 65 };
			pv_out[i] = (struct vqf_page_desc){ pg[4 - i], 0, 64 };
			if (rnd() % 25 == 0)
				d->page = NULL;
			if (rnd() % 25 == 0)
				d->offset = 0xffffffc0u;
		}
		a.in_pv = rnd() % 12 ? pv_in : NULL;
		a.nr_in_pv = rnd() % 6;
		a.out_pv = rnd() % 12 ? (rnd() % 4 ? pv_out : pv_in) : NULL;
		a.nr_out_pv = rnd() % 6;
		if (a.in_pages && a.in_numargs && a.in_numargs <= 3)
			a.in_args[a.in_numargs - 1].size = rnd() % 200;
		if (a.out_pages && a.out_numargs && a.out_numargs <= 3)
			a.out_args[a.out_numargs - 1].size = rnd() % 330;
		b = a;
		need = vqf_req_argbuf_size(&a);
		asz = rnd() % 4 ? 512 : (need ? need - rnd() % 2 : 0);
		memset(abuf_a, 0xa5, sizeof(abuf_a));
		memset(abuf_b, 0xa5, sizeof(abuf_b));
		memset(sg_a, 0, sizeof(sg_a));
		memset(sg_b, 0, sizeof(sg_b));

		ra = vqf_req_marshal(&a, argbuf_a, asz, cap ? sg_a : NULL, cap,
				     &c_a);
		rb = vqf_req_to_argbuf(&b, argbuf_b, asz);
		if (rb == -ENOSPC)
			rb = -EMSGSIZE;
		else if (!rb)
			rb = vqf_req_build_sg(&b, argbuf_b, cap ? sg_b : NULL,
					      cap, &c_b);
		if (ra != rb)
			fail_msg("iter %u seed %s: marshal %d, two steps %d",
				 it, seed_env ? seed_env : "default", ra, rb);
		for (i = 0; i < ARRAY_SIZE(outcomes); i++)
			seen[i] += ra == outcomes[i] ||
				   (!outcomes[i] && ra > 0);
		assert_memory_equal(&a.in_h, &b.in_h, sizeof(a.in_h));
		assert_memory_equal(abuf_a, abuf_b, sizeof(abuf_a));
		if (ra < 0)
			continue;
		assert_int_equal(c_a.nr_readable, c_b.nr_readable);
		assert_int_equal(c_a.nr_writable, c_b.nr_writable);
		for (i = 0; i < (unsigned int)ra; i++) {
			assert_int_equal(sg_a[i].len, sg_b[i].len);
			assert_int_equal(sg_a[i].flags, sg_b[i].flags);
			assert_int_equal(sg_a[i].offset, sg_b[i].offset);
			assert_ptr_equal(sg_a[i].page, sg_b[i].page);
			if (sg_a[i].addr)
				assert_ptr_equal(moved(sg_a[i].addr, &a,
						       argbuf_a, &b, argbuf_b),
						 sg_b[i].addr);
			else
				assert_null(sg_b[i].addr);
		}
	}
	/* The generator must reach every result, or the test proves little. */
	for (i = 0; i < ARRAY_SIZE(outcomes); i++) {
		print_message("marshal %d: %u\n", outcomes[i], seen[i]);
		assert_true(seen[i] > iters / 200);
	}
}

static void test_randomized_model(void **state)
{
	static const u32 argvar_op[] = { 0, FUSE_READ, FUSE_IOCTL,
					 FUSE_CREATE };
	const char *seed_env = getenv("VQF_SEED");
	unsigned int iters = getenv("VQF_UNDER_VALGRIND") ? 3000 : 60000;
	const struct vqf_page_ops ops = { .zero = zero_cb };
	static u8 outv[3][80], argbuf[512], pg[4][64];
	struct vqf_page_desc pv[4];
	static const int outcomes[] = { 0, -ENODATA, -EOVERFLOW, -EFBIG,
					-EBADMSG, -ENOMSG, -ERANGE, -EPROTO,
					-EREMOTEIO };
	unsigned int seen[ARRAY_SIZE(outcomes)] = { 0 };
	unsigned int it, i, zero_calls;

	(void)state;
	rng_state = seed_env ? strtoull(seed_env, NULL, 0) : 0x5eed1234ULL;
	if (!rng_state)
		rng_state = 1;
	for (i = 0; i < 4; i++)
		pv[i] = (struct vqf_page_desc){ pg[i], 0, 64 };

	for (it = 0; it < iters; it++) {
		struct vqf_req_stats st = { 0 };
		struct model_case m = { 0 };
		struct vqf_req req;
		u32 exp_var = 0, payload, linear = 0;
		int exp, ret;

		m.nr_out = rnd() % 4;
		for (i = 0; i < m.nr_out; i++)
			m.out_size[i] = rnd() % 81;
		m.pages = rnd() % 2;
		m.page_size = m.pages ? rnd() % 257 : 0;
		m.argvar = (m.nr_out || m.pages) && rnd() % 2;
		m.zeroing = m.pages && rnd() % 2;
		if (m.nr_out == 3 && m.pages)
			m.nr_out = 2;
		for (i = 0; i < m.nr_out; i++)
			linear += m.out_size[i];

		/*
		 * complete() is shape-blind; to_argbuf() wants an argvar only
		 * on an opcode whose table lists that many out args.
		 */
		vqf_req_init(&req, m.argvar ? argvar_op[m.nr_out + m.pages] :
			     FUSE_GETATTR, 1, 0x55);
		req.out_argvar = m.argvar;
		for (i = 0; i < m.nr_out; i++)
			vqf_req_add_out(&req, outv[i], m.out_size[i]);
		if (m.pages)
			vqf_req_set_out_pages(&req, pv, 4, m.page_size,
					      m.zeroing);
		assert_int_equal(vqf_req_to_argbuf(&req, argbuf,
						   sizeof(argbuf)), 0);

		m.used = pick_len(H_OUT + linear + m.page_size);
		m.oh_len = rnd() % 4 ? m.used : pick_len(m.used);
		m.unique = rnd() % 16 ? 0x55 : 0x55 ^ (1ULL << (rnd() % 64));
		switch (rnd() % 6) {
		case 0:
			m.error = -(s32)(rnd() % 5000);
			break;
		case 1:
			m.error = (s32)rnd();
			break;
		default:
			m.error = 0;
		}
		/* Device fills argbuf out part and pages with a pattern. */
		for (i = 0; i < sizeof(argbuf); i++)
			argbuf[i] = (u8)(i ^ it);
		memset(pg, 0xcc, sizeof(pg));
		memset(outv, 0xdd, sizeof(outv));
		req.out_h.len = m.oh_len;
		req.out_h.error = m.error;
		req.out_h.unique = m.unique;

		exp = model(&m, &exp_var);
		zero_calls = 0;
		ret = vqf_req_complete(&req, argbuf, m.used, &ops, &zero_calls,
				       &st);
		if (ret != exp)
			fail_msg("iter %u seed %s: got %d, model %d", it,
				 seed_env ? seed_env : "default", ret, exp);
		for (i = 0; i < ARRAY_SIZE(outcomes); i++)
			seen[i] += ret == outcomes[i];
		if (ret) {
			assert_int_equal(req.out_h.error, -EIO);
			assert_int_equal(zero_calls, 0);
			for (i = 0; i < 3; i++)
				assert_int_equal(outv[i][0], 0xdd);
			continue;
		}
		if (m.error) {
			assert_int_equal(st.ok_error, 1);
			continue;
		}
		assert_int_equal(st.ok, 1);
		payload = m.oh_len - H_OUT;
		/* Linear args equal the argbuf bytes that arrived. */
		{
			u32 pos = 0, k;

			for (i = 0; i < m.nr_out; i++) {
				for (k = 0; k < m.out_size[i]; k++) {
					u8 want = pos + k < payload ?
						  argbuf[pos + k] : 0xdd;

					assert_int_equal(outv[i][k], want);
				}
				pos += m.out_size[i];
			}
		}
		if (m.argvar)
			assert_int_equal(req.out_args[req.out_numargs - 1].size,
					 exp_var);
		if (m.zeroing) {
			u32 got = payload - (linear < payload ? linear : payload);
			u32 k;

			for (k = 0; k < 256; k++)
				assert_int_equal(pg[k / 64][k % 64],
						 k < got ? 0xcc : 0);
		} else {
			assert_int_equal(zero_calls, 0);
		}
	}
	/* The generator must reach every rule, or the test proves little. */
	for (i = 0; i < ARRAY_SIZE(outcomes); i++) {
		print_message("outcome %d: %u\n", outcomes[i], seen[i]);
		assert_true(seen[i] > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_layout),
		cmocka_unit_test(test_zero_arg_request),
		cmocka_unit_test(test_noreply_layout),
		cmocka_unit_test(test_many_pages),
		cmocka_unit_test(test_write_in_pages),
		cmocka_unit_test(test_pages_only),
		cmocka_unit_test(test_shared_pages),
		cmocka_unit_test(test_argbuf_errors),
		cmocka_unit_test(test_marshal),
		cmocka_unit_test(test_argvar_refused),
		cmocka_unit_test(test_out_part_cleared),
		cmocka_unit_test(test_check_rejects),
		cmocka_unit_test(test_helpers),
		cmocka_unit_test(test_complete_caller_bugs),
		cmocka_unit_test(test_randomized_model),
		cmocka_unit_test(test_marshal_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
