// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcli.c - a POSIX-like client over the simulated guest (see vqf_gcli.h).
 *
 * Inodes: every nodeid the server handed out (LOOKUP, CREATE, MKDIR,
 * MKNOD, SYMLINK, LINK, READDIRPLUS) is counted in a small hash table
 * with its nlookup; it is forgotten with that count when evicted (the
 * table is over icache_max and nobody holds it) or at vqf_gcli_free().
 * An operation holds a reference on the inodes it uses, so eviction never
 * forgets a nodeid that a request in flight still names.
 */
#define _GNU_SOURCE	/* SEEK_DATA, F_OFD_*, RENAME_* */
#include "vqf_gcli.h"
#include "gcache.h"
#include "gdax.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>

#define GCLI_BUCKETS	1024
#define GCLI_MAX_DEPTH	256
#define GCLI_MAX_LINKS	40		/* MAXSYMLINKS */
#define GCLI_DIRBUF	(32 * 1024)
#define GCLI_OFFSET_MAX	0x7fffffffffffffffULL

struct ginode {
	u64 nodeid;
	u64 nlookup;
	u32 refs;
	struct ginode *next;
	struct gc_attr ca;	/* attribute cache */
	struct gc_pages pc;	/* page cache (cache=auto/always) */
	/* Writeback: the size as the client knows it while pages are
	 * dirty (fuse_change_attributes keeps i_size from the server out).
	 */
	u64 wb_size;
	bool wb_size_set;
	/* The next size/mtime change seen is our own write-through. */
	bool own_write;
	struct gdax_inode gdi;	/* DAX; gdi.ready: mapped, pinned */
	struct vqf_ver_inode ver;	/* cache=shared (under c->lock) */
	/* cache=shared: an entry reply (LOOKUP, CREATE...) was applied, so
	 * ver has the slot the device gives it, if any.  Inodes known only
	 * from READDIRPLUS (which carries no slot) do not have it yet.
	 */
	bool ver_entry;
};

struct gfile {
	bool used, dir;
	u64 nodeid;
	u64 fh;
	int flags;
	off_t pos;
	u64 owner;		/* OFD / flock lock owner */
	bool ofd_locked;	/* an OFD lock was ever asked for */
	pthread_mutex_t lock;	/* pos */
	struct gmfile *mf;	/* DAX mappings' hold on this open */
};

/*
 * An open file that mappings keep open past close() (vma->vm_file): the
 * descriptor and each mapping hold a reference (under the client's lock);
 * the last one sends FLUSH and RELEASE and drops the inode.
 */
struct gmfile {
	struct gfile f;
	u32 refs;
};

struct vqf_gcli_map {
	struct gdax_vma *v;
	struct gmfile *mf;
};

struct vqf_gcli {
	struct vqf_gdrv *g;
	struct vqf_gcli_cfg cfg;
	u32 wchunk, rchunk;
	pthread_mutex_t lock;		/* inodes, file table */
	struct ginode *buckets[GCLI_BUCKETS];
	u64 ninodes;
	struct gfile *files;
	u64 posix_owner;
	struct gc_dcache dc;		/* under lock */
	u64 attr_version;		/* under lock (fc->attr_version) */
	u64 ttl;			/* entry and attr validity, ns */
	struct gdax dax;
	bool dax_on;
	/* cache=shared with a table the device agreed to keep us posted in */
	bool ver_on;
	struct vqf_ver_table vt;
	/* Evicted DAX inodes waiting for REMOVEMAPPING, then FORGET. */
	struct ginode *dax_dead;	/* under lock */
	pthread_mutex_t slock;
	struct vqf_gcli_stats st;
};

#define STAT_ADD(c, field, n) do {				\
	pthread_mutex_lock(&(c)->slock);			\
	(c)->st.field += (n);					\
	pthread_mutex_unlock(&(c)->slock);			\
} while (0)

/* ---- inodes ----------------------------------------------------------- */

static struct ginode **ifind(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode **pp = &c->buckets[nodeid % GCLI_BUCKETS];

	while (*pp && (*pp)->nodeid != nodeid)
		pp = &(*pp)->next;
	return pp;
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
			*pp = i->next;
			if (i->gdi.ready) {
				/* REMOVEMAPPING first, outside the lock */
				i->next = c->dax_dead;
				c->dax_dead = i;
				c->ninodes--;
				continue;
			}
			vqf_gdrv_forget(c->g, i->nodeid, i->nlookup);
			c->st.forgets += i->nlookup;
			c->ninodes--;
			gc_pages_free(&i->pc);
			free(i);
		}
	}
}

/* Count @n more lookups of @nodeid and take a reference. */
static int iget(struct vqf_gcli *c, u64 nodeid, u64 n)
{
	struct ginode **pp, *i;

	pthread_mutex_lock(&c->lock);
	pp = ifind(c, nodeid);
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

static void iput(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i;
	bool reap;

	if (nodeid == FUSE_ROOT_ID)
		return;
	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i && i->refs)
		i->refs--;
	if (c->ninodes > c->cfg.icache_max)
		trim_locked(c);
	reap = c->dax_dead;
	pthread_mutex_unlock(&c->lock);
	if (reap)
		dax_reap(c);
}

/* ---- caches ------------------------------------------------------------ */

static u64 now_ns(struct vqf_gcli *c)
{
	struct timespec ts;

	if (c->cfg.clock)
		return c->cfg.clock(c->cfg.clock_arg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

static bool caching(const struct vqf_gcli *c)
{
	return c->cfg.cache != VQF_GCLI_CACHE_NONE;
}

/* Page cache and writeback: not with cache=none (FOPEN_DIRECT_IO). */
static bool writeback(const struct vqf_gcli *c)
{
	return caching(c) && c->cfg.writeback && !c->dax_on;
}

/* Until when an entry or attributes got now stay valid. */
static u64 expiry(struct vqf_gcli *c)
{
	u64 now;

	switch (c->cfg.cache) {
	case VQF_GCLI_CACHE_NONE:
		return 0;
	case VQF_GCLI_CACHE_ALWAYS:
		return GC_NEVER;
	default:
		now = now_ns(c);
		return now + c->ttl < now ? GC_NEVER : now + c->ttl;
	}
}

static void iref_locked(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i = *ifind(c, nodeid);

	if (i && nodeid != FUSE_ROOT_ID)
		i->refs++;
}

/* A dentry's references going away (under the lock: no trimming here). */
static void dput_locked(void *ctx, u64 nodeid)
{
	struct vqf_gcli *c = ctx;
	struct ginode *i = *ifind(c, nodeid);

	if (i && i->refs && nodeid != FUSE_ROOT_ID)
		i->refs--;
}

/*
 * What a reply carrying attributes is judged against, sampled before the
 * request went out: the client's attr_version and, with cache=shared,
 * the inode's version stamp (for an entry request: the directory's, and
 * the extension the reply brings along).
 */
struct asamp {
	u64 av;
	struct vqf_ver_stamp st;	/* the inode's */
	bool entry;			/* LOOKUP, CREATE, ... */
	struct vqf_ver_stamp parent;	/* entry: the directory's */
	struct fuse_entryver_out raw;	/* entry: as the device wrote it */
	struct fuse_entryver_out ev;	/* ...validated */
	struct vqf_ver_stamp est;	/* entry: the stamp the reply set */
	bool dirplus;			/* READDIRPLUS: parent, no inode */
};

static void asample(struct vqf_gcli *c, u64 nodeid, struct asamp *s)
{
	static const struct vqf_ver_inode fresh;
	struct ginode *i;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&c->lock);
	s->av = c->attr_version;
	if (c->ver_on) {
		i = nodeid ? *ifind(c, nodeid) : NULL;
		s->st = vqf_ver_sample(&c->vt, i ? &i->ver : &fresh);
	}
	pthread_mutex_unlock(&c->lock);
}

/*
 * Before an entry request to directory @parent: sample, and with
 * cache=shared ask for the extension as the last out arg (call after the
 * request's other out args).
 */
static void asample_entry(struct vqf_gcli *c, u64 parent, struct vqf_req *r,
			  struct asamp *s)
{
	asample(c, 0, s);
	s->entry = true;
	if (!c->ver_on)
		return;
	pthread_mutex_lock(&c->lock);
	s->parent = vqf_ver_sample(&c->vt, &(*ifind(c, parent))->ver);
	pthread_mutex_unlock(&c->lock);
	vqf_req_add_out(r, &s->raw, sizeof(s->raw));
	r->out_argvar = true;
}

/* After the entry request: validate what came back as its extension. */
static void asample_reply(struct vqf_gcli *c, const struct vqf_req *r,
			  struct asamp *s)
{
	if (!c->ver_on || !s->entry || !r->out_numargs)
		return;
	vqf_ver_entryver_parse(&c->vt, &s->raw,
			       r->out_args[r->out_numargs - 1].size, &s->ev);
}

/*
 * cache=shared: may cached data of the inode be used?  VALID proves it
 * whatever its age; STALE refutes it; UNKNOWN (no slot) leaves it to the
 * timeout.  Under c->lock.
 */
static bool attr_fresh_locked(struct vqf_gcli *c, struct ginode *i, u64 now)
{
	if (!i->ca.known)
		return false;
	if (c->ver_on) {
		switch (vqf_ver_inode_check(&c->vt, &i->ver)) {
		case VQF_VER_VALID:
			STAT_ADD(c, ver_valid, 1);
			return true;
		case VQF_VER_STALE:
			STAT_ADD(c, ver_stale, 1);
			return false;
		default:
			break;
		}
	}
	return i->ca.expire > now;
}

/*
 * Attributes from a reply to a request sent at version @sampled
 * (fuse_change_attributes): ignored if something newer is known.  A
 * changed size or mtime drops the clean page cache, as auto_inval_data.
 */
static void attr_got(struct vqf_gcli *c, u64 nodeid,
		     const struct fuse_attr *a, struct asamp *s)
{
	struct vqf_ver_stamp st = s->st;
	struct ginode *i;
	struct fuse_attr old;
	bool known;
	u64 dropped = 0;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (!i) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	if (c->ver_on && s->entry) {
		st = vqf_ver_inode_set_entry(&c->vt, &i->ver, &s->ev, &s->st);
		s->est = st;
		i->ver_entry = true;
	}
	old = i->ca.attr;
	known = i->ca.known;
	if ((c->ver_on && vqf_ver_attr_older(&c->vt, &i->ver, &st)) ||
	    !gc_attr_apply(&i->ca, a, s->av, &c->attr_version,
			   expiry(c))) {
		pthread_mutex_unlock(&c->lock);
		STAT_ADD(c, attr_stale, 1);
		return;
	}
	if (c->ver_on)
		vqf_ver_attr_publish(&i->ver, &st);
	/* With writeback the client's own writes move size and mtime:
	 * trusted, as fuse_change_attributes does for a writeback inode.
	 */
	if (known && i->pc.count && !i->pc.dirty && !writeback(c) &&
	    !i->own_write &&
	    (old.size != a->size || old.mtime != a->mtime ||
	     old.mtimensec != a->mtimensec))
		dropped = gc_pages_drop(&i->pc, 0, GC_NEVER);
	i->own_write = false;
	pthread_mutex_unlock(&c->lock);
	if (dropped)
		STAT_ADD(c, pages_invalidated, dropped);
}

/* A change this client made: cached attributes are stale. */
static void attr_inval(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i) {
		gc_attr_invalidate(&i->ca, &c->attr_version);
		if (c->ver_on)
			vqf_ver_attr_local_change(&c->vt, &i->ver);
	}
	pthread_mutex_unlock(&c->lock);
}

/* The cached attributes of @nodeid if still valid. */
static bool attr_cached(struct vqf_gcli *c, u64 nodeid, struct fuse_attr *a)
{
	struct ginode *i;
	bool ok = false;

	if (!caching(c))
		return false;
	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i && attr_fresh_locked(c, i, now_ns(c))) {
		*a = i->ca.attr;
		ok = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (ok)
		STAT_ADD(c, attr_hits, 1);
	return ok;
}

/* With dirty pages the client's size is the file's (writeback). */
static void attr_fix_size(struct vqf_gcli *c, u64 nodeid, struct fuse_attr *a)
{
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i && i->wb_size_set)
		a->size = i->wb_size;
	pthread_mutex_unlock(&c->lock);
}

/*
 * (@parent, @name) now names @nodeid (0: nothing) as far as we know;
 * with cache=shared, as of the versions in @s (NULL: none proven).
 */
