/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_req.h - guest-side FUSE request marshalling for virtio-fs.
 *
 * A struct vqf_req carries what Linux 6.1's struct fuse_args (+ fuse_req's
 * in/out headers and fuse_args_pages) carries on virtio-fs.  The life of a
 * request:
 *
 *   1. fill struct vqf_req (directly or with vqf_req_init() and helpers);
 *   2. n = vqf_req_argbuf_size(req); get n bytes of device-visible memory;
 *   3. vqf_req_to_argbuf(): sets in_h.len and copies the in args into it
 *      (a bounce buffer, as upstream: arg values may live on the stack);
 *   4. vqf_req_sg_count() / vqf_req_build_sg(): the descriptor chain, in
 *      virtio-fs order - in header, in args (argbuf), in pages | out
 *      header, out args (argbuf after the in part), out pages
 *      (vqf_req_marshal() does 3 and 4 with one check of @req);
 *   5. after the device returns the chain with used length @len:
 *      vqf_req_complete() validates the reply and only then copies out.
 *
 * Memory: lib/ allocates nothing.  The argbuf, the sg array and the stats
 * are the caller's.  Page memory is never touched by lib/ except through
 * struct vqf_page_ops (zeroing); a page is an opaque cookie (struct page *
 * in the kernel, a host pointer in the simulator).
 *
 * Concurrency: none inside; a request is owned by one context at a time.
 */
#ifndef VQF_REQ_H
#define VQF_REQ_H

#include "vqf_compat.h"
#include "vqf_fuse_ops.h"

#define VQF_REQ_MAX_IN	3
#define VQF_REQ_MAX_OUT	3

/* Largest negative errno a FUSE server may return (as fs/fuse/dev.c). */
#define VQF_FUSE_ERRNO_MAX	4095

/**
 * struct vqf_page_desc - one piece of page memory
 * @page: opaque cookie handed back in struct vqf_sg and vqf_page_ops.
 * @offset: first byte inside the page.
 * @length: bytes from @offset.
 */
struct vqf_page_desc {
	void *page;
	u32 offset;
	u32 length;
};

/* An in arg; its bytes are copied into the argbuf by vqf_req_to_argbuf(). */
struct vqf_in_arg {
	u32 size;
	const void *value;
};

/* An out arg; filled by vqf_req_complete(). */
struct vqf_out_arg {
	u32 size;
	void *value;
};

/**
 * struct vqf_req - one FUSE request as virtio-fs sends it
 * @in_h: request header; the caller sets opcode, unique, nodeid, uid, gid,
 *	pid; vqf_req_to_argbuf() sets len.  Must stay at a device-visible
 *	address until completion (the sg points at it).
 * @out_h: reply header, written by the device, then rewritten by
 *	vqf_req_complete() with the validated snapshot.  Device-visible too.
 * @in_numargs: number of @in_args (0..3).
 * @out_numargs: number of @out_args (0..3).
 * @in_pages: the last in arg lives in @in_pv (its value is unused, its
 *	size is the number of bytes taken from the pages).
 * @out_pages: the last out arg lives in @out_pv (ditto).
 * @noreply: no reply is expected (FORGET, BATCH_FORGET, INTERRUPT): no
 *	device-writable part at all.
 * @out_argvar: the last out arg may come back shorter; its @size is then
 *	set to the bytes actually received.
 * @page_zeroing: with @out_pages, zero what the reply did not fill in every
 *	out page desc (through vqf_page_ops.zero).
 * @in_ext: the last in arg is a request extension block (FUSE_SECURITY_CTX,
 *	opcodes with VQF_OPF_EXT); vqf_req_to_argbuf() sets
 *	in_h.total_extlen to its size / 8, as Linux 6.1 does.
 * @in_args: in args, wire order.
 * @out_args: out args, wire order.
 * @in_pv: page descs for the in pages; @nr_in_pv of them.
 * @out_pv: page descs for the out pages; may equal @in_pv (as Linux does
 *	for IOCTL, whose in and out data share one page array).
 */
