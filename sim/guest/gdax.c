// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdax.c - lib/vqf_dax's ops on pthreads, its reclaim worker, and the
 * copies through the cache window (see gdax.h).
 */
#include "gdax.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GDAX_SCRATCH	64	/* REMOVEMAPPING entries per request */

/* The handle SETUPMAPPING names: the caller's open file, per thread. */
static __thread u64 tls_fh;

static struct gdax *of(struct vqf_dax_window *w)
{
	return w->priv;
}

static struct gdax_inode *gi_of(struct vqf_dax_inode *di)
{
	return (struct gdax_inode *)((char *)di -
				     offsetof(struct gdax_inode, di));
}

static void w_lock(struct vqf_dax_window *w)
{
	pthread_mutex_lock(&of(w)->wlock);
}

static void w_unlock(struct vqf_dax_window *w)
{
	pthread_mutex_unlock(&of(w)->wlock);
}

static void m_lock(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		   bool excl)
{
	(void)w;
	if (excl)
		pthread_rwlock_wrlock(&gi_of(di)->m);
	else
		pthread_rwlock_rdlock(&gi_of(di)->m);
}

static void m_unlock(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		     bool excl)
{
	(void)w;
	(void)excl;
	pthread_rwlock_unlock(&gi_of(di)->m);
}

static void l_lock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	(void)w;
	pthread_mutex_lock(&gi_of(di)->l);
}

static bool l_trylock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	(void)w;
	return !pthread_mutex_trylock(&gi_of(di)->l);
}

static void l_unlock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	(void)w;
	pthread_mutex_unlock(&gi_of(di)->l);
}

/* Mapped inodes are pinned until evicted: nothing to take. */
static bool i_get(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	(void)w;
	return gi_of(di)->ready;
}

static void i_put(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	(void)w;
	(void)di;
}

static void kick(struct vqf_dax_window *w, unsigned int delay_ms)
{
	struct gdax *x = of(w);

	/* Called with W held: klock is a different, inner lock. */
	pthread_mutex_lock(&x->klock);
	if (!x->kicked || delay_ms < x->kick_ms)
		x->kick_ms = delay_ms;
	x->kicked = true;
	pthread_cond_signal(&x->kcond);
	pthread_mutex_unlock(&x->klock);
}

static void wake_free(struct vqf_dax_window *w)
{
	pthread_cond_broadcast(&of(w)->free_cond);	/* W is wlock */
}

static int wait_free(struct vqf_dax_window *w)
{
	struct gdax *x = of(w);

	pthread_mutex_lock(&x->wlock);
	while (!vqf_dax_nr_free(w) && !x->stop)
		pthread_cond_wait(&x->free_cond, &x->wlock);
	pthread_mutex_unlock(&x->wlock);
	return x->stop ? -ENOTCONN : 0;
}

static int send_setup(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		      const struct fuse_setupmapping_in *in)
{
	struct fuse_setupmapping_in arg = *in;
	struct vqf_gdrv_call cl;

	arg.fh = tls_fh;
	memset(&cl, 0, sizeof(cl));
	vqf_dax_req_setupmapping(&cl.req, 0, di->nodeid, &arg);
	return of(w)->call(of(w)->ctx, &cl);
}

static int send_remove(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		       const struct fuse_removemapping_in *in,
		       const struct fuse_removemapping_one *one)
{
	struct vqf_gdrv_call cl;
	int ret;

	memset(&cl, 0, sizeof(cl));
	ret = vqf_dax_req_removemapping(&cl.req, 0, di->nodeid, in, one);
	return ret ? ret : of(w)->call(of(w)->ctx, &cl);
}

static const struct vqf_dax_ops gdax_ops = {
	.window_lock = w_lock,
	.window_unlock = w_unlock,
	.map_lock = m_lock,
	.map_unlock = m_unlock,
	.inode_lock = l_lock,
	.inode_trylock = l_trylock,
	.inode_unlock = l_unlock,
	.inode_get = i_get,
	.inode_put = i_put,
	.kick_reclaim = kick,
	.wake_free = wake_free,
	.wait_free = wait_free,
	.send_setupmapping = send_setup,
	.send_removemapping = send_remove,
};

/* The background reclaimer (upstream's delayed work). */
static void *worker(void *arg)
{
	struct gdax *x = arg;

	pthread_mutex_lock(&x->klock);
	for (;;) {
		while (!x->kicked && !x->stop)
			pthread_cond_wait(&x->kcond, &x->klock);
		if (x->stop)
			break;
		if (x->kick_ms) {
			struct timespec ts = { x->kick_ms / 1000,
					       (long)(x->kick_ms % 1000) *
					       1000000L };

			pthread_mutex_unlock(&x->klock);
			nanosleep(&ts, NULL);
			pthread_mutex_lock(&x->klock);
		}
		x->kicked = false;
		pthread_mutex_unlock(&x->klock);
		vqf_dax_reclaim(&x->w);
		pthread_mutex_lock(&x->klock);
	}
	pthread_mutex_unlock(&x->klock);
	return NULL;
}