static void dentry_set(struct vqf_gcli *c, u64 parent, const char *name,
		       u64 nodeid, const struct asamp *s)
{
	struct vqf_ver_dentry dv;

	if (!caching(c))
		return;
	vqf_ver_dentry_init(&dv);
	pthread_mutex_lock(&c->lock);
	if (c->ver_on && s && (s->entry || s->dirplus)) {
		struct vqf_ver_stamp est = s->est;
		const struct vqf_ver_dentry *old;
		u64 nid;

		/*
		 * READDIRPLUS proves a name only through the directory.  An
		 * entry that already names this inode may hold the inode's
		 * version from a LOOKUP, which proves the name even after the
		 * directory changes: keep that half.
		 */
		if (s->dirplus && nodeid &&
		    gc_d_lookup_ver(&c->dc, parent, name, 0, &nid, &old) ==
		    GC_POSITIVE && nid == nodeid)
			est = vqf_ver_dentry_entry(old);
		vqf_ver_dentry_set(&c->vt, &dv, nodeid ? &est : NULL,
				   &s->parent);
	}
	if (nodeid) {
		iref_locked(c, nodeid);
		iref_locked(c, parent);
	}
	gc_d_set_ver(&c->dc, parent, name, nodeid, expiry(c), &dv);
	pthread_mutex_unlock(&c->lock);
}

/* Forgets (@parent, @name); returns the nodeid it named, 0 if unknown. */
static u64 dentry_drop(struct vqf_gcli *c, u64 parent, const char *name)
{
	u64 nodeid = 0;

	if (!caching(c))
		return 0;
	pthread_mutex_lock(&c->lock);
	if (gc_d_lookup(&c->dc, parent, name, 0, &nodeid) == GC_MISS)
		nodeid = 0;
	gc_d_drop(&c->dc, parent, name);
	pthread_mutex_unlock(&c->lock);
	return nodeid;
}

static void pages_truncate(struct vqf_gcli *c, u64 nodeid, u64 size);
static int wb_flush(struct vqf_gcli *c, u64 nodeid, u64 fh);
static int setattr(struct vqf_gcli *c, u64 nodeid,
		   struct fuse_setattr_in *si);

/* Truncation of a mapped inode: whole ranges past the size go. */
static void dax_truncate(struct vqf_gcli *c, u64 nodeid, u64 size)
{
	struct ginode *i;
	bool mapped;

	if (!c->dax_on)
		return;
	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	mapped = i && i->gdi.ready;
	pthread_mutex_unlock(&c->lock);
	/* A mapped inode is pinned: i stays. */
	if (mapped)
		gdax_truncate(&c->dax, &i->gdi, size);
}

/* An entry the server returned: count its lookup (nodeid 0: none). */
static int entry_got(struct vqf_gcli *c, const struct fuse_entry_out *e,
		     bool keep_ref)
{
	int ret;

	if (!e->nodeid)
		return 0;
	ret = iget(c, e->nodeid, 1);
	if (!ret && !keep_ref)
		iput(c, e->nodeid);
	return ret;
}

/* ---- requests --------------------------------------------------------- */

static void creds(struct vqf_gcli *c, struct vqf_req *r)
{
	r->in_h.uid = c->cfg.uid;
	r->in_h.gid = c->cfg.gid;
	r->in_h.pid = c->cfg.pid;
}

static int send(struct vqf_gcli *c, struct vqf_gdrv_call *cl)
{
	creds(c, &cl->req);
	STAT_ADD(c, requests, 1);
	if (cl->req.in_h.opcode == FUSE_LOOKUP)
		STAT_ADD(c, lookups, 1);
	return vqf_gdrv_call(c->g, cl, -1);
}

static int dax_send(void *ctx, struct vqf_gdrv_call *cl)
{
	return send(ctx, cl);
}

static int dax_isize(void *ctx, struct gdax_inode *gi, u64 fh, u64 *size);

static void call_init(struct vqf_gdrv_call *cl, u32 opcode, u64 nodeid)
{
	memset(cl, 0, sizeof(*cl));
	vqf_req_init(&cl->req, opcode, nodeid, 0);
}

static void attr_to_stat(const struct fuse_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = a->rdev;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_blksize = a->blksize ? a->blksize : 4096;
	st->st_atim.tv_sec = (time_t)a->atime;
	st->st_atim.tv_nsec = a->atimensec;
	st->st_mtim.tv_sec = (time_t)a->mtime;
	st->st_mtim.tv_nsec = a->mtimensec;
	st->st_ctim.tv_sec = (time_t)a->ctime;
	st->st_ctim.tv_nsec = a->ctimensec;
}

/* LOOKUP; @s receives the samples its reply is judged against. */
static int do_lookup(struct vqf_gcli *c, u64 parent, const char *name,
		     struct fuse_entry_out *e, struct asamp *s)
{
	struct vqf_gdrv_call cl;
	size_t n = strlen(name);
	int ret;

	memset(&cl, 0, sizeof(cl));
	if (n > VQF_FUSE_NAME_MAX)
		return -ENAMETOOLONG;
	ret = vqf_req_init_lookup(&cl.req, 0, parent, name, (u32)n, e, NULL);
	if (ret)
		return ret;
	asample_entry(c, parent, &cl.req, s);
	memset(e, 0, sizeof(*e));
	ret = send(c, &cl);
	if (ret)
		return ret;
	asample_reply(c, &cl.req, s);
	/* nodeid 0 is a negative entry (fuse_lookup_name). */
	if (!e->nodeid)
		return -ENOENT;
	return entry_got(c, e, true);
}

/*
 * A name this client created (CREATE, MKNOD, MKDIR, SYMLINK, LINK):
 * count the lookup, cache the entry and its attributes; the directory
 * changed (fuse_dir_changed).  @parent is still referenced by the caller.
 */
static int new_entry(struct vqf_gcli *c, u64 parent, const char *name,
		     const struct fuse_entry_out *e, struct asamp *s)
{
	int ret = entry_got(c, e, false);

	if (ret || !e->nodeid)
		return ret;
	attr_got(c, e->nodeid, &e->attr, s);
	dentry_set(c, parent, name, e->nodeid, s);
	attr_inval(c, parent);
	return 0;
}

static ssize_t do_readlink(struct vqf_gcli *c, u64 nodeid, char *buf,
			   size_t size)
{
	struct vqf_gdrv_call cl;
	int ret;

	call_init(&cl, FUSE_READLINK, nodeid);
	vqf_req_add_out(&cl.req, buf, (u32)size);
	ret = send(c, &cl);
	if (ret)
		return ret;
	return cl.req.out_args[0].size;
}

/* GETATTR (through @fh when nonzero) into the cache and @a. */
static int getattr_node(struct vqf_gcli *c, u64 nodeid, u64 fh,
			struct fuse_attr *a)
{
	struct vqf_gdrv_call cl;
	struct fuse_getattr_in gi = { 0 };
	struct fuse_attr_out ao;
	struct asamp as;
	int ret;

	asample(c, nodeid, &as);
	if (fh) {
		gi.getattr_flags = FUSE_GETATTR_FH;
		gi.fh = fh;
	}
	memset(&cl, 0, sizeof(cl));
	vqf_req_init_getattr(&cl.req, 0, nodeid, &gi, &ao);
	ret = send(c, &cl);
	if (ret)
		return ret;
	attr_got(c, nodeid, &ao.attr, &as);
	*a = ao.attr;
	return 0;
}

/* Valid attributes of @nodeid: cached, or fetched (fuse_update_attributes). */
static int node_attr(struct vqf_gcli *c, u64 nodeid, u64 fh,
		     struct fuse_attr *a)
{
	int ret = 0;

	if (!attr_cached(c, nodeid, a))
		ret = getattr_node(c, nodeid, fh, a);
	if (!ret)
		attr_fix_size(c, nodeid, a);
	return ret;
}

/*
 * One step of a path walk: @name in @dir, whose reference is given back.
 * The dentry cache answers if it can (a negative entry is -ENOENT);
 * otherwise LOOKUP.  *@fresh tells whether @a is valid attributes or only
 * the inode's last known ones (good for the file type).
 */
static int walk_one(struct vqf_gcli *c, u64 dir, const char *name, u64 *out,
		    struct fuse_attr *a, bool *fresh)
{
	struct fuse_entry_out e;
	enum gc_dhit hit = GC_MISS;
	struct asamp as;
	u64 nid = 0, now = now_ns(c);
	int ret;

	pthread_mutex_lock(&c->lock);
	if (caching(c) && c->ver_on) {
		const struct vqf_ver_dentry *dv = NULL;

		/* Proven by the versions, refuted, or up to the timeout. */
		hit = gc_d_lookup_ver(&c->dc, dir, name, now, &nid, &dv);
		if (hit != GC_MISS) {
			enum vqf_ver_state vs = vqf_ver_dentry_check(&c->vt,
								     dv);

			if (vs == VQF_VER_VALID)
				STAT_ADD(c, ver_valid, 1);
			else if (vs == VQF_VER_STALE)
				STAT_ADD(c, ver_stale, 1);
			if (vs == VQF_VER_STALE ||
			    (vs == VQF_VER_UNKNOWN && gc_d_expired(dv, now)))
				hit = GC_MISS;
			/*
			 * An inode known only from READDIRPLUS has no slot
			 * yet: one LOOKUP gets it (and the attributes with
			 * it), instead of living on the timeout.
			 */
			if (hit == GC_POSITIVE &&
			    !(*ifind(c, nid))->ver_entry)
				hit = GC_MISS;
		}
	} else if (caching(c)) {
		hit = gc_d_lookup(&c->dc, dir, name, now, &nid);
	}
	if (hit == GC_POSITIVE) {
		struct ginode *i = *ifind(c, nid);

		iref_locked(c, nid);
		*a = i->ca.attr;
		*fresh = attr_fresh_locked(c, i, now);
	}
	pthread_mutex_unlock(&c->lock);
	if (hit == GC_POSITIVE) {
		STAT_ADD(c, dentry_hits, 1);
		iput(c, dir);
		*out = nid;
		return 0;
	}
	if (hit == GC_NEGATIVE) {
		STAT_ADD(c, dentry_neg_hits, 1);
		iput(c, dir);
		return -ENOENT;
	}
	ret = do_lookup(c, dir, name, &e, &as);
	if (ret == -ENOENT)
		dentry_set(c, dir, name, 0, &as);
	if (!ret) {
		attr_got(c, e.nodeid, &e.attr, &as);
		dentry_set(c, dir, name, e.nodeid, &as);
		*a = e.attr;
		*fresh = true;
		*out = e.nodeid;
	}
	iput(c, dir);
	return ret;
}

/* ---- paths -------------------------------------------------------------- */

struct walk {
	char buf[PATH_MAX * 2];
	char *comp[GCLI_MAX_DEPTH];
	unsigned int n;
};

/* Split @path into components; "." dropped, ".." pops (never above /). */
static int split(struct walk *w, const char *path)
{
	char *s, *save = NULL;

	if (!path)
		return -EFAULT;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	w->n = 0;
	strcpy(w->buf, path);
	for (s = strtok_r(w->buf, "/", &save); s;
	     s = strtok_r(NULL, "/", &save)) {
		if (!strcmp(s, "."))
			continue;
		if (!strcmp(s, "..")) {
			if (w->n)
				w->n--;
			continue;
		}
		if (w->n == GCLI_MAX_DEPTH)
			return -ENAMETOOLONG;
		if (strlen(s) > NAME_MAX)
			return -ENAMETOOLONG;
		w->comp[w->n++] = s;
	}
	return 0;
}

/*
 * Walks @path from the root.  With @parent, stops before the last
 * component and copies its name to @last (ENOENT/EINVAL for the root).
 * Symlinks are followed in the guest, as the VFS does: always in the
 * middle of a path, at the end when @follow.  On success the result
 * holds a reference (iput() it).
 */
static int resolve(struct vqf_gcli *c, const char *path, bool parent,
		   bool follow, u64 *out, char *last,
		   struct fuse_attr *attr)
{
	struct walk *w = malloc(sizeof(*w));
	struct fuse_attr ea;
	char *link = NULL;
	unsigned int i, links = 0;
	u64 cur = FUSE_ROOT_ID, next;
	bool fresh = false;
	int ret;

