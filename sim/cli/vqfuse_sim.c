// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqfuse_sim.c - vqfuse-sim: runs a workload as a simulated virtio-fs
 * guest against a host directory and reports, per operation, throughput
 * and what each operation cost the transport (run); or exposes the
 * simulated guest as a host FUSE mount (mount, in mount.c).
 *
 * Exit status: 0 success, 1 the workload (or the machine) failed, 2 bad
 * usage.
 */
#define _GNU_SOURCE
#include "vqf_cli.h"
#include "vqf_wl_sim.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef VQF_VERSION
#define VQF_VERSION "unknown"
#endif

#define EXIT_FAIL	VQF_CLI_EXIT_FAIL
#define EXIT_USAGE	VQF_CLI_EXIT_USAGE

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s run --shared DIR [options]\n"
"  or:  %s run --connect SOCKET [options]\n"
"  or:  %s mount MOUNTPOINT --shared DIR [options]\n"
"  or:  %s mount MOUNTPOINT --connect SOCKET [options]\n"
"  or:  %s vhost-user --socket PATH --shared DIR [options]\n"
"  or:  %s help | --help | --version\n"
"\n"
"The run command runs a workload as a simulated virtio-fs guest (vqf_gcli\n"
"over the guest driver, virtqueues, device and a libfuse3 backend) against\n"
"the host directory DIR, and prints per operation: ops/s, FUSE requests,\n"
"kicks, interrupts and bytes copied per operation.  The workload works in\n"
"its own uniquely named subdirectory of DIR and leaves DIR as it found it.\n"
"mount exposes the simulated guest as a FUSE mount of the host, and\n"
"vhost-user serves its device to QEMU in virtiofsd's place; each is\n"
"described with its options below.\n"
"\n"
"Options:\n"
"  -h, --help          print this help and exit (mount --help and\n"
"                      vhost-user --help print their own part of it)\n"
"  --version           print the name and version and exit\n"
"\n"
"Options of run:\n"
"  --shared DIR        host directory to share (required unless --connect,\n"
"                      must exist)\n"
"  --connect SOCKET    drive the vhost-user-fs back-end listening at SOCKET\n"
"                      (virtiofsd, vqfuse-sim vhost-user) instead of the\n"
"                      simulator's own device and backend: the guest as\n"
"                      QEMU's vhost-user-fs-pci front-end; the directory,\n"
"                      threads and DAX window are the back-end's options,\n"
"                      --dax and --cache=shared use the regions it has;\n"
"                      with --guests N, guest i connects to SOCKET.i (as\n"
"                      vqfuse-sim vhost-user --guests N names them); not with\n"
"                      --cache=all (a back-end ends with its front-end)\n"
"  --backend NAME      vqfuse (own passthrough, default), passthrough_ll\n"
"                      (libfuse3's example) or null (answers from memory:\n"
"                      no workload runs on it, see docs/backend.md)\n"
"  --workload NAME     smallfile (default), seqread, randread, seqwrite,\n"
"                      randwrite\n"
"  --files N           smallfile: files per job (1..10000000, default 1000)\n"
"  --size BYTES        bytes per file (default 4K for smallfile, 64M for\n"
"                      the others); suffixes K, M, G (powers of 1024)\n"
"  --bs BYTES          I/O size (default: the file size up to 1M for\n"
"                      smallfile, 4K for rand*, 128K for seq*; max 64M)\n"
"  --jobs N            guest threads (1..256, default 1); each has its own\n"
"                      subdirectory (smallfile) or file (the others)\n"
"  --guests N          simulated guests (1..16, default 1), each with its\n"
"                      own RAM, device, driver and client, sharing the one\n"
"                      backend (and the version table of --cache=shared);\n"
"                      job j runs in guest j %% N; --jobs defaults to N\n"
"  --queues N          request queues (1..64, default 1)\n"
"  --queue-size N      descriptors per queue (power of two, 8..1024,\n"
"                      default 128)\n"
"  --threads N         device worker threads (0..256, default 0: requests\n"
"                      are served in each queue's thread)\n"
"  --cache MODE, --writeback, --timeout SECONDS: see below\n"
"  --plot FILE.png     also draw ops/s per phase (and per cache mode) as a\n"
"                      bar chart with gnuplot (gnuplot-nox on Debian)\n"
"  --dax[=MODE]        file data through a DAX cache window (SETUPMAPPING\n"
"                      and copies through the window, no READ/WRITE);\n"
"                      MODE auto (the default) maps where it pays: a file\n"
"                      whose ranges are reclaimed before they are used\n"
"                      again backs off to READ/WRITE for a while, a small\n"
"                      file is read through READ until it is used again,\n"
"                      mmap always maps (docs/dax.md, \"Policy\"); always\n"
"                      maps every byte read or written\n"
"  --dax-window SIZE   the window, a power of two (default 64M; implies\n"
"                      --dax)\n"
"  --dax-stale N       ranges of evicted files left mapped on the host\n"
"                      until reused (no REMOVEMAPPING each), at most N;\n"
"                      0: none (default: a quarter of the window's\n"
"                      ranges; docs/dax.md, \"Deferred teardown\")\n"
"  --trace FILE        write every request's life (queued, on the ring,\n"
"                      kicked, served by the device, completed) as Chrome\n"
"                      trace-event JSON for ui.perfetto.dev; not with\n"
"                      --cache=all\n"
"  --inline            the device runs in the kicking guest thread (QEMU\n"
"                      without ioeventfd) and the guest reaps its own\n"
"                      completions: no thread hand-off per request\n"
"  --handoff           threaded device, every kick through the queue's\n"
"                      thread (a kick, an interrupt and the completion\n"
"                      thread's wake-up per request, as with vhost-user);\n"
"                      default: a kicking thread serves its own request\n"
"                      and the queue thread takes what concurrent kicks\n"
"                      leave (ignored with --inline or --poll-us)\n"
"  --poll-us N         threaded device: after serving, its queue threads\n"
"                      poll the rings, and callers their replies, for up\n"
"                      to N us (adaptive) before sleeping (0..10000,\n"
"                      default 0: off; ignored with --inline)\n"
"  --ram BYTES         guest RAM (16M..16G, default 256M)\n"
"  --seed N            random offsets of rand* (default fixed)\n"
"  --json              print the results as JSON instead of a table\n"
"  --quiet             no progress line on stderr\n"
"\n"
"Workloads:\n"
"  smallfile  phases create (create+write+close), ls-l (READDIRPLUS of the\n"
"             directory, then lstat and lgetxattr system.posix_acl_access\n"
"             of each entry, as ls -l does), read (open+read+close),\n"
"             append (open O_APPEND+write+close), rename, delete-renamed;\n"
"             one operation is one file\n"
"  seqread    sequential reads of a file written beforehand\n"
"  randread   random reads, each block once, of a file written beforehand\n"
"  seqwrite   sequential writes of a new file\n"
"  randwrite  random writes, each block once, of a new file\n"
"\n"
"Cache modes (the guest client's, as fs/fuse; --cache=all runs the\n"
"workload once per mode, each on a fresh simulated machine over DIR, and\n"
"prints one table per measure with a column per mode):\n"
"  none       nothing cached, direct I/O (virtiofsd cache=none)\n"
"  auto       dentries and attributes expire after --timeout, pages kept\n"
"             while open (close-to-open)\n"
"  always     as auto, never expiring\n"
"  auto+wb, always+wb  the same with --writeback\n"
"  shared     as auto, but the device's shared version table (seed 010)\n"
"             proves cached entries and attributes valid with no round\n"
"             trip, and shows every change made by another guest or on\n"
"             the host at once\n"
"\n"
"Columns: ops/s = operations per second of the phase (all jobs); MiB/s =\n"
"file data; req/op = FUSE requests the driver submitted on the request\n"
"queues (FORGETs on hiprio are counted apart, in the JSON output); lkp/op\n"
"= LOOKUP requests among them;\n"
"kick/op = driver kicks of the device; irq/op = driver\n"
"wake-ups on the call eventfd; intr/op = interrupts the device signalled;\n"
"cli-copy/op = bytes the client copied between caller buffers and guest\n"
"pages; drv-copy/op = bytes the driver copied (headers and arguments).\n"
"\n"
"Exit status: 0 success, 1 the workload failed (the failing operation,\n"
"file and errno are named on stderr) or --plot could not draw, 2 bad\n"
"usage.\n"
"\n", vqf_cli_prog, vqf_cli_prog, vqf_cli_prog, vqf_cli_prog,
	vqf_cli_prog, vqf_cli_prog);
	fprintf(f, "Cache options of run (mount takes them, not all):\n");
	vqf_cli_cache_usage(f, true);
	fprintf(f, "\n");
	vqf_cli_mount_usage(f);
	fputc('\n', f);
	vqf_cli_vhost_usage(f);
}

