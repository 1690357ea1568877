// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fsdev.c - the virtio-fs device model (see vqf_fsdev.h).
 *
 * Threads: one per enabled queue pops chains; a shared pool of workers
 * serves request-queue chains; replies may also arrive from the
 * filesystem's own threads.  Locks, outermost first:
 *   d->lock      status, features, queue descriptions, the work list
 *   d->conn_lock the FUSE connection (read: parse; write: INIT/DESTROY)
 *   q->push_lock one per queue: push + need_notify (the pop side belongs
 *                to the queue's thread alone)
 *   d->dax_lock  the DAX window's map and its host mappings (check,
 *                mmap and commit happen under it as one step)
 *   d->slock     counters
 * With a fault plan, the poll timer (tick_main) takes q->pop_lock as an
 * inline kick does; the held completions are under q->push_lock.  With
 * direct kicks, kickers and the queue's thread pop under q->pop_lock and
 * serve outside it.
 */
#include "vqf_fsdev.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "vqf_vring_poll.h"
#include "vqf_vring_thread.h"
#include "vring_hg.h"

#define FSDEV_MAX_QUEUES	(2 + 64)
#define FSDEV_SEG_CAP		1040	/* 1024 descriptors + region splits */
#define FSDEV_NOTIFY_BACKLOG	64

struct fsq {
	struct vqf_fsdev *d;
	unsigned int idx;
	bool hiprio, notif, set;
	unsigned int num;
	struct vqf_vring_addr addr;
	int kick_fd, call_fd;
	struct vqf_vring_dev *vr;
	struct vqf_vring_dev_stats vs;
	pthread_t thr;
	bool running;
	pthread_mutex_t push_lock;
	pthread_mutex_t pop_lock;	/* inline kicks vs. each other, reset */
	unsigned int seg_cap;
	u64 poll_win;		/* current poll window, ns (queue thread) */

	/* Fault plan state, request queues only; reset by start(). */
	u64 seq;		/* chains popped: the plan's clock (pop_lock) */
	u64 rolled;		/* pre-pop faults rolled for chains < this */
	u16 popped;		/* next avail entry to pop, mod 2^16 */
	u16 base_avail, base_used;	/* where start() begins (vhost-user) */
	const __le16 *avail_idx;	/* the driver's avail->idx */
	u32 stall_left;		/* pop attempts still ignored */
	u32 fill_want;		/* no pops until this many chains wait */
	u32 fill_ticks_left;
	bool deferred;		/* a pop attempt was refused: poll it */
	bool dup_done;		/* (push_lock) */
	bool call_owed;		/* (push_lock) an interrupt was dropped */
	u64 releases;		/* (push_lock) shuffles done */
	unsigned int nheld;	/* (push_lock) */
	struct fsreq *held[VQF_FAULT_HELD_MAX];
};

enum pop_res { POP_EMPTY, POP_GATED, POP_BROKEN };

/* One popped chain, from pop to push. */
struct fsreq {
	struct fsq *q;
	struct fsreq *next;		/* work list */
	struct vqf_chain c;
	struct vqf_dev_req dreq;
	struct vqf_dev_seg *rs;		/* seg_cap each, after seg[] */
	struct vqf_dev_wseg *ws;
	u32 nrs, nws;
	u64 seq;			/* request queues: chain number */
	u32 len;			/* bytes to push (held completions) */
	u32 op;				/* opcode once parsed, else 0 */
	bool injected;			/* a backend fault touched it */
	struct vqf_seg seg[];
};

struct notif {
	int code;		/* FUSE_NOTIFY_* */
	u32 len;		/* payload bytes */
	u8 buf[];
};

struct vqf_fsdev {
	struct vqf_fsdev_cfg cfg;
	const struct vqf_gmem *mem;
	char tag[VQF_FS_TAG_LEN];
	u64 offered, features;
	u8 status;

	pthread_mutex_t lock;
	pthread_cond_t work_cond;	/* work list non-empty or stopping */
	pthread_cond_t idle_cond;	/* outstanding dropped to 0 */
	struct fsreq *work_head, *work_tail;
	unsigned int outstanding;	/* popped, not yet pushed/dropped */
	unsigned int busy;
	bool stopping;
	pthread_t *workers;
	unsigned int nr_workers;
	int stop_fd;

	pthread_rwlock_t conn_lock;
	struct vqf_dev_conn conn;

	pthread_mutex_t nlock;		/* notification backlog */
	struct notif *backlog[FSDEV_NOTIFY_BACKLOG];
	unsigned int nbacklog;

	pthread_mutex_t slock;
	struct vqf_fsdev_stats st;

	unsigned int nq;		/* queues with current features */
	struct fsq q[FSDEV_MAX_QUEUES];

	/* DAX window (cfg.dax_window): reserved at new, unmapped at free. */
	pthread_mutex_t dax_lock;
	bool dax_on;			/* a window (cfg.dax_window) */
	bool dax_remote;		/* ...behind dax_ops->map/unmap */
	bool dax_off;			/* vqf_fsdev_set_dax() (atomic) */
	u8 *dax_base;			/* the local window, or NULL */
	struct vqf_dax_dev_map dax_map;	/* (dax_lock) */
	struct vqf_dax_dev_mapping *dax_slots;
	struct vqf_dax_dev_stats dax_st;	/* (dax_lock) */

	bool faulty;			/* cfg.faults was given: plan holds it */
	struct vqf_fault_plan plan;
	pthread_t tick_thr;
	bool tick_running;
};

#define STAT_ADD(d, field, n) do {				\
	pthread_mutex_lock(&(d)->slock);			\
	(d)->st.field += (n);					\
	pthread_mutex_unlock(&(d)->slock);			\
} while (0)

static bool has_notif(const struct vqf_fsdev *d)
{
	return d->features & (1ULL << VIRTIO_FS_F_NOTIFICATION);
}

unsigned int vqf_fsdev_first_request_queue(const struct vqf_fsdev *d)
{
	return has_notif(d) ? 2 : 1;
}

unsigned int vqf_fsdev_num_queues(const struct vqf_fsdev *d)
{
	return vqf_fsdev_first_request_queue(d) + d->cfg.num_request_queues;
}

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

static int dax_init(struct vqf_fsdev *d, u64 size, bool remote)
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

/* Drops every mapping: the window is one PROT_NONE reservation again. */
static void dax_reset(struct vqf_fsdev *d)
{
	if (!d->dax_on)
		return;
	pthread_mutex_lock(&d->dax_lock);
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

static void dax_fini(struct vqf_fsdev *d)
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

			vqf_dax_dev_remove_commit(&d->dax_map, &one, 1,
						  &d->dax_st);
		}
		return ret;
	}
	if (!vqf_dax_dev_setup_commit(&d->dax_map, r->dreq.in.nodeid, &in,
				      &d->dax_st)) {
		/* Cannot happen under dax_lock; never leave it mapped. */
		dax_blank(d, in.moffset, in.len);
		STAT_ADD(d, dax_mmap_errors, 1);
		return -EIO;
	}
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
	for (i = 0; i < n; i++)
		if (dax_blank(d, ents[i].moffset, ents[i].len))
			ret = -EIO;
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

int vqf_fsdev_new(const struct vqf_fsdev_cfg *cfg, const struct vqf_gmem *mem,
		  struct vqf_fsdev **out)
{
	struct vqf_fsdev *d;
	size_t tl;
	unsigned int i;

