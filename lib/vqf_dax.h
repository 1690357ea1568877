/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_dax.h - guest side of the virtio-fs DAX window: range allocator,
 * per-inode mapping trees, reclaim policy, SETUPMAPPING/REMOVEMAPPING
 * requests.
 *
 * The window (the device's VIRTIO_FS_SHMCAP_ID_CACHE shared memory region)
 * is cut into N ranges of one fixed power-of-two size (2 MiB by default, as
 * upstream fs/fuse/dax.c).  A range is in exactly one of three states:
 *
 *   FREE      on the window's free list, owned by nobody; a FREE range
 *             may be stale (DEFERRED TEARDOWN below): on the stale list
 *             instead, still mapped by the host for an evicted inode;
 *   BUSY      mapped: on the window's busy list (least recently used first)
 *             and in exactly one inode's interval tree, keyed by the file
 *             bytes [foffset, foffset + range_size - 1] it shows;
 *   DETACHED  on no list: being set up by an allocator, or being torn down
 *             by reclaim/evict (its REMOVEMAPPING is in flight).
 *
 * A BUSY range has a reference count of in-flight users (a read or write
 * copying through the window, a fault installing a page).  Reclaim never
 * tears down a range whose count is not zero; it skips it and, if the
 * background reclaimer picked it, rotates it to the tail of the busy list.
 *
 * Memory: lib/ computes the sizes, the caller provides the range array,
 * the window and the per-inode structs; nothing is allocated here.
 * Waiting, locking, the reclaim worker and the FUSE round trips are ops the
 * caller provides (kernel: spinlock, rwsem, invalidate_lock, waitqueue,
 * delayed work, fuse_simple_request; simulator: pthreads).
 *
 * LOCKING PROTOCOL
 *
 *   W     window lock (ops->window_lock): a short, non-sleeping lock
 *         (spinlock).  Protects the free, stale and busy lists, nr_free,
 *         nr_busy, nr_stale, nr_stale_free, every range's refcnt, state,
 *         stale mark and inode pointer, and the stats.
 *         Innermost: lib/ never takes another lock or sleeps while holding
 *         it, and calls only ops->inode_get, ops->kick_reclaim and
 *         ops->wake_free under it.
 *   M(i)  per-inode map lock (ops->map_lock, shared or exclusive; rwsem).
 *         Protects i's tree, and range->itn/writable of i's ranges.  A
 *         reference is only taken under M(i) (shared suffices) + W, so an
 *         M(i)-exclusive holder that sees refcnt == 0 knows it stays 0
 *         until it unlocks.  SETUPMAPPING and REMOVEMAPPING for i are sent
 *         with M(i) held exclusively.
 *   L(i)  per-inode reclaim lock (ops->inode_lock/inode_trylock; kernel:
 *         mapping->invalidate_lock, write side).  Excludes everything that
 *         uses i's ranges outside a reference (page-table entries installed
 *         by faults): faults hold it shared, reclaim of i's ranges holds it
 *         exclusively, and calls ops->release_users under it.
 *
 *   Order: L(i) -> M(i) -> W.  Two inodes' L or M are never held together.
 *   The background reclaimer takes L only with ops->inode_trylock (seed
 *   009): a busy inode is skipped with -EAGAIN and its range rotated to
 *   the busy tail.  The only blocking L acquisition is direct reclaim of
 *   the caller's own inode, made while holding no lib lock.
 *
 * What the caller must serialise / guarantee:
 *   - vqf_dax_map_begin() without VQF_DAX_MAP_NOWAIT: called holding no
 *     lib lock and no reference on any range (else it could wait for a
 *     range only it can release; a one-range window would stall).  It may
 *     take L(i) exclusively, so a caller holding L(i) shared (the fault
 *     path) must pass VQF_DAX_MAP_NOWAIT, and on -EAGAIN drop L(i), call
 *     vqf_dax_wait_free() and retry.
 *   - vqf_dax_map_end() may be called from any context that may take W.
 *   - vqf_dax_reclaim() (the worker body) and vqf_dax_wait_free(): no
 *     lib lock held; the worker holds no inode lock.
 *   - vqf_dax_inode_remove_range() (truncate, punch hole): the caller holds
 *     L(i) exclusively; lib takes M(i).
 *   - vqf_dax_inode_evict(): nobody else can reach the inode any more
 *     (no I/O, no faults, ops->inode_get on it fails); lib takes no inode
 *     lock (upstream does not either: eviction runs under fs_reclaim).
 *   - vqf_dax_flush_stale(): no lib lock held; any time, concurrently
 *     with anything.  A stale range is DETACHED (on no list) from the
 *     moment a flush picks it until the device has answered, and while
 *     its replacing SETUPMAPPING is in flight, so a REMOVEMAPPING and a
 *     SETUPMAPPING of one window span are never in flight together.
 *     ops->send_removemapping gets @di NULL for such a flush (no inode
 *     lock held: the ranges belong to inodes already evicted).
 *   - struct vqf_dax_inode stays valid until vqf_dax_inode_evict() returns.
 */
#ifndef VQF_DAX_H
#define VQF_DAX_H

#include "vqf_compat.h"
#include "vqf_itree.h"
#include "vqf_fuse_ops.h"
#include "vqf_req.h"

