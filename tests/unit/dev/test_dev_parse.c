// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_dev_parse() beyond the vectors: INIT bookkeeping, payload views,
 * a guest rewriting memory after the parse, and randomized mutations of
 * every well-formed vector (fixed seed, VQF_SEED overrides) checked
 * against the parser's contract.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../vectors/dev_vectors.h"

static unsigned int seed_from_env(void)
{
	const char *s = getenv("VQF_SEED");

	return s ? (unsigned int)strtoul(s, NULL, 0) : 0xd0e5;
}

static bool under_valgrind(void)
{
	return getenv("VQF_UNDER_VALGRIND") != NULL;
}

static u8 img[2048];
static struct vqf_dev_req req;

/* Parse a fresh INIT request of @in_size bytes of @in. */
static void parse_init(struct vqf_dev_conn *conn, const struct fuse_init_in *in,
		       u32 in_size)
{
	struct fuse_in_header h = {
		.len = sizeof(h) + in_size, .opcode = FUSE_INIT, .unique = 2,
	};
	struct vqf_dev_seg seg = { img, h.len };

	memcpy(img, &h, sizeof(h));
	memcpy(img + sizeof(h), in, in_size);
	vqf_dev_conn_init(conn);
	assert_int_equal(vqf_dev_parse(conn, &seg, 1, false, &req, NULL), 0);
}

static void init_done(void **state)
{
	struct fuse_init_in in = {
		.major = 7, .minor = 38, .flags = FUSE_INIT_EXT |
		FUSE_SETXATTR_EXT | FUSE_ASYNC_READ, .flags2 = 1,
	};
	struct fuse_init_out out = {
		.major = 7, .minor = 36, .max_write = 65536,
		.flags = FUSE_INIT_EXT | FUSE_SETXATTR_EXT, .flags2 = 1,
	};
	struct vqf_dev_conn conn, before;

	(void)state;
	parse_init(&conn, &in, sizeof(in));
	assert_int_equal(vqf_dev_conn_init_done(&conn, &req, &out,
						sizeof(out)), 0);
	assert_true(conn.initialized);
	assert_int_equal(conn.minor, 36);
	assert_int_equal(conn.max_write, 65536);
	assert_true(conn.flags & FUSE_SETXATTR_EXT);
	assert_false(conn.flags & FUSE_ASYNC_READ);	/* device said no */
	assert_true(conn.flags & FUSE_SECURITY_CTX);	/* flags2 bit 0 */

	/* Raising max_write is refused silently: the device's limit stays. */
	parse_init(&conn, &in, sizeof(in));
	out.max_write = 1 << 30;
	assert_int_equal(vqf_dev_conn_init_done(&conn, &req, &out,
						sizeof(out)), 0);
	assert_int_equal(conn.max_write, VQF_DEV_DEF_MAX_WRITE);

	/* Pre-7.36 guest: 16 bytes, flags2 ignored. */
	parse_init(&conn, &in, 16);
	assert_int_equal(req.arg_size, 16);
	assert_int_equal(req.arg.init.flags2, 0);
	out.max_write = 65536;
	assert_int_equal(vqf_dev_conn_init_done(&conn, &req, &out,
						sizeof(out)), 0);
	assert_false(conn.flags & FUSE_SECURITY_CTX);

	/* Failures leave the connection as it was. */
	parse_init(&conn, &in, sizeof(in));
	before = conn;
	assert_int_equal(vqf_dev_conn_init_done(&conn, &req, &out, 23),
			 -EPROTO);
	out.major = 8;
	assert_int_equal(vqf_dev_conn_init_done(&conn, &req, &out,
						sizeof(out)), -EPROTO);
	out.major = 7;
	out.minor = VQF_DEV_MIN_MINOR - 1;
	assert_int_equal(vqf_dev_conn_init_done(&conn, &req, &out,
						sizeof(out)),
			 -EPROTONOSUPPORT);
	out.minor = 38;
	out.max_write = 4095;
	assert_int_equal(vqf_dev_conn_init_done(&conn, &req, &out,
						sizeof(out)), -ERANGE);
	assert_memory_equal(&conn, &before, sizeof(conn));
	req.in.opcode = FUSE_LOOKUP;
	assert_int_equal(vqf_dev_conn_init_done(&conn, &req, &out,
						sizeof(out)), -EINVAL);
	assert_memory_equal(&conn, &before, sizeof(conn));

	/* Initialised: a second INIT is refused, DESTROY + reset allows it. */
	req.in.opcode = FUSE_INIT;
	out.max_write = 65536;
	assert_int_equal(vqf_dev_conn_init_done(&conn, &req, &out,
						sizeof(out)), 0);
	{
		struct vqf_dev_seg seg = { img, sizeof(struct fuse_in_header) +
					   sizeof(in) };

		assert_int_equal(vqf_dev_parse(&conn, &seg, 1, false, &req,
					       NULL), -EISCONN);
		vqf_dev_conn_init(&conn);
		assert_int_equal(vqf_dev_parse(&conn, &seg, 1, false, &req,
					       NULL), 0);
	}
}

