/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_forget.h - FORGET and BATCH_FORGET requests for the hiprio queue.
 *
 * Forgets have no reply and may not be lost, so the guest queues them
 * (struct vqf_forget_queue, caller-owned slots) and sends them on the
 * hiprio queue as the ring allows.  A request is one contiguous buffer
 * (one device-readable descriptor, as Linux 6.1's virtio_fs_forget_req):
 *
 *   FORGET:        fuse_in_header{nodeid} + fuse_forget_in
 *   BATCH_FORGET:  fuse_in_header{nodeid 0} + fuse_batch_forget_in{count}
 *                  + count * fuse_forget_one
 *
 * Sending is two-phase so that a full virtqueue loses nothing:
 * vqf_forget_build() lays out the entries at the head of the queue without
 * removing them; after the buffer was added to the ring, the caller calls
 * vqf_forget_consume() with the number taken.
 *
 * No locking inside: the caller serialises pushes and builds (Linux does
 * it under fiq->lock).
 */
#ifndef VQF_FORGET_H
#define VQF_FORGET_H

#include "vqf_compat.h"

/*
 * Every FUSE server accepts requests of FUSE_MIN_READ_BUFFER bytes (it is
 * the smallest read buffer /dev/fuse allows), so a batch of that size is
 * safe without knowing the server: (8192 - 48) / 16 = 509 entries.
 */
#define VQF_FORGET_DEFAULT_MAX_REQ	FUSE_MIN_READ_BUFFER

/* Size of a single FORGET request. */
#define VQF_FORGET_ONE_SIZE \
	(sizeof(struct fuse_in_header) + sizeof(struct fuse_forget_in))
/* Size of a BATCH_FORGET request before its entries. */
#define VQF_FORGET_BATCH_HDR_SIZE \
	(sizeof(struct fuse_in_header) + sizeof(struct fuse_batch_forget_in))

/* One FORGET, laid out as it goes on the wire. */
struct vqf_forget_req {
	struct fuse_in_header ih;
	struct fuse_forget_in arg;
};

/**
 * struct vqf_forget_queue - FIFO of pending forgets over caller memory
 * @slots: caller's array of @cap entries.
 * @cap: its size.
 * @head: index of the oldest entry.
 * @count: entries queued.
 */
struct vqf_forget_queue {
	struct fuse_forget_one *slots;
	u32 cap;
	u32 head;
	u32 count;
};

/**
 * vqf_forget_queue_init() - set up an empty queue
 * @q: queue.
 * @slots: caller's memory for @cap entries, owned by the caller and used
 *	until it stops using @q.
 * @cap: number of slots.
 *
 * Return: 0, or -EINVAL if @slots is NULL or @cap is 0.
 */
int vqf_forget_queue_init(struct vqf_forget_queue *q,
			  struct fuse_forget_one *slots, u32 cap);

/**
 * vqf_forget_queue_push() - queue a forget
 * @q: queue.
 * @nodeid: inode to forget; not 0.
 * @nlookup: lookups to drop; not 0.
 *
 * Return: 0; -EINVAL for a zero @nodeid or @nlookup; -ENOSPC when full
 * (the caller sends first, or grows its slots).
 */
int vqf_forget_queue_push(struct vqf_forget_queue *q, u64 nodeid,
			  u64 nlookup);

/**
 * vqf_forget_queue_len() - entries queued
 * @q: queue.
 */
u32 vqf_forget_queue_len(const struct vqf_forget_queue *q);

/**
 * vqf_forget_build_one() - a single FORGET request
 * @f: request memory (device-readable, sizeof(*f) bytes).
 * @unique: request id.
 * @nodeid: inode; not 0.
 * @nlookup: lookups to drop; not 0.
 *
 * Return: 0, or -EINVAL for a zero @nodeid or @nlookup.
 */
int vqf_forget_build_one(struct vqf_forget_req *f, u64 unique, u64 nodeid,
			 u64 nlookup);

/**
 * vqf_forget_max_batch() - entries one BATCH_FORGET of @max_req bytes holds
 * @max_req: largest request the device accepts, header included.
 *
 * Return: the count, 0 if not even one fits.
 */
u32 vqf_forget_max_batch(u32 max_req);

/**
 * vqf_forget_build() - lay out the next request from the queue head
 * @q: queue; not modified.
 * @buf: request memory (device-readable).
 * @buf_size: its size.
 * @max_req: largest request the device accepts (VQF_FORGET_DEFAULT_MAX_REQ
 *	when unknown); the request is at most min(@buf_size, @max_req).
 * @unique: request id.
 * @batch_ok: the server speaks BATCH_FORGET (protocol 7.16+).
 * @nr: entries the request carries (to pass to vqf_forget_consume()).
 *
 * As Linux: a single queued entry, or !@batch_ok, gives a FORGET; more
 * give one BATCH_FORGET with as many entries as fit, in queue order; the
 * rest stay queued for the next request.  If only one entry fits, a
 * FORGET is built.
 *
 * Return: the request length (= fuse_in_header.len), -ENOENT if the queue
 * is empty, -ENOSPC if @buf_size or @max_req cannot hold even a FORGET,
 * -EINVAL for NULL arguments.
 */
int vqf_forget_build(const struct vqf_forget_queue *q, void *buf, u32 buf_size,
		     u32 max_req, u64 unique, bool batch_ok, u32 *nr);

/**
 * vqf_forget_consume() - drop @n entries from the queue head
 * @q: queue.
 * @n: entries sent (the @nr of vqf_forget_build()).
 *
 * Return: 0, or -EINVAL if fewer than @n are queued (nothing dropped).
 */
int vqf_forget_consume(struct vqf_forget_queue *q, u32 n);

#endif /* VQF_FORGET_H */
