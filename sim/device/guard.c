// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * guard.c - what a device lets through to its backend (see vqf_guard.h).
 *
 * Two hash tables under one mutex: node ids (with a second chain by
 * parent and name for the directories whose place is known) and file
 * handles (by value; each entry binds a value to a node id and a kind).
 * Bucket arrays double when the entries outnumber them.
 */
#define _GNU_SOURCE
#include "vqf_guard.h"
#include "vqf_backend.h"
#include "vqf_dirent.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE		(1 << 1)
#endif

#define GUARD_BUCKETS0		64
/* GUARD_TMPFILE (7.37): lib/'s parser does not carry it yet. */
#define GUARD_TMPFILE		51

struct gnode {
	u64 id;
	u64 nlookup;
	u64 parent;		/* directories with a known place */
	char *name;		/* ...their name there, or NULL */
	u32 busy;		/* pins of requests in flight */
	u32 handles;		/* handle entries bound to it */
	u32 mode;		/* S_IFMT bits of the last entry */
	struct gnode *next_id, *next_name;
};

struct ghandle {
	u64 fh, node;
	u32 count;		/* opens that returned this value */
	u32 busy;
	bool dir;
	struct ghandle *next;
};

struct vqf_guard {
	pthread_mutex_t lock;
	pthread_cond_t idle;	/* a pin went; waiters re-check */
	unsigned int waiters;
	u64 pinned;		/* requests checked, not yet done */
	bool readonly;
	bool stopping;
	u64 gen;
	struct gnode root;
	struct gnode **by_id, **by_name;
	u32 nb;			/* buckets of both, a power of two */
	u64 nnodes;
	struct ghandle **by_fh;
	u32 nbh;
	u64 nhandles;
	struct vqf_guard_stats st;
};

/* ---- tables ----------------------------------------------------------- */

static u32 hash64(u64 v, u32 nb)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (u32)v & (nb - 1);
}

static u32 hash_name(u64 parent, const char *name, u32 nb)
{
	u64 v = parent * 0x9e3779b97f4a7c15ULL;

	while (*name)
		v = (v ^ (u8)*name++) * 0x100000001b3ULL;
	return hash64(v, nb);
}

static struct gnode *node_find(struct vqf_guard *g, u64 id)
{
	struct gnode *n;

	if (id == FUSE_ROOT_ID)
		return &g->root;
	for (n = g->by_id[hash64(id, g->nb)]; n; n = n->next_id)
		if (n->id == id)
			return n;
	return NULL;
}

static bool held(const struct vqf_guard *g, const struct gnode *n)
{
	return n && (n == &g->root || n->nlookup);
}

static struct gnode *name_find(struct vqf_guard *g, u64 parent,
			       const char *name)
{
	struct gnode *n;

	for (n = g->by_name[hash_name(parent, name, g->nb)]; n;
	     n = n->next_name)
		if (n->parent == parent && !strcmp(n->name, name))
			return n;
	return NULL;
}

static void name_unset(struct vqf_guard *g, struct gnode *n)
{
	struct gnode **pp;

	if (!n->name)
		return;
	pp = &g->by_name[hash_name(n->parent, n->name, g->nb)];
	while (*pp && *pp != n)
		pp = &(*pp)->next_name;
	if (*pp)
		*pp = n->next_name;
	free(n->name);
	n->name = NULL;
	n->parent = 0;
}

/* Directory @n is @name (@len bytes, no NUL needed) in @parent. */
static void name_set(struct vqf_guard *g, struct gnode *n, u64 parent,
		     const char *name, u32 len)
{
	char *s;
	u32 h;

	if (n == &g->root)
		return;
	name_unset(g, n);
	s = strndup(name, len);
	if (!s) {
		g->st.record_nomem++;
		return;
	}
	n->name = s;
	n->parent = parent;
	h = hash_name(parent, s, g->nb);
	n->next_name = g->by_name[h];
	g->by_name[h] = n;
}

/* Doubles both node tables (best effort: they work at any load). */
static void node_grow(struct vqf_guard *g)
{
	u32 nb = g->nb * 2, i;
	struct gnode **id = calloc(nb, sizeof(*id));
	struct gnode **nm = calloc(nb, sizeof(*nm));
	struct gnode *n, *next;

	if (!id || !nm) {
		free(id);
		free(nm);
		return;
	}
	for (i = 0; i < g->nb; i++) {
		for (n = g->by_id[i]; n; n = next) {
			u32 h = hash64(n->id, nb);

			next = n->next_id;
			n->next_id = id[h];
			id[h] = n;
			if (n->name) {
				h = hash_name(n->parent, n->name, nb);
				n->next_name = nm[h];
				nm[h] = n;
			}
		}
	}
	free(g->by_id);
	free(g->by_name);
	g->by_id = id;
	g->by_name = nm;
	g->nb = nb;
}

