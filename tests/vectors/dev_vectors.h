/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dev_vectors.h - device-side request parser vectors, shared by the cmocka
 * test (tests/unit/dev) and the in-kernel KTAP module (kernel/).
 *
 * Each vector is one guest request (header fields + argument bytes) and
 * the connection it meets, with the outcome the parser must produce.  The
 * runner lays the request out over every split the vector's size allows
 * (one segment; two and three segments cut at every byte boundary, with
 * empty segments in between; one byte per segment), parses it and checks:
 * the errno and reason, that exactly the reason's counter moved, the names
 * and view lengths, that vqf_dev_flatten() reproduces the request byte for
 * byte, and the reply (or its absence) vqf_dev_reply_req() writes.
 *
 * Kernel-clean: lib/ headers only, no libc, large buffers in static storage
 * (the runner is not reentrant).
 *
 *   vqf_dev_vectors_count(), vqf_dev_vectors_name(i), vqf_dev_vectors_run(i)
 *   return 0 on success or the __LINE__ of the failed check;
 *   vqf_dev_vectors_last() describes the last failure (split, got, want).
 */
#ifndef VQF_DEV_VECTORS_H
#define VQF_DEV_VECTORS_H

#include "vqf_dev.h"

struct vqf_dev_vec {
	const char *name;
	u32 opcode;
	const void *arg;	/* bytes right after fuse_in_header */
	u32 arg_len;
	const void *pay;	/* bytes after those (payload, tails) */
	u32 pay_len;
	s32 len_delta;		/* added to the true in.len */
	u32 keep1;		/* n + 1: only n bytes readable; 0: all */
	u16 extlen;		/* fuse_in_header.total_extlen */
	u8 hiprio;
	u8 uninit;		/* connection has not seen INIT */
	u64 flags;		/* negotiated INIT flags */
	u32 max_write, max_read, name_max, path_max, forget_max; /* 0: dflt */
	enum vqf_dev_reason reason;
	u32 name_len1, name2_len1;	/* expected length + 1; 0: no name */
	u32 data_len, ext_len;		/* expected view lengths */
};

/* The errno a guest gets back for each reason, as documented. */
static const int vqf_dev_vec_reply_errno[VQF_DEV_R_NR] = {
	[VQF_DEV_OK] = 0,
	[VQF_DEV_R_HDR_SHORT] = -EPROTO,
	[VQF_DEV_R_LEN_SMALL] = -EPROTO,
	[VQF_DEV_R_LEN_OVER] = -EPROTO,
	[VQF_DEV_R_LEN_UNDER] = -EPROTO,
	[VQF_DEV_R_TOO_BIG] = -EINVAL,
	[VQF_DEV_R_OPCODE] = -ENOSYS,
	[VQF_DEV_R_NO_INIT] = -EIO,
	[VQF_DEV_R_REINIT] = -EIO,
	[VQF_DEV_R_QUEUE] = -EINVAL,
	[VQF_DEV_R_ARG_SHORT] = -EINVAL,
	[VQF_DEV_R_TRAILING] = -EINVAL,
	[VQF_DEV_R_NAME_UNTERM] = -EINVAL,
	[VQF_DEV_R_NAME_LONG] = -ENAMETOOLONG,
	[VQF_DEV_R_NAME_BAD] = -EINVAL,
	[VQF_DEV_R_DATA_SIZE] = -EINVAL,
	[VQF_DEV_R_DATA_MAX] = -EINVAL,
	[VQF_DEV_R_IO_SIZE] = -EINVAL,
	[VQF_DEV_R_COUNT] = -EINVAL,
	[VQF_DEV_R_COUNT_MAX] = -EINVAL,
	[VQF_DEV_R_EXT] = -EINVAL,
	[VQF_DEV_R_EXT_BAD] = -EINVAL,
};

/* ... and the errno vqf_dev_parse() returns, as documented. */
static const int vqf_dev_vec_parse_errno[VQF_DEV_R_NR] = {
	[VQF_DEV_OK] = 0,
	[VQF_DEV_R_HDR_SHORT] = -ENODATA,
	[VQF_DEV_R_LEN_SMALL] = -EBADMSG,
	[VQF_DEV_R_LEN_OVER] = -EOVERFLOW,
	[VQF_DEV_R_LEN_UNDER] = -EPROTO,
	[VQF_DEV_R_TOO_BIG] = -E2BIG,
	[VQF_DEV_R_OPCODE] = -ENOSYS,
	[VQF_DEV_R_NO_INIT] = -ENOTCONN,
	[VQF_DEV_R_REINIT] = -EISCONN,
	[VQF_DEV_R_QUEUE] = -EPERM,
	[VQF_DEV_R_ARG_SHORT] = -ENOMSG,
	[VQF_DEV_R_TRAILING] = -EBADR,
	[VQF_DEV_R_NAME_UNTERM] = -EILSEQ,
	[VQF_DEV_R_NAME_LONG] = -ENAMETOOLONG,
	[VQF_DEV_R_NAME_BAD] = -EBADE,
	[VQF_DEV_R_DATA_SIZE] = -EMSGSIZE,
	[VQF_DEV_R_DATA_MAX] = -ERANGE,
	[VQF_DEV_R_IO_SIZE] = -EFBIG,
	[VQF_DEV_R_COUNT] = -EBADSLT,
	[VQF_DEV_R_COUNT_MAX] = -ETOOMANYREFS,
	[VQF_DEV_R_EXT] = -EBADRQC,
	[VQF_DEV_R_EXT_BAD] = -EUCLEAN,
};

static const u8 vqf_dev_vec_zeros[8400];

#define VQF_DV_A16	"aaaaaaaaaaaaaaaa"
#define VQF_DV_A256	VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 \
			VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 \
			VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 \
			VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 VQF_DV_A16
#define VQF_DV_A255	VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 \
			VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 \
			VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 \
			VQF_DV_A16 VQF_DV_A16 VQF_DV_A16 "aaaaaaaaaaaaaaa"
#define VQF_DV_A1024	VQF_DV_A256 VQF_DV_A256 VQF_DV_A256 VQF_DV_A256

