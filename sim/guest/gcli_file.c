// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcli_file.c - open files: OPEN/CREATE, close (FLUSH, RELEASE), read and write
 * without a page cache, lseek, fsync, fallocate, copy_file_range.
 */
#define _GNU_SOURCE	/* SEEK_DATA, F_OFD_*, RENAME_* */
#include "gcli_int.h"

struct gfile *gcli_fget(struct vqf_gcli *c, int fd)
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

/*
 * Linux's close path: an OFD lock goes with the last reference to its open
 * file (locks_remove_file sends an unlock for the file's owner), POSIX locks
 * of the process go with any close of the file (fuse_flush's lock_owner is
 * the process's), flock locks go with RELEASE's FLOCK_UNLOCK.
 */
void gcli_release(struct vqf_gcli *c, const struct gfile *f)
{
	struct vqf_gdrv_call cl;
	struct fuse_release_in ri = { .fh = f->fh, .flags = (u32)f->flags };

	if (!f->dir) {
		struct fuse_flush_in fi = { .fh = f->fh,
					    .lock_owner = c->posix_owner };

		if (f->ofd_locked) {
			struct fuse_file_lock lk = { .end = GCLI_OFFSET_MAX,
						     .type = F_UNLCK };

			gcli_lk_call(c, f, FUSE_SETLK, f->owner, 0, &lk, NULL);
		}
		gcli_call_init(&cl, FUSE_FLUSH, f->nodeid);
		vqf_req_add_in(&cl.req, &fi, sizeof(fi));
		gcli_send(c, &cl);
		ri.release_flags = FUSE_RELEASE_FLOCK_UNLOCK;
		ri.lock_owner = f->owner;
	}
	gcli_call_init(&cl, f->dir ? FUSE_RELEASEDIR : FUSE_RELEASE, f->nodeid);
	vqf_req_add_in(&cl.req, &ri, sizeof(ri));
	gcli_send(c, &cl);
}

/*
 * The flags OPEN/CREATE carry.  With writeback the client may read what
 * it partly overwrites, and it places appends itself: write-only opens
 * become read-write and O_APPEND stays here (as passthrough_ll does on
 * the server side for a writeback mount).
 */