static struct gnode *node_get(struct vqf_guard *g, u64 id)
{
	struct gnode *n = node_find(g, id);
	u32 h;

	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	if (g->nnodes >= g->nb)
		node_grow(g);
	n->id = id;
	h = hash64(id, g->nb);
	n->next_id = g->by_id[h];
	g->by_id[h] = n;
	g->nnodes++;
	return n;
}

/* Frees @n once nobody holds or pins it. */
static void node_put(struct vqf_guard *g, struct gnode *n)
{
	struct gnode **pp;

	if (n == &g->root || n->nlookup || n->busy || n->handles)
		return;
	name_unset(g, n);
	pp = &g->by_id[hash64(n->id, g->nb)];
	while (*pp && *pp != n)
		pp = &(*pp)->next_id;
	if (*pp)
		*pp = n->next_id;
	free(n);
	g->nnodes--;
}

static struct ghandle *h_find(struct vqf_guard *g, u64 fh, u64 node,
			      bool dir)
{
	struct ghandle *h;

	for (h = g->by_fh[hash64(fh, g->nbh)]; h; h = h->next)
		if (h->fh == fh && h->node == node && h->dir == dir)
			return h;
	return NULL;
}

/* Whether @fh is held at all (on any node, of any kind). */
static bool h_any(struct vqf_guard *g, u64 fh)
{
	struct ghandle *h;

	for (h = g->by_fh[hash64(fh, g->nbh)]; h; h = h->next)
		if (h->fh == fh && h->count)
			return true;
	return false;
}

static void h_grow(struct vqf_guard *g)
{
	u32 nb = g->nbh * 2, i;
	struct ghandle **t = calloc(nb, sizeof(*t));
	struct ghandle *h, *next;

	if (!t)
		return;
	for (i = 0; i < g->nbh; i++) {
		for (h = g->by_fh[i]; h; h = next) {
			u32 k = hash64(h->fh, nb);

			next = h->next;
			h->next = t[k];
			t[k] = h;
		}
	}
	free(g->by_fh);
	g->by_fh = t;
	g->nbh = nb;
}

static void h_add(struct vqf_guard *g, u64 fh, u64 node, bool dir)
{
	struct ghandle *h = h_find(g, fh, node, dir);
	struct gnode *n;
	u32 k;

	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h) {
			g->st.record_nomem++;
			return;
		}
		if (g->nhandles >= g->nbh)
			h_grow(g);
		h->fh = fh;
		h->node = node;
		h->dir = dir;
		n = node_find(g, node);
		if (n)
			n->handles++;
		k = hash64(fh, g->nbh);
		h->next = g->by_fh[k];
		g->by_fh[k] = h;
		g->nhandles++;
	}
	h->count++;
	g->st.opens++;
}

static void h_put(struct vqf_guard *g, struct ghandle *h)
{
	struct ghandle **pp;
	struct gnode *n;

	if (h->count || h->busy)
		return;
	pp = &g->by_fh[hash64(h->fh, g->nbh)];
	while (*pp && *pp != h)
		pp = &(*pp)->next;
	if (*pp)
		*pp = h->next;
	/* The node's last handle: a node forgotten meanwhile goes now. */
	n = node_find(g, h->node);
	if (n && n->handles && !--n->handles)
		node_put(g, n);
	free(h);
	g->nhandles--;
}

static void clear_all(struct vqf_guard *g)
{
	struct gnode *n, *nn;
	struct ghandle *h, *hn;
	u32 i;

	for (i = 0; i < g->nb; i++) {
		for (n = g->by_id[i]; n; n = nn) {
			nn = n->next_id;
			free(n->name);
			free(n);
		}
		g->by_id[i] = NULL;
		g->by_name[i] = NULL;
	}
	for (i = 0; i < g->nbh; i++) {
		for (h = g->by_fh[i]; h; h = hn) {
			hn = h->next;
			free(h);
		}
		g->by_fh[i] = NULL;
	}
	g->nnodes = 0;
	g->nhandles = 0;
	g->pinned = 0;
	g->root.nlookup = 0;
	g->root.busy = 0;
}

/* ---- life ------------------------------------------------------------- */