#define VQF_DAX_RANGE_SHIFT_DEFAULT	21	/* 2 MiB, upstream FUSE_DAX_SHIFT */
#define VQF_DAX_RECLAIM_PCT_DEFAULT	20	/* FUSE_DAX_RECLAIM_THRESHOLD */
#define VQF_DAX_RECLAIM_CHUNK_DEFAULT	10	/* FUSE_DAX_RECLAIM_CHUNK */
#define VQF_DAX_DIRECT_RETRIES_DEFAULT	8
/* Largest file offset FUSE can name (loff_t). */
#define VQF_DAX_MAX_FOFFSET		(~0ULL >> 1)

struct vqf_dax_window;
struct vqf_dax_inode;

/* Private circular list link (lib/ has no list.h). */
struct vqf_dax_link {
	struct vqf_dax_link *next;
	struct vqf_dax_link *prev;
};

enum vqf_dax_range_state {
	VQF_DAX_FREE = 0,
	VQF_DAX_BUSY,
	VQF_DAX_DETACHED,
};

/*
 * One window range.  The caller allocates the array (vqf_dax_ranges_size())
 * and never touches the members; they are documented for debuggers.
 */
struct vqf_dax_range {
	struct vqf_itree_node itn;	/* M(inode): file bytes it maps */
	struct vqf_dax_link link;	/* W: free or busy list */
	struct vqf_dax_inode *inode;	/* W + M(inode) to write */
	u64 moffset;			/* constant: offset in the window */
	u32 refcnt;			/* W: in-flight users */
	u8 state;			/* W: enum vqf_dax_range_state */
	bool writable;			/* M(inode): mapped with FLAG_WRITE */
	bool stale;			/* W: FREE/DETACHED, host still maps */
	u16 uses;			/* W: uses since its SETUPMAPPING */
	u64 touches;			/* any: vqf_dax_range_touch() count */
	u64 touches_seen;		/* W: @touches when last looked at */
};

/**
 * struct vqf_dax_pstate - what the dax=auto policy remembers of one inode
 * (see DAX POLICY below).  All under W.
 * @until: while @backed, the caller's clock value the backoff ends at.
 * @setups: ranges set up for the inode in the current sample.
 * @wasted: ranges of the inode reclaimed under pressure (background or
 *	direct) before they paid (pay_uses), in the current sample.
 * @uses: policy decisions made for the inode (saturating).
 * @level: consecutive thrash verdicts; the next backoff is
 *	backoff << min(level, backoff_shift_max).
 * @backed: the inode is backing off (its unmapped bytes go through FUSE).
 * @small: the last decision found the file small; its setups and wasted
 *	ranges also count for the window's small files (the crowd).
 * The window's crowd has the same state (its @uses and @small unused).
 */
struct vqf_dax_pstate {
	u64 until;
	u32 setups;
	u32 wasted;
	u32 uses;
	u8 level;
	bool backed;
	bool small;
};

/*
 * Per-inode part, embedded in the caller's inode (container_of in the ops).
 * Initialise with vqf_dax_inode_init().
 */
struct vqf_dax_inode {
	struct vqf_itree_root tree;	/* M: this inode's BUSY ranges */
	u64 nodeid;			/* fuse_in_header.nodeid */
	u64 fh;				/* setupmapping_in.fh; ~0 = none */
	struct vqf_dax_pstate pol;	/* W: dax=auto policy state */
};

/**
 * struct vqf_dax_ops - what the caller provides; see LOCKING PROTOCOL.
 * Every member is mandatory except @release_users.
 *
 * @window_lock, @window_unlock: W.
 * @map_lock, @map_unlock: M(@di), exclusive if @excl.
 * @inode_lock: L(@di) exclusive, may block.  Called with no lib lock held.
 * @inode_trylock: L(@di) exclusive without blocking; false if not taken.
 *	Called with no lib lock held.
 * @inode_unlock: drop L(@di).
 * @inode_get: pin @di so it cannot be evicted (igrab); false if it is
 *	being evicted.  Called with W held: must not sleep.
 * @inode_put: drop the pin (iput).  Called with no lib lock held.
 * @release_users: optional.  Make sure nothing uses file bytes
 *	[@foffset, @foffset + @len - 1] of @di through the window outside a
 *	reference (unmap page-table entries, wait for pinned pages, write
 *	back).  Called with L(@di) held exclusively, M and W not held.
 *	Returns 0 or a negative errno (the range is then skipped).
 * @kick_reclaim: schedule vqf_dax_reclaim() to run after @delay_ms in a
 *	context holding no lock (queue_delayed_work).  Called with W held:
 *	must not sleep; kicking an already pending worker is a no-op.
 * @wake_free: wake vqf_dax_wait_free() sleepers; called with W held right
 *	after nr_free became non-zero.  Must not sleep.
 * @wait_free: sleep until vqf_dax_nr_free(@w) > 0 without losing a
 *	@wake_free that happens after the condition was found false (check
 *	it under W, or with a waitqueue that re-checks after queueing).
 *	Called with no lib lock held.  Returns 0, or a negative errno (e.g.
 *	-EINTR for a fatal signal) which lib/ passes up.
 * @send_setupmapping: send FUSE_SETUPMAPPING for @di with in-arg @in and
 *	wait for the reply; 0 or the negative errno of the reply/transport.
 *	Called with M(@di) exclusive, W not held.
 * @send_removemapping: send FUSE_REMOVEMAPPING for @di: @in, then
 *	@in->count entries at @one; 0 or a negative errno.  Called with W not
 *	held and M(@di) exclusive (or, from vqf_dax_inode_evict(), no lock).
 *	@di is NULL for a flush of stale ranges (DEFERRED TEARDOWN), called
 *	with no lock held: they belong to inodes already evicted, perhaps
 *	forgotten, so send it with nodeid FUSE_ROOT_ID (1).  The device
 *	does not use a REMOVEMAPPING's nodeid (the entries name window
 *	spans), but a daemon may refuse a request naming a node it no
 *	longer knows (the simulator's guard does); the root is never
 *	forgotten.  Only windows with cfg.stale_max > 0 make such calls.
 */
