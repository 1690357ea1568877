// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcli_mmap.c - DAX: reads and writes through the window, mmap and its mappings
 * that keep a file open past close().
 */
#define _GNU_SOURCE	/* SEEK_DATA, F_OFD_*, RENAME_* */
#include "gcli_int.h"

/* Truncation of a mapped inode: whole ranges past the size go. */
void gcli_dax_truncate(struct vqf_gcli *c, u64 nodeid, u64 size)
{
	struct ginode *i;
	bool mapped;

	if (!c->dax_on)
		return;
	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	mapped = i && i->gdi.ready;
	pthread_mutex_unlock(&c->lock);
	/* A mapped inode is pinned: i stays. */
	if (mapped)
		gdax_truncate(&c->dax, &i->gdi, size);
}

/* @nodeid's DAX state, set up on first use (the inode is then pinned). */
static struct gdax_inode *dax_inode(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
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
	i = *gcli_ifind(c, f->nodeid);
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
	ret = gcli_getattr_node(c, f->nodeid, f->fh, &a);
	if (!ret)
		*size = a.size;
	return ret;
}

/*
 * The bytes of the range holding @off that dax=auto's policy sent
 * through FUSE: READ/WRITE, direct (the window and a page cache would be
 * two guest copies of one host page; the host's page cache, which the
 * window maps, keeps both paths coherent).
 */
static ssize_t dax_fuse_io(struct vqf_gcli *c, struct gfile *f, u8 *buf,
			   size_t n, off_t off, bool write)
{
	u64 rs = vqf_dax_range_size(&c->dax.w);
	u64 end = ((u64)off & ~(rs - 1)) + rs;

	if (n > end - (u64)off)
		n = (size_t)(end - (u64)off);
	return write ? gcli_fuse_pwrite(c, f, buf, n, off) :
		       gcli_fuse_pread(c, f, buf, n, off);
}

/* The copy itself, once the size allows it. */
ssize_t gcli_dax_copy(struct vqf_gcli *c, struct gfile *f,
		      struct gdax_inode *gi, void *buf, size_t n, off_t off,
		      bool write, u64 size)
{
	size_t done = 0, win = 0;
	bool fuse, fused = false;
	ssize_t r = 0;

	if (!gi)
		return -ESTALE;
	while (done < n) {
		r = gdax_copy(&c->dax, gi, f->fh, (u8 *)buf + done, n - done,
			      (u64)off + done, write, size, &fuse);
		if (r < 0)
			break;
		done += (size_t)r;
		win += (size_t)r;
		if (!fuse)
			break;
		fused = true;
		r = dax_fuse_io(c, f, (u8 *)buf + done, n - done,
				off + (off_t)done, write);
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	pthread_mutex_lock(&c->slock);
	if (write) {
		c->st.bytes_written += win;
		c->st.dax_writes += win > 0;
		c->st.dax_fuse_writes += fused;
	} else {
		c->st.bytes_read += win;
		c->st.dax_reads += win > 0;
		c->st.dax_fuse_reads += fused;
	}
	pthread_mutex_unlock(&c->slock);
	return done ? (ssize_t)done : r;
}

/* read() through the window, bounded by the size (past EOF is SIGBUS). */
ssize_t gcli_dax_pread(struct vqf_gcli *c, struct gfile *f, void *buf,
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
	return gcli_dax_copy(c, f, gi, buf, n, off, false, size);
}

/*
 * fuse_dax_write_iter(): a write that grows the file goes to the server
 * as WRITE (fuse_dax_direct_write): a store past EOF in a mapping is
 * SIGBUS, and one WRITE costs less than SETATTR size plus the copy (the
 * host allocates in its write path rather than in page faults).  Other
 * writes go through the window.  A size we cannot learn: WRITE too.
 */
bool gcli_dax_grows(struct vqf_gcli *c, struct gfile *f, size_t n,
		    off_t off, struct gdax_inode **gi, u64 *size)
{
	return dax_size(c, f, size, gi) || (u64)off + n > *size;
}

/* fuse_write_update_attr(): the size a WRITE that grew the file made. */
void gcli_dax_size_grew(struct vqf_gcli *c, u64 nodeid, u64 end)
{
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	if (i && i->ca.known && i->ca.attr.size < end)
		i->ca.attr.size = end;
	pthread_mutex_unlock(&c->lock);
}

/* gdax's i_size for a fault: the size dax_size() knows. */
int gcli_dax_isize(void *ctx, struct gdax_inode *gi, u64 fh, u64 *size)
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
bool gcli_dax_file_put(struct vqf_gcli *c, struct gmfile *mf)
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
	if (gcli_dax_file_put(c, mf))
		return;
	gcli_release(c, &mf->f);
	gcli_iput(c, mf->f.nodeid);
	free(mf);
}

int vqf_gcli_mmap(struct vqf_gcli *c, int fd, off_t off, size_t len,
		  int prot, struct vqf_gcli_map **out)
{
	struct gfile *f = gcli_fget(c, fd);
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
	gcli_call_init(&cl, FUSE_FSYNC, m->mf->f.nodeid);
	vqf_req_add_in(&cl.req, &fi, sizeof(fi));
	return gcli_send(c, &cl);
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

/* Mappings the caller left: unmapped one by one (each may gcli_iput). */
void gcli_dax_unmap_all(struct vqf_gcli *c)
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