int vqf_guard_new(const struct vqf_guard_cfg *cfg, struct vqf_guard **out)
{
	struct vqf_guard *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->nb = g->nbh = GUARD_BUCKETS0;
	g->by_id = calloc(g->nb, sizeof(*g->by_id));
	g->by_name = calloc(g->nb, sizeof(*g->by_name));
	g->by_fh = calloc(g->nbh, sizeof(*g->by_fh));
	if (!g->by_id || !g->by_name || !g->by_fh) {
		free(g->by_id);
		free(g->by_name);
		free(g->by_fh);
		free(g);
		return -ENOMEM;
	}
	g->readonly = cfg && cfg->readonly;
	g->root.id = FUSE_ROOT_ID;
	g->root.mode = S_IFDIR;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->idle, NULL);
	*out = g;
	return 0;
}

void vqf_guard_free(struct vqf_guard *g)
{
	if (!g)
		return;
	clear_all(g);
	free(g->by_id);
	free(g->by_name);
	free(g->by_fh);
	pthread_cond_destroy(&g->idle);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* A new generation (lock held): waiters of the old one give up. */
static void reset_locked(struct vqf_guard *g)
{
	clear_all(g);
	g->gen++;
	g->st.resets++;
	pthread_cond_broadcast(&g->idle);
}

void vqf_guard_reset(struct vqf_guard *g)
{
	pthread_mutex_lock(&g->lock);
	reset_locked(g);
	g->stopping = false;
	pthread_mutex_unlock(&g->lock);
}

/*
 * INIT or DESTROY from the guest: a new session, whose ids are not the
 * old one's.  Requests checked against the old table finish first, so
 * none of them reaches the backend after its session changed.
 */
static void session_reset(struct vqf_guard *g)
{
	pthread_mutex_lock(&g->lock);
	if (g->pinned && !g->stopping)
		g->st.session_waits++;
	g->waiters++;
	while (g->pinned && !g->stopping)
		pthread_cond_wait(&g->idle, &g->lock);
	g->waiters--;
	reset_locked(g);
	pthread_mutex_unlock(&g->lock);
}

void vqf_guard_stop(struct vqf_guard *g)
{
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_broadcast(&g->idle);
	pthread_mutex_unlock(&g->lock);
}

void vqf_guard_tx_init(struct vqf_guard_tx *tx)
{
	tx->nnode = 0;
	tx->nfh = 0;
	tx->checked = false;
	tx->root_entry = false;
}

void vqf_guard_get_stats(struct vqf_guard *g, struct vqf_guard_stats *out)
{
	pthread_mutex_lock(&g->lock);
	*out = g->st;
	out->nodes = g->nnodes;
	out->handles = g->nhandles;
	pthread_mutex_unlock(&g->lock);
}

/* ---- requests --------------------------------------------------------- */

/*
 * Whether @req names "." or ".." as a path component.  lib/'s parser
 * already refused empty names, names with '/' and names without their
 * NUL (vqf_dev_parse(), VQF_DEV_R_NAME_*); LOOKUP ".." passes, for
 * check_nodes() to answer.
 */
static bool names_dot(const struct vqf_dev_req *req)
{
	switch (req->in.opcode) {
	case FUSE_LOOKUP:
		return req->name_len == 1 && req->name[0] == '.';
	case FUSE_MKNOD:
	case FUSE_MKDIR:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
	case FUSE_LINK:
	case FUSE_CREATE:
	case FUSE_SYMLINK:	/* the target is data, not a component */
		return vqf_dirent_is_dot(req->name, req->name_len);
	case FUSE_RENAME:
	case FUSE_RENAME2:
		return vqf_dirent_is_dot(req->name, req->name_len) ||
		       vqf_dirent_is_dot(req->name2, req->name2_len);
	}
	return false;
}

static bool is_change(const struct vqf_dev_req *req)
{
	u32 fl;

	switch (req->in.opcode) {
	case FUSE_SETATTR:
	case FUSE_MKNOD:
	case FUSE_MKDIR:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
	case FUSE_SYMLINK:
	case FUSE_RENAME:
	case FUSE_RENAME2:
	case FUSE_LINK:
	case FUSE_CREATE:
	case FUSE_WRITE:
	case FUSE_SETXATTR:
	case FUSE_REMOVEXATTR:
	case FUSE_FALLOCATE:
	case FUSE_COPY_FILE_RANGE:
	case GUARD_TMPFILE:
		return true;
	case FUSE_OPEN:
		fl = req->arg.open.flags;
		return (fl & O_ACCMODE) != O_RDONLY || (fl & O_TRUNC);
	case FUSE_SETUPMAPPING:
		return req->arg.setupmapping.flags &
		       FUSE_SETUPMAPPING_FLAG_WRITE;
	}
	return false;
}

/*
 * The node ids @req names besides its header's; returns how many (at most
 * VQF_GUARD_PINS - 1).
 */
static unsigned int extra_nodes(const struct vqf_dev_req *req, u64 *ids)
{
	switch (req->in.opcode) {
	case FUSE_LINK:
		ids[0] = req->arg.link.oldnodeid;
		return 1;
	case FUSE_RENAME:
		ids[0] = req->arg.rename.newdir;
		return 1;
	case FUSE_RENAME2:
		ids[0] = req->arg.rename2.newdir;
		return 1;
	case FUSE_COPY_FILE_RANGE:
		ids[0] = req->arg.copy_file_range.nodeid_out;
		return 1;
	}
	return 0;
}

enum { K_FILE, K_DIR, K_ANY };

struct hreq {
	u64 fh, node;
	int kind;
};

/* The handles @req names; returns how many (at most 2). */
static unsigned int req_handles(const struct vqf_dev_req *req,
				struct hreq *h)
{
	const union vqf_dev_arg *a = &req->arg;
	u64 node = req->in.nodeid;
	u64 fh;
	int kind = K_FILE;

	switch (req->in.opcode) {
	case FUSE_READ:
		fh = a->read.fh;
		break;
	case FUSE_WRITE:
		fh = a->write.fh;
		break;
	case FUSE_FLUSH:
		fh = a->flush.fh;
		break;
	case FUSE_RELEASE:
		fh = a->release.fh;
		break;
	case FUSE_FSYNC:
		fh = a->fsync.fh;
		break;
	case FUSE_GETLK:
	case FUSE_SETLK:
	case FUSE_SETLKW:
		fh = a->lk.fh;
		break;
	case FUSE_IOCTL:
		fh = a->ioctl.fh;	/* Linux sends directories' too */
		kind = K_ANY;
		break;
	case FUSE_POLL:
		fh = a->poll.fh;
		break;
	case FUSE_FALLOCATE:
		fh = a->fallocate.fh;
		break;
	case FUSE_LSEEK:
		fh = a->lseek.fh;
		break;
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
		fh = a->read.fh;
		kind = K_DIR;
		break;
	case FUSE_RELEASEDIR:
		fh = a->release.fh;
		kind = K_DIR;
		break;
	case FUSE_FSYNCDIR:
		fh = a->fsync.fh;
		kind = K_DIR;
		break;
	case FUSE_GETATTR:
		if (!(a->getattr.getattr_flags & FUSE_GETATTR_FH))
			return 0;
		fh = a->getattr.fh;
		kind = K_ANY;
		break;
	case FUSE_SETATTR:
		if (!(a->setattr.valid & FATTR_FH))
			return 0;
		fh = a->setattr.fh;
		break;
	case FUSE_SETUPMAPPING:
		if (a->setupmapping.fh == ~0ULL)
			return 0;	/* by node: VQF_FSDEV_FH_NONE */
		fh = a->setupmapping.fh;
		break;
	case FUSE_COPY_FILE_RANGE:
		h[0] = (struct hreq){ a->copy_file_range.fh_in, node, K_FILE };
		h[1] = (struct hreq){ a->copy_file_range.fh_out,
				      a->copy_file_range.nodeid_out, K_FILE };
		return 2;
	default:
		return 0;
	}
	h[0] = (struct hreq){ fh, node, kind };
	return 1;
}

static struct ghandle *h_match(struct vqf_guard *g, const struct hreq *r)
{
	struct ghandle *h = NULL;

	if (r->kind != K_DIR)
		h = h_find(g, r->fh, r->node, false);
	if ((!h || !h->count) && r->kind != K_FILE)
		h = h_find(g, r->fh, r->node, true);
	return h && h->count ? h : NULL;
}

/*
 * LOOKUP ".." in directory @n (lock held): rewritten to LOOKUP(grand-
 * parent, parent's name), or to a GETATTR of the root.  Returns 0 or the
 * refusal.
 */
static int dotdot(struct vqf_guard *g, struct gnode *n,
		  struct vqf_dev_req *req, struct vqf_guard_tx *tx)
{
	struct gnode *p, *gp;
	size_t len;

	if (!S_ISDIR(n->mode)) {
		g->st.dotdot_notdir++;
		return -VQF_GUARD_E_DOTDOT_NOTDIR;
	}
	if (n != &g->root && !n->name) {
		g->st.dotdot_unknown++;
		return -VQF_GUARD_E_DOTDOT_UNKNOWN;
	}
	if (n == &g->root || n->parent == FUSE_ROOT_ID) {
		req->in.opcode = FUSE_GETATTR;
		req->in.nodeid = FUSE_ROOT_ID;
		memset(&req->arg.getattr, 0, sizeof(req->arg.getattr));
		req->arg_size = sizeof(req->arg.getattr);
		req->name = NULL;
		req->name_len = 0;
		tx->root_entry = true;
		g->st.dotdot_root++;
		return 0;
	}
	p = node_find(g, n->parent);
	gp = held(g, p) && p->name ? node_find(g, p->parent) : NULL;
	len = p && p->name ? strlen(p->name) : 0;
	if (!held(g, gp) || !len || len >= sizeof(req->names)) {
		g->st.dotdot_unknown++;
		return -VQF_GUARD_E_DOTDOT_UNKNOWN;
	}
	memcpy(req->names, p->name, len + 1);
	req->name = req->names;
	req->name_len = (u32)len;
	req->in.nodeid = gp->id;
	g->st.dotdot_parent++;
	return 0;
}

/* The node checks of @req (lock held): 0 or the refusal. */
static int check_nodes(struct vqf_guard *g, struct vqf_dev_req *req,
		       struct vqf_guard_tx *tx)
{
	u64 ids[VQF_GUARD_PINS];
	unsigned int i, n = 1 + extra_nodes(req, ids + 1);
	struct gnode *node[VQF_GUARD_PINS];
	u32 op = req->in.opcode;
	int ret;

	ids[0] = req->in.nodeid;
	for (i = 0; i < n; i++) {
		node[i] = node_find(g, ids[i]);
		/*
		 * close() queues RELEASE on a request queue; the inode's
		 * eviction then sends FORGET on hiprio, which may be served
		 * first.  The node stays while handles are bound to it, for
		 * their release only (the handle check below binds fh to it).
		 */
		if (!i && !held(g, node[i]) && node[i] && node[i]->handles &&
		    (op == FUSE_RELEASE || op == FUSE_RELEASEDIR)) {
			g->st.release_forgotten++;
			continue;
		}
		if (!held(g, node[i])) {
			g->st.node_unknown++;
			return -VQF_GUARD_E_NODE_UNKNOWN;
		}
	}
	if (op == FUSE_OPEN || (op == FUSE_SETUPMAPPING &&
				req->arg.setupmapping.fh == ~0ULL)) {
		if (S_ISDIR(node[0]->mode) && op == FUSE_OPEN) {
			g->st.open_dir++;
			return -VQF_GUARD_E_OPEN_DIR;
		}
		if (!S_ISREG(node[0]->mode)) {
			g->st.open_special++;
			return -VQF_GUARD_E_OPEN_SPECIAL;
		}
	}
	if (op == FUSE_OPENDIR && !S_ISDIR(node[0]->mode)) {
		g->st.opendir_notdir++;
		return -VQF_GUARD_E_OPENDIR_NOTDIR;
	}
	if (op == FUSE_LOOKUP && req->name_len == 2 &&
	    vqf_dirent_is_dot(req->name, 2)) {
		ret = dotdot(g, node[0], req, tx);
		if (ret)
			return ret;
		node[0] = node_find(g, req->in.nodeid);
	}
	for (i = 0; i < n; i++) {
		node[i]->busy++;
		tx->node[tx->nnode++] = node[i]->id;
	}
	return 0;
}

/* RELEASE/RELEASEDIR of @h (lock held): ends it once nothing uses it. */
static int release(struct vqf_guard *g, struct ghandle *h)
{
	u64 fh = h->fh, node = h->node, gen = g->gen;
	bool dir = h->dir;

	if (--h->count || !h->busy) {
		h_put(g, h);
		return 0;
	}
	g->st.release_waits++;
	g->waiters++;
	while (!g->stopping && g->gen == gen &&
	       (h = h_find(g, fh, node, dir)) && !h->count && h->busy)
		pthread_cond_wait(&g->idle, &g->lock);
	g->waiters--;
	h = g->gen == gen ? h_find(g, fh, node, dir) : NULL;
	if (h)
		h_put(g, h);
	if (g->stopping || g->gen != gen) {
		g->st.stop_dropped++;
		return -VQF_GUARD_E_STOP;
	}
	return 0;
}

/* Undoes the node pins @tx took so far (lock held). */
static void unpin_nodes(struct vqf_guard *g, struct vqf_guard_tx *tx)
{
	struct gnode *n;

	while (tx->nnode) {
		n = node_find(g, tx->node[--tx->nnode]);
		if (n && n->busy && !--n->busy) {
			node_put(g, n);
			if (g->waiters)
				pthread_cond_broadcast(&g->idle);
		}
	}
}

int vqf_guard_request(struct vqf_guard *g, struct vqf_dev_req *req,
		      struct vqf_guard_tx *tx)
{
	struct hreq hr[2];
	struct ghandle *h[2];
	unsigned int i, nh;
	u32 op = req->in.opcode;
	int ret;

	switch (op) {
	case FUSE_INIT:
	case FUSE_DESTROY:
		session_reset(g);
		return 0;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		return 0;
	}
	pthread_mutex_lock(&g->lock);
	g->st.checked++;
	if (names_dot(req)) {
		g->st.name_dot++;
		ret = -VQF_GUARD_E_NAME_DOT;
		goto out;
	}
	if (g->readonly && is_change(req)) {
		g->st.readonly++;
		ret = -VQF_GUARD_E_READONLY;
		goto out;
	}
	nh = req_handles(req, hr);
	ret = check_nodes(g, req, tx);
	if (ret)
		goto out;
	for (i = 0; i < nh; i++) {
		h[i] = h_match(g, &hr[i]);
		if (!h[i]) {
			if (h_any(g, hr[i].fh)) {
				g->st.handle_mismatch++;
				ret = -VQF_GUARD_E_HANDLE_MISMATCH;
			} else {
				g->st.handle_unknown++;
				ret = -VQF_GUARD_E_HANDLE_UNKNOWN;
			}
			unpin_nodes(g, tx);
			goto out;
		}
	}
	tx->gen = g->gen;
	if (op == FUSE_RELEASE || op == FUSE_RELEASEDIR) {
		ret = release(g, h[0]);
		if (ret) {
			if (tx->gen == g->gen)
				unpin_nodes(g, tx);
			tx->nnode = 0;
			goto out;
		}
	}
	tx->checked = true;
	g->pinned++;
	if (op == FUSE_RELEASE || op == FUSE_RELEASEDIR)
		goto out;
	for (i = 0; i < nh; i++) {
		h[i]->busy++;
		tx->fh_dir[tx->nfh] = h[i]->dir;
		tx->fh[tx->nfh] = h[i]->fh;
		tx->fh_node[tx->nfh++] = h[i]->node;
	}
out:
	pthread_mutex_unlock(&g->lock);
	return ret;
}

void vqf_guard_done(struct vqf_guard *g, struct vqf_guard_tx *tx)
{
	struct ghandle *h;

	if (!tx->checked && !tx->nnode && !tx->nfh)
		return;
	pthread_mutex_lock(&g->lock);
	if (tx->gen == g->gen) {
		unpin_nodes(g, tx);
		if (tx->checked && !--g->pinned && g->waiters)
			pthread_cond_broadcast(&g->idle);
		while (tx->nfh) {
			tx->nfh--;
			/* The kind it pinned: a node whose type changed may
			 * hold the same value as a file's and a directory's.
			 */
			h = h_find(g, tx->fh[tx->nfh], tx->fh_node[tx->nfh],
				   tx->fh_dir[tx->nfh]);
			if (h && h->busy && !--h->busy) {
				h_put(g, h);
				if (g->waiters)
					pthread_cond_broadcast(&g->idle);
			}
		}
	}
	tx->nnode = 0;
	tx->nfh = 0;
	tx->checked = false;
	pthread_mutex_unlock(&g->lock);
}

/* ---- forgets ---------------------------------------------------------- */

/* One forget entry (lock held): the count to pass on, 0 for none. */
static u64 forget_one(struct vqf_guard *g, u64 id, u64 k)
{
	struct gnode *n = node_find(g, id);
	u64 gen = g->gen;

	if (!n || !n->nlookup || !k) {
		g->st.forget_unknown++;
		return 0;
	}
	if (k > n->nlookup) {
		g->st.forget_clamped++;
		k = n->nlookup;
	}
	n->nlookup -= k;
	if (!n->nlookup && n->busy) {
		g->st.forget_waits++;
		g->waiters++;
		while (!g->stopping && g->gen == gen &&
		       (n = node_find(g, id)) && !n->nlookup && n->busy)
			pthread_cond_wait(&g->idle, &g->lock);
		g->waiters--;
		if (g->stopping || g->gen != gen) {
			g->st.stop_dropped++;
			return 0;
		}
	}
	n = node_find(g, id);
	if (n)
		node_put(g, n);
	g->st.forgets++;
	return k;
}

u32 vqf_guard_forget(struct vqf_guard *g, void *flat, u32 len)
{
	const size_t hl = sizeof(struct fuse_in_header);
	struct fuse_in_header ih;
	struct fuse_batch_forget_in bf;
	struct fuse_forget_one one;
	struct fuse_forget_in fi;
	u8 *p = flat;
	u32 i, n, out = 0;

	if (len < hl)
		return len;
	memcpy(&ih, p, hl);
	if (ih.opcode == FUSE_FORGET && len >= hl + sizeof(fi)) {
		memcpy(&fi, p + hl, sizeof(fi));
		pthread_mutex_lock(&g->lock);
		fi.nlookup = forget_one(g, ih.nodeid, fi.nlookup);
		pthread_mutex_unlock(&g->lock);
		if (!fi.nlookup)
			return 0;
		memcpy(p + hl, &fi, sizeof(fi));
		return len;
	}
	if (ih.opcode != FUSE_BATCH_FORGET || len < hl + sizeof(bf))
		return len;
	memcpy(&bf, p + hl, sizeof(bf));
	n = (len - hl - sizeof(bf)) / sizeof(one);
	if (bf.count < n)
		n = bf.count;
	p += hl + sizeof(bf);
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < n; i++) {
		memcpy(&one, p + i * sizeof(one), sizeof(one));
		one.nlookup = forget_one(g, one.nodeid, one.nlookup);
		if (one.nlookup)
			memcpy(p + out++ * sizeof(one), &one, sizeof(one));
	}
	pthread_mutex_unlock(&g->lock);
	if (!out)
		return 0;
	bf.count = out;
	memcpy((u8 *)flat + hl, &bf, sizeof(bf));
	ih.len = (u32)(hl + sizeof(bf) + out * sizeof(one));
	memcpy(flat, &ih, hl);
	return ih.len;
}

