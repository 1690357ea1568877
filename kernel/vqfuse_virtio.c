// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_virtio.c - the virtio-fs driver half of vqfuse.ko.
 *
 * One hiprio queue carries FORGETs, N request queues carry everything else;
 * a request goes to the queue of the CPU that submits it (upstream 6.1
 * only ever uses the first).  Completions are handled in work, never in
 * the interrupt.  A full ring parks the request on the queue's FIFO and
 * the next completion (or a 1 ms timer when memory was short) resends it,
 * so nothing is dropped and nothing overtakes.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/cpumask.h>
#include <linux/interrupt.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/virtio_fs.h>
#include <linux/scatterlist.h>
#include "fuse_i.h"
#include "vqfuse.h"
#include "vqfuse_compat.h"
#include "vqfuse_req.h"
#include "vqf_req.h"
#include "vqf_forget.h"

static unsigned int max_queues;
module_param(max_queues, uint, 0444);
MODULE_PARM_DESC(max_queues,
		 "Use at most this many request queues (0: one per CPU)");

static unsigned int dead_timeout;
module_param(dead_timeout, uint, 0644);
MODULE_PARM_DESC(dead_timeout,
		 "Seconds without a completion, requests in flight, before the device is declared dead and every request fails (0: wait forever, as upstream)");

/* Forgets staged for BATCH_FORGET: two full batches' worth. */
#define VQF_FORGET_SLOTS	1024

DEFINE_MUTEX(vqfk_mutex);
LIST_HEAD(vqfk_instances);

struct vqfk_req_work {
	struct fuse_req *req;
	struct vqfk_kvq *kvq;
	struct work_struct work;
};

static int vqfk_enqueue_req(struct vqfk_kvq *kvq, struct fuse_req *req,
			   bool in_flight);

static struct vqfk_kvq *vq_to_kvq(struct virtqueue *vq)
{
	struct vqfk_kfs *fs = vq->vdev->priv;

	return &fs->vqs[vq->index];
}

/* Called with kvq->lock held. */
static void vqfk_inc_in_flight(struct vqfk_kvq *kvq)
{
	/* An idle queue has nothing overdue: the clock starts now. */
	if (!kvq->in_flight++)
		kvq->progress = jiffies;
}

/* Called with kvq->lock held. */
static void vqfk_dec_in_flight(struct vqfk_kvq *kvq)
{
	WARN_ON(kvq->in_flight <= 0);
	kvq->in_flight--;
	if (!kvq->in_flight)
		complete(&kvq->in_flight_zero);
}

static void vqfk_fs_release(struct kref *ref)
{
	struct vqfk_kfs *fs = container_of(ref, struct vqfk_kfs, refcount);
	unsigned int i;

	/* every request has ended: no block can come back now */
	for (i = 0; fs->vqs && i < fs->nvqs; i++)
		vqfk_kreq_cache_drain(&fs->vqs[i].kreqs);
	kfree(fs->forget_slots);
	kfree(fs->mq_map);
	kfree(fs->vqs);
	kfree(fs->tag);
	kfree(fs);
}

/* Called with vqfk_mutex held. */
void vqfk_fs_put(struct vqfk_kfs *fs)
{
	kref_put(&fs->refcount, vqfk_fs_release);
}

static void vqfk_fiq_release(struct fuse_iqueue *fiq)
{
	struct vqfk_kfs *fs = fiq->priv;

	mutex_lock(&vqfk_mutex);
	vqfk_fs_put(fs);
	mutex_unlock(&vqfk_mutex);
}

/*
 * Wait until every request handed to the queue has been ended.  Serialised
 * by vqfk_mutex (remove vs. unmount), so no one else waits on in_flight_zero.
 */
static void vqfk_drain_queue(struct vqfk_kvq *kvq)
{
	spin_lock(&kvq->lock);
	if (kvq->in_flight) {
		reinit_completion(&kvq->in_flight_zero);
		spin_unlock(&kvq->lock);
		wait_for_completion(&kvq->in_flight_zero);
	} else {
		spin_unlock(&kvq->lock);
	}
	flush_work(&kvq->done_work);
	flush_delayed_work(&kvq->dispatch_work);
}

static void vqfk_drain_all_queues_locked(struct vqfk_kfs *fs)
{
	unsigned int i;

	for (i = 0; i < fs->nvqs; i++)
		vqfk_drain_queue(&fs->vqs[i]);
}

void vqfk_drain_all_queues(struct vqfk_kfs *fs)
{
	mutex_lock(&vqfk_mutex);
	vqfk_drain_all_queues_locked(fs);
	mutex_unlock(&vqfk_mutex);
}

static void vqfk_set_connected(struct vqfk_kvq *kvq, bool connected)
{
	spin_lock(&kvq->lock);
	kvq->connected = connected;
	spin_unlock(&kvq->lock);
}

