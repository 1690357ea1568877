// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vfront.c - the simulated guest's device as a vhost-user front-end (see
 * vqf_vfront.h).
 */
#define _GNU_SOURCE
#include "vqf_vfront.h"
#include "vqf_vhost.h"
#include "vqf_vring_thread.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define VF_MAX_QUEUES		VQF_VHOST_MAX_QUEUES
#define VF_REPLY_TIMEOUT_MS	60000
#define VF_PAGE			4096ull
/* No region larger than this is reserved (the daemon's window cap). */
#define VF_REGION_MAX		(64ull << 30)
#define VF_CHAN_PAYLOAD		((u32)sizeof(struct vqf_vhost_mmap))

struct vf_queue {
	bool set;
	unsigned int num;
	struct vqf_vring_addr addr;
	int kick_fd, call_fd;		/* the driver's; not closed here */
};

struct vf_region {
	u8 *base;			/* PROT_NONE reservation, or NULL */
	u64 size;
};

struct vqf_vfront {
	struct vqf_vfront_cfg cfg;
	char tag[VQF_FS_TAG_LEN + 1];
	pthread_mutex_t lock;		/* the main socket's conversation */
	/*
	 * The transport state below (status, features, rings): a lost
	 * back-end's reset runs on the driver's resetter thread while the
	 * thread that saw the loss may still be in vqf_vfront_set_status().
	 */
	pthread_mutex_t dev_lock;
	int fd;
	int chan_fd;			/* our end of the back-end channel */
	int stop_fd;
	pthread_t thr;
	bool thr_started;

	u64 offered;			/* back-end's virtio features */
	u64 protocol;			/* negotiated protocol features */
	u64 acked;			/* the driver's features */
	unsigned int nreq;		/* request queues in the config */
	u8 status;
	bool running;
	struct vf_queue q[VF_MAX_QUEUES];
	struct vf_region region[2];	/* by shmid: window, version table */

	pthread_mutex_t cb_lock;	/* the lost callbacks and their calls */
	void (*watch)(void *ctx, int err);	/* the driver's */
	void *watch_ctx;
	pthread_mutex_t slock;		/* stats, lost */
	struct vqf_vfront_stats st;
	bool lost;
	int lost_err;
};

#define STAT_ADD(f, field, n) do {			\
	pthread_mutex_lock(&(f)->slock);		\
	(f)->st.field += (n);				\
	pthread_mutex_unlock(&(f)->slock);		\
} while (0)

static void vf_log(struct vqf_vfront *f, const char *what, u32 req, s64 v)
{
	if (f->cfg.log)
		fprintf(f->cfg.log, "vfront: %s %s (%u) %lld\n", what,
			vqf_vhost_request_name(req), req, (long long)v);
}

/* The first report wins; the callback runs outside every lock. */
static void lose(struct vqf_vfront *f, int err)
{
	bool first;

	pthread_mutex_lock(&f->slock);
	first = !f->lost;
	if (first) {
		f->lost = true;
		f->lost_err = err;
		f->st.lost = 1;
		f->st.lost_err = err;
	}
	pthread_mutex_unlock(&f->slock);
	if (!first)
		return;
	if (f->cfg.log)
		fprintf(f->cfg.log, "vfront: back-end lost: %s\n",
			strerror(-err));
	pthread_mutex_lock(&f->cb_lock);
	if (f->cfg.lost)
		f->cfg.lost(f->cfg.lost_ctx, err);
	if (f->watch)
		f->watch(f->watch_ctx, err);
	pthread_mutex_unlock(&f->cb_lock);
}

static void vf_set_lost(struct vqf_vfront *f, void (*fn)(void *, int),
			void *ctx)
{
	int err;

	pthread_mutex_lock(&f->cb_lock);
	f->watch = fn;
	f->watch_ctx = ctx;
	if (fn && vqf_vfront_is_lost(f, &err))
		fn(ctx, err);
	pthread_mutex_unlock(&f->cb_lock);
}

bool vqf_vfront_is_lost(struct vqf_vfront *f, int *err)
{
	bool lost;

	pthread_mutex_lock(&f->slock);
	lost = f->lost;
	if (err)
		*err = f->lost_err;
	pthread_mutex_unlock(&f->slock);
	return lost;
}

