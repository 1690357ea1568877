/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_cli_base.h - what every vqfuse-sim subcommand shares to read its
 * arguments: the program name, usage errors, number parsing and the
 * table-driven option walker, so that every subcommand reports mistakes
 * the same way (exit 2, the offending option named).  cli_base.c; it
 * needs nothing else of sim/.
 */
#ifndef VQF_CLI_BASE_H
#define VQF_CLI_BASE_H

#include <stdbool.h>
#include <stddef.h>

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

/* A numeric option: its name, K/M/G suffixes allowed, range. */
struct vqf_cli_num_opt {
	const char *name;
	bool suffix;
	unsigned long long lo, hi;
};

/* A table of options: names as typed, "--name" or "-x". */
struct vqf_cli_table {
	const char *const *flags;	/* NULL-terminated; take no value */
	const char *const *strs;	/* NULL-terminated; take any string */
	const struct vqf_cli_num_opt *nums;	/* take a ranged number */
	size_t nnums;
};

/*
 * A subcommand's options, for vqf_cli_walk().  Each option is spelled
 * "--name", "--name=value" or "--name value"; a single-dash name "-x"
 * as "-x value", "-xvalue" or "-x=value" (flags: "-x" alone).
 * @cmd: "run", "mount", ... for messages.
 * @flags: NULL-terminated names of options that take no value.
 * @valued: NULL-terminated names among @flags that may also be given a
 *	value, as "--name=value" only (a following argument is never
 *	taken as theirs): @set gets the value, or NULL without one.
 * @strs: NULL-terminated names of options that take any string.
 * @nums, @nnums: options that take a number in a range.
 * @more: a second table looked up after the first, for a command that
 *	also speaks another program's options (NULL: none).
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
	const char *const *valued;
	const char *const *strs;
	const struct vqf_cli_num_opt *nums;
	size_t nnums;
	const struct vqf_cli_table *more;
	int (*set)(void *o, const char *name, const char *val,
		   const unsigned long long *num);
	int (*arg)(void *o, const char *arg);
};

/*
 * Walks @argc/@argv by @spec into @o.  Returns 0; -1 when -h or --help
 * was given (nothing after it is looked at); or a usage exit status after
 * a message: unknown option (named as typed, without its value), a flag
 * given a value, a missing value, a number out of range, or what @set or
 * @arg returned.  An argument starting with '-' that no table lists goes
 * to @arg when @arg is set and it is not "--name".
 */
int vqf_cli_walk(const struct vqf_cli_spec *spec, int argc, char **argv,
		 void *o);

#endif /* VQF_CLI_BASE_H */
