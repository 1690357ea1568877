// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_vhost - sim/vhost's vhost-user back-end reading a hostile
 * front-end's message stream, with descriptors.
 *
 * Input: records until the input or 256 records are used up:
 *   u8  ctl      bits 0-3: descriptors to attach (0..12, at most 64 per
 *                input); bits 4-5: their kind (0: the 64 KiB memfd that
 *                plays guest RAM, 1: an eventfd, 2: an empty memfd,
 *                3: a pipe - for SET_BACKEND_REQ_FD the back-end channel
 *                instead, a socket the harness serves, at most 4 per
 *                input); bit 6: raw flags follow; else bit 7 picks
 *                VERSION | NEED_REPLY over plain VERSION
 *   u8  request  0xff: a sync point instead (below), nothing else read;
 *                0xfe: the front-end shrinks the RAM memfd to 0 bytes
 *                under the back-end's mapping (SIGBUS on its next access;
 *                the next input starts with it at 64 KiB again)
 *   u16 size     payload bytes on the wire (the header says this too),
 *                at most 600 and what is left of the input
 *  [u32 flags]
 *   payload      size bytes
 * Every record is one sendmsg() on a socketpair to vqf_vhost_serve() in a
 * second thread.  At a sync point the harness sends GET_QUEUE_NUM, reads
 * replies up to its answer and waits until the back-end sleeps in poll():
 * the back-end has then seen its socket drained and (re)started or
 * stopped the device, which happens only there - so a front-end can bring
 * the device up on the memfd (rings wherever its addresses say), the same
 * way for the same input.  At the end the write side is shut; the stop at
 * EOF tears the device down again.
 *
 * The back-end has a 1 MiB DAX window and a 4 KiB version table, so it
 * offers SHMEM.  The harness answers every SHMEM_MAP/UNMAP on a channel
 * as a front-end would: every third with a non-zero status, every
 * seventh with a reply out of protocol (the back-end must then end the
 * connection), closing the descriptors that came along.
 *
 * Invariants: serve returns 0 or a negative errno; every refusal is in
 * `refused` and in exactly one cause; nothing received stays open (the
 * process's descriptor count is back to where it was).
 */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include "../common/thread_sleeps.h"
#include "vqf_passthrough.h"
#include "vqf_vhost.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define RAM	65536
#define MAXFD	64
#define MAXCH	4
#define TABLE	4096

static struct vqf_vhost *vh;
static int ram_fd = -1;
static int table_fd = -1;
static struct vqf_pt *pt;

/* A back-end channel the harness serves. */
struct chan {
	int fd;
	pthread_t thr;
};

static void *chan_main(void *arg)
{
	struct chan *c = arg;
	unsigned int n = 0;

	for (;;) {
		union {
			char b[CMSG_SPACE(8 * sizeof(int))];
			struct cmsghdr a;
		} cb;
		struct vqf_vhost_hdr h;
		struct iovec iov = { &h, sizeof(h) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cb.b,
				     .msg_controllen = sizeof(cb.b) };
		struct cmsghdr *cm;
		u8 pl[64], rep[VQF_VHOST_HDR_SIZE + 8];
		u64 status;
		ssize_t r = recvmsg(c->fd, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);

		if (r <= 0)
			break;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			size_t i;

			for (i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
				       sizeof(fd));
				close(fd);
			}
		}
		FZ_CHECK(r == sizeof(h) && h.size == sizeof(struct
							   vqf_vhost_mmap));
		FZ_CHECK(recv(c->fd, pl, h.size, MSG_WAITALL) == h.size);
		n++;
		status = n % 3 == 2;
		h.flags = VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY;
		h.size = n % 7 == 6 ? 4 : 8;
		memcpy(rep, &h, VQF_VHOST_HDR_SIZE);
		memcpy(rep + VQF_VHOST_HDR_SIZE, &status, 8);
		if (send(c->fd, rep, sizeof(rep), MSG_NOSIGNAL) < 0)
			break;
	}
	close(c->fd);
	return NULL;
}

static const struct vqf_fsdev_dax_ops dax_ops = {
	.file_fd = vqf_pt_dax_file_fd,
	.node_fd = vqf_pt_dax_node_fd,
};

struct srv {
	int fd, ret;
	pid_t tid;
};

