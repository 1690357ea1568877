// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_guard_race.c - the device guard's waits (sim/device/vqf_guard.h),
 * driven through its API with no device around it.
 *
 * A FORGET that takes a node id to 0 and a RELEASE/RELEASEDIR that ends a
 * handle wait until no request in flight names it; INIT and DESTROY wait
 * for every checked request; a stop or a reset ends the waits.  Each
 * waiting call runs on a thread of its own.  What is asserted about time
 * is only ever "still blocked" after a short sleep (true on any machine
 * speed), after the guard's counter of that wait (forget_waits,
 * release_waits, session_waits) moved, so the thread is known to be
 * inside the wait, not merely not started; and "finished" within a
 * watchdog (60 s) that only turns a hang into a failure: never that
 * something happened within a time.
 *
 * Last, a fixed-seed randomized test (VQF_SEED overrides) runs LOOKUP and
 * OPEN/OPENDIR replies, FORGETs, BATCH_FORGETs, RELEASEs and requests on a
 * single thread against a model of lookup counts and handles, checking
 * every accept or refuse and the tables' sizes after every step.
 */
#define _GNU_SOURCE
#include "vqf_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#define WATCHDOG_S	60
/* "Still blocked" is checked after this many microseconds. */
#define SETTLE_US	30000

static bool under_valgrind(void)
{
	return getenv("VQF_UNDER_VALGRIND") != NULL;
}

static unsigned long long seed_from_env(void)
{
	const char *s = getenv("VQF_SEED");

	return s ? strtoull(s, NULL, 0) : 0x6a4dULL;
}

static u64 unique_next = 1;

/* ---- requests and replies -------------------------------------------- */

/* A request as lib/'s parser leaves it: header, fixed argument, names. */
static void req_init(struct vqf_dev_req *r, u32 op, u64 nodeid)
{
	memset(r, 0, sizeof(*r));
	r->in.opcode = op;
	r->in.nodeid = nodeid;
	r->in.unique = unique_next++ * 2;
	r->in.len = sizeof(r->in);
}

static void req_name(struct vqf_dev_req *r, const char *name)
{
	size_t len = strlen(name);

	memcpy(r->names, name, len + 1);
	r->name = r->names;
	r->name_len = (u32)len;
	r->in.len += (u32)len + 1;
}

static void req_lookup(struct vqf_dev_req *r, u64 parent, const char *name)
{
	req_init(r, FUSE_LOOKUP, parent);
	req_name(r, name);
}

static void req_getattr(struct vqf_dev_req *r, u64 node)
{
	req_init(r, FUSE_GETATTR, node);
	r->arg_size = sizeof(r->arg.getattr);
	r->in.len += r->arg_size;
}

static void req_open(struct vqf_dev_req *r, u64 node, bool dir)
{
	req_init(r, dir ? FUSE_OPENDIR : FUSE_OPEN, node);
	r->arg.open.flags = O_RDONLY | (dir ? O_DIRECTORY : 0);
	r->arg_size = sizeof(r->arg.open);
	r->in.len += r->arg_size;
}

/* READ of a file handle, READDIR of a directory's. */
static void req_read(struct vqf_dev_req *r, u64 node, u64 fh, bool dir)
{
	req_init(r, dir ? FUSE_READDIR : FUSE_READ, node);
	r->arg.read.fh = fh;
	r->arg.read.size = 4096;
	r->arg_size = sizeof(r->arg.read);
	r->in.len += r->arg_size;
}

static void req_release(struct vqf_dev_req *r, u64 node, u64 fh, bool dir)
{
	req_init(r, dir ? FUSE_RELEASEDIR : FUSE_RELEASE, node);
	r->arg.release.fh = fh;
	r->arg_size = sizeof(r->arg.release);
	r->in.len += r->arg_size;
}

static void req_session(struct vqf_dev_req *r, u32 op)
{
	req_init(r, op, 0);
	if (op == FUSE_INIT) {
		r->arg.init.major = FUSE_KERNEL_VERSION;
		r->arg.init.minor = FUSE_KERNEL_MINOR_VERSION;
		r->arg_size = sizeof(r->arg.init);
		r->in.len += r->arg_size;
	}
}

/* A FORGET as vqf_dev_flatten() lays it out; returns its length. */
struct flat_forget {
	struct fuse_in_header in;
	union {
		struct fuse_forget_in one;
		struct {
			struct fuse_batch_forget_in bf;
			struct fuse_forget_one e[8];
		} batch;
	};
};

static u32 flat_forget(struct flat_forget *f, u64 node, u64 nlookup)
{
	memset(f, 0, sizeof(*f));
	f->in.opcode = FUSE_FORGET;
	f->in.nodeid = node;
	f->in.unique = unique_next++ * 2;
	f->in.len = sizeof(f->in) + sizeof(f->one);
	f->one.nlookup = nlookup;
	return f->in.len;
}

static u32 flat_batch(struct flat_forget *f, const u64 *node,
		      const u64 *nlookup, u32 n)
{
	u32 i;

	memset(f, 0, sizeof(*f));
	f->in.opcode = FUSE_BATCH_FORGET;
	f->in.unique = unique_next++ * 2;
	f->batch.bf.count = n;
	for (i = 0; i < n; i++) {
		f->batch.e[i].nodeid = node[i];
		f->batch.e[i].nlookup = nlookup[i];
	}
	f->in.len = (u32)(sizeof(f->in) + sizeof(f->batch.bf) +
			  n * sizeof(f->batch.e[0]));
	return f->in.len;
}

/*
 * The backend's reply to @r: @err, or success with @plen bytes of
 * @payload.  Returns vqf_guard_reply()'s result.
 */
static int reply(struct vqf_guard *g, struct vqf_guard_tx *tx,
		 const struct vqf_dev_req *r, int err, const void *payload,
		 size_t plen)
{
	u8 buf[sizeof(struct fuse_out_header) + 256];
	struct fuse_out_header oh = { 0 };
	struct iovec iov;
	const void *own = NULL;
	u32 ownlen = 0;

	assert_true(plen <= sizeof(buf) - sizeof(oh));
	oh.len = (u32)(sizeof(oh) + (err ? 0 : plen));
	oh.error = err;
	oh.unique = r->in.unique;
	memcpy(buf, &oh, sizeof(oh));
	if (!err && plen)
		memcpy(buf + sizeof(oh), payload, plen);
	iov.iov_base = buf;
	iov.iov_len = oh.len;
	return vqf_guard_reply(g, tx, r, &iov, 1, oh.len, &own, &ownlen);
}

static int reply_entry(struct vqf_guard *g, struct vqf_guard_tx *tx,
		       const struct vqf_dev_req *r, u64 node, u32 mode)
{
	struct fuse_entry_out e = { 0 };

	e.nodeid = node;
	e.generation = 1;
	e.attr.ino = node;
	e.attr.mode = mode;
	return reply(g, tx, r, 0, &e, sizeof(e));
}

static int reply_open(struct vqf_guard *g, struct vqf_guard_tx *tx,
		      const struct vqf_dev_req *r, u64 fh)
{
	struct fuse_open_out o = { 0 };

	o.fh = fh;
	return reply(g, tx, r, 0, &o, sizeof(o));
}