static int wire_flags(const struct vqf_gcli *c, int flags)
{
	if (!gcli_writeback(c) && !c->dax_on)
		return flags;
	/* A shared writable mapping needs read access too (DAX). */
	if ((flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	return gcli_writeback(c) ? flags & ~O_APPEND : flags;
}

/* cache=auto opens without FOPEN_KEEP_CACHE: clean pages are dropped. */
static void close_to_open(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i;
	u64 n = 0;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	if (i && !i->pc.dirty)
		n = gc_pages_drop(&i->pc, 0, GC_NEVER);
	pthread_mutex_unlock(&c->lock);
	if (n)
		STAT_ADD(c, pages_invalidated, n);
}

int gcli_open_node(struct vqf_gcli *c, u64 nodeid, int flags, bool dir,
		   u64 *fh)
{
	struct vqf_gdrv_call cl;
	struct fuse_open_in oi = { .flags = (u32)(flags & ~(O_CREAT | O_EXCL |
							   O_NOCTTY)) };
	struct fuse_open_out oo;
	int ret;

	gcli_call_init(&cl, dir ? FUSE_OPENDIR : FUSE_OPEN, nodeid);
	vqf_req_add_in(&cl.req, &oi, sizeof(oi));
	vqf_req_add_out(&cl.req, &oo, sizeof(oo));
	ret = gcli_send(c, &cl);
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

		ret = gcli_resolve(c, path, true, true, &parent, name, NULL);
		if (ret)
			return ret == -EBUSY ? -EISDIR : ret;
		struct asamp as;

		ret = gcli_do_lookup(c, parent, name, &e, &as);
		if (!ret && (flags & O_EXCL)) {
			gcli_iput(c, e.nodeid);
			gcli_iput(c, parent);
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

			gcli_call_init(&cl, FUSE_CREATE, parent);
			vqf_req_add_in(&cl.req, &ci, sizeof(ci));
			vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
			vqf_req_add_out(&cl.req, &e, sizeof(e));
			vqf_req_add_out(&cl.req, &oo, sizeof(oo));
			gcli_asample_entry(c, parent, &cl.req, &as);
			memset(&e, 0, sizeof(e));
			ret = gcli_send(c, &cl);
			if (!ret) {
				gcli_asample_reply(c, &cl.req, &as);
				ret = gcli_entry_got(c, &e, true);
			}
			if (!ret) {
				gcli_attr_got(c, e.nodeid, &e.attr, &as);
				gcli_dentry_set(c, parent, name, e.nodeid, &as);
				gcli_attr_inval(c, parent);
			}
			gcli_iput(c, parent);
			if (ret)
				return ret;
			fd = falloc(c, e.nodeid, oo.fh, flags, false);
			if (fd < 0) {
				struct gfile tmp = { .nodeid = e.nodeid,
						     .fh = oo.fh,
						     .flags = flags };

				gcli_release(c, &tmp);
				gcli_iput(c, e.nodeid);
			}
			return fd;
		}
		gcli_iput(c, parent);
		if (ret)
			return ret;
		nodeid = e.nodeid;
		a = e.attr;
		if (S_ISLNK(a.mode)) {
			/* O_CREAT on an existing symlink follows it. */
			gcli_iput(c, nodeid);
			ret = gcli_resolve(c, path, false, true, &nodeid, NULL, &a);
			if (ret)
				return ret;
		}
	} else {
		ret = gcli_resolve(c, path, false, !(flags & O_NOFOLLOW), &nodeid,
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
	ret = gcli_open_node(c, nodeid, dir ? flags : wire_flags(c, flags), dir,
			     &fh);
	if (ret)
		goto fail;
	if (!dir && (flags & O_TRUNC)) {
		gcli_pages_truncate(c, nodeid, 0);
		gcli_attr_inval(c, nodeid);
	} else if (!dir && c->cfg.cache == VQF_GCLI_CACHE_AUTO) {
		close_to_open(c, nodeid);
	}
	fd = falloc(c, nodeid, fh, flags, dir);
	if (fd < 0) {
		struct gfile tmp = { .nodeid = nodeid, .fh = fh,
				     .flags = flags, .dir = dir };

		gcli_release(c, &tmp);
		ret = fd;
		goto fail;
	}
	return fd;
fail:
	gcli_iput(c, nodeid);
	return ret;
}

int vqf_gcli_close(struct vqf_gcli *c, int fd)
{
	struct gfile *f = gcli_fget(c, fd), copy;
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
		ret = gcli_wb_flush(c, copy.nodeid, copy.fh);
	if (gcli_dax_file_put(c, copy.mf))
		return ret;	/* mapped: the last munmap releases */
	free(copy.mf);
	gcli_release(c, &copy);
	gcli_iput(c, copy.nodeid);
	return ret;
}

static int getattr_fh(struct vqf_gcli *c, struct gfile *f,
		      struct fuse_attr *a)
{
	return gcli_getattr_node(c, f->nodeid, f->fh, a);
}

/* READ requests straight into @buf's bytes: no page cache. */
ssize_t gcli_fuse_pread(struct vqf_gcli *c, struct gfile *f, void *buf,
			size_t n, off_t off)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	size_t done = 0;
	u8 *page;

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
		ret = gcli_send(c, &cl);
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

static ssize_t do_pread(struct vqf_gcli *c, struct gfile *f, void *buf,
			size_t n, off_t off)
{
	if (f->dir)
		return -EISDIR;
	if ((f->flags & O_ACCMODE) == O_WRONLY)
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	if (c->dax_on)
		return gcli_dax_pread(c, f, buf, n, off);
	if (gcli_caching(c))
		return gcli_cached_pread(c, f, buf, n, off);
	return gcli_fuse_pread(c, f, buf, n, off);
}

/*
 * file_remove_privs(): a write by a caller without CAP_FSETID (here: not
 * uid 0) clears S_ISUID, and S_ISGID when group-executable.  Judged on
 * the mode last known, as the kernel judges on i_mode: no GETATTR.
 */
static int kill_privs(struct vqf_gcli *c, struct gfile *f)
{
	struct fuse_setattr_in si = { .valid = FATTR_MODE };
	struct vqf_gcli_creds cr;
	struct ginode *i;
	u32 mode = 0, kill = 0;

	gcli_creds(c, &cr);
	if (!cr.uid)
		return 0;
	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, f->nodeid);
	if (i && i->ca.known)
		mode = i->ca.attr.mode;
	pthread_mutex_unlock(&c->lock);
	if (mode & S_ISUID)
		kill |= S_ISUID;
	if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
		kill |= S_ISGID;
	if (!kill)
		return 0;
	si.mode = mode & 07777 & ~kill;
	return gcli_setattr(c, f->nodeid, &si);
}

/* WRITE requests from @buf's bytes (the page cache is kept coherent). */
ssize_t gcli_fuse_pwrite(struct vqf_gcli *c, struct gfile *f,
			 const void *buf, size_t n, off_t off)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	size_t done = 0;
	u8 *page;
	int ret;

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

		memcpy(page, (const u8 *)buf + done, chunk);
		STAT_ADD(c, bytes_copied, chunk);
		memset(&cl, 0, sizeof(cl));
		vqf_req_init_write(&cl.req, 0, f->nodeid, &wi, &pd, 1, &wo);
		ret = gcli_send(c, &cl);
		if (ret) {
			vqf_gram_release(ram, page);
			return done ? (ssize_t)done : ret;
		}
		/* The server may not claim more than we sent. */
		if (wo.size > chunk) {
			vqf_gram_release(ram, page);
			return -EIO;
		}
		gcli_pages_written(c, f->nodeid, (const u8 *)buf + done,
				   (u64)off + done, wo.size);
		done += wo.size;
		if (wo.size < chunk)
			break;
	}
	vqf_gram_release(ram, page);
	/* Size and mtime moved on the server (fuse_write_update_attr). */
	gcli_attr_inval(c, f->nodeid);
	STAT_ADD(c, bytes_written, done);
	return (ssize_t)done;
}

