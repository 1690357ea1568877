// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_vhost_shmem.c - the DAX window and the version table over
 * vhost-user's SHMEM protocol, against a fake front-end (the harness of
 * test_vhost.c) that also serves the back-end channel: GET_SHMEM_CONFIG,
 * the table's read-only SHMEM_MAP at the INIT that asks for it (and the
 * INIT's promise of it only once the front-end mapped it), SETUPMAPPING and
 * REMOVEMAPPING carried out as SHMEM_MAP/UNMAP with the host file's fd
 * (checked by mmap'ing it), fh ~0 as Linux's virtiofs sends it, the
 * unmappings of DESTROY, a stop and a disconnect, and every refusal;
 * and `vqfuse-sim vhost-user --guests 2` itself, two front-ends on one
 * table (argv[1] names the program; without it that case is skipped).
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
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "vqf_dirent.h"
#include "vqf_hub.h"
#include "vqf_passthrough.h"
#include "vqf_vhost.h"
#include "vqf_vhost_shmem.h"
#include "vqf_vring_drv.h"
#include "vqf_vring_thread.h"

#include "vhost_fe.h"
#include "vhost_daemon.h"
#include "../common/thread_sleeps.h"

#define NREQ		1
#define NQ		(1 + NREQ)
#define RING_NUM	64
#define RAM_SIZE	(8u << 20)
#define RAM_GPA		0x100000ull
#define RING_AREA	0x10000ull	/* per ring, from the start of RAM */
#define BUF_START	(NQ * RING_AREA)
#define WINDOW		(1ull << 20)
#define TABLE		(64ull << 10)
#define FILE_BYTES	(64u << 10)
#define PG		4096ull
#define MAX_SEEN	64

/* One back-end request as the fake front-end saw it. */
struct seen {
	u32 req, flags;
	struct vqf_vhost_mmap m;
	bool had_fd;
	int accmode;		/* of the fd: O_RDONLY or O_RDWR */
	u8 head[16];		/* the fd's first bytes at fd_offset */
};

struct fe {
	VHOST_FE_FIELDS
	/* The back-end channel: [0] the front-end's end, [1] sent. */
	int bk[2];
	pthread_t bthr;
	bool bthr_on;
	pthread_mutex_t block;
	pthread_cond_t bcond;	/* nseen grew */
	struct seen seen[MAX_SEEN];
	unsigned int nseen;
	unsigned int nanswered;	/* of those seen, answered or let be */
	unsigned int refuse;	/* acks to answer non-zero */
	bool silent;		/* read requests, answer none */
	bool hold;		/* do not read the channel (yet) */
	bool dup;		/* send the next ack twice */
	int table_fd;		/* read-only, as the CLI gives it */
	int table_rw;		/* -1 with a hub (the hub's memfd) */
	struct vqf_hub *hub;	/* setup_hub(): requests through a port */
	struct vqf_hub_port *port;
	/* The front-end's mapping of shmid 1 and its size: set under
	 * block (fe_table()), so that a case sees when it came.
	 */
	const u8 *table_map;
	u64 table_len;
	int table_wmap_err;	/* errno of a writable mmap of its fd */
	u8 want[FILE_BYTES];
};

#include "vhost_fe_wire.h"

/* ---- the wire ---------------------------------------------------------- */

static void *backend_main(void *arg);

/*
 * The sequence QEMU 7.2 sends when the guest sets DRIVER_OK, with the
 * protocol features offered minus @drop; the back-end channel is given
 * (and served by a thread) when BACKEND_REQ is negotiated.
 */
static void handshake(struct fe *f, u64 drop)
{
	u64 feat, pf;

	feat = fe_handshake_begin(f, &pf);
	assert_true(pf & (1ull << VQF_VHOST_PF_SHMEM));
	assert_true(pf & (1ull << VQF_VHOST_PF_BACKEND_REQ));
	assert_true(pf & (1ull << VQF_VHOST_PF_BACKEND_SEND_FD));
	pf &= ~drop;
	msg(f, VQF_VHOST_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	if (pf & (1ull << VQF_VHOST_PF_BACKEND_REQ)) {
		assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
				       &f->bk[1], 1), 0);
		close(f->bk[1]);
		f->bk[1] = -1;
		assert_int_equal(pthread_create(&f->bthr, NULL, backend_main,
						f), 0);
		f->bthr_on = true;
	}
	fe_handshake_end(f, feat);
}

/*
 * INIT asking for the version table, as a guest with cache=shared does;
 * returns the reply's flags2 (whether the table was promised).
 */
static u32 fuse_init_ask(struct fe *f)
{
	struct fuse_init_in ii = {
		.major = FUSE_KERNEL_VERSION, .minor = 36,
		.max_readahead = 65536, .flags = FUSE_INIT_EXT,
		.flags2 = VQF_FUSE_INIT_SHARED_VERSION,
	};
	struct fuse_init_out io;
	struct fuse_out_header oh;

	memset(&io, 0, sizeof(io));
	oh = fuse_call(f, 1, FUSE_INIT, 0, &ii, sizeof(ii), &io, sizeof(io));
	assert_int_equal(oh.error, 0);
	assert_int_equal(io.major, FUSE_KERNEL_VERSION);
	return io.flags2;
}

/*
 * Rings, the handshake without the protocol features in @drop, an INIT
 * that asks for the table (which maps it, when the regions are served).
 */
static void start(struct fe *f, u64 drop)
{
	rings_create(f, NULL);
	handshake(f, drop);
	fuse_init_ask(f);
}

/* ---- the driver side ----------------------------------------------------- */

/* ---- the window's file lookups, the host file ---------------------------- */

static const struct vqf_fsdev_dax_ops dax_ops = {
	.file_fd = vqf_pt_dax_file_fd,
	.node_fd = vqf_pt_dax_node_fd,
};

static void host_file(struct fe *f)
{
	char path[128];
	unsigned int i;
	int fd;

	for (i = 0; i < FILE_BYTES; i++)
		f->want[i] = (u8)(i * 7 + i / 4096);
	snprintf(path, sizeof(path), "%s/f", f->dir);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, f->want, FILE_BYTES), FILE_BYTES);
	close(fd);
}

/* ---- the back-end channel, served as a front-end does ---------------- */

/*
 * Records @s before it is answered (the daemon's reply to the request
 * that sent it waits for the answer, so a case sees it there); the
 * caller holds f->block.
 */
static void seen_add(struct fe *f, const struct seen *s)
{
	if (f->nseen < MAX_SEEN)
		f->seen[f->nseen++] = *s;
	pthread_cond_broadcast(&f->bcond);
}

static void *backend_main(void *arg)
{
	struct fe *f = arg;

	for (;;) {
		union {
			char b[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr a;
		} cb;
		struct vqf_vhost_hdr h;
		struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = cb.b,
				     .msg_controllen = sizeof(cb.b) };
		struct cmsghdr *c;
		struct seen s = { 0 };
		u8 rep[VQF_VHOST_HDR_SIZE + 8];
		u64 status = 0;
		bool twice;
		int fd = -1;
		ssize_t n;

		pthread_mutex_lock(&f->block);
		while (f->hold)
			pthread_cond_wait(&f->bcond, &f->block);
		pthread_mutex_unlock(&f->block);
		n = recvmsg(f->bk[0], &mh, MSG_WAITALL);
		if (n <= 0)
			break;
		assert_int_equal(n, sizeof(h));
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			memcpy(&fd, CMSG_DATA(c), sizeof(fd));
		assert_int_equal(h.size, sizeof(s.m));
		assert_int_equal(recv(f->bk[0], &s.m, sizeof(s.m),
				      MSG_WAITALL), sizeof(s.m));
		s.req = h.request;
		s.flags = h.flags;
		s.had_fd = fd >= 0;
		/* A refused map maps nothing. */
		pthread_mutex_lock(&f->block);
		if (f->refuse) {
			f->refuse--;
			status = 1;
		}
		pthread_mutex_unlock(&f->block);
		if (fd >= 0 && s.m.shmid == VQF_VHOST_SHMID_VERSION &&
		    !status && !f->table_map) {
			void *w = mmap(NULL, s.m.len, PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, 0);

			f->table_wmap_err = w == MAP_FAILED ? errno : 0;
			if (w != MAP_FAILED)
				munmap(w, s.m.len);
			w = mmap(NULL, s.m.len, PROT_READ, MAP_SHARED, fd, 0);
			assert_true(w != MAP_FAILED);
			pthread_mutex_lock(&f->block);
			f->table_len = s.m.len;
			f->table_map = w;
			pthread_mutex_unlock(&f->block);
		}
		if (fd >= 0) {
			void *p = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd,
				       (off_t)s.m.fd_offset);
			struct stat fst;

			s.accmode = fcntl(fd, F_GETFL) & O_ACCMODE;
			assert_true(p != MAP_FAILED);
			/* Past the end of the file a load is SIGBUS. */
			assert_int_equal(fstat(fd, &fst), 0);
			if (s.m.fd_offset < (u64)fst.st_size)
				memcpy(s.head, p, sizeof(s.head));
			munmap(p, PG);
			close(fd);
		}
		pthread_mutex_lock(&f->block);
		seen_add(f, &s);
		if (f->silent) {
			f->nanswered++;
			pthread_mutex_unlock(&f->block);
			continue;
		}
		twice = f->dup;
		f->dup = false;
		pthread_mutex_unlock(&f->block);
		h.flags = VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY;
		h.size = sizeof(status);
		memcpy(rep, &h, VQF_VHOST_HDR_SIZE);
		memcpy(rep + VQF_VHOST_HDR_SIZE, &status, sizeof(status));
		/* A back-end that hung up may still have sent more. */
		(void)!send(f->bk[0], rep, sizeof(rep), MSG_NOSIGNAL);
		if (twice)
			(void)!send(f->bk[0], rep, sizeof(rep), MSG_NOSIGNAL);
		pthread_mutex_lock(&f->block);
		f->nanswered++;
		pthread_cond_broadcast(&f->bcond);
		pthread_mutex_unlock(&f->block);
	}
	return NULL;
}

/* The front-end's mapping of the table now, or NULL. */
static const u8 *fe_table(struct fe *f)
{
	const u8 *p;

	pthread_mutex_lock(&f->block);
	p = f->table_map;
	pthread_mutex_unlock(&f->block);
	return p;
}

/*
 * Waits until the channel has seen @n requests (n <= MAX_SEEN; one that
 * never comes is a hang for ctest's TIMEOUT); returns the count.
 */
static unsigned int wait_seen(struct fe *f, unsigned int n)
{
	unsigned int got;

	pthread_mutex_lock(&f->block);
	while (f->nseen < n)
		pthread_cond_wait(&f->bcond, &f->block);
	got = f->nseen;
	pthread_mutex_unlock(&f->block);
	return got;
}

static struct seen seen_at(struct fe *f, unsigned int i)
{
	struct seen s;

	pthread_mutex_lock(&f->block);
	assert_true(i < f->nseen);
	s = f->seen[i];
	pthread_mutex_unlock(&f->block);
	return s;
}

static void assert_unmap(const struct seen *s, u64 off, u64 len)
{
	assert_int_equal(s->req, VQF_VHOST_BACKEND_SHMEM_UNMAP);
	assert_int_equal(s->m.shmid, VQF_VHOST_SHMID_CACHE);
	assert_int_equal(s->m.shm_offset, off);
	assert_int_equal(s->m.len, len);
	assert_false(s->had_fd);
}

static void *serve_noop(void *arg)
{
	return arg;
}

/* ---- fixture ---------------------------------------------------------------- */

/* Requests through the hub's current port; a stop opens a new one. */
static int t_serve(void *ctx, void *req, size_t len,
		   vqf_backend_reply_fn reply, void *rctx)
{
	struct fe *f = ctx;

	return vqf_hub_process(f->port, req, len, reply, rctx);
}

static void t_serve_reset(void *ctx)
{
	struct fe *f = ctx;
	struct vqf_hub_port *p;

	assert_int_equal(vqf_hub_port_new(f->hub, &p), 0);
	vqf_hub_port_free(f->port);
	f->port = p;
}

/*
 * The front-end's own side: guest RAM, the rings' eventfds, the back-end
 * channel's socket pair.
 */
static void fe_side_init(struct fe *f)
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    f->bk), 0);
	pthread_mutex_init(&f->block, NULL);
	pthread_cond_init(&f->bcond, NULL);
	fe_ram_init(f);
}

/*
 * What a case may ask of setup_any() through cmocka's prestate; without
 * one: the default ack timeout and a version table.
 */
struct prestate {
	unsigned int shmem_timeout_ms;
	bool table;
	unsigned int threads;	/* vqf_vhost_cfg.threads */
};

static int setup_any(void **state, bool hub)
{
	const struct prestate *ps = *state;
	struct vqf_vhost_cfg vc = { 0 };
	struct fe *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fe_backend_init(f);
	vc.dax_window = WINDOW;
	vc.dax_ops = &dax_ops;
	vc.dax_ctx = f->pt;
	if (hub) {
		struct vqf_hub_cfg hc = { .be = f->be, .root = f->dir };

		assert_int_equal(vqf_hub_new(&hc, &f->hub), 0);
		assert_int_equal(vqf_hub_port_new(f->hub, &f->port), 0);
		f->table_fd = vqf_hub_table_fd(f->hub);
		assert_true(f->table_fd >= 0);
		assert_non_null(vqf_hub_table(f->hub, &vc.ver_table_size));
		f->table_rw = -1;
		vc.ver_table_fd = f->table_fd;
		vc.serve = t_serve;
		vc.serve_ctx = f;
		vc.serve_reset = t_serve_reset;
		goto table_done;
	}
	if (ps && !ps->table) {
		f->table_fd = -1;
		f->table_rw = -1;
		goto table_done;
	}
	f->table_rw = memfd_create("vqf-table", MFD_CLOEXEC);
	assert_true(f->table_rw >= 0);
	assert_int_equal(ftruncate(f->table_rw, TABLE), 0);
	assert_int_equal(pwrite(f->table_rw, "version-table!!", 16, 0), 16);
	{
		char p[64];

		snprintf(p, sizeof(p), "/proc/self/fd/%d", f->table_rw);
		f->table_fd = open(p, O_RDONLY | O_CLOEXEC);
		assert_true(f->table_fd >= 0);
	}
	vc.ver_table_fd = f->table_fd;
	vc.ver_table_size = TABLE;
table_done:
	fe_side_init(f);
	host_file(f);
	if (ps) {
		vc.shmem_timeout_ms = ps->shmem_timeout_ms;
		vc.threads = ps->threads;
	}
	fe_serve_start(f, &vc);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_any(state, false);
}

