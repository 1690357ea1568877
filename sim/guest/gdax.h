/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * gdax.h - the simulated guest client's DAX path (internal to sim/guest).
 *
 * lib/vqf_dax does the allocator, the per-inode trees and reclaim; this
 * file gives it pthread ops, a reclaim thread and the FUSE round trips,
 * and copies file bytes straight from and to the device's cache window:
 * no READ/WRITE request and no argbuf copy for data already mapped.  In
 * the simulator the window's guest address is the device's host address
 * (vqf_fsdev_shm()).
 *
 * mmap: a gdax_vma is a MAP_SHARED mapping of file bytes.  Its "page
 * table" holds one entry per DAX range it covers (a PMD-sized DAX fault,
 * as fuse_dax_huge_fault); gdax_get() is a load or store through it: a
 * present entry is used as is (no lib call, no request), a missing one
 * faults: L(i) shared, vqf_dax_map_begin(NOWAIT), entry installed, the
 * range reference dropped again (upstream's iomap_begin/iomap_end around
 * a fault).  The pointer stays valid until gdax_put(): the entry is
 * pinned, which is what a CPU in the middle of an access or a
 * get_user_pages() pin is to the kernel.  Reclaim and truncation zap the
 * entries of a range under L(i) exclusive (release_users, as
 * fuse_dax_break_layouts) and wait for pins with L(i) dropped (as
 * fuse_wait_dax_page); the next access faults again.
 *
 * read() and write() use the same entries: each inode has a table of
 * them direct-mapped by range index (x->rwc_n entries, as many as the
 * window has ranges, at most GDAX_RWC), filled after a copy that went
 * through vqf_dax_map_begin() (installed under L shared, tried without
 * blocking, while the range reference is still held), so the next copy
 * in that range pins the entry under pt alone: one mutex instead of M,
 * a tree lookup and W twice.  Every GDAX_RWC_LRU-th hit of an entry
 * takes the full way instead, so that a range used through the cache
 * still moves to the busy LRU's tail (mmap accesses do not, as
 * upstream's page-table accesses do not); the others touch the range
 * (vqf_dax_range_touch(): reclaim's second chance, and each hit counts
 * as a use for dax=auto, as a reference through lib would).
 *
 * Locks per inode: M (rwlock, lib), L (rwlock: faults shared, reclaim
 * and truncation exclusive), pt (mutex: the inode's vmas, their entries
 * and pins; innermost after L, never held across a lib call).
 */
#ifndef VQF_GDAX_H
#define VQF_GDAX_H

#include "vqf_dax.h"
#include "vqf_gdrv.h"
#include "vqf_gcli.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

struct gdax_inode;

struct gdax {
	struct vqf_dax_window w;
	struct vqf_dax_range *ranges;
	u8 *base;
	u64 len;
	pthread_mutex_t wlock;		/* W */
	pthread_cond_t free_cond;	/* nr_free > 0, under wlock */
	pthread_cond_t idle_cond;	/* an inode's busy fell to 0 (W) */
	pthread_mutex_t klock;		/* the reclaim worker's kicks */
	pthread_cond_t kcond;
	unsigned int kick_ms;
	bool kicked, stop, running;
	pthread_t worker;
	/* Sends a request and waits (the client's send: credentials,
	 * counters).
	 */
	int (*call)(void *ctx, struct vqf_gdrv_call *cl);
	/* The size a fault is bounded by (the client's i_size). */
	int (*isize)(void *ctx, struct gdax_inode *gi, u64 fh, u64 *size);
	void *ctx;
	u32 rwc_n;			/* entries per inode read/write cache */
	pthread_mutex_t slock;		/* mm, clock */
	struct vqf_gcli_mm_stats mm;
	/*
	 * dax=auto: read()/write() ask lib's policy before mapping (mmap
	 * always maps).  Its clock (slock) counts those questions: window
	 * accesses to unmapped bytes.
	 */
	bool auto_on;
	u64 clock;
};

/* One page-table entry: the part of a DAX range a vma shows. */
struct gdax_pte {
	u8 *addr;		/* window address of the range; NULL: none */
	u64 limit;		/* file offset accesses stay below */
	u32 pins;		/* accesses in progress (pt) */
	bool writable;
};

struct gdax_vma {
	struct gdax_vma *next;	/* gi->vmas, under gi->pt */
	struct gdax_inode *gi;
	u64 fh;			/* the open file it maps (vm_file) */
	u64 start, len;		/* file bytes [start, start + len) */
	u64 first;		/* range index of @start */
	u32 nptes;
	int prot;		/* PROT_READ | PROT_WRITE */
	void *owner;		/* the client's */
	struct gdax_pte pte[];
};

/* A pinned access: gdax_get() fills it, gdax_put() ends it. */
struct gdax_ref {
	void *addr;
	size_t len;
	struct gdax_pte *pte;
};

/*
 * An inode's read()/write() cache: entries direct-mapped by range index,
 * as many as the window has ranges (a power of two, at most GDAX_RWC).
 */
#define GDAX_RWC	256

struct gdax_rwe {
	struct gdax_pte e;
	u64 r0;			/* file offset of the entry's range */
	struct vqf_dax_range *range;	/* touched at each cached hit */
	u32 hits;		/* every GDAX_RWC_LRU-th goes the full way */
};

#define GDAX_RWC_LRU	64

