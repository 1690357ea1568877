// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fsdev_serve.c - serving a parsed request: the worker pool, the backend
 * call, the reply and the push.
 *
 * See vqf_fsdev.h; threads, locks and shared state: fsdev_int.h.
 */
#include "fsdev_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vqf_vring_thread.h"

/* ---- replies -------------------------------------------------------- */

void fsdev_req_free(struct fsreq *r)
{
	free(r);
}

static void put_outstanding(struct vqf_fsdev *d, unsigned int n)
{
	pthread_mutex_lock(&d->lock);
	d->outstanding -= n;
	if (!d->outstanding)
		pthread_cond_broadcast(&d->idle_cond);
	pthread_mutex_unlock(&d->lock);
}

void fsdev_free_all(struct vqf_fsdev *d, struct fsreq **v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		fsdev_req_free(v[i]);
	if (n)
		put_outstanding(d, n);
}

bool fsdev_is_stopping(struct vqf_fsdev *d)
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
bool fsdev_push_locked(struct fsq *q, struct fsreq *r, bool stopping)
{
	struct vqf_fsdev *d = q->d;

	/* Before the push: the driver may complete it at once. */
	if (!stopping && d->cfg.trace)
		d->cfg.trace(d->cfg.trace_ctx, VQF_FSDEV_EV_PUSHED,
			     r->dreq.in.unique, r->dreq.in.opcode, q->idx);
	if (stopping || vqf_vring_dev_push(q->vr, r->c.head, r->len))
		return false;
	if (fsdev_faulted(q) && !q->dup_done && r->op != FUSE_INIT &&
	    fsdev_roll(q, r->seq, VQF_FAULT_DUP)) {
		/* One per reset: the driver breaks the queue at the first
		 * and never looks at another.
		 */
		q->dup_done = true;
		if (!vqf_vring_dev_push(q->vr, r->c.head, r->len))
			STAT_ADD(d, faults[VQF_FAULT_DUP], 1);
	}
	return true;
}

/* Push @r's chain with @len bytes written; wake the driver if it asked. */
void fsdev_finish(struct fsreq *r, u32 len)
{
	struct fsq *q = r->q;
	struct vqf_fsdev *d = q->d;
	struct fsreq *out[VQF_FAULT_HELD_MAX];
	unsigned int nout = 0;
	bool notify = false, stopping, f = fsdev_faulted(q);

	/* The reply is in the chain: the backend is done with its ids. */
	vqf_guard_done(d->guard, &r->gtx);
	if (r->dax_cancel) {
		r->dax_cancel = false;
		d->cfg.dax_ops->cancel(d->cfg.dax_ctx, false);
	}

	/* After a reset began, the rings belong to the driver again.  Read
	 * under d->lock, where stop_all() sets it (helgrind sees the order;
	 * a push racing the flag is still before the rings are destroyed:
	 * stop_all() waits for outstanding to drop).
	 */
	stopping = fsdev_is_stopping(d);
	r->len = len;
	if (f)
		fsdev_fault_reply(q, r);
	pthread_mutex_lock(&q->push_lock);
	if (f && r->op != FUSE_INIT && !stopping &&
	    fsdev_roll(q, r->seq, VQF_FAULT_REORDER)) {
		STAT_ADD(d, faults[VQF_FAULT_REORDER], 1);
		q->held[q->nheld++] = r;
		if (q->nheld < d->plan.reorder_max) {
			/* Still outstanding: a reset drops it. */
			pthread_mutex_unlock(&q->push_lock);
			return;
		}
		notify = fsdev_release_held_locked(q, out, &nout, false);
	} else {
		notify = fsdev_push_locked(q, r, stopping) &&
			 vqf_vring_dev_need_notify(q->vr);
		out[nout++] = r;
	}
	if (notify && f && fsdev_roll(q, r->seq, VQF_FAULT_DROP_CALL)) {
		/* The poll timer sends it late. */
		q->call_owed = true;
		notify = false;
		STAT_ADD(d, faults[VQF_FAULT_DROP_CALL], 1);
	}
	pthread_mutex_unlock(&q->push_lock);
	if (notify && !vqf_eventfd_signal(q->call_fd))
		STAT_ADD(d, interrupts, 1);
	fsdev_free_all(d, out, nout);
}

