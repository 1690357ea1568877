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
#include "vqfuse_req.h"
#include "vqfuse_forget.h"

static unsigned int max_queues;
module_param(max_queues, uint, 0444);
MODULE_PARM_DESC(max_queues,
		 "Use at most this many request queues (0: one per CPU)");

DEFINE_MUTEX(vqf_mutex);
LIST_HEAD(vqf_instances);

struct vqf_req_work {
	struct fuse_req *req;
	struct vqf_kvq *kvq;
	struct work_struct work;
};

static int vqf_enqueue_req(struct vqf_kvq *kvq, struct fuse_req *req,
			   bool in_flight);

static struct vqf_kvq *vq_to_kvq(struct virtqueue *vq)
{
	struct vqf_kfs *fs = vq->vdev->priv;

	return &fs->vqs[vq->index];
}

/* Called with kvq->lock held. */
static void vqf_inc_in_flight(struct vqf_kvq *kvq)
{
	kvq->in_flight++;
}

/* Called with kvq->lock held. */
static void vqf_dec_in_flight(struct vqf_kvq *kvq)
{
	WARN_ON(kvq->in_flight <= 0);
	kvq->in_flight--;
	if (!kvq->in_flight)
		complete(&kvq->in_flight_zero);
}

static void vqf_fs_release(struct kref *ref)
{
	struct vqf_kfs *fs = container_of(ref, struct vqf_kfs, refcount);

	kfree(fs->mq_map);
	kfree(fs->vqs);
	kfree(fs->tag);
	kfree(fs);
}

/* Called with vqf_mutex held. */
void vqf_fs_put(struct vqf_kfs *fs)
{
	kref_put(&fs->refcount, vqf_fs_release);
}

static void vqf_fiq_release(struct fuse_iqueue *fiq)
{
	struct vqf_kfs *fs = fiq->priv;

	mutex_lock(&vqf_mutex);
	vqf_fs_put(fs);
	mutex_unlock(&vqf_mutex);
}

/*
 * Wait until every request handed to the queue has been ended.  Serialised
 * by vqf_mutex (remove vs. unmount), so no one else waits on in_flight_zero.
 */
static void vqf_drain_queue(struct vqf_kvq *kvq)
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

static void vqf_drain_all_queues_locked(struct vqf_kfs *fs)
{
	unsigned int i;

	for (i = 0; i < fs->nvqs; i++)
		vqf_drain_queue(&fs->vqs[i]);
}

void vqf_drain_all_queues(struct vqf_kfs *fs)
{
	mutex_lock(&vqf_mutex);
	vqf_drain_all_queues_locked(fs);
	mutex_unlock(&vqf_mutex);
}

static void vqf_set_connected(struct vqf_kvq *kvq, bool connected)
{
	spin_lock(&kvq->lock);
	kvq->connected = connected;
	spin_unlock(&kvq->lock);
}

void vqf_start_all_queues(struct vqf_kfs *fs)
{
	unsigned int i;

	for (i = 0; i < fs->nvqs; i++)
		vqf_set_connected(&fs->vqs[i], true);
}

void vqf_stop_all_queues(struct vqf_kfs *fs)
{
	unsigned int i;

	for (i = 0; i < fs->nvqs; i++)
		vqf_set_connected(&fs->vqs[i], false);
}

/*
 * FORGETs still on the fuse_iqueue are sent first, then hiprio stops: the
 * DESTROY that follows must be the last thing the device sees.
 */
void vqf_stop_hiprio(struct vqf_kfs *fs)
{
	struct vqf_kvq *kvq = &fs->vqs[VQF_VQ_HIPRIO];

	flush_delayed_work(&kvq->dispatch_work);
	vqf_set_connected(kvq, false);
}

void vqf_set_fiq(struct vqf_kfs *fs, struct fuse_iqueue *fiq)
{
	struct vqf_kvq *kvq = &fs->vqs[VQF_VQ_HIPRIO];

	spin_lock(&kvq->lock);
	fs->fiq = fiq;
	spin_unlock(&kvq->lock);
}

void vqf_free_devs(struct vqf_kfs *fs)
{
	unsigned int i;

	for (i = 0; i < fs->nvqs; i++) {
		if (!fs->vqs[i].fud)
			continue;
		fuse_dev_free(fs->vqs[i].fud);
		fs->vqs[i].fud = NULL;
	}
}