	if (!w)
		return -ENOMEM;
	ret = split(w, path);
	if (ret)
		goto out;
restart:
	cur = FUSE_ROOT_ID;
	if (attr)
		memset(attr, 0, sizeof(*attr));
	if (parent) {
		if (!w->n) {
			ret = -EBUSY;	/* the root has no name */
			goto out;
		}
		strcpy(last, w->comp[w->n - 1]);
	}
	for (i = 0; i < w->n - (parent ? 1 : 0); i++) {
		bool is_last = i + 1 == w->n;

		ret = walk_one(c, cur, w->comp[i], &next, &ea, &fresh);
		if (ret)
			goto out;
		cur = next;
		if (attr)
			*attr = ea;
		if (S_ISLNK(ea.mode) && (!is_last || follow)) {
			ssize_t n;
			unsigned int k;

			if (++links > GCLI_MAX_LINKS) {
				iput(c, cur);
				ret = -ELOOP;
				goto out;
			}
			if (!link)
				link = malloc(PATH_MAX * 2);
			if (!link) {
				iput(c, cur);
				ret = -ENOMEM;
				goto out;
			}
			n = do_readlink(c, cur, link, PATH_MAX - 1);
			iput(c, cur);
			if (n < 0) {
				ret = (int)n;
				goto out;
			}
			link[n] = 0;
			/* New path: the link's directory (unless the target
			 * is absolute: the share's root), the target, then
			 * what was left of ours.
			 */
			{
				char *np = malloc(PATH_MAX * 2);
				size_t off = 0;

				if (!np) {
					ret = -ENOMEM;
					goto out;
				}
				np[0] = 0;
				if (link[0] != '/')
					for (k = 0; k < i; k++)
						off += snprintf(np + off,
							PATH_MAX * 2 - off,
							"%s/", w->comp[k]);
				off += snprintf(np + off, PATH_MAX * 2 - off,
						"%s", link);
				for (k = i + 1; k < w->n; k++) {
					off += snprintf(np + off,
							PATH_MAX * 2 - off,
							"/%s", w->comp[k]);
				}
				if (off >= PATH_MAX) {
					free(np);
					ret = -ENAMETOOLONG;
					goto out;
				}
				ret = split(w, np);
				free(np);
				if (ret)
					goto out;
			}
			goto restart;
		}
	}
	*out = cur;
	ret = 0;
	if (!attr || parent)
		goto out;
	/* Attributes the walk did not bring (the root is never looked up,
	 * a dentry hit may have outlived its inode's attributes).
	 */
	if (cur == FUSE_ROOT_ID || !fresh)
		ret = node_attr(c, cur, 0, attr);
	else
		attr_fix_size(c, cur, attr);
	if (ret)
		iput(c, cur);
out:
	free(link);
	free(w);
	return ret;
}

/* ---- setup ---------------------------------------------------------------- */

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
	    gc_dcache_init(&c->dc, c->cfg.icache_max, dput_locked, c)) {
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
				    dax_send, dax_isize, c);

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

/* ---- files ------------------------------------------------------------- */

static struct gfile *fget(struct vqf_gcli *c, int fd)
{
	struct gfile *f;

	if (fd < 0 || (unsigned int)fd >= c->cfg.max_files)
		return NULL;
	pthread_mutex_lock(&c->lock);
	f = c->files[fd].used ? &c->files[fd] : NULL;
	pthread_mutex_unlock(&c->lock);
	return f;
}

static int falloc(struct vqf_gcli *c, u64 nodeid, u64 fh, int flags, bool dir)
{
	unsigned int i;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->cfg.max_files; i++) {
		struct gfile *f = &c->files[i];

		if (f->used)
			continue;
		f->used = true;
		f->dir = dir;
		f->nodeid = nodeid;
		f->fh = fh;
		f->flags = flags;
		f->pos = 0;
		f->owner = 0x0fd00000ULL + i + ((u64)(uintptr_t)c << 16);
		pthread_mutex_unlock(&c->lock);
		return (int)i;
	}
	pthread_mutex_unlock(&c->lock);
	return -EMFILE;
}

static int lk_call(struct vqf_gcli *c, const struct gfile *f, u32 opcode,
		   u64 owner, u32 lk_flags, struct fuse_file_lock *lk,
		   struct fuse_lk_out *lo)
{
	struct vqf_gdrv_call cl;
	struct fuse_lk_in li = { .fh = f->fh, .owner = owner, .lk = *lk,
				 .lk_flags = lk_flags };

	call_init(&cl, opcode, f->nodeid);
	vqf_req_add_in(&cl.req, &li, sizeof(li));
	if (lo)
		vqf_req_add_out(&cl.req, lo, sizeof(*lo));
	return send(c, &cl);
}

/*
 * Linux's close path: an OFD lock goes with the last reference to its open
 * file (locks_remove_file sends an unlock for the file's owner), POSIX locks
 * of the process go with any close of the file (fuse_flush's lock_owner is
 * the process's), flock locks go with RELEASE's FLOCK_UNLOCK.
 */
static void release(struct vqf_gcli *c, const struct gfile *f)
{
	struct vqf_gdrv_call cl;
	struct fuse_release_in ri = { .fh = f->fh, .flags = (u32)f->flags };

	if (!f->dir) {
		struct fuse_flush_in fi = { .fh = f->fh,
					    .lock_owner = c->posix_owner };

		if (f->ofd_locked) {
			struct fuse_file_lock lk = { .end = GCLI_OFFSET_MAX,
						     .type = F_UNLCK };

			lk_call(c, f, FUSE_SETLK, f->owner, 0, &lk, NULL);
		}
		call_init(&cl, FUSE_FLUSH, f->nodeid);
		vqf_req_add_in(&cl.req, &fi, sizeof(fi));
		send(c, &cl);
		ri.release_flags = FUSE_RELEASE_FLOCK_UNLOCK;
		ri.lock_owner = f->owner;
	}
	call_init(&cl, f->dir ? FUSE_RELEASEDIR : FUSE_RELEASE, f->nodeid);
	vqf_req_add_in(&cl.req, &ri, sizeof(ri));
	send(c, &cl);
}

/*
 * The flags OPEN/CREATE carry.  With writeback the client may read what
 * it partly overwrites, and it places appends itself: write-only opens
 * become read-write and O_APPEND stays here (as passthrough_ll does on
 * the server side for a writeback mount).
 */
static int wire_flags(const struct vqf_gcli *c, int flags)
{
	if (!writeback(c) && !c->dax_on)
		return flags;
	/* A shared writable mapping needs read access too (DAX). */
	if ((flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	return writeback(c) ? flags & ~O_APPEND : flags;
}

/* cache=auto opens without FOPEN_KEEP_CACHE: clean pages are dropped. */
static void close_to_open(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i;
	u64 n = 0;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i && !i->pc.dirty)
		n = gc_pages_drop(&i->pc, 0, GC_NEVER);
	pthread_mutex_unlock(&c->lock);
	if (n)
		STAT_ADD(c, pages_invalidated, n);
}

static int open_node(struct vqf_gcli *c, u64 nodeid, int flags, bool dir,
		     u64 *fh)
{
	struct vqf_gdrv_call cl;
	struct fuse_open_in oi = { .flags = (u32)(flags & ~(O_CREAT | O_EXCL |
							   O_NOCTTY)) };
	struct fuse_open_out oo;
	int ret;

	call_init(&cl, dir ? FUSE_OPENDIR : FUSE_OPEN, nodeid);
	vqf_req_add_in(&cl.req, &oi, sizeof(oi));
	vqf_req_add_out(&cl.req, &oo, sizeof(oo));
	ret = send(c, &cl);
	if (!ret)
		*fh = oo.fh;
	return ret;
}

int vqf_gcli_open(struct vqf_gcli *c, const char *path, int flags,
		  mode_t mode)
{
	char name[NAME_MAX + 1];
	struct fuse_attr a;
	u64 nodeid = 0, parent, fh = 0;
	bool dir = flags & O_DIRECTORY;
	int ret, fd;

	STAT_ADD(c, calls, 1);
	if (flags & O_CREAT) {
		struct fuse_entry_out e;

		ret = resolve(c, path, true, true, &parent, name, NULL);
		if (ret)
			return ret == -EBUSY ? -EISDIR : ret;
		struct asamp as;

		ret = do_lookup(c, parent, name, &e, &as);
		if (!ret && (flags & O_EXCL)) {
			iput(c, e.nodeid);
			iput(c, parent);
			return -EEXIST;
		}
		if (ret == -ENOENT) {
			struct vqf_gdrv_call cl;
			struct fuse_create_in ci = {
				.flags = (u32)(wire_flags(c, flags) &
					       ~(O_CREAT | O_EXCL | O_NOCTTY)),
				.mode = mode, .umask = 0,
			};
			struct fuse_open_out oo;

			call_init(&cl, FUSE_CREATE, parent);
			vqf_req_add_in(&cl.req, &ci, sizeof(ci));
			vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
			vqf_req_add_out(&cl.req, &e, sizeof(e));
			vqf_req_add_out(&cl.req, &oo, sizeof(oo));
			asample_entry(c, parent, &cl.req, &as);
			memset(&e, 0, sizeof(e));
			ret = send(c, &cl);
			if (!ret) {
				asample_reply(c, &cl.req, &as);
				ret = entry_got(c, &e, true);
			}
			if (!ret) {
				attr_got(c, e.nodeid, &e.attr, &as);
				dentry_set(c, parent, name, e.nodeid, &as);
				attr_inval(c, parent);
			}
			iput(c, parent);
			if (ret)
				return ret;
			fd = falloc(c, e.nodeid, oo.fh, flags, false);
			if (fd < 0) {
				struct gfile tmp = { .nodeid = e.nodeid,
						     .fh = oo.fh,
						     .flags = flags };

				release(c, &tmp);
				iput(c, e.nodeid);
			}
			return fd;
		}
		iput(c, parent);
		if (ret)
			return ret;
		nodeid = e.nodeid;
		a = e.attr;
		if (S_ISLNK(a.mode)) {
			/* O_CREAT on an existing symlink follows it. */
			iput(c, nodeid);
			ret = resolve(c, path, false, true, &nodeid, NULL, &a);
			if (ret)
				return ret;
		}
	} else {
		ret = resolve(c, path, false, !(flags & O_NOFOLLOW), &nodeid,
			      NULL, &a);
		if (ret)
			return ret;
	}
	if (S_ISLNK(a.mode)) {
		ret = -ELOOP;
		goto fail;
	}
	if (dir && !S_ISDIR(a.mode)) {
		ret = -ENOTDIR;
		goto fail;
	}
	if (S_ISDIR(a.mode) && !dir) {
		if ((flags & O_ACCMODE) != O_RDONLY) {
			ret = -EISDIR;
			goto fail;
		}
		dir = true;
	}
	ret = open_node(c, nodeid, dir ? flags : wire_flags(c, flags), dir,
			&fh);
	if (ret)
		goto fail;
	if (!dir && (flags & O_TRUNC)) {
		pages_truncate(c, nodeid, 0);
		attr_inval(c, nodeid);
	} else if (!dir && c->cfg.cache == VQF_GCLI_CACHE_AUTO) {
		close_to_open(c, nodeid);
	}
	fd = falloc(c, nodeid, fh, flags, dir);
	if (fd < 0) {
		struct gfile tmp = { .nodeid = nodeid, .fh = fh,
				     .flags = flags, .dir = dir };

		release(c, &tmp);
		ret = fd;
		goto fail;
	}
	return fd;
fail:
	iput(c, nodeid);
	return ret;
}

static bool dax_file_put(struct vqf_gcli *c, struct gmfile *mf);

int vqf_gcli_close(struct vqf_gcli *c, int fd)
{
	struct gfile *f = fget(c, fd), copy;
	int ret = 0;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	pthread_mutex_lock(&c->lock);
	copy = *f;
	f->used = false;
	f->mf = NULL;
	pthread_mutex_unlock(&c->lock);
	/* fuse_flush: dirty pages reach the server before FLUSH, and a
	 * failed writeback is close()'s error.
	 */
	if (!copy.dir && (copy.flags & O_ACCMODE) != O_RDONLY)
		ret = wb_flush(c, copy.nodeid, copy.fh);
	if (dax_file_put(c, copy.mf))
		return ret;	/* mapped: the last munmap releases */
	free(copy.mf);
	release(c, &copy);
	iput(c, copy.nodeid);
	return ret;
}

static int getattr_fh(struct vqf_gcli *c, struct gfile *f,
		      struct fuse_attr *a)
{
	return getattr_node(c, f->nodeid, f->fh, a);
}

/* ---- page cache ---------------------------------------------------------- */

#define GCLI_WB_MAX_DIRTY	1024	/* pages per inode before writeback */

/* Truncation: pages past @size go, the last one is cut. */
static void pages_truncate(struct vqf_gcli *c, u64 nodeid, u64 size)
{
	u32 in = (u32)(size % GC_PAGE_SIZE);
	struct gc_page *p;
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i) {
		gc_pages_drop(&i->pc, size + (in ? GC_PAGE_SIZE - in : 0),
			      GC_NEVER);
		p = in ? gc_page_find(&i->pc, size / GC_PAGE_SIZE) : NULL;
		if (p && p->len > in) {
			p->len = in;
			if (p->dirty_to > in)
				p->dirty_to = in;
			if (p->dirty_to && p->dirty_from >= p->dirty_to)
				gc_page_clean(&i->pc, p);
		}
		if (i->wb_size_set)
			i->wb_size = size;
	}
	pthread_mutex_unlock(&c->lock);
}

