// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fsdev_fault.c - where the device injects the faults of its plan
 * (vqf_fault.h): before a pop, instead of the backend, at the push; and
 * the poll timer that stands for a polling device.
 *
 * See vqf_fsdev.h; threads, locks and shared state: fsdev_int.h.
 */
#include "fsdev_int.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "vqf_vring_thread.h"

bool fsdev_faulted(const struct fsq *q)
{
	return q->d->faulty && !q->hiprio && !q->notif;
}

bool fsdev_roll(const struct fsq *q, u64 seq, enum vqf_fault_kind k)
{
	return vqf_fault_roll(&q->d->plan, q->idx, seq, k);
}

/* Whether backend and reply faults may touch @r. */
bool fsdev_data_op(const struct fsreq *r)
{
	u32 op = r->op;

	return fsdev_faulted(r->q) && op && op != FUSE_INIT && op < 64 &&
	       (r->q->d->plan.data_ops & (1ULL << op));
}

/*
 * Pushes every held completion in a shuffled order (q->push_lock held)
 * and moves them to @out.  Returns whether the driver wants a call.
 */
bool fsdev_release_held_locked(struct fsq *q, struct fsreq **out,
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
		pushed |= fsdev_push_locked(q, q->held[i], stopping);
		out[(*nout)++] = q->held[i];
	}
	q->nheld = 0;
	return pushed && vqf_vring_dev_need_notify(q->vr);
}

/* The plan's reply faults: a short used.len or a lying header. */
void fsdev_fault_reply(struct fsq *q, struct fsreq *r)
{
	struct fuse_out_header oh;
	u64 x;

	/* One fault per reply: each shows up once in the guest's count. */
	if (r->len < sizeof(oh) || !fsdev_data_op(r) || r->injected)
		return;
	x = vqf_fault_rand(&q->d->plan, q->idx, r->seq, 1);
	if (fsdev_roll(q, r->seq, VQF_FAULT_SHORT_USED)) {
		/* Below the header too now and then (-ENODATA). */
		r->len = (u32)(x % r->len);
		STAT_ADD(q->d, faults[VQF_FAULT_SHORT_USED], 1);
		return;
	}
	if (fsdev_roll(q, r->seq, VQF_FAULT_BAD_HDR_LEN) && r->nws &&
	    r->ws[0].len >= sizeof(oh)) {
		memcpy(&oh, r->ws[0].base, sizeof(oh));
		oh.len = (x & 1) || r->len == sizeof(oh) ?
			 r->len + 1 + (u32)(x >> 1) % 64 : r->len - 1;
		memcpy(r->ws[0].base, &oh, sizeof(oh));
		STAT_ADD(q->d, faults[VQF_FAULT_BAD_HDR_LEN], 1);
	}
}

/*
 * The plan's backend faults: an error reply instead of the backend's.
 * Returns true when @r was answered (and is gone).
 */
bool fsdev_fault_backend(struct vqf_fsdev *d, struct fsreq *r)
{
	static const int err[] = {
		[VQF_FAULT_EIO] = EIO,
		[VQF_FAULT_ENOSPC] = ENOSPC,
		[VQF_FAULT_EINTR] = EINTR,
	};
	int k, ret;

	if (!fsdev_data_op(r))
		return false;
	for (k = VQF_FAULT_EIO; k <= VQF_FAULT_EINTR; k++) {
		if (!fsdev_roll(r->q, r->seq, k))
			continue;
		STAT_ADD(d, faults[k], 1);
		r->injected = true;
		ret = vqf_dev_reply_req(&r->dreq, -err[k], NULL, 0, r->ws,
					r->nws, NULL);
		if (ret > 0)
			STAT_ADD(d, replies, 1);
		fsdev_finish(r, ret > 0 ? (u32)ret : 0);
		return true;
	}
	return false;
}

/*
 * The plan's short write: the backend gets the first half of the payload
 * (rounded down to 16 bytes) and says so in its reply.  Returns the flat
 * request's new length.
 */
u32 fsdev_fault_short_write(struct vqf_fsdev *d, struct fsreq *r, void *flat,
			     u32 flen)
{
	struct fuse_in_header ih;
	struct fuse_write_in wi;
	u32 keep;

	if (r->op != FUSE_WRITE || !fsdev_data_op(r) ||
	    flen < sizeof(ih) + sizeof(wi))
		return flen;
	memcpy(&ih, flat, sizeof(ih));
	memcpy(&wi, (u8 *)flat + sizeof(ih), sizeof(wi));
	/* Only the plain layout: no extensions after the payload. */
	if (flen != sizeof(ih) + sizeof(wi) + (u64)wi.size)
		return flen;
	keep = (wi.size / 2) & ~15u;
	if (!keep || !fsdev_roll(r->q, r->seq, VQF_FAULT_SHORT_WRITE))
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
 * Whether the plan lets the queue pop now (pop side).  A refused attempt
 * does not move avail_event: with EVENT_IDX the driver kicks no more and
 * only the poll timer (@tick) comes back, as after a lost notification.
 */
bool fsdev_fault_may_pop(struct fsq *q, bool tick)
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
	if (fsdev_roll(q, q->seq, VQF_FAULT_DROP_KICK)) {
		STAT_ADD(q->d, faults[VQF_FAULT_DROP_KICK], 1);
		return false;
	}
	if (fsdev_roll(q, q->seq, VQF_FAULT_STALL)) {
		STAT_ADD(q->d, faults[VQF_FAULT_STALL], 1);
		q->stall_left = p->stall_len - 1;
		return false;
	}
	want = p->fill_chains && p->fill_chains < q->num ? p->fill_chains :
	       q->num;
	if (fsdev_roll(q, q->seq, VQF_FAULT_FILL) && waiting < want) {
		STAT_ADD(q->d, faults[VQF_FAULT_FILL], 1);
		q->fill_want = want;
		q->fill_ticks_left = p->fill_ticks;
		return false;
	}
	return true;
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
	if (!q->vr || fsdev_is_stopping(d) || vqf_vring_dev_is_broken(q->vr)) {
		pthread_mutex_unlock(&q->pop_lock);
		return;
	}
	pthread_mutex_lock(&q->push_lock);
	work = q->deferred || q->nheld || q->call_owed;
	/* stop_all() takes every pop_lock before it drops held ones. */
	if (q->nheld)
		notify = fsdev_release_held_locked(q, out, &nout, false);
	notify |= q->call_owed;
	q->call_owed = false;
	pthread_mutex_unlock(&q->push_lock);
	if (notify && !vqf_eventfd_signal(q->call_fd))
		STAT_ADD(d, interrupts, 1);
	fsdev_free_all(d, out, nout);
	if (q->deferred)
		fsdev_run_queue(q, &r, true);
	pthread_mutex_unlock(&q->pop_lock);
	free(r);
	if (work)
		STAT_ADD(d, fault_polls, 1);
}

void *fsdev_tick_main(void *arg)
{
	struct vqf_fsdev *d = arg;
	struct pollfd pfd = { .fd = d->stop_fd, .events = POLLIN };
	unsigned int i, first = vqf_fsdev_first_request_queue(d);

	/* stop_fd is left unread: the queue threads wait on it too. */
	while (!fsdev_is_stopping(d) &&
	       poll(&pfd, 1, (int)d->plan.tick_ms) == 0) {
		for (i = first; i < d->nq; i++)
			if (d->q[i].set)
				fault_poll(&d->q[i]);
	}
	return NULL;
}