void vqfk_start_all_queues(struct vqfk_kfs *fs)
{
	unsigned int i;

	/* A dead device was reset and its queues are broken: keep them down. */
	if (READ_ONCE(fs->dead))
		return;
	for (i = 0; i < fs->nvqs; i++)
		vqfk_set_connected(&fs->vqs[i], true);
}

void vqfk_stop_all_queues(struct vqfk_kfs *fs)
{
	unsigned int i;

	for (i = 0; i < fs->nvqs; i++)
		vqfk_set_connected(&fs->vqs[i], false);
}

/*
 * FORGETs still on the fuse_iqueue are sent first, then hiprio stops: the
 * DESTROY that follows must be the last thing the device sees.
 */
void vqfk_stop_hiprio(struct vqfk_kfs *fs)
{
	struct vqfk_kvq *kvq = &fs->vqs[VQF_VQ_HIPRIO];

	flush_delayed_work(&kvq->dispatch_work);
	/* A forgetting task may be sending right now: let it finish. */
	mutex_lock(&fs->forget_lock);
	vqfk_set_connected(kvq, false);
	mutex_unlock(&fs->forget_lock);
}

void vqfk_set_fiq(struct vqfk_kfs *fs, struct fuse_iqueue *fiq)
{
	struct vqfk_kvq *kvq = &fs->vqs[VQF_VQ_HIPRIO];

	spin_lock(&kvq->lock);
	fs->fiq = fiq;
	spin_unlock(&kvq->lock);
}

void vqfk_free_devs(struct vqfk_kfs *fs)
{
	unsigned int i;

	for (i = 0; i < fs->nvqs; i++) {
		if (!fs->vqs[i].fud)
			continue;
		fuse_dev_free(fs->vqs[i].fud);
		fs->vqs[i].fud = NULL;
	}
}

static int vqfk_add_instance(struct vqfk_kfs *fs)
{
	struct vqfk_kfs *fs2;
	int ret = 0;

	mutex_lock(&vqfk_mutex);
	list_for_each_entry(fs2, &vqfk_instances, list) {
		if (strcmp(fs->tag, fs2->tag) == 0) {
			ret = -EEXIST;
			break;
		}
	}
	if (!ret)
		list_add_tail(&fs->list, &vqfk_instances);
	mutex_unlock(&vqfk_mutex);
	return ret;
}

struct vqfk_kfs *vqfk_find_instance(const char *tag)
{
	struct vqfk_kfs *fs;

	mutex_lock(&vqfk_mutex);
	list_for_each_entry(fs, &vqfk_instances, list) {
		if (strcmp(fs->tag, tag) == 0) {
			kref_get(&fs->refcount);
			mutex_unlock(&vqfk_mutex);
			return fs;
		}
	}
	mutex_unlock(&vqfk_mutex);
	return NULL;
}

/* The tag is untrusted config space: bounded, non-empty, no newline. */
static int vqfk_read_tag(struct virtio_device *vdev, struct vqfk_kfs *fs)
{
	char buf[sizeof_field(struct virtio_fs_config, tag)];
	char *end;
	size_t len;

	virtio_cread_bytes(vdev, offsetof(struct virtio_fs_config, tag),
			   buf, sizeof(buf));
	end = memchr(buf, '\0', sizeof(buf));
	len = end ? end - buf : sizeof(buf);
	if (!len)
		return -EINVAL;
	if (memchr(buf, '\n', len)) {
		dev_err(&vdev->dev, "refusing tag with a newline\n");
		return -EINVAL;
	}
	fs->tag = kmemdup_nul(buf, len, GFP_KERNEL);
	return fs->tag ? 0 : -ENOMEM;
}

/* ---- completion ---- */

static void vqfk_request_complete(struct fuse_req *req, struct vqfk_kvq *kvq)
{
	struct fuse_pqueue *fpq = &kvq->fud->pq;
	int err;

	/* lib/ validates before copying; a refused reply ends with -EIO. */
	err = vqfk_req_finish(req, &kvq->kreqs);
	if (err) {
		atomic64_inc(&kvq->fs->bad_reply[vqfk_bad_index(err)]);
		vqfk_stat_inc(kvq, VQF_KS_BAD_REPLY);
		dev_warn_ratelimited(&kvq->fs->vdev->dev,
				     "%s: refused reply to opcode %u: %d\n",
				     kvq->name, req->in.h.opcode, err);
	}

	spin_lock(&fpq->lock);
	clear_bit(FR_SENT, &req->flags);
	spin_unlock(&fpq->lock);

	fuse_request_end(req);
	spin_lock(&kvq->lock);
	vqfk_dec_in_flight(kvq);
	spin_unlock(&kvq->lock);
}

static void vqfk_complete_req_work(struct work_struct *work)
{
	struct vqfk_req_work *w = container_of(work, typeof(*w), work);

	vqfk_request_complete(w->req, w->kvq);
	kfree(w);
}

