// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * hub.c - several guests on one FUSE server, with the shared version
 * table (see vqf_hub.h).
 *
 * Locks, outermost first:
 *   h->init_lock  INIT reaches the backend once, while later INITs wait
 *   h->lock       ports, their in-flight lists, the node maps, the
 *                 version allocator and every bump (lib's bump is atomic,
 *                 but a slot must not be bumped after it was recycled)
 * The backend is called, and replies are passed on, without h->lock.
 */
#define _GNU_SOURCE
#include "hub_int.h"
#include "vqf_dirent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define HUB_DEFAULT_SLOTS	65536

/* ---- backend calls of the hub's own --------------------------------- */

/* FORGET and INTERRUPT get no reply; the backend still wants a callback. */
static int no_reply(void *ctx, const struct iovec *iov, int iovcnt,
		    size_t len)
{
	(void)ctx;
	(void)iov;
	(void)iovcnt;
	(void)len;
	return 0;
}

struct sync_call {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int error;
	struct fuse_entry_out entry;
};

static int sync_reply(void *ctx, const struct iovec *iov, int iovcnt,
		      size_t len)
{
	struct sync_call *sc = ctx;
	struct fuse_out_header oh;
	u8 buf[sizeof(oh) + sizeof(sc->entry)];

	memset(buf, 0, sizeof(buf));
	vqf_iov_gather(buf, sizeof(buf), iov, iovcnt, 0);
	memcpy(&oh, buf, sizeof(oh));
	pthread_mutex_lock(&sc->lock);
	sc->error = oh.error;
	if (!oh.error && len >= sizeof(buf))
		memcpy(&sc->entry, buf + sizeof(oh), sizeof(sc->entry));
	sc->done = true;
	pthread_cond_signal(&sc->cond);
	pthread_mutex_unlock(&sc->lock);
	return 0;
}

u64 hub_unique(struct vqf_hub *h)
{
	return atomic_fetch_add(&h->next_unique, 2) + 2;
}

/* A FORGET the hub sends for lookups nobody needs any more. */
void hub_backend_forget(struct vqf_hub *h, u64 nodeid, u64 count)
{
	struct {
		struct fuse_in_header ih;
		struct fuse_forget_in fi;
	} m;

	if (!count)
		return;
	memset(&m, 0, sizeof(m));
	m.ih.len = sizeof(m);
	m.ih.opcode = FUSE_FORGET;
	m.ih.unique = hub_unique(h);
	m.ih.nodeid = nodeid;
	m.fi.nlookup = count;
	vqf_backend_process(h->cfg.be, &m, sizeof(m), no_reply, NULL);
}

/*
 * The nodeid @name in @parent names right now, found with a LOOKUP of the
 * hub's own (given back at once): an UNLINK, RMDIR or RENAME changes the
 * inode it unbinds, and the guest may know that inode under another name.
 * 0 when there is none.
 */
static u64 internal_lookup(struct vqf_hub *h, u64 parent, const char *name)
{
	struct sync_call sc = { .lock = PTHREAD_MUTEX_INITIALIZER,
				.cond = PTHREAD_COND_INITIALIZER };
	size_t nl = strlen(name) + 1;
	u8 *m = malloc(sizeof(struct fuse_in_header) + nl);
	struct fuse_in_header ih = { 0 };
	u64 nodeid = 0;
	int ret;

	if (!m)
		return 0;
	ih.len = (u32)(sizeof(ih) + nl);
	ih.opcode = FUSE_LOOKUP;
	ih.unique = hub_unique(h);
	ih.nodeid = parent;
	memcpy(m, &ih, sizeof(ih));
	memcpy(m + sizeof(ih), name, nl);
	ret = vqf_backend_process(h->cfg.be, m, ih.len, sync_reply, &sc);
	free(m);
	if (ret != VQF_BE_REPLY)
		return 0;
	pthread_mutex_lock(&sc.lock);
	while (!sc.done)
		pthread_cond_wait(&sc.cond, &sc.lock);
	pthread_mutex_unlock(&sc.lock);
	pthread_mutex_lock(&h->lock);
	h->st.internal_lookups++;
	pthread_mutex_unlock(&h->lock);
	if (!sc.error && sc.entry.nodeid) {
		nodeid = sc.entry.nodeid;
		hub_backend_forget(h, nodeid, 1);
	}
	pthread_cond_destroy(&sc.cond);
	pthread_mutex_destroy(&sc.lock);
	return nodeid;
}

/* ---- requests --------------------------------------------------------- */

static bool is_entry_op(u32 op)
{
	switch (op) {
	case FUSE_LOOKUP:
	case FUSE_CREATE:
	case FUSE_MKNOD:
	case FUSE_MKDIR:
	case FUSE_SYMLINK:
	case FUSE_LINK:
	case FUSE_TMPFILE:
		return true;
	default:
		return false;
	}
}