/* A WRITE over five segments; its payload view and segment list. */
static void write_views(void **state)
{
	struct fuse_in_header h = {
		.len = 40 + 40 + 100, .opcode = FUSE_WRITE, .unique = 4,
	};
	struct fuse_write_in w = { .size = 100, .offset = 4096 };
	struct vqf_dev_seg seg[5], out[4];
	struct vqf_dev_conn conn;
	u8 data[100];
	int k;

	(void)state;
	for (k = 0; k < 100; k++)
		img[80 + k] = (u8)k;
	memcpy(img, &h, 40);
	memcpy(img + 40, &w, 40);
	/* header | write_in + 3 bytes | 50 | 0 | 47 */
	seg[0] = (struct vqf_dev_seg){ img, 40 };
	seg[1] = (struct vqf_dev_seg){ img + 40, 43 };
	seg[2] = (struct vqf_dev_seg){ img + 83, 50 };
	seg[3] = (struct vqf_dev_seg){ img + 133, 0 };
	seg[4] = (struct vqf_dev_seg){ img + 133, 47 };
	vqf_dev_conn_init(&conn);
	conn.initialized = true;
	assert_int_equal(vqf_dev_parse(&conn, seg, 5, false, &req, NULL), 0);
	assert_int_equal(req.arg.write.offset, 4096);
	assert_int_equal(req.data.len, 100);

	assert_int_equal(vqf_dev_view_segs(&req.data, out, 4), 3);
	assert_ptr_equal(out[0].base, img + 80);
	assert_int_equal(out[0].len, 3);
	assert_ptr_equal(out[1].base, img + 83);
	assert_int_equal(out[1].len, 50);
	assert_ptr_equal(out[2].base, img + 133);
	assert_int_equal(out[2].len, 47);
	assert_int_equal(vqf_dev_view_segs(&req.data, out, 2), -E2BIG);

	assert_int_equal(vqf_dev_view_copy(&req.data, 0, data, 100), 0);
	for (k = 0; k < 100; k++)
		assert_int_equal(data[k], k);
	assert_int_equal(vqf_dev_view_copy(&req.data, 2, data, 5), 0);
	assert_int_equal(data[0], 2);
	assert_int_equal(vqf_dev_view_copy(&req.data, 96, data, 5), -ERANGE);
	assert_int_equal(vqf_dev_view_copy(&req.data, 0xffffffff, data, 2),
			 -ERANGE);

	/* The empty view. */
	h.len = 80;
	w.size = 0;
	memcpy(img, &h, 40);
	memcpy(img + 40, &w, 40);
	seg[0].len = 80;
	assert_int_equal(vqf_dev_parse(&conn, seg, 1, false, &req, NULL), 0);
	assert_int_equal(vqf_dev_view_segs(&req.data, out, 0), 0);
}