static int vqf_add_instance(struct vqf_kfs *fs)
{
	struct vqf_kfs *fs2;
	int ret = 0;

	mutex_lock(&vqf_mutex);
	list_for_each_entry(fs2, &vqf_instances, list) {
		if (strcmp(fs->tag, fs2->tag) == 0) {
			ret = -EEXIST;
			break;
		}
	}
	if (!ret)
		list_add_tail(&fs->list, &vqf_instances);
	mutex_unlock(&vqf_mutex);
	return ret;
}

struct vqf_kfs *vqf_find_instance(const char *tag)
{
	struct vqf_kfs *fs;

	mutex_lock(&vqf_mutex);
	list_for_each_entry(fs, &vqf_instances, list) {
		if (strcmp(fs->tag, tag) == 0) {
			kref_get(&fs->refcount);
			mutex_unlock(&vqf_mutex);
			return fs;
		}
	}
	mutex_unlock(&vqf_mutex);
	return NULL;
}

/* The tag is untrusted config space: bounded, non-empty, no newline. */
static int vqf_read_tag(struct virtio_device *vdev, struct vqf_kfs *fs)
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

static void vqf_request_complete(struct fuse_req *req, struct vqf_kvq *kvq)
{
	struct fuse_pqueue *fpq = &kvq->fud->pq;
	int cause;

	cause = vqf_req_complete(req);
	if (cause) {
		atomic64_inc(&kvq->fs->bad_reply[cause]);
		vqf_stat_inc(kvq, VQF_KS_BAD_REPLY);
		dev_warn_ratelimited(&kvq->fs->vdev->dev,
				     "%s: bad reply to opcode %u (cause %d)\n",
				     kvq->name, req->in.h.opcode, cause);
		req->out.h.error = -EIO;
	}

	spin_lock(&fpq->lock);
	clear_bit(FR_SENT, &req->flags);
	spin_unlock(&fpq->lock);

	fuse_request_end(req);
	spin_lock(&kvq->lock);
	vqf_dec_in_flight(kvq);
	spin_unlock(&kvq->lock);
}

static void vqf_complete_req_work(struct work_struct *work)
{
	struct vqf_req_work *w = container_of(work, typeof(*w), work);

	vqf_request_complete(w->req, w->kvq);
	kfree(w);
}

static void vqf_requests_done_work(struct work_struct *work)
{
	struct vqf_kvq *kvq = container_of(work, struct vqf_kvq, done_work);
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
			struct vqf_kreq *kr = req->argbuf;

			kr->used_len = len;
			spin_lock(&fpq->lock);
			list_move_tail(&req->list, &reqs);
			spin_unlock(&fpq->lock);
			vqf_stat_inc(kvq, VQF_KS_DONE);
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
			struct vqf_req_work *w;

			w = kzalloc(sizeof(*w), GFP_NOFS | __GFP_NOFAIL);
			INIT_WORK(&w->work, vqf_complete_req_work);
			w->kvq = kvq;
			w->req = req;
			schedule_work(&w->work);
		} else {
			vqf_request_complete(req, kvq);
		}
	}
}

static void vqf_hiprio_done_work(struct work_struct *work)
{
	struct vqf_kvq *kvq = container_of(work, struct vqf_kvq, done_work);
	struct virtqueue *vq = kvq->vq;
	struct vqf_kforget *f;
	unsigned int len;
	bool resend;

	spin_lock(&kvq->lock);
	do {
		virtqueue_disable_cb(vq);
		while ((f = virtqueue_get_buf(vq, &len)) != NULL) {
			kfree(f);
			vqf_stat_inc(kvq, VQF_KS_DONE);
			vqf_dec_in_flight(kvq);
		}
	} while (!virtqueue_enable_cb(vq) && likely(!virtqueue_is_broken(vq)));
	resend = !list_empty(&kvq->queued);
	spin_unlock(&kvq->lock);
	if (resend)
		mod_delayed_work(system_wq, &kvq->dispatch_work, 0);
}

static void vqf_vq_done(struct virtqueue *vq)
{
	schedule_work(&vq_to_kvq(vq)->done_work);
}

/* ---- submission ---- */

/* Called with kvq->lock held; park @list until ring space is back. */
static void vqf_park(struct vqf_kvq *kvq, struct list_head *list)
{
	list_add_tail(list, &kvq->queued);
	vqf_stat_inc(kvq, VQF_KS_REQUEUED);
	/*
	 * A completion resends at once; the timer covers -ENOMEM and a
	 * completion that raced with parking.
	 */
	schedule_delayed_work(&kvq->dispatch_work, msecs_to_jiffies(1));
}

