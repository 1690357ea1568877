/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vfront_peer.h - vhost-user messages as a peer of the front-end sees
 * them (test_vfront.c's fake back-end, test_vfront_e2e.c's proxy): one
 * message read whole with its descriptors, one written, and bounded waits
 * for what another thread does.
 *
 * Every wait is bounded by PEER_WAIT_MS against a hang only, far beyond
 * anything under valgrind on a loaded machine: a run that works never
 * waits for it, and no assertion depends on how long anything took.
 */
#ifndef VFRONT_PEER_H
#define VFRONT_PEER_H

#define PEER_WAIT_MS	120000
#define PEER_PAYLOAD	4096

struct pmsg {
	struct vqf_vhost_hdr h;
	u8 p[PEER_PAYLOAD];
	int fds[VQF_VHOST_MAX_FDS];
	unsigned int nfds;
};

/* One message from @fd: 1, or 0 at EOF or on a stream that breaks. */
static inline int peer_recv(int fd, struct pmsg *m)
{
	union {
		char b[CMSG_SPACE(VQF_VHOST_MAX_FDS * sizeof(int))];
		struct cmsghdr a;
	} cb;
	struct iovec iov = { .iov_base = &m->h, .iov_len = sizeof(m->h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	struct cmsghdr *c;
	ssize_t n;

	m->nfds = 0;
	do {
		n = recvmsg(fd, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(m->h))
		return 0;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		unsigned int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		if (c->cmsg_type != SCM_RIGHTS || m->nfds + k >
		    VQF_VHOST_MAX_FDS)
			continue;
		memcpy(m->fds + m->nfds, CMSG_DATA(c), k * sizeof(int));
		m->nfds += k;
	}
	if (m->h.size > PEER_PAYLOAD)
		return 0;
	if (m->h.size && recv(fd, m->p, m->h.size, MSG_WAITALL) !=
	    (ssize_t)m->h.size)
		return 0;
	return 1;
}

static inline void peer_close_fds(struct pmsg *m)
{
	unsigned int i;

	for (i = 0; i < m->nfds; i++)
		close(m->fds[i]);
	m->nfds = 0;
}

/* One message to @fd; 0 or -1 (the peer is gone). */
static inline int peer_send(int fd, u32 req, u32 flags, const void *p,
			    u32 size, const int *fds, unsigned int nfds)
{
	static const u8 zero[PEER_PAYLOAD];
	struct vqf_vhost_hdr h = { .request = req, .flags = flags,
				   .size = size };
	union {
		char b[CMSG_SPACE(VQF_VHOST_MAX_FDS * sizeof(int))];
		struct cmsghdr a;
	} cb;
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)(p ? p : zero), .iov_len = size },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = size ? 2 : 1 };

	if (size > PEER_PAYLOAD)
		return -1;
	memset(&cb, 0, sizeof(cb));
	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) ==
	       (ssize_t)(sizeof(h) + size) ? 0 : -1;
}

/* A reply as a well-behaved peer writes it. */
static inline int peer_reply(int fd, u32 req, const void *p, u32 size)
{
	return peer_send(fd, req, VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY,
			 p, size, NULL, 0);
}

/* Waits until @cond(@arg) holds, polling; false if it never did. */
static inline bool peer_wait(bool (*cond)(void *arg), void *arg)
{
	unsigned int i;

	for (i = 0; i < PEER_WAIT_MS; i++) {
		if (cond(arg))
			return true;
		usleep(1000);
	}
	return cond(arg);
}

#endif