/*
 * After the parse the guest rewrites everything: the names and fixed
 * argument the backend uses are our copies, and a flattened message stays
 * self-consistent (len from the copies, not from guest memory).
 */
static void guest_rewrites_after_parse(void **state)
{
	struct fuse_in_header h = { .len = 40 + 8 + 8, .opcode = FUSE_RENAME,
				    .unique = 6 };
	struct fuse_rename_in r = { .newdir = 5 };
	struct vqf_dev_seg seg = { img, 56 };
	struct vqf_dev_conn conn;
	u8 flat[128];

	(void)state;
	memcpy(img, &h, 40);
	memcpy(img + 40, &r, 8);
	memcpy(img + 48, "old\0new", 8);
	vqf_dev_conn_init(&conn);
	conn.initialized = true;
	assert_int_equal(vqf_dev_parse(&conn, &seg, 1, false, &req, NULL), 0);
	memset(img, 'X', 56);
	assert_string_equal(req.name, "old");
	assert_string_equal(req.name2, "new");
	assert_int_equal(req.arg.rename.newdir, 5);
	assert_int_equal(vqf_dev_flatten(&req, flat, sizeof(flat)), 56);
	assert_int_equal(((struct fuse_in_header *)flat)->len, 56);
	assert_memory_equal(flat + 48, "old\0new", 8);
}

/*
 * The extension block is handed to the server from the guest's memory, so
 * vqf_dev_flatten() checks the copy again: a header the guest rewrote
 * after the parse (size 3: smaller than a header) is -EUCLEAN, and a
 * rewrite that is still well-formed passes as written.
 */
static void guest_rewrites_ext_after_parse(void **state)
{
	struct fuse_in_header h = { .len = 40 + 16 + 2 + 8,
				    .opcode = FUSE_MKNOD, .unique = 7,
				    .total_extlen = 1 };
	struct fuse_mknod_in mk = { .mode = 0100600 };
	struct fuse_secctx_header ext = { .size = 8, .nr_secctx = 0 };
	struct vqf_dev_seg seg = { img, 40 + 16 + 2 + 8 };
	u8 *eb = img + 40 + 16 + 2;
	struct vqf_dev_conn conn;
	u8 flat[128];

	(void)state;
	memcpy(img, &h, 40);
	memcpy(img + 40, &mk, 16);
	memcpy(img + 56, "n", 2);
	memcpy(eb, &ext, 8);
	vqf_dev_conn_init(&conn);
	conn.initialized = true;
	conn.minor = 38;
	assert_int_equal(vqf_dev_parse(&conn, &seg, 1, false, &req, NULL), 0);
	assert_int_equal(req.ext.len, 8);
	assert_int_equal(vqf_dev_flatten(&req, flat, sizeof(flat)), h.len);

	ext.size = 3;
	memcpy(eb, &ext, 8);
	assert_int_equal(vqf_dev_flatten(&req, flat, sizeof(flat)), -EUCLEAN);
	ext.size = 8;
	ext.nr_secctx = 1;	/* one context announced, none in 8 bytes */
	memcpy(eb, &ext, 8);
	assert_int_equal(vqf_dev_flatten(&req, flat, sizeof(flat)), -EUCLEAN);
	ext.nr_secctx = 0;
	memcpy(eb, &ext, 8);
	assert_int_equal(vqf_dev_flatten(&req, flat, sizeof(flat)), h.len);
	assert_memory_equal(flat + h.len - 8, &ext, 8);
}

/* Reasons have names and errnos; out-of-range values are handled. */
static void reasons(void **state)
{
	unsigned int r;

	(void)state;
	for (r = 0; r < VQF_DEV_R_NR; r++) {
		assert_string_not_equal(vqf_dev_reason_name(r), "?");
		assert_int_equal(vqf_dev_reason_errno(r),
				 vqf_dev_vec_parse_errno[r]);
	}
	assert_string_equal(vqf_dev_reason_name(VQF_DEV_R_NR), "?");
	assert_int_equal(vqf_dev_reason_errno(VQF_DEV_R_NR), -EINVAL);
}

