// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_passthrough.c - the low-level operations of vqfuse's passthrough.
 *
 * Confinement rules, each enforced where guest input enters:
 *  - a name is one path component: no '/', not "." or "..", not empty,
 *    at most NAME_MAX (check_name());
 *  - names resolve relative to the parent's O_PATH fd with openat2
 *    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS and
 *    O_NOFOLLOW: a symlink is an inode of its own, never followed here;
 *  - a parent must be a directory (a symlink to elsewhere is not one);
 *  - only regular files and directories are ever opened for I/O, by
 *    reopening their O_PATH fd through /proc/self/fd: device nodes, FIFOs
 *    and sockets in the shared directory are never opened on the host
 *    (CVE-2020-35517); device nodes are created (the guest's kernel
 *    opens them, never this server) unless vqf_pt_config.nodev says no;
 *  - nodeids and file handles go through vqf_pt_table.c.
 */
#define _GNU_SOURCE
#include "vqf_pt_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#define PT_MAX_IO	(1u << 20)	/* FUSE_MAX_MAX_PAGES pages */
#define PT_MAX_XATTR	(64u << 10)	/* XATTR_SIZE_MAX, XATTR_LIST_MAX */

static struct vqf_pt *pt_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static int check_name(struct vqf_pt *pt, const char *name)
{
	size_t len = strnlen(name, NAME_MAX + 1);

	if (len == 0) {
		PT_STAT(pt, refused_name_empty);
		return -ENOENT;
	}
	if (len > NAME_MAX) {
		PT_STAT(pt, refused_name_long);
		return -ENAMETOOLONG;
	}
	if (memchr(name, '/', len)) {
		PT_STAT(pt, refused_name_slash);
		return -EINVAL;
	}
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		PT_STAT(pt, refused_name_dot);
		return -EPERM;
	}
	return 0;
}

/* A referenced directory inode for @nodeid plus a checked @name. */
static struct pt_inode *get_parent(struct vqf_pt *pt, uint64_t nodeid,
				   const char *name, int *err)
{
	struct pt_inode *dir;

	*err = check_name(pt, name);
	if (*err)
		return NULL;
	dir = pt_inode_get(pt, nodeid, err);
	if (!dir)
		return NULL;
	if (dir->type != S_IFDIR) {
		PT_STAT(pt, refused_not_dir);
		pt_inode_put(pt, dir);
		*err = -ENOTDIR;
		return NULL;
	}
	return dir;
}

/* openat2() appeared in 5.6; valgrind 3.19 does not know it either. */
static bool probe_openat2(void)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC };
	int fd = syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));

	if (fd >= 0)
		close(fd);
	return fd >= 0 || errno != ENOSYS;
}

/* The component @name of @dir as an O_PATH fd, never following links. */
static int open_beneath(struct vqf_pt *pt, int dirfd, const char *name)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (pt->openat2) {
		fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
		return fd < 0 ? -errno : fd;
	}
	/* Same guarantee for a single checked component. */
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int stat_fd(int fd, struct stat *st)
{
	if (fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return -errno;
	return 0;
}

static void fill_entry(struct vqf_pt *pt, struct fuse_entry_param *e,
		       struct pt_inode *in, const struct stat *st)
{
	memset(e, 0, sizeof(*e));
	e->ino = in->nodeid;
	e->attr = *st;
	e->attr_timeout = pt->timeout;
	e->entry_timeout = pt->timeout;
}

/* Looks @name up in @dir and counts a guest reference on the result. */
static int do_lookup(struct vqf_pt *pt, struct pt_inode *dir,
		     const char *name, struct fuse_entry_param *e)
{
	struct pt_inode *in;
	struct stat st;
	int fd, err;

	fd = open_beneath(pt, dir->fd, name);
	if (fd < 0)
		return fd;
	err = stat_fd(fd, &st);
	if (err) {
		close(fd);
		return err;
	}
	in = pt_inode_lookup_fd(pt, fd, &st, &err);
	if (!in)
		return err;
	fill_entry(pt, e, in, &st);
	pt_inode_put(pt, in);
	return 0;
}

/* Reopens an inode's O_PATH fd as a real file, regular files/dirs only. */
static int reopen(struct vqf_pt *pt, struct pt_inode *in, int flags)
{
	char name[16];
	int fd;

	switch (in->type) {
	case S_IFREG:
	case S_IFDIR:
		break;
	case S_IFLNK:
		PT_STAT(pt, refused_symlink);
		return -ELOOP;
	default:
		PT_STAT(pt, refused_special);
		return -EPERM;
	}
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_PATH);
	if ((flags & O_TMPFILE) == O_TMPFILE)
		flags &= ~O_TMPFILE;
	snprintf(name, sizeof(name), "%d", in->fd);
	fd = openat(pt->proc_fd, name, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * setfsuid()/setfsgid() and the raw setgroups syscall act on the calling
 * thread only (glibc's setgroups() would change every thread), so
 * concurrent workers can each create as their own caller.  The groups
 * and the group go first: once fsuid is not 0 the thread may no longer
 * change them.
 */
struct pt_cred {
	bool switched;
	struct vqf_pt *pt;
};

#define PT_MAX_GROUPS	64

static int cred_enter(struct vqf_pt *pt, fuse_req_t req, struct pt_cred *c)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[PT_MAX_GROUPS];
	int n = 0;

	c->switched = false;
	c->pt = pt;
	if (!pt->creds || (ctx->uid == 0 && ctx->gid == 0))
		return 0;
	if (pt->host_callers) {
		n = fuse_req_getgroups(req, PT_MAX_GROUPS, groups);
		if (n < 0)
			n = 0;
		else if (n > PT_MAX_GROUPS)
			n = PT_MAX_GROUPS;
	}
	c->switched = true;
	if (syscall(SYS_setgroups, n, groups))
		return -EPERM;
	syscall(SYS_setfsgid, ctx->gid);
	syscall(SYS_setfsuid, ctx->uid);
	/* Both calls return the old id; read back the new one to check. */
	if ((uid_t)syscall(SYS_setfsuid, -1) != ctx->uid ||
	    (gid_t)syscall(SYS_setfsgid, -1) != ctx->gid)
		return -EPERM;
	return 0;
}

static void cred_leave(struct pt_cred *c)
{
	if (!c->switched)
		return;
	syscall(SYS_setfsuid, 0);
	syscall(SYS_setfsgid, 0);
	syscall(SYS_setgroups, c->pt->ngroups, c->pt->groups);
}

static void proc_path(char *buf, size_t len, const struct pt_inode *in)
{
	snprintf(buf, len, "/proc/self/fd/%d", in->fd);
}

/* DESTROY, or a session replaced after a reset (libfuse calls destroy
 * for a session that had INIT): what the guest held goes with it.
 */
static void pt_destroy(void *userdata)
{
	pt_tables_drop(userdata);
}

static void pt_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_FLOCK_LOCKS)
		conn->want |= FUSE_CAP_FLOCK_LOCKS;
	/* Replies are copied into the guest's buffers: never splice. */
	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
			FUSE_CAP_SPLICE_MOVE);
}