static void vqfk_requests_done_work(struct work_struct *work)
{
	struct vqfk_kvq *kvq = container_of(work, struct vqfk_kvq, done_work);
	struct fuse_pqueue *fpq = &kvq->fud->pq;
	struct virtqueue *vq = kvq->vq;
	struct fuse_req *req, *next;
	unsigned int len;
	bool resend;
	LIST_HEAD(reqs);

	spin_lock(&kvq->lock);
	do {
		virtqueue_disable_cb(vq);
		while ((req = virtqueue_get_buf(vq, &len)) != NULL) {
			vqfk_req_set_used(req, len);
			kvq->progress = jiffies;
			spin_lock(&fpq->lock);
			list_move_tail(&req->list, &reqs);
			spin_unlock(&fpq->lock);
			vqfk_stat_inc(kvq, VQF_KS_DONE);
		}
	} while (!virtqueue_enable_cb(vq) && likely(!virtqueue_is_broken(vq)));
	resend = !list_empty(&kvq->queued);
	spin_unlock(&kvq->lock);

	/* Ring space was freed: parked requests go first. */
	if (resend)
		mod_delayed_work(system_wq, &kvq->dispatch_work, 0);

	list_for_each_entry_safe(req, next, &reqs, list) {
		list_del_init(&req->list);
		if (req->args->may_block) {
			struct vqfk_req_work *w;

			w = kzalloc(sizeof(*w), GFP_NOFS | __GFP_NOFAIL);
			INIT_WORK(&w->work, vqfk_complete_req_work);
			w->kvq = kvq;
			w->req = req;
			schedule_work(&w->work);
		} else {
			vqfk_request_complete(req, kvq);
		}
	}
}

static void vqfk_hiprio_done_work(struct work_struct *work)
{
	struct vqfk_kvq *kvq = container_of(work, struct vqfk_kvq, done_work);
	struct virtqueue *vq = kvq->vq;
	unsigned int len, done = 0;
	void *f;

	spin_lock(&kvq->lock);
	do {
		virtqueue_disable_cb(vq);
		while ((f = virtqueue_get_buf(vq, &len)) != NULL) {
			kfree(f);
			done++;
			kvq->progress = jiffies;
			vqfk_stat_inc(kvq, VQF_KS_DONE);
			vqfk_dec_in_flight(kvq);
		}
	} while (!virtqueue_enable_cb(vq) && likely(!virtqueue_is_broken(vq)));
	spin_unlock(&kvq->lock);
	/* Ring space is back: forgets that did not fit go now. */
	if (done && READ_ONCE(kvq->fs->forgets_waiting))
		mod_delayed_work(system_wq, &kvq->dispatch_work, 0);
}

static void vqfk_vq_done(struct virtqueue *vq)
{
	schedule_work(&vq_to_kvq(vq)->done_work);
}

/* ---- submission ---- */

/* Called with kvq->lock held; park @list until ring space is back. */
static void vqfk_park(struct vqfk_kvq *kvq, struct list_head *list)
{
	list_add_tail(list, &kvq->queued);
	vqfk_stat_inc(kvq, VQF_KS_REQUEUED);
	/*
	 * A completion resends at once; the timer covers -ENOMEM and a
	 * completion that raced with parking.
	 */
	schedule_delayed_work(&kvq->dispatch_work, msecs_to_jiffies(1));
}

static void vqfk_request_dispatch_work(struct work_struct *work)
{
	struct vqfk_kvq *kvq = container_of(work, struct vqfk_kvq,
					   dispatch_work.work);
	struct fuse_req *req;
	int ret;

	for (;;) {
		spin_lock(&kvq->lock);
		req = list_first_entry_or_null(&kvq->end_reqs,
					       struct fuse_req, list);
		if (!req) {
			spin_unlock(&kvq->lock);
			break;
		}
		list_del_init(&req->list);
		spin_unlock(&kvq->lock);
		fuse_request_end(req);
	}

	for (;;) {
		spin_lock(&kvq->lock);
		req = list_first_entry_or_null(&kvq->queued, struct fuse_req,
					       list);
		if (!req) {
			spin_unlock(&kvq->lock);
			return;
		}
		list_del_init(&req->list);
		spin_unlock(&kvq->lock);

		ret = vqfk_enqueue_req(kvq, req, true);
		if (ret == -ENOSPC || ret == -ENOMEM) {
			spin_lock(&kvq->lock);
			/* Back at the head: it was first in line. */
			list_add(&req->list, &kvq->queued);
			schedule_delayed_work(&kvq->dispatch_work,
					      msecs_to_jiffies(1));
			spin_unlock(&kvq->lock);
			return;
		}
		if (ret < 0) {
			req->out.h.error = ret;
			vqfk_stat_inc(kvq, VQF_KS_ENQUEUE_ERR);
			spin_lock(&kvq->lock);
			vqfk_dec_in_flight(kvq);
			spin_unlock(&kvq->lock);
			fuse_request_end(req);
		}
	}
}

/* A request lib/ cannot lay out is a glue bug: end it with -EIO. */
static int vqfk_refused(struct vqfk_kvq *kvq, struct fuse_req *req, int err)
{
	dev_warn_ratelimited(&kvq->fs->vdev->dev,
			     "%s: cannot lay out opcode %u: %d\n", kvq->name,
			     req->in.h.opcode, err);
	return -EIO;
}

