// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * req-bench: cost of one request's guest-side marshalling with lib/vqf_req
 * (argbuf, sg layout, validated completion; two steps, and one with
 * vqf_req_marshal()) against an upstream-6.1-style
 * path in the same run (same copies, no reply checks, as
 * copy_args_to_argbuf() / sg_init_fuse_args() / copy_args_from_argbuf()).
 * Not a test: prints ns per request.  Usage: req-bench [iterations]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vqf_req.h"

static u8 pages[32][4096];
static u8 sink;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void zero_cb(void *ctx, void *page, u32 off, u32 len)
{
	(void)ctx;
	memset((u8 *)page + off, 0, len);
}

/* The upstream shape: no checks, copy out by the device's out_h.len. */
static int upstream_cycle(struct vqf_req *r, u8 *argbuf, struct vqf_sg *sg)
{
	unsigned int i, n = 0, off = 0, num_in, num_out;
	unsigned int remaining;

	num_in = r->in_numargs - r->in_pages;
	num_out = r->out_numargs - r->out_pages;
	for (i = 0; i < num_in; i++) {
		memcpy(argbuf + off, r->in_args[i].value, r->in_args[i].size);
		off += r->in_args[i].size;
	}
	sg[n].addr = &r->in_h;
	sg[n++].len = sizeof(r->in_h);
	if (off) {
		sg[n].addr = argbuf;
		sg[n++].len = off;
	}
	sg[n].addr = &r->out_h;
	sg[n++].len = sizeof(r->out_h);
	for (i = 0; r->out_pages && i < r->nr_out_pv; i++) {
		sg[n].page = r->out_pv[i].page;
		sg[n++].len = r->out_pv[i].length;
	}
	remaining = r->out_h.len - sizeof(r->out_h);
	for (i = 0; i < num_out; i++) {
		unsigned int argsize = r->out_args[i].size;

		if (r->out_argvar && i == r->out_numargs - 1u &&
		    argsize > remaining)
			argsize = remaining;
		memcpy(r->out_args[i].value, argbuf + off, argsize);
		off += argsize;
		if (i != r->out_numargs - 1u)
			remaining -= argsize;
	}
	if (r->out_argvar)
		r->out_args[r->out_numargs - 1].size = remaining;
	if (r->out_pages && r->page_zeroing) {
		u32 len = r->out_args[r->out_numargs - 1].size;

		for (i = 0; i < r->nr_out_pv; i++) {
			u32 l = r->out_pv[i].length;

			if (len < l) {
				memset((u8 *)r->out_pv[i].page + len, 0,
				       l - len);
				len = 0;
			} else {
				len -= l;
			}
		}
	}
	return n;
}

static int lib_cycle(struct vqf_req *r, u8 *argbuf, struct vqf_sg *sg,
		     struct vqf_req_stats *st)
{
	static const struct vqf_page_ops ops = { .zero = zero_cb };
	u32 used = r->out_h.len;

	if (vqf_req_to_argbuf(r, argbuf, 512))
		return -1;
	if (vqf_req_build_sg(r, argbuf, sg, 40, NULL) < 0)
		return -1;
	return vqf_req_complete(r, argbuf, used, &ops, NULL, st);
}

/* The same through vqf_req_marshal(), as vqfuse.ko's enqueue calls it. */
static int marshal_cycle(struct vqf_req *r, u8 *argbuf, struct vqf_sg *sg,
			 struct vqf_req_stats *st)
{
	static const struct vqf_page_ops ops = { .zero = zero_cb };
	u32 used = r->out_h.len;

	if (vqf_req_marshal(r, argbuf, 512, sg, 40, NULL) < 0)
		return -1;
	return vqf_req_complete(r, argbuf, used, &ops, NULL, st);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 1000000;
	static struct vqf_page_desc pv[32];
	static u8 argbuf[512];
	static struct vqf_sg sg[40];
	struct vqf_req_stats st = { 0 };
	struct fuse_getattr_in gi = { 0 };
	struct fuse_attr_out ao;
	struct fuse_read_in ri = { .size = 32 * 4096 };
	struct vqf_req r;
	int shape, peer;
	long i;

	for (i = 0; i < 32; i++)
		pv[i] = (struct vqf_page_desc){ pages[i], 0, 4096 };
	printf("%-28s %12s %12s %12s   (best of 5 rounds, peers interleaved)\n",
	       "shape", "two-step ns", "marshal ns", "upstream ns");
	for (shape = 0; shape < 3; shape++) {
		double t[3] = { 1e18, 1e18, 1e18 };
		long n = shape ? iters / 20 : iters;
		int round;

		for (round = 0; round < 15; round++) {
			double t0 = now_ns(), dt;

			peer = round % 3;
			for (i = 0; i < n; i++) {
				if (shape == 0) {
					vqf_req_init_getattr(&r, 7, 2, &gi, &ao);
					r.out_h.len = 16 + sizeof(ao);
				} else {
					vqf_req_init_read(&r, FUSE_READ, 7, 2,
							  &ri, pv, 32, true);
					/* full read, or half with zeroing */
					r.out_h.len = 16 + (shape == 1 ?
						32 * 4096 : 16 * 4096 + 100);
				}
				r.out_h.unique = 7;
				r.out_h.error = 0;
				if (peer == 0) {
					if (lib_cycle(&r, argbuf, sg, &st))
						return 1;
				} else if (peer == 1) {
					if (marshal_cycle(&r, argbuf, sg, &st))
						return 1;
				} else {
					r.in_h.len = 0;
					upstream_cycle(&r, argbuf, sg);
				}
				sink ^= argbuf[0];
			}
			dt = (now_ns() - t0) / n;
			if (dt < t[peer])
				t[peer] = dt;
		}
		printf("%-28s %12.1f %12.1f %12.1f\n",
		       shape == 0 ? "GETATTR (104 B out)" :
		       shape == 1 ? "READ 32 pages, full" :
				    "READ 32 pages, half+zero", t[0], t[1], t[2]);
	}
	printf("replies ok: %llu (sink %u)\n", (unsigned long long)st.ok, sink);
	return 0;
}