/* A string argument; the literal's own NUL is part of it. */
#define VQF_DV_STR(s)		.arg = (s), .arg_len = sizeof(s)
/* A fixed struct, no name; or only its first @n bytes. */
#define VQF_DV_FIX(T, ...)	.arg = &(const struct T){ __VA_ARGS__ }, \
				.arg_len = sizeof(struct T)
#define VQF_DV_FIXN(T, n, ...)	.arg = &(const struct T){ __VA_ARGS__ }, \
				.arg_len = (n)
/* A fixed struct directly followed by a string (with its NUL). */
#define VQF_DV_FIXSTR(T, s, ...)					\
	.arg = &(const struct { struct T a; char n[sizeof(s)]; })	\
		{ { __VA_ARGS__ }, s },					\
	.arg_len = sizeof(struct T) + sizeof(s)
/* Same, but only @n bytes of it (to cut a NUL off). */
#define VQF_DV_FIXSTRN(T, s, len, ...)					\
	.arg = &(const struct { struct T a; char n[sizeof(s)]; })	\
		{ { __VA_ARGS__ }, s },					\
	.arg_len = (len)
#define VQF_DV_PAY(p)		.pay = (p), .pay_len = sizeof(p) - 1
#define VQF_DV_ZEROS(n)		.pay = vqf_dev_vec_zeros, .pay_len = (n)
#define VQF_DV_NAME(n)		.name_len1 = (n) + 1
#define VQF_DV_NAMES(n, m)	.name_len1 = (n) + 1, .name2_len1 = (m) + 1
#define VQF_DV_REJECT(r)	.reason = (r)

/* SETXATTR's argument without FUSE_SETXATTR_EXT: size, flags, name. */
struct vqf_dev_vec_setxattr_compat {
	u32 size;
	u32 flags;
	char name[7];
};

/*
 * Extension blocks (fuse_in_header.total_extlen * 8 bytes, or the plain
 * security context tail): headers {size, type} as u32 pairs, host-endian
 * like the rest of FUSE.  VQF_DV_EXT(...) is the block as the payload.
 */
#define VQF_DV_EXT(...)	.pay = (const u32[]){ __VA_ARGS__ },		\
			.pay_len = sizeof((const u32[]){ __VA_ARGS__ })
/* One security context: header, fuse_secctx, name, value, padding to 8. */
struct vqf_dev_vec_secctx {
	struct fuse_secctx_header h;
	struct fuse_secctx c;
	char name[17];
	char value[4];
	char pad[3];
};
#define VQF_DV_SECCTX(hsize, nr, csize, nm)				\
	.pay = &(const struct vqf_dev_vec_secctx){ { hsize, nr },	\
		{ csize, 0 }, nm, "abc", "" },				\
	.pay_len = sizeof(struct vqf_dev_vec_secctx)

#define VQF_DV_OK(op, ...) { .name = #op, .opcode = FUSE_##op, \
			     __VA_ARGS__ }
#define VQF_DV(nm, op, ...) { .name = nm, .opcode = (op), __VA_ARGS__ }

