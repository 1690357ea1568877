// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * DAX window under pressure, with pthreads implementing the ops: a window
 * of 4 ranges in front of 3 files of 12 ranges each, so almost every
 * access reclaims.  User threads read and write their own 64-byte blocks
 * through the window (I/O path), some as "faults" (holding L shared,
 * VQF_DAX_MAP_NOWAIT, wait and retry on -EAGAIN), some truncate (L
 * exclusive + remove_range); a worker thread runs vqf_dax_reclaim() when
 * kicked.  The device copies file bytes into a range on SETUPMAPPING and
 * writes them back (then poisons the range) on REMOVEMAPPING, as a
 * MAP_SHARED mapping would behave.
 *
 * Checked: every byte a thread reads is what it last wrote (across any
 * number of reclaims); a REMOVEMAPPING never hits a range a user is inside
 * (per-range user count kept by the users under the device lock); the
 * device's map agrees with the user's view while it holds a reference; at
 * the end, after evicting everything, the files hold every last write.
 * Bounded: fixed op counts, and every wait gives up (test failure) after
 * 10 s.  Registered with HELGRIND.
 *
 * test_stale: deferred teardown (cfg.stale_max) under the same device:
 * each thread reads and writes its own file, evicts it now and then
 * (read-only ranges go stale, writable ones must be written back at
 * once) and flushes the stale ranges; other threads' setups replace
 * stale mappings concurrently.  Checked as above, plus: a flush never
 * removes a range someone set up again (its user would see poison, or
 * the removal would hit a range in use), and writes survive evictions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "vqf_dax.h"
#include "vqf_dax_dev.h"
#include "dax_test_rand.h"

#define RSIZE		(16 * 1024ULL)
#define NRANGES		4
#define FILE_RANGES	12
#define FILE_SIZE	(FILE_RANGES * RSIZE)
#define NINO		3
#define NT		4
#define BLK		64
#define NBLK		(FILE_SIZE / BLK)
#define POISON		0xee

struct t_inode {
	struct vqf_dax_inode di;
	pthread_rwlock_t m;
	pthread_rwlock_t l;
	pthread_mutex_t pin_mu;
	int pins;
	bool dying;		/* pin_mu: being evicted, inode_get fails */
	u8 file[FILE_SIZE];	/* the host file; device lock */
};

static struct {
	struct vqf_dax_window w;
	struct vqf_dax_range ranges[NRANGES];
	pthread_mutex_t wmu;
	pthread_cond_t free_cv;
	/* worker */
	pthread_mutex_t kmu;
	pthread_cond_t kcv;
	bool kicked, stop;
	bool delayed;		/* the kick asked for a pause first */
	unsigned int worker_runs;
	/* device */
	pthread_mutex_t dmu;
	struct vqf_dax_dev_map dev;
	struct vqf_dax_dev_mapping slots[NRANGES];
	struct vqf_dax_dev_stats dst;
	int in_use[NRANGES];	/* users inside each range; dmu */
	unsigned int bad_remove;	/* removal of a range in use; dmu */
	unsigned int dev_errors;	/* dmu */
	u8 window[NRANGES * RSIZE];
	struct t_inode ino[NINO];
	struct t_inode own[NT];	/* test_stale: one file per thread */
	/* results */
	unsigned int wait_timeouts;	/* wmu */
} T;

static struct t_inode *t_ino(struct vqf_dax_inode *di)
{
	return (struct t_inode *)((char *)di - offsetof(struct t_inode, di));
}

/* The inode a device mapping was set up for (dmu held); NULL: none. */
static struct t_inode *t_by_nodeid(u64 nodeid)
{
	int i;

	for (i = 0; i < NINO; i++)
		if (T.ino[i].di.nodeid == nodeid)
			return &T.ino[i];
	for (i = 0; i < NT; i++)
		if (T.own[i].di.nodeid == nodeid)
			return &T.own[i];
	return NULL;
}

