// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_vhost_shmem.c - the DAX window and the version table over
 * vhost-user's SHMEM protocol, against a fake front-end (the harness of
 * test_vhost.c) that also serves the back-end channel: GET_SHMEM_CONFIG,
 * the table's read-only SHMEM_MAP at the start, SETUPMAPPING and
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "vqf_hub.h"
#include "vqf_passthrough.h"
#include "vqf_vhost.h"
#include "vqf_vhost_shmem.h"
#include "vqf_vring_drv.h"
#include "vqf_vring_thread.h"

#include "vhost_fe.h"

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
	struct seen seen[MAX_SEEN];
	unsigned int nseen;
	unsigned int refuse;	/* acks to answer non-zero */
	bool silent;		/* read requests, answer none */
	int table_fd;		/* read-only, as the CLI gives it */
	int table_rw;		/* -1 with a hub (the hub's memfd) */
	struct vqf_hub *hub;	/* setup_hub(): requests through a port */
	struct vqf_hub_port *port;
	const u8 *table_map;	/* the front-end's mapping of shmid 1 */
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

/* Rings, the handshake without the protocol features in @drop, INIT. */
static void start(struct fe *f, u64 drop)
{
	rings_create(f, NULL);
	handshake(f, drop);
	fuse_init(f, 1);
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
		int fd = -1;
		ssize_t n = recvmsg(f->bk[0], &mh, MSG_WAITALL);

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
		if (fd >= 0 && s.m.shmid == VQF_VHOST_SHMID_VERSION &&
		    !f->table_map) {
			void *w = mmap(NULL, s.m.len, PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, 0);

			f->table_wmap_err = w == MAP_FAILED ? errno : 0;
			if (w != MAP_FAILED)
				munmap(w, s.m.len);
			w = mmap(NULL, s.m.len, PROT_READ, MAP_SHARED, fd, 0);
			assert_true(w != MAP_FAILED);
			f->table_len = s.m.len;
			__atomic_store_n(&f->table_map, w, __ATOMIC_RELEASE);
		}
		if (fd >= 0) {
			void *p = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd,
				       (off_t)s.m.fd_offset);

			s.accmode = fcntl(fd, F_GETFL) & O_ACCMODE;
			assert_true(p != MAP_FAILED);
			memcpy(s.head, p, sizeof(s.head));
			munmap(p, PG);
			close(fd);
		}
		pthread_mutex_lock(&f->block);
		if (f->refuse) {
			f->refuse--;
			status = 1;
		}
		if (f->nseen < MAX_SEEN)
			f->seen[f->nseen++] = s;
		if (f->silent) {
			pthread_mutex_unlock(&f->block);
			continue;
		}
		pthread_mutex_unlock(&f->block);
		h.flags = VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY;
		h.size = sizeof(status);
		memcpy(rep, &h, VQF_VHOST_HDR_SIZE);
		memcpy(rep + VQF_VHOST_HDR_SIZE, &status, sizeof(status));
		/* A back-end that hung up may still have sent more. */
		(void)!send(f->bk[0], rep, sizeof(rep), MSG_NOSIGNAL);
	}
	return NULL;
}

/* Waits until the channel has seen @n requests; returns the count. */
static unsigned int wait_seen(struct fe *f, unsigned int n)
{
	unsigned int i, got = 0;

	for (i = 0; i < 2000; i++) {
		pthread_mutex_lock(&f->block);
		got = f->nseen;
		pthread_mutex_unlock(&f->block);
		if (got >= n)
			break;
		usleep(5000);
	}
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
	fe_ram_init(f);
}

/*
 * What a case may ask of setup_any() through cmocka's prestate; without
 * one: the default ack timeout and a version table.
 */
struct prestate {
	unsigned int shmem_timeout_ms;
	bool table;
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
	if (ps)
		vc.shmem_timeout_ms = ps->shmem_timeout_ms;
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
 * The table is mapped read-only at the start; mappings go out as
 * SHMEM_MAP with the file's fd (read-only for a read-only open), come
 * back as SHMEM_UNMAP, an upgrade unmaps first; DESTROY unmaps the rest.
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
	u64 v = 0;
	int efd = eventfd(0, EFD_CLOEXEC);