/* ---- replies ---------------------------------------------------------- */

/*
 * Counts a lookup of entry @e, named @name (@len bytes) in @parent; @len 0
 * names nothing.  A request's name passed lib/'s parser (not empty, no
 * '/' nor NUL, within the cap); a READDIRPLUS name passed lib/'s walker.
 */
static void rec_entry(struct vqf_guard *g, const struct fuse_entry_out *e,
		      u64 parent, const char *name, u32 len)
{
	struct gnode *n;

	if (!e->nodeid)
		return;		/* negative entry: no lookup */
	n = node_get(g, e->nodeid);
	if (!n) {
		g->st.record_nomem++;
		return;
	}
	n->nlookup++;
	g->st.entries++;
	if (n == &g->root)
		return;
	n->mode = e->attr.mode & S_IFMT;
	if (!S_ISDIR(n->mode) || !len || vqf_dirent_is_dot(name, len))
		name_unset(g, n);
	else
		name_set(g, n, parent, name, len);
}

/*
 * The walk stops where lib/'s walker finds a record cut short or a bad
 * name length, where Linux stops reading too.  A name with '/' or NUL
 * still counts its lookup (the id was handed out), with no place.
 */
static void rec_dirplus(struct vqf_guard *g, u64 dir, const u8 *buf,
			size_t len)
{
	struct vqf_dirent e;
	u32 pos = 0;
	int ret;

	while (vqf_dirent_framed(ret = vqf_dirent_next(buf, (u32)len, true,
						       &pos, &e)))
		if (vqf_dirent_counts_lookup(&e))
			rec_entry(g, &e.entry, dir, e.name,
				  ret > 0 ? e.namelen : 0);
}

