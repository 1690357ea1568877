// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_e2e_transport.c - the virtio-fs transport of the simulated machine
 * under load: full rings (the pending list), FORGET/BATCH_FORGET on the
 * hiprio queue, INTERRUPT of requests in flight, several request queues
 * served by several device workers for many client threads, and shutdown
 * with requests in flight.  Every request must complete exactly once;
 * every wait is bounded.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "vqf_forget.h"

#define WAIT_S	30	/* longest bounded wait for completions */
/*
 * "Did not hang" bounds on one call: far beyond what load or valgrind can
 * cost, so only a real hang fails (10 s once was an assertion on speed).
 */
#define HANG_S	(e2e_slow() ? 300 : 60)

static unsigned int scale(unsigned int n)
{
	return e2e_slow() ? (n + 3) / 4 : n;
}

static struct e2e *machine(unsigned int queues, unsigned int queue_size,
			   unsigned int threads)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct e2e *e = NULL;
	int ret;

	cfg.queues = queues;
	cfg.queue_size = queue_size;
	cfg.threads = threads;
	ret = e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE);
	if (ret)
		fail_msg("e2e_new(queues %u, size %u, threads %u): %s",
			 queues, queue_size, threads, strerror(-ret));
	return e;
}

static void done_machine(struct e2e *e)
{
	assert_int_equal(e2e_free(e), 0);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- asynchronous calls ------------------------------------------------ */

struct group {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int left;
};

/* One GETATTR (or another request) with its own buffers. */
struct acall {
	struct vqf_gdrv_call cl;	/* first: the callback casts back */
	struct fuse_getattr_in gi;
	struct fuse_attr_out ao;
	struct group *grp;
	int done;			/* times the callback ran */
	int result;
};

static void group_init(struct group *g, unsigned int n)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->left = n;
}

/* Only after done_machine(): the last done() may still be inside its
 * unlock when the waiter wakes, and only joining the interrupt threads
 * orders glibc's last writes to the mutex before the destroy for helgrind
 * (taking the lock once more orders them for the CPU, not for helgrind,
 * which places the release before those writes).
 */
static void group_destroy(struct group *g)
{
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
}

