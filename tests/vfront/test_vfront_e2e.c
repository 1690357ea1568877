// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_vfront_e2e.c - the simulated guest (vqf_gdrv, vqf_gcli) over
 * vqf_vfront against the real back-end, in-process: vqf_vhost serving a
 * socket pair from a thread, over vqf_pt on a temporary directory (the
 * helpers of tests/vhost/vhost_fe*.h).  Real calls end to end (create,
 * write, read, stat, readdir, unlink); the DAX window, whose SETUPMAPPING
 * the back-end carries out as a SHMEM_MAP the front-end's thread serves;
 * "a daemon that offers fewer features": a proxy between the two relays
 * every message (descriptors too) and hides EVENT_IDX and INDIRECT_DESC,
 * or the protocol features; and a back-end that dies with calls in flight
 * from two threads: each call ends once, with an errno, the front-end is
 * lost once.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "vqf_gcli.h"
#include "vqf_passthrough.h"
#include "vqf_vfront.h"
#include "vqf_vhost.h"
#include "vqf_vring_drv.h"
#include "vqf_vring_thread.h"

#include "vhost_fe.h"
#include "vfront_peer.h"

#include <valgrind/helgrind.h>

#define NREQ		2
#define NQ		(1 + NREQ)
#define RAM_BYTES	(32u << 20)
#define WINDOW		(4ull << 20)
#define DATA		30000
#define NCALLS		4	/* asynchronous calls per thread */
/* vhost_fe_wire.h's fake front-end (unused here) wants its layout. */
#define RING_NUM	64
#define RAM_SIZE	(8u << 20)
#define RAM_GPA		0x100000ull
#define RING_AREA	0x10000ull
#define BUF_START	(NQ * RING_AREA)

#define BIT(n)		(1ull << (n))

struct fe {
	VHOST_FE_FIELDS
	/* The proxy: [0] the front-end's, [1] its own; sv[0] its back. */
	int px[2];
	pthread_t pthr;
	bool proxy;
	u64 drop_features, drop_pf;
	/* The serve hook's gate: requests wait while @hold. */
	pthread_mutex_t glock;
	pthread_cond_t gcond;
	bool hold;
	unsigned int held;
	/* The guest. */
	struct vqf_gram *gram;
	struct vqf_vfront *vf;
	struct vqf_gdrv *drv;
	struct vqf_gcli *cli;
	unsigned int lost_calls;
	int lost_err;
};

#include "vhost_fe_wire.h"

/* ---- the back-end's serve hook: a gate ------------------------------ */

static int t_serve(void *ctx, void *req, size_t len,
		   vqf_backend_reply_fn reply, void *rctx)
{
	struct fe *f = ctx;

	pthread_mutex_lock(&f->glock);
	if (f->hold) {
		f->held++;
		pthread_cond_broadcast(&f->gcond);
		while (f->hold)
			pthread_cond_wait(&f->gcond, &f->glock);
	}
	pthread_mutex_unlock(&f->glock);
	return vqf_backend_process(f->be, req, len, reply, rctx);
}

static void t_serve_reset(void *ctx)
{
	struct fe *f = ctx;

	vqf_backend_reset(f->be);
}

/* ---- the proxy ------------------------------------------------------ */

static void *proxy_main(void *arg)
{
	struct fe *f = arg;
	struct pmsg m;

	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = f->px[1], .events = POLLIN },
			{ .fd = f->sv[0], .events = POLLIN },
		};
		int from, to;
		u64 v;

		if (poll(pf, 2, -1) < 0 && errno == EINTR)
			continue;
		from = pf[0].revents ? f->px[1] : f->sv[0];
		to = from == f->px[1] ? f->sv[0] : f->px[1];
		if (!peer_recv(from, &m))
			break;
		if (from == f->sv[0] && m.h.size == sizeof(v) &&
		    (m.h.flags & VQF_VHOST_FLAG_REPLY) &&
		    (m.h.request == VQF_VHOST_GET_FEATURES ||
		     m.h.request == VQF_VHOST_GET_PROTOCOL_FEATURES)) {
			memcpy(&v, m.p, sizeof(v));
			v &= ~(m.h.request == VQF_VHOST_GET_FEATURES ?
			       f->drop_features : f->drop_pf);
			memcpy(m.p, &v, sizeof(v));
		}
		if (peer_send(to, m.h.request, m.h.flags, m.p, m.h.size,
			      m.fds, m.nfds)) {
			peer_close_fds(&m);
			break;
		}
		peer_close_fds(&m);
	}
	/* One side gone: the other sees it. */
	shutdown(f->px[1], SHUT_RDWR);
	shutdown(f->sv[0], SHUT_RDWR);
	return NULL;
}