/*
 * Add @req to @kvq and kick.  @in_flight: the request is already counted
 * (it comes off the parked FIFO).  A new request (!in_flight) may not
 * overtake parked ones: it gets -ENOSPC and joins the FIFO.
 */
static int vqfk_enqueue_req(struct vqfk_kvq *kvq, struct fuse_req *req,
			   bool in_flight)
{
	struct scatterlist *stack_sgs[8];
	struct scatterlist stack_sg[ARRAY_SIZE(stack_sgs)];
	struct vqf_sg stack_vsg[ARRAY_SIZE(stack_sgs)];
	struct scatterlist **sgs = stack_sgs;
	struct scatterlist *sg = stack_sg;
	struct vqf_sg *vsg = stack_vsg;
	unsigned int out_sgs, in_sgs, total, i;
	struct fuse_pqueue *fpq;
	bool notify;
	int ret;

	/*
	 * Most requests fit the stack arrays; a bigger one gets all three
	 * arrays in one allocation, sized from its arg counts.  Either way
	 * lib/ checks the request once and lays it out in one pass.
	 */
	total = vqfk_req_sg_bound(req);
	if (total > ARRAY_SIZE(stack_sgs)) {
		sg = kmalloc_array(total, sizeof(*sg) + sizeof(*vsg) +
				   sizeof(*sgs), GFP_ATOMIC);
		if (!sg)
			return -ENOMEM;
		vsg = (struct vqf_sg *)(sg + total);
		sgs = (struct scatterlist **)(vsg + total);
	} else {
		total = ARRAY_SIZE(stack_sgs);
	}
	ret = vqfk_req_marshal(req, &kvq->kreqs, GFP_ATOMIC, vsg, sg, total,
			       &out_sgs, &in_sgs);
	if (ret < 0) {
		if (sg != stack_sg)
			kfree(sg);
		/* Not "ring full": lib/ refused the shape, which never heals. */
		return ret == -ENOMEM ? ret : vqfk_refused(kvq, req, ret);
	}
	total = ret;
	for (i = 0; i < total; i++)
		sgs[i] = &sg[i];

	spin_lock(&kvq->lock);
	if (!kvq->connected) {
		spin_unlock(&kvq->lock);
		ret = -ENOTCONN;
		goto out;
	}
	if (!in_flight && !list_empty(&kvq->queued)) {
		spin_unlock(&kvq->lock);
		ret = -ENOSPC;
		goto out;
	}
	ret = virtqueue_add_sgs(kvq->vq, sgs, out_sgs, in_sgs, req,
				GFP_ATOMIC);
	if (ret < 0) {
		spin_unlock(&kvq->lock);
		goto out;
	}

	fpq = &kvq->fud->pq;
	spin_lock(&fpq->lock);
	list_add_tail(&req->list, fpq->processing);
	spin_unlock(&fpq->lock);
	set_bit(FR_SENT, &req->flags);
	/* matches barrier in request_wait_answer() */
	smp_mb__after_atomic();

	if (!in_flight)
		vqfk_inc_in_flight(kvq);
	vqfk_stat_inc(kvq, VQF_KS_SENT);
	notify = virtqueue_kick_prepare(kvq->vq);
	spin_unlock(&kvq->lock);

	if (notify)
		virtqueue_notify(kvq->vq);
out:
	if (ret < 0)
		vqfk_req_release(req, &kvq->kreqs);
	if (sg != stack_sg)
		kfree(sg);
	return ret;
}

/* The request queue of the submitting CPU (see vqfk_map_queues()). */
static struct vqfk_kvq *vqfk_pick_queue(struct vqfk_kfs *fs)
{
	unsigned int cpu = raw_smp_processor_id();

	return &fs->vqs[fs->mq_map ? fs->mq_map[cpu] :
			VQF_VQ_REQUEST + cpu % (fs->nvqs - VQF_VQ_REQUEST)];
}

/*
 * A request from fuse.ko (through vqfk_fiq_ops, vqfuse_compat.h): FR_PENDING
 * is cleared and its unique set; fc->bg_lock may be held.
 */
static void vqfk_send_req(struct vqfk_kfs *fs, struct fuse_req *req)
{
	struct vqfk_kvq *kvq;
	int ret;

	kvq = vqfk_pick_queue(fs);
	ret = vqfk_enqueue_req(kvq, req, false);
	if (!ret)
		return;

	spin_lock(&kvq->lock);
	if (ret == -ENOSPC || ret == -ENOMEM) {
		/* Not here: we may hold fc->bg_lock; the worker resends. */
		vqfk_inc_in_flight(kvq);
		vqfk_park(kvq, &req->list);
	} else {
		/* fuse_request_end() may not run under fc->bg_lock either. */
		req->out.h.error = ret;
		vqfk_stat_inc(kvq, VQF_KS_ENQUEUE_ERR);
		list_add_tail(&req->list, &kvq->end_reqs);
		schedule_delayed_work(&kvq->dispatch_work, 0);
	}
	spin_unlock(&kvq->lock);
}

