// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_vfront.c - vqf_vfront, the guest's device as a vhost-user
 * front-end, against a scripted fake back-end on a socket pair (a thread
 * of this test): the handshake and the start in QEMU 7.2's order; a
 * back-end that answers with the wrong request code, flags or size, acks
 * a refusal, stays silent or hangs up, each at its own message (lost
 * once, with its errno, nothing hangs); a back-end that offers fewer
 * features; GET_SHMEM_CONFIG replies that must reserve nothing; and the
 * back-end channel: every malformed SHMEM_MAP/UNMAP refused with a
 * non-zero status, counted in exactly its one cause and mapping nothing,
 * a valid map whose data shows through vqf_vfront_shm(), a payload too
 * big to follow that breaks the channel.
 *
 * reply_timeout_ms stays at its 60 s default, and only a case whose
 * back-end is silent shortens it (SILENT_MS, still far beyond a reply of
 * the fake's thread under valgrind at load): what is checked is the
 * outcome (-ETIMEDOUT, lost), never a time.
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

#include "vqf_vfront.h"
#include "vqf_vhost.h"

#include "vfront_peer.h"

#include <valgrind/helgrind.h>

#define RAM_BYTES	(2u << 20)
#define WINDOW		(1ull << 20)
#define TABLE		(64ull << 10)
#define PG		4096ull
#define MAX_SEEN	128
#define SILENT_MS	2000	/* reply_timeout_ms of a silent case */

#define BIT(n)		(1ull << (n))
#define F_STD		(BIT(VIRTIO_F_VERSION_1) | \
			 BIT(VIRTIO_RING_F_EVENT_IDX) | \
			 BIT(VIRTIO_RING_F_INDIRECT_DESC) | \
			 BIT(VQF_VHOST_F_PROTOCOL_FEATURES))
#define PF_SHM		(BIT(VQF_VHOST_PF_SHMEM) | \
			 BIT(VQF_VHOST_PF_BACKEND_REQ) | \
			 BIT(VQF_VHOST_PF_BACKEND_SEND_FD))
#define PF_STD		(BIT(VQF_VHOST_PF_MQ) | \
			 BIT(VQF_VHOST_PF_REPLY_ACK) | PF_SHM)

/* How the fake back-end misbehaves at its chosen message. */
enum bad {
	B_NONE,
	B_CODE,		/* reply with another request code */
	B_FLAGS,	/* reply without the REPLY flag */
	B_SIZE,		/* reply 4 bytes short */
	B_NACK,		/* ack with status 1 */
	B_SILENT,	/* no reply at all */
	B_HANGUP,	/* hang up instead of answering */
	B_HANGUP_KICK,	/* answer, then hang up at queue 1's first kick */
};

struct fb {
	int sv[2];		/* [0] the front-end's, [1] the fake's */
	pthread_t thr;
	bool thr_on;
	/* What it offers. */
	u64 features, pf, qn;
	struct vqf_vhost_shmem_config shm;
	/* Where and how it misbehaves: the @bad_nth-th @bad_req. */
	u32 bad_req;
	unsigned int bad_nth;
	enum bad bad;
	/* What it saw (under lock once the front-end runs). */
	pthread_mutex_t lock;
	u32 seen[MAX_SEEN], seen_flags[MAX_SEEN];
	unsigned int nseen;
	u64 set_features, set_pf;
	int chan;		/* the back-end channel it was given */
	int kick1;		/* queue 1's kick eventfd (a dup) */
	/* The front-end. */
	struct vqf_gram *ram;
	struct vqf_vfront *vf;
	struct vqf_vfront_cfg cfg;
	unsigned int lost_calls;
	int lost_err;
	int fds_before;
};

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* ---- the fake back-end ------------------------------------------------ */

static unsigned int seen_count(struct fb *b, u32 req)
{
	unsigned int i, n = 0;

	pthread_mutex_lock(&b->lock);
	for (i = 0; i < b->nseen; i++)
		n += b->seen[i] == req;
	pthread_mutex_unlock(&b->lock);
	return n;
}

/*
 * The reply a well-behaved back-end gives @m: true with @rp/@rsize set
 * when it has one (its own, or an ack asked for).
 */
static bool answer(struct fb *b, struct pmsg *m, void *rp, u32 *rsize)
{
	u64 v = 0;

	switch (m->h.request) {
	case VQF_VHOST_GET_FEATURES:
		v = b->features;
		break;
	case VQF_VHOST_GET_PROTOCOL_FEATURES:
		v = b->pf;
		break;
	case VQF_VHOST_GET_QUEUE_NUM:
		v = b->qn;
		break;
	case VQF_VHOST_GET_SHMEM_CONFIG:
		memcpy(rp, &b->shm, sizeof(b->shm));
		*rsize = sizeof(b->shm);
		return true;
	case VQF_VHOST_GET_VRING_BASE:
		memcpy(rp, m->p, sizeof(struct vqf_vhost_state));
		((struct vqf_vhost_state *)rp)->num = 0;
		*rsize = sizeof(struct vqf_vhost_state);
		return true;
	default:
		memset(rp, 0, sizeof(u64));
		*rsize = sizeof(u64);
		return m->h.flags & VQF_VHOST_FLAG_NEED_REPLY;
	}
	memcpy(rp, &v, sizeof(v));
	*rsize = sizeof(v);
	return true;
}

/* Takes what a message leaves with the fake: the channel, a kick. */
static void keep(struct fb *b, struct pmsg *m)
{
	u64 v;

	pthread_mutex_lock(&b->lock);
	if (b->nseen < MAX_SEEN) {
		b->seen[b->nseen] = m->h.request;
		b->seen_flags[b->nseen++] = m->h.flags;
	}
	memcpy(&v, m->p, sizeof(v));
	if (m->h.request == VQF_VHOST_SET_FEATURES)
		b->set_features = v;
	if (m->h.request == VQF_VHOST_SET_PROTOCOL_FEATURES)
		b->set_pf = v;
	if (m->h.request == VQF_VHOST_SET_BACKEND_REQ_FD && m->nfds == 1 &&
	    b->chan < 0) {
		b->chan = m->fds[0];
		m->nfds = 0;
	}
	if (m->h.request == VQF_VHOST_SET_VRING_KICK && m->nfds == 1 &&
	    v == 1 && b->kick1 < 0) {
		b->kick1 = m->fds[0];
		m->nfds = 0;
	}
	pthread_mutex_unlock(&b->lock);
	peer_close_fds(m);
}