static int reply_attr(struct vqf_guard *g, struct vqf_guard_tx *tx,
		      const struct vqf_dev_req *r)
{
	struct fuse_attr_out a = { 0 };

	a.attr.ino = r->in.nodeid;
	a.attr.mode = S_IFREG | 0644;
	return reply(g, tx, r, 0, &a, sizeof(a));
}

/* A request checked, answered with an empty success, done: its errno. */
static int roundtrip(struct vqf_guard *g, struct vqf_dev_req *r)
{
	struct vqf_guard_tx tx;
	int ret;

	vqf_guard_tx_init(&tx);
	ret = vqf_guard_request(g, r, &tx);
	if (!ret)
		assert_int_equal(reply(g, &tx, r, 0, NULL, 0), 0);
	vqf_guard_done(g, &tx);
	return ret;
}

/* LOOKUP(@parent, @name) answered with entry @node of type @mode. */
static void lookup(struct vqf_guard *g, u64 parent, const char *name,
		   u64 node, u32 mode)
{
	struct vqf_dev_req r;
	struct vqf_guard_tx tx;

	req_lookup(&r, parent, name);
	vqf_guard_tx_init(&tx);
	assert_int_equal(vqf_guard_request(g, &r, &tx), 0);
	assert_int_equal(reply_entry(g, &tx, &r, node, mode), 0);
	vqf_guard_done(g, &tx);
}

/* OPEN/OPENDIR of @node answered with handle @fh. */
static void open_fh(struct vqf_guard *g, u64 node, bool dir, u64 fh)
{
	struct vqf_dev_req r;
	struct vqf_guard_tx tx;

	req_open(&r, node, dir);
	vqf_guard_tx_init(&tx);
	assert_int_equal(vqf_guard_request(g, &r, &tx), 0);
	assert_int_equal(reply_open(g, &tx, &r, fh), 0);
	vqf_guard_done(g, &tx);
}

static int getattr_errno(struct vqf_guard *g, u64 node)
{
	struct vqf_dev_req r;

	req_getattr(&r, node);
	return roundtrip(g, &r);
}

static int read_errno(struct vqf_guard *g, u64 node, u64 fh, bool dir)
{
	struct vqf_dev_req r;

	req_read(&r, node, fh, dir);
	return roundtrip(g, &r);
}

/* A request checked (must pass) and left in flight in @tx. */
static void in_flight(struct vqf_guard *g, struct vqf_dev_req *r,
		      struct vqf_guard_tx *tx)
{
	vqf_guard_tx_init(tx);
	assert_int_equal(vqf_guard_request(g, r, tx), 0);
}

static struct vqf_guard_stats stats(struct vqf_guard *g)
{
	struct vqf_guard_stats st;

	vqf_guard_get_stats(g, &st);
	return st;
}

/* ---- calls that may wait, on a thread of their own ------------------- */

struct async {
	pthread_t thr;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;		/* under lock */
	bool forget;		/* vqf_guard_forget(), else _request() */
	struct vqf_guard *g;
	struct vqf_dev_req req;
	struct vqf_guard_tx tx;
	struct flat_forget flat;
	u32 flen;
	int ret;		/* vqf_guard_request()'s */
	u32 fret;		/* vqf_guard_forget()'s */
};

static void *async_main(void *arg)
{
	struct async *a = arg;

	if (a->forget)
		a->fret = vqf_guard_forget(a->g, &a->flat, a->flen);
	else
		a->ret = vqf_guard_request(a->g, &a->req, &a->tx);
	pthread_mutex_lock(&a->lock);
	a->finished = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

static struct async *async_new(struct vqf_guard *g)
{
	struct async *a = calloc(1, sizeof(*a));
	pthread_condattr_t ca;

	assert_non_null(a);
	a->g = g;
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &ca);
	pthread_condattr_destroy(&ca);
	vqf_guard_tx_init(&a->tx);
	return a;
}

static void async_start(struct async *a)
{
	assert_int_equal(pthread_create(&a->thr, NULL, async_main, a), 0);
}

static bool async_finished(struct async *a)
{
	bool f;

	pthread_mutex_lock(&a->lock);
	f = a->finished;
	pthread_mutex_unlock(&a->lock);
	return f;
}

/* True if @a has not returned after a short sleep (any machine speed). */
static bool still_blocked(struct async *a)
{
	usleep(SETTLE_US);
	return !async_finished(a);
}

/* Waits up to the watchdog for @a to return, then joins it. */
static void async_join(struct async *a)
{
	struct timespec ts;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += WATCHDOG_S;
	pthread_mutex_lock(&a->lock);
	while (!a->finished && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&a->cond, &a->lock, &ts);
	pthread_mutex_unlock(&a->lock);
	if (!async_finished(a))
		fail_msg("a guard call still blocked after %d s", WATCHDOG_S);
	assert_int_equal(pthread_join(a->thr, NULL), 0);
}

static void async_free(struct async *a)
{
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* A request that may wait, started: its state lives in the result. */
static struct async *start_request(struct vqf_guard *g,
				   const struct vqf_dev_req *r)
{
	struct async *a = async_new(g);

	a->req = *r;
	a->req.name = r->name ? a->req.names + (r->name - r->names) : NULL;
	async_start(a);
	return a;
}

static struct async *start_forget(struct vqf_guard *g,
				  const struct flat_forget *f, u32 flen)
{
	struct async *a = async_new(g);

	a->forget = true;
	a->flat = *f;
	a->flen = flen;
	async_start(a);
	return a;
}

/* FORGET @node @nlookup that must return without waiting: its result. */
static u32 forget_nowait(struct vqf_guard *g, u64 node, u64 nlookup)
{
	struct flat_forget f;
	struct async *a;
	u32 ret;

	a = start_forget(g, &f, flat_forget(&f, node, nlookup));
	async_join(a);
	ret = a->fret;
	async_free(a);
	return ret;
}

/* Joins request @a, ends it (vqf_guard_done()), frees it: its result. */
static int request_end(struct async *a)
{
	int ret;

	async_join(a);
	ret = a->ret;
	vqf_guard_done(a->g, &a->tx);
	async_free(a);
	return ret;
}

/* A request that must return without waiting: its result, ended. */
static int request_nowait(struct vqf_guard *g, const struct vqf_dev_req *r)
{
	return request_end(start_request(g, r));
}

/* Counter at @off of the stats reaches @want (the watchdog bounds it). */
static void wait_stat(struct vqf_guard *g, size_t off, u64 want)
{
	struct timespec t0, t;
	struct vqf_guard_stats st;
	u64 v;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		vqf_guard_get_stats(g, &st);
		memcpy(&v, (u8 *)&st + off, sizeof(v));
		if (v == want)
			return;
		assert_true(v < want);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > WATCHDOG_S)
			fail_msg("counter at %zu stays %llu, not %llu", off,
				 (unsigned long long)v,
				 (unsigned long long)want);
		usleep(1000);
	}
}

#define WAIT_STAT(g, field, want) \
	wait_stat(g, offsetof(struct vqf_guard_stats, field), want)

static int setup(void **state)
{
	struct vqf_guard *g;

	if (vqf_guard_new(NULL, &g))
		return -1;
	*state = g;
	return 0;
}

static int teardown(void **state)
{
	vqf_guard_free(*state);
	return 0;
}

/* ---- (1) FORGET to 0 waits for requests on its node ------------------ */

