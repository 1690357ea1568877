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
 * Inodes that were ever mapped stay pinned until gdax_inode_evict()
 * (the client calls it when it frees the inode, at vqf_gcli_free()).
 */
#ifndef VQF_GDAX_H
#define VQF_GDAX_H

#include "vqf_dax.h"
#include "vqf_gdrv.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

struct gdax {
	struct vqf_dax_window w;
	struct vqf_dax_range *ranges;
	u8 *base;
	u64 len;
	pthread_mutex_t wlock;		/* W */
	pthread_cond_t free_cond;	/* nr_free > 0, under wlock */
	pthread_mutex_t klock;		/* the reclaim worker's kicks */
	pthread_cond_t kcond;
	unsigned int kick_ms;
	bool kicked, stop, running;
	pthread_t worker;
	/* Sends a request and waits (the client's send: credentials,
	 * counters).
	 */
	int (*call)(void *ctx, struct vqf_gdrv_call *cl);
	void *ctx;
};

struct gdax_inode {
	struct vqf_dax_inode di;
	pthread_rwlock_t m;		/* M */
	pthread_mutex_t l;		/* L */
	bool ready;
};

/* 0, or -EINVAL/-ENOSPC (geometry), -ENOMEM. */
int gdax_init(struct gdax *x, void *base, u64 len, u64 range_size,
	      int (*call)(void *ctx, struct vqf_gdrv_call *cl), void *ctx);
void gdax_fini(struct gdax *x);

void gdax_inode_init(struct gdax_inode *gi, u64 nodeid);
/* Every range of @gi freed (REMOVEMAPPING batches); locks destroyed. */
void gdax_inode_evict(struct gdax *x, struct gdax_inode *gi);

/*
 * Copies through the window, into @buf or (@write) from it.  The caller
 * bounds @n by the file size (a load past EOF in a mapping is SIGBUS)
 * and, for a write, has extended the file first.  @fh: an open handle of the file (read-write for a
 * write) that SETUPMAPPING names.  Returns bytes or -errno.
 */
ssize_t gdax_copy(struct gdax *x, struct gdax_inode *gi, u64 fh, void *buf,
		  size_t n, u64 off, bool write);
/* Truncation to @size: ranges past it are removed (REMOVEMAPPING). */
int gdax_truncate(struct gdax *x, struct gdax_inode *gi, u64 size);

void gdax_stats(struct gdax *x, struct vqf_dax_stats *out);

#endif /* VQF_GDAX_H */