static const struct vqf_dev_vec vqf_dev_vecs[] = {
	/* Every opcode of the table, well formed. */
	VQF_DV_OK(INIT, .uninit = 1,
		  VQF_DV_FIX(fuse_init_in, .major = 7, .minor = 38)),
	VQF_DV_OK(LOOKUP, VQF_DV_STR("name"), VQF_DV_NAME(4)),
	VQF_DV_OK(FORGET, .hiprio = 1, VQF_DV_FIX(fuse_forget_in, .nlookup = 1)),
	VQF_DV_OK(GETATTR, VQF_DV_FIX(fuse_getattr_in, .fh = 3)),
	VQF_DV_OK(SETATTR, VQF_DV_FIX(fuse_setattr_in, .valid = FATTR_MODE)),
	VQF_DV_OK(READLINK),
	VQF_DV_OK(SYMLINK, VQF_DV_STR("ln\0/some/target"),
		  VQF_DV_NAMES(2, 12)),
	VQF_DV_OK(MKNOD, VQF_DV_FIXSTR(fuse_mknod_in, "dev", .mode = 0600),
		  VQF_DV_NAME(3)),
	VQF_DV_OK(MKDIR, VQF_DV_FIXSTR(fuse_mkdir_in, "dir", .mode = 0755),
		  VQF_DV_NAME(3)),
	VQF_DV_OK(UNLINK, VQF_DV_STR("f"), VQF_DV_NAME(1)),
	VQF_DV_OK(RMDIR, VQF_DV_STR("d"), VQF_DV_NAME(1)),
	VQF_DV_OK(RENAME, VQF_DV_FIXSTR(fuse_rename_in, "old\0newer",
					.newdir = 1),
		  VQF_DV_NAMES(3, 5)),
	VQF_DV_OK(LINK, VQF_DV_FIXSTR(fuse_link_in, "new", .oldnodeid = 2),
		  VQF_DV_NAME(3)),
	VQF_DV_OK(OPEN, VQF_DV_FIX(fuse_open_in, .flags = 2)),
	VQF_DV_OK(READ, VQF_DV_FIX(fuse_read_in, .size = 4096)),
	VQF_DV_OK(WRITE, VQF_DV_FIX(fuse_write_in, .size = 5),
		  VQF_DV_PAY("hello"), .data_len = 5),
	VQF_DV_OK(STATFS),
	VQF_DV_OK(RELEASE, VQF_DV_FIX(fuse_release_in, .fh = 3)),
	VQF_DV_OK(FSYNC, VQF_DV_FIX(fuse_fsync_in, .fh = 3)),
	VQF_DV_OK(SETXATTR,
		  .arg = &(const struct vqf_dev_vec_setxattr_compat)
			{ 3, 0, "user.a" },
		  .arg_len = 8 + 7, VQF_DV_PAY("val"), VQF_DV_NAME(6),
		  .data_len = 3),
	VQF_DV_OK(GETXATTR, VQF_DV_FIXSTR(fuse_getxattr_in, "user.a",
					  .size = 64),
		  VQF_DV_NAME(6)),
	VQF_DV_OK(LISTXATTR, VQF_DV_FIX(fuse_getxattr_in, .size = 64)),
	VQF_DV_OK(REMOVEXATTR, VQF_DV_STR("user.a"), VQF_DV_NAME(6)),
	VQF_DV_OK(FLUSH, VQF_DV_FIX(fuse_flush_in, .fh = 3)),
	VQF_DV_OK(OPENDIR, VQF_DV_FIX(fuse_open_in, .flags = 0)),
	VQF_DV_OK(READDIR, VQF_DV_FIX(fuse_read_in, .size = 4096)),
	VQF_DV_OK(RELEASEDIR, VQF_DV_FIX(fuse_release_in, .fh = 3)),
	VQF_DV_OK(FSYNCDIR, VQF_DV_FIX(fuse_fsync_in, .fh = 3)),
	VQF_DV_OK(GETLK, VQF_DV_FIX(fuse_lk_in, .fh = 3)),
	VQF_DV_OK(SETLK, VQF_DV_FIX(fuse_lk_in, .fh = 3)),
	VQF_DV_OK(SETLKW, VQF_DV_FIX(fuse_lk_in, .fh = 3)),
	VQF_DV_OK(ACCESS, VQF_DV_FIX(fuse_access_in, .mask = 4)),
	VQF_DV_OK(CREATE, VQF_DV_FIXSTR(fuse_create_in, "file", .mode = 0644),
		  VQF_DV_NAME(4)),
	VQF_DV_OK(INTERRUPT, .hiprio = 1,
		  VQF_DV_FIX(fuse_interrupt_in, .unique = 8)),
	VQF_DV_OK(DESTROY),
	VQF_DV_OK(IOCTL, VQF_DV_FIX(fuse_ioctl_in, .in_size = 4),
		  VQF_DV_PAY("abcd"), .data_len = 4),
	VQF_DV_OK(POLL, VQF_DV_FIX(fuse_poll_in, .fh = 3)),
	VQF_DV_OK(BATCH_FORGET, .hiprio = 1,
		  VQF_DV_FIX(fuse_batch_forget_in, .count = 2),
		  VQF_DV_ZEROS(32), .data_len = 32),
	VQF_DV_OK(FALLOCATE, VQF_DV_FIX(fuse_fallocate_in, .length = 9)),
	VQF_DV_OK(READDIRPLUS, VQF_DV_FIX(fuse_read_in, .size = 4096)),
	VQF_DV_OK(RENAME2, VQF_DV_FIXSTR(fuse_rename2_in, "a\0b", .flags = 1),
		  VQF_DV_NAMES(1, 1)),
	VQF_DV_OK(LSEEK, VQF_DV_FIX(fuse_lseek_in, .whence = 3)),
	VQF_DV_OK(COPY_FILE_RANGE,
		  VQF_DV_FIX(fuse_copy_file_range_in, .len = 7)),
	VQF_DV_OK(SETUPMAPPING, VQF_DV_FIX(fuse_setupmapping_in, .len = 4096)),
	VQF_DV_OK(REMOVEMAPPING, VQF_DV_FIX(fuse_removemapping_in, .count = 2),
		  VQF_DV_ZEROS(32), .data_len = 32),
	VQF_DV_OK(SYNCFS, VQF_DV_FIX(fuse_syncfs_in, .padding = 0)),

	/* Well formed, at the edges. */
	VQF_DV("init_pre_7_36", FUSE_INIT, .uninit = 1,
	       VQF_DV_FIXN(fuse_init_in, 16, .major = 7, .minor = 31)),
	VQF_DV("lookup_dotdot", FUSE_LOOKUP, VQF_DV_STR(".."), VQF_DV_NAME(2)),
	VQF_DV("lookup_1024", FUSE_LOOKUP, VQF_DV_STR(VQF_DV_A1024),
	       VQF_DV_NAME(1024)),
	VQF_DV("lookup_name_max_8", FUSE_LOOKUP, .name_max = 8,
	       VQF_DV_STR("12345678"), VQF_DV_NAME(8)),
	VQF_DV("write_empty", FUSE_WRITE, VQF_DV_FIX(fuse_write_in, .size = 0)),
	VQF_DV("write_max", FUSE_WRITE, .max_write = 4096,
	       VQF_DV_FIX(fuse_write_in, .size = 4096), VQF_DV_ZEROS(4096),
	       .data_len = 4096),
	VQF_DV("setxattr_ext", FUSE_SETXATTR, .flags = FUSE_SETXATTR_EXT,
	       VQF_DV_FIXSTR(fuse_setxattr_in, "user.b", .size = 3),
	       VQF_DV_PAY("val"), VQF_DV_NAME(6), .data_len = 3),
	VQF_DV("setxattr_empty_value", FUSE_SETXATTR,
	       .arg = &(const struct vqf_dev_vec_setxattr_compat)
		       { 0, 0, "user.a" },
	       .arg_len = 8 + 7, VQF_DV_NAME(6)),
	VQF_DV("getxattr_255", FUSE_GETXATTR,
	       VQF_DV_FIXSTR(fuse_getxattr_in, VQF_DV_A255, .size = 0),
	       VQF_DV_NAME(255)),
	VQF_DV("removemapping_256", FUSE_REMOVEMAPPING,
	       VQF_DV_FIX(fuse_removemapping_in, .count = 256),
	       VQF_DV_ZEROS(4096), .data_len = 4096),
	VQF_DV("mkdir_secctx", FUSE_MKDIR, .flags = FUSE_SECURITY_CTX,
	       VQF_DV_FIXSTR(fuse_mkdir_in, "dir", .mode = 0755),
	       VQF_DV_SECCTX(40, 1, 4, "security.selinux"), VQF_DV_NAME(3),
	       .ext_len = 40),
	VQF_DV("mkdir_secctx_none", FUSE_MKDIR, .flags = FUSE_SECURITY_CTX,
	       VQF_DV_FIXSTR(fuse_mkdir_in, "dir", .mode = 0755),
	       VQF_DV_EXT(8, 0), VQF_DV_NAME(3), .ext_len = 8),
	VQF_DV("create_ext", FUSE_CREATE, .extlen = 5,
	       VQF_DV_FIXSTR(fuse_create_in, "f", .mode = 0644),
	       VQF_DV_SECCTX(40, 1, 4, "security.selinux"), VQF_DV_NAME(1),
	       .ext_len = 40),
	/* Linux 6.1 without an LSM: a header with no context. */
	VQF_DV("mknod_ext_no_context", FUSE_MKNOD, .extlen = 1,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(8, 0), VQF_DV_NAME(1), .ext_len = 8),
	VQF_DV("mknod_ext_two_headers", FUSE_MKNOD, .extlen = 2,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(8, 0, 8, 0), VQF_DV_NAME(1), .ext_len = 16),
	VQF_DV("symlink_ext_and_secctx", FUSE_SYMLINK, .extlen = 1,
	       .flags = FUSE_SECURITY_CTX, VQF_DV_STR("ln\0t"),
	       VQF_DV_EXT(8, 0), VQF_DV_NAMES(2, 1), .ext_len = 8),

	/* Framing. */
	VQF_DV("empty_chain", FUSE_LOOKUP, VQF_DV_STR("x"), .keep1 = 1,
	       VQF_DV_REJECT(VQF_DEV_R_HDR_SHORT)),
	VQF_DV("header_39", FUSE_LOOKUP, VQF_DV_STR("x"), .keep1 = 40,
	       VQF_DV_REJECT(VQF_DEV_R_HDR_SHORT)),
	VQF_DV("header_12", FUSE_LOOKUP, VQF_DV_STR("x"), .keep1 = 13,
	       VQF_DV_REJECT(VQF_DEV_R_HDR_SHORT)),
	VQF_DV("len_39", FUSE_LOOKUP, VQF_DV_STR("x"), .len_delta = -3,
	       VQF_DV_REJECT(VQF_DEV_R_LEN_SMALL)),
	VQF_DV("len_0", FUSE_LOOKUP, VQF_DV_STR("x"), .len_delta = -42,
	       VQF_DV_REJECT(VQF_DEV_R_LEN_SMALL)),
	VQF_DV("len_over", FUSE_LOOKUP, VQF_DV_STR("x"), .len_delta = 1,
	       VQF_DV_REJECT(VQF_DEV_R_LEN_OVER)),
	VQF_DV("len_4g", FUSE_LOOKUP, VQF_DV_STR("x"), .len_delta = -43,
	       VQF_DV_REJECT(VQF_DEV_R_LEN_OVER)),
	VQF_DV("len_under", FUSE_LOOKUP, VQF_DV_STR("x"), .len_delta = -1,
	       VQF_DV_REJECT(VQF_DEV_R_LEN_UNDER)),
	VQF_DV("too_big", FUSE_WRITE, .max_write = 4096,
	       VQF_DV_FIX(fuse_write_in, .size = 8200), VQF_DV_ZEROS(8200),
	       VQF_DV_REJECT(VQF_DEV_R_TOO_BIG)),
	VQF_DV("ext_beyond", FUSE_MKDIR, .extlen = 100,
	       VQF_DV_FIXSTR(fuse_mkdir_in, "d"), VQF_DV_REJECT(VQF_DEV_R_EXT)),
	VQF_DV("ext_on_lookup", FUSE_LOOKUP, .extlen = 1, VQF_DV_STR("x"),
	       VQF_DV_ZEROS(8), VQF_DV_REJECT(VQF_DEV_R_EXT)),
	/* Extension blocks that are not a run of well-formed headers. */
	VQF_DV("mknod_ext_zero8", FUSE_MKNOD, .extlen = 1,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_ZEROS(8), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_size_fff8", FUSE_MKNOD, .extlen = 1,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(0xfff8, 0), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_size_4", FUSE_MKNOD, .extlen = 1,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(4, 0), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_size_12", FUSE_MKNOD, .extlen = 2,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(12, 0, 0, 0), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_size_16_of_8", FUSE_MKNOD, .extlen = 1,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(16, 0), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_size_max", FUSE_MKNOD, .extlen = 1,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(0xfffffff8, 0), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_type_groups", FUSE_MKNOD, .extlen = 2,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(16, 32, 1, 0), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_type_all_ones", FUSE_MKNOD, .extlen = 1,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(8, 0xffffffff), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_second_zero", FUSE_MKNOD, .extlen = 2,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(8, 0, 0, 0), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_secctx_slack", FUSE_MKNOD, .extlen = 2,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(16, 0, 0, 0), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mknod_ext_secctx_missing", FUSE_MKNOD, .extlen = 1,
	       VQF_DV_FIXSTR(fuse_mknod_in, "n", .mode = 0100600),
	       VQF_DV_EXT(8, 1), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("create_ext_secctx_value_over", FUSE_CREATE, .extlen = 5,
	       VQF_DV_FIXSTR(fuse_create_in, "f", .mode = 0644),
	       VQF_DV_SECCTX(40, 1, 12, "security.selinux"),
	       VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("create_ext_secctx_value_huge", FUSE_CREATE, .extlen = 5,
	       VQF_DV_FIXSTR(fuse_create_in, "f", .mode = 0644),
	       VQF_DV_SECCTX(40, 1, 0xffffffff, "security.selinux"),
	       VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("create_ext_secctx_two_of_one", FUSE_CREATE, .extlen = 5,
	       VQF_DV_FIXSTR(fuse_create_in, "f", .mode = 0644),
	       VQF_DV_SECCTX(40, 2, 4, "security.selinux"),
	       VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("create_ext_secctx_name_empty", FUSE_CREATE, .extlen = 5,
	       VQF_DV_FIXSTR(fuse_create_in, "f", .mode = 0644),
	       VQF_DV_SECCTX(40, 1, 4, ""), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("create_ext_secctx_name_unterminated", FUSE_CREATE, .extlen = 3,
	       VQF_DV_FIXSTR(fuse_create_in, "f", .mode = 0644),
	       VQF_DV_EXT(24, 1, 0, 0, 0x61616161, 0x61616161),
	       VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("mkdir_secctx_tail_zeros", FUSE_MKDIR,
	       .flags = FUSE_SECURITY_CTX,
	       VQF_DV_FIXSTR(fuse_mkdir_in, "dir", .mode = 0755),
	       VQF_DV_ZEROS(24), VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("symlink_ext_size_fff8", FUSE_SYMLINK, .extlen = 1,
	       VQF_DV_STR("ln\0t"), VQF_DV_EXT(0xfff8, 1),
	       VQF_DV_REJECT(VQF_DEV_R_EXT_BAD)),
	VQF_DV("ext_and_secctx_tail", FUSE_MKDIR, .extlen = 1,
	       .flags = FUSE_SECURITY_CTX,
	       VQF_DV_FIXSTR(fuse_mkdir_in, "d"), VQF_DV_ZEROS(16),
	       VQF_DV_REJECT(VQF_DEV_R_TRAILING)),

	/* Opcode, queue, INIT state. */
	VQF_DV("opcode_0", 0, VQF_DV_REJECT(VQF_DEV_R_OPCODE)),
	VQF_DV("opcode_7", 7, VQF_DV_REJECT(VQF_DEV_R_OPCODE)),
	VQF_DV("opcode_bmap", FUSE_BMAP, VQF_DV_FIX(fuse_bmap_in, .block = 1),
	       VQF_DV_REJECT(VQF_DEV_R_OPCODE)),
	VQF_DV("opcode_notify_reply", FUSE_NOTIFY_REPLY,
	       VQF_DV_REJECT(VQF_DEV_R_OPCODE)),
	VQF_DV("opcode_tmpfile", FUSE_TMPFILE,
	       VQF_DV_FIXSTR(fuse_create_in, "t", .mode = 0600),
	       VQF_DV_REJECT(VQF_DEV_R_OPCODE)),
	VQF_DV("opcode_cuse_init", CUSE_INIT, VQF_DV_REJECT(VQF_DEV_R_OPCODE)),
	VQF_DV("opcode_all_ones", 0xffffffff, VQF_DV_REJECT(VQF_DEV_R_OPCODE)),
	VQF_DV("opcode_hiprio_unknown", 99, .hiprio = 1,
	       VQF_DV_REJECT(VQF_DEV_R_OPCODE)),
	VQF_DV("lookup_on_hiprio", FUSE_LOOKUP, .hiprio = 1, VQF_DV_STR("x"),
	       VQF_DV_REJECT(VQF_DEV_R_QUEUE)),
	VQF_DV("init_on_hiprio", FUSE_INIT, .hiprio = 1, .uninit = 1,
	       VQF_DV_FIX(fuse_init_in, .major = 7),
	       VQF_DV_REJECT(VQF_DEV_R_QUEUE)),
	VQF_DV("forget_on_request_q", FUSE_FORGET,
	       VQF_DV_FIX(fuse_forget_in, .nlookup = 1),
	       VQF_DV_REJECT(VQF_DEV_R_QUEUE)),
	VQF_DV("lookup_before_init", FUSE_LOOKUP, .uninit = 1, VQF_DV_STR("x"),
	       VQF_DV_REJECT(VQF_DEV_R_NO_INIT)),
	VQF_DV("forget_before_init", FUSE_FORGET, .uninit = 1, .hiprio = 1,
	       VQF_DV_FIX(fuse_forget_in, .nlookup = 1),
	       VQF_DV_REJECT(VQF_DEV_R_NO_INIT)),
	VQF_DV("init_twice", FUSE_INIT, VQF_DV_FIX(fuse_init_in, .major = 7),
	       VQF_DV_REJECT(VQF_DEV_R_REINIT)),

	/* Fixed arguments. */
	VQF_DV("getattr_short", FUSE_GETATTR, VQF_DV_FIXN(fuse_getattr_in, 8),
	       VQF_DV_REJECT(VQF_DEV_R_ARG_SHORT)),
	VQF_DV("getattr_none", FUSE_GETATTR,
	       VQF_DV_REJECT(VQF_DEV_R_ARG_SHORT)),
	VQF_DV("init_12", FUSE_INIT, .uninit = 1,
	       VQF_DV_FIXN(fuse_init_in, 12, .major = 7),
	       VQF_DV_REJECT(VQF_DEV_R_ARG_SHORT)),
	VQF_DV("getattr_trailing", FUSE_GETATTR, VQF_DV_FIX(fuse_getattr_in),
	       VQF_DV_ZEROS(1), VQF_DV_REJECT(VQF_DEV_R_TRAILING)),
	VQF_DV("readlink_trailing", FUSE_READLINK, VQF_DV_ZEROS(1),
	       VQF_DV_REJECT(VQF_DEV_R_TRAILING)),
	VQF_DV("init_65", FUSE_INIT, .uninit = 1,
	       VQF_DV_FIX(fuse_init_in, .major = 7), VQF_DV_ZEROS(1),
	       VQF_DV_REJECT(VQF_DEV_R_TRAILING)),

	/* Names. */
	VQF_DV("lookup_unterminated", FUSE_LOOKUP, .arg = "abc", .arg_len = 3,
	       VQF_DV_REJECT(VQF_DEV_R_NAME_UNTERM)),
	VQF_DV("lookup_nothing", FUSE_LOOKUP,
	       VQF_DV_REJECT(VQF_DEV_R_NAME_UNTERM)),
	VQF_DV("lookup_embedded_nul", FUSE_LOOKUP, VQF_DV_STR("a\0b"),
	       VQF_DV_REJECT(VQF_DEV_R_TRAILING)),
	VQF_DV("lookup_1025", FUSE_LOOKUP, VQF_DV_STR(VQF_DV_A1024 "a"),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_LONG)),
	VQF_DV("lookup_1025_unterminated", FUSE_LOOKUP,
	       .arg = VQF_DV_A1024 "a", .arg_len = 1025,
	       VQF_DV_REJECT(VQF_DEV_R_NAME_LONG)),
	VQF_DV("lookup_over_name_max", FUSE_LOOKUP, .name_max = 8,
	       VQF_DV_STR("123456789"), VQF_DV_REJECT(VQF_DEV_R_NAME_LONG)),
	VQF_DV("lookup_slash", FUSE_LOOKUP, VQF_DV_STR("a/b"),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_BAD)),
	VQF_DV("lookup_empty", FUSE_LOOKUP, VQF_DV_STR(""),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_BAD)),
	VQF_DV("rename_second_unterminated", FUSE_RENAME,
	       VQF_DV_FIXSTRN(fuse_rename_in, "old\0new", 8 + 7),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_UNTERM)),
	VQF_DV("rename_one_name", FUSE_RENAME,
	       VQF_DV_FIXSTR(fuse_rename_in, "old"),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_UNTERM)),
	VQF_DV("rename_trailing", FUSE_RENAME,
	       VQF_DV_FIXSTR(fuse_rename_in, "old\0new\0x"),
	       VQF_DV_REJECT(VQF_DEV_R_TRAILING)),
	VQF_DV("rename_slash_new", FUSE_RENAME,
	       VQF_DV_FIXSTR(fuse_rename_in, "old\0../x"),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_BAD)),
	VQF_DV("symlink_target_over_path_max", FUSE_SYMLINK, .path_max = 8,
	       VQF_DV_STR("ln\0/123456789"), VQF_DV_REJECT(VQF_DEV_R_NAME_LONG)),
	VQF_DV("symlink_empty_target", FUSE_SYMLINK, VQF_DV_STR("ln\0"),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_BAD)),
	VQF_DV("getxattr_256", FUSE_GETXATTR,
	       VQF_DV_FIXSTR(fuse_getxattr_in, VQF_DV_A256, .size = 0),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_LONG)),
	VQF_DV("removexattr_empty", FUSE_REMOVEXATTR, VQF_DV_STR(""),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_BAD)),
	VQF_DV("mkdir_tail_without_secctx", FUSE_MKDIR,
	       VQF_DV_FIXSTR(fuse_mkdir_in, "dir", .mode = 0755),
	       VQF_DV_ZEROS(24), VQF_DV_REJECT(VQF_DEV_R_TRAILING)),

	/* Sizes and counts. */
	VQF_DV("write_size_over_payload", FUSE_WRITE,
	       VQF_DV_FIX(fuse_write_in, .size = 6), VQF_DV_PAY("hello"),
	       VQF_DV_REJECT(VQF_DEV_R_DATA_SIZE)),
	VQF_DV("write_size_under_payload", FUSE_WRITE,
	       VQF_DV_FIX(fuse_write_in, .size = 4), VQF_DV_PAY("hello"),
	       VQF_DV_REJECT(VQF_DEV_R_DATA_SIZE)),
	VQF_DV("write_over_max_write", FUSE_WRITE, .max_write = 4096,
	       VQF_DV_FIX(fuse_write_in, .size = 4097), VQF_DV_ZEROS(4097),
	       VQF_DV_REJECT(VQF_DEV_R_IO_SIZE)),
	VQF_DV("read_over_max_read", FUSE_READ, .max_read = 4096,
	       VQF_DV_FIX(fuse_read_in, .size = 4097),
	       VQF_DV_REJECT(VQF_DEV_R_IO_SIZE)),
	VQF_DV("readdirplus_over_max_read", FUSE_READDIRPLUS, .max_read = 4096,
	       VQF_DV_FIX(fuse_read_in, .size = 8192),
	       VQF_DV_REJECT(VQF_DEV_R_IO_SIZE)),
	VQF_DV("ioctl_in_size_mismatch", FUSE_IOCTL,
	       VQF_DV_FIX(fuse_ioctl_in, .in_size = 5), VQF_DV_PAY("abcd"),
	       VQF_DV_REJECT(VQF_DEV_R_DATA_SIZE)),
	VQF_DV("setxattr_size_beyond", FUSE_SETXATTR,
	       .arg = &(const struct vqf_dev_vec_setxattr_compat)
		       { 100, 0, "user.a" },
	       .arg_len = 8 + 7, VQF_DV_PAY("val"),
	       VQF_DV_REJECT(VQF_DEV_R_DATA_SIZE)),
	VQF_DV("setxattr_size_over_max", FUSE_SETXATTR,
	       .arg = &(const struct vqf_dev_vec_setxattr_compat)
		       { 65537, 0, "user.a" },
	       .arg_len = 8 + 7, VQF_DV_PAY("val"),
	       VQF_DV_REJECT(VQF_DEV_R_DATA_MAX)),
	VQF_DV("setxattr_name_unterminated", FUSE_SETXATTR,
	       .arg = &(const struct vqf_dev_vec_setxattr_compat)
		       { 3, 0, "user.a" },
	       .arg_len = 8 + 6, VQF_DV_PAY("val"),
	       VQF_DV_REJECT(VQF_DEV_R_NAME_UNTERM)),
	VQF_DV("setxattr_size_short_by_one", FUSE_SETXATTR,
	       .arg = &(const struct vqf_dev_vec_setxattr_compat)
		       { 2, 0, "user.a" },
	       .arg_len = 8 + 7, VQF_DV_PAY("val"),
	       VQF_DV_REJECT(VQF_DEV_R_TRAILING)),
	VQF_DV("batch_forget_count_mismatch", FUSE_BATCH_FORGET, .hiprio = 1,
	       VQF_DV_FIX(fuse_batch_forget_in, .count = 3), VQF_DV_ZEROS(32),
	       VQF_DV_REJECT(VQF_DEV_R_COUNT)),
	VQF_DV("batch_forget_count_huge", FUSE_BATCH_FORGET, .hiprio = 1,
	       VQF_DV_FIX(fuse_batch_forget_in, .count = 0x10000001),
	       VQF_DV_ZEROS(16), VQF_DV_REJECT(VQF_DEV_R_COUNT_MAX)),
	VQF_DV("batch_forget_over_forget_max", FUSE_BATCH_FORGET, .hiprio = 1,
	       .forget_max = 2,
	       VQF_DV_FIX(fuse_batch_forget_in, .count = 3), VQF_DV_ZEROS(48),
	       VQF_DV_REJECT(VQF_DEV_R_COUNT_MAX)),
	VQF_DV("removemapping_count_mismatch", FUSE_REMOVEMAPPING,
	       VQF_DV_FIX(fuse_removemapping_in, .count = 1), VQF_DV_ZEROS(32),
	       VQF_DV_REJECT(VQF_DEV_R_COUNT)),
	VQF_DV("removemapping_257", FUSE_REMOVEMAPPING,
	       VQF_DV_FIX(fuse_removemapping_in, .count = 257),
	       VQF_DV_ZEROS(4112), VQF_DV_REJECT(VQF_DEV_R_COUNT_MAX)),
};

