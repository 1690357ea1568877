// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_backend.c - a libfuse3 session without /dev/fuse.
 *
 * Requests enter through fuse_session_process_buf(); replies leave through
 * the custom writev.  libfuse 3.14 passes that writev the *filesystem's*
 * userdata and the session's fd, so the backend is found from the fd (a
 * private eventfd per backend, never read or written: it only names the
 * session and is closed by fuse_session_destroy()).  The request a reply
 * answers is found by fuse_out_header.unique in the in-flight table, which
 * also refuses a unique that is already in flight; a reply may come from
 * the thread running fuse_session_process_buf() or, for a filesystem that
 * answers asynchronously, from any other thread.  A reply can also answer a
 * different request than the one being processed: libfuse answers a queued
 * INTERRUPT with EAGAIN while dispatching the next request.
 *
 * libfuse keeps got_init/got_destroy in the session unlocked; it relies on
 * the kernel sending INIT alone and first.  The gate rwlock gives that
 * ordering here: INIT (and anything before it) and DESTROY run under the
 * write lock, everything else under the read lock.
 */
#define _GNU_SOURCE
#include "vqf_backend.h"
#include "vqf_backend_check.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define VQF_BE_SHARDS	16
#define VQF_BE_BUCKETS	64
#define VQF_BE_MIN_MINOR 12

struct inflight {
	uint64_t unique;
	uint32_t opcode;
	vqf_backend_reply_fn reply;
	void *ctx;
	struct inflight *next;
};

struct shard {
	pthread_mutex_t lock;
	size_t count;
	struct inflight *bucket[VQF_BE_BUCKETS];
};

struct vqf_backend {
	struct fuse_session *se;
	int fd;
	/* What a new session after DESTROY is made of (renew()). */
	const struct fuse_lowlevel_ops *op;
	size_t op_size;
	void *userdata;
	int argc;
	char **argv;
	vqf_backend_notify_fn notify;
	void *notify_ctx;
	bool hostile_safe;

	pthread_rwlock_t gate;
	/* Written under the gate's write lock only. */
	bool got_init;
	bool init_replied_ok;
	bool destroyed;
	bool setxattr_ext;
	struct fuse_init_out init_out;

	pthread_mutex_t stats_lock;
	struct vqf_backend_stats stats;

	struct shard shards[VQF_BE_SHARDS];
};

/* The request this thread is processing, if any. */
static __thread struct vqf_backend *tls_be;
static __thread struct inflight *tls_cur;

