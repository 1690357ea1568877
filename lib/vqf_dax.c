// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_dax.c - DAX window range allocator and reclaim (see vqf_dax.h for
 * the states and the locking protocol; the comments here name which rule
 * a step relies on).
 */
#include "vqf_dax.h"

#define DAX_U32_MAX	0xffffffffU
#define DAX_U16_MAX	0xffffU
#define DAX_U64_MAX	(~0ULL)

/* ---- private list ---- */

static void dl_init(struct vqf_dax_link *h)
{
	h->next = h;
	h->prev = h;
}

static bool dl_empty(const struct vqf_dax_link *h)
{
	return h->next == h;
}

static void dl_del(struct vqf_dax_link *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->next = e;
	e->prev = e;
}

static void dl_add_tail(struct vqf_dax_link *e, struct vqf_dax_link *h)
{
	e->prev = h->prev;
	e->next = h;
	h->prev->next = e;
	h->prev = e;
}

static void dl_add_head(struct vqf_dax_link *e, struct vqf_dax_link *h)
{
	dl_add_tail(e, h->next);
}

static void dl_move_tail(struct vqf_dax_link *e, struct vqf_dax_link *h)
{
	dl_del(e);
	dl_add_tail(e, h);
}

static struct vqf_dax_range *link_range(struct vqf_dax_link *l)
{
	return (struct vqf_dax_range *)((char *)l -
					offsetof(struct vqf_dax_range, link));
}

static struct vqf_dax_range *itn_range(struct vqf_itree_node *n)
{
	return n ? vqf_itree_entry(n, struct vqf_dax_range, itn) : NULL;
}

/* ---- lock shorthands ---- */

static void w_lock(struct vqf_dax_window *w)
{
	w->ops->window_lock(w);
}

static void w_unlock(struct vqf_dax_window *w)
{
	w->ops->window_unlock(w);
}

static void m_lock(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		   bool excl)
{
	w->ops->map_lock(w, di, excl);
}

static void m_unlock(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		     bool excl)
{
	w->ops->map_unlock(w, di, excl);
}

/* Bump a counter of w->stats under W. */
static void dax_count(struct vqf_dax_window *w, u64 *counter)
{
	w_lock(w);
	(*counter)++;
	w_unlock(w);
}

/* ---- request in-args ---- */

void vqf_dax_fill_setupmapping(struct fuse_setupmapping_in *in, u64 fh,
			       u64 foffset, u64 len, u64 moffset,
			       bool writable)
{
	memset(in, 0, sizeof(*in));
	in->fh = fh;
	in->foffset = foffset;
	in->len = len;
	/* A writable mapping must be readable too: mmap has no write-only. */
	in->flags = FUSE_SETUPMAPPING_FLAG_READ;
	if (writable)
		in->flags |= FUSE_SETUPMAPPING_FLAG_WRITE;
	in->moffset = moffset;
}

void vqf_dax_fill_removemapping_in(struct fuse_removemapping_in *in,
				   u32 count)
{
	memset(in, 0, sizeof(*in));
	in->count = count;
}

void vqf_dax_fill_removemapping_one(struct fuse_removemapping_one *one,
				    u64 moffset, u64 len)
{
	memset(one, 0, sizeof(*one));
	one->moffset = moffset;
	one->len = len;
}

int vqf_dax_req_setupmapping(struct vqf_req *req, u64 unique, u64 nodeid,
			     const struct fuse_setupmapping_in *in)
{
	int ret = vqf_req_init(req, FUSE_SETUPMAPPING, nodeid, unique);

	return ret ? ret : vqf_req_add_in(req, in, sizeof(*in));
}

int vqf_dax_req_removemapping(struct vqf_req *req, u64 unique, u64 nodeid,
			      const struct fuse_removemapping_in *in,
			      const struct fuse_removemapping_one *one)
{
	int ret;

	if (!in->count)
		return -EINVAL;
	if (in->count > VQF_REMOVEMAPPING_MAX)
		return -E2BIG;
	ret = vqf_req_init(req, FUSE_REMOVEMAPPING, nodeid, unique);
	if (!ret)
		ret = vqf_req_add_in(req, in, sizeof(*in));
	if (!ret)
		ret = vqf_req_add_in(req, one, in->count * sizeof(*one));
	return ret;
}

/* ---- setup ---- */

u32 vqf_dax_nr_ranges(u64 window_size, u64 range_size)
{
	u64 n;

	if (!VQF_IS_POW2(range_size) || range_size < PAGE_SIZE)
		return 0;
	n = window_size / range_size;
	if (n > DAX_U32_MAX)
		return 0;
	return (u32)n;
}

static bool dax_ops_complete(const struct vqf_dax_ops *o)
{
	return o && o->window_lock && o->window_unlock && o->map_lock &&
	       o->map_unlock && o->inode_lock && o->inode_trylock &&
	       o->inode_unlock && o->inode_get && o->inode_put &&
	       o->kick_reclaim && o->wake_free && o->wait_free &&
	       o->send_setupmapping && o->send_removemapping;
}

int vqf_dax_window_init(struct vqf_dax_window *w,
			const struct vqf_dax_config *cfg,
			struct vqf_dax_range *ranges, u32 nr_alloc,
			const struct vqf_dax_ops *ops, void *priv)
{
	u64 rsize = cfg->range_size ? cfg->range_size :
		    1ULL << VQF_DAX_RANGE_SHIFT_DEFAULT;
	u32 pct = cfg->reclaim_pct ? cfg->reclaim_pct :
		  VQF_DAX_RECLAIM_PCT_DEFAULT;
	u64 n, thr;
	u32 i;

	if (!dax_ops_complete(ops) || pct > 100 || !VQF_IS_POW2(rsize) ||
	    rsize < PAGE_SIZE)
		return -EINVAL;
	n = vqf_dax_nr_ranges(cfg->window_size, rsize);
	if (!n)
		return -ENOSPC;
	if (nr_alloc < n)
		return -ENOBUFS;

	memset(w, 0, sizeof(*w));
	w->ops = ops;
	w->priv = priv;
	w->ranges = ranges;
	w->nr_ranges = (u32)n;
	w->range_shift = (u32)__builtin_ctzll(rsize);
	thr = cfg->reclaim_ranges ? cfg->reclaim_ranges : n * pct / 100;
	if (thr > n)
		thr = n;
	w->free_threshold = thr ? (u32)thr : 1;
	w->reclaim_chunk = cfg->reclaim_chunk ? cfg->reclaim_chunk :
			   VQF_DAX_RECLAIM_CHUNK_DEFAULT;
	w->direct_retries = cfg->direct_retries ? cfg->direct_retries :
			    VQF_DAX_DIRECT_RETRIES_DEFAULT;
	w->stale_max = cfg->stale_max < n ? cfg->stale_max : (u32)n;
	vqf_dax_policy_default(&w->policy, rsize);
	dl_init(&w->free_list);
	dl_init(&w->stale_list);
	dl_init(&w->busy_list);
	for (i = 0; i < n; i++) {
		struct vqf_dax_range *r = &ranges[i];

		memset(r, 0, sizeof(*r));
		r->moffset = (u64)i << w->range_shift;
		r->state = VQF_DAX_FREE;
		dl_add_tail(&r->link, &w->free_list);
	}
	w->nr_free = (u32)n;
	return 0;
}

