/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A driver half and a device half over simulated guest memory, for the
 * vring tests: region 0 holds the rings and an indirect-table pool, regions
 * 1 and 2 are adjacent buffer areas (so buffers can straddle them), and the
 * range after region 2 is unmapped.
 */
#ifndef VRING_FIXTURE_H
#define VRING_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "vqf_vring_drv.h"
#include "vqf_vring_dev.h"

#define RING_GPA	0x100000ULL
#define BUF_GPA		0x40000000ULL
#define BUF_SIZE	0x10000ULL		/* per buffer region */
#define BUF2_GPA	(BUF_GPA + BUF_SIZE)	/* adjacent to region 1 */
#define HOLE_GPA	(BUF2_GPA + BUF_SIZE)	/* unmapped */
#define POOL_PER_SLOT	64

#define F_EVENT		(1ULL << VIRTIO_RING_F_EVENT_IDX)
#define F_INDIRECT	(1ULL << VIRTIO_RING_F_INDIRECT_DESC)
#define F_ON_EMPTY	(1ULL << VIRTIO_F_NOTIFY_ON_EMPTY)

struct fx {
	unsigned int num;
	u64 features;
	struct vqf_gmem mem;
	u8 *ring_mem, *buf1, *buf2;
	u64 ring_bytes, pool_gpa;
	struct vqf_vring_addr addr;
	struct vqf_vring_ipool pool;
	struct vqf_vring_indirect_ops iops;
	struct vqf_vring_drv *drv;
	struct vqf_vring_dev *dev;
	struct vqf_vring_drv_stats ds;
	struct vqf_vring_dev_stats vs;
	struct vqf_seg seg[256];
	struct vqf_chain c;
	/* host views of the rings, for tests that play a hostile peer */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
};

static inline void fx_init(struct fx *f, unsigned int num, u64 features,
			   u16 start, unsigned int indirect_min)
{
	struct vqf_vring_drv_cfg dc = { 0 };
	struct vqf_vring_dev_cfg vc = { 0 };
	unsigned int slots = num < 64 ? num : 64;

	memset(f, 0, sizeof(*f));
	f->num = num;
	f->features = features;
	f->ring_bytes = vqf_vring_layout(num, RING_GPA, 4096, &f->addr);
	assert_true(f->ring_bytes > 0);
	f->pool_gpa = RING_GPA + VQF_ALIGN(f->ring_bytes, 4096);
	f->ring_mem = aligned_alloc(4096, VQF_ALIGN(VQF_ALIGN(f->ring_bytes,
				    4096) + (u64)slots * POOL_PER_SLOT * 16, 4096));
	f->buf1 = aligned_alloc(4096, BUF_SIZE);
	f->buf2 = aligned_alloc(4096, BUF_SIZE);
	assert_non_null(f->ring_mem);
	assert_non_null(f->buf1);
	assert_non_null(f->buf2);
	memset(f->buf1, 0, BUF_SIZE);
	memset(f->buf2, 0, BUF_SIZE);
	vqf_gmem_init(&f->mem);
	assert_int_equal(vqf_gmem_add(&f->mem, RING_GPA,
				      VQF_ALIGN(f->ring_bytes, 4096) +
				      (u64)slots * POOL_PER_SLOT * 16,
				      f->ring_mem), 0);
	assert_int_equal(vqf_gmem_add(&f->mem, BUF_GPA, BUF_SIZE, f->buf1), 0);
	assert_int_equal(vqf_gmem_add(&f->mem, BUF2_GPA, BUF_SIZE, f->buf2),
			 0);
	assert_int_equal(vqf_vring_ipool_init(&f->pool,
			 f->ring_mem + (f->pool_gpa - RING_GPA), f->pool_gpa,
			 slots, POOL_PER_SLOT), 0);
	vqf_vring_ipool_ops(&f->pool, &f->iops);

	dc.num = num;
	dc.features = features;
	dc.addr = f->addr;
	dc.mem = &f->mem;
	dc.start_idx = start;
	dc.indirect_min = indirect_min;
	dc.iops = &f->iops;
	dc.stats = &f->ds;
	assert_int_equal(vqf_vring_drv_create(&dc, &f->drv), 0);

	vc.num = num;
	vc.features = features;
	vc.addr = f->addr;
	vc.mem = &f->mem;
	vc.last_avail_idx = start;
	vc.used_idx = start;
	vc.stats = &f->vs;
	assert_int_equal(vqf_vring_dev_create(&vc, &f->dev), 0);

	f->c.seg = f->seg;
	f->c.cap = ARRAY_SIZE(f->seg);
	f->desc = (void *)(f->ring_mem + (f->addr.desc - RING_GPA));
	f->avail = (void *)(f->ring_mem + (f->addr.avail - RING_GPA));
	f->used = (void *)(f->ring_mem + (f->addr.used - RING_GPA));
}

static inline void fx_fini(struct fx *f)
{
	vqf_vring_drv_destroy(f->drv);
	vqf_vring_dev_destroy(f->dev);
	vqf_vring_ipool_fini(&f->pool);
	free(f->ring_mem);
	free(f->buf1);
	free(f->buf2);
}

/* Host pointer of a buffer-area guest address (test side knowledge). */
static inline u8 *fx_hva(struct fx *f, u64 gpa)
{
	u64 contig;

	return vqf_gmem_find(&f->mem, gpa, &contig);
}

static inline unsigned int fx_seed(void)
{
	const char *s = getenv("VQF_SEED");

	return s ? (unsigned int)strtoul(s, NULL, 0) : 12345u;
}

static inline bool fx_under_valgrind(void)
{
	const char *s = getenv("VQF_UNDER_VALGRIND");

	return s && *s == '1';
}

#endif /* VRING_FIXTURE_H */