/* fd -> backend, for replies sent from the filesystem's own threads. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vqf_backend **reg;
static size_t reg_len, reg_cap;

#define STAT_ADD(be, field, n) do {				\
	pthread_mutex_lock(&(be)->stats_lock);			\
	(be)->stats.field += (n);				\
	pthread_mutex_unlock(&(be)->stats_lock);		\
} while (0)
#define STAT_INC(be, field) STAT_ADD(be, field, 1)

static int reg_add(struct vqf_backend *be)
{
	int ret = 0;

	pthread_mutex_lock(&reg_lock);
	if (reg_len == reg_cap) {
		size_t cap = reg_cap ? reg_cap * 2 : 8;
		struct vqf_backend **n = realloc(reg, cap * sizeof(*n));

		if (!n) {
			ret = -ENOMEM;
			goto out;
		}
		reg = n;
		reg_cap = cap;
	}
	reg[reg_len++] = be;
out:
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

static void reg_del(struct vqf_backend *be)
{
	size_t i;

	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < reg_len; i++) {
		if (reg[i] == be) {
			reg[i] = reg[--reg_len];
			break;
		}
	}
	if (!reg_len) {
		free(reg);
		reg = NULL;
		reg_cap = 0;
	}
	pthread_mutex_unlock(&reg_lock);
}

static struct vqf_backend *reg_find(int fd)
{
	struct vqf_backend *be = NULL;
	size_t i;

	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < reg_len; i++) {
		if (reg[i]->fd == fd) {
			be = reg[i];
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return be;
}

static struct shard *shard_of(struct vqf_backend *be, uint64_t unique)
{
	return &be->shards[unique % VQF_BE_SHARDS];
}

static struct inflight **bucket_of(struct shard *s, uint64_t unique)
{
	return &s->bucket[(unique / VQF_BE_SHARDS) % VQF_BE_BUCKETS];
}

/* Inserts @e unless its unique is already in flight. */
static bool inflight_add(struct vqf_backend *be, struct inflight *e)
{
	struct shard *s = shard_of(be, e->unique);
	struct inflight **b, *p;
	bool ok = true;

	pthread_mutex_lock(&s->lock);
	b = bucket_of(s, e->unique);
	for (p = *b; p; p = p->next) {
		if (p->unique == e->unique) {
			ok = false;
			break;
		}
	}
	if (ok) {
		e->next = *b;
		*b = e;
		s->count++;
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* Removes and returns the entry for @unique, NULL if none. */
static struct inflight *inflight_take(struct vqf_backend *be, uint64_t unique)
{
	struct shard *s = shard_of(be, unique);
	struct inflight **pp, *e = NULL;

	pthread_mutex_lock(&s->lock);
	for (pp = bucket_of(s, unique); *pp; pp = &(*pp)->next) {
		if ((*pp)->unique == unique) {
			e = *pp;
			*pp = e->next;
			s->count--;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return e;
}

static bool inflight_has(struct vqf_backend *be, uint64_t unique)
{
	struct shard *s = shard_of(be, unique);
	struct inflight *p;

	pthread_mutex_lock(&s->lock);
	for (p = *bucket_of(s, unique); p; p = p->next)
		if (p->unique == unique)
			break;
	pthread_mutex_unlock(&s->lock);
	return p;
}

/* INIT is answered synchronously under the gate's write lock. */
static void record_init(struct vqf_backend *be, const struct iovec *iov,
			int count)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	char *dst = (char *)&be->init_out;
	size_t room = sizeof(be->init_out);
	int i;

	be->init_replied_ok = out->error == 0;
	memset(&be->init_out, 0, sizeof(be->init_out));
	for (i = 1; i < count && room; i++) {
		size_t n = iov[i].iov_len < room ? iov[i].iov_len : room;

		memcpy(dst, iov[i].iov_base, n);
		dst += n;
		room -= n;
	}
}

static ssize_t be_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct vqf_backend *be;
	struct fuse_out_header *out;
	struct inflight *e;
	size_t len;
	int ret;

	(void)userdata;		/* the filesystem's, not ours */
	be = tls_be && tls_be->fd == fd ? tls_be : reg_find(fd);
	if (!be || count < 1 || iov[0].iov_len < sizeof(*out)) {
		errno = ENOENT;
		return -1;
	}
	out = iov[0].iov_base;
	len = out->len;

	if (out->unique == 0) {
		STAT_INC(be, notifies);
		if (!be->notify) {
			STAT_INC(be, notify_dropped);
			return len;
		}
		ret = be->notify(be->notify_ctx, iov, count, len);
		if (ret < 0) {
			errno = -ret;
			return -1;
		}
		return len;
	}

	/* Out of the table before the reply completes the chain: the guest
	 * may reuse the unique as soon as it sees the reply. */
	e = inflight_take(be, out->unique);
	if (!e) {
		STAT_INC(be, orphan_replies);
		errno = ENOENT;
		return -1;
	}
	if (e->opcode == FUSE_INIT && e == tls_cur)
		record_init(be, iov, count);
	ret = e->reply(e->ctx, iov, count, len);
	pthread_mutex_lock(&be->stats_lock);
	be->stats.replies++;
	if (e != tls_cur)
		be->stats.async_replies++;
	if (ret < 0)
		be->stats.reply_failed++;
	pthread_mutex_unlock(&be->stats_lock);
	free(e);
	if (ret < 0) {
		/* ENOENT: libfuse takes it for an interrupted request. */
		errno = ENOENT;
		return -1;
	}
	return len;
}

/*
 * libfuse 3.14 insists on a read callback although requests never come
 * through it here.  ENODEV is what a loop reading /dev/fuse takes for an
 * unmount: fuse_session_loop() on this session ends quietly.
 */
static ssize_t be_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)fd;
	(void)buf;
	(void)len;
	(void)userdata;
	errno = ENODEV;
	return -1;
}

