/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_fuse_ops.h - argument shapes of every FUSE opcode virtio-fs carries.
 *
 * One constant table, read by the guest-side request builders (vqf_req.c,
 * vqf_forget.c) and by the device-side parser (vqf_dev.c).  It describes the
 * bytes that follow struct fuse_in_header in a request and struct
 * fuse_out_header in a reply, in wire order, as protocol 7.38 (Linux 6.1)
 * defines them, plus the unmerged entry-version extension (vqf_fuse_ext.h).
 *
 * Reading a request with the table (what a parser does):
 *
 *   in[0] .. in[nr_in - 1] follow the in header back to back, no padding.
 *   VQF_ARG_FIXED    exactly .size bytes; an older peer may send .min_size
 *                    (see the FUSE_COMPAT_* notes per opcode).
 *   VQF_ARG_NAME     a NUL-terminated string; the NUL lies within .max bytes
 *                    (NUL included).  The string is not empty.
 *   VQF_ARG_PAYLOAD  raw bytes; their number is the host-endian unsigned
 *                    integer of .count_width bytes at .count_off inside
 *                    in[0] (in[0] is always FIXED when a later arg refers
 *                    to it), at most .max bytes.
 *   VQF_ARG_ARRAY    .count elements of .size bytes; the element count is
 *                    the integer at .count_off/.count_width in in[0], at
 *                    most .max elements.
 *   VQF_ARG_DATA     raw bytes up to the end of the request/reply; only as
 *                    the last arg.  For out args the guest bounds it: when
 *                    .count_width is set, by the integer at .count_off in
 *                    in[0] (e.g. READ's size), else by .max.
 *
 * Replies: only opcodes without VQF_OPF_NOREPLY get one.  An error reply
 * (fuse_out_header.error != 0) carries no out args.  On success out[0] ..
 * out[nr_out - 1] follow; with VQF_OPF_OUT_ARGVAR the last one may be
 * shorter than its size (VQF_ARG_DATA always is variable).  With
 * VQF_OPF_XATTR_PROBE (GETXATTR, LISTXATTR) a request whose in[0].size is 0
 * asks for the value's length and gets .out_probe (fuse_getxattr_out)
 * instead of out[].
 */
#ifndef VQF_FUSE_OPS_H
#define VQF_FUSE_OPS_H

#include "vqf_compat.h"
#include "vqf_fuse_ext.h"

/* Upstream's limits (fs/fuse/fuse_i.h, include/uapi/linux/limits.h). */
#define VQF_FUSE_NAME_MAX	1024	/* FUSE_NAME_MAX, without the NUL */
#define VQF_XATTR_NAME_MAX	255	/* XATTR_NAME_MAX, without the NUL */
#define VQF_XATTR_SIZE_MAX	65536	/* XATTR_SIZE_MAX */
#define VQF_SYMLINK_MAX		4096	/* target incl. NUL, one page */
/*
 * FUSE_REMOVEMAPPING_MAX_ENTRY depends on PAGE_SIZE; the wire limit is fixed
 * at a 4 KiB page so that guest and device agree regardless of their pages.
 */
#define VQF_REMOVEMAPPING_MAX	(4096 / sizeof(struct fuse_removemapping_one))
/* Older init_in: major, minor, max_readahead, flags (before 7.36). */
#define VQF_COMPAT_INIT_IN_SIZE	16
/* Before 7.12 CREATE sent a fuse_open_in (fs/fuse/dev.c fuse_adjust_compat). */
#define VQF_COMPAT_CREATE_IN_SIZE	8

enum vqf_arg_kind {
	VQF_ARG_NONE = 0,
	VQF_ARG_FIXED,
	VQF_ARG_NAME,
	VQF_ARG_PAYLOAD,
	VQF_ARG_ARRAY,
	VQF_ARG_DATA,
};

/* Per-argument flags (struct vqf_arg_shape.flags). */
#define VQF_ARGF_OPTIONAL	0x1	/* reply may omit it (entryver) */
#define VQF_ARGF_PAGES		0x2	/* Linux carries it in pages */
/*
 * NAME: a single path component - no '/' (".." does occur: Linux looks it
 * up for NFS export).  Not set on xattr names and symlink targets.
 */
#define VQF_ARGF_COMPONENT	0x4

/**
 * struct vqf_arg_shape - one in or out argument of an opcode
 * @kind: enum vqf_arg_kind.
 * @flags: VQF_ARGF_*.
 * @count_off: offset, inside in[0], of the integer that sizes this arg
 *	(PAYLOAD byte count, ARRAY element count, DATA bound).
 * @count_width: width of that integer in bytes (4 or 8); 0 when unused.
 * @size: FIXED: sizeof the current struct; ARRAY: sizeof one element.
 * @min_size: FIXED: the smallest size an older protocol minor sends (equal
 *	to @size when there is no compat form); others: 0.
 * @max: NAME: bytes incl. NUL; PAYLOAD, DATA: bytes; ARRAY: elements.
 *	0 means "bounded only by the request/reply size".
 * @what: short name for messages and tests ("entry_out", "name", ...).
 */
struct vqf_arg_shape {
	u8 kind;
	u8 flags;
	u8 count_off;
	u8 count_width;
	u32 size;
	u32 min_size;
	u32 max;
	const char *what;
};

#define VQF_OP_MAX_IN	3
#define VQF_OP_MAX_OUT	3

/* Per-opcode flags (struct vqf_fuse_op.flags). */
#define VQF_OPF_NOREPLY		0x01	/* no device-writable part at all */
#define VQF_OPF_HIPRIO		0x02	/* allowed on the hiprio queue */
#define VQF_OPF_REQUEST_Q	0x04	/* allowed on a request queue */
#define VQF_OPF_OUT_ARGVAR	0x08	/* last out arg may come back short */
#define VQF_OPF_ENTRYVER	0x10	/* last out arg is fuse_entryver_out */
#define VQF_OPF_XATTR_PROBE	0x20	/* in[0].size == 0 -> out_probe */
#define VQF_OPF_IN_PAGES	0x40	/* Linux puts the last in arg in pages */
#define VQF_OPF_OUT_PAGES	0x80	/* Linux puts the last out arg in pages */
#define VQF_OPF_SETXATTR_EXT	0x100	/* in[0] is short without SETXATTR_EXT */
/*
 * May carry a request extension (FUSE_SECURITY_CTX) as one more in arg
 * after those listed, of fuse_in_header.total_extlen * 8 bytes (Linux 6.1
 * fs/fuse/dir.c get_create_ext()).
 */
#define VQF_OPF_EXT		0x200

/**
 * struct vqf_fuse_op - argument shapes of one opcode
 * @opcode: FUSE_* value.
 * @name: "LOOKUP", ...
 * @flags: VQF_OPF_*.
 * @nr_in: number of in args (0..VQF_OP_MAX_IN).
 * @nr_out: number of out args on success (0..VQF_OP_MAX_OUT).
 * @in: in args in wire order.
 * @out: out args in wire order.
 * @out_probe: XATTR_PROBE only: the reply shape when in[0]'s size is 0.
 */
struct vqf_fuse_op {
	u32 opcode;
	const char *name;
	u32 flags;
	u8 nr_in;
	u8 nr_out;
	struct vqf_arg_shape in[VQF_OP_MAX_IN];
	struct vqf_arg_shape out[VQF_OP_MAX_OUT];
	struct vqf_arg_shape out_probe;
};

/**
 * vqf_fuse_op() - look an opcode up
 * @opcode: fuse_in_header.opcode as received (untrusted is fine).
 *
 * Return: the constant entry, or NULL for an opcode virtio-fs does not
 * carry (BMAP, NOTIFY_REPLY, CUSE_INIT, TMPFILE, anything unknown).
 */
const struct vqf_fuse_op *vqf_fuse_op(u32 opcode);

/**
 * vqf_fuse_op_at() - iterate the table
 * @i: index from 0.
 *
 * Return: the i-th entry (ascending opcode), or NULL past the end.
 */
const struct vqf_fuse_op *vqf_fuse_op_at(unsigned int i);

/**
 * vqf_fuse_op_count() - number of entries in the table
 */
unsigned int vqf_fuse_op_count(void);

/**
 * vqf_fuse_op_in_fixed_size() - bytes of in[0] to expect from a peer
 * @op: table entry.
 * @minor: negotiated FUSE minor version (fuse_init_out.minor), 0 = newest.
 * @setxattr_ext: whether FUSE_SETXATTR_EXT was negotiated.
 *
 * Encodes the compat rules: MKNOD sends FUSE_COMPAT_MKNOD_IN_SIZE and
 * CREATE VQF_COMPAT_CREATE_IN_SIZE before 7.12, WRITE FUSE_COMPAT_WRITE_IN_SIZE before 7.9, SETXATTR
 * FUSE_COMPAT_SETXATTR_IN_SIZE without FUSE_SETXATTR_EXT.  INIT is
 * answered before a minor is known and so always uses the full size here.
 *
 * Return: the size, or 0 if in[0] is not a FIXED arg.
 */
u32 vqf_fuse_op_in_fixed_size(const struct vqf_fuse_op *op, u32 minor,
			      bool setxattr_ext);

/**
 * vqf_fuse_op_out_fixed_size() - bytes of out[0] a peer of @minor sends
 * @op: table entry.
 * @minor: negotiated FUSE minor version, 0 = newest.
 *
 * Compat rules: entry_out is FUSE_COMPAT_ENTRY_OUT_SIZE and attr_out
 * FUSE_COMPAT_ATTR_OUT_SIZE before 7.9, statfs_out FUSE_COMPAT_STATFS_SIZE
 * before 7.4.
 *
 * Return: the size, or 0 if out[0] is not a FIXED arg.
 */
u32 vqf_fuse_op_out_fixed_size(const struct vqf_fuse_op *op, u32 minor);

/**
 * vqf_fuse_arg_count() - read the count integer an arg refers to
 * @shape: a PAYLOAD, ARRAY or bounded DATA arg.
 * @in0: bytes of in[0] (a private copy, not shared memory).
 * @in0_len: their number.
 * @count: where the value goes.
 *
 * Return: 0, or -EINVAL if @shape has no count field or it lies outside
 * @in0_len.
 */
int vqf_fuse_arg_count(const struct vqf_arg_shape *shape, const void *in0,
		       u32 in0_len, u64 *count);

#endif /* VQF_FUSE_OPS_H */