/* A guest cache mode; "auto+wb" is auto with writeback. */
struct run_mode {
	const char *label;
	enum vqf_gcli_cache cache;
	bool writeback;
};

/* --cache=all: the RFC's modes, with and without writeback. */
static const struct run_mode all_modes[] = {
	{ "none", VQF_GCLI_CACHE_NONE, false },
	{ "auto", VQF_GCLI_CACHE_AUTO, false },
	{ "always", VQF_GCLI_CACHE_ALWAYS, false },
	{ "auto+wb", VQF_GCLI_CACHE_AUTO, true },
	{ "always+wb", VQF_GCLI_CACHE_ALWAYS, true },
	{ "shared", VQF_GCLI_CACHE_SHARED, false },
};

#define NR_ALL_MODES	(sizeof(all_modes) / sizeof(*all_modes))

struct run_opts {
	const char *shared;
	const char *connect;		/* --connect SOCKET */
	bool fs_set, threads_set, dax_window_set, dax_stale_set;
	enum vqf_sim_fs fs;
	struct vqf_wl_cfg wl;
	unsigned int queues, queue_size, threads;
	unsigned int poll_us;		/* --poll-us (0: off) */
	unsigned long long ram;
	bool json, quiet, inline_kick, dax, dax_always, handoff;
	unsigned long long dax_window;	/* --dax-window (0: 64 MiB) */
	int dax_stale;			/* vqf_gcli_cfg.dax_stale */
	enum vqf_gcli_cache cache;
	bool writeback, all, timeout_set;
	double timeout;			/* seconds; 0: the client's (1 s) */
	unsigned int guests;		/* --guests (0: 1) */
	bool jobs_set;
	const char *plot;		/* --plot FILE */
	const char *trace;		/* --trace FILE */
	/* What runs: all_modes, or the one mode asked for. */
	const struct run_mode *modes;
	unsigned int nmodes;
	struct run_mode one;
	char one_label[16];
};

/* Numeric options: name, suffixes allowed, range. */
static const struct vqf_cli_num_opt num_opts[] = {
	{ "--files", false, 1, 10000000 },
	{ "--size", true, 1, 1ull << 40 },
	{ "--bs", true, 1, 64ull << 20 },
	{ "--jobs", false, 1, 256 },
	{ "--guests", false, 1, VQF_SIM_MAX_GUESTS },
	{ "--queues", false, 1, 64 },
	/* CREATE takes six descriptors, and the ring refuses chains longer
	 * than the queue even with indirect descriptors.
	 */
	{ "--queue-size", false, 8, 1024 },
	{ "--threads", false, 0, 256 },
	{ "--poll-us", false, 0, 10000 },
	{ "--ram", true, 16ull << 20, 16ull << 30 },
	{ "--seed", false, 0, UINT_MAX },
	{ "--dax-window", true, 2ull << 20, 64ull << 30 },
	/* a window has at most 32768 ranges of 2 MiB */
	{ "--dax-stale", false, 0, 32768 },
};