static const struct fuse_custom_io be_io = {
	.writev = be_writev,
	.read = be_read,
};

struct vqf_backend *vqf_backend_new(const struct fuse_lowlevel_ops *op,
				    size_t op_size, void *userdata,
				    const struct vqf_backend_config *cfg)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct vqf_backend *be;
	int i, err;

	be = calloc(1, sizeof(*be));
	if (!be)
		return NULL;
	be->fd = -1;
	pthread_rwlock_init(&be->gate, NULL);
	pthread_mutex_init(&be->stats_lock, NULL);
	for (i = 0; i < VQF_BE_SHARDS; i++)
		pthread_mutex_init(&be->shards[i].lock, NULL);
	if (cfg) {
		be->notify = cfg->notify;
		be->notify_ctx = cfg->notify_ctx;
		be->hostile_safe = cfg->hostile_safe;
	}

	err = ENOMEM;
	if (fuse_opt_add_arg(&args, "vqfsim-backend"))
		goto fail;
	for (i = 0; cfg && i < cfg->argc; i++)
		if (fuse_opt_add_arg(&args, cfg->argv[i]))
			goto fail;

	err = EINVAL;
	be->se = fuse_session_new(&args, op, op_size, userdata);
	if (!be->se)
		goto fail;
	be->fd = eventfd(0, EFD_CLOEXEC);
	if (be->fd < 0) {
		err = errno;
		goto fail;
	}
	err = -fuse_session_custom_io(be->se, &be_io, be->fd);
	if (err) {
		close(be->fd);
		be->fd = -1;
		goto fail;
	}
	err = -reg_add(be);
	if (err)
		goto fail;
	be->op = op;
	be->op_size = op_size;
	be->userdata = userdata;
	be->argc = cfg ? cfg->argc : 0;
	be->argv = calloc(be->argc + 1, sizeof(char *));
	for (i = 0; be->argv && i < be->argc; i++) {
		be->argv[i] = strdup(cfg->argv[i]);
		if (!be->argv[i]) {
			/* No copy: an INIT after DESTROY gets ENOMEM. */
			while (i--)
				free(be->argv[i]);
			free(be->argv);
			be->argv = NULL;
		}
	}
	fuse_opt_free_args(&args);
	return be;

fail:
	fuse_opt_free_args(&args);
	if (be->se)
		fuse_session_destroy(be->se);	/* closes be->fd */
	pthread_rwlock_destroy(&be->gate);
	pthread_mutex_destroy(&be->stats_lock);
	for (i = 0; i < VQF_BE_SHARDS; i++)
		pthread_mutex_destroy(&be->shards[i].lock);
	free(be);
	errno = err;
	return NULL;
}

void vqf_backend_free(struct vqf_backend *be)
{
	int i, j;

	if (!be)
		return;
	reg_del(be);
	fuse_session_destroy(be->se);
	for (i = 0; be->argv && be->argv[i]; i++)
		free(be->argv[i]);
	free(be->argv);
	for (i = 0; i < VQF_BE_SHARDS; i++) {
		for (j = 0; j < VQF_BE_BUCKETS; j++) {
			struct inflight *e = be->shards[i].bucket[j], *n;

			for (; e; e = n) {
				n = e->next;
				free(e);
			}
		}
		pthread_mutex_destroy(&be->shards[i].lock);
	}
	pthread_rwlock_destroy(&be->gate);
	pthread_mutex_destroy(&be->stats_lock);
	free(be);
}

/*
 * A fresh libfuse session for an INIT after DESTROY (gate held for
 * writing): a virtio-fs guest unmounts with DESTROY and mounts again with
 * INIT on the same device, which libfuse's session does not take.  The
 * filesystem (userdata) stays.  0 or a negative errno.
 */