/* ---- the main socket --------------------------------------------------- */

static int send_msg(int fd, u32 req, u32 flags, const void *p, u32 size,
		    const int *fds, unsigned int nfds)
{
	struct vqf_vhost_hdr h = { .request = req, .flags = flags,
				   .size = size };
	union {
		char b[CMSG_SPACE(VQF_VHOST_MAX_FDS * sizeof(int))];
		struct cmsghdr a;
	} cb;
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = VQF_VHOST_HDR_SIZE },
		{ .iov_base = (void *)p, .iov_len = size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };
	ssize_t n;

	if (nfds) {
		struct cmsghdr *c;

		memset(&cb, 0, sizeof(cb));
		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	do {
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -ENOTCONN;
	/* A unix stream socket takes a message this small whole or not. */
	return n == (ssize_t)(VQF_VHOST_HDR_SIZE + size) ? 0 : -EPROTO;
}

/*
 * Reads exactly @len bytes, waiting up to @ms for each part; -ECANCELED
 * as soon as @stop_fd (-1: none) is readable.
 */
static int read_full(int fd, void *p, size_t len, int ms, int stop_fd)
{
	u8 *b = p;

	while (len) {
		struct pollfd pf[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = stop_fd, .events = POLLIN },
		};
		ssize_t n;
		int r;

		r = poll(pf, stop_fd >= 0 ? 2 : 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -ETIMEDOUT;
		if (stop_fd >= 0 && pf[1].revents)
			return -ECANCELED;
		n = recv(fd, b, len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return -ENOTCONN;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Reads the reply to @req: header checked, payload exactly @size bytes
 * (or, with @min, between @min and @size: *@got says how many).
 */
static int reply_ms(const struct vqf_vfront *f)
{
	return f->cfg.reply_timeout_ms ? (int)f->cfg.reply_timeout_ms :
					 VF_REPLY_TIMEOUT_MS;
}

static int read_reply(struct vqf_vfront *f, u32 req, void *p, u32 min,
		      u32 size, u32 *got)
{
	int ms = reply_ms(f);
	struct vqf_vhost_hdr h;
	int ret;

	ret = read_full(f->fd, &h, sizeof(h), ms, -1);
	if (ret)
		return ret;
	if (h.request != req ||
	    h.flags != (VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY) ||
	    h.size < min || h.size > size)
		return -EPROTO;
	ret = read_full(f->fd, p, h.size, ms, -1);
	if (ret)
		return ret;
	if (got)
		*got = h.size;
	STAT_ADD(f, replies, 1);
	return 0;
}

/*
 * One message, and its reply when it has one (@rp/@rmin/@rsize) or its
 * ack with REPLY_ACK.  A back-end that does not answer as the protocol
 * says is lost; a refusal in an ack is -EREMOTEIO (also lost: a front-end
 * cannot go on with a half-configured back-end, QEMU fails too).
 */
static int exchange(struct vqf_vfront *f, u32 req, const void *p, u32 size,
		    const int *fds, unsigned int nfds, void *rp, u32 rmin,
		    u32 rsize, u32 *got)
{
	bool ack = !rp && (f->protocol & (1ull << VQF_VHOST_PF_REPLY_ACK));
	u32 flags = VQF_VHOST_VERSION |
		    (ack ? VQF_VHOST_FLAG_NEED_REPLY : 0);
	int ret, err;
	u64 status = 0;

	if (vqf_vfront_is_lost(f, &err))
		return -ENOTCONN;
	pthread_mutex_lock(&f->lock);
	ret = send_msg(f->fd, req, flags, p, size, fds, nfds);
	if (!ret)
		STAT_ADD(f, msgs, 1);
	if (!ret && rp)
		ret = read_reply(f, req, rp, rmin, rsize, got);
	else if (!ret && ack)
		ret = read_reply(f, req, &status, sizeof(status),
				 sizeof(status), NULL);
	pthread_mutex_unlock(&f->lock);
	if (!ret && status)
		ret = -EREMOTEIO;
	vf_log(f, ret ? "refused" : "sent", req, ret ? ret : (s64)status);
	if (ret)
		lose(f, ret);
	return ret;
}

static int get_u64(struct vqf_vfront *f, u32 req, u64 *v)
{
	return exchange(f, req, NULL, 0, NULL, 0, v, sizeof(*v), sizeof(*v),
			NULL);
}

static int set_u64(struct vqf_vfront *f, u32 req, u64 v)
{
	return exchange(f, req, &v, sizeof(v), NULL, 0, NULL, 0, 0, NULL);
}

/* ---- the back-end channel ------------------------------------------- */

static void chan_reply(struct vqf_vfront *f, u32 req, u64 status)
{
	struct vqf_vhost_hdr h = {
		.request = req,
		.flags = VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY,
		.size = sizeof(u64),
	};
	u8 b[VQF_VHOST_HDR_SIZE + sizeof(u64)];

	memcpy(b, &h, VQF_VHOST_HDR_SIZE);
	memcpy(b + VQF_VHOST_HDR_SIZE, &status, sizeof(status));
	if (send(f->chan_fd, b, sizeof(b), MSG_NOSIGNAL) != (ssize_t)sizeof(b))
		lose(f, -ENOTCONN);
}

/* Checks and carries out one SHMEM_MAP/UNMAP; returns 0 or -errno. */
static int chan_do(struct vqf_vfront *f, u32 req,
		   const struct vqf_vhost_mmap *m, int fd)
{
	struct vf_region *r;
	u64 end;
	void *p;

	if (m->shmid >= 2 || !f->region[m->shmid].base) {
		STAT_ADD(f, shm_bad_region, 1);
		return -ENOENT;
	}
	r = &f->region[m->shmid];
	if (!m->len || (m->len | m->shm_offset) & (VF_PAGE - 1) ||
	    (req == VQF_VHOST_BACKEND_SHMEM_MAP &&
	     (m->fd_offset & (VF_PAGE - 1))) ||
	    __builtin_add_overflow(m->shm_offset, m->len, &end) ||
	    end > r->size) {
		STAT_ADD(f, shm_bad_range, 1);
		return -ERANGE;
	}
	if (m->flags & ~VQF_VHOST_SHMEM_MAP_RW) {
		STAT_ADD(f, shm_bad_flags, 1);
		return -EINVAL;
	}
	if (req == VQF_VHOST_BACKEND_SHMEM_UNMAP) {
		p = mmap(r->base + m->shm_offset, m->len, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			 MAP_FIXED, -1, 0);
		if (p == MAP_FAILED) {
			STAT_ADD(f, shm_map_failed, 1);
			return -errno;
		}
		STAT_ADD(f, shm_unmaps, 1);
		return 0;
	}
	p = mmap(r->base + m->shm_offset, m->len, PROT_READ |
		 (m->flags & VQF_VHOST_SHMEM_MAP_RW ? PROT_WRITE : 0),
		 MAP_SHARED | MAP_FIXED, fd, (off_t)m->fd_offset);
	if (p == MAP_FAILED) {
		int err = -errno;

		/* A failed MAP_FIXED may have unmapped the span: put the
		 * reservation back, so the span is empty as refused.
		 */
		mmap(r->base + m->shm_offset, m->len, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		     -1, 0);
		STAT_ADD(f, shm_map_failed, 1);
		return err;
	}
	STAT_ADD(f, shm_maps, 1);
	return 0;
}

static void close_fds(int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * One back-end request.  Returns 0 (served or refused and answered), or
 * the errno that breaks the channel: EOF, a payload too big to follow.
 */
static int chan_serve_one(struct vqf_vfront *f)
{
	union {
		char b[CMSG_SPACE(VQF_VHOST_MAX_FDS * sizeof(int))];
		struct cmsghdr a;
	} cb;
	struct vqf_vhost_hdr h;
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	struct vqf_vhost_mmap m;
	int fds[VQF_VHOST_MAX_FDS];
	unsigned int nfds = 0;
	struct cmsghdr *c;
	ssize_t n;
	int ret;

	/* Readable: what is there now, descriptors with its first byte;
	 * the rest of a split header waits as a payload does, bounded and
	 * cancelled by a stop.
	 */
	n = recvmsg(f->chan_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -ENOTCONN;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		unsigned int k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nfds + k > VQF_VHOST_MAX_FDS)
			k = VQF_VHOST_MAX_FDS - nfds;
		memcpy(fds + nfds, CMSG_DATA(c), k * sizeof(int));
		nfds += k;
	}
	ret = 0;
	if (n < (ssize_t)sizeof(h))
		ret = read_full(f->chan_fd, (u8 *)&h + n, sizeof(h) - (size_t)n,
				reply_ms(f), f->stop_fd);
	if (!ret && h.size > VF_CHAN_PAYLOAD)
		ret = -EPROTO;
	memset(&m, 0, sizeof(m));
	if (!ret && h.size)
		ret = read_full(f->chan_fd, &m, h.size, reply_ms(f),
				f->stop_fd);
	if (ret) {
		close_fds(fds, nfds);
		return ret == -ECANCELED ? ret : -EPROTO;
	}
	STAT_ADD(f, channel_msgs, 1);
	if ((h.flags & VQF_VHOST_FLAG_VERSION_MASK) != VQF_VHOST_VERSION ||
	    (h.flags & ~(VQF_VHOST_FLAG_VERSION_MASK |
			 VQF_VHOST_FLAG_NEED_REPLY)) ||
	    (h.request != VQF_VHOST_BACKEND_SHMEM_MAP &&
	     h.request != VQF_VHOST_BACKEND_SHMEM_UNMAP)) {
		STAT_ADD(f, shm_bad_header, 1);
		ret = -EPROTO;
	} else if (h.size != VF_CHAN_PAYLOAD) {
		STAT_ADD(f, shm_bad_size, 1);
		ret = -EMSGSIZE;
	} else if (nfds != (h.request == VQF_VHOST_BACKEND_SHMEM_MAP)) {
		STAT_ADD(f, shm_bad_fds, 1);
		ret = -EBADF;
	} else {
		ret = chan_do(f, h.request, &m, nfds ? fds[0] : -1);
	}
	close_fds(fds, nfds);	/* a mapping keeps its own reference */
	if (ret)
		STAT_ADD(f, shm_refused, 1);
	vf_log(f, ret ? "channel refused" : "channel", h.request, ret);
	if (h.flags & VQF_VHOST_FLAG_NEED_REPLY)
		chan_reply(f, h.request, (u64)-ret);
	return 0;
}

/*
 * The front-end's own thread: the back-end channel's requests, and the
 * main socket's hang-up (events 0: POLLHUP and POLLERR only, so that
 * replies stay for the thread that waits for them).
 */
static void *vf_main(void *arg)
{
	struct vqf_vfront *f = arg;

	for (;;) {
		struct pollfd pf[3] = {
			{ .fd = f->stop_fd, .events = POLLIN },
			{ .fd = f->fd, .events = 0 },
			{ .fd = f->chan_fd, .events = POLLIN },
		};
		int ret;

		ret = poll(pf, f->chan_fd >= 0 ? 3 : 2, -1);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0 || pf[0].revents)
			break;
		if (pf[1].revents & (POLLHUP | POLLERR)) {
			lose(f, -ENOTCONN);
			break;
		}
		if (pf[2].revents) {
			ret = chan_serve_one(f);
			if (ret == -ECANCELED)
				break;		/* vqf_vfront_free() */
			if (ret) {
				lose(f, ret);
				break;
			}
		}
	}
	return NULL;
}

/* ---- connect and negotiate -------------------------------------------- */

static int vf_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do {
		ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	} while (ret && errno == EINTR);
	if (ret) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

/* GET_SHMEM_CONFIG, and the regions reserved; a bad reply: no regions. */
static int shmem_setup(struct vqf_vfront *f)
{
	struct vqf_vhost_shmem_config *sc;
	unsigned int i, n = 0;
	u32 got;
	int ret;

	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	ret = exchange(f, VQF_VHOST_GET_SHMEM_CONFIG, NULL, 0, NULL, 0, sc,
		       sizeof(*sc), sizeof(*sc), &got);
	if (ret)
		goto out;
	for (i = 0; i < VQF_VHOST_MAX_SHMEM_REGIONS; i++)
		n += !!sc->memory_sizes[i];
	if (n != sc->nregions) {
		STAT_ADD(f, shm_config_bad, 1);
		goto out;
	}
	for (i = 0; i < 2; i++) {
		u64 sz = sc->memory_sizes[i];
		void *p;

		if (!sz)
			continue;
		if ((sz & (VF_PAGE - 1)) || sz > VF_REGION_MAX) {
			STAT_ADD(f, shm_config_bad, 1);
			continue;
		}
		p = mmap(NULL, sz, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			ret = -ENOMEM;
			goto out;
		}
		f->region[i].base = p;
		f->region[i].size = sz;
		STAT_ADD(f, shm_regions, 1);
	}
out:
	free(sc);
	return ret;
}

static int negotiate(struct vqf_vfront *f)
{
	u64 want_pf = (1ull << VQF_VHOST_PF_MQ) |
		      (1ull << VQF_VHOST_PF_REPLY_ACK);
	u64 pf = 0, qn = 0;
	int ret, sv[2];

	ret = get_u64(f, VQF_VHOST_GET_FEATURES, &f->offered);
	if (ret)
		return ret;
	f->st.features = f->offered;
	if (!(f->offered & (1ull << VIRTIO_F_VERSION_1)))
		return -ENODEV;
	if (f->offered & (1ull << VQF_VHOST_F_PROTOCOL_FEATURES)) {
		ret = get_u64(f, VQF_VHOST_GET_PROTOCOL_FEATURES, &pf);
		if (ret)
			return ret;
		f->st.protocol_features = pf;
		if (!f->cfg.no_shmem &&
		    (pf & (1ull << VQF_VHOST_PF_SHMEM)) &&
		    (pf & (1ull << VQF_VHOST_PF_BACKEND_REQ)) &&
		    (pf & (1ull << VQF_VHOST_PF_BACKEND_SEND_FD)))
			want_pf |= (1ull << VQF_VHOST_PF_SHMEM) |
				   (1ull << VQF_VHOST_PF_BACKEND_REQ) |
				   (1ull << VQF_VHOST_PF_BACKEND_SEND_FD);
		pf &= want_pf & ~f->cfg.protocol_mask;
		/* Acks only from the SET that negotiates them on. */
		ret = set_u64(f, VQF_VHOST_SET_PROTOCOL_FEATURES, pf);
		if (ret)
			return ret;
		f->protocol = pf;
		f->st.protocol_acked = pf;
	}
	f->nreq = 1;
	if (f->protocol & (1ull << VQF_VHOST_PF_MQ)) {
		ret = get_u64(f, VQF_VHOST_GET_QUEUE_NUM, &qn);
		if (ret)
			return ret;
		f->st.queue_num = qn;
		if (qn < 2)
			return -ENODEV;
		f->nreq = qn - 1 < f->cfg.num_request_queues ?
			  (unsigned int)(qn - 1) : f->cfg.num_request_queues;
		if (f->nreq > VF_MAX_QUEUES - 1)
			f->nreq = VF_MAX_QUEUES - 1;
	}
	if (f->protocol & (1ull << VQF_VHOST_PF_SHMEM)) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			return -errno;
		ret = exchange(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       &sv[1], 1, NULL, 0, 0, NULL);
		close(sv[1]);
		f->chan_fd = sv[0];
		if (ret)
			return ret;
		ret = shmem_setup(f);
		if (ret)
			return ret;
	}
	return exchange(f, VQF_VHOST_SET_OWNER, NULL, 0, NULL, 0, NULL, 0, 0,
			NULL);
}

int vqf_vfront_new(const struct vqf_vfront_cfg *cfg, struct vqf_vfront **out)
{
	struct vqf_vfront *f;
	size_t tl;
	int ret;

	if (!cfg || !out || !cfg->ram || vqf_gram_fd(cfg->ram) < 0 ||
	    (!cfg->socket && cfg->fd < 0)) {
		if (cfg && !cfg->socket && cfg->fd >= 0)
			close(cfg->fd);
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		if (!cfg->socket)
			close(cfg->fd);
		return -ENOMEM;
	}
	f->cfg = *cfg;
	f->cfg.lost = NULL;	/* armed once the front-end is handed out */
	if (!f->cfg.num_request_queues)
		f->cfg.num_request_queues = 1;
	if (!f->cfg.queue_size_max || f->cfg.queue_size_max > 32768)
		f->cfg.queue_size_max = 1024;
	tl = strlen(cfg->tag ? cfg->tag : "vqfuse");
	memcpy(f->tag, cfg->tag ? cfg->tag : "vqfuse",
	       tl < VQF_FS_TAG_LEN ? tl : VQF_FS_TAG_LEN);
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->slock, NULL);
	pthread_mutex_init(&f->cb_lock, NULL);
	pthread_mutex_init(&f->dev_lock, NULL);
	f->chan_fd = -1;
	f->fd = cfg->socket ? vf_connect(cfg->socket) : cfg->fd;
	f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->fd < 0 || f->stop_fd < 0) {
		ret = f->fd < 0 ? f->fd : -ENOMEM;
		goto fail;
	}
	ret = negotiate(f);
	if (ret)
		goto fail;
	if (pthread_create(&f->thr, NULL, vf_main, f)) {
		ret = -ENOMEM;
		goto fail;
	}
	f->thr_started = true;
	pthread_mutex_lock(&f->cb_lock);
	f->cfg.lost = cfg->lost;
	if (f->cfg.lost && vqf_vfront_is_lost(f, &ret))
		f->cfg.lost(f->cfg.lost_ctx, ret);
	pthread_mutex_unlock(&f->cb_lock);
	*out = f;
	return 0;
fail:
	vqf_vfront_free(f);
	return ret;
}