static void deadline(struct timespec *ts, int sec)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += sec;
}

/* ---- ops ---- */

static void o_wlock(struct vqf_dax_window *w)
{
	pthread_mutex_lock(&T.wmu);
}

static void o_wunlock(struct vqf_dax_window *w)
{
	pthread_mutex_unlock(&T.wmu);
}

static void o_mlock(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		    bool excl)
{
	if (excl)
		pthread_rwlock_wrlock(&t_ino(di)->m);
	else
		pthread_rwlock_rdlock(&t_ino(di)->m);
}

static void o_munlock(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		      bool excl)
{
	pthread_rwlock_unlock(&t_ino(di)->m);
}

static void o_ilock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	pthread_rwlock_wrlock(&t_ino(di)->l);
}

static bool o_itrylock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	return pthread_rwlock_trywrlock(&t_ino(di)->l) == 0;
}

static void o_iunlock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	pthread_rwlock_unlock(&t_ino(di)->l);
}

static bool o_iget(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	struct t_inode *ti = t_ino(di);
	bool ok;

	pthread_mutex_lock(&ti->pin_mu);
	ok = !ti->dying;
	if (ok)
		ti->pins++;
	pthread_mutex_unlock(&ti->pin_mu);
	return ok;
}

static void o_iput(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	struct t_inode *ti = t_ino(di);

	pthread_mutex_lock(&ti->pin_mu);
	ti->pins--;
	pthread_mutex_unlock(&ti->pin_mu);
}

static void o_kick(struct vqf_dax_window *w, unsigned int delay_ms)
{
	pthread_mutex_lock(&T.kmu);
	if (!T.kicked)
		T.delayed = delay_ms != 0;
	else if (!delay_ms)
		T.delayed = false;
	T.kicked = true;
	pthread_cond_signal(&T.kcv);
	pthread_mutex_unlock(&T.kmu);
}

static void o_wake(struct vqf_dax_window *w)
{
	pthread_cond_broadcast(&T.free_cv);	/* wmu held */
}

