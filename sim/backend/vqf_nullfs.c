// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_nullfs.c - every answer from constants (see vqf_nullfs.h).  The
 * requests reach here already checked by vqf_backend against their
 * opcode's shape; nodeids are not trusted, only compared with the root's.
 */
#define _GNU_SOURCE
#include "vqf_nullfs.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define NULLFS_FILE	2

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino == FUSE_ROOT_ID ? FUSE_ROOT_ID : NULLFS_FILE;
	st->st_mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644;
	st->st_nlink = ino == FUSE_ROOT_ID ? 2 : 1;
	st->st_blksize = 4096;
}

static void fill_entry(struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = NULLFS_FILE;
	e->generation = 1;
	fill_attr(NULLFS_FILE, &e->attr);
}

static void nf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	(void)name;
	if (parent != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fill_entry(&e);
	fuse_reply_entry(req, &e);
}

static void nf_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req);
}

static void nf_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

static void nf_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 0);
}

static void nf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	(void)attr;
	(void)to_set;
	nf_getattr(req, ino, fi);
}

static void nf_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;

	(void)mode;
	if (parent != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	(void)name;
	fill_entry(&e);
	fi->fh = 0;
	fuse_reply_create(req, &e, fi);
}

static void nf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == FUSE_ROOT_ID) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

static void nf_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

static void nf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)ino;
	(void)size;
	(void)off;
	(void)fi;
	fuse_reply_buf(req, NULL, 0);
}

static void nf_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
		       off_t off, struct fuse_file_info *fi)
{
	nf_read(req, ino, size, off, fi);
}

static void nf_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)off;
	(void)fi;
	fuse_reply_write(req, size);
}

static void nf_ok_fi(fuse_req_t req, fuse_ino_t ino,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void nf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)datasync;
	nf_ok_fi(req, ino, fi);
}

static void nf_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)name;
	fuse_reply_err(req, parent == FUSE_ROOT_ID ? 0 : ENOTDIR);
}

static void nf_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	(void)name;
	(void)newname;
	(void)flags;
	fuse_reply_err(req, parent == FUSE_ROOT_ID &&
			    newparent == FUSE_ROOT_ID ? 0 : ENOTDIR);
}

static void nf_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static void nf_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENODATA);
}

static void nf_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	if (size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_xattr(req, 0);
}

static const struct fuse_lowlevel_ops nullfs_ops = {
	.lookup = nf_lookup,
	.forget = nf_forget,
	.forget_multi = nf_forget_multi,
	.getattr = nf_getattr,
	.setattr = nf_setattr,
	.create = nf_create,
	.open = nf_open,
	.read = nf_read,
	.write = nf_write,
	.flush = nf_ok_fi,
	.release = nf_ok_fi,
	.fsync = nf_fsync,
	.unlink = nf_unlink,
	.rename = nf_rename,
	.statfs = nf_statfs,
	.opendir = nf_opendir,
	.readdir = nf_readdir,
	.readdirplus = nf_readdir,
	.releasedir = nf_ok_fi,
	.getxattr = nf_getxattr,
	.listxattr = nf_listxattr,
};

const struct fuse_lowlevel_ops *vqf_nullfs_ops(size_t *op_size)
{
	*op_size = sizeof(nullfs_ops);
	return &nullfs_ops;
}
