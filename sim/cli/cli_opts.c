// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * cli_opts.c - the options vqfuse-sim's subcommands share (see
 * vqf_cli.h): guest cache, backend, machine checks and numbers, so that
 * run and mount accept and refuse the same values with the same messages.
 */
#include "vqf_cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int vqf_cli_parse_cache(const char *val, enum vqf_gcli_cache *out,
			bool *all)
{
	if (all)
		*all = false;
	if (!strcmp(val, "none"))
		*out = VQF_GCLI_CACHE_NONE;
	else if (!strcmp(val, "auto"))
		*out = VQF_GCLI_CACHE_AUTO;
	else if (!strcmp(val, "always"))
		*out = VQF_GCLI_CACHE_ALWAYS;
	else if (!strcmp(val, "shared"))
		*out = VQF_GCLI_CACHE_SHARED;
	else if (all && !strcmp(val, "all"))
		*all = true;
	else
		return vqf_cli_bad_usage("--cache: unknown mode '%s' "
					 "(none, auto, always, shared%s)", val,
					 all ? ", all" : "");
	return 0;
}

int vqf_cli_parse_timeout(const char *val, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (errno || end == val || *end || !(v > 0) ||
	    v > VQF_CLI_TIMEOUT_MAX)
		return vqf_cli_bad_usage("--timeout: invalid value '%s' "
					 "(expected seconds, 0 < s <= %.0f)",
					 val, VQF_CLI_TIMEOUT_MAX);
	*out = v;
	return 0;
}

int vqf_cli_check_cache(enum vqf_gcli_cache cache, bool timeout_set)
{
	if (timeout_set && cache != VQF_GCLI_CACHE_AUTO &&
	    cache != VQF_GCLI_CACHE_SHARED)
		return vqf_cli_bad_usage("--timeout applies to --cache=auto "
					 "and shared only");
	return 0;
}

const char *vqf_cli_cache_name(enum vqf_gcli_cache c)
{
	return c == VQF_GCLI_CACHE_AUTO ? "auto" :
	       c == VQF_GCLI_CACHE_ALWAYS ? "always" :
	       c == VQF_GCLI_CACHE_SHARED ? "shared" : "none";
}

void vqf_cli_cache_cfg(struct vqf_gcli_cfg *cfg, enum vqf_gcli_cache cache,
		       bool writeback, double timeout)
{
	cfg->cache = cache;
	cfg->writeback = writeback;
	cfg->timeout_ns = (u64)(timeout * 1e9);
}

void vqf_cli_cache_usage(FILE *f, bool all)
{
	fprintf(f,
"  --cache MODE        the simulated guest's cache: none (default), auto,\n"
"                      always, shared%s\n"
"  --writeback         writes may stay in the guest until close or fsync\n"
"                      (auto and always; no effect with none, which is\n"
"                      direct I/O)\n"
"  --timeout SECONDS   cache=auto entry and attribute timeout (default 1;\n"
"                      shared uses it for inodes without a version slot)\n",
		all ? "; all: the six modes in turn (none, auto,\n"
		"                      always, auto+wb, always+wb, shared)" : "");
}

int vqf_cli_parse_backend(const char *name, const char *val,
			  enum vqf_sim_fs *fs)
{
	if (!strcmp(val, "vqfuse"))
		*fs = VQF_SIM_FS_VQFUSE;
	else if (!strcmp(val, "passthrough_ll") || !strcmp(val, "ptll"))
		*fs = VQF_SIM_FS_PTLL;
	else if (!strcmp(val, "null"))
		*fs = VQF_SIM_FS_NULL;
	else
		return vqf_cli_bad_usage("%s: unknown backend '%s' (vqfuse, "
					 "passthrough_ll, null)", name, val);
	return 0;
}

int vqf_cli_check_machine(unsigned int queue_size,
			  unsigned long long dax_window, bool dax,
			  enum vqf_sim_fs fs)
{
	if (queue_size & (queue_size - 1))
		return vqf_cli_bad_usage("--queue-size: %u is not a power "
					 "of two", queue_size);
	if (dax_window & (dax_window - 1))
		return vqf_cli_bad_usage("--dax-window: %llu is not a power "
					 "of two", dax_window);
	if (dax && fs != VQF_SIM_FS_VQFUSE)
		return vqf_cli_bad_usage("--dax: the %s backend cannot map "
					 "files (ENOSYS)",
					 fs == VQF_SIM_FS_PTLL ?
					 "passthrough_ll" : "null");
	return 0;
}

int vqf_cli_parse_dax(const char *val, bool *dax, bool *dax_always)
{
	/*
	 * auto is the default (issue 30): under QEMU, against no DAX on the
	 * same fuse.ko, it kept always's 1.5-1.7x on sequential reads,
	 * turned always's 0.4-0.5x on random reads into 1.2-1.6x, and its
	 * smallfile phases, which it maps nothing of, stayed within the
	 * rounds' noise (0.93-1.17x; docs/dax.md).
	 */
	if (!val || !strcmp(val, "auto"))
		*dax_always = false;
	else if (!strcmp(val, "always"))
		*dax_always = true;
	else
		return vqf_cli_bad_usage("--dax: unknown mode '%s' (always, "
					 "auto)", val);
	*dax = true;
	return 0;
}

void vqf_cli_dax_cfg(struct vqf_sim_cfg *sc, bool dax, bool dax_always,
		     unsigned long long dax_window)
{
	if (!dax)
		return;
	sc->dax_window = dax_window ? dax_window : VQF_CLI_DAX_WINDOW_DEFAULT;
	sc->dax_guest = true;
	sc->cli.dax_auto = !dax_always;
}

const char *vqf_cli_dax_name(bool dax, bool dax_always)
{
	return !dax ? "off" : dax_always ? "always" : "auto";
}
