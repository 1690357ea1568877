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
#include <sys/mman.h>

/* REMOVEMAPPING entries per request: FUSE_REMOVEMAPPING_MAX_ENTRY. */
#define GDAX_SCRATCH	VQF_REMOVEMAPPING_MAX

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
	pthread_rwlock_wrlock(&gi_of(di)->l);
}

static bool l_trylock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	(void)w;
	return !pthread_rwlock_trywrlock(&gi_of(di)->l);
}

static void l_unlock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	(void)w;
	pthread_rwlock_unlock(&gi_of(di)->l);
}

/*
 * igrab: the reclaimer pins the inode (under W) so that eviction, which
 * marks it not ready under W, waits for it to let go.
 */
static bool i_get(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	struct gdax_inode *gi = gi_of(di);

	(void)w;
	if (!gi->ready)
		return false;
	gi->busy++;
	return true;
}

static void i_put(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	struct gdax_inode *gi = gi_of(di);
	struct gdax *x = of(w);

	pthread_mutex_lock(&x->wlock);
	if (!--gi->busy)
		pthread_cond_broadcast(&x->idle_cond);
	pthread_mutex_unlock(&x->wlock);
}

static void mm_count(struct gdax *x, u64 *counter, u64 n)
{
	pthread_mutex_lock(&x->slock);
	*counter += n;
	pthread_mutex_unlock(&x->slock);
}

/* The entries of @v showing file bytes [@start, @end): [*k0, *k1]. */
static bool pte_span(const struct gdax_vma *v, u64 start, u64 end,
		     u32 shift, u32 *k0, u32 *k1)
{
	u64 first = start >> shift, last = (end - 1) >> shift;

	if (end <= start || last < v->first ||
	    first >= v->first + v->nptes)
		return false;
	*k0 = first > v->first ? (u32)(first - v->first) : 0;
	*k1 = last - v->first >= v->nptes ? v->nptes - 1 :
	      (u32)(last - v->first);
	return true;
}

/*
 * fuse_dax_break_layouts(): zap every entry of @gi's vmas showing file
 * bytes [@start, @end) and wait until no access pins one.  Called with
 * L(gi) exclusive, which keeps faults out; while waiting, L is dropped
 * (fuse_wait_dax_page: a pinning user may need L to finish) and the
 * entries are zapped again once it is back.
 */
static void zap_range(struct gdax *x, struct gdax_inode *gi, u64 start,
		      u64 end)
{
	u64 zapped = 0, waits = 0;
	struct gdax_vma *v;
	bool busy;
	u32 k;

	pthread_mutex_lock(&gi->pt);
	for (;;) {
		busy = false;
		for (v = gi->vmas; v; v = v->next) {
			u32 k0, k1;

			if (!pte_span(v, start, end, x->w.range_shift, &k0,
				      &k1))
				continue;
			for (k = k0; k <= k1; k++) {
				struct gdax_pte *p = &v->pte[k];

				if (p->addr) {
					p->addr = NULL;
					p->writable = false;
					zapped++;
				}
				if (p->pins)
					busy = true;
			}
		}
		for (k = 0; gi->rwc && k < x->rwc_n; k++) {
			struct gdax_pte *p = &gi->rwc[k].e;
			u64 r0 = gi->rwc[k].r0;

			if (r0 >= end || r0 + (1ULL << x->w.range_shift) <=
			    start)
				continue;
			if (p->addr) {
				p->addr = NULL;
				p->writable = false;
				zapped++;
			}
			if (p->pins)
				busy = true;
		}
		if (!busy)
			break;
		waits++;
		pthread_rwlock_unlock(&gi->l);
		gi->waiters++;
		pthread_cond_wait(&gi->unpinned, &gi->pt);
		gi->waiters--;
		pthread_mutex_unlock(&gi->pt);
		pthread_rwlock_wrlock(&gi->l);
		pthread_mutex_lock(&gi->pt);
	}
	pthread_mutex_unlock(&gi->pt);
	if (zapped)
		mm_count(x, &x->mm.zapped, zapped);
	if (waits)
		mm_count(x, &x->mm.pin_waits, waits);
}