	assert_true(efd >= 0);
	msg(f, VQF_VHOST_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	/* Neither SHMEM nor BACKEND_REQ negotiated. */
	assert_int_equal(acked(f, VQF_VHOST_GET_SHMEM_CONFIG, NULL, 0, NULL,
			       0), ENOPROTOOPT);
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       &f->bk[1], 1), ENOPROTOOPT);
	pf = get_u64(f, VQF_VHOST_GET_PROTOCOL_FEATURES);
	msg(f, VQF_VHOST_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	/* Not a socket; no fd; a payload. */
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       &efd, 1), ENOTSOCK);
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, NULL, 0,
			       NULL, 0), EBADF);
	assert_int_equal(acked(f, VQF_VHOST_SET_BACKEND_REQ_FD, &v, sizeof(v),
			       &f->bk[1], 1), EMSGSIZE);
	assert_int_equal(acked(f, VQF_VHOST_GET_SHMEM_CONFIG, &v, sizeof(v),
			       NULL, 0), EMSGSIZE);
	close(efd);
	stats(f, &st);
	assert_int_equal(st.refused, 6);
	assert_int_equal(st.not_negotiated, 2);
	assert_int_equal(st.backend_fd_bad, 1);
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
	fuse_init(f, 1);
	node = lookup_f(f);
	assert_int_equal(setupmap(f, node, ~0ull, 0, PG, 0, false), -ENOSYS);
	assert_int_equal(removemap(f, node, 0, PG), -ENOSYS);
	stats(f, &st);
	assert_int_equal(st.shm_served + st.shm_unserved, 0);
	assert_int_equal(st.table_maps, 0);
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
	assert_int_equal(wait_seen(f, 0), 0);
}

/* A channel that breaks fails the mapping and ends the connection. */
static void test_broken_channel(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	u64 node;
	int i;

	start(f, 0);
	assert_int_equal(wait_seen(f, 1), 1);
	node = lookup_f(f);
	shutdown(f->bk[0], SHUT_RDWR);
	/* Its reply may be dropped: the connection ends at once. */
	setup_nowait(f, node);
	for (i = 0; i < 6000; i++) {
		vqf_vhost_get_stats(f->vh, &st);
		if (st.channel_breaks)
			break;
		usleep(5000);
	}
	assert_int_equal(st.channel_breaks, 1);
	assert_int_equal(st.shm.breaks, 1);
	pthread_join(f->thr, NULL);
	assert_int_equal(f->serve_ret, -EPIPE);
	/* teardown joins again: make that a no-op thread. */
	assert_int_equal(pthread_create(&f->thr, NULL, serve_noop, NULL), 0);
}

/*
 * A front-end that reads the channel and never answers: the mapping
 * gives up after the timeout, the channel counts as broken (a timeout)
 * and the connection ends.  With no version table (prestate), so that
 * the short timeout governs this one mapping only: the table's map at
 * the start, answered by a front-end that a loaded machine may stall,
 * could otherwise time out first.
 */
static void test_silent_channel(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats st;
	u64 node;
	int i;

	start(f, 0);
	node = lookup_f(f);
	pthread_mutex_lock(&f->block);
	f->silent = true;
	pthread_mutex_unlock(&f->block);
	setup_nowait(f, node);
	/* 0.5 s of timeout; 60 s of polling, whatever the machine. */
	for (i = 0; i < 12000; i++) {
		vqf_vhost_get_stats(f->vh, &st);
		if (st.channel_breaks)
			break;
		usleep(5000);
	}
	assert_int_equal(st.shm.timeouts, 1);
	assert_int_equal(st.shm.breaks, 1);
	assert_int_equal(st.channel_breaks, 1);
	assert_int_equal(wait_seen(f, 1), 1);	/* the map was sent */
	assert_int_equal(seen_at(f, 0).req, VQF_VHOST_BACKEND_SHMEM_MAP);
	pthread_join(f->thr, NULL);
	assert_int_equal(f->serve_ret, -EPIPE);
	assert_int_equal(pthread_create(&f->thr, NULL, serve_noop, NULL), 0);
}

