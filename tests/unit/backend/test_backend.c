// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_backend.c - vqf_backend's serving mechanism over a toy libfuse3
 * filesystem that can hold requests and answer them from another thread:
 * INIT ordering, malformed requests, reply routing by unique (sync, async,
 * a reply for another request, orphans), INTERRUPT, notifications, failed
 * delivery, DESTROY, and several threads calling process at once.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tf.h"

/* The toy filesystem: GETATTR answers at once, LOOKUP is held. */
struct toy {
	pthread_mutex_t lock;
	fuse_req_t held;
	int interrupted;
	int inits, destroys, forgets;
};

static void toy_init(void *ud, struct fuse_conn_info *conn)
{
	struct toy *t = ud;

	(void)conn;
	t->inits++;
}

static void toy_destroy(void *ud)
{
	struct toy *t = ud;

	t->destroys++;
}

static void toy_getattr(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	struct stat st = { .st_ino = ino, .st_mode = S_IFDIR | 0755,
			   .st_nlink = 2 };

	(void)fi;
	fuse_reply_attr(req, &st, 0);
}

static void toy_intr(fuse_req_t req, void *data)
{
	struct toy *t = data;

	(void)req;
	pthread_mutex_lock(&t->lock);
	t->interrupted++;
	pthread_mutex_unlock(&t->lock);
}

static void toy_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct toy *t = fuse_req_userdata(req);

	(void)parent;
	(void)name;
	pthread_mutex_lock(&t->lock);
	t->held = req;
	pthread_mutex_unlock(&t->lock);
	fuse_req_interrupt_func(req, toy_intr, t);
}

static void toy_forget(fuse_req_t req, fuse_ino_t ino, uint64_t n)
{
	struct toy *t = fuse_req_userdata(req);

	(void)ino;
	(void)n;
	t->forgets++;
	fuse_reply_none(req);
}

static const struct fuse_lowlevel_ops toy_ops = {
	.init = toy_init,
	.destroy = toy_destroy,
	.getattr = toy_getattr,
	.lookup = toy_lookup,
	.forget = toy_forget,
};

struct fixture {
	struct toy toy;
	struct tf t;
	int notifies;
	struct fuse_out_header notify_h;
};

static int notify_fn(void *ctx, const struct iovec *iov, int iovcnt,
		     size_t len)
{
	struct fixture *f = ctx;

	(void)iovcnt;
	(void)len;
	f->notifies++;
	memcpy(&f->notify_h, iov[0].iov_base, sizeof(f->notify_h));
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct vqf_backend_config cfg = { .notify = notify_fn };
	struct vqf_backend *be;

	if (!f)
		return -1;
	cfg.notify_ctx = f;
	pthread_mutex_init(&f->toy.lock, NULL);
	be = vqf_backend_new(&toy_ops, sizeof(toy_ops), &f->toy, &cfg);
	if (!be) {
		free(f);
		return -1;
	}
	tf_setup(&f->t, be);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	vqf_backend_free(f->t.be);
	tf_teardown(&f->t);
	pthread_mutex_destroy(&f->toy.lock);
	free(f);
	return 0;
}

static struct vqf_backend_stats stats(struct fixture *f)
{
	struct vqf_backend_stats s;

	vqf_backend_get_stats(f->t.be, &s);
	return s;
}

/* Held LOOKUP: returns its unique. */
static uint64_t send_held_lookup(struct fixture *f, struct tf_reply *r)
{
	struct tf *t = &f->t;
	uint64_t u = t->unique;

	tf_begin(&t->m, FUSE_LOOKUP, FUSE_ROOT_ID, u);
	tf_puts(&t->m, "held");
	tf_end(&t->m);
	t->unique += 2;
	assert_int_equal(vqf_backend_process(t->be, t->m.buf, t->m.len,
					     tf_reply_fn, r), VQF_BE_REPLY);
	return u;
}