/*
 * Moves forgets from the fuse_iqueue into lib's queue (fs->forgets), as
 * many as it holds.  Returns the request id for the next request, 0 if
 * nothing is queued.  Called with fs->forget_lock, which owns fs->forgets.
 */
static u64 vqfk_forget_refill(struct vqfk_kfs *fs, struct fuse_iqueue *fiq,
			     bool *batch_ok)
{
	struct fuse_conn *fc = container_of(fiq, struct fuse_conn, iq);
	struct vqf_forget_queue *q = &fs->forgets;
	struct fuse_forget_link *link;
	u64 unique = 0;

	spin_lock(&fiq->lock);
	while (vqf_forget_queue_len(q) < q->cap && fiq->forget_list_head.next) {
		link = vqfk_dequeue_forget(fiq);
		/* fuse never forgets nodeid 0 or 0 lookups; lib refuses them */
		if (vqf_forget_queue_push(q, link->forget_one.nodeid,
					  link->forget_one.nlookup))
			vqfk_stat_inc(&fs->vqs[VQF_VQ_HIPRIO],
				     VQF_KS_ENQUEUE_ERR);
		kfree(link);
	}
	*batch_ok = fc->minor >= 16;
	spin_unlock(&fiq->lock);
	if (vqf_forget_queue_len(q))
		unique = vqfk_get_unique(fiq);
	return unique;
}

/*
 * Sends what is queued, as BATCH_FORGETs (lib's two-phase build/consume
 * keeps forgets that did not fit the ring queued).  Called with
 * fs->forget_lock.
 */
static void vqfk_forget_dispatch(struct vqfk_kvq *kvq)
{
	struct vqfk_kfs *fs = kvq->fs;
	struct vqf_forget_queue *q = &fs->forgets;
	struct fuse_iqueue *fiq;
	struct scatterlist sg;
	bool batch_ok, notify;
	u32 size, nr;
	void *buf;
	u64 unique;
	int len, ret;

	for (;;) {
		spin_lock(&kvq->lock);
		fiq = kvq->connected ? fs->fiq : NULL;
		spin_unlock(&kvq->lock);
		if (!fiq) {
			/* Unmounting or device gone: the server forgets all. */
			vqf_forget_consume(q, vqf_forget_queue_len(q));
			WRITE_ONCE(fs->forgets_waiting, false);
			return;
		}
		/*
		 * Cleared before the refill: a forget queued after the refill
		 * sets it again (vqfk_send_forget()), so none is left behind.
		 */
		WRITE_ONCE(fs->forgets_waiting, false);
		unique = vqfk_forget_refill(fs, fiq, &batch_ok);
		if (!unique)
			return;

		size = VQF_FORGET_BATCH_HDR_SIZE + vqf_forget_queue_len(q) *
			sizeof(struct fuse_forget_one);
		size = max_t(u32, size, VQF_FORGET_ONE_SIZE);
		size = min_t(u32, size, VQF_FORGET_DEFAULT_MAX_REQ);
		buf = kmalloc(size, GFP_NOFS | __GFP_NOFAIL);
		len = vqf_forget_build(q, buf, size,
				       VQF_FORGET_DEFAULT_MAX_REQ, unique,
				       batch_ok, &nr);
		if (WARN_ON_ONCE(len < 0)) {
			kfree(buf);
			vqf_forget_consume(q, vqf_forget_queue_len(q));
			return;
		}

		sg_init_one(&sg, buf, len);
		spin_lock(&kvq->lock);
		ret = kvq->connected ?
			virtqueue_add_outbuf(kvq->vq, &sg, 1, buf, GFP_ATOMIC) :
			-ENOTCONN;
		if (ret < 0) {
			spin_unlock(&kvq->lock);
			kfree(buf);
			if (ret == -ENOSPC || ret == -ENOMEM) {
				/* Still queued in lib/; resent on completion. */
				WRITE_ONCE(fs->forgets_waiting, true);
				vqfk_stat_inc(kvq, VQF_KS_REQUEUED);
				schedule_delayed_work(&kvq->dispatch_work,
						      msecs_to_jiffies(1));
				return;
			}
			continue;	/* disconnected: dropped above */
		}
		vqfk_inc_in_flight(kvq);
		vqfk_stat_inc(kvq, VQF_KS_SENT);
		vqfk_stat_inc(kvq, VQF_KS_FORGET_REQS);
		atomic64_add(nr, &kvq->stat[VQF_KS_FORGETS]);
		notify = virtqueue_kick_prepare(kvq->vq);
		spin_unlock(&kvq->lock);
		vqf_forget_consume(q, nr);
		if (notify)
			virtqueue_notify(kvq->vq);
	}
}

static void vqfk_hiprio_dispatch_work(struct work_struct *work)
{
	struct vqfk_kvq *kvq = container_of(work, struct vqfk_kvq,
					   dispatch_work.work);

	mutex_lock(&kvq->fs->forget_lock);
	vqfk_forget_dispatch(kvq);
	mutex_unlock(&kvq->fs->forget_lock);
}