/* Drops the pages of [@off, @off + @len) (fallocate, copy_file_range). */
static void pages_drop(struct vqf_gcli *c, u64 nodeid, u64 off, u64 len)
{
	struct ginode *i;
	u64 n = 0;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i)
		n = gc_pages_drop(&i->pc, off, len ? off + len : GC_NEVER);
	pthread_mutex_unlock(&c->lock);
	if (n)
		STAT_ADD(c, pages_invalidated, n);
}

/* A write that went through to the server: cached pages follow it. */
static void pages_written(struct vqf_gcli *c, u64 nodeid, const u8 *buf,
			  u64 off, u64 n)
{
	struct ginode *i;
	u64 done = 0;

	if (!caching(c))
		return;
	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i)
		i->own_write = true;
	while (i && done < n) {
		u64 pos = off + done;
		u32 in = (u32)(pos % GC_PAGE_SIZE);
		u32 take = GC_PAGE_SIZE - in < n - done ?
			   GC_PAGE_SIZE - in : (u32)(n - done);
		struct gc_page *p = gc_page_find(&i->pc, pos / GC_PAGE_SIZE);

		/* A whole page written is a page we know (Linux writes
		 * through its page cache).
		 */
		if (!p && take == GC_PAGE_SIZE) {
			p = gc_page_get(&i->pc, pos / GC_PAGE_SIZE);
			if (p)
				p->len = 0;
		}
		if (p && p->len >= in) {
			memcpy(p->data + in, buf + done, take);
			if (in + take > p->len)
				p->len = in + take;
		} else if (p) {
			/* A gap before the new bytes: let a read fetch it. */
			gc_pages_drop(&i->pc, pos, pos + 1);
		}
		done += take;
	}
	pthread_mutex_unlock(&c->lock);
}

/*
 * One READ of pages [@idx, @idx + @np) into the cache; dirty pages keep
 * their bytes.  Returns the bytes read (short at end of file) or -errno.
 */
static ssize_t fill_pages(struct vqf_gcli *c, struct gfile *f, u64 idx,
			  u32 np)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	u32 size = np * GC_PAGE_SIZE, got, k;
	struct fuse_read_in ri = { .fh = f->fh, .offset = idx * GC_PAGE_SIZE,
				   .size = size, .flags = (u32)f->flags };
	struct vqf_page_desc pd = { .offset = 0, .length = size };
	struct vqf_gdrv_call cl;
	struct ginode *i;
	u8 *buf;
	int ret;

	buf = vqf_gram_alloc(ram, size, false);
	if (!buf)
		return -ENOMEM;
	pd.page = buf;
	memset(&cl, 0, sizeof(cl));
	vqf_req_init_read(&cl.req, FUSE_READ, 0, f->nodeid, &ri, &pd, 1,
			  false);
	ret = send(c, &cl);
	if (ret) {
		vqf_gram_release(ram, buf);
		return ret;
	}
	got = cl.req.out_args[0].size;
	pthread_mutex_lock(&c->lock);
	i = *ifind(c, f->nodeid);
	for (k = 0; i && k * GC_PAGE_SIZE < got; k++) {
		u32 len = got - k * GC_PAGE_SIZE;
		struct gc_page *p = gc_page_get(&i->pc, idx + k);

		if (!p)
			break;
		if (p->dirty_to)
			continue;
		if (len > GC_PAGE_SIZE)
			len = GC_PAGE_SIZE;
		memcpy(p->data, buf + k * GC_PAGE_SIZE, len);
		p->len = len;
	}
	pthread_mutex_unlock(&c->lock);
	vqf_gram_release(ram, buf);
	STAT_ADD(c, pages_read, k);
	STAT_ADD(c, bytes_copied, got);
	return got;
}

/*
 * Copies what the cache holds of page @idx from byte @in: returns the
 * bytes copied, 0 on a miss, -1 for a page that ends at @in (end of file
 * as far as that page knows).
 */
static ssize_t page_copy(struct vqf_gcli *c, u64 nodeid, u64 idx, u32 in,
			 u8 *dst, u32 want)
{
	struct gc_page *p;
	struct ginode *i;
	ssize_t r = 0;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	p = i ? gc_page_find(&i->pc, idx) : NULL;
	if (p && p->len > in) {
		r = p->len - in < want ? p->len - in : want;
		memcpy(dst, p->data + in, (size_t)r);
	} else if (p && p->len == in && p->len < GC_PAGE_SIZE) {
		r = -1;
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/*
 * A hole the server has no bytes for, below the size the client knows
 * (a writeback extension not written back yet): zeros in the cache.
 */
static void page_zero_to(struct vqf_gcli *c, u64 nodeid, u64 idx, u32 len)
{
	struct gc_page *p;
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	p = i ? gc_page_get(&i->pc, idx) : NULL;
	if (p && p->len < len) {
		memset(p->data + p->len, 0, len - p->len);
		p->len = len;
	}
	pthread_mutex_unlock(&c->lock);
}

/* read() through the page cache, bounded by the size the client knows. */
static ssize_t cached_pread(struct vqf_gcli *c, struct gfile *f, u8 *buf,
			    size_t n, off_t off)
{
	u32 max_np = c->rchunk / GC_PAGE_SIZE ? c->rchunk / GC_PAGE_SIZE : 1;
	struct fuse_attr a;
	size_t done = 0;
	bool filled = false;
	int ret;

	ret = node_attr(c, f->nodeid, f->fh, &a);
	if (ret)
		return ret;
	if ((u64)off >= a.size)
		return 0;
	if (n > a.size - (u64)off)
		n = (size_t)(a.size - (u64)off);
	while (done < n) {
		u64 pos = (u64)off + done, idx = pos / GC_PAGE_SIZE;
		u32 in = (u32)(pos % GC_PAGE_SIZE);
		u32 want = GC_PAGE_SIZE - in < n - done ?
			   GC_PAGE_SIZE - in : (u32)(n - done);
		ssize_t r = page_copy(c, f->nodeid, idx, in, buf + done, want);
		u32 np = 1;

		if (r > 0) {
			STAT_ADD(c, page_hits, 1);
			done += (size_t)r;
			filled = false;
			continue;
		}
		if (filled) {
			/* The server has nothing there but we know a larger
			 * size: a hole of ours.
			 */
			u64 end = a.size - idx * GC_PAGE_SIZE;

			page_zero_to(c, f->nodeid, idx, end < GC_PAGE_SIZE ?
				     (u32)end : GC_PAGE_SIZE);
			filled = false;
			if (page_copy(c, f->nodeid, idx, in, buf + done,
				      want) <= 0)
				break;
			continue;
		}
		/* Read ahead what this call still wants, up to a chunk. */
		while (np < max_np &&
		       (idx + np) * GC_PAGE_SIZE < (u64)off + n)
			np++;
		r = fill_pages(c, f, idx, np);
		if (r < 0)
			return done ? (ssize_t)done : r;
		filled = true;
	}
	STAT_ADD(c, bytes_read, done);
	return (ssize_t)done;
}

/* ---- DAX --------------------------------------------------------------- */

/* @nodeid's DAX state, set up on first use (the inode is then pinned). */
static struct gdax_inode *dax_inode(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i && !i->gdi.ready)
		gdax_inode_init(&i->gdi, nodeid);
	pthread_mutex_unlock(&c->lock);
	return i ? &i->gdi : NULL;
}

/*
 * The size a DAX copy is bounded by: the last one the client knows, even
 * if its attributes expired (Linux's DAX read and write use i_size as is;
 * a GETATTR per 4 KiB would cost what DAX saves).  Fetched once if never
 * known.  With @gi, also the inode's DAX state (set up on first use), in
 * the same trip through the client lock: this is the per-4 KiB path.
 */
static int dax_size(struct vqf_gcli *c, struct gfile *f, u64 *size,
		    struct gdax_inode **gi)
{
	struct fuse_attr a;
	struct ginode *i;
	bool known;
	int ret;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, f->nodeid);
	known = i && i->ca.known;
	if (known)
		*size = i->ca.attr.size;
	if (gi) {
		if (i && !i->gdi.ready)
			gdax_inode_init(&i->gdi, f->nodeid);
		*gi = i ? &i->gdi : NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (known)
		return 0;
	ret = getattr_node(c, f->nodeid, f->fh, &a);
	if (!ret)
		*size = a.size;
	return ret;
}

/* The copy itself, once the size allows it. */
static ssize_t dax_copy(struct vqf_gcli *c, struct gfile *f,
			struct gdax_inode *gi, void *buf, size_t n, off_t off,
			bool write)
{
	ssize_t r;

	if (!gi)
		return -ESTALE;
	r = gdax_copy(&c->dax, gi, f->fh, buf, n, (u64)off, write);
	if (r > 0) {
		pthread_mutex_lock(&c->slock);
		if (write) {
			c->st.bytes_written += (u64)r;
			c->st.dax_writes++;
		} else {
			c->st.bytes_read += (u64)r;
			c->st.dax_reads++;
		}
		pthread_mutex_unlock(&c->slock);
	}
	return r;
}

/* read() through the window, bounded by the size (past EOF is SIGBUS). */
static ssize_t dax_pread(struct vqf_gcli *c, struct gfile *f, void *buf,
			 size_t n, off_t off)
{
	struct gdax_inode *gi;
	u64 size;
	int ret;

	ret = dax_size(c, f, &size, &gi);
	if (ret)
		return ret;
	if ((u64)off >= size || !n)
		return 0;
	if (n > size - (u64)off)
		n = (size_t)(size - (u64)off);
	return dax_copy(c, f, gi, buf, n, off, false);
}

/*
 * fuse_dax_write_iter(): a write that grows the file goes to the server
 * as WRITE (fuse_dax_direct_write): a store past EOF in a mapping is
 * SIGBUS, and one WRITE costs less than SETATTR size plus the copy (the
 * host allocates in its write path rather than in page faults).  Other
 * writes go through the window.  A size we cannot learn: WRITE too.
 */
static bool dax_grows(struct vqf_gcli *c, struct gfile *f, size_t n,
		      off_t off, struct gdax_inode **gi)
{
	u64 size;

	return dax_size(c, f, &size, gi) || (u64)off + n > size;
}

/* fuse_write_update_attr(): the size a WRITE that grew the file made. */
static void dax_size_grew(struct vqf_gcli *c, u64 nodeid, u64 end)
{
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	if (i && i->ca.known && i->ca.attr.size < end)
		i->ca.attr.size = end;
	pthread_mutex_unlock(&c->lock);
}

/* gdax's i_size for a fault: the size dax_size() knows. */
static int dax_isize(void *ctx, struct gdax_inode *gi, u64 fh, u64 *size)
{
	struct ginode *i = (struct ginode *)((char *)gi -
					     offsetof(struct ginode, gdi));
	struct gfile f = { .nodeid = i->nodeid, .fh = fh };

	return dax_size(ctx, &f, size, NULL);
}

/*
 * Drop a reference to a mapped open file; true if mappings still hold it
 * (then its FLUSH, RELEASE and inode reference wait for them).
 */
static bool dax_file_put(struct vqf_gcli *c, struct gmfile *mf)
{
	bool held;

	if (!mf)
		return false;
	pthread_mutex_lock(&c->lock);
	held = --mf->refs;
	pthread_mutex_unlock(&c->lock);
	return held;
}

/* A mapping's reference; the last one does what close() left. */
static void dax_file_drop(struct vqf_gcli *c, struct gmfile *mf)
{
	if (dax_file_put(c, mf))
		return;
	release(c, &mf->f);
	iput(c, mf->f.nodeid);
	free(mf);
}

int vqf_gcli_mmap(struct vqf_gcli *c, int fd, off_t off, size_t len,
		  int prot, struct vqf_gcli_map **out)
{
	struct gfile *f = fget(c, fd);
	struct vqf_gcli_map *m;
	struct gdax_inode *gi;
	int acc, ret;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	if (f->dir || !c->dax_on)
		return -ENODEV;
	if (off < 0 || !len || (prot & ~(PROT_READ | PROT_WRITE)))
		return -EINVAL;
	acc = f->flags & O_ACCMODE;
	if (acc == O_WRONLY || ((prot & PROT_WRITE) &&
				(acc != O_RDWR || (f->flags & O_APPEND))))
		return -EACCES;
	gi = dax_inode(c, f->nodeid);
	m = calloc(1, sizeof(*m));
	if (!gi || !m) {
		free(m);
		return gi ? -ENOMEM : -ESTALE;
	}
	pthread_mutex_lock(&c->lock);
	if (!f->used) {
		pthread_mutex_unlock(&c->lock);
		free(m);
		return -EBADF;
	}
	if (!f->mf) {
		f->mf = calloc(1, sizeof(*f->mf));
		if (f->mf) {
			f->mf->f = *f;
			f->mf->f.mf = NULL;
			f->mf->refs = 1;	/* the descriptor's */
		}
	}
	m->mf = f->mf;
	if (m->mf)
		m->mf->refs++;
	pthread_mutex_unlock(&c->lock);
	if (!m->mf) {
		free(m);
		return -ENOMEM;
	}
	ret = gdax_mmap(&c->dax, gi, m->mf->f.fh, (u64)off, len, prot, m,
			&m->v);
	if (ret) {
		dax_file_drop(c, m->mf);
		free(m);
		return ret;
	}
	*out = m;
	return 0;
}

int vqf_gcli_mmap_get(struct vqf_gcli *c, struct vqf_gcli_map *m,
		      size_t off, bool write, struct vqf_gcli_mref *ref)
{
	struct gdax_ref r;
	int ret;

	ret = gdax_get(&c->dax, m->v, off, write, &r);
	ref->addr = r.addr;
	ref->len = ret ? 0 : r.len;
	ref->priv = ret ? NULL : r.pte;
	return ret;
}

void vqf_gcli_mmap_put(struct vqf_gcli *c, struct vqf_gcli_map *m,
		       struct vqf_gcli_mref *ref)
{
	struct gdax_ref r = { .pte = ref->priv };

	gdax_put(&c->dax, m->v, &r);
	ref->priv = NULL;
}

int vqf_gcli_msync(struct vqf_gcli *c, struct vqf_gcli_map *m, int flags)
{
	struct fuse_fsync_in fi = { .fh = m->mf->f.fh, .fsync_flags = 1 };
	struct vqf_gdrv_call cl;

	STAT_ADD(c, calls, 1);
	if ((flags & ~(MS_ASYNC | MS_SYNC | MS_INVALIDATE)) ||
	    ((flags & MS_ASYNC) && (flags & MS_SYNC)))
		return -EINVAL;
	if (!(flags & MS_SYNC))
		return 0;
	call_init(&cl, FUSE_FSYNC, m->mf->f.nodeid);
	vqf_req_add_in(&cl.req, &fi, sizeof(fi));
	return send(c, &cl);
}

int vqf_gcli_munmap(struct vqf_gcli *c, struct vqf_gcli_map *m)
{
	struct gmfile *mf = m->mf;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = gdax_munmap(&c->dax, m->v);
	if (ret)
		return ret;
	free(m);
	dax_file_drop(c, mf);
	return 0;
}

void vqf_gcli_get_mm_stats(struct vqf_gcli *c, struct vqf_gcli_mm_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (c->dax_on)
		gdax_mm_stats(&c->dax, out);
}

static ssize_t do_pread(struct vqf_gcli *c, struct gfile *f, void *buf,
			size_t n, off_t off)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	size_t done = 0;
	u8 *page;

	if (f->dir)
		return -EISDIR;
	if ((f->flags & O_ACCMODE) == O_WRONLY)
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	if (c->dax_on)
		return dax_pread(c, f, buf, n, off);
	if (caching(c))
		return cached_pread(c, f, buf, n, off);
	page = vqf_gram_alloc(ram, n < c->rchunk ? (n ? n : 1) : c->rchunk,
			      false);
	if (!page)
		return -ENOMEM;
	while (done < n) {
		struct vqf_gdrv_call cl;
		u32 chunk = n - done < c->rchunk ? (u32)(n - done) : c->rchunk;
		struct fuse_read_in ri = { .fh = f->fh,
					   .offset = (u64)off + done,
					   .size = chunk,
					   .flags = (u32)f->flags };
		struct vqf_page_desc pd = { .page = page, .offset = 0,
					    .length = chunk };
		u32 got;
		int ret;

		memset(&cl, 0, sizeof(cl));
		vqf_req_init_read(&cl.req, FUSE_READ, 0, f->nodeid, &ri, &pd,
				  1, false);
		ret = send(c, &cl);
		if (ret) {
			vqf_gram_release(ram, page);
			return done ? (ssize_t)done : ret;
		}
		got = cl.req.out_args[0].size;
		memcpy((u8 *)buf + done, page, got);
		STAT_ADD(c, bytes_copied, got);
		done += got;
		if (got < chunk)
			break;		/* EOF */
	}
	vqf_gram_release(ram, page);
	STAT_ADD(c, bytes_read, done);
	return (ssize_t)done;
}

