// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcli_pages.c - the page cache (cache=auto/always) and writeback: cached
 * reads, dirty pages and their WRITEs.
 */
#define _GNU_SOURCE	/* SEEK_DATA, F_OFD_*, RENAME_* */
#include "gcli_int.h"

#define GCLI_WB_MAX_DIRTY	1024	/* pages per inode before writeback */

/* Truncation: pages past @size go, the last one is cut. */
void gcli_pages_truncate(struct vqf_gcli *c, u64 nodeid, u64 size)
{
	u32 in = (u32)(size % GC_PAGE_SIZE);
	struct gc_page *p;
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	if (i) {
		gc_pages_drop(&i->pc, size + (in ? GC_PAGE_SIZE - in : 0),
			      GC_NEVER);
		p = in ? gc_page_find(&i->pc, size / GC_PAGE_SIZE) : NULL;
		if (p && p->len > in) {
			p->len = in;
			if (p->dirty_to > in)
				p->dirty_to = in;
			if (p->dirty_to && p->dirty_from >= p->dirty_to)
				gc_page_clean(&i->pc, p);
		}
		if (i->wb_size_set)
			i->wb_size = size;
	}
	pthread_mutex_unlock(&c->lock);
}

/* Drops the pages of [@off, @off + @len) (fallocate, copy_file_range). */
void gcli_pages_drop(struct vqf_gcli *c, u64 nodeid, u64 off, u64 len)
{
	struct ginode *i;
	u64 n = 0;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	if (i)
		n = gc_pages_drop(&i->pc, off, len ? off + len : GC_NEVER);
	pthread_mutex_unlock(&c->lock);
	if (n)
		STAT_ADD(c, pages_invalidated, n);
}

/* A write that went through to the server: cached pages follow it. */
void gcli_pages_written(struct vqf_gcli *c, u64 nodeid, const u8 *buf,
			u64 off, u64 n)
{
	struct ginode *i;
	u64 done = 0;

	if (!gcli_caching(c))
		return;
	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	if (i)
		i->own_write = true;
	while (i && done < n) {
		u64 pos = off + done;
		u32 in = (u32)(pos % GC_PAGE_SIZE);
		u32 take = GC_PAGE_SIZE - in < n - done ?
			   GC_PAGE_SIZE - in : (u32)(n - done);
		struct gc_page *p = gc_page_find(&i->pc, pos / GC_PAGE_SIZE);

		/* A whole page written is a page we know (Linux writes
		 * through its page cache).
		 */
		if (!p && take == GC_PAGE_SIZE) {
			p = gc_page_get(&i->pc, pos / GC_PAGE_SIZE);
			if (p)
				p->len = 0;
		}
		if (p && p->len >= in) {
			memcpy(p->data + in, buf + done, take);
			if (in + take > p->len)
				p->len = in + take;
		} else if (p) {
			/* A gap before the new bytes: let a read fetch it. */
			gc_pages_drop(&i->pc, pos, pos + 1);
		}
		done += take;
	}
	pthread_mutex_unlock(&c->lock);
}

/*
 * One READ of pages [@idx, @idx + @np) into the cache; dirty pages keep
 * their bytes.  Returns the bytes read (short at end of file) or -errno.
 */
