// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcli_walk.c - path walk and the dentry cache: LOOKUP, symlinks followed in
 * the guest as the VFS does, entries the server hands out.
 */
#define _GNU_SOURCE	/* SEEK_DATA, F_OFD_*, RENAME_* */
#include "gcli_int.h"

static void iref_locked(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i = *gcli_ifind(c, nodeid);

	if (i && nodeid != FUSE_ROOT_ID)
		i->refs++;
}

/* A dentry's references going away (under the lock: no trimming here). */
void gcli_dput_locked(void *ctx, u64 nodeid)
{
	struct vqf_gcli *c = ctx;
	struct ginode *i = *gcli_ifind(c, nodeid);

	if (i && i->refs && nodeid != FUSE_ROOT_ID)
		i->refs--;
}

/*
 * (@parent, @name) now names @nodeid (0: nothing) as far as we know;
 * with cache=shared, as of the versions in @s (NULL: none proven).
 */
void gcli_dentry_set(struct vqf_gcli *c, u64 parent, const char *name,
		     u64 nodeid, const struct asamp *s)
{
	struct vqf_ver_dentry dv;

	if (!gcli_caching(c))
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
	gc_d_set_ver(&c->dc, parent, name, nodeid, gcli_expiry(c), &dv);
	pthread_mutex_unlock(&c->lock);
}

/* Forgets (@parent, @name); returns the nodeid it named, 0 if unknown. */
u64 gcli_dentry_drop(struct vqf_gcli *c, u64 parent, const char *name)
{
	u64 nodeid = 0;

	if (!gcli_caching(c))
		return 0;
	pthread_mutex_lock(&c->lock);
	if (gc_d_lookup(&c->dc, parent, name, 0, &nodeid) == GC_MISS)
		nodeid = 0;
	gc_d_drop(&c->dc, parent, name);
	pthread_mutex_unlock(&c->lock);
	return nodeid;
}

/* An entry the server returned: count its lookup (nodeid 0: none). */
int gcli_entry_got(struct vqf_gcli *c, const struct fuse_entry_out *e,
		   bool keep_ref)
{
	int ret;

	if (!e->nodeid)
		return 0;
	ret = gcli_iget(c, e->nodeid, 1);
	if (!ret && !keep_ref)
		gcli_iput(c, e->nodeid);
	return ret;
}

/* LOOKUP; @s receives the samples its reply is judged against. */
int gcli_do_lookup(struct vqf_gcli *c, u64 parent, const char *name,
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
	gcli_asample_entry(c, parent, &cl.req, s);
	memset(e, 0, sizeof(*e));
	ret = gcli_send(c, &cl);
	if (ret)
		return ret;
	gcli_asample_reply(c, &cl.req, s);
	/* nodeid 0 is a negative entry (fuse_lookup_name). */
	if (!e->nodeid)
		return -ENOENT;
	return gcli_entry_got(c, e, true);
}

/*
 * A name this client created (CREATE, MKNOD, MKDIR, SYMLINK, LINK):
 * count the lookup, cache the entry and its attributes; the directory
 * changed (fuse_dir_changed).  @parent is still referenced by the caller.
 */
int gcli_new_entry(struct vqf_gcli *c, u64 parent, const char *name,
		   const struct fuse_entry_out *e, struct asamp *s)
{
	int ret = gcli_entry_got(c, e, false);

	if (ret || !e->nodeid)
		return ret;
	gcli_attr_got(c, e->nodeid, &e->attr, s);
	gcli_dentry_set(c, parent, name, e->nodeid, s);
	gcli_attr_inval(c, parent);
	return 0;
}

ssize_t gcli_do_readlink(struct vqf_gcli *c, u64 nodeid, char *buf,
			 size_t size)
{
	struct vqf_gdrv_call cl;
	int ret;

	gcli_call_init(&cl, FUSE_READLINK, nodeid);
	vqf_req_add_out(&cl.req, buf, (u32)size);
	ret = gcli_send(c, &cl);
	if (ret)
		return ret;
	return cl.req.out_args[0].size;
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
	u64 nid = 0, now = gcli_now_ns(c);
	int ret;

	pthread_mutex_lock(&c->lock);
	if (gcli_caching(c) && c->ver_on) {
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
			    !(*gcli_ifind(c, nid))->ver_entry)
				hit = GC_MISS;
		}
	} else if (gcli_caching(c)) {
		hit = gc_d_lookup(&c->dc, dir, name, now, &nid);
	}
	if (hit == GC_POSITIVE) {
		struct ginode *i = *gcli_ifind(c, nid);

		iref_locked(c, nid);
		*a = i->ca.attr;
		*fresh = gcli_attr_fresh_locked(c, i, now);
	}
	pthread_mutex_unlock(&c->lock);
	if (hit == GC_POSITIVE) {
		STAT_ADD(c, dentry_hits, 1);
		gcli_iput(c, dir);
		*out = nid;
		return 0;
	}
	if (hit == GC_NEGATIVE) {
		STAT_ADD(c, dentry_neg_hits, 1);
		gcli_iput(c, dir);
		return -ENOENT;
	}
	ret = gcli_do_lookup(c, dir, name, &e, &as);
	if (ret == -ENOENT)
		gcli_dentry_set(c, dir, name, 0, &as);
	if (!ret) {
		gcli_attr_got(c, e.nodeid, &e.attr, &as);
		gcli_dentry_set(c, dir, name, e.nodeid, &as);
		*a = e.attr;
		*fresh = true;
		*out = e.nodeid;
	}
	gcli_iput(c, dir);
	return ret;
}