static void rec_free(struct hub_rec *r)
{
	free(r->name);
	free(r->name2);
	free(r);
}

/* Names a request carries: copied, as the request buffer is the device's. */
static int rec_names(struct hub_rec *r, const u8 *req, size_t len)
{
	const struct fuse_in_header *ih = (const void *)req;
	size_t off = sizeof(*ih), fixed = 0;
	const char *a, *b;

	switch (ih->opcode) {
	case FUSE_LOOKUP:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
		break;
	case FUSE_CREATE:
		fixed = sizeof(struct fuse_create_in);
		break;
	case FUSE_MKNOD:
		fixed = sizeof(struct fuse_mknod_in);
		break;
	case FUSE_MKDIR:
		fixed = sizeof(struct fuse_mkdir_in);
		break;
	case FUSE_LINK:
		fixed = sizeof(struct fuse_link_in);
		if (len >= off + fixed)
			memcpy(&r->nodeid2, req + off, sizeof(r->nodeid2));
		break;
	case FUSE_RENAME:
		fixed = sizeof(struct fuse_rename_in);
		break;
	case FUSE_RENAME2:
		fixed = sizeof(struct fuse_rename2_in);
		break;
	case FUSE_SYMLINK:
		break;		/* name, then the target */
	default:
		return 0;
	}
	if (ih->opcode == FUSE_RENAME || ih->opcode == FUSE_RENAME2) {
		if (len >= off + 8)
			memcpy(&r->nodeid2, req + off, sizeof(r->nodeid2));
	}
	off += fixed;
	if (off >= len)
		return -EBADMSG;
	a = (const char *)req + off;
	if (!memchr(a, 0, len - off))
		return -EBADMSG;
	r->name = strdup(a);
	if (!r->name)
		return -ENOMEM;
	if (ih->opcode != FUSE_RENAME && ih->opcode != FUSE_RENAME2)
		return 0;
	off += strlen(a) + 1;
	b = (const char *)req + off;
	if (off >= len || !memchr(b, 0, len - off))
		return -EBADMSG;
	r->name2 = strdup(b);
	return r->name2 ? 0 : -ENOMEM;
}

/*
 * Attributes of a file some window maps writable were just handed out:
 * they may be stale at the next store, so the slot moves past the
 * version the guest took them at (vqf_hub_dax_writable()).
 */
static void wmap_bump(struct vqf_hub *h, struct hub_node *n)
{
	if (!n || !n->wmaps)
		return;
	hub_bump(h, n, false);
	h->st.wmap_bumps++;
}

/*
 * READDIRPLUS hands out a lookup for every entry with a nodeid, except
 * "." and ".." (fuse_direntplus_link() skips them, and so do servers).
 * The walk stops where lib/ finds a record cut short or a bad name length,
 * as Linux does; a name with '/' or NUL still counts its lookup (the id
 * was handed out) but names nothing.  Under h->lock.
 */
static void count_direntplus(struct vqf_hub *h, struct hub_rec *r,
			     const struct iovec *iov, int iovcnt)
{
	char name[VQF_FUSE_NAME_MAX + 1];
	struct vqf_dirent e;
	size_t len = 0;
	u32 pos = 0;
	u8 *buf;
	int i, ret;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len <= sizeof(struct fuse_out_header))
		return;
	len -= sizeof(struct fuse_out_header);
	buf = malloc(len);
	if (!buf)
		return;
	vqf_iov_gather(buf, len, iov, iovcnt,
		       sizeof(struct fuse_out_header));
	while (vqf_dirent_framed(ret = vqf_dirent_next(buf, (u32)len, true,
						       &pos, &e))) {
		struct hub_node *n;

		if (!vqf_dirent_counts_lookup(&e))
			continue;
		n = hub_node_get(h, e.entry.nodeid);
		if (!n)
			continue;
		wmap_bump(h, n);
		n->total++;
		n->per_port[r->port->idx]++;
		h->st.entries++;
		hub_ino_set(h, n, e.entry.attr.ino);
		if (ret > 0) {
			memcpy(name, e.name, e.namelen);
			name[e.namelen] = 0;
			hub_name_set(h, n, r->nodeid, name);
		}
	}
	free(buf);
}

