// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vhost_shmem.c - the back-end channel's SHMEM_MAP/SHMEM_UNMAP (see
 * vqf_vhost_shmem.h).
 */
#define _GNU_SOURCE
#include "vqf_vhost_shmem.h"
#include "vqf_vhost.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* Counters have their own lock: a request holds s->lock for as long as
 * it waits for its ack, and nobody reading them should wait with it.
 */
#define ST_INC(s, field) do {				\
	pthread_mutex_lock(&(s)->stlock);		\
	(s)->st.field++;				\
	pthread_mutex_unlock(&(s)->stlock);		\
} while (0)

int vqf_vshm_init(struct vqf_vshm *s)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->timeout_ms = VQF_VHOST_SHMEM_TIMEOUT_MS;
	s->broken_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->broken_fd < 0)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->stlock, NULL);
	return 0;
}

void vqf_vshm_fini(struct vqf_vshm *s)
{
	vqf_vshm_close(s);
	close(s->broken_fd);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->stlock);
}

static void close_locked(struct vqf_vshm *s)
{
	u64 v;

	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->broken = false;
	s->pending = 0;
	/* A new connection starts with nothing broken. */
	if (read(s->broken_fd, &v, sizeof(v)) < 0)
		v = 0;
}

void vqf_vshm_close(struct vqf_vshm *s)
{
	pthread_mutex_lock(&s->lock);
	close_locked(s);
	pthread_mutex_unlock(&s->lock);
}

int vqf_vshm_set_fd(struct vqf_vshm *s, int fd)
{
	struct stat st;
	int type = 0;
	socklen_t tl = sizeof(type);

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
	    type != SOCK_STREAM) {
		close(fd);
		return -ENOTSOCK;
	}
	pthread_mutex_lock(&s->lock);
	close_locked(s);
	s->fd = fd;
	ST_INC(s, channels);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

bool vqf_vshm_ready(struct vqf_vshm *s)
{
	bool r;

	pthread_mutex_lock(&s->lock);
	r = s->fd >= 0 && !s->broken;
	pthread_mutex_unlock(&s->lock);
	return r;
}

void vqf_vshm_get_stats(struct vqf_vshm *s, struct vqf_vshm_stats *out)
{
	pthread_mutex_lock(&s->stlock);
	*out = s->st;
	pthread_mutex_unlock(&s->stlock);
}

static void broke(struct vqf_vshm *s, bool timeout)
{
	u64 one = 1;

	if (s->broken)
		return;
	s->broken = true;
	ST_INC(s, breaks);
	if (timeout)
		ST_INC(s, timeouts);
	if (write(s->broken_fd, &one, sizeof(one)) < 0)
		return;	/* already readable */
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for @events on the channel until @deadline; 0 or -ETIMEDOUT. */
static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int n;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* Exactly @len bytes of an ack; 0, -EPIPE at EOF, -ETIMEDOUT, -errno. */
static int recv_full(int fd, void *buf, size_t len, long long deadline)
{
	u8 *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		int ret;

		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			ret = wait_fd(fd, POLLIN, deadline);
			if (ret)
				return ret;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Reads the oldest ack owed (one per request, in order): its status, or
 * a negative errno when the channel cannot be followed any more.
 */
static int read_ack(struct vqf_vshm *s, u32 *req, u64 *status,
		    long long deadline)
{
	struct vqf_vhost_hdr h;
	int ret;

	ret = recv_full(s->fd, &h, sizeof(h), deadline);
	if (ret)
		return ret;
	if ((h.flags & VQF_VHOST_FLAG_VERSION_MASK) != VQF_VHOST_VERSION ||
	    !(h.flags & VQF_VHOST_FLAG_REPLY) || h.size != sizeof(*status) ||
	    (h.request != VQF_VHOST_BACKEND_SHMEM_MAP &&
	     h.request != VQF_VHOST_BACKEND_SHMEM_UNMAP))
		return -EPROTO;
	*req = h.request;
	return recv_full(s->fd, status, sizeof(*status), deadline);
}

static void count_ack(struct vqf_vshm *s, u32 req, u64 status)
{
	if (req == VQF_VHOST_BACKEND_SHMEM_MAP) {
		if (status)
			ST_INC(s, map_refused);
		else
			ST_INC(s, maps);
	} else if (status) {
		ST_INC(s, unmap_refused);
	} else {
		ST_INC(s, unmaps);
	}
}

/*
 * Waits until the channel takes more bytes, reading one pending ack if
 * that is what came first.
 */
static int drain_one(struct vqf_vshm *s, long long deadline)
{
	struct pollfd p = { .fd = s->fd, .events = POLLOUT | POLLIN };
	long long left;
	u64 status;
	u32 req;
	int n, ret;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (p.revents & POLLOUT)
			return 0;
		if (!(p.revents & POLLIN) || !s->pending)
			return -EPIPE;	/* hung up, or bytes nobody owes */
		ret = read_ack(s, &req, &status, deadline);
		if (ret)
			return ret;
		s->pending--;
		count_ack(s, req, status);
		return 0;
	}
}

/* Sends one request; its fd (-1: none) rides along. */
static int send_req(struct vqf_vshm *s, u32 req,
		    const struct vqf_vhost_mmap *m, int fd, long long deadline)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr a;
	} cb;
	u8 buf[VQF_VHOST_HDR_SIZE + sizeof(*m)];
	struct vqf_vhost_hdr h = {
		.request = req,
		.flags = VQF_VHOST_VERSION | VQF_VHOST_FLAG_NEED_REPLY,
		.size = sizeof(*m),
	};
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t off = 0;

	memcpy(buf, &h, VQF_VHOST_HDR_SIZE);
	memcpy(buf + VQF_VHOST_HDR_SIZE, m, sizeof(*m));
	memset(&cb, 0, sizeof(cb));
	if (fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = cb.b;
		mh.msg_controllen = sizeof(cb.b);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (off < sizeof(buf)) {
		ssize_t n;
		int ret;

		iov.iov_base = buf + off;
		iov.iov_len = sizeof(buf) - off;
		n = sendmsg(s->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			/* A full socket: the front-end may be blocked on
			 * acks nobody reads.  Read them meanwhile.
			 */
			ret = drain_one(s, deadline);
			if (ret)
				return ret;
			continue;
		}
		/* The descriptor went with the first bytes. */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		off += (size_t)n;
	}
	return 0;
}