struct vqf_req {
	struct fuse_in_header in_h;
	struct fuse_out_header out_h;
	u8 in_numargs;
	u8 out_numargs;
	bool in_pages;
	bool out_pages;
	bool noreply;
	bool out_argvar;
	bool page_zeroing;
	bool in_ext;
	struct vqf_in_arg in_args[VQF_REQ_MAX_IN];
	struct vqf_out_arg out_args[VQF_REQ_MAX_OUT];
	const struct vqf_page_desc *in_pv;
	u32 nr_in_pv;
	const struct vqf_page_desc *out_pv;
	u32 nr_out_pv;
};

#define VQF_SG_WRITE	0x1	/* device-writable (VRING_DESC_F_WRITE) */

/**
 * struct vqf_sg - one element of the descriptor chain
 * @addr: linear address (header or argbuf), or NULL for page memory.
 * @page: page cookie when @addr is NULL.
 * @offset: offset inside @page (0 for linear elements).
 * @len: bytes.
 * @flags: VQF_SG_WRITE for device-writable elements.
 *
 * The kernel glue does sg_init_one(addr, len) or sg_set_page(page, len,
 * offset); the simulator translates @addr / @page + @offset to a guest
 * physical address.
 */
struct vqf_sg {
	void *addr;
	void *page;
	u32 offset;
	u32 len;
	u32 flags;
};

/**
 * struct vqf_sg_counts - split of a built chain
 * @nr_readable: device-readable elements, first in the array (virtio's
 *	"out_sgs").
 * @nr_writable: device-writable elements after them ("in_sgs").
 */
struct vqf_sg_counts {
	unsigned int nr_readable;
	unsigned int nr_writable;
};

/**
 * struct vqf_page_ops - how lib/ reaches page memory
 * @zero: zero @len bytes at @offset of @page; @ctx is the caller's.
 */
struct vqf_page_ops {
	void (*zero)(void *ctx, void *page, u32 offset, u32 len);
};

/**
 * struct vqf_req_stats - counters of vqf_req_complete(), caller-owned
 *
 * One counter per outcome; each rejected reply increments exactly one.
 */
struct vqf_req_stats {
	u64 ok;			/* valid reply, error == 0 */
	u64 ok_error;		/* valid reply carrying a FUSE error */
	u64 ok_noreply;		/* noreply request returned empty */
	u64 short_header;	/* -ENODATA */
	u64 len_overflow;	/* -EOVERFLOW */
	u64 page_overflow;	/* -EFBIG */
	u64 len_mismatch;	/* -EBADMSG */
	u64 unique_mismatch;	/* -ENOMSG */
	u64 bad_error;		/* -ERANGE */
	u64 error_payload;	/* -EPROTO */
	u64 short_fixed_arg;	/* -EREMOTEIO */
};

/**
 * vqf_req_check() - validate a request descriptor built by the caller
 * @req: request.
 *
 * Catches guest-side bugs before anything is laid out: arg counts above 3,
 * in_pages/out_pages without an arg to hold them, page descs that do not
 * cover the page arg's size or whose offset + length wraps, page zeroing
 * without out pages, out args on a noreply request, sizes whose sum does
 * not fit in a u32, NULL values for non-empty args, an extension block in
 * pages or not a multiple of 8 bytes (or above 0xffff * 8).
 *
 * Return: 0, or -EINVAL.
 */
int vqf_req_check(const struct vqf_req *req);