static ssize_t do_pwrite(struct vqf_gcli *c, struct gfile *f,
			 const void *buf, size_t n, off_t off)
{
	struct gdax_inode *gi;
	ssize_t done;
	u64 size;
	int ret;

	if (f->dir)
		return -EISDIR;
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	if (!n)
		return 0;
	ret = kill_privs(c, f);
	if (ret)
		return ret;
	if (c->dax_on && !gcli_dax_grows(c, f, n, off, &gi, &size))
		return gcli_dax_copy(c, f, gi, (void *)buf, n, off, true,
				     size);
	if (gcli_writeback(c))
		return gcli_wb_write(c, f, buf, n, off);
	done = gcli_fuse_pwrite(c, f, buf, n, off);
	if (c->dax_on && done > 0) {
		/* DAX bounds copies by the size: keep it (no page cache) */
		gcli_dax_size_grew(c, f->nodeid, (u64)off + (u64)done);
		STAT_ADD(c, dax_extends, 1);
	}
	return done;
}

ssize_t vqf_gcli_pread(struct vqf_gcli *c, int fd, void *buf, size_t n,
		       off_t off)
{
	struct gfile *f = gcli_fget(c, fd);

	STAT_ADD(c, calls, 1);
	return f ? do_pread(c, f, buf, n, off) : -EBADF;
}

ssize_t vqf_gcli_pwrite(struct vqf_gcli *c, int fd, const void *buf,
			size_t n, off_t off)
{
	struct gfile *f = gcli_fget(c, fd);

	STAT_ADD(c, calls, 1);
	return f ? do_pwrite(c, f, buf, n, off) : -EBADF;
}

