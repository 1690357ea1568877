// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcache.c - dentry cache, attribute rule and page cache of the simulated
 * guest client (see gcache.h).  The client's lock covers every call.
 */
#include "gcache.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define GC_PAGE_BUCKETS	256

/* ---- dentries --------------------------------------------------------- */

struct gc_dent {
	u64 parent, nodeid, expire;
	struct vqf_ver_dentry ver;		/* cache=shared */
	struct gc_dent *next;			/* hash chain */
	struct gc_dent *lprev, *lnext;		/* LRU */
	char name[];
};

static u64 name_hash(u64 parent, const char *name)
{
	u64 h = parent * 0x9e3779b97f4a7c15ULL;

	while (*name)
		h = (h ^ (u8)*name++) * 0x100000001b3ULL;
	return h;
}

int gc_dcache_init(struct gc_dcache *dc, u64 max,
		   void (*put)(void *ctx, u64 nodeid), void *ctx)
{
	memset(dc, 0, sizeof(*dc));
	dc->nbuckets = 1024;
	dc->bucket = calloc(dc->nbuckets, sizeof(*dc->bucket));
	if (!dc->bucket)
		return -ENOMEM;
	dc->max = max ? max : 4096;
	dc->put = put;
	dc->ctx = ctx;
	return 0;
}

static struct gc_dent **dfind(struct gc_dcache *dc, u64 parent,
			      const char *name)
{
	struct gc_dent **pp;

	pp = &dc->bucket[name_hash(parent, name) % dc->nbuckets];
	while (*pp && ((*pp)->parent != parent || strcmp((*pp)->name, name)))
		pp = &(*pp)->next;
	return pp;
}

static void lru_del(struct gc_dcache *dc, struct gc_dent *d)
{
	if (d->lprev)
		d->lprev->lnext = d->lnext;
	else
		dc->lru_head = d->lnext;
	if (d->lnext)
		d->lnext->lprev = d->lprev;
	else
		dc->lru_tail = d->lprev;
	d->lprev = d->lnext = NULL;
}

static void lru_add_tail(struct gc_dcache *dc, struct gc_dent *d)
{
	d->lprev = dc->lru_tail;
	d->lnext = NULL;
	if (dc->lru_tail)
		dc->lru_tail->lnext = d;
	else
		dc->lru_head = d;
	dc->lru_tail = d;
}

/* Unlinks *@pp and gives back what it held. */
static void dkill(struct gc_dcache *dc, struct gc_dent **pp)
{
	struct gc_dent *d = *pp;

	*pp = d->next;
	lru_del(dc, d);
	dc->count--;
	if (d->nodeid) {
		dc->put(dc->ctx, d->nodeid);
		dc->put(dc->ctx, d->parent);
	}
	free(d);
}

enum gc_dhit gc_d_lookup(struct gc_dcache *dc, u64 parent, const char *name,
			 u64 now, u64 *nodeid)
{
	return gc_d_lookup_ver(dc, parent, name, now, nodeid, NULL);
}

enum gc_dhit gc_d_lookup_ver(struct gc_dcache *dc, u64 parent,
			     const char *name, u64 now, u64 *nodeid,
			     const struct vqf_ver_dentry **ver)
{
	struct gc_dent **pp = dfind(dc, parent, name), *d = *pp;

	if (!d)
		return GC_MISS;
	if (ver)
		*ver = &d->ver;
	else if (d->expire <= now) {
		dkill(dc, pp);
		return GC_MISS;
	}
	lru_del(dc, d);
	lru_add_tail(dc, d);
	*nodeid = d->nodeid;
	return d->nodeid ? GC_POSITIVE : GC_NEGATIVE;
}

bool gc_d_expired(const struct vqf_ver_dentry *ver, u64 now)
{
	const struct gc_dent *d = (const void *)((const char *)ver -
						offsetof(struct gc_dent, ver));

	return d->expire <= now;
}

int gc_d_set(struct gc_dcache *dc, u64 parent, const char *name, u64 nodeid,
	     u64 expire)
{
	return gc_d_set_ver(dc, parent, name, nodeid, expire, NULL);
}

int gc_d_set_ver(struct gc_dcache *dc, u64 parent, const char *name,
		 u64 nodeid, u64 expire, const struct vqf_ver_dentry *ver)
{
	size_t n = strlen(name) + 1;
	struct gc_dent **pp, *d;

	pp = dfind(dc, parent, name);
	if (*pp)
		dkill(dc, pp);
	d = malloc(sizeof(*d) + n);
	if (!d) {
		if (nodeid) {
			dc->put(dc->ctx, nodeid);
			dc->put(dc->ctx, parent);
		}
		return -ENOMEM;
	}
	d->parent = parent;
	d->nodeid = nodeid;
	d->expire = expire;
	if (ver)
		d->ver = *ver;
	else
		vqf_ver_dentry_init(&d->ver);
	memcpy(d->name, name, n);
	pp = &dc->bucket[name_hash(parent, name) % dc->nbuckets];
	d->next = *pp;
	*pp = d;
	lru_add_tail(dc, d);
	dc->count++;
	/* Least recently used first, as the VFS shrinks its dcache. */
	while (dc->count > dc->max && dc->lru_head != d) {
		struct gc_dent *old = dc->lru_head;

		dkill(dc, dfind(dc, old->parent, old->name));
	}
	return 0;
}

