/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vring_dev.h - the device (host) half of a split virtqueue.
 *
 * Everything the device knows comes from its configuration (queue size,
 * ring addresses, negotiated features, starting indices: what a vhost-user
 * back-end receives) and from guest memory read through a vqf_gmem map.  It
 * assumes nothing the driver half set up, so it runs unchanged on memory a
 * real guest (or a fuzzer) wrote.  All driver-written input is validated
 * before use; each violation has its own errno and counter (table in
 * vqf_vring.h).
 *
 * Chains are handed out as segment lists (struct vqf_chain): host pointer,
 * guest address and length of each piece, readable pieces first.  A
 * descriptor that crosses from one guest memory region into an adjacent one
 * becomes two segments.
 *
 * Concurrency: the pop side (pop, avail_pending, enable/disable_notify) and
 * the push side (push, need_notify) touch disjoint state, so one thread may
 * pop while another pushes; each side must be serialised by the caller (a
 * lock per side for a pool of workers).  The driver may run concurrently.
 *
 * Typical service loop (see vqf_vring_thread.h for a ready-made one):
 *
 *	for (;;) {
 *		vqf_vring_dev_disable_notify(dev);
 *		while ((r = vqf_vring_dev_pop(dev, &c)) > 0 ||
 *		       r == -ENODATA || r == -ENOBUFS) {
 *			len = r > 0 ? serve(&c) : 0;
 *			vqf_vring_dev_push(dev, c.head, len);
 *			if (vqf_vring_dev_need_notify(dev))
 *				interrupt the driver;
 *		}
 *		if (r < 0)
 *			break;			// broken: needs a reset
 *		if (vqf_vring_dev_enable_notify(dev))
 *			wait for a kick;
 *	}
 */
#ifndef VQF_VRING_DEV_H
#define VQF_VRING_DEV_H

#include "vqf_vring.h"
#include "vqf_gmem.h"

/* Counters; the caller owns them and reads them when the queue is idle. */
struct vqf_vring_dev_stats {
	/* pop side */
	u64 chains;		/* chains popped successfully */
	u64 descs;		/* descriptors walked, table entries too */
	u64 indirect;		/* indirect tables followed */
	u64 split_segs;		/* extra segments from region crossings */
	u64 notify_enabled;	/* enable_notify calls (driver may kick) */
	u64 err_avail_idx;	/* -EPROTO */
	u64 err_head;		/* -ERANGE */
	u64 err_next;		/* -ECHRNG */
	u64 err_loop;		/* -ELOOP */
	u64 err_rd_after_wr;	/* -EILSEQ */
	u64 err_overflow;	/* -EOVERFLOW */
	u64 err_fault;		/* -EFAULT */
	u64 err_zero_len;	/* -ENODATA */
	u64 err_nested_indirect; /* -EMLINK */
	u64 err_indirect_zero;	/* -ENOMSG */
	u64 err_indirect_align;	/* -EBADR */
	u64 err_indirect_big;	/* -E2BIG */
	u64 err_indirect_next;	/* -EBADRQC */
	u64 err_indirect_unneg;	/* -EOPNOTSUPP */
	u64 err_total_len;	/* -EFBIG */
	u64 err_no_bufs;	/* -ENOBUFS */
	u64 err_peer_fault;	/* -EHWPOISON: SIGBUS on guest memory (its
				 * file shrunk under the mapping), any entry
				 * point; the queue is broken */
	/* push side, on its own cache line (pop and push may be in
	 * different threads)
	 */
	_Alignas(64) u64 pushed;	/* used entries written */
	u64 err_push;		/* push of an id >= num (caller bug) */
	u64 interrupts_sent;	/* need_notify said "notify" */
	u64 interrupts_suppressed; /* ... said "no need" (driver asked) */
};

