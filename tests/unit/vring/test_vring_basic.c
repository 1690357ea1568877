// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The split virtqueue stepped by hand: both halves in one thread, every
 * step checked.  Hostile input is in test_vring_hostile.c, threads in
 * test_vring_thread.c.
 */
#include "vring_fixture.h"

static struct vqf_vring_gseg gs(u64 addr, u32 len)
{
	return (struct vqf_vring_gseg){ .addr = addr, .len = len };
}

static void test_gmem(void **state)
{
	static u8 a[256], b[256], c[64];
	struct vqf_gmem m;
	u8 out[64];
	u64 contig = 0;
	unsigned int i;

	vqf_gmem_init(&m);
	assert_int_equal(vqf_gmem_add(&m, 0x1000, 0, a), -EINVAL);
	assert_int_equal(vqf_gmem_add(&m, 0x1000, 256, NULL), -EINVAL);
	assert_int_equal(vqf_gmem_add(&m, ~0ULL - 10, 256, a), -EINVAL);
	assert_int_equal(vqf_gmem_add(&m, 0x1100, 256, b), 0);
	assert_int_equal(vqf_gmem_add(&m, 0x1000, 256, a), 0);
	assert_int_equal(vqf_gmem_add(&m, 0x10ff, 2, c), -EEXIST);
	assert_int_equal(vqf_gmem_add(&m, 0x1000, 1, c), -EEXIST);
	assert_int_equal(vqf_gmem_add(&m, 0x11ff, 1, c), -EEXIST);
	/* a region ending exactly at 2^64 is legal */
	assert_int_equal(vqf_gmem_add(&m, ~0ULL - 63, 64, c), 0);
	assert_int_equal(m.nr, 3);
	assert_true(m.r[0].gpa == 0x1000 && m.r[1].gpa == 0x1100);

	assert_ptr_equal(vqf_gmem_find(&m, 0x1010, &contig), a + 0x10);
	assert_int_equal(contig, 0xf0);
	assert_ptr_equal(vqf_gmem_find(&m, 0x11ff, &contig), b + 0xff);
	assert_int_equal(contig, 1);
	assert_null(vqf_gmem_find(&m, 0x1200, &contig));
	assert_null(vqf_gmem_find(&m, 0xfff, &contig));
	assert_ptr_equal(vqf_gmem_find(&m, ~0ULL, &contig), c + 63);
	assert_null(vqf_gmem_ptr(&m, 0x10f0, 0x20));	/* crosses regions */
	assert_ptr_equal(vqf_gmem_ptr(&m, 0x10f0, 0x10), a + 0xf0);
	assert_null(vqf_gmem_ptr(&m, ~0ULL - 1, 4));	/* wraps */

	for (i = 0; i < 256; i++) {
		a[i] = (u8)i;
		b[i] = (u8)(0x80 + i);
	}
	assert_int_equal(vqf_gmem_read(&m, 0x10f0, out, 32), 0);
	for (i = 0; i < 32; i++)
		assert_int_equal(out[i], i < 16 ? 0xf0 + i : 0x80 + i - 16);
	assert_int_equal(vqf_gmem_read(&m, 0x11f0, out, 32), -EFAULT);
	assert_int_equal(vqf_gmem_read(&m, ~0ULL, out, 2), -EFAULT);

	for (i = 3; i < VQF_GMEM_MAX_REGIONS; i++)
		assert_int_equal(vqf_gmem_add(&m, 0x100000 * i, 16, c), 0);
	assert_int_equal(vqf_gmem_add(&m, 0x100000 * i, 16, c), -ENOSPC);
}

static void test_layout(void **state)
{
	struct vqf_vring_addr a;

	assert_int_equal(vqf_vring_layout(256, 0x10000, 4096, &a),
			 0x2000 + 6 + 8 * 256);
	assert_true(a.desc == 0x10000 && a.avail == 0x11000 &&
		    a.used == 0x12000);
	assert_int_equal(vqf_vring_layout(4, 0, 4, &a), 64 + 14 + 2 + 38);
	assert_int_equal(a.used, 80);
	assert_int_equal(vqf_vring_layout(3, 0, 4, &a), 0);
	assert_int_equal(vqf_vring_layout(65536, 0, 4, &a), 0);
	assert_int_equal(vqf_vring_layout(4, 8, 4, &a), 0);
	assert_int_equal(vqf_vring_layout(4, 0, 3, &a), 0);
}