static void forget_waits_for_getattr(void **state)
{
	struct vqf_guard *g = *state;
	struct vqf_dev_req r1, r2, rg;
	struct vqf_guard_tx t1, t2;
	struct flat_forget f;
	struct vqf_guard_stats st;
	struct async *a;
	u32 flen;

	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	lookup(g, FUSE_ROOT_ID, "b", 3, S_IFREG | 0644);
	/* Two GETATTRs of node 2 in flight, one of node 3. */
	req_getattr(&r1, 2);
	in_flight(g, &r1, &t1);
	req_getattr(&r2, 2);
	in_flight(g, &r2, &t2);
	assert_int_equal(getattr_errno(g, 3), 0);

	flen = flat_forget(&f, 2, 1);
	a = start_forget(g, &f, flen);
	WAIT_STAT(g, forget_waits, 1);
	assert_true(still_blocked(a));

	/* Waiting, the id is no longer the guest's: a new request on it is
	 * refused, a second FORGET dropped without waiting.
	 */
	assert_int_equal(getattr_errno(g, 2), -ESTALE);
	assert_int_equal(forget_nowait(g, 2, 1), 0);
	st = stats(g);
	assert_int_equal(st.node_unknown, 1);
	assert_int_equal(st.forget_unknown, 1);
	/* Requests on other nodes and the first reply do not end it. */
	assert_int_equal(getattr_errno(g, 3), 0);
	assert_int_equal(reply_attr(g, &t1, &r1), 0);
	assert_true(still_blocked(a));
	/* Nor the first of the two done: the second still names node 2. */
	vqf_guard_done(g, &t1);
	vqf_guard_done(g, &t1);		/* idempotent */
	assert_true(still_blocked(a));
	vqf_guard_done(g, &t2);
	async_join(a);
	/* Passed on to the backend as it was. */
	assert_int_equal(a->fret, flen);
	assert_int_equal(a->flat.one.nlookup, 1);
	assert_int_equal(a->flat.in.nodeid, 2);
	async_free(a);

	assert_int_equal(getattr_errno(g, 2), -ESTALE);
	assert_int_equal(getattr_errno(g, 3), 0);
	st = stats(g);
	assert_int_equal(st.forget_waits, 1);
	assert_int_equal(st.forgets, 1);
	assert_int_equal(st.node_unknown, 2);
	assert_int_equal(st.nodes, 1);
	assert_int_equal(st.stop_dropped, 0);

	/* A LOOKUP names its parent: a FORGET of the parent waits for it. */
	lookup(g, FUSE_ROOT_ID, "d", 4, S_IFDIR | 0755);
	req_lookup(&rg, 4, "x");
	in_flight(g, &rg, &t1);
	a = start_forget(g, &f, flat_forget(&f, 4, 5));	/* clamped: 1 */
	WAIT_STAT(g, forget_waits, 2);
	assert_true(still_blocked(a));
	/* Its reply arrives while the FORGET waits: node 5 is counted. */
	assert_int_equal(reply_entry(g, &t1, &rg, 5, S_IFREG | 0644), 0);
	vqf_guard_done(g, &t1);
	async_join(a);
	assert_int_equal(a->fret, flen);
	assert_int_equal(a->flat.one.nlookup, 1);
	async_free(a);
	assert_int_equal(getattr_errno(g, 4), -ESTALE);
	assert_int_equal(getattr_errno(g, 5), 0);
	st = stats(g);
	assert_int_equal(st.forget_clamped, 1);
	assert_int_equal(st.nodes, 2);
}

/* The same through BATCH_FORGET: only the entry to 0 of a busy id waits. */
static void batch_forget_waits(void **state)
{
	struct vqf_guard *g = *state;
	const u64 ids[4] = { 2, 3, 9, 2 }, counts[4] = { 1, 1, 1, 1 };
	struct vqf_dev_req r;
	struct vqf_guard_tx t;
	struct flat_forget f;
	struct vqf_guard_stats st;
	struct async *a;
	u32 flen;

	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	lookup(g, FUSE_ROOT_ID, "b", 3, S_IFREG | 0644);
	lookup(g, FUSE_ROOT_ID, "b", 3, S_IFREG | 0644);
	req_getattr(&r, 2);
	in_flight(g, &r, &t);
	flen = flat_batch(&f, ids, counts, 4);
	a = start_forget(g, &f, flen);
	WAIT_STAT(g, forget_waits, 1);
	assert_true(still_blocked(a));
	vqf_guard_done(g, &t);
	async_join(a);
	/* 2 (1), 3 (1) passed; 9 unknown and the second 2 dropped. */
	assert_int_equal(a->fret, sizeof(f.in) + sizeof(f.batch.bf) +
			 2 * sizeof(f.batch.e[0]));
	assert_int_equal(a->flat.in.len, a->fret);
	assert_int_equal(a->flat.batch.bf.count, 2);
	assert_int_equal(a->flat.batch.e[0].nodeid, 2);
	assert_int_equal(a->flat.batch.e[0].nlookup, 1);
	assert_int_equal(a->flat.batch.e[1].nodeid, 3);
	assert_int_equal(a->flat.batch.e[1].nlookup, 1);
	async_free(a);
	st = stats(g);
	assert_int_equal(st.forgets, 2);
	assert_int_equal(st.forget_unknown, 2);
	assert_int_equal(st.forget_waits, 1);
	assert_int_equal(getattr_errno(g, 2), -ESTALE);
	assert_int_equal(getattr_errno(g, 3), 0);
}

/* ---- (2) RELEASE/RELEASEDIR waits for requests on its handle --------- */

static void release_waits_kind(struct vqf_guard *g, bool dir)
{
	const u64 node = 2, fh = dir ? 0 : 7;	/* 0 is a handle too */
	struct vqf_dev_req rr, rr2, rl;
	struct vqf_guard_tx tr, tr2;
	struct vqf_guard_stats st;
	struct async *a;

	lookup(g, FUSE_ROOT_ID, "n", node, dir ? S_IFDIR | 0755 :
	       S_IFREG | 0644);
	open_fh(g, node, dir, fh);
	req_read(&rr, node, fh, dir);
	in_flight(g, &rr, &tr);
	req_read(&rr2, node, fh, dir);
	in_flight(g, &rr2, &tr2);

	req_release(&rl, node, fh, dir);
	a = start_request(g, &rl);
	WAIT_STAT(g, release_waits, 1);
	assert_true(still_blocked(a));
	/* Released, the handle is no longer the guest's. */
	assert_int_equal(read_errno(g, node, fh, dir), -EBADF);
	assert_int_equal(reply(g, &tr, &rr, 0, NULL, 0), 0);
	vqf_guard_done(g, &tr);
	assert_true(still_blocked(a));
	vqf_guard_done(g, &tr2);
	async_join(a);
	assert_int_equal(a->ret, 0);
	/* The RELEASE itself is in flight until done (INIT waits for it). */
	assert_true(a->tx.checked);
	vqf_guard_done(g, &a->tx);
	async_free(a);

	assert_int_equal(read_errno(g, node, fh, dir), -EBADF);
	req_release(&rl, node, fh, dir);
	assert_int_equal(roundtrip(g, &rl), -EBADF);
	st = stats(g);
	assert_int_equal(st.release_waits, 1);
	assert_int_equal(st.handle_unknown, 3);
	assert_int_equal(st.handles, 0);
	assert_int_equal(st.stop_dropped, 0);
	/* The node is still the guest's; forgotten, nothing is left. */
	assert_int_equal(getattr_errno(g, node), 0);
	assert_int_equal(forget_nowait(g, node, 1),
			 sizeof(struct fuse_in_header) +
			 sizeof(struct fuse_forget_in));
	assert_int_equal(stats(g).nodes, 0);
}

