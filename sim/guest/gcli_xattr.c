// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcli_xattr.c - extended attributes and locks: SETXATTR and friends, POSIX,
 * OFD and flock locks.
 */
#define _GNU_SOURCE	/* SEEK_DATA, F_OFD_*, RENAME_* */
#include "gcli_int.h"

static unsigned int xattr_slot(u32 opcode)
{
	switch (opcode) {
	case FUSE_SETXATTR:
		return 0;
	case FUSE_GETXATTR:
		return 1;
	case FUSE_LISTXATTR:
		return 2;
	default:
		return 3;	/* FUSE_REMOVEXATTR */
	}
}

/*
 * As fs/fuse/xattr.c: a server that answers ENOSYS to an xattr opcode has
 * none (virtiofsd without -o xattr): callers get EOPNOTSUPP, what a
 * filesystem without xattrs says and what ls -l and cp expect, and the
 * opcode is not sent again.
 */
static int xattr_send(struct vqf_gcli *c, struct vqf_gdrv_call *cl)
{
	bool *no = &c->no_xattr[xattr_slot(cl->req.in_h.opcode)];
	int ret;

	if (__atomic_load_n(no, __ATOMIC_RELAXED))
		return -EOPNOTSUPP;
	ret = gcli_send(c, cl);
	if (ret == -ENOSYS) {
		__atomic_store_n(no, true, __ATOMIC_RELAXED);
		ret = -EOPNOTSUPP;
	}
	return ret;
}

int gcli_lk_call(struct vqf_gcli *c, const struct gfile *f, u32 opcode,
		 u64 owner, u32 lk_flags, struct fuse_file_lock *lk,
		 struct fuse_lk_out *lo)
{
	struct vqf_gdrv_call cl;
	struct fuse_lk_in li = { .fh = f->fh, .owner = owner, .lk = *lk,
				 .lk_flags = lk_flags };

	gcli_call_init(&cl, opcode, f->nodeid);
	vqf_req_add_in(&cl.req, &li, sizeof(li));
	if (lo)
		vqf_req_add_out(&cl.req, lo, sizeof(*lo));
	return gcli_send(c, &cl);
}

int vqf_gcli_lock(struct vqf_gcli *c, int fd, int cmd, struct flock *fl)
{
	return vqf_gcli_lock_owner(c, fd, cmd, fl, 0);
}

/*
 * Has any POSIX lock been asked for on @nodeid (@lock: one is now)?  An
 * unlock where none ever was costs no request, as the kernel's close
 * sends none when the inode has no POSIX lock (libfuse's high-level API
 * unlocks at every flush; the server would open a lock file for it).
 */
static bool posix_lock_seen(struct vqf_gcli *c, u64 nodeid, bool lock)
{
	struct ginode *i;
	bool seen;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	if (i && lock)
		i->plocked = true;
	seen = !i || i->plocked;
	pthread_mutex_unlock(&c->lock);
	return seen;
}

int vqf_gcli_lock_owner(struct vqf_gcli *c, int fd, int cmd,
			struct flock *fl, u64 lock_owner)
{
	struct gfile *f = gcli_fget(c, fd);
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
	/* As fuse_lk_fill(): the locker's pid when a POSIX lock is set,
	 * 0 for GETLK (virtiofsd hands it to F_OFD_GETLK, which wants 0)
	 * and for an unlock.
	 */
	if (!ofd && cmd != F_GETLK && fl->l_type != F_UNLCK) {
		struct vqf_gcli_creds cr;

		gcli_creds(c, &cr);
		lk.pid = cr.pid;
	}
	if (!ofd && (cmd == F_SETLK || cmd == F_SETLKW) &&
	    !posix_lock_seen(c, f->nodeid, fl->l_type != F_UNLCK))
		return 0;
	switch (cmd) {
	case F_GETLK:
	case F_OFD_GETLK:
		ret = gcli_lk_call(c, f, FUSE_GETLK, owner, 0, &lk, &lo);
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
		return gcli_lk_call(c, f, FUSE_SETLK, owner, 0, &lk, NULL);
	case F_SETLKW:
	case F_OFD_SETLKW:
		return gcli_lk_call(c, f, FUSE_SETLKW, owner, 0, &lk, NULL);
	default:
		return -EINVAL;
	}
}

int vqf_gcli_flock(struct vqf_gcli *c, int fd, int op)
{
	struct gfile *f = gcli_fget(c, fd);
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
	return gcli_lk_call(c, f, nb ? FUSE_SETLK : FUSE_SETLKW, f->owner,
			    FUSE_LK_FLOCK, &lk, NULL);
}

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
	ret = gcli_resolve(c, path, false, follow, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	si.size = (u32)size;
	si.flags = (u32)flags;
	gcli_call_init(&cl, FUSE_SETXATTR, nodeid);
	/* Without SETXATTR_EXT the old 8-byte form goes on the wire. */
	vqf_req_add_in(&cl.req, &si, (io->flags & FUSE_SETXATTR_EXT) ?
		       sizeof(si) : FUSE_COMPAT_SETXATTR_IN_SIZE);
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	vqf_req_add_in(&cl.req, value, (u32)size);
	ret = xattr_send(c, &cl);
	if (!ret)
		gcli_attr_inval(c, nodeid);	/* ctime */
	gcli_iput(c, nodeid);
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
	ret = gcli_resolve(c, path, false, follow, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	gcli_call_init(&cl, opcode, nodeid);
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
	ret = xattr_send(c, &cl);
	gcli_iput(c, nodeid);
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
	ret = gcli_resolve(c, path, false, follow, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	gcli_call_init(&cl, FUSE_REMOVEXATTR, nodeid);
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	ret = xattr_send(c, &cl);
	if (!ret)
		gcli_attr_inval(c, nodeid);
	gcli_iput(c, nodeid);
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
