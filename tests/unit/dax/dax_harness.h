/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dax_harness.h - single-threaded ops for struct vqf_dax_ops that enforce
 * the locking protocol of vqf_dax.h on every call, and a device behind
 * send_setupmapping/send_removemapping that validates each request with
 * vqf_dax_dev and records it, so tests see exactly what went on the wire.
 *
 * "Other threads" are simulated by flags: an inode whose L is held by
 * someone else (inode_trylock fails), a dying inode (inode_get fails),
 * injected send/release errors.  wait_free runs the reclaim worker (no
 * lock is held there, as the protocol promises) and reports -EINTR if
 * that freed nothing, standing in for a killed sleeper.
 */
#ifndef DAX_HARNESS_H
#define DAX_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "vqf_dax.h"
#include "vqf_dax_dev.h"

#define H_MAX_RANGES	640
#define H_MAX_INODES	6
#define H_LOG		4096
/* the nodeid a flush of stale ranges carries (FUSE_ROOT_ID) */
#define H_ROOT_ID	1

struct h_inode {
	struct vqf_dax_inode di;
	int m;			/* 0, 1 shared, 2 exclusive (by "us") */
	bool l;			/* L held by us */
	bool l_other;		/* L held by another thread */
	bool dying;
	int pins;
	bool file_writable;
};

enum h_ev_kind { H_EV_SETUP, H_EV_REMOVE, H_EV_REMOVE_FAILED, H_EV_GRAB };

struct h_event {
	enum h_ev_kind kind;
	u64 nodeid;
	u64 moffset;
	u64 foffset;
	bool write;
	u32 batch;		/* REMOVE: entries in its request */
};

struct harness {
	struct vqf_dax_window w;
	struct vqf_dax_range ranges[H_MAX_RANGES];
	struct h_inode ino[H_MAX_INODES];
	bool w_held;
	int m_total;
	int l_total;
	bool in_evict;
	bool in_wait;
	/* counters */
	unsigned int kicks, kicks_delayed, wakes, waits, requests_remove;
	unsigned int requests_flush;	/* ... of them flushes (di NULL) */
	unsigned int trylocks;		/* inode_trylock calls */
	/* injections: next send fails with this errno (0 = none) */
	int fail_setup;
	int fail_remove;
	int fail_release;
	/*
	 * release_users takes a reference on the range being reclaimed, as
	 * a reader on another CPU could between reclaim's scan and its
	 * M-exclusive re-check; the reference lands in grabbed[].
	 */
	bool grab_in_release;
	struct vqf_dax_map grabbed[8];
	unsigned int ngrabbed;
	/* device */
	struct vqf_dax_dev_map dev;
	struct vqf_dax_dev_mapping slots[H_MAX_RANGES];
	struct vqf_dax_dev_stats dst;
	/* wire log */
	struct h_event log[H_LOG];
	unsigned int nlog;
};

static inline struct harness *h_of(struct vqf_dax_window *w)
{
	return w->priv;
}

static inline struct h_inode *h_ino(struct vqf_dax_inode *di)
{
	return (struct h_inode *)((char *)di - offsetof(struct h_inode, di));
}

static void h_log(struct harness *h, struct h_event ev);

static void h_window_lock(struct vqf_dax_window *w)
{
	struct harness *h = h_of(w);

	assert_false(h->w_held);	/* W is not recursive */
	h->w_held = true;
}

static void h_window_unlock(struct vqf_dax_window *w)
{
	struct harness *h = h_of(w);

	assert_true(h->w_held);
	h->w_held = false;
}

static void h_map_lock(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		       bool excl)
{
	struct harness *h = h_of(w);
	struct h_inode *hi = h_ino(di);

	assert_false(h->w_held);	/* order M -> W */
	assert_int_equal(h->m_total, 0);	/* one inode's M at a time */
	assert_int_equal(hi->m, 0);
	hi->m = excl ? 2 : 1;
	h->m_total++;
}

static void h_map_unlock(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			 bool excl)
{
	struct harness *h = h_of(w);
	struct h_inode *hi = h_ino(di);

	assert_int_equal(hi->m, excl ? 2 : 1);
	hi->m = 0;
	h->m_total--;
}

static void h_inode_lock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	struct harness *h = h_of(w);
	struct h_inode *hi = h_ino(di);

	/* the only blocking L: nothing else of ours may be held */
	assert_false(h->w_held);
	assert_int_equal(h->m_total, 0);
	assert_int_equal(h->l_total, 0);
	assert_false(hi->l);
	/* blocking: the other holder finishes first */
	hi->l_other = false;
	hi->l = true;
	h->l_total++;
}

static bool h_inode_trylock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	struct harness *h = h_of(w);
	struct h_inode *hi = h_ino(di);

	assert_false(h->w_held);
	assert_int_equal(h->m_total, 0);
	h->trylocks++;
	if (hi->l_other || hi->l)
		return false;
	hi->l = true;
	h->l_total++;
	return true;
}

static void h_inode_unlock(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	struct harness *h = h_of(w);
	struct h_inode *hi = h_ino(di);

	assert_true(hi->l);
	hi->l = false;
	h->l_total--;
}