static inline unsigned int vqf_dev_vectors_count(void)
{
	return ARRAY_SIZE(vqf_dev_vecs);
}

static inline const char *vqf_dev_vectors_name(unsigned int i)
{
	return i < ARRAY_SIZE(vqf_dev_vecs) ? vqf_dev_vecs[i].name : "?";
}

/* Requests of at most this size are split at every byte (pairs too). */
#define VQF_DV_SPLIT_ALL	96
#define VQF_DV_IMG		(sizeof(struct fuse_in_header) + 8400 + 1100)
#define VQF_DV_MAXSEG		(VQF_DV_SPLIT_ALL + 8)

/* What the last failed check saw. */
struct vqf_dev_vec_fail {
	int line;
	u32 cut1, cut2;		/* split: ~0 = one byte per segment */
	s64 got, want;
};

struct vqf_dev_vec_ctx {
	u8 img[VQF_DV_IMG];
	u8 flat[VQF_DV_IMG];
	u8 reply[64];
	struct vqf_dev_seg seg[VQF_DV_MAXSEG];
	struct vqf_dev_req req;
	struct vqf_dev_conn conn;
	struct vqf_dev_stats st;
	struct vqf_dev_vec_fail fail;
};

static inline struct vqf_dev_vec_ctx *vqf_dev_vec_ctx(void)
{
	static struct vqf_dev_vec_ctx ctx;

	return &ctx;
}

