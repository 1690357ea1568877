// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcli.c - the client object: its inode table (lookup counts, eviction and
 * FORGET), sending requests, setup, device notifications, statistics and
 * teardown (see vqf_gcli.h; gcli_int.h lists the other files).
 */
#define _GNU_SOURCE	/* SEEK_DATA, F_OFD_*, RENAME_* */
#include "gcli_int.h"

struct ginode **gcli_ifind(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode **pp = &c->buckets[nodeid % GCLI_BUCKETS];

	while (*pp && (*pp)->nodeid != nodeid)
		pp = &(*pp)->next;
	return pp;
}

/* Takes *@pp (unreferenced) out of the table and forgets it. */
static void evict_locked(struct vqf_gcli *c, struct ginode **pp)
{
	struct ginode *i = *pp;

	*pp = i->next;
	c->ninodes--;
	if (i->gdi.ready) {
		/* REMOVEMAPPING first, outside the lock */
		i->next = c->dax_dead;
		c->dax_dead = i;
		return;
	}
	vqf_gdrv_forget(c->g, i->nodeid, i->nlookup);
	c->st.forgets += i->nlookup;
	gc_pages_free(&i->pc);
	free(i);
}

static void trim_locked(struct vqf_gcli *c)
{
	unsigned int b;

	for (b = 0; b < GCLI_BUCKETS && c->ninodes > c->cfg.icache_max; b++) {
		struct ginode **pp = &c->buckets[b];

		while (*pp && c->ninodes > c->cfg.icache_max) {
			struct ginode *i = *pp;

			if (i->refs || i->nodeid == FUSE_ROOT_ID) {
				pp = &i->next;
				continue;
			}
			evict_locked(c, pp);
		}
	}
}

/* Count @n more lookups of @nodeid and take a reference. */
int gcli_iget(struct vqf_gcli *c, u64 nodeid, u64 n)
{
	struct ginode **pp, *i;

	pthread_mutex_lock(&c->lock);
	pp = gcli_ifind(c, nodeid);
	i = *pp;
	if (!i) {
		i = calloc(1, sizeof(*i));
		if (!i) {
			pthread_mutex_unlock(&c->lock);
			/* Give the lookups back rather than leak them. */
			if (n)
				vqf_gdrv_forget(c->g, nodeid, n);
			return -ENOMEM;
		}
		i->nodeid = nodeid;
		*pp = i;
		c->ninodes++;
	}
	i->nlookup += n;
	i->refs++;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/*
 * fuse_evict_inode() of DAX inodes trimmed from the cache: their ranges
 * go (REMOVEMAPPING batches, fuse_dax_inode_cleanup), then FORGET.
 */
static void dax_reap(struct vqf_gcli *c)
{
	struct ginode *i;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		i = c->dax_dead;
		if (i)
			c->dax_dead = i->next;
		pthread_mutex_unlock(&c->lock);
		if (!i)
			return;
		gdax_inode_evict(&c->dax, &i->gdi);
		vqf_gdrv_forget(c->g, i->nodeid, i->nlookup);
		pthread_mutex_lock(&c->lock);	/* as trim_locked() counts */
		c->st.forgets += i->nlookup;
		pthread_mutex_unlock(&c->lock);
		gc_pages_free(&i->pc);
		free(i);
	}
}

void gcli_iput(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode **pp, *i;
	bool reap;

	if (nodeid == FUSE_ROOT_ID)
		return;
	pthread_mutex_lock(&c->lock);
	pp = gcli_ifind(c, nodeid);
	i = *pp;
	if (i && i->refs)
		i->refs--;
	/* Unlinked and unused: evicted now (iput_final, nlink 0). */
	if (i && !i->refs && i->unlinked)
		evict_locked(c, pp);
	if (c->ninodes > c->cfg.icache_max)
		trim_locked(c);
	reap = c->dax_dead;
	pthread_mutex_unlock(&c->lock);
	if (reap)
		dax_reap(c);
}

/*
 * A name of @nodeid went (@all: every one, rmdir), as drop_nlink() and
 * clear_nlink() count it.  At nlink 0 nothing can look it up again, so
 * the last reference going forgets it at once, as Linux evicts an
 * unlinked inode on its last iput; the server can then let the file go.
 * The caller still holds a reference.
 */