struct wb_run {
	u64 off;
	u32 len;
	u8 *data;	/* guest RAM */
};

/*
 * Writes the inode's dirty pages back through @fh: contiguous dirty bytes
 * go in one WRITE of up to max_write.  The bytes are copied out under the
 * lock and the pages marked clean before sending, so a write racing the
 * flush dirties them again.  Returns 0 or the first error (the data of a
 * failed WRITE is lost, as after a failed writeback; close/fsync say so).
 */
static int wb_flush(struct vqf_gcli *c, u64 nodeid, u64 fh)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	struct wb_run *runs = NULL;
	struct gc_page **v;
	struct ginode *i;
	u64 n = 0, k, nruns = 0, pages = 0;
	int ret = 0, err;

	if (!writeback(c))
		return 0;
	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	v = i ? gc_pages_dirty(&i->pc, &n, &err) : NULL;
	if (n)
		runs = calloc(n, sizeof(*runs));
	for (k = 0; runs && k < n; ) {
		u64 first = k, bytes = v[k]->dirty_to - v[k]->dirty_from;
		struct wb_run *r = &runs[nruns];
		u8 *d;

		while (k + 1 < n && v[k]->dirty_to == GC_PAGE_SIZE &&
		       v[k + 1]->index == v[k]->index + 1 &&
		       v[k + 1]->dirty_from == 0 &&
		       bytes + v[k + 1]->dirty_to <= c->wchunk) {
			k++;
			bytes += v[k]->dirty_to;
		}
		r->off = v[first]->index * GC_PAGE_SIZE + v[first]->dirty_from;
		r->len = (u32)bytes;
		r->data = vqf_gram_alloc(ram, r->len, false);
		if (!r->data) {
			ret = -ENOMEM;
			break;
		}
		for (d = r->data; first <= k; first++) {
			struct gc_page *p = v[first];
			u32 len = p->dirty_to - p->dirty_from;

			memcpy(d, p->data + p->dirty_from, len);
			d += len;
			gc_page_clean(&i->pc, p);
			pages++;
		}
		nruns++;
		k++;
	}
	if (i && !i->pc.dirty)
		i->wb_size_set = false;
	pthread_mutex_unlock(&c->lock);
	free(v);
	if (n && !runs)
		ret = -ENOMEM;
	for (k = 0; k < nruns; k++) {
		struct wb_run *r = &runs[k];
		struct fuse_write_in wi = { .fh = fh, .offset = r->off,
					    .size = r->len };
		struct vqf_page_desc pd = { .page = r->data, .offset = 0,
					    .length = r->len };
		struct fuse_write_out wo = { 0 };
		struct vqf_gdrv_call cl;
		int e;

		memset(&cl, 0, sizeof(cl));
		vqf_req_init_write(&cl.req, 0, nodeid, &wi, &pd, 1, &wo);
		e = send(c, &cl);
		if (!e && wo.size != r->len)
			e = -EIO;
		if (e && !ret)
			ret = e;
		STAT_ADD(c, wb_writes, 1);
		vqf_gram_release(ram, r->data);
	}
	free(runs);
	STAT_ADD(c, wb_pages, pages);
	if (nruns)
		attr_inval(c, nodeid);
	return ret;
}