/*
 * @name in @parent (which the caller holds, and still does after), as
 * the VFS looks up the dentry an unlink or rmdir removes: from the dentry
 * cache or by LOOKUP; with @cached_only, from the cache alone (-ENOENT:
 * not there).  On success the result holds a reference and @a the
 * attributes last known.
 */
int gcli_lookup_child(struct vqf_gcli *c, u64 parent, const char *name,
		      bool cached_only, u64 *out, struct fuse_attr *a)
{
	bool fresh;
	u64 nid;

	pthread_mutex_lock(&c->lock);
	if (cached_only) {
		if (!gcli_caching(c) ||
		    gc_d_lookup(&c->dc, parent, name, 0, &nid) !=
		    GC_POSITIVE) {
			pthread_mutex_unlock(&c->lock);
			return -ENOENT;
		}
		iref_locked(c, nid);
		*a = (*gcli_ifind(c, nid))->ca.attr;
		pthread_mutex_unlock(&c->lock);
		*out = nid;
		return 0;
	}
	iref_locked(c, parent);
	pthread_mutex_unlock(&c->lock);
	return walk_one(c, parent, name, out, a, &fresh);
}

struct walk {
	char *buf;	/* the path, cut at its slashes */
	char **comp;	/* its components, in buf */
	unsigned int n;
};

/*
 * Split @path into components; "." dropped, ".." pops (never above /).
 * The whole path has no limit: the kernel's PATH_MAX bounds what a
 * program hands the kernel, not the path a bridge builds from a mount's
 * root (vqfuse-sim mount), nor one a symlink's target makes longer; a
 * component has one (NAME_MAX).
 */
static int split(struct walk *w, const char *path)
{
	char *s, *save = NULL, *buf, **comp;
	size_t len;

	if (!path)
		return -EFAULT;
	len = strlen(path);
	buf = malloc(len + 1);
	/* Each component takes a byte and a slash, but the last. */
	comp = malloc(sizeof(*comp) * (len / 2 + 1));
	if (!buf || !comp) {
		free(buf);
		free(comp);
		return -ENOMEM;
	}
	memcpy(buf, path, len + 1);
	free(w->buf);
	free(w->comp);
	w->buf = buf;
	w->comp = comp;
	w->n = 0;
	for (s = strtok_r(w->buf, "/", &save); s;
	     s = strtok_r(NULL, "/", &save)) {
		if (!strcmp(s, "."))
			continue;
		if (!strcmp(s, "..")) {
			if (w->n)
				w->n--;
			continue;
		}
		if (strlen(s) > NAME_MAX)
			return -ENAMETOOLONG;
		w->comp[w->n++] = s;
	}
	return 0;
}

/*
 * The path a symlink met at component @i makes: the link's directory
 * (unless @link is absolute: the share's root), @link, then what was
 * left of @w.  Returns it (malloc'd) or NULL.
 */
static char *link_path(const struct walk *w, unsigned int i,
		       const char *link)
{
	size_t len = strlen(link) + 1, off = 0;
	unsigned int k;
	char *np;

	for (k = 0; k < w->n; k++)
		len += strlen(w->comp[k]) + 1;
	np = malloc(len);
	if (!np)
		return NULL;
	if (link[0] != '/')
		for (k = 0; k < i; k++)
			off += sprintf(np + off, "%s/", w->comp[k]);
	off += sprintf(np + off, "%s", link);
	for (k = i + 1; k < w->n; k++)
		off += sprintf(np + off, "/%s", w->comp[k]);
	return np;
}

/*
 * Walks @path from the root.  With @parent, stops before the last
 * component and copies its name to @last (ENOENT/EINVAL for the root).
 * Symlinks are followed in the guest, as the VFS does: always in the
 * middle of a path, at the end when @follow.  On success the result
 * holds a reference (gcli_iput() it).
 */
int gcli_resolve(struct vqf_gcli *c, const char *path, bool parent,
		 bool follow, u64 *out, char *last,
		 struct fuse_attr *attr)
{
	struct walk *w = calloc(1, sizeof(*w));
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

			if (++links > GCLI_MAX_LINKS) {
				gcli_iput(c, cur);
				ret = -ELOOP;
				goto out;
			}
			if (!link)
				link = malloc(PATH_MAX);
			if (!link) {
				gcli_iput(c, cur);
				ret = -ENOMEM;
				goto out;
			}
			n = gcli_do_readlink(c, cur, link, PATH_MAX - 1);
			gcli_iput(c, cur);
			if (n < 0) {
				ret = (int)n;
				goto out;
			}
			link[n] = 0;
			{
				char *np = link_path(w, i, link);

				if (!np) {
					ret = -ENOMEM;
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
		ret = gcli_node_attr(c, cur, 0, attr);
	else
		gcli_attr_fix_size(c, cur, attr);
	if (ret)
		gcli_iput(c, cur);
out:
	free(link);
	if (w) {
		free(w->buf);
		free(w->comp);
	}
	free(w);
	return ret;
}

int vqf_gcli_get_nodeid(struct vqf_gcli *c, const char *path, u64 *nodeid)
{
	return gcli_resolve(c, path, false, false, nodeid, NULL, NULL);
}

void vqf_gcli_put_nodeid(struct vqf_gcli *c, u64 nodeid)
{
	gcli_iput(c, nodeid);
}