static inline const struct vqf_dev_vec_fail *vqf_dev_vectors_last(void)
{
	return &vqf_dev_vec_ctx()->fail;
}

#define VQF_DV_CHECK(x, g, w) do {					\
	if (!(x)) {							\
		c->fail.line = __LINE__;				\
		c->fail.got = (s64)(g);					\
		c->fail.want = (s64)(w);				\
		return __LINE__;					\
	}								\
} while (0)

/* Build the request image; returns its readable length. */
static inline u32 vqf_dev_vec_build(const struct vqf_dev_vec *v, u32 i,
				    struct vqf_dev_vec_ctx *c)
{
	struct fuse_in_header h = {
		.opcode = v->opcode,
		.unique = 0x5000 + 2 * (u64)i,
		.nodeid = 1,
		.uid = 1000,
		.gid = 1000,
		.pid = 42,
		.total_extlen = v->extlen,
	};
	u32 total = sizeof(h) + v->arg_len + v->pay_len;

	h.len = total + v->len_delta;
	memcpy(c->img, &h, sizeof(h));
	if (v->arg_len)
		memcpy(c->img + sizeof(h), v->arg, v->arg_len);
	if (v->pay_len)
		memcpy(c->img + sizeof(h) + v->arg_len, v->pay, v->pay_len);
	if (v->keep1 && v->keep1 - 1 < total)
		total = v->keep1 - 1;
	return total;
}