/**
 * vqf_req_check_shape() - check @req against the opcode table
 * @req: request with its args set (before or after vqf_req_to_argbuf()).
 * @minor: negotiated FUSE minor (0 = newest), for compat sizes.
 * @setxattr_ext: FUSE_SETXATTR_EXT was negotiated.
 *
 * A guest-side self-check for tests and debug builds: what the device
 * parser would refuse, caught before sending.  Reads the in-arg values
 * (caller memory; names are scanned for their NUL).  Rules: arg counts as
 * the table says (an OPTIONAL last out arg may be left out; a PAYLOAD last
 * in arg whose count is 0 may be left out, as Linux does for IOCTL; one
 * more in arg with @in_ext on VQF_OPF_EXT opcodes); noreply and out_argvar
 * as the table implies; FIXED args of the (compat) size; names non-empty,
 * within their max and NUL-terminated exactly at their end, without '/'
 * when VQF_ARGF_COMPONENT; PAYLOAD and
 * ARRAY sizes equal to their count field (ARRAY count within max); DATA
 * out args within their bound; XATTR_PROBE requests with size 0 asking
 * for fuse_getxattr_out.
 *
 * Return: 0; -EOPNOTSUPP for an opcode not in the table; -EINVAL if
 * vqf_req_check() fails or any rule above is broken.
 */
int vqf_req_check_shape(const struct vqf_req *req, u32 minor,
			bool setxattr_ext);

/**
 * vqf_req_sg_count() - elements vqf_req_build_sg() will produce
 * @req: request (valid per vqf_req_check()).
 *
 * Page descs of zero length, and those beyond the page arg's size, take
 * no element.
 *
 * Return: the count (at least 1), or 0 if @req is invalid.
 */
unsigned int vqf_req_sg_count(const struct vqf_req *req);

/**
 * vqf_req_argbuf_size() - bytes of argbuf @req needs
 * @req: request (valid per vqf_req_check()).
 *
 * The in args not in pages, then (unless noreply) the out args not in
 * pages.  May be 0: the argbuf is then unused and may be NULL.  Depends
 * only on arg counts, sizes and the pages/noreply flags: the page descs
 * and arg values need not be set yet (so one allocation can hold descs
 * and argbuf).
 *
 * Return: the size; 0 for arg counts above 3, a pages flag without an
 * arg, or sizes summing past 4 GiB (later calls then fail).
 */
u32 vqf_req_argbuf_size(const struct vqf_req *req);

/**
 * vqf_req_to_argbuf() - prepare @req for sending
 * @req: request; in_h.len is set to the header plus all in args.
 * @argbuf: device-visible buffer of @argbuf_size bytes, caller-owned until
 *	vqf_req_complete() returns.
 * @argbuf_size: its size.
 *
 * Copies the in args (not in pages) to the start of @argbuf and clears the
 * out part after them: the device can read what it is given to write, and
 * must find nothing of the caller's there (a reused buffer's old bytes).
 * vqf_req_complete() copies out only what the reply wrote.
 *
 * Return: 0; -EINVAL if @req is invalid; -EPROTOTYPE if @req has
 * out_argvar where the opcode table's reply shape has none (an opcode
 * without VQF_OPF_OUT_ARGVAR or not in the table, fewer out args than the
 * table lists, an xattr size probe): such a request would accept a
 * truncated fixed reply; -ENOSPC if @argbuf_size is below
 * vqf_req_argbuf_size().
 */
int vqf_req_to_argbuf(struct vqf_req *req, void *argbuf, u32 argbuf_size);

/**
 * vqf_req_build_sg() - lay the request out as a descriptor chain
 * @req: request prepared with vqf_req_to_argbuf().
 * @argbuf: the same argbuf.
 * @sg: caller's array of @cap elements.
 * @cap: its capacity; no element past it is written.
 * @counts: readable/writable split; may be NULL.
 *
 * Return: the number of elements written; -EINVAL if @req is invalid;
 * -ENOSPC if @cap is below vqf_req_sg_count() (nothing useful in @sg).
 */
int vqf_req_build_sg(struct vqf_req *req, void *argbuf, struct vqf_sg *sg,
		     unsigned int cap, struct vqf_sg_counts *counts);