void vqf_dax_inode_init(struct vqf_dax_inode *di, u64 nodeid, u64 fh)
{
	vqf_itree_init(&di->tree);
	di->nodeid = nodeid;
	di->fh = fh;
	memset(&di->pol, 0, sizeof(di->pol));
}

void vqf_dax_stats_read(struct vqf_dax_window *w, struct vqf_dax_stats *out)
{
	w_lock(w);
	*out = w->stats;
	w_unlock(w);
}

/* ---- dax=auto policy (see DAX POLICY in vqf_dax.h) ---- */

void vqf_dax_policy_default(struct vqf_dax_policy *p, u64 range_size)
{
	memset(p, 0, sizeof(*p));
	p->small_size = range_size / VQF_DAX_POL_SMALL_DIV_DEFAULT;
	p->small_uses = VQF_DAX_POL_SMALL_USES_DEFAULT;
	p->used_bytes = range_size / VQF_DAX_POL_USED_DIV_DEFAULT;
	p->pay_uses = VQF_DAX_POL_PAY_USES_DEFAULT;
	p->thrash_min = VQF_DAX_POL_THRASH_MIN_DEFAULT;
	p->thrash_pct = VQF_DAX_POL_THRASH_PCT_DEFAULT;
	p->sample = VQF_DAX_POL_SAMPLE_DEFAULT;
	p->backoff = VQF_DAX_POL_BACKOFF_DEFAULT;
	p->backoff_shift_max = VQF_DAX_POL_SHIFT_MAX_DEFAULT;
	p->range_size = range_size;
}

int vqf_dax_policy_check(const struct vqf_dax_policy *p)
{
	if (p->thrash_pct > 100 || !p->thrash_min || !p->sample ||
	    p->backoff_shift_max > 32)
		return -EINVAL;
	return 0;
}

int vqf_dax_window_set_policy(struct vqf_dax_window *w,
			      const struct vqf_dax_policy *p)
{
	if (vqf_dax_policy_check(p))
		return -EINVAL;
	w_lock(w);
	w->policy = *p;
	w->policy.range_size = vqf_dax_range_size(w);
	w_unlock(w);
	return 0;
}

void vqf_dax_inode_policy(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			  struct vqf_dax_pstate *out)
{
	w_lock(w);
	*out = di->pol;
	w_unlock(w);
}

/*
 * Enough of the recent setups were reclaimed unused (at least @min).
 * 64-bit products: the counts saturate at U32_MAX, percentages <= 100.
 */
static bool dax_pol_thrashing(const struct vqf_dax_policy *p,
			      const struct vqf_dax_pstate *s, u32 min)
{
	return p->thrash_pct && s->wasted >= min &&
	       (u64)s->wasted * 100 >= (u64)p->thrash_pct * s->setups;
}

/* thrash_min, or the ranges a file of @size bytes has if fewer. */
static u32 dax_pol_min(const struct vqf_dax_policy *p, u64 size)
{
	u64 rs = p->range_size;
	u32 min = p->thrash_min;

	if (!rs || !VQF_IS_POW2(rs) || !min || rs > DAX_U64_MAX / min ||
	    size >= (u64)min * rs)
		return min;
	return size ? (u32)((size - 1) >> __builtin_ctzll(rs)) + 1 : 1;
}

/* A SETUPMAPPING for the inode went through: its sample moves on. */
static void dax_pol_setup_locked(const struct vqf_dax_policy *p,
				 struct vqf_dax_pstate *s)
{
	if (s->setups < DAX_U32_MAX)
		s->setups++;
	if (s->setups < p->sample)
		return;
	/* a sample that ended without thrash earns back one level */
	if (!dax_pol_thrashing(p, s, p->thrash_min) && s->level)
		s->level--;
	s->setups /= 2;
	s->wasted /= 2;
}

static u64 dax_pol_backoff(const struct vqf_dax_policy *p, u8 level, u64 now)
{
	u32 shift = level < p->backoff_shift_max ? level :
		    p->backoff_shift_max;
	u64 len = p->backoff;

	if (shift >= 64 || len > (DAX_U64_MAX >> shift))
		return DAX_U64_MAX;
	len <<= shift;
	return len > DAX_U64_MAX - now ? DAX_U64_MAX : now + len;
}

/*
 * Still backing off at @now; if the backoff is over, end it with a fresh
 * sample (what was wasted meanwhile was mapped before it began).
 */
static bool dax_pol_backing(struct vqf_dax_pstate *s, u64 now)
{
	if (!s->backed)
		return false;
	if (now < s->until)
		return true;
	s->backed = false;
	s->setups = 0;
	s->wasted = 0;
	return false;
}

/* Thrash found at @now: back off, longer each time in a row. */
static void dax_pol_arm(const struct vqf_dax_policy *p,
			struct vqf_dax_pstate *s, u64 now)
{
	s->until = dax_pol_backoff(p, s->level, now);
	s->backed = true;
	if (s->level < 0xff)
		s->level++;
	s->setups = 0;
	s->wasted = 0;
}

enum vqf_dax_why vqf_dax_policy_decide(const struct vqf_dax_policy *p,
				       const struct vqf_dax_pstate *crowd,
				       const struct vqf_dax_pstate *cur,
				       const struct vqf_dax_hint *h,
				       struct vqf_dax_pstate *crowd_next,
				       struct vqf_dax_pstate *next)
{
	struct vqf_dax_pstate s = *cur, g = *crowd;
	enum vqf_dax_why why = VQF_DAX_WHY_WINDOW;

	if (s.uses < DAX_U32_MAX)
		s.uses++;
	s.small = p->small_size && h->size < p->small_size;
	if (h->flags & VQF_DAX_HINT_MMAP) {
		why = VQF_DAX_WHY_MMAP;
	} else if (dax_pol_backing(&s, h->now)) {
		why = VQF_DAX_WHY_BACKOFF;
	} else if (dax_pol_thrashing(p, &s, dax_pol_min(p, h->size))) {
		dax_pol_arm(p, &s, h->now);
		why = VQF_DAX_WHY_THRASH;
	} else if (s.small) {
		if (dax_pol_backing(&g, h->now)) {
			why = VQF_DAX_WHY_CROWD;
		} else if (dax_pol_thrashing(p, &g, p->thrash_min)) {
			dax_pol_arm(p, &g, h->now);
			why = VQF_DAX_WHY_CROWD;
		} else if (cur->uses < p->small_uses) {
			why = VQF_DAX_WHY_SMALL;
		}
	}
	*crowd_next = g;
	*next = s;
	return why;
}