static int setup_hub(void **state)
{
	return setup_any(state, true);
}

static int teardown(void **state)
{
	struct fe *f = *state;

	if (f->sv[0] >= 0)
		close(f->sv[0]);
	pthread_join(f->thr, NULL);
	close(f->sv[1]);
	/* A case that failed while holding the channel lets it go. */
	pthread_mutex_lock(&f->block);
	f->hold = false;
	pthread_cond_broadcast(&f->bcond);
	pthread_mutex_unlock(&f->block);
	if (f->bk[0] >= 0)
		shutdown(f->bk[0], SHUT_RDWR);
	if (f->bthr_on)
		pthread_join(f->bthr, NULL);
	if (f->bk[0] >= 0)
		close(f->bk[0]);
	if (f->bk[1] >= 0)
		close(f->bk[1]);
	close(f->table_fd);
	if (f->table_rw >= 0)
		close(f->table_rw);
	if (f->table_map)
		munmap((void *)f->table_map, f->table_len);
	pthread_cond_destroy(&f->bcond);
	pthread_mutex_destroy(&f->block);
	vqf_vhost_free(f->vh);
	if (f->hub) {
		vqf_hub_port_free(f->port);
		vqf_hub_free(f->hub);
	}
	vqf_backend_free(f->be);
	vqf_pt_free(f->pt);
	fe_ram_free(f);
	rm_dir(f->dir);
	/* Every descriptor the back-end received is closed again. */
	assert_int_equal(count_fds(), f->fds_before);
	free(f);
	return 0;
}

static void stats(struct fe *f, struct vqf_vhost_stats *s)
{
	/* A GET round trip: everything sent before has been handled. */
	get_u64(f, VQF_VHOST_GET_QUEUE_NUM);
	vqf_vhost_get_stats(f->vh, s);
}

/* ---- FUSE through the rings -------------------------------------------- */

static u64 lookup_f(struct fe *f)
{
	struct fuse_entry_out eo;
	struct fuse_out_header oh;

	oh = fuse_call(f, 1, FUSE_LOOKUP, 1, "f", 2, &eo, sizeof(eo));
	assert_int_equal(oh.error, 0);
	return eo.nodeid;
}

static u64 open_f(struct fe *f, u64 nodeid, u32 flags)
{
	struct fuse_open_in oi = { .flags = flags };
	struct fuse_open_out oo;
	struct fuse_out_header oh;

	oh = fuse_call(f, 1, FUSE_OPEN, nodeid, &oi, sizeof(oi), &oo,
		       sizeof(oo));
	assert_int_equal(oh.error, 0);
	return oo.fh;
}

static int setupmap(struct fe *f, u64 nodeid, u64 fh, u64 foff, u64 len,
		    u64 moff, bool w)
{
	struct fuse_setupmapping_in in = {
		.fh = fh, .foffset = foff, .len = len, .moffset = moff,
		.flags = FUSE_SETUPMAPPING_FLAG_READ |
			 (w ? FUSE_SETUPMAPPING_FLAG_WRITE : 0),
	};

	return fuse_call(f, 1, FUSE_SETUPMAPPING, nodeid, &in, sizeof(in),
			 NULL, 0).error;
}

static int removemap(struct fe *f, u64 nodeid, u64 moff, u64 len)
{
	struct {
		struct fuse_removemapping_in h;
		struct fuse_removemapping_one one;
	} __attribute__((packed)) in = {
		.h.count = 1, .one.moffset = moff, .one.len = len,
	};

	return fuse_call(f, 1, FUSE_REMOVEMAPPING, nodeid, &in, sizeof(in),
			 NULL, 0).error;
}

/*
 * A SETUPMAPPING (fh ~0, window 0, one page) whose reply is not waited
 * for: when the channel breaks, the connection ends at once and the
 * device may drop the chain before it answers.
 */
static void setup_nowait(struct fe *f, u64 node)
{
	struct fuse_setupmapping_in in = {
		.fh = ~0ull, .len = PG, .flags = FUSE_SETUPMAPPING_FLAG_READ,
	};
	struct fuse_in_header ih = {
		.len = sizeof(ih) + sizeof(in), .opcode = FUSE_SETUPMAPPING,
		.unique = ++f->unique, .nodeid = node,
	};
	struct vqf_vring_gseg rd, wr;
	u64 ig = galloc(f, ih.len), og = galloc(f, 64);

	memcpy(hva(f, ig), &ih, sizeof(ih));
	memcpy((u8 *)hva(f, ig) + sizeof(ih), &in, sizeof(in));
	rd.addr = ig;
	rd.len = ih.len;
	wr.addr = og;
	wr.len = 64;
	assert_int_equal(vqf_vring_drv_add(f->vq[1], &rd, 1, &wr, 1, f), 0);
	assert_int_equal(vqf_eventfd_signal(f->kick[1]), 0);
}

/*
 * The connection ends on a broken channel: serving returns -EPIPE (one
 * that never does is a hang for ctest's TIMEOUT); *@st as it ended.
 */
static void wait_channel_break(struct fe *f, struct vqf_vhost_stats *st)
{
	pthread_join(f->thr, NULL);
	assert_int_equal(f->serve_ret, -EPIPE);
	vqf_vhost_get_stats(f->vh, st);
	assert_int_equal(st->channel_breaks, 1);
	/* teardown joins again: make that a no-op thread. */
	assert_int_equal(pthread_create(&f->thr, NULL, serve_noop, NULL), 0);
}

/* ---- tests ---------------------------------------------------------------- */

/* GET_SHMEM_CONFIG: two regions, shmid = index. */
static void test_config(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_shmem_config c;
	u64 pf = get_u64(f, VQF_VHOST_GET_PROTOCOL_FEATURES);
	unsigned int i;

	msg(f, VQF_VHOST_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	memset(&c, 0xff, sizeof(c));
	msg(f, VQF_VHOST_GET_SHMEM_CONFIG, NULL, 0, NULL, 0);
	assert_int_equal(reply(f, VQF_VHOST_GET_SHMEM_CONFIG, &c, sizeof(c)),
			 sizeof(c));
	assert_int_equal(sizeof(c), 8 + 8 * 256);
	assert_int_equal(c.nregions, 2);
	assert_int_equal(c.memory_sizes[0], WINDOW);
	assert_int_equal(c.memory_sizes[1], TABLE);
	for (i = 2; i < VQF_VHOST_MAX_SHMEM_REGIONS; i++)
		assert_int_equal(c.memory_sizes[i], 0);
}

/*
 * The table is mapped read-only at the INIT that asks for it; mappings
 * go out as SHMEM_MAP with the file's fd (read-only for a read-only
 * open), come back as SHMEM_UNMAP, an upgrade unmaps first; DESTROY
 * unmaps the rest.
 */
static void test_map_roundtrip(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	struct seen s;
	u64 node, fh_ro, fh_rw;

	start(f, 0);
	assert_int_equal(wait_seen(f, 1), 1);
	s = seen_at(f, 0);
	assert_int_equal(s.req, VQF_VHOST_BACKEND_SHMEM_MAP);
	assert_int_equal(s.flags, VQF_VHOST_VERSION |
			 VQF_VHOST_FLAG_NEED_REPLY);
	assert_int_equal(s.m.shmid, VQF_VHOST_SHMID_VERSION);
	assert_int_equal(s.m.len, TABLE);
	assert_int_equal(s.m.flags, 0);
	assert_int_equal(s.accmode, O_RDONLY);
	assert_memory_equal(s.head, "version-table!!", 16);

	node = lookup_f(f);
	fh_ro = open_f(f, node, O_RDONLY);
	fh_rw = open_f(f, node, O_RDWR);
	assert_int_equal(setupmap(f, node, fh_ro, PG, 2 * PG, 0, false), 0);
	s = seen_at(f, 1);
	assert_int_equal(s.req, VQF_VHOST_BACKEND_SHMEM_MAP);
	assert_int_equal(s.m.shmid, VQF_VHOST_SHMID_CACHE);
	assert_int_equal(s.m.fd_offset, PG);
	assert_int_equal(s.m.shm_offset, 0);
	assert_int_equal(s.m.len, 2 * PG);
	assert_int_equal(s.m.flags, 0);
	assert_int_equal(s.accmode, O_RDONLY);
	assert_memory_equal(s.head, f->want + PG, 16);
	assert_int_equal(setupmap(f, node, fh_rw, 0, PG, 4 * PG, true), 0);
	s = seen_at(f, 2);
	assert_int_equal(s.m.flags, VQF_VHOST_SHMEM_MAP_RW);
	assert_int_equal(s.accmode, O_RDWR);
	assert_memory_equal(s.head, f->want, 16);
	/* fh ~0 (Linux's virtiofs): the file by nodeid, as the flags say. */
	assert_int_equal(setupmap(f, node, ~0ull, 2 * PG, PG, 8 * PG, false),
			 0);
	s = seen_at(f, 3);
	assert_int_equal(s.accmode, O_RDONLY);
	assert_int_equal(s.m.shm_offset, 8 * PG);
	assert_memory_equal(s.head, f->want + 2 * PG, 16);
	/* Upgrade of the same span, writable, by nodeid: unmap, map. */
	assert_int_equal(setupmap(f, node, ~0ull, 2 * PG, PG, 8 * PG, true),
			 0);
	s = seen_at(f, 4);
	assert_unmap(&s, 8 * PG, PG);
	s = seen_at(f, 5);
	assert_int_equal(s.m.flags, VQF_VHOST_SHMEM_MAP_RW);
	assert_int_equal(s.accmode, O_RDWR);
	/* REMOVEMAPPING of the first. */
	assert_int_equal(removemap(f, node, 0, 2 * PG), 0);
	s = seen_at(f, 6);
	assert_unmap(&s, 0, 2 * PG);
	/* DESTROY: what is left (window order), then nothing more. */
	assert_int_equal(fuse_call(f, 1, FUSE_DESTROY, 0, NULL, 0, NULL,
				   0).error, 0);
	assert_int_equal(wait_seen(f, 9), 9);
	s = seen_at(f, 7);
	assert_unmap(&s, 4 * PG, PG);
	s = seen_at(f, 8);
	assert_unmap(&s, 8 * PG, PG);
	stats(f, &st);
	assert_int_equal(st.refused, 0);
	assert_int_equal(st.shm_served, 1);
	assert_int_equal(st.table_maps, 1);
	assert_int_equal(st.shm.maps, 5);
	assert_int_equal(st.shm.map_refused, 0);
	assert_int_equal(st.dev.dax_setups, 4);
	assert_int_equal(st.dev.dax_by_nodeid, 2);
	assert_int_equal(st.dev.dax_removes, 1);
	/* The reset before the start, and DESTROY's. */
	assert_int_equal(st.dev.dax_resets, 2);
}

/* A stop (GET_VRING_BASE) unmaps the window and the table. */
static void test_stop(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_state vs = { .index = 0 };
	struct vqf_vhost_stats st;
	struct seen s;
	u64 node;

	start(f, 0);
	node = lookup_f(f);
	assert_int_equal(setupmap(f, node, ~0ull, 0, PG, 0, false), 0);
	assert_int_equal(setupmap(f, node, ~0ull, 0, 2 * PG, 4 * PG, true),
			 0);
	assert_int_equal(wait_seen(f, 3), 3);
	msg(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs), NULL, 0);
	assert_int_equal(reply(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs)),
			 sizeof(vs));
	assert_int_equal(wait_seen(f, 6), 6);
	s = seen_at(f, 3);
	assert_unmap(&s, 0, PG);
	s = seen_at(f, 4);
	assert_unmap(&s, 4 * PG, 2 * PG);
	/* The table goes with the stop too. */
	s = seen_at(f, 5);
	assert_int_equal(s.req, VQF_VHOST_BACKEND_SHMEM_UNMAP);
	assert_int_equal(s.m.shmid, VQF_VHOST_SHMID_VERSION);
	assert_int_equal(s.m.shm_offset, 0);
	assert_int_equal(s.m.len, TABLE);
	stats(f, &st);
	assert_int_equal(st.stops, 1);
	/* The reset before the start, and the stop's. */
	assert_int_equal(st.dev.dax_resets, 2);
}

/*
 * A channel refused while the device runs leaves the one in use as it
 * was: the table it mapped is still unmapped at the stop.
 */
static void test_refused_channel_running(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_state vs = { .index = 0 };
	struct vqf_vhost_stats st;
	struct seen s;
	int efd = eventfd(0, EFD_CLOEXEC);

	assert_true(efd >= 0);
	start(f, 0);
	assert_int_equal(wait_seen(f, 1), 1);
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       &efd, 1), ENOTSOCK);
	close(efd);
	msg(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs), NULL, 0);
	assert_int_equal(reply(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs)),
			 sizeof(vs));
	assert_int_equal(wait_seen(f, 2), 2);
	s = seen_at(f, 1);
	assert_int_equal(s.req, VQF_VHOST_BACKEND_SHMEM_UNMAP);
	assert_int_equal(s.m.shmid, VQF_VHOST_SHMID_VERSION);
	stats(f, &st);
	assert_int_equal(st.backend_fd_bad, 1);
	assert_int_equal(st.shm.channels, 1);
	assert_int_equal(st.shm.breaks, 0);
}

/* The front-end goes away: the back-end unmaps on its way out. */
static void test_disconnect(void **state)
{
	struct fe *f = *state;
	struct seen s;
	u64 node;

	start(f, 0);
	node = lookup_f(f);
	assert_int_equal(setupmap(f, node, ~0ull, PG, PG, 2 * PG, true), 0);
	close(f->sv[0]);
	f->sv[0] = -1;
	assert_int_equal(wait_seen(f, 4), 4);
	s = seen_at(f, 2);
	assert_unmap(&s, 2 * PG, PG);
	s = seen_at(f, 3);
	assert_int_equal(s.req, VQF_VHOST_BACKEND_SHMEM_UNMAP);
	assert_int_equal(s.m.shmid, VQF_VHOST_SHMID_VERSION);
}