static void vqf_request_dispatch_work(struct work_struct *work)
{
	struct vqf_kvq *kvq = container_of(work, struct vqf_kvq,
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

		ret = vqf_enqueue_req(kvq, req, true);
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
			vqf_stat_inc(kvq, VQF_KS_ENQUEUE_ERR);
			spin_lock(&kvq->lock);
			vqf_dec_in_flight(kvq);
			spin_unlock(&kvq->lock);
			fuse_request_end(req);
		}
	}
}

/*
 * Add @req to @kvq and kick.  @in_flight: the request is already counted
 * (it comes off the parked FIFO).  A new request (!in_flight) may not
 * overtake parked ones: it gets -ENOSPC and joins the FIFO.
 */
static int vqf_enqueue_req(struct vqf_kvq *kvq, struct fuse_req *req,
			   bool in_flight)
{
	struct scatterlist *stack_sgs[8];
	struct scatterlist stack_sg[ARRAY_SIZE(stack_sgs)];
	struct scatterlist **sgs = stack_sgs;
	struct scatterlist *sg = stack_sg;
	unsigned int out_sgs, in_sgs, total, i;
	struct fuse_pqueue *fpq;
	bool notify;
	int ret;

	total = vqf_req_sg_count(req);
	if (total > ARRAY_SIZE(stack_sgs)) {
		sgs = kmalloc_array(total, sizeof(sgs[0]), GFP_ATOMIC);
		sg = kmalloc_array(total, sizeof(sg[0]), GFP_ATOMIC);
		if (!sgs || !sg) {
			ret = -ENOMEM;
			goto out;
		}
	}

	ret = vqf_req_prepare(req, GFP_ATOMIC);
	if (ret < 0)
		goto out;
	vqf_req_fill_sg(req, sg, &out_sgs, &in_sgs);
	WARN_ON(out_sgs + in_sgs != total);
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
		vqf_inc_in_flight(kvq);
	vqf_stat_inc(kvq, VQF_KS_SENT);
	notify = virtqueue_kick_prepare(kvq->vq);
	spin_unlock(&kvq->lock);

	if (notify)
		virtqueue_notify(kvq->vq);
out:
	if (ret < 0 && req->argbuf)
		vqf_req_release(req);
	if (sgs != stack_sgs) {
		kfree(sgs);
		kfree(sg);
	}
	return ret;
}

/* The request queue of the submitting CPU (see vqf_map_queues()). */
static struct vqf_kvq *vqf_pick_queue(struct vqf_kfs *fs)
{
	unsigned int cpu = raw_smp_processor_id();

	return &fs->vqs[fs->mq_map ? fs->mq_map[cpu] :
			VQF_VQ_REQUEST + cpu % (fs->nvqs - VQF_VQ_REQUEST)];
}

static void vqf_wake_pending_and_unlock(struct fuse_iqueue *fiq)
__releases(fiq->lock)
{
	struct vqf_kfs *fs = fiq->priv;
	struct vqf_kvq *kvq;
	struct fuse_req *req;
	int ret;

	req = list_last_entry(&fiq->pending, struct fuse_req, list);
	clear_bit(FR_PENDING, &req->flags);
	list_del_init(&req->list);
	WARN_ON(!list_empty(&fiq->pending));
	spin_unlock(&fiq->lock);

	kvq = vqf_pick_queue(fs);
	ret = vqf_enqueue_req(kvq, req, false);
	if (!ret)
		return;

	spin_lock(&kvq->lock);
	if (ret == -ENOSPC || ret == -ENOMEM) {
		/* Not here: we may hold fc->bg_lock; the worker resends. */
		vqf_inc_in_flight(kvq);
		vqf_park(kvq, &req->list);
	} else {
		/* fuse_request_end() may not run under fc->bg_lock either. */
		req->out.h.error = ret;
		vqf_stat_inc(kvq, VQF_KS_ENQUEUE_ERR);
		list_add_tail(&req->list, &kvq->end_reqs);
		schedule_delayed_work(&kvq->dispatch_work, 0);
	}
	spin_unlock(&kvq->lock);
}

/*
 * Returns true if the ring was full and @f is parked (stop sending);
 * @in_flight as for vqf_enqueue_req().
 */
