// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Table sanity for lib/vqf_fuse_ops: every opcode virtio-fs uses is
 * present, sizes are those of the uapi structs, flags are consistent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vqf_fuse_ops.h"

static const u32 required[] = {
	FUSE_INIT, FUSE_LOOKUP, FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_GETATTR,
	FUSE_SETATTR, FUSE_READLINK, FUSE_SYMLINK, FUSE_MKNOD, FUSE_MKDIR,
	FUSE_UNLINK, FUSE_RMDIR, FUSE_RENAME, FUSE_RENAME2, FUSE_LINK,
	FUSE_OPEN, FUSE_CREATE, FUSE_READ, FUSE_WRITE, FUSE_STATFS,
	FUSE_RELEASE, FUSE_FSYNC, FUSE_FLUSH, FUSE_SETXATTR, FUSE_GETXATTR,
	FUSE_LISTXATTR, FUSE_REMOVEXATTR, FUSE_OPENDIR, FUSE_READDIR,
	FUSE_READDIRPLUS, FUSE_RELEASEDIR, FUSE_FSYNCDIR, FUSE_GETLK,
	FUSE_SETLK, FUSE_SETLKW, FUSE_ACCESS, FUSE_INTERRUPT, FUSE_DESTROY,
	FUSE_FALLOCATE, FUSE_LSEEK, FUSE_COPY_FILE_RANGE, FUSE_SETUPMAPPING,
	FUSE_REMOVEMAPPING, FUSE_IOCTL, FUSE_POLL,
};

static void test_every_opcode_present(void **state)
{
	unsigned int i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(required); i++) {
		const struct vqf_fuse_op *op = vqf_fuse_op(required[i]);

		assert_non_null(op);
		assert_int_equal(op->opcode, required[i]);
		assert_non_null(op->name);
	}
	assert_true(vqf_fuse_op_count() >= ARRAY_SIZE(required));
}

static void test_unknown_opcodes(void **state)
{
	(void)state;
	assert_null(vqf_fuse_op(0));
	assert_null(vqf_fuse_op(7));
	assert_null(vqf_fuse_op(FUSE_BMAP));
	assert_null(vqf_fuse_op(FUSE_NOTIFY_REPLY));
	assert_null(vqf_fuse_op(FUSE_TMPFILE));
	assert_null(vqf_fuse_op(CUSE_INIT));
	assert_null(vqf_fuse_op(FUSE_INIT_BSWAP_RESERVED));
	assert_null(vqf_fuse_op(0xffffffffu));
}

static void test_iteration(void **state)
{
	unsigned int i, n = vqf_fuse_op_count();
	u32 prev = 0;

	(void)state;
	for (i = 0; i < n; i++) {
		const struct vqf_fuse_op *op = vqf_fuse_op_at(i);

		assert_non_null(op);
		assert_true(op->opcode > prev);
		assert_ptr_equal(vqf_fuse_op(op->opcode), op);
		prev = op->opcode;
	}
	assert_null(vqf_fuse_op_at(n));
}

static const struct vqf_arg_shape *in0(u32 opc)
{
	return &vqf_fuse_op(opc)->in[0];
}

static const struct vqf_arg_shape *out0(u32 opc)
{
	return &vqf_fuse_op(opc)->out[0];
}

