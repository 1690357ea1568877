/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_cli.h - the options vqfuse-sim's subcommands share (cli_opts.c) and
 * the subcommands' entry points.  How arguments are read and mistakes
 * reported is vqf_cli_base.h's (cli_base.c).
 */
#ifndef VQF_CLI_H
#define VQF_CLI_H

#include "vqf_cli_base.h"
#include "vqf_gcli.h"
#include "vqf_sim.h"

#include <stdbool.h>
#include <stdio.h>

/*
 * The simulated guest's cache options, spelled and checked the same way by
 * every subcommand (cli_opts.c).
 */
#define VQF_CLI_TIMEOUT_MAX	86400.0

/*
 * --cache VAL: none, auto or always; also "all" (*@all set) when @all is
 * not NULL.  Returns 0, or a usage error (exit 2) naming the value.
 */
int vqf_cli_parse_cache(const char *val, enum vqf_gcli_cache *out,
			bool *all);
/* --timeout VAL: seconds, 0 < s <= 86400.  0 or a usage error. */
int vqf_cli_parse_timeout(const char *val, double *out);
/* Once parsed: --timeout given (@timeout_set) needs cache=auto. */
int vqf_cli_check_cache(enum vqf_gcli_cache cache, bool timeout_set);
/* "none", "auto", "always". */
const char *vqf_cli_cache_name(enum vqf_gcli_cache c);
/* Sets @cfg's cache, writeback and timeout_ns (@timeout 0: default). */
void vqf_cli_cache_cfg(struct vqf_gcli_cfg *cfg, enum vqf_gcli_cache cache,
		       bool writeback, double timeout);
/* The --cache, --writeback and --timeout lines of --help (@all: run's). */
void vqf_cli_cache_usage(FILE *f, bool all);

/* --backend VAL (@name as typed): vqfuse or passthrough_ll/ptll. */
int vqf_cli_parse_backend(const char *name, const char *val,
			  enum vqf_sim_fs *fs);
/*
 * The machine options run and mount share, checked once parsed: a queue
 * size and a DAX window that are powers of two, no DAX over
 * passthrough_ll.  0 or a usage error.
 */
int vqf_cli_check_machine(unsigned int queue_size,
			  unsigned long long dax_window, bool dax,
			  enum vqf_sim_fs fs);
/*
 * --dax[=MODE]'s value (NULL: none given): "auto" (as none: the policy is
 * the default) or "always" into *@dax_always, and *@dax set.  0, or a
 * usage status after a message.
 */
int vqf_cli_parse_dax(const char *val, bool *dax, bool *dax_always);
/* The window --dax gets without --dax-window. */
#define VQF_CLI_DAX_WINDOW_DEFAULT	(64ull << 20)
/* --dax[=MODE] [--dax-window W] into @sc (W 0: the default). */
void vqf_cli_dax_cfg(struct vqf_sim_cfg *sc, bool dax, bool dax_always,
		     unsigned long long dax_window);
/* The DAX mode a JSON report names: "off", "auto" or "always". */
const char *vqf_cli_dax_name(bool dax, bool dax_always);

/* vqfuse-sim mount ARGS (argv after "mount"); returns the exit status. */
int vqf_cli_mount(int argc, char **argv);
/* The mount subcommand's part of --help. */
void vqf_cli_mount_usage(FILE *f);

/* vqfuse-sim vhost-user ARGS (vhost_user.c); returns the exit status. */
int vqf_cli_vhost_user(int argc, char **argv);
/*
 * The same daemon started as vqfuse-virtiofsd ARGS: takes the same
 * options, answers --help in virtiofsd's terms.
 */
int vqf_cli_virtiofsd(int argc, char **argv);
/* The vhost-user subcommand's part of --help. */
void vqf_cli_vhost_usage(FILE *f);

#endif /* VQF_CLI_H */
