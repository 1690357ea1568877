// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Table-driven: for every opcode in vqf_fuse_ops, build a request from the
 * table alone, check it with vqf_req_check_shape(), lay it out, answer it
 * with a full reply and check the copy-out; then break each shape rule
 * once and expect -EINVAL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "vqf_req.h"

#define PAYLOAD_N	5
#define ARRAY_N		2
#define DATA_N		64

struct built {
	struct vqf_req req;
	u8 in0[256];
	u8 payload[64];
	char names[3][8];
	u8 out[3][256];
	u8 argbuf[2048];
	struct vqf_sg sg[16];
};

static void put_count(u8 *in0, const struct vqf_arg_shape *sh, u64 v)
{
	if (sh->count_width == 4) {
		u32 v32 = (u32)v;

		memcpy(in0 + sh->count_off, &v32, 4);
	} else {
		memcpy(in0 + sh->count_off, &v, 8);
	}
}

/* A request that follows the table; names "n0", "n1", ... */
static void build_from_table(struct built *b, const struct vqf_fuse_op *op)
{
	struct vqf_req *req = &b->req;
	unsigned int i;

	memset(b, 0, sizeof(*b));
	assert_int_equal(vqf_req_init(req, op->opcode, 2, 0x100 + op->opcode),
			 0);
	/* Set the count fields first: later args and out bounds use them. */
	for (i = 0; i < op->nr_in; i++) {
		if (op->in[i].kind == VQF_ARG_PAYLOAD)
			put_count(b->in0, &op->in[i], PAYLOAD_N);
		if (op->in[i].kind == VQF_ARG_ARRAY)
			put_count(b->in0, &op->in[i], ARRAY_N);
	}
	for (i = 0; i < op->nr_out; i++)
		if (op->out[i].kind == VQF_ARG_DATA && op->out[i].count_width)
			put_count(b->in0, &op->out[i], DATA_N);
	for (i = 0; i < op->nr_in; i++) {
		const struct vqf_arg_shape *sh = &op->in[i];

		switch (sh->kind) {
		case VQF_ARG_FIXED:
			vqf_req_add_in(req, b->in0, sh->size);
			break;
		case VQF_ARG_NAME:
			b->names[i][0] = 'n';
			b->names[i][1] = '0' + i;
			vqf_req_add_in(req, b->names[i], 3);
			break;
		case VQF_ARG_PAYLOAD:
			vqf_req_add_in(req, b->payload, PAYLOAD_N);
			break;
		case VQF_ARG_ARRAY:
			assert_true(ARRAY_N * sh->size <= sizeof(b->payload));
			vqf_req_add_in(req, b->payload, ARRAY_N * sh->size);
			break;
		default:
			fail_msg("%s: in kind %u", op->name, sh->kind);
		}
	}
	for (i = 0; i < op->nr_out; i++) {
		const struct vqf_arg_shape *sh = &op->out[i];

		vqf_req_add_out(req, b->out[i],
				sh->kind == VQF_ARG_FIXED ? sh->size : DATA_N);
	}
}