static void test_fixed_sizes(void **state)
{
	(void)state;
	assert_int_equal(in0(FUSE_INIT)->size, sizeof(struct fuse_init_in));
	assert_int_equal(out0(FUSE_INIT)->size, sizeof(struct fuse_init_out));
	assert_int_equal(in0(FUSE_FORGET)->size, sizeof(struct fuse_forget_in));
	assert_int_equal(in0(FUSE_BATCH_FORGET)->size,
			 sizeof(struct fuse_batch_forget_in));
	assert_int_equal(vqf_fuse_op(FUSE_BATCH_FORGET)->in[1].size,
			 sizeof(struct fuse_forget_one));
	assert_int_equal(in0(FUSE_GETATTR)->size,
			 sizeof(struct fuse_getattr_in));
	assert_int_equal(out0(FUSE_GETATTR)->size,
			 sizeof(struct fuse_attr_out));
	assert_int_equal(in0(FUSE_SETATTR)->size,
			 sizeof(struct fuse_setattr_in));
	assert_int_equal(out0(FUSE_LOOKUP)->size,
			 sizeof(struct fuse_entry_out));
	assert_int_equal(in0(FUSE_MKNOD)->size, sizeof(struct fuse_mknod_in));
	assert_int_equal(in0(FUSE_MKDIR)->size, sizeof(struct fuse_mkdir_in));
	assert_int_equal(in0(FUSE_RENAME)->size,
			 sizeof(struct fuse_rename_in));
	assert_int_equal(in0(FUSE_RENAME2)->size,
			 sizeof(struct fuse_rename2_in));
	assert_int_equal(in0(FUSE_LINK)->size, sizeof(struct fuse_link_in));
	assert_int_equal(in0(FUSE_OPEN)->size, sizeof(struct fuse_open_in));
	assert_int_equal(out0(FUSE_OPEN)->size, sizeof(struct fuse_open_out));
	assert_int_equal(in0(FUSE_CREATE)->size,
			 sizeof(struct fuse_create_in));
	assert_int_equal(vqf_fuse_op(FUSE_CREATE)->out[1].size,
			 sizeof(struct fuse_open_out));
	assert_int_equal(in0(FUSE_READ)->size, sizeof(struct fuse_read_in));
	assert_int_equal(in0(FUSE_WRITE)->size, sizeof(struct fuse_write_in));
	assert_int_equal(out0(FUSE_WRITE)->size,
			 sizeof(struct fuse_write_out));
	assert_int_equal(out0(FUSE_STATFS)->size,
			 sizeof(struct fuse_statfs_out));
	assert_int_equal(in0(FUSE_RELEASE)->size,
			 sizeof(struct fuse_release_in));
	assert_int_equal(in0(FUSE_FSYNC)->size, sizeof(struct fuse_fsync_in));
	assert_int_equal(in0(FUSE_FLUSH)->size, sizeof(struct fuse_flush_in));
	assert_int_equal(in0(FUSE_SETXATTR)->size,
			 sizeof(struct fuse_setxattr_in));
	assert_int_equal(in0(FUSE_GETXATTR)->size,
			 sizeof(struct fuse_getxattr_in));
	assert_int_equal(vqf_fuse_op(FUSE_GETXATTR)->out_probe.size,
			 sizeof(struct fuse_getxattr_out));
	assert_int_equal(in0(FUSE_GETLK)->size, sizeof(struct fuse_lk_in));
	assert_int_equal(out0(FUSE_GETLK)->size, sizeof(struct fuse_lk_out));
	assert_int_equal(in0(FUSE_ACCESS)->size,
			 sizeof(struct fuse_access_in));
	assert_int_equal(in0(FUSE_INTERRUPT)->size,
			 sizeof(struct fuse_interrupt_in));
	assert_int_equal(in0(FUSE_FALLOCATE)->size,
			 sizeof(struct fuse_fallocate_in));
	assert_int_equal(in0(FUSE_LSEEK)->size, sizeof(struct fuse_lseek_in));
	assert_int_equal(out0(FUSE_LSEEK)->size,
			 sizeof(struct fuse_lseek_out));
	assert_int_equal(in0(FUSE_COPY_FILE_RANGE)->size,
			 sizeof(struct fuse_copy_file_range_in));
	assert_int_equal(in0(FUSE_SETUPMAPPING)->size,
			 sizeof(struct fuse_setupmapping_in));
	assert_int_equal(in0(FUSE_REMOVEMAPPING)->size,
			 sizeof(struct fuse_removemapping_in));
	assert_int_equal(vqf_fuse_op(FUSE_REMOVEMAPPING)->in[1].size,
			 sizeof(struct fuse_removemapping_one));
	assert_int_equal(in0(FUSE_IOCTL)->size, sizeof(struct fuse_ioctl_in));
	assert_int_equal(out0(FUSE_IOCTL)->size,
			 sizeof(struct fuse_ioctl_out));
	assert_int_equal(in0(FUSE_POLL)->size, sizeof(struct fuse_poll_in));
	assert_int_equal(out0(FUSE_POLL)->size, sizeof(struct fuse_poll_out));
	assert_int_equal(sizeof(struct fuse_entryver_out),
			 VQF_FUSE_ENTRYVER_OUT_SIZE);
}