static void test_create_errors(void **state)
{
	struct fx f;
	struct vqf_vring_dev_cfg vc = { 0 };
	struct vqf_vring_drv_cfg dc = { 0 };
	struct vqf_vring_dev *dev;
	struct vqf_vring_drv *drv;
	static const unsigned int bad[] = { 0, 3, 100, 65536 };
	unsigned int i;

	fx_init(&f, 8, 0, 0, 0);
	vc.num = 8;
	vc.addr = f.addr;
	vc.mem = &f.mem;
	dc.num = 8;
	dc.addr = f.addr;
	dc.mem = &f.mem;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		vc.num = dc.num = bad[i];
		assert_int_equal(vqf_vring_dev_create(&vc, &dev), -EINVAL);
		assert_int_equal(vqf_vring_drv_create(&dc, &drv), -EINVAL);
	}
	vc.num = dc.num = 8;
	vc.features = dc.features = 1ULL << 40;
	assert_int_equal(vqf_vring_dev_create(&vc, &dev), -EINVAL);
	assert_int_equal(vqf_vring_drv_create(&dc, &drv), -EINVAL);
	vc.features = dc.features = 0;
	vc.addr.desc += 8;
	dc.addr.desc += 8;
	assert_int_equal(vqf_vring_dev_create(&vc, &dev), -EINVAL);
	assert_int_equal(vqf_vring_drv_create(&dc, &drv), -EINVAL);
	vc.addr = dc.addr = f.addr;
	vc.addr.used = dc.addr.used = HOLE_GPA;
	assert_int_equal(vqf_vring_dev_create(&vc, &dev), -EFAULT);
	assert_int_equal(vqf_vring_drv_create(&dc, &drv), -EFAULT);
	/* a ring that would cross from one region into the next */
	vc.addr.used = BUF2_GPA - 16;
	assert_int_equal(vqf_vring_dev_create(&vc, &dev), -EFAULT);
	fx_fini(&f);
}

static void test_roundtrip_direct(void **state)
{
	struct vqf_vring_gseg rd[2] = { gs(BUF_GPA, 100), gs(BUF_GPA + 200, 50) };
	struct vqf_vring_gseg wr[1] = { gs(BUF_GPA + 1000, 64) };
	struct fx f;
	void *cookie;
	u32 len;
	int cookie_obj;

	fx_init(&f, 16, 0, 0, 0);
	memcpy(f.buf1, "request", 7);
	assert_int_equal(vqf_vring_drv_add(f.drv, rd, 2, wr, 1, &cookie_obj), 0);
	assert_int_equal(vqf_vring_drv_num_free(f.drv), 13);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 0 + 1);
	assert_int_equal(f.c.nr_rd, 2);
	assert_int_equal(f.c.nr_wr, 1);
	assert_int_equal(f.c.rd_bytes, 150);
	assert_int_equal(f.c.wr_bytes, 64);
	assert_int_equal(f.c.ndesc, 3);
	assert_false(f.c.indirect);
	assert_ptr_equal(vqf_chain_rd(&f.c)[0].hva, f.buf1);
	assert_int_equal(vqf_chain_rd(&f.c)[1].gpa, BUF_GPA + 200);
	assert_int_equal(vqf_chain_rd(&f.c)[1].len, 50);
	assert_ptr_equal(vqf_chain_wr(&f.c)[0].hva, f.buf1 + 1000);
	assert_memory_equal(vqf_chain_rd(&f.c)[0].hva, "request", 7);
	memcpy(vqf_chain_wr(&f.c)[0].hva, "reply", 5);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 0);

	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 0);
	assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 5), 0);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_ptr_equal(cookie, &cookie_obj);
	assert_int_equal(len, 5);
	assert_memory_equal(f.buf1 + 1000, "reply", 5);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 0);
	assert_int_equal(vqf_vring_drv_num_free(f.drv), 16);
	assert_int_equal(f.ds.bufs_added, 1);
	assert_int_equal(f.ds.descs_added, 3);
	assert_int_equal(f.ds.bufs_used, 1);
	assert_int_equal(f.vs.chains, 1);
	assert_int_equal(f.vs.descs, 3);
	assert_int_equal(f.vs.pushed, 1);
	fx_fini(&f);
}