static bool h_inode_get(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	struct harness *h = h_of(w);
	struct h_inode *hi = h_ino(di);

	assert_true(h->w_held);
	assert_true(hi >= h->ino && hi < h->ino + H_MAX_INODES);
	if (hi->dying)
		return false;
	hi->pins++;
	return true;
}

static void h_inode_put(struct vqf_dax_window *w, struct vqf_dax_inode *di)
{
	struct harness *h = h_of(w);
	struct h_inode *hi = h_ino(di);

	assert_false(h->w_held);
	assert_int_equal(h->m_total, 0);
	assert_true(hi->pins > 0);
	hi->pins--;
}

static int h_release_users(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			   u64 foffset, u64 len)
{
	struct harness *h = h_of(w);
	struct h_inode *hi = h_ino(di);
	int ret = h->fail_release;

	assert_true(hi->l);		/* faults are out */
	assert_int_equal(h->m_total, 0);
	assert_false(h->w_held);
	assert_int_equal(len, vqf_dax_range_size(w));
	assert_true(VQF_IS_ALIGNED(foffset, len));
	h->fail_release = 0;
	if (h->grab_in_release && h->ngrabbed < 8) {
		struct vqf_itree_node *n;
		struct vqf_dax_map *m = &h->grabbed[h->ngrabbed];

		h->grab_in_release = false;
		n = vqf_itree_iter_first(&di->tree, foffset, foffset);
		assert_non_null(n);
		/* a hit: M shared + W, no allocation, no L */
		assert_int_equal(vqf_dax_map_begin(w, di, foffset + 1, 0, m),
				 0);
		h_log(h, (struct h_event){ H_EV_GRAB, di->nodeid,
			  m->range->moffset, foffset, false,
			  h->ngrabbed++ });
	}
	return ret;
}

static void h_kick(struct vqf_dax_window *w, unsigned int delay_ms)
{
	struct harness *h = h_of(w);

	assert_true(h->w_held);
	if (delay_ms)
		h->kicks_delayed++;
	else
		h->kicks++;
}

static void h_wake(struct vqf_dax_window *w)
{
	struct harness *h = h_of(w);

	assert_true(h->w_held);
	assert_true(w->nr_free > 0);
	h->wakes++;
}

static int h_wait(struct vqf_dax_window *w)
{
	struct harness *h = h_of(w);

	assert_false(h->w_held);
	assert_int_equal(h->m_total, 0);
	assert_int_equal(h->l_total, 0);
	assert_false(h->in_wait);
	h->waits++;
	h->in_wait = true;
	vqf_dax_reclaim(w);		/* the kicked worker runs */
	h->in_wait = false;
	return vqf_dax_nr_free(w) ? 0 : -EINTR;
}

static void h_log(struct harness *h, struct h_event ev)
{
	assert_true(h->nlog < H_LOG);
	h->log[h->nlog++] = ev;
}

static int h_send_setup(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			const struct fuse_setupmapping_in *in)
{
	struct harness *h = h_of(w);
	struct h_inode *hi = h_ino(di);
	const struct vqf_dax_dev_mapping *rep;
	struct vqf_dax_dev_limits lim = {
		.file_size = ~0ULL,
		.max_bytes = VQF_DAX_MAX_FOFFSET + 1,
		.writable = hi->file_writable,
	};
	struct fuse_setupmapping_in copy;
	u8 wire[sizeof(*in)];
	int ret;

	assert_false(h->w_held);
	assert_int_equal(hi->m, 2);	/* M exclusive */
	if (h->fail_setup) {
		ret = h->fail_setup;
		h->fail_setup = 0;
		return ret;
	}
	memcpy(wire, in, sizeof(wire));
	ret = vqf_dax_dev_setup_check(&h->dev, wire, sizeof(wire), &lim,
				      &h->dst, &copy, &rep);
	if (ret)
		return ret;
	assert_non_null(vqf_dax_dev_setup_commit(&h->dev, di->nodeid, &copy,
						 &h->dst));
	h_log(h, (struct h_event){ H_EV_SETUP, di->nodeid, in->moffset,
		  in->foffset,
		  !!(in->flags & FUSE_SETUPMAPPING_FLAG_WRITE), 0 });
	return 0;
}

/*
 * Evicts inode @i as evict_inode would (dying: no new references; its
 * removals come from eviction, not under M), then lets it be reused.
 */
static inline long h_evict(struct harness *h, unsigned int i,
			   struct fuse_removemapping_one *scratch, u32 n)
{
	long ret;

	h->ino[i].dying = true;
	h->in_evict = true;
	ret = vqf_dax_inode_evict(&h->w, &h->ino[i].di, scratch, n);
	h->in_evict = false;
	h->ino[i].dying = false;
	return ret;
}

