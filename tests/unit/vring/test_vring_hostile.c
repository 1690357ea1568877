// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Hostile peers: a driver that writes broken chains into the rings, and a
 * device that writes broken used entries.  Each case must give its own
 * errno, bump exactly its own counter, break the queue iff the case is
 * fatal, and touch nothing outside guest memory (ASan and valgrind runs
 * check the last part).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vring_fixture.h"
#include "vqf_memguard.h"

#define NUM 8

static void d(struct fx *f, unsigned int i, u64 addr, u32 len, u16 flags,
	      u16 next)
{
	f->desc[i].addr = cpu_to_le64(addr);
	f->desc[i].len = cpu_to_le32(len);
	f->desc[i].flags = cpu_to_le16(flags);
	f->desc[i].next = cpu_to_le16(next);
}

/* Indirect table in the fixture's pool area, entry @i. */
static struct vring_desc *itab(struct fx *f)
{
	return (void *)(f->ring_mem + (f->pool_gpa - RING_GPA));
}

static void it(struct fx *f, unsigned int i, u64 addr, u32 len, u16 flags,
	       u16 next)
{
	struct vring_desc *t = itab(f);

	t[i].addr = cpu_to_le64(addr);
	t[i].len = cpu_to_le32(len);
	t[i].flags = cpu_to_le16(flags);
	t[i].next = cpu_to_le16(next);
}

static void avail(struct fx *f, u16 head)
{
	u16 idx = le16_to_cpu(f->avail->idx);

	f->avail->ring[idx % f->num] = cpu_to_le16(head);
	f->avail->idx = cpu_to_le16(idx + 1);
}

#define NX VRING_DESC_F_NEXT
#define WR VRING_DESC_F_WRITE
#define IN VRING_DESC_F_INDIRECT

static void c_avail_jump(struct fx *f)
{
	d(f, 0, BUF_GPA, 8, 0, 0);
	f->avail->idx = cpu_to_le16(NUM + 1);
}

static void c_head_range(struct fx *f)
{
	avail(f, NUM);
}

static void c_head_huge(struct fx *f)
{
	avail(f, 0xffff);
}

static void c_next_range(struct fx *f)
{
	d(f, 0, BUF_GPA, 8, NX, NUM);
	avail(f, 0);
}

static void c_loop(struct fx *f)
{
	d(f, 0, BUF_GPA, 8, NX, 1);
	d(f, 1, BUF_GPA, 8, NX, 0);
	avail(f, 0);
}

static void c_self_loop(struct fx *f)
{
	d(f, 3, BUF_GPA, 8, NX | WR, 3);
	avail(f, 3);
}

static void c_rd_after_wr(struct fx *f)
{
	d(f, 0, BUF_GPA, 8, NX | WR, 1);
	d(f, 1, BUF_GPA, 8, 0, 0);
	avail(f, 0);
}

static void c_overflow(struct fx *f)
{
	d(f, 0, ~0ULL - 5, 10, 0, 0);
	avail(f, 0);
}

static void c_unmapped(struct fx *f)
{
	d(f, 0, HOLE_GPA + 4096, 8, 0, 0);
	avail(f, 0);
}

static void c_below(struct fx *f)
{
	d(f, 0, 0, 8, 0, 0);
	avail(f, 0);
}

/* Starts in the last mapped region, runs into the hole. */
static void c_tail_unmapped(struct fx *f)
{
	d(f, 0, HOLE_GPA - 4, 8, WR, 0);
	avail(f, 0);
}

static void c_zero_len(struct fx *f)
{
	d(f, 0, BUF_GPA, 8, NX, 1);
	d(f, 1, BUF_GPA, 0, WR, 0);
	avail(f, 0);
}

static void c_nested(struct fx *f)
{
	it(f, 0, BUF_GPA, 8, NX, 1);
	it(f, 1, f->pool_gpa + 1024, 16, IN, 0);
	d(f, 0, f->pool_gpa, 32, IN, 0);
	avail(f, 0);
}

