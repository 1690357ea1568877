// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * sim.c - one simulated machine, wired from its parts (see vqf_sim.h).
 */
#include "vqf_sim.h"
#include "vqf_passthrough_ll.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct vqf_sim {
	struct vqf_sim_cfg cfg;
	struct vqf_pt *pt;
	struct vqf_ptll *ptll;
	struct vqf_backend *be;
	struct vqf_gram *ram;
	struct vqf_fsdev *dev;
	struct vqf_gdrv *drv;
	struct vqf_gcli *cli;
	pthread_mutex_t notify_lock;	/* the client notified, vs its free */
	struct vqf_gcli *notify_cli;
};

/* The driver's trace points, as vqf_trace events. */
static void drv_trace(void *ctx, enum vqf_gdrv_ev ev, u64 unique,
		      u32 opcode, unsigned int queue)
{
	static const enum vqf_trace_ev map[] = {
		[VQF_EV_QUEUED] = VQF_T_QUEUED,
		[VQF_EV_ADDED] = VQF_T_ADDED,
		[VQF_EV_KICKED] = VQF_T_KICKED,
		[VQF_EV_INTERRUPTED] = VQF_T_INTERRUPTED,
		[VQF_EV_COMPLETED] = VQF_T_COMPLETED,
	};

	if ((unsigned int)ev < sizeof(map) / sizeof(map[0]))
		vqf_trace_event(ctx, map[ev], unique, opcode, queue);
}

static void dev_trace(void *ctx, enum vqf_fsdev_ev ev, u64 unique,
		      u32 opcode, unsigned int queue)
{
	vqf_trace_event(ctx, ev == VQF_FSDEV_EV_POPPED ? VQF_T_POPPED :
			VQF_T_PUSHED, unique, opcode, queue);
}

/* The device's DAX window reaches the passthrough's open files here. */
static int sim_dax_fd(void *ctx, u64 nodeid, u64 fh)
{
	return vqf_pt_file_fd(ctx, nodeid, fh);
}

static const struct vqf_fsdev_dax_ops sim_dax_ops = {
	.file_fd = sim_dax_fd,
};

/* The driver's notifications go to the client, once there is one. */
static void drv_notify(void *ctx, int code, const void *data, u32 len)
{
	struct vqf_sim *s = ctx;

	pthread_mutex_lock(&s->notify_lock);
	if (s->notify_cli)
		vqf_gcli_notify(s->notify_cli, code, data, len);
	pthread_mutex_unlock(&s->notify_lock);
}

/* The backend exists before the device: notifications go through here. */
static int sim_notify(void *ctx, const struct iovec *iov, int iovcnt,
		      size_t len)
{
	struct vqf_sim *s = ctx;

	if (!s->dev)
		return -ENOTCONN;
	return vqf_fsdev_notify(s->dev, iov, iovcnt, len);
}