static void pt_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct vqf_pt *pt = pt_of(req);
	struct fuse_entry_param e;
	struct pt_inode *dir;
	int err;

	dir = get_parent(pt, parent, name, &err);
	if (!dir) {
		fuse_reply_err(req, -err);
		return;
	}
	err = do_lookup(pt, dir, name, &e);
	pt_inode_put(pt, dir);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void pt_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	pt_inode_forget(pt_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void pt_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	size_t i;

	for (i = 0; i < count; i++)
		pt_inode_forget(pt_of(req), forgets[i].ino,
				forgets[i].nlookup);
	fuse_reply_none(req);
}

static void pt_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_inode *in;
	struct stat st;
	int err;

	(void)fi;
	in = pt_inode_get(pt, ino, &err);
	if (!in) {
		fuse_reply_err(req, -err);
		return;
	}
	err = stat_fd(in->fd, &st);
	pt_inode_put(pt, in);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_attr(req, &st, pt->timeout);
}

static int set_times(struct pt_inode *in, int fd, const struct stat *attr,
		     int to_set)
{
	struct timespec tv[2] = {
		{ .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT }
	};

	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		tv[0].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		tv[0] = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		tv[1].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		tv[1] = attr->st_mtim;
	if (fd >= 0)
		return futimens(fd, tv) ? -errno : 0;
	if (utimensat(in->fd, "", tv, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return -errno;
	return 0;
}

static int do_setattr(struct vqf_pt *pt, struct pt_inode *in, int fd,
		      const struct stat *attr, int to_set)
{
	char path[32];

	if (to_set & FUSE_SET_ATTR_MODE) {
		if (fd >= 0) {
			if (fchmod(fd, attr->st_mode & 07777))
				return -errno;
		} else if (in->type == S_IFLNK) {
			return -EOPNOTSUPP;
		} else {
			proc_path(path, sizeof(path), in);
			if (chmod(path, attr->st_mode & 07777))
				return -errno;
		}
	}
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		uid_t uid = to_set & FUSE_SET_ATTR_UID ? attr->st_uid :
			    (uid_t)-1;
		gid_t gid = to_set & FUSE_SET_ATTR_GID ? attr->st_gid :
			    (gid_t)-1;

		if (fchownat(in->fd, "", uid, gid,
			     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			return -errno;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		int tfd = fd;

		if (tfd < 0) {
			if (in->type == S_IFDIR)
				return -EISDIR;
			tfd = reopen(pt, in, O_WRONLY);
			if (tfd < 0)
				return tfd;
		}
		if (ftruncate(tfd, attr->st_size)) {
			int err = -errno;

			if (tfd != fd)
				close(tfd);
			return err;
		}
		if (tfd != fd)
			close(tfd);
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))
		return set_times(in, fd, attr, to_set);
	return 0;
}

static void pt_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	const int known = FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
			  FUSE_SET_ATTR_GID | FUSE_SET_ATTR_SIZE |
			  FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			  FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW |
			  FUSE_SET_ATTR_CTIME | FUSE_SET_ATTR_FORCE |
			  FUSE_SET_ATTR_KILL_SUID | FUSE_SET_ATTR_KILL_SGID |
			  FUSE_SET_ATTR_FILE | FUSE_SET_ATTR_KILL_PRIV |
			  FUSE_SET_ATTR_OPEN | FUSE_SET_ATTR_TIMES_SET |
			  FUSE_SET_ATTR_TOUCH;
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f = NULL;
	struct pt_inode *in;
	struct stat st;
	int err;

	if (to_set & ~known) {
		PT_STAT(pt, refused_flags);
		fuse_reply_err(req, EINVAL);
		return;
	}
	in = pt_inode_get(pt, ino, &err);
	if (!in)
		goto out;
	if (fi) {
		f = pt_file_get(pt, fi->fh, ino, &err);
		if (!f)
			goto out;
	}
	err = do_setattr(pt, in, f ? f->fd : -1, attr, to_set);
	if (!err)
		err = stat_fd(in->fd, &st);
out:
	if (f)
		pt_file_put(pt, f);
	pt_inode_put(pt, in);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_attr(req, &st, pt->timeout);
}

static void pt_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct vqf_pt *pt = pt_of(req);
	char buf[PATH_MAX + 1];
	struct pt_inode *in;
	ssize_t n;
	int err;

	in = pt_inode_get(pt, ino, &err);
	if (!in) {
		fuse_reply_err(req, -err);
		return;
	}
	n = readlinkat(in->fd, "", buf, sizeof(buf));
	err = errno;
	pt_inode_put(pt, in);
	if (n < 0)
		fuse_reply_err(req, err);
	else if ((size_t)n >= sizeof(buf))
		fuse_reply_err(req, ENAMETOOLONG);
	else {
		buf[n] = '\0';
		fuse_reply_readlink(req, buf);
	}
}