/* Writes back @nodeid's dirty pages through any file open for writing. */
static int wb_flush_any(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i;
	unsigned int k;
	bool dirty;
	u64 fh = 0;

	if (!writeback(c))
		return 0;
	pthread_mutex_lock(&c->lock);
	i = *ifind(c, nodeid);
	dirty = i && i->pc.dirty;
	for (k = 0; dirty && k < c->cfg.max_files; k++) {
		struct gfile *f = &c->files[k];

		if (f->used && !f->dir && f->nodeid == nodeid &&
		    (f->flags & O_ACCMODE) != O_RDONLY) {
			fh = f->fh;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	/* Dirty pages without a writable file cannot be (close flushes). */
	return dirty && fh ? wb_flush(c, nodeid, fh) : 0;
}

/* The size the client knows for @f: its own while it has dirty pages. */
static int known_size(struct vqf_gcli *c, struct gfile *f, u64 *size)
{
	struct fuse_attr a;
	int ret = node_attr(c, f->nodeid, f->fh, &a);

	if (!ret)
		*size = a.size;
	return ret;
}

/*
 * write() with writeback: into the page cache, dirty, reaching the server
 * at close, fsync or when an inode has too many dirty pages.  A partial
 * page the server has bytes for is read first (read-modify-write).
 */
static ssize_t wb_write(struct vqf_gcli *c, struct gfile *f, const void *buf,
			size_t n, off_t off)
{
	const u8 *src = buf;
	struct ginode *i;
	size_t done = 0;
	u64 size, dirty;
	int ret;

	ret = known_size(c, f, &size);
	if (ret)
		return ret;
	while (done < n) {
		u64 pos = (u64)off + done, idx = pos / GC_PAGE_SIZE;
		u32 in = (u32)(pos % GC_PAGE_SIZE);
		u32 take = GC_PAGE_SIZE - in < n - done ?
			   GC_PAGE_SIZE - in : (u32)(n - done);
		struct gc_page *p;
		bool partial = in || take < GC_PAGE_SIZE;

		pthread_mutex_lock(&c->lock);
		i = *ifind(c, f->nodeid);
		p = i ? gc_page_find(&i->pc, idx) : NULL;
		pthread_mutex_unlock(&c->lock);
		if (!p && partial && idx * GC_PAGE_SIZE < size) {
			ssize_t r = fill_pages(c, f, idx, 1);

			if (r < 0)
				return done ? (ssize_t)done : r;
		}
		pthread_mutex_lock(&c->lock);
		i = *ifind(c, f->nodeid);
		p = i ? gc_page_get(&i->pc, idx) : NULL;
		if (!p) {
			pthread_mutex_unlock(&c->lock);
			return done ? (ssize_t)done : -ENOMEM;
		}
		if (p->len < in)
			memset(p->data + p->len, 0, in - p->len);
		memcpy(p->data + in, src + done, take);
		if (in + take > p->len)
			p->len = in + take;
		gc_page_mark_dirty(&i->pc, p, in, in + take);
		if (!i->wb_size_set) {
			i->wb_size = size;
			i->wb_size_set = true;
		}
		if (pos + take > i->wb_size)
			i->wb_size = pos + take;
		size = i->wb_size;
		pthread_mutex_unlock(&c->lock);
		STAT_ADD(c, bytes_copied, take);
		done += take;
	}
	pthread_mutex_lock(&c->lock);
	i = *ifind(c, f->nodeid);
	dirty = i ? i->pc.dirty : 0;
	pthread_mutex_unlock(&c->lock);
	attr_inval(c, f->nodeid);	/* mtime */
	STAT_ADD(c, bytes_written, done);
	if (dirty > GCLI_WB_MAX_DIRTY) {
		ret = wb_flush(c, f->nodeid, f->fh);
		if (ret)
			return ret;
	}
	return (ssize_t)done;
}

static ssize_t do_pwrite(struct vqf_gcli *c, struct gfile *f,
			 const void *buf, size_t n, off_t off)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	struct gdax_inode *gi;
	size_t done = 0;
	u8 *page;

	if (f->dir)
		return -EISDIR;
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	if (!n)
		return 0;
	if (c->dax_on && !dax_grows(c, f, n, off, &gi))
		return dax_copy(c, f, gi, (void *)buf, n, off, true);
	if (writeback(c))
		return wb_write(c, f, buf, n, off);
	page = vqf_gram_alloc(ram, n < c->wchunk ? n : c->wchunk, false);
	if (!page)
		return -ENOMEM;
	while (done < n) {
		struct vqf_gdrv_call cl;
		u32 chunk = n - done < c->wchunk ? (u32)(n - done) : c->wchunk;
		struct fuse_write_in wi = { .fh = f->fh,
					    .offset = (u64)off + done,
					    .size = chunk,
					    .flags = (u32)f->flags };
		struct vqf_page_desc pd = { .page = page, .offset = 0,
					    .length = chunk };
		struct fuse_write_out wo = { 0 };
		int ret;

		memcpy(page, (const u8 *)buf + done, chunk);
		STAT_ADD(c, bytes_copied, chunk);
		memset(&cl, 0, sizeof(cl));
		vqf_req_init_write(&cl.req, 0, f->nodeid, &wi, &pd, 1, &wo);
		ret = send(c, &cl);
		if (ret) {
			vqf_gram_release(ram, page);
			return done ? (ssize_t)done : ret;
		}
		/* The server may not claim more than we sent. */
		if (wo.size > chunk) {
			vqf_gram_release(ram, page);
			return -EIO;
		}
		pages_written(c, f->nodeid, (const u8 *)buf + done,
			      (u64)off + done, wo.size);
		done += wo.size;
		if (wo.size < chunk)
			break;
	}
	vqf_gram_release(ram, page);
	/* Size and mtime moved on the server (fuse_write_update_attr). */
	attr_inval(c, f->nodeid);
	if (c->dax_on) {
		/* DAX bounds copies by the size: keep it (no page cache) */
		dax_size_grew(c, f->nodeid, (u64)off + done);
		STAT_ADD(c, dax_extends, 1);
	}
	STAT_ADD(c, bytes_written, done);
	return (ssize_t)done;
}

ssize_t vqf_gcli_pread(struct vqf_gcli *c, int fd, void *buf, size_t n,
		       off_t off)
{
	struct gfile *f = fget(c, fd);

	STAT_ADD(c, calls, 1);
	return f ? do_pread(c, f, buf, n, off) : -EBADF;
}

ssize_t vqf_gcli_pwrite(struct vqf_gcli *c, int fd, const void *buf,
			size_t n, off_t off)
{
	struct gfile *f = fget(c, fd);

	STAT_ADD(c, calls, 1);
	return f ? do_pwrite(c, f, buf, n, off) : -EBADF;
}

ssize_t vqf_gcli_read(struct vqf_gcli *c, int fd, void *buf, size_t n)
{
	struct gfile *f = fget(c, fd);
	ssize_t r;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	pthread_mutex_lock(&f->lock);
	r = do_pread(c, f, buf, n, f->pos);
	if (r > 0)
		f->pos += r;
	pthread_mutex_unlock(&f->lock);
	return r;
}

ssize_t vqf_gcli_write(struct vqf_gcli *c, int fd, const void *buf, size_t n)
{
	struct gfile *f = fget(c, fd);
	struct fuse_attr a;
	ssize_t r;
	int ret;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	pthread_mutex_lock(&f->lock);
	if (f->flags & O_APPEND) {
		/* The server appends (O_APPEND on its file) and we learn
		 * the size; with writeback the client owns the size.
		 */
		if (writeback(c)) {
			ret = node_attr(c, f->nodeid, f->fh, &a);
		} else {
			ret = getattr_fh(c, f, &a);
			if (!ret)
				attr_fix_size(c, f->nodeid, &a);
		}
		if (ret) {
			pthread_mutex_unlock(&f->lock);
			return ret;
		}
		f->pos = (off_t)a.size;
	}
	r = do_pwrite(c, f, buf, n, f->pos);
	if (r > 0)
		f->pos += r;
	pthread_mutex_unlock(&f->lock);
	return r;
}

off_t vqf_gcli_lseek(struct vqf_gcli *c, int fd, off_t off, int whence)
{
	struct gfile *f = fget(c, fd);
	struct fuse_attr a;
	off_t np;
	int ret;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	pthread_mutex_lock(&f->lock);
	switch (whence) {
	case SEEK_SET:
		np = off;
		break;
	case SEEK_CUR:
		np = f->pos + off;
		break;
	case SEEK_END:
		ret = node_attr(c, f->nodeid, f->fh, &a);
		if (ret) {
			pthread_mutex_unlock(&f->lock);
			return ret;
		}
		np = (off_t)a.size + off;
		break;
	case SEEK_DATA:
	case SEEK_HOLE: {
		struct vqf_gdrv_call cl;
		struct fuse_lseek_in li = { .fh = f->fh, .offset = (u64)off,
					    .whence = (u32)whence };
		struct fuse_lseek_out lo;

		call_init(&cl, FUSE_LSEEK, f->nodeid);
		vqf_req_add_in(&cl.req, &li, sizeof(li));
		vqf_req_add_out(&cl.req, &lo, sizeof(lo));
		ret = send(c, &cl);
		if (ret) {
			pthread_mutex_unlock(&f->lock);
			return ret;
		}
		np = (off_t)lo.offset;
		break;
	}
	default:
		pthread_mutex_unlock(&f->lock);
		return -EINVAL;
	}
	if (np < 0) {
		pthread_mutex_unlock(&f->lock);
		return -EINVAL;
	}
	f->pos = np;
	pthread_mutex_unlock(&f->lock);
	return np;
}

int vqf_gcli_fsync(struct vqf_gcli *c, int fd, bool datasync)
{
	struct gfile *f = fget(c, fd);
	struct vqf_gdrv_call cl;
	struct fuse_fsync_in fi = { 0 };

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	fi.fh = f->fh;
	fi.fsync_flags = datasync ? 1 : 0;
	if (!f->dir) {
		int ret = wb_flush(c, f->nodeid, f->fh);

		if (ret)
			return ret;
	}
	call_init(&cl, f->dir ? FUSE_FSYNCDIR : FUSE_FSYNC, f->nodeid);
	vqf_req_add_in(&cl.req, &fi, sizeof(fi));
	return send(c, &cl);
}

static int setattr(struct vqf_gcli *c, u64 nodeid,
		   struct fuse_setattr_in *si)
{
	struct vqf_gdrv_call cl;
	struct fuse_attr_out ao;
	struct asamp as;
	int ret;

	/*
	 * fuse_do_setattr: dirty pages go first, or their WRITE would
	 * move the mtime just set (tar sets it before close).
	 */
	if (si->valid & (FATTR_MODE | FATTR_UID | FATTR_GID | FATTR_ATIME |
			 FATTR_MTIME)) {
		ret = wb_flush_any(c, nodeid);
		if (ret)
			return ret;
	}
	call_init(&cl, FUSE_SETATTR, nodeid);
	vqf_req_add_in(&cl.req, si, sizeof(*si));
	vqf_req_add_out(&cl.req, &ao, sizeof(ao));
	/* Our own change: whatever was in flight before is older. */
	attr_inval(c, nodeid);
	asample(c, nodeid, &as);
	ret = send(c, &cl);
	if (ret)
		return ret;
	if (si->valid & FATTR_SIZE) {
		pages_truncate(c, nodeid, si->size);
		dax_truncate(c, nodeid, si->size);
	}
	attr_got(c, nodeid, &ao.attr, &as);
	return 0;
}

int vqf_gcli_ftruncate(struct vqf_gcli *c, int fd, off_t len)
{
	struct gfile *f = fget(c, fd);
	struct fuse_setattr_in si = { 0 };

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	if (len < 0)
		return -EINVAL;
	if (f->dir || (f->flags & O_ACCMODE) == O_RDONLY)
		return -EINVAL;
	si.valid = FATTR_SIZE | FATTR_FH;
	si.fh = f->fh;
	si.size = (u64)len;
	return setattr(c, f->nodeid, &si);
}

int vqf_gcli_fstat(struct vqf_gcli *c, int fd, struct stat *st)
{
	struct gfile *f = fget(c, fd);
	struct fuse_attr a;
	int ret;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	ret = node_attr(c, f->nodeid, f->fh, &a);
	if (!ret)
		attr_to_stat(&a, st);
	return ret;
}

int vqf_gcli_fallocate(struct vqf_gcli *c, int fd, int mode, off_t off,
		       off_t len)
{
	struct gfile *f = fget(c, fd);
	struct vqf_gdrv_call cl;
	struct fuse_fallocate_in fi = { 0 };
	int ret;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	if (off < 0 || len <= 0)
		return -EINVAL;
	fi.fh = f->fh;
	fi.offset = (u64)off;
	fi.length = (u64)len;
	fi.mode = (u32)mode;
	ret = wb_flush(c, f->nodeid, f->fh);
	if (ret)
		return ret;
	call_init(&cl, FUSE_FALLOCATE, f->nodeid);
	vqf_req_add_in(&cl.req, &fi, sizeof(fi));
	ret = send(c, &cl);
	if (!ret) {
		pages_drop(c, f->nodeid, (u64)off, (u64)len);
		attr_inval(c, f->nodeid);
	}
	return ret;
}

ssize_t vqf_gcli_copy_file_range(struct vqf_gcli *c, int fd_in,
				 off_t off_in, int fd_out, off_t off_out,
				 size_t len)
{
	struct gfile *fi = fget(c, fd_in), *fo = fget(c, fd_out);
	struct vqf_gdrv_call cl;
	struct fuse_copy_file_range_in ci = { 0 };
	struct fuse_write_out wo = { 0 };
	int ret;

	STAT_ADD(c, calls, 1);
	if (!fi || !fo)
		return -EBADF;
	if (off_in < 0 || off_out < 0)
		return -EINVAL;
	ci.fh_in = fi->fh;
	ci.off_in = (u64)off_in;
	ci.nodeid_out = fo->nodeid;
	ci.fh_out = fo->fh;
	ci.off_out = (u64)off_out;
	ci.len = len;
	/* fuse_copy_file_range: both files written back first. */
	ret = wb_flush(c, fi->nodeid, fi->fh);
	if (!ret)
		ret = wb_flush(c, fo->nodeid, fo->fh);
	if (ret)
		return ret;
	call_init(&cl, FUSE_COPY_FILE_RANGE, fi->nodeid);
	vqf_req_add_in(&cl.req, &ci, sizeof(ci));
	vqf_req_add_out(&cl.req, &wo, sizeof(wo));
	ret = send(c, &cl);
	if (ret)
		return ret;
	if (wo.size > len)
		return -EIO;
	pages_drop(c, fo->nodeid, (u64)off_out, wo.size);
	attr_inval(c, fo->nodeid);
	return (ssize_t)wo.size;
}

int vqf_gcli_lock(struct vqf_gcli *c, int fd, int cmd, struct flock *fl)
{
	return vqf_gcli_lock_owner(c, fd, cmd, fl, 0);
}

int vqf_gcli_lock_owner(struct vqf_gcli *c, int fd, int cmd,
			struct flock *fl, u64 lock_owner)
{
	struct gfile *f = fget(c, fd);
	struct fuse_file_lock lk = { 0 };
	struct fuse_lk_out lo;
	bool ofd = cmd == F_OFD_GETLK || cmd == F_OFD_SETLK ||
		   cmd == F_OFD_SETLKW;
	u64 owner;
	off_t start;
	int ret;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	if (fl->l_type != F_RDLCK && fl->l_type != F_WRLCK &&
	    fl->l_type != F_UNLCK)
		return -EINVAL;
	switch (fl->l_whence) {
	case SEEK_SET:
		start = fl->l_start;
		break;
	case SEEK_CUR:
		start = f->pos + fl->l_start;
		break;
	default:
		return -EINVAL;	/* SEEK_END would need the size: unused */
	}
	if (start < 0 || fl->l_len < 0)
		return -EINVAL;
	owner = ofd ? f->owner : lock_owner ? lock_owner : c->posix_owner;
	if (ofd && cmd != F_OFD_GETLK)
		f->ofd_locked = true;
	lk.start = (u64)start;
	lk.end = fl->l_len ? (u64)start + (u64)fl->l_len - 1 : GCLI_OFFSET_MAX;
	lk.type = (u32)fl->l_type;
	lk.pid = ofd ? 0 : c->cfg.pid;
	switch (cmd) {
	case F_GETLK:
	case F_OFD_GETLK:
		ret = lk_call(c, f, FUSE_GETLK, owner, 0, &lk, &lo);
		if (ret)
			return ret;
		fl->l_type = (short)lo.lk.type;
		if (lo.lk.type != F_UNLCK) {
			fl->l_whence = SEEK_SET;
			fl->l_start = (off_t)lo.lk.start;
			fl->l_len = lo.lk.end == GCLI_OFFSET_MAX ? 0 :
				    (off_t)(lo.lk.end - lo.lk.start + 1);
			fl->l_pid = ofd ? -1 : (pid_t)lo.lk.pid;
		}
		return 0;
	case F_SETLK:
	case F_OFD_SETLK:
		return lk_call(c, f, FUSE_SETLK, owner, 0, &lk, NULL);
	case F_SETLKW:
	case F_OFD_SETLKW:
		return lk_call(c, f, FUSE_SETLKW, owner, 0, &lk, NULL);
	default:
		return -EINVAL;
	}
}

int vqf_gcli_flush(struct vqf_gcli *c, int fd, u64 lock_owner)
{
	struct gfile *f = fget(c, fd);
	struct fuse_flush_in fi = { 0 };
	struct vqf_gdrv_call cl;
	int ret, err;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	if (f->dir)
		return 0;
	ret = (f->flags & O_ACCMODE) != O_RDONLY ?
	      wb_flush(c, f->nodeid, f->fh) : 0;
	fi.fh = f->fh;
	fi.lock_owner = lock_owner ? lock_owner : c->posix_owner;
	call_init(&cl, FUSE_FLUSH, f->nodeid);
	vqf_req_add_in(&cl.req, &fi, sizeof(fi));
	err = send(c, &cl);
	return err ? err : ret;
}

int vqf_gcli_flock(struct vqf_gcli *c, int fd, int op)
{
	struct gfile *f = fget(c, fd);
	struct fuse_file_lock lk = { .start = 0, .end = GCLI_OFFSET_MAX };
	bool nb = op & LOCK_NB;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	switch (op & ~LOCK_NB) {
	case LOCK_SH:
		lk.type = F_RDLCK;
		break;
	case LOCK_EX:
		lk.type = F_WRLCK;
		break;
	case LOCK_UN:
		lk.type = F_UNLCK;
		break;
	default:
		return -EINVAL;
	}
	return lk_call(c, f, nb ? FUSE_SETLK : FUSE_SETLKW, f->owner,
		       FUSE_LK_FLOCK, &lk, NULL);
}

/* ---- names --------------------------------------------------------------- */

static int do_stat(struct vqf_gcli *c, const char *path, struct stat *st,
		   bool follow)
{
	struct fuse_attr a;
	u64 nodeid;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = resolve(c, path, false, follow, &nodeid, NULL, &a);
	if (ret)
		return ret;
	iput(c, nodeid);
	attr_to_stat(&a, st);
	return 0;
}

int vqf_gcli_stat(struct vqf_gcli *c, const char *path, struct stat *st)
{
	return do_stat(c, path, st, true);
}

int vqf_gcli_lstat(struct vqf_gcli *c, const char *path, struct stat *st)
{
	return do_stat(c, path, st, false);
}

/* MKDIR, MKNOD, SYMLINK: an entry in @path's parent. */
static int make_node(struct vqf_gcli *c, const char *path, u32 opcode,
		     const void *arg, u32 arg_size, const char *target)
{
	char name[NAME_MAX + 1];
	struct vqf_gdrv_call cl;
	struct fuse_entry_out e;
	struct asamp as;
	u64 parent;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = resolve(c, path, true, true, &parent, name, NULL);
	if (ret)
		return ret == -EBUSY ? -EEXIST : ret;
	call_init(&cl, opcode, parent);
	if (arg)
		vqf_req_add_in(&cl.req, arg, arg_size);
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	if (target)
		vqf_req_add_in(&cl.req, target, (u32)strlen(target) + 1);
	vqf_req_add_out(&cl.req, &e, sizeof(e));
	asample_entry(c, parent, &cl.req, &as);
	memset(&e, 0, sizeof(e));
	ret = send(c, &cl);
	if (!ret) {
		asample_reply(c, &cl.req, &as);
		ret = new_entry(c, parent, name, &e, &as);
	}
	iput(c, parent);
	return ret;
}

int vqf_gcli_mkdir(struct vqf_gcli *c, const char *path, mode_t mode)
{
	struct fuse_mkdir_in mi = { .mode = mode, .umask = 0 };

	return make_node(c, path, FUSE_MKDIR, &mi, sizeof(mi), NULL);
}

int vqf_gcli_mknod(struct vqf_gcli *c, const char *path, mode_t mode,
		   dev_t dev)
{
	struct fuse_mknod_in mi = { .mode = mode, .rdev = (u32)dev };

	return make_node(c, path, FUSE_MKNOD, &mi, sizeof(mi), NULL);
}

int vqf_gcli_symlink(struct vqf_gcli *c, const char *target,
		     const char *path)
{
	if (!target || !*target)
		return -ENOENT;
	if (strlen(target) >= VQF_SYMLINK_MAX)
		return -ENAMETOOLONG;
	return make_node(c, path, FUSE_SYMLINK, NULL, 0, target);
}

static int remove_name(struct vqf_gcli *c, const char *path, u32 opcode)
{
	char name[NAME_MAX + 1];
	struct vqf_gdrv_call cl;
	u64 parent;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = resolve(c, path, true, true, &parent, name, NULL);
	if (ret)
		return ret;
	call_init(&cl, opcode, parent);
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	ret = send(c, &cl);
	if (!ret) {
		u64 gone = dentry_drop(c, parent, name);

		if (gone) {
			attr_inval(c, gone);	/* nlink, ctime */
			if (opcode == FUSE_RMDIR) {
				pthread_mutex_lock(&c->lock);
				gc_d_drop_node(&c->dc, gone);
				pthread_mutex_unlock(&c->lock);
			}
		}
		attr_inval(c, parent);
	}
	iput(c, parent);
	return ret;
}

int vqf_gcli_rmdir(struct vqf_gcli *c, const char *path)
{
	return remove_name(c, path, FUSE_RMDIR);
}

int vqf_gcli_unlink(struct vqf_gcli *c, const char *path)
{
	return remove_name(c, path, FUSE_UNLINK);
}

int vqf_gcli_rename(struct vqf_gcli *c, const char *from, const char *to,
		    unsigned int flags)
{
	char n1[NAME_MAX + 1], n2[NAME_MAX + 1];
	struct fuse_rename2_in r2 = { 0 };
	struct fuse_rename_in r1 = { 0 };
	struct vqf_gdrv_call cl;
	u64 p1, p2;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = resolve(c, from, true, true, &p1, n1, NULL);
	if (ret)
		return ret;
	ret = resolve(c, to, true, true, &p2, n2, NULL);
	if (ret) {
		iput(c, p1);
		return ret;
	}
	/* Arg values are read at submission: they must outlive send(). */
	r2.newdir = p2;
	r2.flags = flags;
	r1.newdir = p2;
	if (flags) {
		call_init(&cl, FUSE_RENAME2, p1);
		vqf_req_add_in(&cl.req, &r2, sizeof(r2));
	} else {
		call_init(&cl, FUSE_RENAME, p1);
		vqf_req_add_in(&cl.req, &r1, sizeof(r1));
	}
	vqf_req_add_in(&cl.req, n1, (u32)strlen(n1) + 1);
	vqf_req_add_in(&cl.req, n2, (u32)strlen(n2) + 1);
	ret = send(c, &cl);
	if (!ret) {
		u64 a = dentry_drop(c, p1, n1), b = dentry_drop(c, p2, n2);

		if (a)
			attr_inval(c, a);
		if (b)
			attr_inval(c, b);
		attr_inval(c, p1);
		attr_inval(c, p2);
	}
	iput(c, p1);
	iput(c, p2);
	return ret;
}

int vqf_gcli_link(struct vqf_gcli *c, const char *from, const char *to)
{
	char name[NAME_MAX + 1];
	struct vqf_gdrv_call cl;
	struct fuse_link_in li;
	struct fuse_entry_out e;
	struct fuse_attr a;
	struct asamp as;
	u64 old, parent;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = resolve(c, from, false, false, &old, NULL, &a);
	if (ret)
		return ret;
	if (S_ISDIR(a.mode)) {
		iput(c, old);
		return -EPERM;
	}
	ret = resolve(c, to, true, true, &parent, name, NULL);
	if (ret) {
		iput(c, old);
		return ret == -EBUSY ? -EEXIST : ret;
	}
	li.oldnodeid = old;
	call_init(&cl, FUSE_LINK, parent);
	vqf_req_add_in(&cl.req, &li, sizeof(li));
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	vqf_req_add_out(&cl.req, &e, sizeof(e));
	asample_entry(c, parent, &cl.req, &as);
	memset(&e, 0, sizeof(e));
	ret = send(c, &cl);
	if (!ret) {
		asample_reply(c, &cl.req, &as);
		ret = new_entry(c, parent, name, &e, &as);
	}
	iput(c, parent);
	iput(c, old);
	return ret;
}

ssize_t vqf_gcli_readlink(struct vqf_gcli *c, const char *path, char *buf,
			  size_t size)
{
	struct fuse_attr a;
	char *tmp;
	u64 nodeid;
	ssize_t n;
	int ret;

	STAT_ADD(c, calls, 1);
	if (!size)
		return -EINVAL;
	ret = resolve(c, path, false, false, &nodeid, NULL, &a);
	if (ret)
		return ret;
	if (!S_ISLNK(a.mode)) {
		iput(c, nodeid);
		return -EINVAL;
	}
	/* Ask for a page: the server's answer is cut to @size here. */
	tmp = malloc(VQF_SYMLINK_MAX);
	if (!tmp) {
		iput(c, nodeid);
		return -ENOMEM;
	}
	n = do_readlink(c, nodeid, tmp, VQF_SYMLINK_MAX);
	iput(c, nodeid);
	if (n >= 0) {
		if ((size_t)n > size)
			n = (ssize_t)size;
		memcpy(buf, tmp, (size_t)n);
	}
	free(tmp);
	return n;
}

static int setattr_path(struct vqf_gcli *c, const char *path,
			struct fuse_setattr_in *si, bool follow)
{
	u64 nodeid;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = resolve(c, path, false, follow, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	ret = setattr(c, nodeid, si);
	iput(c, nodeid);
	return ret;
}

int vqf_gcli_truncate(struct vqf_gcli *c, const char *path, off_t len)
{
	struct fuse_setattr_in si = { .valid = FATTR_SIZE };

	if (len < 0)
		return -EINVAL;
	si.size = (u64)len;
	return setattr_path(c, path, &si, true);
}

int vqf_gcli_chmod(struct vqf_gcli *c, const char *path, mode_t mode)
{
	struct fuse_setattr_in si = { .valid = FATTR_MODE,
				      .mode = mode & 07777 };

	return setattr_path(c, path, &si, true);
}

static int chown_at(struct vqf_gcli *c, const char *path, uid_t uid,
		    gid_t gid, bool follow)
{
	struct fuse_setattr_in si = { 0 };

	if (uid != (uid_t)-1) {
		si.valid |= FATTR_UID;
		si.uid = uid;
	}
	if (gid != (gid_t)-1) {
		si.valid |= FATTR_GID;
		si.gid = gid;
	}
	return setattr_path(c, path, &si, follow);
}

int vqf_gcli_chown(struct vqf_gcli *c, const char *path, uid_t uid,
		   gid_t gid)
{
	return chown_at(c, path, uid, gid, true);
}

int vqf_gcli_lchown(struct vqf_gcli *c, const char *path, uid_t uid,
		    gid_t gid)
{
	return chown_at(c, path, uid, gid, false);
}

static int utimens_at(struct vqf_gcli *c, const char *path,
		      const struct timespec times[2], bool follow)
{
	struct fuse_setattr_in si = { 0 };

	if (!times) {
		si.valid = FATTR_ATIME | FATTR_ATIME_NOW | FATTR_MTIME |
			   FATTR_MTIME_NOW;
	} else {
		if (times[0].tv_nsec != UTIME_OMIT) {
			si.valid |= FATTR_ATIME;
			if (times[0].tv_nsec == UTIME_NOW)
				si.valid |= FATTR_ATIME_NOW;
			si.atime = (u64)times[0].tv_sec;
			si.atimensec = (u32)times[0].tv_nsec;
		}
		if (times[1].tv_nsec != UTIME_OMIT) {
			si.valid |= FATTR_MTIME;
			if (times[1].tv_nsec == UTIME_NOW)
				si.valid |= FATTR_MTIME_NOW;
			si.mtime = (u64)times[1].tv_sec;
			si.mtimensec = (u32)times[1].tv_nsec;
		}
	}
	if (!si.valid)
		return 0;
	return setattr_path(c, path, &si, follow);
}

int vqf_gcli_utimens(struct vqf_gcli *c, const char *path,
		     const struct timespec times[2])
{
	return utimens_at(c, path, times, true);
}

int vqf_gcli_lutimens(struct vqf_gcli *c, const char *path,
		      const struct timespec times[2])
{
	return utimens_at(c, path, times, false);
}

int vqf_gcli_statfs(struct vqf_gcli *c, const char *path, struct statvfs *sv)
{
	struct vqf_gdrv_call cl;
	struct fuse_statfs_out so;
	u64 nodeid;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = resolve(c, path, false, true, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	call_init(&cl, FUSE_STATFS, nodeid);
	vqf_req_add_out(&cl.req, &so, sizeof(so));
	ret = send(c, &cl);
	iput(c, nodeid);
	if (ret)
		return ret;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = so.st.bsize;
	sv->f_frsize = so.st.frsize ? so.st.frsize : so.st.bsize;
	sv->f_blocks = so.st.blocks;
	sv->f_bfree = so.st.bfree;
	sv->f_bavail = so.st.bavail;
	sv->f_files = so.st.files;
	sv->f_ffree = so.st.ffree;
	sv->f_favail = so.st.ffree;
	sv->f_namemax = so.st.namelen;
	return 0;
}

/* ---- directories ----------------------------------------------------------- */

/*
 * Parses one READDIR(PLUS) reply of @len bytes.  The server is not
 * trusted: every record must fit, name lengths are bounded, offsets must
 * move.  Returns 0 and the last offset, a callback's nonzero value, or
 * -EIO for a malformed reply.
 */
static int parse_dir(struct vqf_gcli *c, u64 dir, struct asamp *ds,
		     const u8 *buf,
		     u32 len, bool plus, vqf_gcli_dirent_fn fn, void *ctx,
		     u64 *last_off)
{
	u32 pos = 0;
	char name[NAME_MAX + 1];

	while (pos < len) {
		const struct fuse_entry_out *eo = NULL;
		struct fuse_dirent d;
		struct stat st;
		u32 hdr = plus ? sizeof(struct fuse_entry_out) : 0;
		u32 rec;
		int ret;

		if (len - pos < hdr + FUSE_NAME_OFFSET)
			return -EIO;
		if (plus)
			eo = (const void *)(buf + pos);
		memcpy(&d, buf + pos + hdr, FUSE_NAME_OFFSET);
		if (!d.namelen || d.namelen > NAME_MAX)
			return -EIO;
		rec = hdr + (u32)FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET +
						   d.namelen);
		if (rec > len - pos)
			return -EIO;
		memcpy(name, buf + pos + hdr + FUSE_NAME_OFFSET, d.namelen);
		name[d.namelen] = 0;
		if (memchr(name, '/', d.namelen) || strlen(name) != d.namelen)
			return -EIO;
		memset(&st, 0, sizeof(st));
		if (plus) {
			struct fuse_entry_out e;

			memcpy(&e, eo, sizeof(e));
			attr_to_stat(&e.attr, &st);
			if (!st.st_ino)
				st.st_ino = d.ino;
			if (!st.st_mode)
				st.st_mode = d.type << 12;
			/* Every entry but . and .. counts a lookup, and
			 * primes the caches (fuse_direntplus_link).
			 */
			if (e.nodeid && strcmp(name, ".") &&
			    strcmp(name, "..") && !entry_got(c, &e, false)) {
				attr_got(c, e.nodeid, &e.attr, ds);
				dentry_set(c, dir, name, e.nodeid, ds);
			}
		} else {
			st.st_ino = d.ino;
			st.st_mode = d.type << 12;
		}
		*last_off = d.off;
		pos += rec;
		ret = fn(ctx, name, &st);
		if (ret)
			return ret;
	}
	return 0;
}

int vqf_gcli_readdir(struct vqf_gcli *c, const char *path, bool plus,
		     vqf_gcli_dirent_fn fn, void *ctx)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	u64 nodeid, fh, off = 0;
	unsigned int rounds = 0;
	u8 *page, *copy;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = resolve(c, path, false, true, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	ret = open_node(c, nodeid, O_RDONLY | O_DIRECTORY, true, &fh);
	if (ret) {
		iput(c, nodeid);
		return ret;
	}
	page = vqf_gram_alloc(ram, GCLI_DIRBUF, false);
	copy = malloc(GCLI_DIRBUF);
	if (!page || !copy) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		struct vqf_gdrv_call cl;
		struct fuse_read_in ri = { .fh = fh, .offset = off,
					   .size = GCLI_DIRBUF };
		struct vqf_page_desc pd = { .page = page,
					    .length = GCLI_DIRBUF };
		u64 prev = off;
		struct asamp as;
		u32 got;

		/* No extension on READDIRPLUS (seed 010): its entries are
		 * proven only through the directory's version.
		 */
		asample(c, 0, &as);
		as.dirplus = true;
		if (c->ver_on) {
			pthread_mutex_lock(&c->lock);
			as.parent = vqf_ver_sample(&c->vt,
						   &(*ifind(c, nodeid))->ver);
			pthread_mutex_unlock(&c->lock);
		}
		memset(&cl, 0, sizeof(cl));
		vqf_req_init_read(&cl.req, plus ? FUSE_READDIRPLUS :
				  FUSE_READDIR, 0, nodeid, &ri, &pd, 1, false);
		ret = send(c, &cl);
		if (ret)
			break;
		got = cl.req.out_args[0].size;
		if (!got)
			break;
		/* Parse a private copy: the device may still write. */
		memcpy(copy, page, got);
		ret = parse_dir(c, nodeid, &as, copy, got, plus, fn, ctx, &off);
		if (ret)
			break;
		/* A server that never moves on would loop forever. */
		if (off == prev || ++rounds > (1u << 20)) {
			ret = -EIO;
			break;
		}
	}
out:
	free(copy);
	vqf_gram_release(ram, page);
	{
		struct vqf_gdrv_call cl;
		struct fuse_release_in rl = { .fh = fh };

		call_init(&cl, FUSE_RELEASEDIR, nodeid);
		vqf_req_add_in(&cl.req, &rl, sizeof(rl));
		send(c, &cl);
	}
	iput(c, nodeid);
	return ret;
}

/* ---- xattrs ---------------------------------------------------------------- */

static int xattr_set(struct vqf_gcli *c, const char *path, const char *name,
		     const void *value, size_t size, int flags, bool follow)
{
	struct vqf_gdrv_call cl;
	struct fuse_setxattr_in si = { 0 };
	const struct fuse_init_out *io = vqf_gdrv_init_out(c->g);
	u64 nodeid;
	int ret;

	STAT_ADD(c, calls, 1);
	if (strlen(name) > VQF_XATTR_NAME_MAX || !*name)
		return -ERANGE;
	if (size > VQF_XATTR_SIZE_MAX)
		return -E2BIG;
	ret = resolve(c, path, false, follow, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	si.size = (u32)size;
	si.flags = (u32)flags;
	call_init(&cl, FUSE_SETXATTR, nodeid);
	/* Without SETXATTR_EXT the old 8-byte form goes on the wire. */
	vqf_req_add_in(&cl.req, &si, (io->flags & FUSE_SETXATTR_EXT) ?
		       sizeof(si) : FUSE_COMPAT_SETXATTR_IN_SIZE);
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	vqf_req_add_in(&cl.req, value, (u32)size);
	ret = send(c, &cl);
	if (!ret)
		attr_inval(c, nodeid);	/* ctime */
	iput(c, nodeid);
	return ret;
}

/* GETXATTR / LISTXATTR: size 0 probes with fuse_getxattr_out. */
static ssize_t xattr_get(struct vqf_gcli *c, const char *path, u32 opcode,
			 const char *name, void *value, size_t size,
			 bool follow)
{
	struct vqf_gdrv_call cl;
	struct fuse_getxattr_in gi = { .size = (u32)size };
	struct fuse_getxattr_out go = { 0 };
	u64 nodeid;
	int ret;

	STAT_ADD(c, calls, 1);
	if (name && (strlen(name) > VQF_XATTR_NAME_MAX || !*name))
		return -ERANGE;
	if (size > VQF_XATTR_SIZE_MAX)
		size = gi.size = VQF_XATTR_SIZE_MAX;
	ret = resolve(c, path, false, follow, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	call_init(&cl, opcode, nodeid);
	vqf_req_add_in(&cl.req, &gi, sizeof(gi));
	if (name)
		vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	if (size) {
		vqf_req_add_out(&cl.req, value, (u32)size);
		cl.req.out_argvar = true;
	} else {
		vqf_req_add_out(&cl.req, &go, sizeof(go));
		cl.req.out_argvar = false;
	}
	ret = send(c, &cl);
	iput(c, nodeid);
	if (ret)
		return ret;
	return size ? (ssize_t)cl.req.out_args[0].size : (ssize_t)go.size;
}

int vqf_gcli_setxattr(struct vqf_gcli *c, const char *path,
		      const char *name, const void *value, size_t size,
		      int flags)
{
	return xattr_set(c, path, name, value, size, flags, true);
}

int vqf_gcli_lsetxattr(struct vqf_gcli *c, const char *path,
		       const char *name, const void *value, size_t size,
		       int flags)
{
	return xattr_set(c, path, name, value, size, flags, false);
}

ssize_t vqf_gcli_getxattr(struct vqf_gcli *c, const char *path,
			  const char *name, void *value, size_t size)
{
	return xattr_get(c, path, FUSE_GETXATTR, name, value, size, true);
}

ssize_t vqf_gcli_lgetxattr(struct vqf_gcli *c, const char *path,
			   const char *name, void *value, size_t size)
{
	return xattr_get(c, path, FUSE_GETXATTR, name, value, size, false);
}

ssize_t vqf_gcli_listxattr(struct vqf_gcli *c, const char *path, char *list,
			   size_t size)
{
	return xattr_get(c, path, FUSE_LISTXATTR, NULL, list, size, true);
}

ssize_t vqf_gcli_llistxattr(struct vqf_gcli *c, const char *path, char *list,
			    size_t size)
{
	return xattr_get(c, path, FUSE_LISTXATTR, NULL, list, size, false);
}

static int xattr_remove(struct vqf_gcli *c, const char *path,
			const char *name, bool follow)
{
	struct vqf_gdrv_call cl;
	u64 nodeid;
	int ret;

	STAT_ADD(c, calls, 1);
	if (strlen(name) > VQF_XATTR_NAME_MAX || !*name)
		return -ERANGE;
	ret = resolve(c, path, false, follow, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	call_init(&cl, FUSE_REMOVEXATTR, nodeid);
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	ret = send(c, &cl);
	if (!ret)
		attr_inval(c, nodeid);
	iput(c, nodeid);
	return ret;
}

int vqf_gcli_removexattr(struct vqf_gcli *c, const char *path,
			 const char *name)
{
	return xattr_remove(c, path, name, true);
}

int vqf_gcli_lremovexattr(struct vqf_gcli *c, const char *path,
			  const char *name)
{
	return xattr_remove(c, path, name, false);
}

/* ---- notifications ------------------------------------------------------ */

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
		i = *ifind(c, ii.ino);
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
		gone = dentry_drop(c, parent, name);
		attr_inval(c, parent);
		if (gone && (!child || gone == child))
			attr_inval(c, gone);
		STAT_ADD(c, notify_inval_entry, 1);
		return 0;
	}
	default:
		break;
	}
	STAT_ADD(c, notify_refused, 1);
	return -EINVAL;
}

/* ---- the rest ---------------------------------------------------------------- */

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

int vqf_gcli_get_nodeid(struct vqf_gcli *c, const char *path, u64 *nodeid)
{
	return resolve(c, path, false, false, nodeid, NULL, NULL);
}

void vqf_gcli_put_nodeid(struct vqf_gcli *c, u64 nodeid)
{
	iput(c, nodeid);
}

/* Mappings the caller left: unmapped one by one (each may iput). */
static void dax_unmap_all(struct vqf_gcli *c)
{
	for (;;) {
		struct vqf_gcli_map *m = NULL;
		unsigned int b;

		pthread_mutex_lock(&c->lock);
		for (b = 0; b < GCLI_BUCKETS && !m; b++) {
			struct ginode *n;

			for (n = c->buckets[b]; n && !m; n = n->next) {
				struct gdax_vma *v = gdax_first_vma(&n->gdi);

				if (v)
					m = v->owner;
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (!m || vqf_gcli_munmap(c, m))
			break;
	}
}

void vqf_gcli_free(struct vqf_gcli *c)
{
	unsigned int i;

	if (!c)
		return;
	for (i = 0; i < c->cfg.max_files; i++)
		if (c->files[i].used)
			vqf_gcli_close(c, (int)i);
	if (c->dax_on) {
		dax_unmap_all(c);
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
