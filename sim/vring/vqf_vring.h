/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vring.h - what both halves of a split virtqueue (virtio 1.2, 2.7)
 * share: ring placement, features, segment lists and the error codes.
 *
 * The driver half (vqf_vring_drv.h) plays the guest: it fills descriptors
 * with guest addresses and publishes them on the available ring.  The device
 * half (vqf_vring_dev.h) plays the host: it reaches the rings and buffers
 * only through a guest memory map (vqf_gmem.h), treats everything the
 * driver wrote as hostile, and hands chains out as segment lists.  The two
 * halves share nothing but guest memory, so either can be replaced by a real
 * peer (a Linux guest, a vhost-user front-end).
 *
 * Ring indices in shared memory are read and written with single atomic
 * accesses (READ_ONCE/WRITE_ONCE from vqf_compat.h) and ordered with the
 * barriers the spec asks for; each barrier names its partner.
 *
 * Error codes, shared by both halves (each also has a counter in the
 * half's stats struct; "fatal" ones mark the queue broken, after which
 * every call returns -EIO until reset):
 *
 *   device half, popping a chain                       fatal
 *   -EPROTO     avail idx moved more than num past last_avail   yes
 *   -ERANGE     head index >= num                                yes
 *   -ECHRNG     next index >= num (or >= indirect table size)    yes
 *   -ELOOP      chain longer than num descriptors (a loop)       yes
 *   -EILSEQ     readable descriptor after a writable one         yes
 *   -EOVERFLOW  addr + len wraps past 2^64                       yes
 *   -EFAULT     buffer or indirect table outside guest memory    yes
 *   -ENODATA    zero-length descriptor                           no
 *   -EMLINK     indirect descriptor inside an indirect table     yes
 *   -ENOMSG     indirect table of length 0                       yes
 *   -EBADR      indirect table length not a multiple of 16       yes
 *   -E2BIG      indirect table with more than num entries        yes
 *   -EBADRQC    INDIRECT and NEXT set on the same descriptor     yes
 *   -EOPNOTSUPP INDIRECT used but VIRTIO_RING_F_INDIRECT_DESC
 *               was not negotiated                                yes
 *   -EFBIG      total chain length over 2^32 bytes               yes
 *   -ENOBUFS    chain needs more segments than the caller gave   no
 *
 *   driver half, reading the used ring                  fatal
 *   -EPROTO     used idx moved past the buffers in flight       yes
 *   -ERANGE     used id >= num                                   yes
 *   -EBADSLT    used id is inside an in-flight chain, not a head yes
 *   -ENOENT     used id was never made available                 yes
 *   -EALREADY   used id was already completed (twice)            yes
 *   -EMSGSIZE   used len > chain's writable bytes, only with
 *               VQF_VRING_DRV_STRICT_LEN; otherwise the length is
 *               clamped and counted                              yes
 *
 *   -EIO        the queue is broken (either half)
 *
 * "Non-fatal" device errors consume the chain: its head is reported so the
 * device can return it to the driver (vqf_vring_dev_push(dev, head, 0)).
 */
#ifndef VQF_VRING_H
#define VQF_VRING_H

#include "vqf_compat.h"
#include <linux/virtio_config.h>

/* Feature bits understood by both halves (pass as a mask of 1ULL << bit). */
#define VQF_VRING_FEATURES ((1ULL << VIRTIO_RING_F_EVENT_IDX) | \
			    (1ULL << VIRTIO_RING_F_INDIRECT_DESC) | \
			    (1ULL << VIRTIO_F_NOTIFY_ON_EMPTY))

#define VQF_VRING_MAX_NUM	32768

/* Guest addresses of the three ring parts. */
struct vqf_vring_addr {
	u64 desc;	/* descriptor table, 16-byte aligned, 16 * num bytes */
	u64 avail;	/* available ring, 2-byte aligned, 6 + 2 * num bytes */
	u64 used;	/* used ring, 4-byte aligned, 6 + 8 * num bytes */
};

static inline u64 vqf_vring_desc_bytes(unsigned int num)
{
	return 16ULL * num;
}

static inline u64 vqf_vring_avail_bytes(unsigned int num)
{
	return 6 + 2ULL * num;		/* flags, idx, ring[num], used_event */
}

static inline u64 vqf_vring_used_bytes(unsigned int num)
{
	return 6 + 8ULL * num;		/* flags, idx, ring[num], avail_event */
}

/**
 * vqf_vring_layout() - place a queue contiguously from @base.
 * @num:   queue size, a power of two <= VQF_VRING_MAX_NUM
 * @base:  guest address of the area, 16-byte aligned
 * @align: alignment of the used ring (4 for virtio 1.x, 4096 legacy)
 * @a:     filled with the three addresses
 *
 * Return: bytes the area needs (0 if @num or @align is invalid).
 */
u64 vqf_vring_layout(unsigned int num, u64 base, u64 align,
		     struct vqf_vring_addr *a);

/*
 * One piece of a buffer as the device sees it.  A descriptor becomes one
 * segment, or several when it crosses adjacent guest memory regions.
 */
struct vqf_seg {
	void *hva;	/* host pointer to the bytes */
	u64 gpa;	/* guest address of the same bytes */
	u32 len;	/* > 0 */
};

/*
 * A popped descriptor chain.  The caller sets @seg and @cap; pop fills the
 * rest.  Readable segments (driver to device) come first, then writable
 * ones, as the spec orders them.
 */
struct vqf_chain {
	struct vqf_seg *seg;	/* caller's array ... */
	unsigned int cap;	/* ... of this many entries */
	unsigned int nr_rd;	/* seg[0 .. nr_rd) are readable */
	unsigned int nr_wr;	/* seg[nr_rd .. nr_rd + nr_wr) are writable */
	u64 rd_bytes;		/* sum of readable lengths */
	u64 wr_bytes;		/* sum of writable lengths */
	unsigned int ndesc;	/* descriptors walked, indirect ones included */
	u16 head;		/* id to hand back with vqf_vring_dev_push() */
	bool indirect;		/* the chain went through an indirect table */
};

static inline struct vqf_seg *vqf_chain_rd(const struct vqf_chain *c)
{
	return c->seg;
}

static inline struct vqf_seg *vqf_chain_wr(const struct vqf_chain *c)
{
	return c->seg + c->nr_rd;
}

#endif /* VQF_VRING_H */