static bool errno_documented(int ret)
{
	unsigned int r;

	for (r = 0; r < VQF_DEV_R_NR; r++)
		if (ret == vqf_dev_vec_parse_errno[r])
			return true;
	return false;
}

/*
 * Mutate every well-formed vector at random (bytes flipped, truncated or
 * extended, random splits).  Whatever comes out, the contract holds:
 * a documented errno, exactly one counter, and an accepted request is
 * canonical - flattening it reproduces the mutated bytes exactly.
 */
static void mutations(void **state)
{
	static u8 buf[VQF_DV_IMG], flat[VQF_DV_IMG];
	unsigned int seed = seed_from_env(), iters, it, accepted = 0;
	struct vqf_dev_vec_ctx *c = vqf_dev_vec_ctx();
	struct vqf_dev_seg seg[8];

	(void)state;
	srand(seed);
	iters = under_valgrind() ? 3000 : 60000;
	for (it = 0; it < iters; it++) {
		unsigned int vi = rand() % vqf_dev_vectors_count();
		const struct vqf_dev_vec *v = &vqf_dev_vecs[vi];
		struct vqf_dev_stats st = { 0 };
		u32 total, nseg = 0, off = 0, k, flips;
		u64 sum = 0;
		int ret;

		if (v->reason != VQF_DEV_OK || v->arg_len + v->pay_len > 600)
			continue;
		total = vqf_dev_vec_build(v, vi, c);
		memcpy(buf, c->img, total);
		flips = rand() % 4;
		for (k = 0; k < flips; k++)
			buf[rand() % total] ^= (u8)(1 + rand() % 255);
		switch (rand() % 4) {
		case 0:
			total -= rand() % (total + 1);
			break;
		case 1:
			k = rand() % 16;
			memset(buf + total, rand() % 2 ? 0 : 'a', k);
			total += k;
			break;
		}
		if (rand() % 3 == 0) {	/* keep in.len consistent */
			u32 l = total;

			if (total >= 4)
				memcpy(buf, &l, 4);
		}
		while (off < total || nseg == 0) {
			u32 n = nseg == 7 ? total - off : (u32)(rand() % 64);

			n = VQF_MIN(n, total - off);
			seg[nseg].base = buf + off;
			seg[nseg++].len = n;
			off += n;
			if (nseg == 8)
				break;
		}
		vqf_dev_vec_conn(v, &c->conn);
		ret = vqf_dev_parse(&c->conn, seg, nseg, v->hiprio, &c->req,
				    &st);
		if (!errno_documented(ret))
			print_error("seed %#x it %u: errno %d\n", seed, it, ret);
		assert_true(errno_documented(ret));
		for (k = 0; k < VQF_DEV_R_NR; k++)
			sum += st.reject[k];
		assert_int_equal(sum + st.parsed, 1);
		assert_int_equal(ret, vqf_dev_reason_errno(c->req.reason));
		if (ret)
			continue;
		accepted++;
		assert_int_equal(c->req.in.len, total);
		assert_int_equal(vqf_dev_flatten(&c->req, flat, sizeof(flat)),
				 total);
		if (memcmp(flat, buf, total))
			print_error("seed %#x it %u: flatten differs\n", seed,
				    it);
		assert_memory_equal(flat, buf, total);
	}
	print_message("%u of %u mutations accepted (seed %#x)\n", accepted, iters, seed);
	/* The mutations must not all be rejected, or this proves little. */
	assert_true(accepted > iters / 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_done),
		cmocka_unit_test(write_views),
		cmocka_unit_test(guest_rewrites_after_parse),
		cmocka_unit_test(guest_rewrites_ext_after_parse),
		cmocka_unit_test(reasons),
		cmocka_unit_test(mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
