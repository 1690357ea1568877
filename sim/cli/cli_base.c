// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * cli_base.c - how every vqfuse-sim subcommand reads its arguments and
 * reports a mistake (see vqf_cli_base.h).  It depends on nothing else in
 * sim/cli: the subcommands and cli_opts.c call in, never the reverse.
 */
#include "vqf_cli_base.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *vqf_cli_prog = "vqfuse-sim";

int vqf_cli_bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", vqf_cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", vqf_cli_prog);
	return VQF_CLI_EXIT_USAGE;
}

/* See vqf_cli_base.h. */
int vqf_cli_parse_num(const char *s, bool suffix, unsigned long long lo,
		      unsigned long long hi, unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end && suffix) {
		switch (*end) {
		case 'k': case 'K':
			mul = 1ull << 10;
			break;
		case 'm': case 'M':
			mul = 1ull << 20;
			break;
		case 'g': case 'G':
			mul = 1ull << 30;
			break;
		case 't': case 'T':
			mul = 1ull << 40;
			break;
		default:
			return -1;
		}
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
	}
	if (*end)
		return -1;
	if (v && mul > ULLONG_MAX / v)
		return -1;
	v *= mul;
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static const struct vqf_cli_num_opt *find_num(
	const struct vqf_cli_num_opt *tab, size_t n, const char *name)
{
	for (size_t k = 0; k < n; k++)
		if (!strcmp(name, tab[k].name))
			return &tab[k];
	return NULL;
}

static int num_value(const struct vqf_cli_num_opt *nd, const char *val,
		     unsigned long long *v)
{
	if (!vqf_cli_parse_num(val, nd->suffix, nd->lo, nd->hi, v))
		return 0;
	return vqf_cli_bad_usage("%s: invalid value '%s' (expected "
				 "%s%llu..%llu)", nd->name, val,
				 nd->suffix ? "bytes, K/M/G suffix, " : "",
				 nd->lo, nd->hi);
}

static int no_value(const char *name, const char *val)
{
	return val ? vqf_cli_bad_usage("%s takes no value", name) : 0;
}

static int need_value(const char *name, int argc, char **argv, int *i,
		      const char **val)
{
	if (*val)
		return 0;
	if (*i + 1 >= argc)
		return vqf_cli_bad_usage("%s needs a value", name);
	*val = argv[++*i];
	return 0;
}

static bool listed(const char *const *list, const char *name)
{
	for (; list && *list; list++)
		if (!strcmp(*list, name))
			return true;
	return false;
}

enum opt_kind { OPT_NONE, OPT_FLAG, OPT_STR, OPT_NUM };

/* @name in the spec's own table, then in @spec->more. */
static enum opt_kind lookup(const struct vqf_cli_spec *spec, const char *name,
			    const struct vqf_cli_num_opt **nd)
{
	const struct vqf_cli_table own = {
		.flags = spec->flags, .strs = spec->strs,
		.nums = spec->nums, .nnums = spec->nnums,
	};
	const struct vqf_cli_table *tab[2] = { &own, spec->more };

	for (int k = 0; k < 2; k++) {
		if (!tab[k])
			continue;
		if (listed(tab[k]->flags, name))
			return OPT_FLAG;
		*nd = find_num(tab[k]->nums, tab[k]->nnums, name);
		if (*nd)
			return OPT_NUM;
		if (listed(tab[k]->strs, name))
			return OPT_STR;
	}
	return OPT_NONE;
}

/*
 * @a as an option's name and value: "--name[=value]", or "-x[value]"
 * ("-x=value" too) when "-x" is in a table.  OPT_NONE when @a is no
 * option of @spec; a usage status in *@ret when it is malformed.
 */
static enum opt_kind split(const struct vqf_cli_spec *spec, const char *a,
			   char *name, size_t len, const char **val,
			   const struct vqf_cli_num_opt **nd)
{
	const char *eq = strchr(a, '=');
	size_t n = eq ? (size_t)(eq - a) : strlen(a);

	*val = NULL;
	if (a[1] != '-') {
		/* A single dash: the name is "-x", what follows its value. */
		if (!a[1])
			return OPT_NONE;
		memcpy(name, a, 2);
		name[2] = 0;
		if (a[2])
			*val = a[2] == '=' ? a + 3 : a + 2;
		return lookup(spec, name, nd);
	}
	if (n >= len)
		return OPT_NONE;
	memcpy(name, a, n);
	name[n] = 0;
	*val = eq ? eq + 1 : NULL;
	return lookup(spec, name, nd);
}

int vqf_cli_walk(const struct vqf_cli_spec *spec, int argc, char **argv,
		 void *o)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		const struct vqf_cli_num_opt *nd = NULL;
		unsigned long long v = 0;
		enum opt_kind kind = OPT_NONE;
		char name[32];
		int ret;

		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return -1;
		if (a[0] == '-' && strcmp(a, "--"))
			kind = split(spec, a, name, sizeof(name), &val, &nd);
		if (kind == OPT_NONE && spec->arg &&
		    (strncmp(a, "--", 2) || !a[2])) {
			if (!strcmp(a, "--")) {
				if (++i >= argc)
					break;
				a = argv[i];
			}
			ret = spec->arg(o, a);
			if (ret)
				return ret;
			continue;
		}
		if (kind == OPT_NONE && a[0] == '-' && a[1])
			return vqf_cli_bad_usage("%s: unknown option '%.*s'",
						 spec->cmd,
						 (int)strcspn(a, "="), a);
		if (kind == OPT_NONE)
			return vqf_cli_bad_usage("%s: unexpected argument "
						 "'%s'", spec->cmd, a);
		if (kind == OPT_FLAG) {
			ret = val && listed(spec->valued, name) ? 0 :
			      no_value(name, val);
			if (!ret)
				ret = spec->set(o, name, val, NULL);
			if (ret)
				return ret;
			continue;
		}
		if (need_value(name, argc, argv, &i, &val) ||
		    (nd && num_value(nd, val, &v)))
			return VQF_CLI_EXIT_USAGE;
		ret = spec->set(o, name, val, nd ? &v : NULL);
		if (ret)
			return ret;
	}
	return 0;
}