/* ---- the transport ----------------------------------------------------- */

static int start(struct vqf_vfront *f)
{
	u8 *base = vqf_gram_base(f->cfg.ram);
	struct vqf_vhost_mem mem = { .nregions = 1 };
	unsigned int i;
	u64 features;
	int ret, fd;

	features = f->acked;
	if (f->offered & (1ull << VQF_VHOST_F_PROTOCOL_FEATURES))
		features |= 1ull << VQF_VHOST_F_PROTOCOL_FEATURES;
	ret = set_u64(f, VQF_VHOST_SET_FEATURES, features);
	if (ret)
		return ret;
	mem.r[0].gpa = VQF_GRAM_BASE;
	mem.r[0].size = vqf_gram_size(f->cfg.ram);
	mem.r[0].uaddr = (u64)(uintptr_t)base;
	mem.r[0].mmap_offset = 0;
	fd = vqf_gram_fd(f->cfg.ram);
	ret = exchange(f, VQF_VHOST_SET_MEM_TABLE, &mem,
		       (u32)(8 + sizeof(mem.r[0])), &fd, 1, NULL, 0, 0, NULL);
	if (ret)
		return ret;
	for (i = 0; i < VF_MAX_QUEUES; i++) {
		struct vf_queue *q = &f->q[i];
		struct vqf_vhost_state s = { .index = i, .num = q->num };
		struct vqf_vhost_addr a = { .index = i };
		u64 idx = i;

		if (!q->set)
			continue;
		/* Ring addresses go as front-end virtual addresses. */
		a.desc = (u64)(uintptr_t)base + q->addr.desc - VQF_GRAM_BASE;
		a.avail = (u64)(uintptr_t)base + q->addr.avail - VQF_GRAM_BASE;
		a.used = (u64)(uintptr_t)base + q->addr.used - VQF_GRAM_BASE;
		ret = exchange(f, VQF_VHOST_SET_VRING_NUM, &s, sizeof(s),
			       NULL, 0, NULL, 0, 0, NULL);
		s.num = 0;
		if (!ret)
			ret = exchange(f, VQF_VHOST_SET_VRING_BASE, &s,
				       sizeof(s), NULL, 0, NULL, 0, 0, NULL);
		if (!ret)
			ret = exchange(f, VQF_VHOST_SET_VRING_ADDR, &a,
				       sizeof(a), NULL, 0, NULL, 0, 0, NULL);
		if (!ret)
			ret = exchange(f, VQF_VHOST_SET_VRING_KICK, &idx,
				       sizeof(idx), &q->kick_fd, 1, NULL, 0,
				       0, NULL);
		if (!ret)
			ret = exchange(f, VQF_VHOST_SET_VRING_CALL, &idx,
				       sizeof(idx), &q->call_fd, 1, NULL, 0,
				       0, NULL);
		if (ret)
			return ret;
	}
	f->running = true;
	if (f->offered & (1ull << VQF_VHOST_F_PROTOCOL_FEATURES)) {
		for (i = 0; i < VF_MAX_QUEUES; i++) {
			struct vqf_vhost_state s = { .index = i, .num = 1 };

			if (!f->q[i].set)
				continue;
			ret = exchange(f, VQF_VHOST_SET_VRING_ENABLE, &s,
				       sizeof(s), NULL, 0, NULL, 0, 0, NULL);
			if (ret)
				return ret;
		}
	}
	STAT_ADD(f, starts, 1);
	return 0;
}

