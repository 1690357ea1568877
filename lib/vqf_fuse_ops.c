// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_fuse_ops.c - the per-opcode argument table (see vqf_fuse_ops.h).
 *
 * Shapes follow what Linux 6.1 fs/fuse puts in struct fuse_args for each
 * opcode, so that a guest built from this table and a Linux guest send the
 * same bytes.
 */
#include "vqf_fuse_ops.h"

#define FIELD_OFF(type, field)	offsetof(struct type, field)
#define FIELD_W(type, field)	sizeof(((struct type *)0)->field)

#define A_FIXED(type, what_) {						\
	.kind = VQF_ARG_FIXED, .size = sizeof(struct type),		\
	.min_size = sizeof(struct type), .what = what_ }
#define A_FIXED_COMPAT(type, min, what_) {				\
	.kind = VQF_ARG_FIXED, .size = sizeof(struct type),		\
	.min_size = (min), .what = what_ }
#define A_NAME(max_, what_) {						\
	.kind = VQF_ARG_NAME, .max = (max_), .what = what_ }
#define A_COMPONENT(max_, what_) {					\
	.kind = VQF_ARG_NAME, .flags = VQF_ARGF_COMPONENT, .max = (max_), \
	.what = what_ }
#define A_PAYLOAD(type, field, max_, flags_, what_) {			\
	.kind = VQF_ARG_PAYLOAD, .flags = (flags_),			\
	.count_off = FIELD_OFF(type, field),				\
	.count_width = FIELD_W(type, field), .max = (max_),		\
	.what = what_ }
#define A_ARRAY(elem, type, field, max_, what_) {			\
	.kind = VQF_ARG_ARRAY, .size = sizeof(struct elem),		\
	.count_off = FIELD_OFF(type, field),				\
	.count_width = FIELD_W(type, field), .max = (max_),		\
	.what = what_ }
#define A_DATA(max_, flags_, what_) {					\
	.kind = VQF_ARG_DATA, .flags = (flags_), .max = (max_),	\
	.what = what_ }
#define A_DATA_BOUND(type, field, max_, flags_, what_) {		\
	.kind = VQF_ARG_DATA, .flags = (flags_),			\
	.count_off = FIELD_OFF(type, field),				\
	.count_width = FIELD_W(type, field), .max = (max_),		\
	.what = what_ }
#define A_ENTRYVER {							\
	.kind = VQF_ARG_FIXED, .flags = VQF_ARGF_OPTIONAL,		\
	.size = sizeof(struct fuse_entryver_out),			\
	.min_size = sizeof(struct fuse_entryver_out),			\
	.what = "entryver_out" }

#define ENTRY_OUT A_FIXED_COMPAT(fuse_entry_out, FUSE_COMPAT_ENTRY_OUT_SIZE, \
				 "entry_out")
#define ATTR_OUT A_FIXED_COMPAT(fuse_attr_out, FUSE_COMPAT_ATTR_OUT_SIZE, \
				"attr_out")
#define NAME_ARG(what_)	A_COMPONENT(VQF_FUSE_NAME_MAX + 1, what_)
#define XNAME_ARG	A_NAME(VQF_XATTR_NAME_MAX + 1, "xattr_name")

#define RQ	VQF_OPF_REQUEST_Q
#define ENTRYVER (VQF_OPF_ENTRYVER | VQF_OPF_OUT_ARGVAR)