/* Front-end messages refused, each in its own counter. */
static void test_refused_msgs(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	u64 pf = (1ull << VQF_VHOST_PF_MQ) | (1ull << VQF_VHOST_PF_REPLY_ACK);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	u64 v = 0;
	int efd = eventfd(0, EFD_CLOEXEC), sp[2], lfd;

	assert_true(efd >= 0);
	msg(f, VQF_VHOST_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	/* Neither SHMEM nor BACKEND_REQ negotiated. */
	assert_int_equal(acked(f, VQF_VHOST_GET_SHMEM_CONFIG, NULL, 0, NULL,
			       0), ENOPROTOOPT);
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       &f->bk[1], 1), ENOPROTOOPT);
	pf = get_u64(f, VQF_VHOST_GET_PROTOCOL_FEATURES);
	msg(f, VQF_VHOST_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	/* Not a socket, not a stream, listening; no fd; a payload. */
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       &efd, 1), ENOTSOCK);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
				    sp), 0);
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       &sp[1], 1), EPROTOTYPE);
	close(sp[0]);
	close(sp[1]);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/l", f->dir);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       &lfd, 1), ENOTCONN);
	close(lfd);
	unlink(sa.sun_path);
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       NULL, 0), EBADF);
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, &v, sizeof(v),
			       &f->bk[1], 1), EMSGSIZE);
	assert_int_equal(acked(f, VQF_VHOST_GET_SHMEM_CONFIG, &v, sizeof(v),
			       NULL, 0), EMSGSIZE);
	close(efd);
	stats(f, &st);
	assert_int_equal(st.refused, 8);
	assert_int_equal(st.not_negotiated, 2);
	assert_int_equal(st.backend_fd_bad, 3);
	assert_int_equal(st.shm.chan_not_socket, 1);
	assert_int_equal(st.shm.chan_not_stream, 1);
	assert_int_equal(st.shm.chan_unconnected, 1);
	assert_int_equal(st.bad_fds, 1);
	assert_int_equal(st.bad_size, 2);
	assert_int_equal(st.shm.channels, 0);
}

/*
 * Mappings refused: by lib's checks (nothing reaches the channel), by
 * the file lookup, and by the front-end (the device keeps no record, the
 * same span maps next time).
 */
static void test_refused_maps(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	struct fuse_entry_out eo;
	struct fuse_mkdir_in mi = { .mode = 0755 };
	u8 mk[sizeof(mi) + 2];
	u64 node, fh_ro;

	start(f, 0);
	assert_int_equal(wait_seen(f, 1), 1);
	node = lookup_f(f);
	fh_ro = open_f(f, node, O_RDONLY);
	/* lib: outside the window, unaligned, WRITE on a read-only open. */
	assert_int_equal(setupmap(f, node, fh_ro, 0, PG, WINDOW, false),
			 -ERANGE);
	assert_int_equal(setupmap(f, node, fh_ro, 0, PG, 100, false),
			 -EINVAL);
	assert_int_equal(setupmap(f, node, fh_ro, 0, PG, 0, true), -EACCES);
	/* The lookup: a forged handle, a directory by nodeid. */
	assert_int_equal(setupmap(f, node, fh_ro + 999, 0, PG, 0, false),
			 -EBADF);
	memcpy(mk, &mi, sizeof(mi));
	memcpy(mk + sizeof(mi), "d", 2);
	assert_int_equal(fuse_call(f, 1, FUSE_MKDIR, 1, mk, sizeof(mk), &eo,
				   sizeof(eo)).error, 0);
	assert_int_equal(setupmap(f, eo.nodeid, ~0ull, 0, PG, 0, false),
			 -ENXIO);
	assert_int_equal(wait_seen(f, 1), 1);
	/* The front-end says no. */
	pthread_mutex_lock(&f->block);
	f->refuse = 1;
	pthread_mutex_unlock(&f->block);
	assert_int_equal(setupmap(f, node, fh_ro, 0, PG, 0, false),
			 -EREMOTEIO);
	assert_int_equal(setupmap(f, node, fh_ro, 0, PG, 0, false), 0);
	/* REMOVEMAPPING of something not mapped: lib, no UNMAP. */
	assert_int_equal(removemap(f, node, PG, PG), -ENOENT);
	assert_int_equal(wait_seen(f, 3), 3);
	stats(f, &st);
	assert_int_equal(st.dev.dax_refused, 4);
	assert_int_equal(st.dev.dax.setup_out_of_window, 1);
	assert_int_equal(st.dev.dax.setup_unaligned, 1);
	assert_int_equal(st.dev.dax.setup_write_denied, 1);
	assert_int_equal(st.dev.dax.remove_not_mapped, 1);
	/* The device's guard: a forged handle, a directory by nodeid. */
	assert_int_equal(st.dev.dax_bad_fh, 0);
	assert_int_equal(st.dev.guard.handle_unknown, 1);
	assert_int_equal(st.dev.guard.open_special, 1);
	assert_int_equal(st.dev.dax_mmap_errors, 1);
	assert_int_equal(st.dev.dax_setups, 1);
	assert_int_equal(st.shm.map_refused, 1);
	assert_int_equal(st.shm.maps, 2);	/* the table, the last */
}

/* Without SHMEM from the front-end: ENOSYS, nothing on the channel. */
static void test_no_shmem(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	u64 node;

	rings_create(f, NULL);
	handshake(f, 1ull << VQF_VHOST_PF_SHMEM);
	assert_int_equal(acked(f, VQF_VHOST_GET_SHMEM_CONFIG, NULL, 0, NULL,
			       0), ENOPROTOOPT);
	/* The guest asks for a table the front-end has no region for. */
	fuse_init_ask(f);
	node = lookup_f(f);
	assert_int_equal(setupmap(f, node, ~0ull, 0, PG, 0, false), -ENOSYS);
	assert_int_equal(removemap(f, node, 0, PG), -ENOSYS);
	stats(f, &st);
	assert_int_equal(st.shm_served + st.shm_unserved, 0);
	assert_int_equal(st.table_maps, 0);
	assert_int_equal(st.table_unoffered, 1);
	assert_int_equal(st.dev.dax_setups + st.dev.dax_refused, 0);
	assert_int_equal(wait_seen(f, 0), 0);
}

/* SHMEM without BACKEND_SEND_FD: not served, counted. */
static void test_incomplete(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	u64 node;

	start(f, 1ull << VQF_VHOST_PF_BACKEND_SEND_FD);
	node = lookup_f(f);
	assert_int_equal(setupmap(f, node, ~0ull, 0, PG, 0, false), -ENOSYS);
	stats(f, &st);
	assert_int_equal(st.shm_served, 0);
	assert_int_equal(st.shm_unserved, 1);
	assert_int_equal(st.table_maps, 0);
	assert_int_equal(st.table_unoffered, 1);
	assert_int_equal(wait_seen(f, 0), 0);
}

/* A channel that breaks fails the mapping and ends the connection. */
static void test_broken_channel(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	u64 node;

	start(f, 0);
	assert_int_equal(wait_seen(f, 1), 1);
	node = lookup_f(f);
	shutdown(f->bk[0], SHUT_RDWR);
	/* Its reply may be dropped: the connection ends at once. */
	setup_nowait(f, node);
	wait_channel_break(f, &st);
	assert_int_equal(st.shm.breaks, 1);
}

/*
 * A front-end that reads the channel and never answers: the mapping
 * gives up after the timeout, the channel counts as broken (a timeout)
 * and the connection ends.  With no version table (prestate), so that
 * the short timeout governs this one mapping only: the table's map at
 * INIT, answered by a front-end that a loaded machine may stall, could
 * otherwise time out first.
 */
static void test_silent_channel(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	u64 node;

	start(f, 0);
	node = lookup_f(f);
	pthread_mutex_lock(&f->block);
	f->silent = true;
	pthread_mutex_unlock(&f->block);
	setup_nowait(f, node);
	wait_channel_break(f, &st);
	assert_int_equal(st.shm.timeouts, 1);
	assert_int_equal(st.shm.breaks, 1);
	assert_int_equal(wait_seen(f, 1), 1);	/* the map was sent */
	assert_int_equal(seen_at(f, 0).req, VQF_VHOST_BACKEND_SHMEM_MAP);
}

/* An entry with the version extension a guest that asked gets. */
struct entry_ver {
	struct fuse_entry_out eo;
	struct fuse_entryver_out ev;
};

static struct entry_ver lookup_ver(struct fe *f)
{
	struct entry_ver r;
	struct fuse_out_header oh;

	memset(&r, 0, sizeof(r));
	oh = fuse_call(f, 1, FUSE_LOOKUP, 1, "f", 2, &r, sizeof(r));
	assert_int_equal(oh.error, 0);
	assert_int_equal(oh.len, sizeof(oh) + sizeof(r));
	assert_true(r.ev.version_index > VQF_VER_ROOT_INDEX);
	assert_true(r.ev.version_index < f->table_len / sizeof(s64));
	return r;
}

/*
 * --version-table's shape: requests through a hub port; the INIT that
 * asks for the table is promised it, the front-end having mapped the
 * hub's table read-only before (a writable mapping of the fd it got is
 * refused); it sees the bump of a guest's change; a stop unmaps the
 * table and gives the next session a fresh port, the old one's lookups
 * given back.
 */
static void test_hub_table(void **state)
{
	struct fe *f = *state;
	struct fuse_setattr_in sa = { .valid = FATTR_MODE,
				      .mode = S_IFREG | 0600 };
	struct vqf_vhost_state vs = { .index = 0 };
	struct fuse_attr_out ao;
	struct vqf_hub_stats hs;
	u8 *before;
	u64 node;

	rings_create(f, NULL);
	handshake(f, 0);
	assert_true(fuse_init_ask(f) & VQF_FUSE_INIT_SHARED_VERSION);
	assert_non_null(fe_table(f));
	assert_int_equal(wait_seen(f, 1), 1);
	assert_int_equal(f->table_wmap_err, EACCES);
	/* Entries carry their slot now: room for the extension. */
	node = lookup_ver(f).eo.nodeid;
	before = malloc(f->table_len);
	assert_non_null(before);
	memcpy(before, f->table_map, f->table_len);
	assert_int_equal(fuse_call(f, 1, FUSE_SETATTR, node, &sa, sizeof(sa),
				   &ao, sizeof(ao)).error, 0);
	assert_int_equal(ao.attr.mode & 07777, 0600);
	assert_true(memcmp(before, f->table_map, f->table_len) != 0);
	free(before);
	vqf_hub_get_stats(f->hub, &hs);
	assert_true(hs.bumps >= 1);
	assert_int_equal(hs.port_forgets, 0);
	msg(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs), NULL, 0);
	assert_int_equal(reply(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs)),
			 sizeof(vs));
	vqf_hub_get_stats(f->hub, &hs);
	assert_int_equal(hs.ports, 1);
	assert_true(hs.port_forgets >= 1);
	assert_int_equal(wait_seen(f, 2), 2);
	assert_int_equal(seen_at(f, 1).req, VQF_VHOST_BACKEND_SHMEM_UNMAP);
	assert_int_equal(seen_at(f, 1).m.shmid, VQF_VHOST_SHMID_VERSION);
}

/* An INIT asking for the table, on ring 1, its reply not waited for. */
struct init_call {
	u64 unique;
	u64 out;	/* the reply's guest address */
};

static struct init_call init_post(struct fe *f)
{
	struct fuse_init_in ii = {
		.major = FUSE_KERNEL_VERSION, .minor = 36,
		.max_readahead = 65536, .flags = FUSE_INIT_EXT,
		.flags2 = VQF_FUSE_INIT_SHARED_VERSION,
	};
	struct fuse_in_header ih = {
		.len = sizeof(ih) + sizeof(ii), .opcode = FUSE_INIT,
		.unique = ++f->unique,
	};
	struct vqf_vring_gseg rd, wr;
	struct init_call c = { .unique = ih.unique };
	u64 ig = galloc(f, ih.len);

	c.out = galloc(f, sizeof(struct fuse_out_header) +
		       sizeof(struct fuse_init_out));
	memcpy(hva(f, ig), &ih, sizeof(ih));
	memcpy((u8 *)hva(f, ig) + sizeof(ih), &ii, sizeof(ii));
	rd.addr = ig;
	rd.len = ih.len;
	wr.addr = c.out;
	wr.len = sizeof(struct fuse_out_header) +
		 sizeof(struct fuse_init_out);
	assert_int_equal(vqf_vring_drv_add(f->vq[1], &rd, 1, &wr, 1,
					   (void *)(uintptr_t)ih.unique), 0);
	assert_int_equal(vqf_eventfd_signal(f->kick[1]), 0);
	return c;
}

/* Whether @c's reply is back (it is the only request in flight). */
static bool init_done(struct fe *f, const struct init_call *c)
{
	void *cookie = NULL;
	u32 len = 0;

	if (vqf_vring_drv_get_buf(f->vq[1], &cookie, &len) != 1)
		return false;
	assert_int_equal((uintptr_t)cookie, c->unique);
	return true;
}

static struct fuse_init_out init_reply(struct fe *f, const struct init_call *c)
{
	struct fuse_out_header oh;
	struct fuse_init_out io;

	memcpy(&oh, hva(f, c->out), sizeof(oh));
	assert_int_equal(oh.unique, c->unique);
	assert_int_equal(oh.error, 0);
	memcpy(&io, (u8 *)hva(f, c->out) + sizeof(oh), sizeof(io));
	return io;
}

static void hold_channel(struct fe *f, bool on)
{
	pthread_mutex_lock(&f->block);
	f->hold = on;
	pthread_cond_broadcast(&f->bcond);
	pthread_mutex_unlock(&f->block);
}

/*
 * The race a guest with cache=shared lost (it read the table's region
 * before the front-end had mapped it): the front-end does not read the
 * back-end channel until either the INIT's reply is back or the back-end
 * waits for an ack - then the table map's, the only request there can
 * be.  Then it serves the channel.  An INIT reply that promises the
 * table must find it mapped already; with the map sent at the start and
 * not waited for, the reply came while the channel was held, the table
 * not mapped, every time.  Bounded by FE_WAIT_MS of polling, a hang
 * guard only.
 */