static void c_ind_zero(struct fx *f)
{
	d(f, 0, f->pool_gpa, 0, IN, 0);
	avail(f, 0);
}

static void c_ind_align(struct fx *f)
{
	it(f, 0, BUF_GPA, 8, 0, 0);
	d(f, 0, f->pool_gpa, 24, IN, 0);
	avail(f, 0);
}

static void c_ind_big(struct fx *f)
{
	d(f, 0, f->pool_gpa, (NUM + 1) * 16, IN, 0);
	avail(f, 0);
}

static void c_ind_next(struct fx *f)
{
	it(f, 0, BUF_GPA, 8, 0, 0);
	d(f, 0, f->pool_gpa, 16, IN | NX, 1);
	d(f, 1, BUF_GPA, 8, 0, 0);
	avail(f, 0);
}

static void c_ind_unneg(struct fx *f)
{
	it(f, 0, BUF_GPA, 8, 0, 0);
	d(f, 0, f->pool_gpa, 16, IN, 0);
	avail(f, 0);
}

static void c_ind_unmapped(struct fx *f)
{
	d(f, 0, HOLE_GPA - 16, 32, IN, 0);
	avail(f, 0);
}

static void c_ind_overflow(struct fx *f)
{
	d(f, 0, ~0ULL - 15, 32, IN, 0);
	avail(f, 0);
}

static void c_ind_next_range(struct fx *f)
{
	it(f, 0, BUF_GPA, 8, NX, 2);	/* table has 2 entries */
	it(f, 1, BUF_GPA, 8, 0, 0);
	d(f, 0, f->pool_gpa, 32, IN, 0);
	avail(f, 0);
}

static void c_ind_loop(struct fx *f)
{
	it(f, 0, BUF_GPA, 8, NX, 1);
	it(f, 1, BUF_GPA, 8, NX, 0);
	d(f, 0, f->pool_gpa, 32, IN, 0);
	avail(f, 0);
}

static void c_ind_rd_after_wr(struct fx *f)
{
	it(f, 0, BUF_GPA, 8, WR | NX, 1);
	it(f, 1, BUF_GPA, 8, 0, 0);
	d(f, 0, f->pool_gpa, 32, IN, 0);
	avail(f, 0);
}

/* Readable direct part, then a table whose entries are readable too, but
 * the direct part ends with a writable one: order spans the two.
 */
static void c_mixed_rd_after_wr(struct fx *f)
{
	it(f, 0, BUF_GPA, 8, 0, 0);
	d(f, 0, BUF_GPA, 8, WR | NX, 1);
	d(f, 1, f->pool_gpa, 16, IN, 0);
	avail(f, 0);
}

static void c_ind_zero_entry(struct fx *f)
{
	it(f, 0, BUF_GPA, 0, 0, 0);
	d(f, 0, f->pool_gpa, 16, IN, 0);
	avail(f, 0);
}

/* Needs the 2^32 + 1 byte region that the test maps at BIG_GPA. */
#define BIG_GPA 0x1000000000ULL
static void c_total_len(struct fx *f)
{
	d(f, 0, BIG_GPA, 0x80000001u, NX, 1);
	d(f, 1, BIG_GPA, 0x80000000u, 0, 0);
	avail(f, 0);
}

static void c_total_len_ok(struct fx *f)
{
	d(f, 0, BIG_GPA, 0x80000000u, NX, 1);
	d(f, 1, BIG_GPA, 0x80000000u, WR, 0);
	avail(f, 0);
}

static void c_no_bufs(struct fx *f)
{
	f->c.cap = 2;
	d(f, 0, BUF_GPA, 8, NX, 1);
	d(f, 1, BUF_GPA, 8, NX, 2);
	d(f, 2, BUF_GPA, 8, 0, 0);
	avail(f, 0);
}