struct vqf_dax_ops {
	void (*window_lock)(struct vqf_dax_window *w);
	void (*window_unlock)(struct vqf_dax_window *w);
	void (*map_lock)(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			 bool excl);
	void (*map_unlock)(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			   bool excl);
	void (*inode_lock)(struct vqf_dax_window *w, struct vqf_dax_inode *di);
	bool (*inode_trylock)(struct vqf_dax_window *w,
			      struct vqf_dax_inode *di);
	void (*inode_unlock)(struct vqf_dax_window *w,
			     struct vqf_dax_inode *di);
	bool (*inode_get)(struct vqf_dax_window *w, struct vqf_dax_inode *di);
	void (*inode_put)(struct vqf_dax_window *w, struct vqf_dax_inode *di);
	int (*release_users)(struct vqf_dax_window *w,
			     struct vqf_dax_inode *di, u64 foffset, u64 len);
	void (*kick_reclaim)(struct vqf_dax_window *w, unsigned int delay_ms);
	void (*wake_free)(struct vqf_dax_window *w);
	int (*wait_free)(struct vqf_dax_window *w);
	int (*send_setupmapping)(struct vqf_dax_window *w,
				 struct vqf_dax_inode *di,
				 const struct fuse_setupmapping_in *in);
	int (*send_removemapping)(struct vqf_dax_window *w,
				  struct vqf_dax_inode *di,
				  const struct fuse_removemapping_in *in,
				  const struct fuse_removemapping_one *one);
};

/**
 * struct vqf_dax_config - window geometry and policy; zero means default.
 * @window_size: bytes of the cache window (the shm region's length).
 * @range_size: bytes per range: a power of two >= PAGE_SIZE (2 MiB).
 * @reclaim_pct: background reclaim runs while fewer than this percentage
 *	of the ranges are free (20); the threshold is at least one range.
 * @reclaim_ranges: if not 0, the threshold in ranges instead (at most the
 *	window's): a reserve sized for the callers that cannot reclaim
 *	themselves (faults, one per CPU), not for the window, whose every
 *	free range is one mapping fewer for the data in use.
 * @reclaim_chunk: most ranges one vqf_dax_reclaim() call frees (10).
 * @direct_retries: direct reclaim attempts that found only ranges in use
 *	before the caller sleeps in ops->wait_free (8).
 * @stale_max: most ranges eviction leaves stale (DEFERRED TEARDOWN),
 *	at most the window's; 0 (the default): none, every range of an
 *	evicted inode gets its REMOVEMAPPING at once, as upstream.
 */
struct vqf_dax_config {
	u64 window_size;
	u64 range_size;
	u32 reclaim_pct;
	u32 reclaim_ranges;
	u32 reclaim_chunk;
	u32 direct_retries;
	u32 stale_max;
};

/*
 * DEFERRED TEARDOWN (cfg.stale_max > 0)
 *
 * Evicting an inode costs one synchronous REMOVEMAPPING round trip (under
 * dax=always every deleted small file pays one), yet a SETUPMAPPING whose
 * span is exactly an existing mapping's replaces it in place (the device
 * checks for that; an upgrade relies on it).  So the removal can wait
 * until the range is used again, and then never be sent:
 *
 *  - Eviction leaves a read-only, unreferenced range of the inode mapped
 *    on the host and puts it FREE on the stale list (oldest first),
 *    marked stale, while fewer than stale_max ranges are stale.  Writable
 *    ranges are removed at once: a live writable mapping tells the daemon
 *    someone may store through it (docs/version-table.md), which must not
 *    outlive the file's last user.  The rest goes out as before.
 *
 *  - The allocator takes a stale range before a clean one, oldest first:
 *    its SETUPMAPPING replaces the stale host mapping, so no REMOVEMAPPING
 *    is ever sent for it, and the host lets go of the evicted file's pages
 *    as soon as possible.  A range being set up stays stale (still
 *    counted) until the SETUPMAPPING succeeds.  If it fails the range
 *    goes back to the head of the stale list: a refusal changed nothing
 *    on the device.  (A host mmap failure may have dropped the old
 *    mapping; a later flush naming it then fails as a whole, and a
 *    failed flush frees its ranges unmarked, below.)
 *
 *  - The bound: at most stale_max ranges are stale at any time (counting
 *    those in flight), i.e. the host keeps at most stale_max * range_size
 *    bytes of mappings of files the guest let go of, which may keep
 *    deleted files' blocks alive.  When an eviction would exceed it, the
 *    oldest stale ranges are flushed first, in one REMOVEMAPPING of as
 *    many as the caller's scratch carries (up to VQF_REMOVEMAPPING_MAX):
 *    one round trip per batch instead of one per file.  What still does
 *    not fit is removed at once with the inode's own REMOVEMAPPING.
 *
 *  - vqf_dax_flush_stale() removes every stale range (the caller calls
 *    it at unmount, before DESTROY; a device reset or DESTROY drops every
 *    mapping anyway, after which a stale mark is wrong, so flush first).
 *    Background and direct reclaim do not need it: a stale range is free
 *    and counts in nr_free.
 *
 *  - Truncation and hole punching (vqf_dax_inode_remove_range()) stay
 *    synchronous: the inode lives on and the caller holds L for the
 *    call, so deferring would only move a rare removal into a flush.
 *
 *  - A failed flush frees its ranges anyway, unmarked (as a failed
 *    eviction removal always has): the next SETUPMAPPING of the span
 *    replaces whatever the host kept.
 */