static void *serve_main(void *arg)
{
	struct srv *s = arg;

	__atomic_store_n(&s->tid, (pid_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	s->ret = vqf_vhost_serve(vh, s->fd, -1);
	/*
	 * A back-end that ends the connection (an oversized payload, say)
	 * hangs up, as a daemon's exit would: the front-end's reads see EOF
	 * at once instead of waiting out every later sync point's poll.
	 */
	shutdown(s->fd, SHUT_RDWR);
	return NULL;
}

/* GET_QUEUE_NUM, its answer, then the back-end asleep (bounded). */
static void sync_point(int s, const struct srv *sv)
{
	struct vqf_vhost_hdr h = { VQF_VHOST_GET_QUEUE_NUM,
				   VQF_VHOST_VERSION, 0 };
	u8 junk[VQF_VHOST_MAX_PAYLOAD];
	int i;

	if (send(s, &h, sizeof(h), MSG_NOSIGNAL) != sizeof(h))
		return;
	for (;;) {
		struct pollfd p = { .fd = s, .events = POLLIN };

		if (poll(&p, 1, 2000) != 1 ||
		    recv(s, &h, sizeof(h), MSG_WAITALL) != sizeof(h))
			return;		/* the back-end hung up */
		FZ_CHECK(h.size <= sizeof(junk));
		if (h.size && recv(s, junk, h.size, MSG_WAITALL) !=
		    (ssize_t)h.size)
			return;
		if (h.request == VQF_VHOST_GET_QUEUE_NUM)
			break;
	}
	for (i = 0; i < 2000 && !thread_sleeps(sv->tid); i++)
		usleep(50);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n++;
	closedir(d);
	return n;
}

static char dir[] = "/tmp/vqf-fuzz-vhost-XXXXXX";

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* The shared directory goes with the process. */
static void rm_dir(void)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	struct vqf_vhost_cfg vc = { 0 };
	struct vqf_pt_config pc = { .nodev = true };	/* as fuzz_device */
	const struct fuse_lowlevel_ops *ops;
	struct vqf_backend *be;
	char path[64];
	size_t osz;
	int rw;

	FZ_CHECK(mkdtemp(dir));
	atexit(rm_dir);
	pc.source = dir;
	pc.io = VQF_PT_IO_PREAD;
	pt = vqf_pt_new(&pc);
	FZ_CHECK(pt);
	ops = vqf_pt_ops(&osz);
	be = vqf_backend_new(ops, osz, pt, NULL);
	FZ_CHECK(be);
	vc.num_request_queues = 2;
	vc.threads = 1;
	vc.be = be;
	vc.dax_window = 1u << 20;
	vc.dax_ops = &dax_ops;
	vc.dax_ctx = pt;
	rw = memfd_create("vqf-fuzz-table", MFD_CLOEXEC);
	FZ_CHECK(rw >= 0 && !ftruncate(rw, TABLE));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", rw);
	table_fd = open(path, O_RDONLY | O_CLOEXEC);
	FZ_CHECK(table_fd >= 0);
	close(rw);
	vc.ver_table_fd = table_fd;
	vc.ver_table_size = TABLE;
	FZ_CHECK(!vqf_vhost_new(&vc, &vh));
	ram_fd = memfd_create("vqf-fuzz-ram", MFD_CLOEXEC);
	FZ_CHECK(ram_fd >= 0 && !ftruncate(ram_fd, RAM));
}

static int make_fd(unsigned int kind)
{
	int p[2];

	switch (kind) {
	case 0:
		return dup(ram_fd);
	case 1:
		return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	case 2:
		return memfd_create("vqf-fuzz-empty", MFD_CLOEXEC);
	default:
		if (pipe2(p, O_CLOEXEC))
			return -1;
		close(p[1]);
		return p[0];
	}
}

static struct chan chans[MAXCH];
static unsigned int nchans;

/* The channel for SET_BACKEND_REQ_FD: one end served by a thread. */
static int make_chan(void)
{
	int p[2];

	if (nchans == MAXCH ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p))
		return make_fd(1);
	chans[nchans].fd = p[0];
	FZ_CHECK(!pthread_create(&chans[nchans].thr, NULL, chan_main,
				 &chans[nchans]));
	nchans++;
	return p[1];
}