/* One option of run, as vqf_cli_walk() found it. */
static int run_set(void *arg, const char *name, const char *val,
		   const unsigned long long *num)
{
	struct run_opts *o = arg;
	unsigned long long v = num ? *num : 0;

	if (!strcmp(name, "--files"))
		o->wl.files = v;
	else if (!strcmp(name, "--size"))
		o->wl.size = v;
	else if (!strcmp(name, "--bs"))
		o->wl.bs = v;
	else if (!strcmp(name, "--jobs"))
		o->wl.jobs = v, o->jobs_set = true;
	else if (!strcmp(name, "--guests"))
		o->guests = v;
	else if (!strcmp(name, "--queues"))
		o->queues = v;
	else if (!strcmp(name, "--queue-size"))
		o->queue_size = v;
	else if (!strcmp(name, "--threads"))
		o->threads = v, o->threads_set = true;
	else if (!strcmp(name, "--ram"))
		o->ram = v;
	else if (!strcmp(name, "--seed"))
		o->wl.seed = v;
	else if (!strcmp(name, "--dax-window"))
		o->dax = (o->dax_window = v) != 0, o->dax_window_set = true;
	else if (!strcmp(name, "--dax-stale"))
		o->dax_stale = v ? (int)v : -1, o->dax_stale_set = true;
	else if (!strcmp(name, "--poll-us"))
		o->poll_us = v;
	else if (!strcmp(name, "--inline"))
		o->inline_kick = true;
	else if (!strcmp(name, "--handoff"))
		o->handoff = true;
	else if (!strcmp(name, "--dax"))
		return vqf_cli_parse_dax(val, &o->dax, &o->dax_always);
	else if (!strcmp(name, "--writeback"))
		o->writeback = true;
	else if (!strcmp(name, "--json"))
		o->json = true;
	else if (!strcmp(name, "--quiet"))
		o->quiet = true;
	else if (!strcmp(name, "--cache"))
		return vqf_cli_parse_cache(val, &o->cache, &o->all) ?
		       EXIT_USAGE : 0;
	else if (!strcmp(name, "--timeout")) {
		o->timeout_set = true;
		return vqf_cli_parse_timeout(val, &o->timeout) ?
		       EXIT_USAGE : 0;
	} else if (!strcmp(name, "--backend")) {
		o->fs_set = true;
		return vqf_cli_parse_backend(name, val, &o->fs);
	}
	else if (!strcmp(name, "--workload")) {
		if (vqf_wl_kind_parse(val, &o->wl.kind))
			return vqf_cli_bad_usage(
				"--workload: unknown workload '%s' "
				"(smallfile, seqread, randread, seqwrite, "
				"randwrite)", val);
	} else if (!*val) {
		return vqf_cli_bad_usage("%s: empty path", name);
	} else if (!strcmp(name, "--shared")) {
		o->shared = val;
	} else if (!strcmp(name, "--connect")) {
		o->connect = val;
	} else if (!strcmp(name, "--plot")) {
		o->plot = val;
	} else {
		o->trace = val;
	}
	return 0;
}

static const char *const run_flags[] = {
	"--inline", "--handoff", "--writeback", "--dax", "--json", "--quiet",
	NULL
};
static const char *const run_valued[] = { "--dax", NULL };
static const char *const run_strs[] = {
	"--shared", "--connect", "--backend", "--workload", "--cache",
	"--timeout", "--plot", "--trace", NULL
};
static const struct vqf_cli_spec run_spec = {
	.cmd = "run", .flags = run_flags, .valued = run_valued,
	.strs = run_strs,
	.nums = num_opts, .nnums = sizeof(num_opts) / sizeof(*num_opts),
	.set = run_set,
};