static void release_waits_for_read(void **state)
{
	release_waits_kind(*state, false);
}

static void releasedir_waits_for_readdir(void **state)
{
	release_waits_kind(*state, true);
}

/*
 * One node, one handle value, both kinds: the node's type changed between
 * an OPEN and an OPENDIR (a backend that reused the id), and both handed
 * out fh 0.  A GETATTR by handle (either kind) pins the file's, a READDIR
 * the directory's: each done must unpin the one its request pinned.
 */
static void both_kinds_unpin_their_own(void **state)
{
	struct vqf_guard *g = *state;
	struct vqf_dev_req rg, rd, rl;
	struct vqf_guard_tx tg, td;
	struct async *a;

	lookup(g, FUSE_ROOT_ID, "f", 2, S_IFREG | 0644);
	open_fh(g, 2, false, 0);
	lookup(g, FUSE_ROOT_ID, "d", 2, S_IFDIR | 0755);
	open_fh(g, 2, true, 0);
	assert_int_equal(stats(g).handles, 2);

	req_getattr(&rg, 2);
	rg.arg.getattr.getattr_flags = FUSE_GETATTR_FH;
	rg.arg.getattr.fh = 0;
	in_flight(g, &rg, &tg);
	req_read(&rd, 2, 0, true);
	in_flight(g, &rd, &td);
	vqf_guard_done(g, &td);

	/* The GETATTR still uses the file's handle: its RELEASE waits. */
	req_release(&rl, 2, 0, false);
	a = start_request(g, &rl);
	WAIT_STAT(g, release_waits, 1);
	assert_true(still_blocked(a));
	vqf_guard_done(g, &tg);
	assert_int_equal(request_end(a), 0);

	/* Nothing uses the directory's: its RELEASEDIR does not wait. */
	req_release(&rl, 2, 0, true);
	assert_int_equal(request_nowait(g, &rl), 0);
	assert_int_equal(stats(g).release_waits, 1);
	assert_int_equal(stats(g).handles, 0);
}

/* ---- (3) INIT and DESTROY wait for every checked request ------------- */

static void session_waits_op(struct vqf_guard *g, u32 op)
{
	struct vqf_dev_req rg, rl, rs;
	struct vqf_guard_tx tg, tl;
	struct vqf_guard_stats st;
	struct async *a;

	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	open_fh(g, 2, false, 5);
	open_fh(g, 2, false, 6);
	req_getattr(&rg, 2);
	in_flight(g, &rg, &tg);
	/* A RELEASE that did not wait, not yet done. */
	req_release(&rl, 2, 6, false);
	in_flight(g, &rl, &tl);

	req_session(&rs, op);
	a = start_request(g, &rs);
	WAIT_STAT(g, session_waits, 1);
	assert_true(still_blocked(a));
	vqf_guard_done(g, &tg);
	assert_true(still_blocked(a));
	assert_int_equal(stats(g).resets, 0);
	vqf_guard_done(g, &tl);
	assert_int_equal(request_end(a), 0);

	st = stats(g);
	assert_int_equal(st.resets, 1);
	assert_int_equal(st.nodes, 0);
	assert_int_equal(st.handles, 0);
	assert_int_equal(getattr_errno(g, 2), -ESTALE);
	/* The root is the guest's in every session. */
	assert_int_equal(getattr_errno(g, FUSE_ROOT_ID), 0);

	/* Nothing in flight: no wait.  (Run bounded all the same.) */
	assert_int_equal(request_nowait(g, &rs), 0);
	st = stats(g);
	assert_int_equal(st.resets, 2);
	assert_int_equal(st.session_waits, 1);
}

static void init_waits(void **state)
{
	session_waits_op(*state, FUSE_INIT);
}

static void destroy_waits(void **state)
{
	session_waits_op(*state, FUSE_DESTROY);
}

/*
 * An INIT and a RELEASE both waiting for one READ: when it is done, either
 * the RELEASE goes first (passed, and the INIT waits for it in turn) or
 * the INIT does (the RELEASE's session is gone: ESHUTDOWN).  Both orders
 * are right; neither may leave the other waiting.
 */
static void init_and_release_race(void **state)
{
	struct vqf_guard *g = *state;
	struct vqf_dev_req rr, rl, rs;
	struct vqf_guard_tx tr;
	struct vqf_guard_stats st;
	struct async *rel, *ini;

	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	open_fh(g, 2, false, 7);
	req_read(&rr, 2, 7, false);
	in_flight(g, &rr, &tr);
	req_release(&rl, 2, 7, false);
	rel = start_request(g, &rl);
	WAIT_STAT(g, release_waits, 1);
	req_session(&rs, FUSE_INIT);
	ini = start_request(g, &rs);
	WAIT_STAT(g, session_waits, 1);
	assert_true(still_blocked(ini));
	assert_true(still_blocked(rel));

	vqf_guard_done(g, &tr);
	async_join(rel);
	if (rel->ret == 0) {
		assert_true(rel->tx.checked);
		assert_true(still_blocked(ini));
		vqf_guard_done(g, &rel->tx);
	} else {
		assert_int_equal(rel->ret, -ESHUTDOWN);
		assert_int_equal(stats(g).stop_dropped, 1);
	}
	async_join(ini);
	assert_int_equal(ini->ret, 0);
	async_free(rel);
	async_free(ini);
	st = stats(g);
	assert_int_equal(st.resets, 1);
	assert_int_equal(st.nodes, 0);
	assert_int_equal(st.handles, 0);
	assert_int_equal(getattr_errno(g, 2), -ESTALE);
}

/* ---- (4) a stop or a reset ends the waits ---------------------------- */