static void test_table_before_promise(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	struct fuse_init_out io;
	struct init_call c;
	const u8 *map = NULL;
	bool done = false;
	unsigned int i;

	memset(&st, 0, sizeof(st));
	hold_channel(f, true);
	rings_create(f, NULL);
	handshake(f, 0);
	c = init_post(f);
	for (i = 0; i < FE_WAIT_MS / 10; i++) {
		done = init_done(f, &c);
		if (done) {
			map = fe_table(f);
			break;
		}
		vqf_vhost_get_stats(f->vh, &st);
		if (st.shm.waiting)
			break;
		vqf_eventfd_wait(f->call[1], 10);
	}
	assert_true(done || st.shm.waiting);
	hold_channel(f, false);
	for (i = 0; !done && i < FE_WAIT_MS / 10; i++) {
		done = init_done(f, &c);
		if (done)
			map = fe_table(f);
		else
			vqf_eventfd_wait(f->call[1], 10);
	}
	assert_true(done);
	io = init_reply(f, &c);
	/* The hub promises it (the front-end acked the map)... */
	assert_true(io.flags2 & VQF_FUSE_INIT_SHARED_VERSION);
	/* ...and the guest, reading it now, finds it there. */
	if (!map)
		fail_msg("INIT promised the table before the front-end "
			 "mapped it");
	assert_int_equal(wait_seen(f, 1), 1);
	assert_int_equal(seen_at(f, 0).req, VQF_VHOST_BACKEND_SHMEM_MAP);
	assert_int_equal(seen_at(f, 0).m.shmid, VQF_VHOST_SHMID_VERSION);
	stats(f, &st);
	assert_int_equal(st.table_maps, 1);
	assert_int_equal(st.table_unoffered, 0);
	assert_int_equal(st.shm.waiting, 0);
	assert_int_equal(st.shm.maps, 1);
}

/* A stop and a restart on the same rings (ring 0's kick again). */
static void restart(struct fe *f)
{
	struct vqf_vhost_state vs = { .index = 0 };
	u64 v = 0;

	msg(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs), NULL, 0);
	assert_int_equal(reply(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs)),
			 sizeof(vs));
	assert_int_equal(acked(f, VQF_VHOST_SET_VRING_KICK, &v, sizeof(v),
			       &f->kick[0], 1), 0);
}

/*
 * The front-end refuses the table's map: the INIT is answered without
 * the table (and counted), the guest works on without it (entries
 * without the extension), a stop has no table to unmap, and the next
 * run's INIT maps it and is promised it.
 */
static void test_table_refused(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;

	pthread_mutex_lock(&f->block);
	f->refuse = 1;
	pthread_mutex_unlock(&f->block);
	rings_create(f, NULL);
	handshake(f, 0);
	assert_false(fuse_init_ask(f) & VQF_FUSE_INIT_SHARED_VERSION);
	assert_null(fe_table(f));
	lookup_f(f);		/* an entry without the extension */
	stats(f, &st);
	assert_int_equal(st.table_unoffered, 1);
	assert_int_equal(st.table_maps, 0);
	assert_int_equal(st.shm.map_refused, 1);
	assert_int_equal(st.shm.breaks, 0);
	restart(f);
	assert_true(fuse_init_ask(f) & VQF_FUSE_INIT_SHARED_VERSION);
	assert_non_null(fe_table(f));
	/* The channel is FIFO: no UNMAP of the table went out between. */
	assert_int_equal(wait_seen(f, 2), 2);
	assert_int_equal(seen_at(f, 1).req, VQF_VHOST_BACKEND_SHMEM_MAP);
	assert_int_equal(seen_at(f, 1).m.shmid, VQF_VHOST_SHMID_VERSION);
	lookup_ver(f);
	stats(f, &st);
	assert_int_equal(st.starts, 2);
	assert_int_equal(st.table_unoffered, 1);
	assert_int_equal(st.table_maps, 1);
}

/*
 * A guest that asks for the table without saying it has flags2 (no
 * FUSE_INIT_EXT: the bit is garbage by the protocol), or whose INIT
 * ends before flags2, gets neither the promise nor a map; a proper INIT
 * of the next start still does.  (One INIT per start: a second one is
 * refused.)
 */
static void test_table_init_hostile(void **state)
{
	struct fe *f = *state;
	struct fuse_init_in ii = {
		.major = FUSE_KERNEL_VERSION, .minor = 36,
		.max_readahead = 65536,
		.flags2 = VQF_FUSE_INIT_SHARED_VERSION,
	};
	struct fuse_init_out io;
	struct fuse_out_header oh;
	struct vqf_vhost_stats st;

	rings_create(f, NULL);
	handshake(f, 0);
	memset(&io, 0, sizeof(io));
	oh = fuse_call(f, 1, FUSE_INIT, 0, &ii, sizeof(ii), &io, sizeof(io));
	assert_int_equal(oh.error, 0);
	assert_false(io.flags2 & VQF_FUSE_INIT_SHARED_VERSION);
	restart(f);
	ii.flags = FUSE_INIT_EXT;
	memset(&io, 0, sizeof(io));
	oh = fuse_call(f, 1, FUSE_INIT, 0, &ii,
		       offsetof(struct fuse_init_in, flags2), &io,
		       sizeof(io));
	assert_false(!oh.error && oh.len > sizeof(oh) +
		     offsetof(struct fuse_init_out, flags2) &&
		     (io.flags2 & VQF_FUSE_INIT_SHARED_VERSION));
	assert_null(fe_table(f));
	stats(f, &st);
	assert_int_equal(st.table_maps, 0);
	assert_int_equal(st.table_unoffered, 0);
	assert_int_equal(st.shm.maps, 0);
	restart(f);
	assert_true(fuse_init_ask(f) & VQF_FUSE_INIT_SHARED_VERSION);
	assert_non_null(fe_table(f));
	stats(f, &st);
	assert_int_equal(st.starts, 3);
	assert_int_equal(st.table_maps, 1);
}

/* ---- the channel by itself, against a front-end that misbehaves ---------- */

/* vqf_vshm on a socket pair; the test plays the front-end on @fe. */
struct chan {
	struct vqf_vshm s;
	int fe;
	int file;		/* what the maps map */
	pthread_t thr;		/* a waiting map (map_start()) */
	pid_t tid;		/* ... its thread id */
	u64 off;
	int ret;
	int fds_before;
};

static void chan_open(struct chan *c, unsigned int timeout_ms)
{
	int sv[2];

	memset(c, 0, sizeof(*c));
	c->fds_before = count_fds();
	assert_int_equal(vqf_vshm_init(&c->s), 0);
	if (timeout_ms)
		c->s.timeout_ms = timeout_ms;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv), 0);
	assert_int_equal(vqf_vshm_set_fd(&c->s, sv[1]), 0);
	c->fe = sv[0];
	c->file = memfd_create("vqf-chan", MFD_CLOEXEC);
	assert_true(c->file >= 0);
	assert_int_equal(ftruncate(c->file, 16 * PG), 0);
}

static void chan_close(struct chan *c)
{
	vqf_vshm_fini(&c->s);
	close(c->fe);
	close(c->file);
	/* Every descriptor that rode along was closed. */
	assert_int_equal(count_fds(), c->fds_before);
}

static struct vqf_vshm_stats chan_stats(struct chan *c)
{
	struct vqf_vshm_stats st;

	vqf_vshm_get_stats(&c->s, &st);
	return st;
}

static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The front-end reads one request: its code and body; its fd is closed. */
static u32 fe_req(struct chan *c, struct vqf_vhost_mmap *m)
{
	union {
		char b[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr a;
	} cb;
	struct vqf_vhost_hdr h;
	struct iovec iov = { .iov_base = &h, .iov_len = sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	struct cmsghdr *cm;
	int fd;

	assert_true(readable(c->fe, FE_WAIT_MS));
	assert_int_equal(recvmsg(c->fe, &mh, MSG_WAITALL), sizeof(h));
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
		close(fd);
	}
	assert_int_equal(h.flags, VQF_VHOST_VERSION |
			 VQF_VHOST_FLAG_NEED_REPLY);
	assert_int_equal(h.size, sizeof(*m));
	assert_int_equal(recv(c->fe, m, sizeof(*m), MSG_WAITALL),
			 sizeof(*m));
	return h.request;
}

/* Appends an ack to @buf: @size bytes of payload claimed, 8 sent. */
static size_t ack_put(u8 *buf, u32 req, u32 flags, u32 size, u64 status)
{
	struct vqf_vhost_hdr h = { .request = req, .flags = flags,
				   .size = size };

	memcpy(buf, &h, VQF_VHOST_HDR_SIZE);
	memcpy(buf + VQF_VHOST_HDR_SIZE, &status, sizeof(status));
	return VQF_VSHM_ACK_SIZE;
}

#define ACK_FLAGS	(VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY)

/* One write: @n acks of @req with @status. */
static void fe_acks(struct chan *c, u32 req, u64 status, unsigned int n)
{
	u8 buf[4 * VQF_VSHM_ACK_SIZE];
	size_t len = 0;

	assert_true(n <= 4);
	while (n--)
		len += ack_put(buf + len, req, ACK_FLAGS, 8, status);
	assert_int_equal(send(c->fe, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* chan.tid: set by the map's thread, read by test_ack_then_cancel(). */
static pthread_mutex_t tid_lock = PTHREAD_MUTEX_INITIALIZER;

static void *map_main(void *arg)
{
	struct chan *c = arg;

	pthread_mutex_lock(&tid_lock);
	c->tid = (pid_t)syscall(SYS_gettid);
	pthread_mutex_unlock(&tid_lock);
	c->ret = vqf_vshm_map(&c->s, VQF_VHOST_SHMID_CACHE, c->file, 0,
			      c->off, PG, false, true);
	return NULL;
}

/* A guest's SETUPMAPPING: a map at @off that waits for its ack. */
static void map_start(struct chan *c, u64 off)
{
	c->off = off;
	c->ret = 1;
	assert_int_equal(pthread_create(&c->thr, NULL, map_main, c), 0);
}

/* The same, once the front-end has read that map. */
static void map_sent(struct chan *c, u64 off)
{
	struct vqf_vhost_mmap m;

	map_start(c, off);
	assert_int_equal(fe_req(c, &m), VQF_VHOST_BACKEND_SHMEM_MAP);
	assert_int_equal(m.shm_offset, off);
}

static int map_join(struct chan *c)
{
	pthread_join(c->thr, NULL);
	return c->ret;
}

/*
 * The channel broke: the connection would end, later requests fail, and
 * the break was counted once, whatever comes after.
 */
static void assert_broken(struct chan *c)
{
	assert_true(readable(c->s.broken_fd, 0));
	assert_false(vqf_vshm_ready(&c->s));
	assert_int_equal(vqf_vshm_map(&c->s, VQF_VHOST_SHMID_CACHE, c->file,
				      0, 0, PG, false, true), -ENOTCONN);
	assert_int_equal(vqf_vshm_unmap(&c->s, VQF_VHOST_SHMID_CACHE, 0, PG,
					false), -ENOTCONN);
	assert_true(vqf_vshm_poll(&c->s));
	/* Nothing more went out. */
	assert_false(readable(c->fe, 0));
	assert_int_equal(chan_stats(c).breaks, 1);
}

/*
 * A map acked twice in one go: the second ack has nothing to answer.
 * Which of the two was the map's own is unknown, so the map is not
 * taken as done.
 */
static void test_ack_duplicate(void **state)
{
	struct vqf_vshm_stats st;
	struct chan c;

	(void)state;
	chan_open(&c, 0);
	map_sent(&c, 0);
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_MAP, 0, 2);
	assert_int_equal(map_join(&c), -EBADE);
	st = chan_stats(&c);
	assert_int_equal(st.acks_unsolicited, 1);
	assert_int_equal(st.breaks, 1);
	assert_broken(&c);
	chan_close(&c);
}

/*
 * The case: a map done, its ack repeated late, then a map the
 * front-end refuses.  The repeat is found before the next map goes out:
 * that one fails, is never reported done, and the front-end never sees
 * it (nor its refusal credited to anything).
 */
static void test_ack_duplicate_then_refused(void **state)
{
	struct vqf_vshm_stats st;
	struct chan c;

	(void)state;
	chan_open(&c, 0);
	map_sent(&c, 0);
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_MAP, 0, 1);
	assert_int_equal(map_join(&c), 0);
	/* The repeat, in the socket before the next map. */
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_MAP, 0, 1);
	map_start(&c, PG);
	assert_int_equal(map_join(&c), -EBADE);
	assert_false(readable(c.fe, 0));
	st = chan_stats(&c);
	assert_int_equal(st.maps, 1);
	assert_int_equal(st.map_refused, 0);
	assert_int_equal(st.acks_unsolicited, 1);
	assert_broken(&c);
	chan_close(&c);
}

/* An ack before any request: found before the first one goes out. */
static void test_ack_unsolicited(void **state)
{
	struct vqf_vshm_stats st;
	struct chan c;

	(void)state;
	chan_open(&c, 0);
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_UNMAP, 0, 1);
	assert_int_equal(vqf_vshm_unmap(&c.s, VQF_VHOST_SHMID_CACHE, 0, PG,
					false), -EBADE);
	st = chan_stats(&c);
	assert_int_equal(st.acks_unsolicited, 1);
	assert_int_equal(st.unmaps, 0);
	assert_broken(&c);
	chan_close(&c);
}

/*
 * Acks carry no id: an unmap not waited for, then a map; the front-end
 * answers both as MAPs.  The first ack is for another request than the
 * oldest outstanding one: the map fails, neither is counted done.
 */
static void test_ack_misnumbered(void **state)
{
	struct vqf_vhost_mmap m;
	struct vqf_vshm_stats st;
	struct chan c;

	(void)state;
	chan_open(&c, 0);
	assert_int_equal(vqf_vshm_unmap(&c.s, VQF_VHOST_SHMID_CACHE, 0, PG,
					false), 0);
	map_start(&c, 0);
	assert_int_equal(fe_req(&c, &m), VQF_VHOST_BACKEND_SHMEM_UNMAP);
	assert_int_equal(fe_req(&c, &m), VQF_VHOST_BACKEND_SHMEM_MAP);
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_MAP, 0, 2);
	assert_int_equal(map_join(&c), -EBADMSG);
	st = chan_stats(&c);
	assert_int_equal(st.acks_mismatched, 1);
	assert_int_equal(st.maps + st.unmaps, 0);
	assert_broken(&c);
	chan_close(&c);
}

/* Acks out of protocol: each breaks the channel, -EPROTO. */
static void test_ack_malformed(void **state)
{
	static const struct {
		u32 flags, size;
	} bad[] = {
		{ ACK_FLAGS, 4 },			/* a short status */
		{ ACK_FLAGS, 16 },			/* a long one */
		{ ACK_FLAGS, 0 },
		{ ACK_FLAGS, 0xffffffff },		/* a huge one */
		{ VQF_VHOST_VERSION, 8 },		/* no REPLY */
		{ 2 | VQF_VHOST_FLAG_REPLY, 8 },	/* version 2 */
	};
	struct vqf_vshm_stats st;
	unsigned int i;
	struct chan c;
	u8 buf[VQF_VSHM_ACK_SIZE];

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		chan_open(&c, 0);
		map_sent(&c, 0);
		ack_put(buf, VQF_VHOST_BACKEND_SHMEM_MAP, bad[i].flags,
			bad[i].size, 0);
		assert_int_equal(send(c.fe, buf, sizeof(buf), MSG_NOSIGNAL),
				 sizeof(buf));
		assert_int_equal(map_join(&c), -EPROTO);
		st = chan_stats(&c);
		assert_int_equal(st.acks_malformed, 1);
		assert_int_equal(st.maps + st.map_refused, 0);
		assert_broken(&c);
		chan_close(&c);
	}
}