static int release_users(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			 u64 foffset, u64 len)
{
	zap_range(of(w), gi_of(di), foffset, foffset + len);
	return 0;
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
	/*
	 * di NULL: a flush of stale ranges of inodes evicted (and maybe
	 * forgotten) since; the device's guard refuses a nodeid it no
	 * longer holds, the root it always does, and the device does not
	 * use a REMOVEMAPPING's nodeid otherwise.
	 */
	ret = vqf_dax_req_removemapping(&cl.req, 0,
					di ? di->nodeid : FUSE_ROOT_ID, in,
					one);
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
	.release_users = release_users,
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

/* cfg.stale_max for @nr ranges and the caller's @stale (gdax_init()). */
static u32 gdax_stale_max(u32 nr, int stale)
{
	u32 n = nr / GDAX_STALE_DIV;

	if (stale < 0)
		return 0;
	if (stale)
		return (u32)stale < nr ? (u32)stale : nr;
	if (n > VQF_REMOVEMAPPING_MAX)
		n = VQF_REMOVEMAPPING_MAX;
	return n ? n : 1;
}

int gdax_init(struct gdax *x, void *base, u64 len, u64 range_size,
	      int stale,
	      int (*call)(void *ctx, struct vqf_gdrv_call *cl),
	      int (*isize)(void *ctx, struct gdax_inode *gi, u64 fh,
			   u64 *size),
	      void *ctx)
{
	struct vqf_dax_config cfg = { .window_size = len,
				      .range_size = range_size };
	u32 nr = vqf_dax_nr_ranges(len, range_size ? range_size :
				   1ULL << VQF_DAX_RANGE_SHIFT_DEFAULT);
	int ret;

	memset(x, 0, sizeof(*x));
	if (!base || !nr)
		return -EINVAL;
	cfg.stale_max = gdax_stale_max(nr, stale);
	x->ranges = calloc(1, vqf_dax_ranges_size(nr));
	if (!x->ranges)
		return -ENOMEM;
	x->base = base;
	x->len = len;
	x->call = call;
	x->isize = isize;
	x->ctx = ctx;
	for (x->rwc_n = 1; x->rwc_n < nr && x->rwc_n < GDAX_RWC;)
		x->rwc_n <<= 1;
	pthread_mutex_init(&x->wlock, NULL);
	pthread_cond_init(&x->free_cond, NULL);
	pthread_cond_init(&x->idle_cond, NULL);
	pthread_mutex_init(&x->klock, NULL);
	pthread_cond_init(&x->kcond, NULL);
	pthread_mutex_init(&x->slock, NULL);
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

int gdax_set_auto(struct gdax *x, const struct vqf_dax_policy *p)
{
	int ret = p ? vqf_dax_window_set_policy(&x->w, p) : 0;

	if (!ret)
		x->auto_on = true;
	return ret;
}

long gdax_flush_stale(struct gdax *x)
{
	struct fuse_removemapping_one *scratch;
	long ret;

	if (!x->ranges || !vqf_dax_nr_stale(&x->w))
		return 0;
	scratch = malloc(GDAX_SCRATCH * sizeof(*scratch));
	if (scratch) {
		ret = vqf_dax_flush_stale(&x->w, scratch, GDAX_SCRATCH);
	} else {
		struct fuse_removemapping_one one;

		ret = vqf_dax_flush_stale(&x->w, &one, 1);
	}
	free(scratch);
	return ret;
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
	pthread_cond_destroy(&x->idle_cond);
	pthread_mutex_destroy(&x->klock);
	pthread_cond_destroy(&x->kcond);
	pthread_mutex_destroy(&x->slock);
	free(x->ranges);
	x->ranges = NULL;
}

void gdax_inode_init(struct gdax_inode *gi, u64 nodeid)
{
	vqf_dax_inode_init(&gi->di, nodeid, ~0ULL);
	pthread_rwlock_init(&gi->m, NULL);
	pthread_rwlock_init(&gi->l, NULL);
	pthread_mutex_init(&gi->pt, NULL);
	pthread_cond_init(&gi->unpinned, NULL);
	gi->vmas = NULL;
	gi->rwc = NULL;
	gi->waiters = 0;
	gi->busy = 0;
	gi->ready = true;
}

long gdax_inode_evict(struct gdax *x, struct gdax_inode *gi)
{
	struct fuse_removemapping_one *scratch;
	long ret;

	if (!gi->ready)
		return 0;
	/*
	 * Under W, where the reclaimer's inode_get() looks at it; then wait
	 * for a reclaimer that pinned it before (evict_inode waits for
	 * igrab's users the same way: the inode is I_FREEING).
	 */
	pthread_mutex_lock(&x->wlock);
	gi->ready = false;
	while (gi->busy)
		pthread_cond_wait(&x->idle_cond, &x->wlock);
	pthread_mutex_unlock(&x->wlock);
	scratch = malloc(GDAX_SCRATCH * sizeof(*scratch));
	if (scratch) {
		ret = vqf_dax_inode_evict(&x->w, &gi->di, scratch,
					  GDAX_SCRATCH);
	} else {
		struct fuse_removemapping_one one;

		ret = vqf_dax_inode_evict(&x->w, &gi->di, &one, 1);
	}
	free(scratch);
	free(gi->rwc);
	gi->rwc = NULL;
	pthread_rwlock_destroy(&gi->m);
	pthread_rwlock_destroy(&gi->l);
	pthread_mutex_destroy(&gi->pt);
	pthread_cond_destroy(&gi->unpinned);
	mm_count(x, &x->mm.evicted, 1);
	return ret;
}

static bool pte_usable(const struct gdax_pte *p, u64 pos, bool write)
{
	return p->addr && pos < p->limit && (!write || p->writable);
}

static void pte_unpin(struct gdax_inode *gi, struct gdax_pte *p)
{
	pthread_mutex_lock(&gi->pt);
	if (!--p->pins && gi->waiters)
		pthread_cond_broadcast(&gi->unpinned);
	pthread_mutex_unlock(&gi->pt);
}

/*
 * Remember the mapping @map of the range at file offset @r0 in the
 * read/write cache.  The caller holds the range reference, and L shared
 * keeps reclaim's last zap and its teardown on one side of the install:
 * either the entry is zapped, or the teardown already saw the reference.
 * L busy (a reclaim or truncation running): not cached this time.
 */
static void rwc_install(struct gdax *x, struct gdax_inode *gi, u64 r0,
			const struct vqf_dax_map *map, u64 pos)
{
	u32 k = (u32)(r0 >> x->w.range_shift) & (x->rwc_n - 1);
	struct gdax_pte *p;

	if (pthread_rwlock_tryrdlock(&gi->l))
		return;
	pthread_mutex_lock(&gi->pt);
	if (!gi->rwc)
		gi->rwc = calloc(x->rwc_n, sizeof(*gi->rwc));
	p = gi->rwc ? &gi->rwc[k].e : NULL;
	if (p && !p->pins) {
		u8 *addr = x->base + map->moffset - (pos - r0);

		/*
		 * A new entry: its first hit goes the full way, so that lib
		 * sees the range used again (dax=auto's thrash signal).
		 */
		if (p->addr != addr || gi->rwc[k].r0 != r0)
			gi->rwc[k].hits = GDAX_RWC_LRU - 1;
		p->addr = addr;
		p->limit = r0 + vqf_dax_range_size(&x->w);
		p->writable = map->writable;
		gi->rwc[k].r0 = r0;
		gi->rwc[k].range = map->range;
	}
	pthread_mutex_unlock(&gi->pt);
	pthread_rwlock_unlock(&gi->l);
}

/*
 * A cached entry for file byte @pos, pinned, and in *@win the byte's
 * window address (read under pt: a zap clears the entry's address while
 * it stays pinned); NULL if none.
 */
static struct gdax_pte *rwc_get(struct gdax *x, struct gdax_inode *gi,
				u64 pos, bool write, u8 **win)
{
	u64 r0 = pos & ~(vqf_dax_range_size(&x->w) - 1);
	u32 k = (u32)(r0 >> x->w.range_shift) & (x->rwc_n - 1);
	struct gdax_pte *p = NULL;

	pthread_mutex_lock(&gi->pt);
	if (gi->rwc && gi->rwc[k].r0 == r0 &&
	    pte_usable(&gi->rwc[k].e, pos, write) &&
	    ++gi->rwc[k].hits % GDAX_RWC_LRU) {
		p = &gi->rwc[k].e;
		p->pins++;
		*win = p->addr + (pos - r0);
		vqf_dax_range_touch(gi->rwc[k].range);
	}
	pthread_mutex_unlock(&gi->pt);
	return p;
}

/* The policy's clock: one tick per question asked. */
static u64 gdax_tick(struct gdax *x)
{
	u64 now;

	pthread_mutex_lock(&x->slock);
	now = x->clock++;
	pthread_mutex_unlock(&x->slock);
	return now;
}

ssize_t gdax_copy(struct gdax *x, struct gdax_inode *gi, u64 fh, void *data,
		  size_t n, u64 off, bool write, u64 size, bool *fuse)
{
	u64 rs = vqf_dax_range_size(&x->w);
	u8 *buf = data, *win;
	size_t done = 0;

	*fuse = false;
	tls_fh = fh;
	while (done < n) {
		u64 pos = off + done, r0 = pos & ~(rs - 1);
		struct vqf_dax_map map;
		struct gdax_pte *p;
		size_t take;
		int ret;

		take = n - done;
		if (take > r0 + rs - pos)
			take = (size_t)(r0 + rs - pos);
		p = rwc_get(x, gi, pos, write, &win);
		if (p) {
			/* a hit: mapped until unpinned (a zap waits) */
			if (write)
				memcpy(win, buf + done, take);
			else
				memcpy(buf + done, win, take);
			pte_unpin(gi, p);
			done += take;
			continue;
		}
		if (x->auto_on) {
			struct vqf_dax_hint h = {
				.size = size, .now = gdax_tick(x), .len = take,
			};

			ret = vqf_dax_map_begin_auto(&x->w, &gi->di, pos,
						     write ? VQF_DAX_MAP_WRITE :
						     0, &h, &map);
			if (ret == VQF_DAX_USE_FUSE) {
				*fuse = true;
				return (ssize_t)done;
			}
		} else {
			ret = vqf_dax_map_begin(&x->w, &gi->di, pos,
						write ? VQF_DAX_MAP_WRITE : 0,
						&map);
		}
		if (ret)
			return done ? (ssize_t)done : ret;
		win = x->base + map.moffset;
		if (write)
			memcpy(win, buf + done, take);
		else
			memcpy(buf + done, win, take);
		rwc_install(x, gi, r0, &map, pos);
		vqf_dax_map_end(&x->w, &map);
		done += take;
	}
	return (ssize_t)done;
}

int gdax_truncate(struct gdax *x, struct gdax_inode *gi, u64 size)
{
	struct fuse_removemapping_one scratch[64];
	u64 rs = vqf_dax_range_size(&x->w);
	u64 start = (size + rs - 1) & ~(rs - 1);
	long ret;

	/*
	 * fuse_do_setattr breaks every layout of a truncated DAX file: no
	 * access through a mapping survives, the next one faults against
	 * the new size.  The range holding the new EOF stays (reads stop at
	 * the size); whole ranges past it go.
	 */
	pthread_rwlock_wrlock(&gi->l);
	zap_range(x, gi, 0, ~0ULL);
	ret = vqf_dax_inode_remove_range(&x->w, &gi->di, start,
					 VQF_DAX_MAX_FOFFSET, scratch,
					 sizeof(scratch) / sizeof(scratch[0]));
	pthread_rwlock_unlock(&gi->l);
	return ret < 0 && ret != -EBUSY ? (int)ret : 0;
}

/* ---- mmap ---- */

int gdax_mmap(struct gdax *x, struct gdax_inode *gi, u64 fh, u64 off,
	      u64 len, int prot, void *owner, struct gdax_vma **out)
{
	u32 shift = x->w.range_shift;
	struct gdax_vma *v;
	u64 nptes;

	if (!len || off % PAGE_SIZE || off > VQF_DAX_MAX_FOFFSET ||
	    len > VQF_DAX_MAX_FOFFSET - off ||
	    (prot & ~(PROT_READ | PROT_WRITE)))
		return -EINVAL;
	nptes = ((off + len - 1) >> shift) - (off >> shift) + 1;
	if (nptes > (1u << 24))
		return -ENOMEM;
	v = calloc(1, sizeof(*v) + nptes * sizeof(v->pte[0]));
	if (!v)
		return -ENOMEM;
	v->gi = gi;
	v->fh = fh;
	v->start = off;
	/* a vma is whole pages */
	v->len = (len + PAGE_SIZE - 1) & ~(u64)(PAGE_SIZE - 1);
	v->first = off >> shift;
	v->nptes = (u32)nptes;
	v->prot = prot;
	v->owner = owner;
	pthread_mutex_lock(&gi->pt);
	v->next = gi->vmas;
	gi->vmas = v;
	pthread_mutex_unlock(&gi->pt);
	mm_count(x, &x->mm.maps, 1);
	*out = v;
	return 0;
}

int gdax_munmap(struct gdax *x, struct gdax_vma *v)
{
	struct gdax_inode *gi = v->gi;
	struct gdax_vma **pp;
	u32 k;

	pthread_mutex_lock(&gi->pt);
	for (k = 0; k < v->nptes; k++) {
		if (v->pte[k].pins) {
			pthread_mutex_unlock(&gi->pt);
			return -EBUSY;
		}
	}
	for (pp = &gi->vmas; *pp && *pp != v; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = v->next;
	pthread_mutex_unlock(&gi->pt);
	free(v);
	mm_count(x, &x->mm.unmaps, 1);
	return 0;
}

struct gdax_vma *gdax_first_vma(struct gdax_inode *gi)
{
	struct gdax_vma *v;

	if (!gi->ready)
		return NULL;
	pthread_mutex_lock(&gi->pt);
	v = gi->vmas;
	pthread_mutex_unlock(&gi->pt);
	return v;
}

/* Pin @p (pt held) and point @ref at file byte @pos. */
static void pte_pin(struct gdax *x, struct gdax_pte *p, u64 pos,
		    struct gdax_ref *ref)
{
	u64 rs = vqf_dax_range_size(&x->w);

	p->pins++;
	ref->pte = p;
	ref->addr = p->addr + (pos & (rs - 1));
	ref->len = (size_t)(p->limit - pos);
}

/*
 * __fuse_dax_fault(): L shared keeps reclaim off the inode while the
 * entry is installed; the range reference lives only from map_begin to
 * the install (iomap_begin .. iomap_end).  No free range: L dropped,
 * wait, retry.
 */
static int gdax_fault(struct gdax *x, struct gdax_vma *v, struct gdax_pte *p,
		      u64 pos, bool write, struct gdax_ref *ref)
{
	struct gdax_inode *gi = v->gi;
	u64 rs = vqf_dax_range_size(&x->w), r0 = pos & ~(rs - 1);
	u64 size, eof_page, limit;
	struct vqf_dax_map map;
	int ret;

	mm_count(x, &x->mm.faults, 1);
	for (;;) {
		pthread_rwlock_rdlock(&gi->l);
		ret = x->isize(x->ctx, gi, v->fh, &size);
		if (ret)
			break;
		eof_page = (size + PAGE_SIZE - 1) & ~(u64)(PAGE_SIZE - 1);
		if (pos >= eof_page) {
			ret = -ENXIO;
			break;
		}
		tls_fh = v->fh;
		ret = vqf_dax_map_begin(&x->w, &gi->di, pos,
					VQF_DAX_MAP_NOWAIT |
					(write ? VQF_DAX_MAP_WRITE : 0), &map);
		if (ret != -EAGAIN)
			break;
		pthread_rwlock_unlock(&gi->l);
		mm_count(x, &x->mm.fault_waits, 1);
		ret = vqf_dax_wait_free(&x->w);
		if (ret)
			return ret;
	}
	if (ret) {
		pthread_rwlock_unlock(&gi->l);
		return ret;
	}
	limit = r0 + rs;
	if (limit > v->start + v->len)
		limit = v->start + v->len;
	if (limit > eof_page)
		limit = eof_page;
	pthread_mutex_lock(&gi->pt);
	if (p->addr != x->base + map.moffset - (pos - r0))
		p->writable = false;
	p->addr = x->base + map.moffset - (pos - r0);
	p->limit = limit;
	p->writable |= write;
	pte_pin(x, p, pos, ref);
	pthread_mutex_unlock(&gi->pt);
	vqf_dax_map_end(&x->w, &map);
	pthread_rwlock_unlock(&gi->l);
	return 0;
}

int gdax_get(struct gdax *x, struct gdax_vma *v, u64 off, bool write,
	     struct gdax_ref *ref)
{
	struct gdax_inode *gi = v->gi;
	struct gdax_pte *p;
	u64 pos;

	ref->pte = NULL;
	if (off >= v->len)
		return -EFAULT;
	if (!(v->prot & (write ? PROT_WRITE : PROT_READ)))
		return -EACCES;
	pos = v->start + off;
	p = &v->pte[(pos >> x->w.range_shift) - v->first];
	pthread_mutex_lock(&gi->pt);
	if (pte_usable(p, pos, write)) {
		pte_pin(x, p, pos, ref);
		pthread_mutex_unlock(&gi->pt);
		return 0;
	}
	pthread_mutex_unlock(&gi->pt);
	return gdax_fault(x, v, p, pos, write, ref);
}

void gdax_put(struct gdax *x, struct gdax_vma *v, struct gdax_ref *ref)
{
	struct gdax_inode *gi = v->gi;

	(void)x;
	if (!ref->pte)
		return;
	pte_unpin(gi, ref->pte);
	ref->pte = NULL;
}

void gdax_stats(struct gdax *x, struct vqf_dax_stats *out)
{
	vqf_dax_stats_read(&x->w, out);
}

void gdax_mm_stats(struct gdax *x, struct vqf_gcli_mm_stats *out)
{
	pthread_mutex_lock(&x->slock);
	*out = x->mm;
	pthread_mutex_unlock(&x->slock);
}