/* Returns 0, EXIT_USAGE after a message, or -1 when help was asked. */
static int parse_run(int argc, char **argv, struct run_opts *o)
{
	int ret;

	memset(o, 0, sizeof(*o));
	o->queues = 1;
	o->queue_size = 128;
	o->wl.jobs = 1;
	ret = vqf_cli_walk(&run_spec, argc, argv, o);
	if (ret)
		return ret;
	if (vqf_cli_check_machine(o->queue_size, o->dax_window, o->dax,
				  o->fs))
		return VQF_CLI_EXIT_USAGE;
	if (o->dax_stale_set && !o->dax)
		return vqf_cli_bad_usage("--dax-stale: the guest has no "
					 "window (--dax)");
	/* One job per guest unless told otherwise. */
	if (o->guests > 1 && !o->jobs_set)
		o->wl.jobs = o->guests;
	if (o->trace && o->all)
		return vqf_cli_bad_usage("--trace: one machine per trace; "
					 "not with --cache=all");
	/* --cache=all runs auto (so --timeout has a use) and both sides of
	 * writeback.
	 */
	if (o->all && o->writeback)
		return vqf_cli_bad_usage("--writeback: --cache=all runs every "
					 "mode with and without it");
	if (!o->all && vqf_cli_check_cache(o->cache, o->timeout_set))
		return EXIT_USAGE;
	if (o->all) {
		o->modes = all_modes;
		o->nmodes = NR_ALL_MODES;
	} else {
		snprintf(o->one_label, sizeof(o->one_label), "%s%s",
			 vqf_cli_cache_name(o->cache),
			 o->writeback ? "+wb" : "");
		o->one = (struct run_mode){ o->one_label, o->cache,
					    o->writeback };
		o->modes = &o->one;
		o->nmodes = 1;
	}
	if (o->connect) {
		/* The back-end's own settings are its command line's. */
		if (o->shared || o->fs_set || o->threads_set ||
		    o->inline_kick || o->handoff || o->dax_window_set)
			return vqf_cli_bad_usage("--connect: --shared, "
				"--backend, --threads, --inline, --handoff "
				"and --dax-window are the back-end's (use "
				"--dax for the guest's side)");
		/* virtiofsd and vqfuse-sim vhost-user both end when their
		 * front-end hangs up: no fresh machine per mode.
		 */
		if (o->all)
			return vqf_cli_bad_usage("--connect: one cache mode per "
				"back-end run, not --cache=all");
		return 0;
	}
	if (!o->shared)
		return vqf_cli_bad_usage("run: --shared DIR or --connect "
					 "SOCKET is required");
	{
		struct stat st;

		if (stat(o->shared, &st))
			return vqf_cli_bad_usage("--shared: %s: %s",
						 o->shared, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return vqf_cli_bad_usage("--shared: %s: not a "
						 "directory", o->shared);
	}
	return 0;
}

/* Progress: one line a second at most, once the run has taken a second. */
/* Progress: one line a second at most, once the run has taken a second. */
struct progress {
	struct timespec start, last;
	bool tty, shown;
	const char *mode;	/* the mode's label, in a matrix run */
};

static double since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static void progress_cb(void *arg, const char *phase, uint64_t done,
			uint64_t total)
{
	struct progress *p = arg;
	double pct = total ? 100.0 * (double)done / (double)total : 0;

	if (since(&p->start) < 1.0 || (p->shown && since(&p->last) < 1.0))
		return;
	clock_gettime(CLOCK_MONOTONIC, &p->last);
	p->shown = true;
	/* On a terminal the line is rewritten in place (\e[K: erase the
	 * rest of a longer previous line).
	 */
	fprintf(stderr, "%s%s: %s%s%s %llu/%llu (%.0f%%)  %.0f s%s",
		p->tty ? "\r" : "", vqf_cli_prog, p->mode ? p->mode : "",
		p->mode ? " " : "", phase, (unsigned long long)done,
		(unsigned long long)total, pct, since(&p->start),
		p->tty ? "\033[K" : "\n");
	fflush(stderr);
}

static void progress_end(struct progress *p)
{
	if (p->tty && p->shown)
		fprintf(stderr, "\r\033[K");
}

static double per_op(uint64_t v, uint64_t ops)
{
	return ops ? (double)v / (double)ops : 0;
}

static double rate(double v, double secs)
{
	return secs > 0 ? v / secs : 0;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static const char *json_bool(bool b)
{
	return b ? "true" : "false";
}

/*
 * A failed run over a back-end that went away: say so after the failing
 * operation, with the front-end's own errno for it (hung up, timed out,
 * broke the protocol), so the ENOTCONN of the operation is explained.
 */
static void note_lost(struct vqf_sim *s, struct vqf_wl_result *res)
{
	unsigned int i;
	size_t n;
	int err;

	for (i = 0; i < vqf_sim_guests(s); i++) {
		if (!vqf_vfront_is_lost(vqf_sim_front_n(s, i), &err))
			continue;
		n = strlen(res->errmsg);
		snprintf(res->errmsg + n, sizeof(res->errmsg) - n,
			 "; the vhost-user back-end of guest %u is lost: %s",
			 i, strerror(-err));
		return;
	}
}

/* What every JSON output starts with: the machine and the workload. */
static void json_head(const struct run_opts *o, const struct vqf_wl_cfg *wl)
{
	printf("{\n  \"version\": ");
	json_str(VQF_VERSION);
	printf(",\n  \"shared\": ");
	json_str(o->shared ? o->shared : "");
	printf(",\n  \"connect\": ");
	json_str(o->connect ? o->connect : "");
	printf(",\n  \"backend\": ");
	json_str(vqf_wl_sim_fs_name(o->fs));
	printf(",\n  \"workload\": ");
	json_str(vqf_wl_kind_name(wl->kind));
	printf(",\n  \"queues\": %u,\n  \"queue_size\": %u,\n"
	       "  \"threads\": %u,\n  \"inline\": %s,\n  \"handoff\": %s,\n"
	       "  \"poll_us\": %u,\n"
	       "  \"guests\": %u,\n  \"jobs\": %u,\n"
	       "  \"files\": %u,\n  \"size\": %llu,\n  \"bs\": %llu,\n"
	       "  \"timeout_seconds\": %.3f,\n",
	       o->queues, o->queue_size, o->threads,
	       json_bool(o->inline_kick),
	       json_bool(o->handoff && !o->inline_kick && !o->poll_us),
	       o->poll_us,
	       o->guests ? o->guests : 1, wl->jobs,
	       wl->kind == VQF_WL_SMALLFILE ? wl->files : wl->jobs,
	       (unsigned long long)wl->size, (unsigned long long)wl->bs,
	       o->timeout > 0 ? o->timeout : 1.0);
	printf("  \"dax\": ");
	json_str(vqf_cli_dax_name(o->dax, o->dax_always));
	/* With --connect the window is the back-end's: its size unknown. */
	if (o->dax && o->connect)
		printf(",\n  \"dax_window\": null,\n");
	else
		printf(",\n  \"dax_window\": %llu,\n",
		       !o->dax ? 0ull : o->dax_window ? o->dax_window :
		       VQF_CLI_DAX_WINDOW_DEFAULT);
	/* --dax-stale as given; null: the guest's default bound */
	if (o->dax_stale_set)
		printf("  \"dax_stale\": %d,\n",
		       o->dax_stale < 0 ? 0 : o->dax_stale);
	else
		printf("  \"dax_stale\": null,\n");
}

/* A mode's identity, its outcome and its phases, at @ind spaces. */
static void json_result(const struct run_mode *m,
			const struct vqf_wl_result *res, int ind)
{
	printf("%*s\"mode\": ", ind, "");
	json_str(m->label);
	printf(",\n%*s\"cache\": ", ind, "");
	json_str(vqf_cli_cache_name(m->cache));
	printf(",\n%*s\"writeback\": %s,\n%*s\"ok\": %s,\n", ind, "",
	       json_bool(m->writeback), ind, "", json_bool(!res->err));
	if (res->err) {
		printf("%*s\"error\": ", ind, "");
		json_str(res->errmsg);
		printf(",\n%*s\"errno\": %d,\n", ind, "", -res->err);
	}
	printf("%*s\"total_seconds\": %.6f,\n%*s\"phases\": [", ind, "",
	       res->total_secs, ind, "");
	for (unsigned int i = 0; i < res->nphases; i++) {
		const struct vqf_wl_phase *p = &res->phase[i];
		const struct vqf_wl_counters *d = &p->delta;

		printf("%s\n%*s  {\"name\": ", i ? "," : "", ind, "");
		json_str(p->name);
		printf(", \"ops\": %llu, \"bytes\": %llu, \"seconds\": %.6f, "
		       "\"ops_per_sec\": %.1f, \"mib_per_sec\": %.2f,\n"
		       "%*s   \"requests\": %llu, \"lookups\": %llu, "
		       "\"forgets\": %llu, \"kicks\": %llu, "
		       "\"irqs\": %llu, \"interrupts\": %llu, "
		       "\"cli_bytes_copied\": %llu, "
		       "\"drv_bytes_copied\": %llu,\n"
		       "%*s   \"requests_per_op\": %.3f, "
		       "\"lookups_per_op\": %.3f, "
		       "\"kicks_per_op\": %.3f, \"irqs_per_op\": %.3f, "
		       "\"interrupts_per_op\": %.3f, "
		       "\"cli_bytes_copied_per_op\": %.1f, "
		       "\"drv_bytes_copied_per_op\": %.1f}",
		       (unsigned long long)p->ops,
		       (unsigned long long)p->bytes, p->secs,
		       rate(p->ops, p->secs),
		       rate(p->bytes, p->secs) / 1048576.0, ind, "",
		       (unsigned long long)d->requests,
		       (unsigned long long)d->lookups,
		       (unsigned long long)d->forgets,
		       (unsigned long long)d->kicks,
		       (unsigned long long)d->irqs,
		       (unsigned long long)d->interrupts,
		       (unsigned long long)d->cli_copied,
		       (unsigned long long)d->drv_copied, ind, "",
		       per_op(d->requests, p->ops),
		       per_op(d->lookups, p->ops), per_op(d->kicks, p->ops),
		       per_op(d->irqs, p->ops),
		       per_op(d->interrupts, p->ops),
		       per_op(d->cli_copied, p->ops),
		       per_op(d->drv_copied, p->ops));
	}
	printf("%s]", res->nphases ? "\n  " : "");
	if (res->nphases && ind > 2)
		printf("%*s", ind - 2, "");
}

/*
 * One mode: the result's fields at the top level.  Several: "modes", an
 * array of them, and "ok" for the whole run.
 */
static void print_json(const struct run_opts *o, const struct vqf_wl_cfg *wl,
		       const struct vqf_wl_result *res, unsigned int nres)
{
	bool ok = true;

	json_head(o, wl);
	if (!o->all) {
		json_result(&o->modes[0], &res[0], 2);
		printf("\n}\n");
		return;
	}
	for (unsigned int i = 0; i < nres; i++)
		ok = ok && !res[i].err;
	printf("  \"ok\": %s,\n  \"modes\": [", json_bool(ok && nres ==
						       o->nmodes));
	for (unsigned int i = 0; i < nres; i++) {
		printf("%s\n    {\n", i ? "," : "");
		json_result(&o->modes[i], &res[i], 6);
		printf("\n    }");
	}
	printf("%s]\n}\n", nres ? "\n  " : "");
}

static void print_title(const struct run_opts *o, const struct vqf_wl_cfg *wl)
{
	if (o->connect)
		printf("%s over the vhost-user back-end at %s: %u queue(s) "
		       "x %u, guests %u, jobs %u, ",
		       vqf_wl_kind_name(wl->kind), o->connect, o->queues,
		       o->queue_size, o->guests ? o->guests : 1, wl->jobs);
	else
		printf("%s on %s: backend %s, %u queue(s) x %u, device "
		       "threads %u%s, guests %u, jobs %u, ",
		       vqf_wl_kind_name(wl->kind), o->shared,
		       vqf_wl_sim_fs_name(o->fs), o->queues, o->queue_size,
		       o->threads, o->inline_kick ? " (inline)" :
		       o->poll_us ? "" : o->handoff ? " (handoff)" :
		       " (direct)", o->guests ? o->guests : 1, wl->jobs);
	if (o->poll_us && !o->inline_kick)
		printf("polling up to %u us, ", o->poll_us);
	if (wl->kind == VQF_WL_SMALLFILE)
		printf("%u files x %llu B per job", wl->files,
		       (unsigned long long)wl->size);
	else
		printf("%llu B file per job, bs %llu",
		       (unsigned long long)wl->size,
		       (unsigned long long)wl->bs);
	if (o->all)
		printf("\n");
	else
		printf(", cache %s\n", o->modes[0].label);
}

static void print_table(const struct run_opts *o,
			const struct vqf_wl_cfg *wl,
			const struct vqf_wl_result *res)
{
	print_title(o, wl);
	printf("%-15s %9s %8s %10s %8s %7s %7s %7s %7s %7s %11s %11s\n",
	       "phase", "ops", "seconds", "ops/s", "MiB/s", "req/op",
	       "lkp/op", "kick/op", "irq/op", "intr/op", "cli-copy/op",
	       "drv-copy/op");
	for (unsigned int i = 0; i < res->nphases; i++) {
		const struct vqf_wl_phase *p = &res->phase[i];
		const struct vqf_wl_counters *d = &p->delta;

		printf("%-15s %9llu %8.3f %10.1f %8.2f %7.2f %7.2f %7.2f "
		       "%7.2f %7.2f %11.0f %11.0f\n", p->name,
		       (unsigned long long)p->ops, p->secs,
		       rate(p->ops, p->secs),
		       rate(p->bytes, p->secs) / 1048576.0,
		       per_op(d->requests, p->ops),
		       per_op(d->lookups, p->ops), per_op(d->kicks, p->ops),
		       per_op(d->irqs, p->ops),
		       per_op(d->interrupts, p->ops),
		       per_op(d->cli_copied, p->ops),
		       per_op(d->drv_copied, p->ops));
	}
}

/* The matrix: one table per measure, a row per phase, a column per mode. */
enum measure { M_OPS, M_REQ, M_LKP, M_KICK, M_IRQ, M_INTR, M_NR };

static const char *const measure_name[M_NR] = {
	"ops/s", "req/op", "lkp/op", "kick/op", "irq/op", "intr/op",
};

static double measure(const struct vqf_wl_phase *p, enum measure m)
{
	const struct vqf_wl_counters *d = &p->delta;

	switch (m) {
	case M_OPS:
		return rate(p->ops, p->secs);
	case M_REQ:
		return per_op(d->requests, p->ops);
	case M_LKP:
		return per_op(d->lookups, p->ops);
	case M_KICK:
		return per_op(d->kicks, p->ops);
	case M_IRQ:
		return per_op(d->irqs, p->ops);
	default:
		return per_op(d->interrupts, p->ops);
	}
}

/* The phases of the longest result (a failed mode has fewer). */
static const struct vqf_wl_result *phase_ref(const struct vqf_wl_result *res,
					     unsigned int nres)
{
	const struct vqf_wl_result *ref = &res[0];

	for (unsigned int i = 1; i < nres; i++)
		if (res[i].nphases > ref->nphases)
			ref = &res[i];
	return ref;
}

static void print_matrix(const struct run_opts *o,
			 const struct vqf_wl_cfg *wl,
			 const struct vqf_wl_result *res, unsigned int nres)
{
	const struct vqf_wl_result *ref = phase_ref(res, nres);

	print_title(o, wl);
	for (int m = 0; m < M_NR; m++) {
		printf("\n%-15s", measure_name[m]);
		for (unsigned int k = 0; k < nres; k++)
			printf(" %10s", o->modes[k].label);
		printf("\n");
		for (unsigned int i = 0; i < ref->nphases; i++) {
			printf("%-15s", ref->phase[i].name);
			for (unsigned int k = 0; k < nres; k++) {
				if (i >= res[k].nphases)
					printf(" %10s", "-");
				else
					printf(m == M_OPS ? " %10.0f" :
					       " %10.2f",
					       measure(&res[k].phase[i], m));
			}
			printf("\n");
		}
	}
}

/* --plot: gnuplot from $VQF_GNUPLOT (default "gnuplot" on PATH). */
static const char *gnuplot_prog(void)
{
	const char *g = getenv("VQF_GNUPLOT");

	return g && *g ? g : "gnuplot";
}

static bool have_prog(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (strchr(prog, '/'))
		return !access(prog, X_OK);
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path,
			     prog) < (int)sizeof(buf) && n &&
		    !access(buf, X_OK))
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* Before the run: gnuplot is there and the PNG's directory writable. */
static int plot_check(const char *file)
{
	char *dir = strdup(file), *slash;
	int ret = 0;

	if (!have_prog(gnuplot_prog())) {
		fprintf(stderr, "%s: --plot needs gnuplot, and '%s' is not "
			"there (Debian: apt-get install gnuplot-nox, or set "
			"VQF_GNUPLOT)\n", vqf_cli_prog, gnuplot_prog());
		ret = -1;
	} else if (dir) {
		slash = strrchr(dir, '/');
		if (slash)
			slash[slash == dir] = 0;
		if (access(slash ? dir : ".", W_OK)) {
			fprintf(stderr, "%s: --plot %s: cannot write to %s: "
				"%s\n", vqf_cli_prog, file, slash ? dir : ".",
				strerror(errno));
			ret = -1;
		}
	}
	free(dir);
	return ret;
}

/* A string for gnuplot's single quotes, where '' is a quote. */
static void gp_str(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static FILE *tmp_file(char *path, size_t size)
{
	const char *tmp = getenv("TMPDIR");
	FILE *f;
	int fd;

	snprintf(path, size, "%s/vqfuse-sim-plot.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(path);
	}
	return f;
}

static void plot_title(const struct run_opts *o, const struct vqf_wl_cfg *wl,
		       char *t, size_t size)
{
	int n = snprintf(t, size, "vqfuse-sim %s, backend %s, %u queue(s), "
			 "%s kicks, %u job(s) x ", vqf_wl_kind_name(wl->kind),
			 vqf_wl_sim_fs_name(o->fs), o->queues,
			 o->inline_kick ? "inline" : "threaded", wl->jobs);

	if (n < 0 || (size_t)n >= size)
		return;
	if (wl->kind == VQF_WL_SMALLFILE)
		snprintf(t + n, size - n, "%u files of %llu B", wl->files,
			 (unsigned long long)wl->size);
	else
		snprintf(t + n, size - n, "a %llu B file, bs %llu",
			 (unsigned long long)wl->size,
			 (unsigned long long)wl->bs);
}

/*
 * The data (a row per phase, a column of ops/s per mode) and the script
 * go to temporary files that are gone afterwards; gnuplot's messages are
 * left on stderr.  Grouped bars; a log scale when the values span more
 * than a factor of 20, as the cache modes' do.
 */
static int plot_png(const struct run_opts *o, const struct vqf_wl_cfg *wl,
		    const struct vqf_wl_result *res, unsigned int nres)
{
	const struct vqf_wl_result *ref = phase_ref(res, nres);
	char dpath[PATH_MAX], spath[PATH_MAX], title[256];
	double lo = 0, hi = 0;
	FILE *d, *sc;
	int ret = -1, status;
	pid_t pid;

	if (!ref->nphases) {
		fprintf(stderr, "%s: --plot: no phase completed, nothing to "
			"draw\n", vqf_cli_prog);
		return -1;
	}
	d = tmp_file(dpath, sizeof(dpath));
	if (!d)
		goto fail_tmp;
	sc = tmp_file(spath, sizeof(spath));
	if (!sc) {
		fclose(d);
		unlink(dpath);
		goto fail_tmp;
	}
	fprintf(d, "phase");
	for (unsigned int k = 0; k < nres; k++)
		fprintf(d, " %s", o->modes[k].label);
	fprintf(d, "\n");
	for (unsigned int i = 0; i < ref->nphases; i++) {
		fprintf(d, "%s", ref->phase[i].name);
		for (unsigned int k = 0; k < nres; k++) {
			double v = i < res[k].nphases ?
				   measure(&res[k].phase[i], M_OPS) : 0;

			fprintf(d, " %.1f", v);
			if (v > 0 && (!lo || v < lo))
				lo = v;
			if (v > hi)
				hi = v;
		}
		fprintf(d, "\n");
	}

	fprintf(sc, "set terminal pngcairo size 1200,640 noenhanced "
		"font 'sans,10'\nset output ");
	gp_str(sc, o->plot);
	fprintf(sc, "\nset title ");
	plot_title(o, wl, title, sizeof(title));
	gp_str(sc, title);
	fprintf(sc, "\nset ylabel 'operations per second%s'\n"
		"set style data histograms\n"
		"set style histogram clustered gap 1\n"
		"set style fill solid 0.85 border -1\n"
		"set boxwidth 0.9\n"
		"set key outside right top title 'cache'\n"
		"set grid ytics\n"
		"set xtics nomirror\n", hi > 20 * lo ? " (log scale)" : "");
	if (hi > 20 * lo)
		fprintf(sc, "set logscale y\nset yrange [%g:%g]\n", lo / 2,
			hi * 2);
	else
		fprintf(sc, "set yrange [0:%g]\n", hi * 1.1);
	fprintf(sc, "plot ");
	gp_str(sc, dpath);
	for (unsigned int k = 0; k < nres; k++)
		fprintf(sc, "%s using %u%s title columnheader(%u)",
			k ? ", ''" : "", k + 2, k ? "" : ":xtic(1)", k + 2);
	fprintf(sc, "\n");
	if (fclose(sc) | fclose(d)) {
		fprintf(stderr, "%s: --plot: writing %s: %s\n", vqf_cli_prog,
			spath, strerror(errno));
		goto out;
	}

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* gnuplot's stdout is ours: keep the table or JSON clean. */
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execlp(gnuplot_prog(), gnuplot_prog(), spath, (char *)NULL);
		fprintf(stderr, "%s: --plot: cannot run %s: %s\n",
			vqf_cli_prog, gnuplot_prog(), strerror(errno));
		_exit(127);
	}
	if (pid < 0) {
		fprintf(stderr, "%s: --plot: fork: %s\n", vqf_cli_prog,
			strerror(errno));
		goto out;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s: --plot: gnuplot failed (status %d); "
			"%s not drawn\n", vqf_cli_prog, status, o->plot);
		goto out;
	}
	ret = 0;
out:
	unlink(spath);
	unlink(dpath);
	return ret;
fail_tmp:
	fprintf(stderr, "%s: --plot: temporary file: %s\n", vqf_cli_prog,
		strerror(errno));
	return -1;
}