/* Walk every arg of every op and check the invariants the parser needs. */
static void check_shape(const struct vqf_fuse_op *op,
			const struct vqf_arg_shape *a, bool last, bool is_in)
{
	assert_non_null(a->what);
	switch (a->kind) {
	case VQF_ARG_FIXED:
		assert_true(a->size > 0);
		assert_true(a->min_size > 0 && a->min_size <= a->size);
		assert_int_equal(a->count_width, 0);
		break;
	case VQF_ARG_NAME:
		assert_true(is_in);
		assert_true(a->max > 1);
		/* Components are bounded by FUSE_NAME_MAX, others are not. */
		if (a->flags & VQF_ARGF_COMPONENT)
			assert_int_equal(a->max, VQF_FUSE_NAME_MAX + 1);
		break;
	case VQF_ARG_PAYLOAD:
	case VQF_ARG_ARRAY:
		assert_true(is_in);
		assert_true(last);
		assert_true(a->count_width == 4 || a->count_width == 8);
		assert_int_equal(op->in[0].kind, VQF_ARG_FIXED);
		assert_true(a->count_off + a->count_width <= op->in[0].size);
		if (a->kind == VQF_ARG_ARRAY)
			assert_true(a->size > 0);
		break;
	case VQF_ARG_DATA:
		assert_true(last);
		assert_false(is_in);
		assert_true(op->flags & VQF_OPF_OUT_ARGVAR);
		if (a->count_width) {
			assert_int_equal(op->in[0].kind, VQF_ARG_FIXED);
			assert_true(a->count_off + a->count_width <=
				    op->in[0].size);
		}
		break;
	default:
		fail_msg("%s: bad kind %u", op->name, a->kind);
	}
	if (a->flags & VQF_ARGF_OPTIONAL) {
		assert_false(is_in);
		assert_true(last);
	}
}

static void test_shapes_consistent(void **state)
{
	unsigned int i, j, n = vqf_fuse_op_count();

	(void)state;
	for (i = 0; i < n; i++) {
		const struct vqf_fuse_op *op = vqf_fuse_op_at(i);
		bool hip = op->flags & VQF_OPF_HIPRIO;

		assert_true(op->nr_in <= VQF_OP_MAX_IN);
		assert_true(op->nr_out <= VQF_OP_MAX_OUT);
		/* Exactly one queue kind, per virtio 1.2 5.11.6. */
		assert_true(hip != !!(op->flags & VQF_OPF_REQUEST_Q));
		if (hip)
			assert_true(op->flags & VQF_OPF_NOREPLY);
		if (op->flags & VQF_OPF_NOREPLY)
			assert_int_equal(op->nr_out, 0);
		for (j = 0; j < op->nr_in; j++)
			check_shape(op, &op->in[j], j + 1 == op->nr_in, true);
		for (j = op->nr_in; j < VQF_OP_MAX_IN; j++)
			assert_int_equal(op->in[j].kind, VQF_ARG_NONE);
		for (j = 0; j < op->nr_out; j++)
			check_shape(op, &op->out[j], j + 1 == op->nr_out,
				    false);
		for (j = op->nr_out; j < VQF_OP_MAX_OUT; j++)
			assert_int_equal(op->out[j].kind, VQF_ARG_NONE);
		if (op->flags & VQF_OPF_ENTRYVER) {
			const struct vqf_arg_shape *l = &op->out[op->nr_out - 1];

			assert_true(l->flags & VQF_ARGF_OPTIONAL);
			assert_int_equal(l->size,
					 sizeof(struct fuse_entryver_out));
			assert_true(op->flags & VQF_OPF_OUT_ARGVAR);
		}
		if (op->flags & VQF_OPF_XATTR_PROBE)
			assert_int_equal(op->out_probe.kind, VQF_ARG_FIXED);
		else
			assert_int_equal(op->out_probe.kind, VQF_ARG_NONE);
	}
}