static void acall_done(void *ctx, struct vqf_gdrv_call *cl)
{
	struct acall *a = (struct acall *)cl;
	struct group *g = ctx;

	pthread_mutex_lock(&g->lock);
	a->result = cl->result;
	a->done++;
	if (g->left)
		g->left--;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* Waits until @left reaches @until; false after @secs. */
static bool group_wait(struct group *g, unsigned int until, int secs)
{
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	pthread_mutex_lock(&g->lock);
	while (g->left > until &&
	       pthread_cond_timedwait(&g->cond, &g->lock, &ts) == 0)
		;
	ok = g->left <= until;
	pthread_mutex_unlock(&g->lock);
	return ok;
}

static int acall_getattr(struct e2e *e, struct acall *a, struct group *grp,
			 uint64_t nodeid)
{
	memset(a, 0, sizeof(*a));
	a->grp = grp;
	vqf_req_init_getattr(&a->cl.req, 0, nodeid, &a->gi, &a->ao);
	return vqf_gdrv_submit(e->g, &a->cl, acall_done, grp);
}

/* ---- threads ----------------------------------------------------------- */

struct worker {
	pthread_t thr;
	struct e2e *e;
	unsigned int id, iters;
	volatile bool *stop;
	/* Results. */
	unsigned int ops, enotconn, eio, bad;
	int first_bad;
	char what[64];
};

static void bad(struct worker *w, const char *what, long ret)
{
	if (!w->bad++) {
		w->first_bad = (int)ret;
		snprintf(w->what, sizeof(w->what), "%s", what);
	}
}

/* Joins with a bound: a hang fails the test instead of the CI run. */
static void join_bounded(pthread_t thr, int secs)
{
	struct timespec ts;

	/* helgrind knows pthread_join, not pthread_timedjoin_np, as the
	 * edge that orders the thread's writes before ours; ctest's
	 * timeout bounds it there.
	 */
	if (e2e_slow()) {
		pthread_join(thr, NULL);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	if (pthread_timedjoin_np(thr, NULL, &ts))
		fail_msg("a client thread did not finish within %d s", secs);
}

/* ---- full rings -------------------------------------------------------- */

static void *stat_loop(void *arg)
{
	struct worker *w = arg;
	struct stat st;
	unsigned int i;
	int ret;

	for (i = 0; i < w->iters; i++) {
		ret = vqf_gcli_stat(w->e->c, "file", &st);
		if (ret || st.st_size != 5)
			bad(w, "stat", ret);
		w->ops++;
	}
	return NULL;
}

static void test_queue_full(void **state)
{
	unsigned int i, n = scale(512), nthr = 4;
	struct e2e *e = machine(1, 8, 2);
	struct acall *calls = calloc(n, sizeof(*calls));
	struct worker *w = calloc(nthr, sizeof(*w));
	struct vqf_sim_stats s;
	struct group grp;
	struct stat root;

	(void)state;
	assert_non_null(calls);
	assert_non_null(w);
	assert_int_equal(stat(e->dir, &root), 0);
	assert_int_equal(e2e_host_write(e2e_host(e, "file"), "12345", 5,
					0644), 0);
	/* Synchronous callers share the ring's eight slots with... */
	for (i = 0; i < nthr; i++) {
		w[i].e = e;
		w[i].iters = scale(200);
		assert_int_equal(pthread_create(&w[i].thr, NULL, stat_loop,
						&w[i]), 0);
	}
	/* ...a burst of asynchronous ones from this thread. */
	group_init(&grp, n);
	for (i = 0; i < n; i++)
		assert_int_equal(acall_getattr(e, &calls[i], &grp,
					       FUSE_ROOT_ID), 0);
	assert_true(group_wait(&grp, 0, WAIT_S));
	for (i = 0; i < nthr; i++)
		join_bounded(w[i].thr, WAIT_S);
	for (i = 0; i < n; i++) {
		assert_int_equal(calls[i].done, 1);
		assert_int_equal(calls[i].result, 0);
		assert_int_equal(calls[i].ao.attr.ino, root.st_ino);
	}
	for (i = 0; i < nthr; i++) {
		if (w[i].bad)
			fail_msg("thread %u: %s returned %d", i, w[i].what,
				 w[i].first_bad);
		assert_int_equal(w[i].ops, w[i].iters);
	}
	s = e2e_stats(e);
	/* The ring had eight slots: most requests waited for one. */
	assert_true(s.drv.pending_queued > 0);
	assert_true(s.drv.pending_max > 0);
	assert_int_equal(s.drv.submitted, s.drv.completed);
	assert_int_equal(s.drv.failed, 0);
	assert_int_equal(s.drv.bad_replies, 0);
	assert_int_equal(s.dev.refused, 0);
	assert_int_equal(vqf_gdrv_inflight(e->g), 0);
	/* Each thread's stats did go through the device. */
	assert_true(s.drv.submitted >= n + nthr * w[0].iters);
	print_message("queue_full: %llu requests, %llu waited for ring "
		      "space, longest pending list %llu\n",
		      (unsigned long long)s.drv.submitted,
		      (unsigned long long)s.drv.pending_queued,
		      (unsigned long long)s.drv.pending_max);
	free(calls);
	free(w);
	done_machine(e);
	group_destroy(&grp);
}

/* ---- forgets ------------------------------------------------------------- */

static void forgets_on(unsigned int queue_size)
{
	unsigned int i, n = scale(300);
	struct e2e *e = machine(1, queue_size, 2);
	struct vqf_gcli_cfg cc = { 0 };
	struct vqf_sim_stats s0, s1;
	struct vqf_gcli *c2;
	struct fuse_entry_out eo;
	uint64_t base;
	char name[32];
	struct stat st;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		assert_int_equal(e2e_host_write(e2e_host(e, name), "x", 1,
						0644), 0);
	}
	assert_int_equal(vqf_gdrv_forget_flush(e->g), 0);
	s0 = e2e_stats(e);
	base = s0.pt.inodes;

	/* A second client looks every file up, then goes away. */
	assert_int_equal(vqf_gcli_new(e->g, &cc, &c2), 0);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		assert_int_equal(vqf_gcli_stat(c2, name, &st), 0);
	}
	assert_int_equal(e2e_stats(e).pt.inodes, base + n);
	vqf_gcli_free(c2);
	s1 = e2e_stats(e);
	if (s1.dev.dev.reject[VQF_DEV_R_COUNT_MAX]) {
		print_message("BUG (lib: vqf_forget vs vqf_dev): the driver "
			      "built a BATCH_FORGET of up to %u entries "
			      "(VQF_FORGET_DEFAULT_MAX_REQ), the device parser "
			      "allows %u (VQF_DEV_DEF_FORGET_MAX): refused "
			      "as COUNT_MAX with no reply, so %llu nodeids "
			      "were never forgotten on the server\n",
			      vqf_forget_max_batch(VQF_FORGET_DEFAULT_MAX_REQ),
			      (unsigned int)VQF_DEV_DEF_FORGET_MAX,
			      (unsigned long long)(s1.pt.inodes - base));
		done_machine(e);
		skip();
		return;
	}
	assert_int_equal(s1.dev.refused, 0);
	assert_true(s1.drv.forgets + s1.drv.batch_forgets >
		    s0.drv.forgets + s0.drv.batch_forgets);
	assert_int_equal(s1.drv.forget_entries - s0.drv.forget_entries, n);
	assert_true(s1.dev.hiprio > s0.dev.hiprio);
	assert_int_equal(s1.pt.inodes, base);
	assert_int_equal(vqf_backend_inflight(vqf_sim_backend(e->s)), 0);
	print_message("forgets (ring %u): %llu nodeids in %llu FORGET + "
		      "%llu BATCH_FORGET\n", queue_size,
		      (unsigned long long)n,
		      (unsigned long long)(s1.drv.forgets - s0.drv.forgets),
		      (unsigned long long)(s1.drv.batch_forgets -
					   s0.drv.batch_forgets));

	/* A client with a small inode cache forgets as it goes. */
	cc.icache_max = 8;
	assert_int_equal(vqf_gcli_new(e->g, &cc, &c2), 0);
	for (i = 0; i < n; i++) {
		struct vqf_gcli_stats cs;

		snprintf(name, sizeof(name), "f%u", i);
		assert_int_equal(vqf_gcli_stat(c2, name, &st), 0);
		vqf_gcli_get_stats(c2, &cs);
		assert_true(cs.inodes <= 8 + 1);
	}
	assert_int_equal(vqf_gdrv_forget_flush(e->g), 0);
	{
		struct vqf_gcli_stats cs;

		vqf_gcli_get_stats(c2, &cs);
		assert_true(cs.forgets >= n - 9);
		assert_true(e2e_stats(e).pt.inodes <= base + 9);
	}
	vqf_gcli_free(c2);
	assert_int_equal(e2e_stats(e).pt.inodes, base);

	/* Raw: three lookups, one forget of all three. */
	for (i = 0; i < 3; i++)
		assert_int_equal(raw_lookup(e, FUSE_ROOT_ID, "f0", &eo), 0);
	assert_int_equal(e2e_stats(e).pt.inodes, base + 1);
	assert_int_equal(vqf_gdrv_forget(e->g, eo.nodeid, 2), 0);
	assert_int_equal(vqf_gdrv_forget_flush(e->g), 0);
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), 0);
	assert_int_equal(vqf_gdrv_forget(e->g, eo.nodeid, 1), 0);
	assert_int_equal(vqf_gdrv_forget_flush(e->g), 0);
	assert_int_equal(raw_getattr(e, eo.nodeid, NULL), -ESTALE);
	assert_int_equal(e2e_stats(e).pt.inodes, base);
	assert_int_equal(vqf_gdrv_forget(e->g, 0, 1), -EINVAL);
	assert_int_equal(vqf_gdrv_forget(e->g, eo.nodeid, 0), -EINVAL);

	s1 = e2e_stats(e);
	assert_int_equal(s1.drv.submitted, s1.drv.completed);
	assert_int_equal(s1.drv.bad_replies, 0);
	assert_int_equal(vqf_backend_inflight(vqf_sim_backend(e->s)), 0);
	done_machine(e);
}