static void send_rec(int s, u32 req, u32 flags, const u8 *pl, u32 size,
		     unsigned int nfds, unsigned int kind)
{
	u8 buf[VQF_VHOST_HDR_SIZE + 600];
	struct vqf_vhost_hdr h = { req, flags, size };
	union {
		char b[CMSG_SPACE(12 * sizeof(int))];
		struct cmsghdr a;
	} cb;
	struct iovec iov = { buf, VQF_VHOST_HDR_SIZE + size };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[12];
	unsigned int i, n = 0;

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + VQF_VHOST_HDR_SIZE, pl, size);
	memset(&cb, 0, sizeof(cb));
	for (i = 0; i < nfds; i++) {
		fds[n] = kind == 3 && req == VQF_VHOST_SET_BACKEND_REQ_FD ?
			 make_chan() : make_fd(kind);
		if (fds[n] >= 0)
			n++;
	}
	if (n) {
		struct cmsghdr *c;

		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	}
	/* A full socket buffer would block: the input stops there. */
	(void)sendmsg(s, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	for (i = 0; i < n; i++)
		close(fds[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vqf_vhost_stats s;
	struct srv srv = { 0 };
	pthread_t thr;
	struct fz f;
	unsigned int rec = 0, fds_used = 0;
	int sv[2], before;
	u64 causes;
	u8 junk[4096];

	if (!vh)
		setup();
	before = count_fds();
	FZ_CHECK(!ftruncate(ram_fd, RAM));
	fz_init(&f, data, size);
	FZ_CHECK(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	srv.fd = sv[1];
	FZ_CHECK(!pthread_create(&thr, NULL, serve_main, &srv));
	while (!__atomic_load_n(&srv.tid, __ATOMIC_ACQUIRE))
		usleep(10);
	while (f.n && rec++ < 256) {
		unsigned int ctl = fz_u8(&f), nfds = ctl & 15, kind = ctl >> 4 & 3;
		u32 req = fz_u8(&f), len, flags;

		if (req == 0xff) {
			sync_point(sv[0], &srv);
			continue;
		}
		if (req == 0xfe) {
			FZ_CHECK(!ftruncate(ram_fd, 0));
			continue;
		}
		len = fz_u16(&f);
		flags = ctl & 0x40 ? fz_u32(&f) :
			VQF_VHOST_VERSION |
			(ctl & 0x80 ? VQF_VHOST_FLAG_NEED_REPLY : 0);
		if (len > 600)
			len = 600;
		if (len > f.n)
			len = (u32)f.n;
		if (nfds > 12)
			nfds = 12;
		if (fds_used + nfds > MAXFD)
			nfds = 0;
		fds_used += nfds;
		send_rec(sv[0], req, flags, f.p, len, nfds, kind);
		f.p += len;
		f.n -= len;
		/* Replies must not fill the socket: read what is there. */
		while (recv(sv[0], junk, sizeof(junk), MSG_DONTWAIT) > 0)
			;
	}
	shutdown(sv[0], SHUT_WR);
	/* Until EOF the back-end writes replies: keep reading them. */
	while (pthread_tryjoin_np(thr, NULL)) {
		struct pollfd p = { .fd = sv[0], .events = POLLIN };

		if (poll(&p, 1, 1) > 0)
			(void)!recv(sv[0], junk, sizeof(junk), MSG_DONTWAIT);
	}
	FZ_CHECK(srv.ret <= 0);
	close(sv[0]);
	close(sv[1]);
	/* The back-end closed its ends: each channel thread sees EOF. */
	while (nchans)
		pthread_join(chans[--nchans].thr, NULL);

	vqf_vhost_get_stats(vh, &s);
	if (getenv("VQF_FUZZ_VERBOSE"))
		fprintf(stderr, "serve %d: %llu msgs, %llu refused, %llu starts, "
			"%llu ring adds, %llu fatal, %llu shm acks, %llu shm "
			"breaks\n", srv.ret,
			(unsigned long long)s.msgs,
			(unsigned long long)s.refused,
			(unsigned long long)s.starts,
			(unsigned long long)s.ring_adds,
			(unsigned long long)s.fatal,
			(unsigned long long)(s.shm.maps + s.shm.unmaps +
					     s.shm.map_refused +
					     s.shm.unmap_refused),
			(unsigned long long)s.shm.breaks);
	causes = s.bad_header + s.unsupported + s.bad_size +
		 s.too_many_regions + s.no_regions + s.bad_fds +
		 s.too_many_fds + s.bad_index + s.bad_value + s.bad_align +
		 s.region_wrap + s.region_overlap + s.region_file +
		 s.region_fd + s.ring_fd + s.mmap_failed + s.ring_fault +
		 s.not_negotiated + s.backend_fd_bad;
	FZ_CHECK(causes == s.refused);
	FZ_CHECK(count_fds() == before);
	return 0;
}