static void *answer_held(void *arg)
{
	struct toy *toy = arg;
	struct fuse_entry_param e = { .ino = 42 };
	fuse_req_t req;

	pthread_mutex_lock(&toy->lock);
	req = toy->held;
	toy->held = NULL;
	pthread_mutex_unlock(&toy->lock);
	e.attr.st_mode = S_IFREG | 0644;
	e.attr.st_ino = 42;
	fuse_reply_entry(req, &e);
	return NULL;
}

static void test_init_first(void **state)
{
	struct fixture *f = *state;
	struct fuse_init_out io;

	assert_int_equal(tf_getattr(&f->t, FUSE_ROOT_ID, NULL), -EIO);
	assert_int_equal(stats(f).before_init, 1);
	assert_int_equal(vqf_backend_init_out(f->t.be, &io), -ENOTCONN);

	assert_int_equal(tf_init(&f->t, &io), 0);
	assert_int_equal(f->toy.inits, 1);
	assert_int_equal(io.major, FUSE_KERNEL_VERSION);
	assert_true(io.max_write >= 4096);
	memset(&io, 0, sizeof(io));
	assert_int_equal(vqf_backend_init_out(f->t.be, &io), 0);
	assert_true(io.max_write >= 4096);

	assert_int_equal(tf_getattr(&f->t, FUSE_ROOT_ID, NULL), 0);
	assert_int_equal(tf_init(&f->t, NULL), -EIO);
	assert_int_equal(stats(f).reinit, 1);
	assert_int_equal(f->toy.inits, 1);
}

static void test_old_protocol(void **state)
{
	struct fixture *f = *state;
	struct fuse_init_in in = { .major = 7, .minor = 11 };

	tf_begin(&f->t.m, FUSE_INIT, 0, 0);
	tf_put(&f->t.m, &in, sizeof(in));
	assert_int_equal(tf_call(&f->t), -EPROTO);
	assert_int_equal(stats(f).old_protocol, 1);
	assert_int_equal(f->toy.inits, 0);
	/* A short 7.12 INIT (no flags2) is padded for libfuse and works. */
	in.minor = 12;
	tf_begin(&f->t.m, FUSE_INIT, 0, 0);
	tf_put(&f->t.m, &in, 16);
	assert_int_equal(tf_call(&f->t), 0);
	assert_int_equal(f->toy.inits, 1);
}