/**
 * vqf_req_marshal() - vqf_req_to_argbuf() then vqf_req_build_sg()
 * @req: request with its args set.
 * @argbuf: as for vqf_req_to_argbuf().
 * @argbuf_size: its size.
 * @sg: caller's array of @cap elements.
 * @cap: its capacity.
 * @counts: readable/writable split; may be NULL.
 *
 * What a driver's enqueue path does, with @req checked once instead of
 * twice.  On -ENOSPC from the layout the argbuf is already filled: size
 * @sg with vqf_req_sg_count() and call vqf_req_build_sg().
 *
 * Return: the number of elements written; -EINVAL or -EPROTOTYPE as
 * vqf_req_to_argbuf(); -EMSGSIZE if @argbuf_size is below
 * vqf_req_argbuf_size(); -ENOSPC if @cap is below vqf_req_sg_count().
 */
int vqf_req_marshal(struct vqf_req *req, void *argbuf, u32 argbuf_size,
		    struct vqf_sg *sg, unsigned int cap,
		    struct vqf_sg_counts *counts);

/**
 * vqf_req_reply_capacity() - bytes the chain offers the device
 * @req: request.
 *
 * Return: out header + out args + out page bytes, 0 for noreply.
 */
u32 vqf_req_reply_capacity(const struct vqf_req *req);

/**
 * vqf_req_complete() - validate the device's reply and copy it out
 * @req: the request as sent; out_h holds what the device wrote.
 * @argbuf: the argbuf it was sent with.
 * @used_len: the used ring's len for this chain (untrusted).
 * @ops: page operations; needed only if @req->page_zeroing.
 * @ops_ctx: passed to @ops.
 * @stats: caller's counters; may be NULL.
 *
 * out_h is copied once into a private snapshot; every check runs on the
 * snapshot and nothing is copied out until all checks pass.  Checks, in
 * order:
 *
 *   noreply request written to                   -EOVERFLOW
 *   @used_len < sizeof(struct fuse_out_header)   -ENODATA
 *   @used_len > what was offered, and the
 *     excess lies in the out pages               -EFBIG
 *   @used_len > what was offered (otherwise)     -EOVERFLOW
 *   out_h.len != @used_len                       -EBADMSG
 *   out_h.unique != in_h.unique                  -ENOMSG
 *   out_h.error > 0 or < -4095                   -ERANGE
 *   out_h.error != 0 with payload                -EPROTO
 *   an out arg other than an argvar last one
 *     shorter than its size                      -EREMOTEIO
 *
 * On success out_h holds the snapshot, out args are filled, an argvar last
 * arg's size is set to the bytes received, and with page_zeroing every
 * out page byte the reply did not write is zeroed.  A FUSE error
 * (out_h.error < 0) is a valid reply: 0 is returned, nothing copied.
 *
 * On failure nothing is copied; out_h becomes {sizeof(out_h), -EIO,
 * in_h.unique} so that a caller ending the request sees an error.
 *
 * Return: 0, one of the errnos above, or -EINVAL if @req is invalid or
 * page zeroing was asked for without @ops->zero (caller bugs; no counter).
 */
int vqf_req_complete(struct vqf_req *req, const void *argbuf, u32 used_len,
		     const struct vqf_page_ops *ops, void *ops_ctx,
		     struct vqf_req_stats *stats);

/**
 * vqf_req_init() - start a request from the opcode table
 * @req: zeroed and filled.
 * @opcode: FUSE_*.
 * @nodeid: fuse_in_header.nodeid.
 * @unique: fuse_in_header.unique.
 *
 * Sets noreply and out_argvar as the table says.
 *
 * Return: 0, or -EOPNOTSUPP for an opcode not in the table.
 */
int vqf_req_init(struct vqf_req *req, u32 opcode, u64 nodeid, u64 unique);

/**
 * vqf_req_add_in() - append an in arg
 * @req: request.
 * @value: bytes (copied at vqf_req_to_argbuf() time).
 * @size: their number.
 *
 * Return: 0, or -E2BIG if @req already has 3 in args.
 */
int vqf_req_add_in(struct vqf_req *req, const void *value, u32 size);

