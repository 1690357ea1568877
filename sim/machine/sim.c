// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * sim.c - one simulated machine, wired from its parts (see vqf_sim.h).
 */
#include "vqf_sim.h"
#include "vqf_passthrough_ll.h"
#include "vqf_nullfs.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One guest: its RAM, its device (own queues), driver and client. */
struct sim_guest {
	struct vqf_sim *s;
	struct vqf_gram *ram;
	struct vqf_fsdev *dev;
	struct vqf_vfront *front;	/* connect: the device instead */
	char sock[PATH_MAX];		/* connect with several guests */
	struct vqf_gdrv *drv;
	struct vqf_gcli *cli;
	struct vqf_hub_port *port;
	struct vqf_gcli *notify_cli;	/* under s->notify_lock */
};

struct vqf_sim {
	struct vqf_sim_cfg cfg;
	struct vqf_pt *pt;
	struct vqf_ptll *ptll;
	struct vqf_backend *be;
	struct vqf_hub *hub;		/* several guests or cache=shared */
	unsigned int nguests;
	struct sim_guest g[VQF_SIM_MAX_GUESTS];
	pthread_mutex_t notify_lock;	/* the client notified, vs its free */
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

/* The device's DAX window reaches the passthrough's files here. */
static const struct vqf_fsdev_dax_ops sim_dax_ops = {
	.file_fd = vqf_pt_dax_file_fd,
	.node_fd = vqf_pt_dax_node_fd,
};

/* The driver's notifications go to the client, once there is one. */
static void drv_notify(void *ctx, int code, const void *data, u32 len)
{
	struct sim_guest *g = ctx;

	pthread_mutex_lock(&g->s->notify_lock);
	if (g->notify_cli)
		vqf_gcli_notify(g->notify_cli, code, data, len);
	pthread_mutex_unlock(&g->s->notify_lock);
}

/*
 * The backend exists before the devices: notifications go through here,
 * to every guest (the server cannot tell which caches what).
 */
static int sim_notify(void *ctx, const struct iovec *iov, int iovcnt,
		      size_t len)
{
	struct vqf_sim *s = ctx;
	int ret = -ENOTCONN;
	unsigned int i;

	for (i = 0; i < s->nguests; i++)
		if (s->g[i].dev)
			ret = vqf_fsdev_notify(s->g[i].dev, iov, iovcnt, len);
	return ret;
}

static int hub_serve(void *ctx, void *req, size_t len,
		     vqf_backend_reply_fn reply, void *rctx)
{
	return vqf_hub_process(ctx, req, len, reply, rctx);
}

/* The driver and client of guest @g over @ops/@dev (the device is up). */
static int guest_drv_cli(struct vqf_sim *s, struct sim_guest *g,
			 unsigned int idx, const struct vqf_gdrv_dev_ops *ops,
			 void *dev, struct vqf_gdrv_cfg *gc,
			 struct vqf_gcli_cfg *cc)
{
	const struct vqf_sim_cfg *cfg = &s->cfg;
	int ret;