/* ---- fixture ---------------------------------------------------------- */

static void on_lost(void *ctx, int err)
{
	struct fe *f = ctx;

	pthread_mutex_lock(&f->glock);
	f->lost_calls++;
	f->lost_err = err;
	pthread_mutex_unlock(&f->glock);
}

static const struct vqf_fsdev_dax_ops dax_ops = {
	.file_fd = vqf_pt_dax_file_fd,
	.node_fd = vqf_pt_dax_node_fd,
};

struct opts {
	bool dax;
	u64 drop_features, drop_pf;	/* through the proxy */
};

/* The back-end, maybe the proxy, then the guest: front-end, driver. */
static struct fe *up(const struct opts *o)
{
	struct vqf_vhost_cfg vc = { 0 };
	struct vqf_vfront_cfg fc = { 0 };
	struct vqf_gdrv_cfg gc = { .queue_size = 128 };
	struct vqf_gcli_cfg cc = { 0 };
	struct fe *f = calloc(1, sizeof(*f));
	int fd;

	assert_non_null(f);
	pthread_mutex_init(&f->glock, NULL);
	pthread_cond_init(&f->gcond, NULL);
	fe_backend_init(f);
	vc.serve = t_serve;
	vc.serve_ctx = f;
	vc.serve_reset = t_serve_reset;
	if (o->dax) {
		vc.dax_window = WINDOW;
		vc.dax_ops = &dax_ops;
		vc.dax_ctx = f->pt;
	}
	fe_serve_start(f, &vc);
	fd = f->sv[0];
	f->px[0] = f->px[1] = -1;
	if (o->drop_features || o->drop_pf) {
		f->proxy = true;
		f->drop_features = o->drop_features;
		f->drop_pf = o->drop_pf;
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM |
					    SOCK_CLOEXEC, 0, f->px), 0);
		assert_int_equal(pthread_create(&f->pthr, NULL, proxy_main,
						f), 0);
		fd = f->px[0];
		f->px[0] = -1;
	} else {
		f->sv[0] = -1;
	}
	f->gram = vqf_gram_new_shared(RAM_BYTES);
	assert_non_null(f->gram);
	fc.fd = fd;
	fc.ram = f->gram;
	fc.num_request_queues = NREQ;
	fc.lost = on_lost;
	fc.lost_ctx = f;
	fc.log = getenv("VQF_VFRONT_LOG") ? stderr : NULL;
	assert_int_equal(vqf_vfront_new(&fc, &f->vf), 0);
	if (o->dax)
		assert_int_equal(vqf_vfront_shm(f->vf,
						 VQF_VIRTIO_FS_SHMCAP_ID_CACHE,
						 &cc.dax_base, &cc.dax_window),
				 0);
	/*
	 * The window's pages change under it by mmap() in the front-end's
	 * thread, ordered before the guest's access by the channel's ack
	 * and the SETUPMAPPING reply: nothing helgrind sees.
	 */
	if (o->dax)
		VALGRIND_HG_DISABLE_CHECKING(cc.dax_base, cc.dax_window);
	assert_int_equal(vqf_gdrv_new_ops(&gc, vqf_vfront_dev_ops(), f->vf,
					  f->gram, &f->drv), 0);
	assert_int_equal(vqf_gcli_new(f->drv, &cc, &f->cli), 0);
	return f;
}

static void down(struct fe *f)
{
	if (f->cli)
		vqf_gcli_free(f->cli);
	vqf_gdrv_free(f->drv);
	/* Hangs up: the back-end (or the proxy) ends its connection. */
	vqf_vfront_free(f->vf);
	if (f->proxy)
		pthread_join(f->pthr, NULL);
	pthread_join(f->thr, NULL);
	if (f->px[1] >= 0)
		close(f->px[1]);
	if (f->sv[0] >= 0)
		close(f->sv[0]);
	close(f->sv[1]);
	vqf_vhost_free(f->vh);
	vqf_backend_free(f->be);
	vqf_pt_free(f->pt);
	vqf_gram_free(f->gram);
	rm_dir(f->dir);
	pthread_cond_destroy(&f->gcond);
	pthread_mutex_destroy(&f->glock);
	assert_int_equal(count_fds(), f->fds_before);
	free(f);
}