static void test_forgets(void **state)
{
	(void)state;
	forgets_on(128);
}

/* An eight-slot hiprio ring: the forget queue drains as slots come back. */
static void test_forgets_small_ring(void **state)
{
	(void)state;
	forgets_on(8);
}

/*
 * Rings smaller than a request's descriptor chain.  A WRITE is 5
 * segments (in header, args, data | out header, args); with INDIRECT_DESC
 * it takes one ring slot, as Linux's virtio_ring allows whatever the
 * queue size.  sim/vring refuses any chain longer than the queue size
 * (virtio 1.2, 2.7.5.3.1), so a queue of 4 cannot carry a WRITE.
 */
/*
 * A chain may not be longer than its queue, even indirect (2.7.5.3.1): the
 * driver refuses queues too small for its longest chain up front instead
 * of failing the first WRITE (5 segments) with -E2BIG.
 */
static void test_small_ring_writes(void **state)
{
	struct vqf_sim_cfg cfg = { 0 };
	unsigned int sizes[] = { 1, 2, 4 }, i;
	struct e2e *e = NULL;
	char buf[3 * 4096];
	ssize_t r;
	int fd;

	(void)state;
	for (i = 0; i < 3; i++) {
		cfg.queue_size = sizes[i];
		assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE),
				 -EINVAL);
	}
	e = machine(1, 8, 0);
	memset(buf, 'w', sizeof(buf));
	fd = vqf_gcli_open(e->c, "w", O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	r = vqf_gcli_pwrite(e->c, fd, buf, sizeof(buf), 0);
	assert_int_equal(r, sizeof(buf));
	memset(buf, 0, sizeof(buf));
	assert_int_equal(vqf_gcli_pread(e->c, fd, buf, sizeof(buf), 0),
			 sizeof(buf));
	assert_int_equal(buf[0], 'w');
	assert_int_equal(buf[sizeof(buf) - 1], 'w');
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	done_machine(e);
}

/* ---- interrupts ------------------------------------------------------ */

struct lkcall {
	struct vqf_gdrv_call cl;	/* first */
	struct fuse_lk_in li;
	int done, result;
};

static void lk_done(void *ctx, struct vqf_gdrv_call *cl)
{
	struct lkcall *l = (struct lkcall *)cl;
	struct group *g = ctx;

	pthread_mutex_lock(&g->lock);
	l->result = cl->result;
	l->done++;
	if (g->left)
		g->left--;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static void lk_init(struct lkcall *l, uint32_t opcode, uint64_t nodeid,
		    uint64_t fh, uint64_t owner, uint32_t type)
{
	memset(l, 0, sizeof(*l));
	l->li.fh = fh;
	l->li.owner = owner;
	l->li.lk.start = 0;
	l->li.lk.end = 99;
	l->li.lk.type = type;
	vqf_req_init(&l->cl.req, opcode, nodeid, 0);
	vqf_req_add_in(&l->cl.req, &l->li, sizeof(l->li));
}

static short host_lock_type(struct e2e *e, const char *name)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 100 };
	int fd = open(e2e_host(e, name), O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_OFD_GETLK, &fl), 0);
	close(fd);
	return fl.l_type;
}