static void *fb_main(void *arg)
{
	struct fb *b = arg;
	struct pmsg m;
	unsigned int nth = 0;
	u8 rp[PEER_PAYLOAD];
	u32 rsize, flags;
	bool has, fire;

	while (peer_recv(b->sv[1], &m)) {
		keep(b, &m);
		fire = b->bad != B_NONE && m.h.request == b->bad_req &&
		       nth++ == b->bad_nth;
		if (fire && b->bad == B_HANGUP)
			break;
		if (fire && b->bad == B_SILENT)
			continue;
		has = answer(b, &m, rp, &rsize);
		if (!has)
			continue;
		flags = VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY;
		if (fire && b->bad == B_CODE)
			m.h.request += 1;
		if (fire && b->bad == B_FLAGS)
			flags = VQF_VHOST_VERSION;
		if (fire && b->bad == B_SIZE)
			rsize -= 4;
		if (fire && b->bad == B_NACK)
			rp[0] = 1;
		if (peer_send(b->sv[1], m.h.request, flags, rp, rsize, NULL,
			      0))
			break;
		if (fire && b->bad == B_HANGUP_KICK) {
			struct pollfd pf = { .fd = b->kick1, .events = POLLIN };

			assert_true(b->kick1 >= 0);
			assert_int_equal(poll(&pf, 1, PEER_WAIT_MS), 1);
			break;
		}
	}
	shutdown(b->sv[1], SHUT_RDWR);
	return NULL;
}

/* ---- fixture ---------------------------------------------------------- */

static void on_lost(void *ctx, int err)
{
	struct fb *b = ctx;

	pthread_mutex_lock(&b->lock);
	b->lost_calls++;
	b->lost_err = err;
	pthread_mutex_unlock(&b->lock);
}

/* A well-behaved back-end: every feature, 1 MiB window, 64 KiB table. */
static struct fb *fb_new(void)
{
	struct fb *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	b->fds_before = count_fds();
	b->features = F_STD;
	b->pf = PF_STD;
	b->qn = 1 + 4;
	b->shm.nregions = 2;
	b->shm.memory_sizes[0] = WINDOW;
	b->shm.memory_sizes[1] = TABLE;
	b->chan = -1;
	b->kick1 = -1;
	pthread_mutex_init(&b->lock, NULL);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    b->sv), 0);
	b->ram = vqf_gram_new_shared(RAM_BYTES);
	assert_non_null(b->ram);
	b->cfg.fd = b->sv[0];
	b->cfg.ram = b->ram;
	b->cfg.num_request_queues = 4;
	b->cfg.lost = on_lost;
	b->cfg.lost_ctx = b;
	b->cfg.log = getenv("VQF_VFRONT_LOG") ? stderr : NULL;
	return b;
}

/* The fake misbehaves with @bad at the @nth message @req. */
static void fb_bad(struct fb *b, u32 req, unsigned int nth, enum bad bad)
{
	b->bad_req = req;
	b->bad_nth = nth;
	b->bad = bad;
	if (bad == B_SILENT)
		b->cfg.reply_timeout_ms = SILENT_MS;
}

static void hg_regions(struct fb *b);

/* Starts the fake and the front-end; returns vqf_vfront_new()'s result. */
static int fb_connect(struct fb *b)
{
	int ret;

	assert_int_equal(pthread_create(&b->thr, NULL, fb_main, b), 0);
	b->thr_on = true;
	ret = vqf_vfront_new(&b->cfg, &b->vf);
	b->sv[0] = -1;		/* the front-end's now, closed on error */
	if (ret)
		b->vf = NULL;
	/* What the fake kept so far (the channel) is ours to read now. */
	pthread_mutex_lock(&b->lock);
	pthread_mutex_unlock(&b->lock);
	if (!ret)
		hg_regions(b);
	return ret;
}

static void fb_free(struct fb *b)
{
	vqf_vfront_free(b->vf);
	if (b->thr_on)
		pthread_join(b->thr, NULL);
	if (b->sv[0] >= 0)
		close(b->sv[0]);
	close(b->sv[1]);
	if (b->chan >= 0)
		close(b->chan);
	if (b->kick1 >= 0)
		close(b->kick1);
	vqf_gram_free(b->ram);
	pthread_mutex_destroy(&b->lock);
	/* Every descriptor either side received is closed again. */
	assert_int_equal(count_fds(), b->fds_before);
	free(b);
}

/* A field the fake's thread writes, read under its lock. */
static u64 fb_get(struct fb *b, const void *field, size_t size)
{
	u64 v = 0;

	pthread_mutex_lock(&b->lock);
	memcpy(&v, field, size);
	pthread_mutex_unlock(&b->lock);
	return v;
}

#define GET(b, f)	fb_get(b, &(b)->f, sizeof((b)->f))

/*
 * The regions' pages change by mmap() in the front-end's thread, ordered
 * before this thread's access by the channel's ack: a socket, which
 * helgrind does not see.
 */
static void hg_regions(struct fb *b)
{
	void *base;
	u64 len;
	u8 id;

	for (id = 0; id < 2; id++)
		if (!vqf_vfront_shm(b->vf, id, &base, &len))
			VALGRIND_HG_DISABLE_CHECKING(base, len);
}

static void stats(struct fb *b, struct vqf_vfront_stats *s)
{
	vqf_vfront_get_stats(b->vf, s);
}

/* Lost once, with @err, and the callback said so exactly once. */
static void assert_lost_once(struct fb *b, int err)
{
	struct vqf_vfront_stats s;
	int e = 0;

	stats(b, &s);
	assert_int_equal(s.lost, 1);
	assert_int_equal(s.lost_err, err);
	assert_true(vqf_vfront_is_lost(b->vf, &e));
	assert_int_equal(e, err);
	pthread_mutex_lock(&b->lock);
	assert_int_equal(b->lost_calls, 1);
	assert_int_equal(b->lost_err, err);
	pthread_mutex_unlock(&b->lock);
}

static bool is_lost(void *arg)
{
	return vqf_vfront_is_lost(arg, NULL);
}

/* ---- the transport, driven as vqf_gdrv does ------------------------- */

struct rings {
	int kick[2], call[2];
};

static void rings_open(struct rings *r)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		r->kick[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		r->call[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_true(r->kick[i] >= 0 && r->call[i] >= 0);
	}
}

static void rings_close(struct rings *r)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		close(r->kick[i]);
		close(r->call[i]);
	}
}

