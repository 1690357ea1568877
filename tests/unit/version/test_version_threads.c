// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * lib/vqf_version under concurrency: a device thread changes "metadata"
 * and bumps, a second device thread bumps a shared slot at the same time,
 * and guest threads (each with its own table view, inodes and dentries, as
 * separate guests would have) cache, check and revalidate.
 *
 * The property: a check that answers VALID never hides a change whose bump
 * had completed before the check began.  Each change is published in three
 * steps: the metadata (here a generation number) is written, the slot is
 * bumped, then a "published" generation is stored with release semantics.
 * A guest loads the published generation with acquire semantics, checks,
 * and on VALID its cached generation must be at least that.
 *
 * Bounded: a fixed number of rounds and a wall-clock cap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <time.h>
#include <cmocka.h>
#include <valgrind/helgrind.h>

#include "vqf_version.h"

#define NR_SLOTS	32
#define NR_FILES	4
#define NR_GUESTS	2

struct shared {
	s64 table[NR_SLOTS];
	u64 bitmap[1];
	struct vqf_ver_dev dev;
	u64 dir_idx, file_idx[NR_FILES], spin_idx;
	/* What GETATTR/LOOKUP would return, and what is fully published. */
	s64 attr_gen[NR_FILES], attr_pub[NR_FILES];
	s64 bind_gen[NR_FILES], bind_pub[NR_FILES];	/* renames of it */
	int stop;
	u64 rounds, spins;
	double cap_s;
};