/*
 * valgrind (3.19 here) does not treat fcntl(F_OFD_SETLKW) as a blocking
 * call: the device worker that waits in it keeps valgrind's big lock and
 * every other thread stalls.  The blocked-request cases run plain and
 * under the sanitizers only.
 */
struct blocked {
	struct e2e *e;
	uint64_t nodeid, fh;
	int timeout_ms, result;
};

static void *blocked_call(void *arg)
{
	struct blocked *b = arg;
	struct lkcall l;

	lk_init(&l, FUSE_SETLKW, b->nodeid, b->fh, 0x7777, F_WRLCK);
	b->result = vqf_gdrv_call(b->e->g, &l.cl, b->timeout_ms);
	return NULL;
}

/*
 * A request that really waits in the server - SETLKW behind a lock the
 * guest itself holds - interrupted while the device works on it.
 */
static void test_interrupt_blocked(void **state)
{
	struct e2e *e = machine(1, 16, 2);
	struct vqf_sim_stats s0, s1;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 100 };
	struct lkcall l, un;
	struct group grp;
	struct blocked b;
	pthread_t thr;
	u64 nodeid;
	uint64_t fh;
	int fd;

	(void)state;
	assert_int_equal(e2e_host_write(e2e_host(e, "lk"), "x", 1, 0644), 0);
	fd = vqf_gcli_open(e->c, "lk", O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_lock(e->c, fd, F_OFD_SETLK, &fl), 0);
	assert_int_equal(vqf_gcli_get_nodeid(e->c, "lk", &nodeid), 0);
	assert_int_equal(raw_open(e, nodeid, O_RDWR, &fh), 0);

	s0 = e2e_stats(e);
	group_init(&grp, 1);
	lk_init(&l, FUSE_SETLKW, nodeid, fh, 0x7777, F_WRLCK);
	assert_int_equal(vqf_gdrv_submit(e->g, &l.cl, lk_done, &grp), 0);
	/* It waits in a device worker... */
	assert_false(group_wait(&grp, 0, 1));
	assert_int_equal(l.done, 0);
	assert_int_equal(vqf_gdrv_inflight(e->g), 1);
	/* ...is interrupted (hiprio is served while the worker waits)... */
	assert_int_equal(vqf_gdrv_interrupt(e->g, &l.cl), 0);
	for (int i = 0; i < WAIT_S * 100 &&
	     e2e_stats(e).dev.hiprio == s0.dev.hiprio; i++)
		sleep_ms(10);
	s1 = e2e_stats(e);
	assert_int_equal(s1.drv.interrupts_sent - s0.drv.interrupts_sent, 1);
	assert_true(s1.dev.hiprio > s0.dev.hiprio);
	/* ...and ends with EINTR while the lock is still held: the
	 * passthrough's lock wait watches for interrupts.
	 */
	assert_true(group_wait(&grp, 0, WAIT_S));
	assert_int_equal(l.done, 1);
	assert_int_equal(l.result, -EINTR);
	assert_int_equal(host_lock_type(e, "lk"), F_WRLCK);	/* ours */
	fl.l_type = F_UNLCK;
	assert_int_equal(vqf_gcli_lock(e->c, fd, F_OFD_SETLK, &fl), 0);
	/* Completed: nothing left to interrupt. */
	assert_int_equal(vqf_gdrv_interrupt(e->g, &l.cl), -ENOENT);
	assert_int_equal(l.done, 1);

	/* vqf_gdrv_call with a timeout interrupts on its own. */
	fl.l_type = F_WRLCK;
	lk_init(&un, FUSE_SETLK, nodeid, fh, 0x7777, F_UNLCK);
	assert_int_equal(vqf_gdrv_call(e->g, &un.cl, -1), 0);
	assert_int_equal(vqf_gcli_lock(e->c, fd, F_OFD_SETLK, &fl), 0);
	s0 = e2e_stats(e);
	b = (struct blocked){ .e = e, .nodeid = nodeid, .fh = fh,
			      .timeout_ms = 100, .result = 1 };
	assert_int_equal(pthread_create(&thr, NULL, blocked_call, &b), 0);
	for (int i = 0; i < WAIT_S * 100 && e2e_stats(e).drv.interrupts_sent ==
	     s0.drv.interrupts_sent; i++)
		sleep_ms(10);
	/* One, or more: it is sent again until the request ends. */
	assert_true(e2e_stats(e).drv.interrupts_sent -
		    s0.drv.interrupts_sent >= 1);
	join_bounded(thr, WAIT_S);
	assert_int_equal(b.result, -EINTR);
	fl.l_type = F_UNLCK;
	assert_int_equal(vqf_gcli_lock(e->c, fd, F_OFD_SETLK, &fl), 0);
	assert_int_equal(vqf_gdrv_call(e->g, &un.cl, -1), 0);

	assert_int_equal(raw_release(e, nodeid, fh), 0);
	vqf_gcli_put_nodeid(e->c, nodeid);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	s1 = e2e_stats(e);
	assert_int_equal(s1.drv.submitted, s1.drv.completed);
	assert_int_equal(s1.drv.bad_replies, 0);
	assert_int_equal(vqf_gdrv_inflight(e->g), 0);
	done_machine(e);
	group_destroy(&grp);
}