/*
 * An ack in pieces, a refusal: the map waits for all of it.  The second
 * piece goes once the waiting map has taken the first in (a wait that
 * never ends is ctest's TIMEOUT), so that it is read split whatever the
 * machine's speed.
 */
static void test_ack_split(void **state)
{
	struct chan c;
	u8 buf[VQF_VSHM_ACK_SIZE];
	int queued;

	(void)state;
	assert_int_equal(sizeof(buf), VQF_VHOST_HDR_SIZE + sizeof(u64));
	chan_open(&c, 0);
	map_sent(&c, 0);
	ack_put(buf, VQF_VHOST_BACKEND_SHMEM_MAP, ACK_FLAGS, 8, 5);
	assert_int_equal(send(c.fe, buf, 7, MSG_NOSIGNAL), 7);
	do {
		usleep(1000);
		assert_int_equal(ioctl(c.s.fd, FIONREAD, &queued), 0);
	} while (queued);
	assert_int_equal(send(c.fe, buf + 7, sizeof(buf) - 7, MSG_NOSIGNAL),
			 sizeof(buf) - 7);
	assert_int_equal(map_join(&c), -EREMOTEIO);
	assert_int_equal(chan_stats(&c).map_refused, 1);
	assert_true(vqf_vshm_ready(&c.s));
	chan_close(&c);
}

/*
 * The same split with nobody waiting: an unmap not waited for, its ack
 * read by the serving thread's vqf_vshm_poll() as it comes - 7 bytes
 * (part of the header), 16 (the header and part of the status), all of
 * it.  Nothing is lost or taken twice between the reads.
 */
static void test_ack_split_idle(void **state)
{
	static const size_t cut[] = { 7, 16, VQF_VSHM_ACK_SIZE };
	struct vqf_vhost_mmap m;
	struct vqf_vshm_stats st;
	struct chan c;
	u8 buf[VQF_VSHM_ACK_SIZE];
	size_t sent = 0;
	unsigned int i;

	(void)state;
	chan_open(&c, 0);
	assert_int_equal(vqf_vshm_unmap(&c.s, VQF_VHOST_SHMID_CACHE, 0, PG,
					false), 0);
	assert_int_equal(fe_req(&c, &m), VQF_VHOST_BACKEND_SHMEM_UNMAP);
	ack_put(buf, VQF_VHOST_BACKEND_SHMEM_UNMAP, ACK_FLAGS, 8, 5);
	for (i = 0; i < ARRAY_SIZE(cut); i++) {
		assert_int_equal(send(c.fe, buf + sent, cut[i] - sent,
				      MSG_NOSIGNAL), (ssize_t)(cut[i] - sent));
		sent = cut[i];
		assert_true(vqf_vshm_poll(&c.s));
		st = chan_stats(&c);
		assert_int_equal(st.unmap_refused, i + 1 == ARRAY_SIZE(cut));
		assert_int_equal(st.breaks, 0);
	}
	assert_true(vqf_vshm_ready(&c.s));
	chan_close(&c);
}

/*
 * Acks the serving thread reads while idle (vqf_vshm_poll()) are held to
 * the same rules as a waiting request's: an unmap not waited for, acked
 * as a MAP (-EBADMSG) or without REPLY (-EPROTO), breaks the channel,
 * each in its own counter.
 */
static void test_ack_idle_refused(void **state)
{
	static const struct {
		u32 req, flags;
	} bad[] = {
		{ VQF_VHOST_BACKEND_SHMEM_MAP, ACK_FLAGS },
		{ VQF_VHOST_BACKEND_SHMEM_UNMAP, VQF_VHOST_VERSION },
	};
	struct vqf_vhost_mmap m;
	struct vqf_vshm_stats st;
	u8 buf[VQF_VSHM_ACK_SIZE];
	unsigned int i;
	struct chan c;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		chan_open(&c, 0);
		assert_int_equal(vqf_vshm_unmap(&c.s, VQF_VHOST_SHMID_CACHE, 0,
						PG, false), 0);
		assert_int_equal(fe_req(&c, &m),
				 VQF_VHOST_BACKEND_SHMEM_UNMAP);
		ack_put(buf, bad[i].req, bad[i].flags, 8, 0);
		assert_int_equal(send(c.fe, buf, sizeof(buf), MSG_NOSIGNAL),
				 sizeof(buf));
		assert_true(vqf_vshm_poll(&c.s));
		st = chan_stats(&c);
		assert_int_equal(st.acks_mismatched, i == 0);
		assert_int_equal(st.acks_malformed, i == 1);
		assert_int_equal(st.unmaps + st.unmap_refused, 0);
		assert_broken(&c);
		chan_close(&c);
	}
}

/*
 * The channel's EOF while idle: the serving thread stops watching it (a
 * hung-up socket polls readable for ever) and breaks nothing - the
 * connection's own end tells.  A request after it finds the EOF and
 * breaks the channel (-EPIPE).
 */
static void test_eof_idle(void **state)
{
	struct vqf_vshm_stats st;
	struct chan c;

	(void)state;
	chan_open(&c, 0);
	assert_int_equal(vqf_vshm_watch_fd(&c.s), c.s.fd);
	shutdown(c.fe, SHUT_WR);
	assert_true(vqf_vshm_poll(&c.s));
	assert_int_equal(vqf_vshm_watch_fd(&c.s), -1);
	assert_true(vqf_vshm_ready(&c.s));
	assert_false(readable(c.s.broken_fd, 0));
	assert_int_equal(vqf_vshm_unmap(&c.s, VQF_VHOST_SHMID_CACHE, 0, PG,
					false), -EPIPE);
	st = chan_stats(&c);
	assert_int_equal(st.timeouts + st.acks_malformed + st.acks_mismatched +
			 st.acks_unsolicited + st.cancelled, 0);
	assert_broken(&c);
	chan_close(&c);
}

/*
 * An ack with descriptors attached (SCM_RIGHTS on the channel): the ack
 * is taken, the descriptors are closed, not kept - the write end of a
 * pipe sent along reads as gone at once, and chan_close() finds no
 * descriptor more than before.
 */
static void test_ack_with_fds(void **state)
{
	union {
		char b[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr a;
	} cb;
	struct chan c;
	struct cmsghdr *cm;
	u8 buf[VQF_VSHM_ACK_SIZE];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	struct pollfd p;
	int pp[2], fds[2];

	(void)state;
	chan_open(&c, 0);
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	fds[0] = pp[1];
	fds[1] = c.file;
	memset(&cb, 0, sizeof(cb));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	map_sent(&c, 0);
	ack_put(buf, VQF_VHOST_BACKEND_SHMEM_MAP, ACK_FLAGS, 8, 0);
	assert_int_equal(sendmsg(c.fe, &mh, MSG_NOSIGNAL), sizeof(buf));
	close(pp[1]);
	assert_int_equal(map_join(&c), 0);
	p.fd = pp[0];
	p.events = POLLIN;
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_true(p.revents & POLLHUP);
	close(pp[0]);
	assert_int_equal(chan_stats(&c).maps, 1);
	assert_true(vqf_vshm_ready(&c.s));
	chan_close(&c);
}

/*
 * The front-end closes its end in the middle of an ack: the waiting map
 * fails with -EPIPE, counted as a break and nothing else.
 */
static void test_ack_eof(void **state)
{
	struct vqf_vshm_stats st;
	struct chan c;
	u8 buf[VQF_VSHM_ACK_SIZE];

	(void)state;
	chan_open(&c, 0);
	map_sent(&c, 0);
	ack_put(buf, VQF_VHOST_BACKEND_SHMEM_MAP, ACK_FLAGS, 8, 0);
	assert_int_equal(send(c.fe, buf, 12, MSG_NOSIGNAL), 12);
	shutdown(c.fe, SHUT_WR);
	assert_int_equal(map_join(&c), -EPIPE);
	st = chan_stats(&c);
	assert_int_equal(st.maps + st.map_refused, 0);
	assert_int_equal(st.timeouts + st.acks_malformed + st.acks_mismatched +
			 st.acks_unsolicited + st.cancelled, 0);
	assert_broken(&c);
	chan_close(&c);
}

/*
 * Acks while a stop lasts: the late acks of the cancelled map and of
 * its undo unmap are read while idle and counted, the channel stays
 * whole; then one ack too many, still during the stop, breaks it
 * (-EBADE, once).
 */
static void test_ack_while_cancelled(void **state)
{
	struct vqf_vhost_mmap m;
	struct vqf_vshm_stats st;
	struct chan c;

	(void)state;
	chan_open(&c, 3600000);
	map_sent(&c, 0);
	vqf_vshm_cancel(&c.s, true);
	assert_int_equal(map_join(&c), -ECANCELED);
	assert_int_equal(fe_req(&c, &m), VQF_VHOST_BACKEND_SHMEM_UNMAP);
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_MAP, 0, 1);
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_UNMAP, 0, 1);
	assert_true(vqf_vshm_poll(&c.s));
	st = chan_stats(&c);
	assert_int_equal(st.maps, 1);
	assert_int_equal(st.unmaps, 1);
	assert_int_equal(st.cancelled, 1);
	assert_true(vqf_vshm_ready(&c.s));
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_UNMAP, 0, 1);
	assert_true(vqf_vshm_poll(&c.s));
	st = chan_stats(&c);
	assert_int_equal(st.acks_unsolicited, 1);
	assert_int_equal(st.unmaps, 1);
	assert_broken(&c);
	vqf_vshm_cancel(&c.s, false);
	chan_close(&c);
}

/*
 * The front-end acks a map and the device stops at once: both are ready
 * when the waiting thread wakes.  The ack was sent first, so the map is
 * done - no cancel counted, no undo unmap - as QEMU has mapped it.
 * Both happen while the waiter cannot run: the case pins itself and the
 * waiter to one CPU and does the two under SCHED_FIFO (skipped without
 * the privilege), once the waiter sleeps in its poll.  With the cancel
 * taken first (wait_chan() before 9604072) it gets -ECANCELED.
 */
static void test_ack_then_cancel(void **state)
{
	struct sched_param fifo = { .sched_priority = 1 }, other = { 0 };
	cpu_set_t one, all;
	struct vqf_vshm_stats st;
	struct chan c;
	unsigned int i;
	pid_t tid;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	if (sched_setscheduler(0, SCHED_FIFO, &fifo)) {
		sched_setaffinity(0, sizeof(all), &all);
		skip();
	}
	assert_int_equal(sched_setscheduler(0, SCHED_OTHER, &other), 0);
	chan_open(&c, 3600000);
	map_sent(&c, 0);
	/* Bounded work, not time: until it sleeps in its wait. */
	for (i = 0; i < 1000000; i++) {
		pthread_mutex_lock(&tid_lock);
		tid = c.tid;
		pthread_mutex_unlock(&tid_lock);
		if (tid && chan_stats(&c).waiting == 1 && thread_sleeps(tid))
			break;
		usleep(1000);
	}
	assert_true(i < 1000000);
	assert_int_equal(sched_setscheduler(0, SCHED_FIFO, &fifo), 0);
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_MAP, 0, 1);
	vqf_vshm_cancel(&c.s, true);
	assert_int_equal(sched_setscheduler(0, SCHED_OTHER, &other), 0);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	assert_int_equal(map_join(&c), 0);
	st = chan_stats(&c);
	assert_int_equal(st.maps, 1);
	assert_int_equal(st.cancelled, 0);
	assert_int_equal(st.undo_unmaps, 0);
	assert_false(readable(c.fe, 0));
	vqf_vshm_cancel(&c.s, false);
	chan_close(&c);
}

/*
 * What SET_BACKEND_REQ_FD may give: only a connected stream socket.
 * Each refusal has its errno and counter; the descriptor is closed.
 */
static void test_channel_kinds(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vqf_vshm_stats st;
	struct vqf_vshm s;
	int before = count_fds(), sv[2], fd;
	char dir[] = "/tmp/vqf-chan-XXXXXX";

	(void)state;
	assert_int_equal(vqf_vshm_init(&s), 0);
	fd = eventfd(0, EFD_CLOEXEC);
	assert_int_equal(vqf_vshm_set_fd(&s, fd), -ENOTSOCK);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0,
				    sv), 0);
	close(sv[0]);
	assert_int_equal(vqf_vshm_set_fd(&s, sv[1]), -EPROTOTYPE);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
				    sv), 0);
	close(sv[0]);
	assert_int_equal(vqf_vshm_set_fd(&s, sv[1]), -EPROTOTYPE);
	/* A stream socket never connected, and one listening. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(vqf_vshm_set_fd(&s, fd), -ENOTCONN);
	assert_non_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/l", dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(vqf_vshm_set_fd(&s, fd), -ENOTCONN);
	unlink(sa.sun_path);
	rmdir(dir);
	assert_false(vqf_vshm_ready(&s));
	assert_int_equal(vqf_vshm_map(&s, 0, -1, 0, 0, PG, false, true),
			 -ENOTCONN);
	/* A connected one is taken. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv), 0);
	assert_int_equal(vqf_vshm_set_fd(&s, sv[1]), 0);
	assert_true(vqf_vshm_ready(&s));
	vqf_vshm_get_stats(&s, &st);
	assert_int_equal(st.chan_not_socket, 1);
	assert_int_equal(st.chan_not_stream, 2);
	assert_int_equal(st.chan_unconnected, 2);
	assert_int_equal(st.channels, 1);
	assert_int_equal(st.no_channel, 1);
	vqf_vshm_fini(&s);
	close(sv[0]);
	assert_int_equal(count_fds(), before);
}

/*
 * A stop while a map waits (a minute of timeout): the wait ends at
 * once, the map's span is unmapped after it, waiting requests are
 * refused while the stop lasts and unmaps still go out.  The late acks
 * are then read in order, nothing credited twice, and the channel
 * works on.
 */