static bool vqf_send_forget(struct vqf_kvq *kvq, struct vqf_kforget *f,
			    bool in_flight)
{
	struct scatterlist sg;
	bool notify;
	int ret;

	sg_init_one(&sg, f->buf, f->len);
	spin_lock(&kvq->lock);
	if (!kvq->connected) {
		if (in_flight)
			vqf_dec_in_flight(kvq);
		spin_unlock(&kvq->lock);
		kfree(f);
		return false;
	}
	ret = virtqueue_add_outbuf(kvq->vq, &sg, 1, f, GFP_ATOMIC);
	if (ret == -ENOSPC || ret == -ENOMEM) {
		if (!in_flight)
			vqf_inc_in_flight(kvq);
		vqf_park(kvq, &f->list);
		spin_unlock(&kvq->lock);
		return true;
	}
	if (ret < 0) {
		if (in_flight)
			vqf_dec_in_flight(kvq);
		vqf_stat_inc(kvq, VQF_KS_ENQUEUE_ERR);
		spin_unlock(&kvq->lock);
		kfree(f);
		return false;
	}
	if (!in_flight)
		vqf_inc_in_flight(kvq);
	vqf_stat_inc(kvq, VQF_KS_SENT);
	vqf_stat_inc(kvq, VQF_KS_FORGET_REQS);
	notify = virtqueue_kick_prepare(kvq->vq);
	spin_unlock(&kvq->lock);
	if (notify)
		virtqueue_notify(kvq->vq);
	return false;
}

/*
 * FORGETs are not sent from wake_forget_and_unlock(): batching them from
 * this worker turns an eviction storm into a few BATCH_FORGETs.
 */
static void vqf_hiprio_dispatch_work(struct work_struct *work)
{
	struct vqf_kvq *kvq = container_of(work, struct vqf_kvq,
					   dispatch_work.work);
	struct vqf_kfs *fs = kvq->fs;
	struct fuse_iqueue *fiq;
	struct vqf_kforget *f;

	for (;;) {
		spin_lock(&kvq->lock);
		f = list_first_entry_or_null(&kvq->queued, struct vqf_kforget,
					     list);
		if (f)
			list_del(&f->list);
		spin_unlock(&kvq->lock);
		if (!f)
			break;
		if (vqf_send_forget(kvq, f, true))
			return;
	}

	for (;;) {
		spin_lock(&kvq->lock);
		fiq = kvq->connected ? fs->fiq : NULL;
		spin_unlock(&kvq->lock);
		if (!fiq)
			return;
		f = vqf_forget_build(fiq);
		if (!f)
			return;
		if (vqf_send_forget(kvq, f, false))
			return;
	}
}

static void vqf_wake_forget_and_unlock(struct fuse_iqueue *fiq)
__releases(fiq->lock)
{
	struct vqf_kfs *fs = fiq->priv;

	schedule_delayed_work(&fs->vqs[VQF_VQ_HIPRIO].dispatch_work, 0);
	spin_unlock(&fiq->lock);
}

static void vqf_wake_interrupt_and_unlock(struct fuse_iqueue *fiq)
__releases(fiq->lock)
{
	struct vqf_kfs *fs = fiq->priv;

	/*
	 * As upstream: no FUSE_INTERRUPT over virtio-fs yet.  The request
	 * itself still completes (or is ended when the device goes away).
	 */
	vqf_stat_inc(&fs->vqs[VQF_VQ_HIPRIO], VQF_KS_INTERRUPTS);
	spin_unlock(&fiq->lock);
}

const struct fuse_iqueue_ops vqf_fiq_ops = {
	.wake_forget_and_unlock		= vqf_wake_forget_and_unlock,
	.wake_interrupt_and_unlock	= vqf_wake_interrupt_and_unlock,
	.wake_pending_and_unlock	= vqf_wake_pending_and_unlock,
	.release			= vqf_fiq_release,
};

/* ---- device setup ---- */

static void vqf_init_vq(struct vqf_kfs *fs, struct vqf_kvq *kvq,
			const char *name, bool hiprio)
{
	strscpy(kvq->name, name, VQF_VQ_NAME_LEN);
	kvq->fs = fs;
	spin_lock_init(&kvq->lock);
	INIT_LIST_HEAD(&kvq->queued);
	INIT_LIST_HEAD(&kvq->end_reqs);
	init_completion(&kvq->in_flight_zero);
	if (hiprio) {
		INIT_WORK(&kvq->done_work, vqf_hiprio_done_work);
		INIT_DELAYED_WORK(&kvq->dispatch_work,
				  vqf_hiprio_dispatch_work);
	} else {
		INIT_WORK(&kvq->done_work, vqf_requests_done_work);
		INIT_DELAYED_WORK(&kvq->dispatch_work,
				  vqf_request_dispatch_work);
	}
}

