/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_cli.h - what vqfuse-sim's subcommands share: the program name, usage
 * errors and number parsing, so that every subcommand reports mistakes the
 * same way (exit 2, the offending option named).
 */
#ifndef VQF_CLI_H
#define VQF_CLI_H

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

/* vqfuse-sim mount ARGS (argv after "mount"); returns the exit status. */
int vqf_cli_mount(int argc, char **argv);
/* The mount subcommand's part of --help. */
void vqf_cli_mount_usage(FILE *f);

#endif /* VQF_CLI_H */