bool gc_d_drop(struct gc_dcache *dc, u64 parent, const char *name)
{
	struct gc_dent **pp = dfind(dc, parent, name);

	if (!*pp)
		return false;
	dkill(dc, pp);
	return true;
}

void gc_d_drop_node(struct gc_dcache *dc, u64 nodeid)
{
	unsigned int b;

	for (b = 0; b < dc->nbuckets; b++) {
		struct gc_dent **pp = &dc->bucket[b];

		while (*pp) {
			if ((*pp)->nodeid == nodeid ||
			    (*pp)->parent == nodeid)
				dkill(dc, pp);
			else
				pp = &(*pp)->next;
		}
	}
}

void gc_dcache_destroy(struct gc_dcache *dc)
{
	unsigned int b;

	if (!dc->bucket)
		return;
	for (b = 0; b < dc->nbuckets; b++)
		while (dc->bucket[b])
			dkill(dc, &dc->bucket[b]);
	free(dc->bucket);
	dc->bucket = NULL;
}

/* ---- attributes -------------------------------------------------------- */

bool gc_attr_apply(struct gc_attr *ca, const struct fuse_attr *a,
		   u64 sampled, u64 *counter, u64 expire)
{
	if (ca->version > sampled)
		return false;
	ca->attr = *a;
	ca->known = true;
	ca->expire = expire;
	ca->version = ++*counter;
	return true;
}

void gc_attr_invalidate(struct gc_attr *ca, u64 *counter)
{
	ca->expire = 0;
	ca->version = ++*counter;
}

/* ---- pages ---------------------------------------------------------------- */

struct gc_page *gc_page_find(struct gc_pages *pc, u64 index)
{
	struct gc_page *p;

	if (!pc->bucket)
		return NULL;
	for (p = pc->bucket[index % GC_PAGE_BUCKETS]; p; p = p->next)
		if (p->index == index)
			return p;
	return NULL;
}

struct gc_page *gc_page_get(struct gc_pages *pc, u64 index)
{
	struct gc_page *p = gc_page_find(pc, index), **b;

	if (p)
		return p;
	if (!pc->bucket) {
		pc->bucket = calloc(GC_PAGE_BUCKETS, sizeof(*pc->bucket));
		if (!pc->bucket)
			return NULL;
	}
	p = malloc(sizeof(*p));
	if (!p)
		return NULL;
	p->index = index;
	p->len = 0;
	p->dirty_from = p->dirty_to = 0;
	b = &pc->bucket[index % GC_PAGE_BUCKETS];
	p->next = *b;
	*b = p;
	pc->count++;
	return p;
}

void gc_page_mark_dirty(struct gc_pages *pc, struct gc_page *p, u32 from,
			u32 to)
{
	if (!p->dirty_to) {
		pc->dirty++;
		p->dirty_from = from;
		p->dirty_to = to;
		return;
	}
	if (from < p->dirty_from)
		p->dirty_from = from;
	if (to > p->dirty_to)
		p->dirty_to = to;
}

void gc_page_clean(struct gc_pages *pc, struct gc_page *p)
{
	if (p->dirty_to)
		pc->dirty--;
	p->dirty_from = p->dirty_to = 0;
}

u64 gc_pages_drop(struct gc_pages *pc, u64 from, u64 to)
{
	u64 first = from / GC_PAGE_SIZE, dropped = 0;
	unsigned int b;

	if (!pc->bucket)
		return 0;
	for (b = 0; b < GC_PAGE_BUCKETS; b++) {
		struct gc_page **pp = &pc->bucket[b];

		while (*pp) {
			struct gc_page *p = *pp;

			if (p->index >= first &&
			    (to == GC_NEVER || p->index * GC_PAGE_SIZE < to)) {
				*pp = p->next;
				gc_page_clean(pc, p);
				pc->count--;
				dropped++;
				free(p);
			} else {
				pp = &p->next;
			}
		}
	}
	return dropped;
}

static int by_index(const void *a, const void *b)
{
	const struct gc_page *x = *(struct gc_page *const *)a;
	const struct gc_page *y = *(struct gc_page *const *)b;

	return x->index < y->index ? -1 : x->index > y->index;
}

struct gc_page **gc_pages_dirty(struct gc_pages *pc, u64 *n, int *err)
{
	struct gc_page **v, *p;
	unsigned int b;
	u64 k = 0;

	*n = 0;
	*err = 0;
	if (!pc->dirty)
		return NULL;
	v = malloc(pc->dirty * sizeof(*v));
	if (!v) {
		*err = -ENOMEM;
		return NULL;
	}
	for (b = 0; b < GC_PAGE_BUCKETS; b++)
		for (p = pc->bucket[b]; p; p = p->next)
			if (p->dirty_to && k < pc->dirty)
				v[k++] = p;
	qsort(v, k, sizeof(*v), by_index);
	*n = k;
	return v;
}

void gc_pages_free(struct gc_pages *pc)
{
	gc_pages_drop(pc, 0, GC_NEVER);
	free(pc->bucket);
	pc->bucket = NULL;
}