static void stop_ends_waits(void **state)
{
	struct vqf_guard *g = *state;
	struct vqf_dev_req rr, rg, rl, rs, rr2;
	struct vqf_guard_tx tr, tg, tr2;
	struct flat_forget f;
	struct vqf_guard_stats st;
	struct async *rel, *fgt, *ini;

	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	lookup(g, FUSE_ROOT_ID, "b", 3, S_IFREG | 0644);
	open_fh(g, 2, false, 7);
	open_fh(g, 2, false, 8);
	req_read(&rr, 2, 7, false);
	in_flight(g, &rr, &tr);
	req_getattr(&rg, 3);
	in_flight(g, &rg, &tg);

	req_release(&rl, 2, 7, false);
	rel = start_request(g, &rl);
	WAIT_STAT(g, release_waits, 1);
	fgt = start_forget(g, &f, flat_forget(&f, 3, 1));
	WAIT_STAT(g, forget_waits, 1);
	req_session(&rs, FUSE_INIT);
	ini = start_request(g, &rs);
	WAIT_STAT(g, session_waits, 1);
	assert_true(still_blocked(rel));
	assert_true(still_blocked(fgt));
	assert_true(still_blocked(ini));

	vqf_guard_stop(g);
	async_join(rel);
	async_join(fgt);
	async_join(ini);
	assert_int_equal(rel->ret, -ESHUTDOWN);
	assert_int_equal(rel->ret, -VQF_GUARD_E_STOP);
	assert_false(rel->tx.checked);
	vqf_guard_done(g, &rel->tx);
	assert_int_equal(fgt->fret, 0);		/* dropped */
	assert_int_equal(ini->ret, 0);
	st = stats(g);
	assert_int_equal(st.stop_dropped, 2);
	assert_int_equal(st.resets, 1);
	async_free(rel);
	async_free(fgt);
	async_free(ini);
	/* The INIT emptied the table, but the stop goes on until a reset. */
	assert_int_equal(st.nodes, 0);
	assert_int_equal(st.handles, 0);
	/* Done after the reset: ignored (pins of the old session). */
	vqf_guard_done(g, &tr);
	vqf_guard_done(g, &tg);

	/* Stopped: a RELEASE and a FORGET that would wait do not. */
	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	open_fh(g, 2, false, 9);
	req_read(&rr2, 2, 9, false);
	in_flight(g, &rr2, &tr2);
	req_release(&rl, 2, 9, false);
	assert_int_equal(request_nowait(g, &rl), -ESHUTDOWN);
	assert_int_equal(forget_nowait(g, 2, 1), 0);
	assert_int_equal(stats(g).stop_dropped, 4);
	/* The READ ends: its pins go, and with them what they kept. */
	vqf_guard_done(g, &tr2);
	st = stats(g);
	assert_int_equal(st.nodes, 0);
	assert_int_equal(st.handles, 0);

	/* A reset ends the stop: waits are back. */
	vqf_guard_reset(g);
	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	open_fh(g, 2, false, 9);
	req_read(&rr2, 2, 9, false);
	in_flight(g, &rr2, &tr2);
	rel = start_request(g, &rl);
	WAIT_STAT(g, release_waits, 3);
	assert_true(still_blocked(rel));
	vqf_guard_done(g, &tr2);
	assert_int_equal(request_end(rel), 0);
	st = stats(g);
	assert_int_equal(st.stop_dropped, 4);
	assert_int_equal(st.handles, 0);
	assert_int_equal(st.nodes, 1);
}

/* A device reset while a RELEASE and a FORGET wait: both end, refused. */
static void reset_ends_waits(void **state)
{
	struct vqf_guard *g = *state;
	struct vqf_dev_req rr, rg, rl, rk;
	struct vqf_guard_tx tr, tg, tk;
	struct flat_forget f;
	struct vqf_guard_stats st;
	struct async *rel, *fgt;

	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	lookup(g, FUSE_ROOT_ID, "b", 3, S_IFREG | 0644);
	open_fh(g, 2, false, 7);
	req_read(&rr, 2, 7, false);
	in_flight(g, &rr, &tr);
	req_getattr(&rg, 3);
	in_flight(g, &rg, &tg);
	/* A LOOKUP checked before the reset, answered after it. */
	req_lookup(&rk, FUSE_ROOT_ID, "c");
	in_flight(g, &rk, &tk);

	req_release(&rl, 2, 7, false);
	rel = start_request(g, &rl);
	WAIT_STAT(g, release_waits, 1);
	fgt = start_forget(g, &f, flat_forget(&f, 3, 1));
	WAIT_STAT(g, forget_waits, 1);
	assert_true(still_blocked(rel));
	assert_true(still_blocked(fgt));

	vqf_guard_reset(g);
	async_join(rel);
	async_join(fgt);
	assert_int_equal(rel->ret, -VQF_GUARD_E_STOP);
	assert_int_equal(fgt->fret, 0);
	vqf_guard_done(g, &rel->tx);
	async_free(rel);
	async_free(fgt);
	st = stats(g);
	assert_int_equal(st.stop_dropped, 2);
	assert_int_equal(st.resets, 1);

	/* The old session's reply records nothing; its dones are ignored. */
	assert_int_equal(reply_entry(g, &tk, &rk, 4, S_IFREG | 0644), 0);
	vqf_guard_done(g, &tk);
	vqf_guard_done(g, &tr);
	vqf_guard_done(g, &tg);
	assert_int_equal(getattr_errno(g, 4), -ESTALE);
	assert_int_equal(getattr_errno(g, 2), -ESTALE);
	st = stats(g);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.nodes, 0);
	assert_int_equal(st.handles, 0);

	/* Not a stop: the next waits wait. */
	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	req_getattr(&rg, 2);
	in_flight(g, &rg, &tg);
	fgt = start_forget(g, &f, flat_forget(&f, 2, 1));
	WAIT_STAT(g, forget_waits, 2);
	assert_true(still_blocked(fgt));
	vqf_guard_done(g, &tg);
	async_join(fgt);
	assert_int_equal(fgt->fret, sizeof(f.in) + sizeof(f.one));
	async_free(fgt);
	assert_int_equal(stats(g).nodes, 0);
}

/* ---- (6) hostile values: a backend's READDIRPLUS, a guest's forgets --- */

/* Appends a direntplus record to @buf at *@off; @namelen may lie. */
static void dirplus_add(u8 *buf, size_t *off, u64 node, u32 mode,
			const char *name, u32 namelen)
{
	struct fuse_direntplus dp;

	memset(&dp, 0, sizeof(dp));
	dp.entry_out.nodeid = node;
	dp.entry_out.attr.mode = mode;
	dp.dirent.ino = node;
	dp.dirent.namelen = namelen;
	memcpy(buf + *off, &dp, sizeof(dp));
	memcpy(buf + *off + FUSE_NAME_OFFSET_DIRENTPLUS, name, strlen(name));
	*off += FUSE_DIRENTPLUS_SIZE(&dp);
}