static void test_malformed(void **state)
{
	struct fixture *f = *state;
	struct tf *t = &f->t;
	struct fuse_write_in w = { .size = 100 };
	struct fuse_batch_forget_in bf = { .count = 1000000 };
	struct fuse_in_header h;
	struct vqf_backend_stats s;

	assert_int_equal(tf_init(t, NULL), 0);

	/* No header: nothing to answer. */
	t->r.calls = 0;
	assert_int_equal(vqf_backend_process(t->be, "abc", 3, tf_reply_fn,
					     &t->r), -EINVAL);
	assert_int_equal(t->r.calls, 0);

	/* Header len disagrees with the buffer. */
	tf_begin(&t->m, FUSE_GETATTR, FUSE_ROOT_ID, 77);
	tf_put(&t->m, &w, sizeof(struct fuse_getattr_in));
	tf_end(&t->m);
	memcpy(&h, t->m.buf, sizeof(h));
	h.len += 8;
	memcpy(t->m.buf, &h, sizeof(h));
	t->r.calls = 0;
	assert_int_equal(vqf_backend_process(t->be, t->m.buf, t->m.len,
					     tf_reply_fn, &t->r),
			 VQF_BE_REPLY);
	assert_int_equal(t->r.h.error, -EMSGSIZE);
	assert_int_equal(t->r.h.unique, h.unique);

	/* unique 0 is the notification marker. */
	h.len -= 8;
	h.unique = 0;
	memcpy(t->m.buf, &h, sizeof(h));
	assert_int_equal(vqf_backend_process(t->be, t->m.buf, t->m.len,
					     tf_reply_fn, &t->r),
			 VQF_BE_REPLY);
	assert_int_equal(t->r.h.error, -EPROTO);

	/* Truncated fixed argument. */
	tf_begin(&t->m, FUSE_GETATTR, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &w, 4);
	assert_int_equal(tf_call(t), -EBADMSG);

	/* Name without its NUL: libfuse would strlen() past the end. */
	tf_begin(&t->m, FUSE_LOOKUP, FUSE_ROOT_ID, 0);
	tf_put(&t->m, "abc", 3);
	assert_int_equal(tf_call(t), -ENAMETOOLONG);
	/* RENAME with only one of its two names. */
	tf_begin(&t->m, FUSE_RENAME, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &w, sizeof(struct fuse_rename_in));
	tf_puts(&t->m, "a");
	assert_int_equal(tf_call(t), -ENAMETOOLONG);

	/* WRITE claiming more data than it carries. */
	tf_begin(&t->m, FUSE_WRITE, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &w, sizeof(w));
	tf_put(&t->m, "0123456789", 10);
	assert_int_equal(tf_call(t), -EOVERFLOW);

	/* BATCH_FORGET with a huge count: counted, no reply. */
	tf_begin(&t->m, FUSE_BATCH_FORGET, 0, 0);
	tf_put(&t->m, &bf, sizeof(bf));
	assert_int_equal(tf_send(t), VQF_BE_NO_REPLY);
	assert_int_equal(t->r.calls, 0);

	/* An opcode libfuse 3.14 does not know. */
	tf_begin(&t->m, FUSE_SYNCFS, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &w, 8);
	assert_int_equal(tf_call(t), -ENOSYS);
	tf_begin(&t->m, 4000, FUSE_ROOT_ID, 0);
	assert_int_equal(tf_call(t), -ENOSYS);

	s = stats(f);
	assert_int_equal(s.short_header, 1);
	assert_int_equal(s.len_mismatch, 1);
	assert_int_equal(s.bad_unique, 1);
	assert_int_equal(s.short_arg, 1);
	assert_int_equal(s.bad_string, 2);
	assert_int_equal(s.bad_payload, 2);
	assert_int_equal(s.unsupported, 2);
	assert_int_equal(s.requests, 1);	/* INIT only */
	assert_int_equal(f->toy.forgets, 0);
}

static void test_async_and_dup(void **state)
{
	struct fixture *f = *state;
	struct tf *t = &f->t;
	struct tf_reply r;
	struct fuse_entry_out e;
	pthread_t th;
	uint64_t u;

	tf_reply_init(&r);
	assert_int_equal(tf_init(t, NULL), 0);
	u = send_held_lookup(f, &r);
	assert_int_equal(r.calls, 0);
	assert_int_equal(vqf_backend_inflight(t->be), 1);

	/* Same unique while in flight: refused, the held one untouched. */
	tf_begin(&t->m, FUSE_GETATTR, FUSE_ROOT_ID, u);
	tf_put(&t->m, &e, sizeof(struct fuse_getattr_in));
	tf_end(&t->m);
	assert_int_equal(vqf_backend_process(t->be, t->m.buf, t->m.len,
					     tf_reply_fn, &t->r),
			 VQF_BE_REPLY);
	assert_int_equal(t->r.h.error, -EBUSY);
	assert_int_equal(stats(f).dup_unique, 1);

	/* Other requests flow while one is held. */
	assert_int_equal(tf_getattr(t, FUSE_ROOT_ID, NULL), 0);

	assert_int_equal(pthread_create(&th, NULL, answer_held, &f->toy), 0);
	assert_true(tf_reply_wait(&r, 1));
	pthread_join(th, NULL);
	assert_int_equal(r.h.unique, u);
	assert_int_equal(r.h.error, 0);
	memcpy(&e, r.data, sizeof(e));
	assert_int_equal(e.nodeid, 42);
	assert_int_equal(stats(f).async_replies, 1);
	assert_int_equal(vqf_backend_inflight(t->be), 0);
	tf_reply_destroy(&r);
}

