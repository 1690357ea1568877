/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_backend_check.h - the shape of a guest FUSE request, checked before
 * libfuse reads it.  Private to sim/backend.
 */
#ifndef VQF_BACKEND_CHECK_H
#define VQF_BACKEND_CHECK_H

#include <linux/fuse.h>
#include <stdbool.h>
#include <stddef.h>

enum vqf_be_check {
	VQF_BE_OK = 0,
	VQF_BE_SHORT_ARG,	/* fixed argument struct truncated */
	VQF_BE_BAD_STRING,	/* a name runs past the end: no NUL */
	VQF_BE_BAD_PAYLOAD,	/* a size inside the request runs past it */
	VQF_BE_UNSUPPORTED,	/* opcode this backend does not forward */
};

/* Whether the opcode is answered (FORGET, BATCH_FORGET, INTERRUPT are not). */
bool vqf_be_op_replies(unsigned int opcode);

/*
 * Checks that every byte libfuse 3.14 will read for @in->opcode lies in
 * @arg[0..@arglen): fixed struct, NUL-terminated names, and payloads whose
 * size is given inside the request (WRITE, SETXATTR, BATCH_FORGET, IOCTL).
 * @setxattr_ext: FUSE_SETXATTR_EXT was negotiated (long fuse_setxattr_in).
 * INIT is not checked here (the backend pads it).
 */
enum vqf_be_check vqf_be_check_request(const struct fuse_in_header *in,
				       const void *arg, size_t arglen,
				       bool setxattr_ext);

#endif /* VQF_BACKEND_CHECK_H */
