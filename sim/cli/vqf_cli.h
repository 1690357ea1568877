/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_cli.h - what vqfuse-sim's subcommands share: the program name, usage
 * errors and number parsing, so that every subcommand reports mistakes the
 * same way (exit 2, the offending option named).
 */
#ifndef VQF_CLI_H
#define VQF_CLI_H

#include "vqf_gcli.h"
#include "vqf_sim.h"

#include <stdbool.h>
#include <stdio.h>

#define VQF_CLI_EXIT_FAIL	1
#define VQF_CLI_EXIT_USAGE	2

extern const char *vqf_cli_prog;

/* Prints "PROG: message" and a hint to --help; returns VQF_CLI_EXIT_USAGE. */
int vqf_cli_bad_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * A decimal number, with a binary K/M/G/T suffix (optionally "iB" or "B")
 * when @suffix.  Returns 0, or -1 for anything else or out of [lo, hi].
 */
int vqf_cli_parse_num(const char *s, bool suffix, unsigned long long lo,
		      unsigned long long hi, unsigned long long *out);

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

/* A numeric option: its name, K/M/G suffixes allowed, range. */
struct vqf_cli_num_opt {
	const char *name;
	bool suffix;
	unsigned long long lo, hi;
};

/*
 * A subcommand's options, for vqf_cli_walk().  Each option is spelled
 * "--name", "--name=value" or "--name value".
 * @cmd: "run", "mount", ... for messages.
 * @flags: NULL-terminated names of options that take no value.
 * @strs: NULL-terminated names of options that take any string.
 * @nums, @nnums: options that take a number in a range.
 * @set: called once per option, in order: @val NULL for a flag, the
 *	string for @strs, the text of the number for @nums; @num points at
 *	the number's value for @nums, else it is NULL.  Returns 0 or a usage
 *	exit status (after its message).
 * @arg: called for each argument that is not an option, and for the one
 *	after "--"; NULL refuses them ("unexpected argument").
 */
struct vqf_cli_spec {
	const char *cmd;
	const char *const *flags;
	const char *const *strs;
	const struct vqf_cli_num_opt *nums;
	size_t nnums;
	int (*set)(void *o, const char *name, const char *val,
		   const unsigned long long *num);
	int (*arg)(void *o, const char *arg);
};

/*
 * Walks @argc/@argv by @spec into @o.  Returns 0; -1 when -h or --help
 * was given (nothing after it is looked at); or a usage exit status after
 * a message: unknown option, a flag given a value, a missing value, a
 * number out of range, or what @set or @arg returned.
 */
int vqf_cli_walk(const struct vqf_cli_spec *spec, int argc, char **argv,
		 void *o);

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
/* --dax [--dax-window W] into @sc (W 0: 64 MiB). */
void vqf_cli_dax_cfg(struct vqf_sim_cfg *sc, bool dax,
		     unsigned long long dax_window);

/* vqfuse-sim mount ARGS (argv after "mount"); returns the exit status. */
int vqf_cli_mount(int argc, char **argv);
/* The mount subcommand's part of --help. */
void vqf_cli_mount_usage(FILE *f);

/* vqfuse-sim vhost-user ARGS (vhost_user.c); returns the exit status. */
int vqf_cli_vhost_user(int argc, char **argv);
/* The vhost-user subcommand's part of --help. */
void vqf_cli_vhost_usage(FILE *f);

#endif /* VQF_CLI_H */
