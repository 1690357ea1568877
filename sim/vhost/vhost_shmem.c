// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vhost_shmem.c - the back-end channel's SHMEM_MAP/SHMEM_UNMAP (see
 * vqf_vhost_shmem.h): acks matched to the outstanding requests in order,
 * anything else breaks the channel; waits a stop can end.
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
	s->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
	if (s->broken_fd < 0 || s->cancel_fd < 0) {
		if (s->broken_fd >= 0)
			close(s->broken_fd);
		if (s->cancel_fd >= 0)
			close(s->cancel_fd);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->stlock, NULL);
	return 0;
}

void vqf_vshm_fini(struct vqf_vshm *s)
{
	vqf_vshm_close(s);
	close(s->broken_fd);
	close(s->cancel_fd);
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
	s->hup = false;
	s->out_head = s->out_n = 0;
	s->ack_len = 0;
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

/* The semaphore eventfd is the depth: each raise adds one, each lowering
 * takes one away (none left: an unmatched lowering, ignored).
 */
void vqf_vshm_cancel(struct vqf_vshm *s, bool on)
{
	u64 v = 1;

	if (on)
		(void)!write(s->cancel_fd, &v, sizeof(v));
	else
		(void)!read(s->cancel_fd, &v, sizeof(v));
}

static bool cancelling(struct vqf_vshm *s)
{
	struct pollfd p = { .fd = s->cancel_fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

/*
 * What a channel must be: 0 or the refusal's errno.  A listening socket
 * has no peer either.
 */
static int check_channel(int fd)
{
	struct sockaddr_storage a;
	socklen_t al = sizeof(a), tl = sizeof(int);
	int type = 0;
	struct stat st;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
	    type != SOCK_STREAM)
		return -EPROTOTYPE;
	if (getpeername(fd, (struct sockaddr *)&a, &al))
		return -ENOTCONN;
	return 0;
}

int vqf_vshm_set_fd(struct vqf_vshm *s, int fd)
{
	int ret = check_channel(fd);

	if (ret) {
		close(fd);
		pthread_mutex_lock(&s->stlock);
		if (ret == -ENOTSOCK)
			s->st.chan_not_socket++;
		else if (ret == -EPROTOTYPE)
			s->st.chan_not_stream++;
		else
			s->st.chan_unconnected++;
		pthread_mutex_unlock(&s->stlock);
		return ret;
	}
	/* A wait on the old channel would hold the lock: end it first. */
	vqf_vshm_cancel(s, true);
	pthread_mutex_lock(&s->lock);
	close_locked(s);
	s->fd = fd;
	pthread_mutex_unlock(&s->lock);
	vqf_vshm_cancel(s, false);
	ST_INC(s, channels);
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

/* The channel cannot be followed any more: @err says why. */
static void broke(struct vqf_vshm *s, int err)
{
	u64 one = 1;

	if (s->broken)
		return;
	s->broken = true;
	pthread_mutex_lock(&s->stlock);
	s->st.breaks++;
	switch (err) {
	case -ETIMEDOUT:
		s->st.timeouts++;
		break;
	case -EPROTO:
		s->st.acks_malformed++;
		break;
	case -EBADMSG:
		s->st.acks_mismatched++;
		break;
	case -EBADE:
		s->st.acks_unsolicited++;
		break;
	}
	pthread_mutex_unlock(&s->stlock);
	/* It may be readable already: a failed write changes nothing. */
	(void)!write(s->broken_fd, &one, sizeof(one));
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Waits for @events on the channel until @deadline or a cancel: 0 with
 * *@revents, -ETIMEDOUT, -ECANCELED or -EPIPE (poll failed).
 */
static int wait_chan(struct vqf_vshm *s, short events, long long deadline,
		     short *revents)
{
	struct pollfd p[2] = {
		{ .fd = s->fd, .events = events },
		{ .fd = s->cancel_fd, .events = POLLIN },
	};
	long long left;
	int n;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(p, 2, left > 1000000 ? 1000000 : (int)left);
		if (n < 0 && errno != EINTR)
			return -EPIPE;
		if (n <= 0)
			continue;
		/*
		 * What the front-end sent before a stop is read first: an
		 * ack already there completes its map, rather than leave it
		 * to an undo unmap (and the caller to count it failed).
		 */
		if (p[0].revents) {
			*revents = p[0].revents;
			return 0;
		}
		if (p[1].revents & POLLIN)
			return -ECANCELED;
	}
}

/*
 * Reads into s->ack until it holds @want bytes: 0; -EAGAIN when they are
 * not all there and @deadline is 0 (never wait); -EPIPE at EOF or an
 * error; or what wait_chan() returns.  A part read stays for the next
 * reader: the bytes belong to the oldest outstanding request whoever
 * reads them.
 */
static int ack_fill(struct vqf_vshm *s, unsigned int want, long long deadline)
{
	while (s->ack_len < want) {
		ssize_t n = recv(s->fd, s->ack + s->ack_len,
				 want - s->ack_len, MSG_DONTWAIT);
		short rev;
		int ret;

		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -EPIPE;
			if (!deadline)
				return -EAGAIN;
			ret = wait_chan(s, POLLIN, deadline, &rev);
			if (ret)
				return ret;
			continue;
		}
		s->ack_len += (unsigned int)n;
	}
	return 0;
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
 * Reads the next ack (waiting until @deadline; 0: only if it is all
 * there) and completes the oldest outstanding request with it (callers
 * call it only with one outstanding): 0 and *@status; -EAGAIN; or why
 * the channel broke.
 */
static int read_ack(struct vqf_vshm *s, u64 *status, long long deadline)
{
	u8 req = s->out[s->out_head];
	struct vqf_vhost_hdr h;
	int ret;

	ret = ack_fill(s, VQF_VHOST_HDR_SIZE, deadline);
	if (ret)
		return ret;
	memcpy(&h, s->ack, VQF_VHOST_HDR_SIZE);
	if ((h.flags & VQF_VHOST_FLAG_VERSION_MASK) != VQF_VHOST_VERSION ||
	    !(h.flags & VQF_VHOST_FLAG_REPLY) || h.size != sizeof(*status))
		return -EPROTO;
	if (h.request != req)
		return -EBADMSG;
	ret = ack_fill(s, VQF_VSHM_ACK_SIZE, deadline);
	if (ret)
		return ret;
	memcpy(status, s->ack + VQF_VHOST_HDR_SIZE, sizeof(*status));
	s->ack_len = 0;
	s->out_head = (s->out_head + 1) % VQF_VSHM_MAX_OUT;
	s->out_n--;
	count_ack(s, req, *status);
	return 0;
}

/*
 * With nothing outstanding the socket must be quiet: 0, -EBADE when
 * bytes came anyway, -EPIPE at EOF or an error.
 */
static int idle_check(struct vqf_vshm *s)
{
	ssize_t n;
	u8 b;

	if (s->ack_len)
		return -EBADE;
	do
		n = recv(s->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		return -EBADE;
	if (n == 0)
		return -EPIPE;
	return errno == EAGAIN ? 0 : -EPIPE;
}

/* Reads the acks that came in full, never waiting: 0 or a break. */
static int read_ready(struct vqf_vshm *s)
{
	u64 status;
	int ret;

	for (;;) {
		if (!s->out_n)
			return idle_check(s);
		ret = read_ack(s, &status, 0);
		if (ret == -EAGAIN)
			return 0;
		if (ret)
			return ret;
	}
}

/*
 * The socket takes no more bytes: waits until it does, reading the acks
 * that come meanwhile (the front-end may be blocked on acks nobody
 * reads).
 */
static int wait_writable(struct vqf_vshm *s, long long deadline)
{
	short rev;
	int ret;

	for (;;) {
		ret = wait_chan(s, POLLOUT | POLLIN, deadline, &rev);
		if (ret)
			return ret;
		if (rev & POLLOUT)
			return 0;
		if (!(rev & POLLIN))
			return -EPIPE;
		ret = read_ready(s);
		if (ret)
			return ret;
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
				return -EPIPE;
			/* Even with nothing of it sent yet, a cancel breaks
			 * the channel: an unmap that does not go out leaves
			 * the front-end's view and the device's apart.
			 */
			ret = wait_writable(s, deadline);
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

/* The waiting gauge (struct vqf_vshm_stats): @d is +1 or -1. */
static void waiting_add(struct vqf_vshm *s, int d)
{
	pthread_mutex_lock(&s->stlock);
	s->st.waiting += (u64)(s64)d;
	pthread_mutex_unlock(&s->stlock);
}

static void push(struct vqf_vshm *s, u8 req)
{
	s->out[(s->out_head + s->out_n++) % VQF_VSHM_MAX_OUT] = req;
}

/*
 * A stop ended the wait for the newest outstanding request, a map
 * (@m): it stays outstanding, its ack is read later.  An unmap of its
 * span follows at once, so that whatever the front-end makes of the
 * map, the span ends up empty, as the device, which sees the map fail,
 * believes; a later map of the span goes out after it.  0 or a break.
 */
static int undo_map(struct vqf_vshm *s, const struct vqf_vhost_mmap *m,
		    long long deadline)
{
	struct vqf_vhost_mmap u = {
		.shmid = m->shmid, .shm_offset = m->shm_offset, .len = m->len,
	};
	int ret = send_req(s, VQF_VHOST_BACKEND_SHMEM_UNMAP, &u, -1, deadline);

	if (ret)
		return ret;
	push(s, VQF_VHOST_BACKEND_SHMEM_UNMAP);
	ST_INC(s, undo_unmaps);
	return 0;
}

static int request(struct vqf_vshm *s, u32 req, const struct vqf_vhost_mmap *m,
		   int fd, bool wait)
{
	long long deadline = now_ms() + s->timeout_ms;
	u64 status = 0;
	int ret;

	pthread_mutex_lock(&s->lock);
	if (s->fd < 0 || s->broken) {
		ST_INC(s, no_channel);
		pthread_mutex_unlock(&s->lock);
		return -ENOTCONN;
	}
	if (wait && cancelling(s)) {
		ST_INC(s, cancelled);
		pthread_mutex_unlock(&s->lock);
		return -ECANCELED;
	}
	/* What came since: acks owed are read, bytes nobody owes break
	 * the channel before this request could take them for its own.
	 */
	ret = read_ready(s);
	/* Room for this one, and for the unmap a cancel may add. */
	while (!ret && s->out_n >= VQF_VSHM_MAX_OUT - 1)
		ret = read_ack(s, &status, deadline);
	if (!ret)
		ret = send_req(s, req, m, fd, deadline);
	if (ret)
		goto broken;
	push(s, req);
	if (!wait) {
		/* Acks owed are read as they come, so that a front-end
		 * answering a long reset never blocks on a full socket.
		 */
		ret = read_ready(s);
		if (ret)
			goto broken;
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	/* This request is the newest: its ack is the one that empties the
	 * queue.
	 */
	waiting_add(s, 1);
	while (s->out_n) {
		ret = read_ack(s, &status, deadline);
		if (ret == -ECANCELED) {
			waiting_add(s, -1);
			ST_INC(s, cancelled);
			ret = req == VQF_VHOST_BACKEND_SHMEM_MAP ?
			      undo_map(s, m, deadline) : 0;
			if (ret)
				broke(s, ret);
			pthread_mutex_unlock(&s->lock);
			return -ECANCELED;
		}
		if (ret) {
			waiting_add(s, -1);
			goto broken;
		}
	}
	waiting_add(s, -1);
	/* Anything after it is a duplicate - perhaps of this very ack,
	 * perhaps this is the duplicate: it is not taken as done.
	 */
	ret = idle_check(s);
	if (ret == -EBADE)
		goto broken;
	pthread_mutex_unlock(&s->lock);
	return status ? -EREMOTEIO : 0;
broken:
	if (ret == -ECANCELED)	/* a socket too full to wait on */
		ST_INC(s, cancelled);
	broke(s, ret);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int vqf_vshm_watch_fd(struct vqf_vshm *s)
{
	/* Only the caller's thread changes s->fd and s->hup. */
	return s->hup ? -1 : s->fd;
}

bool vqf_vshm_poll(struct vqf_vshm *s)
{
	int ret;

	if (pthread_mutex_trylock(&s->lock))
		return false;
	if (s->fd >= 0 && !s->broken) {
		ret = read_ready(s);
		/* EOF is left to the next request: a front-end that exits
		 * closes the channel and the connection together, and the
		 * connection's EOF is the one that tells.
		 */
		if (ret == -EPIPE)
			s->hup = true;
		else if (ret)
			broke(s, ret);
	}
	pthread_mutex_unlock(&s->lock);
	return true;
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