/* Two segments fit, but the second descriptor crosses a region border. */
static void c_no_bufs_split(struct fx *f)
{
	f->c.cap = 2;
	d(f, 0, BUF_GPA, 8, NX, 1);
	d(f, 1, BUF2_GPA - 4, 8, 0, 0);
	avail(f, 0);
}

#define OFF(field) offsetof(struct vqf_vring_dev_stats, field)

static const struct dcase {
	const char *name;
	void (*setup)(struct fx *f);
	u64 features;
	int err;		/* 1: pops fine */
	size_t counter;
	bool fatal;
} dcases[] = {
	{ "avail idx jump", c_avail_jump, 0, -EPROTO, OFF(err_avail_idx), 1 },
	{ "head >= num", c_head_range, 0, -ERANGE, OFF(err_head), 1 },
	{ "head 0xffff", c_head_huge, 0, -ERANGE, OFF(err_head), 1 },
	{ "next >= num", c_next_range, 0, -ECHRNG, OFF(err_next), 1 },
	{ "loop", c_loop, 0, -ELOOP, OFF(err_loop), 1 },
	{ "self loop", c_self_loop, 0, -ELOOP, OFF(err_loop), 1 },
	{ "rd after wr", c_rd_after_wr, 0, -EILSEQ, OFF(err_rd_after_wr), 1 },
	{ "addr+len wraps", c_overflow, 0, -EOVERFLOW, OFF(err_overflow), 1 },
	{ "unmapped", c_unmapped, 0, -EFAULT, OFF(err_fault), 1 },
	{ "below memory", c_below, 0, -EFAULT, OFF(err_fault), 1 },
	{ "runs into hole", c_tail_unmapped, 0, -EFAULT, OFF(err_fault), 1 },
	{ "zero length", c_zero_len, 0, -ENODATA, OFF(err_zero_len), 0 },
	{ "nested indirect", c_nested, F_INDIRECT, -EMLINK,
	  OFF(err_nested_indirect), 1 },
	{ "indirect len 0", c_ind_zero, F_INDIRECT, -ENOMSG,
	  OFF(err_indirect_zero), 1 },
	{ "indirect len %16", c_ind_align, F_INDIRECT, -EBADR,
	  OFF(err_indirect_align), 1 },
	{ "indirect > num", c_ind_big, F_INDIRECT, -E2BIG,
	  OFF(err_indirect_big), 1 },
	{ "indirect|next", c_ind_next, F_INDIRECT, -EBADRQC,
	  OFF(err_indirect_next), 1 },
	{ "indirect unnegotiated", c_ind_unneg, 0, -EOPNOTSUPP,
	  OFF(err_indirect_unneg), 1 },
	{ "indirect unmapped", c_ind_unmapped, F_INDIRECT, -EFAULT,
	  OFF(err_fault), 1 },
	{ "indirect wraps", c_ind_overflow, F_INDIRECT, -EOVERFLOW,
	  OFF(err_overflow), 1 },
	{ "indirect next range", c_ind_next_range, F_INDIRECT, -ECHRNG,
	  OFF(err_next), 1 },
	{ "indirect loop", c_ind_loop, F_INDIRECT, -ELOOP, OFF(err_loop), 1 },
	{ "indirect rd after wr", c_ind_rd_after_wr, F_INDIRECT, -EILSEQ,
	  OFF(err_rd_after_wr), 1 },
	{ "direct wr then indirect rd", c_mixed_rd_after_wr, F_INDIRECT,
	  -EILSEQ, OFF(err_rd_after_wr), 1 },
	{ "indirect zero-length entry", c_ind_zero_entry, F_INDIRECT,
	  -ENODATA, OFF(err_zero_len), 0 },
	{ "total > 2^32", c_total_len, 0, -EFBIG, OFF(err_total_len), 1 },
	{ "total == 2^32", c_total_len_ok, 0, 1, OFF(chains), 0 },
	{ "too many segments", c_no_bufs, 0, -ENOBUFS, OFF(err_no_bufs), 0 },
	{ "too many after split", c_no_bufs_split, 0, -ENOBUFS,
	  OFF(err_no_bufs), 0 },
};