static inline void vqf_dev_vec_conn(const struct vqf_dev_vec *v,
				    struct vqf_dev_conn *conn)
{
	vqf_dev_conn_init(conn);
	if (!v->uninit) {
		conn->initialized = true;
		conn->minor = FUSE_KERNEL_MINOR_VERSION;
	}
	conn->flags = v->flags;
	if (v->max_write)
		conn->max_write = v->max_write;
	if (v->max_read)
		conn->max_read = v->max_read;
	if (v->name_max)
		conn->name_max = v->name_max;
	if (v->path_max)
		conn->path_max = v->path_max;
	if (v->forget_max)
		conn->forget_max = v->forget_max;
}

/*
 * Lay the image out as [0,cut1) [] [cut1,cut2) [cut2,total), or one byte
 * per segment when cut1 == ~0; returns the number of segments.
 */
static inline u32 vqf_dev_vec_split(struct vqf_dev_vec_ctx *c, u32 total,
				    u32 cut1, u32 cut2)
{
	u32 n = 0, k;

	if (cut1 == ~0U) {
		for (k = 0; k < total; k++) {
			c->seg[n].base = c->img + k;
			c->seg[n++].len = 1;
		}
		return n;
	}
	c->seg[n].base = c->img;
	c->seg[n++].len = cut1;
	c->seg[n].base = c->img + cut1;		/* empty on purpose */
	c->seg[n++].len = 0;
	c->seg[n].base = c->img + cut1;
	c->seg[n++].len = cut2 - cut1;
	c->seg[n].base = c->img + cut2;
	c->seg[n++].len = total - cut2;
	return n;
}