/* GET_VRING_BASE on every ring: a vhost-user back-end stops it. */
static void stop(struct vqf_vfront *f)
{
	unsigned int i;

	if (!f->running)
		return;
	f->running = false;
	for (i = 0; i < VF_MAX_QUEUES; i++) {
		struct vqf_vhost_state s = { .index = i };

		if (!f->q[i].set)
			continue;
		if (exchange(f, VQF_VHOST_GET_VRING_BASE, &s, sizeof(s), NULL,
			     0, &s, sizeof(s), sizeof(s), NULL))
			break;	/* lost: it pushes nothing any more */
	}
	STAT_ADD(f, stops, 1);
}

u64 vqf_vfront_features(struct vqf_vfront *f)
{
	return f->offered & ~f->cfg.features_mask &
	       ~(1ull << VQF_VHOST_F_PROTOCOL_FEATURES) &
	       ~(1ull << VIRTIO_FS_F_NOTIFICATION);
}

int vqf_vfront_set_features(struct vqf_vfront *f, u64 features)
{
	int ret = 0;

	pthread_mutex_lock(&f->dev_lock);
	if ((f->status & (VQF_S_DRIVER | VQF_S_FEATURES_OK)) != VQF_S_DRIVER)
		ret = -EPERM;
	else if ((features & ~vqf_vfront_features(f)) ||
		 !(features & (1ull << VIRTIO_F_VERSION_1)))
		ret = -EINVAL;
	else
		f->acked = features;
	pthread_mutex_unlock(&f->dev_lock);
	return ret;
}