/* INTERRUPTs racing ordinary requests: each still completes once. */
static void test_interrupt_storm(void **state)
{
	unsigned int i, n = scale(400), sent = 0, late = 0;
	struct e2e *e = machine(2, 8, 2);
	struct acall *calls = calloc(n, sizeof(*calls));
	struct vqf_sim_stats s0, s1;
	struct group grp;
	int ret;

	(void)state;
	assert_non_null(calls);
	s0 = e2e_stats(e);
	group_init(&grp, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(acall_getattr(e, &calls[i], &grp,
					       FUSE_ROOT_ID), 0);
		ret = vqf_gdrv_interrupt(e->g, &calls[i].cl);
		if (ret == 0)
			sent++;
		else if (ret == -ENOENT)
			late++;
		else
			fail_msg("vqf_gdrv_interrupt: %d", ret);
	}
	assert_true(group_wait(&grp, 0, WAIT_S));
	for (i = 0; i < n; i++) {
		assert_int_equal(calls[i].done, 1);
		assert_true(calls[i].result == 0 ||
			    calls[i].result == -EINTR);
	}
	s1 = e2e_stats(e);
	assert_int_equal(sent + late, n);
	assert_int_equal(s1.drv.interrupts_sent - s0.drv.interrupts_sent,
			 sent);
	assert_int_equal(s1.drv.submitted, s1.drv.completed);
	assert_int_equal(s1.drv.bad_replies, 0);
	assert_int_equal(s1.dev.refused, 0);
	/* Those that found their request answered were dropped before
	 * libfuse (it would keep them: leaked at session end).
	 */
	assert_true(s1.be.interrupt_stale - s0.be.interrupt_stale <= sent);
	print_message("interrupt storm: %u INTERRUPTs sent, %u too late in "
		      "the driver, %llu dropped as stale by the backend\n",
		      sent, late, (unsigned long long)
		      (s1.be.interrupt_stale - s0.be.interrupt_stale));
	free(calls);
	done_machine(e);
	group_destroy(&grp);
}

/* ---- many queues, many workers, many threads ----------------------------- */

struct qtrace {
	u64 added[8];
	u64 completed;
};

static void trace_fn(void *ctx, enum vqf_gdrv_ev ev, u64 unique,
		     u32 opcode, unsigned int queue)
{
	struct qtrace *t = ctx;

	(void)unique;
	(void)opcode;
	if (ev == VQF_EV_ADDED && queue < 8)
		__atomic_add_fetch(&t->added[queue], 1, __ATOMIC_RELAXED);
	if (ev == VQF_EV_COMPLETED)
		__atomic_add_fetch(&t->completed, 1, __ATOMIC_RELAXED);
}

static void *mixed_loop(void *arg)
{
	struct worker *w = arg;
	struct vqf_gcli *c = w->e->c;
	char dir[32], a[48], b[48], buf[4096], got[4096];
	unsigned int i;
	struct stat st;
	int fd, ret;

	snprintf(dir, sizeof(dir), "t%u", w->id);
	ret = vqf_gcli_mkdir(c, dir, 0755);
	if (ret)
		bad(w, "mkdir", ret);
	for (i = 0; i < w->iters && !w->bad; i++) {
		size_t len = 100 + (w->id * 977 + i * 131) % 4000;

		snprintf(a, sizeof(a), "%s/f%u", dir, i % 4);
		snprintf(b, sizeof(b), "%s/g%u", dir, i % 4);
		e2e_fill(buf, len, w->id * 100000 + i);
		fd = vqf_gcli_open(c, a, O_CREAT | O_RDWR | O_TRUNC, 0600);
		if (fd < 0) {
			bad(w, "open", fd);
			break;
		}
		if ((ret = (int)vqf_gcli_write(c, fd, buf, len)) !=
		    (int)len)
			bad(w, "write", ret);
		if ((ret = (int)vqf_gcli_pread(c, fd, got, sizeof(got), 0)) !=
		    (int)len || memcmp(got, buf, len))
			bad(w, "pread", ret);
		if ((ret = vqf_gcli_fstat(c, fd, &st)) || st.st_size !=
		    (off_t)len)
			bad(w, "fstat", ret);
		vqf_gcli_close(c, fd);
		if ((ret = vqf_gcli_rename(c, a, b, 0)))
			bad(w, "rename", ret);
		if ((ret = vqf_gcli_stat(c, a, &st)) != -ENOENT)
			bad(w, "stat gone", ret);
		if (i % 4 == 3) {
			unsigned int k;

			for (k = 0; k < 4; k++) {
				snprintf(b, sizeof(b), "%s/g%u", dir, k);
				if ((ret = vqf_gcli_unlink(c, b)))
					bad(w, "unlink", ret);
			}
		}
		w->ops++;
	}
	return NULL;
}