/* Reset to FEATURES_OK with @features, rings 0 and 1 set, DRIVER_OK. */
static int dev_start(struct fb *b, struct rings *r, u64 features)
{
	const struct vqf_gdrv_dev_ops *ops = vqf_vfront_dev_ops();
	u8 st = VQF_S_ACKNOWLEDGE | VQF_S_DRIVER;
	unsigned int i;

	assert_int_equal(ops->set_status(b->vf, 0), 0);
	assert_int_equal(ops->set_status(b->vf, VQF_S_ACKNOWLEDGE), 0);
	assert_int_equal(ops->set_status(b->vf, st), 0);
	assert_int_equal(ops->set_features(b->vf, features), 0);
	st |= VQF_S_FEATURES_OK;
	assert_int_equal(ops->set_status(b->vf, st), 0);
	assert_true(ops->get_status(b->vf) & VQF_S_FEATURES_OK);
	for (i = 0; i < 2; i++) {
		struct vqf_vring_addr a = {
			.desc = VQF_GRAM_BASE + i * 0x4000,
			.avail = VQF_GRAM_BASE + i * 0x4000 + 0x1000,
			.used = VQF_GRAM_BASE + i * 0x4000 + 0x2000,
		};

		assert_true(ops->queue_max(b->vf, i) >= 64);
		assert_int_equal(ops->set_queue(b->vf, i, 64, &a, r->kick[i],
						r->call[i]), 0);
	}
	return ops->set_status(b->vf, st | VQF_S_DRIVER_OK);
}

/* The requests the fake saw from index @from on equal @want. */
static void assert_seen(struct fb *b, unsigned int from, const u32 *want,
			unsigned int n)
{
	unsigned int i;

	pthread_mutex_lock(&b->lock);
	for (i = 0; i < n && from + i < b->nseen; i++)
		if (b->seen[from + i] != want[i])
			fail_msg("message %u: %s, want %s", from + i,
				 vqf_vhost_request_name(b->seen[from + i]),
				 vqf_vhost_request_name(want[i]));
	assert_int_equal(b->nseen, from + n);
	pthread_mutex_unlock(&b->lock);
}

static bool any_flag(struct fb *b, u32 flag)
{
	unsigned int i;
	bool any = false;

	pthread_mutex_lock(&b->lock);
	for (i = 0; i < b->nseen; i++)
		any |= !!(b->seen_flags[i] & flag);
	pthread_mutex_unlock(&b->lock);
	return any;
}

/* ---- handshake and start ---------------------------------------------- */

static const u32 handshake_std[] = {
	VQF_VHOST_GET_FEATURES, VQF_VHOST_GET_PROTOCOL_FEATURES,
	VQF_VHOST_SET_PROTOCOL_FEATURES, VQF_VHOST_GET_QUEUE_NUM,
	VQF_VHOST_SET_BACKEND_REQ_FD, VQF_VHOST_GET_SHMEM_CONFIG,
	VQF_VHOST_SET_OWNER,
};

static const u32 start_seq[] = {
	VQF_VHOST_SET_FEATURES, VQF_VHOST_SET_MEM_TABLE,
	VQF_VHOST_SET_VRING_NUM, VQF_VHOST_SET_VRING_BASE,
	VQF_VHOST_SET_VRING_ADDR, VQF_VHOST_SET_VRING_KICK,
	VQF_VHOST_SET_VRING_CALL,
	VQF_VHOST_SET_VRING_NUM, VQF_VHOST_SET_VRING_BASE,
	VQF_VHOST_SET_VRING_ADDR, VQF_VHOST_SET_VRING_KICK,
	VQF_VHOST_SET_VRING_CALL,
	VQF_VHOST_SET_VRING_ENABLE, VQF_VHOST_SET_VRING_ENABLE,
};

/*
 * A back-end offering everything: QEMU 7.2's order, acks asked for once
 * REPLY_ACK is on, the config space, the regions reserved and empty, a
 * start, a kick, a stop.
 */
