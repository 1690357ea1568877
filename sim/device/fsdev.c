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
 *   d->slock     counters
 */
#include "vqf_fsdev.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "vqf_vring_thread.h"

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
};

/* One popped chain, from pop to push. */
struct fsreq {
	struct fsq *q;
	struct fsreq *next;		/* work list */
	struct vqf_chain c;
	struct vqf_dev_req dreq;
	struct vqf_dev_seg *rs;		/* seg_cap each, after seg[] */
	struct vqf_dev_wseg *ws;
	u32 nrs, nws;
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

int vqf_fsdev_new(const struct vqf_fsdev_cfg *cfg, const struct vqf_gmem *mem,
		  struct vqf_fsdev **out)
{
	struct vqf_fsdev *d;
	size_t tl;
	unsigned int i;

	if (!cfg || !cfg->be || !mem || !cfg->tag)
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
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cfg = *cfg;
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
	if (!(d->status & VQF_S_DRIVER) || (d->status & VQF_S_FEATURES_OK))
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

int vqf_fsdev_set_queue(struct vqf_fsdev *d, unsigned int idx,
			unsigned int num, const struct vqf_vring_addr *addr,
			int kick_fd, int call_fd)
{
	int ret = 0;

	pthread_mutex_lock(&d->lock);
	if (!(d->status & VQF_S_FEATURES_OK) ||
	    (d->status & VQF_S_DRIVER_OK))
		ret = -EPERM;
	else if (idx >= d->nq)
		ret = -ENOENT;
	else if (!num || (num & (num - 1)) || num > d->cfg.queue_size_max ||
		 kick_fd < 0 || call_fd < 0 || !addr)
		ret = -EINVAL;
	else if (!vqf_gmem_ptr(d->mem, addr->desc, vqf_vring_desc_bytes(num)) ||
		 !vqf_gmem_ptr(d->mem, addr->avail,
			       vqf_vring_avail_bytes(num)) ||
		 !vqf_gmem_ptr(d->mem, addr->used, vqf_vring_used_bytes(num)))
		ret = -EFAULT;
	if (!ret) {
		struct fsq *q = &d->q[idx];

		q->num = num;
		q->addr = *addr;
		q->kick_fd = kick_fd;
		q->call_fd = call_fd;
		q->set = true;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

u8 vqf_fsdev_get_status(const struct vqf_fsdev *d)
{
	return __atomic_load_n(&d->status, __ATOMIC_ACQUIRE);
}

void vqf_fsdev_get_stats(struct vqf_fsdev *d, struct vqf_fsdev_stats *out)
{
	pthread_mutex_lock(&d->slock);
	*out = d->st;
	pthread_mutex_unlock(&d->slock);
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

/* Push @r's chain with @len bytes written; wake the driver if it asked. */
static void finish(struct fsreq *r, u32 len)
{
	struct fsq *q = r->q;
	struct vqf_fsdev *d = q->d;
	bool notify = false, stopping;

	/* After a reset began, the rings belong to the driver again.  Read
	 * under d->lock, where stop_all() sets it (helgrind sees the order;
	 * a push racing the flag is still before the rings are destroyed:
	 * stop_all() waits for outstanding to drop).
	 */
	pthread_mutex_lock(&d->lock);
	stopping = d->stopping;
	pthread_mutex_unlock(&d->lock);
	pthread_mutex_lock(&q->push_lock);
	if (!stopping && !vqf_vring_dev_push(q->vr, r->c.head, len))
		notify = vqf_vring_dev_need_notify(q->vr);
	pthread_mutex_unlock(&q->push_lock);
	if (notify && !vqf_eventfd_signal(q->call_fd))
		STAT_ADD(d, interrupts, 1);
	fsreq_free(r);

	pthread_mutex_lock(&d->lock);
	if (!--d->outstanding)
		pthread_cond_broadcast(&d->idle_cond);
	pthread_mutex_unlock(&d->lock);
}

/* Copies up to @len bytes of @iov, from byte @skip on, to @dst. */
static size_t iov_gather(void *dst, size_t len, const struct iovec *iov,
			 int iovcnt, size_t skip)
{
	size_t k = 0;
	int i;

	for (i = 0; i < iovcnt && k < len; i++) {
		size_t n = iov[i].iov_len;

		if (skip >= n) {
			skip -= n;
			continue;
		}
		n -= skip;
		if (n > len - k)
			n = len - k;
		memcpy((u8 *)dst + k, (const u8 *)iov[i].iov_base + skip, n);
		k += n;
		skip = 0;
	}
	return k;
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
		return;
	}
	if (op != FUSE_INIT || len <= sizeof(struct fuse_out_header))
		return;
	memset(&io, 0, sizeof(io));
	got = (u32)iov_gather(&io, sizeof(io), iov, iovcnt,
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

/* Hand a parsed request to the backend; @r is gone afterwards. */
static void serve(struct vqf_fsdev *d, struct fsreq *r)
{
	u32 flen = vqf_dev_flat_len(&r->dreq);
	void *flat = malloc(flen ? flen : 1);
	int ret;

	if (!flat || vqf_dev_flatten(&r->dreq, flat, flen) < 0) {
		free(flat);
		STAT_ADD(d, backend_errors, 1);
		/* Answer rather than leave the guest waiting. */
		ret = vqf_dev_reply_req(&r->dreq, -ENOMEM, NULL, 0, r->ws,
					r->nws, NULL);
		finish(r, ret > 0 ? (u32)ret : 0);
		return;
	}
	STAT_ADD(d, bytes_in, flen);
	ret = vqf_backend_process(d->cfg.be, flat, flen, reply_cb, r);
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

	if (ret) {
		ret = vqf_dev_reply_req(&r->dreq, 0, NULL, 0, r->ws, r->nws,
					NULL);
		if (ret < 0 || r->dreq.noreply) {
			if (ret < 0)
				STAT_ADD(d, refused_no_room, 1);
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
 * Pops and handles every available chain.  Returns false when the queue
 * broke (the device then needs a reset).  Pop side: one caller at a time.
 */
static bool pop_all(struct fsq *q, struct fsreq **spare)
{
	struct vqf_fsdev *d = q->d;
	struct fsreq *r = *spare;
	int ret;

	for (;;) {
		if (!r)
			r = fsreq_new(q);
		if (!r)
			break;	/* out of memory: retry on the next kick */
		ret = vqf_vring_dev_pop(q->vr, &r->c);
		if (ret == 0)
			break;
		pthread_mutex_lock(&d->lock);
		d->outstanding++;
		pthread_mutex_unlock(&d->lock);
		if (ret == -ENODATA || ret == -ENOBUFS) {
			STAT_ADD(d, chain_errors, 1);
			finish(r, 0);
			r = NULL;
			continue;
		}
		if (ret < 0) {
			/* The driver broke the ring: this queue is dead
			 * until reset; the others carry on.
			 */
			pthread_mutex_lock(&d->lock);
			d->outstanding--;
			pthread_mutex_unlock(&d->lock);
			STAT_ADD(d, queue_broken, 1);
			set_needs_reset(d);
			*spare = r;
			return false;
		}
		handle_chain(q, r);
		r = NULL;
	}
	*spare = r;
	return true;
}

static void *queue_main(void *arg)
{
	struct fsq *q = arg;
	struct fsreq *r = NULL;
	bool ok = true;

	for (;;) {
		if (q->notif) {
			notif_flush(q);
			if (!q_sleep(q))
				break;
			continue;
		}
		if (ok) {
			vqf_vring_dev_disable_notify(q->vr);
			ok = pop_all(q, &r);
			if (ok && !vqf_vring_dev_enable_notify(q->vr))
				continue;
		}
		if (!q_sleep(q))
			break;
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
	while (pop_all(q, &r) && !vqf_vring_dev_enable_notify(q->vr))
		;
	pthread_mutex_unlock(&q->pop_lock);
	free(r);
	return 0;
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
	n->len = (u32)iov_gather(n->buf, len - sizeof(oh), iov, iovcnt,
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
	/* Wait out inline kicks in progress; later ones see stopping. */
	for (i = 0; i < FSDEV_MAX_QUEUES; i++)
		pthread_mutex_lock(&d->q[i].pop_lock);
	for (i = 0; i < FSDEV_MAX_QUEUES; i++) {
		if (d->q[i].running)
			pthread_join(d->q[i].thr, NULL);
		d->q[i].running = false;
	}
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
}

static int start(struct vqf_fsdev *d)
{
	unsigned int i, first = vqf_fsdev_first_request_queue(d);
	int ret;

	if (!d->q[0].set || !d->q[first].set)
		return -EINVAL;
	for (i = 0; i < d->nq; i++) {
		struct fsq *q = &d->q[i];
		struct vqf_vring_dev_cfg vc = {
			.num = q->num,
			.features = d->features & VQF_VRING_FEATURES,
			.addr = q->addr,
			.mem = d->mem,
			.stats = &q->vs,
		};

		if (!q->set)
			continue;
		q->hiprio = i == 0;
		q->notif = has_notif(d) && i == 1;
		q->seg_cap = q->num + 16 < FSDEV_SEG_CAP ? q->num + 16 :
			     FSDEV_SEG_CAP;
		memset(&q->vs, 0, sizeof(q->vs));
		ret = vqf_vring_dev_create(&vc, &q->vr);
		if (ret)
			return -EIO;
	}
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
	__atomic_store_n(&d->status, status | (old & VQF_S_NEEDS_RESET),
			 __ATOMIC_RELEASE);
	return ret;
}

void vqf_fsdev_free(struct vqf_fsdev *d)
{
	unsigned int i;

	if (!d)
		return;
	reset(d);
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