/* After a reply with error 0: what the change did to the table. */
static void apply_change(struct vqf_hub *h, struct hub_rec *r,
			 const struct iovec *iov, int iovcnt)
{
	struct hub_node *n;

	switch (r->opcode) {
	case FUSE_SETATTR:
	case FUSE_WRITE:
	case FUSE_FALLOCATE:
	case FUSE_SETXATTR:
	case FUSE_REMOVEXATTR:
		hub_bump(h, hub_node_find(h, r->nodeid), false);
		r->own++;
		break;
	case FUSE_OPEN:
		if (r->trunc) {
			hub_bump(h, hub_node_find(h, r->nodeid), false);
			r->own++;
		}
		break;
	case FUSE_COPY_FILE_RANGE:
		hub_bump(h, hub_node_find(h, r->nodeid2), false);
		r->own++;
		break;
	case FUSE_UNLINK:
	case FUSE_RMDIR:
		hub_bump(h, hub_node_find(h, r->nodeid), false);
		hub_bump(h, hub_node_find(h, r->victim), false);
		r->own += 2;
		n = hub_node_by_name(h, r->nodeid, r->name);
		if (n)
			hub_name_clear(h, n);
		break;
	case FUSE_RENAME:
	case FUSE_RENAME2:
		hub_bump(h, hub_node_find(h, r->nodeid), false);
		hub_bump(h, hub_node_find(h, r->nodeid2), false);
		hub_bump(h, hub_node_find(h, r->victim), false);
		hub_bump(h, hub_node_find(h, r->victim2), false);
		r->own += 4;
		n = hub_node_find(h, r->victim);
		if (n && r->exchange) {
			struct hub_node *m = hub_node_find(h, r->victim2);

			hub_name_clear(h, n);
			if (m)
				hub_name_set(h, m, r->nodeid, r->name);
			hub_name_set(h, n, r->nodeid2, r->name2);
		} else if (n) {
			hub_name_set(h, n, r->nodeid2, r->name2);
		}
		break;
	case FUSE_READDIRPLUS:
		count_direntplus(h, r, iov, iovcnt);
		break;
	case FUSE_GETATTR:
		wmap_bump(h, hub_node_find(h, r->nodeid));
		break;
	default:
		break;
	}
}

/*
 * An entry reply: count the lookup for the port, record the name and
 * host inode, bump what the creation changed, and fill the extension.
 * Returns true when @ev is to be appended.
 */
static bool apply_entry(struct vqf_hub *h, struct hub_rec *r,
			const struct fuse_entry_out *e,
			struct fuse_entryver_out *ev)
{
	struct hub_node *n;

	if (!e->nodeid)
		return false;	/* negative entry: nothing to count */
	n = hub_node_get(h, e->nodeid);
	if (!n)
		return false;	/* counted nowhere: the FORGET is dropped */
	n->total++;
	n->per_port[r->port->idx]++;
	h->st.entries++;
	hub_ino_set(h, n, e->attr.ino);
	n->size = e->attr.size;
	n->size_set = true;
	if (r->name && r->opcode != FUSE_TMPFILE)
		hub_name_set(h, n, r->nodeid, r->name);
	if (r->opcode != FUSE_LOOKUP) {
		/* The directory gained a name; LINK's inode a link. */
		hub_bump(h, hub_node_find(h, r->nodeid), false);
		hub_bump(h, n, false);
		r->own += 2;
	}
	if (!r->port->versions)
		return false;
	vqf_ver_dev_fill_entryver(&h->vd, n->slot, ev);
	/*
	 * The backend read the attributes in this reply before the fill:
	 * if anyone else bumped anything meanwhile they may predate the
	 * version, so promise nothing (the guest caches them, never valid).
	 */
	if (h->epoch != r->epoch + r->own) {
		ev->initial_version = 0;
		h->st.entryver_raced++;
	}
	h->st.entryver_sent++;
	/* After the fill: the version sent is already behind the slot. */
	wmap_bump(h, n);
	return true;
}

static void port_unlink_rec(struct hub_rec *r)
{
	struct hub_rec **pp = &r->port->inflight;

	while (*pp && *pp != r)
		pp = &(*pp)->next;
	if (*pp)
		*pp = r->next;
}

/*
 * After a reply (h->lock held): whether the request changed the file's
 * size, for cfg.resize_hook: its nodeid in *@id and the sizes.  forward()
 * set the hub's size where the request says it, so that the watcher's
 * own event for this change is no second one; a SETATTR's reply says the
 * size it left, a failed request puts the old one back.
 */