static void test_handshake(void **state)
{
	struct fb *b = fb_new();
	const struct vqf_gdrv_dev_ops *ops;
	struct vqf_virtio_fs_config cfg;
	struct vqf_vfront_stats s;
	struct rings r;
	eventfd_t v;
	void *base;
	u64 len;
	unsigned int i;

	(void)state;
	b->cfg.tag = "myfs";
	b->features |= BIT(VIRTIO_FS_F_NOTIFICATION);
	assert_int_equal(fb_connect(b), 0);
	ops = vqf_vfront_dev_ops();
	assert_seen(b, 0, handshake_std, 7);
	pthread_mutex_lock(&b->lock);
	assert_int_equal(b->set_pf, PF_STD);
	for (i = 0; i < 4; i++)		/* before SET_BACKEND_REQ_FD */
		assert_false(b->seen_flags[i] & VQF_VHOST_FLAG_NEED_REPLY);
	assert_true(b->seen_flags[4] & VQF_VHOST_FLAG_NEED_REPLY);
	assert_false(b->seen_flags[5] & VQF_VHOST_FLAG_NEED_REPLY);
	assert_true(b->seen_flags[6] & VQF_VHOST_FLAG_NEED_REPLY);
	assert_true(b->chan >= 0);
	pthread_mutex_unlock(&b->lock);

	/* Features pass through, minus PROTOCOL_FEATURES, NOTIFICATION. */
	assert_int_equal(ops->features(b->vf),
			 BIT(VIRTIO_F_VERSION_1) |
			 BIT(VIRTIO_RING_F_EVENT_IDX) |
			 BIT(VIRTIO_RING_F_INDIRECT_DESC));
	ops->read_config(b->vf, &cfg);
	assert_int_equal(le32_to_cpu(cfg.num_request_queues), 4);
	assert_string_equal(cfg.tag, "myfs");
	assert_int_equal(ops->queue_max(b->vf, 4), 1024);
	assert_int_equal(ops->queue_max(b->vf, 5), 0);
	assert_int_equal(vqf_vfront_shm(b->vf, VQF_VIRTIO_FS_SHMCAP_ID_CACHE,
					&base, &len), 0);
	assert_int_equal(len, WINDOW);
	assert_int_equal(vqf_vfront_shm(b->vf, 1, &base, &len), 0);
	assert_int_equal(len, TABLE);
	assert_int_equal(vqf_vfront_shm(b->vf, 2, &base, &len), -ENOENT);
	stats(b, &s);
	assert_int_equal(s.features, b->features);
	assert_int_equal(s.protocol_features, PF_STD);
	assert_int_equal(s.protocol_acked, PF_STD);
	assert_int_equal(s.queue_num, 5);
	assert_int_equal(s.shm_regions, 2);
	assert_int_equal(s.shm_config_bad, 0);
	assert_int_equal(s.msgs, 7);
	assert_int_equal(s.replies, 6);	/* 4 replies, 2 acks */
	assert_int_equal(s.lost, 0);

	/* Not before DRIVER_OK: no kick, no ring set out of order. */
	rings_open(&r);
	assert_int_equal(ops->kick(b->vf, 1), -ENOENT);
	assert_int_equal(dev_start(b, &r, BIT(VIRTIO_F_VERSION_1) |
				   BIT(VIRTIO_RING_F_EVENT_IDX)), 0);
	assert_seen(b, 7, start_seq, 14);
	pthread_mutex_lock(&b->lock);
	assert_int_equal(b->set_features, BIT(VIRTIO_F_VERSION_1) |
			 BIT(VIRTIO_RING_F_EVENT_IDX) |
			 BIT(VQF_VHOST_F_PROTOCOL_FEATURES));
	for (i = 7; i < b->nseen; i++)
		assert_true(b->seen_flags[i] & VQF_VHOST_FLAG_NEED_REPLY);
	pthread_mutex_unlock(&b->lock);
	assert_int_equal(ops->kick(b->vf, 1), 0);
	assert_int_equal(eventfd_read(r.kick[1], &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(ops->kick(b->vf, 2), -ENOENT);
	/* A reset: GET_VRING_BASE on both rings. */
	assert_int_equal(ops->set_status(b->vf, 0), 0);
	assert_int_equal(seen_count(b, VQF_VHOST_GET_VRING_BASE), 2);
	stats(b, &s);
	assert_int_equal(s.starts, 1);
	assert_int_equal(s.stops, 1);
	assert_int_equal(s.kicks, 1);
	assert_int_equal(s.lost, 0);
	rings_close(&r);
	fb_free(b);
}

struct bad_case {
	u32 req;
	unsigned int nth;
	enum bad bad;
	int err;
};

/* Each handshake message answered wrong: vqf_vfront_new() fails so. */
static void test_handshake_bad(void **state)
{
	static const struct bad_case cases[] = {
		{ VQF_VHOST_GET_FEATURES, 0, B_CODE, -EPROTO },
		{ VQF_VHOST_GET_FEATURES, 0, B_FLAGS, -EPROTO },
		{ VQF_VHOST_GET_FEATURES, 0, B_SIZE, -EPROTO },
		{ VQF_VHOST_GET_FEATURES, 0, B_SILENT, -ETIMEDOUT },
		{ VQF_VHOST_GET_FEATURES, 0, B_HANGUP, -ENOTCONN },
		{ VQF_VHOST_GET_PROTOCOL_FEATURES, 0, B_CODE, -EPROTO },
		{ VQF_VHOST_GET_PROTOCOL_FEATURES, 0, B_SIZE, -EPROTO },
		{ VQF_VHOST_GET_PROTOCOL_FEATURES, 0, B_HANGUP, -ENOTCONN },
		{ VQF_VHOST_SET_PROTOCOL_FEATURES, 0, B_HANGUP, -ENOTCONN },
		{ VQF_VHOST_GET_QUEUE_NUM, 0, B_FLAGS, -EPROTO },
		{ VQF_VHOST_GET_QUEUE_NUM, 0, B_SILENT, -ETIMEDOUT },
		{ VQF_VHOST_SET_BACKEND_REQ_FD, 0, B_NACK, -EREMOTEIO },
		{ VQF_VHOST_SET_BACKEND_REQ_FD, 0, B_CODE, -EPROTO },
		{ VQF_VHOST_SET_BACKEND_REQ_FD, 0, B_SILENT, -ETIMEDOUT },
		{ VQF_VHOST_GET_SHMEM_CONFIG, 0, B_SIZE, -EPROTO },
		{ VQF_VHOST_GET_SHMEM_CONFIG, 0, B_CODE, -EPROTO },
		{ VQF_VHOST_GET_SHMEM_CONFIG, 0, B_HANGUP, -ENOTCONN },
		{ VQF_VHOST_SET_OWNER, 0, B_NACK, -EREMOTEIO },
		{ VQF_VHOST_SET_OWNER, 0, B_FLAGS, -EPROTO },
		{ VQF_VHOST_SET_OWNER, 0, B_SIZE, -EPROTO },
		{ VQF_VHOST_SET_OWNER, 0, B_SILENT, -ETIMEDOUT },
		{ VQF_VHOST_SET_OWNER, 0, B_HANGUP, -ENOTCONN },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fb *b = fb_new();

		fb_bad(b, cases[i].req, cases[i].nth, cases[i].bad);
		if (fb_connect(b) != cases[i].err)
			fail_msg("case %u (%s, bad %d): want %d", i,
				 vqf_vhost_request_name(cases[i].req),
				 cases[i].bad, cases[i].err);
		/* Nothing after the message that failed. */
		pthread_mutex_lock(&b->lock);
		assert_int_equal(b->seen[b->nseen - 1], cases[i].req);
		pthread_mutex_unlock(&b->lock);
		/* Handed out never: the callback is not called. */
		assert_int_equal(GET(b, lost_calls), 0);
		fb_free(b);
	}
}

/*
 * Each start message answered wrong: DRIVER_OK fails, the back-end is
 * lost once with the errno, the callback said so once, every later
 * message fails at once (the reset, the free: nothing hangs).
 */
static void test_start_bad(void **state)
{
	static const struct bad_case cases[] = {
		{ VQF_VHOST_SET_FEATURES, 0, B_NACK, -EREMOTEIO },
		{ VQF_VHOST_SET_MEM_TABLE, 0, B_NACK, -EREMOTEIO },
		{ VQF_VHOST_SET_MEM_TABLE, 0, B_HANGUP, -ENOTCONN },
		{ VQF_VHOST_SET_VRING_NUM, 1, B_SILENT, -ETIMEDOUT },
		{ VQF_VHOST_SET_VRING_BASE, 0, B_CODE, -EPROTO },
		{ VQF_VHOST_SET_VRING_ADDR, 1, B_HANGUP, -ENOTCONN },
		{ VQF_VHOST_SET_VRING_KICK, 0, B_SIZE, -EPROTO },
		{ VQF_VHOST_SET_VRING_CALL, 1, B_FLAGS, -EPROTO },
		{ VQF_VHOST_SET_VRING_ENABLE, 1, B_NACK, -EREMOTEIO },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct vqf_gdrv_dev_ops *ops = vqf_vfront_dev_ops();
		struct fb *b = fb_new();
		struct vqf_vfront_stats s, s2;
		struct rings r;
		int ret;

		fb_bad(b, cases[i].req, cases[i].nth, cases[i].bad);
		assert_int_equal(fb_connect(b), 0);
		rings_open(&r);
		ret = dev_start(b, &r, BIT(VIRTIO_F_VERSION_1));
		if (!ret)
			fail_msg("case %u: DRIVER_OK succeeded", i);
		assert_false(ops->get_status(b->vf) & VQF_S_DRIVER_OK);
		assert_lost_once(b, cases[i].err);
		stats(b, &s);
		/* Later messages fail at once, and send nothing. */
		assert_int_equal(ops->set_status(b->vf, 0), 0);
		assert_int_not_equal(dev_start(b, &r,
					       BIT(VIRTIO_F_VERSION_1)), 0);
		stats(b, &s2);
		assert_int_equal(s2.msgs, s.msgs);
		assert_int_equal(s2.starts, 0);
		assert_int_equal(ops->kick(b->vf, 1), -ENOENT);
		assert_lost_once(b, cases[i].err);
		rings_close(&r);
		fb_free(b);
	}
}

/*
 * DRIVER_OK on a back-end lost during the start returns the errno it was
 * lost with (it returned -EIO whatever the loss, so vqf_gdrv_new_ops()
 * reported -EIO for a back-end that hung up).
 */
static void test_start_lost_errno(void **state)
{
	struct fb *b;
	struct rings r;

	(void)state;
	b = fb_new();
	fb_bad(b, VQF_VHOST_SET_MEM_TABLE, 0, B_HANGUP);
	assert_int_equal(fb_connect(b), 0);
	rings_open(&r);
	assert_int_equal(dev_start(b, &r, BIT(VIRTIO_F_VERSION_1)),
			 -ENOTCONN);
	rings_close(&r);
	fb_free(b);
}

/*
 * The driver itself over the fake: a back-end lost during DRIVER_OK, or
 * hanging up once INIT is on the ring (a call in flight), fails
 * vqf_gdrv_new_ops() - nothing hangs - and the front-end is lost once.
 */
static void test_driver_lost(void **state)
{
	static const struct bad_case cases[] = {
		{ VQF_VHOST_SET_VRING_ENABLE, 1, B_HANGUP_KICK, -ENOTCONN },
		{ VQF_VHOST_SET_MEM_TABLE, 0, B_NACK, -EREMOTEIO },
		{ VQF_VHOST_SET_VRING_CALL, 0, B_HANGUP, -ENOTCONN },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vqf_gdrv_cfg gc = { .queue_size = 64 };
		struct vqf_gdrv *g = NULL;
		struct fb *b = fb_new();
		int ret;

		b->qn = 2;	/* one request queue: ENABLE 1 is the last */
		fb_bad(b, cases[i].req, cases[i].nth, cases[i].bad);
		assert_int_equal(fb_connect(b), 0);
		ret = vqf_gdrv_new_ops(&gc, vqf_vfront_dev_ops(), b->vf,
				       b->ram, &g);
		assert_null(g);
		if (cases[i].bad == B_HANGUP_KICK)
			assert_int_equal(ret, cases[i].err);	/* INIT's */
		else
			assert_true(ret < 0);
		assert_lost_once(b, cases[i].err);
		/* Guest RAM is all given back. */
		assert_int_equal(vqf_gram_in_use(b->ram), 0);
		fb_free(b);
	}
}

/* Hang-ups while idle: the main socket, the back-end channel alone. */
static void test_idle_hangup(void **state)
{
	unsigned int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct fb *b = fb_new();

		assert_int_equal(fb_connect(b), 0);
		if (i)
			shutdown(b->chan, SHUT_RDWR);
		else
			shutdown(b->sv[1], SHUT_RDWR);
		assert_true(peer_wait(is_lost, b->vf));
		assert_lost_once(b, -ENOTCONN);
		assert_int_equal(vqf_vfront_set_status(b->vf, 0), 0);
		fb_free(b);
	}
}

/* ---- fewer features ---------------------------------------------------- */

static void test_fewer_features(void **state)
{
	const struct vqf_gdrv_dev_ops *ops = vqf_vfront_dev_ops();
	static const u32 bare[] = {
		VQF_VHOST_GET_FEATURES, VQF_VHOST_SET_OWNER,
		VQF_VHOST_SET_FEATURES, VQF_VHOST_SET_MEM_TABLE,
		VQF_VHOST_SET_VRING_NUM, VQF_VHOST_SET_VRING_BASE,
		VQF_VHOST_SET_VRING_ADDR, VQF_VHOST_SET_VRING_KICK,
		VQF_VHOST_SET_VRING_CALL,
		VQF_VHOST_SET_VRING_NUM, VQF_VHOST_SET_VRING_BASE,
		VQF_VHOST_SET_VRING_ADDR, VQF_VHOST_SET_VRING_KICK,
		VQF_VHOST_SET_VRING_CALL,
		VQF_VHOST_GET_VRING_BASE, VQF_VHOST_GET_VRING_BASE,
	};
	struct vqf_virtio_fs_config cfg;
	struct vqf_vfront_stats s;
	struct rings r;
	struct fb *b;
	void *base;
	u64 len;

	(void)state;
	rings_open(&r);
	/* No PROTOCOL_FEATURES: no acks, no MQ (1 queue of the 4 asked),
	 * no SHMEM; rings enabled without SET_VRING_ENABLE.
	 */
	b = fb_new();
	b->features = BIT(VIRTIO_F_VERSION_1);
	assert_int_equal(fb_connect(b), 0);
	ops->read_config(b->vf, &cfg);
	assert_int_equal(le32_to_cpu(cfg.num_request_queues), 1);
	assert_int_equal(ops->queue_max(b->vf, 2), 0);
	assert_int_equal(vqf_vfront_shm(b->vf, 0, &base, &len), -ENOENT);
	assert_int_equal(dev_start(b, &r, BIT(VIRTIO_F_VERSION_1)), 0);
	assert_int_equal(ops->set_status(b->vf, 0), 0);
	assert_seen(b, 0, bare, sizeof(bare) / sizeof(bare[0]));
	assert_false(any_flag(b, VQF_VHOST_FLAG_NEED_REPLY));
	assert_int_equal(GET(b, set_features), BIT(VIRTIO_F_VERSION_1));
	stats(b, &s);
	assert_int_equal(s.protocol_acked, 0);
	assert_int_equal(s.queue_num, 0);
	assert_int_equal(s.starts, 1);
	assert_int_equal(s.lost, 0);
	fb_free(b);

	/* Protocol features without MQ: 1 queue, no GET_QUEUE_NUM. */
	b = fb_new();
	b->pf = BIT(VQF_VHOST_PF_REPLY_ACK);
	assert_int_equal(fb_connect(b), 0);
	ops->read_config(b->vf, &cfg);
	assert_int_equal(le32_to_cpu(cfg.num_request_queues), 1);
	assert_int_equal(seen_count(b, VQF_VHOST_GET_QUEUE_NUM), 0);
	assert_int_equal(seen_count(b, VQF_VHOST_GET_SHMEM_CONFIG), 0);
	assert_int_equal(GET(b, set_pf), BIT(VQF_VHOST_PF_REPLY_ACK));
	fb_free(b);

	/* MQ with a queue count too small for one request queue. */
	b = fb_new();
	b->qn = 1;
	assert_int_equal(fb_connect(b), -ENODEV);
	fb_free(b);
	b = fb_new();
	b->qn = 0;
	assert_int_equal(fb_connect(b), -ENODEV);
	fb_free(b);
	/* More queues than asked, and more than the front-end has. */
	b = fb_new();
	b->qn = 3;
	assert_int_equal(fb_connect(b), 0);
	ops->read_config(b->vf, &cfg);
	assert_int_equal(le32_to_cpu(cfg.num_request_queues), 2);
	fb_free(b);
	b = fb_new();
	b->qn = 1000;
	b->cfg.num_request_queues = 200;
	assert_int_equal(fb_connect(b), 0);
	ops->read_config(b->vf, &cfg);
	assert_int_equal(le32_to_cpu(cfg.num_request_queues),
			 VQF_VHOST_MAX_QUEUES - 1);
	fb_free(b);

	/* No VERSION_1: not a device we drive. */
	b = fb_new();
	b->features = F_STD & ~BIT(VIRTIO_F_VERSION_1);
	assert_int_equal(fb_connect(b), -ENODEV);
	fb_free(b);

	/* SHMEM without BACKEND_SEND_FD: no channel, no regions. */
	b = fb_new();
	b->pf &= ~BIT(VQF_VHOST_PF_BACKEND_SEND_FD);
	assert_int_equal(fb_connect(b), 0);
	assert_int_equal(GET(b, set_pf), BIT(VQF_VHOST_PF_MQ) |
			 BIT(VQF_VHOST_PF_REPLY_ACK));
	assert_int_equal((int)GET(b, chan), -1);
	assert_int_equal(vqf_vfront_shm(b->vf, 0, &base, &len), -ENOENT);
	fb_free(b);

	/* Masks: no_shmem, protocol_mask (no acks), features_mask. */
	b = fb_new();
	b->cfg.no_shmem = true;
	b->cfg.protocol_mask = BIT(VQF_VHOST_PF_REPLY_ACK);
	b->cfg.features_mask = BIT(VIRTIO_RING_F_EVENT_IDX);
	assert_int_equal(fb_connect(b), 0);
	assert_int_equal(GET(b, set_pf), BIT(VQF_VHOST_PF_MQ));
	assert_int_equal(seen_count(b, VQF_VHOST_GET_SHMEM_CONFIG), 0);
	assert_int_equal(ops->features(b->vf), BIT(VIRTIO_F_VERSION_1) |
			 BIT(VIRTIO_RING_F_INDIRECT_DESC));
	assert_int_equal(ops->set_status(b->vf, VQF_S_ACKNOWLEDGE |
					 VQF_S_DRIVER), 0);
	assert_int_equal(ops->set_features(b->vf, BIT(VIRTIO_F_VERSION_1) |
					   BIT(VIRTIO_RING_F_EVENT_IDX)),
			 -EINVAL);
	assert_int_equal(dev_start(b, &r, BIT(VIRTIO_F_VERSION_1)), 0);
	assert_false(any_flag(b, VQF_VHOST_FLAG_NEED_REPLY));
	/* Enabled: protocol features are on, acks are not. */
	assert_int_equal(ops->set_status(b->vf, 0), 0);	/* a round trip */
	assert_int_equal(seen_count(b, VQF_VHOST_SET_VRING_ENABLE), 2);
	fb_free(b);
	rings_close(&r);
}

/* ---- GET_SHMEM_CONFIG ------------------------------------------------- */

static void test_shmem_config_bad(void **state)
{
	static const struct {
		u32 nregions;
		u64 size0, size1;
		unsigned int bad, good;	/* stats wanted */
	} cases[] = {
		{ 1, WINDOW, TABLE, 1, 0 },	/* nregions does not match */
		{ 3, WINDOW, TABLE, 1, 0 },
		{ 0, WINDOW, 0, 1, 0 },
		{ 1, WINDOW + 100, 0, 1, 0 },	/* unaligned */
		{ 1, 1ull << 40, 0, 1, 0 },	/* past the 64 GiB cap */
		{ 2, ~0ull & ~(PG - 1), TABLE, 1, 1 },	/* one bad, one good */
		{ 0, 0, 0, 0, 0 },		/* none: fine, nothing */
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vqf_vfront_stats s;
		struct fb *b = fb_new();
		void *base;
		u64 len;

		b->shm.nregions = cases[i].nregions;
		b->shm.memory_sizes[0] = cases[i].size0;
		b->shm.memory_sizes[1] = cases[i].size1;
		assert_int_equal(fb_connect(b), 0);
		stats(b, &s);
		if (s.shm_config_bad != cases[i].bad ||
		    s.shm_regions != cases[i].good)
			fail_msg("case %u: bad %llu regions %llu", i,
				 (unsigned long long)s.shm_config_bad,
				 (unsigned long long)s.shm_regions);
		assert_int_equal(vqf_vfront_shm(b->vf, 0, &base, &len),
				 -ENOENT);
		assert_int_equal(vqf_vfront_shm(b->vf, 1, &base, &len),
				 cases[i].good ? 0 : -ENOENT);
		assert_int_equal(s.lost, 0);
		fb_free(b);
	}
}

/* ---- the back-end channel ------------------------------------------- */

/* Bytes of [@p, +@len) mapped other than as an empty reservation. */
static u64 span_mapped(const void *p, u64 len)
{
	u64 lo = (u64)(uintptr_t)p, hi = lo + len, n = 0;
	char line[512], perm[8];
	unsigned long long a, e;
	FILE *fp = fopen("/proc/self/maps", "r");

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%llx-%llx %4s", &a, &e, perm) != 3)
			continue;
		if (e <= lo || a >= hi || !strcmp(perm, "---p"))
			continue;
		n += (e < hi ? e : hi) - (a > lo ? a : lo);
	}
	fclose(fp);
	return n;
}

