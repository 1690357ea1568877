// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * tf.c - raw FUSE requests for the backend tests (see tf.h).
 */
#define _GNU_SOURCE
#include "tf.h"

#include <errno.h>
#include <string.h>
#include <time.h>

void tf_reply_init(struct tf_reply *r)
{
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->calls = 0;
	r->len = 0;
	r->fail_with = 0;
}

void tf_reply_destroy(struct tf_reply *r)
{
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
}

int tf_reply_fn(void *ctx, const struct iovec *iov, int iovcnt, size_t len)
{
	struct tf_reply *r = ctx;
	size_t off = 0;
	char *dst;
	int i;

	pthread_mutex_lock(&r->lock);
	if (r->fail_with) {
		int ret = r->fail_with;

		r->calls++;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
		return ret;
	}
	r->len = len;
	for (i = 0; i < iovcnt; i++) {
		size_t n = iov[i].iov_len;

		/* header into r->h, the rest into r->data */
		if (off < sizeof(r->h)) {
			size_t h = n < sizeof(r->h) - off ? n :
				   sizeof(r->h) - off;

			memcpy((char *)&r->h + off, iov[i].iov_base, h);
			off += h;
			n -= h;
			if (!n)
				continue;
			dst = r->data;
			memcpy(dst, (char *)iov[i].iov_base + h, n);
			off += n;
			continue;
		}
		if (off - sizeof(r->h) + n > sizeof(r->data))
			n = sizeof(r->data) - (off - sizeof(r->h));
		memcpy(r->data + off - sizeof(r->h), iov[i].iov_base, n);
		off += n;
	}
	r->calls++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

bool tf_reply_wait(struct tf_reply *r, int calls)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&r->lock);
	while (r->calls < calls)
		if (pthread_cond_timedwait(&r->cond, &r->lock, &ts))
			break;
	ok = r->calls >= calls;
	pthread_mutex_unlock(&r->lock);
	return ok;
}

void tf_begin(struct tf_msg *m, uint32_t opcode, uint64_t nodeid,
	      uint64_t unique)
{
	struct fuse_in_header h = {
		.opcode = opcode,
		.nodeid = nodeid,
		.unique = unique,
		.uid = 0,
		.gid = 0,
		.pid = 1,
	};

	memcpy(m->buf, &h, sizeof(h));
	m->len = sizeof(h);
}

void tf_put(struct tf_msg *m, const void *p, size_t n)
{
	if (m->len + n > sizeof(m->buf))
		n = sizeof(m->buf) - m->len;
	memcpy(m->buf + m->len, p, n);
	m->len += n;
}

void tf_puts(struct tf_msg *m, const char *s)
{
	tf_put(m, s, strlen(s) + 1);
}

void tf_end(struct tf_msg *m)
{
	struct fuse_in_header h;

	memcpy(&h, m->buf, sizeof(h));
	h.len = m->len;
	memcpy(m->buf, &h, sizeof(h));
}

void tf_setup(struct tf *t, struct vqf_backend *be)
{
	t->be = be;
	t->unique = 2;
	tf_reply_init(&t->r);
}

void tf_teardown(struct tf *t)
{
	tf_reply_destroy(&t->r);
}

int tf_send(struct tf *t)
{
	struct fuse_in_header h;

	memcpy(&h, t->m.buf, sizeof(h));
	h.unique = t->unique;
	t->unique += 2;
	memcpy(t->m.buf, &h, sizeof(h));
	tf_end(&t->m);
	t->r.calls = 0;
	t->r.len = 0;
	memset(&t->r.h, 0, sizeof(t->r.h));
	return vqf_backend_process(t->be, t->m.buf, t->m.len, tf_reply_fn,
				   &t->r);
}

int tf_call(struct tf *t)
{
	int ret = tf_send(t);

	if (ret != VQF_BE_REPLY || !tf_reply_wait(&t->r, 1))
		return -1000;
	return t->r.h.error;
}

static size_t payload(struct tf *t)
{
	return t->r.len > sizeof(t->r.h) ? t->r.len - sizeof(t->r.h) : 0;
}

int tf_init(struct tf *t, struct fuse_init_out *out)
{
	struct fuse_init_in in = {
		.major = FUSE_KERNEL_VERSION,
		.minor = FUSE_KERNEL_MINOR_VERSION,
		.max_readahead = 1 << 20,
		.flags = FUSE_ASYNC_READ | FUSE_POSIX_LOCKS |
			 FUSE_ATOMIC_O_TRUNC | FUSE_EXPORT_SUPPORT |
			 FUSE_BIG_WRITES | FUSE_DONT_MASK | FUSE_FLOCK_LOCKS |
			 FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO |
			 FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES |
			 FUSE_INIT_EXT,
	};
	int err;

	tf_begin(&t->m, FUSE_INIT, 0, 0);
	tf_put(&t->m, &in, sizeof(in));
	err = tf_call(t);
	if (!err && out) {
		memset(out, 0, sizeof(*out));
		memcpy(out, t->r.data, payload(t) < sizeof(*out) ?
		       payload(t) : sizeof(*out));
	}
	return err;
}