enum mk_kind { MK_NOD, MK_DIR, MK_SYMLINK };

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name,
		      enum mk_kind kind, mode_t mode, dev_t rdev,
		      const char *target)
{
	struct vqf_pt *pt = pt_of(req);
	struct fuse_entry_param e;
	struct pt_inode *dir;
	struct pt_cred cred;
	int err, res;

	dir = get_parent(pt, parent, name, &err);
	if (!dir) {
		fuse_reply_err(req, -err);
		return;
	}
	if (kind == MK_NOD && pt->nodev && (S_ISCHR(mode) || S_ISBLK(mode))) {
		PT_STAT(pt, refused_mknod_dev);
		err = -EPERM;
		goto out;
	}
	err = cred_enter(pt, req, &cred);
	if (err) {
		cred_leave(&cred);
		goto out;
	}
	switch (kind) {
	case MK_NOD:
		res = mknodat(dir->fd, name, mode, rdev);
		break;
	case MK_DIR:
		res = mkdirat(dir->fd, name, mode);
		break;
	default:
		res = symlinkat(target, dir->fd, name);
		break;
	}
	err = res ? -errno : 0;
	cred_leave(&cred);
	if (!err)
		err = do_lookup(pt, dir, name, &e);
out:
	pt_inode_put(pt, dir);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void pt_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	make_node(req, parent, name, MK_NOD, mode, rdev, NULL);
}

static void pt_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_node(req, parent, name, MK_DIR, mode, 0, NULL);
}

static void pt_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	make_node(req, parent, name, MK_SYMLINK, 0, 0, link);
}

static void pt_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_inode *in = NULL, *dir;
	struct fuse_entry_param e;
	char path[32];
	int err;

	dir = get_parent(pt, newparent, newname, &err);
	if (!dir)
		goto out;
	in = pt_inode_get(pt, ino, &err);
	if (!in)
		goto out;
	/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc works without. */
	if (linkat(in->fd, "", dir->fd, newname, AT_EMPTY_PATH)) {
		proc_path(path, sizeof(path), in);
		if (errno == ENOENT &&
		    !linkat(AT_FDCWD, path, dir->fd, newname,
			    AT_SYMLINK_FOLLOW))
			goto linked;
		err = -errno;
		goto out;
	}
linked:
	err = do_lookup(pt, dir, newname, &e);
out:
	pt_inode_put(pt, in);
	pt_inode_put(pt, dir);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			 int flags)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_inode *dir;
	int err;

	dir = get_parent(pt, parent, name, &err);
	if (dir) {
		err = unlinkat(dir->fd, name, flags) ? -errno : 0;
		pt_inode_put(pt, dir);
	}
	fuse_reply_err(req, -err);
}

static void pt_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

static void pt_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, AT_REMOVEDIR);
}

static void pt_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_inode *dir = NULL, *ndir = NULL;
	int err;

	/* RENAME_WHITEOUT would create a device node (0:0). */
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		PT_STAT(pt, refused_flags);
		fuse_reply_err(req, EINVAL);
		return;
	}
	dir = get_parent(pt, parent, name, &err);
	if (!dir)
		goto out;
	ndir = get_parent(pt, newparent, newname, &err);
	if (!ndir)
		goto out;
	err = renameat2(dir->fd, name, ndir->fd, newname, flags) ? -errno : 0;
out:
	pt_inode_put(pt, ndir);
	pt_inode_put(pt, dir);
	fuse_reply_err(req, -err);
}