static int h_send_remove(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			 const struct fuse_removemapping_in *in,
			 const struct fuse_removemapping_one *one)
{
	static u8 wire[sizeof(*in) + VQF_REMOVEMAPPING_MAX * sizeof(*one)];
	static struct fuse_removemapping_one ents[VQF_REMOVEMAPPING_MAX];
	struct harness *h = h_of(w);
	size_t size = sizeof(*in) + in->count * sizeof(*one);
	enum h_ev_kind kind = H_EV_REMOVE;
	/* a flush of stale ranges (no inode) names the root */
	u64 nodeid = di ? di->nodeid : H_ROOT_ID;
	u32 i, count;
	int ret;

	assert_false(h->w_held);
	if (!di) {
		/* stale ranges of evicted inodes: no inode lock at all */
		assert_int_equal(h->m_total, 0);
		assert_int_equal(h->l_total, 0);
		assert_true(h->w.stale_max > 0);
		h->requests_flush++;
	} else if (!h->in_evict) {
		assert_int_equal(h_ino(di)->m, 2);
	}
	assert_true(in->count >= 1 && in->count <= VQF_REMOVEMAPPING_MAX);
	h->requests_remove++;
	ret = h->fail_remove;
	h->fail_remove = 0;
	if (ret) {
		kind = H_EV_REMOVE_FAILED;
	} else {
		memcpy(wire, in, sizeof(*in));
		memcpy(wire + sizeof(*in), one, in->count * sizeof(*one));
		/* the guest must never send a removal the device refuses */
		assert_int_equal(vqf_dax_dev_remove_check(&h->dev, wire, size,
							  &h->dst, ents,
							  &count), 0);
		vqf_dax_dev_remove_commit(&h->dev, ents, count, &h->dst);
	}
	for (i = 0; i < in->count; i++)
		h_log(h, (struct h_event){ kind, nodeid, one[i].moffset,
			  0, false, in->count });
	return ret;
}

static const struct vqf_dax_ops h_ops = {
	.window_lock = h_window_lock,
	.window_unlock = h_window_unlock,
	.map_lock = h_map_lock,
	.map_unlock = h_map_unlock,
	.inode_lock = h_inode_lock,
	.inode_trylock = h_inode_trylock,
	.inode_unlock = h_inode_unlock,
	.inode_get = h_inode_get,
	.inode_put = h_inode_put,
	.release_users = h_release_users,
	.kick_reclaim = h_kick,
	.wake_free = h_wake,
	.wait_free = h_wait,
	.send_setupmapping = h_send_setup,
	.send_removemapping = h_send_remove,
};

/*
 * Window of @nr ranges of @rsize bytes; inode i gets nodeid 100 + i.
 * @stale_max: cfg.stale_max (DEFERRED TEARDOWN).
 */
static void h_init_stale(struct harness *h, u32 nr, u64 rsize, u32 pct,
			 u32 chunk, u32 stale_max)
{
	struct vqf_dax_config cfg = {
		.window_size = (u64)nr * rsize,
		.range_size = rsize,
		.reclaim_pct = pct,
		.reclaim_chunk = chunk,
		.stale_max = stale_max,
	};
	int i;

	memset(h, 0, sizeof(*h));
	assert_int_equal(vqf_dax_window_init(&h->w, &cfg, h->ranges,
					     H_MAX_RANGES, &h_ops, h), 0);
	assert_int_equal(h->w.nr_ranges, nr);
	assert_int_equal(vqf_dax_dev_map_init(&h->dev, cfg.window_size,
					      PAGE_SIZE, h->slots,
					      H_MAX_RANGES), 0);
	for (i = 0; i < H_MAX_INODES; i++) {
		vqf_dax_inode_init(&h->ino[i].di, 100 + i, ~0ULL);
		h->ino[i].file_writable = true;
	}
}

static inline void h_init(struct harness *h, u32 nr, u64 rsize, u32 pct,
			  u32 chunk)
{
	h_init_stale(h, nr, rsize, pct, chunk, 0);
}

/* Locks all released, window and trees sound. */
static void h_check_quiet(struct harness *h)
{
	const char *why = NULL;
	int i;

	assert_false(h->w_held);
	assert_int_equal(h->m_total, 0);
	assert_int_equal(h->l_total, 0);
	if (vqf_dax_window_check(&h->w, &why))
		fail_msg("window: %s", why);
	for (i = 0; i < H_MAX_INODES; i++) {
		assert_int_equal(h->ino[i].pins, 0);
		if (vqf_dax_inode_check(&h->w, &h->ino[i].di, &why))
			fail_msg("inode %d: %s", i, why);
	}
	if (vqf_dax_dev_check(&h->dev, &why))
		fail_msg("device map: %s", why);
	/* at rest nothing is DETACHED */
	assert_int_equal(h->w.nr_free + h->w.nr_busy, h->w.nr_ranges);
}

/* Range index of the mapping of @pos in inode @i, or -1. */
static int h_mapped(struct harness *h, int i, u64 pos)
{
	struct vqf_itree_node *n;

	n = vqf_itree_iter_first(&h->ino[i].di.tree, pos, pos);
	if (!n)
		return -1;
	return (int)(vqf_itree_entry(n, struct vqf_dax_range, itn) -
		     h->ranges);
}

#endif /* DAX_HARNESS_H */