static u64 stat_sum(const struct vqf_vring_dev_stats *s)
{
	const u64 *p = (const u64 *)s;
	u64 sum = 0;
	size_t i;

	for (i = OFF(err_avail_idx); i <= OFF(err_no_bufs); i += sizeof(u64))
		sum += p[i / sizeof(u64)];
	return sum;
}

static void test_device_cases(void **state)
{
	void *big = mmap(NULL, (1ULL << 32) + 4096, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	unsigned int i;

	assert_true(big != MAP_FAILED);
	for (i = 0; i < ARRAY_SIZE(dcases); i++) {
		const struct dcase *k = &dcases[i];
		struct fx f;
		u64 ctr;
		int r;

		print_message("case %s\n", k->name);
		fx_init(&f, NUM, k->features, 0, 0);
		/* Never touched: the device only computes pointers into it. */
		assert_int_equal(vqf_gmem_add(&f.mem, BIG_GPA,
					      (1ULL << 32) + 4096, big), 0);
		k->setup(&f);
		r = vqf_vring_dev_pop(f.dev, &f.c);
		assert_int_equal(r, k->err);
		ctr = *(const u64 *)((const u8 *)&f.vs + k->counter);
		assert_int_equal(ctr, 1);
		assert_int_equal(stat_sum(&f.vs), k->err < 0 ? 1 : 0);
		assert_int_equal(vqf_vring_dev_is_broken(f.dev), k->fatal);
		if (k->fatal) {
			/* stays broken, pushes refused, until reset */
			assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), -EIO);
			assert_int_equal(vqf_vring_dev_push(f.dev, 0, 0), -EIO);
			vqf_vring_dev_reset(f.dev, 0, 0);
			assert_false(vqf_vring_dev_is_broken(f.dev));
		} else {
			/* the chain was consumed and can be returned */
			assert_int_equal(f.c.head, 0);
			assert_int_equal(vqf_vring_dev_push(f.dev, f.c.head, 0),
					 0);
			assert_int_equal(vqf_vring_dev_pop(f.dev, &f.c), 0);
		}
		assert_int_equal(stat_sum(&f.vs), k->err < 0 ? 1 : 0);
		fx_fini(&f);
	}
	munmap(big, (1ULL << 32) + 4096);
}

static void test_device_push_errors(void **state)
{
	struct fx f;

	fx_init(&f, NUM, 0, 0, 0);
	assert_int_equal(vqf_vring_dev_push(f.dev, NUM, 0), -EINVAL);
	assert_int_equal(f.vs.err_push, 1);
	assert_false(vqf_vring_dev_is_broken(f.dev));
	assert_int_equal(f.vs.pushed, 0);
	fx_fini(&f);
}

/*
 * Random garbage in the whole descriptor table and avail ring, for many
 * seeds: pop must end in a chain, an empty ring or a documented errno,
 * and every segment it returns must lie inside guest memory.
 */
static bool one_in(int n)
{
	return rand() % n == 0;
}

static void rand_desc(struct fx *f, struct vring_desc *d, unsigned int n,
		      bool direct)
{
	static const u16 fl[] = { 0, NX, NX, NX, WR, WR | NX, WR | NX, IN };
	u16 flags = fl[rand() % (direct ? 8 : 7)];
	u64 a = BUF_GPA + rand() % (2 * BUF_SIZE - 256);
	u32 len = 1 + rand() % 256;

	if (flags & IN) {
		a = f->pool_gpa + (rand() % 4) * 16 + (one_in(8) ? 3 : 0);
		len = 16 * (1 + rand() % 4);
	}
	if (one_in(16))
		flags = (u16)rand();
	if (one_in(32))
		a = HOLE_GPA - rand() % 64;
	if (one_in(32))
		a = ((u64)rand() << 33) ^ (u64)rand();
	if (one_in(32))
		a = ~0ULL - rand() % 256;
	if (one_in(32))
		len = (u32)rand() * 2;
	if (one_in(64))
		len = 0;
	d->addr = cpu_to_le64(a);
	d->len = cpu_to_le32(len);
	d->flags = cpu_to_le16(flags);
	d->next = cpu_to_le16(one_in(16) ? (u16)rand() : (u16)(rand() % n));
}

