/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vqfuse_ktap_glue.h - KTAP suite "glue": vqfuse_req.c in the kernel.
 *
 * The lib/ vectors test lib/; these cases test the translation around it:
 * a real struct fuse_req with fuse_args(_pages) and struct page memory goes
 * through vqfk_req_prepare() and vqfk_req_fill_sg(), a simulated device
 * reads the readable scatterlist entries and writes a reply through the
 * writable ones, and vqfk_req_finish() must hand back what fuse expects.
 * The requests' blocks come from one vqfk_kreq_cache, so each case runs on
 * a block holding the bytes of the one before (block_cache poisons it).
 * Included once, by vqfuse_ktap.c.  A case returns 0 or the line of the
 * first failed check.
 */
#ifndef VQFUSE_KTAP_GLUE_H
#define VQFUSE_KTAP_GLUE_H

#include <linux/slab.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include "fuse_i.h"
#include "vqf_req.h"
#include "vqfuse_req.h"

#define VQFK_G_MAXSG	16

/* One test request; static: the runner is single-threaded. */
static struct vqfk_glue {
	struct fuse_req req;
	struct fuse_args_pages ap;
	struct page *pages[2];
	struct fuse_page_desc descs[2];
	struct scatterlist sg[VQFK_G_MAXSG];
	struct vqf_sg vsg[VQFK_G_MAXSG];
	unsigned int nout, nin;
	u8 in1[24];
	u8 out1[64];
	u8 wire[512];		/* what the device read */
	u32 wire_len;
	u8 reply[512];
	/* every case's blocks: each reuses what the last one left in them */
	struct vqfk_kreq_cache cache;
} *vqfk_g;

static void vqfk_g_reset(unsigned int opcode, bool reply)
{
	struct vqfk_glue *g = vqfk_g;
	unsigned int i;

	memset(&g->req, 0, sizeof(g->req));
	memset(&g->ap, 0, sizeof(g->ap));
	g->req.args = &g->ap.args;
	g->req.in.h.opcode = opcode;
	g->req.in.h.unique = 0x1234;
	g->req.in.h.nodeid = 7;
	if (reply)
		__set_bit(FR_ISREPLY, &g->req.flags);
	for (i = 0; i < sizeof(g->in1); i++)
		g->in1[i] = i + 1;
	memset(g->out1, 0xee, sizeof(g->out1));
	g->ap.pages = g->pages;
	g->ap.descs = g->descs;
	for (i = 0; i < 2; i++)
		memset(page_address(g->pages[i]), 0xcc, PAGE_SIZE);
}

/* Lay the request out and let the "device" read its readable part. */
static int vqfk_g_send(void)
{
	struct vqfk_glue *g = vqfk_g;
	unsigned int i;
	int n;

	if (vqfk_req_prepare(&g->req, &g->cache, GFP_KERNEL))
		return -1;
	if (vqfk_req_nr_sg(&g->req) > VQFK_G_MAXSG)
		return -1;
	n = vqfk_req_fill_sg(&g->req, g->vsg, g->sg, VQFK_G_MAXSG, &g->nout,
			     &g->nin);
	if (n < 0 || n != g->nout + g->nin)
		return -1;
	g->wire_len = 0;
	for (i = 0; i < g->nout; i++) {
		if (g->wire_len + g->sg[i].length > sizeof(g->wire))
			return -1;
		memcpy(g->wire + g->wire_len, sg_virt(&g->sg[i]),
		       g->sg[i].length);
		g->wire_len += g->sg[i].length;
	}
	return 0;
}

/* The "device" writes @len bytes of g->reply through the writable part. */
static u32 vqfk_g_reply(u32 len)
{
	struct vqfk_glue *g = vqfk_g;
	u32 done = 0, take;
	unsigned int i;

	for (i = g->nout; i < g->nout + g->nin && done < len; i++) {
		take = min(len - done, g->sg[i].length);
		memcpy(sg_virt(&g->sg[i]), g->reply + done, take);
		done += take;
	}
	vqfk_req_set_used(&g->req, done);
	return done;
}

static void vqfk_g_hdr(u32 len, s32 error, u64 unique)
{
	struct fuse_out_header oh = { .len = len, .error = error,
				      .unique = unique };
	unsigned int i;

	memcpy(vqfk_g->reply, &oh, sizeof(oh));
	for (i = sizeof(oh); i < sizeof(vqfk_g->reply); i++)
		vqfk_g->reply[i] = (u8)(i * 7);
}