static int count_entries(void *ctx, const char *name, const struct stat *st)
{
	(void)st;
	if (strcmp(name, ".") && strcmp(name, ".."))
		(*(unsigned int *)ctx)++;
	return 0;
}

static void test_multiqueue(void **state)
{
	unsigned int i, q, nthr = 8, used = 0;
	struct qtrace tr = { { 0 }, 0 };
	struct vqf_sim_cfg cfg = { 0 };
	struct worker w[8];
	struct vqf_sim_stats s;
	struct e2e *e;
	u64 sum = 0;

	(void)state;
	cfg.queues = 4;
	cfg.threads = 4;
	cfg.queue_size = 16;
	cfg.drv.trace = trace_fn;
	cfg.drv.trace_ctx = &tr;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), 0);
	assert_int_equal(vqf_gdrv_num_request_queues(e->g), 4);
	memset(w, 0, sizeof(w));
	for (i = 0; i < nthr; i++) {
		w[i].e = e;
		w[i].id = i;
		w[i].iters = scale(80) & ~3u;
		assert_int_equal(pthread_create(&w[i].thr, NULL, mixed_loop,
						&w[i]), 0);
	}
	for (i = 0; i < nthr; i++)
		join_bounded(w[i].thr, 60);
	for (i = 0; i < nthr; i++) {
		unsigned int n = 0;
		char dir[32];

		if (w[i].bad)
			fail_msg("thread %u: %s returned %d", i, w[i].what,
				 w[i].first_bad);
		assert_int_equal(w[i].ops, w[i].iters);
		/* Every file was unlinked again: the directory is empty,
		 * on the host and for the guest.
		 */
		snprintf(dir, sizeof(dir), "t%u", i);
		assert_int_equal(vqf_gcli_readdir(e->c, dir, true,
						  count_entries, &n), 0);
		assert_int_equal(n, 0);
		assert_int_equal(rmdir(e2e_host(e, dir)), 0);
	}
	s = e2e_stats(e);
	assert_int_equal(s.drv.submitted, s.drv.completed);
	assert_int_equal(s.drv.failed, 0);
	assert_int_equal(s.drv.bad_replies, 0);
	assert_int_equal(s.dev.refused, 0);
	assert_int_equal(vqf_gdrv_inflight(e->g), 0);
	/* The trace saw every request complete; the queues all worked. */
	for (q = 0; q < 8; q++) {
		sum += tr.added[q];
		if (q >= 1 && tr.added[q])
			used++;
	}
	assert_true(tr.completed >= s.drv.completed);
	assert_true(sum >= s.drv.submitted);
	assert_true(used >= 2);
	assert_true(s.dev.workers_busy_max >= 1);
	print_message("multiqueue: %llu requests over %u queues "
		      "(%llu/%llu/%llu/%llu), up to %llu workers busy\n",
		      (unsigned long long)s.drv.submitted, used,
		      (unsigned long long)tr.added[1],
		      (unsigned long long)tr.added[2],
		      (unsigned long long)tr.added[3],
		      (unsigned long long)tr.added[4],
		      (unsigned long long)s.dev.workers_busy_max);
	done_machine(e);
}

/* ---- shutdown with requests in flight ---------------------------------- */

static void *hammer(void *arg)
{
	struct worker *w = arg;
	struct vqf_gcli *c = w->e->c;
	char name[32], buf[512];
	struct stat st;
	unsigned int i;
	int fd, ret;

	snprintf(name, sizeof(name), "h%u", w->id);
	fd = vqf_gcli_open(c, name, O_CREAT | O_RDWR, 0600);
	if (fd < 0) {
		bad(w, "open", fd);
		return NULL;
	}
	memset(buf, 'a' + (int)w->id, sizeof(buf));
	for (i = 0; !*w->stop && i < 1000000; i++) {
		switch (i % 3) {
		case 0:
			ret = (int)vqf_gcli_pwrite(c, fd, buf, sizeof(buf),
						   (off_t)(i % 16) * 512);
			if (ret == (int)sizeof(buf))
				ret = 0;
			break;
		case 1:
			ret = (int)vqf_gcli_pread(c, fd, buf, sizeof(buf), 0);
			if (ret >= 0)
				ret = 0;
			break;
		default:
			ret = vqf_gcli_stat(c, name, &st);
			break;
		}
		w->ops++;
		if (ret == -ENOTCONN)
			w->enotconn++;
		else if (ret == -EIO)
			w->eio++;	/* reported by the caller */
		else if (ret)
			bad(w, i % 3 == 0 ? "pwrite" : i % 3 == 1 ? "pread" :
			    "stat", ret);
		/* After the first -ENOTCONN, everything else must be. */
		if (w->enotconn && !ret)
			bad(w, "success after -ENOTCONN", ret);
		if (w->enotconn >= 3)
			break;
	}
	vqf_gcli_close(c, fd);
	return NULL;
}