static void test_device_garbage(void **state)
{
	static const int ok[] = { 1, 0, -EPROTO, -ERANGE, -ECHRNG, -ELOOP,
		-EILSEQ, -EOVERFLOW, -EFAULT, -ENODATA, -EMLINK, -ENOMSG,
		-EBADR, -E2BIG, -EBADRQC, -EOPNOTSUPP, -EFBIG, -ENOBUFS };
	unsigned int seed = fx_seed(), iters = 3000;
	unsigned int hits[ARRAY_SIZE(ok)] = { 0 }, kinds = 0;
	unsigned int n, i, k;

	srand(seed);
	for (n = 0; n < iters; n++) {
		struct fx f;
		u8 *p;
		int r, pops;

		fx_init(&f, NUM, F_INDIRECT | F_EVENT, (u16)rand(), 0);
		p = (u8 *)f.desc;
		for (i = 0; i < NUM * 16; i++)
			p[i] = (u8)rand();
		/* Mostly plausible fields, each sometimes wild, so that walks
		 * go deep and every check gets its turn.
		 */
		for (i = 0; i < NUM; i++)
			rand_desc(&f, &f.desc[i], NUM, true);
		p = (u8 *)itab(&f);
		for (i = 0; i < 8 * 16; i++)
			p[i] = (u8)rand();
		for (i = 0; i < 8; i++)
			rand_desc(&f, &itab(&f)[i], 8, false);
		for (i = 0; i < NUM; i++)
			f.avail->ring[i] = cpu_to_le16(one_in(16) ? (u16)
					   rand() : (u16)(rand() % NUM));
		f.avail->idx = cpu_to_le16(le16_to_cpu(f.avail->idx) +
					   (one_in(16) ? rand() :
					    rand() % (NUM + 1)));
		f.c.cap = 1 + rand() % 8;

		for (pops = 0; pops < NUM + 2; pops++) {
			r = vqf_vring_dev_pop(f.dev, &f.c);
			if (r == -EIO || r == 0)
				break;
			for (k = 0; k < ARRAY_SIZE(ok); k++)
				if (r == ok[k])
					break;
			assert_true(k < ARRAY_SIZE(ok));
			hits[k]++;
			if (r != 1)
				continue;
			for (k = 0; k < f.c.nr_rd + f.c.nr_wr; k++) {
				u64 contig = 0;

				assert_ptr_equal(vqf_gmem_find(&f.mem,
						 f.seg[k].gpa, &contig),
						 f.seg[k].hva);
				assert_true(f.seg[k].len && f.seg[k].len <= contig);
				/* touch it: ASan/valgrind check the bounds */
				((volatile u8 *)f.seg[k].hva)[f.seg[k].len - 1];
			}
		}
		fx_fini(&f);
	}
	for (k = 0; k < ARRAY_SIZE(ok); k++) {
		print_message("%d: %u\n", ok[k], hits[k]);
		kinds += hits[k] > 0;
	}
	/* the generator must reach deep: good chains and most errors */
	assert_true(hits[0] > iters / 10);
	assert_true(kinds >= 15);
}

/* ---- driver side: a device that writes broken used entries ---- */

static void drv_strict(struct fx *f)
{
	struct vqf_vring_drv_cfg dc = { 0 };

	vqf_vring_drv_destroy(f->drv);
	dc.num = f->num;
	dc.features = f->features;
	dc.addr = f->addr;
	dc.mem = &f->mem;
	dc.flags = VQF_VRING_DRV_STRICT_LEN;
	dc.stats = &f->ds;
	assert_int_equal(vqf_vring_drv_create(&dc, &f->drv), 0);
}

