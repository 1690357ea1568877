/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_wl_sim.h - the workload operations over a simulated machine's guest
 * client, with the transport's counters.
 */
#ifndef VQF_WL_SIM_H
#define VQF_WL_SIM_H

#include "vqf_sim.h"
#include "vqf_workload.h"

/* Fills @fs for @s (which must outlive it); @name is kept, not copied. */
void vqf_wl_sim_fs(struct vqf_sim *s, const char *name, struct vqf_wl_fs *fs);

/*
 * vqf_wl_cfg.job_init for a machine with several guests (arg: the
 * vqf_sim): job j's operations go through guest j % guests; setup and
 * cleanup through guest 0.
 */
void vqf_wl_sim_job_init(void *sim, unsigned int job);

/* "vqfuse" / "passthrough_ll" as the CLI spells them. */
const char *vqf_wl_sim_fs_name(enum vqf_sim_fs fs);

#endif /* VQF_WL_SIM_H */