static void rec_rename(struct vqf_guard *g, const struct vqf_dev_req *req)
{
	u64 olddir = req->in.nodeid, newdir;
	u32 flags = 0;
	struct gnode *a, *b;

	if (req->in.opcode == FUSE_RENAME) {
		newdir = req->arg.rename.newdir;
	} else {
		newdir = req->arg.rename2.newdir;
		flags = req->arg.rename2.flags;
	}
	a = name_find(g, olddir, req->name);
	b = name_find(g, newdir, req->name2);
	if (flags & RENAME_EXCHANGE) {
		if (a)
			name_set(g, a, newdir, req->name2, req->name2_len);
		if (b && b != a)
			name_set(g, b, olddir, req->name, req->name_len);
		return;
	}
	if (b && b != a)
		name_unset(g, b);	/* replaced: unlinked now */
	if (a)
		name_set(g, a, newdir, req->name2, req->name2_len);
}

/* The root's entry from the GETATTR a LOOKUP ".." became. */
static int root_entry(struct vqf_guard_tx *tx, const struct iovec *iov,
		      int iovcnt, size_t plen, const void **payload,
		      u32 *outlen)
{
	struct fuse_attr_out ao;

	if (plen < sizeof(ao) ||
	    vqf_iov_gather(&ao, sizeof(ao), iov, iovcnt,
			   sizeof(struct fuse_out_header)) < sizeof(ao))
		return -EIO;
	memset(&tx->entry, 0, sizeof(tx->entry));
	tx->entry.nodeid = FUSE_ROOT_ID;
	tx->entry.entry_valid = ao.attr_valid;
	tx->entry.entry_valid_nsec = ao.attr_valid_nsec;
	tx->entry.attr_valid = ao.attr_valid;
	tx->entry.attr_valid_nsec = ao.attr_valid_nsec;
	tx->entry.attr = ao.attr;
	*payload = &tx->entry;
	*outlen = sizeof(tx->entry);
	return 1;
}