static void test_every_op_conforms_and_completes(void **state)
{
	struct built *b = malloc(sizeof(*b));
	unsigned int i, j, n = vqf_fuse_op_count();

	(void)state;
	assert_non_null(b);
	for (i = 0; i < n; i++) {
		const struct vqf_fuse_op *op = vqf_fuse_op_at(i);
		struct vqf_req_stats st = { 0 };
		struct vqf_sg_counts c;
		u32 cap, off;
		int nsg;

		build_from_table(b, op);
		if (vqf_req_check_shape(&b->req, 0, true))
			fail_msg("%s: table-built request rejected", op->name);
		assert_int_equal(vqf_req_to_argbuf(&b->req, b->argbuf,
						   sizeof(b->argbuf)), 0);
		nsg = vqf_req_build_sg(&b->req, b->argbuf, b->sg, 16, &c);
		assert_true(nsg >= 1);
		assert_int_equal(c.nr_writable,
				 (op->flags & VQF_OPF_NOREPLY) ? 0 :
				 1 + (op->nr_out ? 1 : 0));
		if (op->flags & VQF_OPF_NOREPLY) {
			assert_int_equal(vqf_req_complete(&b->req, b->argbuf, 0,
							  NULL, NULL, &st), 0);
			assert_int_equal(st.ok_noreply, 1);
			continue;
		}
		/* Full reply: header + every out arg, pattern bytes. */
		cap = vqf_req_reply_capacity(&b->req);
		off = b->req.in_h.len - sizeof(struct fuse_in_header);
		for (j = 0; j < cap - 16; j++)
			b->argbuf[off + j] = (u8)(j + op->opcode);
		b->req.out_h.len = cap;
		b->req.out_h.error = 0;
		b->req.out_h.unique = b->req.in_h.unique;
		if (vqf_req_complete(&b->req, b->argbuf, cap, NULL, NULL, &st))
			fail_msg("%s: full reply rejected", op->name);
		assert_int_equal(st.ok, 1);
		for (j = 0, off = 0; j < op->nr_out; j++) {
			u32 k;

			for (k = 0; k < b->req.out_args[j].size; k++, off++)
				assert_int_equal(b->out[j][k],
						 (u8)(off + op->opcode));
		}
		/* An error reply for every opcode too. */
		build_from_table(b, op);
		vqf_req_to_argbuf(&b->req, b->argbuf, sizeof(b->argbuf));
		b->req.out_h = (struct fuse_out_header){
			.len = 16, .error = -ENOENT,
			.unique = b->req.in_h.unique };
		assert_int_equal(vqf_req_complete(&b->req, b->argbuf, 16, NULL,
						  NULL, &st), 0);
		assert_int_equal(st.ok_error, 1);
		assert_int_equal(b->req.out_h.error, -ENOENT);
	}
	free(b);
}

