// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vhost.c - vqf_fsdev as a vhost-user back-end (see vqf_vhost.h).
 *
 * One thread (the caller of vqf_vhost_serve()) reads and handles the
 * front-end's messages; the device's own threads serve the rings.  The
 * guest memory map (vh->mem) and the ring descriptions change only while
 * the device is stopped, so its threads read them without locks.  The
 * version table's mapping is the exception: the device's threads map it
 * at a guest's INIT (vh_serve()), under vh->tlock.
 */
#define _GNU_SOURCE
#include "vqf_vhost.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "vqf_gmem.h"
#include "vqf_memguard.h"

struct vhring {
	u32 num;		/* 0: not set */
	bool addr_set, enabled, running;
	struct vqf_vhost_addr ua;	/* front-end addresses */
	u16 base;		/* next avail entry (SET/GET_VRING_BASE) */
	int kick_fd;		/* -1: none */
	int call_fd;		/* open for every ring offered: the device
				 * writes it */
	int err_fd;		/* -1: none (never written) */
};

struct vhregion {
	struct vqf_vhost_region r;
	void *map;		/* mmap of [0, mmap_offset + size) */
	size_t map_len;
};

struct vqf_vhost {
	struct vqf_vhost_cfg cfg;
	struct vqf_fsdev *dev;
	struct vqf_gmem mem;	/* what the device sees */
	struct vhregion reg[VQF_VHOST_MAX_REGIONS];
	unsigned int nreg;
	bool mem_set;
	u64 offered, features;
	bool features_set;
	u64 protocol;
	unsigned int nq;	/* rings: 1 + request queues */
	bool running;
	/* The anonymous inode behind every eventfd (ring_fd_check()). */
	dev_t efd_dev;
	ino_t efd_ino;
	bool efd_known;
	struct vhring ring[VQF_VHOST_MAX_QUEUES];

	pthread_mutex_t slock;
	struct vqf_vhost_stats st;
	u64 popped[VQF_VHOST_MAX_QUEUES];	/* atomics, from the trace */
	u64 by_opcode[VQF_VHOST_OPCODES];	/* atomics, from the trace */

	/* Shared memory regions (vqf_vhost_shmem.h). */
	u64 pf_offered;
	struct vqf_vshm shm;
	struct vqf_fsdev_dax_ops dops;	/* cfg.dax_ops + the channel */
	/*
	 * The version table: mapped by the first INIT that asks for it
	 * (a device thread, which may wait for the ack), unmapped by the
	 * stop (the serving thread).  tlock orders the two; a map waiting
	 * under it is ended by vqf_vshm_cancel(), never waited out.
	 */
	pthread_mutex_t tlock;
	bool table_offer;	/* this start serves the regions */
	bool table_mapped;	/* on this connection's channel */
};

#define PF_OFFERED	((1ull << VQF_VHOST_PF_MQ) | \
			 (1ull << VQF_VHOST_PF_REPLY_ACK))
/* What serving the regions needs, SHMEM included. */
#define PF_SHMEM_ALL	((1ull << VQF_VHOST_PF_SHMEM) | \
			 (1ull << VQF_VHOST_PF_BACKEND_REQ) | \
			 (1ull << VQF_VHOST_PF_BACKEND_SEND_FD) | \
			 (1ull << VQF_VHOST_PF_REPLY_ACK))

static const char *const req_names[VQF_VHOST_REQUEST_MAX] = {
	[1] = "GET_FEATURES", [2] = "SET_FEATURES", [3] = "SET_OWNER",
	[4] = "RESET_OWNER", [5] = "SET_MEM_TABLE", [6] = "SET_LOG_BASE",
	[7] = "SET_LOG_FD", [8] = "SET_VRING_NUM", [9] = "SET_VRING_ADDR",
	[10] = "SET_VRING_BASE", [11] = "GET_VRING_BASE",
	[12] = "SET_VRING_KICK", [13] = "SET_VRING_CALL",
	[14] = "SET_VRING_ERR", [15] = "GET_PROTOCOL_FEATURES",
	[16] = "SET_PROTOCOL_FEATURES", [17] = "GET_QUEUE_NUM",
	[18] = "SET_VRING_ENABLE", [19] = "SEND_RARP", [20] = "NET_SET_MTU",
	[21] = "SET_BACKEND_REQ_FD", [22] = "IOTLB_MSG",
	[23] = "SET_VRING_ENDIAN", [24] = "GET_CONFIG", [25] = "SET_CONFIG",
	[26] = "CREATE_CRYPTO_SESSION", [27] = "CLOSE_CRYPTO_SESSION",
	[28] = "POSTCOPY_ADVISE", [29] = "POSTCOPY_LISTEN",
	[30] = "POSTCOPY_END", [31] = "GET_INFLIGHT_FD",
	[32] = "SET_INFLIGHT_FD", [33] = "GPU_SET_SOCKET",
	[34] = "RESET_DEVICE", [35] = "VRING_KICK",
	[36] = "GET_MAX_MEM_SLOTS", [37] = "ADD_MEM_REG",
	[38] = "REM_MEM_REG", [39] = "SET_STATUS", [40] = "GET_STATUS",
	[41] = "GET_SHARED_OBJECT", [42] = "SET_DEVICE_STATE_FD",
	[43] = "CHECK_DEVICE_STATE", [44] = "GET_SHMEM_CONFIG",
};

const char *vqf_vhost_request_name(u32 request)
{
	if (request < VQF_VHOST_REQUEST_MAX && req_names[request])
		return req_names[request];
	return "?";
}