static int open_file(struct vqf_pt *pt, struct pt_inode *in, int flags,
		     struct fuse_file_info *fi)
{
	struct pt_file *f;
	int fd;

	fd = reopen(pt, in, flags);
	if (fd < 0)
		return fd;
	f = pt_file_new(pt, in, fd, NULL);
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	fi->fh = f->fh;
	return 0;
}

static void pt_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_inode *in;
	int err;

	in = pt_inode_get(pt, ino, &err);
	if (!in) {
		fuse_reply_err(req, -err);
		return;
	}
	if (in->type == S_IFDIR && (fi->flags & O_ACCMODE) != O_RDONLY)
		err = -EISDIR;
	else
		err = open_file(pt, in, fi->flags, fi);
	pt_inode_put(pt, in);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_open(req, fi);
}

static void pt_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct fuse_entry_param e;
	struct pt_inode *dir, *in;
	struct pt_cred cred;
	int fd, err, flags;

	dir = get_parent(pt, parent, name, &err);
	if (!dir) {
		fuse_reply_err(req, -err);
		return;
	}
	flags = fi->flags & ~(O_NOCTTY | O_PATH | O_DIRECTORY | O_TMPFILE);
	/*
	 * O_EXCL first: without it, O_CREAT on an existing device node would
	 * open the device.  An existing name is then looked up and reopened
	 * like OPEN, with its type checked.
	 */
	err = cred_enter(pt, req, &cred);
	fd = err ? -1 : openat(dir->fd, name, flags | O_CREAT | O_EXCL |
			       O_NOFOLLOW | O_CLOEXEC, mode & 07777);
	if (fd < 0 && !err)
		err = -errno;
	cred_leave(&cred);
	if (fd < 0) {
		if (err == -EEXIST && !(fi->flags & O_EXCL))
			err = do_lookup(pt, dir, name, &e);
		else if (err == -ELOOP)
			PT_STAT(pt, refused_symlink);
		if (err)
			goto out;
		in = pt_inode_get(pt, e.ino, &err);
		if (in) {
			err = open_file(pt, in, flags & ~O_CREAT, fi);
			pt_inode_put(pt, in);
		}
		if (err)
			pt_inode_forget(pt, e.ino, 1);
		goto out;
	}
	{
		/* The O_PATH twin of what was just created, by fd. */
		char nm[16];
		struct stat st;
		int pfd;

		snprintf(nm, sizeof(nm), "%d", fd);
		pfd = openat(pt->proc_fd, nm, O_PATH | O_CLOEXEC);
		err = pfd < 0 ? -errno : stat_fd(pfd, &st);
		if (err) {
			if (pfd >= 0)
				close(pfd);
			close(fd);
			goto out;
		}
		in = pt_inode_lookup_fd(pt, pfd, &st, &err);
		if (!in) {
			close(fd);
			goto out;
		}
		fill_entry(pt, &e, in, &st);
		{
			struct pt_file *f = pt_file_new(pt, in, fd, NULL);

			if (f) {
				fi->fh = f->fh;
			} else {
				close(fd);
				err = -ENOMEM;
			}
		}
		pt_inode_put(pt, in);
		if (err)
			pt_inode_forget(pt, e.ino, 1);
	}
out:
	pt_inode_put(pt, dir);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_create(req, &e, fi);
}

static void pt_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f;
	ssize_t n;
	char *buf;
	int err;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f) {
		fuse_reply_err(req, -err);
		return;
	}
	if (size > PT_MAX_IO)
		size = PT_MAX_IO;
	/* Page-aligned, as libfuse's own read buffers: the copy into the
	 * buffer and out of it run measurably faster. */
	if (posix_memalign((void **)&buf, 4096, size ? size : 1)) {
		pt_file_put(pt, f);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = pt_io_read(pt, f->fd, buf, size, off);
	pt_file_put(pt, f);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, n);
	free(buf);
}

static void pt_write_buf(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_bufvec *bufv, off_t off,
			 struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	size_t len = fuse_buf_size(bufv);
	void *tmp = NULL;
	const void *data;
	struct pt_file *f;
	ssize_t n;
	int err;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f) {
		fuse_reply_err(req, -err);
		return;
	}
	if (bufv->count == 1 && bufv->idx == 0 && bufv->off == 0 &&
	    !(bufv->buf[0].flags & FUSE_BUF_IS_FD)) {
		data = bufv->buf[0].mem;
	} else {
		struct fuse_bufvec dst = FUSE_BUFVEC_INIT(len);

		tmp = malloc(len ? len : 1);
		if (!tmp) {
			pt_file_put(pt, f);
			fuse_reply_err(req, ENOMEM);
			return;
		}
		dst.buf[0].mem = tmp;
		n = fuse_buf_copy(&dst, bufv, 0);
		if (n < 0) {
			free(tmp);
			pt_file_put(pt, f);
			fuse_reply_err(req, (int)-n);
			return;
		}
		len = n;
		data = tmp;
	}
	n = pt_io_write(pt, f->fd, data, len, off);
	pt_file_put(pt, f);
	free(tmp);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, n);
}