static bool resize_of(struct vqf_hub *h, struct hub_rec *r, int error,
		      const struct fuse_entry_out *e,
		      const struct iovec *iov, int iovcnt, u64 *id)
{
	const size_t oh = sizeof(struct fuse_out_header);
	struct fuse_attr_out ao;
	struct hub_node *n;

	if (!h->cfg.resize_hook)
		return false;
	if (r->opcode == FUSE_CREATE && r->trunc && !error && e->nodeid) {
		/* An existing file truncated, or a new one: no size before. */
		*id = e->nodeid;
		r->old_size = VQF_HUB_SIZE_UNKNOWN;
		r->new_size = e->attr.size;
		return true;
	}
	if (!r->resize)
		return false;
	n = hub_node_find(h, r->nodeid);
	if (n && n->resizing)
		n->resizing--;
	if (error) {
		if (n && n->size == r->new_size &&
		    r->old_size != VQF_HUB_SIZE_UNKNOWN)
			n->size = r->old_size;
		return false;
	}
	if (r->opcode == FUSE_SETATTR &&
	    vqf_iov_gather(&ao, sizeof(ao), iov, iovcnt, oh) == sizeof(ao)) {
		r->new_size = ao.attr.size;
		if (n)
			n->size = ao.attr.size;
	}
	*id = r->nodeid;
	return r->new_size != r->old_size;
}

