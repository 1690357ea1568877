// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fsdev_dax.c - the device's DAX cache window: SETUPMAPPING and
 * REMOVEMAPPING served by the device itself, and its resets.
 *
 * See vqf_fsdev.h; threads, locks and shared state: fsdev_int.h.
 */
#include "fsdev_int.h"
#include "vqf_dirent.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* ---- DAX window ----------------------------------------------------- */

/*
 * Enough slots for any guest using 2 MiB ranges on a window of up to
 * 128 GiB, and for page-sized mappings on small windows; past that a
 * new mapping gets -ENOSPC from lib's check.
 */
#define DAX_MAX_SLOTS	65536u

/* Makes [off, off + len) of the window inaccessible again. */
static int dax_blank(struct vqf_fsdev *d, u64 off, u64 len)
{
	void *p;

	if (d->dax_remote)
		return d->cfg.dax_ops->unmap(d->cfg.dax_ctx, off, len, true);
	p = mmap(d->dax_base + off, len, PROT_NONE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	return p == MAP_FAILED ? -errno : 0;
}

/* Puts @fd's [foff, +len) at window offset @off. */
static int dax_place(struct vqf_fsdev *d, int fd, u64 foff, u64 off,
		     u64 len, bool writable)
{
	void *p;

	if (d->dax_remote)
		return d->cfg.dax_ops->map(d->cfg.dax_ctx, fd, foff, off, len,
					   writable);
	p = mmap(d->dax_base + off, len,
		 PROT_READ | (writable ? PROT_WRITE : 0),
		 MAP_SHARED | MAP_FIXED, fd, (off_t)foff);
	return p == MAP_FAILED ? -errno : 0;
}

int fsdev_dax_init(struct vqf_fsdev *d, u64 size, bool remote)
{
	u64 align = (u64)sysconf(_SC_PAGESIZE);
	u64 n = vqf_dax_dev_max_mappings(size, align);
	void *p;

	if (n > DAX_MAX_SLOTS)
		n = DAX_MAX_SLOTS;
	d->dax_slots = calloc(n, sizeof(*d->dax_slots));
	if (!d->dax_slots)
		return -ENOMEM;
	if (vqf_dax_dev_map_init(&d->dax_map, size, align, d->dax_slots,
				 (u32)n)) {
		free(d->dax_slots);
		d->dax_slots = NULL;
		return -EINVAL;
	}
	/* Address space only: no memory, no swap, nothing accessible. */
	p = remote ? NULL : mmap(NULL, size, PROT_NONE, MAP_PRIVATE |
				 MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		free(d->dax_slots);
		d->dax_slots = NULL;
		return -ENOMEM;
	}
	d->dax_base = p;
	d->dax_on = true;
	d->dax_remote = remote;
	d->dax_off = remote;
	pthread_mutex_init(&d->dax_lock, NULL);
	return 0;
}

/*
 * A remote window is emptied mapping by mapping (a front-end unmaps what
 * it mapped, not arbitrary spans), without waiting: a reset comes from
 * the front-end's own stop, which may not serve the back-end's channel
 * until it has its answers.
 */
static void dax_unmap_remote(struct vqf_fsdev *d)
{
	struct vqf_itree_node *n;

	for (n = vqf_itree_first(&d->dax_map.tree); n; n = vqf_itree_next(n))
		d->cfg.dax_ops->unmap(d->cfg.dax_ctx, n->start,
				      n->last - n->start + 1, false);
}

static const struct vqf_dax_dev_mapping *
to_mapping(const struct vqf_itree_node *n)
{
	return (const struct vqf_dax_dev_mapping *)
	       ((const u8 *)n - offsetof(struct vqf_dax_dev_mapping, itn));
}

/* The window's writable mappings of a file, for the hub (dax_lock held). */
static void dax_writable(struct vqf_fsdev *d, u64 nodeid, u64 flags,
			 int delta)
{
	if (d->cfg.dax_writable && (flags & FUSE_SETUPMAPPING_FLAG_WRITE))
		d->cfg.dax_writable(d->cfg.dax_writable_ctx, nodeid, delta);
}

/* Every mapping about to go: their writable ones given back. */
static void dax_writable_all(struct vqf_fsdev *d)
{
	struct vqf_itree_node *n;

	if (!d->cfg.dax_writable)
		return;
	for (n = vqf_itree_first(&d->dax_map.tree); n; n = vqf_itree_next(n))
		dax_writable(d, to_mapping(n)->nodeid, to_mapping(n)->flags,
			     -1);
}

/* The mapping that exactly covers [@moffset, +@len), or NULL. */
static const struct vqf_dax_dev_mapping *
dax_mapping_at(struct vqf_fsdev *d, u64 moffset, u64 len)
{
	struct vqf_itree_node *n;

	n = vqf_itree_iter_first(&d->dax_map.tree, moffset, moffset);
	return n && n->start == moffset && n->last == moffset + len - 1 ?
	       to_mapping(n) : NULL;
}

/* Drops every mapping: the window is one PROT_NONE reservation again. */
void fsdev_dax_reset(struct vqf_fsdev *d)
{
	if (!d->dax_on)
		return;
	pthread_mutex_lock(&d->dax_lock);
	dax_writable_all(d);
	if (d->dax_remote) {
		dax_unmap_remote(d);
		vqf_dax_dev_reset(&d->dax_map);
		pthread_mutex_unlock(&d->dax_lock);
		STAT_ADD(d, dax_resets, 1);
		return;
	}
	vqf_dax_dev_reset(&d->dax_map);
	/* Cannot fail short of ENOMEM for the VMA: then unmap and re-reserve
	 * would fail the same way; the map is empty either way, and the
	 * guest never gets a range the device does not think is free.
	 */
	dax_blank(d, 0, d->dax_map.window_size);
	pthread_mutex_unlock(&d->dax_lock);
	STAT_ADD(d, dax_resets, 1);
}

void fsdev_dax_fini(struct vqf_fsdev *d)
{
	if (!d->dax_on)
		return;
	d->dax_on = false;
	if (d->dax_base)
		munmap(d->dax_base, d->dax_map.window_size);
	d->dax_base = NULL;
	free(d->dax_slots);
	d->dax_slots = NULL;
	pthread_mutex_destroy(&d->dax_lock);
}

int vqf_fsdev_set_dax(struct vqf_fsdev *d, bool on)
{
	if (!d->dax_on)
		return -ENOENT;
	__atomic_store_n(&d->dax_off, !on, __ATOMIC_RELEASE);
	return 0;
}

int vqf_fsdev_shm(const struct vqf_fsdev *d, u8 id, void **base, u64 *len)
{
	if (id == VQF_VIRTIO_FS_SHMCAP_ID_VERSION && d->cfg.ver_table) {
		/* Read-only for guests: the device's writable view is the
		 * hub's own mapping.
		 */
		*base = (void *)d->cfg.ver_table;
		*len = d->cfg.ver_table_size;
		return 0;
	}
	if (id != VQF_VIRTIO_FS_SHMCAP_ID_CACHE || !d->dax_base)
		return -ENOENT;	/* a remote window is the front-end's */
	*base = d->dax_base;
	*len = d->dax_map.window_size;
	return 0;
}

/* What lib's check needs to know about the file behind @fd. */
static int dax_limits(int fd, struct vqf_dax_dev_limits *lim)
{
	struct stat st;
	int fl;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADF;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	lim->file_size = (u64)st.st_size;
	lim->max_bytes = (u64)INT64_MAX;	/* off_t's limit */
	/* MAP_SHARED + PROT_WRITE needs a descriptor open for both. */
	lim->writable = (fl & O_ACCMODE) == O_RDWR;
	return 0;
}

/* SETUPMAPPING: check, mmap over the span, commit (dax_lock held). */
static int dax_setup_locked(struct vqf_fsdev *d, const struct fsreq *r,
			    int fd, const struct vqf_dax_dev_limits *lim)
{
	const struct vqf_dax_dev_mapping *old;
	struct fuse_setupmapping_in in;
	bool writable;
	int ret;

	ret = vqf_dax_dev_setup_check(&d->dax_map, &r->dreq.arg,
				      r->dreq.arg_size, lim, &d->dax_st, &in,
				      &old);
	if (ret) {
		STAT_ADD(d, dax_refused, 1);
		return ret;
	}
	writable = in.flags & FUSE_SETUPMAPPING_FLAG_WRITE;
	/* A front-end maps only over nothing: the identical span goes
	 * first (an upgrade).
	 */
	ret = old && d->dax_remote ? dax_blank(d, in.moffset, in.len) : 0;
	if (!ret)
		ret = dax_place(d, fd, in.foffset, in.moffset, in.len,
				writable);
	if (ret) {
		STAT_ADD(d, dax_mmap_errors, 1);
		/* A failed MAP_FIXED may have torn down what was there: the
		 * span is blanked and, if it replaced a mapping, that one is
		 * forgotten too - the guest sees an error and sets up again.
		 * A front-end that refused a map left nothing there.
		 */
		if (!d->dax_remote)
			dax_blank(d, in.moffset, in.len);
		if (old) {
			struct fuse_removemapping_one one = {
				.moffset = in.moffset, .len = in.len,
			};

			dax_writable(d, old->nodeid, old->flags, -1);
			vqf_dax_dev_remove_commit(&d->dax_map, &one, 1,
						  &d->dax_st);
		}
		return ret;
	}
	/* Before the commit reuses the replaced mapping's slot. */
	if (old)
		dax_writable(d, old->nodeid, old->flags, -1);
	if (!vqf_dax_dev_setup_commit(&d->dax_map, r->dreq.in.nodeid, &in,
				      &d->dax_st)) {
		/* Cannot happen under dax_lock; never leave it mapped. */
		dax_blank(d, in.moffset, in.len);
		STAT_ADD(d, dax_mmap_errors, 1);
		return -EIO;
	}
	dax_writable(d, r->dreq.in.nodeid, in.flags, 1);
	STAT_ADD(d, dax_setups, 1);
	return 0;
}

static int dax_setup(struct vqf_fsdev *d, const struct fsreq *r)
{
	const struct fuse_setupmapping_in *a = &r->dreq.arg.setupmapping;
	struct vqf_dax_dev_limits lim;
	int fd, ret;

	u64 fh = r->dreq.arg_size >= sizeof(*a) ? a->fh : VQF_FSDEV_FH_NONE;
	bool by_node = fh == VQF_FSDEV_FH_NONE && d->cfg.dax_ops->node_fd &&
		       r->dreq.arg_size == sizeof(*a);

	/* The fh is only looked up here; lib's check re-reads the request
	 * from the parser's copy, never from guest memory.  Without a
	 * handle the mapping's own WRITE flag says how to open the file,
	 * as the guest kernel checked its open for it (virtiofsd does the
	 * same).
	 */
	if (by_node)
		fd = d->cfg.dax_ops->node_fd(d->cfg.dax_ctx, r->dreq.in.nodeid,
					     a->flags &
					     FUSE_SETUPMAPPING_FLAG_WRITE);
	else
		fd = d->cfg.dax_ops->file_fd(d->cfg.dax_ctx,
					     r->dreq.in.nodeid, fh);
	if (fd < 0) {
		STAT_ADD(d, dax_bad_fh, 1);
		return fd;
	}
	ret = dax_limits(fd, &lim);
	if (ret) {
		close(fd);
		STAT_ADD(d, dax_bad_fh, 1);
		return ret;
	}
	pthread_mutex_lock(&d->dax_lock);
	ret = dax_setup_locked(d, r, fd, &lim);
	pthread_mutex_unlock(&d->dax_lock);
	if (!ret && by_node)
		STAT_ADD(d, dax_by_nodeid, 1);
	/* The mapping keeps its own reference to the file. */
	close(fd);
	return ret;
}

static int dax_remove(struct vqf_fsdev *d, const struct fsreq *r)
{
	const size_t hdr = sizeof(struct fuse_removemapping_in);
	struct fuse_removemapping_one ents[VQF_REMOVEMAPPING_MAX];
	u8 buf[sizeof(struct fuse_removemapping_in) + sizeof(ents)];
	u32 dlen = r->dreq.data.len, n, i;
	size_t size = hdr + dlen;
	int ret;

	/* One contiguous copy for lib's check.  The parser has already
	 * bounded the entries; anything else is a bad size (size 0).
	 */
	memcpy(buf, &r->dreq.arg.removemapping, hdr);
	if (r->dreq.arg_size != hdr || dlen > sizeof(ents) ||
	    (dlen && vqf_dev_view_copy(&r->dreq.data, 0, buf + hdr, dlen)))
		size = 0;
	pthread_mutex_lock(&d->dax_lock);
	ret = vqf_dax_dev_remove_check(&d->dax_map, buf, size, &d->dax_st,
				       ents, &n);
	if (ret) {
		pthread_mutex_unlock(&d->dax_lock);
		STAT_ADD(d, dax_refused, 1);
		return ret;
	}
	for (i = 0; i < n; i++) {
		const struct vqf_dax_dev_mapping *m =
			dax_mapping_at(d, ents[i].moffset, ents[i].len);

		if (m)
			dax_writable(d, m->nodeid, m->flags, -1);
		if (dax_blank(d, ents[i].moffset, ents[i].len))
			ret = -EIO;
	}
	/* Committed even if a blank failed: the host side is gone either
	 * way (a failed MAP_FIXED has unmapped), so the range is free.
	 */
	vqf_dax_dev_remove_commit(&d->dax_map, ents, n, &d->dax_st);
	pthread_mutex_unlock(&d->dax_lock);
	if (ret)
		STAT_ADD(d, dax_mmap_errors, 1);
	else
		STAT_ADD(d, dax_removes, 1);
	return ret;
}


/*
 * Maps the file bytes [@lo, @hi) (page aligned) of @m again (dax_lock
 * held).  @blank: unmap first (past the file's end, where a store in
 * between is lost anyway); else one map over the old pages, which the
 * front-end replaces in place (MAP_FIXED): a store in between lands in
 * the file's page either way.  Returns 1 when mapped, 0 when @m has
 * nothing there, or a negative errno.
 */
static int dax_remap(struct vqf_fsdev *d, const struct vqf_dax_dev_mapping *m,
		     u64 lo, u64 hi, bool blank)
{
	u64 len = m->itn.last - m->itn.start + 1;
	u64 a = lo > m->foffset ? lo - m->foffset : 0;
	u64 b = hi > m->foffset && hi - m->foffset < len ?
		hi - m->foffset : len;
	bool writable = m->flags & FUSE_SETUPMAPPING_FLAG_WRITE;
	int fd, ret;

	if (hi <= m->foffset || a >= b)
		return 0;
	fd = d->cfg.dax_ops->node_fd(d->cfg.dax_ctx, m->nodeid, writable);
	if (fd < 0)
		return fd;
	ret = blank && d->dax_remote ? dax_blank(d, m->itn.start + a, b - a) :
	      0;
	if (!ret)
		ret = dax_place(d, fd, m->foffset + a, m->itn.start + a, b - a,
				writable);
	close(fd);
	if (ret && !d->dax_remote)
		dax_blank(d, m->itn.start + a, b - a);
	return ret ? ret : 1;
}

int vqf_fsdev_dax_resized(struct vqf_fsdev *d, u64 nodeid, u64 old_size,
			  u64 new_size)
{
	u64 page = d->dax_map.align, lo = 0, hi = ~0ull;
	struct vqf_itree_node *n;
	bool shrink = new_size < old_size;
	int ret, done = 0, err = 0;

	if (!d->dax_on || !d->cfg.dax_ops || !d->cfg.dax_ops->node_fd ||
	    new_size == old_size)
		return 0;
	if (!shrink) {
		/* The pages the file grew over: they were past its end.  A
		 * growth inside one page (an append) has none: no walk.
		 */
		lo = (old_size + page - 1) & ~(page - 1);
		hi = new_size + page - 1 < new_size ? ~0ull :
		     (new_size + page - 1) & ~(page - 1);
		if (lo >= hi)
			return 0;
	}
	pthread_mutex_lock(&d->dax_lock);
	for (n = vqf_itree_first(&d->dax_map.tree); n; n = vqf_itree_next(n))
		if (to_mapping(n)->nodeid == nodeid)
			break;
	if (!n) {
		pthread_mutex_unlock(&d->dax_lock);
		return 0;
	}
	if (shrink) {
		/* Past the end as it is now, read after the change. */
		struct stat st;
		int fd = d->cfg.dax_ops->node_fd(d->cfg.dax_ctx, nodeid, false);

		if (fd < 0 || fstat(fd, &st)) {
			ret = fd < 0 ? fd : -errno;
			if (fd >= 0)
				close(fd);
			pthread_mutex_unlock(&d->dax_lock);
			STAT_ADD(d, dax_eof_errors, 1);
			return ret;
		}
		close(fd);
		lo = ((u64)st.st_size + page - 1) & ~(page - 1);
	}
	for (; n; n = vqf_itree_next(n)) {
		const struct vqf_dax_dev_mapping *m = to_mapping(n);

		if (m->nodeid != nodeid)
			continue;
		ret = dax_remap(d, m, lo, hi, shrink);
		if (ret < 0) {
			err = ret;
			STAT_ADD(d, dax_eof_errors, 1);
		} else if (ret) {
			done++;
			STAT_ADD(d, dax_eof_remaps, 1);
		}
	}
	pthread_mutex_unlock(&d->dax_lock);
	return err ? err : done;
}

/*
 * SETUPMAPPING and REMOVEMAPPING on a device with a window: served here,
 * never by the backend (libfuse has no op for them).  Returns true when
 * @r was answered (and is gone).
 */
bool fsdev_dax_serve(struct vqf_fsdev *d, struct fsreq *r)
{
	int ret;

	if (!d->dax_on || __atomic_load_n(&d->dax_off, __ATOMIC_ACQUIRE) ||
	    (r->op != FUSE_SETUPMAPPING &&
			     r->op != FUSE_REMOVEMAPPING))
		return false;
	if (!d->cfg.dax_ops || !d->cfg.dax_ops->file_fd) {
		STAT_ADD(d, dax_enosys, 1);
		ret = -ENOSYS;
	} else if (r->op == FUSE_SETUPMAPPING) {
		ret = dax_setup(d, r);
	} else {
		ret = dax_remove(d, r);
	}
	ret = vqf_dev_reply_req(&r->dreq, ret, NULL, 0, r->ws, r->nws, NULL);
	if (ret > 0)
		STAT_ADD(d, replies, 1);
	else
		STAT_ADD(d, refused_no_room, 1);
	fsdev_finish(r, ret > 0 ? (u32)ret : 0);
	return true;
}

/* ---- dax=inode: the daemon marks the files that go through the window */

/* The policy on the struct fuse_attr at byte @off: true when marked. */
static bool mark_attr(struct vqf_fsdev *d, const struct iovec *iov,
		      int iovcnt, size_t off)
{
	struct fuse_attr a;

	if (vqf_iov_gather(&a, sizeof(a), iov, iovcnt, off) != sizeof(a) ||
	    !S_ISREG(a.mode) || a.size < d->cfg.dax_inode_min ||
	    (a.flags & FUSE_ATTR_DAX))
		return false;
	a.flags |= FUSE_ATTR_DAX;
	return vqf_iov_scatter(&a.flags, sizeof(a.flags), iov, iovcnt,
			       off + offsetof(struct fuse_attr, flags)) ==
	       sizeof(a.flags);
}

/*
 * READDIRPLUS: every record lib's parser frames, from byte @off on (@len:
 * the reply's bytes).  The payload is walked in a copy, the marks made in
 * the reply; a record the parser refuses ends the walk.
 */
static u64 mark_direntplus(struct vqf_fsdev *d, const struct iovec *iov,
			   int iovcnt, size_t off, size_t len)
{
	u32 n = (u32)(len - off), pos = 0, at;
	struct vqf_dirent e;
	u64 marked = 0;
	u8 *buf;

	buf = malloc(n);
	if (!buf || vqf_iov_gather(buf, n, iov, iovcnt, off) != n) {
		free(buf);
		return 0;
	}
	for (at = 0; vqf_dirent_next(buf, n, true, &pos, &e) == 1; at = pos)
		if (e.entry.nodeid &&
		    mark_attr(d, iov, iovcnt,
			      off + at + offsetof(struct fuse_direntplus,
						  entry_out.attr)))
			marked++;
	free(buf);
	return marked;
}

/* INIT: the guest that asked for dax=inode is told the daemon marks. */
static void dax_inode_init(struct vqf_fsdev *d, const struct fsreq *r,
			   const struct iovec *iov, int iovcnt, size_t len)
{
	const size_t oh = sizeof(struct fuse_out_header);
	const struct fuse_init_in *in = &r->dreq.arg.init;
	struct fuse_init_out out;
	bool on = false;

	if (r->dreq.arg_size >= sizeof(*in) && (in->flags & FUSE_INIT_EXT) &&
	    (in->flags2 & (FUSE_HAS_INODE_DAX >> 32)) &&
	    len >= oh + sizeof(out) &&
	    vqf_iov_gather(&out, sizeof(out), iov, iovcnt, oh) ==
	    sizeof(out)) {
		out.flags |= FUSE_INIT_EXT;
		out.flags2 |= FUSE_HAS_INODE_DAX >> 32;
		on = vqf_iov_scatter(&out, sizeof(out), iov, iovcnt, oh) ==
		     sizeof(out);
	}
	/* A re-INIT starts again: only the session that asked. */
	__atomic_store_n(&d->dax_inode, on, __ATOMIC_RELEASE);
}

void fsdev_dax_inode_reply(struct vqf_fsdev *d, const struct fsreq *r,
			   int error, const struct iovec *iov, int iovcnt,
			   size_t len)
{
	const size_t oh = sizeof(struct fuse_out_header);
	size_t attr;
	u64 n;

	if (!d->dax_on || !d->cfg.dax_inode_min || error || len <= oh)
		return;
	if (r->dreq.in.opcode == FUSE_INIT) {
		dax_inode_init(d, r, iov, iovcnt, len);
		return;
	}
	if (!__atomic_load_n(&d->dax_inode, __ATOMIC_ACQUIRE))
		return;
	switch (r->dreq.in.opcode) {
	case FUSE_GETATTR:
	case FUSE_SETATTR:
		attr = offsetof(struct fuse_attr_out, attr);
		break;
	/* The entry replies that can name a regular file. */
	case FUSE_LOOKUP:
	case FUSE_CREATE:
	case FUSE_MKNOD:
	case FUSE_LINK:
	case FUSE_TMPFILE:
		attr = offsetof(struct fuse_entry_out, attr);
		break;
	case FUSE_READDIRPLUS:
		n = mark_direntplus(d, iov, iovcnt, oh, len);
		goto count;
	default:
		return;
	}
	n = mark_attr(d, iov, iovcnt, oh + attr);
count:
	if (n)
		STAT_ADD(d, dax_inode_marked, n);
}