static void hostile_values(void **state)
{
	struct vqf_guard *g = *state;
	u8 buf[sizeof(struct fuse_out_header) + 2048];
	struct fuse_out_header oh = { 0 };
	const u64 ids[2] = { 10, 12 }, counts[2] = { 1, 1 };
	size_t off = sizeof(oh);
	struct vqf_dev_req r;
	struct vqf_guard_tx t;
	struct flat_forget f;
	struct vqf_guard_stats st;
	struct iovec iov;
	const void *own;
	u32 ownlen, flen;

	open_fh(g, FUSE_ROOT_ID, true, 1);
	/* Counted: "x"; a name with '/' (its id, not its place); skipped:
	 * ".", "..", a negative entry; then a name running past the reply
	 * ends the walk, so "y" after it is never read.
	 */
	dirplus_add(buf, &off, 10, S_IFDIR | 0755, "x", 1);
	dirplus_add(buf, &off, 11, S_IFDIR | 0755, ".", 1);
	dirplus_add(buf, &off, 11, S_IFDIR | 0755, "..", 2);
	dirplus_add(buf, &off, 0, S_IFREG | 0644, "neg", 3);
	dirplus_add(buf, &off, 12, S_IFDIR | 0755, "a/b", 3);
	dirplus_add(buf, &off, 13, S_IFREG | 0644, "z", 200);
	off = off - FUSE_DIRENTPLUS_SIZE(&(struct fuse_direntplus){
		.dirent.namelen = 200 }) + FUSE_NAME_OFFSET_DIRENTPLUS + 1;
	dirplus_add(buf, &off, 14, S_IFREG | 0644, "y", 1);
	req_read(&r, FUSE_ROOT_ID, 1, true);
	r.in.opcode = FUSE_READDIRPLUS;
	in_flight(g, &r, &t);
	oh.len = (u32)off;
	oh.unique = r.in.unique;
	memcpy(buf, &oh, sizeof(oh));
	iov.iov_base = buf;
	iov.iov_len = off;
	assert_int_equal(vqf_guard_reply(g, &t, &r, &iov, 1, off, &own,
					 &ownlen), 0);
	vqf_guard_done(g, &t);
	st = stats(g);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.nodes, 2);
	assert_int_equal(getattr_errno(g, 10), 0);
	assert_int_equal(getattr_errno(g, 12), 0);
	assert_int_equal(getattr_errno(g, 11), -ESTALE);
	assert_int_equal(getattr_errno(g, 13), -ESTALE);
	assert_int_equal(getattr_errno(g, 14), -ESTALE);
	/* "a/b" got no place: LOOKUP ".." in it is not answered. */
	req_lookup(&r, 12, "..");
	assert_int_equal(roundtrip(g, &r), -ENOENT);
	assert_int_equal(stats(g).dotdot_unknown, 1);

	/* Forgets of id 0, of the root (no entry of it handed out), with
	 * count 0, and past a huge count: dropped or cut, never passed on.
	 */
	assert_int_equal(forget_nowait(g, 0, 1), 0);
	assert_int_equal(forget_nowait(g, FUSE_ROOT_ID, 1), 0);
	assert_int_equal(forget_nowait(g, 10, 0), 0);
	assert_int_equal(stats(g).forget_unknown, 3);
	flen = flat_forget(&f, 10, ~0ULL);
	assert_int_equal(vqf_guard_forget(g, &f, flen), flen);
	assert_int_equal(f.one.nlookup, 1);
	assert_int_equal(stats(g).forget_clamped, 1);
	/* A BATCH_FORGET whose count is past its buffer: the buffer's. */
	lookup(g, FUSE_ROOT_ID, "x", 10, S_IFDIR | 0755);
	flen = flat_batch(&f, ids, counts, 2);
	f.batch.bf.count = 1000;
	flen -= sizeof(f.batch.e[0]);
	assert_int_equal(vqf_guard_forget(g, &f, flen), flen);
	assert_int_equal(f.batch.bf.count, 1);
	assert_int_equal(f.batch.e[0].nodeid, 10);
	st = stats(g);
	assert_int_equal(st.forgets, 2);
	assert_int_equal(st.nodes, 1);	/* 12, never forgotten */
	assert_int_equal(getattr_errno(g, 12), 0);
}

/*
 * LOOKUP ".." where the parent's parent is no longer the guest's: refused
 * (ENOENT, dotdot_unknown), never sent up; the guard answers the rest.
 */
static void dotdot_parent_forgotten(void **state)
{
	struct vqf_guard *g = *state;
	struct vqf_dev_req r;
	struct vqf_guard_stats st;

	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFDIR | 0755);
	lookup(g, 2, "b", 3, S_IFDIR | 0755);
	lookup(g, 3, "c", 4, S_IFDIR | 0755);
	/* c's ".." is b, found in a. */
	req_lookup(&r, 4, "..");
	assert_int_equal(roundtrip(g, &r), 0);
	assert_int_equal(r.in.nodeid, 2);
	assert_string_equal(r.name, "b");
	assert_int_equal(forget_nowait(g, 2, 1),
			 sizeof(struct fuse_in_header) +
			 sizeof(struct fuse_forget_in));
	req_lookup(&r, 4, "..");
	assert_int_equal(roundtrip(g, &r), -VQF_GUARD_E_DOTDOT_UNKNOWN);
	assert_int_equal(r.in.nodeid, 4);	/* not rewritten */
	/* b's ".." is a: gone too.  The others go on. */
	req_lookup(&r, 3, "..");
	assert_int_equal(roundtrip(g, &r), -ENOENT);
	assert_int_equal(getattr_errno(g, 4), 0);
	st = stats(g);
	assert_int_equal(st.dotdot_unknown, 2);
	assert_int_equal(st.dotdot_parent, 1);
	assert_int_equal(st.node_unknown, 0);
}

/* A read-only guard: a writable DAX map is a change, a read-only one not. */
static void readonly_setupmapping(void **state)
{
	struct vqf_guard_cfg cfg = { .readonly = true };
	struct vqf_guard *g;
	struct vqf_dev_req r;
	int i;

	(void)state;
	assert_int_equal(vqf_guard_new(&cfg, &g), 0);
	lookup(g, FUSE_ROOT_ID, "f", 2, S_IFREG | 0644);
	open_fh(g, 2, false, 7);
	for (i = 0; i < 4; i++) {
		/* By handle and by node (VQF_FSDEV_FH_NONE). */
		req_init(&r, FUSE_SETUPMAPPING, 2);
		r.arg.setupmapping.fh = i & 1 ? ~0ULL : 7;
		r.arg.setupmapping.len = 4096;
		r.arg.setupmapping.flags = FUSE_SETUPMAPPING_FLAG_READ |
			(i & 2 ? FUSE_SETUPMAPPING_FLAG_WRITE : 0);
		r.arg_size = sizeof(r.arg.setupmapping);
		assert_int_equal(roundtrip(g, &r), i & 2 ? -EROFS : 0);
	}
	req_open(&r, 2, false);
	r.arg.open.flags = O_RDWR;
	assert_int_equal(roundtrip(g, &r), -EROFS);
	assert_int_equal(stats(g).readonly, 3);
	vqf_guard_free(g);
}

/* ---- (5) a FORGET not to 0, a RELEASE not the last, do not wait ------ */

static void partial_does_not_wait(void **state)
{
	struct vqf_guard *g = *state;
	struct vqf_dev_req rg, rr, rl;
	struct vqf_guard_tx tg, tr;
	struct vqf_guard_stats st;

	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	lookup(g, FUSE_ROOT_ID, "a", 2, S_IFREG | 0644);
	req_getattr(&rg, 2);
	in_flight(g, &rg, &tg);
	assert_int_equal(forget_nowait(g, 2, 1),
			 sizeof(struct fuse_in_header) +
			 sizeof(struct fuse_forget_in));
	assert_int_equal(forget_nowait(g, 2, 1),
			 sizeof(struct fuse_in_header) +
			 sizeof(struct fuse_forget_in));
	assert_int_equal(getattr_errno(g, 2), 0);

	/* Opened twice with the same value (null's 0): one RELEASE. */
	open_fh(g, 2, false, 0);
	open_fh(g, 2, false, 0);
	req_read(&rr, 2, 0, false);
	in_flight(g, &rr, &tr);
	req_release(&rl, 2, 0, false);
	assert_int_equal(request_nowait(g, &rl), 0);
	assert_int_equal(read_errno(g, 2, 0, false), 0);
	/* A FORGET of a node nothing is in flight on, to 0: no wait. */
	lookup(g, FUSE_ROOT_ID, "b", 3, S_IFREG | 0644);
	assert_int_equal(forget_nowait(g, 3, 1),
			 sizeof(struct fuse_in_header) +
			 sizeof(struct fuse_forget_in));
	st = stats(g);
	assert_int_equal(st.forget_waits, 0);
	assert_int_equal(st.release_waits, 0);
	assert_int_equal(st.forgets, 3);
	assert_int_equal(st.handles, 1);
	assert_int_equal(st.nodes, 1);
	vqf_guard_done(g, &tr);
	vqf_guard_done(g, &tg);
	assert_int_equal(getattr_errno(g, 3), -ESTALE);
}

