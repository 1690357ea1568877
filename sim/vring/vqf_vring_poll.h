/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vring_poll.h - bounded, adaptive polling of a ring.
 *
 * A thread that expects work soon may spin on a ring index instead of
 * sleeping on an eventfd: the wake-up it saves (tens of microseconds on a
 * loaded host) is worth a few microseconds of CPU.  The window is
 * adapted with QEMU's rule for iothreads (util/aio-posix.c, poll-max-ns):
 * after each wait, of @block_ns from the start of the poll to the work
 * turning up (polled or woken),
 *   - within the window: keep it;
 *   - longer than @max_ns: polling could not have caught it, drop to 0;
 *   - else grow it (0 -> 4 us, then doubling), capped at @max_ns.
 * So a thread whose work comes back quickly polls, one whose work does
 * not stops wasting the CPU after one miss and tries again only after a
 * wait short enough that polling would have paid.
 */
#ifndef VQF_VRING_POLL_H
#define VQF_VRING_POLL_H

#include "vqf_compat.h"

#include <sched.h>
#include <time.h>

#define VQF_POLL_GROW_START_NS	4000ULL

static inline u64 vqf_poll_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}

/* The next window after a wait of @block_ns with window @cur. */
static inline u64 vqf_poll_adapt(u64 cur, u64 max_ns, u64 block_ns)
{
	u64 next;

	if (block_ns <= cur)
		return cur;
	if (block_ns > max_ns)
		return 0;
	next = cur ? cur * 2 : VQF_POLL_GROW_START_NS;
	return next < max_ns ? next : max_ns;
}

/*
 * Between two looks at a ring: give the CPU to any thread waiting for it.
 * On an idle CPU sched_yield() returns at once (a syscall, well under a
 * microsecond), so the poll still sees the work within about that; when
 * threads outnumber CPUs, the one that would produce the work (the device
 * thread for a polling caller, the caller for a polling device) may be
 * the one waiting, and a bare spin (cpu_relax) would keep it off the CPU
 * until the window or the time slice ends.  Measured on a 2-vCPU guest, a
 * bare spin made polling 3x slower than not polling in half the runs;
 * see docs/vqfuse-sim.md.
 */
static inline void vqf_poll_relax(void)
{
	sched_yield();
}

#endif /* VQF_VRING_POLL_H */
