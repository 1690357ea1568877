// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_gcache.c - the guest client's caches on their own: dentry expiry,
 * LRU and references; the attr_version rule; the page cache.  The dentry
 * cache is also run against a model for a fixed-seed random sequence.
 */
#include "gcache.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define NREF	64

/* References a positive entry holds, per nodeid. */
static int refs[NREF];

static void put(void *ctx, u64 nodeid)
{
	(void)ctx;
	assert_true(nodeid < NREF);
	assert_true(refs[nodeid] > 0);
	refs[nodeid]--;
}

static int set(struct gc_dcache *dc, u64 parent, const char *name,
	       u64 nodeid, u64 expire)
{
	if (nodeid) {
		refs[nodeid]++;
		refs[parent]++;
	}
	return gc_d_set(dc, parent, name, nodeid, expire);
}

static void test_dentries(void **state)
{
	struct gc_dcache dc;
	u64 n = 0;
	int i;

	(void)state;
	memset(refs, 0, sizeof(refs));
	assert_int_equal(gc_dcache_init(&dc, 3, put, NULL), 0);
	assert_int_equal(gc_d_lookup(&dc, 1, "a", 0, &n), GC_MISS);
	assert_int_equal(set(&dc, 1, "a", 5, 100), 0);
	assert_int_equal(set(&dc, 1, "neg", 0, 100), 0);
	assert_int_equal(gc_d_lookup(&dc, 1, "a", 99, &n), GC_POSITIVE);
	assert_int_equal(n, 5);
	assert_int_equal(gc_d_lookup(&dc, 2, "a", 99, &n), GC_MISS);
	assert_int_equal(gc_d_lookup(&dc, 1, "neg", 99, &n), GC_NEGATIVE);
	/* Expiry: the entry goes, and its references with it. */
	assert_int_equal(gc_d_lookup(&dc, 1, "a", 100, &n), GC_MISS);
	assert_int_equal(refs[5], 0);
	assert_int_equal(refs[1], 0);
	/* Replacing gives the old references back. */
	assert_int_equal(set(&dc, 1, "b", 6, GC_NEVER), 0);
	assert_int_equal(set(&dc, 1, "b", 7, GC_NEVER), 0);
	assert_int_equal(refs[6], 0);
	assert_int_equal(refs[7], 1);
	/* LRU: the least recently used goes when over max (3). */
	assert_int_equal(set(&dc, 1, "c", 8, GC_NEVER), 0);
	assert_int_equal(gc_d_lookup(&dc, 1, "neg", 0, &n), GC_NEGATIVE);
	assert_int_equal(set(&dc, 1, "d", 9, GC_NEVER), 0);
	assert_int_equal(dc.count, 3);
	assert_int_equal(gc_d_lookup(&dc, 1, "b", 0, &n), GC_MISS);
	assert_int_equal(refs[7], 0);
	/* Dropping a node takes its names and its children's. */
	assert_int_equal(set(&dc, 9, "child", 10, GC_NEVER), 0);
	gc_d_drop_node(&dc, 9);
	assert_int_equal(gc_d_lookup(&dc, 1, "d", 0, &n), GC_MISS);
	assert_int_equal(gc_d_lookup(&dc, 9, "child", 0, &n), GC_MISS);
	assert_int_equal(refs[9], 0);
	assert_int_equal(refs[10], 0);
	/* "child" pushed "c" out (LRU). */
	assert_int_equal(refs[8], 0);
	assert_true(gc_d_drop(&dc, 1, "neg"));
	assert_false(gc_d_drop(&dc, 1, "neg"));
	gc_dcache_destroy(&dc);
	for (i = 0; i < NREF; i++)
		assert_int_equal(refs[i], 0);
}

