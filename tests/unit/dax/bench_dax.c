// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * dax-bench: figures for the DAX lib/ half, peers in the same run.
 *
 *   1. point lookup of a file offset among N mapped ranges: vqf_itree vs a
 *      binary search over a sorted array vs a linear scan;
 *   2. vqf_dax_map_begin()+map_end() with pthread ops: hit (mapping
 *      exists), miss with a free range, miss with direct reclaim - with a
 *      no-op device and with vqf_dax_dev validating every request;
 *   3. the hit path from 1 and 2 threads (window lock contention).
 *
 * Not a ctest entry: run ./build/tests/unit/dax/dax-bench.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vqf_dax.h"
#include "vqf_dax_dev.h"
#include "dax_test_rand.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ---- 1. lookup ---- */

struct item {
	struct vqf_itree_node itn;
};

static void bench_lookup(unsigned int n)
{
	const u64 rs = 2ULL << 20;
	struct item *it = calloc(n, sizeof(*it));
	u64 *sorted = calloc(n, sizeof(*sorted));
	struct vqf_itree_root root = VQF_ITREE_ROOT_INIT;
	struct dax_rand r = { 42 };
	unsigned int i, j, q = 2000000, found = 0;
	volatile u64 sink = 0;
	double t0, t_tree, t_bs, t_lin;
	u64 *qs = malloc(q * sizeof(*qs));

	/* every other range mapped, shuffled insert order */
	for (i = 0; i < n; i++)
		sorted[i] = (u64)i * 2 * rs;
	for (i = n; i > 1; i--) {
		j = (unsigned int)dax_rand_below(&r, i);
		u64 t = sorted[i - 1];

		sorted[i - 1] = sorted[j];
		sorted[j] = t;
	}
	for (i = 0; i < n; i++) {
		it[i].itn.start = sorted[i];
		it[i].itn.last = sorted[i] + rs - 1;
		vqf_itree_insert(&root, &it[i].itn);
	}
	for (i = 0; i < n; i++)
		sorted[i] = (u64)i * 2 * rs;
	for (i = 0; i < q; i++)
		qs[i] = dax_rand_below(&r, (u64)n * 2 * rs);

	t0 = now_ns();
	for (i = 0; i < q; i++) {
		struct vqf_itree_node *x = vqf_itree_iter_first(&root, qs[i],
								qs[i]);
		if (x) {
			found++;
			sink += x->start;
		}
	}
	t_tree = (now_ns() - t0) / q;

	t0 = now_ns();
	for (i = 0; i < q; i++) {
		unsigned int lo = 0, hi = n;

		while (lo < hi) {
			unsigned int mid = (lo + hi) / 2;

			if (sorted[mid] + rs - 1 < qs[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && sorted[lo] <= qs[i])
			sink += sorted[lo];
	}
	t_bs = (now_ns() - t0) / q;

	t0 = now_ns();
	for (i = 0; i < q / 50; i++)
		for (j = 0; j < n; j++)
			if (sorted[j] <= qs[i] && qs[i] <= sorted[j] + rs - 1) {
				sink += sorted[j];
				break;
			}
	t_lin = (now_ns() - t0) / (q / 50);

	/* Printed so no compiler drops the lookups as unused. */
	printf("lookup among %5u ranges: itree %6.1f ns  sorted-array bsearch %6.1f ns  linear %8.1f ns  (hit rate %.2f, sum %llx)\n",
	       n, t_tree, t_bs, t_lin, (double)found / q,
	       (unsigned long long)sink);
	free(it);
	free(sorted);
	free(qs);
}

/* ---- 2./3. map_begin with pthread ops ---- */

struct b_inode {
	struct vqf_dax_inode di;
	pthread_rwlock_t m, l;
};

static pthread_mutex_t wmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t dmu = PTHREAD_MUTEX_INITIALIZER;
static bool validate;
static struct vqf_dax_dev_map dev;
static struct vqf_dax_dev_mapping *slots;
static struct vqf_dax_dev_stats dst;

static struct b_inode *bi(struct vqf_dax_inode *di)
{
	return (struct b_inode *)((char *)di - offsetof(struct b_inode, di));
}

static void b_wl(struct vqf_dax_window *w) { pthread_mutex_lock(&wmu); }
static void b_wu(struct vqf_dax_window *w) { pthread_mutex_unlock(&wmu); }

static void b_ml(struct vqf_dax_window *w, struct vqf_dax_inode *di, bool x)
{
	if (x)
		pthread_rwlock_wrlock(&bi(di)->m);
	else
		pthread_rwlock_rdlock(&bi(di)->m);
}

static void b_mu(struct vqf_dax_window *w, struct vqf_dax_inode *di, bool x)
{
	pthread_rwlock_unlock(&bi(di)->m);
}

static void b_il(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	pthread_rwlock_wrlock(&bi(di)->l);
}

static bool b_it(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	return !pthread_rwlock_trywrlock(&bi(di)->l);
}

static void b_iu(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	pthread_rwlock_unlock(&bi(di)->l);
}

static bool b_get(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	return true;
}

static void b_put(struct vqf_dax_window *w, struct vqf_dax_inode *di) { }
static void b_kick(struct vqf_dax_window *w, unsigned int d) { }
static void b_wake(struct vqf_dax_window *w) { }
static int b_wait(struct vqf_dax_window *w) { return -EINTR; }

static int b_setup(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		   const struct fuse_setupmapping_in *in)
{
	struct vqf_dax_dev_limits lim = { ~0ULL, ~0ULL, true };
	const struct vqf_dax_dev_mapping *rep;
	struct fuse_setupmapping_in c;
	int ret;

	if (!validate)
		return 0;
	pthread_mutex_lock(&dmu);
	ret = vqf_dax_dev_setup_check(&dev, in, sizeof(*in), &lim, &dst, &c,
				      &rep);
	if (!ret)
		vqf_dax_dev_setup_commit(&dev, di->nodeid, &c, &dst);
	pthread_mutex_unlock(&dmu);
	return ret;
}

static int b_remove(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		    const struct fuse_removemapping_in *in,
		    const struct fuse_removemapping_one *one)
{
	static u8 wire[4 + VQF_REMOVEMAPPING_MAX * 16];
	static struct fuse_removemapping_one ents[VQF_REMOVEMAPPING_MAX];
	u32 count;
	int ret;

	if (!validate)
		return 0;
	pthread_mutex_lock(&dmu);
	memcpy(wire, in, sizeof(*in));
	memcpy(wire + sizeof(*in), one, in->count * sizeof(*one));
	ret = vqf_dax_dev_remove_check(&dev, wire,
				       sizeof(*in) + in->count * sizeof(*one),
				       &dst, ents, &count);
	if (!ret)
		vqf_dax_dev_remove_commit(&dev, ents, count, &dst);
	pthread_mutex_unlock(&dmu);
	return ret;
}

static const struct vqf_dax_ops b_ops = {
	b_wl, b_wu, b_ml, b_mu, b_il, b_it, b_iu, b_get, b_put, NULL,
	b_kick, b_wake, b_wait, b_setup, b_remove,
};

static struct vqf_dax_window W;
static struct vqf_dax_range *ranges;
static struct b_inode ino;

static void setup_window(u32 nr)
{
	struct vqf_dax_config cfg = { .window_size = (u64)nr << 21 };

	ranges = calloc(nr, sizeof(*ranges));
	slots = calloc(nr, sizeof(*slots));
	vqf_dax_window_init(&W, &cfg, ranges, nr, &b_ops, NULL);
	vqf_dax_dev_map_init(&dev, cfg.window_size, 4096, slots, nr);
	vqf_dax_inode_init(&ino.di, 1, ~0ULL);
	pthread_rwlock_init(&ino.m, NULL);
	pthread_rwlock_init(&ino.l, NULL);
}

static void teardown_window(void)
{
	static struct fuse_removemapping_one scratch[VQF_REMOVEMAPPING_MAX];

	vqf_dax_inode_evict(&W, &ino.di, scratch, VQF_REMOVEMAPPING_MAX);
	free(ranges);
	free(slots);
}

/* ns per map_begin+map_end over @n ops at positions from @pos_of. */
static double run_maps(unsigned int n, u64 (*pos_of)(unsigned int))
{
	struct vqf_dax_map m;
	unsigned int i;
	double t0 = now_ns();

	for (i = 0; i < n; i++) {
		if (vqf_dax_map_begin(&W, &ino.di, pos_of(i), 0, &m)) {
			fprintf(stderr, "map_begin failed\n");
			exit(1);
		}
		vqf_dax_map_end(&W, &m);
	}
	return (now_ns() - t0) / n;
}

static u64 pos_hit(unsigned int i)
{
	return ((u64)(i % 64) << 21) + (i & 4095);
}

static u64 pos_sweep(unsigned int i)
{
	return (u64)i << 21;	/* always a new range */
}

static void *hit_thread(void *arg)
{
	double *out = arg;

	*out = run_maps(1000000, pos_hit);
	return NULL;
}

static void bench_map(void)
{
	static struct fuse_removemapping_one scratch[VQF_REMOVEMAPPING_MAX];
	double hit, miss_free, miss_reclaim, t[2];
	pthread_t th[2];
	int v, r;

	for (v = 0; v < 2; v++) {
		validate = v;
		setup_window(64);
		miss_free = 0;
		for (r = 0; r < 2000; r++) {
			miss_free += run_maps(64, pos_sweep) / 2000;
			vqf_dax_inode_evict(&W, &ino.di, scratch,
					    VQF_REMOVEMAPPING_MAX);
		}
		run_maps(64, pos_sweep);
		hit = run_maps(2000000, pos_hit);
		teardown_window();

		setup_window(64);
		run_maps(64, pos_sweep);
		/* window full: every new range reclaims one of ours */
		miss_reclaim = run_maps(200000, pos_sweep);
		teardown_window();
		printf("map_begin+end (%s device): hit %6.1f ns  miss/free range %7.1f ns  miss/direct reclaim %7.1f ns\n",
		       v ? "validating" : "no-op     ", hit, miss_free,
		       miss_reclaim);
	}

	validate = false;
	setup_window(64);
	run_maps(64, pos_sweep);
	hit_thread(&t[0]);
	printf("hit path, 1 thread : %6.1f ns/op\n", t[0]);
	pthread_create(&th[0], NULL, hit_thread, &t[0]);
	pthread_create(&th[1], NULL, hit_thread, &t[1]);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	printf("hit path, 2 threads: %6.1f / %6.1f ns/op (same inode: M shared + W)\n",
	       t[0], t[1]);
	teardown_window();
}

int main(void)
{
	bench_lookup(16);
	bench_lookup(512);
	bench_lookup(8192);
	bench_map();
	return 0;
}