static void test_queues_and_replies(void **state)
{
	(void)state;
	assert_true(vqf_fuse_op(FUSE_FORGET)->flags & VQF_OPF_NOREPLY);
	assert_true(vqf_fuse_op(FUSE_BATCH_FORGET)->flags & VQF_OPF_NOREPLY);
	assert_true(vqf_fuse_op(FUSE_FORGET)->flags & VQF_OPF_HIPRIO);
	assert_true(vqf_fuse_op(FUSE_BATCH_FORGET)->flags & VQF_OPF_HIPRIO);
	assert_true(vqf_fuse_op(FUSE_INTERRUPT)->flags & VQF_OPF_HIPRIO);
	assert_false(vqf_fuse_op(FUSE_LOOKUP)->flags & VQF_OPF_HIPRIO);
	assert_false(vqf_fuse_op(FUSE_DESTROY)->flags & VQF_OPF_NOREPLY);
	assert_int_equal(vqf_fuse_op(FUSE_DESTROY)->nr_in, 0);
	assert_int_equal(vqf_fuse_op(FUSE_STATFS)->nr_in, 0);
	assert_int_equal(vqf_fuse_op(FUSE_READLINK)->nr_in, 0);
}

static void test_entryver_ops(void **state)
{
	static const u32 ev[] = { FUSE_LOOKUP, FUSE_CREATE, FUSE_MKNOD,
				  FUSE_MKDIR, FUSE_SYMLINK, FUSE_LINK };
	unsigned int i, n = vqf_fuse_op_count(), seen = 0;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(ev); i++)
		assert_true(vqf_fuse_op(ev[i])->flags & VQF_OPF_ENTRYVER);
	for (i = 0; i < n; i++)
		seen += !!(vqf_fuse_op_at(i)->flags & VQF_OPF_ENTRYVER);
	assert_int_equal(seen, ARRAY_SIZE(ev));
}

static void test_components(void **state)
{
	(void)state;
	assert_true(vqf_fuse_op(FUSE_LOOKUP)->in[0].flags &
		    VQF_ARGF_COMPONENT);
	assert_true(vqf_fuse_op(FUSE_RENAME2)->in[2].flags &
		    VQF_ARGF_COMPONENT);
	assert_true(vqf_fuse_op(FUSE_SYMLINK)->in[0].flags &
		    VQF_ARGF_COMPONENT);
	assert_false(vqf_fuse_op(FUSE_SYMLINK)->in[1].flags &
		     VQF_ARGF_COMPONENT);
	assert_false(vqf_fuse_op(FUSE_GETXATTR)->in[1].flags &
		     VQF_ARGF_COMPONENT);
	assert_false(vqf_fuse_op(FUSE_REMOVEXATTR)->in[0].flags &
		     VQF_ARGF_COMPONENT);
}

static void test_count_fields(void **state)
{
	struct fuse_write_in w = { .size = 12345 };
	struct fuse_setxattr_in sx = { .size = 77 };
	struct fuse_batch_forget_in bf = { .count = 9 };
	struct fuse_removemapping_in rm = { .count = 3 };
	struct fuse_ioctl_in io = { .in_size = 5, .out_size = 6 };
	u64 c;

	(void)state;
	assert_int_equal(vqf_fuse_arg_count(&vqf_fuse_op(FUSE_WRITE)->in[1],
					    &w, sizeof(w), &c), 0);
	assert_int_equal(c, 12345);
	assert_int_equal(vqf_fuse_arg_count(&vqf_fuse_op(FUSE_SETXATTR)->in[2],
					    &sx, sizeof(sx), &c), 0);
	assert_int_equal(c, 77);
	/* The compat setxattr_in still holds the size. */
	assert_int_equal(vqf_fuse_arg_count(&vqf_fuse_op(FUSE_SETXATTR)->in[2],
					    &sx, FUSE_COMPAT_SETXATTR_IN_SIZE,
					    &c), 0);
	assert_int_equal(vqf_fuse_arg_count(
				&vqf_fuse_op(FUSE_BATCH_FORGET)->in[1],
				&bf, sizeof(bf), &c), 0);
	assert_int_equal(c, 9);
	assert_int_equal(vqf_fuse_arg_count(
				&vqf_fuse_op(FUSE_REMOVEMAPPING)->in[1],
				&rm, sizeof(rm), &c), 0);
	assert_int_equal(c, 3);
	assert_int_equal(vqf_fuse_op(FUSE_REMOVEMAPPING)->in[1].max,
			 VQF_REMOVEMAPPING_MAX);
	assert_int_equal(vqf_fuse_arg_count(&vqf_fuse_op(FUSE_IOCTL)->in[1],
					    &io, sizeof(io), &c), 0);
	assert_int_equal(c, 5);
	assert_int_equal(vqf_fuse_arg_count(&vqf_fuse_op(FUSE_IOCTL)->out[1],
					    &io, sizeof(io), &c), 0);
	assert_int_equal(c, 6);
	/* Count field beyond what was received, or no count field. */
	assert_int_equal(vqf_fuse_arg_count(&vqf_fuse_op(FUSE_WRITE)->in[1],
					    &w, 16, &c), -EINVAL);
	assert_int_equal(vqf_fuse_arg_count(&vqf_fuse_op(FUSE_WRITE)->in[0],
					    &w, sizeof(w), &c), -EINVAL);
}