/* One channel request; its ack's status, or ~0 when none is asked. */
static u64 chan_req(struct fb *b, u32 req, u32 flags, const void *p,
		    u32 size, const int *fds, unsigned int nfds)
{
	static struct pmsg m;
	u64 st;

	assert_int_equal(peer_send(b->chan, req, flags, p, size, fds, nfds),
			 0);
	if (!(flags & VQF_VHOST_FLAG_NEED_REPLY))
		return ~0ull;
	assert_int_equal(peer_recv(b->chan, &m), 1);
	assert_int_equal(m.h.request, req);
	assert_int_equal(m.h.flags, VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY);
	assert_int_equal(m.h.size, sizeof(st));
	assert_int_equal(m.nfds, 0);
	memcpy(&st, m.p, sizeof(st));
	return st;
}

#define ASK	(VQF_VHOST_VERSION | VQF_VHOST_FLAG_NEED_REPLY)

static u64 shm_map(struct fb *b, const struct vqf_vhost_mmap *mm, int fd)
{
	u64 st = chan_req(b, VQF_VHOST_BACKEND_SHMEM_MAP, ASK, mm,
			  sizeof(*mm), &fd, fd >= 0);

	hg_regions(b);		/* a new mapping: helgrind tracks it anew */
	return st;
}