struct vqf_vring_dev_cfg {
	unsigned int num;		/* power of two, 1..32768 */
	u64 features;			/* subset of VQF_VRING_FEATURES */
	struct vqf_vring_addr addr;	/* guest addresses of the rings */
	const struct vqf_gmem *mem;	/* the only way to guest memory */
	u16 last_avail_idx;	/* first avail entry to pop (SET_VRING_BASE) */
	u16 used_idx;		/* next used entry to write */
	struct vqf_vring_dev_stats *stats;	/* NULL: kept internally */
};

struct vqf_vring_dev;

/**
 * vqf_vring_dev_create() - attach the device half to rings in guest memory.
 * @cfg: configuration, copied; @cfg->mem must outlive the queue
 * @out: the new queue
 *
 * Reads nothing from the rings yet.
 *
 * Return: 0; -EINVAL for a num that is not a power of two up to 32768,
 * unknown features or ring addresses misaligned in the guest or host view;
 * -EFAULT if a ring is not inside one region of the map; -ENOMEM.
 */
int vqf_vring_dev_create(const struct vqf_vring_dev_cfg *cfg,
			 struct vqf_vring_dev **out);
void vqf_vring_dev_destroy(struct vqf_vring_dev *dev);

/**
 * vqf_vring_dev_pop() - take the next available chain.
 * @dev: the queue
 * @c:   @c->seg and @c->cap set by the caller; the rest is filled
 *
 * Return: 1 with a chain in @c; 0 if the available ring is empty;
 * -ENODATA or -ENOBUFS if the chain was consumed but cannot be served
 * (c->head is valid: push it back, usually with length 0); another
 * negative errno from the device table in vqf_vring.h if the driver broke
 * the protocol (the queue is then broken); -EIO if it already was;
 * -EHWPOISON if guest memory faulted (SIGBUS: its file was shrunk), which
 * breaks the queue.  Every entry point here recovers from such a fault the
 * same way (vqf_memguard.h).
 */
int vqf_vring_dev_pop(struct vqf_vring_dev *dev, struct vqf_chain *c);

/**
 * vqf_vring_dev_push() - return a chain to the driver.
 * @dev:  the queue
 * @head: c->head of a popped chain
 * @len:  bytes written into the chain's writable segments
 *
 * Visible to the driver at once; interrupt it if need_notify says so.
 *
 * Return: 0; -EINVAL if @head >= num; -EIO if the queue is broken.
 */
int vqf_vring_dev_push(struct vqf_vring_dev *dev, u16 head, u32 len);

/**
 * vqf_vring_dev_need_notify() - should the driver be interrupted now?
 *
 * Call after one or more pushes.  Honours used_event (EVENT_IDX) or
 * VRING_AVAIL_F_NO_INTERRUPT, and NOTIFY_ON_EMPTY when negotiated.  Counts
 * interrupts_sent / interrupts_suppressed.
 *
 * Return: true if the caller must interrupt the driver.
 */
bool vqf_vring_dev_need_notify(struct vqf_vring_dev *dev);

/* Tell the driver kicks are not needed (we are polling anyway). */
void vqf_vring_dev_disable_notify(struct vqf_vring_dev *dev);

/**
 * vqf_vring_dev_enable_notify() - ask for a kick on the next buffer.
 *
 * Return: true if the available ring is empty, so the caller may sleep
 * until a kick; false if buffers arrived meanwhile (pop them first).
 */
bool vqf_vring_dev_enable_notify(struct vqf_vring_dev *dev);

/* Whether the driver has published chains not yet popped. */
bool vqf_vring_dev_avail_pending(const struct vqf_vring_dev *dev);

bool vqf_vring_dev_is_broken(const struct vqf_vring_dev *dev);

/* Forget the broken state and restart from the given indices (reset). */
void vqf_vring_dev_reset(struct vqf_vring_dev *dev, u16 last_avail_idx,
			 u16 used_idx);

const struct vqf_vring_dev_stats *
vqf_vring_dev_stats(const struct vqf_vring_dev *dev);

#endif /* VQF_VRING_DEV_H */