static int entry_call(struct tf *t, struct fuse_entry_out *e)
{
	int err = tf_call(t);

	if (!err && e)
		memcpy(e, t->r.data, sizeof(*e));
	return err;
}

int tf_lookup(struct tf *t, uint64_t parent, const char *name,
	      struct fuse_entry_out *e)
{
	tf_begin(&t->m, FUSE_LOOKUP, parent, 0);
	tf_puts(&t->m, name);
	return entry_call(t, e);
}

void tf_forget(struct tf *t, uint64_t nodeid, uint64_t n)
{
	struct fuse_forget_in in = { .nlookup = n };

	tf_begin(&t->m, FUSE_FORGET, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	tf_send(t);
}

int tf_getattr(struct tf *t, uint64_t nodeid, struct fuse_attr *a)
{
	struct fuse_getattr_in in = { 0 };
	int err;

	tf_begin(&t->m, FUSE_GETATTR, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	err = tf_call(t);
	if (!err && a)
		memcpy(a, t->r.data + offsetof(struct fuse_attr_out, attr),
		       sizeof(*a));
	return err;
}

int tf_mkdir(struct tf *t, uint64_t parent, const char *name, uint32_t mode,
	     struct fuse_entry_out *e)
{
	struct fuse_mkdir_in in = { .mode = mode };

	tf_begin(&t->m, FUSE_MKDIR, parent, 0);
	tf_put(&t->m, &in, sizeof(in));
	tf_puts(&t->m, name);
	return entry_call(t, e);
}

int tf_mknod(struct tf *t, uint64_t parent, const char *name, uint32_t mode,
	     uint32_t rdev, struct fuse_entry_out *e)
{
	struct fuse_mknod_in in = { .mode = mode, .rdev = rdev };

	tf_begin(&t->m, FUSE_MKNOD, parent, 0);
	tf_put(&t->m, &in, sizeof(in));
	tf_puts(&t->m, name);
	return entry_call(t, e);
}

int tf_symlink(struct tf *t, uint64_t parent, const char *name,
	       const char *target, struct fuse_entry_out *e)
{
	tf_begin(&t->m, FUSE_SYMLINK, parent, 0);
	tf_puts(&t->m, name);
	tf_puts(&t->m, target);
	return entry_call(t, e);
}

int tf_link(struct tf *t, uint64_t nodeid, uint64_t newparent,
	    const char *name, struct fuse_entry_out *e)
{
	struct fuse_link_in in = { .oldnodeid = nodeid };

	tf_begin(&t->m, FUSE_LINK, newparent, 0);
	tf_put(&t->m, &in, sizeof(in));
	tf_puts(&t->m, name);
	return entry_call(t, e);
}

int tf_unlink(struct tf *t, uint64_t parent, const char *name)
{
	tf_begin(&t->m, FUSE_UNLINK, parent, 0);
	tf_puts(&t->m, name);
	return tf_call(t);
}

int tf_rmdir(struct tf *t, uint64_t parent, const char *name)
{
	tf_begin(&t->m, FUSE_RMDIR, parent, 0);
	tf_puts(&t->m, name);
	return tf_call(t);
}

int tf_rename(struct tf *t, uint64_t parent, const char *name,
	      uint64_t newparent, const char *newname, uint32_t flags)
{
	if (flags) {
		struct fuse_rename2_in in = {
			.newdir = newparent, .flags = flags
		};

		tf_begin(&t->m, FUSE_RENAME2, parent, 0);
		tf_put(&t->m, &in, sizeof(in));
	} else {
		struct fuse_rename_in in = { .newdir = newparent };

		tf_begin(&t->m, FUSE_RENAME, parent, 0);
		tf_put(&t->m, &in, sizeof(in));
	}
	tf_puts(&t->m, name);
	tf_puts(&t->m, newname);
	return tf_call(t);
}

int tf_readlink(struct tf *t, uint64_t nodeid, char *buf, size_t size)
{
	size_t n;
	int err;

	tf_begin(&t->m, FUSE_READLINK, nodeid, 0);
	err = tf_call(t);
	if (err)
		return err;
	n = payload(t) < size - 1 ? payload(t) : size - 1;
	memcpy(buf, t->r.data, n);
	buf[n] = '\0';
	return n;
}

int tf_create(struct tf *t, uint64_t parent, const char *name, uint32_t flags,
	      uint32_t mode, struct fuse_entry_out *e, uint64_t *fh)
{
	struct fuse_create_in in = { .flags = flags, .mode = mode };
	struct fuse_open_out o;
	int err;

	tf_begin(&t->m, FUSE_CREATE, parent, 0);
	tf_put(&t->m, &in, sizeof(in));
	tf_puts(&t->m, name);
	err = tf_call(t);
	if (err)
		return err;
	if (e)
		memcpy(e, t->r.data, sizeof(*e));
	memcpy(&o, t->r.data + sizeof(struct fuse_entry_out), sizeof(o));
	if (fh)
		*fh = o.fh;
	return 0;
}

static int open_common(struct tf *t, uint32_t op, uint64_t nodeid,
		       uint32_t flags, uint64_t *fh)
{
	struct fuse_open_in in = { .flags = flags };
	struct fuse_open_out o;
	int err;

	tf_begin(&t->m, op, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	err = tf_call(t);
	if (err)
		return err;
	memcpy(&o, t->r.data, sizeof(o));
	*fh = o.fh;
	return 0;
}

int tf_open(struct tf *t, uint64_t nodeid, uint32_t flags, uint64_t *fh)
{
	return open_common(t, FUSE_OPEN, nodeid, flags, fh);
}

int tf_opendir(struct tf *t, uint64_t nodeid, uint64_t *fh)
{
	return open_common(t, FUSE_OPENDIR, nodeid, 0, fh);
}

int tf_write(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t off,
	     const void *buf, uint32_t size)
{
	struct fuse_write_in in = { .fh = fh, .offset = off, .size = size };
	struct fuse_write_out o;
	int err;

	tf_begin(&t->m, FUSE_WRITE, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	tf_put(&t->m, buf, size);
	err = tf_call(t);
	if (err)
		return err;
	memcpy(&o, t->r.data, sizeof(o));
	return o.size;
}

int tf_read(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t off,
	    void *buf, uint32_t size)
{
	struct fuse_read_in in = { .fh = fh, .offset = off, .size = size };
	int err;

	tf_begin(&t->m, FUSE_READ, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	err = tf_call(t);
	if (err)
		return err;
	if (buf)
		memcpy(buf, t->r.data, payload(t));
	return payload(t);
}

int tf_release(struct tf *t, uint64_t nodeid, uint64_t fh, bool dir)
{
	struct fuse_release_in in = { .fh = fh };

	tf_begin(&t->m, dir ? FUSE_RELEASEDIR : FUSE_RELEASE, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	return tf_call(t);
}

int tf_flush(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t owner)
{
	struct fuse_flush_in in = { .fh = fh, .lock_owner = owner };

	tf_begin(&t->m, FUSE_FLUSH, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	return tf_call(t);
}

int tf_fsync(struct tf *t, uint64_t nodeid, uint64_t fh, bool dir)
{
	struct fuse_fsync_in in = { .fh = fh };

	tf_begin(&t->m, dir ? FUSE_FSYNCDIR : FUSE_FSYNC, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	return tf_call(t);
}

int tf_setattr(struct tf *t, uint64_t nodeid, const struct fuse_setattr_in *in,
	       struct fuse_attr *a)
{
	int err;

	tf_begin(&t->m, FUSE_SETATTR, nodeid, 0);
	tf_put(&t->m, in, sizeof(*in));
	err = tf_call(t);
	if (!err && a)
		memcpy(a, t->r.data + offsetof(struct fuse_attr_out, attr),
		       sizeof(*a));
	return err;
}

int tf_statfs(struct tf *t, uint64_t nodeid, struct fuse_kstatfs *st)
{
	int err;

	tf_begin(&t->m, FUSE_STATFS, nodeid, 0);
	err = tf_call(t);
	if (!err && st)
		memcpy(st, t->r.data, sizeof(*st));
	return err;
}

int tf_readdir(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t off,
	       uint32_t size, bool plus)
{
	struct fuse_read_in in = { .fh = fh, .offset = off, .size = size };
	int err;

	tf_begin(&t->m, plus ? FUSE_READDIRPLUS : FUSE_READDIR, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	err = tf_call(t);
	return err ? err : (int)payload(t);
}

bool tf_dir_has(struct tf *t, size_t len, bool plus, const char *name)
{
	size_t off = 0;

	while (off < len) {
		struct fuse_dirent d;
		size_t base = off, reclen;

		if (plus)
			base += offsetof(struct fuse_direntplus, dirent);
		if (base + FUSE_NAME_OFFSET > len)
			return false;
		memcpy(&d, t->r.data + base, FUSE_NAME_OFFSET);
		if (base + FUSE_NAME_OFFSET + d.namelen > len)
			return false;
		if (d.namelen == strlen(name) &&
		    !memcmp(t->r.data + base + FUSE_NAME_OFFSET, name,
			    d.namelen))
			return true;
		reclen = plus ? FUSE_DIRENTPLUS_SIZE((struct fuse_direntplus *)
						      (t->r.data + off)) :
				FUSE_DIRENT_SIZE(&d);
		off += reclen;
	}
	return false;
}

int tf_setxattr(struct tf *t, uint64_t nodeid, const char *name,
		const void *val, uint32_t size, uint32_t flags)
{
	struct fuse_setxattr_in in = { .size = size, .flags = flags };

	tf_begin(&t->m, FUSE_SETXATTR, nodeid, 0);
	tf_put(&t->m, &in, FUSE_COMPAT_SETXATTR_IN_SIZE);
	tf_puts(&t->m, name);
	tf_put(&t->m, val, size);
	return tf_call(t);
}

static int xattr_get(struct tf *t, void *val, uint32_t size)
{
	int err = tf_call(t);

	if (err)
		return err;
	if (!size) {
		struct fuse_getxattr_out o;

		memcpy(&o, t->r.data, sizeof(o));
		return o.size;
	}
	memcpy(val, t->r.data, payload(t));
	return payload(t);
}

int tf_getxattr(struct tf *t, uint64_t nodeid, const char *name, void *val,
		uint32_t size)
{
	struct fuse_getxattr_in in = { .size = size };

	tf_begin(&t->m, FUSE_GETXATTR, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	tf_puts(&t->m, name);
	return xattr_get(t, val, size);
}

int tf_listxattr(struct tf *t, uint64_t nodeid, void *val, uint32_t size)
{
	struct fuse_getxattr_in in = { .size = size };

	tf_begin(&t->m, FUSE_LISTXATTR, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	return xattr_get(t, val, size);
}

int tf_removexattr(struct tf *t, uint64_t nodeid, const char *name)
{
	tf_begin(&t->m, FUSE_REMOVEXATTR, nodeid, 0);
	tf_puts(&t->m, name);
	return tf_call(t);
}

int tf_fallocate(struct tf *t, uint64_t nodeid, uint64_t fh, uint32_t mode,
		 uint64_t off, uint64_t len)
{
	struct fuse_fallocate_in in = {
		.fh = fh, .offset = off, .length = len, .mode = mode
	};

	tf_begin(&t->m, FUSE_FALLOCATE, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	return tf_call(t);
}

int tf_lseek(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t off,
	     uint32_t whence, uint64_t *res)
{
	struct fuse_lseek_in in = { .fh = fh, .offset = off, .whence = whence };
	struct fuse_lseek_out o;
	int err;

	tf_begin(&t->m, FUSE_LSEEK, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	err = tf_call(t);
	if (err)
		return err;
	memcpy(&o, t->r.data, sizeof(o));
	*res = o.offset;
	return 0;
}

int tf_copy_file_range(struct tf *t, uint64_t nin, uint64_t fhin,
		       uint64_t offin, uint64_t nout, uint64_t fhout,
		       uint64_t offout, uint64_t len)
{
	struct fuse_copy_file_range_in in = {
		.fh_in = fhin, .off_in = offin, .nodeid_out = nout,
		.fh_out = fhout, .off_out = offout, .len = len,
	};
	struct fuse_write_out o;
	int err;

	tf_begin(&t->m, FUSE_COPY_FILE_RANGE, nin, 0);
	tf_put(&t->m, &in, sizeof(in));
	err = tf_call(t);
	if (err)
		return err;
	memcpy(&o, t->r.data, sizeof(o));
	return o.size;
}

int tf_getlk(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t owner,
	     struct fuse_file_lock *lk)
{
	struct fuse_lk_in in = { .fh = fh, .owner = owner, .lk = *lk };
	int err;

	tf_begin(&t->m, FUSE_GETLK, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	err = tf_call(t);
	if (!err)
		memcpy(lk, t->r.data, sizeof(*lk));
	return err;
}

int tf_setlk(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t owner,
	     const struct fuse_file_lock *lk, bool sleep, bool flock)
{
	struct fuse_lk_in in = {
		.fh = fh, .owner = owner, .lk = *lk,
		.lk_flags = flock ? FUSE_LK_FLOCK : 0,
	};

	tf_begin(&t->m, sleep ? FUSE_SETLKW : FUSE_SETLK, nodeid, 0);
	tf_put(&t->m, &in, sizeof(in));
	return tf_call(t);
}