/* One mode on a fresh machine; 0 or the failure's errno (in @res too). */
static int run_one(const struct run_opts *o, const struct run_mode *m,
		   struct vqf_wl_cfg *wl, struct vqf_wl_result *res)
{
	struct vqf_sim_cfg sc = { 0 };
	struct vqf_trace *tr = NULL;
	struct vqf_wl_fs fs;
	struct vqf_sim *s;
	int ret, tret;

	if (o->trace) {
		ret = vqf_trace_open(o->trace, &tr);
		if (ret) {
			memset(res, 0, sizeof(*res));
			res->err = ret;
			snprintf(res->errmsg, sizeof(res->errmsg),
				 "--trace %s: %s", o->trace, strerror(-ret));
			return ret;
		}
	}
	sc.trace = tr;
	sc.shared = o->shared;
	sc.connect = o->connect;
	sc.fs = o->fs;
	sc.queues = o->queues;
	sc.queue_size = o->queue_size;
	sc.threads = o->threads;
	sc.inline_kick = o->inline_kick;
	sc.handoff = o->handoff;
	sc.poll_ns = (u64)o->poll_us * 1000;
	sc.ram = o->ram;
	sc.guests = o->guests;
	vqf_cli_dax_cfg(&sc, o->dax, o->dax_always, o->dax_window);
	sc.cli.dax_stale = o->dax_stale;
	vqf_cli_cache_cfg(&sc.cli, m->cache, m->writeback, o->timeout);
	ret = vqf_sim_new(&sc, &s);
	if (ret) {
		vqf_trace_close(tr);
		memset(res, 0, sizeof(*res));
		res->err = ret;
		if (o->connect)
			snprintf(res->errmsg, sizeof(res->errmsg),
				 "cannot start the simulated guest on the "
				 "vhost-user back-end at %s: %s (errno %d)",
				 o->connect, strerror(-ret), -ret);
		else
			snprintf(res->errmsg, sizeof(res->errmsg),
				 "cannot start the simulated machine over %s "
				 "(backend %s): %s (errno %d)", o->shared,
				 vqf_wl_sim_fs_name(o->fs), strerror(-ret),
				 -ret);
		return ret;
	}
	vqf_wl_sim_fs(s, o->connect ? "the vhost-user back-end" :
		      vqf_wl_sim_fs_name(o->fs), &fs);
	wl->job_init = vqf_wl_sim_job_init;
	wl->job_arg = s;
	ret = vqf_wl_run(&fs, wl, res);
	wl->job_init = NULL;
	wl->job_arg = NULL;
	if (ret && o->connect)
		note_lost(s, res);
	vqf_sim_free(s);
	tret = vqf_trace_close(tr);
	if (tret && !ret) {
		res->err = ret = tret;
		snprintf(res->errmsg, sizeof(res->errmsg),
			 "--trace %s: %s", o->trace, strerror(-tret));
	}
	return ret;
}