static void vlog(struct vqf_vhost *vh, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void vlog(struct vqf_vhost *vh, const char *fmt, ...)
{
	va_list ap;

	if (!vh->cfg.log)
		return;
	va_start(ap, fmt);
	fputs("vhost-user: ", vh->cfg.log);
	vfprintf(vh->cfg.log, fmt, ap);
	fputc('\n', vh->cfg.log);
	fflush(vh->cfg.log);
	va_end(ap);
}

/* ---- the stateless check --------------------------------------------- */

int vqf_vhost_msg_check(const struct vqf_vhost_msg *m, unsigned int nfds)
{
	u32 size = m->hdr.size, want_fds = 0, n;

	if ((m->hdr.flags & VQF_VHOST_FLAG_VERSION_MASK) != VQF_VHOST_VERSION ||
	    (m->hdr.flags & ~(VQF_VHOST_FLAG_VERSION_MASK |
			      VQF_VHOST_FLAG_NEED_REPLY)))
		return -EPROTO;
	switch (m->hdr.request) {
	case VQF_VHOST_GET_FEATURES:
	case VQF_VHOST_GET_PROTOCOL_FEATURES:
	case VQF_VHOST_GET_QUEUE_NUM:
	case VQF_VHOST_SET_OWNER:
	case VQF_VHOST_RESET_OWNER:
	case VQF_VHOST_GET_SHMEM_CONFIG:
		if (size)
			return -EMSGSIZE;
		break;
	case VQF_VHOST_SET_BACKEND_REQ_FD:
		if (size)
			return -EMSGSIZE;
		want_fds = 1;
		break;
	case VQF_VHOST_SET_FEATURES:
	case VQF_VHOST_SET_PROTOCOL_FEATURES:
		if (size != sizeof(u64))
			return -EMSGSIZE;
		break;
	case VQF_VHOST_SET_VRING_KICK:
	case VQF_VHOST_SET_VRING_CALL:
	case VQF_VHOST_SET_VRING_ERR:
		if (size != sizeof(u64))
			return -EMSGSIZE;
		want_fds = m->p.u64 & VQF_VHOST_VRING_NOFD ? 0 : 1;
		break;
	case VQF_VHOST_SET_VRING_NUM:
	case VQF_VHOST_SET_VRING_BASE:
	case VQF_VHOST_GET_VRING_BASE:
	case VQF_VHOST_SET_VRING_ENABLE:
		if (size != sizeof(struct vqf_vhost_state))
			return -EMSGSIZE;
		break;
	case VQF_VHOST_SET_VRING_ADDR:
		if (size != sizeof(struct vqf_vhost_addr))
			return -EMSGSIZE;
		break;
	case VQF_VHOST_SET_MEM_TABLE:
		if (size < 8)
			return -EMSGSIZE;
		n = m->p.mem.nregions;
		if (n > VQF_VHOST_MAX_REGIONS)
			return -E2BIG;
		if (!n)
			return -ENODATA;
		if (size != 8 + n * sizeof(struct vqf_vhost_region))
			return -EMSGSIZE;
		want_fds = n;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (nfds != want_fds)
		return -EBADF;
	return 0;
}

/* ---- counters ---------------------------------------------------------- */

static void count_refusal(struct vqf_vhost *vh, int err)
{
	u64 *f;

	switch (err) {
	case -EPROTO:		f = &vh->st.bad_header; break;
	case -EOPNOTSUPP:	f = &vh->st.unsupported; break;
	case -EMSGSIZE:		f = &vh->st.bad_size; break;
	case -E2BIG:		f = &vh->st.too_many_regions; break;
	case -ENODATA:		f = &vh->st.no_regions; break;
	case -EBADF:		f = &vh->st.bad_fds; break;
	case -ETOOMANYREFS:	f = &vh->st.too_many_fds; break;
	case -ERANGE:		f = &vh->st.bad_index; break;
	case -EDOM:		f = &vh->st.bad_align; break;
	case -EOVERFLOW:	f = &vh->st.region_wrap; break;
	case -EEXIST:		f = &vh->st.region_overlap; break;
	case -ENXIO:		f = &vh->st.region_file; break;
	case -ENODEV:		f = &vh->st.region_fd; break;
	case -EBADFD:		f = &vh->st.ring_fd; break;
	case -ENOMEM:		f = &vh->st.mmap_failed; break;
	case -EFAULT:		f = &vh->st.ring_fault; break;
	case -ENOPROTOOPT:	f = &vh->st.not_negotiated; break;
	case -ENOTSOCK:
	case -EPROTOTYPE:
	case -ENOTCONN:		f = &vh->st.backend_fd_bad; break;
	default:		f = &vh->st.bad_value; break;
	}
	pthread_mutex_lock(&vh->slock);
	vh->st.refused++;
	(*f)++;
	pthread_mutex_unlock(&vh->slock);
}

#define STAT_INC(vh, field) do {			\
	pthread_mutex_lock(&(vh)->slock);		\
	(vh)->st.field++;				\
	pthread_mutex_unlock(&(vh)->slock);		\
} while (0)

int vqf_vhost_dax_resized(struct vqf_vhost *vh, u64 nodeid, u64 old_size,
			  u64 new_size)
{
	return vqf_fsdev_dax_resized(vh->dev, nodeid, old_size, new_size);
}

void vqf_vhost_get_stats(struct vqf_vhost *vh, struct vqf_vhost_stats *out)
{
	unsigned int i;

	pthread_mutex_lock(&vh->slock);
	*out = vh->st;
	pthread_mutex_unlock(&vh->slock);
	for (i = 0; i < VQF_VHOST_MAX_QUEUES; i++)
		out->requests[i] = __atomic_load_n(&vh->popped[i],
						   __ATOMIC_RELAXED);
	for (i = 0; i < VQF_VHOST_OPCODES; i++)
		out->by_opcode[i] = __atomic_load_n(&vh->by_opcode[i],
						    __ATOMIC_RELAXED);
	vqf_vshm_get_stats(&vh->shm, &out->shm);
	vqf_fsdev_get_stats(vh->dev, &out->dev);
}

static void dev_trace(void *ctx, enum vqf_fsdev_ev ev, u64 unique,
		      u32 opcode, unsigned int queue)
{
	struct vqf_vhost *vh = ctx;

	(void)unique;
	if (ev != VQF_FSDEV_EV_POPPED)
		return;
	if (queue < VQF_VHOST_MAX_QUEUES)
		__atomic_add_fetch(&vh->popped[queue], 1, __ATOMIC_RELAXED);
	/* a chain whose header was short has no unique and no opcode */
	if (unique && opcode < VQF_VHOST_OPCODES)
		__atomic_add_fetch(&vh->by_opcode[opcode], 1, __ATOMIC_RELAXED);
}

/* ---- guest memory ------------------------------------------------------ */

/* Front-end address @ua of @len bytes to a guest address; false if the
 * range is not inside one region.
 */
static bool ua_to_gpa(const struct vqf_vhost *vh, u64 ua, u64 len, u64 *gpa)
{
	unsigned int i;

	for (i = 0; i < vh->nreg; i++) {
		const struct vqf_vhost_region *r = &vh->reg[i].r;

		if (ua >= r->uaddr && ua - r->uaddr < r->size &&
		    len <= r->size - (ua - r->uaddr)) {
			*gpa = r->gpa + (ua - r->uaddr);
			return true;
		}
	}
	return false;
}

static void unmap_all(struct vqf_vhost *vh)
{
	unsigned int i;

	for (i = 0; i < vh->nreg; i++)
		munmap(vh->reg[i].map, vh->reg[i].map_len);
	vh->nreg = 0;
	vh->mem_set = false;
	vqf_gmem_init(&vh->mem);
}

static bool overlap(u64 a, u64 alen, u64 b, u64 blen)
{
	return a < b + blen && b < a + alen;
}

/* Checks the table against itself and the files; nothing is mapped. */
static int check_regions(const struct vqf_vhost_mem *m, const int *fds)
{
	unsigned int i, j;

	for (i = 0; i < m->nregions; i++) {
		const struct vqf_vhost_region *r = &m->r[i];
		struct stat st;

		if (!r->size)
			return -EINVAL;
		if (r->gpa + r->size < r->gpa ||
		    r->uaddr + r->size < r->uaddr ||
		    r->mmap_offset + r->size < r->mmap_offset ||
		    r->mmap_offset + r->size > (u64)SIZE_MAX ||
		    r->mmap_offset + r->size > (u64)INT64_MAX)
			return -EOVERFLOW;
		for (j = 0; j < i; j++)
			if (overlap(r->gpa, r->size, m->r[j].gpa,
				    m->r[j].size) ||
			    overlap(r->uaddr, r->size, m->r[j].uaddr,
				    m->r[j].size))
				return -EEXIST;
		if (fstat(fds[i], &st) || !S_ISREG(st.st_mode))
			return -ENODEV;
		/* Past the end of the file, an access would be SIGBUS. */
		if ((u64)st.st_size < r->mmap_offset + r->size)
			return -ENXIO;
	}
	return 0;
}

/* ---- device start and stop --------------------------------------------- */

static bool ring_ready(const struct vqf_vhost *vh, unsigned int i)
{
	const struct vhring *r = &vh->ring[i];
	bool need_enable = vh->features &
			   (1ull << VQF_VHOST_F_PROTOCOL_FEATURES);

	return r->num && r->addr_set && r->kick_fd >= 0 &&
	       (r->enabled || !need_enable);
}

/*
 * The table leaves the front-end's region (without waiting, as the
 * window's unmappings of a reset: the front-end's own stop may not serve
 * the channel until it has its answer) and is not offered again before
 * the next start.
 */
static void table_unmap(struct vqf_vhost *vh)
{
	pthread_mutex_lock(&vh->tlock);
	if (vh->table_mapped)
		vqf_vshm_unmap(&vh->shm, VQF_VHOST_SHMID_VERSION, 0,
			       vh->cfg.ver_table_size, false);
	vh->table_mapped = false;
	vh->table_offer = false;
	pthread_mutex_unlock(&vh->tlock);
}

static void dev_stop(struct vqf_vhost *vh, bool live)
{
	unsigned int i;

	if (!vh->running)
		return;
	/* A mapping waiting for its ack would hold the stop until the
	 * front-end answers, which it may never do (it hung up, or its
	 * own stop waits for this one): the wait ends now, the guest's
	 * SETUPMAPPING fails (an INIT's table map: the INIT is answered
	 * without the table), the channel stays in step.  First, so that
	 * the reset below, which joins the threads that wait, never
	 * waits for the front-end.
	 */
	vqf_vshm_cancel(&vh->shm, true);
	vqf_fsdev_set_status(vh->dev, 0);
	/* The device forgot the FUSE connection: so does the backend, so
	 * that the driver's next INIT is served (a guest rebooting without
	 * unmounting sends no DESTROY).
	 */
	/* The regions are filled only while the device runs: the window
	 * was emptied by the reset, the table goes too (no waiting, as
	 * there).  The reset joined the device's threads, so no INIT is
	 * mapping it any more; a map the cancel ended was undone by the
	 * channel itself and left table_mapped false.
	 */
	table_unmap(vh);
	if (vh->cfg.serve_reset)
		vh->cfg.serve_reset(vh->cfg.serve_ctx);
	else if (vqf_backend_reset(vh->cfg.be))
		vlog(vh, "backend session not reset: out of memory");
	for (i = 0; i < vh->nq; i++) {
		struct vhring *r = &vh->ring[i];
		u16 idx;

		if (r->running && !vqf_fsdev_queue_avail_idx(vh->dev, i, &idx))
			r->base = idx;
		r->running = false;
	}
	vh->running = false;
	vqf_vshm_cancel(&vh->shm, false);
	STAT_INC(vh, stops);
	if (live)
		STAT_INC(vh, live_changes);
	vlog(vh, "device stopped%s", live ? " (live change)" : "");
}

/* The ring's used index as the driver sees it, to resume writing there. */
static u16 used_idx(const struct vqf_vhost *vh, u64 used_gpa)
{
	const __le16 *p = vqf_gmem_ptr(&vh->mem, used_gpa + 2, 2);

	return p ? le16_to_cpu(__atomic_load_n(p, __ATOMIC_ACQUIRE)) : 0;
}

/* Ring @r's guest addresses.  Checked when they came, but the memory
 * table may be new since.
 */
static int ring_gpa(const struct vqf_vhost *vh, const struct vhring *r,
		    struct vqf_vring_addr *a)
{
	if (!ua_to_gpa(vh, r->ua.desc, vqf_vring_desc_bytes(r->num),
		       &a->desc) ||
	    !ua_to_gpa(vh, r->ua.avail, vqf_vring_avail_bytes(r->num),
		       &a->avail) ||
	    !ua_to_gpa(vh, r->ua.used, vqf_vring_used_bytes(r->num),
		       &a->used))
		return -EFAULT;
	return 0;
}

/* Ring @i joins the running device; the others carry on. */
static void ring_add(struct vqf_vhost *vh, unsigned int i)
{
	struct vhring *r = &vh->ring[i];
	struct vqf_vring_addr a;
	int ret = ring_gpa(vh, r, &a);

	if (!ret)
		ret = vqf_fsdev_add_queue(vh->dev, i, r->num, &a, r->kick_fd,
					  r->call_fd, r->base,
					  used_idx(vh, a.used));
	if (ret) {
		STAT_INC(vh, start_failed);
		vlog(vh, "ring %u not added: %s", i, strerror(-ret));
		return;
	}
	r->running = true;
	STAT_INC(vh, ring_adds);
	vlog(vh, "ring %u added", i);
}

/*
 * At a start: whether the regions are served.  The version table is
 * not mapped here but at the guest's INIT (vh_serve()): a map sent now
 * could not be waited for - QEMU sends what starts the device from its
 * main loop and serves the channel only once it has our answer - and
 * the INIT that promises the guest the table may be answered, and the
 * guest read the region, before the front-end has mapped it.
 */
static void shm_start(struct vqf_vhost *vh)
{
	bool asked = vh->protocol & (1ull << VQF_VHOST_PF_SHMEM);
	bool ok = (vh->protocol & PF_SHMEM_ALL) == PF_SHMEM_ALL &&
		  vqf_vshm_ready(&vh->shm);

	if (vh->cfg.dax_window)
		vqf_fsdev_set_dax(vh->dev, ok);
	pthread_mutex_lock(&vh->tlock);
	vh->table_offer = asked && ok && vh->cfg.ver_table_size;
	pthread_mutex_unlock(&vh->tlock);
	if (!asked)
		return;
	if (!ok) {
		STAT_INC(vh, shm_unserved);
		vlog(vh, "SHMEM negotiated without %s: regions not served",
		     vqf_vshm_ready(&vh->shm) ? "BACKEND_REQ, "
		     "BACKEND_SEND_FD and REPLY_ACK" : "a back-end channel");
		return;
	}
	STAT_INC(vh, shm_served);
}

static int dev_start(struct vqf_vhost *vh, const bool *want)
{
	u8 s = VQF_S_ACKNOWLEDGE | VQF_S_DRIVER;
	unsigned int i;
	int ret;

	vqf_fsdev_set_status(vh->dev, 0);
	shm_start(vh);
	vqf_fsdev_set_status(vh->dev, s);
	ret = vqf_fsdev_set_features(vh->dev, vh->features &
				     ~(1ull << VQF_VHOST_F_PROTOCOL_FEATURES));
	if (ret)
		goto fail;
	s |= VQF_S_FEATURES_OK;
	vqf_fsdev_set_status(vh->dev, s);
	if (!(vqf_fsdev_get_status(vh->dev) & VQF_S_FEATURES_OK)) {
		ret = -EINVAL;
		goto fail;
	}
	for (i = 0; i < vh->nq; i++) {
		struct vhring *r = &vh->ring[i];
		struct vqf_vring_addr a;

		if (!want[i])
			continue;
		ret = ring_gpa(vh, r, &a);
		if (ret)
			goto fail;
		ret = vqf_fsdev_set_queue(vh->dev, i, r->num, &a, r->kick_fd,
					  r->call_fd);
		if (!ret)
			ret = vqf_fsdev_set_queue_base(vh->dev, i, r->base,
						       used_idx(vh, a.used));
		if (ret)
			goto fail;
	}
	ret = vqf_fsdev_set_status(vh->dev, s | VQF_S_DRIVER_OK);
	if (ret)
		goto fail;
	for (i = 0; i < vh->nq; i++)
		vh->ring[i].running = want[i];
	vh->running = true;
	STAT_INC(vh, starts);
	vlog(vh, "device started");
	return 0;
fail:
	/* A thread that did start may be mapping the table for an INIT:
	 * as at a stop, its wait ends first, then the table goes.
	 */
	vqf_vshm_cancel(&vh->shm, true);
	vqf_fsdev_set_status(vh->dev, 0);
	table_unmap(vh);
	vqf_vshm_cancel(&vh->shm, false);
	STAT_INC(vh, start_failed);
	vlog(vh, "device start failed: %s", strerror(-ret));
	return ret;
}

/*
 * With the socket drained: run the device on the ready rings.  It starts
 * once the hiprio ring and the first request ring are ready; rings that
 * become ready later join it (QEMU enables them one by one), and a ring
 * that is no longer ready stops it (then it restarts on what is left, if
 * that is enough).
 */
static void update(struct vqf_vhost *vh)
{
	bool want[VQF_VHOST_MAX_QUEUES] = { false };
	bool added = false, removed = false;
	unsigned int i;

	for (i = 0; i < vh->nq; i++) {
		want[i] = ring_ready(vh, i);
		added |= want[i] && !vh->ring[i].running;
		removed |= !want[i] && vh->ring[i].running;
	}
	if (vh->running && !removed) {
		for (i = 0; added && i < vh->nq; i++)
			if (want[i] && !vh->ring[i].running)
				ring_add(vh, i);
		return;
	}
	dev_stop(vh, true);
	if (!vh->features_set || !vh->mem_set || !want[0] || !want[1])
		return;
	dev_start(vh, want);
}

/* ---- message handlers -------------------------------------------------- */

/* A ring index from a message, bounded by the queues the device has. */
static int ring_index(struct vqf_vhost *vh, u64 idx, struct vhring **out)
{
	if (idx >= vh->nq)
		return -ERANGE;
	*out = &vh->ring[idx];
	return 0;
}

/* A change to ring @r's description: the device cannot keep running it. */
static void ring_change(struct vqf_vhost *vh, struct vhring *r)
{
	if (r->running)
		dev_stop(vh, true);
}

/* Ring @r disabled or stopped: how QEMU stops the device. */
static void ring_stop(struct vqf_vhost *vh, struct vhring *r)
{
	if (r->running)
		dev_stop(vh, false);
}

static int set_mem_table(struct vqf_vhost *vh, const struct vqf_vhost_mem *m,
			 int *fds)
{
	struct vhregion nr[VQF_VHOST_MAX_REGIONS];
	unsigned int i;
	int ret = check_regions(m, fds);

	if (ret)
		return ret;
	/* Our own ring reads (used_idx()) touch this memory too. */
	if (vqf_memguard_install())
		return -ENOTRECOVERABLE;
	for (i = 0; i < m->nregions; i++) {
		/*
		 * The front-end keeps the fd and could shrink it under our
		 * mapping later (SIGBUS): seal a memfd that takes seals.
		 * One that does not (or a plain file) stays shrinkable; the
		 * ring's SIGBUS recovery (vqf_memguard.h) covers it.
		 */
		if (vqf_memguard_seal(fds[i]))
			vlog(vh, "  region %u: fd not sealed against shrinking",
			     i);
		nr[i].r = m->r[i];
		nr[i].map_len = m->r[i].mmap_offset + m->r[i].size;
		nr[i].map = mmap(NULL, nr[i].map_len, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fds[i], 0);
		if (nr[i].map == MAP_FAILED) {
			while (i--)
				munmap(nr[i].map, nr[i].map_len);
			return -ENOMEM;
		}
	}
	dev_stop(vh, vh->running);
	unmap_all(vh);
	for (i = 0; i < m->nregions; i++) {
		vh->reg[i] = nr[i];
		/* Cannot fail: checked for overlaps and wraps above. */
		vqf_gmem_add(&vh->mem, nr[i].r.gpa, nr[i].r.size,
			     (u8 *)nr[i].map + nr[i].r.mmap_offset);
		vlog(vh, "  region gpa 0x%llx size 0x%llx ua 0x%llx off 0x%llx",
		     (unsigned long long)nr[i].r.gpa,
		     (unsigned long long)nr[i].r.size,
		     (unsigned long long)nr[i].r.uaddr,
		     (unsigned long long)nr[i].r.mmap_offset);
	}
	vh->nreg = m->nregions;
	vh->mem_set = true;
	/* The descriptors are not needed once mapped. */
	for (i = 0; i < m->nregions; i++) {
		close(fds[i]);
		fds[i] = -1;
	}
	return 0;
}

static int set_vring_addr(struct vqf_vhost *vh, const struct vqf_vhost_addr *a)
{
	struct vhring *r;
	u64 gpa;
	int ret = ring_index(vh, a->index, &r);

	if (ret)
		return ret;
	if (a->flags)
		return -EINVAL;		/* VRING_F_LOG: no dirty logging */
	/* Split ring alignment, virtio 1.2 2.7. */
	if ((a->desc & 15) || (a->avail & 1) || (a->used & 3))
		return -EDOM;
	if (vh->mem_set && (!ua_to_gpa(vh, a->desc, 16, &gpa) ||
			    !ua_to_gpa(vh, a->avail, 4, &gpa) ||
			    !ua_to_gpa(vh, a->used, 4, &gpa)))
		return -EFAULT;
	ring_change(vh, r);
	r->ua = *a;
	r->addr_set = true;
	return 0;
}

/*
 * A ring's KICK, CALL or ERR fd must be an eventfd: the device and the
 * serving thread write a call fd, and a pipe or a socket the front-end
 * keeps full would block them (a FIFO could even be a path's).  Every
 * eventfd shares one anonymous inode, which vqf_vhost_new() took from its
 * own; where it found none shared, only a type with a name is refused.
 */
static int ring_fd_check(const struct vqf_vhost *vh, int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -EBADFD;
	if (vh->efd_known)
		return st.st_dev == vh->efd_dev && st.st_ino == vh->efd_ino ?
		       0 : -EBADFD;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
	       S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ||
	       S_ISDIR(st.st_mode) ? -EBADFD : 0;
}

/* KICK, CALL, ERR: the fd (fds[0]) goes to ring @which. */
static int set_vring_fd(struct vqf_vhost *vh, u32 req, u64 v, int *fds)
{
	bool nofd = v & VQF_VHOST_VRING_NOFD;
	struct vhring *r;
	int ret;

	if (v & ~(VQF_VHOST_VRING_IDX_MASK | VQF_VHOST_VRING_NOFD))
		return -EINVAL;
	ret = ring_index(vh, v & VQF_VHOST_VRING_IDX_MASK, &r);
	if (ret)
		return ret;
	if (!nofd) {
		ret = ring_fd_check(vh, fds[0]);
		if (ret)
			return ret;
	}
	switch (req) {
	case VQF_VHOST_SET_VRING_KICK:
		if (nofd)
			return -EINVAL;	/* polling mode: not offered */
		ring_change(vh, r);
		if (r->kick_fd >= 0)
			close(r->kick_fd);
		r->kick_fd = fds[0];
		fds[0] = -1;
		return 0;
	case VQF_VHOST_SET_VRING_CALL:
		/* The device keeps writing r->call_fd: swap the file behind
		 * that number.  No fd: interrupts go nowhere.
		 */
		if (nofd) {
			int e = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

			if (e < 0)
				return -ENOMEM;
			ret = dup3(e, r->call_fd, O_CLOEXEC);
			close(e);
		} else {
			ret = dup3(fds[0], r->call_fd, O_CLOEXEC);
		}
		if (ret < 0)
			return -ENOMEM;
		/*
		 * A running ring may have signalled the file that was there
		 * before: without protocol features a ring starts at its
		 * KICK, and QEMU sends CALL after it, so the reply to a
		 * request the guest made at once went to our placeholder.
		 * One interrupt on the new file covers whatever the old one
		 * got (a driver takes a spurious one in its stride); as
		 * libvhost-user does.
		 */
		if (!nofd && r->running)
			eventfd_write(r->call_fd, 1);
		return 0;
	default:
		if (r->err_fd >= 0)
			close(r->err_fd);
		r->err_fd = nofd ? -1 : fds[0];
		if (!nofd)
			fds[0] = -1;
		return 0;
	}
}

/*
 * Handles a checked message.  Fills @reply (payload) and *@rsize when the
 * request has a reply of its own.  Descriptors it keeps are set to -1 in
 * @fds.  Returns 0 or a negative errno (refused, nothing changed).
 */
static int handle(struct vqf_vhost *vh, const struct vqf_vhost_msg *m,
		  int *fds, union vqf_vhost_payload *reply, u32 *rsize)
{
	const struct vqf_vhost_state *s = &m->p.state;
	struct vhring *r;
	u64 v = m->p.u64;
	int ret;

	switch (m->hdr.request) {
	case VQF_VHOST_GET_FEATURES:
		reply->u64 = vh->offered;
		*rsize = sizeof(u64);
		return 0;
	case VQF_VHOST_SET_FEATURES:
		if ((v & ~vh->offered) ||
		    !(v & (1ull << VIRTIO_F_VERSION_1)))
			return -EINVAL;
		if (vh->running && v != vh->features)
			dev_stop(vh, true);
		vh->features = v;
		vh->features_set = true;
		return 0;
	case VQF_VHOST_GET_PROTOCOL_FEATURES:
		reply->u64 = vh->pf_offered;
		*rsize = sizeof(u64);
		return 0;
	case VQF_VHOST_SET_PROTOCOL_FEATURES:
		if (v & ~vh->pf_offered)
			return -EINVAL;
		vh->protocol = v;
		return 0;
	case VQF_VHOST_SET_BACKEND_REQ_FD:
		if (!(vh->protocol & (1ull << VQF_VHOST_PF_BACKEND_REQ)))
			return -ENOPROTOOPT;
		/* An INIT mapping the table on the old channel gives up
		 * (the cancel), so that tlock is not held for its ack; one
		 * after it maps on the new channel.
		 */
		vqf_vshm_cancel(&vh->shm, true);
		pthread_mutex_lock(&vh->tlock);
		ret = vqf_vshm_set_fd(&vh->shm, fds[0]);
		fds[0] = -1;	/* consumed either way */
		/* A refused channel leaves the one in use, table and all. */
		if (!ret)
			vh->table_mapped = false;
		pthread_mutex_unlock(&vh->tlock);
		vqf_vshm_cancel(&vh->shm, false);
		return ret;
	case VQF_VHOST_GET_SHMEM_CONFIG:
		if (!(vh->protocol & (1ull << VQF_VHOST_PF_SHMEM)))
			return -ENOPROTOOPT;
		reply->shmem.memory_sizes[VQF_VHOST_SHMID_CACHE] =
			vh->cfg.dax_window;
		reply->shmem.memory_sizes[VQF_VHOST_SHMID_VERSION] =
			vh->cfg.ver_table_size;
		reply->shmem.nregions = !!vh->cfg.dax_window +
					!!vh->cfg.ver_table_size;
		*rsize = sizeof(reply->shmem);
		return 0;
	case VQF_VHOST_GET_QUEUE_NUM:
		reply->u64 = vh->nq;
		*rsize = sizeof(u64);
		return 0;
	case VQF_VHOST_SET_OWNER:
		return 0;
	case VQF_VHOST_RESET_OWNER:
		dev_stop(vh, false);
		vh->features = 0;
		vh->features_set = false;
		return 0;
	case VQF_VHOST_SET_MEM_TABLE:
		return set_mem_table(vh, &m->p.mem, fds);
	case VQF_VHOST_SET_VRING_NUM:
		ret = ring_index(vh, s->index, &r);
		if (ret)
			return ret;
		if (!s->num || (s->num & (s->num - 1)) ||
		    s->num > vh->cfg.queue_size_max)
			return -EINVAL;
		ring_change(vh, r);
		r->num = s->num;
		return 0;
	case VQF_VHOST_SET_VRING_ADDR:
		return set_vring_addr(vh, &m->p.addr);
	case VQF_VHOST_SET_VRING_BASE:
		ret = ring_index(vh, s->index, &r);
		if (ret)
			return ret;
		if (s->num > 0xffff)
			return -EINVAL;		/* packed ring bits */
		ring_change(vh, r);
		r->base = (u16)s->num;
		return 0;
	case VQF_VHOST_GET_VRING_BASE:
		ret = ring_index(vh, s->index, &r);
		if (ret)
			return ret;
		/* Stopping any ring stops the device (see vqf_vhost.h). */
		ring_stop(vh, r);
		if (r->kick_fd >= 0)
			close(r->kick_fd);
		r->kick_fd = -1;
		reply->state.index = s->index;
		reply->state.num = r->base;
		*rsize = sizeof(reply->state);
		return 0;
	case VQF_VHOST_SET_VRING_KICK:
	case VQF_VHOST_SET_VRING_CALL:
	case VQF_VHOST_SET_VRING_ERR:
		return set_vring_fd(vh, m->hdr.request, v, fds);
	case VQF_VHOST_SET_VRING_ENABLE:
		ret = ring_index(vh, s->index, &r);
		if (ret)
			return ret;
		if (s->num > 1)
			return -EINVAL;
		if (!s->num)
			ring_stop(vh, r);
		r->enabled = s->num;
		return 0;
	}
	return -EOPNOTSUPP;	/* vqf_vhost_msg_check() let it through */
}

/* ---- the connection ---------------------------------------------------- */

static void close_fds(int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Reads exactly @len bytes; 0, -EPIPE at EOF, -errno. */
static int read_full(int fd, void *buf, size_t len)
{
	u8 *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Reads one message with its descriptors.  Returns 1, 0 at a clean EOF
 * before a header, -EPROTO for a stream that cannot be followed, -errno;
 * *@fd_err is -ETOOMANYREFS when descriptors were dropped.
 */
static int read_msg(int fd, struct vqf_vhost_msg *m, int *fds,
		    unsigned int *nfds, int *fd_err)
{
	union {
		char buf[CMSG_SPACE(VQF_VHOST_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { .iov_base = &m->hdr, .iov_len = sizeof(m->hdr) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *c;
	ssize_t n;
	int ret;

	*nfds = 0;
	*fd_err = 0;
	do {
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t k, i;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(f));
			if (*nfds < VQF_VHOST_MAX_FDS)
				fds[(*nfds)++] = f;
			else
				close(f);
		}
	}
	/* The kernel dropped what did not fit: refuse the message. */
	if (mh.msg_flags & MSG_CTRUNC)
		*fd_err = -ETOOMANYREFS;
	if ((size_t)n < sizeof(m->hdr)) {
		ret = read_full(fd, (u8 *)&m->hdr + n, sizeof(m->hdr) - n);
		if (ret)
			goto bad;
	}
	if (m->hdr.size > VQF_VHOST_MAX_PAYLOAD) {
		ret = -EPROTO;
		goto bad;
	}
	memset(&m->p, 0, sizeof(m->p));
	ret = read_full(fd, &m->p, m->hdr.size);
	if (ret)
		goto bad;
	return 1;
bad:
	close_fds(fds, *nfds);
	*nfds = 0;
	return ret == -EPIPE ? -EPROTO : ret;
}

static int send_reply(struct vqf_vhost *vh, int fd, u32 request,
		      const union vqf_vhost_payload *p, u32 size)
{
	u8 buf[VQF_VHOST_HDR_SIZE + sizeof(*p)];
	struct vqf_vhost_hdr h = {
		.request = request,
		.flags = VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY,
		.size = size,
	};
	size_t len = VQF_VHOST_HDR_SIZE + size;
	const u8 *b = buf;

	memcpy(buf, &h, VQF_VHOST_HDR_SIZE);
	memcpy(buf + VQF_VHOST_HDR_SIZE, p, size);
	while (len) {
		ssize_t n = send(fd, b, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += n;
		len -= (size_t)n;
	}
	STAT_INC(vh, replies);
	return 0;
}

/* Whether another message is already waiting on @fd. */
static bool more_pending(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static void reset_session(struct vqf_vhost *vh)
{
	unsigned int i;

	dev_stop(vh, false);
	vqf_fsdev_set_status(vh->dev, 0);
	for (i = 0; i < vh->nq; i++) {
		struct vhring *r = &vh->ring[i];
		int e;

		if (r->kick_fd >= 0)
			close(r->kick_fd);
		if (r->err_fd >= 0)
			close(r->err_fd);
		r->kick_fd = r->err_fd = -1;
		r->num = 0;
		r->addr_set = r->enabled = r->running = false;
		r->base = 0;
		/* Drop the front-end's call eventfd too. */
		e = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (e >= 0) {
			dup3(e, r->call_fd, O_CLOEXEC);
			close(e);
		}
	}
	unmap_all(vh);
	vh->features = 0;
	vh->features_set = false;
	vh->protocol = 0;
	/* The window's unmappings went out in dev_stop(); then the channel
	 * goes with the connection.
	 */
	vqf_vshm_close(&vh->shm);
	pthread_mutex_lock(&vh->tlock);
	vh->table_mapped = false;
	pthread_mutex_unlock(&vh->tlock);
}

/*
 * Waits for the front-end's next message: 0, -EINTR at @stop_fd, -EPIPE
 * when the back-end channel broke, -errno.  Meanwhile the channel is
 * watched too: acks owed are read as they come, and an ack nobody owes
 * breaks it at once.  While a request holds the channel (it reads the
 * acks itself) it is looked at again every 50 ms.
 */
static int wait_msg(struct vqf_vhost *vh, int fd, int stop_fd)
{
	bool busy = false;

	for (;;) {
		struct pollfd p[4] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = stop_fd, .events = POLLIN },
			{ .fd = vh->shm.broken_fd, .events = POLLIN },
			{ .fd = busy ? -1 : vqf_vshm_watch_fd(&vh->shm),
			  .events = POLLIN },
		};
		int n = poll(p, 4, busy ? 50 : -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents & POLLIN)
			return -EINTR;
		/* A front-end that does not serve its own channel is a
		 * broken peer.
		 */
		if (p[2].revents & POLLIN) {
			STAT_INC(vh, channel_breaks);
			STAT_INC(vh, fatal);
			vlog(vh, "connection ends: back-end channel broken");
			return -EPIPE;
		}
		/* The front-end first: its hang-up is the connection's end
		 * even when its channel's EOF came with it.
		 */
		if (p[0].revents)
			return 0;
		busy = p[3].revents && !vqf_vshm_poll(&vh->shm);
		/* A break shows on broken_fd at the next poll. */
	}
}

int vqf_vhost_serve(struct vqf_vhost *vh, int fd, int stop_fd)
{
	struct vqf_vhost_msg m;
	int fds[VQF_VHOST_MAX_FDS];
	int ret;

	for (;;) {
		union vqf_vhost_payload reply;
		unsigned int nfds;
		u32 rsize = 0;
		int fd_err, err;

		if (!more_pending(fd)) {
			/* Drained: what QEMU sent in one go is all here. */
			update(vh);
			ret = wait_msg(vh, fd, stop_fd);
			if (ret)
				break;
		}
		ret = read_msg(fd, &m, fds, &nfds, &fd_err);
		if (ret <= 0) {
			if (ret < 0)
				STAT_INC(vh, fatal);
			vlog(vh, "connection ends: %s",
			     ret ? strerror(-ret) : "front-end closed it");
			break;
		}
		STAT_INC(vh, msgs);
		err = fd_err ? fd_err : vqf_vhost_msg_check(&m, nfds);
		memset(&reply, 0, sizeof(reply));
		if (!err)
			err = handle(vh, &m, fds, &reply, &rsize);
		close_fds(fds, nfds);
		vlog(vh, "%s (%u) size %u fds %u idx %u: %s",
		     vqf_vhost_request_name(m.hdr.request), m.hdr.request,
		     m.hdr.size, nfds, m.hdr.size >= 4 ? m.p.state.index : 0,
		     err ? strerror(-err) : "ok");
		if (err) {
			count_refusal(vh, err);
			rsize = 0;
		}
		ret = 0;
		if (rsize)
			ret = send_reply(vh, fd, m.hdr.request, &reply, rsize);
		else if ((m.hdr.flags & VQF_VHOST_FLAG_NEED_REPLY) &&
			 (vh->protocol & (1ull << VQF_VHOST_PF_REPLY_ACK)) &&
			 err != -EPROTO) {
			reply.u64 = err ? (u64)-err : 0;
			if (err)
				STAT_INC(vh, acks_failed);
			ret = send_reply(vh, fd, m.hdr.request, &reply,
					 sizeof(u64));
		}
		if (ret) {
			STAT_INC(vh, fatal);
			break;
		}
	}
	reset_session(vh);
	return ret;
}

/* ---- setup ------------------------------------------------------------- */

/* The device's window ops: the caller's file lookups, our channel. */
static int vh_file_fd(void *ctx, u64 nodeid, u64 fh)
{
	struct vqf_vhost *vh = ctx;

	if (!vh->cfg.dax_ops || !vh->cfg.dax_ops->file_fd)
		return -ENOSYS;
	return vh->cfg.dax_ops->file_fd(vh->cfg.dax_ctx, nodeid, fh);
}

static int vh_node_fd(void *ctx, u64 nodeid, bool write)
{
	struct vqf_vhost *vh = ctx;

	return vh->cfg.dax_ops->node_fd(vh->cfg.dax_ctx, nodeid, write);
}

static void vh_cancel(void *ctx, bool on)
{
	struct vqf_vhost *vh = ctx;

	vqf_vshm_cancel(&vh->shm, on);
}

static int vh_map(void *ctx, int fd, u64 foff, u64 moff, u64 len,
		  bool writable)
{
	struct vqf_vhost *vh = ctx;

	return vqf_vshm_map(&vh->shm, VQF_VHOST_SHMID_CACHE, fd, foff, moff,
			    len, writable, true);
}

static int vh_unmap(void *ctx, u64 moff, u64 len, bool wait)
{
	struct vqf_vhost *vh = ctx;

	return vqf_vshm_unmap(&vh->shm, VQF_VHOST_SHMID_CACHE, moff, len,
			      wait);
}

/*
 * The table for an INIT that asks for it: mapped, and acked by the
 * front-end, before the INIT goes on.  Returns 0 when it is in place
 * (now or earlier this run), else why not.
 */
static int table_map(struct vqf_vhost *vh)
{
	int ret = 0;

	pthread_mutex_lock(&vh->tlock);
	if (!vh->table_offer) {
		ret = -ENODEV;	/* this start serves no regions */
	} else if (!vh->table_mapped) {
		ret = vqf_vshm_map(&vh->shm, VQF_VHOST_SHMID_VERSION,
				   vh->cfg.ver_table_fd, 0, 0,
				   vh->cfg.ver_table_size, false, true);
		if (!ret) {
			vh->table_mapped = true;
			STAT_INC(vh, table_maps);
		}
	}
	pthread_mutex_unlock(&vh->tlock);
	return ret;
}

/* Where fuse_init_in's flags and flags2 are in a request. */
#define INIT_FLAGS	(sizeof(struct fuse_in_header) + \
			 offsetof(struct fuse_init_in, flags))
#define INIT_FLAGS2	(sizeof(struct fuse_in_header) + \
			 offsetof(struct fuse_init_in, flags2))

/*
 * The device's requests, with a version table configured.  An INIT
 * asking for the table (FUSE_INIT_EXT, VQF_FUSE_INIT_SHARED_VERSION in
 * flags2, the hub's test) is answered with the promise of it only once
 * the front-end has acked the table's map: a guest told so reads the
 * region at once, and a region the front-end has not filled yet faults.
 * This thread may wait for that ack (a device thread, as SETUPMAPPING's
 * does); when the map fails - no channel or none served at this start,
 * refused, cancelled by a stop, timed out - the request (the device's
 * private copy) stops asking, so the guest is answered without the table
 * and runs without it.
 */
static int vh_serve(void *ctx, void *req, size_t len,
		    vqf_backend_reply_fn reply, void *rctx)
{
	struct vqf_vhost *vh = ctx;
	struct fuse_in_header ih;
	u8 *m = req;
	u32 flags, flags2;
	int ret;

	if (len < INIT_FLAGS2 + sizeof(flags2))
		goto serve;
	memcpy(&ih, m, sizeof(ih));
	memcpy(&flags, m + INIT_FLAGS, sizeof(flags));
	memcpy(&flags2, m + INIT_FLAGS2, sizeof(flags2));
	if (ih.opcode != FUSE_INIT || !(flags & FUSE_INIT_EXT) ||
	    !(flags2 & VQF_FUSE_INIT_SHARED_VERSION))
		goto serve;
	ret = table_map(vh);
	if (ret) {
		flags2 &= ~VQF_FUSE_INIT_SHARED_VERSION;
		memcpy(m + INIT_FLAGS2, &flags2, sizeof(flags2));
		STAT_INC(vh, table_unoffered);
		vlog(vh, "INIT answered without the version table: %s",
		     strerror(-ret));
	}
serve:
	if (vh->cfg.serve)
		return vh->cfg.serve(vh->cfg.serve_ctx, req, len, reply, rctx);
	return vqf_backend_process(vh->cfg.be, req, len, reply, rctx);
}

int vqf_vhost_new(const struct vqf_vhost_cfg *cfg, struct vqf_vhost **out)
{
	struct vqf_fsdev_cfg dc = { 0 };
	struct vqf_vhost *vh;
	unsigned int i;
	int ret;

	if (!cfg || (!cfg->be && !cfg->serve) || cfg->num_request_queues >
	    VQF_VHOST_MAX_QUEUES - 1 ||
	    (cfg->ver_table_size && cfg->ver_table_fd < 0))
		return -EINVAL;
	vh = calloc(1, sizeof(*vh));
	if (!vh)
		return -ENOMEM;
	if (vqf_vshm_init(&vh->shm)) {
		free(vh);
		return -ENOMEM;
	}
	if (cfg->shmem_timeout_ms)
		vh->shm.timeout_ms = cfg->shmem_timeout_ms;
	vh->cfg = *cfg;
	if (!vh->cfg.num_request_queues)
		vh->cfg.num_request_queues = 1;
	if (!vh->cfg.queue_size_max)
		vh->cfg.queue_size_max = 1024;
	if (!vh->cfg.tag)
		vh->cfg.tag = "vqfuse";
	pthread_mutex_init(&vh->slock, NULL);
	pthread_mutex_init(&vh->tlock, NULL);
	vqf_gmem_init(&vh->mem);
	vh->nq = 1 + vh->cfg.num_request_queues;
	for (i = 0; i < VQF_VHOST_MAX_QUEUES; i++)
		vh->ring[i].kick_fd = vh->ring[i].err_fd =
			vh->ring[i].call_fd = -1;
	/* Only the rings offered get a call eventfd: messages for any
	 * other are refused (ring_of()).
	 */
	for (i = 0; i < vh->nq; i++) {
		vh->ring[i].call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (vh->ring[i].call_fd < 0) {
			ret = -errno;
			while (i--)
				close(vh->ring[i].call_fd);
			pthread_mutex_destroy(&vh->tlock);
			pthread_mutex_destroy(&vh->slock);
			vqf_vshm_fini(&vh->shm);
			free(vh);
			return ret;
		}
	}
	{
		struct stat a, b;

		/* nq >= 2: two of our own eventfds */
		if (!fstat(vh->ring[0].call_fd, &a) &&
		    !fstat(vh->ring[1].call_fd, &b) &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
			vh->efd_dev = a.st_dev;
			vh->efd_ino = a.st_ino;
			vh->efd_known = true;
		}
	}
	dc.tag = vh->cfg.tag;
	dc.num_request_queues = vh->cfg.num_request_queues;
	dc.queue_size_max = vh->cfg.queue_size_max;
	dc.threads = vh->cfg.threads;
	dc.poll_ns = vh->cfg.poll_ns;
	dc.readonly = vh->cfg.readonly;
	dc.be = vh->cfg.be;
	dc.serve = vh->cfg.serve;
	dc.serve_ctx = vh->cfg.serve_ctx;
	if (vh->cfg.ver_table_size) {
		dc.serve = vh_serve;
		dc.serve_ctx = vh;
	}
	dc.trace = dev_trace;
	dc.trace_ctx = vh;
	if (vh->cfg.dax_window) {
		vh->dops.file_fd = vh_file_fd;
		if (vh->cfg.dax_ops && vh->cfg.dax_ops->node_fd)
			vh->dops.node_fd = vh_node_fd;
		vh->dops.map = vh_map;
		vh->dops.unmap = vh_unmap;
		vh->dops.cancel = vh_cancel;
		dc.dax_window = vh->cfg.dax_window;
		dc.dax_ops = &vh->dops;
		dc.dax_ctx = vh;
		dc.dax_writable = vh->cfg.dax_writable;
		dc.dax_writable_ctx = vh->cfg.dax_writable_ctx;
		dc.dax_inode_min = vh->cfg.dax_inode_min;
	}
	ret = vqf_fsdev_new(&dc, &vh->mem, &vh->dev);
	if (ret) {
		vh->dev = NULL;
		vqf_vhost_free(vh);
		return ret;
	}
	vh->pf_offered = PF_OFFERED;
	if (vh->cfg.dax_window || vh->cfg.ver_table_size)
		vh->pf_offered |= PF_SHMEM_ALL;
	vh->offered = vqf_fsdev_features(vh->dev) |
		      (1ull << VQF_VHOST_F_PROTOCOL_FEATURES);
	/* No notification queue: QEMU's vhost-user-fs never offers it. */
	vh->offered &= ~(1ull << VIRTIO_FS_F_NOTIFICATION);
	*out = vh;
	return 0;
}

void vqf_vhost_free(struct vqf_vhost *vh)
{
	unsigned int i;

	if (!vh)
		return;
	if (vh->dev)
		reset_session(vh);
	vqf_fsdev_free(vh->dev);
	for (i = 0; i < VQF_VHOST_MAX_QUEUES; i++)
		if (vh->ring[i].call_fd >= 0)
			close(vh->ring[i].call_fd);
	pthread_mutex_destroy(&vh->tlock);
	pthread_mutex_destroy(&vh->slock);
	vqf_vshm_fini(&vh->shm);
	free(vh);
}

int vqf_vhost_listen(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

int vqf_vhost_accept(int lfd, int stop_fd)
{
	struct pollfd p[2] = {
		{ .fd = lfd, .events = POLLIN },
		{ .fd = stop_fd, .events = POLLIN },
	};
	int fd;

	for (;;) {
		if (poll(p, stop_fd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (stop_fd >= 0 && (p[1].revents & POLLIN))
			return -EINTR;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}