	if (!cfg || (!cfg->be && !cfg->serve) || !mem || !cfg->tag)
		return -EINVAL;
	tl = strlen(cfg->tag);
	if (!tl || tl > VQF_FS_TAG_LEN)
		return -EINVAL;
	if (cfg->num_request_queues > FSDEV_MAX_QUEUES - 2)
		return -EINVAL;
	if (cfg->queue_size_max & (cfg->queue_size_max - 1) ||
	    cfg->queue_size_max > VQF_VRING_MAX_NUM)
		return -EINVAL;
	if (cfg->notify_buf_size &&
	    cfg->notify_buf_size < sizeof(struct fuse_out_header) + 16)
		return -EINVAL;
	if (cfg->faults && (!cfg->inline_kick ||
			    vqf_fault_plan_check(cfg->faults)))
		return -EINVAL;
	if (cfg->direct_kick && !cfg->inline_kick && cfg->poll_ns)
		return -EINVAL;
	if (cfg->dax_window &&
	    ((cfg->dax_window & (cfg->dax_window - 1)) ||
	     cfg->dax_window < (u64)sysconf(_SC_PAGESIZE)))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	/* Only ever accessed with atomics, which helgrind does not know. */
	vqf_hg_racy(&d->status, sizeof(d->status));
	/* Written atomically (under d->lock); direct and inline kicks read
	 * it with an atomic load under their pop_lock only.
	 */
	vqf_hg_racy(&d->stopping, sizeof(d->stopping));
	if (cfg->dax_window && cfg->dax_ops &&
	    !cfg->dax_ops->map != !cfg->dax_ops->unmap) {
		free(d);
		return -EINVAL;
	}
	if (cfg->dax_window && dax_init(d, cfg->dax_window, cfg->dax_ops &&
					cfg->dax_ops->map)) {
		free(d);
		return -ENOMEM;
	}
	d->cfg = *cfg;
	if (cfg->faults) {
		d->faulty = true;
		d->plan = *cfg->faults;
		if (!d->plan.stall_len)
			d->plan.stall_len = 3;
		if (!d->plan.fill_ticks)
			d->plan.fill_ticks = 8;
		if (!d->plan.reorder_max)
			d->plan.reorder_max = 8;
		if (!d->plan.data_ops)
			d->plan.data_ops = (1ULL << FUSE_READ) |
					   (1ULL << FUSE_WRITE);
		if (!d->plan.tick_ms)
			d->plan.tick_ms = 1;
		d->cfg.faults = &d->plan;
	}
	if (!d->cfg.num_request_queues)
		d->cfg.num_request_queues = 1;
	if (!d->cfg.queue_size_max)
		d->cfg.queue_size_max = 1024;
	if (!d->cfg.max_write)
		d->cfg.max_write = 1u << 20;
	memcpy(d->tag, cfg->tag, tl);
	d->mem = mem;
	d->offered = (1ULL << VIRTIO_F_VERSION_1) |
		     (1ULL << VIRTIO_RING_F_EVENT_IDX) |
		     (1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	if (cfg->notify_buf_size)
		d->offered |= 1ULL << VIRTIO_FS_F_NOTIFICATION;
	d->offered &= ~cfg->features_withheld;
	d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->stop_fd < 0) {
		dax_fini(d);
		free(d);
		return -ENOMEM;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->work_cond, NULL);
	pthread_cond_init(&d->idle_cond, NULL);
	pthread_rwlock_init(&d->conn_lock, NULL);
	pthread_mutex_init(&d->nlock, NULL);
	pthread_mutex_init(&d->slock, NULL);
	for (i = 0; i < FSDEV_MAX_QUEUES; i++) {
		d->q[i].d = d;
		d->q[i].idx = i;
		d->q[i].kick_fd = d->q[i].call_fd = -1;
		pthread_mutex_init(&d->q[i].push_lock, NULL);
		pthread_mutex_init(&d->q[i].pop_lock, NULL);
	}
	d->nq = vqf_fsdev_num_queues(d);
	vqf_dev_conn_init(&d->conn);
	d->conn.max_write = d->conn.max_read = d->cfg.max_write;
	*out = d;
	return 0;
}

u64 vqf_fsdev_features(const struct vqf_fsdev *d)
{
	return d->offered;
}

void vqf_fsdev_read_config(const struct vqf_fsdev *d,
			   struct vqf_virtio_fs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg->tag, d->tag, VQF_FS_TAG_LEN);
	cfg->num_request_queues = cpu_to_le32(d->cfg.num_request_queues);
	cfg->notify_buf_size = cpu_to_le32(d->cfg.notify_buf_size);
}