/*
 * DAX POLICY (dax=auto)
 *
 * dax=always maps every byte it reads or writes: a range is a SETUPMAPPING
 * now and a REMOVEMAPPING later, two round trips that only pay if the
 * mapping is then used more than a FUSE READ/WRITE of the same bytes
 * would have cost.  Two cases where it never is:
 *
 *   thrash      the inode's working set does not fit in the window
 *               (random 4 KiB reads over a file larger than it): ranges
 *               are reclaimed before anybody touches them again, so every
 *               read costs a SETUPMAPPING, a REMOVEMAPPING and a first
 *               touch of the window instead of one READ;
 *   small once  a file smaller than a fraction of a range, read once:
 *               one READ against a mapping and its teardown.
 *
 * vqf_dax_map_begin_auto() asks the policy only where vqf_dax_map_begin()
 * would send a SETUPMAPPING: bytes already mapped are used as they are
 * (a hit is always cheaper than a round trip), so a backed-off inode keeps
 * using what it still has mapped.  The policy answers "map" or "FUSE";
 * FUSE means the caller serves those bytes with READ/WRITE and caches
 * nothing in the guest (the window and a page cache would be two guest
 * copies of one host page), i.e. as direct I/O.  That is also why
 * O_DIRECT does not enter the decision: a DAX inode's I/O is direct
 * either way (upstream ignores IOCB_DIRECT on DAX inodes).
 *
 * Invariants, and why:
 *
 *  - A shared mapping (mmap, a fault: VQF_DAX_HINT_MMAP) always maps.
 *    The window is what makes MAP_SHARED coherent with the host and
 *    other guests; there is no FUSE fallback for a page-table entry.
 *
 *  - The decision is vqf_dax_policy_decide(): a pure function of the
 *    policy (window), the inode's state and the caller's hint, which also
 *    returns the inode's next state.  lib has no clock: hint->now is
 *    any counter the caller advances (operations, jiffies); backoffs are
 *    measured in its units.  The events that feed the state happen
 *    where lib already holds W: a SETUPMAPPING made (@setups), a use
 *    (range->uses), a range reclaimed under pressure (@wasted if it had
 *    not paid).  Truncation and eviction are not pressure and count
 *    nothing.
 *
 *  - A use of a range is a reference taken on it after its setup (a
 *    hit, an upgrade) or a vqf_dax_range_touch().  A range has paid
 *    for its mapping once it served pay_uses uses, or at once when the
 *    access that set it up moved at least used_bytes (hint->len: one
 *    READ would not have been cheaper than that mapping either, FUSE
 *    moves at most max_read per round trip and DAX copies once) or
 *    was a fault asked with VQF_DAX_HINT_MMAP (a shared mapping has no
 *    other way).  A caller that maps faults with vqf_dax_map_begin()
 *    (fuse.ko) has those ranges judged by their uses like any.  A mapping costs a SETUPMAPPING, a REMOVEMAPPING and the
 *    first touches of the window, several READs' worth; a range
 *    reclaimed after serving fewer uses than that did not save what it
 *    cost, however often its inode hits elsewhere.  That is the hot set
 *    a little larger than the window: every range is used a few times
 *    and reclaimed (uniform access: no reclaim order helps), and
 *    backing off serves the misses with READs while the ranges still
 *    mapped keep hitting.  A file streamed through a window smaller
 *    than itself - touched range_size / I/O size times per range, or in
 *    large I/Os - never wastes a range and never backs off: that case
 *    pays (one SETUPMAPPING per range, not per read).
 *
 *  - Thrash: at least thrash_min ranges wasted (or as many as the file
 *    has ranges, if fewer: a small file has one) and wasted * 100 >=
 *    thrash_pct * setups.
 *
 *  - The sample fades: every `sample` setups both counts halve, so a
 *    verdict speaks of recent behaviour; a sample that ends below the
 *    ratio lowers @level by one.
 *
 *  - Backoff: a verdict starts a backoff of backoff << min(level,
 *    backoff_shift_max) clock units and raises @level (exponential on
 *    repeated thrash).  When it ends the inode maps again with a fresh
 *    sample (what was wasted during the backoff was mapped before it).
 *
 *  - Small files: an inode whose size is below small_size has its first
 *    small_uses decisions answered FUSE; only reuse maps.  The count is
 *    the inode's (it lives as long as the inode is cached), so a file
 *    opened and read again later maps.
 *
 *  - The crowd: many small files each take a whole range for a few
 *    bytes, so a working set of them larger than the window thrashes it
 *    while no one inode wastes enough to tell (each maps once or twice).
 *    The window therefore keeps one more state, of all small files
 *    together (setups and wasted ranges of inodes whose last decision
 *    found them small), judged and backed off by the same rules: while
 *    it backs off, no small file maps (VQF_DAX_WHY_CROWD).
 *
 *  - dax=always does not call the policy at all (vqf_dax_map_begin()):
 *    its meaning is unchanged, and the hits and wasted ranges are still
 *    counted, so its stats show what auto would have seen.
 */

