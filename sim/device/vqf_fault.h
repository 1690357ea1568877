/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_fault.h - a seeded fault plan for the simulated virtio-fs device.
 *
 * The device (vqf_fsdev_cfg.faults) consults the plan for every chain it
 * pops from a request queue; the hiprio and notification queues are never
 * touched (5.11.6.1: hiprio must not stall behind request work).  Each
 * decision is a pure function of (seed, queue, chain number, fault kind):
 * a counter-based generator (splitmix64) rather than one stream consumed in
 * order, so that which chain gets which fault does not depend on which
 * thread happened to pop it or on how often the poll timer ran.  With one
 * guest thread and cfg.inline_kick the chain stream is itself
 * deterministic and a seed replays every fault that decides a reply;
 * STALL, DROP_KICK and FILL are rolled for the chain at the head of a pop
 * attempt, and how many chains wait behind it depends on whether a kick
 * or a poll tick made the attempt, so their counts (and DROP_CALL's) may
 * differ by one or two between replays.  With several threads the
 * faults per chain number replay, the interleaving does not.
 *
 * Faults, by when they act:
 *   before a pop   STALL       the queue ignores its next stall_len pop
 *                              attempts (kicks or poll ticks)
 *                  DROP_KICK   one notification is ignored; with
 *                              EVENT_IDX the driver then kicks no more
 *                              (avail_event is not moved), so only the
 *                              poll timer recovers - as on real hardware
 *                  FILL        no pops until fill_chains chains wait (or
 *                              fill_ticks poll ticks passed): the driver
 *                              fills the ring and uses its pending list
 *   instead of     EIO ENOSPC  the device replies with that error without
 *   the backend    EINTR       forwarding the request (data_ops only)
 *                  SHORT_WRITE a WRITE reaches the backend with half its
 *                              bytes (rounded down to 16): a genuine short
 *                              write the client must report as such
 *   at the push    SHORT_USED  used.len below the bytes written
 *                  BAD_HDR_LEN fuse_out_header.len disagrees with used.len
 *                              (both data_ops only; the driver must refuse)
 *                  REORDER     the completion is held and pushed later, in
 *                              a shuffled order with the other held ones
 *                              (when reorder_max are held, or by the timer)
 *                  DUP         the used entry is pushed twice; at most once
 *                              per queue per reset (the driver breaks the
 *                              queue at the first, so it never reads more)
 *                  DROP_CALL   the interrupt is not sent; the poll timer
 *                              sends it late (interrupt coalescing) - a
 *                              call lost for good would hang a driver that
 *                              has no timeout, as Linux's virtio-fs
 *
 * A plan requires cfg.inline_kick: the poll timer then takes the same
 * per-queue lock as a kick and is the only other popper.
 */
#ifndef VQF_FAULT_H
#define VQF_FAULT_H

#include "vqf_compat.h"

#include <stdbool.h>

enum vqf_fault_kind {
	VQF_FAULT_STALL,
	VQF_FAULT_DROP_KICK,
	VQF_FAULT_FILL,
	VQF_FAULT_EIO,
	VQF_FAULT_ENOSPC,
	VQF_FAULT_EINTR,
	VQF_FAULT_SHORT_WRITE,
	VQF_FAULT_SHORT_USED,
	VQF_FAULT_BAD_HDR_LEN,
	VQF_FAULT_REORDER,
	VQF_FAULT_DUP,
	VQF_FAULT_DROP_CALL,
	VQF_FAULT_NR
};

#define VQF_FAULT_PPM		1000000u	/* ppm[] of "always" */
#define VQF_FAULT_HELD_MAX	64		/* reorder_max limit */

struct vqf_fault_plan {
	u64 seed;
	/* Probability per chain, in parts per million, by kind. */
	u32 ppm[VQF_FAULT_NR];
	u32 stall_len;		/* pop attempts a stall lasts (0: 3) */
	u32 fill_chains;	/* chains a fill waits for (0: queue size) */
	u32 fill_ticks;		/* poll ticks a fill waits at most (0: 8) */
	u32 reorder_max;	/* completions held at most (0: 8, <= 64) */
	/* Opcodes (1ULL << opcode, opcodes < 64) that backend and reply
	 * faults apply to (0: READ and WRITE).  FUSE_INIT is never faulted
	 * after the pop: the machine must come up.
	 */
	u64 data_ops;
	u32 tick_ms;		/* poll timer period (0: 1 ms) */
};

/*
 * Whether the plan injects fault @kind into chain @seq of queue @queue:
 * the same answer for the same arguments, every time.
 */
bool vqf_fault_roll(const struct vqf_fault_plan *p, unsigned int queue,
		    u64 seq, enum vqf_fault_kind kind);

/* A 64-bit value for chain @seq of @queue and @salt (sizes, shuffles). */
u64 vqf_fault_rand(const struct vqf_fault_plan *p, unsigned int queue,
		   u64 seq, u64 salt);

/* The kind's name ("stall", "eio"...), "?" out of range. */
const char *vqf_fault_name(enum vqf_fault_kind kind);

/* Checks a plan: -EINVAL for a ppm above VQF_FAULT_PPM or reorder_max
 * above VQF_FAULT_HELD_MAX; 0 otherwise.
 */
int vqf_fault_plan_check(const struct vqf_fault_plan *p);

#endif /* VQF_FAULT_H */