/*
 * A forget is on fiq->forget_list.  With nothing in flight on hiprio it
 * goes out at once, from the forgetting task, as upstream sends every
 * FORGET: a worker wake-up per forget cost a delete 13 % (bench-qemu).
 * Behind one in flight it waits, and that completion sends everything
 * that gathered as one BATCH_FORGET: an eviction storm still batches.
 */
static void vqfk_send_forget(struct vqfk_kfs *fs)
{
	struct vqfk_kvq *kvq = &fs->vqs[VQF_VQ_HIPRIO];
	bool idle;

	spin_lock(&kvq->lock);
	idle = !kvq->in_flight;
	if (!idle)
		/* The in-flight one's completion reads it after it ends. */
		WRITE_ONCE(fs->forgets_waiting, true);
	spin_unlock(&kvq->lock);
	if (!idle)
		return;
	if (mutex_trylock(&fs->forget_lock)) {
		vqfk_forget_dispatch(kvq);
		mutex_unlock(&fs->forget_lock);
	} else {
		/* The holder may have refilled already: run once more. */
		schedule_delayed_work(&kvq->dispatch_work, 0);
	}
}

static void vqfk_send_interrupt(struct vqfk_kfs *fs)
{
	/*
	 * As upstream: no FUSE_INTERRUPT over virtio-fs yet.  The request
	 * itself still completes (or is ended when the device goes away).
	 */
	vqfk_stat_inc(&fs->vqs[VQF_VQ_HIPRIO], VQF_KS_INTERRUPTS);
}

VQFK_DEFINE_FIQ_OPS(vqfk_fiq_ops, vqfk_send_req, vqfk_send_forget,
		    vqfk_send_interrupt, vqfk_fiq_release);

/* ---- a device that stopped answering ---- */

/* End everything the reset device still held, with -ENOTCONN. */
static void vqfk_abort_vq(struct vqfk_kvq *kvq, bool hiprio)
{
	struct fuse_req *req, *next;
	LIST_HEAD(reqs);
	void *token;

	spin_lock(&kvq->lock);
	while ((token = virtqueue_detach_unused_buf(kvq->vq)) != NULL) {
		vqfk_stat_inc(kvq, VQF_KS_ABORTED);
		if (hiprio) {
			kfree(token);
			vqfk_dec_in_flight(kvq);
			continue;
		}
		req = token;
		spin_lock(&kvq->fud->pq.lock);
		list_move_tail(&req->list, &reqs);
		spin_unlock(&kvq->fud->pq.lock);
	}
	spin_unlock(&kvq->lock);

	list_for_each_entry_safe(req, next, &reqs, list) {
		list_del_init(&req->list);
		vqfk_req_release(req, &kvq->kreqs);
		req->out.h.error = -ENOTCONN;
		spin_lock(&kvq->fud->pq.lock);
		clear_bit(FR_SENT, &req->flags);
		spin_unlock(&kvq->fud->pq.lock);
		fuse_request_end(req);
		spin_lock(&kvq->lock);
		vqfk_dec_in_flight(kvq);
		spin_unlock(&kvq->lock);
	}
	/* Parked requests and forgets now fail (or drop) in the worker. */
	mod_delayed_work(system_wq, &kvq->dispatch_work, 0);
}

/*
 * Nothing came back for dead_timeout seconds (virtiofsd killed: QEMU keeps
 * the device, nobody serves it).  Only a reset makes the device let go of
 * the buffers it holds, so: queues down, break (no more callbacks), reset,
 * then take every buffer back and end its request.  Unmount and rmmod then
 * work; the device stays dead until it is bound again.  No vqfk_mutex here:
 * ->remove() and unmount hold it while draining, which this unblocks.
 */
static void vqfk_kill_device(struct vqfk_kfs *fs)
{
	unsigned int i;

	WRITE_ONCE(fs->dead, true);
	vqfk_stop_all_queues(fs);
	virtio_break_device(fs->vdev);
	virtio_reset_device(fs->vdev);
	for (i = 0; i < fs->nvqs; i++)
		flush_work(&fs->vqs[i].done_work);
	for (i = 0; i < fs->nvqs; i++) {
		if (i == VQF_VQ_HIPRIO || fs->vqs[i].fud)
			vqfk_abort_vq(&fs->vqs[i], i == VQF_VQ_HIPRIO);
	}
}

static void vqfk_watchdog(struct work_struct *work)
{
	struct vqfk_kfs *fs = container_of(work, struct vqfk_kfs,
					   watchdog.work);
	unsigned long limit = READ_ONCE(dead_timeout) * HZ;
	unsigned int i;
	bool stalled = false;

	for (i = 0; limit && i < fs->nvqs && !stalled; i++) {
		struct vqfk_kvq *kvq = &fs->vqs[i];

		spin_lock(&kvq->lock);
		stalled = kvq->in_flight &&
			  time_after(jiffies, kvq->progress + limit);
		spin_unlock(&kvq->lock);
	}
	if (stalled) {
		dev_err(&fs->vdev->dev,
			"vqfuse: <%s>: no completion for %u s, device is dead: failing its requests\n",
			fs->tag, dead_timeout);
		vqfk_kill_device(fs);
		return;
	}
	schedule_delayed_work(&fs->watchdog, HZ);
}