/* Closes the lock file of @owner: its POSIX locks on @in go with it. */
static void drop_plock(struct pt_inode *in, uint64_t owner)
{
	struct pt_plock **pp, *p = NULL;

	pthread_mutex_lock(&in->plock_lock);
	for (pp = &in->plocks; *pp; pp = &(*pp)->next) {
		if ((*pp)->owner == owner) {
			p = *pp;
			*pp = p->next;
			break;
		}
	}
	pthread_mutex_unlock(&in->plock_lock);
	if (p) {
		close(p->fd);
		free(p);
	}
}

static void pt_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f;
	int err, fd;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f) {
		fuse_reply_err(req, -err);
		return;
	}
	drop_plock(f->inode, fi->lock_owner);
	/* close() of a dup reports delayed write errors, as close(2) would. */
	fd = dup(f->fd);
	err = fd < 0 || close(fd) ? errno : 0;
	pt_file_put(pt, f);
	fuse_reply_err(req, err);
}

static void release_common(fuse_req_t req, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f;
	int err;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f) {
		fuse_reply_err(req, -err);	/* refused and counted */
		return;
	}
	if (fi->flock_release)
		flock(f->dir ? dirfd(f->dir) : f->fd, LOCK_UN);
	/* The open file's own (OFD) lock owner ends with it. */
	if (!f->dir)
		drop_plock(f->inode, fi->lock_owner);
	pt_file_put(pt, f);
	fuse_reply_err(req, -pt_file_release(pt, fi->fh, ino));
}

static void pt_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	release_common(req, ino, fi);
}

static int file_fd(const struct pt_file *f)
{
	return f->dir ? dirfd(f->dir) : f->fd;
}

static void sync_common(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f;
	int err, res;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f) {
		fuse_reply_err(req, -err);
		return;
	}
	res = datasync ? fdatasync(file_fd(f)) : fsync(file_fd(f));
	err = res ? errno : 0;
	pt_file_put(pt, f);
	fuse_reply_err(req, err);
}

static void pt_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	sync_common(req, ino, datasync, fi);
}

static void pt_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_inode *in;
	struct pt_file *f;
	DIR *d = NULL;
	int err = 0, fd;

	in = pt_inode_get(pt, ino, &err);
	if (!in)
		goto out;
	if (in->type != S_IFDIR) {
		err = -ENOTDIR;
		goto out;
	}
	fd = reopen(pt, in, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		goto out;
	}
	f = pt_file_new(pt, in, -1, d);
	if (!f) {
		closedir(d);
		err = -ENOMEM;
		goto out;
	}
	fi->fh = f->fh;
out:
	pt_inode_put(pt, in);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_open(req, fi);
}

static bool is_dot(const char *n)
{
	return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]));
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi, bool plus)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f;
	size_t rem;
	char *buf, *p;
	int err = 0;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f || !f->dir) {
		if (f) {
			pt_file_put(pt, f);
			err = -ENOTDIR;
		}
		fuse_reply_err(req, -err);
		return;
	}
	if (size > PT_MAX_IO)
		size = PT_MAX_IO;
	buf = calloc(1, size ? size : 1);
	if (!buf) {
		pt_file_put(pt, f);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	p = buf;
	rem = size;
	pthread_mutex_lock(&f->dlock);
	if (off != f->offset) {
		seekdir(f->dir, off);
		f->entry = NULL;
		f->offset = off;
	}
	for (;;) {
		struct dirent *de;
		const char *name;
		size_t len;

		if (!f->entry) {
			errno = 0;
			f->entry = readdir(f->dir);
			if (!f->entry) {
				if (errno && p == buf)
					err = -errno;
				break;
			}
		}
		de = f->entry;
		name = de->d_name;
		if (plus) {
			struct fuse_entry_param e;

			len = fuse_add_direntry_plus(req, NULL, 0, name, NULL,
						     0);
			if (len > rem)
				break;
			if (is_dot(name)) {
				memset(&e, 0, sizeof(e));
				e.attr.st_ino = de->d_ino;
				e.attr.st_mode = (mode_t)de->d_type << 12;
			} else {
				struct pt_inode *dir = f->inode;

				if (do_lookup(pt, dir, name, &e)) {
					/* Gone since readdir(): skip it. */
					f->entry = NULL;
					f->offset = de->d_off;
					continue;
				}
			}
			fuse_add_direntry_plus(req, p, rem, name, &e,
					       de->d_off);
		} else {
			struct stat st = {
				.st_ino = de->d_ino,
				.st_mode = (mode_t)de->d_type << 12,
			};

			len = fuse_add_direntry(req, NULL, 0, name, NULL, 0);
			if (len > rem)
				break;
			fuse_add_direntry(req, p, rem, name, &st, de->d_off);
		}
		p += len;
		rem -= len;
		f->entry = NULL;
		f->offset = de->d_off;
	}
	pthread_mutex_unlock(&f->dlock);
	pt_file_put(pt, f);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_buf(req, buf, size - rem);
	free(buf);
}

static void pt_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void pt_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

static void pt_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	release_common(req, ino, fi);
}

static void pt_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	sync_common(req, ino, datasync, fi);
}

