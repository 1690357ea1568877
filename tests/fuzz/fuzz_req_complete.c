// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_req_complete - lib/vqf_req.h: the driver-side reply validation and
 * copy-out, a random reply against a random request shape (a confidential
 * guest does not trust its host).
 *
 * Input: u8 shape (in args 0..3, out args 0..3), u8 flags (bit 0 out_argvar,
 * bit 1 last out arg in pages, bit 2 page zeroing, bit 3 noreply, bit 4 a
 * wrong unique), for each out arg a u16 size (mod 600), for pages a u8
 * count (1..4) and per page a u16 offset and a u16 length, then u32
 * used_len, then the bytes the "device" writes into the writable part of
 * the chain in order (out header, out args, pages).
 *
 * Every out arg and page is its own exactly-sized heap block.  Invariants:
 * the return value is documented; on success out_h.len equals used_len,
 * the error lies in [-4095, 0], an argvar last arg never grows; on failure
 * out_h is the documented {16, -EIO, unique}; the zeroing callback only
 * ever sees ranges inside the page desc it was given.
 */
#include "fuzz_common.h"
#include "vqf_req.h"

#define PAGE	4096
#define MAXPV	4

struct pages {
	u8 *page[MAXPV];
	struct vqf_page_desc pv[MAXPV];
	u32 nr;
};

static void zero(void *ctx, void *page, u32 offset, u32 len)
{
	struct pages *p = ctx;
	u32 i;

	for (i = 0; i < p->nr; i++)
		if (page == p->page[i])
			break;
	FZ_CHECK(i < p->nr);
	FZ_CHECK(offset >= p->pv[i].offset &&
		 (u64)offset + len <= (u64)p->pv[i].offset + p->pv[i].length);
	memset((u8 *)page + offset, 0, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const u8 in_bytes[3][32] = { "in0", "in1", "in2" };
	static const u32 argvar_op[VQF_REQ_MAX_OUT + 1] = {
		FUSE_GETATTR, FUSE_READ, FUSE_IOCTL, FUSE_CREATE };
	const struct vqf_page_ops ops = { .zero = zero };
	struct vqf_sg sg[64];
	struct vqf_sg_counts cnt;
	struct vqf_req req;
	struct pages pg;
	void *outv[VQF_REQ_MAX_OUT] = { NULL };
	u32 outsz[VQF_REQ_MAX_OUT] = { 0 };
	u32 argbuf_size, used_len, k, i;
	u8 *argbuf = NULL, shape, flags;
	struct fz f;
	int n, rc;

	memset(&pg, 0, sizeof(pg));
	fz_init(&f, data, size);
	shape = fz_u8(&f);
	flags = fz_u8(&f);

	vqf_req_init(&req, FUSE_GETATTR, 1, 0x1234);
	req.noreply = flags & 8;
	for (i = 0; i < (shape & 3); i++)
		vqf_req_add_in(&req, in_bytes[i], 1 + i * 8);
	for (i = 0; i < ((shape >> 2) & 3); i++) {
		bool in_pages = (flags & 2) && i == ((shape >> 2) & 3) - 1;

		outsz[i] = fz_u16(&f) % 600;
		if (in_pages) {
			pg.nr = 1 + fz_u8(&f) % MAXPV;
			for (k = 0; k < pg.nr; k++) {
				pg.page[k] = malloc(PAGE);
				FZ_CHECK(pg.page[k]);
				memset(pg.page[k], 0xa5, PAGE);
				pg.pv[k].page = pg.page[k];
				pg.pv[k].offset = fz_u16(&f) % PAGE;
				pg.pv[k].length = fz_u16(&f) %
					(PAGE - pg.pv[k].offset + 1);
			}
			rc = vqf_req_set_out_pages(&req, pg.pv, pg.nr,
						   outsz[i], flags & 4);
			FZ_CHECK(rc == 0);
		} else {
			outv[i] = malloc(outsz[i] ? outsz[i] : 1);
			FZ_CHECK(outv[i]);
			FZ_CHECK(vqf_req_add_out(&req, outv[i], outsz[i]) ==
				 0);
		}
	}
	req.out_argvar = flags & 1;
	/*
	 * complete() is shape-blind, to_argbuf() is not: an argvar goes on
	 * an opcode whose table lists that many out args, the last variable.
	 */
	if (req.out_argvar)
		req.in_h.opcode = argvar_op[req.out_numargs];
	used_len = fz_u32(&f);

	if (vqf_req_check(&req)) {
		/* A shape the guest would never build: refused up front. */
		FZ_CHECK(vqf_req_sg_count(&req) == 0);
		goto out;
	}
	argbuf_size = vqf_req_argbuf_size(&req);
	argbuf = malloc(argbuf_size ? argbuf_size : 1);
	FZ_CHECK(argbuf);
	FZ_CHECK(vqf_req_to_argbuf(&req, argbuf, argbuf_size) == 0);
	n = vqf_req_build_sg(&req, argbuf, sg, ARRAY_SIZE(sg), &cnt);
	if (n == -ENOSPC)
		goto out;
	FZ_CHECK(n > 0 && (u32)n == cnt.nr_readable + cnt.nr_writable);
	FZ_CHECK((u32)n == vqf_req_sg_count(&req));

	/* The device writes the writable elements, in chain order. */
	for (k = cnt.nr_readable; k < (u32)n && f.n; k++) {
		u8 *dst = sg[k].addr ? sg[k].addr :
			  (u8 *)sg[k].page + sg[k].offset;

		FZ_CHECK(sg[k].flags & VQF_SG_WRITE);
		fz_take(&f, dst, sg[k].len);
	}
	if (flags & 16)
		req.out_h.unique ^= 1;

	rc = vqf_req_complete(&req, argbuf, used_len, &ops, &pg, NULL);
	switch (rc) {
	case 0:
		if (!req.noreply) {
			FZ_CHECK(req.out_h.len == used_len);
			FZ_CHECK(req.out_h.error <= 0 &&
				 req.out_h.error >= -4095);
			FZ_CHECK(req.out_h.unique == 0x1234);
		}
		for (i = 0; i < req.out_numargs; i++)
			FZ_CHECK(req.out_args[i].size <= outsz[i]);
		break;
	case -EOVERFLOW:
	case -ENODATA:
	case -EFBIG:
	case -EBADMSG:
	case -ENOMSG:
	case -ERANGE:
	case -EPROTO:
	case -EREMOTEIO:
		FZ_CHECK(req.out_h.len == sizeof(struct fuse_out_header));
		FZ_CHECK(req.out_h.error == -EIO);
		FZ_CHECK(req.out_h.unique == 0x1234);
		break;
	default:
		FZ_CHECK(!"undocumented return from vqf_req_complete()");
	}
out:
	free(argbuf);
	for (i = 0; i < VQF_REQ_MAX_OUT; i++)
		free(outv[i]);
	for (k = 0; k < pg.nr; k++)
		free(pg.page[k]);
	return 0;
}