static void test_interrupt(void **state)
{
	struct fixture *f = *state;
	struct tf *t = &f->t;
	struct fuse_interrupt_in ii;
	struct tf_reply r;
	pthread_t th;

	tf_reply_init(&r);
	assert_int_equal(tf_init(t, NULL), 0);
	ii.unique = send_held_lookup(f, &r);

	tf_begin(&t->m, FUSE_INTERRUPT, 0, 0);
	tf_put(&t->m, &ii, sizeof(ii));
	assert_int_equal(tf_send(t), VQF_BE_NO_REPLY);
	assert_int_equal(f->toy.interrupted, 1);
	assert_int_equal(t->r.calls, 0);
	assert_int_equal(stats(f).no_reply, 1);

	/* The filesystem still answers the held request, once. */
	pthread_create(&th, NULL, answer_held, &f->toy);
	assert_true(tf_reply_wait(&r, 1));
	pthread_join(th, NULL);
	assert_int_equal(r.calls, 1);

	/*
	 * An INTERRUPT for a request not in flight (answered already, as the
	 * one above now is, or never seen) is dropped before libfuse, which
	 * would keep it for an EAGAIN answer that has no chain to go to.
	 */
	tf_begin(&t->m, FUSE_INTERRUPT, 0, 0);
	tf_put(&t->m, &ii, sizeof(ii));
	assert_int_equal(tf_send(t), VQF_BE_NO_REPLY);
	ii.unique = 999999;
	tf_begin(&t->m, FUSE_INTERRUPT, 0, 0);
	tf_put(&t->m, &ii, sizeof(ii));
	assert_int_equal(tf_send(t), VQF_BE_NO_REPLY);
	assert_int_equal(stats(f).interrupt_stale, 2);
	assert_int_equal(f->toy.interrupted, 1);
	assert_int_equal(tf_getattr(t, FUSE_ROOT_ID, NULL), 0);
	assert_int_equal(t->r.calls, 1);
	assert_int_equal(stats(f).orphan_replies, 0);
	tf_reply_destroy(&r);
}

static void test_notify_and_failed_reply(void **state)
{
	struct fixture *f = *state;
	struct tf *t = &f->t;
	struct fuse_out_header h;

	assert_int_equal(tf_init(t, NULL), 0);
	assert_int_equal(fuse_lowlevel_notify_inval_inode(
			 vqf_backend_session(t->be), 5, 0, 0), 0);
	assert_int_equal(f->notifies, 1);
	h = f->notify_h;
	assert_int_equal(h.unique, 0);
	assert_int_equal(h.error, FUSE_NOTIFY_INVAL_INODE);
	assert_int_equal(h.len, sizeof(h) +
			 sizeof(struct fuse_notify_inval_inode_out));

	t->r.fail_with = -ENOSPC;
	tf_begin(&t->m, FUSE_GETATTR, FUSE_ROOT_ID, 0);
	tf_put(&t->m, &h, sizeof(struct fuse_getattr_in));
	assert_int_equal(tf_send(t), VQF_BE_REPLY);
	assert_int_equal(t->r.calls, 1);
	assert_int_equal(stats(f).reply_failed, 1);
	t->r.fail_with = 0;
	assert_int_equal(vqf_backend_inflight(t->be), 0);
}

static void test_forget_and_destroy(void **state)
{
	struct fixture *f = *state;
	struct tf *t = &f->t;

	assert_int_equal(tf_init(t, NULL), 0);
	tf_forget(t, 7, 1);
	assert_int_equal(t->r.calls, 0);
	assert_int_equal(f->toy.forgets, 1);

	tf_begin(&t->m, FUSE_DESTROY, 0, 0);
	assert_int_equal(tf_call(t), 0);
	assert_int_equal(f->toy.destroys, 1);
	assert_int_equal(tf_getattr(t, FUSE_ROOT_ID, NULL), -ENOTCONN);
	assert_int_equal(stats(f).after_destroy, 1);
	tf_forget(t, 7, 1);
	assert_int_equal(f->toy.forgets, 1);
	assert_int_equal(stats(f).after_destroy, 2);
}