static int cmd_run(int argc, char **argv)
{
	struct vqf_wl_result *res;
	struct progress pg = { 0 };
	struct run_opts o;
	unsigned int nres = 0;
	int ret;

	ret = parse_run(argc, argv, &o);
	if (ret < 0) {
		usage(stdout);
		return 0;
	}
	if (ret)
		return ret;

	/* What the workload will use, for the report. */
	if (!o.wl.size)
		o.wl.size = o.wl.kind == VQF_WL_SMALLFILE ? 4096 : 64 << 20;
	if (!o.wl.bs) {
		if (o.wl.kind == VQF_WL_SMALLFILE)
			o.wl.bs = o.wl.size < (1 << 20) ? o.wl.size : 1 << 20;
		else if (o.wl.kind == VQF_WL_RANDREAD ||
			 o.wl.kind == VQF_WL_RANDWRITE)
			o.wl.bs = 4096;
		else
			o.wl.bs = 128 << 10;
	}
	if (!o.wl.files)
		o.wl.files = 1000;
	/* Not worth a run whose picture cannot be drawn. */
	if (o.plot && plot_check(o.plot))
		return EXIT_FAIL;

	res = calloc(o.nmodes, sizeof(*res));
	if (!res) {
		fprintf(stderr, "%s: out of memory\n", vqf_cli_prog);
		return EXIT_FAIL;
	}
	pg.tty = isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &pg.start);
	if (!o.quiet) {
		o.wl.progress = progress_cb;
		o.wl.progress_arg = &pg;
	}
	/* A failed mode ends the matrix: what follows would likely fail
	 * the same way, and the failure is what to look at.
	 */
	for (ret = 0; nres < o.nmodes && !ret; nres++) {
		pg.mode = o.all ? o.modes[nres].label : NULL;
		ret = run_one(&o, &o.modes[nres], &o.wl, &res[nres]);
	}
	progress_end(&pg);

	if (o.json)
		print_json(&o, &o.wl, res, nres);
	else if (o.all && (res[0].nphases || !ret))
		print_matrix(&o, &o.wl, res, nres);
	else if (!o.all && (res[0].nphases || !ret))
		print_table(&o, &o.wl, res);
	if (ret) {
		const struct vqf_wl_result *r = &res[nres - 1];

		fprintf(stderr, "%s: %s workload failed%s%s: %s\n",
			vqf_cli_prog, vqf_wl_kind_name(o.wl.kind),
			o.all ? " in cache mode " : "",
			o.all ? o.modes[nres - 1].label : "", r->errmsg);
	}
	if (ret == -ENOMEM)
		fprintf(stderr, "%s: guest RAM is %llu MiB: try more --ram, "
			"fewer --jobs or a smaller --bs\n", vqf_cli_prog,
			(o.ram ? o.ram : 256ull << 20) >> 20);
	if (o.plot && !ret && plot_png(&o, &o.wl, res, nres))
		ret = -EIO;
	free(res);
	return ret ? EXIT_FAIL : 0;
}

/* The name under which the program stands in for virtiofsd. */
#define VIRTIOFSD_NAME	"vqfuse-virtiofsd"

int main(int argc, char **argv)
{
	const char *base = argc ? strrchr(argv[0], '/') : NULL;

	base = base ? base + 1 : argc ? argv[0] : "";
	if (!strcmp(base, VIRTIOFSD_NAME)) {
		vqf_cli_prog = VIRTIOFSD_NAME;
		return vqf_cli_virtiofsd(argc - 1, argv + 1);
	}
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("%s %s\n", vqf_cli_prog, VQF_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 2, argv + 2);
	if (!strcmp(argv[1], "mount"))
		return vqf_cli_mount(argc - 2, argv + 2);
	if (!strcmp(argv[1], "vhost-user"))
		return vqf_cli_vhost_user(argc - 2, argv + 2);
	return vqf_cli_bad_usage("unknown command '%s'", argv[1]);
}