static void test_add_errors(void **state)
{
	struct vqf_vring_gseg s[9];
	struct fx f;
	unsigned int i;
	int x;

	fx_init(&f, 8, 0, 0, 0);
	for (i = 0; i < 9; i++)
		s[i] = gs(BUF_GPA + i * 16, 16);
	assert_int_equal(vqf_vring_drv_add(f.drv, NULL, 0, NULL, 0, &x),
			 -EINVAL);
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, NULL, 0, NULL),
			 -EINVAL);
	s[0].len = 0;
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, NULL, 0, &x),
			 -EINVAL);
	s[0].len = 16;
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 5, s + 5, 4, &x), -E2BIG);
	s[0].len = 0xffffffffu;
	s[1].len = 2;
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, s + 1, 1, &x), -EFBIG);
	s[1].len = 1;	/* exactly 2^32 is allowed */
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, s + 1, 1, &x), 0);
	assert_int_equal(f.ds.bufs_added, 1);
	fx_fini(&f);
}

static void test_queue_full(void **state)
{
	struct vqf_vring_gseg s[3] = { gs(BUF_GPA, 8), gs(BUF_GPA + 8, 8),
				       gs(BUF_GPA + 16, 8) };
	struct fx f;
	unsigned int i;
	int ck[16];
	void *cookie;
	u32 len;

	fx_init(&f, 8, 0, 0, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(vqf_vring_drv_add(f.drv, s, 2, NULL, 0,
						   &ck[i]), 0);
	assert_int_equal(vqf_vring_drv_num_free(f.drv), 2);
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 3, NULL, 0, &ck[3]),
			 -ENOSPC);
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, s + 1, 1, &ck[3]), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, NULL, 0, &ck[4]),
			 -ENOSPC);
	/* completing one frees its two descriptors */
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0), 0);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_ptr_equal(cookie, &ck[0]);
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, NULL, 0, &ck[4]), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, NULL, 0, &ck[5]), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, NULL, 0, &ck[6]),
			 -ENOSPC);
	fx_fini(&f);

	/* With indirect descriptors only when short (like Linux falls back
	 * the other way): a 3-segment buffer still fits in one descriptor.
	 */
	fx_init(&f, 8, F_INDIRECT, 0, 100);
	for (i = 0; i < 7; i++)
		assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, NULL, 0,
						   &ck[i]), 0);
	assert_int_equal(f.ds.indirect_added, 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 2, s + 2, 1, &ck[7]), 0);
	assert_int_equal(f.ds.indirect_added, 1);
	assert_int_equal(vqf_vring_drv_num_free(f.drv), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, s, 1, NULL, 0, &ck[8]),
			 -ENOSPC);
	for (i = 0; i < 8; i++) {
		assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
		assert_int_equal(f.c.indirect, i == 7);
		assert_int_equal(f.c.nr_rd + f.c.nr_wr, i == 7 ? 3 : 1);
	}
	fx_fini(&f);
}

static void test_indirect_mix(void **state)
{
	struct vqf_vring_gseg rd[3] = { gs(BUF_GPA, 10), gs(BUF_GPA + 10, 10),
					gs(BUF_GPA + 20, 10) };
	struct vqf_vring_gseg wr[2] = { gs(BUF_GPA + 100, 7),
					gs(BUF_GPA + 200, 9) };
	struct fx f;
	unsigned int i;
	int ck[8];
	void *cookie;
	u32 len;

	fx_init(&f, 16, F_INDIRECT, 0, 0);
	/* 1 segment: direct; more: indirect (Linux's default policy) */
	assert_int_equal(vqf_vring_drv_add(f.drv, rd, 1, NULL, 0, &ck[0]), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, rd, 3, wr, 2, &ck[1]), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, NULL, 0, wr, 2, &ck[2]), 0);
	assert_int_equal(f.ds.indirect_added, 2);
	assert_int_equal(vqf_vring_drv_num_free(f.drv), 13);
	assert_int_equal(f.pool.nfree, 16 - 2);

	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_false(f.c.indirect);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_true(f.c.indirect);
	assert_int_equal(f.c.nr_rd, 3);
	assert_int_equal(f.c.nr_wr, 2);
	assert_int_equal(f.c.ndesc, 6);
	for (i = 0; i < 3; i++)
		assert_int_equal(f.seg[i].gpa, BUF_GPA + 10 * i);
	assert_int_equal(vqf_chain_wr(&f.c)[1].len, 9);
	assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 16), 0);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(f.c.nr_rd, 0);
	assert_int_equal(f.c.nr_wr, 2);
	assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 3), 0);
	assert_int_equal(vqf_vring_dev_push(f.dev, 0, 0), 0);

	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_ptr_equal(cookie, &ck[1]);
	assert_int_equal(len, 16);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_ptr_equal(cookie, &ck[2]);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_ptr_equal(cookie, &ck[0]);
	assert_int_equal(f.pool.nfree, 16);
	assert_int_equal(vqf_vring_drv_num_free(f.drv), 16);
	assert_int_equal(f.vs.indirect, 2);
	assert_int_equal(f.vs.descs, 1 + 6 + 3);
	fx_fini(&f);
}