int vqf_fsdev_set_features(struct vqf_fsdev *d, u64 features)
{
	int ret = 0;

	pthread_mutex_lock(&d->lock);
	if (!(vqf_fsdev_get_status(d) & VQF_S_DRIVER) || (vqf_fsdev_get_status(d) & VQF_S_FEATURES_OK))
		ret = -EPERM;
	else if ((features & ~d->offered) ||
		 !(features & (1ULL << VIRTIO_F_VERSION_1)))
		ret = -EINVAL;
	else {
		d->features = features;
		d->nq = vqf_fsdev_num_queues(d);
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

unsigned int vqf_fsdev_queue_max(const struct vqf_fsdev *d, unsigned int idx)
{
	return idx < d->nq ? d->cfg.queue_size_max : 0;
}

/* vqf_fsdev_set_queue()'s checks but the state's (d->lock held). */
static int check_queue(const struct vqf_fsdev *d, unsigned int idx,
		       unsigned int num, const struct vqf_vring_addr *addr,
		       int kick_fd, int call_fd)
{
	if (idx >= d->nq)
		return -ENOENT;
	if (!num || (num & (num - 1)) || num > d->cfg.queue_size_max ||
	    kick_fd < 0 || call_fd < 0 || !addr)
		return -EINVAL;
	if (!vqf_gmem_ptr(d->mem, addr->desc, vqf_vring_desc_bytes(num)) ||
	    !vqf_gmem_ptr(d->mem, addr->avail, vqf_vring_avail_bytes(num)) ||
	    !vqf_gmem_ptr(d->mem, addr->used, vqf_vring_used_bytes(num)))
		return -EFAULT;
	return 0;
}

int vqf_fsdev_set_queue(struct vqf_fsdev *d, unsigned int idx,
			unsigned int num, const struct vqf_vring_addr *addr,
			int kick_fd, int call_fd)
{
	int ret = 0;

	pthread_mutex_lock(&d->lock);
	if (!(vqf_fsdev_get_status(d) & VQF_S_FEATURES_OK) ||
	    (vqf_fsdev_get_status(d) & VQF_S_DRIVER_OK))
		ret = -EPERM;
	else
		ret = check_queue(d, idx, num, addr, kick_fd, call_fd);
	if (!ret) {
		struct fsq *q = &d->q[idx];

		q->num = num;
		q->addr = *addr;
		q->kick_fd = kick_fd;
		q->call_fd = call_fd;
		q->base_avail = q->base_used = 0;
		q->popped = 0;
		q->set = true;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int vqf_fsdev_set_queue_base(struct vqf_fsdev *d, unsigned int idx,
			     u16 last_avail, u16 used)
{
	int ret = 0;

	pthread_mutex_lock(&d->lock);
	if (!(vqf_fsdev_get_status(d) & VQF_S_FEATURES_OK) ||
	    (vqf_fsdev_get_status(d) & VQF_S_DRIVER_OK))
		ret = -EPERM;
	else if (idx >= d->nq || !d->q[idx].set)
		ret = -ENOENT;
	else {
		d->q[idx].base_avail = last_avail;
		d->q[idx].base_used = used;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

static void *queue_main(void *arg);
static int queue_ring(struct vqf_fsdev *d, struct fsq *q);

int vqf_fsdev_add_queue(struct vqf_fsdev *d, unsigned int idx,
			unsigned int num, const struct vqf_vring_addr *addr,
			int kick_fd, int call_fd, u16 last_avail, u16 used)
{
	struct fsq *q;
	int ret;

	if (idx >= FSDEV_MAX_QUEUES)
		return -ENOENT;
	q = &d->q[idx];
	/* pop_lock before d->lock, as stop_all() takes them. */
	pthread_mutex_lock(&q->pop_lock);
	pthread_mutex_lock(&d->lock);
	ret = check_queue(d, idx, num, addr, kick_fd, call_fd);
	if (!ret && (!(vqf_fsdev_get_status(d) & VQF_S_DRIVER_OK) || d->stopping ||
		     q->set))
		ret = -EPERM;
	if (ret) {
		pthread_mutex_unlock(&d->lock);
		pthread_mutex_unlock(&q->pop_lock);
		return ret;
	}
	q->num = num;
	q->addr = *addr;
	q->kick_fd = kick_fd;
	q->call_fd = call_fd;
	q->base_avail = last_avail;
	q->base_used = used;
	ret = queue_ring(d, q);
	if (!ret && !(d->cfg.inline_kick && !q->notif)) {
		if (pthread_create(&q->thr, NULL, queue_main, q)) {
			vqf_vring_dev_destroy(q->vr);
			q->vr = NULL;
			ret = -EIO;
		} else {
			q->running = true;
		}
	}
	q->set = !ret;
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_unlock(&q->pop_lock);
	return ret;
}

int vqf_fsdev_queue_avail_idx(struct vqf_fsdev *d, unsigned int idx, u16 *out)
{
	if (idx >= FSDEV_MAX_QUEUES)
		return -ENOENT;
	pthread_mutex_lock(&d->lock);
	/* Read when the queue's thread has stopped (the caller's part). */
	*out = d->q[idx].popped;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

u8 vqf_fsdev_get_status(const struct vqf_fsdev *d)
{
	return __atomic_load_n(&d->status, __ATOMIC_ACQUIRE);
}

void vqf_fsdev_get_stats(struct vqf_fsdev *d, struct vqf_fsdev_stats *out)
{
	struct vqf_dax_dev_stats ds = { 0 };

	if (d->dax_on) {
		pthread_mutex_lock(&d->dax_lock);
		ds = d->dax_st;
		pthread_mutex_unlock(&d->dax_lock);
	}
	pthread_mutex_lock(&d->slock);
	*out = d->st;
	pthread_mutex_unlock(&d->slock);
	out->dax = ds;
}

static void set_needs_reset(struct vqf_fsdev *d)
{
	__atomic_or_fetch(&d->status, VQF_S_NEEDS_RESET, __ATOMIC_RELEASE);
}

/* ---- replies -------------------------------------------------------- */

static void fsreq_free(struct fsreq *r)
{
	free(r);
}

static bool faulted(const struct fsq *q)
{
	return q->d->faulty && !q->hiprio && !q->notif;
}

static bool roll(const struct fsq *q, u64 seq, enum vqf_fault_kind k)
{
	return vqf_fault_roll(&q->d->plan, q->idx, seq, k);
}

/* Whether backend and reply faults may touch @r. */
static bool data_op(const struct fsreq *r)
{
	u32 op = r->op;

	return faulted(r->q) && op && op != FUSE_INIT && op < 64 &&
	       (r->q->d->plan.data_ops & (1ULL << op));
}

static void put_outstanding(struct vqf_fsdev *d, unsigned int n)
{
	pthread_mutex_lock(&d->lock);
	d->outstanding -= n;
	if (!d->outstanding)
		pthread_cond_broadcast(&d->idle_cond);
	pthread_mutex_unlock(&d->lock);
}

static void free_all(struct vqf_fsdev *d, struct fsreq **v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		fsreq_free(v[i]);
	if (n)
		put_outstanding(d, n);
}

static bool is_stopping(struct vqf_fsdev *d)
{
	bool stopping;

	pthread_mutex_lock(&d->lock);
	stopping = d->stopping;
	pthread_mutex_unlock(&d->lock);
	return stopping;
}

/*
 * Pushes @r (q->push_lock held), twice when the plan says so, unless a
 * reset began (@stopping, read before q->push_lock).  Returns whether it
 * went on the ring.
 */
static bool push_locked(struct fsq *q, struct fsreq *r, bool stopping)
{
	struct vqf_fsdev *d = q->d;

	/* Before the push: the driver may complete it at once. */
	if (!stopping && d->cfg.trace)
		d->cfg.trace(d->cfg.trace_ctx, VQF_FSDEV_EV_PUSHED,
			     r->dreq.in.unique, r->dreq.in.opcode, q->idx);
	if (stopping || vqf_vring_dev_push(q->vr, r->c.head, r->len))
		return false;
	if (faulted(q) && !q->dup_done && r->op != FUSE_INIT &&
	    roll(q, r->seq, VQF_FAULT_DUP)) {
		/* One per reset: the driver breaks the queue at the first
		 * and never looks at another.
		 */
		q->dup_done = true;
		if (!vqf_vring_dev_push(q->vr, r->c.head, r->len))
			STAT_ADD(d, faults[VQF_FAULT_DUP], 1);
	}
	return true;
}

/*
 * Pushes every held completion in a shuffled order (q->push_lock held)
 * and moves them to @out.  Returns whether the driver wants a call.
 */
static bool release_held_locked(struct fsq *q, struct fsreq **out,
				unsigned int *nout, bool stopping)
{
	const struct vqf_fault_plan *p = &q->d->plan;
	unsigned int i, j, n = q->nheld;
	u64 rel = q->releases++;
	bool pushed = false;

	for (i = n; i > 1; i--) {
		struct fsreq *t;

		j = (unsigned int)(vqf_fault_rand(p, q->idx, rel, i) % i);
		t = q->held[i - 1];
		q->held[i - 1] = q->held[j];
		q->held[j] = t;
	}
	for (i = 0; i < n; i++) {
		pushed |= push_locked(q, q->held[i], stopping);
		out[(*nout)++] = q->held[i];
	}
	q->nheld = 0;
	return pushed && vqf_vring_dev_need_notify(q->vr);
}

/* The plan's reply faults: a short used.len or a lying header. */
static void fault_reply(struct fsq *q, struct fsreq *r)
{
	struct fuse_out_header oh;
	u64 x;

	/* One fault per reply: each shows up once in the guest's count. */
	if (r->len < sizeof(oh) || !data_op(r) || r->injected)
		return;
	x = vqf_fault_rand(&q->d->plan, q->idx, r->seq, 1);
	if (roll(q, r->seq, VQF_FAULT_SHORT_USED)) {
		/* Below the header too now and then (-ENODATA). */
		r->len = (u32)(x % r->len);
		STAT_ADD(q->d, faults[VQF_FAULT_SHORT_USED], 1);
		return;
	}
	if (roll(q, r->seq, VQF_FAULT_BAD_HDR_LEN) && r->nws &&
	    r->ws[0].len >= sizeof(oh)) {
		memcpy(&oh, r->ws[0].base, sizeof(oh));
		oh.len = (x & 1) || r->len == sizeof(oh) ?
			 r->len + 1 + (u32)(x >> 1) % 64 : r->len - 1;
		memcpy(r->ws[0].base, &oh, sizeof(oh));
		STAT_ADD(q->d, faults[VQF_FAULT_BAD_HDR_LEN], 1);
	}
}

/* Push @r's chain with @len bytes written; wake the driver if it asked. */
static void finish(struct fsreq *r, u32 len)
{
	struct fsq *q = r->q;
	struct vqf_fsdev *d = q->d;
	struct fsreq *out[VQF_FAULT_HELD_MAX];
	unsigned int nout = 0;
	bool notify = false, stopping, f = faulted(q);

	/* After a reset began, the rings belong to the driver again.  Read
	 * under d->lock, where stop_all() sets it (helgrind sees the order;
	 * a push racing the flag is still before the rings are destroyed:
	 * stop_all() waits for outstanding to drop).
	 */
	stopping = is_stopping(d);
	r->len = len;
	if (f)
		fault_reply(q, r);
	pthread_mutex_lock(&q->push_lock);
	if (f && r->op != FUSE_INIT && !stopping &&
	    roll(q, r->seq, VQF_FAULT_REORDER)) {
		STAT_ADD(d, faults[VQF_FAULT_REORDER], 1);
		q->held[q->nheld++] = r;
		if (q->nheld < d->plan.reorder_max) {
			/* Still outstanding: a reset drops it. */
			pthread_mutex_unlock(&q->push_lock);
			return;
		}
		notify = release_held_locked(q, out, &nout, false);
	} else {
		notify = push_locked(q, r, stopping) &&
			 vqf_vring_dev_need_notify(q->vr);
		out[nout++] = r;
	}
	if (notify && f && roll(q, r->seq, VQF_FAULT_DROP_CALL)) {
		/* The poll timer sends it late. */
		q->call_owed = true;
		notify = false;
		STAT_ADD(d, faults[VQF_FAULT_DROP_CALL], 1);
	}
	pthread_mutex_unlock(&q->push_lock);
	if (notify && !vqf_eventfd_signal(q->call_fd))
		STAT_ADD(d, interrupts, 1);
	free_all(d, out, nout);
}

/* INIT and DESTROY change what the parser accepts from now on. */
static void after_reply(struct vqf_fsdev *d, struct fsreq *r,
			const struct iovec *iov, int iovcnt, size_t len)
{
	u32 op = r->dreq.in.opcode;
	struct fuse_init_out io;
	u32 got;

	if (op == FUSE_DESTROY) {
		pthread_rwlock_wrlock(&d->conn_lock);
		vqf_dev_conn_init(&d->conn);
		d->conn.max_write = d->conn.max_read = d->cfg.max_write;
		pthread_rwlock_unlock(&d->conn_lock);
		/* The session's mappings die with it, as the files do. */
		dax_reset(d);
		return;
	}
	if (op != FUSE_INIT || len <= sizeof(struct fuse_out_header))
		return;
	memset(&io, 0, sizeof(io));
	got = (u32)vqf_iov_gather(&io, sizeof(io), iov, iovcnt,
			      sizeof(struct fuse_out_header));
	pthread_rwlock_wrlock(&d->conn_lock);
	vqf_dev_conn_init_done(&d->conn, &r->dreq, &io, got);
	pthread_rwlock_unlock(&d->conn_lock);
}

#define REPLY_PIECES	8

/*
 * The backend's answer: its iovec becomes the payload pieces of lib/'s
 * reply builder (the out header is rebuilt there, with the request's own
 * unique).  A reply that does not fit, or that libfuse got wrong, turns
 * into EIO; one without room even for a header returns the chain empty.
 */
static int reply_cb(void *ctx, const struct iovec *iov, int iovcnt,
		    size_t len)
{
	struct fsreq *r = ctx;
	struct vqf_fsdev *d = r->q->d;
	struct vqf_dev_piece small[REPLY_PIECES], *pc = small;
	struct fuse_out_header oh;
	size_t skip = sizeof(oh);
	u32 npc = 0;
	int i, ret;

	if (iovcnt < 1 || iov[0].iov_len < sizeof(oh) || len < sizeof(oh))
		return -EINVAL;
	memcpy(&oh, iov[0].iov_base, sizeof(oh));
	if (iovcnt > REPLY_PIECES)
		pc = malloc(iovcnt * sizeof(*pc));
	for (i = 0; pc && i < iovcnt; i++) {
		size_t n = iov[i].iov_len;

		if (skip >= n) {
			skip -= n;
			continue;
		}
		pc[npc].base = (const u8 *)iov[i].iov_base + skip;
		pc[npc++].len = (u32)(n - skip);
		skip = 0;
	}
	after_reply(d, r, iov, iovcnt, len);
	ret = pc ? vqf_dev_reply(r->ws, r->nws, r->dreq.in.unique, oh.error,
				 pc, npc, NULL) : -ENOMEM;
	if (pc != small)
		free(pc);
	if (ret < 0 && ret != -ENOBUFS) {
		STAT_ADD(d, reply_too_big, 1);
		ret = vqf_dev_reply(r->ws, r->nws, r->dreq.in.unique, -EIO,
				    NULL, 0, NULL);
	}
	if (ret < 0) {
		STAT_ADD(d, refused_no_room, 1);
		finish(r, 0);
		return 0;
	}
	pthread_mutex_lock(&d->slock);
	d->st.replies++;
	d->st.dev.replies++;
	d->st.bytes_out += (u32)ret;
	pthread_mutex_unlock(&d->slock);
	finish(r, (u32)ret);
	return 0;
}

/* ---- serving -------------------------------------------------------- */

/*
 * The plan's backend faults: an error reply instead of the backend's.
 * Returns true when @r was answered (and is gone).
 */
static bool fault_backend(struct vqf_fsdev *d, struct fsreq *r)
{
	static const int err[] = {
		[VQF_FAULT_EIO] = EIO,
		[VQF_FAULT_ENOSPC] = ENOSPC,
		[VQF_FAULT_EINTR] = EINTR,
	};
	int k, ret;

	if (!data_op(r))
		return false;
	for (k = VQF_FAULT_EIO; k <= VQF_FAULT_EINTR; k++) {
		if (!roll(r->q, r->seq, k))
			continue;
		STAT_ADD(d, faults[k], 1);
		r->injected = true;
		ret = vqf_dev_reply_req(&r->dreq, -err[k], NULL, 0, r->ws,
					r->nws, NULL);
		if (ret > 0)
			STAT_ADD(d, replies, 1);
		finish(r, ret > 0 ? (u32)ret : 0);
		return true;
	}
	return false;
}

/*
 * The plan's short write: the backend gets the first half of the payload
 * (rounded down to 16 bytes) and says so in its reply.  Returns the flat
 * request's new length.
 */
static u32 fault_short_write(struct vqf_fsdev *d, struct fsreq *r, void *flat,
			     u32 flen)
{
	struct fuse_in_header ih;
	struct fuse_write_in wi;
	u32 keep;

	if (r->op != FUSE_WRITE || !data_op(r) ||
	    flen < sizeof(ih) + sizeof(wi))
		return flen;
	memcpy(&ih, flat, sizeof(ih));
	memcpy(&wi, (u8 *)flat + sizeof(ih), sizeof(wi));
	/* Only the plain layout: no extensions after the payload. */
	if (flen != sizeof(ih) + sizeof(wi) + (u64)wi.size)
		return flen;
	keep = (wi.size / 2) & ~15u;
	if (!keep || !roll(r->q, r->seq, VQF_FAULT_SHORT_WRITE))
		return flen;
	ih.len -= wi.size - keep;
	wi.size = keep;
	memcpy(flat, &ih, sizeof(ih));
	memcpy((u8 *)flat + sizeof(ih), &wi, sizeof(wi));
	STAT_ADD(d, faults[VQF_FAULT_SHORT_WRITE], 1);
	r->injected = true;
	return ih.len;
}

/*
 * SETUPMAPPING and REMOVEMAPPING on a device with a window: served here,
 * never by the backend (libfuse has no op for them).  Returns true when
 * @r was answered (and is gone).
 */
static bool dax_serve(struct vqf_fsdev *d, struct fsreq *r)
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
	finish(r, ret > 0 ? (u32)ret : 0);
	return true;
}

/*
 * Requests up to this size (headers, names, a 4 KiB WRITE) are flattened
 * on the serving thread's stack: the backend reads the copy only during
 * the call, so no allocation is needed for it.
 */
#define FSDEV_FLAT_STACK	(4096 + 256)

/* Hand a parsed request to the backend; @r is gone afterwards. */
static void serve(struct vqf_fsdev *d, struct fsreq *r)
{
	u32 flen = vqf_dev_flat_len(&r->dreq);
	u64 small[FSDEV_FLAT_STACK / sizeof(u64)];
	void *flat;
	int ret;

	if (dax_serve(d, r) || fault_backend(d, r))
		return;
	flat = flen <= sizeof(small) ? small : malloc(flen);
	ret = flat ? vqf_dev_flatten(&r->dreq, flat, flen) : -ENOMEM;
	if (ret < 0) {
		if (flat != small)
			free(flat);
		if (ret == -EUCLEAN) {
			/* The guest rewrote its extension block after the
			 * parse: refused as the parse refuses a bad one.
			 */
			STAT_ADD(d, dev.flatten_ext_bad, 1);
			ret = -EINVAL;
		} else {
			STAT_ADD(d, backend_errors, 1);
			ret = -ENOMEM;
		}
		/* Answer rather than leave the guest waiting. */
		ret = vqf_dev_reply_req(&r->dreq, ret, NULL, 0, r->ws,
					r->nws, NULL);
		finish(r, ret > 0 ? (u32)ret : 0);
		return;
	}
	STAT_ADD(d, bytes_in, flen);
	flen = fault_short_write(d, r, flat, flen);
	if (d->cfg.serve)
		ret = d->cfg.serve(d->cfg.serve_ctx, flat, flen, reply_cb, r);
	else
		ret = vqf_backend_process(d->cfg.be, flat, flen, reply_cb, r);
	if (flat != small)
		free(flat);
	if (ret == VQF_BE_REPLY)
		return;		/* reply_cb owns r (maybe already freed) */
	if (ret == VQF_BE_NO_REPLY) {
		STAT_ADD(d, no_reply, 1);
	} else {
		STAT_ADD(d, backend_errors, 1);
	}
	finish(r, 0);
}

static void *worker_main(void *arg)
{
	struct vqf_fsdev *d = arg;
	struct fsreq *r;
	unsigned int busy;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (!d->work_head && !d->stopping)
			pthread_cond_wait(&d->work_cond, &d->lock);
		if (!d->work_head)
			break;	/* stopping and nothing left */
		r = d->work_head;
		d->work_head = r->next;
		if (!d->work_head)
			d->work_tail = NULL;
		busy = ++d->busy;
		pthread_mutex_unlock(&d->lock);
		pthread_mutex_lock(&d->slock);
		if (busy > d->st.workers_busy_max)
			d->st.workers_busy_max = busy;
		pthread_mutex_unlock(&d->slock);
		serve(d, r);
		pthread_mutex_lock(&d->lock);
		d->busy--;
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/*
 * One popped chain.  Readable segments become the parser's input,
 * writable ones the reply space.
 */
static void handle_chain(struct fsq *q, struct fsreq *r)
{
	struct vqf_fsdev *d = q->d;
	struct vqf_dev_stats ps;
	unsigned int i;
	int ret;

	r->nrs = r->c.nr_rd;
	r->nws = r->c.nr_wr;
	for (i = 0; i < r->nrs; i++) {
		r->rs[i].base = r->c.seg[i].hva;
		r->rs[i].len = r->c.seg[i].len;
	}
	for (i = 0; i < r->nws; i++) {
		r->ws[i].base = r->c.seg[r->nrs + i].hva;
		r->ws[i].len = r->c.seg[r->nrs + i].len;
	}
	memset(&ps, 0, sizeof(ps));
	pthread_rwlock_rdlock(&d->conn_lock);
	ret = vqf_dev_parse(&d->conn, r->rs, r->nrs, q->hiprio, &r->dreq, &ps);
	pthread_rwlock_unlock(&d->conn_lock);
	pthread_mutex_lock(&d->slock);
	if (q->hiprio)
		d->st.hiprio++;
	else
		d->st.requests++;
	d->st.dev.parsed += ps.parsed;
	for (i = 0; i < VQF_DEV_R_NR; i++)
		d->st.dev.reject[i] += ps.reject[i];
	if (ret)
		d->st.refused++;
	pthread_mutex_unlock(&d->slock);
	if (!ret)
		r->op = r->dreq.in.opcode;
	if (d->cfg.trace)
		d->cfg.trace(d->cfg.trace_ctx, VQF_FSDEV_EV_POPPED,
			     r->dreq.in.unique, r->dreq.in.opcode, q->idx);

	if (ret) {
		ret = vqf_dev_reply_req(&r->dreq, 0, NULL, 0, r->ws, r->nws,
					NULL);
		if (ret < 0 || r->dreq.noreply) {
			/* Every served chain ends in exactly one of replies,
			 * no_reply, refused_no_room, backend_errors.
			 */
			if (ret < 0)
				STAT_ADD(d, refused_no_room, 1);
			else
				STAT_ADD(d, no_reply, 1);
			finish(r, 0);
		} else {
			STAT_ADD(d, replies, 1);
			finish(r, (u32)ret);
		}
		return;
	}
	/* Hiprio work (forgets, interrupts) is quick and never queued
	 * behind requests; without workers requests are served here too.
	 */
	if (q->hiprio || !d->nr_workers) {
		serve(d, r);
		return;
	}
	pthread_mutex_lock(&d->lock);
	r->next = NULL;
	if (d->work_tail)
		d->work_tail->next = r;
	else
		d->work_head = r;
	d->work_tail = r;
	pthread_cond_signal(&d->work_cond);
	pthread_mutex_unlock(&d->lock);
}

static struct fsreq *fsreq_new(struct fsq *q)
{
	size_t n = q->seg_cap;
	struct fsreq *r = malloc(sizeof(*r) + n * (sizeof(struct vqf_seg) +
				 sizeof(struct vqf_dev_seg) +
				 sizeof(struct vqf_dev_wseg)));

	if (!r)
		return NULL;
	r->q = q;
	r->rs = (struct vqf_dev_seg *)(r->seg + n);
	r->ws = (struct vqf_dev_wseg *)(r->rs + n);
	r->c.seg = r->seg;
	r->c.cap = q->seg_cap;
	return r;
}

static void notif_flush(struct fsq *q);

/* Sleep until a kick or stop.  Return: false when asked to stop. */
static bool q_sleep(struct fsq *q)
{
	s64 n = vqf_eventfd_wait_stop(q->kick_fd, q->d->stop_fd);

	if (n > 0)
		STAT_ADD(q->d, kicks, 1);
	return n >= 0;
}

/*
 * Whether the plan lets the queue pop now (pop side).  A refused attempt
 * does not move avail_event: with EVENT_IDX the driver kicks no more and
 * only the poll timer (@tick) comes back, as after a lost notification.
 */
static bool fault_may_pop(struct fsq *q, bool tick)
{
	const struct vqf_fault_plan *p = &q->d->plan;
	u16 waiting;
	u32 want;

	if (q->stall_left) {
		q->stall_left--;
		return false;
	}
	/* A hint only: the pop itself validates the ring. */
	waiting = (u16)(le16_to_cpu(READ_ONCE(*q->avail_idx)) - q->popped);
	if (q->fill_want) {
		if (waiting < q->fill_want &&
		    !(tick && !--q->fill_ticks_left))
			return false;
		q->fill_want = 0;
	}
	/* Each chain rolls once, whoever pops it (kick or timer). */
	if (!waiting || q->rolled > q->seq)
		return true;
	q->rolled = q->seq + 1;
	if (roll(q, q->seq, VQF_FAULT_DROP_KICK)) {
		STAT_ADD(q->d, faults[VQF_FAULT_DROP_KICK], 1);
		return false;
	}
	if (roll(q, q->seq, VQF_FAULT_STALL)) {
		STAT_ADD(q->d, faults[VQF_FAULT_STALL], 1);
		q->stall_left = p->stall_len - 1;
		return false;
	}
	want = p->fill_chains && p->fill_chains < q->num ? p->fill_chains :
	       q->num;
	if (roll(q, q->seq, VQF_FAULT_FILL) && waiting < want) {
		STAT_ADD(q->d, faults[VQF_FAULT_FILL], 1);
		q->fill_want = want;
		q->fill_ticks_left = p->fill_ticks;
		return false;
	}
	return true;
}

/*
 * Pops one chain into @r and accounts for it.  Returns 1 for a chain to
 * serve, 0 when the ring is empty, -EAGAIN for a chain the ring refused
 * (counted in chain_errors and finished: @r is spent), -EIO when the
 * driver broke the ring: this queue is dead until reset (counted, the
 * device flags it), the others carry on.
 */
static int pop_into(struct fsq *q, struct fsreq *r)
{
	struct vqf_fsdev *d = q->d;
	int ret = vqf_vring_dev_pop(q->vr, &r->c);

	if (ret == 0)
		return 0;
	if (ret < 0 && ret != -ENODATA && ret != -ENOBUFS) {
		STAT_ADD(d, queue_broken, 1);
		set_needs_reset(d);
		return -EIO;
	}
	q->popped++;
	r->seq = q->seq++;
	r->op = 0;
	r->injected = false;
	pthread_mutex_lock(&d->lock);
	d->outstanding++;
	pthread_mutex_unlock(&d->lock);
	if (ret > 0)
		return 1;
	STAT_ADD(d, chain_errors, 1);
	finish(r, 0);
	return -EAGAIN;
}

/*
 * Pops and handles every available chain.  Returns POP_BROKEN when the
 * queue broke (the device then needs a reset), POP_GATED when the fault
 * plan refused to pop.  Pop side: one caller at a time.
 */
static enum pop_res pop_all(struct fsq *q, struct fsreq **spare, bool tick)
{
	struct fsreq *r = *spare;
	int ret;

	for (;;) {
		if (faulted(q) && !fault_may_pop(q, tick)) {
			q->deferred = true;
			*spare = r;
			return POP_GATED;
		}
		if (!r)
			r = fsreq_new(q);
		if (!r)
			break;	/* out of memory: retry on the next kick */
		ret = pop_into(q, r);
		if (ret == 0)
			break;
		if (ret == -EAGAIN) {
			r = NULL;	/* refused and finished */
			continue;
		}
		if (ret < 0) {
			*spare = r;
			return POP_BROKEN;
		}
		handle_chain(q, r);
		r = NULL;
	}
	*spare = r;
	return POP_EMPTY;
}

/* Pops until the ring stays empty with kicks enabled (pop side). */
static void run_queue(struct fsq *q, struct fsreq **spare, bool tick)
{
	while (pop_all(q, spare, tick) == POP_EMPTY) {
		if (vqf_vring_dev_enable_notify(q->vr)) {
			q->deferred = false;
			break;
		}
	}
}

/*
 * After serving, spin on the available ring for the queue's window
 * (cfg.poll_ns, adapted) before going to sleep.  Kicks stay suppressed
 * meanwhile: the caller disabled them before popping (NO_NOTIFY), and
 * with EVENT_IDX avail_event stays where the last enable_notify left it,
 * behind what we have popped, so the driver sees no need to kick.  On a
 * miss the caller enables kicks, re-checks the ring and only then sleeps
 * (virtio 1.2, 2.7.10): a chain published during that sequence is either
 * seen by the re-check or kicked.  Returns true when chains turned up;
 * *@spun gets the ns spent.
 */
static bool q_poll(struct fsq *q, u64 *spun)
{
	u64 start, now;

	*spun = 0;
	if (!q->poll_win)
		return false;
	start = vqf_poll_now_ns();
	/* A reset waits for the window to end: the sleep after it sees
	 * the stop.
	 */
	while (!vqf_vring_dev_avail_pending(q->vr) &&
	       vqf_poll_now_ns() - start < q->poll_win)
		vqf_poll_relax();
	now = vqf_poll_now_ns();
	*spun = now - start;
	pthread_mutex_lock(&q->d->slock);
	q->d->st.poll_spin_ns += *spun;
	if (vqf_vring_dev_avail_pending(q->vr)) {
		q->d->st.poll_hits++;
		pthread_mutex_unlock(&q->d->slock);
		/* Within the window: the window stays. */
		return true;
	}
	q->d->st.poll_misses++;
	pthread_mutex_unlock(&q->d->slock);
	return false;
}

static bool direct(const struct fsq *q)
{
	return q->d->cfg.direct_kick && !q->d->cfg.inline_kick && !q->notif;
}

enum pop1_res { POP1_NONE, POP1_CHAIN, POP1_BROKEN };

/*
 * Pops one chain into *@spare (q->pop_lock held, direct kicks); chains
 * the ring refuses are finished here.  POP1_NONE also when out of memory:
 * the chain stays for the next kick.
 */
static enum pop1_res pop_one_locked(struct fsq *q, struct fsreq **spare)
{
	struct fsreq *r;
	int ret;

	for (;;) {
		if (vqf_vring_dev_is_broken(q->vr))
			return POP1_BROKEN;
		if (!*spare)
			*spare = fsreq_new(q);
		r = *spare;
		if (!r)
			return POP1_NONE;
		ret = pop_into(q, r);
		if (ret == 0)
			return POP1_NONE;
		if (ret > 0)
			return POP1_CHAIN;
		if (ret != -EAGAIN)
			return POP1_BROKEN;
		*spare = NULL;	/* refused and finished */
	}
}

/*
 * One chain for the caller to serve, if any (takes q->pop_lock).  Kicks
 * are enabled again after each pop, which with EVENT_IDX moves
 * avail_event past it: a chain published after that is kicked by its
 * driver; one already there is reported in *@more.
 */
static enum pop1_res pop_one(struct fsq *q, struct fsreq **spare, bool *more)
{
	enum pop1_res res;

	*more = false;
	pthread_mutex_lock(&q->pop_lock);
	if (!q->vr || __atomic_load_n(&q->d->stopping, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&q->pop_lock);
		return POP1_BROKEN;
	}
	do {
		res = pop_one_locked(q, spare);
	} while (res == POP1_NONE && *spare &&
		 !vqf_vring_dev_enable_notify(q->vr));
	if (res == POP1_CHAIN)
		*more = !vqf_vring_dev_enable_notify(q->vr);
	pthread_mutex_unlock(&q->pop_lock);
	return res;
}

/* The queue's thread with direct kicks: what the kickers left. */
static void direct_run(struct fsq *q, struct fsreq **spare)
{
	bool more;

	while (pop_one(q, spare, &more) == POP1_CHAIN) {
		handle_chain(q, *spare);
		*spare = NULL;
	}
}

/* A direct kick: serve one chain here, hand what is left to the thread. */
static int direct_kick(struct fsq *q)
{
	struct fsreq *r = NULL;
	enum pop1_res res;
	bool more;

	if (!q->set)
		return -ENOENT;
	STAT_ADD(q->d, kicks, 1);
	res = pop_one(q, &r, &more);
	if (more)
		vqf_eventfd_signal(q->kick_fd);
	if (res == POP1_CHAIN)
		handle_chain(q, r);
	else
		free(r);
	return res == POP1_BROKEN ? -ENOENT : 0;
}

static void *queue_main(void *arg)
{
	struct fsq *q = arg;
	struct fsreq *r = NULL;
	bool ok = true;
	u64 max = q->hiprio ? 0 : q->d->cfg.poll_ns, spun = 0, t0;
	bool adapt = max && !q->d->cfg.poll_fixed;

	q->poll_win = adapt ? 0 : max;
	for (;;) {
		if (direct(q)) {
			direct_run(q, &r);
			if (!q_sleep(q))
				break;
			continue;
		}
		if (q->notif) {
			notif_flush(q);
			if (!q_sleep(q))
				break;
			continue;
		}
		if (ok) {
			vqf_vring_dev_disable_notify(q->vr);
			ok = pop_all(q, &r, false) != POP_BROKEN;
			if (ok && max && q_poll(q, &spun))
				continue;
			if (ok && !vqf_vring_dev_enable_notify(q->vr))
				continue;
		}
		t0 = adapt ? vqf_poll_now_ns() : 0;
		if (!q_sleep(q))
			break;
		/* How long the next chain took to come, polling included:
		 * grow the window if polling would have caught it.
		 */
		if (adapt && ok)
			q->poll_win = vqf_poll_adapt(q->poll_win, max, spun +
						     vqf_poll_now_ns() - t0);
		spun = 0;
	}
	free(r);
	return NULL;
}

int vqf_fsdev_kick(struct vqf_fsdev *d, unsigned int idx)
{
	struct fsq *q;
	struct fsreq *r = NULL;

	if (idx >= FSDEV_MAX_QUEUES)
		return -ENOENT;
	q = &d->q[idx];
	if (direct(q))
		return direct_kick(q);
	if (!d->cfg.inline_kick || q->notif)
		return q->set ? vqf_eventfd_signal(q->kick_fd) : -ENOENT;
	pthread_mutex_lock(&q->pop_lock);
	if (!q->vr || __atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE) ||
	    vqf_vring_dev_is_broken(q->vr)) {
		pthread_mutex_unlock(&q->pop_lock);
		return -ENOENT;
	}
	STAT_ADD(d, kicks, 1);
	/* Kicks stay enabled - each is a call into us - but with EVENT_IDX
	 * the driver kicks only past avail_event, which enable_notify moves.
	 */
	run_queue(q, &r, false);
	pthread_mutex_unlock(&q->pop_lock);
	free(r);
	return 0;
}

/* ---- the fault plan's poll timer ------------------------------------ */

/*
 * What a polling device does between notifications: push held
 * completions, send owed interrupts, and pop a queue whose last attempt
 * the plan refused.
 */
static void fault_poll(struct fsq *q)
{
	struct vqf_fsdev *d = q->d;
	struct fsreq *out[VQF_FAULT_HELD_MAX], *r = NULL;
	unsigned int nout = 0;
	bool notify = false, work;

	pthread_mutex_lock(&q->pop_lock);
	if (!q->vr || is_stopping(d) || vqf_vring_dev_is_broken(q->vr)) {
		pthread_mutex_unlock(&q->pop_lock);
		return;
	}
	pthread_mutex_lock(&q->push_lock);
	work = q->deferred || q->nheld || q->call_owed;
	/* stop_all() takes every pop_lock before it drops held ones. */
	if (q->nheld)
		notify = release_held_locked(q, out, &nout, false);
	notify |= q->call_owed;
	q->call_owed = false;
	pthread_mutex_unlock(&q->push_lock);
	if (notify && !vqf_eventfd_signal(q->call_fd))
		STAT_ADD(d, interrupts, 1);
	free_all(d, out, nout);
	if (q->deferred)
		run_queue(q, &r, true);
	pthread_mutex_unlock(&q->pop_lock);
	free(r);
	if (work)
		STAT_ADD(d, fault_polls, 1);
}

static void *tick_main(void *arg)
{
	struct vqf_fsdev *d = arg;
	struct pollfd pfd = { .fd = d->stop_fd, .events = POLLIN };
	unsigned int i, first = vqf_fsdev_first_request_queue(d);

	/* stop_fd is left unread: the queue threads wait on it too. */
	while (!is_stopping(d) && poll(&pfd, 1, (int)d->plan.tick_ms) == 0) {
		for (i = first; i < d->nq; i++)
			if (d->q[i].set)
				fault_poll(&d->q[i]);
	}
	return NULL;
}

/* ---- notifications -------------------------------------------------- */

/* Deliver queued notifications into buffers the driver posted. */
static void notif_flush(struct fsq *q)
{
	struct vqf_fsdev *d = q->d;
	struct fsreq *r;
	bool notify = false;
	int ret;

	pthread_mutex_lock(&d->nlock);
	while (d->nbacklog) {
		struct notif *n = d->backlog[0];
		struct vqf_dev_piece pc = { .base = n->buf, .len = n->len };
		u32 w;

		r = fsreq_new(q);
		if (!r)
			break;
		ret = vqf_vring_dev_pop(q->vr, &r->c);
		if (ret <= 0 && ret != -ENODATA && ret != -ENOBUFS) {
			free(r);
			if (ret < 0) {
				STAT_ADD(d, queue_broken, 1);
				set_needs_reset(d);
			}
			break;
		}
		r->nws = r->c.nr_wr;
		for (w = 0; w < r->nws; w++) {
			r->ws[w].base = r->c.seg[r->c.nr_rd + w].hva;
			r->ws[w].len = r->c.seg[r->c.nr_rd + w].len;
		}
		ret = ret > 0 ? vqf_dev_notify(r->ws, r->nws, n->code, &pc, 1,
					       NULL) : -ENOBUFS;
		if (ret > 0) {
			STAT_ADD(d, notifies, 1);
			memmove(d->backlog, d->backlog + 1,
				--d->nbacklog * sizeof(d->backlog[0]));
			free(n);
		} else {
			/* Too small a buffer: it goes back empty and the
			 * notification waits for the next one.
			 */
			STAT_ADD(d, chain_errors, 1);
		}
		pthread_mutex_lock(&q->push_lock);
		if (!vqf_vring_dev_push(q->vr, r->c.head, ret > 0 ? ret : 0))
			notify |= vqf_vring_dev_need_notify(q->vr);
		pthread_mutex_unlock(&q->push_lock);
		free(r);
	}
	pthread_mutex_unlock(&d->nlock);
	if (notify && !vqf_eventfd_signal(q->call_fd))
		STAT_ADD(d, interrupts, 1);
}

int vqf_fsdev_notify(void *dev, const struct iovec *iov, int iovcnt,
		     size_t len)
{
	struct vqf_fsdev *d = dev;
	struct fuse_out_header oh;
	struct notif *n;

	if (!has_notif(d) || len < sizeof(oh) ||
	    len > d->cfg.notify_buf_size || iovcnt < 1 ||
	    iov[0].iov_len < sizeof(oh) ||
	    !(vqf_fsdev_get_status(d) & VQF_S_DRIVER_OK)) {
		STAT_ADD(d, notifies_dropped, 1);
		return -ENOTCONN;
	}
	memcpy(&oh, iov[0].iov_base, sizeof(oh));
	n = malloc(sizeof(*n) + len);
	if (!n)
		return -ENOMEM;
	n->code = oh.error;
	n->len = (u32)vqf_iov_gather(n->buf, len - sizeof(oh), iov, iovcnt,
				 sizeof(oh));
	pthread_mutex_lock(&d->nlock);
	if (d->nbacklog == FSDEV_NOTIFY_BACKLOG) {
		pthread_mutex_unlock(&d->nlock);
		free(n);
		STAT_ADD(d, notifies_dropped, 1);
		return -ENOSPC;
	}
	d->backlog[d->nbacklog++] = n;
	pthread_mutex_unlock(&d->nlock);
	/* The queue thread delivers; wake it as a kick would. */
	vqf_eventfd_signal(d->q[1].kick_fd);
	return 0;
}

/* ---- status --------------------------------------------------------- */

static void stop_all(struct vqf_fsdev *d)
{
	unsigned int i;
	struct fsreq *r;

	pthread_mutex_lock(&d->lock);
	__atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&d->work_cond);
	pthread_mutex_unlock(&d->lock);
	vqf_eventfd_signal(d->stop_fd);
	if (d->tick_running)
		pthread_join(d->tick_thr, NULL);
	d->tick_running = false;
	/* The queue threads first: with direct kicks they take pop_lock. */
	for (i = 0; i < FSDEV_MAX_QUEUES; i++) {
		if (d->q[i].running)
			pthread_join(d->q[i].thr, NULL);
		d->q[i].running = false;
	}
	/* Wait out inline kicks in progress; later ones see stopping. */
	for (i = 0; i < FSDEV_MAX_QUEUES; i++)
		pthread_mutex_lock(&d->q[i].pop_lock);
	/* Work not yet started is dropped: its chains go back to the
	 * driver through detach_unused.
	 */
	pthread_mutex_lock(&d->lock);
	while ((r = d->work_head)) {
		d->work_head = r->next;
		fsreq_free(r);
		d->outstanding--;
	}
	d->work_tail = NULL;
	pthread_mutex_unlock(&d->lock);
	for (i = 0; i < d->nr_workers; i++)
		pthread_join(d->workers[i], NULL);
	/* Completions the plan held are dropped like unstarted work. */
	for (i = 0; i < FSDEV_MAX_QUEUES; i++) {
		struct fsq *q = &d->q[i];
		struct fsreq *held[VQF_FAULT_HELD_MAX];
		unsigned int n;

		pthread_mutex_lock(&q->push_lock);
		n = q->nheld;
		memcpy(held, q->held, n * sizeof(held[0]));
		q->nheld = 0;
		pthread_mutex_unlock(&q->push_lock);
		free_all(d, held, n);
		if (n)
			STAT_ADD(d, fault_held_dropped, n);
	}
	free(d->workers);
	d->workers = NULL;
	d->nr_workers = 0;
	/* Replies the filesystem still owes land in finish(), which no
	 * longer pushes; wait for them so nothing touches freed rings.
	 */
	pthread_mutex_lock(&d->lock);
	while (d->outstanding)
		pthread_cond_wait(&d->idle_cond, &d->lock);
	pthread_mutex_unlock(&d->lock);
	for (i = 0; i < FSDEV_MAX_QUEUES; i++) {
		vqf_vring_dev_destroy(d->q[i].vr);
		d->q[i].vr = NULL;
		pthread_mutex_unlock(&d->q[i].pop_lock);
	}
	{
		u64 v;

		while (read(d->stop_fd, &v, sizeof(v)) == sizeof(v))
			;
	}
}

static void reset(struct vqf_fsdev *d)
{
	unsigned int i;

	stop_all(d);
	pthread_mutex_lock(&d->nlock);
	for (i = 0; i < d->nbacklog; i++)
		free(d->backlog[i]);
	d->nbacklog = 0;
	pthread_mutex_unlock(&d->nlock);
	pthread_mutex_lock(&d->lock);
	for (i = 0; i < FSDEV_MAX_QUEUES; i++) {
		struct fsq *q = &d->q[i];

		q->set = false;
		q->kick_fd = q->call_fd = -1;
		q->hiprio = q->notif = false;
	}
	d->features = 0;
	d->nq = vqf_fsdev_num_queues(d);
	__atomic_store_n(&d->stopping, false, __ATOMIC_RELEASE);
	__atomic_store_n(&d->status, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->lock);
	pthread_rwlock_wrlock(&d->conn_lock);
	vqf_dev_conn_init(&d->conn);
	d->conn.max_write = d->conn.max_read = d->cfg.max_write;
	pthread_rwlock_unlock(&d->conn_lock);
	/* Nothing is served any more: no request is inside dax_lock. */
	dax_reset(d);
}

/* Queue @q's device half from its description (d->lock held). */
static int queue_ring(struct vqf_fsdev *d, struct fsq *q)
{
	struct vqf_vring_dev_cfg vc = {
		.num = q->num,
		.features = d->features & VQF_VRING_FEATURES,
		.addr = q->addr,
		.mem = d->mem,
		.last_avail_idx = q->base_avail,
		.used_idx = q->base_used,
		.stats = &q->vs,
	};

	q->hiprio = q->idx == 0;
	q->notif = has_notif(d) && q->idx == 1;
	q->seg_cap = q->num + 16 < FSDEV_SEG_CAP ? q->num + 16 :
		     FSDEV_SEG_CAP;
	q->seq = q->rolled = q->releases = 0;
	q->popped = q->base_avail;
	q->stall_left = q->fill_want = q->fill_ticks_left = 0;
	q->deferred = q->dup_done = q->call_owed = false;
	q->avail_idx = vqf_gmem_ptr(d->mem, q->addr.avail + 2, 2);
	memset(&q->vs, 0, sizeof(q->vs));
	return vqf_vring_dev_create(&vc, &q->vr) ? -EIO : 0;
}

static int start(struct vqf_fsdev *d)
{
	unsigned int i, first = vqf_fsdev_first_request_queue(d);

	if (!d->q[0].set || !d->q[first].set)
		return -EINVAL;
	for (i = 0; i < d->nq; i++)
		if (d->q[i].set && queue_ring(d, &d->q[i]))
			return -EIO;
	d->workers = calloc(d->cfg.threads ? d->cfg.threads : 1,
			    sizeof(pthread_t));
	if (!d->workers)
		return -EIO;
	for (i = 0; i < d->cfg.threads; i++) {
		if (pthread_create(&d->workers[i], NULL, worker_main, d))
			return -EIO;
		d->nr_workers++;
	}
	for (i = 0; i < d->nq; i++) {
		struct fsq *q = &d->q[i];

		if (!q->set || (d->cfg.inline_kick && !q->notif))
			continue;
		if (pthread_create(&q->thr, NULL, queue_main, q))
			return -EIO;
		q->running = true;
	}
	if (d->faulty) {
		if (pthread_create(&d->tick_thr, NULL, tick_main, d))
			return -EIO;
		d->tick_running = true;
	}
	return 0;
}

int vqf_fsdev_set_status(struct vqf_fsdev *d, u8 status)
{
	u8 old = vqf_fsdev_get_status(d), add;
	int ret = 0;

	if (!status) {
		reset(d);
		return 0;
	}
	if ((old & ~status) & ~VQF_S_NEEDS_RESET)
		return -EINVAL;		/* bits only go away with a reset */
	add = status & ~old;
	if ((add & VQF_S_DRIVER) && !(status & VQF_S_ACKNOWLEDGE))
		return -EINVAL;
	if (add & VQF_S_FEATURES_OK) {
		pthread_mutex_lock(&d->lock);
		if (!(old & VQF_S_DRIVER) ||
		    !(d->features & (1ULL << VIRTIO_F_VERSION_1)))
			status &= ~VQF_S_FEATURES_OK;	/* refused */
		pthread_mutex_unlock(&d->lock);
	}
	if (add & VQF_S_DRIVER_OK) {
		if (!(status & VQF_S_FEATURES_OK))
			return -EINVAL;
		pthread_mutex_lock(&d->lock);
		ret = start(d);
		pthread_mutex_unlock(&d->lock);
		if (ret) {
			if (ret == -EIO)
				status |= VQF_S_NEEDS_RESET;
			status &= ~VQF_S_DRIVER_OK;
		}
	}
	/* Only adds bits (checked above; what was refused was not set), and
	 * a queue thread started above may have set NEEDS_RESET meanwhile:
	 * an or, not a store, so that is not lost.
	 */
	__atomic_fetch_or(&d->status, status, __ATOMIC_RELEASE);
	return ret;
}

void vqf_fsdev_free(struct vqf_fsdev *d)
{
	unsigned int i;

	if (!d)
		return;
	reset(d);
	dax_fini(d);
	close(d->stop_fd);
	for (i = 0; i < FSDEV_MAX_QUEUES; i++) {
		pthread_mutex_destroy(&d->q[i].push_lock);
		pthread_mutex_destroy(&d->q[i].pop_lock);
	}
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->work_cond);
	pthread_cond_destroy(&d->idle_cond);
	pthread_rwlock_destroy(&d->conn_lock);
	pthread_mutex_destroy(&d->nlock);
	pthread_mutex_destroy(&d->slock);
	free(d);
}