static void test_cancel(void **state)
{
	struct vqf_vhost_mmap m;
	struct vqf_vshm_stats st;
	struct chan c;

	(void)state;
	chan_open(&c, 60000);
	map_sent(&c, 2 * PG);
	vqf_vshm_cancel(&c.s, true);
	assert_int_equal(map_join(&c), -ECANCELED);
	assert_int_equal(fe_req(&c, &m), VQF_VHOST_BACKEND_SHMEM_UNMAP);
	assert_int_equal(m.shmid, VQF_VHOST_SHMID_CACHE);
	assert_int_equal(m.shm_offset, 2 * PG);
	assert_int_equal(m.len, PG);
	/* During the stop: no waiting, but the reset's unmaps go. */
	assert_int_equal(vqf_vshm_map(&c.s, VQF_VHOST_SHMID_CACHE, c.file, 0,
				      0, PG, false, true), -ECANCELED);
	assert_int_equal(vqf_vshm_unmap(&c.s, VQF_VHOST_SHMID_CACHE, 4 * PG,
					PG, false), 0);
	assert_int_equal(fe_req(&c, &m), VQF_VHOST_BACKEND_SHMEM_UNMAP);
	assert_int_equal(m.shm_offset, 4 * PG);
	assert_false(readable(c.fe, 0));
	/* Cancels nest (a DESTROY's inside a stop): lowering one of two
	 * still refuses waits; a lowering too many is ignored.
	 */
	vqf_vshm_cancel(&c.s, true);
	vqf_vshm_cancel(&c.s, false);
	assert_int_equal(vqf_vshm_map(&c.s, VQF_VHOST_SHMID_CACHE, c.file, 0,
				      0, PG, false, true), -ECANCELED);
	vqf_vshm_cancel(&c.s, false);
	vqf_vshm_cancel(&c.s, false);
	/* The front-end answers all three, late. */
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_MAP, 0, 1);
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_UNMAP, 0, 2);
	map_sent(&c, 0);
	fe_acks(&c, VQF_VHOST_BACKEND_SHMEM_MAP, 0, 1);
	assert_int_equal(map_join(&c), 0);
	st = chan_stats(&c);
	assert_int_equal(st.cancelled, 3);
	assert_int_equal(st.undo_unmaps, 1);
	assert_int_equal(st.maps, 2);
	assert_int_equal(st.unmaps, 2);
	assert_int_equal(st.breaks, 0);
	assert_true(vqf_vshm_ready(&c.s));
	chan_close(&c);
}

/* ---- the channel in the device: stops, acks nobody owes ------------------ */

/* A SETUPMAPPING the front-end reads and never answers. */
static void map_unanswered(struct fe *f)
{
	u64 node;

	start(f, 0);
	node = lookup_f(f);
	pthread_mutex_lock(&f->block);
	f->silent = true;
	pthread_mutex_unlock(&f->block);
	setup_nowait(f, node);
	assert_int_equal(wait_seen(f, 1), 1);
	assert_int_equal(seen_at(f, 0).req, VQF_VHOST_BACKEND_SHMEM_MAP);
}

/*
 * A stop (GET_VRING_BASE) while a map waits for an ack that never comes,
 * with an hour of timeout (prestate): the stop answers, the wait ended
 * by the cancel and not by the timeout (waiting it out would be a hang
 * for ctest's TIMEOUT), the map's span is unmapped after it, and the
 * channel is not broken.
 */
static void test_stop_unanswered(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_state vs = { .index = 0 };
	struct vqf_vhost_stats st;
	struct seen s;

	map_unanswered(f);
	msg(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs), NULL, 0);
	assert_int_equal(reply(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs)),
			 sizeof(vs));
	assert_int_equal(wait_seen(f, 2), 2);
	s = seen_at(f, 1);
	assert_unmap(&s, 0, PG);
	stats(f, &st);
	assert_int_equal(st.stops, 1);
	assert_int_equal(st.shm.cancelled, 1);
	assert_int_equal(st.shm.timeouts, 0);
	assert_int_equal(st.shm.undo_unmaps, 1);
	assert_int_equal(st.shm.breaks, 0);
	assert_int_equal(st.channel_breaks, 0);
	assert_int_equal(st.dev.dax_setups, 0);
}

/*
 * The same map unanswered, and the front-end hangs up: serving ends,
 * the wait ended by the cancel, not by the hour's timeout.
 */
static void test_hangup_unanswered(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;

	map_unanswered(f);
	close(f->sv[0]);
	f->sv[0] = -1;
	pthread_join(f->thr, NULL);
	assert_int_equal(f->serve_ret, 0);
	vqf_vhost_get_stats(f->vh, &st);
	assert_int_equal(st.shm.cancelled, 1);
	assert_int_equal(st.shm.timeouts, 0);
	assert_int_equal(st.shm.breaks, 0);
	assert_int_equal(pthread_create(&f->thr, NULL, serve_noop, NULL), 0);
}

/*
 * A guest's DESTROY while its map waits for an ack that never comes, with
 * an hour of timeout and a worker pool (the map holds one worker, the
 * DESTROY gets another): the window's teardown at DESTROY cancels the
 * wait, so both requests complete with no stop, no ack and no timeout;
 * the map fails, its span is unmapped after it, and the channel stays
 * whole.
 */
static void test_destroy_unanswered(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_state vs = { .index = 0 };
	struct fuse_in_header ih = {
		.len = sizeof(ih), .opcode = FUSE_DESTROY,
	};
	struct fuse_out_header oh;
	struct vqf_vhost_stats st;
	struct vqf_vring_gseg rd, wr;
	bool got_map = false, got_destroy = false;
	void *cookie;
	u32 len;
	u64 map_out;

	map_unanswered(f);
	/* setup_nowait() put the map's 64-byte reply room last */
	map_out = RAM_GPA + f->bump - 64;
	ih.unique = ++f->unique;
	rd.addr = galloc(f, sizeof(ih));
	rd.len = sizeof(ih);
	wr.addr = galloc(f, 64);
	wr.len = 64;
	memcpy(hva(f, rd.addr), &ih, sizeof(ih));
	assert_int_equal(vqf_vring_drv_add(f->vq[1], &rd, 1, &wr, 1, &ih), 0);
	assert_int_equal(vqf_eventfd_signal(f->kick[1]), 0);
	/* Both replies, however long (a hang is ctest's TIMEOUT's). */
	while (!(got_map && got_destroy)) {
		while (vqf_vring_drv_get_buf(f->vq[1], &cookie, &len) == 1) {
			if (cookie == f)
				got_map = true;
			else if (cookie == &ih)
				got_destroy = true;
		}
		vqf_eventfd_wait(f->call[1], 10);
	}
	memcpy(&oh, hva(f, map_out), sizeof(oh));
	assert_true(oh.error < 0);
	memcpy(&oh, hva(f, wr.addr), sizeof(oh));
	assert_int_equal(oh.unique, ih.unique);
	assert_int_equal(oh.error, 0);
	stats(f, &st);
	assert_int_equal(st.shm.cancelled, 1);
	assert_int_equal(st.shm.timeouts, 0);
	assert_int_equal(st.shm.undo_unmaps, 1);
	assert_int_equal(st.shm.breaks, 0);
	assert_int_equal(st.stops, 0);
	/* and the device still stops as usual */
	msg(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs), NULL, 0);
	assert_int_equal(reply(f, VQF_VHOST_GET_VRING_BASE, &vs, sizeof(vs)),
			 sizeof(vs));
}

/*
 * A guest's map acked twice, the second ack a moment later: found by
 * the map itself or, once it returned, by the serving thread watching
 * the idle channel; the connection ends either way.
 */
static void test_dup_served(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	u64 node;

	start(f, 0);
	/* the table's map is answered (once) before the flag is set, so
	 * that the repeat goes to the guest's map and to nothing else
	 */
	assert_int_equal(wait_seen(f, 1), 1);
	node = lookup_f(f);
	pthread_mutex_lock(&f->block);
	f->dup = true;
	pthread_mutex_unlock(&f->block);
	setup_nowait(f, node);
	wait_channel_break(f, &st);
	assert_int_equal(st.shm.acks_unsolicited, 1);
	assert_int_equal(st.shm.breaks, 1);
}

/* An ack out of the blue on an idle channel ends the connection. */
static void test_unsolicited_served(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	u8 buf[VQF_VSHM_ACK_SIZE];

	start(f, 0);
	assert_int_equal(wait_seen(f, 1), 1);
	ack_put(buf, VQF_VHOST_BACKEND_SHMEM_MAP, ACK_FLAGS, 8, 0);
	assert_int_equal(send(f->bk[0], buf, sizeof(buf), MSG_NOSIGNAL),
			 sizeof(buf));
	wait_channel_break(f, &st);
	assert_int_equal(st.shm.acks_unsolicited, 1);
	assert_int_equal(st.shm.maps, 1);	/* the table's, before it */
}

/* ---- vqfuse-sim vhost-user --guests 2: two front-ends, one table ---- */

static const char *sim_bin;	/* argv[1], vqfuse-sim */

struct cli {
	char dir[64];		/* shared/, the sockets s.0 and s.1, log */
	pid_t pid;
	struct fe *g[2];
};

static void path_in(const struct cli *c, const char *name, char *out,
		    size_t size)
{
	snprintf(out, size, "%s/%s", c->dir, name);
}

/*
 * Starts `vqfuse-sim vhost-user --socket DIR/s --shared DIR/shared
 * --threads 2` with @extra (NULL-terminated) and connects a front-end
 * to each of its @n sockets (s itself for one, s.0 .. for more).
 * shared/ holds f ("abc") and m (FILE_BYTES, to map).
 */
static void cli_spawn(struct cli *c, const char *const *extra, unsigned int n)
{
	char sock[96], shared[128], p[160];
	const char *argv[16];
	unsigned int i, a = 0;
	int fd;

	strcpy(c->dir, "/tmp/vqf-guests-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	path_in(c, "s", sock, sizeof(sock));
	path_in(c, "shared", shared, sizeof(shared));
	assert_int_equal(mkdir(shared, 0755), 0);
	snprintf(p, sizeof(p), "%s/f", shared);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	snprintf(p, sizeof(p), "%s/m", shared);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, FILE_BYTES), 0);
	close(fd);
	argv[a++] = sim_bin;
	argv[a++] = "vhost-user";
	argv[a++] = "--socket";
	argv[a++] = sock;
	argv[a++] = "--shared";
	argv[a++] = shared;
	argv[a++] = "--threads";
	argv[a++] = "2";
	while (*extra && a < 15)
		argv[a++] = *extra++;
	argv[a] = NULL;
	c->pid = daemon_spawn(c->dir, argv);
	for (i = 0; i < n; i++) {
		struct fe *f = calloc(1, sizeof(*f));

		assert_non_null(f);
		f->sv[1] = -1;
		f->table_fd = -1;
		f->table_rw = -1;
		fe_side_init(f);
		if (n > 1)
			snprintf(p, sizeof(p), "%s.%u", sock, i);
		else
			snprintf(p, sizeof(p), "%s", sock);
		f->sv[0] = daemon_connect(c->dir, &c->pid, p);
		c->g[i] = f;
	}
}

/*
 * Without the program *@state is NULL and the case skips itself: cmocka
 * takes a setup that skips for an error, and its skip flag outlives it,
 * turning the next case's failure into a skip.
 */
static int cli_setup(void **state, const char *const *extra, unsigned int n)
{
	struct cli *c = NULL;

	if (sim_bin) {
		c = calloc(1, sizeof(*c));
		assert_non_null(c);
		cli_spawn(c, extra, n);
	}
	*state = c;
	return 0;
}

static int setup_cli(void **state)
{
	static const char *const extra[] = { "--guests", "2", NULL };

	return cli_setup(state, extra, 2);
}

/* One front-end, a DAX window, no version table. */
static int setup_cli_dax(void **state)
{
	static const char *const extra[] = { "--dax-window", "1M", NULL };

	return cli_setup(state, extra, 1);
}

static void fe_cli_close(struct fe *f)
{
	/*
	 * A map seen is answered a moment later; hanging up in between
	 * would cancel it, and the daemon count it failed.
	 */
	pthread_mutex_lock(&f->block);
	while (f->bthr_on && f->nanswered < f->nseen)
		pthread_cond_wait(&f->bcond, &f->block);
	pthread_mutex_unlock(&f->block);
	if (f->sv[0] >= 0)
		close(f->sv[0]);
	f->sv[0] = -1;
	if (f->bk[0] >= 0)
		shutdown(f->bk[0], SHUT_RDWR);
	if (f->bthr_on)
		pthread_join(f->bthr, NULL);
	f->bthr_on = false;
	if (f->bk[0] >= 0)
		close(f->bk[0]);
	if (f->bk[1] >= 0)
		close(f->bk[1]);
	f->bk[0] = f->bk[1] = -1;
	if (f->table_map)
		munmap((void *)f->table_map, f->table_len);
	f->table_map = NULL;
	pthread_cond_destroy(&f->bcond);
	pthread_mutex_destroy(&f->block);
	fe_ram_free(f);
	free(f);
}

static int teardown_cli(void **state)
{
	struct cli *c = *state;
	unsigned int i;

	if (!c)
		return 0;
	for (i = 0; i < 2; i++)
		if (c->g[i])
			fe_cli_close(c->g[i]);
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	rm_dir(c->dir);
	free(c);
	return 0;
}

/* INIT asking for the version extension; the hub must grant it. */
static void fuse_init_ver(struct fe *f)
{
	assert_true(fuse_init_ask(f) & VQF_FUSE_INIT_SHARED_VERSION);
}

static s64 slot(const struct fe *f, u64 index)
{
	return __atomic_load_n((const s64 *)f->table_map + index,
			       __ATOMIC_ACQUIRE);
}

/* The `dax:` line that follows "guest @i:" in the daemon's log. */
static const char *guest_dax_line(const char *lg, unsigned int i)
{
	char hdr[32];
	const char *p;

	snprintf(hdr, sizeof(hdr), "guest %u:\n", i);
	p = strstr(lg, hdr);
	assert_non_null(p);
	p = strstr(p, ": dax: ");
	assert_non_null(p);
	return p;
}

/*
 * Both front-ends gone, the daemon's exit status 0 and its log in @lg;
 * @da/@db (unless NULL) the `dax:` lines of guests 0 and 1.
 */
static void guests_close_log(struct cli *c, char *lg, size_t size,
			     const char **da, const char **db)
{
	unsigned int i;
	int rc;

	for (i = 0; i < 2; i++)
		if (c->g[i])
			fe_cli_close(c->g[i]);
	c->g[0] = c->g[1] = NULL;
	rc = daemon_wait(&c->pid);
	daemon_log(c->dir, lg, size);
	if (rc) {
		fprintf(stderr, "daemon log:\n%s\n", lg);
		fail_msg("the daemon ended with %d", rc);
	}
	if (da)
		*da = guest_dax_line(lg, 0);
	if (db)
		*db = guest_dax_line(lg, 1);
}