/* A direct descriptor chained to an indirect one (spec 2.7.5.3.2: the
 * device must accept zero or more direct descriptors before the table).
 */
static void test_direct_then_indirect(void **state)
{
	struct vring_desc *tab;
	struct fx f;

	fx_init(&f, 8, F_INDIRECT, 0, 0);
	tab = (void *)(f.ring_mem + (f.pool_gpa - RING_GPA));
	tab[0] = (struct vring_desc){ BUF_GPA + 64, 32, VRING_DESC_F_NEXT, 1 };
	tab[1] = (struct vring_desc){ BUF_GPA + 128, 48, VRING_DESC_F_WRITE, 0 };
	f.desc[5] = (struct vring_desc){ BUF_GPA, 16, VRING_DESC_F_NEXT, 2 };
	f.desc[2] = (struct vring_desc){ f.pool_gpa, 32, VRING_DESC_F_INDIRECT,
					 0 };
	f.avail->ring[0] = 5;
	f.avail->idx = 1;
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(f.c.head, 5);
	assert_true(f.c.indirect);
	assert_int_equal(f.c.nr_rd, 2);
	assert_int_equal(f.c.nr_wr, 1);
	assert_int_equal(f.seg[0].gpa, BUF_GPA);
	assert_int_equal(f.seg[1].gpa, BUF_GPA + 64);
	assert_int_equal(f.seg[2].len, 48);
	assert_int_equal(f.c.ndesc, 4);
	assert_false(vqf_vring_dev_is_broken(f.dev));

	/* A table that crosses two adjacent regions is read piecewise. */
	tab = (void *)(f.buf1 + BUF_SIZE - 16);
	tab[0] = (struct vring_desc){ BUF_GPA, 4, VRING_DESC_F_NEXT, 1 };
	memcpy(f.buf2, &(struct vring_desc){ BUF_GPA + 4, 4, 0, 0 }, 16);
	f.desc[1] = (struct vring_desc){ BUF2_GPA - 16, 32,
					 VRING_DESC_F_INDIRECT, 0 };
	f.avail->ring[1] = 1;
	f.avail->idx = 2;
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(f.c.nr_rd, 2);
	assert_int_equal(f.seg[1].gpa, BUF_GPA + 4);

	/* A misaligned table is legal too; it is copied, not read in place. */
	memcpy(f.buf1 + 3, &(struct vring_desc){ BUF_GPA + 8, 4, 0, 0 }, 16);
	f.desc[4] = (struct vring_desc){ BUF_GPA + 3, 16, VRING_DESC_F_INDIRECT,
					 0 };
	f.avail->ring[2] = 4;
	f.avail->idx = 3;
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(f.c.nr_rd, 1);
	assert_int_equal(f.seg[0].gpa, BUF_GPA + 8);
	fx_fini(&f);
}

static void test_straddle(void **state)
{
	struct vqf_vring_gseg rd = gs(BUF2_GPA - 10, 30);
	struct vqf_vring_gseg wr = gs(BUF2_GPA - 4, 8);
	struct fx f;
	int ck;

	fx_init(&f, 4, 0, 0, 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, &rd, 1, &wr, 1, &ck), 0);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(f.c.nr_rd, 2);
	assert_int_equal(f.c.nr_wr, 2);
	assert_ptr_equal(f.seg[0].hva, f.buf1 + BUF_SIZE - 10);
	assert_int_equal(f.seg[0].len, 10);
	assert_ptr_equal(f.seg[1].hva, f.buf2);
	assert_int_equal(f.seg[1].gpa, BUF2_GPA);
	assert_int_equal(f.seg[1].len, 20);
	assert_int_equal(f.seg[2].len, 4);
	assert_int_equal(f.seg[3].len, 4);
	assert_int_equal(f.c.rd_bytes, 30);
	assert_int_equal(f.vs.split_segs, 2);
	fx_fini(&f);
}