/**
 * struct vqf_dax_policy - dax=auto thresholds; vqf_dax_policy_default()
 * fills them, vqf_dax_window_set_policy() installs them.
 * @small_size: a file below this many bytes is small (0: no small-file
 *	rule).
 * @small_uses: decisions a small file is served through FUSE before it
 *	maps (0: no small-file rule).
 * @used_bytes: an access that sets a range up and moves at least this
 *	many bytes (hint->len) pays for it at once (0: only uses do).
 * @pay_uses: uses after its setup that pay for a range's mapping; one
 *	reclaimed under pressure with fewer is wasted (0 means 1).
 * @thrash_min: wasted ranges needed before a thrash verdict (at least 1).
 * @thrash_pct: ... and at least this percentage of the setups (1..100;
 *	0: never back off).
 * @sample: setups after which @setups and @wasted halve (at least 1).
 * @backoff: the first backoff, in units of the caller's clock (hint->now).
 * @backoff_shift_max: a backoff is at most backoff << this (at most 32).
 * @range_size: the window's range size; vqf_dax_window_set_policy()
 *	sets it (the thrash minimum of a file with fewer ranges).
 */
struct vqf_dax_policy {
	u64 small_size;
	u64 used_bytes;
	u32 pay_uses;
	u32 small_uses;
	u32 thrash_min;
	u32 thrash_pct;
	u32 sample;
	u64 backoff;
	u32 backoff_shift_max;
	u64 range_size;
};

/* Counters, all under W; read a consistent copy with vqf_dax_stats_read(). */
struct vqf_dax_stats {
	u64 hits;		/* map_begin found a usable mapping */
	u64 setups;		/* SETUPMAPPING that created a mapping */
	u64 setup_errors;	/* ... that failed (range back to free) */
	u64 setup_races;	/* another thread mapped the offset first */
	u64 upgrades;		/* SETUPMAPPING read-only -> writable */
	u64 upgrade_errors;
	u64 reclaimed_bg;	/* ranges freed by vqf_dax_reclaim() */
	u64 reclaimed_direct;	/* ranges taken from the caller's own inode */
	u64 removed;		/* ranges freed by evict / remove_range */
	u64 remove_requests;	/* REMOVEMAPPING requests sent */
	u64 remove_errors;	/* ... that failed (range freed anyway) */
	u64 skipped_in_use;	/* reclaim candidates with refcnt != 0 */
	u64 skipped_locked;	/* inode_trylock failed: rotated to tail */
	u64 skipped_dying;	/* inode_get failed: eviction frees it */
	u64 skipped_release;	/* release_users failed */
	u64 waits;		/* calls into ops->wait_free */
	u64 wait_errors;	/* ... that returned an error */
	u64 nowait_again;	/* VQF_DAX_MAP_NOWAIT answered -EAGAIN */
	u64 evict_in_use;	/* evict found a referenced range (caller bug) */
	u64 ref_overflow;	/* map_begin refused: refcnt saturated */
	u64 reclaim_touched;	/* reclaim spared a touched range */
	/* dax=auto (vqf_dax_map_begin_auto()), per decision: */
	u64 pol_window;		/* unmapped bytes: map them */
	u64 pol_mmap;		/* ... map them: a shared mapping needs it */
	u64 pol_small;		/* ... FUSE: small file, not reused yet */
	u64 pol_thrash;		/* ... FUSE: thrash found, backoff started */
	u64 pol_backoff;	/* ... FUSE: backoff still running */
	u64 pol_crowd;		/* ... FUSE: small files thrash the window */
	u64 wasted;		/* ranges reclaimed before they paid */
	/* DEFERRED TEARDOWN (cfg.stale_max > 0): */
	u64 stale_deferred;	/* evicted ranges left stale, no request */
	u64 stale_reused;	/* SETUPMAPPING replaced a stale mapping */
	u64 stale_flushed;	/* stale ranges removed by a flush */
	u64 stale_flushes;	/* ... REMOVEMAPPING requests (in remove_) */
};

/*
 * The window.  The caller allocates it and calls vqf_dax_window_init();
 * all members are private (W or constant after init) except @priv.
 */
struct vqf_dax_window {
	const struct vqf_dax_ops *ops;
	void *priv;			/* caller's, for the ops */
	struct vqf_dax_range *ranges;
	u32 nr_ranges;
	u32 range_shift;
	u32 free_threshold;
	u32 reclaim_chunk;
	u32 direct_retries;
	u32 stale_max;
	struct vqf_dax_link free_list;	/* W */
	struct vqf_dax_link stale_list;	/* W, FREE and stale, oldest first */
	struct vqf_dax_link busy_list;	/* W, LRU first */
	u32 nr_free;			/* W to write, READ_ONCE to peek */
	u32 nr_busy;			/* W */
	u32 nr_stale;			/* W: stale ranges, <= stale_max */
	u32 nr_stale_free;		/* W: ... of them on the stale list */
	struct vqf_dax_stats stats;	/* W */
	struct vqf_dax_policy policy;	/* W to write */
	struct vqf_dax_pstate crowd;	/* W: small files (DAX POLICY) */
};

/* vqf_dax_map_begin() flags */
#define VQF_DAX_MAP_WRITE	0x1	/* caller will store through it */
#define VQF_DAX_MAP_NOWAIT	0x2	/* no reclaim, no wait: -EAGAIN */

