// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gdrv.c - the simulated guest's virtio-fs transport (see vqf_gdrv.h).
 *
 * Locks, outermost first:
 *   g->lock   the in-flight list, callers, shutdown state
 *   q->lock   one per virtqueue: ring calls, pending list (and, for
 *             hiprio, the forget queue)
 *   g->slock  counters
 * A request's callback runs with no lock held.
 */
#include "vqf_gdrv.h"
#include "vqf_forget.h"
#include "vqf_vring_drv.h"
#include "vqf_vring_poll.h"
#include "vqf_vring_thread.h"
#include "vring_hg.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#define GDRV_MAX_QUEUES		(2 + 64)
#define GDRV_INT_REQ_BIT	1ULL	/* FUSE_INT_REQ_BIT */
#define GDRV_FORGET_BUF		VQF_FORGET_DEFAULT_MAX_REQ
#define GDRV_FORGET_MAX_REQ	(VQF_FORGET_BATCH_HDR_SIZE + \
				 VQF_DEV_DEF_FORGET_MAX * \
				 sizeof(struct fuse_forget_one))
#define GDRV_NOTIFY_BUFS	16
/*
 * A chain may not be longer than its queue (virtio 1.2, 2.7.5.3.1), even
 * when it goes indirect.  The longest chain the client builds is an in
 * header, the in arguments, an in page run, the out header, the out
 * arguments and an out page run: 6, and queue sizes are powers of two.
 */
#define GDRV_MIN_QUEUE_SIZE	8
#define GDRV_SHUTDOWN_INTERRUPTS 16
#define GDRV_IPOOL_PER_SLOT	16
/* Segments of a request built on the stack (more: allocated). */
#define GDRV_SG_STACK		8

enum greq_kind { GREQ_CALL, GREQ_FORGET, GREQ_INTERRUPT, GREQ_NOTIFY };

struct greq {
	enum greq_kind kind;
	struct vqf_gdrv_call *c;
	void (*done)(void *ctx, struct vqf_gdrv_call *c);
	void *ctx;
	u64 unique;
	u32 opcode;
	struct gq *q;
	void *wire;		/* guest RAM: struct vqf_req copy + argbuf */
	void *argbuf;
	u32 forget_n;		/* GREQ_FORGET: entries carried */
	bool added;		/* on the ring (else on the pending list) */
	u32 used_len;		/* what the used ring said */
	u32 copied;		/* argbuf bytes (GREQ_CALL) */
	struct greq *next;	/* pending list */
	struct greq *iprev, *inext;	/* in-flight list (GREQ_CALL) */
	unsigned int nrd, nwr;
	struct vqf_vring_gseg seg[];
};

struct gq {
	struct vqf_gdrv *g;
	unsigned int idx, num;
	pthread_mutex_t lock;
	struct vqf_vring_drv *vr;
	struct vqf_vring_drv_stats vs;
	void *ring_mem;
	struct vqf_vring_ipool ipool;
	void *ipool_mem;
	struct vqf_vring_indirect_ops iops;
	int kick_fd, call_fd;
	pthread_t thr;
	bool running;
	struct greq *pend_head, *pend_tail;
	u64 npend;
	/* Callers spinning on the used ring (lock): while there are any,
	 * interrupts stay off and the last one to leave turns them on.
	 */
	unsigned int pollers;
	u64 poll_win;		/* (lock) current poll window, ns */
};

struct vqf_gdrv {
	struct vqf_gdrv_cfg cfg;
	const struct vqf_gdrv_dev_ops *ops;
	void *dev;
	struct vqf_gram *ram;
	u64 features;
	unsigned int nq, first_req, nreq;
	bool has_notif;
	u32 notify_buf_size;
	struct fuse_init_out init_out;

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* callers left, forgets drained */
	struct greq *inflight;		/* GREQ_CALL requests */
	u64 ninflight;
	unsigned int callers;
	bool closing;			/* shutting down: refuse new calls */
	pthread_rwlock_t kick_lock;	/* kicks vs the reset */
	bool dead;			/* reset: refuse new requests */
	bool reset_done;
	int fail_errno;			/* what the reset fails calls with */
	bool resetter_started;		/* a broken ring's reset thread */
	bool lost;			/* vqf_gdrv_lost(): no device */
	pthread_t resetter;
	bool poll;			/* the device serves kicks inline */
	u64 unique;			/* atomic */
	unsigned int rr;		/* atomic: queue selection */
	int stop_fd;

	/* Forgets, under the hiprio queue's lock. */
	struct vqf_forget_queue fq;
	struct fuse_forget_one *fslots;
	u32 fcap;
	u32 forgets_inflight;

	pthread_mutex_t slock;
	struct vqf_gdrv_stats st;

	struct gq q[GDRV_MAX_QUEUES];
};

#define STAT_ADD(g, field, n) do {				\
	pthread_mutex_lock(&(g)->slock);			\
	(g)->st.field += (n);					\
	pthread_mutex_unlock(&(g)->slock);			\
} while (0)

static bool is_dead(struct vqf_gdrv *g)
{
	return __atomic_load_n(&g->dead, __ATOMIC_ACQUIRE);
}