struct guest {
	struct shared *sh;
	struct vqf_ver_table gt;
	struct vqf_ver_inode dir, file[NR_FILES];
	struct vqf_ver_dentry dent[NR_FILES];
	s64 cached_attr[NR_FILES], cached_bind[NR_FILES];
	u64 valid, stale, violations, refetch;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static u64 xs(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---------------------------------------------------------------------- */

static void *device_thread(void *arg)
{
	struct shared *sh = arg;
	u64 r, seed = 0x9e3779b97f4a7c15ULL;
	double end = now_s() + sh->cap_s;

	for (r = 0; r < sh->rounds && now_s() < end; r++) {
		unsigned int f = xs(&seed) % NR_FILES;
		s64 g;

		if (xs(&seed) % 4) {
			/* setattr: metadata, bump, then published */
			g = READ_ONCE(sh->attr_gen[f]) + 1;
			WRITE_ONCE(sh->attr_gen[f], g);
			vqf_ver_dev_bump(&sh->dev, sh->file_idx[f]);
			smp_store_release(&sh->attr_pub[f], g);
		} else {
			/* rename within the dir: parent and inode move */
			g = READ_ONCE(sh->bind_gen[f]) + 1;
			WRITE_ONCE(sh->bind_gen[f], g);
			WRITE_ONCE(sh->attr_gen[f], sh->attr_gen[f] + 1);
			vqf_ver_dev_bump(&sh->dev, sh->dir_idx);
			vqf_ver_dev_bump(&sh->dev, sh->file_idx[f]);
			smp_store_release(&sh->bind_pub[f], g);
			smp_store_release(&sh->attr_pub[f], sh->attr_gen[f]);
		}
		/* The same slot bumped from the other device thread too. */
		vqf_ver_dev_bump(&sh->dev, sh->spin_idx);
	}
	WRITE_ONCE(sh->stop, 1);
	return NULL;
}

static void *bumper_thread(void *arg)
{
	struct shared *sh = arg;
	u64 i;

	for (i = 0; i < sh->spins; i++)
		vqf_ver_dev_bump(&sh->dev, sh->spin_idx);
	return NULL;
}

/* ---------------------------------------------------------------------- */

static void guest_getattr(struct guest *g, unsigned int f)
{
	struct vqf_ver_stamp st = vqf_ver_sample(&g->gt, &g->file[f]);
	/* The "reply": read after the sample, as a device serves it. */
	s64 attr = READ_ONCE(g->sh->attr_gen[f]);

	if (vqf_ver_attr_older(&g->gt, &g->file[f], &st))
		return;
	g->cached_attr[f] = attr;
	vqf_ver_attr_publish(&g->file[f], &st);
	g->refetch++;
}

static void guest_lookup(struct guest *g, unsigned int f)
{
	struct shared *sh = g->sh;
	struct vqf_ver_stamp ps = vqf_ver_sample(&g->gt, &g->dir);
	struct vqf_ver_stamp before = vqf_ver_sample(&g->gt, &g->file[f]);
	struct fuse_entryver_out ev;
	struct vqf_ver_stamp es;
	s64 bind, attr;

	/* Device side of LOOKUP: version first, then the attributes. */
	vqf_ver_dev_fill_entryver(&sh->dev, sh->file_idx[f], &ev);
	bind = READ_ONCE(sh->bind_gen[f]);
	attr = READ_ONCE(sh->attr_gen[f]);

	es = vqf_ver_inode_set_entry(&g->gt, &g->file[f], &ev, &before);
	if (!vqf_ver_attr_older(&g->gt, &g->file[f], &es)) {
		g->cached_attr[f] = attr;
		vqf_ver_attr_publish(&g->file[f], &es);
	}
	g->cached_bind[f] = bind;
	vqf_ver_dentry_set(&g->gt, &g->dent[f], &es, &ps);
	g->refetch++;
}

static void *guest_thread(void *arg)
{
	struct guest *g = arg;
	struct shared *sh = g->sh;
	unsigned int f;
	u64 n = 0;

	/* The root directory's slot came with the mount. */
	{
		struct fuse_entryver_out ev;
		struct vqf_ver_stamp b = vqf_ver_sample(&g->gt, &g->dir), st;

		vqf_ver_dev_fill_entryver(&sh->dev, sh->dir_idx, &ev);
		st = vqf_ver_inode_set_entry(&g->gt, &g->dir, &ev, &b);
		vqf_ver_attr_publish(&g->dir, &st);
	}
	for (f = 0; f < NR_FILES; f++)
		guest_lookup(g, f);

	while (!READ_ONCE(sh->stop) || n < 64) {
		s64 pub;

		f = n++ % NR_FILES;
		/* stat(): attributes */
		pub = smp_load_acquire(&sh->attr_pub[f]);
		if (vqf_ver_inode_check(&g->gt, &g->file[f]) ==
		    VQF_VER_VALID) {
			g->valid++;
			if (g->cached_attr[f] < pub)
				g->violations++;
		} else {
			g->stale++;
			guest_getattr(g, f);
		}
		/* path walk: the dentry */
		pub = smp_load_acquire(&sh->bind_pub[f]);
		if (vqf_ver_dentry_check(&g->gt, &g->dent[f]) ==
		    VQF_VER_VALID) {
			g->valid++;
			if (g->cached_bind[f] < pub)
				g->violations++;
		} else {
			g->stale++;
			guest_lookup(g, f);
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------------- */

static void test_never_stale_but_valid(void **state)
{
	struct shared *sh = calloc(1, sizeof(*sh));
	struct guest *g = calloc(NR_GUESTS, sizeof(*g));
	pthread_t dev, bump, gt[NR_GUESTS];
	bool slow = getenv("VQF_UNDER_VALGRIND") != NULL;
	unsigned int i, f;
	u64 valid = 0, stale = 0;

	(void)state;
	assert_non_null(sh);
	assert_non_null(g);
	sh->rounds = slow ? 3000 : 200000;
	sh->spins = slow ? 3000 : 200000;
	sh->cap_s = slow ? 20.0 : 5.0;
	assert_int_equal(vqf_ver_dev_init(&sh->dev, sh->table,
					  sizeof(sh->table), sh->bitmap,
					  sizeof(sh->bitmap)), 0);
	sh->dir_idx = vqf_ver_dev_alloc(&sh->dev);
	for (f = 0; f < NR_FILES; f++)
		sh->file_idx[f] = vqf_ver_dev_alloc(&sh->dev);
	sh->spin_idx = vqf_ver_dev_alloc(&sh->dev);
	assert_int_not_equal(sh->spin_idx, 0);

	/*
	 * The table and the generations are lock-free shared memory (across
	 * VMs in real life) ordered by the atomics and fences under test;
	 * helgrind cannot see fences, so it is told not to check these
	 * words and keeps checking everything else.
	 */
	VALGRIND_HG_DISABLE_CHECKING(sh, sizeof(*sh));
	for (i = 0; i < NR_GUESTS; i++) {
		g[i].sh = sh;
		assert_int_equal(vqf_ver_table_init(&g[i].gt, sh->table,
						    sizeof(sh->table)), 0);
		vqf_ver_inode_init(&g[i].dir);
		for (f = 0; f < NR_FILES; f++) {
			vqf_ver_inode_init(&g[i].file[f]);
			vqf_ver_dentry_init(&g[i].dent[f]);
		}
	}

	for (i = 0; i < NR_GUESTS; i++)
		assert_int_equal(pthread_create(&gt[i], NULL, guest_thread,
						&g[i]), 0);
	assert_int_equal(pthread_create(&bump, NULL, bumper_thread, sh), 0);
	assert_int_equal(pthread_create(&dev, NULL, device_thread, sh), 0);
	pthread_join(dev, NULL);
	pthread_join(bump, NULL);
	for (i = 0; i < NR_GUESTS; i++)
		pthread_join(gt[i], NULL);

	for (i = 0; i < NR_GUESTS; i++) {
		assert_int_equal(g[i].violations, 0);
		assert_int_equal(g[i].gt.stats.backward, 0);
		valid += g[i].valid;
		stale += g[i].stale;
	}
	/* Both answers happened, so the property was exercised. */
	assert_true(valid > 0);
	assert_true(stale > 0);
	print_message("checks: %llu valid, %llu stale; raced %llu/%llu\n",
		      (unsigned long long)valid, (unsigned long long)stale,
		      (unsigned long long)g[0].gt.stats.raced,
		      (unsigned long long)g[1].gt.stats.raced);
	free(g);
	free(sh);
}

/* Concurrent bumps of one slot never lose an increment. */
static void test_concurrent_bumps(void **state)
{
	struct shared *sh = calloc(1, sizeof(*sh));
	pthread_t t[3];
	unsigned int i;

	(void)state;
	assert_non_null(sh);
	sh->spins = getenv("VQF_UNDER_VALGRIND") ? 5000 : 300000;
	assert_int_equal(vqf_ver_dev_init(&sh->dev, sh->table,
					  sizeof(sh->table), sh->bitmap,
					  sizeof(sh->bitmap)), 0);
	sh->spin_idx = vqf_ver_dev_alloc(&sh->dev);
	VALGRIND_HG_DISABLE_CHECKING(sh->table, sizeof(sh->table));
	for (i = 0; i < ARRAY_SIZE(t); i++)
		assert_int_equal(pthread_create(&t[i], NULL, bumper_thread,
						sh), 0);
	for (i = 0; i < ARRAY_SIZE(t); i++)
		pthread_join(t[i], NULL);
	assert_int_equal(sh->table[sh->spin_idx],
			 1 + ARRAY_SIZE(t) * sh->spins);
	free(sh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_never_stale_but_valid),
		cmocka_unit_test(test_concurrent_bumps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