/*
 * --version-table's shape: requests through a hub port; the front-end
 * maps the hub's table read-only (a writable mapping of the fd it got is
 * refused) and sees the bump of a guest's change; a stop gives the next
 * session a fresh port, the old one's lookups given back.
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

	start(f, 0);
	assert_int_equal(wait_seen(f, 1), 1);
	assert_non_null(__atomic_load_n(&f->table_map, __ATOMIC_ACQUIRE));
	assert_int_equal(f->table_wmap_err, EACCES);
	node = lookup_f(f);
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

static int setup_cli(void **state)
{
	struct cli *c = calloc(1, sizeof(*c));
	char sock[96], shared[128], lg[128], p[160];
	unsigned int i, tries;

	if (!sim_bin) {
		free(c);
		skip();
	}
	assert_non_null(c);
	strcpy(c->dir, "/tmp/vqf-guests-XXXXXX");
	assert_non_null(mkdtemp(c->dir));
	path_in(c, "s", sock, sizeof(sock));
	path_in(c, "shared", shared, sizeof(shared));
	path_in(c, "log", lg, sizeof(lg));
	assert_int_equal(mkdir(shared, 0755), 0);
	snprintf(p, sizeof(p), "%s/f", shared);
	{
		int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "abc", 3), 3);
		close(fd);
	}
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (!c->pid) {
		int fd = open(lg, O_CREAT | O_WRONLY | O_TRUNC, 0644);

		if (fd >= 0)
			dup2(fd, 2);
		execl(sim_bin, sim_bin, "vhost-user", "--socket", sock,
		      "--shared", shared, "--guests", "2", "--threads", "2",
		      (char *)NULL);
		_exit(127);
	}
	/* Bounded by tries, far beyond a loaded machine's start-up. */
	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s.%u", sock, i);
		for (tries = 0; tries < 12000 && access(p, F_OK); tries++)
			usleep(10000);
		assert_int_equal(access(p, F_OK), 0);
	}
	for (i = 0; i < 2; i++) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct fe *f = calloc(1, sizeof(*f));

		assert_non_null(f);
		f->sv[1] = -1;
		f->table_fd = -1;
		f->table_rw = -1;
		fe_side_init(f);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.%u", sock, i);
		f->sv[0] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(f->sv[0] >= 0);
		assert_int_equal(connect(f->sv[0], (struct sockaddr *)&sa,
					 sizeof(sa)), 0);
		c->g[i] = f;
	}
	*state = c;
	return 0;
}

static void fe_cli_close(struct fe *f)
{
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
	pthread_mutex_destroy(&f->block);
	fe_ram_free(f);
	free(f);
}

/* The daemon's exit status once both front-ends went (bounded wait). */
static int cli_wait(struct cli *c)
{
	unsigned int tries;
	int st = 0;

	for (tries = 0; tries < 12000; tries++) {
		if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
			c->pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
		}
		usleep(10000);
	}
	return -1;
}

static int teardown_cli(void **state)
{
	struct cli *c = *state;
	unsigned int i;

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
	assert_true(io.flags2 & VQF_FUSE_INIT_SHARED_VERSION);
}

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

static s64 slot(const struct fe *f, u64 index)
{
	return __atomic_load_n((const s64 *)f->table_map + index,
			       __ATOMIC_ACQUIRE);
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
	struct fe *a = c->g[0], *b = c->g[1];
	struct fuse_setattr_in sa = { .valid = FATTR_MODE,
				      .mode = S_IFREG | 0600 };
	struct fuse_attr_out ao;
	struct entry_ver ea, eb;
	char p[160], lg[4096];
	unsigned int i, tries;
	s64 v0, v1;
	ssize_t n;
	int fd;

	for (i = 0; i < 2; i++) {
		struct fe *f = c->g[i];

		rings_create(f, NULL);
		handshake(f, 0);
		fuse_init_ver(f);
		assert_true(wait_seen(f, 1) >= 1);
		assert_non_null(__atomic_load_n(&f->table_map,
						__ATOMIC_ACQUIRE));
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
	ea = lookup_ver(a);
	assert_int_equal(ea.eo.attr.size, 7);
	assert_int_equal(ea.eo.attr.mode & 07777, 0600);
	assert_int_equal(ea.ev.initial_version,
			 slot(a, ea.ev.version_index));

	fe_cli_close(a);
	fe_cli_close(b);
	c->g[0] = c->g[1] = NULL;
	assert_int_equal(cli_wait(c), 0);
	path_in(c, "log", p, sizeof(p));
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, lg, sizeof(lg) - 1);
	close(fd);
	assert_true(n > 0);
	lg[n] = 0;
	if (!strstr(lg, "hub: 2 guests"))
		fail_msg("daemon log:\n%s", lg);
	assert_non_null(strstr(lg, "guest 0: front-end disconnected"));
	assert_non_null(strstr(lg, "guest 1: front-end disconnected"));
}

int main(int argc, char **argv)
{
	static struct prestate short_timeout = {
		.shmem_timeout_ms = 500, .table = false,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stop, setup, teardown),
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
		cmocka_unit_test_setup_teardown(test_cli_guests, setup_cli,
						teardown_cli),
	};

	sim_bin = argc > 1 ? argv[1] : NULL;

	return cmocka_run_group_tests(tests, NULL, NULL);
}
