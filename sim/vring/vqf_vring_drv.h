/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vring_drv.h - the driver (guest) half of a split virtqueue.
 *
 * Modelled on Linux drivers/virtio/virtio_ring.c: buffers are added as
 * lists of guest-address segments with an opaque cookie, published on the
 * available ring, and come back through get_buf with the length the device
 * wrote.  The driver keeps its own copy of every chain (free list, lengths,
 * cookies) and never reads back the descriptor table, so a device that
 * scribbles on it cannot confuse the driver; everything it reads from the
 * used ring is validated (see the table in vqf_vring.h).
 *
 * Concurrency: one queue, one thread at a time (the caller serialises all
 * calls on a queue, as Linux drivers do with their queue lock).  The device
 * half may run concurrently in another thread.
 *
 * Typical completion loop (the seeds' virtio_fs_requests_done_work):
 *
 *	do {
 *		vqf_vring_drv_disable_cb(vq);
 *		while (vqf_vring_drv_get_buf(vq, &cookie, &len) > 0)
 *			complete(cookie, len);
 *	} while (!vqf_vring_drv_enable_cb(vq));
 */
#ifndef VQF_VRING_DRV_H
#define VQF_VRING_DRV_H

#include "vqf_vring.h"
#include "vqf_gmem.h"

/* A buffer piece in guest memory, as the driver hands it over. */
struct vqf_vring_gseg {
	u64 addr;
	u32 len;
};

/*
 * Memory for indirect descriptor tables, in guest memory (the device reads
 * them through its map).  alloc returns a table of @n descriptors or
 * -ENOMEM, in which case the driver falls back to direct descriptors.  Both
 * ops run in the caller's thread, under its queue serialisation.
 * vqf_vring_ipool (below) is a ready-made implementation.
 */
struct vqf_vring_indirect_ops {
	int (*alloc)(void *priv, unsigned int n, struct vring_desc **hva,
		     u64 *gpa);
	void (*free)(void *priv, struct vring_desc *hva, u64 gpa,
		     unsigned int n);
	void *priv;
};

/* Counters; the caller owns them and reads them when the queue is idle. */
struct vqf_vring_drv_stats {
	u64 bufs_added;		/* buffers published */
	u64 descs_added;	/* descriptors written, indirect ones too */
	u64 indirect_added;	/* buffers that went through a table */
	u64 bufs_used;		/* buffers returned by get_buf */
	u64 kicks_sent;		/* kick_prepare said "notify" */
	u64 kicks_suppressed;	/* ... said "no need" (device asked) */
	u64 detached;		/* cookies handed back by detach_unused */
	u64 used_len_clamped;	/* used len > writable bytes, clamped */
	u64 err_used_idx;	/* -EPROTO */
	u64 err_used_range;	/* -ERANGE */
	u64 err_used_not_head;	/* -EBADSLT */
	u64 err_used_not_inflight; /* -ENOENT */
	u64 err_used_twice;	/* -EALREADY */
	u64 err_used_len;	/* -EMSGSIZE (strict mode) */
};

/* Reject instead of clamping a used len above the writable bytes. */
#define VQF_VRING_DRV_STRICT_LEN	0x1

struct vqf_vring_drv_cfg {
	unsigned int num;		/* power of two, 1..32768 */
	u64 features;			/* subset of VQF_VRING_FEATURES */
	struct vqf_vring_addr addr;	/* where the rings are */
	const struct vqf_gmem *mem;	/* must map the rings contiguously */
	/* Initial avail/used idx (tests of wrap-around); create the device
	 * with the same value.
	 */
	u16 start_idx;
	unsigned int flags;		/* VQF_VRING_DRV_* */
	/* Use an indirect table for buffers of at least this many segments
	 * (0 means 2, which is what Linux does); a buffer that does not fit
	 * in the free descriptors uses one regardless.  Needs the feature
	 * and @iops.
	 */
	unsigned int indirect_min;
	const struct vqf_vring_indirect_ops *iops;
	struct vqf_vring_drv_stats *stats;	/* NULL: kept internally */
};

struct vqf_vring_drv;

/**
 * vqf_vring_drv_create() - set up the driver half and initialise the rings.
 * @cfg: configuration, copied
 * @out: the new queue
 *
 * Zeroes the three ring areas and sets avail->idx and used->idx to
 * @cfg->start_idx (writing used->idx is what a freshly reset device would
 * hold; it lets tests start near 65535).
 *
 * Return: 0; -EINVAL for a bad num, unknown features or misaligned rings;
 * -EFAULT if a ring is not inside one region of @cfg->mem; -ENOMEM.
 */
int vqf_vring_drv_create(const struct vqf_vring_drv_cfg *cfg,
			 struct vqf_vring_drv **out);

/* Free the queue; buffers still in flight are forgotten. */
void vqf_vring_drv_destroy(struct vqf_vring_drv *vq);

/**
 * vqf_vring_drv_add() - make one buffer available to the device.
 * @vq:     the queue
 * @rd:     segments the device reads (driver to device), may be NULL if @nrd 0
 * @nrd:    how many
 * @wr:     segments the device writes, may be NULL if @nwr 0
 * @nwr:    how many
 * @cookie: non-NULL, returned by get_buf or detach_unused
 *
 * The buffer is visible to the device at once; notify it when
 * vqf_vring_drv_kick_prepare() says so.
 *
 * Return: 0; -EINVAL for no segments, a NULL cookie or a zero-length
 * segment; -EFBIG if the segments add up to more than 2^32 bytes; -E2BIG
 * for more than num segments; -ENOSPC if the free descriptors do not
 * suffice (retry after get_buf); -EIO if the queue is broken.
 */
int vqf_vring_drv_add(struct vqf_vring_drv *vq,
		      const struct vqf_vring_gseg *rd, unsigned int nrd,
		      const struct vqf_vring_gseg *wr, unsigned int nwr,
		      void *cookie);

/**
 * vqf_vring_drv_kick_prepare() - should the device be notified?
 *
 * Honours the device's avail_event (VIRTIO_RING_F_EVENT_IDX) or its
 * VRING_USED_F_NO_NOTIFY flag, and says no when nothing was added since the
 * previous call.  Counts kicks_sent / kicks_suppressed.
 *
 * Return: true if the caller must notify the device now.
 */
bool vqf_vring_drv_kick_prepare(struct vqf_vring_drv *vq);

/**
 * vqf_vring_drv_get_buf() - take the next used buffer.
 * @vq:     the queue
 * @cookie: set to the buffer's cookie
 * @len:    set to the bytes the device wrote (clamped to the buffer's
 *          writable bytes unless VQF_VRING_DRV_STRICT_LEN)
 *
 * Return: 1 and a buffer; 0 if none is pending; a negative errno from the
 * driver table in vqf_vring.h if the used ring is corrupt (the queue is
 * then broken); -EIO if it already was.
 */
int vqf_vring_drv_get_buf(struct vqf_vring_drv *vq, void **cookie, u32 *len);

/* Whether the device has published used entries not yet taken. */
bool vqf_vring_drv_more_used(const struct vqf_vring_drv *vq);

/*
 * The device's used->idx as it is now, read once and touching no driver
 * state: any thread may call it without the queue's serialisation, e.g.
 * to spin until it moves before taking the lock for get_buf.
 */
u16 vqf_vring_drv_used_idx(const struct vqf_vring_drv *vq);

/* Ask the device not to interrupt (best effort: it may still). */
void vqf_vring_drv_disable_cb(struct vqf_vring_drv *vq);

/**
 * vqf_vring_drv_enable_cb() - ask for an interrupt on the next used entry.
 *
 * Return: true if nothing is pending, so the caller may wait for the
 * interrupt; false if used entries arrived meanwhile: take them with
 * get_buf and call again (the re-check closes the race with the device).
 */
bool vqf_vring_drv_enable_cb(struct vqf_vring_drv *vq);

/**
 * vqf_vring_drv_detach_unused() - take back a buffer the device never
 * returned.  Only once the device is stopped (reset or gone).
 *
 * Return: a cookie, or NULL when none is left.
 */
void *vqf_vring_drv_detach_unused(struct vqf_vring_drv *vq);

/**
 * vqf_vring_drv_reset() - reinitialise the rings after a device reset.
 *
 * Clears the broken state and starts again from the configured start_idx.
 *
 * Return: 0, or -EBUSY while buffers are still attached (detach them).
 */
int vqf_vring_drv_reset(struct vqf_vring_drv *vq);

bool vqf_vring_drv_is_broken(const struct vqf_vring_drv *vq);
unsigned int vqf_vring_drv_num_free(const struct vqf_vring_drv *vq);
const struct vqf_vring_drv_stats *
vqf_vring_drv_stats(const struct vqf_vring_drv *vq);

/*
 * A pool of indirect tables preallocated in guest memory: @slots tables of
 * @per_slot descriptors each, from @hva/@gpa (16-byte aligned, slots *
 * per_slot * 16 bytes).  Plug it in with vqf_vring_ipool_ops().
 */
struct vqf_vring_ipool {
	struct vring_desc *hva;
	u64 gpa;
	unsigned int slots, per_slot, nfree;
	unsigned int *free;	/* stack of free slot numbers */
};

/* Return: 0, -EINVAL (zero sizes, misaligned), -ENOMEM. */
int vqf_vring_ipool_init(struct vqf_vring_ipool *p, void *hva, u64 gpa,
			 unsigned int slots, unsigned int per_slot);
void vqf_vring_ipool_fini(struct vqf_vring_ipool *p);
/* Fills @ops to allocate from @p. */
void vqf_vring_ipool_ops(struct vqf_vring_ipool *p,
			 struct vqf_vring_indirect_ops *ops);

#endif /* VQF_VRING_DRV_H */
