// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The device's DAX cancel around a guest's DESTROY: fsdev_serve() raises
 * dax_ops->cancel for every DESTROY and fsdev_finish() lowers it.  A path
 * that ended a DESTROY without fsdev_finish() would leave the front-end's
 * channel cancelled for good, every later map refused.
 *
 * A device (sim/device) with a remote window whose dax_ops count the
 * raises, lowers and maps, served by a small backend here, driven by the
 * guest driver (sim/guest).  Each case ends a DESTROY another way -
 * served, answered EIO by the fault plan, its reply held and reordered,
 * its interrupt dropped, in the guard's wait when the device stops, two
 * back to back - and checks counts: raises == lowers, and a SETUPMAPPING
 * after it is mapped, not cancelled.  Nothing here is bounded by time; a
 * hang is ctest's TIMEOUT.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vqf_fault.h"
#include "vqf_fsdev.h"
#include "vqf_gdrv.h"
#include "vqf_gram.h"

#define FILE_NODE	2
#define MAP_LEN		(2ULL << 20)
#define WINDOW		(8ULL << 20)

struct fake {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* dax_ops */
	int memfd;
	unsigned int depth;	/* raised and not yet lowered */
	unsigned int raises, lowers;
	unsigned int lowered_unraised;
	unsigned int maps, maps_cancelled, unmaps;
	/* the backend */
	unsigned int inits, destroys;
	bool hold_getattr;	/* GETATTR waits until cleared */
	bool getattr_in;
};

struct rig {
	struct fake f;
	struct vqf_gram *ram;
	struct vqf_fsdev *dev;
	struct vqf_gdrv *drv;
};

/* ---- dax_ops ---------------------------------------------------------- */

static int fake_file_fd(void *ctx, u64 nodeid, u64 fh)
{
	(void)ctx;
	(void)nodeid;
	(void)fh;
	return -EBADF;
}

static int fake_node_fd(void *ctx, u64 nodeid, bool write)
{
	struct fake *f = ctx;
	int fd;

	(void)write;
	if (nodeid != FILE_NODE)
		return -ENODEV;
	fd = dup(f->memfd);
	return fd < 0 ? -errno : fd;
}