static void pt_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_inode *in;
	struct statvfs sv;
	int err;

	in = pt_inode_get(pt, ino, &err);
	if (!in) {
		fuse_reply_err(req, -err);
		return;
	}
	err = fstatvfs(in->fd, &sv) ? errno : 0;
	pt_inode_put(pt, in);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_statfs(req, &sv);
}

/*
 * xattr syscalls need an open file or a path.  Regular files and
 * directories are reopened read-only; anything else (a symlink, a device
 * node) is reached by its /proc/self/fd path, which resolves to the inode
 * itself without opening it.
 */
struct xat {
	int fd;
	char path[32];
};

static int xat_open(struct vqf_pt *pt, struct pt_inode *in, struct xat *x)
{
	x->fd = -1;
	if (in->type == S_IFREG || in->type == S_IFDIR) {
		x->fd = reopen(pt, in, O_RDONLY | O_NONBLOCK);
		return x->fd < 0 ? x->fd : 0;
	}
	proc_path(x->path, sizeof(x->path), in);
	return 0;
}

static void xat_close(struct xat *x)
{
	if (x->fd >= 0)
		close(x->fd);
}

enum xop { X_GET, X_LIST, X_SET, X_REMOVE };

static void do_xattr(fuse_req_t req, fuse_ino_t ino, enum xop op,
		     const char *name, const char *value, size_t size,
		     int flags)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_inode *in;
	char *buf = NULL;
	struct xat x;
	ssize_t n = 0;
	int err;

	in = pt_inode_get(pt, ino, &err);
	if (!in)
		goto out;
	err = xat_open(pt, in, &x);
	if (err)
		goto out;
	if ((op == X_GET || op == X_LIST) && size) {
		if (size > PT_MAX_XATTR)
			size = PT_MAX_XATTR;
		buf = malloc(size);
		if (!buf) {
			err = -ENOMEM;
			xat_close(&x);
			goto out;
		}
	}
	switch (op) {
	case X_GET:
		n = x.fd >= 0 ? fgetxattr(x.fd, name, buf, size) :
				getxattr(x.path, name, buf, size);
		break;
	case X_LIST:
		n = x.fd >= 0 ? flistxattr(x.fd, buf, size) :
				listxattr(x.path, buf, size);
		break;
	case X_SET:
		n = x.fd >= 0 ? fsetxattr(x.fd, name, value, size, flags) :
				setxattr(x.path, name, value, size, flags);
		break;
	case X_REMOVE:
		n = x.fd >= 0 ? fremovexattr(x.fd, name) :
				removexattr(x.path, name);
		break;
	}
	err = n < 0 ? -errno : 0;
	xat_close(&x);
out:
	pt_inode_put(pt, in);
	if (err)
		fuse_reply_err(req, -err);
	else if ((op == X_GET || op == X_LIST) && !size)
		fuse_reply_xattr(req, n);
	else if (op == X_GET || op == X_LIST)
		fuse_reply_buf(req, buf, n);
	else
		fuse_reply_err(req, 0);
	free(buf);
}

static void pt_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	do_xattr(req, ino, X_SET, name, value, size, flags);
}

static void pt_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	do_xattr(req, ino, X_GET, name, NULL, size, 0);
}

static void pt_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	do_xattr(req, ino, X_LIST, NULL, NULL, size, 0);
}

static void pt_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	do_xattr(req, ino, X_REMOVE, name, NULL, 0, 0);
}

/*
 * POSIX locks of the guest are OFD locks on a file opened for each lock
 * owner (virtiofsd's scheme): two owners conflict as two processes would,
 * and FLUSH of an owner closes its file, releasing its locks like close().
 */
static int plock_fd(struct vqf_pt *pt, struct pt_file *f, uint64_t owner)
{
	struct pt_inode *in = f->inode;
	struct pt_plock *p;
	int fd, acc;

	pthread_mutex_lock(&in->plock_lock);
	for (p = in->plocks; p; p = p->next) {
		if (p->owner == owner) {
			fd = p->fd;
			pthread_mutex_unlock(&in->plock_lock);
			return fd;
		}
	}
	pthread_mutex_unlock(&in->plock_lock);

	/*
	 * One lock file serves all of an owner's open files, some of them
	 * maybe read-only: read-write if we may (virtiofsd's choice), so a
	 * write lock through a later O_RDWR file is not refused EBADF;
	 * else the mode of the file asking.
	 */
	acc = fcntl(f->fd, F_GETFL);
	if (acc < 0)
		return -errno;
	fd = reopen(pt, in, O_RDWR);
	if (fd < 0)
		fd = reopen(pt, in, acc & O_ACCMODE);
	if (fd < 0)
		return fd;
	p = malloc(sizeof(*p));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->owner = owner;
	p->fd = fd;
	pthread_mutex_lock(&in->plock_lock);
	p->next = in->plocks;
	in->plocks = p;
	pthread_mutex_unlock(&in->plock_lock);
	return fd;
}

/*
 * A blocking lock waits by retrying the non-blocking form, so that an
 * INTERRUPT ends the wait with EINTR: a thread asleep in F_OFD_SETLKW or
 * flock() could only be woken by a signal, and a guest shutting down
 * interrupts what it still waits for.  The backoff caps the latency this
 * adds to a contended lock at 10 ms.  @lock: fcntl lock; else flock @op.
 */