/* ---- (6) randomized, single-threaded, against a model ---------------- */

#define M_IDS		12	/* node ids 2 .. M_IDS+1 */
#define M_FHS		4	/* handle values 0 .. M_FHS-1 */
#define M_PENDING	4	/* LOOKUPs in the root answered later */

struct model {
	u64 count[M_IDS + 2];		/* lookups held, by id */
	bool dir[M_IDS + 2];		/* the last entry's type */
	u32 hcount[M_FHS][M_IDS + 2][2];	/* opens held: fh, node, dir */
};

static u64 rng_state;

static u64 rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static u32 rnd_below(u32 n)
{
	return (u32)((rnd() >> 32) % n);
}

/* The root is a directory; others what their last entry said. */
static bool m_dir(const struct model *m, u64 id)
{
	return id == FUSE_ROOT_ID || (id <= M_IDS + 1 && m->dir[id]);
}

/*
 * The type of an entry for @child: even ids directories, odd ones files,
 * but one in 16 the other way (a backend that reused the id), so a node
 * can hold a file's and a directory's handle of the same value.
 */
static bool rnd_child_dir(u64 child)
{
	return !(child & 1) ^ !rnd_below(16);
}

static bool m_held(const struct model *m, u64 id)
{
	return id == FUSE_ROOT_ID || (id >= 2 && id <= M_IDS + 1 &&
				      m->count[id]);
}

/* Handles still bound to @id (a forgotten node keeps them). */
static bool m_has_handles(const struct model *m, u64 id)
{
	u32 k;

	for (k = 0; id <= M_IDS + 1 && k < M_FHS; k++)
		if (m->hcount[k][id][0] || m->hcount[k][id][1])
			return true;
	return false;
}

/*
 * A node id to try: half the time one the guest holds (the root at
 * least), else any of the model's, the root, or one never handed out.
 */
static u64 rnd_id(const struct model *m)
{
	u64 held[M_IDS + 2];
	u32 k, n = 0;

	if (rnd_below(2)) {
		for (k = 1; k < M_IDS + 2; k++)
			if (m_held(m, k))
				held[n++] = k;
		return held[rnd_below(n)];
	}
	k = rnd_below(M_IDS + 2);
	return k == M_IDS + 1 ? 1000 + rnd_below(5) : k == 0 ? 1 : k + 1;
}

/*
 * A handle to try: half the time one the guest holds (if any), maybe
 * named with the other kind; else random.  Sets *@node and *@dir.
 */
static u64 rnd_fh(const struct model *m, u64 *node, bool *dir)
{
	const u32 per_fh = (M_IDS + 2) * 2, all = M_FHS * per_fh;
	u32 k, n = 0, pick;

	/* The model's handles as one array: fh, then node, then kind. */
	if (rnd_below(2)) {
		for (k = 0; k < all; k++)
			n += !!m->hcount[k / per_fh][k % per_fh / 2][k % 2];
		pick = n ? rnd_below(n) : 0;
		for (k = 0; n && k < all; k++) {
			if (!m->hcount[k / per_fh][k % per_fh / 2][k % 2] ||
			    pick--)
				continue;
			*node = k % per_fh / 2;
			*dir = (k % 2) ^ !rnd_below(8);
			return k / per_fh;
		}
	}
	*node = rnd_id(m);
	*dir = rnd_below(2);
	return rnd_below(M_FHS + 1);
}

/* The errno the guard must give a request on @node with handle @fh. */
/* ...with @any, a handle of either kind (GETATTR by handle); with
 * @release, a RELEASE*: a forgotten node with handles is still there.
 */
static int m_expect_fh(const struct model *m, u64 node, u64 fh, bool dir,
		       bool any, bool release)
{
	u32 i, j;

	if (!m_held(m, node) && !(release && m_has_handles(m, node)))
		return -ESTALE;
	if (node <= M_IDS + 1 && fh < M_FHS && (m->hcount[fh][node][dir] ||
	    (any && m->hcount[fh][node][!dir])))
		return 0;
	if (fh < M_FHS)
		for (i = 0; i < M_IDS + 2; i++)
			for (j = 0; j < 2; j++)
				if (m->hcount[fh][i][j])
					return -EBADFD;
	return -EBADF;
}

static void m_check_sizes(struct vqf_guard *g, const struct model *m)
{
	struct vqf_guard_stats st;
	u64 nodes = 0, handles = 0;
	u32 i, j, k;

	for (i = 2; i < M_IDS + 2; i++)
		nodes += m->count[i] || m_has_handles(m, i);
	for (k = 0; k < M_FHS; k++)
		for (i = 0; i < M_IDS + 2; i++)
			for (j = 0; j < 2; j++)
				handles += !!m->hcount[k][i][j];
	vqf_guard_get_stats(g, &st);
	assert_int_equal(st.nodes, nodes);
	assert_int_equal(st.handles, handles);
	for (i = 1; i < M_IDS + 2; i++)
		assert_int_equal(getattr_errno(g, i),
				 m_held(m, i) ? 0 : -ESTALE);
}

struct pending {
	struct vqf_dev_req req;
	struct vqf_guard_tx tx;
	bool used;
	bool stale;		/* checked before a reset */
};

static void m_forget(struct vqf_guard *g, struct model *m)
{
	const u32 one_len = sizeof(struct fuse_in_header) +
			    sizeof(struct fuse_forget_in);
	u64 ids[8], want[8], k[8];
	struct flat_forget f;
	u32 n, i, j, len, out = 0;

	if (rnd_below(2)) {
		ids[0] = rnd_id(m);
		k[0] = 1 + rnd_below(3);
		len = flat_forget(&f, ids[0], k[0]);
		want[0] = m_held(m, ids[0]) && ids[0] != FUSE_ROOT_ID ?
			  (k[0] < m->count[ids[0]] ? k[0] :
			   m->count[ids[0]]) : 0;
		if (want[0])
			m->count[ids[0]] -= want[0];
		len = vqf_guard_forget(g, &f, len);
		assert_int_equal(len, want[0] ? one_len : 0);
		if (want[0])
			assert_int_equal(f.one.nlookup, want[0]);
		return;
	}
	n = 1 + rnd_below(8);
	for (i = 0; i < n; i++) {
		ids[i] = rnd_id(m);
		k[i] = rnd_below(4);	/* 0 is dropped too */
	}
	len = vqf_guard_forget(g, &f, flat_batch(&f, ids, k, n));
	for (i = 0; i < n; i++) {
		u64 c = m_held(m, ids[i]) && ids[i] != FUSE_ROOT_ID ?
			m->count[ids[i]] : 0;
		u64 w = k[i] < c ? k[i] : c;

		if (!w)
			continue;
		m->count[ids[i]] -= w;
		want[out] = w;
		ids[out++] = ids[i];
	}
	if (!out) {
		assert_int_equal(len, 0);
		return;
	}
	assert_int_equal(len, sizeof(f.in) + sizeof(f.batch.bf) +
			 out * sizeof(f.batch.e[0]));
	assert_int_equal(f.in.len, len);
	assert_int_equal(f.batch.bf.count, out);
	for (j = 0; j < out; j++) {
		assert_int_equal(f.batch.e[j].nodeid, ids[j]);
		assert_int_equal(f.batch.e[j].nlookup, want[j]);
	}
}