/* ---- state transitions, all under W ---- */

static void dax_kick_if_low_locked(struct vqf_dax_window *w,
				   unsigned int delay_ms)
{
	if (w->nr_free < w->free_threshold)
		w->ops->kick_reclaim(w, delay_ms);
}

/*
 * FREE -> DETACHED; NULL if none.  Falling low kicks the worker.  The
 * oldest stale range first (DEFERRED TEARDOWN): its SETUPMAPPING replaces
 * a host mapping that would otherwise wait for a REMOVEMAPPING; it stays
 * stale (and counted) until that SETUPMAPPING went through.
 */
static struct vqf_dax_range *dax_take_free_locked(struct vqf_dax_window *w)
{
	struct vqf_dax_link *head = &w->free_list;
	struct vqf_dax_range *r = NULL;

	if (!dl_empty(&w->stale_list)) {
		head = &w->stale_list;
		w->nr_stale_free--;
	}
	if (!dl_empty(head)) {
		r = link_range(head->next);
		dl_del(&r->link);
		r->state = VQF_DAX_DETACHED;
		WRITE_ONCE(w->nr_free, w->nr_free - 1);
	}
	dax_kick_if_low_locked(w, 0);
	return r;
}

/*
 * DETACHED -> FREE, waking a waiter.  A stale range (a SETUPMAPPING meant
 * to replace it failed or lost a race) goes back to the head of the stale
 * list, where it was the oldest.
 */
static void dax_put_free_locked(struct vqf_dax_window *w,
				struct vqf_dax_range *r)
{
	r->inode = NULL;
	r->writable = false;
	r->uses = 0;
	r->refcnt = 0;
	r->state = VQF_DAX_FREE;
	if (r->stale) {
		dl_add_head(&r->link, &w->stale_list);
		w->nr_stale_free++;
	} else {
		dl_add_tail(&r->link, &w->free_list);
	}
	WRITE_ONCE(w->nr_free, w->nr_free + 1);
	w->ops->wake_free(w);
}

/* DETACHED -> BUSY owned by @di with one reference; M(di) exclusive. */
static void dax_make_busy_locked(struct vqf_dax_window *w,
				 struct vqf_dax_range *r,
				 struct vqf_dax_inode *di)
{
	r->inode = di;
	r->refcnt = 1;
	r->state = VQF_DAX_BUSY;
	dl_add_tail(&r->link, &w->busy_list);
	w->nr_busy++;
	/* the SETUPMAPPING just made replaced the stale host mapping */
	if (r->stale) {
		r->stale = false;
		WRITE_ONCE(w->nr_stale, w->nr_stale - 1);
		w->stats.stale_reused++;
	}
	dax_pol_setup_locked(&w->policy, &di->pol);
	if (di->pol.small)
		dax_pol_setup_locked(&w->policy, &w->crowd);
}

/* BUSY -> DETACHED; M(owner) exclusive (or eviction). */
static void dax_detach_busy_locked(struct vqf_dax_window *w,
				   struct vqf_dax_range *r)
{
	dl_del(&r->link);
	w->nr_busy--;
	r->state = VQF_DAX_DETACHED;
	r->inode = NULL;
}

/* ---- references ---- */

void vqf_dax_range_touch(struct vqf_dax_range *range)
{
	/* unordered: a hint to reclaim and to the policy, nothing more */
	vqf_stat_inc(&range->touches);
}

/*
 * Count @r's touches since W last looked into its uses.  Returns true if
 * there were any: @r was used since, without lib seeing it.
 */
static bool dax_fold_touches_locked(struct vqf_dax_range *r)
{
	u64 t = READ_ONCE(r->touches), d = t - r->touches_seen;

	r->touches_seen = t;
	if (!d)
		return false;
	r->uses = d >= (u64)(DAX_U16_MAX - r->uses) ? DAX_U16_MAX :
		  (u16)(r->uses + d);
	return true;
}

/*
 * Reclaim's second chance: @r was used behind lib's back since last
 * looked at, so it goes to the busy list's tail, where a reference would
 * have put it, and the walk passes it over.
 */
static bool dax_second_chance_locked(struct vqf_dax_window *w,
				     struct vqf_dax_range *r, bool *rotated)
{
	if (!dax_fold_touches_locked(r))
		return false;
	w->stats.reclaim_touched++;
	dl_move_tail(&r->link, &w->busy_list);
	*rotated = true;
	return true;
}

/*
 * A reclaim walk's step to @next: past the end, it starts over if a
 * range was rotated (met again, untouched unless used meanwhile).  The
 * walks are bounded by a count all the same.
 */
static struct vqf_dax_link *dax_walk_on(struct vqf_dax_window *w,
					struct vqf_dax_link *next,
					bool *rotated)
{
	if (next != &w->busy_list || !*rotated)
		return next;
	*rotated = false;
	return next->next;
}

/*
 * @r served enough uses to pay for its mapping (DAX POLICY).  Touches
 * are folded in again: one may have come since the walk that chose @r.
 */
static bool dax_paid_locked(struct vqf_dax_window *w,
			    struct vqf_dax_range *r)
{
	u32 pay = w->policy.pay_uses ? w->policy.pay_uses : 1;

	dax_fold_touches_locked(r);
	return r->uses >= VQF_MIN(pay, DAX_U16_MAX);
}

/*
 * Take a reference on BUSY @r and make it most recently used.  M(owner)
 * held (shared suffices): that is what makes an M-exclusive reclaimer's
 * refcnt == 0 final.
 */
static int dax_ref(struct vqf_dax_window *w, struct vqf_dax_range *r,
		   bool hit)
{
	w_lock(w);
	if (r->refcnt == DAX_U32_MAX) {
		w->stats.ref_overflow++;
		w_unlock(w);
		return -EOVERFLOW;
	}
	r->refcnt++;
	/* every reference after the one of its setup is a use */
	if (r->uses < DAX_U16_MAX)
		r->uses++;
	dl_move_tail(&r->link, &w->busy_list);
	if (hit)
		w->stats.hits++;
	w_unlock(w);
	return 0;
}

static void dax_unref(struct vqf_dax_window *w, struct vqf_dax_range *r)
{
	w_lock(w);
	if (!VQF_WARN_ON(!r->refcnt)) {
		r->refcnt--;
		/* the worker may have skipped this range while it was used */
		if (!r->refcnt)
			dax_kick_if_low_locked(w, 0);
	}
	w_unlock(w);
}

static void dax_fill_map(const struct vqf_dax_window *w,
			 const struct vqf_dax_range *r, u64 pos,
			 struct vqf_dax_map *map)
{
	u64 off = pos - r->itn.start;