int vqf_guard_reply(struct vqf_guard *g, struct vqf_guard_tx *tx,
		    const struct vqf_dev_req *req, const struct iovec *iov,
		    int iovcnt, size_t len, const void **payload, u32 *plen)
{
	const size_t ohl = sizeof(struct fuse_out_header);
	struct {
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} eo;
	struct fuse_out_header oh;
	size_t pl = len > ohl ? len - ohl : 0;
	size_t need = 0, got = 0;
	u32 op = req->in.opcode;
	void *dst = &eo;
	u8 *buf = NULL;
	int ret = 0;

	if (iovcnt < 1 || vqf_iov_gather(&oh, ohl, iov, iovcnt, 0) < ohl ||
	    oh.error)
		return 0;
	if (tx->root_entry)
		ret = root_entry(tx, iov, iovcnt, pl, payload, plen);
	if (tx->root_entry || !tx->checked)
		return ret;
	switch (op) {
	case FUSE_LOOKUP:
	case FUSE_MKNOD:
	case FUSE_MKDIR:
	case FUSE_SYMLINK:
	case FUSE_LINK:
		need = sizeof(eo.e);
		break;
	case FUSE_CREATE:
	case GUARD_TMPFILE:
		need = sizeof(eo);
		break;
	case FUSE_OPEN:
	case FUSE_OPENDIR:
		dst = &eo.o;
		need = sizeof(eo.o);
		break;
	case FUSE_READDIRPLUS:
		need = pl;
		dst = buf = pl ? malloc(pl) : NULL;
		break;
	case FUSE_RENAME:
	case FUSE_RENAME2:
	case FUSE_RMDIR:
		break;
	default:
		return 0;
	}
	if (need && !dst) {
		pthread_mutex_lock(&g->lock);
		g->st.record_nomem++;
		pthread_mutex_unlock(&g->lock);
		return 0;
	}
	if (need)
		got = vqf_iov_gather(dst, need, iov, iovcnt, ohl);
	pthread_mutex_lock(&g->lock);
	if (tx->gen != g->gen) {
		/* Checked before a reset: its ids are the old session's. */
	} else if (got < need) {
		g->st.reply_bad++;
	} else if (op == FUSE_OPEN || op == FUSE_OPENDIR) {
		h_add(g, eo.o.fh, req->in.nodeid, op == FUSE_OPENDIR);
	} else if (op == FUSE_READDIRPLUS) {
		rec_dirplus(g, req->in.nodeid, buf, got);
	} else if (op == FUSE_RENAME || op == FUSE_RENAME2) {
		rec_rename(g, req);
	} else if (op == FUSE_RMDIR) {
		struct gnode *n = name_find(g, req->in.nodeid, req->name);

		if (n)
			name_unset(g, n);
	} else {
		rec_entry(g, &eo.e, req->in.nodeid, req->name,
			  op == GUARD_TMPFILE ? 0 : req->name_len);
		if ((op == FUSE_CREATE || op == GUARD_TMPFILE) && eo.e.nodeid)
			h_add(g, eo.o.fh, eo.e.nodeid, false);
	}
	pthread_mutex_unlock(&g->lock);
	free(buf);
	return 0;
}