/* Every way of breaking the shape, on the opcodes that have the feature. */
static void test_shape_rules(void **state)
{
	struct built *b = malloc(sizeof(*b));
	struct vqf_req *r = &b->req;
	u8 ext[16] = { 0 };

	(void)state;
	assert_non_null(b);
	/* Unknown opcode. */
	build_from_table(b, vqf_fuse_op(FUSE_GETATTR));
	r->in_h.opcode = FUSE_BMAP;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EOPNOTSUPP);
	/* noreply differs from the table. */
	build_from_table(b, vqf_fuse_op(FUSE_GETATTR));
	r->noreply = true;
	r->out_numargs = 0;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	/* Fixed arg of the wrong size; compat sizes by minor. */
	build_from_table(b, vqf_fuse_op(FUSE_GETATTR));
	r->in_args[0].size = 8;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	build_from_table(b, vqf_fuse_op(FUSE_MKNOD));
	r->in_args[0].size = FUSE_COMPAT_MKNOD_IN_SIZE;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	r->out_args[0].size = FUSE_COMPAT_ENTRY_OUT_SIZE;
	assert_int_equal(vqf_req_check_shape(r, 8, true), 0);
	build_from_table(b, vqf_fuse_op(FUSE_SETXATTR));
	assert_int_equal(vqf_req_check_shape(r, 0, false), -EINVAL);
	r->in_args[0].size = FUSE_COMPAT_SETXATTR_IN_SIZE;
	assert_int_equal(vqf_req_check_shape(r, 0, false), 0);
	/* Names: no NUL at the end, inner NUL, empty, too long. */
	build_from_table(b, vqf_fuse_op(FUSE_LOOKUP));
	r->in_args[0].size = 2;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	build_from_table(b, vqf_fuse_op(FUSE_LOOKUP));
	r->in_args[0].size = 4;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	build_from_table(b, vqf_fuse_op(FUSE_LOOKUP));
	r->in_args[0].size = 1;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	/* Path components: no '/', but ".." is a legal lookup. */
	build_from_table(b, vqf_fuse_op(FUSE_LOOKUP));
	r->in_args[0].value = "a/b";
	r->in_args[0].size = 4;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	r->in_args[0].value = "..";
	r->in_args[0].size = 3;
	assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
	/* A symlink target and an xattr name may hold '/'. */
	build_from_table(b, vqf_fuse_op(FUSE_SYMLINK));
	r->in_args[1].value = "/etc/x";
	r->in_args[1].size = 7;
	assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
	r->in_args[0].value = "/etc/x";
	r->in_args[0].size = 7;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	build_from_table(b, vqf_fuse_op(FUSE_REMOVEXATTR));
	r->in_args[0].value = "user.a/b";
	r->in_args[0].size = 9;
	assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
	build_from_table(b, vqf_fuse_op(FUSE_REMOVEXATTR));
	{
		static char big[VQF_XATTR_NAME_MAX + 2];

		memset(big, 'x', sizeof(big) - 1);
		r->in_args[0].value = big;
		r->in_args[0].size = sizeof(big);
		assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
		r->in_args[0].value = big + 1;
		r->in_args[0].size = sizeof(big) - 1;
		assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
	}
	/* Payload size differs from its count. */
	build_from_table(b, vqf_fuse_op(FUSE_WRITE));
	r->in_args[1].size = PAYLOAD_N + 1;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	/* Array: size differs, count above max. */
	build_from_table(b, vqf_fuse_op(FUSE_BATCH_FORGET));
	r->in_args[1].size -= 1;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	build_from_table(b, vqf_fuse_op(FUSE_REMOVEMAPPING));
	put_count(b->in0, &vqf_fuse_op(FUSE_REMOVEMAPPING)->in[1],
		  VQF_REMOVEMAPPING_MAX + 1);
	r->in_args[1].size = (VQF_REMOVEMAPPING_MAX + 1) * 16;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	/* IOCTL without in data is fine only when in_size is 0. */
	build_from_table(b, vqf_fuse_op(FUSE_IOCTL));
	r->in_numargs = 1;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	put_count(b->in0, &vqf_fuse_op(FUSE_IOCTL)->in[1], 0);
	assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
	/* Wrong arg counts. */
	build_from_table(b, vqf_fuse_op(FUSE_RENAME));
	r->in_numargs = 2;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	build_from_table(b, vqf_fuse_op(FUSE_GETATTR));
	r->out_numargs = 0;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	/* Entryver left out: argvar must go with it. */
	build_from_table(b, vqf_fuse_op(FUSE_CREATE));
	r->out_numargs = 2;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	r->out_argvar = false;
	assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
	/* DATA above its bound. */
	build_from_table(b, vqf_fuse_op(FUSE_READ));
	r->out_args[0].size = DATA_N + 1;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	/* XATTR probe: size 0 asks for fuse_getxattr_out, not argvar. */
	build_from_table(b, vqf_fuse_op(FUSE_LISTXATTR));
	put_count(b->in0, &vqf_fuse_op(FUSE_LISTXATTR)->out[0], 0);
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	r->out_args[0].size = sizeof(struct fuse_getxattr_out);
	r->out_argvar = false;
	assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
	/* Extension block: only on VQF_OPF_EXT opcodes, multiple of 8. */
	build_from_table(b, vqf_fuse_op(FUSE_MKDIR));
	vqf_req_add_in(r, ext, sizeof(ext));
	r->in_ext = true;
	assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
	assert_int_equal(vqf_req_to_argbuf(r, b->argbuf, sizeof(b->argbuf)),
			 0);
	assert_int_equal(r->in_h.total_extlen, 2);
	assert_int_equal(r->in_h.len, 40 + 8 + 3 + 16);
	r->in_args[2].size = 12;
	assert_int_equal(vqf_req_check(r), -EINVAL);
	build_from_table(b, vqf_fuse_op(FUSE_GETATTR));
	vqf_req_add_in(r, ext, sizeof(ext));
	r->in_ext = true;
	assert_int_equal(vqf_req_check_shape(r, 0, true), -EINVAL);
	/* Helpers produce conforming requests. */
	{
		struct fuse_entry_out e;
		struct fuse_entryver_out v;
		struct fuse_getattr_in gi = { 0 };
		struct fuse_attr_out ao;
		struct fuse_read_in ri = { .size = 100 };
		struct fuse_write_in wi = { .size = 100 };
		struct fuse_write_out wo;
		struct vqf_page_desc pv = { b->payload, 0, 100 };

		vqf_req_init_lookup(r, 1, 1, "abc", 3, &e, &v);
		assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
		vqf_req_init_lookup(r, 1, 1, "abc", 3, &e, NULL);
		assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
		vqf_req_init_getattr(r, 1, 1, &gi, &ao);
		assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
		vqf_req_init_read(r, FUSE_READDIR, 1, 1, &ri, &pv, 1, false);
		assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
		vqf_req_init_write(r, 1, 1, &wi, &pv, 1, &wo);
		assert_int_equal(vqf_req_check_shape(r, 0, true), 0);
	}
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_op_conforms_and_completes),
		cmocka_unit_test(test_shape_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