	map->range = (struct vqf_dax_range *)r;
	map->moffset = r->moffset + off;
	map->len = vqf_dax_range_size(w) - off;
	map->writable = r->writable;
}

void vqf_dax_map_end(struct vqf_dax_window *w, struct vqf_dax_map *map)
{
	struct vqf_dax_range *r = map->range;

	if (!r)
		return;
	map->range = NULL;
	dax_unref(w, r);
}

/* ---- mapping requests ---- */

/* M(di) held. */
static struct vqf_dax_range *dax_lookup(struct vqf_dax_inode *di, u64 pos)
{
	return itn_range(vqf_itree_iter_first(&di->tree, pos, pos));
}

/* Make @r writable; M(di) exclusive and a reference held. */
static int dax_upgrade_locked(struct vqf_dax_window *w,
			      struct vqf_dax_inode *di,
			      struct vqf_dax_range *r)
{
	struct fuse_setupmapping_in in;
	int ret;

	if (r->writable)	/* someone upgraded while we had no M */
		return 0;
	vqf_dax_fill_setupmapping(&in, di->fh, r->itn.start,
				  vqf_dax_range_size(w), r->moffset, true);
	ret = w->ops->send_setupmapping(w, di, &in);
	dax_count(w, ret ? &w->stats.upgrade_errors : &w->stats.upgrades);
	if (!ret)
		r->writable = true;
	return ret;
}

/*
 * Tear down BUSY @r of @di: off the lists and out of the tree, then
 * REMOVEMAPPING.  M(di) exclusive.  Leaves @r DETACHED (the caller frees
 * it or reuses it) and bumps *@counter; -EBUSY if @r is referenced.
 */
static int dax_teardown_locked(struct vqf_dax_window *w,
			       struct vqf_dax_inode *di,
			       struct vqf_dax_range *r, u64 *counter)
{
	struct fuse_removemapping_in in;
	struct fuse_removemapping_one one;
	int ret;

	w_lock(w);
	if (r->refcnt) {
		w->stats.skipped_in_use++;
		w_unlock(w);
		return -EBUSY;
	}
	/* only reclaim comes here: pressure took a range before it paid */
	if (!dax_paid_locked(w, r)) {
		w->stats.wasted++;
		if (di->pol.wasted < DAX_U32_MAX)
			di->pol.wasted++;
		if (di->pol.small && w->crowd.wasted < DAX_U32_MAX)
			w->crowd.wasted++;
	}
	dax_detach_busy_locked(w, r);
	w_unlock(w);

	vqf_itree_remove(&di->tree, &r->itn);
	r->writable = false;
	/*
	 * The range is on no list, so nobody can set it up again before the
	 * device has seen this removal.  A failed removal is not fatal:
	 * the next SETUPMAPPING of this moffset replaces the stale mapping.
	 */
	vqf_dax_fill_removemapping_in(&in, 1);
	vqf_dax_fill_removemapping_one(&one, r->moffset,
				       vqf_dax_range_size(w));
	ret = w->ops->send_removemapping(w, di, &in, &one);

	w_lock(w);
	w->stats.remove_requests++;
	if (ret)
		w->stats.remove_errors++;
	(*counter)++;
	w_unlock(w);
	return 0;
}

/* Busy list entries direct reclaim looks at for the inode's LRU range. */
#define DAX_DIRECT_SCAN	256

/*
 * @di's least recently used unreferenced range, touched ones rotated to
 * the tail first (as the worker does); else, if the walk ends first,
 * its first unreferenced range in file order (upstream's choice); NULL
 * if none.  *@busy: @di has a referenced range.  W held, and M(di):
 * @di's ranges stay BUSY.  The walk is bounded (DAX_DIRECT_SCAN): W is
 * every mapper's lock, and an inode whose few ranges were all used
 * lately sits at the tail of a list that may hold thousands.
 */
static struct vqf_dax_range *dax_lru_of_locked(struct vqf_dax_window *w,
					       struct vqf_dax_inode *di,
					       bool *busy)
{
	u32 scan = VQF_MIN(2 * w->nr_busy, DAX_DIRECT_SCAN);
	struct vqf_dax_link *l, *next;
	struct vqf_itree_node *n;
	struct vqf_dax_range *r;
	bool rotated = false;

	*busy = false;
	for (l = w->busy_list.next; l != &w->busy_list && scan--;
	     l = dax_walk_on(w, next, &rotated)) {
		next = l->next;
		r = link_range(l);
		if (r->inode != di)
			continue;
		if (r->refcnt) {
			*busy = true;
			continue;
		}
		if (!dax_second_chance_locked(w, r, &rotated))
			return r;
	}
	if (l == &w->busy_list)
		return NULL;	/* walked it all: every range referenced */
	for (n = vqf_itree_first(&di->tree); n; n = vqf_itree_next(n)) {
		r = itn_range(n);
		if (!r->refcnt)
			return r;
		*busy = true;
	}
	return NULL;
}

/*
 * Direct reclaim: take an unreferenced range from @di itself, the least
 * recently used one (upstream takes the first in file order, which at a
 * hot set a little larger than the window evicts the same hot ranges
 * again and again).  Takes L(di) blocking (the caller holds no lib lock,
 * see protocol).  *@out is the DETACHED range or NULL; *@retry says @di
 * has ranges, all referenced.
 */
static int dax_direct_reclaim(struct vqf_dax_window *w,
			      struct vqf_dax_inode *di,
			      struct vqf_dax_range **out, bool *retry)
{
	struct vqf_dax_range *r, *cand;
	bool empty, busy;
	u64 foff = 0;
	int ret = 0;

	*out = NULL;
	*retry = false;
	/* Nothing of ours to take: do not wait for L (a fault may hold it). */
	m_lock(w, di, false);
	empty = vqf_itree_empty(&di->tree);
	m_unlock(w, di, false);
	if (empty)
		return 0;

	w->ops->inode_lock(w, di);
	m_lock(w, di, false);
	w_lock(w);
	cand = dax_lru_of_locked(w, di, &busy);
	if (cand)
		foff = cand->itn.start;
	else if (busy || !vqf_itree_empty(&di->tree)) {
		w->stats.skipped_in_use++;
		*retry = true;
	}
	w_unlock(w);
	m_unlock(w, di, false);
	if (!cand)
		goto out;

	/* L(di) keeps faults out while page-table users are released. */
	if (w->ops->release_users) {
		ret = w->ops->release_users(w, di, foff,
					    vqf_dax_range_size(w));
		if (ret) {
			dax_count(w, &w->stats.skipped_release);
			goto out;
		}
	}