static const struct vqf_fuse_op vqf_fuse_ops[] = {
	[FUSE_LOOKUP] = {
		.opcode = FUSE_LOOKUP, .name = "LOOKUP", .flags = RQ | ENTRYVER,
		.nr_in = 1, .in = { NAME_ARG("name") },
		.nr_out = 2, .out = { ENTRY_OUT, A_ENTRYVER },
	},
	[FUSE_FORGET] = {
		.opcode = FUSE_FORGET, .name = "FORGET",
		.flags = VQF_OPF_HIPRIO | VQF_OPF_NOREPLY,
		.nr_in = 1, .in = { A_FIXED(fuse_forget_in, "forget_in") },
	},
	[FUSE_GETATTR] = {
		.opcode = FUSE_GETATTR, .name = "GETATTR", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_getattr_in, "getattr_in") },
		.nr_out = 1, .out = { ATTR_OUT },
	},
	[FUSE_SETATTR] = {
		.opcode = FUSE_SETATTR, .name = "SETATTR", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_setattr_in, "setattr_in") },
		.nr_out = 1, .out = { ATTR_OUT },
	},
	[FUSE_READLINK] = {
		.opcode = FUSE_READLINK, .name = "READLINK",
		.flags = RQ | VQF_OPF_OUT_ARGVAR | VQF_OPF_OUT_PAGES,
		.nr_out = 1,
		.out = { A_DATA(VQF_SYMLINK_MAX, VQF_ARGF_PAGES, "target") },
	},
	[FUSE_SYMLINK] = {
		.opcode = FUSE_SYMLINK, .name = "SYMLINK",
		.flags = RQ | ENTRYVER | VQF_OPF_EXT,
		.nr_in = 2,
		.in = { NAME_ARG("name"), A_NAME(VQF_SYMLINK_MAX, "target") },
		.nr_out = 2, .out = { ENTRY_OUT, A_ENTRYVER },
	},
	[FUSE_MKNOD] = {
		.opcode = FUSE_MKNOD, .name = "MKNOD",
		.flags = RQ | ENTRYVER | VQF_OPF_EXT,
		.nr_in = 2,
		.in = { A_FIXED_COMPAT(fuse_mknod_in, FUSE_COMPAT_MKNOD_IN_SIZE,
				       "mknod_in"),
			NAME_ARG("name") },
		.nr_out = 2, .out = { ENTRY_OUT, A_ENTRYVER },
	},
	[FUSE_MKDIR] = {
		.opcode = FUSE_MKDIR, .name = "MKDIR",
		.flags = RQ | ENTRYVER | VQF_OPF_EXT,
		.nr_in = 2,
		.in = { A_FIXED(fuse_mkdir_in, "mkdir_in"), NAME_ARG("name") },
		.nr_out = 2, .out = { ENTRY_OUT, A_ENTRYVER },
	},
	[FUSE_UNLINK] = {
		.opcode = FUSE_UNLINK, .name = "UNLINK", .flags = RQ,
		.nr_in = 1, .in = { NAME_ARG("name") },
	},
	[FUSE_RMDIR] = {
		.opcode = FUSE_RMDIR, .name = "RMDIR", .flags = RQ,
		.nr_in = 1, .in = { NAME_ARG("name") },
	},
	[FUSE_RENAME] = {
		.opcode = FUSE_RENAME, .name = "RENAME", .flags = RQ,
		.nr_in = 3,
		.in = { A_FIXED(fuse_rename_in, "rename_in"),
			NAME_ARG("oldname"), NAME_ARG("newname") },
	},
	[FUSE_LINK] = {
		.opcode = FUSE_LINK, .name = "LINK", .flags = RQ | ENTRYVER,
		.nr_in = 2,
		.in = { A_FIXED(fuse_link_in, "link_in"), NAME_ARG("newname") },
		.nr_out = 2, .out = { ENTRY_OUT, A_ENTRYVER },
	},
	[FUSE_OPEN] = {
		.opcode = FUSE_OPEN, .name = "OPEN", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_open_in, "open_in") },
		.nr_out = 1, .out = { A_FIXED(fuse_open_out, "open_out") },
	},
	[FUSE_READ] = {
		.opcode = FUSE_READ, .name = "READ",
		.flags = RQ | VQF_OPF_OUT_ARGVAR | VQF_OPF_OUT_PAGES,
		.nr_in = 1, .in = { A_FIXED(fuse_read_in, "read_in") },
		.nr_out = 1,
		.out = { A_DATA_BOUND(fuse_read_in, size, 0, VQF_ARGF_PAGES,
				      "data") },
	},
	[FUSE_WRITE] = {
		.opcode = FUSE_WRITE, .name = "WRITE",
		.flags = RQ | VQF_OPF_IN_PAGES,
		.nr_in = 2,
		.in = { A_FIXED_COMPAT(fuse_write_in, FUSE_COMPAT_WRITE_IN_SIZE,
				       "write_in"),
			A_PAYLOAD(fuse_write_in, size, 0, VQF_ARGF_PAGES,
				  "data") },
		.nr_out = 1, .out = { A_FIXED(fuse_write_out, "write_out") },
	},
	[FUSE_STATFS] = {
		.opcode = FUSE_STATFS, .name = "STATFS", .flags = RQ,
		.nr_out = 1,
		.out = { A_FIXED_COMPAT(fuse_statfs_out,
					FUSE_COMPAT_STATFS_SIZE,
					"statfs_out") },
	},
	[FUSE_RELEASE] = {
		.opcode = FUSE_RELEASE, .name = "RELEASE", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_release_in, "release_in") },
	},
	[FUSE_FSYNC] = {
		.opcode = FUSE_FSYNC, .name = "FSYNC", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_fsync_in, "fsync_in") },
	},
	[FUSE_SETXATTR] = {
		.opcode = FUSE_SETXATTR, .name = "SETXATTR",
		.flags = RQ | VQF_OPF_SETXATTR_EXT,
		.nr_in = 3,
		.in = { A_FIXED_COMPAT(fuse_setxattr_in,
				       FUSE_COMPAT_SETXATTR_IN_SIZE,
				       "setxattr_in"),
			XNAME_ARG,
			A_PAYLOAD(fuse_setxattr_in, size, VQF_XATTR_SIZE_MAX,
				  0, "value") },
	},
	[FUSE_GETXATTR] = {
		.opcode = FUSE_GETXATTR, .name = "GETXATTR",
		.flags = RQ | VQF_OPF_OUT_ARGVAR | VQF_OPF_XATTR_PROBE,
		.nr_in = 2,
		.in = { A_FIXED(fuse_getxattr_in, "getxattr_in"), XNAME_ARG },
		.nr_out = 1,
		.out = { A_DATA_BOUND(fuse_getxattr_in, size,
				      VQF_XATTR_SIZE_MAX, 0, "value") },
		.out_probe = A_FIXED(fuse_getxattr_out, "getxattr_out"),
	},
	[FUSE_LISTXATTR] = {
		.opcode = FUSE_LISTXATTR, .name = "LISTXATTR",
		.flags = RQ | VQF_OPF_OUT_ARGVAR | VQF_OPF_XATTR_PROBE,
		.nr_in = 1, .in = { A_FIXED(fuse_getxattr_in, "getxattr_in") },
		.nr_out = 1,
		.out = { A_DATA_BOUND(fuse_getxattr_in, size,
				      VQF_XATTR_SIZE_MAX, 0, "names") },
		.out_probe = A_FIXED(fuse_getxattr_out, "getxattr_out"),
	},
	[FUSE_REMOVEXATTR] = {
		.opcode = FUSE_REMOVEXATTR, .name = "REMOVEXATTR", .flags = RQ,
		.nr_in = 1, .in = { XNAME_ARG },
	},
	[FUSE_FLUSH] = {
		.opcode = FUSE_FLUSH, .name = "FLUSH", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_flush_in, "flush_in") },
	},
	[FUSE_INIT] = {
		.opcode = FUSE_INIT, .name = "INIT",
		.flags = RQ | VQF_OPF_OUT_ARGVAR,
		.nr_in = 1,
		.in = { A_FIXED_COMPAT(fuse_init_in, VQF_COMPAT_INIT_IN_SIZE,
				       "init_in") },
		.nr_out = 1,
		.out = { A_FIXED_COMPAT(fuse_init_out,
					FUSE_COMPAT_INIT_OUT_SIZE,
					"init_out") },
	},
	[FUSE_OPENDIR] = {
		.opcode = FUSE_OPENDIR, .name = "OPENDIR", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_open_in, "open_in") },
		.nr_out = 1, .out = { A_FIXED(fuse_open_out, "open_out") },
	},
	[FUSE_READDIR] = {
		.opcode = FUSE_READDIR, .name = "READDIR",
		.flags = RQ | VQF_OPF_OUT_ARGVAR | VQF_OPF_OUT_PAGES,
		.nr_in = 1, .in = { A_FIXED(fuse_read_in, "read_in") },
		.nr_out = 1,
		.out = { A_DATA_BOUND(fuse_read_in, size, 0, VQF_ARGF_PAGES,
				      "dirents") },
	},
	[FUSE_RELEASEDIR] = {
		.opcode = FUSE_RELEASEDIR, .name = "RELEASEDIR", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_release_in, "release_in") },
	},
	[FUSE_FSYNCDIR] = {
		.opcode = FUSE_FSYNCDIR, .name = "FSYNCDIR", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_fsync_in, "fsync_in") },
	},
	[FUSE_GETLK] = {
		.opcode = FUSE_GETLK, .name = "GETLK", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_lk_in, "lk_in") },
		.nr_out = 1, .out = { A_FIXED(fuse_lk_out, "lk_out") },
	},
	[FUSE_SETLK] = {
		.opcode = FUSE_SETLK, .name = "SETLK", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_lk_in, "lk_in") },
	},
	[FUSE_SETLKW] = {
		.opcode = FUSE_SETLKW, .name = "SETLKW", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_lk_in, "lk_in") },
	},
	[FUSE_ACCESS] = {
		.opcode = FUSE_ACCESS, .name = "ACCESS", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_access_in, "access_in") },
	},
	[FUSE_CREATE] = {
		.opcode = FUSE_CREATE, .name = "CREATE",
		.flags = RQ | ENTRYVER | VQF_OPF_EXT,
		.nr_in = 2,
		.in = { A_FIXED_COMPAT(fuse_create_in,
				       VQF_COMPAT_CREATE_IN_SIZE, "create_in"),
			NAME_ARG("name") },
		.nr_out = 3,
		.out = { ENTRY_OUT, A_FIXED(fuse_open_out, "open_out"),
			 A_ENTRYVER },
	},
	/*
	 * On /dev/fuse a server may answer INTERRUPT with EAGAIN; on the
	 * hiprio queue there is nowhere to put an answer (virtiofsd sends
	 * none), so the guest offers no writable buffer.
	 */
	[FUSE_INTERRUPT] = {
		.opcode = FUSE_INTERRUPT, .name = "INTERRUPT",
		.flags = VQF_OPF_HIPRIO | VQF_OPF_NOREPLY,
		.nr_in = 1,
		.in = { A_FIXED(fuse_interrupt_in, "interrupt_in") },
	},
	[FUSE_DESTROY] = {
		.opcode = FUSE_DESTROY, .name = "DESTROY", .flags = RQ,
	},
	[FUSE_IOCTL] = {
		.opcode = FUSE_IOCTL, .name = "IOCTL",
		.flags = RQ | VQF_OPF_OUT_ARGVAR | VQF_OPF_IN_PAGES |
			 VQF_OPF_OUT_PAGES,
		.nr_in = 2,
		.in = { A_FIXED(fuse_ioctl_in, "ioctl_in"),
			A_PAYLOAD(fuse_ioctl_in, in_size, 0, VQF_ARGF_PAGES,
				  "in_data") },
		.nr_out = 2,
		.out = { A_FIXED(fuse_ioctl_out, "ioctl_out"),
			 A_DATA_BOUND(fuse_ioctl_in, out_size, 0,
				      VQF_ARGF_PAGES, "out_data") },
	},
	[FUSE_POLL] = {
		.opcode = FUSE_POLL, .name = "POLL", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_poll_in, "poll_in") },
		.nr_out = 1, .out = { A_FIXED(fuse_poll_out, "poll_out") },
	},
	[FUSE_BATCH_FORGET] = {
		.opcode = FUSE_BATCH_FORGET, .name = "BATCH_FORGET",
		.flags = VQF_OPF_HIPRIO | VQF_OPF_NOREPLY,
		.nr_in = 2,
		.in = { A_FIXED(fuse_batch_forget_in, "batch_forget_in"),
			A_ARRAY(fuse_forget_one, fuse_batch_forget_in, count,
				0, "forget_one") },
	},
	[FUSE_FALLOCATE] = {
		.opcode = FUSE_FALLOCATE, .name = "FALLOCATE", .flags = RQ,
		.nr_in = 1,
		.in = { A_FIXED(fuse_fallocate_in, "fallocate_in") },
	},
	[FUSE_READDIRPLUS] = {
		.opcode = FUSE_READDIRPLUS, .name = "READDIRPLUS",
		.flags = RQ | VQF_OPF_OUT_ARGVAR | VQF_OPF_OUT_PAGES,
		.nr_in = 1, .in = { A_FIXED(fuse_read_in, "read_in") },
		.nr_out = 1,
		.out = { A_DATA_BOUND(fuse_read_in, size, 0, VQF_ARGF_PAGES,
				      "direntplus") },
	},
	[FUSE_RENAME2] = {
		.opcode = FUSE_RENAME2, .name = "RENAME2", .flags = RQ,
		.nr_in = 3,
		.in = { A_FIXED(fuse_rename2_in, "rename2_in"),
			NAME_ARG("oldname"), NAME_ARG("newname") },
	},
	[FUSE_LSEEK] = {
		.opcode = FUSE_LSEEK, .name = "LSEEK", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_lseek_in, "lseek_in") },
		.nr_out = 1, .out = { A_FIXED(fuse_lseek_out, "lseek_out") },
	},
	[FUSE_COPY_FILE_RANGE] = {
		.opcode = FUSE_COPY_FILE_RANGE, .name = "COPY_FILE_RANGE",
		.flags = RQ,
		.nr_in = 1,
		.in = { A_FIXED(fuse_copy_file_range_in,
				"copy_file_range_in") },
		.nr_out = 1, .out = { A_FIXED(fuse_write_out, "write_out") },
	},
	[FUSE_SETUPMAPPING] = {
		.opcode = FUSE_SETUPMAPPING, .name = "SETUPMAPPING",
		.flags = RQ,
		.nr_in = 1,
		.in = { A_FIXED(fuse_setupmapping_in, "setupmapping_in") },
	},
	[FUSE_REMOVEMAPPING] = {
		.opcode = FUSE_REMOVEMAPPING, .name = "REMOVEMAPPING",
		.flags = RQ,
		.nr_in = 2,
		.in = { A_FIXED(fuse_removemapping_in, "removemapping_in"),
			A_ARRAY(fuse_removemapping_one, fuse_removemapping_in,
				count, VQF_REMOVEMAPPING_MAX,
				"removemapping_one") },
	},
	[FUSE_SYNCFS] = {
		.opcode = FUSE_SYNCFS, .name = "SYNCFS", .flags = RQ,
		.nr_in = 1, .in = { A_FIXED(fuse_syncfs_in, "syncfs_in") },
	},
};