static inline int vqf_dev_vec_one(const struct vqf_dev_vec *v, u32 i,
				  u32 cut1, u32 cut2)
{
	struct vqf_dev_vec_ctx *c = vqf_dev_vec_ctx();
	struct vqf_dev_req *req = &c->req;
	const struct fuse_out_header *oh = (const void *)c->reply;
	struct vqf_dev_wseg ws[3];
	struct vqf_dev_piece pc = { "xyz", 3 };
	u32 total, nseg, r;
	u64 sum = 0;
	int ret;

	c->fail.cut1 = cut1;
	c->fail.cut2 = cut2;
	total = vqf_dev_vec_build(v, i, c);
	nseg = vqf_dev_vec_split(c, total, cut1, cut2);
	vqf_dev_vec_conn(v, &c->conn);
	memset(&c->st, 0, sizeof(c->st));

	ret = vqf_dev_parse(&c->conn, c->seg, nseg, v->hiprio, req, &c->st);
	VQF_DV_CHECK(ret == vqf_dev_vec_parse_errno[v->reason], ret,
		     vqf_dev_vec_parse_errno[v->reason]);
	VQF_DV_CHECK(req->reason == v->reason, req->reason, v->reason);
	VQF_DV_CHECK(req->error == vqf_dev_vec_reply_errno[v->reason],
		     req->error, vqf_dev_vec_reply_errno[v->reason]);
	for (r = 0; r < VQF_DEV_R_NR; r++)
		sum += c->st.reject[r];
	VQF_DV_CHECK(sum == (v->reason != VQF_DEV_OK), sum, 1);
	if (v->reason != VQF_DEV_OK)
		VQF_DV_CHECK(c->st.reject[v->reason] == 1,
			     c->st.reject[v->reason], 1);
	VQF_DV_CHECK(c->st.parsed == (v->reason == VQF_DEV_OK),
		     c->st.parsed, v->reason == VQF_DEV_OK);

	if (v->reason == VQF_DEV_OK) {
		VQF_DV_CHECK(req->name ? req->name_len + 1 == v->name_len1 :
			     !v->name_len1, req->name_len, v->name_len1 - 1);
		if (req->name)
			VQF_DV_CHECK(!req->name[req->name_len], 0, 0);
		VQF_DV_CHECK(req->name2 ? req->name2_len + 1 == v->name2_len1 :
			     !v->name2_len1, req->name2_len, v->name2_len1 - 1);
		VQF_DV_CHECK(req->data.len == v->data_len, req->data.len,
			     v->data_len);
		VQF_DV_CHECK(req->ext.len == v->ext_len, req->ext.len,
			     v->ext_len);
		VQF_DV_CHECK(req->in.len == total, req->in.len, total);
		VQF_DV_CHECK(vqf_dev_flat_len(req) == total,
			     vqf_dev_flat_len(req), total);
		memset(c->flat, 0xa5, total);
		ret = vqf_dev_flatten(req, c->flat, total);
		VQF_DV_CHECK(ret == (int)total, ret, total);
		VQF_DV_CHECK(!memcmp(c->flat, c->img, total), 0, 1);
		VQF_DV_CHECK(vqf_dev_flatten(req, c->flat, total - 1) ==
			     -ENOSPC, 0, -ENOSPC);
	} else {
		VQF_DV_CHECK(vqf_dev_flatten(req, c->flat, sizeof(c->flat)) ==
			     -EINVAL, 0, -EINVAL);
	}

	/* The reply: 23 bytes offered over three segments. */
	memset(c->reply, 0xee, sizeof(c->reply));
	ws[0].base = c->reply;
	ws[0].len = 5;
	ws[1].base = c->reply + 5;
	ws[1].len = 0;
	ws[2].base = c->reply + 5;
	ws[2].len = 18;
	ret = vqf_dev_reply_req(req, 0, &pc, 1, ws, 3, &c->st);
	if (req->noreply) {
		VQF_DV_CHECK(ret == 0, ret, 0);
		VQF_DV_CHECK(c->reply[0] == 0xee, c->reply[0], 0xee);
		return 0;
	}
	if (v->reason != VQF_DEV_OK) {
		/* A short header still answers with its unique when the
		 * unique's 8 bytes (offset 8) were there.
		 */
		u64 unique = v->reason == VQF_DEV_R_HDR_SHORT &&
			     v->keep1 - 1 < 16 ? 0 : 0x5000 + 2 * (u64)i;

		VQF_DV_CHECK(ret == sizeof(*oh), ret, sizeof(*oh));
		VQF_DV_CHECK(oh->len == sizeof(*oh), oh->len, sizeof(*oh));
		VQF_DV_CHECK(oh->error == vqf_dev_vec_reply_errno[v->reason],
			     oh->error, vqf_dev_vec_reply_errno[v->reason]);
		VQF_DV_CHECK(oh->unique == unique, oh->unique, unique);
		VQF_DV_CHECK(c->reply[sizeof(*oh)] == 0xee, 0, 0);
	} else {
		VQF_DV_CHECK(ret == sizeof(*oh) + 3, ret, sizeof(*oh) + 3);
		VQF_DV_CHECK(oh->len == sizeof(*oh) + 3, oh->len, 19);
		VQF_DV_CHECK(oh->error == 0, oh->error, 0);
		VQF_DV_CHECK(oh->unique == req->in.unique, oh->unique,
			     req->in.unique);
		VQF_DV_CHECK(!memcmp(c->reply + sizeof(*oh), "xyz", 3), 0, 0);
		VQF_DV_CHECK(c->reply[sizeof(*oh) + 3] == 0xee, 0, 0);
	}
	VQF_DV_CHECK(c->st.replies == 1, c->st.replies, 1);
	return 0;
}