	m_lock(w, di, true);
	r = dax_lookup(di, foff);
	if (r && !dax_teardown_locked(w, di, r, &w->stats.reclaimed_direct))
		*out = r;
	else
		*retry = true;	/* referenced since we looked */
	m_unlock(w, di, true);
out:
	w->ops->inode_unlock(w, di);
	return ret;
}

/*
 * A DETACHED range for @di: a free one, else (unless NOWAIT) one reclaimed
 * from @di, else wait for the worker and start over.
 */
static int dax_alloc(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		     unsigned int flags, struct vqf_dax_range **out)
{
	u32 tries = 0;
	bool retry;
	int ret;

	for (;;) {
		w_lock(w);
		*out = dax_take_free_locked(w);
		if (!*out && (flags & VQF_DAX_MAP_NOWAIT))
			w->stats.nowait_again++;
		w_unlock(w);
		if (*out)
			return 0;
		if (flags & VQF_DAX_MAP_NOWAIT)
			return -EAGAIN;

		ret = dax_direct_reclaim(w, di, out, &retry);
		if (ret || *out)
			return ret;
		/*
		 * @di's ranges are all in use: their users finish soon, so
		 * retry a few times; then (or if @di has none) sleep.  We hold
		 * no L, so the worker can reclaim from any inode, ours too.
		 */
		if (retry && ++tries < w->direct_retries)
			continue;
		ret = vqf_dax_wait_free(w);
		if (ret)
			return ret;
		tries = 0;
	}
}

/* Returned by the helpers below when map_begin must look up again. */
#define DAX_AGAIN	1

static int dax_map_existing(struct vqf_dax_window *w,
			    struct vqf_dax_inode *di, u64 pos,
			    unsigned int flags, struct vqf_dax_map *map)
{
	struct vqf_dax_range *r;
	int ret;

	m_lock(w, di, false);
	r = dax_lookup(di, pos);
	if (!r) {
		m_unlock(w, di, false);
		return -ENOENT;
	}
	if (!(flags & VQF_DAX_MAP_WRITE) || r->writable) {
		ret = dax_ref(w, r, true);
		if (!ret)
			dax_fill_map(w, r, pos, map);
		m_unlock(w, di, false);
		return ret;
	}

	/*
	 * Upgrade needs M exclusive.  The reference taken before dropping M
	 * keeps reclaim off the range meanwhile (upstream does the same).
	 */
	ret = dax_ref(w, r, false);
	m_unlock(w, di, false);
	if (ret)
		return ret;
	m_lock(w, di, true);
	if (dax_lookup(di, pos) != r) {
		/* only an eviction racing with its own I/O gets here */
		m_unlock(w, di, true);
		dax_unref(w, r);
		return DAX_AGAIN;
	}
	ret = dax_upgrade_locked(w, di, r);
	if (!ret)
		dax_fill_map(w, r, pos, map);
	m_unlock(w, di, true);
	if (ret)
		dax_unref(w, r);
	return ret;
}

/* @paid: the access setting it up already paid for it (DAX POLICY) */
static int dax_map_new(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		       u64 pos, unsigned int flags, bool paid,
		       struct vqf_dax_map *map)
{
	u64 rsize = vqf_dax_range_size(w), start = pos & ~(rsize - 1);
	bool writable = flags & VQF_DAX_MAP_WRITE;
	struct fuse_setupmapping_in in;
	struct vqf_dax_range *r, *cur;
	int ret;

	ret = dax_alloc(w, di, flags, &r);
	if (ret)
		return ret;

	m_lock(w, di, true);
	cur = dax_lookup(di, pos);
	if (cur) {
		/* Someone mapped it while we held no M: use theirs. */
		w_lock(w);
		w->stats.setup_races++;
		dax_put_free_locked(w, r);
		w_unlock(w);
		ret = dax_ref(w, cur, true);
		if (!ret && writable) {
			ret = dax_upgrade_locked(w, di, cur);
			if (ret)
				dax_unref(w, cur);
		}
		if (!ret)
			dax_fill_map(w, cur, pos, map);
		m_unlock(w, di, true);
		return ret;
	}

	vqf_dax_fill_setupmapping(&in, di->fh, start, rsize, r->moffset,
				  writable);
	ret = w->ops->send_setupmapping(w, di, &in);
	if (ret) {
		w_lock(w);
		w->stats.setup_errors++;
		dax_put_free_locked(w, r);
		w_unlock(w);
		m_unlock(w, di, true);
		return ret;
	}
	r->itn.start = start;
	r->itn.last = start + rsize - 1;	/* start is rsize-aligned */
	r->writable = writable;
	vqf_itree_insert(&di->tree, &r->itn);
	w_lock(w);
	dax_make_busy_locked(w, r, di);
	r->uses = paid ? DAX_U16_MAX : 0;
	r->touches_seen = READ_ONCE(r->touches);
	w->stats.setups++;
	w_unlock(w);
	dax_fill_map(w, r, pos, map);
	m_unlock(w, di, true);
	return 0;
}

/*
 * The policy's decision for unmapped bytes of @di, its state updated and
 * the decision counted, all under W.  Returns true to map; *@paid says
 * whether the access alone pays for the mapping.
 */
static bool dax_pol_consult(struct vqf_dax_window *w,
			    struct vqf_dax_inode *di,
			    const struct vqf_dax_hint *hint, bool *paid)
{
	u64 *const count[] = {
		[VQF_DAX_WHY_WINDOW] = &w->stats.pol_window,
		[VQF_DAX_WHY_MMAP] = &w->stats.pol_mmap,
		[VQF_DAX_WHY_SMALL] = &w->stats.pol_small,
		[VQF_DAX_WHY_THRASH] = &w->stats.pol_thrash,
		[VQF_DAX_WHY_BACKOFF] = &w->stats.pol_backoff,
		[VQF_DAX_WHY_CROWD] = &w->stats.pol_crowd,
	};
	enum vqf_dax_why why;

	w_lock(w);
	*paid = (w->policy.used_bytes && hint->len >= w->policy.used_bytes) ||
		(hint->flags & VQF_DAX_HINT_MMAP);
	why = vqf_dax_policy_decide(&w->policy, &w->crowd, &di->pol, hint,
				    &w->crowd, &di->pol);
	(*count[why])++;
	w_unlock(w);
	return !vqf_dax_why_fuse(why);
}

static int dax_map_begin(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			 u64 pos, unsigned int flags,
			 const struct vqf_dax_hint *hint,
			 struct vqf_dax_map *map)
{
	bool paid = false;
	int ret;

