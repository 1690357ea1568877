// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_vring_drv - sim/vring driver half reading a hostile used ring.
 *
 * Input: u8 queue size (1 << (b % 6)), u8 flags (bit 0 EVENT_IDX, bit 1
 * strict used lengths), u16 starting index, u8 number of buffers to add,
 * for each a u8 shape (readable 0..3, writable 0..3 segments of u16
 * lengths that follow), then rounds of "device" writes: u8 count of used
 * entries to write, each a u16 id and u32 len, u16 used idx; after each
 * round the driver takes what it can.
 *
 * Invariants: get_buf returns only cookies that were added and not yet
 * returned, with a length no larger than the buffer's writable bytes
 * (unless strict, when a larger one is refused); return values are
 * documented; a broken queue stays broken; after a stop every buffer is
 * accounted for exactly once (returned or detached).
 */
#include "fuzz_common.h"
#include "vqf_vring_drv.h"

#define BASE	0x20000ULL
#define MEM	8192
#define MAXBUF	32

struct buf {
	bool added, done;
	u32 wr_bytes;
};

static bool documented(int r)
{
	return r == -EPROTO || r == -ERANGE || r == -EBADSLT ||
	       r == -ENOENT || r == -EALREADY || r == -EMSGSIZE || r == -EIO;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vqf_vring_drv_cfg cfg;
	struct vqf_vring_drv *vq;
	struct buf bufs[MAXBUF];
	struct vring_used *used;
	struct vqf_gmem map;
	unsigned int i, k, nbuf, rounds, out = 0, added = 0;
	bool strict;
	void *cookie;
	u8 *mem, b;
	struct fz f;
	u32 len;
	int r;

	memset(bufs, 0, sizeof(bufs));
	memset(&cfg, 0, sizeof(cfg));
	fz_init(&f, data, size);
	cfg.num = 1u << (fz_u8(&f) % 6);
	b = fz_u8(&f);
	if (b & 1)
		cfg.features |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	strict = b & 2;
	cfg.flags = strict ? VQF_VRING_DRV_STRICT_LEN : 0;
	cfg.start_idx = fz_u16(&f);
	FZ_CHECK(vqf_vring_layout(cfg.num, BASE, 4, &cfg.addr));
	mem = calloc(1, MEM);
	FZ_CHECK(mem);
	vqf_gmem_init(&map);
	FZ_CHECK(vqf_gmem_add(&map, BASE, MEM, mem) == 0);
	cfg.mem = &map;
	FZ_CHECK(vqf_vring_drv_create(&cfg, &vq) == 0);
	used = (struct vring_used *)(mem + (cfg.addr.used - BASE));

	nbuf = fz_u8(&f) % (MAXBUF + 1);
	for (i = 0; i < nbuf; i++) {
		struct vqf_vring_gseg rd[3], wr[3];
		unsigned int nrd, nwr;

		b = fz_u8(&f);
		nrd = b & 3;
		nwr = (b >> 2) & 3;
		for (k = 0; k < nrd; k++) {
			rd[k].addr = BASE + 4096 + 64 * k;
			rd[k].len = 1 + fz_u16(&f) % 64;
		}
		bufs[i].wr_bytes = 0;
		for (k = 0; k < nwr; k++) {
			wr[k].addr = BASE + 6144 + 64 * k;
			wr[k].len = 1 + fz_u16(&f) % 64;
			bufs[i].wr_bytes += wr[k].len;
		}
		r = vqf_vring_drv_add(vq, rd, nrd, wr, nwr, &bufs[i]);
		if (!nrd && !nwr)
			FZ_CHECK(r == -EINVAL);
		else
			FZ_CHECK(r == 0 || r == -ENOSPC || r == -E2BIG);
		bufs[i].added = !r;
		added += !r;
	}
	(void)vqf_vring_drv_kick_prepare(vq);

	for (rounds = 0; f.n && rounds < 16; rounds++) {
		unsigned int n = fz_u8(&f) % (cfg.num + 1);
		u16 idx = READ_ONCE(used->idx);

		for (k = 0; k < n; k++, idx++) {
			struct vring_used_elem *e =
				&used->ring[idx & (cfg.num - 1)];

			e->id = fz_u16(&f);
			e->len = fz_u32(&f);
		}
		/* A lying device may publish any index, not just idx + n. */
		if (fz_u8(&f) & 1)
			idx = fz_u16(&f);
		WRITE_ONCE(used->idx, idx);
		for (;;) {
			struct buf *bp;

			r = vqf_vring_drv_get_buf(vq, &cookie, &len);
			if (r <= 0)
				break;
			bp = cookie;
			FZ_CHECK(bp >= bufs && bp < bufs + MAXBUF);
			FZ_CHECK(bp->added && !bp->done);
			FZ_CHECK(len <= bp->wr_bytes);
			bp->done = true;
			out++;
		}
		if (r < 0) {
			FZ_CHECK(documented(r));
			FZ_CHECK(!strict ? r != -EMSGSIZE : true);
			FZ_CHECK(vqf_vring_drv_is_broken(vq));
			FZ_CHECK(vqf_vring_drv_get_buf(vq, &cookie, &len) ==
				 -EIO);
			break;
		}
		(void)vqf_vring_drv_enable_cb(vq);
	}

	/* Device stopped: everything not returned comes back once. */
	while ((cookie = vqf_vring_drv_detach_unused(vq))) {
		struct buf *bp = cookie;

		FZ_CHECK(bp >= bufs && bp < bufs + MAXBUF);
		FZ_CHECK(bp->added && !bp->done);
		bp->done = true;
		out++;
	}
	FZ_CHECK(out == added);
	FZ_CHECK(vqf_vring_drv_reset(vq) == 0);
	FZ_CHECK(!vqf_vring_drv_is_broken(vq));
	vqf_vring_drv_destroy(vq);
	free(mem);
	return 0;
}