/**
 * struct vqf_dax_map - what vqf_dax_map_begin() hands out.
 * @range: holds one reference until vqf_dax_map_end().
 * @moffset: window offset of the requested file position.
 * @len: bytes from there to the end of the range.
 * @writable: the mapping allows stores.
 */
struct vqf_dax_map {
	struct vqf_dax_range *range;
	u64 moffset;
	u64 len;
	bool writable;
};

/*
 * vqf_dax_nr_ranges() - ranges a window of @window_size bytes holds with
 * ranges of @range_size bytes (the tail shorter than a range is unused).
 * 0 if @range_size is not a power of two >= PAGE_SIZE, if the window is
 * smaller than one range, or if the count does not fit in u32.
 */
u32 vqf_dax_nr_ranges(u64 window_size, u64 range_size);

/* vqf_dax_ranges_size() - bytes of the range array for @nr ranges. */
static inline size_t vqf_dax_ranges_size(u32 nr)
{
	return (size_t)nr * sizeof(struct vqf_dax_range);
}

/*
 * vqf_dax_window_init() - set up @w over the caller's @ranges array of
 * @nr_alloc entries.  @ops (all mandatory members set) and @priv are kept.
 * Every range starts FREE.  Returns 0 or:
 *   -EINVAL   @cfg->range_size not a power of two >= PAGE_SIZE, a
 *             mandatory op missing, or @cfg->reclaim_pct > 100;
 *   -ENOSPC   the window holds no whole range (or more than U32_MAX);
 *   -ENOBUFS  @nr_alloc < vqf_dax_nr_ranges() for this geometry.
 */
int vqf_dax_window_init(struct vqf_dax_window *w,
			const struct vqf_dax_config *cfg,
			struct vqf_dax_range *ranges, u32 nr_alloc,
			const struct vqf_dax_ops *ops, void *priv);

/* vqf_dax_range_size() - bytes per range of @w. */
static inline u64 vqf_dax_range_size(const struct vqf_dax_window *w)
{
	return 1ULL << w->range_shift;
}

/*
 * vqf_dax_nr_free() - free ranges right now; a racy peek (READ_ONCE) for
 * wait conditions.  Exact only under W.
 */
static inline u32 vqf_dax_nr_free(const struct vqf_dax_window *w)
{
	return READ_ONCE(w->nr_free);
}

/*
 * vqf_dax_nr_stale() - stale ranges right now (DEFERRED TEARDOWN); a racy
 * peek.  Exact only under W.
 */
static inline u32 vqf_dax_nr_stale(const struct vqf_dax_window *w)
{
	return READ_ONCE(w->nr_stale);
}

/* vqf_dax_inode_init() - empty tree; @fh ~0ULL when there is none. */
void vqf_dax_inode_init(struct vqf_dax_inode *di, u64 nodeid, u64 fh);

/*
 * vqf_dax_map_begin() - find or create the mapping of file position @pos
 * of @di and take a reference on it.
 * @flags: VQF_DAX_MAP_WRITE to get a writable mapping (a read-only one is
 *	upgraded with a SETUPMAPPING carrying FLAG_WRITE);
 *	VQF_DAX_MAP_NOWAIT when the caller holds L(@di) (fault path): take a
 *	free range or fail, never reclaim or sleep waiting.
 * @map: filled on success.
 * A new mapping covers the range-aligned file bytes around @pos with
 * SETUPMAPPING flags READ (| WRITE).  When no range is free: direct
 * reclaim of an unused range of @di itself, at most cfg.direct_retries
 * times while @di has only referenced ranges, then ops->wait_free (the
 * worker is kicked first); then start over.
 * Returns 0 or:
 *   -EINVAL     unknown @flags;
 *   -EFBIG      @pos > VQF_DAX_MAX_FOFFSET;
 *   -EAGAIN     VQF_DAX_MAP_NOWAIT and no free range;
 *   -EOVERFLOW  the range already has U32_MAX references;
 *   the error of ops->wait_free, ops->release_users (direct reclaim) or
 *   ops->send_setupmapping (nothing changed: the range went back free).
 */
int vqf_dax_map_begin(struct vqf_dax_window *w, struct vqf_dax_inode *di,
		      u64 pos, unsigned int flags, struct vqf_dax_map *map);

/*
 * vqf_dax_map_end() - drop the reference @map holds; @map->range becomes
 * NULL.  When the last reference goes and the window is below the reclaim
 * threshold the worker is kicked (it may have skipped this range).
 */
void vqf_dax_map_end(struct vqf_dax_window *w, struct vqf_dax_map *map);

/*
 * vqf_dax_range_touch() - count one use of @range that the caller served
 * without lib: a hit from its own cache of mappings (the simulator's
 * read/write cache), as a CPU sets a page table's accessed bit.  Any
 * context, no lock, no reference needed: ranges live as long as the
 * window, and a touch that races with the range's reclaim or reuse only
 * credits a use to the wrong mapping (a hint, never a correctness
 * matter).  A touched range gets a second chance at reclaim (it goes to
 * the tail of the busy list instead), and its touches since its
 * SETUPMAPPING count as uses for dax=auto's verdict (DAX POLICY).
 */
void vqf_dax_range_touch(struct vqf_dax_range *range);