/* GETATTR-like: one in arg, one fixed out arg, valid reply. */
static int vqfk_g_fixed(void)
{
	struct vqfk_glue *g = vqfk_g;
	struct fuse_args *a = &g->ap.args;
	struct fuse_in_header ih;

	vqfk_g_reset(FUSE_GETATTR, true);
	a->in_numargs = 1;
	a->in_args[0].size = sizeof(g->in1);
	a->in_args[0].value = g->in1;
	a->out_numargs = 1;
	a->out_args[0].size = 40;
	a->out_args[0].value = g->out1;
	if (vqfk_g_send())
		return __LINE__;
	/* readable: in header (len set) + the in arg; writable: hdr + arg */
	if (g->wire_len != sizeof(ih) + sizeof(g->in1))
		return __LINE__;
	memcpy(&ih, g->wire, sizeof(ih));
	if (!(ih.len == g->wire_len && ih.unique == 0x1234 &&
		  ih.opcode == FUSE_GETATTR && ih.nodeid == 7))
		return __LINE__;
	if (memcmp(g->wire + sizeof(ih), g->in1, sizeof(g->in1)))
		return __LINE__;
	if (g->nin != 2)
		return __LINE__;
	/* the device may read what it is to write: nothing old there */
	if (memchr_inv(sg_virt(&g->sg[g->nout]), 0, g->sg[g->nout].length) ||
	    memchr_inv(sg_virt(&g->sg[g->nout + 1]), 0,
		       g->sg[g->nout + 1].length))
		return __LINE__;
	vqfk_g_hdr(16 + 40, 0, 0x1234);
	if (vqfk_g_reply(16 + 40) != 56)
		return __LINE__;
	if (vqfk_req_finish(&g->req, &g->cache) != 0)
		return __LINE__;
	if (g->req.argbuf)
		return __LINE__;
	if (!(g->req.out.h.error == 0 && g->req.out.h.len == 56))
		return __LINE__;
	if (memcmp(g->out1, g->reply + 16, 40))
		return __LINE__;
	if (g->out1[40] != 0xee)
		return __LINE__;
	return 0;
}

/* A reply for another request: refused, -EIO, nothing copied. */
static int vqfk_g_bad_unique(void)
{
	struct vqfk_glue *g = vqfk_g;
	struct fuse_args *a = &g->ap.args;

	vqfk_g_reset(FUSE_GETATTR, true);
	a->out_numargs = 1;
	a->out_args[0].size = 40;
	a->out_args[0].value = g->out1;
	if (vqfk_g_send())
		return __LINE__;
	vqfk_g_hdr(56, 0, 0x9999);
	vqfk_g_reply(56);
	if (vqfk_req_finish(&g->req, &g->cache) != -ENOMSG)
		return __LINE__;
	if (g->req.out.h.error != -EIO)
		return __LINE__;
	if (!(g->out1[0] == 0xee && g->out1[39] == 0xee))
		return __LINE__;
	return 0;
}

/* Used length shorter than a header: refused with -ENODATA. */
static int vqfk_g_short(void)
{
	struct vqfk_glue *g = vqfk_g;

	vqfk_g_reset(FUSE_FLUSH, true);
	if (vqfk_g_send())
		return __LINE__;
	vqfk_g_hdr(16, 0, 0x1234);
	vqfk_g_reply(8);
	if (vqfk_req_finish(&g->req, &g->cache) != -ENODATA)
		return __LINE__;
	if (g->req.out.h.error != -EIO)
		return __LINE__;
	return 0;
}

/* A FUSE error is a valid reply; an error with payload is not. */
static int vqfk_g_errors(void)
{
	struct vqfk_glue *g = vqfk_g;
	struct fuse_args *a = &g->ap.args;

	vqfk_g_reset(FUSE_GETATTR, true);
	a->out_numargs = 1;
	a->out_args[0].size = 40;
	a->out_args[0].value = g->out1;
	if (vqfk_g_send())
		return __LINE__;
	vqfk_g_hdr(16, -ENOENT, 0x1234);
	vqfk_g_reply(16);
	if (vqfk_req_finish(&g->req, &g->cache) != 0)
		return __LINE__;
	if (g->req.out.h.error != -ENOENT)
		return __LINE__;

	vqfk_g_reset(FUSE_FLUSH, true);
	if (vqfk_g_send())
		return __LINE__;
	vqfk_g_hdr(16, 0, 0x1234);
	vqfk_g_reply(16);
	if (vqfk_req_finish(&g->req, &g->cache) != 0)
		return __LINE__;

	vqfk_g_reset(FUSE_GETATTR, true);
	a->out_numargs = 1;
	a->out_args[0].size = 40;
	a->out_args[0].value = g->out1;
	if (vqfk_g_send())
		return __LINE__;
	vqfk_g_hdr(56, -ENOENT, 0x1234);
	vqfk_g_reply(56);
	if (vqfk_req_finish(&g->req, &g->cache) != -EPROTO)
		return __LINE__;
	if (g->req.out.h.error != -EIO)
		return __LINE__;
	return 0;
}