const struct vqf_fuse_op *vqf_fuse_op(u32 opcode)
{
	if (opcode >= ARRAY_SIZE(vqf_fuse_ops) || !vqf_fuse_ops[opcode].name)
		return NULL;
	return &vqf_fuse_ops[opcode];
}

const struct vqf_fuse_op *vqf_fuse_op_at(unsigned int i)
{
	unsigned int op;

	for (op = 0; op < ARRAY_SIZE(vqf_fuse_ops); op++) {
		if (!vqf_fuse_ops[op].name)
			continue;
		if (i-- == 0)
			return &vqf_fuse_ops[op];
	}
	return NULL;
}

unsigned int vqf_fuse_op_count(void)
{
	unsigned int op, n = 0;

	for (op = 0; op < ARRAY_SIZE(vqf_fuse_ops); op++)
		n += vqf_fuse_ops[op].name != NULL;
	return n;
}

static bool minor_before(u32 minor, u32 since)
{
	return minor != 0 && minor < since;
}

u32 vqf_fuse_op_in_fixed_size(const struct vqf_fuse_op *op, u32 minor,
			      bool setxattr_ext)
{
	if (!op || op->nr_in == 0 || op->in[0].kind != VQF_ARG_FIXED)
		return 0;
	switch (op->opcode) {
	case FUSE_MKNOD:
	case FUSE_CREATE:
		/* Both min_sizes are the pre-7.12 forms. */
		if (minor_before(minor, 12))
			return op->in[0].min_size;
		break;
	case FUSE_WRITE:
		if (minor_before(minor, 9))
			return FUSE_COMPAT_WRITE_IN_SIZE;
		break;
	case FUSE_SETXATTR:
		if (!setxattr_ext)
			return FUSE_COMPAT_SETXATTR_IN_SIZE;
		break;
	}
	return op->in[0].size;
}