static int renew(struct vqf_backend *be)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL, *old;
	int i, fd = -1, err = -ENOMEM;

	if (!be->argv || fuse_opt_add_arg(&args, "vqfsim-backend"))
		goto out;
	for (i = 0; i < be->argc; i++)
		if (!be->argv[i] || fuse_opt_add_arg(&args, be->argv[i]))
			goto out;
	se = fuse_session_new(&args, be->op, be->op_size, be->userdata);
	if (!se)
		goto out;
	fd = eventfd(0, EFD_CLOEXEC);
	if (fd < 0 || fuse_session_custom_io(se, &be_io, fd))
		goto out;
	/* be_writev() finds the backend by fd. */
	pthread_mutex_lock(&reg_lock);
	old = be->se;
	be->se = se;
	be->fd = fd;
	pthread_mutex_unlock(&reg_lock);
	fuse_session_destroy(old);	/* closes the old fd */
	se = NULL;
	fd = -1;
	be->got_init = be->init_replied_ok = be->destroyed = false;
	be->setxattr_ext = false;
	err = 0;
out:
	if (fd >= 0)
		close(fd);
	if (se)
		fuse_session_destroy(se);
	fuse_opt_free_args(&args);
	return err;
}

int vqf_backend_reset(struct vqf_backend *be)
{
	int ret = 0;

	pthread_rwlock_wrlock(&be->gate);
	/* libfuse calls destroy() for a session that got INIT only. */
	if (be->got_init || be->destroyed)
		ret = renew(be);
	pthread_rwlock_unlock(&be->gate);
	if (!ret)
		STAT_INC(be, resets);
	return ret;
}

/* Answers a refused request with @err, if it takes an answer. */
static int refuse(const struct fuse_in_header *in, int err,
		  vqf_backend_reply_fn reply, void *ctx)
{
	struct fuse_out_header out = {
		.len = sizeof(out),
		.error = -err,
		.unique = in->unique,
	};
	struct iovec iov = { .iov_base = &out, .iov_len = sizeof(out) };

	if (!vqf_be_op_replies(in->opcode))
		return VQF_BE_NO_REPLY;
	reply(ctx, &iov, 1, sizeof(out));
	return VQF_BE_REPLY;
}

static void count_check(struct vqf_backend *be, enum vqf_be_check c)
{
	pthread_mutex_lock(&be->stats_lock);
	switch (c) {
	case VQF_BE_SHORT_ARG:
		be->stats.short_arg++;
		break;
	case VQF_BE_BAD_STRING:
		be->stats.bad_string++;
		break;
	case VQF_BE_BAD_PAYLOAD:
		be->stats.bad_payload++;
		break;
	case VQF_BE_UNSUPPORTED:
		be->stats.unsupported++;
		break;
	case VQF_BE_OK:
		break;
	}
	pthread_mutex_unlock(&be->stats_lock);
}

static const int check_errno[] = {
	[VQF_BE_SHORT_ARG] = EBADMSG,
	[VQF_BE_BAD_STRING] = ENAMETOOLONG,
	[VQF_BE_BAD_PAYLOAD] = EOVERFLOW,
	[VQF_BE_UNSUPPORTED] = ENOSYS,
};