static int fake_map(void *ctx, int fd, u64 foffset, u64 moffset, u64 len,
		    bool writable)
{
	struct fake *f = ctx;
	int ret = 0;

	(void)fd;
	(void)foffset;
	(void)moffset;
	(void)len;
	(void)writable;
	pthread_mutex_lock(&f->lock);
	if (f->depth) {
		f->maps_cancelled++;
		ret = -ECANCELED;
	} else {
		f->maps++;
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static int fake_unmap(void *ctx, u64 moffset, u64 len, bool wait)
{
	struct fake *f = ctx;

	(void)moffset;
	(void)len;
	(void)wait;
	pthread_mutex_lock(&f->lock);
	f->unmaps++;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

static void fake_cancel(void *ctx, bool on)
{
	struct fake *f = ctx;

	pthread_mutex_lock(&f->lock);
	if (on) {
		f->raises++;
		f->depth++;
	} else {
		f->lowers++;
		if (f->depth)
			f->depth--;
		else
			f->lowered_unraised++;
	}
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static const struct vqf_fsdev_dax_ops fake_ops = {
	.file_fd = fake_file_fd,
	.node_fd = fake_node_fd,
	.map = fake_map,
	.unmap = fake_unmap,
	.cancel = fake_cancel,
};

/* ---- the backend ------------------------------------------------------ */

static int answer(vqf_backend_reply_fn reply, void *rctx, u64 unique,
		  int error, const void *out, size_t outlen)
{
	struct fuse_out_header oh = {
		.len = (u32)(sizeof(oh) + outlen),
		.error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ &oh, sizeof(oh) }, { (void *)out, outlen },
	};

	reply(rctx, iov, outlen ? 2 : 1, oh.len);
	return VQF_BE_REPLY;
}

static void file_attr(struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = FILE_NODE;
	a->mode = S_IFREG | 0644;
	a->nlink = 1;
	a->size = MAP_LEN * 2;
	a->blksize = 4096;
}

static int fake_serve(void *ctx, void *req, size_t len,
		      vqf_backend_reply_fn reply, void *rctx)
{
	struct fake *f = ctx;
	struct fuse_in_header ih;

	assert_true(len >= sizeof(ih));
	memcpy(&ih, req, sizeof(ih));
	switch (ih.opcode) {
	case FUSE_INIT: {
		struct fuse_init_in in;
		struct fuse_init_out o = { 0 };

		memcpy(&in, (u8 *)req + sizeof(ih), sizeof(in));
		o.major = FUSE_KERNEL_VERSION;
		o.minor = in.minor < FUSE_KERNEL_MINOR_VERSION ?
			  in.minor : FUSE_KERNEL_MINOR_VERSION;
		o.max_write = 65536;
		o.max_readahead = in.max_readahead;
		o.max_pages = 16;
		o.flags = in.flags & (FUSE_MAX_PAGES | FUSE_MAP_ALIGNMENT);
		o.map_alignment = 12;
		pthread_mutex_lock(&f->lock);
		f->inits++;
		pthread_mutex_unlock(&f->lock);
		return answer(reply, rctx, ih.unique, 0, &o, sizeof(o));
	}
	case FUSE_LOOKUP: {
		struct fuse_entry_out e = { .nodeid = FILE_NODE };

		file_attr(&e.attr);
		return answer(reply, rctx, ih.unique, 0, &e, sizeof(e));
	}
	case FUSE_GETATTR: {
		struct fuse_attr_out ao = { 0 };

		pthread_mutex_lock(&f->lock);
		f->getattr_in = true;
		pthread_cond_broadcast(&f->cond);
		while (f->hold_getattr)
			pthread_cond_wait(&f->cond, &f->lock);
		pthread_mutex_unlock(&f->lock);
		file_attr(&ao.attr);
		ao.attr.ino = FUSE_ROOT_ID;
		ao.attr.mode = S_IFDIR | 0755;
		return answer(reply, rctx, ih.unique, 0, &ao, sizeof(ao));
	}
	case FUSE_DESTROY:
		pthread_mutex_lock(&f->lock);
		f->destroys++;
		pthread_mutex_unlock(&f->lock);
		return answer(reply, rctx, ih.unique, 0, NULL, 0);
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
		return VQF_BE_NO_REPLY;
	}
	return answer(reply, rctx, ih.unique, -ENOSYS, NULL, 0);
}

/* ---- the rig ---------------------------------------------------------- */

static void rig_new(struct rig *r, const struct vqf_fault_plan *plan,
		    unsigned int threads)
{
	struct vqf_fsdev_cfg dc = { 0 };
	struct vqf_gdrv_cfg gc = { 0 };

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->f.lock, NULL);
	pthread_cond_init(&r->f.cond, NULL);
	r->f.memfd = memfd_create("destroy", 0);
	assert_true(r->f.memfd >= 0);
	assert_int_equal(ftruncate(r->f.memfd, MAP_LEN * 2), 0);
	r->ram = vqf_gram_new(64 << 20);
	assert_non_null(r->ram);
	dc.tag = "destroy";
	dc.num_request_queues = 1;
	dc.queue_size_max = 64;
	dc.threads = threads;
	dc.inline_kick = !threads;
	dc.faults = plan;
	dc.dax_window = WINDOW;
	dc.dax_ops = &fake_ops;
	dc.dax_ctx = &r->f;
	dc.serve = fake_serve;
	dc.serve_ctx = &r->f;
	assert_int_equal(vqf_fsdev_new(&dc, vqf_gram_gmem(r->ram), &r->dev),
			 0);
	/* A remote window is off until the front-end says it is there. */
	assert_int_equal(vqf_fsdev_set_dax(r->dev, true), 0);
	gc.request_queues = 1;
	gc.queue_size = 16;
	gc.poll = !threads;
	/* How long a shutdown lets calls in flight run: speed only. */
	gc.shutdown_grace_ms = 10;
	assert_int_equal(vqf_gdrv_new(&gc, r->dev, r->ram, &r->drv), 0);
	assert_int_equal(r->f.inits, 1);
}

static void rig_free(struct rig *r)
{
	if (r->drv)
		vqf_gdrv_free(r->drv);
	vqf_fsdev_free(r->dev);
	vqf_gram_free(r->ram);
	close(r->f.memfd);
	/* The driver's own DESTROY at free was balanced too. */
	assert_int_equal(r->f.raises, r->f.lowers);
	assert_int_equal(r->f.depth, 0);
	assert_int_equal(r->f.lowered_unraised, 0);
	pthread_cond_destroy(&r->f.cond);
	pthread_mutex_destroy(&r->f.lock);
}

static void call_init(struct vqf_gdrv_call *c, u32 opcode, u64 nodeid)
{
	memset(c, 0, sizeof(*c));
	vqf_req_init(&c->req, opcode, nodeid, 0);
	c->req.out_argvar = false;
}

/* -1: no bound; a request never answered is ctest's TIMEOUT. */
static int call(struct rig *r, struct vqf_gdrv_call *c)
{
	return vqf_gdrv_call(r->drv, c, -1);
}

static int do_init(struct rig *r)
{
	struct fuse_init_in in = {
		.major = FUSE_KERNEL_VERSION,
		.minor = FUSE_KERNEL_MINOR_VERSION,
		.flags = FUSE_MAX_PAGES | FUSE_MAP_ALIGNMENT,
	};
	struct fuse_init_out out;
	struct vqf_gdrv_call c;

	call_init(&c, FUSE_INIT, 0);
	vqf_req_add_in(&c.req, &in, sizeof(in));
	vqf_req_add_out(&c.req, &out, sizeof(out));
	c.req.out_argvar = true;
	return call(r, &c);
}

static int do_lookup(struct rig *r)
{
	struct fuse_entry_out e;
	struct vqf_gdrv_call c;

	call_init(&c, FUSE_LOOKUP, FUSE_ROOT_ID);
	vqf_req_add_in(&c.req, "f", 2);
	vqf_req_add_out(&c.req, &e, sizeof(e));
	return call(r, &c);
}

static int do_setupmapping(struct rig *r, u64 moffset)
{
	struct fuse_setupmapping_in in = {
		.fh = VQF_FSDEV_FH_NONE,
		.foffset = 0,
		.len = MAP_LEN,
		.flags = FUSE_SETUPMAPPING_FLAG_READ,
		.moffset = moffset,
	};
	struct vqf_gdrv_call c;

	call_init(&c, FUSE_SETUPMAPPING, FILE_NODE);
	vqf_req_add_in(&c.req, &in, sizeof(in));
	return call(r, &c);
}

static int do_destroy(struct rig *r)
{
	struct vqf_gdrv_call c;

	call_init(&c, FUSE_DESTROY, 0);
	return call(r, &c);
}

static unsigned int fake_get(struct fake *f, const unsigned int *v)
{
	unsigned int n;

	pthread_mutex_lock(&f->lock);
	n = *v;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/*
 * After a DESTROY: the cancel is down as often as it went up, and a new
 * session's SETUPMAPPING is mapped by the front-end, not cancelled.
 * @ended: the DESTROY reached the backend (the session ended: INIT again).
 */
static void check_after(struct rig *r, unsigned int raises, bool ended)
{
	unsigned int maps = fake_get(&r->f, &r->f.maps);

	assert_int_equal(fake_get(&r->f, &r->f.raises), raises);
	assert_int_equal(fake_get(&r->f, &r->f.lowers), raises);
	assert_int_equal(fake_get(&r->f, &r->f.depth), 0);
	if (ended)
		assert_int_equal(do_init(r), 0);
	/* The guard's table went with the session: the file again. */
	assert_int_equal(do_lookup(r), 0);
	assert_int_equal(do_setupmapping(r, 0), 0);
	assert_int_equal(fake_get(&r->f, &r->f.maps), maps + 1);
	assert_int_equal(fake_get(&r->f, &r->f.maps_cancelled), 0);
}

/* A map before any DESTROY: the rig works and nothing is cancelled. */
static void map_first(struct rig *r)
{
	assert_int_equal(do_lookup(r), 0);
	assert_int_equal(do_setupmapping(r, 0), 0);
	assert_int_equal(fake_get(&r->f, &r->f.maps), 1);
	assert_int_equal(fake_get(&r->f, &r->f.raises), 0);
}

/* ---- cases ------------------------------------------------------------ */

/* The backend serves the DESTROY: raised once, lowered once. */
static void destroy_served(void **state)
{
	struct rig r;

	(void)state;
	rig_new(&r, NULL, 0);
	map_first(&r);
	assert_int_equal(do_destroy(&r), 0);
	assert_int_equal(r.f.destroys, 1);
	/* The session's mapping went with it. */
	assert_int_equal(r.f.unmaps, 1);
	check_after(&r, 1, true);
	rig_free(&r);
}

/* The plan answers the DESTROY with EIO instead of the backend. */
static void destroy_fault_eio(void **state)
{
	struct vqf_fault_plan plan = {
		.seed = 1,
		.data_ops = 1ULL << FUSE_DESTROY,
	};
	struct vqf_fsdev_stats st;
	struct rig r;

	(void)state;
	plan.ppm[VQF_FAULT_EIO] = VQF_FAULT_PPM;
	rig_new(&r, &plan, 0);
	map_first(&r);
	assert_int_equal(do_destroy(&r), -EIO);
	assert_int_equal(r.f.destroys, 0);
	vqf_fsdev_get_stats(r.dev, &st);
	assert_int_equal(st.faults[VQF_FAULT_EIO], 1);
	/* The session goes on (the backend never saw it): no INIT. */
	check_after(&r, 1, false);
	rig_free(&r);
}

/*
 * Every completion held and pushed later in a shuffled order, and every
 * interrupt dropped (the poll timer sends both late): the DESTROY's
 * cancel is lowered when its reply is written, not when it is pushed.
 */
static void destroy_fault_reorder_drop(void **state)
{
	struct vqf_fault_plan plan = {
		.seed = 2,
		.data_ops = 1ULL << FUSE_DESTROY,
	};
	struct vqf_fsdev_stats st;
	struct rig r;

	(void)state;
	plan.ppm[VQF_FAULT_REORDER] = VQF_FAULT_PPM;
	plan.ppm[VQF_FAULT_DROP_CALL] = VQF_FAULT_PPM;
	rig_new(&r, &plan, 0);
	map_first(&r);
	assert_int_equal(do_destroy(&r), 0);
	assert_int_equal(r.f.destroys, 1);
	vqf_fsdev_get_stats(r.dev, &st);
	assert_true(st.faults[VQF_FAULT_REORDER] > 0);
	check_after(&r, 1, true);
	rig_free(&r);
}

/* Two DESTROYs back to back: the second finds no session (EIO). */
static void destroy_twice(void **state)
{
	struct rig r;

	(void)state;
	rig_new(&r, NULL, 0);
	map_first(&r);
	assert_int_equal(do_destroy(&r), 0);
	/* Refused by the parser before INIT: never served, never raised. */
	assert_int_equal(do_destroy(&r), -EIO);
	assert_int_equal(r.f.destroys, 1);
	check_after(&r, 1, true);
	/* And again within one session each. */
	assert_int_equal(do_destroy(&r), 0);
	assert_int_equal(do_init(&r), 0);
	assert_int_equal(do_destroy(&r), 0);
	assert_int_equal(r.f.destroys, 3);
	check_after(&r, 3, true);
	rig_free(&r);
}

struct async {
	struct rig *r;
	struct vqf_gdrv_call c;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void async_done(void *ctx, struct vqf_gdrv_call *c)
{
	struct async *a = ctx;

	(void)c;
	pthread_mutex_lock(&a->lock);
	a->done = true;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

static void async_wait(struct async *a)
{
	pthread_mutex_lock(&a->lock);
	while (!a->done)
		pthread_cond_wait(&a->cond, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

static void *shutdown_main(void *arg)
{
	struct rig *r = arg;

	vqf_gdrv_shutdown(r->drv);
	return NULL;
}

/*
 * A DESTROY in flight when the device stops: it waits in the guard for
 * a GETATTR the backend holds (its cancel already raised), the driver
 * shuts down meanwhile (its calls in flight: no DESTROY of its own; it
 * interrupts them, gives up and resets the device), the stop ends the
 * guard's wait; the DESTROY is finished without a push, and the cancel
 * is lowered before the GETATTR is let go.  Then a new driver brings the
 * device up again.
 */
static void destroy_at_stop(void **state)
{
	struct async ga = { 0 }, da = { 0 };
	struct vqf_guard_stats gs;
	struct vqf_fsdev_stats st;
	struct vqf_gdrv_cfg gc = { 0 };
	pthread_t reset;
	struct rig r;

	(void)state;
	rig_new(&r, NULL, 2);
	map_first(&r);
	pthread_mutex_init(&ga.lock, NULL);
	pthread_cond_init(&ga.cond, NULL);
	pthread_mutex_init(&da.lock, NULL);
	pthread_cond_init(&da.cond, NULL);

	r.f.hold_getattr = true;
	call_init(&ga.c, FUSE_GETATTR, FUSE_ROOT_ID);
	{
		static struct fuse_getattr_in gi;
		static struct fuse_attr_out ao;

		vqf_req_add_in(&ga.c.req, &gi, sizeof(gi));
		vqf_req_add_out(&ga.c.req, &ao, sizeof(ao));
	}
	assert_int_equal(vqf_gdrv_submit(r.drv, &ga.c, async_done, &ga), 0);
	pthread_mutex_lock(&r.f.lock);
	while (!r.f.getattr_in)
		pthread_cond_wait(&r.f.cond, &r.f.lock);
	pthread_mutex_unlock(&r.f.lock);

	call_init(&da.c, FUSE_DESTROY, 0);
	assert_int_equal(vqf_gdrv_submit(r.drv, &da.c, async_done, &da), 0);
	/* Shown inside its wait: the guard counted it waiting. */
	do {
		vqf_fsdev_get_stats(r.dev, &st);
		gs = st.guard;
		if (!gs.session_waits)
			sched_yield();
	} while (!gs.session_waits);
	assert_int_equal(fake_get(&r.f, &r.f.raises), 1);
	assert_int_equal(fake_get(&r.f, &r.f.lowers), 0);

	assert_int_equal(pthread_create(&reset, NULL, shutdown_main, &r), 0);
	/* The stop ends the guard's wait; the DESTROY is lowered while the
	 * GETATTR is still held.
	 */
	pthread_mutex_lock(&r.f.lock);
	while (r.f.lowers < 1)
		pthread_cond_wait(&r.f.cond, &r.f.lock);
	assert_true(r.f.getattr_in && r.f.hold_getattr);
	r.f.hold_getattr = false;
	pthread_cond_broadcast(&r.f.cond);
	pthread_mutex_unlock(&r.f.lock);
	pthread_join(reset, NULL);
	assert_int_equal(fake_get(&r.f, &r.f.raises), 1);
	assert_int_equal(fake_get(&r.f, &r.f.lowers), 1);
	assert_int_equal(fake_get(&r.f, &r.f.depth), 0);

	/* The old driver's calls ended with the reset: answered if the
	 * device pushed them before its stop flag was up (the guard's stop
	 * comes first), else failed; either way the driver goes.
	 */
	async_wait(&ga);
	async_wait(&da);
	assert_true(ga.c.result == 0 || ga.c.result == -ENOTCONN);
	assert_true(da.c.result == 0 || da.c.result == -ENOTCONN);
	vqf_gdrv_free(r.drv);
	gc.request_queues = 1;
	gc.queue_size = 16;
	assert_int_equal(vqf_gdrv_new(&gc, r.dev, r.ram, &r.drv), 0);
	assert_int_equal(vqf_fsdev_set_dax(r.dev, true), 0);
	check_after(&r, 1, false);
	pthread_mutex_destroy(&ga.lock);
	pthread_cond_destroy(&ga.cond);
	pthread_mutex_destroy(&da.lock);
	pthread_cond_destroy(&da.cond);
	rig_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(destroy_served),
		cmocka_unit_test(destroy_fault_eio),
		cmocka_unit_test(destroy_fault_reorder_drop),
		cmocka_unit_test(destroy_twice),
		cmocka_unit_test(destroy_at_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