	if (!gc->notify) {
		gc->notify = drv_notify;
		gc->notify_ctx = g;
	}
	if (cfg->trace && !gc->trace && !idx) {
		gc->trace = drv_trace;
		gc->trace_ctx = cfg->trace;
	}
	ret = ops ? vqf_gdrv_new_ops(gc, ops, dev, g->ram, &g->drv) :
		    vqf_gdrv_new(gc, dev, g->ram, &g->drv);
	if (ret)
		return ret;
	ret = vqf_gcli_new(g->drv, cc, &g->cli);
	if (ret)
		return ret;
	pthread_mutex_lock(&s->notify_lock);
	g->notify_cli = g->cli;
	pthread_mutex_unlock(&s->notify_lock);
	return 0;
}

/* Guest @idx over a vhost-user back-end: memfd RAM, front-end, driver. */
static int guest_connect(struct vqf_sim *s, unsigned int idx)
{
	const struct vqf_sim_cfg *cfg = &s->cfg;
	struct sim_guest *g = &s->g[idx];
	struct vqf_vfront_cfg fc = cfg->front;
	struct vqf_gcli_cfg cc = cfg->cli;
	struct vqf_gdrv_cfg gc = cfg->drv;
	void *base;
	int ret;

	g->s = s;
	g->ram = vqf_gram_new_shared(cfg->ram);
	if (!g->ram)
		return -errno;
	/* Several guests: socket.i each, as `vqfuse-sim vhost-user
	 * --guests N` lays them out.
	 */
	if (s->nguests > 1) {
		snprintf(g->sock, sizeof(g->sock), "%s.%u", cfg->connect, idx);
		fc.socket = g->sock;
	} else {
		fc.socket = cfg->connect;
	}
	fc.ram = g->ram;
	if (!fc.tag)
		fc.tag = cfg->tag;
	if (!fc.num_request_queues)
		fc.num_request_queues = cfg->queues ? cfg->queues : 1;
	ret = vqf_vfront_new(&fc, &g->front);
	if (ret)
		return ret;
	gc.request_queues = 0;		/* what the config space says */
	gc.queue_size = cfg->queue_size ? cfg->queue_size : 128;
	gc.notification = false;
	if (!gc.poll_ns) {
		gc.poll_ns = cfg->poll_ns;
		gc.poll_fixed = cfg->poll_fixed;
	}
	if (cfg->dax_guest) {
		ret = vqf_vfront_shm(g->front, VQF_VIRTIO_FS_SHMCAP_ID_CACHE,
				     &cc.dax_base, &cc.dax_window);
		if (ret)
			return -EOPNOTSUPP;	/* no window on that side */
		cc.dax_range = cfg->dax_range;
	}
	gc.shared_version = cfg->cli.cache == VQF_GCLI_CACHE_SHARED &&
			    !vqf_vfront_shm(g->front,
					    VQF_VIRTIO_FS_SHMCAP_ID_VERSION,
					    &base, &cc.ver_size);
	if (gc.shared_version)
		cc.ver_base = base;
	else if (cfg->cli.cache == VQF_GCLI_CACHE_SHARED)
		return -EOPNOTSUPP;		/* no version table there */
	return guest_drv_cli(s, g, idx, vqf_vfront_dev_ops(), g->front,
			     &gc, &cc);
}

/* Guest @idx: RAM, device, driver, client. */
static int guest_new(struct vqf_sim *s, unsigned int idx)
{
	const struct vqf_sim_cfg *cfg = &s->cfg;
	struct sim_guest *g = &s->g[idx];
	struct vqf_fsdev_cfg dc = { 0 };
	struct vqf_gcli_cfg cc = cfg->cli;
	struct vqf_gdrv_cfg gc;
	int ret;

	g->s = s;
	g->ram = vqf_gram_new(cfg->ram);
	if (!g->ram)
		return -ENOMEM;
	dc.tag = cfg->tag ? cfg->tag : "vqfuse";
	dc.num_request_queues = cfg->queues ? cfg->queues : 1;
	dc.queue_size_max = 1024;
	dc.threads = cfg->threads;
	dc.readonly = cfg->readonly;
	dc.notify_buf_size = cfg->notification ? 4096 : 0;
	dc.be = s->be;
	if (s->hub) {
		ret = vqf_hub_port_new(s->hub, &g->port);
		if (ret)
			return ret;
		dc.serve = hub_serve;
		dc.serve_ctx = g->port;
		dc.ver_table = vqf_hub_table(s->hub, &dc.ver_table_size);
	}
	dc.inline_kick = cfg->inline_kick;
	dc.direct_kick = !cfg->inline_kick && !cfg->handoff &&
			 !cfg->poll_ns && !cfg->faults;
	dc.poll_ns = cfg->poll_ns;
	dc.poll_fixed = cfg->poll_fixed;
	if (cfg->trace && !idx) {
		dc.trace = dev_trace;
		dc.trace_ctx = cfg->trace;
	}
	dc.faults = cfg->faults;
	dc.dax_window = cfg->dax_window;
	if (s->pt) {
		dc.dax_ops = &sim_dax_ops;
		dc.dax_ctx = s->pt;
	}
	if (s->hub && s->pt) {
		/* Stores through a writable window change files unseen. */
		dc.dax_writable = vqf_hub_dax_writable;
		dc.dax_writable_ctx = s->hub;
	}
	ret = vqf_fsdev_new(&dc, vqf_gram_gmem(g->ram), &g->dev);
	if (ret)
		return ret;
	gc = cfg->drv;
	gc.request_queues = dc.num_request_queues;
	gc.queue_size = cfg->queue_size ? cfg->queue_size : 128;
	gc.notification = cfg->notification;
	gc.poll = gc.poll || cfg->inline_kick || dc.direct_kick;
	if (!gc.poll_ns && !cfg->inline_kick) {
		gc.poll_ns = cfg->poll_ns;
		gc.poll_fixed = cfg->poll_fixed;
	}
	gc.shared_version = cfg->cli.cache == VQF_GCLI_CACHE_SHARED &&
			    dc.ver_table;
	if (cfg->dax_guest) {
		ret = vqf_fsdev_shm(g->dev, VQF_VIRTIO_FS_SHMCAP_ID_CACHE,
				    &cc.dax_base, &cc.dax_window);
		if (ret)
			return ret;
		cc.dax_range = cfg->dax_range;
	}
	if (gc.shared_version) {
		void *base;

		ret = vqf_fsdev_shm(g->dev, VQF_VIRTIO_FS_SHMCAP_ID_VERSION,
				    &base, &cc.ver_size);
		if (ret)
			return ret;
		cc.ver_base = base;
	}
	return guest_drv_cli(s, g, idx, NULL, g->dev, &gc, &cc);
}

static void guest_free(struct sim_guest *g)
{
	if (!g->s)
		return;		/* a later guest whose creation never began */
	pthread_mutex_lock(&g->s->notify_lock);
	g->notify_cli = NULL;
	pthread_mutex_unlock(&g->s->notify_lock);
	vqf_gcli_free(g->cli);
	if (g->drv)
		vqf_gdrv_free(g->drv);
	vqf_fsdev_free(g->dev);
	g->dev = NULL;
	vqf_vfront_free(g->front);
	g->front = NULL;
	/* After the device: nothing of the port's is in the backend now. */
	vqf_hub_port_free(g->port);
	vqf_gram_free(g->ram);
}

int vqf_sim_new(const struct vqf_sim_cfg *cfg, struct vqf_sim **out)
{
	struct vqf_backend_config bc = { 0 };
	const struct fuse_lowlevel_ops *ops;
	struct vqf_sim *s;
	unsigned int i;
	size_t op_size;
	void *ud;
	int ret;

	if (!cfg || (!cfg->shared && !cfg->connect) || !out ||
	    cfg->guests > VQF_SIM_MAX_GUESTS)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->notify_lock, NULL);
	s->cfg = *cfg;
	if (cfg->connect) {
		s->nguests = cfg->guests ? cfg->guests : 1;
		for (i = 0; i < s->nguests; i++) {
			ret = guest_connect(s, i);
			if (ret)
				goto fail;
		}
		*out = s;
		return 0;
	}
	if (cfg->fs == VQF_SIM_FS_PTLL) {
		s->ptll = vqf_ptll_new(cfg->shared);
		if (!s->ptll) {
			ret = -errno;
			goto fail;
		}
		ops = vqf_ptll_ops(&op_size);
		ud = vqf_ptll_userdata(s->ptll);
	} else if (cfg->fs == VQF_SIM_FS_NULL) {
		ops = vqf_nullfs_ops(&op_size);
		ud = NULL;
	} else {
		struct vqf_pt_config pc = {
			.source = cfg->shared,
			.timeout = 0,
			.io = cfg->io,
			.host_callers = cfg->host_callers,
			.nodev = cfg->nodev,
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
	s->nguests = cfg->guests ? cfg->guests : 1;
	if (s->nguests > 1 || cfg->cli.cache == VQF_GCLI_CACHE_SHARED) {
		struct vqf_hub_cfg hc = cfg->hub;

		hc.be = s->be;
		hc.root = cfg->shared;
		ret = vqf_hub_new(&hc, &s->hub);
		if (ret)
			goto fail;
	}
	for (i = 0; i < s->nguests; i++) {
		ret = guest_new(s, i);
		if (ret)
			goto fail;
	}
	*out = s;
	return 0;
fail:
	vqf_sim_free(s);
	return ret < 0 ? ret : -EIO;
}

void vqf_sim_free(struct vqf_sim *s)
{
	unsigned int i;

	if (!s)
		return;
	for (i = s->nguests; i--;)
		guest_free(&s->g[i]);
	s->nguests = 0;
	vqf_hub_free(s->hub);
	vqf_backend_free(s->be);
	vqf_pt_free(s->pt);
	if (s->ptll)
		vqf_ptll_free(s->ptll);
	pthread_mutex_destroy(&s->notify_lock);
	free(s);
}

struct vqf_gcli *vqf_sim_cli(struct vqf_sim *s)
{
	return s->g[0].cli;
}

struct vqf_gdrv *vqf_sim_drv(struct vqf_sim *s)
{
	return s->g[0].drv;
}

struct vqf_fsdev *vqf_sim_dev(struct vqf_sim *s)
{
	return s->g[0].dev;
}

unsigned int vqf_sim_guests(struct vqf_sim *s)
{
	return s->nguests;
}

struct vqf_gcli *vqf_sim_cli_n(struct vqf_sim *s, unsigned int i)
{
	return i < s->nguests ? s->g[i].cli : NULL;
}

struct vqf_gdrv *vqf_sim_drv_n(struct vqf_sim *s, unsigned int i)
{
	return i < s->nguests ? s->g[i].drv : NULL;
}

struct vqf_fsdev *vqf_sim_dev_n(struct vqf_sim *s, unsigned int i)
{
	return i < s->nguests ? s->g[i].dev : NULL;
}

struct vqf_vfront *vqf_sim_front_n(struct vqf_sim *s, unsigned int i)
{
	return i < s->nguests ? s->g[i].front : NULL;
}

struct vqf_hub *vqf_sim_hub(struct vqf_sim *s)
{
	return s->hub;
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
	vqf_sim_get_stats_n(s, 0, out);
}

void vqf_sim_get_stats_n(struct vqf_sim *s, unsigned int i,
			 struct vqf_sim_stats *out)
{
	struct sim_guest *g = i < s->nguests ? &s->g[i] : NULL;

	memset(out, 0, sizeof(*out));
	if (g && g->cli)
		vqf_gcli_get_stats(g->cli, &out->cli);
	if (g && g->drv)
		vqf_gdrv_get_stats(g->drv, &out->drv);
	if (g && g->dev)
		vqf_fsdev_get_stats(g->dev, &out->dev);
	if (g && g->front)
		vqf_vfront_get_stats(g->front, &out->front);
	if (s->hub)
		vqf_hub_get_stats(s->hub, &out->hub);
	if (s->be)
		vqf_backend_get_stats(s->be, &out->be);
	if (s->pt)
		vqf_pt_get_stats(s->pt, &out->pt);
}