static u64 shm_unmap(struct fb *b, const struct vqf_vhost_mmap *mm)
{
	return chan_req(b, VQF_VHOST_BACKEND_SHMEM_UNMAP, ASK, mm,
			sizeof(*mm), NULL, 0);
}

static u64 causes(const struct vqf_vfront_stats *s)
{
	return s->shm_bad_header + s->shm_bad_size + s->shm_bad_fds +
	       s->shm_bad_region + s->shm_bad_range + s->shm_bad_flags +
	       s->shm_map_failed;
}

/*
 * @stmt refused one request with a non-zero status: counted in
 * shm_refused and in @field only, nothing mapped, the front-end not lost.
 */
#define REFUSED(b, field, stmt) do {					\
	struct vqf_vfront_stats b_, a_;					\
	stats(b, &b_);							\
	assert_int_not_equal((stmt), 0);				\
	stats(b, &a_);							\
	assert_int_equal(a_.shm_refused, b_.shm_refused + 1);		\
	assert_int_equal(a_.field, b_.field + 1);			\
	assert_int_equal(causes(&a_), causes(&b_) + 1);			\
	assert_int_equal(a_.channel_msgs, b_.channel_msgs + 1);	\
	assert_int_equal(a_.shm_maps, b_.shm_maps);			\
	assert_int_equal(a_.shm_unmaps, b_.shm_unmaps);		\
	assert_int_equal(a_.lost, 0);					\
	assert_int_equal(span_mapped(win, WINDOW), 0);			\
	assert_int_equal(span_mapped(tab, TABLE), 0);			\
	nref++;								\
} while (0)

