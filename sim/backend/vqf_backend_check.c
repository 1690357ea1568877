// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_backend_check.c - what libfuse 3.14 reads of each request, so that a
 * guest cannot make it read past the request.
 *
 * libfuse was written for /dev/fuse, where the kernel is the only author of
 * requests: do_lookup() strlen()s the name, do_write() trusts
 * fuse_write_in.size, do_batch_forget() trusts its count.  A virtio-fs
 * guest is not that kernel.  The table below lists, per opcode, the fixed
 * argument and how many NUL-terminated strings follow; a few opcodes carry
 * a payload whose length is inside the request and get their own check.
 * Opcodes not listed are not forwarded at all (a future libfuse might read
 * their arguments without this table knowing how much).
 */
#include "vqf_backend_check.h"

#include <string.h>

struct op_shape {
	unsigned short fixed;	/* sizeof the fixed argument, 0: none */
	unsigned char strings;	/* NUL-terminated names after it */
	unsigned char known;
};

#define OP(code, f, s) [code] = { .fixed = (f), .strings = (s), .known = 1 }

/* Sizes are those of protocol 7.12+, which vqf_backend requires at INIT. */
static const struct op_shape shapes[] = {
	OP(FUSE_LOOKUP, 0, 1),
	OP(FUSE_FORGET, sizeof(struct fuse_forget_in), 0),
	OP(FUSE_GETATTR, sizeof(struct fuse_getattr_in), 0),
	OP(FUSE_SETATTR, sizeof(struct fuse_setattr_in), 0),
	OP(FUSE_READLINK, 0, 0),
	OP(FUSE_SYMLINK, 0, 2),
	OP(FUSE_MKNOD, sizeof(struct fuse_mknod_in), 1),
	OP(FUSE_MKDIR, sizeof(struct fuse_mkdir_in), 1),
	OP(FUSE_UNLINK, 0, 1),
	OP(FUSE_RMDIR, 0, 1),
	OP(FUSE_RENAME, sizeof(struct fuse_rename_in), 2),
	OP(FUSE_LINK, sizeof(struct fuse_link_in), 1),
	OP(FUSE_OPEN, sizeof(struct fuse_open_in), 0),
	OP(FUSE_READ, sizeof(struct fuse_read_in), 0),
	OP(FUSE_WRITE, sizeof(struct fuse_write_in), 0),
	OP(FUSE_STATFS, 0, 0),
	OP(FUSE_RELEASE, sizeof(struct fuse_release_in), 0),
	OP(FUSE_FSYNC, sizeof(struct fuse_fsync_in), 0),
	OP(FUSE_SETXATTR, FUSE_COMPAT_SETXATTR_IN_SIZE, 1),
	OP(FUSE_GETXATTR, sizeof(struct fuse_getxattr_in), 1),
	OP(FUSE_LISTXATTR, sizeof(struct fuse_getxattr_in), 0),
	OP(FUSE_REMOVEXATTR, 0, 1),
	OP(FUSE_FLUSH, sizeof(struct fuse_flush_in), 0),
	OP(FUSE_INIT, 0, 0),
	OP(FUSE_OPENDIR, sizeof(struct fuse_open_in), 0),
	OP(FUSE_READDIR, sizeof(struct fuse_read_in), 0),
	OP(FUSE_RELEASEDIR, sizeof(struct fuse_release_in), 0),
	OP(FUSE_FSYNCDIR, sizeof(struct fuse_fsync_in), 0),
	OP(FUSE_GETLK, sizeof(struct fuse_lk_in), 0),
	OP(FUSE_SETLK, sizeof(struct fuse_lk_in), 0),
	OP(FUSE_SETLKW, sizeof(struct fuse_lk_in), 0),
	OP(FUSE_ACCESS, sizeof(struct fuse_access_in), 0),
	OP(FUSE_CREATE, sizeof(struct fuse_create_in), 1),
	OP(FUSE_INTERRUPT, sizeof(struct fuse_interrupt_in), 0),
	OP(FUSE_BMAP, sizeof(struct fuse_bmap_in), 0),
	OP(FUSE_DESTROY, 0, 0),
	OP(FUSE_IOCTL, sizeof(struct fuse_ioctl_in), 0),
	OP(FUSE_POLL, sizeof(struct fuse_poll_in), 0),
	OP(FUSE_BATCH_FORGET, sizeof(struct fuse_batch_forget_in), 0),
	OP(FUSE_FALLOCATE, sizeof(struct fuse_fallocate_in), 0),
	OP(FUSE_READDIRPLUS, sizeof(struct fuse_read_in), 0),
	OP(FUSE_RENAME2, sizeof(struct fuse_rename2_in), 2),
	OP(FUSE_LSEEK, sizeof(struct fuse_lseek_in), 0),
	OP(FUSE_COPY_FILE_RANGE, sizeof(struct fuse_copy_file_range_in), 0),
};

bool vqf_be_op_replies(unsigned int opcode)
{
	return opcode != FUSE_FORGET && opcode != FUSE_BATCH_FORGET &&
	       opcode != FUSE_INTERRUPT;
}

/* Skips @n NUL-terminated strings; NULL when one is not terminated. */
static const char *skip_strings(const char *p, const char *end, unsigned n)
{
	while (n--) {
		const char *nul = memchr(p, '\0', end - p);

		if (!nul)
			return NULL;
		p = nul + 1;
	}
	return p;
}

enum vqf_be_check vqf_be_check_request(const struct fuse_in_header *in,
				       const void *arg, size_t arglen,
				       bool setxattr_ext)
{
	const char *p = arg, *end = p + arglen;
	const struct op_shape *s;
	size_t fixed;

	if (in->opcode >= sizeof(shapes) / sizeof(shapes[0]) ||
	    !shapes[in->opcode].known)
		return VQF_BE_UNSUPPORTED;
	s = &shapes[in->opcode];
	fixed = s->fixed;
	if (in->opcode == FUSE_SETXATTR && setxattr_ext)
		fixed = sizeof(struct fuse_setxattr_in);
	if (arglen < fixed)
		return VQF_BE_SHORT_ARG;
	p = skip_strings(p + fixed, end, s->strings);
	if (!p)
		return VQF_BE_BAD_STRING;

	/* Sizes below come from the request itself: compare, never add. */
	switch (in->opcode) {
	case FUSE_WRITE: {
		struct fuse_write_in w;

		memcpy(&w, arg, sizeof(w));
		if (w.size > (size_t)(end - p))
			return VQF_BE_BAD_PAYLOAD;
		break;
	}
	case FUSE_SETXATTR: {
		struct fuse_setxattr_in x;

		memcpy(&x, arg, FUSE_COMPAT_SETXATTR_IN_SIZE);
		if (x.size > (size_t)(end - p))
			return VQF_BE_BAD_PAYLOAD;
		break;
	}
	case FUSE_BATCH_FORGET: {
		struct fuse_batch_forget_in b;

		memcpy(&b, arg, sizeof(b));
		if (b.count > (size_t)(end - p) /
			      sizeof(struct fuse_forget_one))
			return VQF_BE_BAD_PAYLOAD;
		break;
	}
	case FUSE_IOCTL: {
		struct fuse_ioctl_in io;

		memcpy(&io, arg, sizeof(io));
		if (io.in_size > (size_t)(end - p))
			return VQF_BE_BAD_PAYLOAD;
		break;
	}
	default:
		break;
	}
	return VQF_BE_OK;
}
