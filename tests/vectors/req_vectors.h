/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * req_vectors.h - reply-validation cases for vqf_req_complete().
 *
 * Plain C data (no cmocka, nothing beyond vqf_compat.h), iterated by
 * tests/unit/req/test_req_vectors.c and by the in-kernel KTAP module, both
 * through vqf_req_vector_run() in req_vectors_run.h.  Each case: the
 * request shape, what the device writes and reports, and the expected
 * errno / argvar size.  Device payload is a byte pattern; see the runner.
 *
 * Sizes used: fuse_out_header 16, attr_out 104, entry_out 128, entryver 16,
 * open_out 16, init_out 64, ioctl_out 16, write_out 8, statfs_out 80.
 */
#ifndef VQF_REQ_VECTORS_H
#define VQF_REQ_VECTORS_H

#include "req_vectors_run.h"

static const struct vqf_req_vector vqf_req_vectors[] = {
	{
		.name = "getattr ok", .opcode = FUSE_GETATTR, .in_size = 16,
		.nr_out = 1, .out_size = { 104 }, .used_len = 120,
		.oh_len = 120, .payload_len = 104,
	},
	{
		.name = "getattr error ENOENT", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 16, .oh_len = 16, .oh_error = -ENOENT,
	},
	{
		.name = "getattr error -4095 is the edge",
		.opcode = FUSE_GETATTR, .in_size = 16, .nr_out = 1,
		.out_size = { 104 }, .used_len = 16, .oh_len = 16,
		.oh_error = -4095,
	},
	{
		.name = "used len 0", .opcode = FUSE_GETATTR, .in_size = 16,
		.nr_out = 1, .out_size = { 104 }, .used_len = 0, .oh_len = 0,
		.err = -ENODATA,
	},
	{
		.name = "used len 15, header cut", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 15, .oh_len = 15, .err = -ENODATA,
	},
	{
		.name = "used len 1 past offer", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 121, .oh_len = 121, .payload_len = 104,
		.err = -EOVERFLOW,
	},
	{
		.name = "used len 0xffffffff", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 0xffffffff, .oh_len = 0xffffffff,
		.payload_len = 104, .err = -EOVERFLOW,
	},
	{
		.name = "oh.len above used len", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 120, .oh_len = 128, .payload_len = 104,
		.err = -EBADMSG,
	},
	{
		.name = "oh.len below used len", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 120, .oh_len = 112, .payload_len = 104,
		.err = -EBADMSG,
	},
	{
		.name = "oh.len beyond offer, used len fine",
		.opcode = FUSE_GETATTR, .in_size = 16, .nr_out = 1,
		.out_size = { 104 }, .used_len = 120, .oh_len = 0xffffffff,
		.payload_len = 104, .err = -EBADMSG,
	},
	{
		.name = "oh.len 0 with header written", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 16, .oh_len = 0, .err = -EBADMSG,
	},
	{
		.name = "unique off by one", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 120, .oh_len = 120, .unique_delta = 1,
		.payload_len = 104, .err = -ENOMSG,
	},
	{
		.name = "unique with interrupt bit", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 120, .oh_len = 120, .unique_delta = (s64)1 << 62,
		.payload_len = 104, .err = -ENOMSG,
	},
	{
		.name = "error positive 1", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 16, .oh_len = 16, .oh_error = 1, .err = -ERANGE,
	},
	{
		.name = "error -4096", .opcode = FUSE_GETATTR, .in_size = 16,
		.nr_out = 1, .out_size = { 104 }, .used_len = 16, .oh_len = 16,
		.oh_error = -4096, .err = -ERANGE,
	},
	{
		.name = "error INT_MIN", .opcode = FUSE_GETATTR, .in_size = 16,
		.nr_out = 1, .out_size = { 104 }, .used_len = 16, .oh_len = 16,
		.oh_error = (-2147483647 - 1), .err = -ERANGE,
	},
	{
		.name = "error INT_MAX", .opcode = FUSE_GETATTR, .in_size = 16,
		.nr_out = 1, .out_size = { 104 }, .used_len = 16, .oh_len = 16,
		.oh_error = 2147483647, .err = -ERANGE,
	},
	{
		.name = "error reply with payload", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 120, .oh_len = 120, .oh_error = -EIO,
		.payload_len = 104, .err = -EPROTO,
	},
	{
		.name = "error -4095 with 8 bytes", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 24, .oh_len = 24, .oh_error = -4095,
		.payload_len = 8, .err = -EPROTO,
	},
	{
		.name = "attr_out short (compat 96)", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 112, .oh_len = 112, .payload_len = 96,
		.err = -EREMOTEIO,
	},
	{
		.name = "success with header only", .opcode = FUSE_GETATTR,
		.in_size = 16, .nr_out = 1, .out_size = { 104 },
		.used_len = 16, .oh_len = 16, .err = -EREMOTEIO,
	},
	{
		.name = "lookup with entryver", .opcode = FUSE_LOOKUP,
		.in_size = 6, .nr_out = 2, .out_size = { 128, 16 },
		.argvar = true, .used_len = 160, .oh_len = 160,
		.payload_len = 144, .argvar_size = 16,
	},
	{
		.name = "lookup, server without entryver",
		.opcode = FUSE_LOOKUP, .in_size = 6, .nr_out = 2,
		.out_size = { 128, 16 }, .argvar = true, .used_len = 144,
		.oh_len = 144, .payload_len = 128,
	},
	{
		.name = "lookup, entryver cut to 8", .opcode = FUSE_LOOKUP,
		.in_size = 6, .nr_out = 2, .out_size = { 128, 16 },
		.argvar = true, .used_len = 152, .oh_len = 152,
		.payload_len = 136, .argvar_size = 8,
	},
	{
		.name = "lookup, entry_out short", .opcode = FUSE_LOOKUP,
		.in_size = 6, .nr_out = 2, .out_size = { 128, 16 },
		.argvar = true, .used_len = 140, .oh_len = 140,
		.payload_len = 124, .err = -EREMOTEIO,
	},
	{
		.name = "lookup, entryver 1 byte too long",
		.opcode = FUSE_LOOKUP, .in_size = 6, .nr_out = 2,
		.out_size = { 128, 16 }, .argvar = true, .used_len = 161,
		.oh_len = 161, .payload_len = 144, .err = -EOVERFLOW,
	},
	{
		.name = "lookup without asking entryver",
		.opcode = FUSE_LOOKUP, .in_size = 6, .nr_out = 1,
		.out_size = { 128 }, .used_len = 144, .oh_len = 144,
		.payload_len = 128,
	},
	{
		.name = "lookup without entryver, short",
		.opcode = FUSE_LOOKUP, .in_size = 6, .nr_out = 1,
		.out_size = { 128 }, .used_len = 136, .oh_len = 136,
		.payload_len = 120, .err = -EREMOTEIO,
	},
	{
		.name = "create with entryver", .opcode = FUSE_CREATE,
		.in_size = 24, .nr_out = 3, .out_size = { 128, 16, 16 },
		.argvar = true, .used_len = 176, .oh_len = 176,
		.payload_len = 160, .argvar_size = 16,
	},
	{
		.name = "create without entryver", .opcode = FUSE_CREATE,
		.in_size = 24, .nr_out = 3, .out_size = { 128, 16, 16 },
		.argvar = true, .used_len = 160, .oh_len = 160,
		.payload_len = 144,
	},
	{
		.name = "create, open_out short", .opcode = FUSE_CREATE,
		.in_size = 24, .nr_out = 3, .out_size = { 128, 16, 16 },
		.argvar = true, .used_len = 152, .oh_len = 152,
		.payload_len = 136, .err = -EREMOTEIO,
	},
	{
		.name = "init full", .opcode = FUSE_INIT, .in_size = 64,
		.nr_out = 1, .out_size = { 64 }, .argvar = true,
		.used_len = 80, .oh_len = 80, .payload_len = 64,
		.argvar_size = 64,
	},
	{
		.name = "init compat 7.5 (8 bytes)", .opcode = FUSE_INIT,
		.in_size = 64, .nr_out = 1, .out_size = { 64 }, .argvar = true,
		.used_len = 24, .oh_len = 24, .payload_len = 8,
		.argvar_size = 8,
	},
	{
		.name = "init compat 7.22 (24 bytes)", .opcode = FUSE_INIT,
		.in_size = 64, .nr_out = 1, .out_size = { 64 }, .argvar = true,
		.used_len = 40, .oh_len = 40, .payload_len = 24,
		.argvar_size = 24,
	},
	{
		.name = "init 8 bytes too long", .opcode = FUSE_INIT,
		.in_size = 64, .nr_out = 1, .out_size = { 64 }, .argvar = true,
		.used_len = 88, .oh_len = 88, .payload_len = 64,
		.err = -EOVERFLOW,
	},
	{
		.name = "read full pages", .opcode = FUSE_READ, .in_size = 40,
		.argvar = true, .out_page_size = 300, .nr_pages = 3,
		.page_len = 100, .zeroing = true, .used_len = 316,
		.oh_len = 316, .payload_len = 300, .argvar_size = 300,
	},
	{
		.name = "read half, tail zeroed", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 300,
		.nr_pages = 3, .page_len = 100, .zeroing = true,
		.used_len = 166, .oh_len = 166, .payload_len = 150,
		.argvar_size = 150,
	},
	{
		.name = "read EOF, all zeroed", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 300,
		.nr_pages = 3, .page_len = 100, .zeroing = true,
		.used_len = 16, .oh_len = 16,
	},
	{
		.name = "read half, no zeroing", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 300,
		.nr_pages = 3, .page_len = 100, .used_len = 166, .oh_len = 166,
		.payload_len = 150, .argvar_size = 150,
	},
	{
		.name = "read 10 bytes past pages", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 300,
		.nr_pages = 3, .page_len = 100, .zeroing = true,
		.used_len = 326, .oh_len = 326, .payload_len = 300,
		.err = -EFBIG,
	},
	{
		.name = "read used len 0xffffffff", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 300,
		.nr_pages = 3, .page_len = 100, .used_len = 0xffffffff,
		.oh_len = 0xffffffff, .payload_len = 300, .err = -EFBIG,
	},
	{
		.name = "read oh.len past pages", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 300,
		.nr_pages = 3, .page_len = 100, .zeroing = true,
		.used_len = 316, .oh_len = 326, .payload_len = 300,
		.err = -EBADMSG,
	},
	{
		.name = "read error EIO, pages untouched", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 300,
		.nr_pages = 3, .page_len = 100, .zeroing = true,
		.used_len = 16, .oh_len = 16, .oh_error = -EIO,
	},
	{
		.name = "read error with page payload", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 300,
		.nr_pages = 3, .page_len = 100, .used_len = 36, .oh_len = 36,
		.oh_error = -EIO, .payload_len = 20, .err = -EPROTO,
	},
	{
		.name = "read, descs at offset 50", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 350,
		.nr_pages = 4, .page_len = 100, .page_off = 50,
		.zeroing = true, .used_len = 216, .oh_len = 216,
		.payload_len = 200, .argvar_size = 200,
	},
	{
		.name = "read, 1-byte descs", .opcode = FUSE_READ,
		.in_size = 40, .argvar = true, .out_page_size = 4,
		.nr_pages = 4, .page_len = 1, .page_off = 7, .zeroing = true,
		.used_len = 19, .oh_len = 19, .payload_len = 3,
		.argvar_size = 3,
	},
	{
		.name = "readdir pages fixed (not argvar), short",
		.opcode = FUSE_READDIR, .in_size = 40, .out_page_size = 200,
		.nr_pages = 2, .page_len = 100, .used_len = 166, .oh_len = 166,
		.payload_len = 150, .err = -EREMOTEIO,
	},
	{
		.name = "readdir pages fixed (not argvar), full",
		.opcode = FUSE_READDIR, .in_size = 40, .out_page_size = 200,
		.nr_pages = 2, .page_len = 100, .used_len = 216, .oh_len = 216,
		.payload_len = 200,
	},
	{
		.name = "ioctl out data in pages", .opcode = FUSE_IOCTL,
		.in_size = 32, .nr_out = 1, .out_size = { 16 }, .argvar = true,
		.out_page_size = 200, .nr_pages = 2, .page_len = 128,
		.zeroing = true, .used_len = 82, .oh_len = 82,
		.payload_len = 66, .argvar_size = 50,
	},
	{
		.name = "ioctl_out short", .opcode = FUSE_IOCTL, .in_size = 32,
		.nr_out = 1, .out_size = { 16 }, .argvar = true,
		.out_page_size = 200, .nr_pages = 2, .page_len = 128,
		.zeroing = true, .used_len = 26, .oh_len = 26,
		.payload_len = 10, .err = -EREMOTEIO,
	},
	{
		.name = "ioctl past pages", .opcode = FUSE_IOCTL,
		.in_size = 32, .nr_out = 1, .out_size = { 16 }, .argvar = true,
		.out_page_size = 200, .nr_pages = 2, .page_len = 128,
		.zeroing = true, .used_len = 233, .oh_len = 233,
		.payload_len = 216, .err = -EFBIG,
	},
	{
		.name = "getxattr value 10 bytes", .opcode = FUSE_GETXATTR,
		.in_size = 13, .nr_out = 1, .out_size = { 64 }, .argvar = true,
		.used_len = 26, .oh_len = 26, .payload_len = 10,
		.argvar_size = 10,
	},
	{
		.name = "getxattr empty value", .opcode = FUSE_GETXATTR,
		.in_size = 13, .nr_out = 1, .out_size = { 64 }, .argvar = true,
		.used_len = 16, .oh_len = 16,
	},
	{
		.name = "getxattr 65 bytes into 64", .opcode = FUSE_GETXATTR,
		.in_size = 13, .nr_out = 1, .out_size = { 64 }, .argvar = true,
		.used_len = 81, .oh_len = 81, .payload_len = 64,
		.err = -EOVERFLOW,
	},
	{
		.name = "write_out ok", .opcode = FUSE_WRITE, .in_size = 40,
		.nr_out = 1, .out_size = { 8 }, .used_len = 24, .oh_len = 24,
		.payload_len = 8,
	},
	{
		.name = "write_out short", .opcode = FUSE_WRITE, .in_size = 40,
		.nr_out = 1, .out_size = { 8 }, .used_len = 20, .oh_len = 20,
		.payload_len = 4, .err = -EREMOTEIO,
	},
	{
		.name = "write error ENOSPC", .opcode = FUSE_WRITE,
		.in_size = 40, .nr_out = 1, .out_size = { 8 }, .used_len = 16,
		.oh_len = 16, .oh_error = -ENOSPC,
	},
	{
		.name = "statfs compat 48 bytes is short",
		.opcode = FUSE_STATFS, .nr_out = 1, .out_size = { 80 },
		.used_len = 64, .oh_len = 64, .payload_len = 48,
		.err = -EREMOTEIO,
	},
	{
		.name = "destroy, no args", .opcode = FUSE_DESTROY,
		.used_len = 16, .oh_len = 16,
	},
	{
		.name = "destroy with payload", .opcode = FUSE_DESTROY,
		.used_len = 24, .oh_len = 24, .err = -EOVERFLOW,
	},
	{
		.name = "destroy error EACCES", .opcode = FUSE_DESTROY,
		.used_len = 16, .oh_len = 16, .oh_error = -EACCES,
	},
	{
		.name = "unlink, no out args", .opcode = FUSE_UNLINK,
		.in_size = 2, .used_len = 16, .oh_len = 16,
	},
	{
		.name = "forget, nothing written", .opcode = FUSE_FORGET,
		.in_size = 8, .used_len = 0, .oh_len = 0,
	},
	{
		.name = "forget, device claims 16", .opcode = FUSE_FORGET,
		.in_size = 8, .used_len = 16, .oh_len = 16, .err = -EOVERFLOW,
	},
	{
		.name = "batch_forget, nothing written",
		.opcode = FUSE_BATCH_FORGET, .in_size = 40, .used_len = 0,
		.oh_len = 0,
	},
	{
		.name = "interrupt, device claims 1", .opcode = FUSE_INTERRUPT,
		.in_size = 8, .used_len = 1, .oh_len = 1, .err = -EOVERFLOW,
	},
};

#define VQF_REQ_NR_VECTORS	ARRAY_SIZE(vqf_req_vectors)

#endif /* VQF_REQ_VECTORS_H */