static void m_step(struct vqf_guard *g, struct model *m, struct pending *p)
{
	struct vqf_dev_req r;
	struct vqf_guard_tx tx;
	bool dir, cdir, err = !rnd_below(8);
	u64 node, fh = rnd_fh(m, &node, &dir), child;
	int want, ret;
	u32 i;

	switch (rnd_below(12)) {
	case 0:
	case 1:		/* LOOKUP, answered at once */
		node = rnd_id(m);
		child = 2 + rnd_below(M_IDS);
		req_lookup(&r, node, "x");
		want = m_held(m, node) ? 0 : -ESTALE;
		vqf_guard_tx_init(&tx);
		ret = vqf_guard_request(g, &r, &tx);
		assert_int_equal(ret, want);
		if (!ret && err) {
			assert_int_equal(reply(g, &tx, &r, -ENOENT, NULL, 0),
					 0);
		} else if (!ret) {
			cdir = rnd_child_dir(child);
			assert_int_equal(reply_entry(g, &tx, &r, child,
						     cdir ? S_IFDIR | 0755 :
						     S_IFREG | 0644), 0);
			m->count[child]++;
			m->dir[child] = cdir;
		}
		vqf_guard_done(g, &tx);
		break;
	case 2:		/* LOOKUP in the root, answered later */
		i = rnd_below(M_PENDING);
		if (!p[i].used) {
			req_lookup(&p[i].req, FUSE_ROOT_ID, "p");
			in_flight(g, &p[i].req, &p[i].tx);
			p[i].used = true;
			p[i].stale = false;
			break;
		}
		child = 2 + rnd_below(M_IDS);
		cdir = rnd_child_dir(child);
		assert_int_equal(reply_entry(g, &p[i].tx, &p[i].req, child,
					     cdir ? S_IFDIR | 0755 :
					     S_IFREG | 0644), 0);
		if (!p[i].stale) {
			m->count[child]++;
			m->dir[child] = cdir;
		}
		vqf_guard_done(g, &p[i].tx);
		p[i].used = false;
		break;
	case 3:
	case 4:		/* FORGET, BATCH_FORGET */
		m_forget(g, m);
		break;
	case 5:
	case 6:		/* OPEN, OPENDIR */
		node = rnd_id(m);
		dir = rnd_below(2);
		req_open(&r, node, dir);
		if (!m_held(m, node))
			want = -ESTALE;
		else if (dir)
			want = m_dir(m, node) ? 0 : -ENOTDIR;
		else
			want = m_dir(m, node) ? -EISDIR : 0;
		vqf_guard_tx_init(&tx);
		ret = vqf_guard_request(g, &r, &tx);
		assert_int_equal(ret, want);
		if (!ret && err) {
			assert_int_equal(reply(g, &tx, &r, -EMFILE, NULL, 0),
					 0);
		} else if (!ret) {
			fh = rnd_below(M_FHS);
			assert_int_equal(reply_open(g, &tx, &r, fh), 0);
			m->hcount[fh][node][dir]++;
		}
		vqf_guard_done(g, &tx);
		break;
	case 7:
	case 8:		/* RELEASE, RELEASEDIR (nothing in flight) */
		req_release(&r, node, fh, dir);
		want = m_expect_fh(m, node, fh, dir, false, true);
		assert_int_equal(roundtrip(g, &r), want);
		if (!want)
			m->hcount[fh][node][dir]--;
		break;
	case 9:
	case 10:	/* READ, READDIR; GETATTR by handle (either kind) */
		if (rnd_below(3)) {
			req_read(&r, node, fh, dir);
		} else {
			req_getattr(&r, node);
			r.arg.getattr.getattr_flags = FUSE_GETATTR_FH;
			r.arg.getattr.fh = fh;
		}
		assert_int_equal(roundtrip(g, &r),
				 m_expect_fh(m, node, fh, dir,
					     r.in.opcode == FUSE_GETATTR,
					     false));
		break;
	default:	/* a new session, or a device reset */
		if (rnd_below(32))
			break;
		if (rnd_below(2)) {
			vqf_guard_reset(g);
			for (i = 0; i < M_PENDING; i++)
				p[i].stale = true;
		} else {
			/* INIT waits for the pending LOOKUPs: answer them. */
			for (i = 0; i < M_PENDING; i++) {
				if (!p[i].used)
					continue;
				assert_int_equal(reply(g, &p[i].tx, &p[i].req,
						       -ENOENT, NULL, 0), 0);
				vqf_guard_done(g, &p[i].tx);
				p[i].used = false;
			}
			req_session(&r, rnd_below(2) ? FUSE_INIT :
				    FUSE_DESTROY);
			vqf_guard_tx_init(&tx);
			assert_int_equal(vqf_guard_request(g, &r, &tx), 0);
			vqf_guard_done(g, &tx);
		}
		memset(m, 0, sizeof(*m));
	}
}

static void model_random(void **state)
{
	struct vqf_guard *g = *state;
	unsigned long long seed = seed_from_env();
	u32 steps = under_valgrind() ? 1500 : 6000, s, i;
	struct pending *p = calloc(M_PENDING, sizeof(*p));
	struct vqf_guard_stats st;
	struct model m;

	assert_non_null(p);
	print_message("seed 0x%llx (VQF_SEED), %u steps\n", seed, steps);
	rng_state = seed ? seed : 1;
	memset(&m, 0, sizeof(m));
	for (s = 0; s < steps; s++) {
		m_step(g, &m, p);
		m_check_sizes(g, &m);
	}
	for (i = 0; i < M_PENDING; i++)
		vqf_guard_done(g, &p[i].tx);
	free(p);
	vqf_guard_get_stats(g, &st);
	print_message("entries %llu opens %llu forgets %llu unknown %llu clamped %llu resets %llu\n",
		      (unsigned long long)st.entries,
		      (unsigned long long)st.opens,
		      (unsigned long long)st.forgets,
		      (unsigned long long)st.forget_unknown,
		      (unsigned long long)st.forget_clamped,
		      (unsigned long long)st.resets);
	print_message("refused: node %llu handle %llu mismatch %llu dir %llu notdir %llu\n",
		      (unsigned long long)st.node_unknown,
		      (unsigned long long)st.handle_unknown,
		      (unsigned long long)st.handle_mismatch,
		      (unsigned long long)st.open_dir,
		      (unsigned long long)st.opendir_notdir);
	assert_int_equal(st.forget_waits + st.release_waits, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(forget_waits_for_getattr,
						setup, teardown),
		cmocka_unit_test_setup_teardown(batch_forget_waits,
						setup, teardown),
		cmocka_unit_test_setup_teardown(release_waits_for_read,
						setup, teardown),
		cmocka_unit_test_setup_teardown(releasedir_waits_for_readdir,
						setup, teardown),
		cmocka_unit_test_setup_teardown(both_kinds_unpin_their_own,
						setup, teardown),
		cmocka_unit_test_setup_teardown(init_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(destroy_waits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(init_and_release_race, setup,
						teardown),
		cmocka_unit_test_setup_teardown(stop_ends_waits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(reset_ends_waits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(hostile_values, setup,
						teardown),
		cmocka_unit_test_setup_teardown(dotdot_parent_forgotten, setup,
						teardown),
		cmocka_unit_test(readonly_setupmapping),
		cmocka_unit_test_setup_teardown(partial_does_not_wait, setup,
						teardown),
		cmocka_unit_test_setup_teardown(model_random, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