/**
 * vqf_req_add_out() - append an out arg
 * @req: request.
 * @value: destination, @size bytes.
 * @size: their number.
 *
 * Return: 0, or -E2BIG if @req already has 3 out args.
 */
int vqf_req_add_out(struct vqf_req *req, void *value, u32 size);

/**
 * vqf_req_set_in_pages() - append an in arg carried in pages
 * @req: request.
 * @pv: page descs (kept by pointer).
 * @nr: their number.
 * @size: bytes of the arg.
 *
 * Return: 0, -E2BIG as vqf_req_add_in(), -EINVAL if pages are already set.
 */
int vqf_req_set_in_pages(struct vqf_req *req, const struct vqf_page_desc *pv,
			 u32 nr, u32 size);

/**
 * vqf_req_set_out_pages() - append an out arg carried in pages
 * @req: request.
 * @pv: page descs (kept by pointer).
 * @nr: their number.
 * @size: bytes offered.
 * @zeroing: zero what the reply leaves unwritten.
 *
 * Return: 0, -E2BIG as vqf_req_add_out(), -EINVAL if pages are already set.
 */
int vqf_req_set_out_pages(struct vqf_req *req, const struct vqf_page_desc *pv,
			  u32 nr, u32 size, bool zeroing);

/**
 * vqf_req_init_lookup() - LOOKUP @name in directory @parent
 * @req: request.
 * @unique: request id.
 * @parent: directory nodeid.
 * @name: NUL-terminated name (kept by pointer until vqf_req_to_argbuf()).
 * @namelen: strlen(@name), NUL excluded.
 * @entry: reply destination.
 * @ver: entryver destination (optional out arg), or NULL to not ask.
 *
 * Return: 0, or -ENAMETOOLONG if @namelen exceeds VQF_FUSE_NAME_MAX, or
 * -EINVAL for an empty name.
 */
int vqf_req_init_lookup(struct vqf_req *req, u64 unique, u64 parent,
			const char *name, u32 namelen,
			struct fuse_entry_out *entry,
			struct fuse_entryver_out *ver);

/**
 * vqf_req_init_getattr() - GETATTR of @nodeid
 * @req: request.
 * @unique: request id.
 * @nodeid: inode.
 * @in: getattr_in (kept by pointer).
 * @out: reply destination.
 *
 * Return: 0.
 */
int vqf_req_init_getattr(struct vqf_req *req, u64 unique, u64 nodeid,
			 const struct fuse_getattr_in *in,
			 struct fuse_attr_out *out);

/**
 * vqf_req_init_read() - READ (or READDIR/READDIRPLUS) into pages
 * @req: request.
 * @opcode: FUSE_READ, FUSE_READDIR or FUSE_READDIRPLUS.
 * @unique: request id.
 * @nodeid: inode.
 * @in: read_in (kept by pointer); in->size bytes are offered.
 * @pv: destination page descs covering at least in->size bytes.
 * @nr: their number.
 * @zeroing: zero the tail the server did not fill (page cache reads).
 *
 * Return: 0, or -EINVAL for another opcode.
 */
int vqf_req_init_read(struct vqf_req *req, u32 opcode, u64 unique,
		      u64 nodeid, const struct fuse_read_in *in,
		      const struct vqf_page_desc *pv, u32 nr, bool zeroing);

/**
 * vqf_req_init_write() - WRITE from pages
 * @req: request.
 * @unique: request id.
 * @nodeid: inode.
 * @in: write_in (kept by pointer); in->size bytes are sent from @pv.
 * @pv: source page descs.
 * @nr: their number.
 * @out: reply destination.
 *
 * Return: 0.
 */
int vqf_req_init_write(struct vqf_req *req, u64 unique, u64 nodeid,
		       const struct fuse_write_in *in,
		       const struct vqf_page_desc *pv, u32 nr,
		       struct fuse_write_out *out);

#endif /* VQF_REQ_H */