void vqf_vfront_read_config(struct vqf_vfront *f,
			    struct vqf_virtio_fs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	memcpy(cfg->tag, f->tag, strlen(f->tag));
	cfg->num_request_queues = cpu_to_le32(f->nreq);
}

unsigned int vqf_vfront_queue_max(struct vqf_vfront *f, unsigned int idx)
{
	return idx < 1 + f->nreq ? f->cfg.queue_size_max : 0;
}

int vqf_vfront_set_queue(struct vqf_vfront *f, unsigned int idx,
			 unsigned int num, const struct vqf_vring_addr *addr,
			 int kick_fd, int call_fd)
{
	int ret = 0;

	pthread_mutex_lock(&f->dev_lock);
	if (!(f->status & VQF_S_FEATURES_OK) || (f->status & VQF_S_DRIVER_OK))
		ret = -EPERM;
	else if (idx >= 1 + f->nreq)
		ret = -ENOENT;
	else if (!num || (num & (num - 1)) || num > f->cfg.queue_size_max ||
		 kick_fd < 0 || call_fd < 0 || !addr)
		ret = -EINVAL;
	if (!ret) {
		f->q[idx].set = true;
		f->q[idx].num = num;
		f->q[idx].addr = *addr;
		f->q[idx].kick_fd = kick_fd;
		f->q[idx].call_fd = call_fd;
	}
	pthread_mutex_unlock(&f->dev_lock);
	return ret;
}