/* A memfd of @len bytes, byte i = i * 3 + 1. */
static int data_file(u64 len)
{
	int fd = memfd_create("vqf-shm-data", MFD_CLOEXEC);
	u8 *p;
	u64 i;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	for (i = 0; i < len; i++)
		p[i] = (u8)(i * 3 + 1);
	munmap(p, len);
	return fd;
}

static void test_channel_refused(void **state)
{
	struct vqf_vhost_mmap ok = {
		.shmid = 0, .fd_offset = 0, .shm_offset = 2 * PG,
		.len = 2 * PG, .flags = VQF_VHOST_SHMEM_MAP_RW,
	};
	struct vqf_vhost_mmap m;
	struct vqf_vfront_stats s;
	struct fb *b = fb_new();
	u8 junk[64] = { 0 }, *win, *tab;
	int fd, efd, two[2], ro;
	unsigned int nref = 0;
	char path[64];
	void *base;
	u64 len;

	(void)state;
	assert_int_equal(fb_connect(b), 0);
	assert_int_equal(vqf_vfront_shm(b->vf, 0, &base, &len), 0);
	win = base;
	assert_int_equal(vqf_vfront_shm(b->vf, 1, &base, &len), 0);
	tab = base;
	assert_int_equal(span_mapped(win, WINDOW), 0);
	fd = data_file(8 * PG);
	efd = eventfd(0, EFD_CLOEXEC);
	two[0] = fd;
	two[1] = fd;

	/* Region: no such shmid. */
	m = ok;
	m.shmid = 2;
	REFUSED(b, shm_bad_region, shm_map(b, &m, fd));
	m.shmid = 255;
	REFUSED(b, shm_bad_region, shm_unmap(b, &m));
	/* Range: unaligned offset, length, file offset; empty; past the
	 * end; wrapping.
	 */
	m = ok;
	m.shm_offset = 100;
	REFUSED(b, shm_bad_range, shm_map(b, &m, fd));
	m = ok;
	m.len = PG + 1;
	REFUSED(b, shm_bad_range, shm_map(b, &m, fd));
	m = ok;
	m.fd_offset = 12;
	REFUSED(b, shm_bad_range, shm_map(b, &m, fd));
	m = ok;
	m.len = 0;
	REFUSED(b, shm_bad_range, shm_map(b, &m, fd));
	REFUSED(b, shm_bad_range, shm_unmap(b, &m));
	m = ok;
	m.shm_offset = WINDOW - PG;
	REFUSED(b, shm_bad_range, shm_map(b, &m, fd));
	m.shm_offset = WINDOW;
	m.len = PG;
	REFUSED(b, shm_bad_range, shm_unmap(b, &m));
	m = ok;
	m.shmid = 1;
	m.shm_offset = 0;
	m.len = TABLE + PG;
	REFUSED(b, shm_bad_range, shm_map(b, &m, fd));
	m = ok;
	m.shm_offset = ~0ull & ~(PG - 1);
	m.len = 2 * PG;
	REFUSED(b, shm_bad_range, shm_map(b, &m, fd));
	REFUSED(b, shm_bad_range, shm_unmap(b, &m));
	/* Flags. */
	m = ok;
	m.flags = 1ull << 1;
	REFUSED(b, shm_bad_flags, shm_map(b, &m, fd));
	m.flags = 1ull << 63 | VQF_VHOST_SHMEM_MAP_RW;
	REFUSED(b, shm_bad_flags, shm_unmap(b, &m));
	/* Descriptors: none with a MAP, one with an UNMAP, two. */
	REFUSED(b, shm_bad_fds, shm_map(b, &ok, -1));
	REFUSED(b, shm_bad_fds, chan_req(b, VQF_VHOST_BACKEND_SHMEM_UNMAP,
					 ASK, &ok, sizeof(ok), &fd, 1));
	REFUSED(b, shm_bad_fds, chan_req(b, VQF_VHOST_BACKEND_SHMEM_MAP,
					 ASK, &ok, sizeof(ok), two, 2));
	/* Payload size (within what can be followed). */
	REFUSED(b, shm_bad_size, chan_req(b, VQF_VHOST_BACKEND_SHMEM_MAP,
					  ASK, &ok, sizeof(ok) - 8, &fd, 1));
	REFUSED(b, shm_bad_size, chan_req(b, VQF_VHOST_BACKEND_SHMEM_UNMAP,
					  ASK, NULL, 0, NULL, 0));
	/* Header: unknown code, bad version, a REPLY flag, unknown flag. */
	REFUSED(b, shm_bad_header, chan_req(b, 99, ASK, junk, 40, NULL, 0));
	REFUSED(b, shm_bad_header, chan_req(b, 1, ASK, junk, 40, NULL, 0));
	REFUSED(b, shm_bad_header, chan_req(b, VQF_VHOST_BACKEND_SHMEM_MAP,
					    VQF_VHOST_FLAG_NEED_REPLY | 2,
					    &ok, sizeof(ok), &fd, 1));
	REFUSED(b, shm_bad_header, chan_req(b, VQF_VHOST_BACKEND_SHMEM_MAP,
					    ASK | VQF_VHOST_FLAG_REPLY, &ok,
					    sizeof(ok), &fd, 1));
	REFUSED(b, shm_bad_header, chan_req(b, VQF_VHOST_BACKEND_SHMEM_MAP,
					    ASK | (1u << 7), &ok,
					    sizeof(ok), &fd, 1));
	/* The mmap itself fails: a descriptor that cannot be mapped, a
	 * read-only one mapped writable.  The span stays empty.
	 */
	REFUSED(b, shm_map_failed, shm_map(b, &ok, efd));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(ro >= 0);
	REFUSED(b, shm_map_failed, shm_map(b, &ok, ro));
	/* Without NEED_REPLY: refused and counted, not answered. */
	m = ok;
	m.shmid = 7;
	assert_int_equal(chan_req(b, VQF_VHOST_BACKEND_SHMEM_MAP,
				  VQF_VHOST_VERSION, &m, sizeof(m), &fd, 1),
			 ~0ull);

	/* Still a working channel: a valid map, read-only, then unmapped. */
	m = ok;
	m.flags = 0;
	m.fd_offset = PG;
	assert_int_equal(shm_map(b, &m, ro), 0);
	assert_int_equal(span_mapped(win, WINDOW), 2 * PG);
	assert_int_equal(win[2 * PG], (u8)(PG * 3 + 1));
	assert_int_equal(win[3 * PG + 5], (u8)((2 * PG + 5) * 3 + 1));
	assert_int_equal(shm_unmap(b, &m), 0);
	assert_int_equal(span_mapped(win, WINDOW), 0);
	stats(b, &s);
	/* The unanswered one above was counted before this ack. */
	assert_int_equal(s.shm_refused, nref + 1);
	assert_int_equal(s.shm_bad_region, 3);
	assert_int_equal(s.shm_maps, 1);
	assert_int_equal(s.shm_unmaps, 1);
	assert_int_equal(s.channel_msgs, nref + 3);
	assert_int_equal(s.lost, 0);
	close(ro);
	close(efd);
	close(fd);
	fb_free(b);
}