/* Watch a mounted device (dead_timeout is read at mount time). */
void vqfk_watchdog_start(struct vqfk_kfs *fs)
{
	if (READ_ONCE(dead_timeout) && !READ_ONCE(fs->dead))
		schedule_delayed_work(&fs->watchdog, HZ);
}

/*
 * Called once the queues are drained, before the fuse devices go: the
 * watchdog's abort path uses them.
 */
void vqfk_watchdog_stop(struct vqfk_kfs *fs)
{
	cancel_delayed_work_sync(&fs->watchdog);
}

/* ---- device setup ---- */

static void vqfk_init_vq(struct vqfk_kfs *fs, struct vqfk_kvq *kvq,
			const char *name, bool hiprio)
{
	strscpy(kvq->name, name, VQF_VQ_NAME_LEN);
	kvq->fs = fs;
	spin_lock_init(&kvq->lock);
	INIT_LIST_HEAD(&kvq->queued);
	INIT_LIST_HEAD(&kvq->end_reqs);
	init_completion(&kvq->in_flight_zero);
	vqfk_kreq_cache_init(&kvq->kreqs);
	if (hiprio) {
		INIT_WORK(&kvq->done_work, vqfk_hiprio_done_work);
		INIT_DELAYED_WORK(&kvq->dispatch_work,
				  vqfk_hiprio_dispatch_work);
	} else {
		INIT_WORK(&kvq->done_work, vqfk_requests_done_work);
		INIT_DELAYED_WORK(&kvq->dispatch_work,
				  vqfk_request_dispatch_work);
	}
}

/*
 * CPU -> request queue, from the interrupt affinity the transport gave each
 * queue (MSI-X spreads them like virtio-blk's); without one, round robin.
 */
static void vqfk_map_queues(struct vqfk_kfs *fs)
{
	struct virtio_device *vdev = fs->vdev;
	unsigned int nrq = fs->nvqs - VQF_VQ_REQUEST;
	const struct cpumask *mask;
	unsigned int q, cpu;

	fs->mq_map = kcalloc(nr_cpu_ids, sizeof(*fs->mq_map), GFP_KERNEL);
	if (!fs->mq_map)
		return;
	for_each_possible_cpu(cpu)
		fs->mq_map[cpu] = VQF_VQ_REQUEST + cpu % nrq;
	if (!vdev->config->get_vq_affinity)
		return;
	for (q = 0; q < nrq; q++) {
		mask = vdev->config->get_vq_affinity(vdev, VQF_VQ_REQUEST + q);
		if (!mask)
			continue;
		for_each_cpu(cpu, mask)
			fs->mq_map[cpu] = VQF_VQ_REQUEST + q;
	}
}

static int vqfk_setup_vqs(struct virtio_device *vdev, struct vqfk_kfs *fs)
{
	struct irq_affinity desc = { .pre_vectors = 1 };
	struct virtqueue **vqs;
	const char **names;
	unsigned int i, nrq;
	int ret = -ENOMEM;

	virtio_cread_le(vdev, struct virtio_fs_config, num_request_queues,
			&fs->num_request_queues);
	if (fs->num_request_queues == 0)
		return -EINVAL;
	/* Untrusted count: more queues than CPUs buys nothing. */
	nrq = min(fs->num_request_queues, nr_cpu_ids);
	if (max_queues)
		nrq = min(nrq, max_queues);
	fs->nvqs = VQF_VQ_REQUEST + nrq;

	fs->vqs = kcalloc(fs->nvqs, sizeof(fs->vqs[0]), GFP_KERNEL);
	vqs = kmalloc_array(fs->nvqs, sizeof(vqs[0]), GFP_KERNEL);
	names = kmalloc_array(fs->nvqs, sizeof(names[0]), GFP_KERNEL);
	if (!fs->vqs || !vqs || !names)
		goto out;

	vqfk_init_vq(fs, &fs->vqs[VQF_VQ_HIPRIO], "hiprio", true);
	for (i = VQF_VQ_REQUEST; i < fs->nvqs; i++) {
		char name[VQF_VQ_NAME_LEN];

		snprintf(name, sizeof(name), "requests.%u", i - VQF_VQ_REQUEST);
		vqfk_init_vq(fs, &fs->vqs[i], name, false);
	}
	for (i = 0; i < fs->nvqs; i++)
		names[i] = fs->vqs[i].name;

	/*
	 * Spread the request queues' interrupts over the CPUs when there are
	 * several.  A single queue gets the interrupt the kernel's virtiofs
	 * gives it (VQFK_MANAGED_IRQ_ALWAYS): a managed one lands on a CPU of
	 * the allocator's choosing that no one can move, and that CPU decides
	 * whether a single-threaded workload gets local or cross-CPU wakeups
	 * (up to 1.5x under TCG), so the two drivers must choose alike.
	 */
	ret = vqfk_find_vqs(vdev, fs->nvqs, vqs, vqfk_vq_done, names,
			    nrq > 1 || VQFK_MANAGED_IRQ_ALWAYS ? &desc : NULL);
	if (ret < 0)
		goto out;
	for (i = 0; i < fs->nvqs; i++)
		fs->vqs[i].vq = vqs[i];
	vqfk_map_queues(fs);
	vqfk_start_all_queues(fs);
out:
	kfree(names);
	kfree(vqs);
	if (ret) {
		kfree(fs->vqs);
		fs->vqs = NULL;
	}
	return ret;
}