static int hub_reply(void *ctx, const struct iovec *iov, int iovcnt,
		     size_t len)
{
	struct hub_rec *r = ctx;
	struct vqf_hub *h = r->port->h;
	struct fuse_out_header oh;
	struct fuse_entry_out e;
	struct fuse_entryver_out ev;
	struct fuse_init_out io;
	struct iovec *v, small[8];
	bool append = false, resized;
	u64 rid = 0;
	int n, ret;

	if (vqf_iov_gather(&oh, sizeof(oh), iov, iovcnt, 0) != sizeof(oh))
		return -EINVAL;
	v = iovcnt + 2 <= 8 ? small : malloc((iovcnt + 2) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(&e, 0, sizeof(e));
	pthread_mutex_lock(&h->lock);
	port_unlink_rec(r);
	if (!oh.error) {
		apply_change(h, r, iov, iovcnt);
		if (is_entry_op(r->opcode) &&
		    vqf_iov_gather(&e, sizeof(e), iov, iovcnt, sizeof(oh)) ==
		    sizeof(e))
			append = apply_entry(h, r, &e, &ev);
	}
	resized = resize_of(h, r, oh.error, &e, iov, iovcnt, &rid);
	h->st.replies++;
	pthread_mutex_unlock(&h->lock);
	if (resized)
		h->cfg.resize_hook(h->cfg.resize_ctx, rid, r->old_size,
				   r->new_size, r->port);
	if (append && h->cfg.entryver_hook)
		h->cfg.entryver_hook(h->cfg.hook_ctx, &ev);

	oh.unique = r->guest_unique;
	oh.len = (u32)len + (append ? sizeof(ev) : 0);
	v[0].iov_base = &oh;
	v[0].iov_len = sizeof(oh);
	n = 1;
	if (r->opcode == FUSE_INIT && !oh.error) {
		/* The INIT reply says whether this guest gets versions. */
		memset(&io, 0, sizeof(io));
		vqf_iov_gather(&io, sizeof(io), iov, iovcnt, sizeof(oh));
		if (r->port->versions)
			io.flags2 |= VQF_FUSE_INIT_SHARED_VERSION;
		else
			io.flags2 &= ~VQF_FUSE_INIT_SHARED_VERSION;
		v[1].iov_base = &io;
		v[1].iov_len = len - sizeof(oh) < sizeof(io) ?
			       len - sizeof(oh) : sizeof(io);
		n = 2;
	} else {
		size_t skip = sizeof(oh);
		int i;

		for (i = 0; i < iovcnt; i++) {
			if (skip >= iov[i].iov_len) {
				skip -= iov[i].iov_len;
				continue;
			}
			v[n].iov_base = (u8 *)iov[i].iov_base + skip;
			v[n++].iov_len = iov[i].iov_len - skip;
			skip = 0;
		}
	}
	if (append) {
		v[n].iov_base = &ev;
		v[n++].iov_len = sizeof(ev);
	}
	ret = r->reply(r->ctx, v, n, oh.len);
	if (v != small)
		free(v);
	rec_free(r);
	return ret;
}

/* Reply with just a header (DESTROY, a refused INIT). */
static int local_reply(u64 unique, int error, const void *arg, size_t len,
		       vqf_backend_reply_fn reply, void *ctx)
{
	struct fuse_out_header oh = { 0 };
	struct iovec v[2];

	oh.unique = unique;
	oh.error = error;
	oh.len = (u32)(sizeof(oh) + len);
	v[0].iov_base = &oh;
	v[0].iov_len = sizeof(oh);
	v[1].iov_base = (void *)arg;
	v[1].iov_len = len;
	reply(ctx, v, len ? 2 : 1, oh.len);
	return VQF_BE_REPLY;
}

/* INIT of a guest after the first: the backend's answer, for this guest. */
static int init_local(struct vqf_hub_port *p, const struct fuse_in_header *ih,
		      const struct fuse_init_in *in,
		      vqf_backend_reply_fn reply, void *ctx)
{
	struct fuse_init_out out;
	size_t len = sizeof(out);

	if (vqf_backend_init_out(p->h->cfg.be, &out))
		return local_reply(ih->unique, -EIO, NULL, 0, reply, ctx);
	if (in->major != FUSE_KERNEL_VERSION)
		return local_reply(ih->unique, -EPROTO, NULL, 0, reply, ctx);
	if (in->minor < out.minor)
		out.minor = in->minor;
	out.flags &= in->flags;
	if (in->flags & FUSE_INIT_EXT)
		out.flags2 &= in->flags2;
	else
		out.flags2 = 0;
	if (p->versions)
		out.flags2 |= VQF_FUSE_INIT_SHARED_VERSION;
	else
		out.flags2 &= ~VQF_FUSE_INIT_SHARED_VERSION;
	if (out.minor < 23)
		len = FUSE_COMPAT_22_INIT_OUT_SIZE;
	pthread_mutex_lock(&p->h->lock);
	p->h->st.local_inits++;
	pthread_mutex_unlock(&p->h->lock);
	return local_reply(ih->unique, 0, &out, len, reply, ctx);
}

/* Every lookup @p holds goes back to the backend. */
static void port_forget_all(struct vqf_hub_port *p)
{
	struct vqf_hub *h = p->h;
	struct { u64 nodeid, count; } *todo = NULL;
	size_t nt = 0, cap = 0;
	unsigned int b;
	struct hub_node *n, *next;

	pthread_mutex_lock(&h->lock);
	for (b = 0; b < HUB_BUCKETS; b++) {
		for (n = h->by_id[b]; n; n = next) {
			u64 nodeid = n->nodeid, c = n->per_port[p->idx];

			next = n->next_id;
			if (!c)
				continue;
			if (nt == cap) {
				void *t = realloc(todo, (cap ? cap * 2 : 64) *
						  sizeof(*todo));

				if (!t)
					break;
				todo = t;
				cap = cap ? cap * 2 : 64;
			}
			c = hub_forget_locked(h, p->idx, nodeid, c);
			h->st.port_forgets += c;
			todo[nt].nodeid = nodeid;
			todo[nt++].count = c;
		}
	}
	pthread_mutex_unlock(&h->lock);
	while (nt--)
		hub_backend_forget(h, todo[nt].nodeid, todo[nt].count);
	free(todo);
}

static int do_forget(struct vqf_hub_port *p, u8 *req, size_t len)
{
	struct vqf_hub *h = p->h;
	struct fuse_in_header ih;
	struct fuse_forget_in fi;

	if (len < sizeof(ih) + sizeof(fi))
		return vqf_backend_process(h->cfg.be, req, len, no_reply, NULL);
	memcpy(&ih, req, sizeof(ih));
	memcpy(&fi, req + sizeof(ih), sizeof(fi));
	pthread_mutex_lock(&h->lock);
	fi.nlookup = hub_forget_locked(h, p->idx, ih.nodeid, fi.nlookup);
	pthread_mutex_unlock(&h->lock);
	if (!fi.nlookup)
		return VQF_BE_NO_REPLY;
	ih.unique = hub_unique(h);
	memcpy(req, &ih, sizeof(ih));
	memcpy(req + sizeof(ih), &fi, sizeof(fi));
	return vqf_backend_process(h->cfg.be, req, len, no_reply, NULL);
}

static int do_batch_forget(struct vqf_hub_port *p, u8 *req, size_t len)
{
	struct vqf_hub *h = p->h;
	struct fuse_in_header ih;
	struct fuse_batch_forget_in bi;
	struct fuse_forget_one one;
	size_t off = sizeof(ih) + sizeof(bi), keep = off;
	u32 i, kept = 0;

	if (len < off)
		return vqf_backend_process(h->cfg.be, req, len, no_reply, NULL);
	memcpy(&ih, req, sizeof(ih));
	memcpy(&bi, req + sizeof(ih), sizeof(bi));
	pthread_mutex_lock(&h->lock);
	for (i = 0; i < bi.count && off + sizeof(one) <= len;
	     i++, off += sizeof(one)) {
		memcpy(&one, req + off, sizeof(one));
		one.nlookup = hub_forget_locked(h, p->idx, one.nodeid,
					    one.nlookup);
		if (!one.nlookup)
			continue;
		memcpy(req + keep, &one, sizeof(one));
		keep += sizeof(one);
		kept++;
	}
	pthread_mutex_unlock(&h->lock);
	if (!kept)
		return VQF_BE_NO_REPLY;
	bi.count = kept;
	ih.len = (u32)keep;
	ih.unique = hub_unique(h);
	memcpy(req, &ih, sizeof(ih));
	memcpy(req + sizeof(ih), &bi, sizeof(bi));
	return vqf_backend_process(h->cfg.be, req, keep, no_reply, NULL);
}

static int do_interrupt(struct vqf_hub_port *p, u8 *req, size_t len)
{
	struct vqf_hub *h = p->h;
	struct fuse_in_header ih;
	struct fuse_interrupt_in ii;
	struct hub_rec *r;
	u64 target = 0;

	if (len < sizeof(ih) + sizeof(ii))
		return vqf_backend_process(h->cfg.be, req, len, no_reply, NULL);
	memcpy(&ih, req, sizeof(ih));
	memcpy(&ii, req + sizeof(ih), sizeof(ii));
	pthread_mutex_lock(&h->lock);
	for (r = p->inflight; r; r = r->next)
		if (r->guest_unique == ii.unique)
			target = r->unique;
	if (target)
		h->st.interrupts++;
	else
		h->st.interrupt_stale++;
	pthread_mutex_unlock(&h->lock);
	if (!target)
		return VQF_BE_NO_REPLY;
	ii.unique = target;
	ih.unique = hub_unique(h) | 1;
	memcpy(req, &ih, sizeof(ih));
	memcpy(req + sizeof(ih), &ii, sizeof(ii));
	return vqf_backend_process(h->cfg.be, req, len, no_reply, NULL);
}

/* forward()'s size bookkeeping for cfg.resize_hook (h->lock held). */
static void resize_plan(struct vqf_hub *h, struct hub_rec *r)
{
	struct hub_node *n;
	u64 to;

	if (r->opcode == FUSE_SETATTR && r->size_set)
		to = r->new_size;
	else if (r->opcode == FUSE_OPEN && r->trunc)
		to = 0;
	else if (r->opcode == FUSE_WRITE)
		to = r->new_size;
	else
		return;
	n = hub_node_find(h, r->nodeid);
	if (r->opcode == FUSE_WRITE &&
	    (!n || !n->size_set || to <= n->size))
		return;
	r->old_size = n && n->size_set ? n->size : VQF_HUB_SIZE_UNKNOWN;
	r->new_size = to;
	r->resize = true;
	if (n) {
		n->size = to;
		n->size_set = true;
		n->resizing++;
	}
}

static int forward(struct vqf_hub_port *p, u8 *req, size_t len,
		   vqf_backend_reply_fn reply, void *ctx)
{
	struct vqf_hub *h = p->h;
	struct fuse_in_header ih;
	struct hub_rec *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return -ENOMEM;
	memcpy(&ih, req, sizeof(ih));
	r->port = p;
	r->reply = reply;
	r->ctx = ctx;
	r->guest_unique = ih.unique;
	r->opcode = ih.opcode;
	r->nodeid = ih.nodeid;
	/* A malformed request is left for the backend to refuse. */
	if (rec_names(r, req, len) == -ENOMEM) {
		rec_free(r);
		return -ENOMEM;
	}
	if (ih.opcode == FUSE_OPEN &&
	    len >= sizeof(ih) + sizeof(struct fuse_open_in)) {
		struct fuse_open_in oi;

		memcpy(&oi, req + sizeof(ih), sizeof(oi));
		r->trunc = !!(oi.flags & O_TRUNC);
	}
	if (ih.opcode == FUSE_CREATE &&
	    len >= sizeof(ih) + sizeof(struct fuse_create_in)) {
		struct fuse_create_in ci;

		memcpy(&ci, req + sizeof(ih), sizeof(ci));
		r->trunc = !!(ci.flags & O_TRUNC);
	}
	if (ih.opcode == FUSE_SETATTR &&
	    len >= sizeof(ih) + sizeof(struct fuse_setattr_in)) {
		struct fuse_setattr_in si;

		memcpy(&si, req + sizeof(ih), sizeof(si));
		r->size_set = !!(si.valid & FATTR_SIZE);
		r->new_size = si.size;
	}
	if (ih.opcode == FUSE_WRITE &&
	    len >= sizeof(ih) + sizeof(struct fuse_write_in)) {
		struct fuse_write_in wi;

		memcpy(&wi, req + sizeof(ih), sizeof(wi));
		r->new_size = wi.offset + wi.size >= wi.offset ?
			      wi.offset + wi.size : 0;
	}
	if (ih.opcode == FUSE_COPY_FILE_RANGE &&
	    len >= sizeof(ih) + sizeof(struct fuse_copy_file_range_in)) {
		struct fuse_copy_file_range_in ci;

		memcpy(&ci, req + sizeof(ih), sizeof(ci));
		r->nodeid2 = ci.nodeid_out;
	}
	if (ih.opcode == FUSE_RENAME2 &&
	    len >= sizeof(ih) + sizeof(struct fuse_rename2_in)) {
		struct fuse_rename2_in ri;

		memcpy(&ri, req + sizeof(ih), sizeof(ri));
		r->exchange = !!(ri.flags & RENAME_EXCHANGE);
	}
	if (h->has_table && r->name &&
	    (ih.opcode == FUSE_UNLINK || ih.opcode == FUSE_RMDIR ||
	     ih.opcode == FUSE_RENAME || ih.opcode == FUSE_RENAME2)) {
		r->victim = internal_lookup(h, ih.nodeid, r->name);
		if (r->name2)
			r->victim2 = internal_lookup(h, r->nodeid2, r->name2);
	}
	r->unique = hub_unique(h);
	ih.unique = r->unique;
	memcpy(req, &ih, sizeof(ih));
	pthread_mutex_lock(&h->lock);
	/*
	 * The size the request will leave, set before the backend makes it:
	 * the watcher's event for it must not look like a second change.  A
	 * WRITE counts only past a known end.
	 */
	if (h->cfg.resize_hook)
		resize_plan(h, r);
	r->epoch = h->epoch;
	r->next = p->inflight;
	p->inflight = r;
	h->st.requests++;
	pthread_mutex_unlock(&h->lock);
	ret = vqf_backend_process(h->cfg.be, req, len, hub_reply, r);
	if (ret == VQF_BE_REPLY)
		return ret;	/* hub_reply owns r, maybe already freed */
	pthread_mutex_lock(&h->lock);
	port_unlink_rec(r);
	if (r->resize) {
		u64 id;

		/* Not served: as a failed request. */
		resize_of(h, r, -EIO, NULL, NULL, 0, &id);
	}
	pthread_mutex_unlock(&h->lock);
	rec_free(r);
	return ret;
}

int vqf_hub_process(void *port, void *req, size_t len,
		    vqf_backend_reply_fn reply, void *ctx)
{
	struct vqf_hub_port *p = port;
	struct vqf_hub *h = p->h;
	struct fuse_in_header ih;
	struct fuse_init_in in;
	u8 *m = req;
	int ret;

	if (len < sizeof(ih))
		return vqf_backend_process(h->cfg.be, req, len, reply, ctx);
	memcpy(&ih, req, sizeof(ih));
	switch (ih.opcode) {
	case FUSE_FORGET:
		return do_forget(p, m, len);
	case FUSE_BATCH_FORGET:
		return do_batch_forget(p, m, len);
	case FUSE_INTERRUPT:
		return do_interrupt(p, m, len);
	case FUSE_DESTROY:
		port_forget_all(p);
		pthread_mutex_lock(&h->lock);
		h->st.destroys++;
		pthread_mutex_unlock(&h->lock);
		return local_reply(ih.unique, 0, NULL, 0, reply, ctx);
	case FUSE_INIT:
		break;
	default:
		return forward(p, m, len, reply, ctx);
	}
	/* INIT: the flag is the hub's, not the backend's. */
	memset(&in, 0, sizeof(in));
	memcpy(&in, m + sizeof(ih), len - sizeof(ih) < sizeof(in) ?
	       len - sizeof(ih) : sizeof(in));
	p->versions = h->has_table && (in.flags & FUSE_INIT_EXT) &&
		      (in.flags2 & VQF_FUSE_INIT_SHARED_VERSION);
	if (len >= sizeof(ih) + offsetof(struct fuse_init_in, flags2) + 4) {
		in.flags2 &= ~VQF_FUSE_INIT_SHARED_VERSION;
		memcpy(m + sizeof(ih) + offsetof(struct fuse_init_in, flags2),
		       &in.flags2, sizeof(in.flags2));
	}
	pthread_mutex_lock(&h->init_lock);
	if (h->inited) {
		pthread_mutex_unlock(&h->init_lock);
		return init_local(p, &ih, &in, reply, ctx);
	}
	ret = forward(p, m, len, reply, ctx);
	/* libfuse answers INIT before process() returns. */
	if (ret == VQF_BE_REPLY) {
		struct fuse_init_out out;

		h->inited = !vqf_backend_init_out(h->cfg.be, &out);
	}
	pthread_mutex_unlock(&h->init_lock);
	return ret;
}

/* ---- ports ------------------------------------------------------------- */

int vqf_hub_port_new(struct vqf_hub *h, struct vqf_hub_port **out)
{
	struct vqf_hub_port *p;
	unsigned int i;

	pthread_mutex_lock(&h->lock);
	for (i = 0; i < VQF_HUB_MAX_PORTS && h->ports[i]; i++)
		;
	if (i == VQF_HUB_MAX_PORTS) {
		pthread_mutex_unlock(&h->lock);
		return -ENOSPC;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		pthread_mutex_unlock(&h->lock);
		return -ENOMEM;
	}
	p->h = h;
	p->idx = i;
	h->ports[i] = p;
	h->st.ports++;
	pthread_mutex_unlock(&h->lock);
	*out = p;
	return 0;
}

void vqf_hub_port_free(struct vqf_hub_port *p)
{
	struct vqf_hub *h;

	if (!p)
		return;
	h = p->h;
	port_forget_all(p);
	pthread_mutex_lock(&h->lock);
	h->ports[p->idx] = NULL;
	h->st.ports--;
	pthread_mutex_unlock(&h->lock);
	free(p);
}

/* ---- the hub ----------------------------------------------------------- */

int vqf_hub_new(const struct vqf_hub_cfg *cfg, struct vqf_hub **out)
{
	struct vqf_hub *h;
	u64 slots;
	int ret;

	if (!cfg || !cfg->be)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->cfg = *cfg;
	h->memfd = -1;
	h->inotify_fd = -1;
	h->stop_fd = -1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->init_lock, NULL);
	pthread_mutex_init(&h->watch_lock, NULL);
	atomic_init(&h->next_unique, 0);
	slots = cfg->nr_slots ? cfg->nr_slots : HUB_DEFAULT_SLOTS;
	if (slots >= 2) {
		h->table_size = slots * sizeof(s64);
		h->memfd = memfd_create("vqf-version-table", MFD_CLOEXEC);
		if (h->memfd < 0 || ftruncate(h->memfd, (off_t)h->table_size)) {
			ret = -errno;
			goto fail;
		}
		h->table = mmap(NULL, h->table_size, PROT_READ | PROT_WRITE,
				MAP_SHARED, h->memfd, 0);
		h->table_ro = mmap(NULL, h->table_size, PROT_READ, MAP_SHARED,
				   h->memfd, 0);
		h->bitmap = calloc(1, VQF_VER_BITMAP_BYTES(slots));
		if (h->table == MAP_FAILED || h->table_ro == MAP_FAILED ||
		    !h->bitmap) {
			ret = h->bitmap ? -errno : -ENOMEM;
			goto fail;
		}
		ret = vqf_ver_dev_init(&h->vd, h->table, h->table_size,
				       h->bitmap, VQF_VER_BITMAP_BYTES(slots));
		if (ret)
			goto fail;
		h->has_table = true;
	}
	ret = hub_root_node(h);
	if (!ret)
		ret = hub_watch_start(h);
	if (ret)
		goto fail;
	*out = h;
	return 0;
fail:
	vqf_hub_free(h);
	return ret;
}

