// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fsdev_queue.c - the queues: popping chains (queue threads, inline and
 * direct kicks, polling) and the notification queue.
 *
 * See vqf_fsdev.h; threads, locks and shared state: fsdev_int.h.
 */
#include "fsdev_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vqf_vring_poll.h"
#include "vqf_vring_thread.h"

struct fsreq *fsdev_req_new(struct fsq *q)
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
	r->dax_cancel = false;
	vqf_guard_tx_init(&r->gtx);
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
 * Pops one chain into @r and accounts for it.  Returns 1 for a chain to
 * fsdev_serve, 0 when the ring is empty, -EAGAIN for a chain the ring refused
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
		fsdev_set_needs_reset(d);
		return -EIO;
	}
	q->popped++;
	r->seq = q->seq++;
	r->op = 0;
	r->injected = false;
	r->dax_cancel = false;
	vqf_guard_tx_init(&r->gtx);
	pthread_mutex_lock(&d->lock);
	d->outstanding++;
	pthread_mutex_unlock(&d->lock);
	if (ret > 0)
		return 1;
	STAT_ADD(d, chain_errors, 1);
	fsdev_finish(r, 0);
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
		if (fsdev_faulted(q) && !fsdev_fault_may_pop(q, tick)) {
			q->deferred = true;
			*spare = r;
			return POP_GATED;
		}
		if (!r)
			r = fsdev_req_new(q);
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
		fsdev_handle_chain(q, r);
		r = NULL;
	}
	*spare = r;
	return POP_EMPTY;
}

/* Pops until the ring stays empty with kicks enabled (pop side). */
void fsdev_run_queue(struct fsq *q, struct fsreq **spare, bool tick)
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
			*spare = fsdev_req_new(q);
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
 * One chain for the caller to fsdev_serve, if any (takes q->pop_lock).  Kicks
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
		fsdev_handle_chain(q, *spare);
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
		fsdev_handle_chain(q, r);
	else
		free(r);
	return res == POP1_BROKEN ? -ENOENT : 0;
}

void *fsdev_queue_main(void *arg)
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
	fsdev_run_queue(q, &r, false);
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

		r = fsdev_req_new(q);
		if (!r)
			break;
		ret = vqf_vring_dev_pop(q->vr, &r->c);
		if (ret <= 0 && ret != -ENODATA && ret != -ENOBUFS) {
			free(r);
			if (ret < 0) {
				STAT_ADD(d, queue_broken, 1);
				fsdev_set_needs_reset(d);
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

	if (!fsdev_has_notif(d) || len < sizeof(oh) ||
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