int gdax_init(struct gdax *x, void *base, u64 len, u64 range_size,
	      int (*call)(void *ctx, struct vqf_gdrv_call *cl), void *ctx)
{
	struct vqf_dax_config cfg = { .window_size = len,
				      .range_size = range_size };
	u32 nr = vqf_dax_nr_ranges(len, range_size ? range_size :
				   1ULL << VQF_DAX_RANGE_SHIFT_DEFAULT);
	int ret;

	memset(x, 0, sizeof(*x));
	if (!base || !nr)
		return -EINVAL;
	x->ranges = calloc(1, vqf_dax_ranges_size(nr));
	if (!x->ranges)
		return -ENOMEM;
	x->base = base;
	x->len = len;
	x->call = call;
	x->ctx = ctx;
	pthread_mutex_init(&x->wlock, NULL);
	pthread_cond_init(&x->free_cond, NULL);
	pthread_mutex_init(&x->klock, NULL);
	pthread_cond_init(&x->kcond, NULL);
	ret = vqf_dax_window_init(&x->w, &cfg, x->ranges, nr, &gdax_ops, x);
	if (!ret && pthread_create(&x->worker, NULL, worker, x))
		ret = -ENOMEM;
	if (ret) {
		free(x->ranges);
		x->ranges = NULL;
		return ret;
	}
	x->running = true;
	return 0;
}

void gdax_fini(struct gdax *x)
{
	if (!x->ranges)
		return;
	pthread_mutex_lock(&x->klock);
	x->stop = true;
	pthread_cond_signal(&x->kcond);
	pthread_mutex_unlock(&x->klock);
	pthread_mutex_lock(&x->wlock);
	pthread_cond_broadcast(&x->free_cond);
	pthread_mutex_unlock(&x->wlock);
	if (x->running)
		pthread_join(x->worker, NULL);
	pthread_mutex_destroy(&x->wlock);
	pthread_cond_destroy(&x->free_cond);
	pthread_mutex_destroy(&x->klock);
	pthread_cond_destroy(&x->kcond);
	free(x->ranges);
	x->ranges = NULL;
}

void gdax_inode_init(struct gdax_inode *gi, u64 nodeid)
{
	vqf_dax_inode_init(&gi->di, nodeid, ~0ULL);
	pthread_rwlock_init(&gi->m, NULL);
	pthread_mutex_init(&gi->l, NULL);
	gi->ready = true;
}

void gdax_inode_evict(struct gdax *x, struct gdax_inode *gi)
{
	struct fuse_removemapping_one scratch[GDAX_SCRATCH];

	if (!gi->ready)
		return;
	/* Under W, where the reclaimer's inode_get() looks at it. */
	pthread_mutex_lock(&x->wlock);
	gi->ready = false;
	pthread_mutex_unlock(&x->wlock);
	vqf_dax_inode_evict(&x->w, &gi->di, scratch, GDAX_SCRATCH);
	pthread_rwlock_destroy(&gi->m);
	pthread_mutex_destroy(&gi->l);
}

ssize_t gdax_copy(struct gdax *x, struct gdax_inode *gi, u64 fh, void *data,
		  size_t n, u64 off, bool write)
{
	u8 *buf = data;
	size_t done = 0;

	tls_fh = fh;
	while (done < n) {
		struct vqf_dax_map map;
		size_t take;
		int ret;

		ret = vqf_dax_map_begin(&x->w, &gi->di, off + done,
					write ? VQF_DAX_MAP_WRITE : 0, &map);
		if (ret)
			return done ? (ssize_t)done : ret;
		take = n - done < map.len ? n - done : (size_t)map.len;
		if (write)
			memcpy(x->base + map.moffset, buf + done, take);
		else
			memcpy(buf + done, x->base + map.moffset, take);
		vqf_dax_map_end(&x->w, &map);
		done += take;
	}
	return (ssize_t)done;
}

int gdax_truncate(struct gdax *x, struct gdax_inode *gi, u64 size)
{
	struct fuse_removemapping_one scratch[GDAX_SCRATCH];
	u64 rs = vqf_dax_range_size(&x->w);
	u64 start = (size + rs - 1) & ~(rs - 1);
	long ret;

	/* The range holding the new EOF stays: its tail past EOF is never
	 * read (reads stop at the size); whole ranges past it go.
	 */
	pthread_mutex_lock(&gi->l);
	ret = vqf_dax_inode_remove_range(&x->w, &gi->di, start,
					 VQF_DAX_MAX_FOFFSET, scratch,
					 GDAX_SCRATCH);
	pthread_mutex_unlock(&gi->l);
	return ret < 0 && ret != -EBUSY ? (int)ret : 0;
}

void gdax_stats(struct gdax *x, struct vqf_dax_stats *out)
{
	vqf_dax_stats_read(&x->w, out);
}