static void used(struct fx *f, u32 id, u32 len)
{
	u16 idx = le16_to_cpu(f->used->idx);

	f->used->ring[idx % f->num].id = cpu_to_le32(id);
	f->used->ring[idx % f->num].len = cpu_to_le32(len);
	f->used->idx = cpu_to_le16(idx + 1);
}

/* Three buffers: heads 0 (1 desc), 1 (2 descs: 1, 2), 3 (1 desc, 16 B
 * writable); descriptors 4..7 never used.
 */
static void three(struct fx *f)
{
	struct vqf_vring_gseg r = { BUF_GPA, 8 }, w = { BUF_GPA + 64, 16 };

	assert_int_equal(vqf_vring_drv_add(f->drv, &r, 1, NULL, 0, (void *)1),
			 0);
	assert_int_equal(vqf_vring_drv_add(f->drv, &r, 1, &w, 1, (void *)2), 0);
	assert_int_equal(vqf_vring_drv_add(f->drv, NULL, 0, &w, 1, (void *)3),
			 0);
}

#define DOFF(field) offsetof(struct vqf_vring_drv_stats, field)

static void test_driver_cases(void **state)
{
	static const struct {
		const char *name;
		u32 id, len;
		bool twice, strict, jump;
		int err;
		size_t counter;
	} k[] = {
		{ "id >= num", NUM, 0, 0, 0, 0, -ERANGE, DOFF(err_used_range) },
		{ "id huge", 0xffffffffu, 0, 0, 0, 0, -ERANGE,
		  DOFF(err_used_range) },
		{ "not a head", 2, 0, 0, 0, 0, -EBADSLT,
		  DOFF(err_used_not_head) },
		{ "never made available", 5, 0, 0, 0, 0, -ENOENT,
		  DOFF(err_used_not_inflight) },
		{ "completed twice", 0, 0, 1, 0, 0, -EALREADY,
		  DOFF(err_used_twice) },
		{ "len > writable, strict", 3, 17, 0, 1, 0, -EMSGSIZE,
		  DOFF(err_used_len) },
		{ "len on read-only buffer, strict", 0, 1, 0, 1, 0, -EMSGSIZE,
		  DOFF(err_used_len) },
		{ "used idx past in-flight", 0, 0, 0, 0, 1, -EPROTO,
		  DOFF(err_used_idx) },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(k); i++) {
		struct fx f;
		void *cookie;
		u32 len;

		print_message("case %s\n", k[i].name);
		fx_init(&f, NUM, F_EVENT, 0, 0);
		if (k[i].strict)
			drv_strict(&f);
		three(&f);
		if (k[i].twice) {
			used(&f, k[i].id, 0);
			assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie,
							       &len), 1);
		}
		if (k[i].jump)
			f.used->idx = cpu_to_le16(4);	/* 3 in flight */
		else
			used(&f, k[i].id, k[i].len);
		assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len),
				 k[i].err);
		assert_int_equal(*(const u64 *)((const u8 *)&f.ds +
						k[i].counter), 1);
		assert_true(vqf_vring_drv_is_broken(f.drv));
		assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len),
				 -EIO);
		assert_int_equal(vqf_vring_drv_add(f.drv, (void *)&f, 0, NULL,
						   1, (void *)9), -EIO);
		/* a broken queue still gives its buffers back */
		while (vqf_vring_drv_detach_unused(f.drv))
			;
		assert_int_equal(vqf_vring_drv_num_free(f.drv), NUM);
		assert_int_equal(vqf_vring_drv_reset(f.drv), 0);
		assert_false(vqf_vring_drv_is_broken(f.drv));
		fx_fini(&f);
	}
}

