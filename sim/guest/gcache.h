/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * gcache.h - the simulated guest client's caches (internal to sim/guest).
 *
 * What fs/fuse keeps in the VFS caches, as plain data structures the
 * client drives under its own lock (no locking here):
 *
 *   - a dentry cache: (parent nodeid, name) -> nodeid, or a negative
 *     entry (nodeid 0), each with an expiry time (fuse_dentry_time);
 *   - the attribute rule of fuse_change_attributes(): a reply carrying
 *     attributes is applied only if nothing newer was applied or changed
 *     locally since the request was sent (attr_version);
 *   - a page cache per inode: 4 KiB pages with their valid length (short
 *     only at end of file) and a dirty byte range for writeback.
 *
 * Times are nanoseconds of the client's clock; U64_MAX never expires.
 */
#ifndef VQF_GCACHE_H
#define VQF_GCACHE_H

#include "vqf_req.h"
#include "vqf_version.h"

#include <stdbool.h>
#include <stddef.h>

#define GC_NEVER	(~0ULL)
#define GC_PAGE_SIZE	4096u

/* ---- dentries --------------------------------------------------------- */

struct gc_dent;

struct gc_dcache {
	struct gc_dent **bucket;
	unsigned int nbuckets;
	struct gc_dent *lru_head, *lru_tail;	/* head: least recent */
	u64 count, max;
	/* A positive entry holds a reference on its inode and one on its
	 * parent; both are given back through this, called with the
	 * client's lock held.
	 */
	void (*put)(void *ctx, u64 nodeid);
	void *ctx;
};

int gc_dcache_init(struct gc_dcache *dc, u64 max,
		   void (*put)(void *ctx, u64 nodeid), void *ctx);
void gc_dcache_destroy(struct gc_dcache *dc);

enum gc_dhit { GC_MISS, GC_POSITIVE, GC_NEGATIVE };

/* Looks (@parent, @name) up at time @now; expired entries are misses. */
enum gc_dhit gc_d_lookup(struct gc_dcache *dc, u64 parent, const char *name,
			 u64 now, u64 *nodeid);
/*
 * cache=shared: as gc_d_lookup() but an expired entry is returned too,
 * with *@ver pointing at its versions (valid under the client's lock):
 * the caller decides with vqf_ver_dentry_check() and, for UNKNOWN, the
 * entry's expiry (*@ver's owner tells it through gc_d_expired()).
 */
enum gc_dhit gc_d_lookup_ver(struct gc_dcache *dc, u64 parent,
			     const char *name, u64 now, u64 *nodeid,
			     const struct vqf_ver_dentry **ver);
/* Whether the entry whose versions gc_d_lookup_ver() returned expired. */
bool gc_d_expired(const struct vqf_ver_dentry *ver, u64 now);
/* gc_d_set() with the entry's versions (NULL: none). */
int gc_d_set_ver(struct gc_dcache *dc, u64 parent, const char *name,
		 u64 nodeid, u64 expire, const struct vqf_ver_dentry *ver);
/*
 * Sets (@parent, @name) to @nodeid (0: negative) until @expire; the caller
 * has taken the references a positive entry holds (see put).  Returns 0
 * or -ENOMEM (then nothing is held: the references are put back).
 */
int gc_d_set(struct gc_dcache *dc, u64 parent, const char *name, u64 nodeid,
	     u64 expire);
/* Forgets (@parent, @name); returns whether there was an entry. */
bool gc_d_drop(struct gc_dcache *dc, u64 parent, const char *name);
/* Forgets every entry naming @nodeid or under parent @nodeid. */
void gc_d_drop_node(struct gc_dcache *dc, u64 nodeid);

/* ---- attributes -------------------------------------------------------- */

struct gc_attr {
	struct fuse_attr attr;
	bool known;		/* attr holds what the server last said */
	u64 expire;		/* 0: must be fetched */
	u64 version;		/* the client's attr_version when set */
};

/*
 * fuse_change_attributes(): @a arrived for a request sent when the
 * client's version counter was @sampled.  If the cached attributes were
 * set or invalidated after that, @a is older than what we know: ignored
 * (returns false).  Otherwise stored until @expire with a new version
 * from @counter.
 */
bool gc_attr_apply(struct gc_attr *ca, const struct fuse_attr *a,
		   u64 sampled, u64 *counter, u64 expire);
/* A local change (write, setattr, unlink...): drop and outdate. */
void gc_attr_invalidate(struct gc_attr *ca, u64 *counter);

/* ---- pages ---------------------------------------------------------------- */

struct gc_page {
	u64 index;
	u32 len;		/* valid bytes from 0 */
	u32 dirty_from, dirty_to;	/* dirty bytes [from, to); to 0: clean */
	struct gc_page *next;
	u8 data[GC_PAGE_SIZE];
};

struct gc_pages {
	struct gc_page **bucket;	/* NULL until the first page */
	u64 count, dirty;		/* pages, dirty pages */
};

struct gc_page *gc_page_find(struct gc_pages *pc, u64 index);
/* Finds or adds (empty, len 0) the page @index; NULL on ENOMEM. */
struct gc_page *gc_page_get(struct gc_pages *pc, u64 index);
void gc_page_mark_dirty(struct gc_pages *pc, struct gc_page *p, u32 from,
			u32 to);
void gc_page_clean(struct gc_pages *pc, struct gc_page *p);
/* Drops pages covering bytes [@from, @to) (@to GC_NEVER: to the end),
 * dirty ones included; partial pages at the edges are dropped whole.
 * Returns the number of pages dropped.
 */
u64 gc_pages_drop(struct gc_pages *pc, u64 from, u64 to);
/* The dirty pages in index order (malloc'ed array, *@n of them); NULL
 * with *@n 0 when there are none or on ENOMEM (-ENOMEM in *@err).
 */
struct gc_page **gc_pages_dirty(struct gc_pages *pc, u64 *n, int *err);
void gc_pages_free(struct gc_pages *pc);

#endif /* VQF_GCACHE_H */