static int set_status_locked(struct vqf_vfront *f, u8 status)
{
	int ret;

	if (!status) {
		stop(f);
		memset(f->q, 0, sizeof(f->q));
		f->status = 0;
		f->acked = 0;
		return 0;
	}
	if ((f->status & ~status) && !(f->status & VQF_S_FAILED))
		return -EINVAL;		/* a bit cleared without a reset */
	if ((status & VQF_S_FEATURES_OK) && !(f->status & VQF_S_FEATURES_OK) &&
	    !(f->acked & (1ull << VIRTIO_F_VERSION_1)))
		status &= ~VQF_S_FEATURES_OK;
	if ((status & VQF_S_DRIVER_OK) && !(f->status & VQF_S_DRIVER_OK)) {
		if (!(status & VQF_S_FEATURES_OK) || !f->q[0].set ||
		    !f->q[1].set)
			return -EINVAL;
		ret = start(f);
		if (ret) {
			/* Every failure there loses the back-end: its errno. */
			f->status = status & ~VQF_S_DRIVER_OK;
			f->status |= VQF_S_NEEDS_RESET;
			return ret;
		}
	}
	f->status = status;
	return 0;
}

int vqf_vfront_set_status(struct vqf_vfront *f, u8 status)
{
	int ret;

	pthread_mutex_lock(&f->dev_lock);
	ret = set_status_locked(f, status);
	pthread_mutex_unlock(&f->dev_lock);
	return ret;
}