/* READ into two page descs, short reply: argvar size, zeroed tail. */
static int vqfk_g_read_pages(void)
{
	struct vqfk_glue *g = vqfk_g;
	struct fuse_args *a = &g->ap.args;
	u8 *p0, *p1;

	vqfk_g_reset(FUSE_READ, true);
	a->in_numargs = 1;
	a->in_args[0].size = sizeof(g->in1);
	a->in_args[0].value = g->in1;
	a->out_numargs = 1;
	a->out_pages = true;
	a->out_argvar = true;
	a->page_zeroing = true;
	a->out_args[0].size = 300;
	g->ap.num_pages = 2;
	g->descs[0] = (struct fuse_page_desc){ .offset = 100, .length = 200 };
	g->descs[1] = (struct fuse_page_desc){ .offset = 0, .length = 100 };
	if (vqfk_g_send())
		return __LINE__;
	/* writable: out header, then the two page pieces */
	if (g->nin != 3)
		return __LINE__;
	if (!(sg_page(&g->sg[g->nout + 1]) == g->pages[0] &&
		  g->sg[g->nout + 1].offset == 100 &&
		  g->sg[g->nout + 1].length == 200))
		return __LINE__;
	if (!(sg_page(&g->sg[g->nout + 2]) == g->pages[1] &&
		  g->sg[g->nout + 2].length == 100))
		return __LINE__;
	vqfk_g_hdr(16 + 250, 0, 0x1234);
	vqfk_g_reply(16 + 250);
	if (vqfk_req_finish(&g->req, &g->cache) != 0)
		return __LINE__;
	if (a->out_args[0].size != 250)
		return __LINE__;
	p0 = page_address(g->pages[0]);
	p1 = page_address(g->pages[1]);
	if (memcmp(p0 + 100, g->reply + 16, 200))
		return __LINE__;
	if (memcmp(p1, g->reply + 216, 50))
		return __LINE__;
	/* the tail the reply did not fill is zeroed, the rest untouched */
	if (p1[50] != 0 || p1[99] != 0)
		return __LINE__;
	if (p1[100] != 0xcc || p0[99] != 0xcc)
		return __LINE__;
	return 0;
}

/* WRITE from a page: the page bytes follow the in args on the wire. */
static int vqfk_g_write_pages(void)
{
	struct vqfk_glue *g = vqfk_g;
	struct fuse_args *a = &g->ap.args;

	vqfk_g_reset(FUSE_WRITE, true);
	memset(page_address(g->pages[0]) + 8, 0x5a, 64);
	a->in_numargs = 2;
	a->in_args[0].size = sizeof(g->in1);
	a->in_args[0].value = g->in1;
	a->in_pages = true;
	a->in_args[1].size = 64;
	g->ap.num_pages = 1;
	g->descs[0] = (struct fuse_page_desc){ .offset = 8, .length = 64 };
	a->out_numargs = 1;
	a->out_args[0].size = 8;
	a->out_args[0].value = g->out1;
	if (vqfk_g_send())
		return __LINE__;
	if (g->wire_len != 40 + sizeof(g->in1) + 64)
		return __LINE__;
	if (memcmp(g->wire + 40, g->in1, sizeof(g->in1)))
		return __LINE__;
	if (!(g->wire[40 + sizeof(g->in1)] == 0x5a &&
		  g->wire[g->wire_len - 1] == 0x5a))
		return __LINE__;
	vqfk_g_hdr(24, 0, 0x1234);
	vqfk_g_reply(24);
	if (vqfk_req_finish(&g->req, &g->cache) != 0)
		return __LINE__;
	if (memcmp(g->out1, g->reply + 16, 8))
		return __LINE__;
	return 0;
}

/* No reply expected: nothing device-writable; an empty return is fine. */
static int vqfk_g_noreply(void)
{
	struct vqfk_glue *g = vqfk_g;
	struct fuse_args *a = &g->ap.args;

	vqfk_g_reset(FUSE_FORGET, false);
	a->in_numargs = 1;
	a->in_args[0].size = 8;
	a->in_args[0].value = g->in1;
	if (vqfk_g_send())
		return __LINE__;
	if (!(g->nin == 0 && g->wire_len == 48))
		return __LINE__;
	vqfk_req_set_used(&g->req, 0);
	if (vqfk_req_finish(&g->req, &g->cache) != 0)
		return __LINE__;
	return 0;
}

/*
 * Request blocks are reused as they are: the second request gets the block
 * the first gave back, poisoned here, and must be laid out and answered as
 * on a fresh one; a request bigger than a block never touches the cache;
 * the cache keeps at most VQFK_KREQ_CACHE_MAX blocks and frees the rest.
 */