/* Run vector @i over all its splits: 0 = pass, else the failing line. */
static inline int vqf_dev_vectors_run(unsigned int i)
{
	struct vqf_dev_vec_ctx *c = vqf_dev_vec_ctx();
	const struct vqf_dev_vec *v;
	u32 total, a, b, step;
	int ret;

	if (i >= ARRAY_SIZE(vqf_dev_vecs))
		return __LINE__;
	v = &vqf_dev_vecs[i];
	total = vqf_dev_vec_build(v, i, c);
	memset(&c->fail, 0, sizeof(c->fail));

	/* Large requests: every cut near the start and end, a stride between. */
	step = total <= 512 ? 1 : 61;
	for (a = 0; a <= total; a++) {
		if (total > 512 && a > 128 && a + 64 < total && a % step)
			continue;
		ret = vqf_dev_vec_one(v, i, a, a);
		if (ret)
			return ret;
		if (total > VQF_DV_SPLIT_ALL)
			continue;
		for (b = a + 1; b <= total; b++) {
			ret = vqf_dev_vec_one(v, i, a, b);
			if (ret)
				return ret;
		}
	}
	if (total <= VQF_DV_MAXSEG)
		return vqf_dev_vec_one(v, i, ~0U, 0);
	return 0;
}

#endif /* VQF_DEV_VECTORS_H */