static void test_driver_len_clamp(void **state)
{
	struct fx f;
	void *cookie;
	u32 len;

	fx_init(&f, NUM, 0, 0, 0);
	three(&f);
	used(&f, 3, 1000);
	used(&f, 1, 16);
	used(&f, 0, 5);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_ptr_equal(cookie, (void *)3);
	assert_int_equal(len, 16);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_int_equal(len, 16);
	assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len), 1);
	assert_int_equal(len, 0);
	assert_int_equal(f.ds.used_len_clamped, 2);
	assert_false(vqf_vring_drv_is_broken(f.drv));
	fx_fini(&f);
}

/* The device rewrote descriptors while they were in flight: the driver
 * frees by its private copy, so its free list stays intact.
 */
static void test_driver_desc_scribble(void **state)
{
	struct fx f;
	void *cookie;
	u32 len;
	unsigned int i;

	fx_init(&f, NUM, 0, 0, 0);
	three(&f);
	for (i = 0; i < NUM; i++)
		d(&f, i, 0xdead, 0xbeef, NX, (u16)(i + 3));
	used(&f, 1, 0);
	used(&f, 0, 0);
	used(&f, 3, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(vqf_vring_drv_get_buf(f.drv, &cookie, &len),
				 1);
	assert_int_equal(vqf_vring_drv_num_free(f.drv), NUM);
	for (i = 0; i < NUM; i++)
		assert_int_equal(vqf_vring_drv_add(f.drv, NULL, 0,
				 &(struct vqf_vring_gseg){ BUF_GPA, 4 }, 1,
				 (void *)1), 0);
	assert_int_equal(vqf_vring_drv_add(f.drv, NULL, 0,
			 &(struct vqf_vring_gseg){ BUF_GPA, 4 }, 1, (void *)1),
			 -ENOSPC);
	fx_fini(&f);
}

/*
 * Guest RAM whose file shrinks under the mapping (a vhost-user front-end
 * truncating its memfd): the access is SIGBUS; the device breaks the
 * queue with -EHWPOISON and its own counter, and the process lives.
 */
static void test_peer_truncates_ram(void **state)
{
	struct vqf_vring_dev_stats st = { 0 };
	struct vqf_vring_dev_cfg dc = { 0 };
	struct vqf_memguard_stats g0, g1;
	struct vqf_vring_dev *dev;
	struct vqf_seg seg[4];
	struct vqf_chain c = { .seg = seg, .cap = 4 };
	struct vqf_gmem mem;
	int fd = memfd_create("ram", MFD_CLOEXEC);
	void *ram;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 65536), 0);
	ram = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(ram != MAP_FAILED);
	vqf_gmem_init(&mem);
	assert_int_equal(vqf_gmem_add(&mem, 0x10000, 65536, ram), 0);
	dc.num = 16;
	dc.mem = &mem;
	dc.stats = &st;
	vqf_vring_layout(16, 0x10000, 4, &dc.addr);
	assert_int_equal(vqf_vring_dev_create(&dc, &dev), 0);
	assert_int_equal(vqf_vring_dev_pop(dev, &c), 0);

	vqf_memguard_stats(&g0);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(vqf_vring_dev_pop(dev, &c), -EHWPOISON);
	assert_int_equal(st.err_peer_fault, 1);
	assert_true(vqf_vring_dev_is_broken(dev));
	assert_int_equal(vqf_vring_dev_pop(dev, &c), -EIO);
	assert_int_equal(vqf_vring_dev_push(dev, 0, 0), -EIO);
	vqf_memguard_stats(&g1);
	assert_int_equal(g1.recovered, g0.recovered + 1);

	vqf_vring_dev_destroy(dev);
	munmap(ram, 65536);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_cases),
		cmocka_unit_test(test_device_push_errors),
		cmocka_unit_test(test_device_garbage),
		cmocka_unit_test(test_driver_cases),
		cmocka_unit_test(test_driver_len_clamp),
		cmocka_unit_test(test_driver_desc_scribble),
		cmocka_unit_test(test_peer_truncates_ram),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
