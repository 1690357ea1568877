// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fault.c - the fault plan's generator (see vqf_fault.h).
 */
#include "vqf_fault.h"

#include <errno.h>

/* splitmix64's finaliser: every input bit reaches every output bit. */
static u64 mix(u64 x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

u64 vqf_fault_rand(const struct vqf_fault_plan *p, unsigned int queue,
		   u64 seq, u64 salt)
{
	return mix(mix(mix(p->seed ^ queue) ^ seq) ^ salt);
}

bool vqf_fault_roll(const struct vqf_fault_plan *p, unsigned int queue,
		    u64 seq, enum vqf_fault_kind kind)
{
	u32 ppm;

	if ((unsigned int)kind >= VQF_FAULT_NR)
		return false;
	ppm = p->ppm[kind];
	if (!ppm)
		return false;
	return vqf_fault_rand(p, queue, seq, 0x100 + kind) % VQF_FAULT_PPM <
	       ppm;
}

static const char *const names[VQF_FAULT_NR] = {
	[VQF_FAULT_STALL] = "stall",
	[VQF_FAULT_DROP_KICK] = "drop_kick",
	[VQF_FAULT_FILL] = "fill",
	[VQF_FAULT_EIO] = "eio",
	[VQF_FAULT_ENOSPC] = "enospc",
	[VQF_FAULT_EINTR] = "eintr",
	[VQF_FAULT_SHORT_WRITE] = "short_write",
	[VQF_FAULT_SHORT_USED] = "short_used",
	[VQF_FAULT_BAD_HDR_LEN] = "bad_hdr_len",
	[VQF_FAULT_REORDER] = "reorder",
	[VQF_FAULT_DUP] = "dup",
	[VQF_FAULT_DROP_CALL] = "drop_call",
};

const char *vqf_fault_name(enum vqf_fault_kind kind)
{
	return (unsigned int)kind < VQF_FAULT_NR ? names[kind] : "?";
}

int vqf_fault_plan_check(const struct vqf_fault_plan *p)
{
	unsigned int i;

	for (i = 0; i < VQF_FAULT_NR; i++)
		if (p->ppm[i] > VQF_FAULT_PPM)
			return -EINVAL;
	if (p->reorder_max > VQF_FAULT_HELD_MAX)
		return -EINVAL;
	return 0;
}