	map->range = NULL;
	if (flags & ~(VQF_DAX_MAP_WRITE | VQF_DAX_MAP_NOWAIT))
		return -EINVAL;
	if (pos > VQF_DAX_MAX_FOFFSET)
		return -EFBIG;
	do {
		ret = dax_map_existing(w, di, pos, flags, map);
		if (ret != -ENOENT)
			continue;
		/*
		 * Asked once per call, only where a SETUPMAPPING would go
		 * out: a hit never costs more than a READ would.
		 */
		if (hint) {
			if (!dax_pol_consult(w, di, hint, &paid))
				return VQF_DAX_USE_FUSE;
			hint = NULL;
		}
		ret = dax_map_new(w, di, pos, flags, paid, map);
	} while (ret == DAX_AGAIN);
	return ret;
}

int vqf_dax_map_begin(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		      u64 pos, unsigned int flags, struct vqf_dax_map *map)
{
	return dax_map_begin(w, di, pos, flags, NULL, map);
}

int vqf_dax_map_begin_auto(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			   u64 pos, unsigned int flags,
			   const struct vqf_dax_hint *hint,
			   struct vqf_dax_map *map)
{
	return dax_map_begin(w, di, pos, flags, hint, map);
}

int vqf_dax_wait_free(struct vqf_dax_window *w)
{
	int ret;

	w_lock(w);
	if (w->nr_free) {
		w_unlock(w);
		return 0;
	}
	w->ops->kick_reclaim(w, 0);
	w->stats.waits++;
	w_unlock(w);

	ret = w->ops->wait_free(w);
	if (ret)
		dax_count(w, &w->stats.wait_errors);
	return ret;
}

/* ---- background reclaim ---- */

/*
 * Free the range mapping @foff of @di, pinned by the caller.  -EAGAIN if
 * L(di) is busy (seed 009: blocking here could deadlock against a holder
 * of L(di) that waits for a free range).
 */
static int dax_reclaim_one(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			   u64 foff)
{
	struct vqf_dax_range *r;
	int ret = 0;

	if (!w->ops->inode_trylock(w, di)) {
		dax_count(w, &w->stats.skipped_locked);
		return -EAGAIN;
	}
	if (w->ops->release_users) {
		ret = w->ops->release_users(w, di, foff,
					    vqf_dax_range_size(w));
		if (ret) {
			dax_count(w, &w->stats.skipped_release);
			goto out;
		}
	}
	m_lock(w, di, true);
	/* It may have been freed, even remapped, since we picked it. */
	r = dax_lookup(di, foff);
	ret = r ? dax_teardown_locked(w, di, r, &w->stats.reclaimed_bg) :
		  -ENOENT;
	if (!ret) {
		w_lock(w);
		dax_put_free_locked(w, r);
		w_unlock(w);
	}
	m_unlock(w, di, true);
out:
	w->ops->inode_unlock(w, di);
	return ret;
}

/* Inodes one vqf_dax_reclaim() run found locked; compared, never used. */
#define DAX_LOCKED_MAX	4

static bool dax_in(struct vqf_dax_inode *const *set, u32 n,
		   const struct vqf_dax_inode *di)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (set[i] == di)
			return true;
	return false;
}

u32 vqf_dax_reclaim(struct vqf_dax_window *w)
{
	u32 freed = 0, budget = w->reclaim_chunk + w->nr_ranges, nlocked = 0;
	struct vqf_dax_inode *di, *locked_set[DAX_LOCKED_MAX];
	bool again = false, locked = false, rotated;
	struct vqf_dax_link *l, *next;
	struct vqf_dax_range *r;
	u32 scan;
	u64 foff = 0;

	/* Each pass frees one range or rotates one: budget bounds the run. */
	while (budget--) {
		di = NULL;
		w_lock(w);
		if (w->nr_free >= w->free_threshold) {
			w_unlock(w);
			break;
		}
		if (freed >= w->reclaim_chunk) {
			again = true;
			w_unlock(w);
			break;
		}
		scan = 2 * w->nr_busy;
		rotated = false;
		for (l = w->busy_list.next; l != &w->busy_list && scan--;
		     l = dax_walk_on(w, next, &rotated)) {
			next = l->next;
			r = link_range(l);
			if (r->refcnt) {
				w->stats.skipped_in_use++;
				continue;
			}
			if (dax_second_chance_locked(w, r, &rotated))
				continue;
			/*
			 * Its inode's L was busy a moment ago: trying its other
			 * ranges now would only fail again (one big file
			 * would cost a trylock per range); the re-kick below
			 * comes back for them.
			 */
			if (dax_in(locked_set, nlocked, r->inode))
				continue;
			/* W keeps r->inode alive until inode_get pins it */
			if (!w->ops->inode_get(w, r->inode)) {
				w->stats.skipped_dying++;
				continue;
			}
			di = r->inode;
			/* itn.start is stable while BUSY */
			foff = r->itn.start;
			/* if it cannot be freed now, try others first */
			dl_move_tail(&r->link, &w->busy_list);
			break;
		}
		w_unlock(w);
		if (!di)
			break;

		switch (dax_reclaim_one(w, di, foff)) {
		case 0:
			freed++;
			break;
		case -EAGAIN:
			locked = true;
			if (nlocked < DAX_LOCKED_MAX)
				locked_set[nlocked++] = di;
			break;
		default:
			break;
		}
		w->ops->inode_put(w, di);
	}

	/*
	 * Still short: come back if there was more to do or an inode lock
	 * was busy.  Ranges skipped for being in use re-kick from
	 * vqf_dax_map_end() when their last user leaves.
	 */
	w_lock(w);
	if (again || locked)
		dax_kick_if_low_locked(w, 1);
	w_unlock(w);
	return freed;
}

/* ---- truncate and eviction ---- */

/*
 * Free the ranges of @di intersecting [start, last] in REMOVEMAPPING
 * batches.  @evict frees referenced ranges too; otherwise they stay and
 * *@busy is set.  M(di) exclusive, or @evict (no lock, see protocol).
 */