void gcli_inode_drop_nlink(struct vqf_gcli *c, u64 nodeid, bool all)
{
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	if (i && nodeid != FUSE_ROOT_ID) {
		if (all || !i->ca.known || i->ca.attr.nlink <= 1)
			i->unlinked = true;
		else
			i->ca.attr.nlink--;
	}
	pthread_mutex_unlock(&c->lock);
}

u64 gcli_now_ns(struct vqf_gcli *c)
{
	struct timespec ts;

	if (c->cfg.clock)
		return c->cfg.clock(c->cfg.clock_arg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

bool gcli_caching(const struct vqf_gcli *c)
{
	return c->cfg.cache != VQF_GCLI_CACHE_NONE;
}

/* Page cache and writeback: not with cache=none (FOPEN_DIRECT_IO). */
bool gcli_writeback(const struct vqf_gcli *c)
{
	return gcli_caching(c) && c->cfg.writeback && !c->dax_on;
}

/* Until when an entry or attributes got now stay valid. */
u64 gcli_expiry(struct vqf_gcli *c)
{
	u64 now;

	switch (c->cfg.cache) {
	case VQF_GCLI_CACHE_NONE:
		return 0;
	case VQF_GCLI_CACHE_ALWAYS:
		return GC_NEVER;
	default:
		now = gcli_now_ns(c);
		return now + c->ttl < now ? GC_NEVER : now + c->ttl;
	}
}

/* The calling thread's credentials for one client (vqf_gcli_set_creds). */
static __thread struct {
	const struct vqf_gcli *c;
	struct vqf_gcli_creds cr;
} caller;

void vqf_gcli_set_creds(struct vqf_gcli *c, const struct vqf_gcli_creds *cr)
{
	caller.c = cr ? c : NULL;
	if (cr)
		caller.cr = *cr;
}

void gcli_creds(const struct vqf_gcli *c, struct vqf_gcli_creds *out)
{
	if (caller.c == c) {
		*out = caller.cr;
		return;
	}
	out->uid = c->cfg.uid;
	out->gid = c->cfg.gid;
	out->pid = c->cfg.pid;
}

static void creds(struct vqf_gcli *c, struct vqf_req *r)
{
	struct vqf_gcli_creds cr;

	gcli_creds(c, &cr);
	r->in_h.uid = cr.uid;
	r->in_h.gid = cr.gid;
	r->in_h.pid = cr.pid;
}

int gcli_send(struct vqf_gcli *c, struct vqf_gdrv_call *cl)
{
	creds(c, &cl->req);
	STAT_ADD(c, requests, 1);
	if (cl->req.in_h.opcode == FUSE_LOOKUP)
		STAT_ADD(c, lookups, 1);
	return vqf_gdrv_call(c->g, cl, -1);
}

static int dax_send(void *ctx, struct vqf_gdrv_call *cl)
{
	return gcli_send(ctx, cl);
}

void gcli_call_init(struct vqf_gdrv_call *cl, u32 opcode, u64 nodeid)
{
	memset(cl, 0, sizeof(*cl));
	vqf_req_init(&cl->req, opcode, nodeid, 0);
}

int vqf_gcli_new(struct vqf_gdrv *g, const struct vqf_gcli_cfg *cfg,
		 struct vqf_gcli **out)
{
	const struct fuse_init_out *io;
	struct ginode *root;
	struct vqf_gcli *c;
	unsigned int i;

	if (!g || !out)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->g = g;
	if (cfg)
		c->cfg = *cfg;
	if (!c->cfg.uid && !c->cfg.gid && !c->cfg.pid) {
		c->cfg.uid = getuid();
		c->cfg.gid = getgid();
		c->cfg.pid = getpid();
	}
	if (!c->cfg.max_files)
		c->cfg.max_files = 1024;
	if (!c->cfg.icache_max)
		c->cfg.icache_max = 4096;
	c->files = calloc(c->cfg.max_files, sizeof(*c->files));
	if (!c->files) {
		free(c);
		return -ENOMEM;
	}
	for (i = 0; i < c->cfg.max_files; i++)
		pthread_mutex_init(&c->files[i].lock, NULL);
	io = vqf_gdrv_init_out(g);
	c->wchunk = io->max_write;
	c->rchunk = io->max_pages ? io->max_pages * 4096u : io->max_write;
	if (c->rchunk > io->max_write)
		c->rchunk = io->max_write;
	if (c->wchunk < 4096)
		c->wchunk = c->rchunk = 4096;
	c->posix_owner = 0x5eed0000ULL ^ (u64)(uintptr_t)c;
	c->ttl = c->cfg.timeout_ns ? c->cfg.timeout_ns : 1000000000ULL;
	/* The root is never looked up nor forgotten, but has caches. */
	root = calloc(1, sizeof(*root));
	if (!root || c->cfg.cache > VQF_GCLI_CACHE_SHARED ||
	    gc_dcache_init(&c->dc, c->cfg.icache_max, gcli_dput_locked, c)) {
		int ret = root ? (c->cfg.cache > VQF_GCLI_CACHE_SHARED ?
				  -EINVAL : -ENOMEM) : -ENOMEM;

		free(root);
		free(c->files);
		free(c);
		return ret;
	}
	root->nodeid = FUSE_ROOT_ID;
	c->buckets[FUSE_ROOT_ID % GCLI_BUCKETS] = root;
	/*
	 * cache=shared needs the table mapped and the device's promise at
	 * INIT to send the extension; otherwise it is cache=auto.  No reply
	 * names the root: it has the slot the extension reserves for it.
	 */
	vqf_ver_table_init(&c->vt, NULL, 0);
	if (c->cfg.cache == VQF_GCLI_CACHE_SHARED && c->cfg.ver_base &&
	    (io->flags2 & VQF_FUSE_INIT_SHARED_VERSION) &&
	    !vqf_ver_table_init(&c->vt, c->cfg.ver_base, c->cfg.ver_size)) {
		struct fuse_entryver_out rev = {
			.version_index = VQF_VER_ROOT_INDEX,
		};
		const s64 *slot = vqf_ver_table_slot(&c->vt,
						     VQF_VER_ROOT_INDEX);
		struct vqf_ver_stamp none = { 0 };

		c->ver_on = true;
		/* Its version now: the root's attributes come later. */
		rev.initial_version = slot ? smp_load_acquire(slot) : 0;
		vqf_ver_inode_set_entry(&c->vt, &root->ver, &rev, &none);
		root->ver_entry = true;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->slock, NULL);
	if (c->cfg.dax_base) {
		int ret = gdax_init(&c->dax, c->cfg.dax_base,
				    c->cfg.dax_window, c->cfg.dax_range,
				    c->cfg.dax_stale, dax_send,
				    gcli_dax_isize, c);

		if (!ret && c->cfg.dax_auto) {
			ret = gdax_set_auto(&c->dax, c->cfg.dax_policy);
			if (ret)
				gdax_fini(&c->dax);
		}
		if (ret) {
			gc_dcache_destroy(&c->dc);
			pthread_mutex_destroy(&c->lock);
			pthread_mutex_destroy(&c->slock);
			free(root);
			free(c->files);
			free(c);
			return ret;
		}
		c->dax_on = true;
	}
	*out = c;
	return 0;
}

/*
 * What the device's notification queue delivers (fuse_notify_inval_inode,
 * fuse_notify_inval_entry, fuse_notify_delete).  The device is not
 * trusted: sizes must match the code exactly and names be proper.
 */
int vqf_gcli_notify(struct vqf_gcli *c, int code, const void *data, u32 len)
{
	char name[NAME_MAX + 1];

	switch (code) {
	case FUSE_NOTIFY_INVAL_INODE: {
		struct fuse_notify_inval_inode_out ii;
		struct ginode *i;
		u64 n = 0;

		if (len != sizeof(ii))
			break;
		memcpy(&ii, data, sizeof(ii));
		pthread_mutex_lock(&c->lock);
		i = *gcli_ifind(c, ii.ino);
		if (i) {
			gc_attr_invalidate(&i->ca, &c->attr_version);
			/* off < 0: attributes only; len <= 0: to the end. */
			if (ii.off >= 0)
				n = gc_pages_drop(&i->pc, (u64)ii.off,
						  ii.len > 0 ? (u64)ii.off +
						  (u64)ii.len : GC_NEVER);
		}
		pthread_mutex_unlock(&c->lock);
		STAT_ADD(c, notify_inval_inode, 1);
		if (n)
			STAT_ADD(c, pages_invalidated, n);
		return 0;
	}
	case FUSE_NOTIFY_INVAL_ENTRY:
	case FUSE_NOTIFY_DELETE: {
		struct fuse_notify_inval_entry_out ie;
		struct fuse_notify_delete_out de;
		u64 parent, child = 0, gone;
		u32 hdr, namelen;

		if (code == FUSE_NOTIFY_INVAL_ENTRY) {
			hdr = sizeof(ie);
			if (len < hdr)
				break;
			memcpy(&ie, data, hdr);
			parent = ie.parent;
			namelen = ie.namelen;
		} else {
			hdr = sizeof(de);
			if (len < hdr)
				break;
			memcpy(&de, data, hdr);
			parent = de.parent;
			child = de.child;
			namelen = de.namelen;
		}
		if (!namelen || namelen > NAME_MAX ||
		    len != hdr + namelen + 1 ||
		    ((const char *)data)[hdr + namelen])
			break;
		memcpy(name, (const char *)data + hdr, namelen + 1);
		if (strlen(name) != namelen || strchr(name, '/'))
			break;
		gone = gcli_dentry_drop(c, parent, name);
		gcli_attr_inval(c, parent);
		if (gone && (!child || gone == child))
			gcli_attr_inval(c, gone);
		STAT_ADD(c, notify_inval_entry, 1);
		return 0;
	}
	default:
		break;
	}
	STAT_ADD(c, notify_refused, 1);
	return -EINVAL;
}

void vqf_gcli_get_dax_stats(struct vqf_gcli *c, struct vqf_dax_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (c->dax_on)
		gdax_stats(&c->dax, out);
}

bool vqf_gcli_get_ver_stats(struct vqf_gcli *c, struct vqf_ver_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->vt.stats;
	pthread_mutex_unlock(&c->lock);
	return c->ver_on;
}

void vqf_gcli_get_stats(struct vqf_gcli *c, struct vqf_gcli_stats *out)
{
	pthread_mutex_lock(&c->slock);
	*out = c->st;
	pthread_mutex_unlock(&c->slock);
	pthread_mutex_lock(&c->lock);
	out->inodes = c->ninodes;
	pthread_mutex_unlock(&c->lock);
}

struct vqf_gdrv *vqf_gcli_drv(struct vqf_gcli *c)
{
	return c->g;
}

void vqf_gcli_free(struct vqf_gcli *c)
{
	unsigned int i;

	if (!c)
		return;
	if (caller.c == c)
		caller.c = NULL;
	for (i = 0; i < c->cfg.max_files; i++)
		if (c->files[i].used)
			vqf_gcli_close(c, (int)i);
	if (c->dax_on) {
		gcli_dax_unmap_all(c);
		dax_reap(c);
	}
	if (c->dax_on) {
		/* Pinned, mapped inodes: REMOVEMAPPING before FORGET. */
		for (i = 0; i < GCLI_BUCKETS; i++) {
			struct ginode *n;

			for (n = c->buckets[i]; n; n = n->next)
				if (n->gdi.ready)
					gdax_inode_evict(&c->dax, &n->gdi);
		}
		/* unmount: the host lets go of evicted files' mappings */
		gdax_flush_stale(&c->dax);
		gdax_fini(&c->dax);
	}
	pthread_mutex_lock(&c->lock);
	gc_dcache_destroy(&c->dc);
	for (i = 0; i < GCLI_BUCKETS; i++) {
		struct ginode *n, *next;

		for (n = c->buckets[i]; n; n = next) {
			next = n->next;
			if (n->nodeid != FUSE_ROOT_ID && n->nlookup)
				vqf_gdrv_forget(c->g, n->nodeid, n->nlookup);
			gc_pages_free(&n->pc);
			free(n);
		}
		c->buckets[i] = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	vqf_gdrv_forget_flush(c->g);
	for (i = 0; i < c->cfg.max_files; i++)
		pthread_mutex_destroy(&c->files[i].lock);
	free(c->files);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->slock);
	free(c);
}