/*
 * Answers @r with @err instead of serving it (@r refused by the parser:
 * its own errno).  Every served chain ends in exactly one of replies,
 * no_reply, refused_no_room, backend_errors.
 */
static void answer_refused(struct vqf_fsdev *d, struct fsreq *r, int err)
{
	int ret = vqf_dev_reply_req(&r->dreq, err, NULL, 0, r->ws, r->nws,
				    NULL);

	if (ret < 0)
		STAT_ADD(d, refused_no_room, 1);
	else if (!ret)
		STAT_ADD(d, no_reply, 1);
	else
		STAT_ADD(d, replies, 1);
	fsdev_finish(r, ret > 0 ? (u32)ret : 0);
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
		/* The session's mappings die with it, as the files do
		 * (waits for the far side cancelled: fsdev_serve()).
		 */
		fsdev_dax_reset(d);
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
	const void *own;
	u32 npc = 0, ownlen;
	int i, ret;

	if (iovcnt < 1 || iov[0].iov_len < sizeof(oh) || len < sizeof(oh))
		return -EINVAL;
	memcpy(&oh, iov[0].iov_base, sizeof(oh));
	ret = vqf_guard_reply(d->guard, &r->gtx, &r->dreq, iov, iovcnt, len,
			      &own, &ownlen);
	if (ret) {
		/* The guard's own answer (LOOKUP ".." to the root). */
		struct vqf_dev_piece one = { own, ownlen };

		ret = vqf_dev_reply(r->ws, r->nws, r->dreq.in.unique,
				    ret < 0 ? ret : 0, &one, ret < 0 ? 0 : 1,
				    NULL);
		goto pushed;
	}
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
	fsdev_dax_inode_reply(d, r, oh.error, iov, iovcnt, len);
	after_reply(d, r, iov, iovcnt, len);
	ret = pc ? vqf_dev_reply(r->ws, r->nws, r->dreq.in.unique, oh.error,
				 pc, npc, NULL) : -ENOMEM;
	if (pc != small)
		free(pc);
pushed:
	if (ret < 0 && ret != -ENOBUFS) {
		STAT_ADD(d, reply_too_big, 1);
		ret = vqf_dev_reply(r->ws, r->nws, r->dreq.in.unique, -EIO,
				    NULL, 0, NULL);
	}
	if (ret < 0) {
		STAT_ADD(d, refused_no_room, 1);
		fsdev_finish(r, 0);
		return 0;
	}
	pthread_mutex_lock(&d->slock);
	d->st.replies++;
	d->st.dev.replies++;
	d->st.bytes_out += (u32)ret;
	pthread_mutex_unlock(&d->slock);
	fsdev_finish(r, (u32)ret);
	return 0;
}

/* ---- serving -------------------------------------------------------- */

/*
 * Requests up to this size (headers, names, a 4 KiB WRITE) are flattened
 * on the serving thread's stack: the backend reads the copy only during
 * the call, so no allocation is needed for it.
 */
#define FSDEV_FLAT_STACK	(4096 + 256)

/* Hand a parsed request to the backend; @r is gone afterwards. */
void fsdev_serve(struct vqf_fsdev *d, struct fsreq *r)
{
	u64 small[FSDEV_FLAT_STACK / sizeof(u64)];
	void *flat;
	u32 flen;
	int ret;

	/* A DESTROY ends the session and its window: a map still waiting
	 * for the front-end (which may never answer) fails now, rather
	 * than hold the guard's wait for the session's requests and the
	 * window's teardown, until the DESTROY is done (fsdev_finish()).
	 */
	if (r->dreq.in.opcode == FUSE_DESTROY && d->cfg.dax_ops &&
	    d->cfg.dax_ops->cancel) {
		d->cfg.dax_ops->cancel(d->cfg.dax_ctx, true);
		r->dax_cancel = true;
	}
	/* The guard first: nothing below (DAX window, faults, backend)
	 * sees a name, node id or handle it refuses.  It may rewrite the
	 * request (LOOKUP "..").
	 */
	ret = vqf_guard_request(d->guard, &r->dreq, &r->gtx);
	if (ret < 0) {
		answer_refused(d, r, ret);
		return;
	}
	if (fsdev_dax_serve(d, r) || fsdev_fault_backend(d, r))
		return;
	flen = vqf_dev_flat_len(&r->dreq);
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
		fsdev_finish(r, ret > 0 ? (u32)ret : 0);
		return;
	}
	STAT_ADD(d, bytes_in, flen);
	flen = fsdev_fault_short_write(d, r, flat, flen);
	/* FORGETs on the private copy: what the guest does not hold goes. */
	flen = vqf_guard_forget(d->guard, flat, flen);
	if (!flen) {
		if (flat != small)
			free(flat);
		STAT_ADD(d, no_reply, 1);
		fsdev_finish(r, 0);
		return;
	}
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
	fsdev_finish(r, 0);
}