static void test_out_of_order(void **state)
{
	static const unsigned int order[] = { 2, 0, 3, 1, 5, 4 };
	struct vqf_vring_gseg s = gs(BUF_GPA, 64);
	u16 heads[6];
	int ck[6];
	struct fx f;
	unsigned int i;
	void *cookie;
	u32 len;

	fx_init(&f, 8, F_EVENT, 0, 0);
	for (i = 0; i < 6; i++)
		assert_int_equal(vqf_vring_drv_add(f.drv, NULL, 0, &s, 1,
						   &ck[i]), 0);
	for (i = 0; i < 6; i++) {
		assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
		heads[i] = f.c.head;
	}
	for (i = 0; i < 6; i++)
		assert_int_equal(vqf_vring_dev_push(f.dev, heads[order[i]],
						    order[i]), 0);
	for (i = 0; i < 6; i++) {
		assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len),
				 1);
		assert_ptr_equal(cookie, &ck[order[i]]);
		assert_int_equal(len, order[i]);
	}
	assert_int_equal(vqf_vring_drv_num_free(f.drv), 8);
	/* freed descriptors are reused in any order */
	for (i = 0; i < 8; i++)
		assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0,
						   &ck[0]), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck[0]),
			 -ENOSPC);
	fx_fini(&f);
}

/* Indices start just below 65535 and wrap while buffers are in flight. */
static void test_wraparound(void **state)
{
	static const u16 starts[] = { 65535, 65530, 65533, 0 };
	static const unsigned int nums[] = { 1, 4, 8 };
	struct vqf_vring_gseg s = gs(BUF_GPA, 8);
	unsigned int si, ni, it, k;
	void *cookie;
	u32 len;

	for (si = 0; si < ARRAY_SIZE(starts); si++)
		for (ni = 0; ni < ARRAY_SIZE(nums); ni++) {
			struct fx f;
			unsigned int n = nums[ni];
			uintptr_t next_ck = 1, want_ck = 1;

			fx_init(&f, n, F_EVENT, starts[si], 0);
			for (it = 0; it < 40; it++) {
				for (k = 0; k < n; k++)
					assert_int_equal(vqf_vring_drv_add(
						f.drv, &s, 1, NULL, 0,
						(void *)next_ck++), 0);
				for (k = 0; k < n; k++) {
					assert_int_equal(vqf_vring_dev_pop(
							 f.dev, &f.c), 1);
					assert_int_equal(vqf_vring_dev_push(
						f.dev, f.c.head, 0), 0);
				}
				assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c),
						 0);
				for (k = 0; k < n; k++) {
					assert_int_equal(vqf_vring_drv_get_buf(
						f.drv, &cookie, &len), 1);
					assert_ptr_equal(cookie,
							 (void *)want_ck++);
				}
				assert_int_equal(vqf_vring_drv_get_buf(
					f.drv, &cookie, &len), 0);
			}
			assert_int_equal(le16_to_cpu(f.avail->idx),
					 (u16)(starts[si] + 40 * n));
			assert_int_equal(le16_to_cpu(f.used->idx),
					 (u16)(starts[si] + 40 * n));
			fx_fini(&f);
		}
}

static void test_need_event(void **state)
{
	static const struct {
		u16 event, new, old;
		bool want;
	} c[] = {
		{ 0, 1, 0, true },	/* event is the first new entry */
		{ 1, 1, 0, false },	/* event not yet reached */
		{ 0, 0, 0, false },	/* nothing new */
		{ 5, 10, 0, true },	/* inside the window */
		{ 10, 10, 0, false },	/* one past the window */
		{ 9, 10, 0, true },	/* last entry of the window */
		{ 65535, 0, 65535, true },	/* window crosses zero */
		{ 65535, 1, 65534, true },
		{ 0, 1, 65535, true },
		{ 1, 1, 65535, false },
		{ 65534, 1, 65535, false },	/* event behind old */
		{ 100, 0, 1, true },	/* window of 65535 entries */
		{ 0, 0, 1, false },	/* ... except new itself */
		{ 32768, 32769, 0, true },
		{ 40000, 32769, 0, false },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(c); i++)
		assert_int_equal(vring_need_event(c[i].event, c[i].new,
						  c[i].old), c[i].want);
}