u8 vqf_vfront_get_status(struct vqf_vfront *f)
{
	u8 status;

	pthread_mutex_lock(&f->dev_lock);
	status = f->status;
	pthread_mutex_unlock(&f->dev_lock);
	return status;
}

int vqf_vfront_kick(struct vqf_vfront *f, unsigned int idx)
{
	if (idx >= VF_MAX_QUEUES || !f->running || !f->q[idx].set)
		return -ENOENT;
	STAT_ADD(f, kicks, 1);
	return vqf_eventfd_signal(f->q[idx].kick_fd);
}

int vqf_vfront_shm(struct vqf_vfront *f, u8 id, void **base, u64 *len)
{
	if (id >= 2 || !f->region[id].base)
		return -ENOENT;
	*base = f->region[id].base;
	*len = f->region[id].size;
	return 0;
}

void vqf_vfront_get_stats(struct vqf_vfront *f, struct vqf_vfront_stats *out)
{
	pthread_mutex_lock(&f->slock);
	*out = f->st;
	pthread_mutex_unlock(&f->slock);
}

void vqf_vfront_free(struct vqf_vfront *f)
{
	unsigned int i;

	if (!f)
		return;
	if (f->fd >= 0 && f->running)
		stop(f);
	if (f->thr_started) {
		vqf_eventfd_signal(f->stop_fd);
		pthread_join(f->thr, NULL);
	}
	if (f->fd >= 0)
		close(f->fd);
	if (f->chan_fd >= 0)
		close(f->chan_fd);
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	for (i = 0; i < 2; i++)
		if (f->region[i].base)
			munmap(f->region[i].base, f->region[i].size);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->slock);
	pthread_mutex_destroy(&f->cb_lock);
	pthread_mutex_destroy(&f->dev_lock);
	free(f);
}

