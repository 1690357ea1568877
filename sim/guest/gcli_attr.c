// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcli_attr.c - attributes: the attribute cache and what a reply is judged
 * against, GETATTR, SETATTR (truncate, chmod, chown, utimens), stat, statfs.
 */
#define _GNU_SOURCE	/* SEEK_DATA, F_OFD_*, RENAME_* */
#include "gcli_int.h"

void gcli_asample(struct vqf_gcli *c, u64 nodeid, struct asamp *s)
{
	static const struct vqf_ver_inode fresh;
	struct ginode *i;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&c->lock);
	s->av = c->attr_version;
	if (c->ver_on) {
		i = nodeid ? *gcli_ifind(c, nodeid) : NULL;
		s->st = vqf_ver_sample(&c->vt, i ? &i->ver : &fresh);
	}
	pthread_mutex_unlock(&c->lock);
}

/*
 * Before an entry request to directory @parent: sample, and with
 * cache=shared ask for the extension as the last out arg (call after the
 * request's other out args).
 */
void gcli_asample_entry(struct vqf_gcli *c, u64 parent, struct vqf_req *r,
			struct asamp *s)
{
	gcli_asample(c, 0, s);
	s->entry = true;
	/* The table's argvar is for the extension: without it, none. */
	r->out_argvar = c->ver_on;
	if (!c->ver_on)
		return;
	pthread_mutex_lock(&c->lock);
	s->parent = vqf_ver_sample(&c->vt, &(*gcli_ifind(c, parent))->ver);
	pthread_mutex_unlock(&c->lock);
	vqf_req_add_out(r, &s->raw, sizeof(s->raw));
	r->out_argvar = true;
}

/* After the entry request: validate what came back as its extension. */
void gcli_asample_reply(struct vqf_gcli *c, const struct vqf_req *r,
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
bool gcli_attr_fresh_locked(struct vqf_gcli *c, struct ginode *i, u64 now)
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
void gcli_attr_got(struct vqf_gcli *c, u64 nodeid,
		   const struct fuse_attr *a, struct asamp *s)
{
	struct vqf_ver_stamp st = s->st;
	struct ginode *i;
	struct fuse_attr old;
	bool known;
	u64 dropped = 0;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
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
			   gcli_expiry(c))) {
		pthread_mutex_unlock(&c->lock);
		STAT_ADD(c, attr_stale, 1);
		return;
	}
	if (c->ver_on)
		vqf_ver_attr_publish(&i->ver, &st);
	/* With writeback the client's own writes move size and mtime:
	 * trusted, as fuse_change_attributes does for a writeback inode.
	 */
	if (known && i->pc.count && !i->pc.dirty && !gcli_writeback(c) &&
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
void gcli_attr_inval(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
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

	if (!gcli_caching(c))
		return false;
	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	if (i && gcli_attr_fresh_locked(c, i, gcli_now_ns(c))) {
		*a = i->ca.attr;
		ok = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (ok)
		STAT_ADD(c, attr_hits, 1);
	return ok;
}

/* With dirty pages the client's size is the file's (gcli_writeback). */
void gcli_attr_fix_size(struct vqf_gcli *c, u64 nodeid, struct fuse_attr *a)
{
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	if (i && i->wb_size_set)
		a->size = i->wb_size;
	pthread_mutex_unlock(&c->lock);
}

void gcli_attr_to_stat(const struct fuse_attr *a, struct stat *st)
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

/* GETATTR (through @fh when nonzero) into the cache and @a. */
int gcli_getattr_node(struct vqf_gcli *c, u64 nodeid, u64 fh,
		      struct fuse_attr *a)
{
	struct vqf_gdrv_call cl;
	struct fuse_getattr_in gi = { 0 };
	struct fuse_attr_out ao;
	struct asamp as;
	int ret;

	gcli_asample(c, nodeid, &as);
	if (fh) {
		gi.getattr_flags = FUSE_GETATTR_FH;
		gi.fh = fh;
	}
	memset(&cl, 0, sizeof(cl));
	vqf_req_init_getattr(&cl.req, 0, nodeid, &gi, &ao);
	ret = gcli_send(c, &cl);
	if (ret)
		return ret;
	gcli_attr_got(c, nodeid, &ao.attr, &as);
	*a = ao.attr;
	return 0;
}

/* Valid attributes of @nodeid: cached, or fetched (fuse_update_attributes). */
int gcli_node_attr(struct vqf_gcli *c, u64 nodeid, u64 fh,
		   struct fuse_attr *a)
{
	int ret = 0;

	if (!attr_cached(c, nodeid, a))
		ret = gcli_getattr_node(c, nodeid, fh, a);
	if (!ret)
		gcli_attr_fix_size(c, nodeid, a);
	return ret;
}

int gcli_setattr(struct vqf_gcli *c, u64 nodeid,
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
		ret = gcli_wb_flush_any(c, nodeid);
		if (ret)
			return ret;
	}
	gcli_call_init(&cl, FUSE_SETATTR, nodeid);
	vqf_req_add_in(&cl.req, si, sizeof(*si));
	vqf_req_add_out(&cl.req, &ao, sizeof(ao));
	/* Our own change: whatever was in flight before is older. */
	gcli_attr_inval(c, nodeid);
	gcli_asample(c, nodeid, &as);
	ret = gcli_send(c, &cl);
	if (ret)
		return ret;
	if (si->valid & FATTR_SIZE) {
		gcli_pages_truncate(c, nodeid, si->size);
		gcli_dax_truncate(c, nodeid, si->size);
	}
	gcli_attr_got(c, nodeid, &ao.attr, &as);
	return 0;
}

static int do_stat(struct vqf_gcli *c, const char *path, struct stat *st,
		   bool follow)
{
	struct fuse_attr a;
	u64 nodeid;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = gcli_resolve(c, path, false, follow, &nodeid, NULL, &a);
	if (ret)
		return ret;
	gcli_iput(c, nodeid);
	gcli_attr_to_stat(&a, st);
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

static int setattr_path(struct vqf_gcli *c, const char *path,
			struct fuse_setattr_in *si, bool follow)
{
	u64 nodeid;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = gcli_resolve(c, path, false, follow, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	ret = gcli_setattr(c, nodeid, si);
	gcli_iput(c, nodeid);
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
	ret = gcli_resolve(c, path, false, true, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	gcli_call_init(&cl, FUSE_STATFS, nodeid);
	vqf_req_add_out(&cl.req, &so, sizeof(so));
	ret = gcli_send(c, &cl);
	gcli_iput(c, nodeid);
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