static void test_shutdown_inflight(void **state)
{
	unsigned int i, n = scale(256), nthr = 6, ok = 0, gone = 0, eio = 0;
	struct e2e *e = machine(2, 8, 2);
	struct acall *calls = calloc(n, sizeof(*calls));
	struct worker w[6];
	volatile bool stop = false;
	struct vqf_sim_stats s;
	struct group grp;
	struct timespec t0, t1;
	int ret;

	(void)state;
	assert_non_null(calls);
	memset(w, 0, sizeof(w));
	for (i = 0; i < nthr; i++) {
		w[i].e = e;
		w[i].id = i;
		w[i].stop = &stop;
		assert_int_equal(pthread_create(&w[i].thr, NULL, hammer,
						&w[i]), 0);
	}
	sleep_ms(e2e_slow() ? 500 : 100);
	/* A burst the rings cannot hold, then the plug is pulled. */
	group_init(&grp, n);
	for (i = 0; i < n; i++) {
		ret = acall_getattr(e, &calls[i], &grp, FUSE_ROOT_ID);
		assert_int_equal(ret, 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	vqf_gdrv_shutdown(e->g);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < HANG_S);
	assert_true(group_wait(&grp, 0, WAIT_S));
	stop = true;
	for (i = 0; i < nthr; i++)
		join_bounded(w[i].thr, WAIT_S);

	for (i = 0; i < n; i++) {
		assert_int_equal(calls[i].done, 1);
		if (calls[i].result == 0)
			ok++;
		else if (calls[i].result == -ENOTCONN)
			gone++;
		else
			fail_msg("async call %u: %d", i, calls[i].result);
	}
	s = e2e_stats(e);
	for (i = 0; i < nthr; i++) {
		if (w[i].bad)
			fail_msg("thread %u: %s returned %d", i, w[i].what,
				 w[i].first_bad);
		assert_true(w[i].ops > 0);
		eio += w[i].eio;
	}
	assert_int_equal(s.drv.submitted, s.drv.completed + s.drv.failed);
	assert_int_equal(vqf_gdrv_inflight(e->g), 0);
	assert_false(vqf_gdrv_alive(e->g));
	/* Dead for good: calls, submits and forgets. */
	{
		struct acall late;

		assert_int_equal(raw_getattr(e, FUSE_ROOT_ID, NULL),
				 -ENOTCONN);
		assert_int_equal(acall_getattr(e, &late, &grp, FUSE_ROOT_ID),
				 -ENOTCONN);
		assert_int_equal(late.done, 0);
		assert_int_equal(vqf_gdrv_forget(e->g, 5, 1), -ENOTCONN);
		assert_int_equal(vqf_gdrv_interrupt(e->g, &late.cl), -ENOENT);
	}
	/* A second shutdown is a no-op. */
	vqf_gdrv_shutdown(e->g);
	print_message("shutdown: async %u ok, %u -ENOTCONN; driver %llu "
		      "submitted = %llu completed + %llu failed\n", ok, gone,
		      (unsigned long long)s.drv.submitted,
		      (unsigned long long)s.drv.completed,
		      (unsigned long long)s.drv.failed);
	free(calls);
	if (eio) {
		assert_true(s.dev.dev.reject[VQF_DEV_R_NO_INIT] > 0);
		done_machine(e);
		group_destroy(&grp);
		print_message("BUG (sim/device + sim/guest/gdrv.c shutdown): "
			      "%u call(s) racing vqf_gdrv_shutdown() got -EIO: "
			      "after DESTROY the device's parser is back to "
			      "'no INIT' (NO_INIT, replied EIO) while the "
			      "driver still accepts requests\n", eio);
		skip();
		return;
	}
	done_machine(e);
	group_destroy(&grp);
}

/*
 * Shutdown while requests wait inside the server: SETLKW behind a lock
 * the host holds keeps both device workers busy, more requests queue
 * behind them.  The driver must still come down and fail what it could
 * not finish; if it waits instead, the host lets go after a while so
 * that the test ends, and the wait is reported.
 */
struct shut {
	struct vqf_gdrv *g;
	pthread_mutex_t lock;	/* a lock, not atomics: helgrind sees it */
	bool done;
};

static bool shut_done(struct shut *sh)
{
	bool done;

	pthread_mutex_lock(&sh->lock);
	done = sh->done;
	pthread_mutex_unlock(&sh->lock);
	return done;
}

static void *shutdown_thread(void *arg)
{
	struct shut *sh = arg;

	vqf_gdrv_shutdown(sh->g);
	pthread_mutex_lock(&sh->lock);
	sh->done = true;
	pthread_mutex_unlock(&sh->lock);
	return NULL;
}

static void test_shutdown_blocked(void **state)
{
	unsigned int i, nlk = 3, n = 16, patience = e2e_slow() ? 20 : 3;
	struct e2e *e = machine(1, 16, 2);
	struct lkcall lk[3];
	struct acall *calls = calloc(n, sizeof(*calls));
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 0 };
	struct timespec t0, t1;
	struct vqf_sim_stats s;
	struct group grp;
	struct shut sh = { .g = e->g, .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t thr;
	bool hung = false;
	uint64_t fh;
	u64 nodeid;
	double took;
	int hfd;

	(void)state;
	assert_non_null(calls);
	assert_int_equal(e2e_host_write(e2e_host(e, "lk"), "x", 1, 0644), 0);
	hfd = open(e2e_host(e, "lk"), O_RDWR);
	assert_true(hfd >= 0);
	assert_int_equal(fcntl(hfd, F_OFD_SETLK, &fl), 0);
	assert_int_equal(vqf_gcli_get_nodeid(e->c, "lk", &nodeid), 0);
	vqf_gcli_put_nodeid(e->c, nodeid);
	assert_int_equal(raw_open(e, nodeid, O_RDWR, &fh), 0);

	group_init(&grp, nlk + n);
	for (i = 0; i < nlk; i++) {
		/* Read locks: they do not conflict with one another. */
		lk_init(&lk[i], FUSE_SETLKW, nodeid, fh, 0x100 + i, F_RDLCK);
		assert_int_equal(vqf_gdrv_submit(e->g, &lk[i].cl, lk_done,
						 &grp), 0);
	}
	for (i = 0; i < n; i++)
		assert_int_equal(acall_getattr(e, &calls[i], &grp,
					       FUSE_ROOT_ID), 0);
	sleep_ms(200);
	assert_int_equal(lk[0].done + lk[1].done + lk[2].done, 0);

	/* Another guest call racing the shutdown: refused, not EIO. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(pthread_create(&thr, NULL, shutdown_thread, &sh), 0);
	for (i = 0; i < patience * 100 &&
	     !shut_done(&sh); i++) {
		struct stat st;
		int r = vqf_gcli_stat(e->c, "lk", &st);

		assert_true(r == 0 || r == -ENOTCONN);
		sleep_ms(10);
	}
	hung = !shut_done(&sh);
	if (hung)
		close(hfd);	/* the server's lock wait ends now */
	join_bounded(thr, WAIT_S);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (hung)
		fail_msg("shutdown still waiting after %u s with %u SETLKW "
			 "blocked in the server", patience, nlk);
	assert_int_equal(vqf_gcli_stat(e->c, "lk", &(struct stat){ 0 }),
			 -ENOTCONN);
	assert_true(group_wait(&grp, 0, WAIT_S));
	/* The lock waits were interrupted; everything else was answered. */
	for (i = 0; i < nlk; i++) {
		assert_int_equal(lk[i].done, 1);
		assert_int_equal(lk[i].result, -EINTR);
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(calls[i].done, 1);
		assert_int_equal(calls[i].result, 0);
	}
	s = e2e_stats(e);
	assert_int_equal(s.drv.submitted, s.drv.completed + s.drv.failed);
	assert_true(s.drv.interrupts_sent >= nlk);
	assert_int_equal(s.drv.destroy_skipped, 0);
	assert_int_equal(vqf_gdrv_inflight(e->g), 0);
	close(hfd);
	free(calls);
	done_machine(e);
	group_destroy(&grp);
	print_message("shutdown with %u SETLKW blocked in the server: "
		      "%.2f s, interrupted after the grace period\n", nlk,
		      took);
}

/*
 * Inline kicks, no workers: the kicking thread is the device.  A SETLKW
 * that must wait would hold the only thread that could serve the unlock
 * or an INTERRUPT, so it is bounded and fails EDEADLK (fuzz_device D2).
 */
static void test_inline_lock_wait_bounded(void **state)
{
	struct vqf_sim_cfg cfg = { 0 };
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 0 };
	struct e2e *e = NULL;
	struct timespec t0, t1;
	int hfd, fd;

	(void)state;
	cfg.inline_kick = true;
	assert_int_equal(e2e_new(&e, &cfg, VQF_SIM_FS_VQFUSE), 0);
	assert_int_equal(e2e_host_write(e2e_host(e, "il"), "x", 1, 0644), 0);
	hfd = open(e2e_host(e, "il"), O_RDWR);
	assert_true(hfd >= 0);
	assert_int_equal(fcntl(hfd, F_OFD_SETLK, &fl), 0);
	fd = vqf_gcli_open(e->c, "il", O_RDWR, 0);
	assert_true(fd >= 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(vqf_gcli_lock(e->c, fd, F_SETLKW, &fl), -EDEADLK);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < HANG_S);
	assert_int_equal(e2e_stats(e).pt.lock_waits_bounded, 1);
	/* Free, it is granted at once. */
	close(hfd);
	assert_int_equal(vqf_gcli_lock(e->c, fd, F_SETLKW, &fl), 0);
	assert_int_equal(vqf_gcli_close(e->c, fd), 0);
	done_machine(e);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_full),
		cmocka_unit_test(test_forgets),
		cmocka_unit_test(test_forgets_small_ring),
		cmocka_unit_test(test_small_ring_writes),
		cmocka_unit_test(test_interrupt_blocked),
		cmocka_unit_test(test_interrupt_storm),
		cmocka_unit_test(test_multiqueue),
		cmocka_unit_test(test_shutdown_inflight),
		cmocka_unit_test(test_shutdown_blocked),
		cmocka_unit_test(test_inline_lock_wait_bounded),
	};

	e2e_pick_poll(argc, argv);
	/* A last resort: CI must not hang on a stuck machine. */
	alarm(e2e_slow() ? 900 : 120);
	return cmocka_run_group_tests_name("e2e_transport", tests, NULL,
					   NULL);
}