static int wait_lock(fuse_req_t req, int fd, struct flock *lock, int op)
{
	struct vqf_pt *pt = pt_of(req);
	unsigned int us = 50;
	uint64_t waited = 0;
	int err;

	for (;;) {
		if (lock)
			err = fcntl(fd, F_OFD_SETLK, lock) ? errno : 0;
		else
			err = flock(fd, op | LOCK_NB) ? errno : 0;
		if (err != EAGAIN && err != EACCES)
			return err;
		if (fuse_req_interrupted(req))
			return EINTR;
		if (pt->lock_wait_ms && waited >= pt->lock_wait_ms * 1000ULL) {
			pthread_mutex_lock(&pt->stats_lock);
			pt->stats.lock_waits_bounded++;
			pthread_mutex_unlock(&pt->stats_lock);
			return EDEADLK;
		}
		usleep(us);
		waited += us;
		us = us < 5000 ? us * 2 : 10000;
	}
}

static void do_lock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		    struct flock *lock, int cmd)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f;
	int err, fd;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f) {
		fuse_reply_err(req, -err);
		return;
	}
	if (f->dir) {
		pt_file_put(pt, f);
		fuse_reply_err(req, EBADF);
		return;
	}
	fd = plock_fd(pt, f, fi->lock_owner);
	pt_file_put(pt, f);
	if (fd < 0) {
		fuse_reply_err(req, -fd);
		return;
	}
	lock->l_pid = 0;	/* required for OFD locks */
	if (cmd == F_OFD_SETLKW)
		err = wait_lock(req, fd, lock, 0);
	else
		err = fcntl(fd, cmd, lock) ? errno : 0;
	if (cmd == F_OFD_GETLK && !err)
		fuse_reply_lock(req, lock);
	else
		fuse_reply_err(req, err);
}

static void pt_getlk(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi, struct flock *lock)
{
	do_lock(req, ino, fi, lock, F_OFD_GETLK);
}

static void pt_setlk(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi, struct flock *lock, int sleep)
{
	do_lock(req, ino, fi, lock, sleep ? F_OFD_SETLKW : F_OFD_SETLK);
}

static void pt_flock(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi, int op)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f;
	int err;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f) {
		fuse_reply_err(req, -err);
		return;
	}
	if (op & (LOCK_NB | LOCK_UN))
		err = flock(file_fd(f), op) ? errno : 0;
	else
		err = wait_lock(req, file_fd(f), NULL, op);
	pt_file_put(pt, f);
	fuse_reply_err(req, err);
}

static void pt_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			 off_t off, off_t len, struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f;
	int err;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f) {
		fuse_reply_err(req, -err);
		return;
	}
	err = fallocate(f->fd, mode, off, len) ? errno : 0;
	pt_file_put(pt, f);
	fuse_reply_err(req, err);
}

static void pt_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *f;
	off_t res;
	int err;

	f = pt_file_get(pt, fi->fh, ino, &err);
	if (!f) {
		fuse_reply_err(req, -err);
		return;
	}
	res = lseek(f->fd, off, whence);
	err = errno;
	pt_file_put(pt, f);
	if (res < 0)
		fuse_reply_err(req, err);
	else
		fuse_reply_lseek(req, res);
}

static void pt_copy_file_range(fuse_req_t req, fuse_ino_t ino_in,
			       off_t off_in, struct fuse_file_info *fi_in,
			       fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len,
			       int flags)
{
	struct vqf_pt *pt = pt_of(req);
	struct pt_file *fin, *fout = NULL;
	ssize_t n = -1;
	int err;

	fin = pt_file_get(pt, fi_in->fh, ino_in, &err);
	if (fin)
		fout = pt_file_get(pt, fi_out->fh, ino_out, &err);
	if (fin && fout) {
		n = copy_file_range(fin->fd, &off_in, fout->fd, &off_out, len,
				    flags);
		err = n < 0 ? -errno : 0;
	}
	if (fout)
		pt_file_put(pt, fout);
	if (fin)
		pt_file_put(pt, fin);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_write(req, n);
}

static const struct fuse_lowlevel_ops pt_ops = {
	.init = pt_init,
	.destroy = pt_destroy,
	.lookup = pt_lookup,
	.forget = pt_forget,
	.forget_multi = pt_forget_multi,
	.getattr = pt_getattr,
	.setattr = pt_setattr,
	.readlink = pt_readlink,
	.mknod = pt_mknod,
	.mkdir = pt_mkdir,
	.symlink = pt_symlink,
	.link = pt_link,
	.unlink = pt_unlink,
	.rmdir = pt_rmdir,
	.rename = pt_rename,
	.open = pt_open,
	.create = pt_create,
	.read = pt_read,
	.write_buf = pt_write_buf,
	.flush = pt_flush,
	.release = pt_release,
	.fsync = pt_fsync,
	.opendir = pt_opendir,
	.readdir = pt_readdir,
	.readdirplus = pt_readdirplus,
	.releasedir = pt_releasedir,
	.fsyncdir = pt_fsyncdir,
	.statfs = pt_statfs,
	.setxattr = pt_setxattr,
	.getxattr = pt_getxattr,
	.listxattr = pt_listxattr,
	.removexattr = pt_removexattr,
	.getlk = pt_getlk,
	.setlk = pt_setlk,
	.flock = pt_flock,
	.fallocate = pt_fallocate,
	.lseek = pt_lseek,
	.copy_file_range = pt_copy_file_range,
};