/* CLOCK_REALTIME @ms from now, for pthread_cond_timedwait(). */
static void deadline(struct timespec *ts, unsigned int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void zero_page(void *ctx, void *page, u32 offset, u32 len)
{
	(void)ctx;
	memset((u8 *)page + offset, 0, len);
}

static const struct vqf_page_ops page_ops = { .zero = zero_page };

static void greq_free(struct vqf_gdrv *g, struct greq *r)
{
	vqf_gram_release(g->ram, r->wire);
	free(r);
}

/* ---- the ring ------------------------------------------------------- */

/* Publish @r on its queue (q->lock held).  Returns 0, -ENOSPC, -EIO. */
static int add_locked(struct gq *q, struct greq *r)
{
	int ret = vqf_vring_drv_add(q->vr, r->seg, r->nrd,
				    r->nwr ? r->seg + r->nrd : NULL, r->nwr,
				    r);

	if (!ret) {
		r->added = true;
		if (q->g->cfg.trace)
			q->g->cfg.trace(q->g->cfg.trace_ctx, VQF_EV_ADDED,
					r->unique, r->opcode, q->idx);
	}
	return ret;
}

static void kick(struct gq *q, bool need)
{
	struct vqf_gdrv *g = q->g;

	if (!need)
		return;
	/* The notify register: an eventfd write, or with an inline device
	 * the device's work itself, in this thread.  Never into a device
	 * being reset (the read side of kick_lock; shutdown takes the write
	 * side once dead is set).
	 */
	pthread_rwlock_rdlock(&g->kick_lock);
	if (!is_dead(g)) {
		STAT_ADD(g, kicks, 1);
		g->ops->kick(g->dev, q->idx);
	}
	pthread_rwlock_unlock(&g->kick_lock);
}

/* Add pending requests while the ring has room (q->lock held). */
static bool dispatch_pending_locked(struct gq *q)
{
	struct greq *r;
	bool added = false;

	while ((r = q->pend_head)) {
		if (add_locked(q, r))
			break;
		q->pend_head = r->next;
		if (!q->pend_head)
			q->pend_tail = NULL;
		q->npend--;
		added = true;
	}
	return added && vqf_vring_drv_kick_prepare(q->vr);
}

static void pend_locked(struct gq *q, struct greq *r)
{
	struct vqf_gdrv *g = q->g;

	r->next = NULL;
	if (q->pend_tail)
		q->pend_tail->next = r;
	else
		q->pend_head = r;
	q->pend_tail = r;
	q->npend++;
	pthread_mutex_lock(&g->slock);
	g->st.pending_queued++;
	if (q->npend > g->st.pending_max)
		g->st.pending_max = q->npend;
	pthread_mutex_unlock(&g->slock);
}

/*
 * Queue @r on @q: straight onto the ring, or behind earlier waiters.
 * With @reap the caller will take the used ring itself right after the
 * kick (an inline device has answered by then): it counts as a poller
 * from before the request is published, so the device sees interrupts
 * off and signals no completion thread for it.  The caller leaves with
 * drain_used(q, true).
 */
static int enqueue(struct gq *q, struct greq *r, bool reap)
{
	bool need = false;
	int ret = 0;

	pthread_mutex_lock(&q->lock);
	/* Shutdown sets dead, then sweeps every queue under its lock: an
	 * enqueue after the sweep sees dead here, one before is swept.
	 */
	if (is_dead(q->g)) {
		ret = -ENOTCONN;
	} else if (vqf_vring_drv_is_broken(q->vr)) {
		ret = -EIO;
	} else {
		if (reap) {
			q->pollers++;
			vqf_vring_drv_disable_cb(q->vr);
		}
		if (q->pend_head) {
			pend_locked(q, r);
		} else {
			ret = add_locked(q, r);
			if (ret == -ENOSPC) {
				pend_locked(q, r);
				ret = 0;
			} else if (!ret) {
				need = vqf_vring_drv_kick_prepare(q->vr);
			}
		}
		if (ret && reap && !--q->pollers)
			vqf_vring_drv_enable_cb(q->vr);
	}
	pthread_mutex_unlock(&q->lock);
	if (need && q->g->cfg.trace)
		q->g->cfg.trace(q->g->cfg.trace_ctx, VQF_EV_KICKED, r->unique,
				r->opcode, q->idx);
	kick(q, need);
	return ret;
}

/* ---- forgets -------------------------------------------------------- */

static int drain_used(struct gq *q, bool leave);

/* Send what the forget queue holds while hiprio has room (lock held). */
static bool send_forgets_locked(struct vqf_gdrv *g, struct gq *q)
{
	bool added = false;

	while (vqf_forget_queue_len(&g->fq) && !is_dead(g)) {
		struct greq *r = calloc(1, sizeof(*r) + sizeof(r->seg[0]));
		u32 nr = 0;
		int len;

		if (!r)
			break;
		r->wire = vqf_gram_alloc(g->ram, GDRV_FORGET_BUF, false);
		if (!r->wire) {
			free(r);
			break;
		}
		r->kind = GREQ_FORGET;
		r->q = q;
		r->unique = __atomic_add_fetch(&g->unique, 2,
					       __ATOMIC_RELAXED);
		/* No bigger than the device's parser takes (forget_max). */
		len = vqf_forget_build(&g->fq, r->wire, GDRV_FORGET_BUF,
				       GDRV_FORGET_MAX_REQ, r->unique, true,
				       &nr);
		if (len < 0) {
			greq_free(g, r);
			break;
		}
		r->opcode = nr > 1 ? FUSE_BATCH_FORGET : FUSE_FORGET;
		r->forget_n = nr;
		r->nrd = 1;
		r->seg[0].addr = vqf_gram_gpa(g->ram, r->wire);
		r->seg[0].len = (u32)len;
		if (add_locked(q, r)) {
			greq_free(g, r);
			break;	/* ring full: the next completion retries */
		}
		vqf_forget_consume(&g->fq, nr);
		g->forgets_inflight++;
		added = true;
		pthread_mutex_lock(&g->slock);
		if (nr > 1)
			g->st.batch_forgets++;
		else
			g->st.forgets++;
		g->st.forget_entries += nr;
		g->st.by_opcode[r->opcode]++;
		g->st.bytes_copied += (u32)len;
		pthread_mutex_unlock(&g->slock);
	}
	return added && vqf_vring_drv_kick_prepare(q->vr);
}

static int forget_grow_locked(struct vqf_gdrv *g)
{
	u32 ncap = g->fcap ? g->fcap * 2 : 256, n, i;
	struct fuse_forget_one *ns = malloc(ncap * sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	n = g->fq.count;
	for (i = 0; i < n; i++)
		ns[i] = g->fslots[(g->fq.head + i) % g->fcap];
	free(g->fslots);
	g->fslots = ns;
	g->fcap = ncap;
	vqf_forget_queue_init(&g->fq, ns, ncap);
	g->fq.count = n;
	return 0;
}

int vqf_gdrv_forget(struct vqf_gdrv *g, u64 nodeid, u64 nlookup)
{
	struct gq *q = &g->q[0];
	bool need;
	int ret;

	if (!nodeid || !nlookup)
		return -EINVAL;
	pthread_mutex_lock(&q->lock);
	if (is_dead(g)) {
		pthread_mutex_unlock(&q->lock);
		return -ENOTCONN;
	}
	ret = vqf_forget_queue_push(&g->fq, nodeid, nlookup);
	if (ret == -ENOSPC || (ret == -EINVAL && !g->fcap)) {
		ret = forget_grow_locked(g);
		if (!ret)
			ret = vqf_forget_queue_push(&g->fq, nodeid, nlookup);
	}
	/* A device that serves kicks in this thread has answered the FORGET
	 * by the time the kick returns: take it off the used ring here, as a
	 * call's caller does (see enqueue()), rather than have its interrupt
	 * wake the completion thread.
	 */
	if (g->poll) {
		q->pollers++;
		vqf_vring_drv_disable_cb(q->vr);
	}
	need = !ret && send_forgets_locked(g, q);
	pthread_mutex_unlock(&q->lock);
	kick(q, need);
	if (g->poll)
		drain_used(q, true);
	return ret;
}

int vqf_gdrv_forget_flush(struct vqf_gdrv *g)
{
	struct gq *q = &g->q[0];
	bool need;
	int ret = 0;

	pthread_mutex_lock(&q->lock);
	need = send_forgets_locked(g, q);
	pthread_mutex_unlock(&q->lock);
	kick(q, need);
	pthread_mutex_lock(&g->lock);
	for (;;) {
		u32 left;

		bool broken;

		pthread_mutex_lock(&q->lock);
		left = vqf_forget_queue_len(&g->fq) + g->forgets_inflight;
		broken = vqf_vring_drv_is_broken(q->vr);
		pthread_mutex_unlock(&q->lock);
		if (!left)
			break;
		if (broken) {
			ret = -EIO;	/* shutdown accounts for them */
			break;
		}
		if (is_dead(g)) {
			ret = -ENOTCONN;
			break;
		}
		/* A forget completion decrements under q->lock, then
		 * broadcasts under g->lock, which we hold while checking.
		 */
		pthread_cond_wait(&g->cond, &g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return ret;
}

/* ---- completion ------------------------------------------------------ */

static void inflight_del_locked(struct vqf_gdrv *g, struct greq *r)
{
	if (r->iprev)
		r->iprev->inext = r->inext;
	else
		g->inflight = r->inext;
	if (r->inext)
		r->inext->iprev = r->iprev;
	r->iprev = r->inext = NULL;
	g->ninflight--;
}

/* Ends a caller's request: exactly once, by whoever takes it off the
 * in-flight list.
 */
static void end_call(struct vqf_gdrv *g, struct greq *r, int result,
		     bool failed)
{
	struct vqf_gdrv_call *c = r->c;

	pthread_mutex_lock(&g->lock);
	inflight_del_locked(g, r);
	c->priv = NULL;
	if (g->closing && !g->ninflight)
		pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	c->result = result;
	/* completed is counted by complete_one(), with its other stats. */
	if (failed)
		STAT_ADD(g, failed, 1);
	if (g->cfg.trace)
		g->cfg.trace(g->cfg.trace_ctx, VQF_EV_COMPLETED, r->unique,
			     r->opcode, r->q->idx);
	r->done(r->ctx, c);
	greq_free(g, r);
}

static void repost_notify(struct gq *q, struct greq *r);

static void complete_one(struct gq *q, struct greq *r, u32 len)
{
	struct vqf_gdrv *g = q->g;
	struct vqf_req_stats rs;
	struct vqf_req *w;
	int ret;

	switch (r->kind) {
	case GREQ_FORGET:
		pthread_mutex_lock(&q->lock);
		g->forgets_inflight--;
		pthread_mutex_unlock(&q->lock);
		greq_free(g, r);
		pthread_mutex_lock(&g->lock);
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
		return;
	case GREQ_INTERRUPT:
		greq_free(g, r);
		return;
	case GREQ_NOTIFY: {
		struct fuse_out_header oh;

		/* Untrusted: a notification has unique 0 and says its
		 * length; anything else is counted and dropped.
		 */
		memcpy(&oh, r->wire, sizeof(oh));
		if (len >= sizeof(oh) && len <= g->notify_buf_size &&
		    oh.len == len && oh.unique == 0 && oh.error > 0) {
			STAT_ADD(g, notifications, 1);
			if (g->cfg.notify)
				g->cfg.notify(g->cfg.notify_ctx, oh.error,
					      (u8 *)r->wire + sizeof(oh),
					      len - (u32)sizeof(oh));
		} else {
			STAT_ADD(g, bad_replies, 1);
		}
		repost_notify(q, r);
		return;
	}
	case GREQ_CALL:
		break;
	}
	w = r->wire;
	/* One copy of the device-written header, then checks on ours. */
	memcpy(&r->c->req.out_h, &w->out_h, sizeof(w->out_h));
	memset(&rs, 0, sizeof(rs));
	ret = vqf_req_complete(&r->c->req, r->argbuf, len, &page_ops, NULL,
			       &rs);
	pthread_mutex_lock(&g->slock);
	/* vqf_req_stats is all u64 counters: add them as an array. */
	{
		u64 *dst = (u64 *)&g->st.req;
		const u64 *src = (const u64 *)&rs;
		size_t i;

		for (i = 0; i < sizeof(rs) / sizeof(u64); i++)
			dst[i] += src[i];
	}
	if (ret)
		g->st.bad_replies++;
	g->st.completed++;
	pthread_mutex_unlock(&g->slock);
	/* A refused reply keeps vqf_req_complete()'s errno: a lying device
	 * is not a server's EIO.
	 */
	end_call(g, r, ret ? ret : r->c->req.out_h.error, false);
}

static void repost_notify(struct gq *q, struct greq *r)
{
	bool need = false;

	pthread_mutex_lock(&q->lock);
	if (is_dead(q->g) || add_locked(q, r)) {
		pthread_mutex_unlock(&q->lock);
		greq_free(q->g, r);
		return;
	}
	need = vqf_vring_drv_kick_prepare(q->vr);
	pthread_mutex_unlock(&q->lock);
	kick(q, need);
}

static void *resetter_main(void *arg)
{
	vqf_gdrv_shutdown(arg);
	return NULL;
}

/*
 * A device that broke a used ring may still hold any buffer of any queue,
 * so the completions it did post cannot be trusted either, and the calls
 * in flight would wait for ever.  Reset the device, as a driver that sees
 * a broken virtqueue must before it may reclaim buffers, and fail what it
 * held with -EIO: none hangs, none completes twice.  The reset joins the
 * completion threads, so it runs on a thread of its own (joined by
 * vqf_gdrv_free()); this one returns to its loop and sees the stop.
 */
static void reset_broken(struct vqf_gdrv *g, int err)
{
	bool start;

	pthread_mutex_lock(&g->lock);
	start = !g->resetter_started && !g->closing;
	if (start) {
		g->fail_errno = err;
		g->resetter_started = !pthread_create(&g->resetter, NULL,
						      resetter_main, g);
		if (!g->resetter_started)
			g->fail_errno = -ENOTCONN;
	}
	pthread_mutex_unlock(&g->lock);
	if (start)
		STAT_ADD(g, broken_resets, 1);
}

/*
 * Takes every used buffer off @q and completes them outside the lock;
 * then refills the ring from the pending list (and, on hiprio, from the
 * forget queue).  Returns how many were taken.  Interrupts are enabled
 * again at the end (and the ring re-checked) unless callers are polling
 * it: the last of them does it when it leaves.  @leave: a poller
 * leaving, in the same lock round.
 */
static int drain_used(struct gq *q, bool leave)
{
	struct vqf_gdrv *g = q->g;
	struct greq *done = NULL, **tail = &done, *r;
	bool need;
	int n = 0, ret;

	pthread_mutex_lock(&q->lock);
	if (leave)
		q->pollers--;
	do {
		void *cookie;
		u32 len;

		vqf_vring_drv_disable_cb(q->vr);
		while ((ret = vqf_vring_drv_get_buf(q->vr, &cookie, &len)) > 0) {
			r = cookie;
			r->used_len = len;
			r->added = false;
			r->next = NULL;
			*tail = r;
			tail = &r->next;
			n++;
		}
		if (ret < 0) {
			/* The device broke the used ring; the queue is
			 * dead, its requests are failed at shutdown.
			 */
			if (ret != -EIO)	/* -EIO: broken before */
				STAT_ADD(g, ring_errors, 1);
			break;
		}
	} while (!q->pollers && !vqf_vring_drv_enable_cb(q->vr));
	need = dispatch_pending_locked(q);
	if (q->idx == 0)
		need |= send_forgets_locked(g, q);
	pthread_mutex_unlock(&q->lock);
	kick(q, need);
	if (ret < 0) {
		/* Wake forget_flush() waiters: nothing more will come. */
		pthread_mutex_lock(&g->lock);
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
		if (ret != -EIO)
			reset_broken(g, -EIO);
	}
	while ((r = done)) {
		done = r->next;
		complete_one(q, r, r->used_len);
	}
	return n;
}

static void *irq_main(void *arg)
{
	struct gq *q = arg;
	s64 n;

	while ((n = vqf_eventfd_wait_stop(q->call_fd, q->g->stop_fd)) >= 0) {
		if (n > 0)
			STAT_ADD(q->g, irqs, 1);
		drain_used(q, false);
	}
	return NULL;
}

/* ---- submission ------------------------------------------------------ */

static struct gq *pick_queue(struct vqf_gdrv *g, u32 opcode,
			     unsigned int forced)
{
	static __thread unsigned int tl_slot;	/* 0: not yet assigned */
	unsigned int i;

	if (forced)
		return forced - 1 < g->nq ? &g->q[forced - 1] : NULL;
	if (opcode == FUSE_FORGET || opcode == FUSE_BATCH_FORGET ||
	    opcode == FUSE_INTERRUPT)
		return &g->q[0];
	if (g->nreq == 1)
		return &g->q[g->first_req];
	if (g->cfg.select == VQF_GDRV_SEL_RR) {
		i = __atomic_fetch_add(&g->rr, 1, __ATOMIC_RELAXED);
	} else {
		if (!tl_slot)
			tl_slot = __atomic_add_fetch(&g->rr, 1,
						     __ATOMIC_RELAXED);
		i = tl_slot - 1;
	}
	return &g->q[g->first_req + i % g->nreq];
}

/* Build the wire copy and the segment list of a caller's request. */
static int prepare(struct vqf_gdrv *g, struct vqf_gdrv_call *c,
		   struct greq **out)
{
	struct vqf_req *req = &c->req;
	struct vqf_sg_counts cnt;
	struct vqf_sg sg_small[GDRV_SG_STACK], *sg;
	struct greq *r;
	u32 asz;
	unsigned int nsg, i;
	int n, ret = -EINVAL;

	if (vqf_req_check(req))
		return -EINVAL;
	nsg = vqf_req_sg_count(req);
	asz = vqf_req_argbuf_size(req);
	if (!nsg)
		return -EINVAL;
	r = calloc(1, sizeof(*r) + nsg * sizeof(r->seg[0]));
	sg = nsg <= GDRV_SG_STACK ? sg_small : malloc(nsg * sizeof(*sg));
	if (!r || !sg) {
		free(r);
		if (sg != sg_small)
			free(sg);
		return -ENOMEM;
	}
	r->wire = vqf_gram_alloc(g->ram, sizeof(*req) + asz, false);
	if (!r->wire) {
		free(r);
		if (sg != sg_small)
			free(sg);
		return -ENOMEM;
	}
	r->argbuf = (u8 *)r->wire + sizeof(*req);
	r->unique = __atomic_add_fetch(&g->unique, 2, __ATOMIC_RELAXED);
	req->in_h.unique = r->unique;
	r->opcode = req->in_h.opcode;
	/* -EPROTOTYPE (an argvar the opcode has not) reaches the caller. */
	ret = vqf_req_to_argbuf(req, r->argbuf, asz);
	if (ret)
		goto inval;
	ret = -EINVAL;
	/* The device sees a copy; ours stays private and is what the reply
	 * is checked against.
	 */
	memcpy(r->wire, req, sizeof(*req));
	n = vqf_req_build_sg(r->wire, r->argbuf, sg, nsg, &cnt);
	if (n < 0)
		goto inval;
	for (i = 0; i < (unsigned int)n; i++) {
		const u8 *p = sg[i].addr ? sg[i].addr :
			      (const u8 *)sg[i].page + sg[i].offset;
		u64 gpa = vqf_gram_gpa(g->ram, p);

		/* Pages must be guest RAM, and whole. */
		if (!gpa || !vqf_gram_gpa(g->ram, p + sg[i].len - 1))
			goto inval;
		r->seg[i].addr = gpa;
		r->seg[i].len = sg[i].len;
	}
	r->nrd = cnt.nr_readable;
	r->nwr = cnt.nr_writable;
	if (sg != sg_small)
		free(sg);
	/* Data pages are the device's to read or write: only the argbuf
	 * is a bounce copy (counted by submit()).
	 */
	r->copied = asz;
	*out = r;
	return 0;
inval:
	vqf_gram_release(g->ram, r->wire);
	free(r);
	if (sg != sg_small)
		free(sg);
	return ret;
}

/* @reapq: the caller reaps its queue itself (see enqueue()); set to the
 * queue it must leave with drain_used(q, true), NULL if none.
 */
static int submit(struct vqf_gdrv *g, struct vqf_gdrv_call *c,
		  void (*done)(void *ctx, struct vqf_gdrv_call *c),
		  void *ctx, bool internal, struct gq **reapq)
{
	struct greq *r;
	struct gq *q;
	int ret;

	if (!done)
		return -EINVAL;
	q = pick_queue(g, c->req.in_h.opcode, c->queue);
	if (!q || !q->vr)
		return -EINVAL;
	ret = prepare(g, c, &r);
	if (ret)
		return ret;
	r->kind = GREQ_CALL;
	r->c = c;
	r->done = done;
	r->ctx = ctx;
	r->q = q;
	pthread_mutex_lock(&g->lock);
	if (is_dead(g) || (g->closing && !internal)) {
		pthread_mutex_unlock(&g->lock);
		greq_free(g, r);
		return -ENOTCONN;
	}
	r->inext = g->inflight;
	if (g->inflight)
		g->inflight->iprev = r;
	g->inflight = r;
	g->ninflight++;
	c->priv = r;
	c->result = 0;
	pthread_mutex_unlock(&g->lock);
	pthread_mutex_lock(&g->slock);
	g->st.bytes_copied += r->copied;
	g->st.submitted++;
	g->st.by_opcode[r->opcode < VQF_GDRV_OPCODES ? r->opcode : 0]++;
	pthread_mutex_unlock(&g->slock);
	if (g->cfg.trace)
		g->cfg.trace(g->cfg.trace_ctx, VQF_EV_QUEUED, r->unique,
			     r->opcode, q->idx);
	ret = enqueue(q, r, reapq != NULL);
	if (ret)
		end_call(g, r, ret, true);	/* broken queue: done is called */
	else if (reapq)
		*reapq = q;
	return 0;
}

int vqf_gdrv_submit(struct vqf_gdrv *g, struct vqf_gdrv_call *c,
		    void (*done)(void *ctx, struct vqf_gdrv_call *c),
		    void *ctx)
{
	return submit(g, c, done, ctx, false, NULL);
}

/* Takes what the used ring of @c's queue holds, in this thread. */
static void reap(struct vqf_gdrv *g, struct vqf_gdrv_call *c)
{
	struct gq *q = NULL;

	pthread_mutex_lock(&g->lock);
	if (c->priv)
		q = ((struct greq *)c->priv)->q;
	pthread_mutex_unlock(&g->lock);
	if (q)
		drain_used(q, false);
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static bool waiter_done(struct waiter *w)
{
	bool done;

	pthread_mutex_lock(&w->lock);
	done = w->done;
	pthread_mutex_unlock(&w->lock);
	return done;
}

/*
 * Spins on the used ring of @c's queue for the queue's poll window,
 * completing whatever turns up (ours or another caller's: get_buf under
 * q->lock hands each buffer to one thread only), until @w says ours is
 * done.  Interrupts are off meanwhile, so the device does not signal a
 * completion thread we would only race with; the last poller to leave
 * turns them on and re-checks the ring before anyone sleeps.  Sets *@qp
 * and *@t0 (poll start) for the adaptation, *@qp NULL if the call was
 * already complete.
 */
static void poll_reply(struct vqf_gdrv *g, struct vqf_gdrv_call *c,
		       struct waiter *w, struct gq **qp, u64 *t0)
{
	struct gq *q = NULL;
	u64 win, now, start;
	u16 seen, idx;
	bool done = false;

	pthread_mutex_lock(&g->lock);
	if (c->priv)
		q = ((struct greq *)c->priv)->q;
	pthread_mutex_unlock(&g->lock);
	*qp = q;
	*t0 = start = vqf_poll_now_ns();
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	win = q->poll_win;
	if (win) {
		q->pollers++;
		vqf_vring_drv_disable_cb(q->vr);
	}
	pthread_mutex_unlock(&q->lock);
	if (!win)
		return;
	/* What is there already, then whatever moves used->idx. */
	seen = vqf_vring_drv_used_idx(q->vr);
	drain_used(q, false);
	for (;;) {
		idx = vqf_vring_drv_used_idx(q->vr);
		if (idx != seen) {
			seen = idx;
			drain_used(q, false);
		}
		/* Ours may also come through another poller or the
		 * completion thread.
		 */
		done = waiter_done(w);
		if (done || vqf_poll_now_ns() - start >= win || is_dead(g))
			break;
		vqf_poll_relax();
	}
	pthread_mutex_lock(&q->lock);
	q->pollers--;
	pthread_mutex_unlock(&q->lock);
	drain_used(q, false);
	now = vqf_poll_now_ns();
	pthread_mutex_lock(&g->slock);
	g->st.poll_spin_ns += now - start;
	if (done)
		g->st.poll_hits++;
	else
		g->st.poll_misses++;
	pthread_mutex_unlock(&g->slock);
}

static void wake(void *ctx, struct vqf_gdrv_call *c)
{
	struct waiter *w = ctx;

	(void)c;
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static int call(struct vqf_gdrv *g, struct vqf_gdrv_call *c, int timeout_ms,
		bool internal)
{
	/*
	 * One waiter per thread, never destroyed: wake() may still be
	 * inside the unlock when we return, so a waiter on our stack
	 * would be torn down under it.
	 */
	static __thread struct waiter w;
	static __thread bool w_ready;
	struct timespec ts;
	struct gq *pq = NULL, *rq = NULL;
	u64 t0 = 0;
	int ret;

	pthread_mutex_lock(&g->lock);
	if (is_dead(g) || (g->closing && !internal)) {
		pthread_mutex_unlock(&g->lock);
		return -ENOTCONN;
	}
	g->callers++;
	pthread_mutex_unlock(&g->lock);
	if (!w_ready) {
		pthread_mutex_init(&w.lock, NULL);
		pthread_cond_init(&w.cond, NULL);
		w_ready = true;
	}
	pthread_mutex_lock(&w.lock);
	w.done = false;
	pthread_mutex_unlock(&w.lock);
	ret = submit(g, c, wake, &w, internal, g->poll ? &rq : NULL);
	if (!ret) {
		/* An inline device has usually answered by now: reap it here
		 * rather than wait for the interrupt thread (polling, as
		 * blk-mq does for a hipri request), which was never signalled
		 * for it.
		 */
		if (rq)
			drain_used(rq, true);
		pthread_mutex_lock(&w.lock);
		/* Not done inline (a device worker has it): its interrupt
		 * comes, now that the caller left the pollers.
		 */
		if (!w.done && !g->poll && g->cfg.poll_ns) {
			pthread_mutex_unlock(&w.lock);
			poll_reply(g, c, &w, &pq, &t0);
			pthread_mutex_lock(&w.lock);
		}
		/* Again every @timeout_ms: an INTERRUPT that reached the
		 * server before the request did is dropped there (the
		 * backend keeps none), as Linux resends on EAGAIN.
		 */
		while (timeout_ms >= 0 && !w.done) {
			deadline(&ts, (unsigned int)timeout_ms);
			while (!w.done &&
			       pthread_cond_timedwait(&w.cond, &w.lock,
						      &ts) != ETIMEDOUT)
				;
			if (!w.done) {
				/* A lost interrupt looks like a slow server:
				 * look at the used ring first (nvme_timeout
				 * polls before it aborts).  Then give up as a
				 * signalled task does: ask the server to
				 * abandon it, and keep waiting - the buffers
				 * are the device's until used.
				 */
				pthread_mutex_unlock(&w.lock);
				reap(g, c);
				pthread_mutex_lock(&w.lock);
				if (!w.done) {
					pthread_mutex_unlock(&w.lock);
					vqf_gdrv_interrupt(g, c);
					pthread_mutex_lock(&w.lock);
				}
			}
		}
		while (!w.done)
			pthread_cond_wait(&w.cond, &w.lock);
		pthread_mutex_unlock(&w.lock);
		ret = c->result;
		/* How long the reply took, polling included: grow the
		 * queue's window if polling would have caught it.
		 */
		if (pq && !g->cfg.poll_fixed) {
			u64 block = vqf_poll_now_ns() - t0;

			pthread_mutex_lock(&pq->lock);
			pq->poll_win = vqf_poll_adapt(pq->poll_win,
						      g->cfg.poll_ns, block);
			pthread_mutex_unlock(&pq->lock);
		}
	}
	pthread_mutex_lock(&g->lock);
	if (!--g->callers)
		pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	return ret;
}

int vqf_gdrv_call(struct vqf_gdrv *g, struct vqf_gdrv_call *c,
		  int timeout_ms)
{
	return call(g, c, timeout_ms, false);
}

static int send_interrupt(struct vqf_gdrv *g, u64 unique, u32 opcode)
{
	struct fuse_in_header *ih;
	struct fuse_interrupt_in *ii;
	struct greq *r;
	int ret;

	r = calloc(1, sizeof(*r) + sizeof(r->seg[0]));
	if (!r)
		return -ENOMEM;
	r->wire = vqf_gram_alloc(g->ram, sizeof(*ih) + sizeof(*ii), true);
	if (!r->wire) {
		free(r);
		return -ENOMEM;
	}
	ih = r->wire;
	ii = (struct fuse_interrupt_in *)(ih + 1);
	ih->len = sizeof(*ih) + sizeof(*ii);
	ih->opcode = FUSE_INTERRUPT;
	ih->unique = unique | GDRV_INT_REQ_BIT;
	ii->unique = unique;
	r->kind = GREQ_INTERRUPT;
	r->unique = ih->unique;
	r->opcode = FUSE_INTERRUPT;
	r->q = &g->q[0];
	r->nrd = 1;
	r->seg[0].addr = vqf_gram_gpa(g->ram, r->wire);
	r->seg[0].len = ih->len;
	if (g->cfg.trace)
		g->cfg.trace(g->cfg.trace_ctx, VQF_EV_INTERRUPTED, unique,
			     opcode, r->q->idx);
	pthread_mutex_lock(&g->slock);
	g->st.interrupts_sent++;
	g->st.by_opcode[FUSE_INTERRUPT]++;
	pthread_mutex_unlock(&g->slock);
	ret = enqueue(r->q, r, false);
	if (ret)
		greq_free(g, r);
	return ret;
}

int vqf_gdrv_interrupt(struct vqf_gdrv *g, struct vqf_gdrv_call *c)
{
	struct greq *target;
	u64 unique;
	u32 opcode;

	pthread_mutex_lock(&g->lock);
	target = c->priv;
	if (!target || is_dead(g)) {
		pthread_mutex_unlock(&g->lock);
		return -ENOENT;
	}
	unique = target->unique;
	opcode = target->opcode;
	pthread_mutex_unlock(&g->lock);
	return send_interrupt(g, unique, opcode);
}

/* ---- setup ------------------------------------------------------------ */

static int setup_queue(struct vqf_gdrv *g, unsigned int idx, unsigned int num)
{
	struct gq *q = &g->q[idx];
	struct vqf_vring_drv_cfg vc = { 0 };
	u64 need, gpa;
	int ret;

	q->g = g;
	q->idx = idx;
	q->num = num;
	pthread_mutex_init(&q->lock, NULL);
	q->poll_win = g->cfg.poll_fixed ? g->cfg.poll_ns : 0;
	q->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	q->call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->kick_fd < 0 || q->call_fd < 0)
		return -ENOMEM;
	need = vqf_vring_layout(num, 0, 4, &vc.addr);
	q->ring_mem = vqf_gram_alloc(g->ram, need, true);
	if (!q->ring_mem)
		return -ENOMEM;
	gpa = vqf_gram_gpa(g->ram, q->ring_mem);
	vqf_vring_layout(num, gpa, 4, &vc.addr);
	vc.num = num;
	vc.features = g->features & VQF_VRING_FEATURES;
	vc.mem = vqf_gram_gmem(g->ram);
	vc.stats = &q->vs;
	if (g->features & (1ULL << VIRTIO_RING_F_INDIRECT_DESC)) {
		size_t isz = (size_t)num * GDRV_IPOOL_PER_SLOT * 16;

		q->ipool_mem = vqf_gram_alloc(g->ram, isz, true);
		if (!q->ipool_mem)
			return -ENOMEM;
		ret = vqf_vring_ipool_init(&q->ipool, q->ipool_mem,
					   vqf_gram_gpa(g->ram, q->ipool_mem),
					   num, GDRV_IPOOL_PER_SLOT);
		if (ret)
			return ret;
		vqf_vring_ipool_ops(&q->ipool, &q->iops);
		vc.iops = &q->iops;
	}
	ret = vqf_vring_drv_create(&vc, &q->vr);
	if (ret)
		return ret;
	return g->ops->set_queue(g->dev, idx, num, &vc.addr, q->kick_fd,
				 q->call_fd);
}

static void teardown_queue(struct vqf_gdrv *g, struct gq *q)
{
	if (!q->g)
		return;
	vqf_vring_drv_destroy(q->vr);
	if (q->ipool_mem) {
		vqf_vring_ipool_fini(&q->ipool);
		vqf_gram_release(g->ram, q->ipool_mem);
	}
	vqf_gram_release(g->ram, q->ring_mem);
	if (q->kick_fd >= 0)
		close(q->kick_fd);
	if (q->call_fd >= 0)
		close(q->call_fd);
	pthread_mutex_destroy(&q->lock);
	q->g = NULL;
}

static int post_notify_bufs(struct vqf_gdrv *g)
{
	struct gq *q = &g->q[1];
	unsigned int i, n = q->num < GDRV_NOTIFY_BUFS ? q->num :
			    GDRV_NOTIFY_BUFS;
	bool need;

	pthread_mutex_lock(&q->lock);
	for (i = 0; i < n; i++) {
		struct greq *r = calloc(1, sizeof(*r) + sizeof(r->seg[0]));

		if (!r)
			break;
		r->wire = vqf_gram_alloc(g->ram, g->notify_buf_size, true);
		if (!r->wire) {
			free(r);
			break;
		}
		r->kind = GREQ_NOTIFY;
		r->q = q;
		r->nwr = 1;
		r->seg[0].addr = vqf_gram_gpa(g->ram, r->wire);
		r->seg[0].len = g->notify_buf_size;
		if (add_locked(q, r)) {
			greq_free(g, r);
			break;
		}
	}
	need = vqf_vring_drv_kick_prepare(q->vr);
	pthread_mutex_unlock(&q->lock);
	kick(q, need);
	return i ? 0 : -ENOMEM;
}

static int send_init(struct vqf_gdrv *g)
{
	struct vqf_gdrv_call c;
	struct fuse_init_in in;
	int ret;

	memset(&c, 0, sizeof(c));
	memset(&in, 0, sizeof(in));
	in.major = FUSE_KERNEL_VERSION;
	in.minor = FUSE_KERNEL_MINOR_VERSION;
	in.max_readahead = 128 * 1024;
	/* What Linux 6.1's fuse_send_init offers that fits a client
	 * without a page cache.
	 */
	in.flags = FUSE_ASYNC_READ | FUSE_POSIX_LOCKS | FUSE_ATOMIC_O_TRUNC |
		   FUSE_EXPORT_SUPPORT | FUSE_BIG_WRITES | FUSE_DONT_MASK |
		   FUSE_FLOCK_LOCKS | FUSE_DO_READDIRPLUS |
		   FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV |
		   FUSE_MAX_PAGES | FUSE_INIT_EXT;
	in.flags2 = g->cfg.shared_version ? VQF_FUSE_INIT_SHARED_VERSION : 0;
	vqf_req_init(&c.req, FUSE_INIT, 0, 0);
	vqf_req_add_in(&c.req, &in, sizeof(in));
	vqf_req_add_out(&c.req, &g->init_out, sizeof(g->init_out));
	ret = vqf_gdrv_call(g, &c, -1);
	if (ret)
		return ret;
	if (g->init_out.major != FUSE_KERNEL_VERSION ||
	    g->init_out.minor < 27 || g->init_out.max_write < 4096)
		return -EPROTO;
	if (g->cfg.max_write && g->init_out.max_write > g->cfg.max_write)
		g->init_out.max_write = g->cfg.max_write;
	return 0;
}

/* The in-process device's functions as transport ops. */
static u64 fsdev_features(void *dev)
{
	return vqf_fsdev_features(dev);
}

static int fsdev_set_features(void *dev, u64 features)
{
	return vqf_fsdev_set_features(dev, features);
}

static void fsdev_read_config(void *dev, struct vqf_virtio_fs_config *cfg)
{
	vqf_fsdev_read_config(dev, cfg);
}

static unsigned int fsdev_queue_max(void *dev, unsigned int idx)
{
	return vqf_fsdev_queue_max(dev, idx);
}

static int fsdev_set_queue(void *dev, unsigned int idx, unsigned int num,
			   const struct vqf_vring_addr *addr, int kick_fd,
			   int call_fd)
{
	return vqf_fsdev_set_queue(dev, idx, num, addr, kick_fd, call_fd);
}

static int fsdev_set_status(void *dev, u8 status)
{
	return vqf_fsdev_set_status(dev, status);
}

static u8 fsdev_get_status(void *dev)
{
	return vqf_fsdev_get_status(dev);
}

static int fsdev_kick(void *dev, unsigned int idx)
{
	return vqf_fsdev_kick(dev, idx);
}

static const struct vqf_gdrv_dev_ops fsdev_ops = {
	.features = fsdev_features,
	.set_features = fsdev_set_features,
	.read_config = fsdev_read_config,
	.queue_max = fsdev_queue_max,
	.set_queue = fsdev_set_queue,
	.set_status = fsdev_set_status,
	.get_status = fsdev_get_status,
	.kick = fsdev_kick,
};

int vqf_gdrv_new(const struct vqf_gdrv_cfg *cfg, struct vqf_fsdev *dev,
		 struct vqf_gram *ram, struct vqf_gdrv **out)
{
	return vqf_gdrv_new_ops(cfg, &fsdev_ops, dev, ram, out);
}

void vqf_gdrv_lost(struct vqf_gdrv *g, int err)
{
	/* Nothing will answer: no grace, no DESTROY at the shutdown.  Wake
	 * forget_flush() waiters, as a broken ring does.
	 */
	pthread_mutex_lock(&g->lock);
	g->lost = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	reset_broken(g, err < 0 ? err : -ENOTCONN);
}

static void lost_cb(void *ctx, int err)
{
	vqf_gdrv_lost(ctx, err);
}

int vqf_gdrv_new_ops(const struct vqf_gdrv_cfg *cfg,
		     const struct vqf_gdrv_dev_ops *ops, void *dev,
		     struct vqf_gram *ram, struct vqf_gdrv **out)
{
	struct vqf_virtio_fs_config fc;
	struct vqf_gdrv *g;
	u64 want;
	unsigned int i, dev_nreq, num, qmax;
	int ret;

	if (!ops || !dev || !ram || !out)
		return -EINVAL;
	if (cfg && cfg->queue_size && cfg->queue_size < GDRV_MIN_QUEUE_SIZE)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	/* Written under g->lock with an atomic store, read with atomic loads
	 * anywhere (is_dead()): helgrind does not know C11 atomics.
	 */
	vqf_hg_racy(&g->dead, sizeof(g->dead));
	if (cfg)
		g->cfg = *cfg;
	g->ops = ops;
	g->dev = dev;
	g->ram = ram;
	g->poll = g->cfg.poll;
	g->unique = 0;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	pthread_mutex_init(&g->slock, NULL);
	pthread_rwlock_init(&g->kick_lock, NULL);
	g->fail_errno = -ENOTCONN;
	g->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ret = forget_grow_locked(g);
	if (g->stop_fd < 0 || ret) {
		ret = -ENOMEM;
		goto fail;
	}
	/* From here a vanished device fails what waits, INIT included. */
	if (ops->set_lost)
		ops->set_lost(dev, lost_cb, g);

	/* virtio 1.2, 3.1.1: reset, ACKNOWLEDGE, DRIVER, features,
	 * FEATURES_OK (and read it back), queues, DRIVER_OK.
	 */
	ops->set_status(dev, 0);
	ops->set_status(dev, VQF_S_ACKNOWLEDGE);
	ops->set_status(dev, VQF_S_ACKNOWLEDGE | VQF_S_DRIVER);
	want = (1ULL << VIRTIO_F_VERSION_1) |
	       (1ULL << VIRTIO_RING_F_EVENT_IDX) |
	       (1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	if (g->cfg.no_event_idx)
		want &= ~(1ULL << VIRTIO_RING_F_EVENT_IDX);
	if (g->cfg.no_indirect)
		want &= ~(1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	if (g->cfg.notification)
		want |= 1ULL << VIRTIO_FS_F_NOTIFICATION;
	g->features = want & ops->features(dev);
	if (!(g->features & (1ULL << VIRTIO_F_VERSION_1)) ||
	    ops->set_features(dev, g->features)) {
		ret = -ENODEV;
		goto fail_status;
	}
	ops->set_status(dev, VQF_S_ACKNOWLEDGE | VQF_S_DRIVER |
			     VQF_S_FEATURES_OK);
	if (!(ops->get_status(dev) & VQF_S_FEATURES_OK)) {
		ret = -ENODEV;
		goto fail_status;
	}
	/* The config space is the device's word: check it (5.11.4). */
	ops->read_config(dev, &fc);
	dev_nreq = le32_to_cpu(fc.num_request_queues);
	g->has_notif = g->features & (1ULL << VIRTIO_FS_F_NOTIFICATION);
	g->notify_buf_size = le32_to_cpu(fc.notify_buf_size);
	if (!dev_nreq || dev_nreq > GDRV_MAX_QUEUES - 2 ||
	    (g->has_notif && (g->notify_buf_size <
			      sizeof(struct fuse_out_header) + 16 ||
			      g->notify_buf_size > (1u << 20)))) {
		ret = -ENODEV;
		goto fail_status;
	}
	g->first_req = g->has_notif ? 2 : 1;
	g->nreq = g->cfg.request_queues && g->cfg.request_queues < dev_nreq ?
		  g->cfg.request_queues : dev_nreq;
	g->nq = g->first_req + g->nreq;
	for (i = 0; i < g->nq; i++) {
		qmax = ops->queue_max(dev, i);
		num = g->cfg.queue_size ? g->cfg.queue_size : 1024;
		if (num > qmax)
			num = qmax;
		if (num < GDRV_MIN_QUEUE_SIZE) {
			ret = -ENODEV;
			goto fail_status;
		}
		ret = setup_queue(g, i, num);
		if (ret)
			goto fail_status;
	}
	for (i = 0; i < g->nq; i++) {
		if (pthread_create(&g->q[i].thr, NULL, irq_main, &g->q[i])) {
			ret = -ENOMEM;
			goto fail_status;
		}
		g->q[i].running = true;
	}
	ret = ops->set_status(dev, VQF_S_ACKNOWLEDGE | VQF_S_DRIVER |
				   VQF_S_FEATURES_OK | VQF_S_DRIVER_OK);
	if (ret || !(ops->get_status(dev) & VQF_S_DRIVER_OK)) {
		ret = ret ? ret : -ENODEV;
		goto fail_status;
	}
	if (g->has_notif)
		post_notify_bufs(g);
	ret = send_init(g);
	if (ret)
		goto fail_status;
	*out = g;
	return 0;
fail_status:
	vqf_gdrv_shutdown(g);
	vqf_gdrv_free(g);
	return ret;
fail:
	if (g->stop_fd >= 0)
		close(g->stop_fd);
	free(g->fslots);
	free(g);
	return ret;
}

/* ---- shutdown --------------------------------------------------------- */

/* Waits up to @ms for the in-flight list to empty; true if it did. */
static bool wait_drained(struct vqf_gdrv *g, unsigned int ms)
{
	struct timespec ts;
	bool drained;

	deadline(&ts, ms);
	pthread_mutex_lock(&g->lock);
	while (g->ninflight &&
	       pthread_cond_timedwait(&g->cond, &g->lock, &ts) != ETIMEDOUT)
		;
	drained = !g->ninflight;
	pthread_mutex_unlock(&g->lock);
	return drained;
}

/* INTERRUPT for every call in flight, as a killed task's requests get. */
static void interrupt_all(struct vqf_gdrv *g)
{
	struct { u64 unique; u32 opcode; } *v;
	struct greq *r;
	u64 n = 0, i;

	pthread_mutex_lock(&g->lock);
	v = calloc(g->ninflight ? g->ninflight : 1, sizeof(*v));
	for (r = g->inflight; v && r; r = r->inext) {
		v[n].unique = r->unique;
		v[n++].opcode = r->opcode;
	}
	pthread_mutex_unlock(&g->lock);
	for (i = 0; i < n; i++)
		send_interrupt(g, v[i].unique, v[i].opcode);
	free(v);
}

void vqf_gdrv_shutdown(struct vqf_gdrv *g)
{
	unsigned int grace = g->cfg.shutdown_grace_ms ?
			     g->cfg.shutdown_grace_ms : 200;
	struct vqf_gdrv_call c;
	struct greq *r;
	unsigned int i;
	bool alive, drained;

	pthread_mutex_lock(&g->lock);
	if (g->closing) {
		/* Someone else is at it: wait for the reset to be done. */
		while (!g->reset_done)
			pthread_cond_wait(&g->cond, &g->lock);
		pthread_mutex_unlock(&g->lock);
		return;
	}
	g->closing = true;
	pthread_mutex_unlock(&g->lock);
	alive = vqf_gdrv_alive(g) && g->init_out.major;
	if (alive) {
		/*
		 * New calls are refused from here (-ENOTCONN).  What is in
		 * flight gets a grace period, then an INTERRUPT: a request
		 * a server keeps (SETLKW) must not hold the shutdown.
		 * DESTROY goes last and alone, as fuse_conn_destroy sends
		 * it: libfuse answers anything after it with EIO, and tears
		 * the filesystem down under requests still running.
		 */
		drained = wait_drained(g, grace);
		/* Again and again: a request still on its queue when its
		 * INTERRUPT arrived was not interrupted (the backend only
		 * knows what it was handed).
		 */
		for (i = 0; !drained && i < GDRV_SHUTDOWN_INTERRUPTS; i++) {
			interrupt_all(g);
			drained = wait_drained(g, grace / 4 + 1);
		}
		vqf_gdrv_forget_flush(g);
		if (drained) {
			memset(&c, 0, sizeof(c));
			vqf_req_init(&c.req, FUSE_DESTROY, 0, 0);
			call(g, &c, 1000, true);
		} else {
			STAT_ADD(g, destroy_skipped, 1);
		}
	}
	pthread_mutex_lock(&g->lock);
	__atomic_store_n(&g->dead, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g->lock);
	/* Kicks in progress finish; later ones see dead. */
	pthread_rwlock_wrlock(&g->kick_lock);
	pthread_rwlock_unlock(&g->kick_lock);
	/* From here the device pushes nothing. */
	g->ops->set_status(g->dev, 0);
	vqf_eventfd_signal(g->stop_fd);
	for (i = 0; i < g->nq; i++) {
		if (g->q[i].running)
			pthread_join(g->q[i].thr, NULL);
		g->q[i].running = false;
	}
	/* Replies the device pushed before the reset are real: take them.
	 * What it never answered, and what never reached the ring, fails.
	 */
	for (i = 0; i < g->nq; i++) {
		struct gq *q = &g->q[i];

		if (!q->vr)
			continue;
		drain_used(q, false);
		pthread_mutex_lock(&q->lock);
		while ((r = vqf_vring_drv_detach_unused(q->vr))) {
			r->next = q->pend_head;
			q->pend_head = r;
		}
		r = q->pend_head;
		q->pend_head = q->pend_tail = NULL;
		q->npend = 0;
		pthread_mutex_unlock(&q->lock);
		while (r) {
			struct greq *next = r->next;

			if (r->kind == GREQ_CALL) {
				end_call(g, r, g->fail_errno, true);
			} else {
				if (r->kind == GREQ_FORGET)
					g->forgets_inflight--;
				greq_free(g, r);
			}
			r = next;
		}
	}
	pthread_mutex_lock(&g->lock);
	g->reset_done = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

void vqf_gdrv_free(struct vqf_gdrv *g)
{
	unsigned int i;

	if (!g)
		return;
	vqf_gdrv_shutdown(g);
	/* Set under g->lock before the shutdown above could see closing. */
	if (g->resetter_started)
		pthread_join(g->resetter, NULL);
	/* A loss reported from now on finds closing set and starts nothing;
	 * this waits for one in progress.
	 */
	if (g->ops->set_lost)
		g->ops->set_lost(g->dev, NULL, NULL);
	pthread_mutex_lock(&g->lock);
	while (g->callers)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
	for (i = 0; i < GDRV_MAX_QUEUES; i++)
		teardown_queue(g, &g->q[i]);
	close(g->stop_fd);
	free(g->fslots);
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->slock);
	pthread_rwlock_destroy(&g->kick_lock);
	free(g);
}

/* ---- queries ---------------------------------------------------------- */

const struct fuse_init_out *vqf_gdrv_init_out(const struct vqf_gdrv *g)
{
	return &g->init_out;
}

struct vqf_gram *vqf_gdrv_ram(const struct vqf_gdrv *g)
{
	return g->ram;
}

unsigned int vqf_gdrv_num_request_queues(const struct vqf_gdrv *g)
{
	return g->nreq;
}

u64 vqf_gdrv_inflight(struct vqf_gdrv *g)
{
	u64 n;

	pthread_mutex_lock(&g->lock);
	n = g->ninflight;
	pthread_mutex_unlock(&g->lock);
	return n;
}

bool vqf_gdrv_alive(struct vqf_gdrv *g)
{
	unsigned int i;
	bool alive;

	pthread_mutex_lock(&g->lock);
	alive = !is_dead(g) && !g->lost;
	pthread_mutex_unlock(&g->lock);
	for (i = 0; alive && i < g->nq; i++) {
		pthread_mutex_lock(&g->q[i].lock);
		if (g->q[i].vr && vqf_vring_drv_is_broken(g->q[i].vr))
			alive = false;
		pthread_mutex_unlock(&g->q[i].lock);
	}
	return alive;
}

void vqf_gdrv_get_stats(struct vqf_gdrv *g, struct vqf_gdrv_stats *out)
{
	pthread_mutex_lock(&g->slock);
	*out = g->st;
	pthread_mutex_unlock(&g->slock);
}