/*
 * `vqfuse-sim vhost-user --guests 2`, the program itself: two front-ends
 * on their own sockets share one hub and one table.  Both get the same
 * slot for the same file; guest B's chmod and the host's append move it
 * in the table guest A maps, without A sending anything; A's next
 * LOOKUP brings the new size at the slot's new version.  The daemon ends
 * by itself once both went, and says it served two guests.
 */
static void test_cli_guests(void **state)
{
	struct cli *c = *state;
	struct fe *a, *b;
	struct fuse_setattr_in sa = { .valid = FATTR_MODE,
				      .mode = S_IFREG | 0600 };
	struct fuse_attr_out ao;
	struct entry_ver ea, eb;
	char p[160], lg[4096];
	unsigned int i, tries;
	s64 v0, v1;
	int fd;

	if (!c)
		skip();
	a = c->g[0];
	b = c->g[1];
	for (i = 0; i < 2; i++) {
		struct fe *f = c->g[i];

		rings_create(f, NULL);
		handshake(f, 0);
		fuse_init_ver(f);
		assert_true(wait_seen(f, 1) >= 1);
		assert_non_null(fe_table(f));
		assert_int_equal(f->table_wmap_err, EACCES);
	}
	ea = lookup_ver(a);
	eb = lookup_ver(b);
	assert_int_equal(ea.eo.nodeid, eb.eo.nodeid);
	assert_int_equal(ea.ev.version_index, eb.ev.version_index);
	v0 = slot(a, ea.ev.version_index);
	assert_true(v0 >= 1);
	assert_int_equal(slot(b, ea.ev.version_index), v0);
	assert_int_equal(ea.eo.attr.size, 3);

	assert_int_equal(fuse_call(b, 1, FUSE_SETATTR, eb.eo.nodeid, &sa,
				   sizeof(sa), &ao, sizeof(ao)).error, 0);
	v1 = slot(a, ea.ev.version_index);
	assert_true(v1 > v0);

	path_in(c, "shared/f", p, sizeof(p));
	fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "defg", 4), 4);
	close(fd);
	/* The hub's watcher bumps it; bounded far beyond its rescan. */
	for (tries = 0; tries < 6000 &&
	     slot(a, ea.ev.version_index) == v1; tries++)
		usleep(10000);
	assert_true(slot(a, ea.ev.version_index) > v1);
	v1 = slot(a, ea.ev.version_index);
	ea = lookup_ver(a);
	assert_int_equal(ea.eo.attr.size, 7);
	assert_int_equal(ea.eo.attr.mode & 07777, 0600);
	/* The entry is at least as new as the change it shows; the watcher
	 * may bump the slot again meanwhile (a write is a modify and a
	 * close), and an entry that raced a bump gets 0, "no version".
	 */
	if (ea.ev.initial_version) {
		assert_true(ea.ev.initial_version >= v1);
		assert_true(ea.ev.initial_version <=
			    slot(a, ea.ev.version_index));
	}

	guests_close_log(c, lg, sizeof(lg), NULL, NULL);
	if (!strstr(lg, "hub: 2 guests"))
		fail_msg("daemon log:\n%s", lg);
	assert_non_null(strstr(lg, "guest 0: front-end disconnected"));
	assert_non_null(strstr(lg, "guest 1: front-end disconnected"));
}

/* ---- --guests 2 --dax-window: a window per guest, one table ---------- */

static int setup_cli_guests_dax(void **state)
{
	static const char *const extra[] = {
		"--guests", "2", "--dax-window", "1M", NULL,
	};

	return cli_setup(state, extra, 2);
}

static struct entry_ver lookup_m(struct fe *f)
{
	struct entry_ver r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(fuse_call(f, 1, FUSE_LOOKUP, 1, "m", 2, &r,
				   sizeof(r)).error, 0);
	return r;
}

/*
 * Both front-ends started with versions (each has mapped the table), and
 * each one's LOOKUP of "m".
 */
static void guests_lookup_m(struct cli *c, struct entry_ver *ea,
			    struct entry_ver *eb)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		rings_create(c->g[i], NULL);
		handshake(c->g[i], 0);
		fuse_init_ver(c->g[i]);
		assert_int_equal(wait_seen(c->g[i], 1), 1);	/* the table */
	}
	*ea = lookup_m(c->g[0]);
	*eb = lookup_m(c->g[1]);
}

static void assert_map(const struct seen *s, u64 foff, u64 moff, u64 len,
		       bool w)
{
	assert_int_equal(s->req, VQF_VHOST_BACKEND_SHMEM_MAP);
	assert_int_equal(s->m.shmid, VQF_VHOST_SHMID_CACHE);
	assert_int_equal(s->m.fd_offset, foff);
	assert_int_equal(s->m.shm_offset, moff);
	assert_int_equal(s->m.len, len);
	assert_int_equal(s->m.flags, w ? VQF_VHOST_SHMEM_MAP_RW : 0);
	assert_true(s->had_fd);
}

static unsigned int nseen(struct fe *f)
{
	unsigned int n;

	pthread_mutex_lock(&f->block);
	n = f->nseen;
	pthread_mutex_unlock(&f->block);
	return n;
}


/*
 * `vqfuse-sim vhost-user --guests 2 --dax-window 1M`: each front-end has
 * its own window, the device's bookkeeping is per guest, and both map
 * the one host file (the host's page cache, one copy).  A and B map the
 * same file range at the same window offset, each in its own window;
 * B's hostile SETUPMAPPINGs and REMOVEMAPPINGs (past the window,
 * unaligned, overlapping its own mapping, removing A's range that B never
 * mapped) are refused, counted in B's `dax:` line only, and send nothing
 * on either channel.  A's truncate of the file (SETATTR size) maps the
 * part of B's mapping past the page holding the new end again (UNMAP,
 * MAP of that part) before A's reply, bumps the slot B sees, and sends
 * nothing to A; a host truncate maps it again in both windows.  B's
 * WRITE past the end and the host's growth map the pages the file grew
 * over again in both windows (one MAP over them, no UNMAP); an append
 * inside the last page sends nothing.
 */
static void test_cli_guests_dax(void **state)
{
	struct cli *c = *state;
	struct fuse_setattr_in sa = { .valid = FATTR_SIZE,
				      .size = 2 * PG + 100 };
	struct {
		struct fuse_write_in wi;
		char data[10];
	} __attribute__((packed)) wr;
	struct fuse_write_out wo;
	struct fuse_attr_out ao;
	struct entry_ver ea, eb;
	const char *da, *db;
	u64 fh;
	char p[160], lg[8192];
	struct seen s;
	struct fe *a, *b;
	s64 v0;

	if (!c)
		skip();
	a = c->g[0];
	b = c->g[1];
	guests_lookup_m(c, &ea, &eb);
	assert_int_equal(ea.eo.nodeid, eb.eo.nodeid);
	/* The same range at the same offset: one window each. */
	assert_int_equal(setupmap(a, ea.eo.nodeid, ~0ull, 0, 16 * PG, 0,
				  true), 0);
	assert_int_equal(setupmap(b, eb.eo.nodeid, ~0ull, 0, 16 * PG, 0,
				  true), 0);
	s = seen_at(a, 1);
	assert_map(&s, 0, 0, 16 * PG, true);
	s = seen_at(b, 1);
	assert_map(&s, 0, 0, 16 * PG, true);

	/* B, hostile: nothing of it reaches a channel. */
	assert_int_equal(setupmap(b, eb.eo.nodeid, ~0ull, 0, PG, WINDOW,
				  false), -ERANGE);
	assert_int_equal(setupmap(b, eb.eo.nodeid, ~0ull, 0, PG,
				  WINDOW - PG + 1, false), -EINVAL);
	assert_int_equal(setupmap(b, eb.eo.nodeid, ~0ull, 0, 2 * PG, 15 * PG,
				  false), -EBUSY);
	assert_int_equal(setupmap(b, eb.eo.nodeid, ~0ull, 0, 4 * PG,
				  WINDOW - 2 * PG, false), -ERANGE);
	assert_int_equal(removemap(b, eb.eo.nodeid, 16 * PG, PG), -ENOENT);
	assert_int_equal(removemap(b, eb.eo.nodeid, WINDOW, PG), -ERANGE);
	assert_int_equal(removemap(b, eb.eo.nodeid, PG, PG), -ENOENT);
	/* A's mapping is A's: its REMOVEMAPPING elsewhere changes nothing
	 * of B's, and B's window keeps its own.
	 */
	assert_int_equal(setupmap(a, ea.eo.nodeid, ~0ull, 0, PG, 32 * PG,
				  false), 0);
	assert_int_equal(removemap(b, eb.eo.nodeid, 32 * PG, PG), -ENOENT);
	assert_int_equal(nseen(b), 2);
	assert_int_equal(removemap(a, ea.eo.nodeid, 32 * PG, PG), 0);
	assert_int_equal(wait_seen(a, 4), 4);
	s = seen_at(a, 2);
	assert_map(&s, 0, 32 * PG, PG, false);
	s = seen_at(a, 3);
	assert_unmap(&s, 32 * PG, PG);
	assert_int_equal(nseen(b), 2);

	/* A truncates: B's mapping past page 3 is mapped again first. */
	v0 = slot(b, eb.ev.version_index);
	assert_int_equal(fuse_call(a, 1, FUSE_SETATTR, ea.eo.nodeid, &sa,
				   sizeof(sa), &ao, sizeof(ao)).error, 0);
	assert_int_equal(ao.attr.size, 2 * PG + 100);
	assert_int_equal(nseen(b), 4);
	s = seen_at(b, 2);
	assert_unmap(&s, 3 * PG, 13 * PG);
	s = seen_at(b, 3);
	assert_map(&s, 3 * PG, 3 * PG, 13 * PG, true);
	assert_true(slot(b, eb.ev.version_index) > v0);
	assert_int_equal(nseen(a), 4);

	/* The host shrinks it to one page: both windows. */
	path_in(c, "shared/m", p, sizeof(p));
	assert_int_equal(truncate(p, 100), 0);
	assert_int_equal(wait_seen(a, 6), 6);
	assert_int_equal(wait_seen(b, 6), 6);
	s = seen_at(a, 4);
	assert_unmap(&s, PG, 15 * PG);
	s = seen_at(a, 5);
	assert_map(&s, PG, PG, 15 * PG, true);
	s = seen_at(b, 4);
	assert_unmap(&s, PG, 15 * PG);
	s = seen_at(b, 5);
	assert_map(&s, PG, PG, 15 * PG, true);
	/* B writes past the end: the pages the file grew over (1-4) are
	 * mapped over in place in both windows before B's reply, no unmap.
	 */
	fh = open_f(b, eb.eo.nodeid, O_RDWR);
	memset(&wr, 0, sizeof(wr));
	wr.wi.fh = fh;
	wr.wi.offset = 4 * PG;
	wr.wi.size = sizeof(wr.data);
	memcpy(wr.data, "0123456789", sizeof(wr.data));
	assert_int_equal(fuse_call(b, 1, FUSE_WRITE, eb.eo.nodeid, &wr,
				   sizeof(wr), &wo, sizeof(wo)).error, 0);
	assert_int_equal(wo.size, sizeof(wr.data));
	assert_int_equal(nseen(a), 7);
	assert_int_equal(nseen(b), 7);
	s = seen_at(a, 6);
	assert_map(&s, PG, PG, 4 * PG, true);
	s = seen_at(b, 6);
	assert_map(&s, PG, PG, 4 * PG, true);
	/* An append inside the last page grows over no page: nothing. */
	wr.wi.offset = 4 * PG + sizeof(wr.data);
	assert_int_equal(fuse_call(b, 1, FUSE_WRITE, eb.eo.nodeid, &wr,
				   sizeof(wr), &wo, sizeof(wo)).error, 0);
	assert_int_equal(nseen(a), 7);
	assert_int_equal(nseen(b), 7);
	/* The host grows it to 16 pages: pages 5-15, in both. */
	assert_int_equal(truncate(p, FILE_BYTES), 0);
	assert_int_equal(wait_seen(a, 8), 8);
	assert_int_equal(wait_seen(b, 8), 8);
	s = seen_at(a, 7);
	assert_map(&s, 5 * PG, 5 * PG, 11 * PG, true);
	s = seen_at(b, 7);
	assert_map(&s, 5 * PG, 5 * PG, 11 * PG, true);

	guests_close_log(c, lg, sizeof(lg), &da, &db);
	if (strncmp(da, ": dax: 2 setups (2 by nodeid, 0 replaced), 1 remove "
		    "batches (1 mappings), 0 refused,", 70) ||
	    strncmp(db, ": dax: 1 setups (1 by nodeid, 0 replaced), 0 remove "
		    "batches (0 mappings), 8 refused,", 70) ||
	    !strstr(da, "3 ranges mapped again at a size change (0 failed)") ||
	    !strstr(db, "4 ranges mapped again at a size change (0 failed)") ||
	    !strstr(lg, "windows: 2 shrinks and 3 growths seen, 7 ranges "
		    "mapped again, 0 failed")) {
		fprintf(stderr, "daemon log:\n%s\n", lg);
		fail();
	}
}

/* A's GETATTR of @nodeid; returns the slot B sees afterwards. */
static s64 getattr_then_slot(struct fe *a, struct fe *b, u64 nodeid,
			     u64 index)
{
	struct fuse_getattr_in gi = { 0 };
	struct fuse_attr_out ao;

	assert_int_equal(fuse_call(a, 1, FUSE_GETATTR, nodeid, &gi,
				   sizeof(gi), &ao, sizeof(ao)).error, 0);
	return slot(b, index);
}

/*
 * A writable DAX mapping lets a guest change the file (its bytes, mtime
 * and ctime) with plain stores: no request, no inotify event.  So while
 * any window maps a file writable, its slot must prove nothing to any
 * guest: the hub bumps it at the first writable mapping, after every
 * GETATTR and LOOKUP reply (the version a guest takes its attributes
 * at is then already behind the slot), and at the last writable
 * mapping's removal.  Read-only mappings change nothing.  Without the
 * hook, A's second GETATTR leaves the slot where it was and the case
 * fails.
 */