u32 vqf_fuse_op_out_fixed_size(const struct vqf_fuse_op *op, u32 minor)
{
	if (!op || op->nr_out == 0 || op->out[0].kind != VQF_ARG_FIXED)
		return 0;
	switch (op->opcode) {
	case FUSE_INIT:
		/* Sent before a minor is agreed on. */
		return op->out[0].size;
	case FUSE_STATFS:
		if (minor_before(minor, 4))
			return FUSE_COMPAT_STATFS_SIZE;
		return op->out[0].size;
	}
	/* entry_out and attr_out grew in 7.9; others have no compat form. */
	if (minor_before(minor, 9))
		return op->out[0].min_size;
	return op->out[0].size;
}

int vqf_fuse_arg_count(const struct vqf_arg_shape *shape, const void *in0,
		       u32 in0_len, u64 *count)
{
	const u8 *p = in0;
	u32 v32;
	u64 v64;

	if (!shape || !in0 || !count)
		return -EINVAL;
	if ((u32)shape->count_off + shape->count_width > in0_len)
		return -EINVAL;
	switch (shape->count_width) {
	case 4:
		memcpy(&v32, p + shape->count_off, sizeof(v32));
		*count = v32;
		return 0;
	case 8:
		memcpy(&v64, p + shape->count_off, sizeof(v64));
		*count = v64;
		return 0;
	}
	return -EINVAL;
}