static int o_wait(struct vqf_dax_window *w)
{
	struct timespec ts;
	int ret = 0;

	/* A stall, not a slow machine: far beyond any reclaim pass. */
	deadline(&ts, 120);
	pthread_mutex_lock(&T.wmu);
	while (!vqf_dax_nr_free(w)) {
		if (pthread_cond_timedwait(&T.free_cv, &T.wmu, &ts)) {
			T.wait_timeouts++;
			ret = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&T.wmu);
	return ret;
}

static int o_setup(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		   const struct fuse_setupmapping_in *in)
{
	struct vqf_dax_dev_limits lim = { FILE_SIZE, FILE_SIZE, true };
	const struct vqf_dax_dev_mapping *rep;
	struct fuse_setupmapping_in copy;
	int ret;

	pthread_mutex_lock(&T.dmu);
	ret = vqf_dax_dev_setup_check(&T.dev, in, sizeof(*in), &lim, &T.dst,
				      &copy, &rep);
	if (ret) {
		T.dev_errors++;
	} else {
		/* an upgrade keeps the bytes: it is the same shared mapping */
		if (!rep || rep->nodeid != di->nodeid ||
		    rep->foffset != copy.foffset)
			memcpy(T.window + copy.moffset,
			       t_ino(di)->file + copy.foffset, copy.len);
		vqf_dax_dev_setup_commit(&T.dev, di->nodeid, &copy, &T.dst);
	}
	pthread_mutex_unlock(&T.dmu);
	return ret;
}

static int o_remove(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		    const struct fuse_removemapping_in *in,
		    const struct fuse_removemapping_one *one)
{
	static u8 wire[sizeof(*in) + NRANGES * sizeof(*one)];
	static struct fuse_removemapping_one ents[VQF_REMOVEMAPPING_MAX];
	const struct vqf_dax_dev_mapping *d;
	size_t size = sizeof(*in) + in->count * sizeof(*one);
	u32 i, count;
	int ret;

	/*
	 * A flush's round trip takes a while: long enough for another
	 * thread to set a range up, were the flush's ranges not off the
	 * free side while it is in flight.
	 */
	if (!di)
		usleep(30);
	pthread_mutex_lock(&T.dmu);
	if (in->count > NRANGES) {
		T.dev_errors++;
		pthread_mutex_unlock(&T.dmu);
		return -E2BIG;
	}
	memcpy(wire, in, sizeof(*in));
	memcpy(wire + sizeof(*in), one, in->count * sizeof(*one));
	ret = vqf_dax_dev_remove_check(&T.dev, wire, size, &T.dst, ents,
				       &count);
	if (ret) {
		T.dev_errors++;
		pthread_mutex_unlock(&T.dmu);
		return ret;
	}
	for (i = 0; i < count; i++) {
		u64 mo = ents[i].moffset;
		struct t_inode *owner;

		if (T.in_use[mo / RSIZE])
			T.bad_remove++;
		d = vqf_dax_dev_lookup(&T.dev, mo);
		/*
		 * Written back to the file the mapping shows (a flush of
		 * stale ranges comes with di NULL): only a writable one
		 * has anything to write, and a flush must never see one.
		 */
		owner = t_by_nodeid(d->nodeid);
		if ((d->flags & FUSE_SETUPMAPPING_FLAG_WRITE) && !di)
			T.dev_errors++;
		else if (d->flags & FUSE_SETUPMAPPING_FLAG_WRITE)
			memcpy(owner->file + d->foffset, T.window + mo,
			       ents[i].len);
		memset(T.window + mo, POISON, ents[i].len);
	}
	vqf_dax_dev_remove_commit(&T.dev, ents, count, &T.dst);
	pthread_mutex_unlock(&T.dmu);
	return 0;
}

static const struct vqf_dax_ops t_ops = {
	.window_lock = o_wlock,
	.window_unlock = o_wunlock,
	.map_lock = o_mlock,
	.map_unlock = o_munlock,
	.inode_lock = o_ilock,
	.inode_trylock = o_itrylock,
	.inode_unlock = o_iunlock,
	.inode_get = o_iget,
	.inode_put = o_iput,
	.kick_reclaim = o_kick,
	.wake_free = o_wake,
	.wait_free = o_wait,
	.send_setupmapping = o_setup,
	.send_removemapping = o_remove,
};

/* ---- threads ---- */

static void *worker(void *arg)
{
	bool delayed;

	for (;;) {
		pthread_mutex_lock(&T.kmu);
		while (!T.kicked && !T.stop)
			pthread_cond_wait(&T.kcv, &T.kmu);
		if (T.stop) {
			pthread_mutex_unlock(&T.kmu);
			return NULL;
		}
		T.kicked = false;
		T.worker_runs++;
		delayed = T.delayed;
		pthread_mutex_unlock(&T.kmu);
		if (delayed)
			usleep(1000);
		vqf_dax_reclaim(&T.w);
	}
}

/*
 * A fresh window of @cfg and its device, @n inodes at @ino with nodeids
 * from @nodeid, and the reclaim worker (returned) started.
 */
static pthread_t t_start(const struct vqf_dax_config *cfg,
			 struct t_inode *ino, int n, u64 nodeid)
{
	pthread_t wth;
	int i;

	memset(&T, 0, sizeof(T));
	pthread_mutex_init(&T.wmu, NULL);
	pthread_cond_init(&T.free_cv, NULL);
	pthread_mutex_init(&T.kmu, NULL);
	pthread_cond_init(&T.kcv, NULL);
	pthread_mutex_init(&T.dmu, NULL);
	assert_int_equal(vqf_dax_window_init(&T.w, cfg, T.ranges, NRANGES,
					     &t_ops, NULL), 0);
	assert_int_equal(vqf_dax_dev_map_init(&T.dev, cfg->window_size,
					      PAGE_SIZE, T.slots, NRANGES), 0);
	memset(T.window, POISON, sizeof(T.window));
	for (i = 0; i < n; i++) {
		vqf_dax_inode_init(&ino[i].di, nodeid + i, ~0ULL);
		pthread_rwlock_init(&ino[i].m, NULL);
		pthread_rwlock_init(&ino[i].l, NULL);
		pthread_mutex_init(&ino[i].pin_mu, NULL);
	}
	assert_int_equal(pthread_create(&wth, NULL, worker, NULL), 0);
	return wth;
}

/* The users are done: stop the worker. */
static void t_stop(pthread_t wth)
{
	pthread_mutex_lock(&T.kmu);
	T.stop = true;
	pthread_cond_signal(&T.kcv);
	pthread_mutex_unlock(&T.kmu);
	pthread_join(wth, NULL);
}

struct user {
	pthread_t th;
	int id;
	unsigned int ops;
	struct dax_rand rnd;
	u8 shadow[NINO][NBLK];	/* last value written to my blocks */
	unsigned int errors, io, faults, truncates, again;
};

/* Enter/leave range @r as a user, checking the device agrees with @m. */
static void user_enter(struct user *u, struct t_inode *ti,
		       const struct vqf_dax_map *m, u64 pos)
{
	const struct vqf_dax_dev_mapping *d;
	u64 mo = m->moffset & ~(RSIZE - 1);

	pthread_mutex_lock(&T.dmu);
	T.in_use[mo / RSIZE]++;
	d = vqf_dax_dev_lookup(&T.dev, m->moffset);
	if (!d || d->nodeid != ti->di.nodeid ||
	    d->foffset != (pos & ~(RSIZE - 1)) ||
	    (m->writable && !(d->flags & FUSE_SETUPMAPPING_FLAG_WRITE)))
		u->errors++;
	pthread_mutex_unlock(&T.dmu);
}

static void user_leave(const struct vqf_dax_map *m)
{
	pthread_mutex_lock(&T.dmu);
	T.in_use[(m->moffset & ~(RSIZE - 1)) / RSIZE]--;
	pthread_mutex_unlock(&T.dmu);
}

/* One block read or write through the window; 0 or an errno. */
static int user_access(struct user *u, int i, u64 b, bool write, bool fault)
{
	struct t_inode *ti = &T.ino[i];
	unsigned int fl = write ? VQF_DAX_MAP_WRITE : 0;
	u64 pos = b * BLK;
	struct vqf_dax_map m;
	int ret, k;
	u8 *p;

	if (fault) {
		fl |= VQF_DAX_MAP_NOWAIT;
		for (;;) {
			pthread_rwlock_rdlock(&ti->l);
			ret = vqf_dax_map_begin(&T.w, &ti->di, pos, fl, &m);
			if (ret != -EAGAIN)
				break;
			/* as the fault path: drop L before sleeping */
			pthread_rwlock_unlock(&ti->l);
			u->again++;
			ret = vqf_dax_wait_free(&T.w);
			if (ret)
				return ret;
		}
		if (ret) {
			pthread_rwlock_unlock(&ti->l);
			return ret;
		}
	} else {
		ret = vqf_dax_map_begin(&T.w, &ti->di, pos, fl, &m);
		if (ret)
			return ret;
	}

	user_enter(u, ti, &m, pos);
	p = T.window + m.moffset;
	if (m.len < BLK || (write && !m.writable))
		u->errors++;
	else if (write)
		memset(p, u->shadow[i][b] = (u8)(1 + dax_rand_below(&u->rnd, 250)),
		       BLK);
	else
		for (k = 0; k < BLK; k++)
			if (p[k] != u->shadow[i][b])
				u->errors++;
	/* sometimes stay inside a while: reclaim must walk around us */
	if (dax_rand_below(&u->rnd, 8) == 0)
		usleep(50);
	user_leave(&m);
	vqf_dax_map_end(&T.w, &m);
	if (fault)
		pthread_rwlock_unlock(&ti->l);
	return 0;
}

static void *user_main(void *arg)
{
	static struct fuse_removemapping_one scratch[NT][NRANGES];
	struct user *u = arg;
	unsigned int n;
	int i, ret;
	u64 b;

	for (n = 0; n < u->ops; n++) {
		unsigned int op = (unsigned int)dax_rand_below(&u->rnd, 100);

		i = (int)dax_rand_below(&u->rnd, NINO);
		/* my blocks: b with (b + i) % NT == id */
		b = dax_rand_below(&u->rnd, NBLK / NT) * NT;
		b += (u64)((u->id - i + 2 * NT) % NT);
		if (op < 3) {
			u64 s = dax_rand_below(&u->rnd, FILE_SIZE);
			long r;

			pthread_rwlock_wrlock(&T.ino[i].l);
			r = vqf_dax_inode_remove_range(&T.w, &T.ino[i].di, s,
						       s + RSIZE * 2,
						       scratch[u->id],
						       NRANGES);
			pthread_rwlock_unlock(&T.ino[i].l);
			if (r < 0 && r != -EBUSY)
				u->errors++;
			u->truncates++;
			continue;
		}
		ret = user_access(u, i, b, op < 45,
				  u->id >= NT / 2 && op % 3 == 0);
		if (ret)
			u->errors++;
		if (u->id >= NT / 2 && op % 3 == 0)
			u->faults++;
		else
			u->io++;
	}
	return NULL;
}

static void test_pressure(void **state)
{
	static struct user users[NT];
	static struct fuse_removemapping_one scratch[VQF_REMOVEMAPPING_MAX];
	struct vqf_dax_config cfg = {
		.window_size = NRANGES * RSIZE,
		.range_size = RSIZE,
		.reclaim_chunk = 2,
	};
	u64 seed = dax_test_seed(0x7ead, "dax-threads");
	unsigned int ops = dax_under_valgrind() ? 150 : 4000;
	struct vqf_dax_stats st;
	pthread_t wth;
	const char *why;
	int i, t;
	u64 b;

	wth = t_start(&cfg, T.ino, NINO, 10);
	for (t = 0; t < NT; t++) {
		memset(&users[t], 0, sizeof(users[t]));
		users[t].id = t;
		users[t].ops = ops;
		users[t].rnd.s = seed * 1000 + t;
		assert_int_equal(pthread_create(&users[t].th, NULL, user_main,
						&users[t]), 0);
	}
	for (t = 0; t < NT; t++)
		pthread_join(users[t].th, NULL);
	t_stop(wth);

	/* quiescent: evict everything, then the files hold every write */
	for (i = 0; i < NINO; i++)
		assert_true(vqf_dax_inode_evict(&T.w, &T.ino[i].di, scratch,
						NRANGES) >= 0);
	assert_int_equal(T.bad_remove, 0);
	assert_int_equal(T.dev_errors, 0);
	assert_int_equal(T.wait_timeouts, 0);
	assert_int_equal(T.dev.nr_used, 0);
	assert_int_equal(vqf_dax_nr_free(&T.w), NRANGES);
	assert_int_equal(vqf_dax_window_check(&T.w, &why), 0);
	for (t = 0; t < NT; t++)
		assert_int_equal(users[t].errors, 0);
	for (i = 0; i < NINO; i++) {
		assert_int_equal(T.ino[i].pins, 0);
		for (b = 0; b < NBLK; b++) {
			struct user *u = &users[(b + i) % NT];
			u8 want = u->shadow[i][b];
			int k;

			for (k = 0; k < BLK; k++)
				if (T.ino[i].file[b * BLK + k] != want)
					fail_msg("inode %d block %llu byte %d: %u, want %u",
						 i, (unsigned long long)b, k,
						 T.ino[i].file[b * BLK + k],
						 want);
		}
	}

	vqf_dax_stats_read(&T.w, &st);
	print_message("dax-threads: %u ops x %d threads: setups %llu upgrades %llu reclaimed bg %llu direct %llu removed %llu waits %llu locked-skips %llu in-use-skips %llu nowait-again %llu races %llu worker runs %u\n",
		      ops, NT, (unsigned long long)st.setups,
		      (unsigned long long)st.upgrades,
		      (unsigned long long)st.reclaimed_bg,
		      (unsigned long long)st.reclaimed_direct,
		      (unsigned long long)st.removed,
		      (unsigned long long)st.waits,
		      (unsigned long long)st.skipped_locked,
		      (unsigned long long)st.skipped_in_use,
		      (unsigned long long)st.nowait_again,
		      (unsigned long long)st.setup_races, T.worker_runs);
	/* pressure really happened */
	assert_true(st.setups > NRANGES * 4);
	assert_true(st.reclaimed_bg + st.reclaimed_direct > NRANGES * 2);
}

/* ---- deferred teardown ---- */

#define OWN_BLKS	(FILE_SIZE / BLK)

/* Evict @ti as evict_inode would: no new pins, wait for the worker's. */
static long own_evict(struct t_inode *ti, struct fuse_removemapping_one *sc,
		      u32 n)
{
	long ret;

	pthread_mutex_lock(&ti->pin_mu);
	ti->dying = true;
	while (ti->pins) {
		pthread_mutex_unlock(&ti->pin_mu);
		usleep(10);
		pthread_mutex_lock(&ti->pin_mu);
	}
	pthread_mutex_unlock(&ti->pin_mu);
	ret = vqf_dax_inode_evict(&T.w, &ti->di, sc, n);
	/*
	 * The same file comes back in the same struct, its tree empty (not
	 * re-initialised: the device reads the nodeid under its own lock).
	 */
	pthread_mutex_lock(&ti->pin_mu);
	ti->dying = false;
	pthread_mutex_unlock(&ti->pin_mu);
	return ret;
}

struct suser {
	pthread_t th;
	int id;
	unsigned int ops;
	struct dax_rand rnd;
	u8 shadow[OWN_BLKS];	/* the file's bytes as this thread wrote them */
	unsigned int errors, evicts, flushes;
};

static void *stale_main(void *arg)
{
	static struct fuse_removemapping_one scratch[NT][NRANGES];
	struct suser *u = arg;
	struct t_inode *ti = &T.own[u->id];
	struct vqf_dax_map m;
	unsigned int n;
	int k, ret;

	for (n = 0; n < u->ops; n++) {
		unsigned int op = (unsigned int)dax_rand_below(&u->rnd, 100);
		u64 b = dax_rand_below(&u->rnd, OWN_BLKS);
		bool write = op < 25;
		u8 *p;

		if (op >= 94) {
			if (own_evict(ti, scratch[u->id],
				      1 + (u32)dax_rand_below(&u->rnd,
							     NRANGES)) < 0)
				u->errors++;
			u->evicts++;
			continue;
		}
		if (op >= 91) {
			if (vqf_dax_flush_stale(&T.w, scratch[u->id],
					1 + (u32)dax_rand_below(&u->rnd,
								NRANGES)) < 0)
				u->errors++;
			u->flushes++;
			continue;
		}
		ret = vqf_dax_map_begin(&T.w, &ti->di, b * BLK,
					write ? VQF_DAX_MAP_WRITE : 0, &m);
		if (ret) {
			u->errors++;
			continue;
		}
		pthread_mutex_lock(&T.dmu);
		T.in_use[m.moffset / RSIZE]++;
		pthread_mutex_unlock(&T.dmu);
		p = T.window + m.moffset;
		if (write)
			memset(p, u->shadow[b] = (u8)(1 + dax_rand_below(
				&u->rnd, 250)), BLK);
		else
			for (k = 0; k < BLK; k++)
				if (p[k] != u->shadow[b])
					u->errors++;
		if (dax_rand_below(&u->rnd, 8) == 0)
			usleep(20);
		pthread_mutex_lock(&T.dmu);
		T.in_use[m.moffset / RSIZE]--;
		pthread_mutex_unlock(&T.dmu);
		vqf_dax_map_end(&T.w, &m);
	}
	return NULL;
}

static void test_stale(void **state)
{
	static struct suser users[NT];
	static struct fuse_removemapping_one scratch[VQF_REMOVEMAPPING_MAX];
	struct vqf_dax_config cfg = {
		.window_size = NRANGES * RSIZE,
		.range_size = RSIZE,
		.reclaim_chunk = 2,
		.stale_max = NRANGES / 2,
	};
	u64 seed = dax_test_seed(0x57a1e, "dax-threads stale");
	unsigned int ops = dax_under_valgrind() ? 300 : 6000;
	struct vqf_dax_stats st;
	pthread_t wth;
	const char *why;
	int t, k;

	(void)state;
	/* each file starts as its thread's shadow says: zeroes */
	wth = t_start(&cfg, T.own, NT, 20);
	for (t = 0; t < NT; t++) {
		memset(&users[t], 0, sizeof(users[t]));
		users[t].id = t;
		users[t].ops = ops;
		users[t].rnd.s = seed * 1000 + t;
		assert_int_equal(pthread_create(&users[t].th, NULL, stale_main,
						&users[t]), 0);
	}
	for (t = 0; t < NT; t++)
		pthread_join(users[t].th, NULL);
	t_stop(wth);

	for (t = 0; t < NT; t++)
		assert_true(own_evict(&T.own[t], scratch, NRANGES) >= 0);
	assert_true(vqf_dax_flush_stale(&T.w, scratch, NRANGES) >= 0);
	assert_int_equal(vqf_dax_nr_stale(&T.w), 0);
	assert_int_equal(T.bad_remove, 0);
	assert_int_equal(T.dev_errors, 0);
	assert_int_equal(T.wait_timeouts, 0);
	assert_int_equal(T.dev.nr_used, 0);
	assert_int_equal(vqf_dax_nr_free(&T.w), NRANGES);
	assert_int_equal(vqf_dax_window_check(&T.w, &why), 0);
	for (t = 0; t < NT; t++) {
		assert_int_equal(users[t].errors, 0);
		assert_int_equal(T.own[t].pins, 0);
		for (k = 0; k < (int)FILE_SIZE; k++)
			if (T.own[t].file[k] != users[t].shadow[k / BLK])
				fail_msg("file %d byte %d: %u, want %u", t, k,
					 T.own[t].file[k],
					 users[t].shadow[k / BLK]);
	}
	vqf_dax_stats_read(&T.w, &st);
	print_message("dax-threads stale: %u ops x %d threads: setups %llu deferred %llu reused %llu flushed %llu in %llu requests, removed %llu, reclaimed bg %llu direct %llu\n",
		      ops, NT, (unsigned long long)st.setups,
		      (unsigned long long)st.stale_deferred,
		      (unsigned long long)st.stale_reused,
		      (unsigned long long)st.stale_flushed,
		      (unsigned long long)st.stale_flushes,
		      (unsigned long long)st.removed,
		      (unsigned long long)st.reclaimed_bg,
		      (unsigned long long)st.reclaimed_direct);
	/* every part of the rule ran, concurrently with the rest */
	assert_true(st.stale_deferred && st.stale_reused && st.stale_flushed);
	assert_true(st.reclaimed_bg + st.reclaimed_direct > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pressure),
		cmocka_unit_test(test_stale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