int vqf_sim_new(const struct vqf_sim_cfg *cfg, struct vqf_sim **out)
{
	struct vqf_backend_config bc = { 0 };
	struct vqf_fsdev_cfg dc = { 0 };
	struct vqf_gdrv_cfg gc;
	const struct fuse_lowlevel_ops *ops;
	struct vqf_sim *s;
	size_t op_size;
	void *ud;
	int ret;

	if (!cfg || !cfg->shared || !out)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->notify_lock, NULL);
	s->cfg = *cfg;
	if (cfg->fs == VQF_SIM_FS_PTLL) {
		s->ptll = vqf_ptll_new(cfg->shared);
		if (!s->ptll) {
			ret = -errno;
			goto fail;
		}
		ops = vqf_ptll_ops(&op_size);
		ud = vqf_ptll_userdata(s->ptll);
	} else {
		struct vqf_pt_config pc = {
			.source = cfg->shared,
			.timeout = 0,
			.io = cfg->io,
		};

		/* Inline with no workers: a lock wait holds the only thread
		 * that could serve its unlock or INTERRUPT.
		 */
		if (cfg->inline_kick && !cfg->threads)
			pc.lock_wait_ms = 1000;

		s->pt = vqf_pt_new(&pc);
		if (!s->pt) {
			ret = -errno;
			goto fail;
		}
		ops = vqf_pt_ops(&op_size);
		ud = s->pt;
	}
	bc.argc = cfg->fuse_argc;
	bc.argv = cfg->fuse_argv;
	bc.notify = sim_notify;
	bc.notify_ctx = s;
	s->be = vqf_backend_new(ops, op_size, ud, &bc);
	if (!s->be) {
		ret = -errno;
		goto fail;
	}
	s->ram = vqf_gram_new(cfg->ram);
	if (!s->ram) {
		ret = -ENOMEM;
		goto fail;
	}
	dc.tag = cfg->tag ? cfg->tag : "vqfuse";
	dc.num_request_queues = cfg->queues ? cfg->queues : 1;
	dc.queue_size_max = 1024;
	dc.threads = cfg->threads;
	dc.notify_buf_size = cfg->notification ? 4096 : 0;
	dc.be = s->be;
	dc.inline_kick = cfg->inline_kick;
	if (cfg->trace) {
		dc.trace = dev_trace;
		dc.trace_ctx = cfg->trace;
	}
	dc.faults = cfg->faults;
	dc.dax_window = cfg->dax_window;
	if (s->pt) {
		dc.dax_ops = &sim_dax_ops;
		dc.dax_ctx = s->pt;
	}
	ret = vqf_fsdev_new(&dc, vqf_gram_gmem(s->ram), &s->dev);
	if (ret)
		goto fail;
	gc = cfg->drv;
	gc.request_queues = dc.num_request_queues;
	gc.queue_size = cfg->queue_size ? cfg->queue_size : 128;
	gc.notification = cfg->notification;
	gc.poll = gc.poll || cfg->inline_kick;
	if (!gc.notify) {
		gc.notify = drv_notify;
		gc.notify_ctx = s;
	}
	if (cfg->trace && !gc.trace) {
		gc.trace = drv_trace;
		gc.trace_ctx = cfg->trace;
	}
	ret = vqf_gdrv_new(&gc, s->dev, s->ram, &s->drv);
	if (ret)
		goto fail;
	{
		struct vqf_gcli_cfg cc = cfg->cli;

		if (cfg->dax_guest) {
			ret = vqf_fsdev_shm(s->dev,
					    VQF_VIRTIO_FS_SHMCAP_ID_CACHE,
					    &cc.dax_base, &cc.dax_window);
			if (ret)
				goto fail;
			cc.dax_range = cfg->dax_range;
		}
		ret = vqf_gcli_new(s->drv, &cc, &s->cli);
	}
	if (ret)
		goto fail;
	pthread_mutex_lock(&s->notify_lock);
	s->notify_cli = s->cli;
	pthread_mutex_unlock(&s->notify_lock);
	*out = s;
	return 0;
fail:
	vqf_sim_free(s);
	return ret < 0 ? ret : -EIO;
}

void vqf_sim_free(struct vqf_sim *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->notify_lock);
	s->notify_cli = NULL;
	pthread_mutex_unlock(&s->notify_lock);
	vqf_gcli_free(s->cli);
	if (s->drv)
		vqf_gdrv_free(s->drv);
	vqf_fsdev_free(s->dev);
	s->dev = NULL;
	vqf_backend_free(s->be);
	vqf_gram_free(s->ram);
	vqf_pt_free(s->pt);
	if (s->ptll)
		vqf_ptll_free(s->ptll);
	pthread_mutex_destroy(&s->notify_lock);
	free(s);
}

struct vqf_gcli *vqf_sim_cli(struct vqf_sim *s)
{
	return s->cli;
}

struct vqf_gdrv *vqf_sim_drv(struct vqf_sim *s)
{
	return s->drv;
}

struct vqf_fsdev *vqf_sim_dev(struct vqf_sim *s)
{
	return s->dev;
}

struct vqf_backend *vqf_sim_backend(struct vqf_sim *s)
{
	return s->be;
}

struct vqf_pt *vqf_sim_pt(struct vqf_sim *s)
{
	return s->pt;
}

void vqf_sim_get_stats(struct vqf_sim *s, struct vqf_sim_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (s->cli)
		vqf_gcli_get_stats(s->cli, &out->cli);
	if (s->drv)
		vqf_gdrv_get_stats(s->drv, &out->drv);
	if (s->dev)
		vqf_fsdev_get_stats(s->dev, &out->dev);
	if (s->be)
		vqf_backend_get_stats(s->be, &out->be);
	if (s->pt)
		vqf_pt_get_stats(s->pt, &out->pt);
}