static int vqfk_probe(struct virtio_device *vdev)
{
	struct vqfk_kfs *fs;
	int ret;

	if (!vdev->config->get) {
		dev_err(&vdev->dev, "config access disabled\n");
		return -EINVAL;
	}

	fs = kzalloc(sizeof(*fs), GFP_KERNEL);
	if (!fs)
		return -ENOMEM;
	kref_init(&fs->refcount);
	INIT_LIST_HEAD(&fs->list);
	fs->vdev = vdev;
	vdev->priv = fs;

	ret = vqfk_read_tag(vdev, fs);
	if (ret < 0)
		goto out;
	ret = -ENOMEM;
	mutex_init(&fs->forget_lock);
	fs->forget_slots = kcalloc(VQF_FORGET_SLOTS, sizeof(*fs->forget_slots),
				   GFP_KERNEL);
	if (!fs->forget_slots)
		goto out;
	vqf_forget_queue_init(&fs->forgets, fs->forget_slots,
			      VQF_FORGET_SLOTS);
	ret = vqfk_setup_vqs(vdev, fs);
	if (ret < 0)
		goto out;
	ret = vqfk_dax_setup(vdev, fs);
	if (ret < 0)
		goto out_vqs;
	ret = vqfk_ver_setup(vdev, fs);
	if (ret < 0)
		goto out_vqs;

	/* Requests may be sent as soon as the tag is visible to mount. */
	virtio_device_ready(vdev);

	ret = vqfk_add_instance(fs);
	if (ret < 0)
		goto out_vqs;
	vqfk_stats_add_device(fs);
	INIT_DELAYED_WORK(&fs->watchdog, vqfk_watchdog);
	dev_info(&vdev->dev, "vqfuse: tag <%s>, %u of %u request queues\n",
		 fs->tag, fs->nvqs - VQF_VQ_REQUEST, fs->num_request_queues);
	return 0;

out_vqs:
	virtio_reset_device(vdev);
	vdev->config->del_vqs(vdev);
	kfree(fs->mq_map);
	kfree(fs->vqs);
out:
	vdev->priv = NULL;
	kfree(fs->forget_slots);
	kfree(fs->tag);
	kfree(fs);
	return ret;
}

static void vqfk_remove(struct virtio_device *vdev)
{
	struct vqfk_kfs *fs = vdev->priv;

	vqfk_stats_remove_device(fs);
	mutex_lock(&vqfk_mutex);
	/* No new mounts; a mounted conn keeps fs alive, with queues down. */
	list_del_init(&fs->list);
	vqfk_stop_all_queues(fs);
	/* With dead_timeout, the watchdog ends what a dead device holds. */
	vqfk_drain_all_queues_locked(fs);
	cancel_delayed_work_sync(&fs->watchdog);
	virtio_reset_device(vdev);
	vdev->config->del_vqs(vdev);
	vdev->priv = NULL;
	vqfk_fs_put(fs);
	mutex_unlock(&vqfk_mutex);
}

#ifdef CONFIG_PM_SLEEP
static int vqfk_freeze(struct virtio_device *vdev)
{
	/* As upstream: state is not saved, so refuse to suspend. */
	return -EOPNOTSUPP;
}

static int vqfk_restore(struct virtio_device *vdev)
{
	return 0;
}
#endif

static const struct virtio_device_id vqfk_id_table[] = {
	{ VIRTIO_ID_FS, VIRTIO_DEV_ANY_ID },
	{},
};
MODULE_DEVICE_TABLE(virtio, vqfk_id_table);

static const unsigned int vqfk_feature_table[] = {};

struct virtio_driver vqfk_virtio_driver = {
	.driver.name		= KBUILD_MODNAME,
	.driver.owner		= THIS_MODULE,
	.id_table		= vqfk_id_table,
	.feature_table		= vqfk_feature_table,
	.feature_table_size	= ARRAY_SIZE(vqfk_feature_table),
	.probe			= vqfk_probe,
	.remove			= vqfk_remove,
#ifdef CONFIG_PM_SLEEP
	.freeze			= vqfk_freeze,
	.restore		= vqfk_restore,
#endif
};