int vqf_backend_process(struct vqf_backend *be, const void *req, size_t len,
			vqf_backend_reply_fn reply, void *ctx)
{
	/* INIT grew over the protocol's life: libfuse gets a padded copy. */
	union {
		char b[sizeof(struct fuse_in_header) +
		       sizeof(struct fuse_init_in)];
		struct fuse_in_header h;
	} init_copy;
	struct fuse_buf fb = { .size = len, .mem = (void *)req };
	struct fuse_in_header in;
	struct inflight *e = NULL;
	enum vqf_be_check c;
	bool exclusive = false, replies;
	int ret;

	if (len < sizeof(in)) {
		STAT_INC(be, short_header);
		return -EINVAL;
	}
	memcpy(&in, req, sizeof(in));
	replies = vqf_be_op_replies(in.opcode);
	if (in.len != len) {
		STAT_INC(be, len_mismatch);
		return refuse(&in, EMSGSIZE, reply, ctx);
	}
	if (in.unique == 0) {
		STAT_INC(be, bad_unique);
		return refuse(&in, EPROTO, reply, ctx);
	}

	pthread_rwlock_rdlock(&be->gate);
	if (!be->got_init || in.opcode == FUSE_INIT ||
	    in.opcode == FUSE_DESTROY) {
		pthread_rwlock_unlock(&be->gate);
		pthread_rwlock_wrlock(&be->gate);
		exclusive = true;
	}
	if (be->destroyed && in.opcode == FUSE_INIT) {
		if (renew(be)) {
			STAT_INC(be, nomem);
			ret = refuse(&in, ENOMEM, reply, ctx);
			goto out_unlock;
		}
		STAT_INC(be, sessions);
	}
	if (be->destroyed) {
		STAT_INC(be, after_destroy);
		ret = refuse(&in, ENOTCONN, reply, ctx);
		goto out_unlock;
	}
	c = vqf_be_check_request(&in, (const char *)req + sizeof(in),
				 len - sizeof(in), be->setxattr_ext);
	if (c != VQF_BE_OK) {
		count_check(be, c);
		ret = refuse(&in, check_errno[c], reply, ctx);
		goto out_unlock;
	}
	if (in.opcode == FUSE_INIT) {
		struct fuse_init_in ii;

		memset(&init_copy, 0, sizeof(init_copy));
		memcpy(&init_copy, req, len < sizeof(init_copy) ?
		       len : sizeof(init_copy));
		memcpy(&ii, init_copy.b + sizeof(in), sizeof(ii));
		if (!be->got_init && ii.major == FUSE_KERNEL_VERSION &&
		    ii.minor < VQF_BE_MIN_MINOR) {
			STAT_INC(be, old_protocol);
			ret = refuse(&in, EPROTO, reply, ctx);
			goto out_unlock;
		}
		init_copy.h.len = sizeof(init_copy);
		fb.mem = &init_copy;
		fb.size = sizeof(init_copy);
		if (be->got_init)
			STAT_INC(be, reinit);
	} else if (!be->got_init) {
		STAT_INC(be, before_init);
	}

	/*
	 * libfuse keeps an INTERRUPT for a request it does not know, to
	 * answer it EAGAIN later, as /dev/fuse's resend protocol wants.
	 * Over a virtqueue there is nothing to answer and nobody resends:
	 * an INTERRUPT for a request that already got its reply (or never
	 * reached us) would sit in the session until it is destroyed.
	 * A request still on its queue is not interrupted; that is allowed,
	 * an INTERRUPT is only a hint.
	 */
	if (in.opcode == FUSE_INTERRUPT) {
		struct fuse_interrupt_in ii;

		memcpy(&ii, (const char *)req + sizeof(in), sizeof(ii));
		if (!inflight_has(be, ii.unique)) {
			STAT_INC(be, interrupt_stale);
			ret = VQF_BE_NO_REPLY;
			goto out_unlock;
		}
	}

	if (replies) {
		e = malloc(sizeof(*e));
		if (!e) {
			STAT_INC(be, nomem);
			ret = refuse(&in, ENOMEM, reply, ctx);
			goto out_unlock;
		}
		e->unique = in.unique;
		e->opcode = in.opcode;
		e->reply = reply;
		e->ctx = ctx;
		if (!inflight_add(be, e)) {
			free(e);
			STAT_INC(be, dup_unique);
			ret = refuse(&in, EBUSY, reply, ctx);
			goto out_unlock;
		}
	}

	STAT_INC(be, requests);
	if (!replies)
		STAT_INC(be, no_reply);
	if (in.opcode == FUSE_INIT)
		be->init_replied_ok = false;
	tls_be = be;
	tls_cur = e;
	fuse_session_process_buf(be->se, &fb);
	tls_cur = NULL;
	tls_be = NULL;
	/* e may be freed by now: only the flags set under the lock remain. */

	if (in.opcode == FUSE_INIT && exclusive && !be->got_init) {
		struct fuse_init_in ii;

		memcpy(&ii, init_copy.b + sizeof(in), sizeof(ii));
		if (be->init_replied_ok && ii.major == FUSE_KERNEL_VERSION) {
			be->got_init = true;
			be->setxattr_ext = be->init_out.flags &
					   FUSE_SETXATTR_EXT;
		}
	}
	if (in.opcode == FUSE_DESTROY && be->got_init)
		be->destroyed = true;
	ret = replies ? VQF_BE_REPLY : VQF_BE_NO_REPLY;
out_unlock:
	pthread_rwlock_unlock(&be->gate);
	return ret;
}