/*
 * CPU -> request queue, from the interrupt affinity the transport gave each
 * queue (MSI-X spreads them like virtio-blk's); without one, round robin.
 */
static void vqf_map_queues(struct vqf_kfs *fs)
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

static int vqf_setup_vqs(struct virtio_device *vdev, struct vqf_kfs *fs)
{
	struct irq_affinity desc = { .pre_vectors = 1 };
	struct virtqueue **vqs;
	vq_callback_t **callbacks;
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
	callbacks = kmalloc_array(fs->nvqs, sizeof(callbacks[0]), GFP_KERNEL);
	names = kmalloc_array(fs->nvqs, sizeof(names[0]), GFP_KERNEL);
	if (!fs->vqs || !vqs || !callbacks || !names)
		goto out;

	vqf_init_vq(fs, &fs->vqs[VQF_VQ_HIPRIO], "hiprio", true);
	for (i = VQF_VQ_REQUEST; i < fs->nvqs; i++) {
		char name[VQF_VQ_NAME_LEN];

		snprintf(name, sizeof(name), "requests.%u", i - VQF_VQ_REQUEST);
		vqf_init_vq(fs, &fs->vqs[i], name, false);
	}
	for (i = 0; i < fs->nvqs; i++) {
		callbacks[i] = vqf_vq_done;
		names[i] = fs->vqs[i].name;
	}

	ret = virtio_find_vqs(vdev, fs->nvqs, vqs, callbacks, names, &desc);
	if (ret < 0)
		goto out;
	for (i = 0; i < fs->nvqs; i++)
		fs->vqs[i].vq = vqs[i];
	vqf_map_queues(fs);
	vqf_start_all_queues(fs);
out:
	kfree(names);
	kfree(callbacks);
	kfree(vqs);
	if (ret) {
		kfree(fs->vqs);
		fs->vqs = NULL;
	}
	return ret;
}

static int vqf_probe(struct virtio_device *vdev)
{
	struct vqf_kfs *fs;
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

	ret = vqf_read_tag(vdev, fs);
	if (ret < 0)
		goto out;
	ret = vqf_setup_vqs(vdev, fs);
	if (ret < 0)
		goto out;

	/* Requests may be sent as soon as the tag is visible to mount. */
	virtio_device_ready(vdev);

	ret = vqf_add_instance(fs);
	if (ret < 0)
		goto out_vqs;
	vqf_stats_add_device(fs);
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
	kfree(fs->tag);
	kfree(fs);
	return ret;
}

static void vqf_remove(struct virtio_device *vdev)
{
	struct vqf_kfs *fs = vdev->priv;

	vqf_stats_remove_device(fs);
	mutex_lock(&vqf_mutex);
	/* No new mounts; a mounted conn keeps fs alive, with queues down. */
	list_del_init(&fs->list);
	vqf_stop_all_queues(fs);
	vqf_drain_all_queues_locked(fs);
	virtio_reset_device(vdev);
	vdev->config->del_vqs(vdev);
	vdev->priv = NULL;
	vqf_fs_put(fs);
	mutex_unlock(&vqf_mutex);
}

#ifdef CONFIG_PM_SLEEP
static int vqf_freeze(struct virtio_device *vdev)
{
	/* As upstream: state is not saved, so refuse to suspend. */
	return -EOPNOTSUPP;
}

static int vqf_restore(struct virtio_device *vdev)
{
	return 0;
}
#endif

static const struct virtio_device_id vqf_id_table[] = {
	{ VIRTIO_ID_FS, VIRTIO_DEV_ANY_ID },
	{},
};
MODULE_DEVICE_TABLE(virtio, vqf_id_table);

static const unsigned int vqf_feature_table[] = {};

struct virtio_driver vqf_virtio_driver = {
	.driver.name		= KBUILD_MODNAME,
	.driver.owner		= THIS_MODULE,
	.id_table		= vqf_id_table,
	.feature_table		= vqf_feature_table,
	.feature_table_size	= ARRAY_SIZE(vqf_feature_table),
	.probe			= vqf_probe,
	.remove			= vqf_remove,
#ifdef CONFIG_PM_SLEEP
	.freeze			= vqf_freeze,
	.restore		= vqf_restore,
#endif
};