/* A request in pieces is gathered; big and small, same answers. */
static void test_process_iov(void **state)
{
	struct fixture *f = *state;
	struct tf *t = &f->t;
	struct fuse_getattr_in gi = { 0 };
	struct fuse_in_header h = {
		.len = sizeof(h) + sizeof(gi), .opcode = FUSE_GETATTR,
		.unique = 500, .nodeid = 9,
	};
	struct iovec iov[3] = {
		{ &h, sizeof(h) }, { &gi, 4 }, { (char *)&gi + 4, 12 },
	};
	struct fuse_attr_out ao;
	char *pad;

	assert_int_equal(tf_init(t, NULL), 0);
	t->r.calls = 0;
	assert_int_equal(vqf_backend_process_iov(t->be, iov, 3, tf_reply_fn,
						 &t->r), VQF_BE_REPLY);
	assert_int_equal(t->r.calls, 1);
	assert_int_equal(t->r.h.error, 0);
	assert_int_equal(t->r.h.unique, 500);
	memcpy(&ao, t->r.data, sizeof(ao));
	assert_int_equal(ao.attr.ino, 9);

	/* Larger than the on-stack gather buffer: a trailing WRITE-sized
	 * piece makes in.len disagree, which must still be seen. */
	pad = calloc(1, 64 << 10);
	assert_non_null(pad);
	iov[2].iov_base = pad;
	iov[2].iov_len = 64 << 10;
	h.unique = 502;
	t->r.calls = 0;
	assert_int_equal(vqf_backend_process_iov(t->be, iov, 3, tf_reply_fn,
						 &t->r), VQF_BE_REPLY);
	assert_int_equal(t->r.h.error, -EMSGSIZE);
	assert_int_equal(vqf_backend_process_iov(t->be, iov, 0, tf_reply_fn,
						 &t->r), -EINVAL);
	free(pad);
}

/* Several threads at once through the same session. */
#define THREADS 4

struct worker {
	struct vqf_backend *be;
	uint64_t base;
	int iters, ok;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	struct tf_msg *m = malloc(sizeof(*m));
	struct tf_reply *r = malloc(sizeof(*r));
	struct fuse_getattr_in gi = { 0 };
	int i;

	if (!m || !r)
		goto out;
	tf_reply_init(r);
	for (i = 0; i < w->iters; i++) {
		uint64_t u = w->base + 2 * (uint64_t)i * THREADS;

		tf_begin(m, FUSE_GETATTR, 100 + i, u);
		tf_put(m, &gi, sizeof(gi));
		tf_end(m);
		r->calls = 0;
		if (vqf_backend_process(w->be, m->buf, m->len, tf_reply_fn,
					r) != VQF_BE_REPLY)
			continue;
		if (r->calls == 1 && r->h.unique == u && r->h.error == 0)
			w->ok++;
	}
	tf_reply_destroy(r);
out:
	free(m);
	free(r);
	return NULL;
}

static void test_threads(void **state)
{
	struct fixture *f = *state;
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct vqf_backend_stats s;
	int i, iters = getenv("VQF_UNDER_VALGRIND") ? 200 : 5000;

	assert_int_equal(tf_init(&f->t, NULL), 0);
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .be = f->t.be, .base = 1000 + 2 * i,
					.iters = iters };
		assert_int_equal(pthread_create(&th[i], NULL, worker, &w[i]),
				 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].ok, iters);
	}
	s = stats(f);
	assert_int_equal(s.requests, 1 + THREADS * iters);
	assert_int_equal(s.replies, 1 + THREADS * iters);
	assert_int_equal(s.async_replies, 0);
	assert_int_equal(s.dup_unique, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_first, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_old_protocol, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_async_and_dup, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_interrupt, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_notify_and_failed_reply,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget_and_destroy, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_process_iov, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