/* ---- vqf_gdrv_dev_ops -------------------------------------------------- */

static u64 op_features(void *dev)
{
	return vqf_vfront_features(dev);
}

static int op_set_features(void *dev, u64 features)
{
	return vqf_vfront_set_features(dev, features);
}

static void op_read_config(void *dev, struct vqf_virtio_fs_config *cfg)
{
	vqf_vfront_read_config(dev, cfg);
}

static unsigned int op_queue_max(void *dev, unsigned int idx)
{
	return vqf_vfront_queue_max(dev, idx);
}

static int op_set_queue(void *dev, unsigned int idx, unsigned int num,
			const struct vqf_vring_addr *addr, int kick_fd,
			int call_fd)
{
	return vqf_vfront_set_queue(dev, idx, num, addr, kick_fd, call_fd);
}

static int op_set_status(void *dev, u8 status)
{
	return vqf_vfront_set_status(dev, status);
}

static u8 op_get_status(void *dev)
{
	return vqf_vfront_get_status(dev);
}

static int op_kick(void *dev, unsigned int idx)
{
	return vqf_vfront_kick(dev, idx);
}

static void op_set_lost(void *dev, void (*fn)(void *ctx, int err), void *ctx)
{
	vf_set_lost(dev, fn, ctx);
}

static const struct vqf_gdrv_dev_ops vfront_ops = {
	.features = op_features,
	.set_features = op_set_features,
	.read_config = op_read_config,
	.queue_max = op_queue_max,
	.set_queue = op_set_queue,
	.set_status = op_set_status,
	.get_status = op_get_status,
	.kick = op_kick,
	.set_lost = op_set_lost,
};

const struct vqf_gdrv_dev_ops *vqf_vfront_dev_ops(void)
{
	return &vfront_ops;
}