static long dax_remove_ranges(struct vqf_dax_window *w,
			      struct vqf_dax_inode *di, u64 start, u64 last,
			      struct fuse_removemapping_one *scratch,
			      u32 nr_scratch, bool evict, bool *busy)
{
	u64 rsize = vqf_dax_range_size(w);
	struct fuse_removemapping_in in;
	struct vqf_itree_node *n, *next;
	struct vqf_dax_range *r;
	u64 resume = start;
	long freed = 0;
	int ret, first_err = 0;
	bool done = false;
	u32 cnt, i;

	*busy = false;
	if (nr_scratch > VQF_REMOVEMAPPING_MAX)
		nr_scratch = VQF_REMOVEMAPPING_MAX;

	while (!done) {
		cnt = 0;
		n = vqf_itree_iter_first(&di->tree, start, last);
		if (!n)
			break;
		/*
		 * Collect first: the tree must not change under iteration.
		 * Ranges of one inode are disjoint and sorted, so the next
		 * batch resumes after the last range looked at, skipping the
		 * referenced ones left in place.
		 */
		for (; n && cnt < nr_scratch; n = next) {
			next = vqf_itree_iter_next(n, start, last);
			r = itn_range(n);
			if (n->last >= last)
				done = true;
			else
				resume = n->last + 1;
			w_lock(w);
			if (r->refcnt && !evict) {
				w->stats.skipped_in_use++;
				w_unlock(w);
				*busy = true;
				continue;
			}
			if (r->refcnt) {
				w->stats.evict_in_use++;
				r->refcnt = 0;
			}
			dax_detach_busy_locked(w, r);
			w_unlock(w);
			vqf_dax_fill_removemapping_one(&scratch[cnt++],
						       r->moffset, rsize);
		}
		if (!n)
			done = true;
		start = resume;
		if (!cnt)
			continue;

		for (i = 0; i < cnt; i++) {
			r = &w->ranges[scratch[i].moffset >> w->range_shift];
			vqf_itree_remove(&di->tree, &r->itn);
		}
		vqf_dax_fill_removemapping_in(&in, cnt);
		ret = w->ops->send_removemapping(w, di, &in, scratch);
		if (ret && !first_err)
			first_err = ret;

		w_lock(w);
		w->stats.remove_requests++;
		if (ret)
			w->stats.remove_errors++;
		for (i = 0; i < cnt; i++) {
			r = &w->ranges[scratch[i].moffset >> w->range_shift];
			dax_put_free_locked(w, r);
			w->stats.removed++;
		}
		w_unlock(w);
		freed += cnt;
	}
	return first_err ? first_err : freed;
}

long vqf_dax_inode_remove_range(struct vqf_dax_window *w,
				struct vqf_dax_inode *di, u64 start, u64 last,
				struct fuse_removemapping_one *scratch,
				u32 nr_scratch)
{
	bool busy;
	long ret;

	if (!nr_scratch || start > last)
		return -EINVAL;
	m_lock(w, di, true);
	ret = dax_remove_ranges(w, di, start, last, scratch, nr_scratch,
				false, &busy);
	m_unlock(w, di, true);
	if (ret >= 0 && busy)
		ret = -EBUSY;
	return ret;
}

/*
 * One REMOVEMAPPING of the oldest stale ranges, at most @nr (DEFERRED
 * TEARDOWN), sent with @di NULL.  They are DETACHED (and still counted
 * in nr_stale) until the device answered, so nobody sets one up before
 * it has seen the removal.  Returns the number flushed, 0 if none was on
 * the stale list, or the send's error (they are freed anyway, unmarked).
 */
static long dax_flush_batch(struct vqf_dax_window *w,
			    struct fuse_removemapping_one *scratch, u32 nr)
{
	u64 rsize = vqf_dax_range_size(w);
	struct fuse_removemapping_in in;
	struct vqf_dax_range *r;
	u32 cnt = 0, i;
	int ret;

	w_lock(w);
	while (cnt < nr && !dl_empty(&w->stale_list)) {
		r = link_range(w->stale_list.next);
		dl_del(&r->link);
		r->state = VQF_DAX_DETACHED;
		w->nr_stale_free--;
		WRITE_ONCE(w->nr_free, w->nr_free - 1);
		vqf_dax_fill_removemapping_one(&scratch[cnt++], r->moffset,
					       rsize);
	}
	w_unlock(w);
	if (!cnt)
		return 0;

	vqf_dax_fill_removemapping_in(&in, cnt);
	ret = w->ops->send_removemapping(w, NULL, &in, scratch);

	w_lock(w);
	w->stats.remove_requests++;
	w->stats.stale_flushes++;
	if (ret)
		w->stats.remove_errors++;
	for (i = 0; i < cnt; i++) {
		r = &w->ranges[scratch[i].moffset >> w->range_shift];
		r->stale = false;
		WRITE_ONCE(w->nr_stale, w->nr_stale - 1);
		dax_put_free_locked(w, r);
		w->stats.stale_flushed++;
	}
	w_unlock(w);
	return ret ? (long)ret : (long)cnt;
}

/*
 * Flush batches of the oldest stale ranges while more than @keep are
 * stale; stale ranges being set up are not flushed (their SETUPMAPPING
 * replaces them).  Returns the number flushed or the first send error.
 */
static long dax_flush_to(struct vqf_dax_window *w,
			 struct fuse_removemapping_one *scratch, u32 nr,
			 u32 keep)
{
	long n, flushed = 0;
	int first_err = 0;
	bool more;

	if (nr > VQF_REMOVEMAPPING_MAX)
		nr = VQF_REMOVEMAPPING_MAX;
	for (;;) {
		w_lock(w);
		more = w->nr_stale > keep && w->nr_stale_free;
		w_unlock(w);
		if (!more)
			break;
		n = dax_flush_batch(w, scratch, nr);
		if (n < 0 && !first_err)
			first_err = (int)n;
		if (!n)
			break;
		flushed += n > 0 ? n : 0;
	}
	return first_err ? first_err : flushed;
}

long vqf_dax_flush_stale(struct vqf_dax_window *w,
			 struct fuse_removemapping_one *scratch,
			 u32 nr_scratch)
{
	if (!nr_scratch)
		return -EINVAL;
	return dax_flush_to(w, scratch, nr_scratch, 0);
}

/* Left stale at eviction: read-only (see DEFERRED TEARDOWN), unused. */
static bool dax_may_defer(const struct vqf_dax_range *r)
{
	return !r->writable && !r->refcnt;
}

/*
 * Eviction's deferral: make room for @di's read-only ranges by flushing
 * the oldest stale ones if the bound would be exceeded, then leave as
 * many of them stale as the bound allows (checked per range under W:
 * other evictions run concurrently).  No inode lock: the caller of
 * vqf_dax_inode_evict() owns @di's tree.  Returns the ranges left stale;
 * a flush error in *@err.
 */
static long dax_evict_defer(struct vqf_dax_window *w,
			    struct vqf_dax_inode *di,
			    struct fuse_removemapping_one *scratch,
			    u32 nr_scratch, int *err)
{
	struct vqf_itree_node *n, *next;
	struct vqf_dax_range *r;
	u32 want = 0;
	long ret, deferred = 0;
	bool ok;

	w_lock(w);
	for (n = vqf_itree_first(&di->tree); n; n = vqf_itree_next(n))
		if (dax_may_defer(itn_range(n)) && want < w->stale_max)
			want++;
	w_unlock(w);
	if (!want)
		return 0;
	ret = dax_flush_to(w, scratch, nr_scratch, w->stale_max - want);
	if (ret < 0)
		*err = (int)ret;

	for (n = vqf_itree_first(&di->tree); n; n = next) {
		/* fetched first: n leaves the tree below */
		next = vqf_itree_next(n);
		r = itn_range(n);
		w_lock(w);
		ok = dax_may_defer(r) && w->nr_stale < w->stale_max;
		if (ok) {
			/* counted now: the bound holds for concurrent evicts */
			dax_detach_busy_locked(w, r);
			r->stale = true;
			WRITE_ONCE(w->nr_stale, w->nr_stale + 1);
		}
		w_unlock(w);
		if (!ok)
			continue;
		/* out of the tree before another inode can take the range */
		vqf_itree_remove(&di->tree, n);
		w_lock(w);
		r->inode = NULL;
		r->refcnt = 0;
		r->writable = false;
		r->uses = 0;
		r->state = VQF_DAX_FREE;
		dl_add_tail(&r->link, &w->stale_list);	/* the newest */
		w->nr_stale_free++;
		WRITE_ONCE(w->nr_free, w->nr_free + 1);
		w->ops->wake_free(w);
		w->stats.stale_deferred++;
		w->stats.removed++;
		w_unlock(w);
		deferred++;
	}
	return deferred;
}

