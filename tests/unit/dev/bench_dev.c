// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench-dev: what the device side costs per request, next to the copy a
 * device makes anyway.  Not a test; prints ns per operation:
 *
 *   build/tests/unit/dev/bench-dev [iterations]
 *
 * Peers in the same run: parsing a 4 KiB WRITE and handing its payload
 * over as segments (zero copy) vs parsing and flattening it for libfuse
 * vs a bare memcpy of the same bytes; building a 4 KiB READ reply over
 * three segments vs a bare memcpy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vqf_dev.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static u8 img[8192], flat[8192], out[8192];
static struct vqf_dev_req req;
static volatile int sink;

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 200000, i;
	struct fuse_in_header h = { .opcode = FUSE_LOOKUP, .unique = 2,
				    .nodeid = 1 };
	struct fuse_write_in w = { .fh = 1, .size = 4096 };
	struct vqf_dev_seg seg[3], views[4];
	struct vqf_dev_wseg ws[3];
	struct vqf_dev_piece pc = { flat, 4096 };
	struct vqf_dev_conn conn;
	struct vqf_dev_stats st = { 0 };
	double t0;

	vqf_dev_conn_init(&conn);
	conn.initialized = true;
	conn.minor = 38;

	/* LOOKUP "some-file.txt", one segment. */
	h.len = 40 + 14;
	memcpy(img, &h, 40);
	memcpy(img + 40, "some-file.txt", 14);
	seg[0] = (struct vqf_dev_seg){ img, h.len };
	t0 = now_ns();
	for (i = 0; i < iters; i++)
		sink += vqf_dev_parse(&conn, seg, 1, false, &req, &st);
	printf("parse LOOKUP (54 bytes, 1 segment):          %7.1f ns\n",
	       (now_ns() - t0) / iters);

	/* WRITE 4 KiB: header | write_in | 4096 bytes of data in 2 pieces. */
	h.opcode = FUSE_WRITE;
	h.len = 40 + 40 + 4096;
	memcpy(img, &h, 40);
	memcpy(img + 40, &w, 40);
	memset(img + 80, 'd', 4096);
	seg[0] = (struct vqf_dev_seg){ img, 80 };
	seg[1] = (struct vqf_dev_seg){ img + 80, 1000 };
	seg[2] = (struct vqf_dev_seg){ img + 1080, 3096 };
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		sink += vqf_dev_parse(&conn, seg, 3, false, &req, &st);
		sink += vqf_dev_view_segs(&req.data, views, 4);
	}
	printf("parse WRITE 4 KiB, payload as segments:      %7.1f ns\n",
	       (now_ns() - t0) / iters);
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		sink += vqf_dev_parse(&conn, seg, 3, false, &req, &st);
		sink += vqf_dev_flatten(&req, flat, sizeof(flat));
	}
	printf("parse WRITE 4 KiB + flatten for libfuse:     %7.1f ns\n",
	       (now_ns() - t0) / iters);
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		memcpy(flat, img, h.len);
		sink += flat[i & 4095];
	}
	printf("  peer: memcpy of the same 4176 bytes:       %7.1f ns\n",
	       (now_ns() - t0) / iters);

	/* READ reply, 4 KiB over header + two pages. */
	ws[0] = (struct vqf_dev_wseg){ out, 16 };
	ws[1] = (struct vqf_dev_wseg){ out + 16, 1000 };
	ws[2] = (struct vqf_dev_wseg){ out + 1016, 4096 };
	t0 = now_ns();
	for (i = 0; i < iters; i++)
		sink += vqf_dev_reply(ws, 3, i, 0, &pc, 1, &st);
	printf("reply READ 4 KiB over 3 segments:            %7.1f ns\n",
	       (now_ns() - t0) / iters);
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		memcpy(out + 16, flat, 4096);
		sink += out[i & 4095];
	}
	printf("  peer: memcpy of the 4096 payload bytes:    %7.1f ns\n",
	       (now_ns() - t0) / iters);
	return st.reject[VQF_DEV_R_OPCODE] != 0;
}