static ssize_t fill_pages(struct vqf_gcli *c, struct gfile *f, u64 idx,
			  u32 np)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	u32 size = np * GC_PAGE_SIZE, got, k;
	struct fuse_read_in ri = { .fh = f->fh, .offset = idx * GC_PAGE_SIZE,
				   .size = size, .flags = (u32)f->flags };
	struct vqf_page_desc pd = { .offset = 0, .length = size };
	struct vqf_gdrv_call cl;
	struct ginode *i;
	u8 *buf;
	int ret;

	buf = vqf_gram_alloc(ram, size, false);
	if (!buf)
		return -ENOMEM;
	pd.page = buf;
	memset(&cl, 0, sizeof(cl));
	vqf_req_init_read(&cl.req, FUSE_READ, 0, f->nodeid, &ri, &pd, 1,
			  false);
	ret = gcli_send(c, &cl);
	if (ret) {
		vqf_gram_release(ram, buf);
		return ret;
	}
	got = cl.req.out_args[0].size;
	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, f->nodeid);
	for (k = 0; i && k * GC_PAGE_SIZE < got; k++) {
		u32 len = got - k * GC_PAGE_SIZE;
		struct gc_page *p = gc_page_get(&i->pc, idx + k);

		if (!p)
			break;
		if (p->dirty_to)
			continue;
		if (len > GC_PAGE_SIZE)
			len = GC_PAGE_SIZE;
		memcpy(p->data, buf + k * GC_PAGE_SIZE, len);
		p->len = len;
	}
	pthread_mutex_unlock(&c->lock);
	vqf_gram_release(ram, buf);
	STAT_ADD(c, pages_read, k);
	STAT_ADD(c, bytes_copied, got);
	return got;
}

/*
 * Copies what the cache holds of page @idx from byte @in: returns the
 * bytes copied, 0 on a miss, -1 for a page that ends at @in (end of file
 * as far as that page knows).
 */