/* ---- the worker pool (struct fsworker; d->lock held) ---------------- */

static void idle_unlink(struct vqf_fsdev *d, struct fsworker *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		d->idle = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->next = w->prev = NULL;
}

/* @w goes idle (unless it is) and sleeps until woken. */
static void worker_wait(struct vqf_fsdev *d, struct fsworker *w)
{
	if (!w->idle) {
		w->idle = true;
		if (!d->sentinel) {
			d->sentinel = w;
		} else {
			w->prev = NULL;
			w->next = d->idle;
			if (d->idle)
				d->idle->prev = w;
			d->idle = w;
		}
	}
	pthread_cond_wait(d->sentinel == w ? &d->work_cond : &w->cond,
			  &d->lock);
}

/*
 * @w stops waiting without having been handed work (it found some, or
 * the device stops).  A sentinel that leaves makes the longest idle of
 * the others the sentinel, which then waits on work_cond.
 */
static void worker_leave(struct vqf_fsdev *d, struct fsworker *w)
{
	struct fsworker *t;

	if (!w->idle)
		return;
	w->idle = false;
	if (d->sentinel != w) {
		idle_unlink(d, w);
		return;
	}
	d->sentinel = NULL;
	for (t = d->idle; t && t->next; t = t->next)
		;
	if (t) {
		idle_unlink(d, t);
		d->sentinel = t;
		pthread_cond_signal(&t->cond);
	}
}

/* Work was queued: wake the worker that went idle last. */
static void worker_wake_one(struct vqf_fsdev *d)
{
	struct fsworker *w = d->idle;

	if (w) {
		idle_unlink(d, w);
	} else {
		w = d->sentinel;
		if (!w)
			return;	/* all busy: each looks before sleeping */
		d->sentinel = NULL;
		pthread_cond_signal(&d->work_cond);
	}
	w->idle = false;
	/* Also when a promotion to sentinel has not been acted on yet. */
	pthread_cond_signal(&w->cond);
}

/* The device stops: every idle worker looks at d->stopping. */
static void worker_wake_all(struct vqf_fsdev *d)
{
	struct fsworker *w;

	for (w = d->idle; w; w = w->next)
		pthread_cond_signal(&w->cond);
	pthread_cond_broadcast(&d->work_cond);
}

void *fsdev_worker_main(void *arg)
{
	struct vqf_fsdev *d = arg;
	struct fsworker w = { .idle = false };
	struct fsreq *r;
	unsigned int busy;

	pthread_cond_init(&w.cond, NULL);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		while (!d->work_head && !d->stopping)
			worker_wait(d, &w);
		worker_leave(d, &w);
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
		fsdev_serve(d, r);
		pthread_mutex_lock(&d->lock);
		d->busy--;
	}
	worker_wake_all(d);
	pthread_mutex_unlock(&d->lock);
	pthread_cond_destroy(&w.cond);
	return NULL;
}

/*
 * One popped chain.  Readable segments become the parser's input,
 * writable ones the reply space.
 */
void fsdev_handle_chain(struct fsq *q, struct fsreq *r)
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
		answer_refused(d, r, 0);
		return;
	}
	/* Hiprio work (forgets, interrupts) is quick and never queued
	 * behind requests; without workers requests are served here too.
	 */
	if (q->hiprio || !d->nr_workers) {
		fsdev_serve(d, r);
		return;
	}
	pthread_mutex_lock(&d->lock);
	r->next = NULL;
	if (d->work_tail)
		d->work_tail->next = r;
	else
		d->work_head = r;
	d->work_tail = r;
	worker_wake_one(d);
	pthread_mutex_unlock(&d->lock);
}