/* ---- the workload ----------------------------------------------------- */

static int count_entry(void *ctx, const char *name, const struct stat *st)
{
	unsigned int *n = ctx;

	(void)st;
	if (!strcmp(name, "f"))
		(*n)++;
	return 0;
}

/* Create, write, read back, stat, readdir, unlink: checked host-side. */
static void workload(struct fe *f)
{
	static u8 buf[DATA], back[DATA];
	struct vqf_vhost_stats vs;
	struct vqf_vfront_stats s;
	char path[160];
	struct stat st;
	unsigned int i, n = 0;
	int fd, hfd;

	for (i = 0; i < DATA; i++)
		buf[i] = (u8)(i * 13 + i / 1000);
	assert_int_equal(vqf_gcli_mkdir(f->cli, "d", 0755), 0);
	fd = vqf_gcli_open(f->cli, "d/f", O_CREAT | O_EXCL | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_write(f->cli, fd, buf, 10000), 10000);
	assert_int_equal(vqf_gcli_pwrite(f->cli, fd, buf + 10000,
					 DATA - 10000, 10000), DATA - 10000);
	assert_int_equal(vqf_gcli_pread(f->cli, fd, back, DATA, 0), DATA);
	assert_memory_equal(back, buf, DATA);
	assert_int_equal(vqf_gcli_fstat(f->cli, fd, &st), 0);
	assert_int_equal(st.st_size, DATA);
	assert_int_equal(vqf_gcli_fsync(f->cli, fd, false), 0);
	assert_int_equal(vqf_gcli_close(f->cli, fd), 0);
	/* The host file holds it. */
	snprintf(path, sizeof(path), "%s/d/f", f->dir);
	hfd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(hfd >= 0);
	memset(back, 0, DATA);
	assert_int_equal(pread(hfd, back, DATA, 0), DATA);
	close(hfd);
	assert_memory_equal(back, buf, DATA);
	/* A change made host-side is read back. */
	hfd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(hfd >= 0);
	assert_int_equal(pwrite(hfd, "HOST", 4, 20000), 4);
	close(hfd);
	fd = vqf_gcli_open(f->cli, "d/f", O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pread(f->cli, fd, back, 8, 19998), 8);
	assert_memory_equal(back + 2, "HOST", 4);
	assert_int_equal(back[0], buf[19998]);
	assert_int_equal(vqf_gcli_close(f->cli, fd), 0);
	assert_int_equal(vqf_gcli_stat(f->cli, "d/f", &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(vqf_gcli_readdir(f->cli, "d", true, count_entry, &n),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(vqf_gcli_unlink(f->cli, "d/f"), 0);
	assert_int_equal(vqf_gcli_stat(f->cli, "d/f", &st), -ENOENT);
	assert_int_equal(vqf_gcli_rmdir(f->cli, "d"), 0);
	assert_int_equal(access(path, F_OK), -1);
	vqf_vfront_get_stats(f->vf, &s);
	assert_int_equal(s.lost, 0);
	assert_int_equal(s.starts, 1);
	assert_int_equal(s.shm_refused, 0);
	vqf_vhost_get_stats(f->vh, &vs);
	assert_int_equal(vs.refused, 0);
	assert_int_equal(vs.dev.refused, 0);
	assert_int_equal(f->lost_calls, 0);
}

/* ---- cases ------------------------------------------------------------ */

static void test_e2e(void **state)
{
	struct opts o = { 0 };
	struct vqf_vhost_stats vs;
	struct vqf_vfront_stats s;
	struct fe *f;

	(void)state;
	f = up(&o);
	assert_int_equal(vqf_gdrv_num_request_queues(f->drv), NREQ);
	workload(f);
	vqf_vfront_get_stats(f->vf, &s);
	/* Everything vqf_vhost offers, accepted. */
	assert_true(s.features & BIT(VIRTIO_RING_F_EVENT_IDX));
	assert_int_equal(s.protocol_acked, BIT(VQF_VHOST_PF_MQ) |
			 BIT(VQF_VHOST_PF_REPLY_ACK));
	assert_int_equal(s.queue_num, NQ);
	vqf_vhost_get_stats(f->vh, &vs);
	assert_int_equal(vs.starts, 1);
	assert_true(vs.requests[1] > 0);
	down(f);
}

/*
 * DAX: reads and writes go through the window; each SETUPMAPPING is a
 * SHMEM_MAP served by the front-end's thread, whose pages are the host
 * file's.
 */
static bool under_helgrind(void);

static void test_e2e_dax(void **state)
{
	struct opts o = { .dax = true };
	struct vqf_vfront_stats s;
	struct vqf_vhost_stats vs;
	struct vqf_gcli_stats cs;
	struct fe *f;

	(void)state;
	if (under_helgrind())
		skip();
	f = up(&o);
	workload(f);
	vqf_vfront_get_stats(f->vf, &s);
	vqf_vhost_get_stats(f->vh, &vs);
	vqf_gcli_get_stats(f->cli, &cs);
	assert_true(cs.dax_reads > 0);
	assert_true(s.shm_maps > 0);
	assert_int_equal(s.shm_maps, vs.shm.maps);
	assert_int_equal(s.shm_refused, 0);
	assert_int_equal(vs.shm.map_refused, 0);
	down(f);
}

/*
 * Under helgrind a page the front-end's thread mmap()s into the window is
 * that thread's memory, and the guest's read of it a race: the order
 * (the channel's ack, the SETUPMAPPING reply) goes through a socket and
 * a ring, which helgrind does not see.  Memcheck and ASan run the case.
 */
static bool under_helgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload_helgrind");
}

/* A daemon without EVENT_IDX and INDIRECT_DESC: the same work. */
static void test_proxy_no_ring_features(void **state)
{
	struct opts o = {
		.drop_features = BIT(VIRTIO_RING_F_EVENT_IDX) |
				 BIT(VIRTIO_RING_F_INDIRECT_DESC),
	};
	struct vqf_vfront_stats s;
	struct fe *f;

	(void)state;
	f = up(&o);
	vqf_vfront_get_stats(f->vf, &s);
	assert_false(s.features & BIT(VIRTIO_RING_F_EVENT_IDX));
	assert_false(s.features & BIT(VIRTIO_RING_F_INDIRECT_DESC));
	assert_int_equal(vqf_vfront_features(f->vf) &
			 (BIT(VIRTIO_RING_F_EVENT_IDX) |
			  BIT(VIRTIO_RING_F_INDIRECT_DESC)), 0);
	workload(f);
	down(f);
}

/*
 * A daemon without protocol features (no acks, no MQ: one request queue,
 * rings enabled without SET_VRING_ENABLE), and one without MQ and
 * REPLY_ACK only.
 */
static void test_proxy_no_protocol(void **state)
{
	struct opts o = {
		.drop_features = BIT(VQF_VHOST_F_PROTOCOL_FEATURES),
	};
	struct opts o2 = {
		.drop_pf = BIT(VQF_VHOST_PF_MQ) | BIT(VQF_VHOST_PF_REPLY_ACK),
	};
	struct vqf_vfront_stats s;
	struct fe *f;

	(void)state;
	f = up(&o);
	vqf_vfront_get_stats(f->vf, &s);
	assert_int_equal(s.protocol_acked, 0);
	assert_int_equal(s.queue_num, 0);
	assert_int_equal(vqf_gdrv_num_request_queues(f->drv), 1);
	workload(f);
	down(f);

	f = up(&o2);
	vqf_vfront_get_stats(f->vf, &s);
	assert_int_equal(s.protocol_acked, 0);
	assert_int_equal(vqf_gdrv_num_request_queues(f->drv), 1);
	workload(f);
	down(f);
}

/* ---- a back-end that dies with calls in flight ---------------------- */

struct caller {
	struct fe *f;
	struct vqf_gdrv_call c[NCALLS + 1];
	struct fuse_getattr_in in[NCALLS + 1];
	struct fuse_attr_out out[NCALLS + 1];
	unsigned int done[NCALLS + 1];
	int sync_ret;		/* submissions' results, or'ed */
};

static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;

static void call_done(void *ctx, struct vqf_gdrv_call *c)
{
	struct caller *k = ctx;

	pthread_mutex_lock(&done_lock);
	k->done[c - k->c]++;
	pthread_mutex_unlock(&done_lock);
}

/*
 * NCALLS + 1 asynchronous GETATTRs of the root.  (The thread then ends:
 * joined before the kill, so that helgrind sees the submissions ordered
 * before the reset that the front-end's own thread starts.  A call that
 * waits in vqf_gdrv_call() through a hang-up is test_vfront.c's
 * test_driver_lost: INIT.)
 */
static void *caller_main(void *arg)
{
	struct caller *k = arg;
	unsigned int i;

	for (i = 0; i <= NCALLS; i++)
		vqf_req_init_getattr(&k->c[i].req, 0, 1, &k->in[i],
				     &k->out[i]);
	for (i = 0; i <= NCALLS; i++)
		k->sync_ret |= vqf_gdrv_submit(k->f->drv, &k->c[i],
					       call_done, k);
	return NULL;
}

static bool two_held(void *arg)
{
	struct fe *f = arg;
	bool ok;

	pthread_mutex_lock(&f->glock);
	ok = f->held >= 2;
	pthread_mutex_unlock(&f->glock);
	return ok && vqf_gdrv_inflight(f->drv) == 2 * (NCALLS + 1);
}

static bool no_inflight(void *arg)
{
	struct fe *f = arg;

	return !vqf_gdrv_inflight(f->drv);
}

/*
 * Every callback has run: a call leaves the in-flight list before its
 * callback, so no_inflight() alone does not say so.
 */
static bool all_done(void *arg)
{
	struct caller *k = arg;
	unsigned int i, j, n = 0;

	pthread_mutex_lock(&done_lock);
	for (i = 0; i < 2; i++)
		for (j = 0; j <= NCALLS; j++)
			n += k[i].done[j];
	pthread_mutex_unlock(&done_lock);
	return n >= 2 * (NCALLS + 1);
}

static void test_kill_midcall(void **state)
{
	struct opts o = { 0 };
	struct caller k[2];
	struct vqf_gdrv_stats ds, ds0;
	struct vqf_vfront_stats s;
	pthread_t t[2];
	struct fe *f;
	unsigned int i, j;

	(void)state;
	f = up(&o);
	vqf_gcli_free(f->cli);	/* raw calls only */
	f->cli = NULL;
	vqf_gdrv_get_stats(f->drv, &ds0);
	memset(k, 0, sizeof(k));
	pthread_mutex_lock(&f->glock);
	f->hold = true;
	pthread_mutex_unlock(&f->glock);
	for (i = 0; i < 2; i++) {
		k[i].f = f;
		assert_int_equal(pthread_create(&t[i], NULL, caller_main,
						&k[i]), 0);
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	/* Every call in flight, the back-end's two workers inside two. */
	assert_true(peer_wait(two_held, f));
	/* The back-end dies: its end of the connection goes. */
	shutdown(f->sv[1], SHUT_RDWR);
	assert_true(peer_wait(no_inflight, f));
	assert_true(peer_wait(all_done, k));
	/* Let the dead back-end's workers finish into nothing. */
	pthread_mutex_lock(&f->glock);
	f->hold = false;
	pthread_cond_broadcast(&f->gcond);
	pthread_mutex_unlock(&f->glock);
	for (i = 0; i < 2; i++) {
		assert_int_equal(k[i].sync_ret, 0);	/* all submitted */
		for (j = 0; j <= NCALLS; j++) {
			assert_int_equal(k[i].done[j], 1);
			assert_int_equal(k[i].c[j].result, -ENOTCONN);
		}
	}
	vqf_vfront_get_stats(f->vf, &s);
	assert_int_equal(s.lost, 1);
	assert_int_equal(s.lost_err, -ENOTCONN);
	pthread_mutex_lock(&f->glock);
	assert_int_equal(f->lost_calls, 1);
	pthread_mutex_unlock(&f->glock);
	vqf_gdrv_get_stats(f->drv, &ds);
	assert_int_equal(ds.failed - ds0.failed, 2 * (NCALLS + 1));
	assert_int_equal(ds.completed, ds0.completed);
	assert_false(vqf_gdrv_alive(f->drv));
	/* New calls fail at once. */
	{
		struct vqf_gdrv_call c;
		struct fuse_getattr_in in = { 0 };
		struct fuse_attr_out out;

		memset(&c, 0, sizeof(c));
		vqf_req_init_getattr(&c.req, 0, 1, &in, &out);
		assert_int_equal(vqf_gdrv_call(f->drv, &c, -1), -ENOTCONN);
	}
	down(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_e2e),
		cmocka_unit_test(test_e2e_dax),
		cmocka_unit_test(test_proxy_no_ring_features),
		cmocka_unit_test(test_proxy_no_protocol),
		cmocka_unit_test(test_kill_midcall),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