/* A random sequence against a model: an array of (parent, name) slots. */
static void test_dentries_model(void **state)
{
	struct { u64 nodeid, expire; bool set; } model[4][8];
	struct gc_dcache dc;
	unsigned int seed = 0x5eed, step;
	u64 now = 10;

	(void)state;
	memset(refs, 0, sizeof(refs));
	memset(model, 0, sizeof(model));
	assert_int_equal(gc_dcache_init(&dc, 1000, put, NULL), 0);
	for (step = 0; step < 20000; step++) {
		unsigned int p = (unsigned int)rand_r(&seed) % 4;
		unsigned int k = (unsigned int)rand_r(&seed) % 8;
		char name[4] = { 'n', (char)('0' + k), 0 };
		u64 n = 0;
		enum gc_dhit hit;

		switch (rand_r(&seed) % 4) {
		case 0:
			model[p][k].nodeid = 8 + (u64)(rand_r(&seed) % 50);
			if (rand_r(&seed) % 4 == 0)
				model[p][k].nodeid = 0;
			model[p][k].expire = now + 1 +
					     (u64)(rand_r(&seed) % 20);
			model[p][k].set = true;
			assert_int_equal(set(&dc, p + 1, name,
					     model[p][k].nodeid,
					     model[p][k].expire), 0);
			break;
		case 1:
			assert_int_equal(gc_d_drop(&dc, p + 1, name),
					 model[p][k].set);
			model[p][k].set = false;
			break;
		case 2:
			now += (u64)(rand_r(&seed) % 3);
			break;
		default:
			hit = gc_d_lookup(&dc, p + 1, name, now, &n);
			if (!model[p][k].set || model[p][k].expire <= now) {
				assert_int_equal(hit, GC_MISS);
				model[p][k].set = false;
			} else if (!model[p][k].nodeid) {
				assert_int_equal(hit, GC_NEGATIVE);
			} else {
				assert_int_equal(hit, GC_POSITIVE);
				assert_int_equal(n, model[p][k].nodeid);
			}
		}
	}
	gc_dcache_destroy(&dc);
	for (step = 0; step < NREF; step++)
		assert_int_equal(refs[step], 0);
}

static void test_attr_version(void **state)
{
	struct gc_attr ca = { 0 };
	struct fuse_attr a = { .size = 1 }, b = { .size = 2 };
	u64 counter = 0, sampled;

	(void)state;
	/* A GETATTR is sent; meanwhile a write invalidates: the reply is
	 * older than what we know and must not win (seed 010's rule).
	 */
	sampled = counter;
	assert_true(gc_attr_apply(&ca, &a, sampled, &counter, 50));
	assert_int_equal(ca.attr.size, 1);
	sampled = counter;
	gc_attr_invalidate(&ca, &counter);
	assert_int_equal(ca.expire, 0);
	assert_false(gc_attr_apply(&ca, &b, sampled, &counter, 50));
	assert_int_equal(ca.attr.size, 1);
	/* Sent after the change: applies. */
	sampled = counter;
	assert_true(gc_attr_apply(&ca, &b, sampled, &counter, 60));
	assert_int_equal(ca.attr.size, 2);
	assert_int_equal(ca.expire, 60);
	/* Two replies racing: the later-sent one was applied first. */
	sampled = counter;
	assert_true(gc_attr_apply(&ca, &a, counter, &counter, 70));
	assert_false(gc_attr_apply(&ca, &b, sampled, &counter, 70));
	assert_int_equal(ca.attr.size, 1);
}

static void test_pages(void **state)
{
	struct gc_pages pc = { 0 };
	struct gc_page *p, **v;
	u64 n;
	int err, i;

	(void)state;
	assert_null(gc_page_find(&pc, 0));
	for (i = 0; i < 600; i++) {
		p = gc_page_get(&pc, (u64)i);
		assert_non_null(p);
		p->len = GC_PAGE_SIZE;
	}
	assert_int_equal(pc.count, 600);
	assert_ptr_equal(gc_page_get(&pc, 7), gc_page_find(&pc, 7));
	gc_page_mark_dirty(&pc, gc_page_find(&pc, 300), 10, 20);
	gc_page_mark_dirty(&pc, gc_page_find(&pc, 300), 5, 12);
	gc_page_mark_dirty(&pc, gc_page_find(&pc, 2), 0, 4096);
	gc_page_mark_dirty(&pc, gc_page_find(&pc, 599), 0, 1);
	assert_int_equal(pc.dirty, 3);
	p = gc_page_find(&pc, 300);
	assert_int_equal(p->dirty_from, 5);
	assert_int_equal(p->dirty_to, 20);
	v = gc_pages_dirty(&pc, &n, &err);
	assert_int_equal(err, 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[0]->index, 2);
	assert_int_equal(v[1]->index, 300);
	assert_int_equal(v[2]->index, 599);
	free(v);
	/* Bytes [4097, 8192) touch page 1 only: pages are dropped whole
	 * from the one holding @from.
	 */
	assert_int_equal(gc_pages_drop(&pc, 4097, 8192), 1);
	assert_null(gc_page_find(&pc, 1));
	assert_non_null(gc_page_find(&pc, 2));
	assert_int_equal(gc_pages_drop(&pc, 300 * 4096, GC_NEVER), 300);
	assert_int_equal(pc.dirty, 1);
	gc_page_clean(&pc, gc_page_find(&pc, 2));
	assert_int_equal(pc.dirty, 0);
	assert_null(gc_pages_dirty(&pc, &n, &err));
	assert_int_equal(n, 0);
	gc_pages_free(&pc);
	assert_int_equal(pc.count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dentries),
		cmocka_unit_test(test_dentries_model),
		cmocka_unit_test(test_attr_version),
		cmocka_unit_test(test_pages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