struct gdax_inode {
	struct vqf_dax_inode di;
	pthread_rwlock_t m;		/* M */
	pthread_rwlock_t l;		/* L */
	pthread_mutex_t pt;		/* vmas, entries, pins */
	pthread_cond_t unpinned;	/* pt: a pin went */
	struct gdax_vma *vmas;		/* pt */
	/*
	 * pt: read() and write() hits go through these entries without a
	 * lib call (lookup, M, W twice); reclaim zaps them like a vma's.
	 */
	struct gdax_rwe *rwc;		/* pt; allocated at the first install */
	u32 waiters;			/* pt: zaps waiting for pins */
	u32 busy;			/* W: reclaimer's inode_get pins */
	bool ready;			/* W to write */
};

/*
 * Deferred teardown at eviction (lib's cfg.stale_max, docs/dax.md): by
 * default at most a quarter of the window's ranges stay host-mapped for
 * evicted inodes, and at most one REMOVEMAPPING's worth, so that a flush
 * is one request.  The guest loses nothing (a stale range is free and is
 * the first one reused); the host keeps mappings of files the guest let
 * go of, at most a quarter of the window.
 */
#define GDAX_STALE_DIV	4

/*
 * 0, or -EINVAL/-ENOSPC (geometry), -ENOMEM.  @stale: cfg.stale_max (0:
 * the default above, -1: none).
 */
int gdax_init(struct gdax *x, void *base, u64 len, u64 range_size,
	      int stale,
	      int (*call)(void *ctx, struct vqf_gdrv_call *cl),
	      int (*isize)(void *ctx, struct gdax_inode *gi, u64 fh,
			   u64 *size),
	      void *ctx);
/*
 * Unmount: REMOVEMAPPING for every range evictions left stale (before
 * DESTROY, which drops them on the device anyway).  The ranges flushed,
 * or the first send error.
 */
long gdax_flush_stale(struct gdax *x);
void gdax_fini(struct gdax *x);
/*
 * dax=auto with @p's thresholds (NULL: lib's defaults); before any I/O.
 * 0 or -EINVAL (vqf_dax_window_set_policy()).
 */
int gdax_set_auto(struct gdax *x, const struct vqf_dax_policy *p);

void gdax_inode_init(struct gdax_inode *gi, u64 nodeid);
/*
 * Every range of @gi freed (REMOVEMAPPING batches of up to
 * VQF_REMOVEMAPPING_MAX entries); waits for the reclaimer to let go of
 * it; locks destroyed.  Nobody may use @gi any more (no open, no vma).
 * Returns the ranges freed.
 */
long gdax_inode_evict(struct gdax *x, struct gdax_inode *gi);

/*
 * Copies through the window, into @buf or (@write) from it.  The caller
 * bounds @n by the file size @size (a load past EOF in a mapping is
 * SIGBUS) and, for a write, has extended the file first.  @fh: an open
 * handle of the file (read-write for a write) that SETUPMAPPING names.
 * Returns bytes or -errno.  Under dax=auto it stops where the policy
 * sends unmapped bytes through FUSE, and sets *@fuse: the caller serves
 * the rest of that range with READ/WRITE and calls again after it.
 */
ssize_t gdax_copy(struct gdax *x, struct gdax_inode *gi, u64 fh, void *buf,
		  size_t n, u64 off, bool write, u64 size, bool *fuse);
/*
 * Truncation to @size: every page-table entry of @gi zapped (waiting for
 * accesses in progress), ranges past @size removed (REMOVEMAPPING).
 */
int gdax_truncate(struct gdax *x, struct gdax_inode *gi, u64 size);

/*
 * mmap(MAP_SHARED) of file bytes [@off, @off + @len) of @gi through open
 * handle @fh; @off page-aligned, @len > 0, @prot PROT_READ/PROT_WRITE.
 * 0 or -EINVAL, -ENOMEM.
 */
int gdax_mmap(struct gdax *x, struct gdax_inode *gi, u64 fh, u64 off,
	      u64 len, int prot, void *owner, struct gdax_vma **out);
/* munmap: -EBUSY (nothing done) while an access is pinned. */
int gdax_munmap(struct gdax *x, struct gdax_vma *v);
/*
 * A load (or @write store) at byte @off of @v: *@ref points at it, valid
 * for ref->len bytes (to the end of the range, the vma or the page
 * holding EOF) until gdax_put().  The caller holds no other ref (a zap
 * could wait for it while we wait for the zap).  Returns 0 or -EFAULT
 * (outside the vma: SIGSEGV), -EACCES (prot: SIGSEGV), -ENXIO (at or past
 * the page holding EOF: SIGBUS), or the fault's error (SETUPMAPPING,
 * GETATTR, -ENOTCONN at shutdown).
 */
int gdax_get(struct gdax *x, struct gdax_vma *v, u64 off, bool write,
	     struct gdax_ref *ref);
void gdax_put(struct gdax *x, struct gdax_vma *v, struct gdax_ref *ref);
/* The inode's first vma (for teardown), NULL if none. */
struct gdax_vma *gdax_first_vma(struct gdax_inode *gi);

void gdax_stats(struct gdax *x, struct vqf_dax_stats *out);
void gdax_mm_stats(struct gdax *x, struct vqf_gcli_mm_stats *out);

#endif /* VQF_GDAX_H */