static void test_kick_suppression(void **state)
{
	struct vqf_vring_gseg s = gs(BUF_GPA, 8);
	__virtio16 ev;
	struct fx f;
	int ck;

	/* Flag based: the device says "no kicks" while it polls. */
	fx_init(&f, 8, 0, 0, 0);
	assert_false(vqf_vring_drv_kick_prepare(f.drv));	/* nothing added */
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck), 0);
	assert_true(vqf_vring_drv_kick_prepare(f.drv));
	vqf_vring_dev_disable_notify(f.dev);
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck), 0);
	assert_false(vqf_vring_drv_kick_prepare(f.drv));
	assert_false(vqf_vring_dev_enable_notify(f.dev));	/* 2 pending */
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_true(vqf_vring_dev_enable_notify(f.dev));
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck), 0);
	assert_true(vqf_vring_drv_kick_prepare(f.drv));
	assert_int_equal(f.ds.kicks_sent, 2);
	assert_int_equal(f.ds.kicks_suppressed, 1);
	fx_fini(&f);

	/* Event index: one kick per time the device went to sleep. */
	fx_init(&f, 8, F_EVENT, 0, 0);
	assert_true(vqf_vring_dev_enable_notify(f.dev));	/* wants idx 0 */
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck), 0);
	assert_true(vqf_vring_drv_kick_prepare(f.drv));
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck), 0);
	assert_false(vqf_vring_drv_kick_prepare(f.drv));	/* still awake */
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_true(vqf_vring_dev_enable_notify(f.dev));	/* wants idx 2 */
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck), 0);
	assert_true(vqf_vring_drv_kick_prepare(f.drv));	/* batch of 2 */
	memcpy(&ev, &f.used->ring[8], sizeof(ev));
	assert_int_equal(le16_to_cpu(ev), 2);
	assert_int_equal(f.ds.kicks_sent, 2);
	assert_int_equal(f.ds.kicks_suppressed, 1);
	fx_fini(&f);
}

static void test_interrupt_suppression(void **state)
{
	struct vqf_vring_gseg s = gs(BUF_GPA, 8);
	struct fx f;
	int ck[4];
	void *cookie;
	u32 len;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		bool ev = i;

		fx_init(&f, 8, ev ? F_EVENT : 0, 0, 0);
		assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0,
						   &ck[0]), 0);
		assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0,
						   &ck[1]), 0);
		assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0,
						   &ck[2]), 0);
		/* nothing pushed yet: nothing to say */
		assert_false(vqf_vring_dev_need_notify(f.dev));
		assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
		assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0), 0);
		assert_true(vqf_vring_dev_need_notify(f.dev));
		assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
		assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0), 0);
		/* with EVENT_IDX the driver has not caught up: suppressed */
		assert_int_equal(vqf_vring_dev_need_notify(f.dev), !ev);

		/* the race-free loop: disable, drain, re-enable, re-check */
		vqf_vring_drv_disable_cb(f.drv);
		assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len),
				 1);
		assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
		assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0), 0);
		assert_false(vqf_vring_dev_need_notify(f.dev));
		assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len),
				 1);
		/* an entry lands between the drain and enable_cb ... */
		assert_false(vqf_vring_drv_enable_cb(f.drv));
		assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len),
				 1);
		assert_ptr_equal(cookie, &ck[2]);
		assert_true(vqf_vring_drv_enable_cb(f.drv));
		/* ... and once enabled the next completion interrupts */
		assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0,
						   &ck[3]), 0);
		assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
		assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0), 0);
		assert_true(vqf_vring_dev_need_notify(f.dev));
		assert_int_equal(f.vs.interrupts_sent, ev ? 2 : 3);
		assert_int_equal(f.vs.interrupts_suppressed, ev ? 2 : 1);
		fx_fini(&f);
	}
}