const struct fuse_lowlevel_ops *vqf_pt_ops(size_t *op_size)
{
	*op_size = sizeof(pt_ops);
	return &pt_ops;
}

struct vqf_pt *vqf_pt_new(const struct vqf_pt_config *cfg)
{
	const char *env = getenv("VQF_PT_IO");
	struct vqf_pt *pt;
	int rootfd, err;

	pt = calloc(1, sizeof(*pt));
	if (!pt)
		return NULL;
	pt->timeout = cfg->timeout;
	pt->uring_min = cfg->uring_min ? cfg->uring_min : 128 << 10;
	pt->openat2 = probe_openat2();
	pt->lock_wait_ms = cfg->lock_wait_ms;
	pt->io_chunk = cfg->io_chunk ? cfg->io_chunk : 32 << 10;
	pt->creds = cfg->creds == VQF_PT_CREDS_ON ||
		    (cfg->creds == VQF_PT_CREDS_AUTO && geteuid() == 0);
	if (pt->creds && geteuid() != 0) {
		free(pt);
		errno = EPERM;
		return NULL;
	}
	pt->host_callers = cfg->host_callers;
	pt->nodev = cfg->nodev;
	switch (cfg->io) {
	case VQF_PT_IO_PREAD:
		pt->uring = false;
		break;
	case VQF_PT_IO_URING:
		pt->uring = pt_io_uring_works();
		if (!pt->uring) {
			free(pt);
			errno = ENOSYS;
			return NULL;
		}
		break;
	default:
		pt->uring = !(env && !strcmp(env, "pread")) &&
			    pt_io_uring_works();
		break;
	}
	pthread_mutex_init(&pt->lock, NULL);
	pthread_mutex_init(&pt->stats_lock, NULL);
	if (pt->creds) {
		pt->ngroups = getgroups(0, NULL);
		pt->groups = calloc(pt->ngroups > 0 ? pt->ngroups : 1,
				    sizeof(gid_t));
		if (pt->ngroups < 0 || !pt->groups ||
		    getgroups(pt->ngroups, pt->groups) != pt->ngroups) {
			err = ENOMEM;
			goto fail;
		}
	}
	pt->proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pt->proc_fd < 0)
		goto fail_errno;
	rootfd = open(cfg->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		err = errno;
		close(pt->proc_fd);
		goto fail;
	}
	err = -pt_tables_init(pt, rootfd);
	if (err) {
		close(rootfd);
		close(pt->proc_fd);
		goto fail;
	}
	umask(0);
	return pt;

fail_errno:
	err = errno;
fail:
	pthread_mutex_destroy(&pt->lock);
	pthread_mutex_destroy(&pt->stats_lock);
	free(pt->groups);
	free(pt);
	errno = err;
	return NULL;
}

void vqf_pt_free(struct vqf_pt *pt)
{
	if (!pt)
		return;
	pt_tables_fini(pt);
	close(pt->proc_fd);
	pthread_mutex_destroy(&pt->lock);
	pthread_mutex_destroy(&pt->stats_lock);
	free(pt->groups);
	free(pt);
}

void vqf_pt_get_stats(struct vqf_pt *pt, struct vqf_pt_stats *out)
{
	pthread_mutex_lock(&pt->stats_lock);
	*out = pt->stats;
	pthread_mutex_unlock(&pt->stats_lock);
}

int vqf_pt_file_fd(struct vqf_pt *pt, uint64_t nodeid, uint64_t fh)
{
	struct pt_file *f;
	int err, fd;

	f = pt_file_get(pt, fh, nodeid, &err);
	if (!f)
		return err;
	fd = f->dir ? -EBADF : fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
	if (fd == -1)
		fd = -errno;
	pt_file_put(pt, f);
	return fd;
}

int vqf_pt_node_fd(struct vqf_pt *pt, uint64_t nodeid, bool write)
{
	struct pt_inode *in;
	char name[16];
	int err, fd;

	in = pt_inode_get(pt, nodeid, &err);
	if (!in)
		return err;
	if (in->type != S_IFREG) {
		pt_inode_put(pt, in);
		return -ENODEV;
	}
	/* A new open of the inode itself: its O_PATH fd grants no I/O. */
	snprintf(name, sizeof(name), "%d", in->fd);
	fd = openat(pt->proc_fd, name, (write ? O_RDWR : O_RDONLY) |
		    O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	pt_inode_put(pt, in);
	return fd;
}

bool vqf_pt_uses_uring(struct vqf_pt *pt)
{
	return pt->uring;
}

int vqf_pt_dax_file_fd(void *pt, unsigned long long nodeid,
		       unsigned long long fh)
{
	return vqf_pt_file_fd(pt, nodeid, fh);
}

int vqf_pt_dax_node_fd(void *pt, unsigned long long nodeid, bool write)
{
	return vqf_pt_node_fd(pt, nodeid, write);
}