static void test_compat_sizes(void **state)
{
	const struct vqf_fuse_op *sx = vqf_fuse_op(FUSE_SETXATTR);

	(void)state;
	assert_int_equal(vqf_fuse_op_in_fixed_size(sx, 0, true),
			 sizeof(struct fuse_setxattr_in));
	assert_int_equal(vqf_fuse_op_in_fixed_size(sx, 38, false),
			 FUSE_COMPAT_SETXATTR_IN_SIZE);
	assert_int_equal(vqf_fuse_op_in_fixed_size(vqf_fuse_op(FUSE_MKNOD),
						   11, true),
			 FUSE_COMPAT_MKNOD_IN_SIZE);
	assert_int_equal(vqf_fuse_op_in_fixed_size(vqf_fuse_op(FUSE_MKNOD),
						   12, true),
			 sizeof(struct fuse_mknod_in));
	assert_int_equal(vqf_fuse_op_in_fixed_size(vqf_fuse_op(FUSE_CREATE),
						   11, true),
			 sizeof(struct fuse_open_in));
	assert_int_equal(vqf_fuse_op_in_fixed_size(vqf_fuse_op(FUSE_CREATE),
						   12, true),
			 sizeof(struct fuse_create_in));
	assert_int_equal(vqf_fuse_op_in_fixed_size(vqf_fuse_op(FUSE_WRITE),
						   8, true),
			 FUSE_COMPAT_WRITE_IN_SIZE);
	assert_int_equal(vqf_fuse_op_in_fixed_size(vqf_fuse_op(FUSE_LOOKUP),
						   0, true), 0);
	assert_int_equal(vqf_fuse_op_out_fixed_size(vqf_fuse_op(FUSE_LOOKUP),
						    8),
			 FUSE_COMPAT_ENTRY_OUT_SIZE);
	assert_int_equal(vqf_fuse_op_out_fixed_size(vqf_fuse_op(FUSE_LOOKUP),
						    9),
			 sizeof(struct fuse_entry_out));
	assert_int_equal(vqf_fuse_op_out_fixed_size(vqf_fuse_op(FUSE_GETATTR),
						    8),
			 FUSE_COMPAT_ATTR_OUT_SIZE);
	assert_int_equal(vqf_fuse_op_out_fixed_size(vqf_fuse_op(FUSE_STATFS),
						    3),
			 FUSE_COMPAT_STATFS_SIZE);
	assert_int_equal(vqf_fuse_op_out_fixed_size(vqf_fuse_op(FUSE_OPEN),
						    8),
			 sizeof(struct fuse_open_out));
	assert_int_equal(vqf_fuse_op_out_fixed_size(vqf_fuse_op(FUSE_INIT),
						    5),
			 sizeof(struct fuse_init_out));
	assert_int_equal(vqf_fuse_op_out_fixed_size(vqf_fuse_op(FUSE_READ),
						    0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_opcode_present),
		cmocka_unit_test(test_unknown_opcodes),
		cmocka_unit_test(test_iteration),
		cmocka_unit_test(test_fixed_sizes),
		cmocka_unit_test(test_shapes_consistent),
		cmocka_unit_test(test_queues_and_replies),
		cmocka_unit_test(test_entryver_ops),
		cmocka_unit_test(test_components),
		cmocka_unit_test(test_count_fields),
		cmocka_unit_test(test_compat_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