ssize_t vqf_gcli_read(struct vqf_gcli *c, int fd, void *buf, size_t n)
{
	struct gfile *f = gcli_fget(c, fd);
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
	struct gfile *f = gcli_fget(c, fd);
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
		if (gcli_writeback(c)) {
			ret = gcli_node_attr(c, f->nodeid, f->fh, &a);
		} else {
			ret = getattr_fh(c, f, &a);
			if (!ret)
				gcli_attr_fix_size(c, f->nodeid, &a);
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
	struct gfile *f = gcli_fget(c, fd);
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
		ret = gcli_node_attr(c, f->nodeid, f->fh, &a);
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

		gcli_call_init(&cl, FUSE_LSEEK, f->nodeid);
		vqf_req_add_in(&cl.req, &li, sizeof(li));
		vqf_req_add_out(&cl.req, &lo, sizeof(lo));
		ret = gcli_send(c, &cl);
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
	struct gfile *f = gcli_fget(c, fd);
	struct vqf_gdrv_call cl;
	struct fuse_fsync_in fi = { 0 };

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	fi.fh = f->fh;
	fi.fsync_flags = datasync ? 1 : 0;
	if (!f->dir) {
		int ret = gcli_wb_flush(c, f->nodeid, f->fh);

		if (ret)
			return ret;
	}
	gcli_call_init(&cl, f->dir ? FUSE_FSYNCDIR : FUSE_FSYNC, f->nodeid);
	vqf_req_add_in(&cl.req, &fi, sizeof(fi));
	return gcli_send(c, &cl);
}

int vqf_gcli_ftruncate(struct vqf_gcli *c, int fd, off_t len)
{
	struct gfile *f = gcli_fget(c, fd);
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
	return gcli_setattr(c, f->nodeid, &si);
}

int vqf_gcli_fstat(struct vqf_gcli *c, int fd, struct stat *st)
{
	struct gfile *f = gcli_fget(c, fd);
	struct fuse_attr a;
	int ret;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	ret = gcli_node_attr(c, f->nodeid, f->fh, &a);
	if (!ret)
		gcli_attr_to_stat(&a, st);
	return ret;
}

int vqf_gcli_fallocate(struct vqf_gcli *c, int fd, int mode, off_t off,
		       off_t len)
{
	struct gfile *f = gcli_fget(c, fd);
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
	ret = gcli_wb_flush(c, f->nodeid, f->fh);
	if (ret)
		return ret;
	gcli_call_init(&cl, FUSE_FALLOCATE, f->nodeid);
	vqf_req_add_in(&cl.req, &fi, sizeof(fi));
	ret = gcli_send(c, &cl);
	if (!ret) {
		gcli_pages_drop(c, f->nodeid, (u64)off, (u64)len);
		gcli_attr_inval(c, f->nodeid);
	}
	return ret;
}

ssize_t vqf_gcli_copy_file_range(struct vqf_gcli *c, int fd_in,
				 off_t off_in, int fd_out, off_t off_out,
				 size_t len)
{
	struct gfile *fi = gcli_fget(c, fd_in), *fo = gcli_fget(c, fd_out);
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
	ret = gcli_wb_flush(c, fi->nodeid, fi->fh);
	if (!ret)
		ret = gcli_wb_flush(c, fo->nodeid, fo->fh);
	if (ret)
		return ret;
	gcli_call_init(&cl, FUSE_COPY_FILE_RANGE, fi->nodeid);
	vqf_req_add_in(&cl.req, &ci, sizeof(ci));
	vqf_req_add_out(&cl.req, &wo, sizeof(wo));
	ret = gcli_send(c, &cl);
	if (ret)
		return ret;
	if (wo.size > len)
		return -EIO;
	gcli_pages_drop(c, fo->nodeid, (u64)off_out, wo.size);
	gcli_attr_inval(c, fo->nodeid);
	return (ssize_t)wo.size;
}

int vqf_gcli_flush(struct vqf_gcli *c, int fd, u64 lock_owner)
{
	struct gfile *f = gcli_fget(c, fd);
	struct fuse_flush_in fi = { 0 };
	struct vqf_gdrv_call cl;
	int ret, err;

	STAT_ADD(c, calls, 1);
	if (!f)
		return -EBADF;
	if (f->dir)
		return 0;
	ret = (f->flags & O_ACCMODE) != O_RDONLY ?
	      gcli_wb_flush(c, f->nodeid, f->fh) : 0;
	fi.fh = f->fh;
	fi.lock_owner = lock_owner ? lock_owner : c->posix_owner;
	gcli_call_init(&cl, FUSE_FLUSH, f->nodeid);
	vqf_req_add_in(&cl.req, &fi, sizeof(fi));
	err = gcli_send(c, &cl);
	return err ? err : ret;
}