static int vqfk_g_block_cache(void)
{
	struct vqfk_glue *g = vqfk_g;
	struct vqfk_kreq_cache *c = &g->cache;
	const unsigned int n = VQFK_KREQ_CACHE_MAX + 2;
	struct fuse_req *reqs;
	unsigned long allocs;
	void *first;
	unsigned int i;
	int line = 0;

	vqfk_kreq_cache_drain(c);
	allocs = c->allocs;
	if (vqfk_g_fixed())
		return __LINE__;
	if (!(c->nr == 1 && c->allocs == allocs + 1))
		return __LINE__;
	first = c->free;
	/* all but the free-list link */
	memset((u8 *)first + sizeof(void *), 0xa5,
	       VQFK_KREQ_BLOCK - sizeof(void *));
	if (vqfk_g_fixed())
		return __LINE__;
	if (!(c->nr == 1 && c->free == first && c->allocs == allocs + 1))
		return __LINE__;
	vqfk_g_reset(FUSE_GETATTR, true);
	g->ap.args.in_numargs = 1;
	g->ap.args.in_args[0].size = VQFK_KREQ_BLOCK;
	g->ap.args.in_args[0].value = g->wire;
	if (vqfk_req_prepare(&g->req, c, GFP_KERNEL))
		return __LINE__;
	if (g->req.argbuf == first || c->nr != 1)
		return __LINE__;
	vqfk_req_release(&g->req, c);
	if (!(c->nr == 1 && c->allocs == allocs + 1))
		return __LINE__;

	reqs = kcalloc(n, sizeof(*reqs), GFP_KERNEL);
	if (!reqs)
		return __LINE__;
	vqfk_g_reset(FUSE_GETATTR, true);
	g->ap.args.in_numargs = 1;
	g->ap.args.in_args[0].size = sizeof(g->in1);
	g->ap.args.in_args[0].value = g->in1;
	for (i = 0; i < n; i++) {
		reqs[i].args = &g->ap.args;
		reqs[i].in.h = g->req.in.h;
		if (!line && vqfk_req_prepare(&reqs[i], c, GFP_KERNEL))
			line = __LINE__;
	}
	if (!line && !(c->nr == 0 && c->allocs == allocs + n))
		line = __LINE__;
	for (i = 0; i < n; i++)
		vqfk_req_release(&reqs[i], c);
	kfree(reqs);
	if (!line && c->nr != VQFK_KREQ_CACHE_MAX)
		line = __LINE__;
	vqfk_kreq_cache_drain(c);
	if (!line && !(c->nr == 0 && !c->free))
		line = __LINE__;
	return line;
}

static const struct {
	const char *name;
	int (*run)(void);
} vqfk_glue_cases[] = {
	{ "fixed_out_arg", vqfk_g_fixed },
	{ "bad_unique_is_eio", vqfk_g_bad_unique },
	{ "short_header_is_eio", vqfk_g_short },
	{ "error_replies", vqfk_g_errors },
	{ "read_pages_argvar_zeroing", vqfk_g_read_pages },
	{ "write_from_page", vqfk_g_write_pages },
	{ "noreply", vqfk_g_noreply },
	{ "block_cache", vqfk_g_block_cache },
};

static inline unsigned int vqf_glue_vectors_count(void)
{
	return ARRAY_SIZE(vqfk_glue_cases);
}

static inline const char *vqf_glue_vectors_name(unsigned int i)
{
	return vqfk_glue_cases[i].name;
}

static inline int vqf_glue_vectors_run(unsigned int i)
{
	int ret, p;

	if (!vqfk_g) {
		vqfk_g = kzalloc(sizeof(*vqfk_g), GFP_KERNEL);
		if (!vqfk_g)
			return -ENOMEM;
		for (p = 0; p < 2; p++) {
			vqfk_g->pages[p] = alloc_page(GFP_KERNEL);
			if (!vqfk_g->pages[p])
				return -ENOMEM;
		}
		vqfk_kreq_cache_init(&vqfk_g->cache);
	}
	ret = vqfk_glue_cases[i].run();
	/* A failed check may leave the argbuf behind. */
	if (vqfk_g->req.argbuf)
		vqfk_req_release(&vqfk_g->req, &vqfk_g->cache);
	if (i == ARRAY_SIZE(vqfk_glue_cases) - 1) {
		vqfk_kreq_cache_drain(&vqfk_g->cache);
		for (p = 0; p < 2; p++)
			if (vqfk_g->pages[p])
				__free_page(vqfk_g->pages[p]);
		kfree(vqfk_g);
		vqfk_g = NULL;
	}
	return ret;
}

#endif /* VQFUSE_KTAP_GLUE_H */
