// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fsdev.c - the virtio-fs device model (see vqf_fsdev.h).
 *
 * This file: creation, features, config space, queue descriptions,
 * status (start, stop, reset) and counters.  Threads, locks and what the
 * other fsdev_*.c files hold: fsdev_int.h.
 */
#include "fsdev_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "vqf_vring_thread.h"
#include "vring_hg.h"

unsigned int vqf_fsdev_first_request_queue(const struct vqf_fsdev *d)
{
	return fsdev_has_notif(d) ? 2 : 1;
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
	if (cfg->dax_window &&
	    fsdev_dax_init(d, cfg->dax_window,
			   cfg->dax_ops && cfg->dax_ops->map)) {
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
	if (d->stop_fd < 0 ||
	    vqf_guard_new(&(struct vqf_guard_cfg){ .readonly = cfg->readonly },
			  &d->guard)) {
		if (d->stop_fd >= 0)
			close(d->stop_fd);
		fsdev_dax_fini(d);
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
		if (pthread_create(&q->thr, NULL, fsdev_queue_main, q)) {
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
	vqf_guard_get_stats(d->guard, &out->guard);
}

void fsdev_set_needs_reset(struct vqf_fsdev *d)
{
	__atomic_or_fetch(&d->status, VQF_S_NEEDS_RESET, __ATOMIC_RELEASE);
}

/* ---- status --------------------------------------------------------- */

static void stop_all(struct vqf_fsdev *d)
{
	unsigned int i;
	struct fsreq *r;

	/* Forgets and releases waiting in the guard give up. */
	vqf_guard_stop(d->guard);
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
		fsdev_req_free(r);
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
		fsdev_free_all(d, held, n);
		if (n)
			STAT_ADD(d, fault_held_dropped, n);
	}
	free(d->workers);
	d->workers = NULL;
	d->nr_workers = 0;
	/* Replies the filesystem still owes land in fsdev_finish(), which no
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
	/* The backend's ids die with the session (vqf_backend_reset()). */
	vqf_guard_reset(d->guard);
	/* Nothing is served any more: no request is inside dax_lock. */
	fsdev_dax_reset(d);
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
	q->notif = fsdev_has_notif(d) && q->idx == 1;
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
		if (pthread_create(&d->workers[i], NULL, fsdev_worker_main, d))
			return -EIO;
		d->nr_workers++;
	}
	for (i = 0; i < d->nq; i++) {
		struct fsq *q = &d->q[i];

		if (!q->set || (d->cfg.inline_kick && !q->notif))
			continue;
		if (pthread_create(&q->thr, NULL, fsdev_queue_main, q))
			return -EIO;
		q->running = true;
	}
	if (d->faulty) {
		if (pthread_create(&d->tick_thr, NULL, fsdev_tick_main, d))
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
	fsdev_dax_fini(d);
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
	vqf_guard_free(d->guard);
	free(d);
}