/*
 * vqf_dax_wait_free() - for VQF_DAX_MAP_NOWAIT callers after -EAGAIN,
 * having dropped L: kick the worker and sleep in ops->wait_free until a
 * range is free.  0 at once if one is; else ops->wait_free's result.
 */
int vqf_dax_wait_free(struct vqf_dax_window *w);

/*
 * vqf_dax_reclaim() - the background worker body: while fewer than the
 * threshold ranges are free, free at most cfg.reclaim_chunk unreferenced
 * BUSY ranges, least recently used first, skipping (and rotating to the
 * tail) ranges touched since it last looked (vqf_dax_range_touch()), ranges in use, of dying inodes, of inodes whose L is busy
 * (inode_trylock; an inode found busy is not tried again in the same
 * run), or whose release_users fails.  Re-kicks itself (1 ms)
 * when it stopped at the chunk limit or skipped a locked inode and the
 * window is still below the threshold.  Returns the number freed.
 */
u32 vqf_dax_reclaim(struct vqf_dax_window *w);

/*
 * vqf_dax_inode_remove_range() - truncate/punch: free every unreferenced
 * range of @di that maps any file byte in [@start, @last], with
 * REMOVEMAPPING requests of at most @nr_scratch entries built in @scratch
 * (caller memory; up to VQF_REMOVEMAPPING_MAX entries are used).
 * Caller holds L(@di) exclusively.  Returns the number freed, or:
 *   -EINVAL  @nr_scratch == 0 or @start > @last;
 *   -EBUSY   some range was referenced and left in place (the others
 *            were freed);
 *   the first error of ops->send_removemapping (ranges are freed anyway:
 *   the device replaces a stale mapping on the next SETUPMAPPING).
 */
long vqf_dax_inode_remove_range(struct vqf_dax_window *w,
				struct vqf_dax_inode *di, u64 start, u64 last,
				struct fuse_removemapping_one *scratch,
				u32 nr_scratch);

/*
 * vqf_dax_inode_evict() - free every range of @di, batching REMOVEMAPPING
 * as above.  See the protocol for what the caller guarantees; a range
 * still referenced is freed anyway and counted in stats.evict_in_use.
 * With cfg.stale_max, read-only ranges are left stale instead, a flush
 * of the oldest making room first if needed (DEFERRED TEARDOWN).
 * Returns the number freed (stale ones included), -EINVAL for
 * @nr_scratch == 0, or the first send error, a flush's included
 * (everything is freed regardless).
 */
long vqf_dax_inode_evict(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			 struct fuse_removemapping_one *scratch,
			 u32 nr_scratch);

/*
 * vqf_dax_flush_stale() - remove every stale range (DEFERRED TEARDOWN):
 * REMOVEMAPPING requests of at most @nr_scratch entries (up to
 * VQF_REMOVEMAPPING_MAX) built in @scratch, ops->send_removemapping with
 * @di NULL.  Call it at unmount before DESTROY; no lib lock held.
 * Returns the number flushed, -EINVAL for @nr_scratch == 0, or the first
 * send error (the ranges are freed regardless, unmarked).
 */
long vqf_dax_flush_stale(struct vqf_dax_window *w,
			 struct fuse_removemapping_one *scratch,
			 u32 nr_scratch);

/* vqf_dax_stats_read() - copy the counters under W. */
void vqf_dax_stats_read(struct vqf_dax_window *w, struct vqf_dax_stats *out);

/*
 * vqf_dax_window_check() - takes W and verifies the window invariants:
 * lists well linked and bounded, counters equal list lengths, FREE ranges
 * unowned and unreferenced, BUSY ranges owned, state counts add up to
 * nr_ranges, moffset == index * range_size; stale ranges FREE (on the
 * stale list) or DETACHED, never writable, as many as nr_stale, which
 * is at most stale_max.  0 or -EUCLEAN with *@why.
 */
int vqf_dax_window_check(struct vqf_dax_window *w, const char **why);

/*
 * vqf_dax_inode_check() - caller holds M(@di) (shared suffices); takes W.
 * Verifies @di's tree (vqf_itree_check) and that each node is a BUSY range
 * of @w owned by @di, covering exactly one range-aligned range_size span,
 * with no two ranges mapping the same bytes.  0 or -EUCLEAN with *@why.
 */
int vqf_dax_inode_check(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			const char **why);

/* ---- dax=auto: the policy (see DAX POLICY) ---- */

/* Defaults; chosen with bench-dax's auto rows (docs/dax.md, "Policy"). */
#define VQF_DAX_POL_SMALL_DIV_DEFAULT	4	/* small: < range_size / 4 */
#define VQF_DAX_POL_SMALL_USES_DEFAULT	1
#define VQF_DAX_POL_USED_DIV_DEFAULT	2	/* used: >= range_size / 2 */
#define VQF_DAX_POL_PAY_USES_DEFAULT	8
#define VQF_DAX_POL_THRASH_MIN_DEFAULT	8
#define VQF_DAX_POL_THRASH_PCT_DEFAULT	50
#define VQF_DAX_POL_SAMPLE_DEFAULT	64
#define VQF_DAX_POL_BACKOFF_DEFAULT	4096
#define VQF_DAX_POL_SHIFT_MAX_DEFAULT	6

/* vqf_dax_hint.flags */
#define VQF_DAX_HINT_MMAP	0x1	/* for a shared mapping: always map */