static void test_cli_guests_dax_writable(void **state)
{
	struct cli *c = *state;
	struct entry_ver ea, eb, e2;
	u64 idx, node;
	char lg[8192];
	const char *p;
	struct fe *a, *b;
	unsigned int i;
	s64 v0, v1, v2;

	if (!c)
		skip();
	a = c->g[0];
	b = c->g[1];
	guests_lookup_m(c, &ea, &eb);
	node = ea.eo.nodeid;
	idx = eb.ev.version_index;
	assert_int_not_equal(idx, 0);

	/* Nothing mapped writable: a GETATTR moves nothing. */
	v0 = slot(b, idx);
	assert_int_equal(getattr_then_slot(a, b, node, idx), v0);
	/* B maps it read-only: still nothing. */
	assert_int_equal(setupmap(b, node, ~0ull, 0, PG, 0, false), 0);
	assert_int_equal(getattr_then_slot(a, b, node, idx), v0);
	/* B maps it writable (replacing its read-only range): bumped. */
	assert_int_equal(setupmap(b, node, ~0ull, 0, PG, 0, true), 0);
	v1 = slot(b, idx);
	assert_true(v1 > v0);
	/* Every GETATTR, and every LOOKUP, now leaves it behind. */
	v2 = getattr_then_slot(a, b, node, idx);
	assert_true(v2 > v1);
	assert_true(getattr_then_slot(a, b, node, idx) > v2);
	e2 = lookup_m(a);
	assert_true(slot(b, idx) > e2.ev.initial_version);
	/* A second writable mapping (A's), then both removed: bumped at
	 * the last only.
	 */
	assert_int_equal(setupmap(a, node, ~0ull, 0, PG, 2 * PG, true), 0);
	assert_int_equal(removemap(a, node, 2 * PG, PG), 0);
	v1 = slot(b, idx);
	assert_true(getattr_then_slot(a, b, node, idx) > v1);
	assert_int_equal(removemap(b, node, 0, PG), 0);
	v2 = slot(b, idx);
	assert_true(v2 > v1);
	/* None left: the slot proves things again. */
	assert_int_equal(getattr_then_slot(a, b, node, idx), v2);
	e2 = lookup_m(a);
	assert_int_equal(slot(b, idx), e2.ev.initial_version);

	/*
	 * B maps it writable once more and hangs up: the reset of its
	 * window gives the mapping back, so A's GETATTRs stop moving the
	 * slot.  B's hang-up reaches the daemon when it does: A looks up
	 * to 3000 times, 10 ms apart, far beyond any stop.
	 */
	assert_int_equal(setupmap(b, node, ~0ull, 0, PG, 0, true), 0);
	assert_true(slot(a, idx) > v2);
	fe_cli_close(b);
	c->g[1] = NULL;
	for (i = 0; i < 3000; i++) {
		v1 = slot(a, idx);
		if (getattr_then_slot(a, a, node, idx) == v1)
			break;
		usleep(10000);
	}
	assert_true(i < 3000);

	guests_close_log(c, lg, sizeof(lg), NULL, NULL);
	/*
	 * B's upgrade (0 -> 1), the replies while mapped (2 GETATTRs and a
	 * LOOKUP under B's mapping, a GETATTR after A's came and went), B's
	 * removal (1 -> 0): 6; A's own mapping and removal in between none.
	 * Then B's new mapping, A's GETATTRs until B's reset, the reset: at
	 * least 8, and every one of a file still held.
	 */
	p = strstr(lg, "failed; ");
	if (!p || sscanf(p, "failed; %u bumps for writable mappings (0 of "
			 "files not held)", &i) != 1 || i < 8 ||
	    !strstr(p, "(0 of files not held)"))
		fail_msg("daemon log: %s", p ? p : lg);
}

/* ---- --dax-inode-min: FUSE_ATTR_DAX for the guests that mount dax=inode */

static int setup_cli_dax_inode(void **state)
{
	static const char *const extra[] = {
		"--guests", "2", "--dax-window", "1M", "--dax-inode-min", "8K",
		NULL,
	};

	return cli_setup(state, extra, 2);
}

/* INIT with @flags, flags2 asking for the table and FUSE_HAS_INODE_DAX. */
static u32 fuse_init_inode_dax(struct fe *f, u32 flags)
{
	struct fuse_init_in ii = {
		.major = FUSE_KERNEL_VERSION, .minor = 36,
		.max_readahead = 65536, .flags = flags,
		.flags2 = VQF_FUSE_INIT_SHARED_VERSION |
			  FUSE_HAS_INODE_DAX >> 32,
	};
	struct fuse_init_out io;

	memset(&io, 0, sizeof(io));
	assert_int_equal(fuse_call(f, 1, FUSE_INIT, 0, &ii, sizeof(ii), &io,
				   sizeof(io)).error, 0);
	return io.flags2;
}

/*
 * fuse_attr.flags of each of @names in the root's READDIRPLUS, with bit
 * 31 set for a name that was there.
 */
static void readdirplus_flags(struct fe *f, const char *const *names,
			      u32 *flags, unsigned int n)
{
	struct fuse_open_in oi = { 0 };
	struct fuse_open_out oo;
	struct fuse_read_in ri = { .size = 8192 };
	static u8 buf[8192];
	struct fuse_out_header oh;
	struct vqf_dirent e;
	unsigned int i;
	u32 pos = 0;

	assert_int_equal(fuse_call(f, 1, FUSE_OPENDIR, 1, &oi, sizeof(oi), &oo,
				   sizeof(oo)).error, 0);
	ri.fh = oo.fh;
	oh = fuse_call(f, 1, FUSE_READDIRPLUS, 1, &ri, sizeof(ri), buf,
		       sizeof(buf));
	assert_int_equal(oh.error, 0);
	memset(flags, 0, n * sizeof(*flags));
	while (vqf_dirent_next(buf, oh.len - sizeof(oh), true, &pos, &e) == 1)
		for (i = 0; i < n; i++)
			if (e.namelen == strlen(names[i]) &&
			    !memcmp(e.name, names[i], e.namelen))
				flags[i] = e.entry.attr.flags | 0x80000000u;
}

static u32 lookup_flags(struct fe *f, const char *name)
{
	struct entry_ver r;

	memset(&r, 0, sizeof(r));
	assert_int_equal(fuse_call(f, 1, FUSE_LOOKUP, 1, name,
				   strlen(name) + 1, &r, sizeof(r)).error, 0);
	return r.eo.attr.flags;
}

/*
 * `--dax-inode-min 8K`: guest A mounts dax=inode (FUSE_HAS_INODE_DAX at
 * INIT); B asks for it in flags2 without FUSE_INIT_EXT, which makes
 * flags2 meaningless: refused.  A's INIT reply says the daemon marks
 * files; B's does not.  A's LOOKUP, GETATTR and READDIRPLUS entry of the
 * 64 KiB file carry FUSE_ATTR_DAX, the 100-byte file and the directory
 * do not; B's LOOKUP of the big file does not either.  A's `dax:` line
 * counts 4 marked, B's none.  With the policy taken out of the device,
 * A's INIT reply lacks the flag and the case fails.
 */
static void test_cli_dax_inode(void **state)
{
	struct cli *c = *state;
	static const char *const names[] = { "m", "small", "dir" };
	struct fuse_getattr_in gi = { 0 };
	struct fuse_attr_out ao;
	struct entry_ver em;
	char p[160], lg[8192];
	u32 fl[3];
	const char *da, *db;
	struct fe *a, *b;
	FILE *fp;

	if (!c)
		skip();
	a = c->g[0];
	b = c->g[1];
	path_in(c, "shared/small", p, sizeof(p));
	fp = fopen(p, "w");
	assert_non_null(fp);
	fprintf(fp, "%0100d", 7);
	fclose(fp);
	path_in(c, "shared/dir", p, sizeof(p));
	assert_int_equal(mkdir(p, 0755), 0);
	rings_create(a, NULL);
	handshake(a, 0);
	rings_create(b, NULL);
	handshake(b, 0);
	assert_true(fuse_init_inode_dax(a, FUSE_INIT_EXT) &
		    (FUSE_HAS_INODE_DAX >> 32));
	assert_false(fuse_init_inode_dax(b, 0) & (FUSE_HAS_INODE_DAX >> 32));
	assert_true(lookup_flags(a, "m") & FUSE_ATTR_DAX);
	assert_false(lookup_flags(a, "small") & FUSE_ATTR_DAX);
	assert_false(lookup_flags(a, "dir") & FUSE_ATTR_DAX);
	assert_false(lookup_flags(b, "m") & FUSE_ATTR_DAX);
	memset(&em, 0, sizeof(em));
	assert_int_equal(fuse_call(a, 1, FUSE_LOOKUP, 1, "m", 2, &em,
				   sizeof(em)).error, 0);
	assert_int_equal(fuse_call(a, 1, FUSE_GETATTR, em.eo.nodeid, &gi,
				   sizeof(gi), &ao, sizeof(ao)).error, 0);
	assert_true(ao.attr.flags & FUSE_ATTR_DAX);
	readdirplus_flags(a, names, fl, 3);
	assert_int_equal(fl[0], 0x80000000u | FUSE_ATTR_DAX);
	assert_int_equal(fl[1], 0x80000000u);
	assert_int_equal(fl[2], 0x80000000u);

	guests_close_log(c, lg, sizeof(lg), &da, &db);
	if (!strstr(da, "(0 failed), 4 attributes marked DAX\n") ||
	    !strstr(db, "(0 failed), 0 attributes marked DAX\n"))
		fail_msg("daemon log: %s", da);
}

/*
 * The daemon with a guest's SETUPMAPPING on the channel that the
 * front-end never answers, then a SIGTERM (or a hang-up): it exits,
 * status 0, and its shmem: line says the stop's cancel ended the wait,
 * not the 30 s ack timeout.  How long it took is printed, not judged.
 */
static void cli_unanswered(struct cli *c, bool hangup)
{
	struct fuse_entry_out eo;
	long long t0, ms;
	char lg[4096];
	struct fe *f;
	int rc;

	if (!c)
		skip();
	f = c->g[0];
	rings_create(f, NULL);
	pthread_mutex_lock(&f->block);
	f->silent = true;
	pthread_mutex_unlock(&f->block);
	handshake(f, 0);
	fuse_init(f, 1);
	assert_int_equal(fuse_call(f, 1, FUSE_LOOKUP, 1, "m", 2, &eo,
				   sizeof(eo)).error, 0);
	setup_nowait(f, eo.nodeid);
	assert_int_equal(wait_seen(f, 1), 1);
	assert_int_equal(seen_at(f, 0).req, VQF_VHOST_BACKEND_SHMEM_MAP);
	t0 = mono_ms();
	if (hangup) {
		close(f->sv[0]);
		f->sv[0] = -1;
	} else {
		assert_int_equal(kill(c->pid, SIGTERM), 0);
	}
	rc = daemon_wait(&c->pid);
	ms = mono_ms() - t0;
	print_message("vqfuse-sim exited %lld ms after the %s\n", ms,
		      hangup ? "hang-up" : "SIGTERM");
	assert_int_equal(rc, 0);
	daemon_log(c->dir, lg, sizeof(lg));
	if (!strstr(lg, " 0 breaks (0 timeouts)") ||
	    !strstr(lg, "; 1 cancelled, 1 undo unmaps;"))
		fail_msg("daemon log:\n%s", lg);
}

static void test_cli_sigterm_unanswered(void **state)
{
	cli_unanswered(*state, false);
}

static void test_cli_hangup_unanswered(void **state)
{
	cli_unanswered(*state, true);
}

int main(int argc, char **argv)
{
	static struct prestate short_timeout = {
		.shmem_timeout_ms = 500, .table = false,
	};
	/* An hour: a wait the cancel did not end is a hang, not a pass. */
	static struct prestate long_timeout = {
		.shmem_timeout_ms = 3600000, .table = false,
	};
	static struct prestate long_timeout_pool = {
		.shmem_timeout_ms = 3600000, .table = false, .threads = 2,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_channel_running,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_disconnect, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refused_msgs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refused_maps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_shmem, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_incomplete, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_broken_channel, setup,
						teardown),
		cmocka_unit_test_prestate_setup_teardown(test_silent_channel,
							 setup, teardown,
							 &short_timeout),
		cmocka_unit_test_setup_teardown(test_hub_table, setup_hub,
						teardown),
		cmocka_unit_test_setup_teardown(test_table_before_promise,
						setup_hub, teardown),
		cmocka_unit_test_setup_teardown(test_table_refused, setup_hub,
						teardown),
		cmocka_unit_test_setup_teardown(test_table_init_hostile,
						setup_hub, teardown),
		cmocka_unit_test_setup_teardown(test_cli_guests_dax,
						setup_cli_guests_dax,
						teardown_cli),
		cmocka_unit_test_setup_teardown(test_cli_guests_dax_writable,
						setup_cli_guests_dax,
						teardown_cli),
		cmocka_unit_test_setup_teardown(test_cli_dax_inode,
						setup_cli_dax_inode,
						teardown_cli),
		cmocka_unit_test_setup_teardown(test_cli_guests, setup_cli,
						teardown_cli),
		cmocka_unit_test(test_ack_duplicate),
		cmocka_unit_test(test_ack_duplicate_then_refused),
		cmocka_unit_test(test_ack_unsolicited),
		cmocka_unit_test(test_ack_misnumbered),
		cmocka_unit_test(test_ack_malformed),
		cmocka_unit_test(test_ack_split),
		cmocka_unit_test(test_ack_split_idle),
		cmocka_unit_test(test_ack_idle_refused),
		cmocka_unit_test(test_eof_idle),
		cmocka_unit_test(test_ack_with_fds),
		cmocka_unit_test(test_ack_eof),
		cmocka_unit_test(test_ack_while_cancelled),
		cmocka_unit_test(test_ack_then_cancel),
		cmocka_unit_test(test_channel_kinds),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test_prestate_setup_teardown(test_stop_unanswered,
							 setup, teardown,
							 &long_timeout),
		cmocka_unit_test_prestate_setup_teardown(
			test_hangup_unanswered, setup, teardown,
			&long_timeout),
		cmocka_unit_test_prestate_setup_teardown(
			test_destroy_unanswered, setup, teardown,
			&long_timeout_pool),
		cmocka_unit_test_setup_teardown(test_dup_served, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unsolicited_served, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cli_sigterm_unanswered,
						setup_cli_dax, teardown_cli),
		cmocka_unit_test_setup_teardown(test_cli_hangup_unanswered,
						setup_cli_dax, teardown_cli),
	};

	sim_bin = argc > 1 ? argv[1] : NULL;

	return cmocka_run_group_tests(tests, NULL, NULL);
}
