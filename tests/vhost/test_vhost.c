// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_vhost.c - vqfsim_vhost driven by a fake vhost-user front-end over a
 * socketpair: the handshake QEMU 7.2's vhost-user-fs-pci sends (recorded
 * with `vqfuse-sim vhost-user --verbose`), a memfd as guest RAM, real FUSE
 * requests on four request queues through sim/vring's driver half, stop
 * and resume with GET/SET_VRING_BASE, and hostile messages that must each
 * be refused, counted in their own field and leave the connection usable.
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
#include <sys/stat.h>

#include "vqf_passthrough.h"
#include "vqf_memguard.h"
#include "vqf_vhost.h"
#include "vqf_vring_drv.h"
#include "vqf_vring_thread.h"

#include "vhost_fe.h"

#define NREQ		4
#define NQ		(1 + NREQ)
#define RING_NUM	64
#define RAM_SIZE	(8u << 20)
#define RAM_GPA		0x100000ull
#define RING_AREA	0x10000ull	/* per ring, from the start of RAM */
#define BUF_START	(NQ * RING_AREA)

struct fe {
	VHOST_FE_FIELDS
};

#include "vhost_fe_wire.h"

/* ---- the wire ---------------------------------------------------------- */

/* The sequence QEMU 7.2 sends when the guest sets DRIVER_OK. */
static void handshake(struct fe *f)
{
	u64 feat, pf;

	feat = fe_handshake_begin(f, &pf);
	msg(f, VQF_VHOST_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	fe_handshake_end(f, feat);
}

/* ---- the driver side ----------------------------------------------------- */

static void fuse_getattr_root(struct fe *f, unsigned int q)
{
	struct fuse_getattr_in gi = { 0 };
	struct fuse_attr_out ao;
	struct fuse_out_header oh;

	oh = fuse_call(f, q, FUSE_GETATTR, 1, &gi, sizeof(gi), &ao,
		       sizeof(ao));
	assert_int_equal(oh.error, 0);
	assert_true(S_ISDIR(ao.attr.mode));
}

/* ---- fixture ---------------------------------------------------------------- */

static int setup(void **state)
{
	struct vqf_vhost_cfg vc = { 0 };
	struct fe *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fe_backend_init(f);
	fe_ram_init(f);
	fe_serve_start(f, &vc);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fe *f = *state;

	fe_teardown(f);
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

/* ---- tests ---------------------------------------------------------------- */

/* Handshake, INIT, a GETATTR on every request queue, a file read back. */
static void test_requests(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats s;
	struct fuse_entry_out eo;
	struct fuse_open_out oo;
	struct fuse_open_in oi = { .flags = O_RDONLY };
	struct fuse_read_in ri = { .size = 4096 };
	struct fuse_out_header oh;
	char path[128], data[4096];
	unsigned int q;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/hello", f->dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("hello from the host\n", fp);
	fclose(fp);

	rings_create(f, NULL);
	handshake(f);
	fuse_init(f, 1);
	for (q = 1; q < NQ; q++)
		fuse_getattr_root(f, q);
	oh = fuse_call(f, 2, FUSE_LOOKUP, 1, "hello", 6, &eo, sizeof(eo));
	assert_int_equal(oh.error, 0);
	oh = fuse_call(f, 3, FUSE_OPEN, eo.nodeid, &oi, sizeof(oi), &oo,
		       sizeof(oo));
	assert_int_equal(oh.error, 0);
	ri.fh = oo.fh;
	oh = fuse_call(f, 4, FUSE_READ, eo.nodeid, &ri, sizeof(ri), data,
		       sizeof(data));
	assert_int_equal(oh.error, 0);
	assert_int_equal(oh.len - sizeof(oh), 20);
	assert_memory_equal(data, "hello from the host\n", 20);

	stats(f, &s);
	assert_int_equal(s.refused, 0);
	/* Started with rings 0 and 1 (and those already enabled by then:
	 * a back-end reads ahead), the others added as enabled.
	 */
	assert_int_equal(s.starts, 1);
	assert_true(s.ring_adds <= NQ - 2);
	assert_int_equal(s.live_changes, 0);
	assert_int_equal(s.requests[1], 2);	/* INIT, GETATTR */
	assert_int_equal(s.requests[2], 2);	/* GETATTR, LOOKUP */
	assert_int_equal(s.requests[3], 2);	/* GETATTR, OPEN */
	assert_int_equal(s.requests[4], 2);	/* GETATTR, READ */
	assert_int_equal(s.dev.refused, 0);
}

/*
 * GET_VRING_BASE stops the device and returns where each ring stopped.
 * Started again at those indices, the rings carry on with a new INIT,
 * after a DESTROY (an unmount) or without one (a guest reboot).
 */
static void stop_resume(void **state, bool destroy)
{
	struct fe *f = *state;
	struct vqf_vhost_stats s;
	struct vqf_vhost_state st;
	struct fuse_out_header oh;
	u16 base[NQ];
	unsigned int q;

	rings_create(f, NULL);
	handshake(f);
	fuse_init(f, 1);
	for (q = 1; q < NQ; q++)
		fuse_getattr_root(f, q);
	if (destroy) {
		oh = fuse_call(f, 4, FUSE_DESTROY, 0, NULL, 0, NULL, 0);
		assert_int_equal(oh.error, 0);
	} else {
		fuse_getattr_root(f, 4);
	}
	for (q = 0; q < NQ; q++)
		set_state(f, VQF_VHOST_SET_VRING_ENABLE, q, 0);
	for (q = 0; q < NQ; q++) {
		st.index = q;
		st.num = 0;
		msg(f, VQF_VHOST_GET_VRING_BASE, &st, sizeof(st), NULL, 0);
		assert_int_equal(reply(f, VQF_VHOST_GET_VRING_BASE, &st,
				       sizeof(st)), sizeof(st));
		assert_int_equal(st.index, q);
		base[q] = (u16)st.num;
	}
	assert_int_equal(base[0], 0);
	assert_int_equal(base[1], 2);
	assert_int_equal(base[2], 1);
	assert_int_equal(base[4], 2);
	stats(f, &s);
	assert_int_equal(s.starts, 1);
	assert_int_equal(s.stops, 1);
	assert_int_equal(s.live_changes, 0);

	/*
	 * The driver's rings stay where they were (a VM stopped and
	 * continued); the front-end resumes the back-end at base, in one
	 * burst without acks, as QEMU does.
	 */
	for (q = 0; q < NQ; q++) {
		vqf_vring_drv_destroy(f->vq[q]);
		f->vq[q] = NULL;
	}
	rings_create(f, base);
	for (q = 0; q < NQ; q++) {
		struct vqf_vhost_addr a = {
			.index = q,
			.desc = ua(f, f->addr[q].desc),
			.used = ua(f, f->addr[q].used),
			.avail = ua(f, f->addr[q].avail),
		};
		u64 v = q;

		st.index = q;
		st.num = base[q];
		msg(f, VQF_VHOST_SET_VRING_BASE, &st, sizeof(st), NULL, 0);
		msg(f, VQF_VHOST_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
		msg(f, VQF_VHOST_SET_VRING_KICK, &v, sizeof(v), &f->kick[q],
		    1);
	}
	for (q = 0; q < NQ; q++) {
		st.index = q;
		st.num = 1;
		msg(f, VQF_VHOST_SET_VRING_ENABLE, &st, sizeof(st), NULL, 0);
	}
	fuse_init(f, 2);
	for (q = 1; q < NQ; q++)
		fuse_getattr_root(f, q);
	stats(f, &s);
	/* Once more; however the burst was read, rings join, never
	 * restart it.
	 */
	assert_int_equal(s.starts, 2);
	assert_int_equal(s.live_changes, 0);
	assert_int_equal(s.refused, 0);
	assert_int_equal(s.requests[2], 1 + 2);	/* GETATTR; INIT, GETATTR */
	assert_int_equal(s.dev.refused, 0);
	assert_int_equal(s.dev.queue_broken, 0);
	{
		struct vqf_backend_stats bs;

		vqf_backend_get_stats(f->be, &bs);
		assert_int_equal(bs.reinit, 0);
		assert_int_equal(bs.after_destroy, 0);
		assert_int_equal(bs.resets, 1);
	}
}

static void test_stop_resume(void **state)
{
	stop_resume(state, true);
}

static void test_reboot_resume(void **state)
{
	stop_resume(state, false);
}

/*
 * Without protocol features a ring starts at its KICK, and QEMU sends the
 * ring's CALL after the KICK: a request the guest made at once can be
 * answered before the back-end has the call fd.  That interrupt is not
 * lost: the CALL that brings the fd signals it.
 */
static void test_call_after_start(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats s;
	eventfd_t n = 0;
	u64 feat;
	unsigned int i;

	f->no_acks = true;
	rings_create(f, NULL);
	feat = get_u64(f, VQF_VHOST_GET_FEATURES);
	feat &= (1ull << VIRTIO_F_VERSION_1) |
		(1ull << VIRTIO_RING_F_EVENT_IDX);
	msg(f, VQF_VHOST_SET_OWNER, NULL, 0, NULL, 0);
	msg(f, VQF_VHOST_SET_FEATURES, &feat, sizeof(feat), NULL, 0);
	set_mem(f);
	for (i = 0; i < NQ; i++)
		set_ring_kick(f, i);
	/*
	 * The device starts once the socket is drained, after the reply to
	 * any round trip: wait for it (60000 polls of 1 ms, far past any
	 * load).
	 */
	for (i = 0; i < 60000; i++) {
		stats(f, &s);
		if (s.starts)
			break;
		usleep(1000);
	}
	assert_int_equal(s.starts, 1);
	assert_int_equal(s.refused, 0);
	/* fuse_call() polls the used ring: no interrupt needed. */
	fuse_init(f, 1);
	assert_int_equal(eventfd_read(f->call[1], &n), -1);
	set_ring_call(f, 1);
	stats(f, &s);
	assert_int_equal(eventfd_read(f->call[1], &n), 0);
	assert_true(n >= 1);
	assert_int_equal(s.refused, 0);
	assert_int_equal(s.starts, 1);
}

/* One hostile message: refused, ack with an error, one counter moved. */
#define HOSTILE(f, field, req, p, size, fds, nfds) do {			\
	struct vqf_vhost_stats b_, a_;					\
	stats(f, &b_);							\
	assert_int_not_equal(acked(f, req, p, size, fds, nfds), 0);	\
	stats(f, &a_);							\
	assert_int_equal(a_.refused, b_.refused + 1);			\
	assert_int_equal(a_.field, b_.field + 1);			\
	assert_int_equal(a_.acks_failed, b_.acks_failed + 1);		\
	nh++;								\
} while (0)

/*
 * A front-end that shrinks guest RAM under the mapping and kicks: the ring
 * access that faults is recovered (the queue breaks with -EHWPOISON), the
 * process lives and the connection still answers.
 */
static void test_sigbus(void **state)
{
	struct fe *f = *state;
	struct vqf_memguard_stats before, after;
	struct vqf_vhost_stats s;
	unsigned int waited;

	rings_create(f, NULL);
	handshake(f);
	vqf_memguard_stats(&before);
	/* MFD_CLOEXEC only: the memfd takes no seal, so this succeeds. */
	assert_int_equal(ftruncate(f->memfd, 0), 0);
	assert_int_equal(eventfd_write(f->kick[1], 1), 0);
	/* Bounded by work: 60000 polls of 1 ms, far past any load. */
	/*
	 * The ring read that faults is recovered (queue broken), or, when
	 * the device (re)starts after the truncation, vhost's own used-index
	 * read outside a recovery point gets the zero page: either way the
	 * process lives.
	 */
	for (waited = 0; waited < 60000; waited++) {
		vqf_memguard_stats(&after);
		if (after.recovered + after.zero_filled >
		    before.recovered + before.zero_filled)
			break;
		usleep(1000);
	}
	assert_true(after.recovered + after.zero_filled >
		    before.recovered + before.zero_filled);
	stats(f, &s);
	assert_int_equal(s.fatal, 0);
	/* A memfd that takes seals is sealed against shrinking. */
	{
		int fd = memfd_create("sealable", MFD_CLOEXEC |
				      MFD_ALLOW_SEALING);
		struct vqf_vhost_mem m = {
			.nregions = 1,
			.r[0] = { .gpa = RAM_GPA, .size = RAM_SIZE,
				  .uaddr = (u64)(uintptr_t)f->ram },
		};

		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, RAM_SIZE), 0);
		assert_int_equal(acked(f, VQF_VHOST_SET_MEM_TABLE, &m,
				       8 + sizeof(m.r[0]), &fd, 1), 0);
		assert_int_equal(ftruncate(fd, 0), -1);
		assert_int_equal(errno, EPERM);
		close(fd);
	}
}