static ssize_t page_copy(struct vqf_gcli *c, u64 nodeid, u64 idx, u32 in,
			 u8 *dst, u32 want)
{
	struct gc_page *p;
	struct ginode *i;
	ssize_t r = 0;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	p = i ? gc_page_find(&i->pc, idx) : NULL;
	if (p && p->len > in) {
		r = p->len - in < want ? p->len - in : want;
		memcpy(dst, p->data + in, (size_t)r);
	} else if (p && p->len == in && p->len < GC_PAGE_SIZE) {
		r = -1;
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/*
 * A hole the server has no bytes for, below the size the client knows
 * (a writeback extension not written back yet): zeros in the cache.
 */
static void page_zero_to(struct vqf_gcli *c, u64 nodeid, u64 idx, u32 len)
{
	struct gc_page *p;
	struct ginode *i;

	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	p = i ? gc_page_get(&i->pc, idx) : NULL;
	if (p && p->len < len) {
		memset(p->data + p->len, 0, len - p->len);
		p->len = len;
	}
	pthread_mutex_unlock(&c->lock);
}

/* read() through the page cache, bounded by the size the client knows. */
ssize_t gcli_cached_pread(struct vqf_gcli *c, struct gfile *f, u8 *buf,
			  size_t n, off_t off)
{
	u32 max_np = c->rchunk / GC_PAGE_SIZE ? c->rchunk / GC_PAGE_SIZE : 1;
	struct fuse_attr a;
	size_t done = 0;
	bool filled = false;
	int ret;

	ret = gcli_node_attr(c, f->nodeid, f->fh, &a);
	if (ret)
		return ret;
	if ((u64)off >= a.size)
		return 0;
	if (n > a.size - (u64)off)
		n = (size_t)(a.size - (u64)off);
	while (done < n) {
		u64 pos = (u64)off + done, idx = pos / GC_PAGE_SIZE;
		u32 in = (u32)(pos % GC_PAGE_SIZE);
		u32 want = GC_PAGE_SIZE - in < n - done ?
			   GC_PAGE_SIZE - in : (u32)(n - done);
		ssize_t r = page_copy(c, f->nodeid, idx, in, buf + done, want);
		u32 np = 1;

		if (r > 0) {
			STAT_ADD(c, page_hits, 1);
			done += (size_t)r;
			filled = false;
			continue;
		}
		if (filled) {
			/* The server has nothing there but we know a larger
			 * size: a hole of ours.
			 */
			u64 end = a.size - idx * GC_PAGE_SIZE;

			page_zero_to(c, f->nodeid, idx, end < GC_PAGE_SIZE ?
				     (u32)end : GC_PAGE_SIZE);
			filled = false;
			if (page_copy(c, f->nodeid, idx, in, buf + done,
				      want) <= 0)
				break;
			continue;
		}
		/* Read ahead what this call still wants, up to a chunk. */
		while (np < max_np &&
		       (idx + np) * GC_PAGE_SIZE < (u64)off + n)
			np++;
		r = fill_pages(c, f, idx, np);
		if (r < 0)
			return done ? (ssize_t)done : r;
		filled = true;
	}
	STAT_ADD(c, bytes_read, done);
	return (ssize_t)done;
}

struct wb_run {
	u64 off;
	u32 len;
	u8 *data;	/* guest RAM */
};

/*
 * Writes the inode's dirty pages back through @fh: contiguous dirty bytes
 * go in one WRITE of up to max_write.  The bytes are copied out under the
 * lock and the pages marked clean before sending, so a write racing the
 * flush dirties them again.  Returns 0 or the first error (the data of a
 * failed WRITE is lost, as after a failed writeback; close/fsync say so).
 */
int gcli_wb_flush(struct vqf_gcli *c, u64 nodeid, u64 fh)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	struct wb_run *runs = NULL;
	struct gc_page **v;
	struct ginode *i;
	u64 n = 0, k, nruns = 0, pages = 0;
	int ret = 0, err;

	if (!gcli_writeback(c))
		return 0;
	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	v = i ? gc_pages_dirty(&i->pc, &n, &err) : NULL;
	if (n)
		runs = calloc(n, sizeof(*runs));
	for (k = 0; runs && k < n; ) {
		u64 first = k, bytes = v[k]->dirty_to - v[k]->dirty_from;
		struct wb_run *r = &runs[nruns];
		u8 *d;

		while (k + 1 < n && v[k]->dirty_to == GC_PAGE_SIZE &&
		       v[k + 1]->index == v[k]->index + 1 &&
		       v[k + 1]->dirty_from == 0 &&
		       bytes + v[k + 1]->dirty_to <= c->wchunk) {
			k++;
			bytes += v[k]->dirty_to;
		}
		r->off = v[first]->index * GC_PAGE_SIZE + v[first]->dirty_from;
		r->len = (u32)bytes;
		r->data = vqf_gram_alloc(ram, r->len, false);
		if (!r->data) {
			ret = -ENOMEM;
			break;
		}
		for (d = r->data; first <= k; first++) {
			struct gc_page *p = v[first];
			u32 len = p->dirty_to - p->dirty_from;

			memcpy(d, p->data + p->dirty_from, len);
			d += len;
			gc_page_clean(&i->pc, p);
			pages++;
		}
		nruns++;
		k++;
	}
	if (i && !i->pc.dirty)
		i->wb_size_set = false;
	pthread_mutex_unlock(&c->lock);
	free(v);
	if (n && !runs)
		ret = -ENOMEM;
	for (k = 0; k < nruns; k++) {
		struct wb_run *r = &runs[k];
		struct fuse_write_in wi = { .fh = fh, .offset = r->off,
					    .size = r->len };
		struct vqf_page_desc pd = { .page = r->data, .offset = 0,
					    .length = r->len };
		struct fuse_write_out wo = { 0 };
		struct vqf_gdrv_call cl;
		int e;

		memset(&cl, 0, sizeof(cl));
		vqf_req_init_write(&cl.req, 0, nodeid, &wi, &pd, 1, &wo);
		e = gcli_send(c, &cl);
		if (!e && wo.size != r->len)
			e = -EIO;
		if (e && !ret)
			ret = e;
		STAT_ADD(c, wb_writes, 1);
		vqf_gram_release(ram, r->data);
	}
	free(runs);
	STAT_ADD(c, wb_pages, pages);
	if (nruns)
		gcli_attr_inval(c, nodeid);
	return ret;
}

/* Writes back @nodeid's dirty pages through any file open for writing. */
int gcli_wb_flush_any(struct vqf_gcli *c, u64 nodeid)
{
	struct ginode *i;
	unsigned int k;
	bool dirty;
	u64 fh = 0;

	if (!gcli_writeback(c))
		return 0;
	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, nodeid);
	dirty = i && i->pc.dirty;
	for (k = 0; dirty && k < c->cfg.max_files; k++) {
		struct gfile *f = &c->files[k];

		if (f->used && !f->dir && f->nodeid == nodeid &&
		    (f->flags & O_ACCMODE) != O_RDONLY) {
			fh = f->fh;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	/* Dirty pages without a writable file cannot be (close flushes). */
	return dirty && fh ? gcli_wb_flush(c, nodeid, fh) : 0;
}

/* The size the client knows for @f: its own while it has dirty pages. */
static int known_size(struct vqf_gcli *c, struct gfile *f, u64 *size)
{
	struct fuse_attr a;
	int ret = gcli_node_attr(c, f->nodeid, f->fh, &a);

	if (!ret)
		*size = a.size;
	return ret;
}

/*
 * write() with writeback: into the page cache, dirty, reaching the server
 * at close, fsync or when an inode has too many dirty pages.  A partial
 * page the server has bytes for is read first (read-modify-write).
 */
ssize_t gcli_wb_write(struct vqf_gcli *c, struct gfile *f, const void *buf,
		      size_t n, off_t off)
{
	const u8 *src = buf;
	struct ginode *i;
	size_t done = 0;
	u64 size, dirty;
	int ret;

	ret = known_size(c, f, &size);
	if (ret)
		return ret;
	while (done < n) {
		u64 pos = (u64)off + done, idx = pos / GC_PAGE_SIZE;
		u32 in = (u32)(pos % GC_PAGE_SIZE);
		u32 take = GC_PAGE_SIZE - in < n - done ?
			   GC_PAGE_SIZE - in : (u32)(n - done);
		struct gc_page *p;
		bool partial = in || take < GC_PAGE_SIZE;

		pthread_mutex_lock(&c->lock);
		i = *gcli_ifind(c, f->nodeid);
		p = i ? gc_page_find(&i->pc, idx) : NULL;
		pthread_mutex_unlock(&c->lock);
		if (!p && partial && idx * GC_PAGE_SIZE < size) {
			ssize_t r = fill_pages(c, f, idx, 1);

			if (r < 0)
				return done ? (ssize_t)done : r;
		}
		pthread_mutex_lock(&c->lock);
		i = *gcli_ifind(c, f->nodeid);
		p = i ? gc_page_get(&i->pc, idx) : NULL;
		if (!p) {
			pthread_mutex_unlock(&c->lock);
			return done ? (ssize_t)done : -ENOMEM;
		}
		if (p->len < in)
			memset(p->data + p->len, 0, in - p->len);
		memcpy(p->data + in, src + done, take);
		if (in + take > p->len)
			p->len = in + take;
		gc_page_mark_dirty(&i->pc, p, in, in + take);
		if (!i->wb_size_set) {
			i->wb_size = size;
			i->wb_size_set = true;
		}
		if (pos + take > i->wb_size)
			i->wb_size = pos + take;
		size = i->wb_size;
		pthread_mutex_unlock(&c->lock);
		STAT_ADD(c, bytes_copied, take);
		done += take;
	}
	pthread_mutex_lock(&c->lock);
	i = *gcli_ifind(c, f->nodeid);
	dirty = i ? i->pc.dirty : 0;
	pthread_mutex_unlock(&c->lock);
	gcli_attr_inval(c, f->nodeid);	/* mtime */
	STAT_ADD(c, bytes_written, done);
	if (dirty > GCLI_WB_MAX_DIRTY) {
		ret = gcli_wb_flush(c, f->nodeid, f->fh);
		if (ret)
			return ret;
	}
	return (ssize_t)done;
}