static bool ack_ready(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static int request(struct vqf_vshm *s, u32 req, const struct vqf_vhost_mmap *m,
		   int fd, bool wait)
{
	long long deadline = now_ms() + s->timeout_ms;
	u64 status = 0;
	u32 got = 0;
	int ret;

	pthread_mutex_lock(&s->lock);
	if (s->fd < 0 || s->broken) {
		ST_INC(s, no_channel);
		pthread_mutex_unlock(&s->lock);
		return -ENOTCONN;
	}
	ret = send_req(s, req, m, fd, deadline);
	if (!ret)
		s->pending++;
	/* Acks owed for earlier requests are read as they come, so that a
	 * front-end answering a long reset never blocks on a full socket.
	 */
	while (!ret && !wait && s->pending && ack_ready(s->fd)) {
		ret = read_ack(s, &got, &status, deadline);
		if (!ret) {
			s->pending--;
			count_ack(s, got, status);
		}
	}
	while (!ret && wait && s->pending) {
		ret = read_ack(s, &got, &status, deadline);
		if (ret)
			break;
		s->pending--;
		count_ack(s, got, status);
	}
	if (ret) {
		broke(s, ret == -ETIMEDOUT);
		pthread_mutex_unlock(&s->lock);
		return -EPIPE;
	}
	pthread_mutex_unlock(&s->lock);
	/* The last ack read is this request's own. */
	return wait && status ? -EREMOTEIO : 0;
}

int vqf_vshm_map(struct vqf_vshm *s, u8 shmid, int fd, u64 fd_off,
		 u64 shm_off, u64 len, bool writable, bool wait)
{
	struct vqf_vhost_mmap m = {
		.shmid = shmid, .fd_offset = fd_off, .shm_offset = shm_off,
		.len = len, .flags = writable ? VQF_VHOST_SHMEM_MAP_RW : 0,
	};

	return request(s, VQF_VHOST_BACKEND_SHMEM_MAP, &m, fd, wait);
}

int vqf_vshm_unmap(struct vqf_vshm *s, u8 shmid, u64 shm_off, u64 len,
		   bool wait)
{
	struct vqf_vhost_mmap m = {
		.shmid = shmid, .shm_offset = shm_off, .len = len,
	};

	return request(s, VQF_VHOST_BACKEND_SHMEM_UNMAP, &m, -1, wait);
}