void vqf_hub_free(struct vqf_hub *h)
{
	unsigned int b;

	if (!h)
		return;
	hub_watch_stop(h);
	for (b = 0; b < HUB_BUCKETS; b++)
		while (h->by_id[b])
			hub_node_free(h, h->by_id[b]);
	if (h->table && h->table != MAP_FAILED)
		munmap(h->table, h->table_size);
	if (h->table_ro && h->table_ro != MAP_FAILED)
		munmap((void *)h->table_ro, h->table_size);
	if (h->memfd >= 0)
		close(h->memfd);
	free(h->bitmap);
	pthread_mutex_destroy(&h->watch_lock);
	pthread_mutex_destroy(&h->init_lock);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

const void *vqf_hub_table(struct vqf_hub *h, u64 *size)
{
	if (!h->has_table) {
		*size = 0;
		return NULL;
	}
	*size = h->table_size;
	return h->table_ro;
}

int vqf_hub_table_fd(struct vqf_hub *h)
{
	char path[32];
	int fd;

	if (!h->has_table)
		return -ENOENT;
	/* A new open file description, read-only: a mapping made from it
	 * can never be writable, whoever makes it.
	 */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", h->memfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

void vqf_hub_dax_writable(void *hub, u64 nodeid, int delta)
{
	struct vqf_hub *h = hub;
	struct hub_node *n;

	pthread_mutex_lock(&h->lock);
	n = hub_node_find(h, nodeid);
	if (!n || (delta < 0 && !n->wmaps)) {
		/* Forgotten meanwhile (a guest's DESTROY gives its lookups
		 * back before its window is reset), or a count that was
		 * never raised: nothing of the slot to keep honest.
		 */
		h->st.wmap_unknown++;
	} else if (delta > 0) {
		if (!n->wmaps++) {
			hub_bump(h, n, false);
			h->st.wmap_bumps++;
		}
	} else if (!--n->wmaps) {
		hub_bump(h, n, false);
		h->st.wmap_bumps++;
	}
	pthread_mutex_unlock(&h->lock);
}

void vqf_hub_get_stats(struct vqf_hub *h, struct vqf_hub_stats *out)
{
	pthread_mutex_lock(&h->lock);
	*out = h->st;
	out->ver = h->vd.stats;
	pthread_mutex_unlock(&h->lock);
}