static void test_notify_on_empty(void **state)
{
	struct vqf_vring_gseg s = gs(BUF_GPA, 8);
	struct fx f;
	int ck;

	fx_init(&f, 8, F_ON_EMPTY, 0, 0);
	vqf_vring_drv_disable_cb(f.drv);
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL, 0, &ck), 0);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0), 0);
	assert_false(vqf_vring_dev_need_notify(f.dev));	/* one still queued */
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0), 0);
	assert_true(vqf_vring_dev_need_notify(f.dev));	/* ran out */
	fx_fini(&f);
}

static void test_reset_inflight(void **state)
{
	struct vqf_vring_gseg s[2] = { gs(BUF_GPA, 8), gs(BUF_GPA + 8, 8) };
	struct fx f;
	uintptr_t seen = 0;
	unsigned int i, n = 0;
	void *cookie;
	u32 len;

	fx_init(&f, 16, F_INDIRECT | F_EVENT, 100, 0);
	for (i = 0; i < 6; i++)
		assert_int_equal(vqf_vring_drv_add(f.drv, s, i % 2 + 1, NULL,
						   0, (void *)(uintptr_t)(1u << i)),
				 0);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0), 0);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_ptr_equal(cookie, (void *)2);

	/* the device is reset with five buffers in flight */
	assert_int_equal(vqf_vring_drv_reset(f.drv), -EBUSY);
	while ((cookie = vqf_vring_drv_detach_unused(f.drv))) {
		assert_false(seen & (uintptr_t)cookie);
		seen |= (uintptr_t)cookie;
		n++;
	}
	assert_int_equal(n, 5);
	assert_int_equal(seen, 0x3d);
	assert_int_equal(f.ds.detached, 5);
	assert_int_equal(vqf_vring_drv_num_free(f.drv), 16);
	assert_int_equal(f.pool.nfree, 16);
	assert_int_equal(vqf_vring_drv_reset(f.drv), 0);
	vqf_vring_dev_reset(f.dev, 100, 100);

	assert_int_equal(vqf_vring_drv_add(f.drv, s, 2, NULL, 0, (void *)7), 0);
	assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 1);
	assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0), 0);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_ptr_equal(cookie, (void *)7);
	fx_fini(&f);
}

/* Every power-of-two size: fill completely, drain, twice round. */
static void test_all_sizes(void **state)
{
	struct vqf_vring_gseg s = gs(BUF_GPA, 1);
	unsigned int num, i, round;
	void *cookie;
	u32 len;

	for (num = 1; num <= VQF_VRING_MAX_NUM; num *= 2) {
		struct fx f;

		fx_init(&f, num, F_EVENT, 0, 0);
		for (round = 0; round < 2; round++) {
			for (i = 0; i < num; i++)
				assert_int_equal(vqf_vring_drv_add(f.drv, &s,
					1, NULL, 0, (void *)(uintptr_t)(i + 1)),
					0);
			assert_int_equal(vqf_vring_drv_add(f.drv, &s, 1, NULL,
							   0, &f), -ENOSPC);
			for (i = 0; i < num; i++) {
				assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c),
						 1);
				assert_int_equal(vqf_vring_dev_push(f.dev,
						 f.c.head, 0), 0);
			}
			for (i = 0; i < num; i++) {
				assert_int_equal(vqf_vring_drv_get_buf(f.drv,
						 &cookie, &len), 1);
				assert_ptr_equal(cookie,
						 (void *)(uintptr_t)(i + 1));
			}
		}
		assert_int_equal(f.ds.bufs_used, 2 * num);
		fx_fini(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gmem),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_roundtrip_direct),
		cmocka_unit_test(test_add_errors),
		cmocka_unit_test(test_queue_full),
		cmocka_unit_test(test_indirect_mix),
		cmocka_unit_test(test_direct_then_indirect),
		cmocka_unit_test(test_straddle),
		cmocka_unit_test(test_out_of_order),
		cmocka_unit_test(test_wraparound),
		cmocka_unit_test(test_need_event),
		cmocka_unit_test(test_kick_suppression),
		cmocka_unit_test(test_interrupt_suppression),
		cmocka_unit_test(test_notify_on_empty),
		cmocka_unit_test(test_reset_inflight),
		cmocka_unit_test(test_all_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