int vqf_backend_process_iov(struct vqf_backend *be, const struct iovec *iov,
			    int iovcnt, vqf_backend_reply_fn reply,
			    void *ctx)
{
	char small[4096];
	size_t len = 0, off = 0;
	char *buf;
	int i, ret;

	if (iovcnt < 1)
		return -EINVAL;
	if (iovcnt == 1)
		return vqf_backend_process(be, iov[0].iov_base, iov[0].iov_len,
					   reply, ctx);
	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	buf = len <= sizeof(small) ? small : malloc(len);
	if (!buf) {
		STAT_INC(be, nomem);
		return -ENOMEM;
	}
	for (i = 0; i < iovcnt; i++) {
		memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	ret = vqf_backend_process(be, buf, len, reply, ctx);
	if (buf != small)
		free(buf);
	return ret;
}

int vqf_backend_init_out(struct vqf_backend *be, struct fuse_init_out *out)
{
	int ret = -ENOTCONN;

	pthread_rwlock_rdlock(&be->gate);
	if (be->got_init) {
		*out = be->init_out;
		ret = 0;
	}
	pthread_rwlock_unlock(&be->gate);
	return ret;
}

size_t vqf_backend_inflight(struct vqf_backend *be)
{
	size_t n = 0;
	int i;

	for (i = 0; i < VQF_BE_SHARDS; i++) {
		pthread_mutex_lock(&be->shards[i].lock);
		n += be->shards[i].count;
		pthread_mutex_unlock(&be->shards[i].lock);
	}
	return n;
}

void vqf_backend_get_stats(struct vqf_backend *be,
			   struct vqf_backend_stats *out)
{
	pthread_mutex_lock(&be->stats_lock);
	*out = be->stats;
	pthread_mutex_unlock(&be->stats_lock);
}

struct fuse_session *vqf_backend_session(struct vqf_backend *be)
{
	return be->se;
}

/* Copies between @buf and the iovec's bytes [@skip, @skip + @len). */
static size_t iov_copy(void *buf, size_t len, const struct iovec *iov,
		       int iovcnt, size_t skip, bool out)
{
	size_t k = 0;
	int i;

	for (i = 0; i < iovcnt && k < len; i++) {
		char *p = (char *)iov[i].iov_base;
		size_t n = iov[i].iov_len;

		if (skip >= n) {
			skip -= n;
			continue;
		}
		n -= skip;
		if (n > len - k)
			n = len - k;
		if (out)
			memcpy((char *)buf + k, p + skip, n);
		else
			memcpy(p + skip, (char *)buf + k, n);
		k += n;
		skip = 0;
	}
	return k;
}

size_t vqf_iov_gather(void *dst, size_t len, const struct iovec *iov,
		      int iovcnt, size_t skip)
{
	return iov_copy(dst, len, iov, iovcnt, skip, true);
}

size_t vqf_iov_scatter(const void *src, size_t len, const struct iovec *iov,
		       int iovcnt, size_t skip)
{
	return iov_copy((void *)src, len, iov, iovcnt, skip, false);
}

bool vqf_backend_hostile_safe(const struct vqf_backend *be)
{
	return be && be->hostile_safe;
}