/*
 * Valid maps: the window's pages are the file's, both ways, read-only
 * and writable; the table region too; an UNMAP of part of a map; a map
 * over a map; and every span empty again after its UNMAP.
 */
static void test_channel_map(void **state)
{
	struct vqf_vhost_mmap m = {
		.shmid = 0, .fd_offset = 0, .shm_offset = 0,
		.len = 4 * PG, .flags = VQF_VHOST_SHMEM_MAP_RW,
	};
	struct vqf_vfront_stats s;
	struct fb *b = fb_new();
	int fd = data_file(16 * PG);
	u8 *win, *tab, c;
	void *base;
	u64 len;

	(void)state;
	assert_int_equal(fb_connect(b), 0);
	assert_int_equal(vqf_vfront_shm(b->vf, 0, &base, &len), 0);
	win = base;
	assert_int_equal(vqf_vfront_shm(b->vf, 1, &base, &len), 0);
	tab = base;
	/* The last pages of the window, from file page 4 on. */
	m.shm_offset = WINDOW - 4 * PG;
	m.fd_offset = 4 * PG;
	assert_int_equal(shm_map(b, &m, fd), 0);
	assert_int_equal(span_mapped(win, WINDOW), 4 * PG);
	assert_int_equal(win[WINDOW - 4 * PG], (u8)(4 * PG * 3 + 1));
	/* A store through the window reaches the file. */
	win[WINDOW - 1] = 0x5a;
	assert_int_equal(pread(fd, &c, 1, 8 * PG - 1), 1);
	assert_int_equal(c, 0x5a);
	/* UNMAP of the middle: the rest stays. */
	m.shm_offset = WINDOW - 3 * PG;
	m.len = 2 * PG;
	assert_int_equal(shm_unmap(b, &m), 0);
	assert_int_equal(span_mapped(win, WINDOW), 2 * PG);
	assert_int_equal(win[WINDOW - PG], (u8)(7 * PG * 3 + 1));
	/* A map over a map. */
	m.shm_offset = WINDOW - 4 * PG;
	m.len = 4 * PG;
	m.fd_offset = 0;
	m.flags = 0;
	assert_int_equal(shm_map(b, &m, fd), 0);
	assert_int_equal(span_mapped(win, WINDOW), 4 * PG);
	assert_int_equal(win[WINDOW - 4 * PG + 1], 4);
	assert_int_equal(shm_unmap(b, &m), 0);
	assert_int_equal(span_mapped(win, WINDOW), 0);
	/* The table region, read-only, whole. */
	m.shmid = 1;
	m.shm_offset = 0;
	m.len = TABLE;
	assert_int_equal(shm_map(b, &m, fd), 0);
	assert_int_equal(span_mapped(tab, TABLE), TABLE);
	assert_int_equal(tab[7], 22);
	assert_int_equal(shm_unmap(b, &m), 0);
	assert_int_equal(span_mapped(tab, TABLE), 0);
	stats(b, &s);
	assert_int_equal(s.shm_maps, 3);
	assert_int_equal(s.shm_unmaps, 3);
	assert_int_equal(s.shm_refused, 0);
	assert_int_equal(s.lost, 0);
	close(fd);
	/* The mappings gone, the front-end freed: nothing stays mapped. */
	fb_free(b);
}

/*
 * Channel payloads too big to follow, or a short header: the channel is
 * broken, the back-end lost with -EPROTO, nothing mapped; and the
 * message carried a descriptor that is closed.
 */
static void test_channel_break(void **state)
{
	unsigned int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct vqf_vhost_mmap m = { .len = PG };
		struct fb *b = fb_new();
		int fd = data_file(PG);
		u8 big[64] = { 0 };
		void *base;
		u64 len;

		assert_int_equal(fb_connect(b), 0);
		if (!i) {
			memcpy(big, &m, sizeof(m));
			assert_int_equal(peer_send(b->chan,
						   VQF_VHOST_BACKEND_SHMEM_MAP,
						   ASK, big, sizeof(m) + 8,
						   &fd, 1), 0);
		} else {
			/* 8 bytes, then the end of the channel. */
			assert_int_equal(send(b->chan, big, 8, MSG_NOSIGNAL),
					 8);
			shutdown(b->chan, SHUT_WR);
		}
		assert_true(peer_wait(is_lost, b->vf));
		assert_lost_once(b, -EPROTO);
		assert_int_equal(vqf_vfront_shm(b->vf, 0, &base, &len), 0);
		assert_int_equal(span_mapped(base, len), 0);
		/* Every later message fails at once. */
		assert_int_equal(vqf_vfront_set_status(b->vf, 0), 0);
		close(fd);
		fb_free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_handshake_bad),
		cmocka_unit_test(test_start_bad),
		cmocka_unit_test(test_start_lost_errno),
		cmocka_unit_test(test_driver_lost),
		cmocka_unit_test(test_idle_hangup),
		cmocka_unit_test(test_fewer_features),
		cmocka_unit_test(test_shmem_config_bad),
		cmocka_unit_test(test_channel_refused),
		cmocka_unit_test(test_channel_map),
		cmocka_unit_test(test_channel_break),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