static void test_hostile(void **state)
{
	struct fe *f = *state;
	struct vqf_vhost_stats s;
	struct vqf_vhost_mem m;
	struct vqf_vhost_state st;
	struct vqf_vhost_addr a;
	u64 v, pf;
	int many[12], efd, small;
	unsigned int i;
	u8 junk[64] = { 0 };
	unsigned int nh = 0;

	rings_create(f, NULL);
	pf = get_u64(f, VQF_VHOST_GET_PROTOCOL_FEATURES);
	msg(f, VQF_VHOST_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);

	/* Unknown and unsupported requests. */
	HOSTILE(f, unsupported, 99, NULL, 0, NULL, 0);
	HOSTILE(f, unsupported, VQF_VHOST_SET_LOG_BASE, junk, 16, NULL, 0);
	/* Sizes wrong for the request. */
	HOSTILE(f, bad_size, VQF_VHOST_SET_FEATURES, junk, 4, NULL, 0);
	HOSTILE(f, bad_size, VQF_VHOST_SET_OWNER, junk, 8, NULL, 0);
	HOSTILE(f, bad_size, VQF_VHOST_SET_VRING_ADDR, junk, 32, NULL, 0);
	HOSTILE(f, bad_size, VQF_VHOST_SET_VRING_NUM, junk, 12, NULL, 0);
	/* Descriptors: missing, unexpected, too many. */
	v = 1;
	HOSTILE(f, bad_fds, VQF_VHOST_SET_VRING_KICK, &v, 8, NULL, 0);
	efd = eventfd(0, EFD_CLOEXEC);
	HOSTILE(f, bad_fds, VQF_VHOST_SET_OWNER, NULL, 0, &efd, 1);
	for (i = 0; i < 12; i++)
		many[i] = efd;
	HOSTILE(f, too_many_fds, VQF_VHOST_SET_VRING_CALL, &v, 8, many, 12);
	v = 1 | VQF_VHOST_VRING_NOFD;
	HOSTILE(f, bad_fds, VQF_VHOST_SET_VRING_CALL, &v, 8, &efd, 1);
	/* Indices past the five queues. */
	st.index = NQ;
	st.num = 64;
	HOSTILE(f, bad_index, VQF_VHOST_SET_VRING_NUM, &st, 8, NULL, 0);
	st.index = 1000;
	HOSTILE(f, bad_index, VQF_VHOST_SET_VRING_ENABLE, &st, 8, NULL, 0);
	v = 200;
	HOSTILE(f, bad_index, VQF_VHOST_SET_VRING_KICK, &v, 8, &efd, 1);
	/*
	 * Ring descriptors that are no eventfd: a pipe or a socket kept
	 * full would block every write of the call fd (the device's
	 * interrupts, the signal a CALL to a running ring gets).
	 */
	{
		int pp[2], sp[2], mfd = memfd_create("not-an-eventfd",
						     MFD_CLOEXEC);

		assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM |
					    SOCK_CLOEXEC, 0, sp), 0);
		assert_true(mfd >= 0);
		v = 1;
		HOSTILE(f, ring_fd, VQF_VHOST_SET_VRING_CALL, &v, 8, &pp[1],
			1);
		HOSTILE(f, ring_fd, VQF_VHOST_SET_VRING_CALL, &v, 8, &sp[0],
			1);
		HOSTILE(f, ring_fd, VQF_VHOST_SET_VRING_KICK, &v, 8, &pp[0],
			1);
		HOSTILE(f, ring_fd, VQF_VHOST_SET_VRING_ERR, &v, 8, &mfd, 1);
		/* an eventfd is taken */
		assert_int_equal(acked(f, VQF_VHOST_SET_VRING_ERR, &v, 8,
				       &efd, 1), 0);
		close(pp[0]);
		close(pp[1]);
		close(sp[0]);
		close(sp[1]);
		close(mfd);
	}
	/* Values. */
	st.index = 1;
	st.num = 3;
	HOSTILE(f, bad_value, VQF_VHOST_SET_VRING_NUM, &st, 8, NULL, 0);
	st.num = 4096;
	HOSTILE(f, bad_value, VQF_VHOST_SET_VRING_NUM, &st, 8, NULL, 0);
	st.num = 0x10000;
	HOSTILE(f, bad_value, VQF_VHOST_SET_VRING_BASE, &st, 8, NULL, 0);
	v = 1ull << 40;
	HOSTILE(f, bad_value, VQF_VHOST_SET_FEATURES, &v, 8, NULL, 0);
	v = 1ull << 63;
	HOSTILE(f, bad_value, VQF_VHOST_SET_PROTOCOL_FEATURES, &v, 8, NULL,
		0);
	/* Memory tables. */
	memset(&m, 0, sizeof(m));
	m.nregions = 9;
	HOSTILE(f, too_many_regions, VQF_VHOST_SET_MEM_TABLE, &m,
		8 + 8 * sizeof(m.r[0]), many, 8);
	m.nregions = 0;
	HOSTILE(f, no_regions, VQF_VHOST_SET_MEM_TABLE, &m, 8, NULL, 0);
	m.nregions = 2;
	m.r[0] = (struct vqf_vhost_region){ RAM_GPA, 0x100000,
		(u64)(uintptr_t)f->ram, 0 };
	m.r[1] = (struct vqf_vhost_region){ RAM_GPA + 0x80000, 0x100000,
		(u64)(uintptr_t)f->ram + 0x200000, 0x200000 };
	many[0] = many[1] = f->memfd;
	HOSTILE(f, region_overlap, VQF_VHOST_SET_MEM_TABLE, &m,
		8 + 2 * sizeof(m.r[0]), many, 2);
	m.r[1].gpa = RAM_GPA + 0x200000;
	m.r[1].uaddr = (u64)(uintptr_t)f->ram + 0x80000;
	HOSTILE(f, region_overlap, VQF_VHOST_SET_MEM_TABLE, &m,
		8 + 2 * sizeof(m.r[0]), many, 2);
	m.nregions = 1;
	m.r[0].size = RAM_SIZE + 4096;	/* past the memfd's end */
	HOSTILE(f, region_file, VQF_VHOST_SET_MEM_TABLE, &m,
		8 + sizeof(m.r[0]), many, 1);
	m.r[0].size = 4096;
	m.r[0].gpa = ~0ull - 100;
	HOSTILE(f, region_wrap, VQF_VHOST_SET_MEM_TABLE, &m,
		8 + sizeof(m.r[0]), many, 1);
	m.r[0].gpa = RAM_GPA;
	m.r[0].mmap_offset = ~0ull - 100;
	HOSTILE(f, region_wrap, VQF_VHOST_SET_MEM_TABLE, &m,
		8 + sizeof(m.r[0]), many, 1);
	m.r[0].mmap_offset = 0;
	m.r[0].size = 0;
	HOSTILE(f, bad_value, VQF_VHOST_SET_MEM_TABLE, &m,
		8 + sizeof(m.r[0]), many, 1);
	m.r[0].size = 4096;
	HOSTILE(f, region_fd, VQF_VHOST_SET_MEM_TABLE, &m,
		8 + sizeof(m.r[0]), &efd, 1);
	HOSTILE(f, bad_fds, VQF_VHOST_SET_MEM_TABLE, &m,
		8 + sizeof(m.r[0]), many, 2);
	/* A small memfd, mapped, then rings outside it. */
	small = memfd_create("small", MFD_CLOEXEC);
	assert_int_equal(ftruncate(small, 4096), 0);
	m.r[0] = (struct vqf_vhost_region){ RAM_GPA, 4096,
		(u64)(uintptr_t)f->ram, 0 };
	assert_int_equal(acked(f, VQF_VHOST_SET_MEM_TABLE, &m,
			       8 + sizeof(m.r[0]), &small, 1), 0);
	close(small);
	memset(&a, 0, sizeof(a));
	a.index = 1;
	a.desc = (u64)(uintptr_t)f->ram + 8192;	/* outside */
	a.avail = (u64)(uintptr_t)f->ram + 1024;
	a.used = (u64)(uintptr_t)f->ram + 2048;
	HOSTILE(f, ring_fault, VQF_VHOST_SET_VRING_ADDR, &a, sizeof(a), NULL,
		0);
	a.desc = (u64)(uintptr_t)f->ram + 8;	/* misaligned */
	HOSTILE(f, bad_align, VQF_VHOST_SET_VRING_ADDR, &a, sizeof(a), NULL,
		0);
	a.desc = (u64)(uintptr_t)f->ram;
	a.flags = 1;	/* dirty log: not offered */
	HOSTILE(f, bad_value, VQF_VHOST_SET_VRING_ADDR, &a, sizeof(a), NULL,
		0);
	a.index = NQ;
	a.flags = 0;
	HOSTILE(f, bad_index, VQF_VHOST_SET_VRING_ADDR, &a, sizeof(a), NULL,
		0);
	close(efd);

	/* A bad header: refused, never acked (its flags are not trusted). */
	send_raw(f, VQF_VHOST_GET_FEATURES, 0x2, NULL, 0, NULL, 0);
	send_raw(f, VQF_VHOST_GET_FEATURES,
		 VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY, NULL, 0, NULL, 0);
	stats(f, &s);
	assert_int_equal(s.bad_header, 2);
	assert_int_equal(nh, 36);
	assert_int_equal(s.refused, nh + 2);
	assert_int_equal(s.starts, 0);
	assert_int_equal(s.fatal, 0);

	/* Still a working back-end: the real handshake and requests. */
	handshake(f);
	fuse_init(f, 1);
	fuse_getattr_root(f, 3);

	/* An oversized payload ends the connection (cannot resync). */
	send_raw(f, VQF_VHOST_SET_FEATURES, VQF_VHOST_VERSION, NULL, 0, NULL,
		 0);
	{
		struct vqf_vhost_hdr h = { VQF_VHOST_SET_FEATURES,
					   VQF_VHOST_VERSION, 1u << 20 };

		assert_int_equal(send(f->sv[0], &h, sizeof(h), MSG_NOSIGNAL),
				 sizeof(h));
	}
	pthread_join(f->thr, NULL);
	f->thr = pthread_self();
	assert_int_equal(f->serve_ret, -EPROTO);
	vqf_vhost_get_stats(f->vh, &s);
	assert_int_equal(s.fatal, 1);
	/* SET_FEATURES with no payload was refused before it. */
	assert_int_equal(s.refused, nh + 3);
	/* Serving again works after a failed connection. */
	close(f->sv[0]);
	close(f->sv[1]);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    f->sv), 0);
	assert_int_equal(pthread_create(&f->thr, NULL, serve_main, f), 0);
	assert_int_equal(get_u64(f, VQF_VHOST_GET_QUEUE_NUM), NQ);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_requests, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stop_resume, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reboot_resume, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_call_after_start, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_sigbus, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hostile, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