/**
 * struct vqf_dax_hint - what the caller knows of the access.
 * @size: the file's size as the caller knows it (i_size).
 * @now: the caller's clock: any counter it advances (operations served,
 *	jiffies); backoffs end when it reaches their end.
 * @len: bytes the access moves within the range holding pos.
 * @flags: VQF_DAX_HINT_*.
 */
struct vqf_dax_hint {
	u64 size;
	u64 now;
	u64 len;
	u32 flags;
};

/* Why vqf_dax_policy_decide() answered what it did. */
enum vqf_dax_why {
	VQF_DAX_WHY_WINDOW = 0,	/* map: nothing argues against it */
	VQF_DAX_WHY_MMAP,	/* map: a shared mapping needs the window */
	VQF_DAX_WHY_SMALL,	/* FUSE: small file, not used often enough */
	VQF_DAX_WHY_THRASH,	/* FUSE: thrash found now, backoff started */
	VQF_DAX_WHY_BACKOFF,	/* FUSE: backing off */
	VQF_DAX_WHY_CROWD,	/* FUSE: small files thrash the window */
};

/* vqf_dax_why_fuse() - @why sends the bytes through FUSE READ/WRITE. */
static inline bool vqf_dax_why_fuse(enum vqf_dax_why why)
{
	return why >= VQF_DAX_WHY_SMALL;
}

/*
 * vqf_dax_policy_default() - the default thresholds for ranges of
 * @range_size bytes into @p.
 */
void vqf_dax_policy_default(struct vqf_dax_policy *p, u64 range_size);

/*
 * vqf_dax_policy_check() - 0 if @p can be installed, or -EINVAL:
 * thrash_pct > 100, thrash_min or sample 0, backoff_shift_max > 32.
 */
int vqf_dax_policy_check(const struct vqf_dax_policy *p);

/*
 * vqf_dax_window_set_policy() - install @p in @w (under W; any time),
 * with @w's range_size.  vqf_dax_window_init() installs
 * vqf_dax_policy_default().  Returns 0, or vqf_dax_policy_check()'s
 * -EINVAL.
 */
int vqf_dax_window_set_policy(struct vqf_dax_window *w,
			      const struct vqf_dax_policy *p);

/*
 * vqf_dax_policy_decide() - the decision for an access to unmapped bytes
 * of an inode in state @cur, the window's small files in state @crowd: a
 * pure function (no lock, no side effect).  @next and @crowd_next
 * receive the states after the decision (they may be @cur and @crowd).
 * Returns why; vqf_dax_why_fuse() tells map from FUSE.
 */
enum vqf_dax_why vqf_dax_policy_decide(const struct vqf_dax_policy *p,
				       const struct vqf_dax_pstate *crowd,
				       const struct vqf_dax_pstate *cur,
				       const struct vqf_dax_hint *h,
				       struct vqf_dax_pstate *crowd_next,
				       struct vqf_dax_pstate *next);

/* vqf_dax_map_begin_auto(): serve these bytes through FUSE instead. */
#define VQF_DAX_USE_FUSE	1

/*
 * vqf_dax_map_begin_auto() - vqf_dax_map_begin() under dax=auto: bytes
 * already mapped are a hit as there; for unmapped ones the policy decides
 * (under W, its state updated) before any SETUPMAPPING.  Same locking
 * rules and @flags as vqf_dax_map_begin().  Returns 0 (@map holds a
 * reference), VQF_DAX_USE_FUSE (nothing mapped, no reference: serve the
 * access with READ/WRITE), or vqf_dax_map_begin()'s errors.  @hint NULL
 * is dax=always: exactly vqf_dax_map_begin().
 */
int vqf_dax_map_begin_auto(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			   u64 pos, unsigned int flags,
			   const struct vqf_dax_hint *hint,
			   struct vqf_dax_map *map);

/*
 * vqf_dax_inode_policy() - a copy of @di's policy state, under W (for
 * tests and counters).
 */
void vqf_dax_inode_policy(struct vqf_dax_window *w, struct vqf_dax_inode *di,
			  struct vqf_dax_pstate *out);

/*
 * Request in-args, host-endian as FUSE is.  The builders for the request
 * descriptor use these; they are public for tests and the device side.
 */
void vqf_dax_fill_setupmapping(struct fuse_setupmapping_in *in, u64 fh,
			       u64 foffset, u64 len, u64 moffset,
			       bool writable);
void vqf_dax_fill_removemapping_in(struct fuse_removemapping_in *in,
				   u32 count);
void vqf_dax_fill_removemapping_one(struct fuse_removemapping_one *one,
				    u64 moffset, u64 len);

/*
 * vqf_dax_req_setupmapping() - @req as FUSE_SETUPMAPPING for @nodeid with
 * in-arg @in (kept by pointer until vqf_req_to_argbuf()); no out args.
 * Returns 0 (vqf_req_init() cannot fail for this opcode).
 */
int vqf_dax_req_setupmapping(struct vqf_req *req, u64 unique, u64 nodeid,
			     const struct fuse_setupmapping_in *in);

/*
 * vqf_dax_req_removemapping() - @req as FUSE_REMOVEMAPPING: @in, then
 * @in->count entries at @one (both kept by pointer).  Returns 0, -EINVAL
 * for a count of 0, -E2BIG above VQF_REMOVEMAPPING_MAX.
 */
int vqf_dax_req_removemapping(struct vqf_req *req, u64 unique, u64 nodeid,
			      const struct fuse_removemapping_in *in,
			      const struct fuse_removemapping_one *one);

#endif /* VQF_DAX_H */