long vqf_dax_inode_evict(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			 struct fuse_removemapping_one *scratch,
			 u32 nr_scratch)
{
	long deferred = 0, ret;
	int err = 0;
	bool busy;

	if (!nr_scratch)
		return -EINVAL;
	if (w->stale_max)
		deferred = dax_evict_defer(w, di, scratch, nr_scratch, &err);
	/* writable ranges, and what the bound left over, go at once */
	ret = dax_remove_ranges(w, di, 0, DAX_U64_MAX, scratch, nr_scratch,
				true, &busy);
	if (err)
		return err;
	return ret < 0 ? ret : ret + deferred;
}

/* ---- checkers ---- */

static const char *dax_list_violation(struct vqf_dax_window *w,
				      struct vqf_dax_link *head, u8 state,
				      u32 want)
{
	struct vqf_dax_link *l;
	struct vqf_dax_range *r;
	u32 n = 0;

	for (l = head->next; l != head; l = l->next) {
		if (++n > w->nr_ranges)
			return "list longer than the window (cycle?)";
		if (l->next->prev != l || l->prev->next != l)
			return "list links inconsistent";
		r = link_range(l);
		if (r < w->ranges || r >= w->ranges + w->nr_ranges)
			return "list holds a foreign range";
		if (r->state != state)
			return "range on the wrong list for its state";
	}
	if (n != want)
		return "list length differs from its counter";
	return NULL;
}

/*
 * DEFERRED TEARDOWN's state: the stale list holds exactly the FREE stale
 * ranges, a stale range is FREE or DETACHED (being set up or flushed)
 * and read-only, and at most stale_max are stale.
 */
static const char *dax_stale_violation(struct vqf_dax_window *w)
{
	u32 i, nstale = 0, nfree = 0;
	struct vqf_dax_link *l;
	struct vqf_dax_range *r;

	for (l = w->stale_list.next; l != &w->stale_list; l = l->next) {
		if (!link_range(l)->stale)
			return "unmarked range on the stale list";
		if (++nfree > w->nr_ranges)
			break;		/* the list check reports it */
	}
	for (l = w->free_list.next; l != &w->free_list; l = l->next) {
		if (link_range(l)->stale)
			return "stale range on the free list";
		if (++nfree > w->nr_ranges)
			break;
	}
	for (i = 0; i < w->nr_ranges; i++) {
		r = &w->ranges[i];
		if (!r->stale)
			continue;
		if (r->state == VQF_DAX_BUSY)
			return "busy range marked stale";
		if (r->writable)
			return "stale range writable";
		nstale++;
	}
	if (nstale != w->nr_stale)
		return "stale ranges differ from nr_stale";
	if (w->nr_stale > w->stale_max || w->nr_stale_free > w->nr_stale)
		return "more stale ranges than the bound";
	return NULL;
}

static const char *dax_window_violation(struct vqf_dax_window *w)
{
	u32 i, nfree = 0, nbusy = 0, ndet = 0;
	struct vqf_dax_range *r;
	const char *why;

	if (w->nr_stale_free > w->nr_free)
		return "more stale ranges on the stale list than free ones";
	why = dax_list_violation(w, &w->free_list, VQF_DAX_FREE,
				 w->nr_free - w->nr_stale_free);
	if (why)
		return why;
	why = dax_list_violation(w, &w->stale_list, VQF_DAX_FREE,
				 w->nr_stale_free);
	if (why)
		return why;
	why = dax_list_violation(w, &w->busy_list, VQF_DAX_BUSY, w->nr_busy);
	if (why)
		return why;
	why = dax_stale_violation(w);
	if (why)
		return why;
	for (i = 0; i < w->nr_ranges; i++) {
		r = &w->ranges[i];
		if (r->moffset != (u64)i << w->range_shift)
			return "moffset is not index * range_size";
		switch (r->state) {
		case VQF_DAX_FREE:
			if (r->inode || r->refcnt || r->writable)
				return "free range owned, referenced or writable";
			nfree++;
			break;
		case VQF_DAX_BUSY:
			if (!r->inode)
				return "busy range without an owner";
			nbusy++;
			break;
		case VQF_DAX_DETACHED:
			if (r->inode || r->refcnt)
				return "detached range owned or referenced";
			ndet++;
			break;
		default:
			return "unknown range state";
		}
	}
	if (nfree != w->nr_free || nbusy != w->nr_busy ||
	    nfree + nbusy + ndet != w->nr_ranges)
		return "state counts do not add up";
	return NULL;
}

int vqf_dax_window_check(struct vqf_dax_window *w, const char **why)
{
	const char *v;

	w_lock(w);
	v = dax_window_violation(w);
	w_unlock(w);
	if (why)
		*why = v;
	return v ? -EUCLEAN : 0;
}

static const char *dax_inode_violation(struct vqf_dax_window *w,
				       struct vqf_dax_inode *di)
{
	u64 rsize = vqf_dax_range_size(w);
	struct vqf_dax_range *r, *prev = NULL;
	struct vqf_itree_node *n;
	const char *why;

	if (vqf_itree_check(&di->tree, &why))
		return why;
	for (n = vqf_itree_first(&di->tree); n; n = vqf_itree_next(n)) {
		r = itn_range(n);
		if (r < w->ranges || r >= w->ranges + w->nr_ranges)
			return "tree holds a foreign range";
		if (r->state != VQF_DAX_BUSY || r->inode != di)
			return "tree range not busy or owned by another inode";
		if (!VQF_IS_ALIGNED(n->start, rsize) ||
		    n->last != n->start + rsize - 1)
			return "tree range not one aligned range_size span";
		if (prev && prev->itn.start == n->start)
			return "two ranges map the same file bytes";
		prev = r;
	}
	return NULL;
}

int vqf_dax_inode_check(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			const char **why)
{
	const char *v;

	w_lock(w);
	v = dax_inode_violation(w, di);
	w_unlock(w);
	if (why)
		*why = v;
	return v ? -EUCLEAN : 0;
}
