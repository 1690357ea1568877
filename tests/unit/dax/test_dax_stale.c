// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * DEFERRED TEARDOWN (vqf_dax.h, cfg.stale_max): each rule through the
 * protocol-enforcing harness, whose device (lib's vqf_dax_dev) refuses
 * any REMOVEMAPPING of a span it does not map, so a flush of a range the
 * host no longer maps, or a SETUPMAPPING overlapping a stale mapping
 * other than by replacing it exactly, fails the test.
 */
#include "dax_harness.h"

#define RS	PAGE_SIZE

static struct harness H;
static struct fuse_removemapping_one scratch[VQF_REMOVEMAPPING_MAX];

static void map_ok(struct harness *h, int i, u64 pos, unsigned int flags)
{
	struct vqf_dax_map m;

	assert_int_equal(vqf_dax_map_begin(&h->w, &h->ino[i].di, pos, flags,
					   &m), 0);
	vqf_dax_map_end(&h->w, &m);
}

/* Window offset of inode @i's range holding @pos. */
static u64 moff(struct harness *h, int i, u64 pos)
{
	int r = h_mapped(h, i, pos);

	assert_true(r >= 0);
	return h->ranges[r].moffset;
}

static struct vqf_dax_range *link_range_of(struct vqf_dax_link *l)
{
	return (struct vqf_dax_range *)((char *)l -
					offsetof(struct vqf_dax_range, link));
}

static struct vqf_dax_stats stats(struct harness *h)
{
	struct vqf_dax_stats st;

	vqf_dax_stats_read(&h->w, &st);
	return st;
}

/* Evict inode @i with @n scratch entries; its nodeid may be reused. */
static long evict(struct harness *h, int i, u32 n)
{
	return h_evict(h, (unsigned int)i, scratch, n);
}

static void test_default_off(void **state)
{
	struct harness *h = &H;

	(void)state;
	/* fuse.ko zeroes its config: nothing may change for it */
	h_init(h, 8, RS, 0, 0);
	assert_int_equal(h->w.stale_max, 0);
	map_ok(h, 0, 0, 0);
	map_ok(h, 0, RS, 0);
	assert_int_equal(evict(h, 0, 4), 2);
	assert_int_equal(h->requests_remove, 1);
	assert_int_equal(h->dev.nr_used, 0);
	assert_int_equal(vqf_dax_nr_stale(&h->w), 0);
	assert_int_equal(stats(h).stale_deferred, 0);
	assert_int_equal(vqf_dax_flush_stale(&h->w, scratch, 4), 0);
	assert_int_equal(h->requests_remove, 1);
	h_check_quiet(h);

	/* the bound is at most the window */
	h_init_stale(h, 8, RS, 0, 0, 100);
	assert_int_equal(h->w.stale_max, 8);
}

static void test_deferral(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_stats st;
	u64 m0, m2;

	(void)state;
	h_init_stale(h, 8, RS, 0, 0, 4);
	map_ok(h, 0, 0, 0);
	map_ok(h, 0, RS, 0);
	map_ok(h, 0, 2 * RS, 0);
	m0 = moff(h, 0, 0);
	m2 = moff(h, 0, 2 * RS);
	h->nlog = 0;
	assert_int_equal(evict(h, 0, 4), 3);
	/* no round trip: the host keeps the three mappings */
	assert_int_equal(h->requests_remove, 0);
	assert_int_equal(h->nlog, 0);
	assert_int_equal(h->dev.nr_used, 3);
	assert_true(vqf_itree_empty(&h->ino[0].di.tree));
	assert_int_equal(vqf_dax_nr_stale(&h->w), 3);
	assert_int_equal(vqf_dax_nr_free(&h->w), 8);	/* all usable */
	assert_non_null(vqf_dax_dev_lookup(&h->dev, m0));
	assert_non_null(vqf_dax_dev_lookup(&h->dev, m2));
	st = stats(h);
	assert_int_equal(st.stale_deferred, 3);
	assert_int_equal(st.removed, 3);
	assert_int_equal(st.remove_requests, 0);
	h_check_quiet(h);
}

static void test_reuse_replaces(void **state)
{
	struct harness *h = &H;
	const struct vqf_dax_dev_mapping *d;
	struct vqf_dax_stats st;
	u64 m0, m1, m2;

	(void)state;
	h_init_stale(h, 8, RS, 0, 0, 4);
	map_ok(h, 0, 0, 0);
	map_ok(h, 0, RS, 0);
	map_ok(h, 0, 2 * RS, 0);
	m0 = moff(h, 0, 0);
	m1 = moff(h, 0, RS);
	m2 = moff(h, 0, 2 * RS);
	assert_int_equal(evict(h, 0, 4), 3);
	h->nlog = 0;
	/* five clean ranges are free, yet the oldest stale one is taken */
	map_ok(h, 1, 0, 0);
	assert_int_equal(moff(h, 1, 0), m0);
	assert_int_equal(h->dst.replaced, 1);
	/* ... writable too: the replace upgrades the span's flags */
	map_ok(h, 2, 0, VQF_DAX_MAP_WRITE);
	assert_int_equal(moff(h, 2, 0), m1);
	assert_int_equal(h->dst.replaced, 2);
	d = vqf_dax_dev_lookup(&h->dev, m1);
	assert_non_null(d);
	assert_int_equal(d->nodeid, 102);
	assert_true(d->flags & FUSE_SETUPMAPPING_FLAG_WRITE);
	assert_int_equal(h->requests_remove, 0);
	assert_int_equal(h->nlog, 2);		/* two SETUPMAPPINGs only */
	assert_int_equal(vqf_dax_nr_stale(&h->w), 1);
	/* the device never held more than the window's spans */
	assert_int_equal(h->dev.nr_used, 3);
	st = stats(h);
	assert_int_equal(st.stale_reused, 2);
	assert_int_equal(st.setups, 5);
	/* the last stale one, then clean ones */
	map_ok(h, 1, RS, 0);
	assert_int_equal(moff(h, 1, RS), m2);
	map_ok(h, 1, 2 * RS, 0);
	assert_int_equal(h->dst.replaced, 3);
	assert_int_equal(vqf_dax_nr_stale(&h->w), 0);
	assert_int_equal(stats(h).stale_reused, 3);
	h_check_quiet(h);
}

static void test_writable_removed_at_once(void **state)
{
	struct harness *h = &H;
	u64 w0, w1;
	unsigned int e;

	(void)state;
	h_init_stale(h, 8, RS, 0, 0, 8);
	map_ok(h, 0, 0, 0);
	map_ok(h, 0, RS, VQF_DAX_MAP_WRITE);
	map_ok(h, 0, 2 * RS, 0);
	map_ok(h, 0, 3 * RS, 0);
	map_ok(h, 0, 3 * RS, VQF_DAX_MAP_WRITE);	/* upgraded */
	w0 = moff(h, 0, RS);
	w1 = moff(h, 0, 3 * RS);
	h->nlog = 0;
	assert_int_equal(evict(h, 0, 4), 4);
	/* one request, the inode's own, with exactly the writable two */
	assert_int_equal(h->requests_remove, 1);
	assert_int_equal(h->requests_flush, 0);
	assert_int_equal(h->nlog, 2);
	for (e = 0; e < 2; e++) {
		assert_int_equal(h->log[e].kind, H_EV_REMOVE);
		assert_int_equal(h->log[e].nodeid, 100);
		assert_true(h->log[e].moffset == w0 ||
			    h->log[e].moffset == w1);
	}
	assert_null(vqf_dax_dev_lookup(&h->dev, w0));
	assert_null(vqf_dax_dev_lookup(&h->dev, w1));
	assert_int_equal(vqf_dax_nr_stale(&h->w), 2);
	assert_int_equal(stats(h).stale_deferred, 2);
	h_check_quiet(h);
}

static void test_referenced_not_deferred(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_map m;

	(void)state;
	h_init_stale(h, 8, RS, 0, 0, 8);
	map_ok(h, 0, 0, 0);
	assert_int_equal(vqf_dax_map_begin(&h->w, &h->ino[0].di, RS, 0, &m),
			 0);
	/* a caller bug: evicting with a reference; it is removed anyway */
	assert_int_equal(evict(h, 0, 4), 2);
	assert_int_equal(h->requests_remove, 1);
	assert_int_equal(h->nlog, 3);	/* two setups, one removal */
	assert_int_equal(h->log[2].moffset, m.range->moffset);
	assert_int_equal(vqf_dax_nr_stale(&h->w), 1);
	assert_int_equal(stats(h).evict_in_use, 1);
	h_check_quiet(h);
}

static void test_bound_flushes_batch(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_stats st;
	unsigned int e;
	u64 old[4], m4;
	int i;

	(void)state;
	/* 16 ranges, at most 4 stale.  Mapping takes a stale range first,
	 * so every file maps before the evictions begin.
	 */
	h_init_stale(h, 16, RS, 0, 0, 4);
	for (i = 0; i < 5; i++)
		map_ok(h, i, 0, 0);
	for (i = 0; i < 6; i++)
		map_ok(h, 5, (u64)i * RS, 0);
	for (i = 0; i < 4; i++) {
		old[i] = moff(h, i, 0);
		assert_int_equal(evict(h, i, VQF_REMOVEMAPPING_MAX), 1);
	}
	m4 = moff(h, 4, 0);
	assert_int_equal(h->requests_remove, 0);
	assert_int_equal(vqf_dax_nr_stale(&h->w), 4);
	h->nlog = 0;
	/* one more would exceed the bound: the oldest go first, in one
	 * REMOVEMAPPING naming the root (their inodes may be forgotten),
	 * as many as the scratch carries; the new one stays stale
	 */
	assert_int_equal(evict(h, 4, VQF_REMOVEMAPPING_MAX), 1);
	assert_int_equal(h->requests_remove, 1);
	assert_int_equal(h->requests_flush, 1);
	assert_int_equal(h->nlog, 4);
	for (e = 0; e < 4; e++) {
		assert_int_equal(h->log[e].kind, H_EV_REMOVE);
		assert_int_equal(h->log[e].nodeid, H_ROOT_ID);
		assert_int_equal(h->log[e].batch, 4);
		assert_int_equal(h->log[e].moffset, old[e]);	/* oldest */
		assert_null(vqf_dax_dev_lookup(&h->dev, old[e]));
	}
	assert_non_null(vqf_dax_dev_lookup(&h->dev, m4));
	assert_int_equal(vqf_dax_nr_stale(&h->w), 1);
	st = stats(h);
	assert_int_equal(st.stale_flushes, 1);
	assert_int_equal(st.stale_flushed, 4);
	assert_int_equal(st.stale_deferred, 5);
	h_check_quiet(h);

	/* an inode with more read-only ranges than the bound: room for 4
	 * (the one stale flushed), 4 stale, 2 removed with its own nodeid
	 */
	h->nlog = 0;
	h->requests_remove = 0;
	h->requests_flush = 0;
	assert_int_equal(evict(h, 5, VQF_REMOVEMAPPING_MAX), 6);
	assert_int_equal(h->requests_flush, 1);
	assert_int_equal(h->requests_remove, 2);
	assert_int_equal(h->nlog, 3);
	assert_int_equal(h->log[0].nodeid, H_ROOT_ID);
	assert_int_equal(h->log[0].moffset, m4);
	assert_int_equal(h->log[1].nodeid, 105);
	assert_int_equal(h->log[2].nodeid, 105);
	assert_int_equal(h->log[2].batch, 2);
	assert_int_equal(vqf_dax_nr_stale(&h->w), 4);
	assert_int_equal(h->dev.nr_used, 4);
	h_check_quiet(h);
}

static void test_bound_small_scratch(void **state)
{
	struct harness *h = &H;
	unsigned int e;
	int i;

	(void)state;
	h_init_stale(h, 16, RS, 0, 0, 5);
	for (i = 0; i < 5; i++)
		map_ok(h, 0, (u64)i * RS, 0);
	for (i = 0; i < 3; i++)
		map_ok(h, 1, (u64)i * RS, 0);
	assert_int_equal(evict(h, 0, 2), 5);
	assert_int_equal(vqf_dax_nr_stale(&h->w), 5);
	h->nlog = 0;
	/* room for 3 means at most 2 stale: batches as large as the
	 * scratch (2), so two of them (5 -> 3 -> 1)
	 */
	assert_int_equal(evict(h, 1, 2), 3);
	assert_int_equal(h->requests_flush, 2);
	assert_int_equal(h->requests_remove, 2);
	assert_int_equal(h->nlog, 4);
	for (e = 0; e < 4; e++) {
		assert_int_equal(h->log[e].nodeid, H_ROOT_ID);
		assert_int_equal(h->log[e].batch, 2);
	}
	assert_int_equal(vqf_dax_nr_stale(&h->w), 4);
	h_check_quiet(h);
}

static void test_flush_entry_point(void **state)
{
	struct harness *h = &H;
	struct vqf_dax_stats st;
	int i;

	(void)state;
	h_init_stale(h, 16, RS, 0, 0, 8);
	assert_int_equal(vqf_dax_flush_stale(&h->w, scratch, 0), -EINVAL);
	assert_int_equal(vqf_dax_flush_stale(&h->w, scratch, 3), 0);
	assert_int_equal(h->requests_remove, 0);	/* nothing to say */
	for (i = 0; i < 7; i++)
		map_ok(h, 0, (u64)i * RS, 0);
	assert_int_equal(evict(h, 0, 4), 7);
	assert_int_equal(h->dev.nr_used, 7);
	h->nlog = 0;
	/* batches of the scratch: 3 + 3 + 1, all naming the root */
	assert_int_equal(vqf_dax_flush_stale(&h->w, scratch, 3), 7);
	assert_int_equal(h->requests_flush, 3);
	assert_int_equal(h->nlog, 7);
	assert_int_equal(h->log[0].nodeid, H_ROOT_ID);
	assert_int_equal(h->log[0].batch, 3);
	assert_int_equal(h->log[6].batch, 1);
	assert_int_equal(h->dev.nr_used, 0);	/* the host let go */
	assert_int_equal(vqf_dax_nr_stale(&h->w), 0);
	assert_int_equal(vqf_dax_nr_free(&h->w), 16);
	st = stats(h);
	assert_int_equal(st.stale_flushed, 7);
	assert_int_equal(st.stale_flushes, 3);
	assert_int_equal(st.remove_requests, 3);
	h_check_quiet(h);

	/* a failed flush: reported, the ranges free and unmarked; the
	 * device kept them, and their next setups replace them
	 */
	for (i = 0; i < 2; i++)
		map_ok(h, 1, (u64)i * RS, 0);
	assert_int_equal(evict(h, 1, 4), 2);
	h->fail_remove = -ENOTCONN;
	assert_int_equal(vqf_dax_flush_stale(&h->w, scratch, 4), -ENOTCONN);
	assert_int_equal(vqf_dax_nr_stale(&h->w), 0);
	assert_int_equal(stats(h).remove_errors, 1);
	assert_int_equal(h->dev.nr_used, 2);
	h_check_quiet(h);
	for (i = 0; i < 16; i++)
		map_ok(h, 2, (u64)i * RS, 0);
	assert_int_equal(h->dev.nr_used, 16);
	h_check_quiet(h);
}

static void test_setup_failure_keeps_stale(void **state)
{
	struct harness *h = &H;
	u64 m0;

	(void)state;
	h_init_stale(h, 4, RS, 0, 0, 2);
	map_ok(h, 0, 0, 0);
	m0 = moff(h, 0, 0);
	assert_int_equal(evict(h, 0, 4), 1);
	/* the replacing SETUPMAPPING fails: the device changed nothing */
	h->fail_setup = -EIO;
	{
		struct vqf_dax_map m;

		assert_int_equal(vqf_dax_map_begin(&h->w, &h->ino[1].di, 0, 0,
						   &m), -EIO);
	}
	assert_int_equal(vqf_dax_nr_stale(&h->w), 1);
	assert_non_null(vqf_dax_dev_lookup(&h->dev, m0));
	h_check_quiet(h);
	/* still the first pick, and a flush would find it on the device */
	map_ok(h, 1, 0, 0);
	assert_int_equal(moff(h, 1, 0), m0);
	assert_int_equal(stats(h).stale_reused, 1);
	h_check_quiet(h);
}

static void test_truncate_stays_synchronous(void **state)
{
	struct harness *h = &H;
	int i;

	(void)state;
	h_init_stale(h, 8, RS, 0, 0, 8);
	for (i = 0; i < 4; i++)
		map_ok(h, 0, (u64)i * RS, 0);
	h->ino[0].l = true;
	h->l_total++;
	assert_int_equal(vqf_dax_inode_remove_range(&h->w, &h->ino[0].di,
						    2 * RS, ~0ULL, scratch,
						    4), 2);
	h->ino[0].l = false;
	h->l_total--;
	assert_int_equal(h->requests_remove, 1);
	assert_int_equal(vqf_dax_nr_stale(&h->w), 0);
	assert_int_equal(h->dev.nr_used, 2);
	h_check_quiet(h);
}

static void test_check_catches(void **state)
{
	struct harness *h = &H;
	const char *why = NULL;
	struct vqf_dax_range *r;

	(void)state;
	h_init_stale(h, 8, RS, 0, 0, 2);
	map_ok(h, 0, 0, 0);
	assert_int_equal(evict(h, 0, 4), 1);
	r = link_range_of(h->w.stale_list.next);

	/* a stale range that is also writable */
	r->writable = true;
	assert_int_equal(vqf_dax_window_check(&h->w, &why), -EUCLEAN);
	assert_non_null(why);
	r->writable = false;
	/* the count disagrees */
	h->w.nr_stale = 2;
	assert_int_equal(vqf_dax_window_check(&h->w, &why), -EUCLEAN);
	h->w.nr_stale = 1;
	/* over the bound */
	h->w.stale_max = 0;
	assert_int_equal(vqf_dax_window_check(&h->w, &why), -EUCLEAN);
	h->w.stale_max = 2;
	/* an unmarked range on the stale list */
	r->stale = false;
	h->w.nr_stale = 0;
	assert_int_equal(vqf_dax_window_check(&h->w, &why), -EUCLEAN);
	r->stale = true;
	h->w.nr_stale = 1;
	/* a marked range on the clean free list */
	link_range_of(h->w.free_list.next)->stale = true;
	h->w.nr_stale = 2;
	assert_int_equal(vqf_dax_window_check(&h->w, &why), -EUCLEAN);
	link_range_of(h->w.free_list.next)->stale = false;
	h->w.nr_stale = 1;
	/* a busy range marked */
	map_ok(h, 1, 0, 0);		/* reuses the stale one */
	h->ranges[h_mapped(h, 1, 0)].stale = true;
	h->w.nr_stale = 1;
	assert_int_equal(vqf_dax_window_check(&h->w, &why), -EUCLEAN);
	h->ranges[h_mapped(h, 1, 0)].stale = false;
	h->w.nr_stale = 0;
	h_check_quiet(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_off),
		cmocka_unit_test(test_deferral),
		cmocka_unit_test(test_reuse_replaces),
		cmocka_unit_test(test_writable_removed_at_once),
		cmocka_unit_test(test_referenced_not_deferred),
		cmocka_unit_test(test_bound_flushes_batch),
		cmocka_unit_test(test_bound_small_scratch),
		cmocka_unit_test(test_flush_entry_point),
		cmocka_unit_test(test_setup_failure_keeps_stale),
		cmocka_unit_test(test_truncate_stays_synchronous),
		cmocka_unit_test(test_check_catches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
