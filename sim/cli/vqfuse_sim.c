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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef VQF_VERSION
#define VQF_VERSION "unknown"
#endif

#define EXIT_FAIL	VQF_CLI_EXIT_FAIL
#define EXIT_USAGE	VQF_CLI_EXIT_USAGE

const char *vqf_cli_prog = "vqfuse-sim";

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s run --shared DIR [options]\n"
"       %s mount MOUNTPOINT --shared DIR [options]\n"
"       %s help | --help | --version\n"
"\n"
"Runs a workload as a simulated virtio-fs guest (vqf_gcli over the guest\n"
"driver, virtqueues, device and a libfuse3 backend) against the host\n"
"directory DIR, and prints per operation: ops/s, FUSE requests, kicks,\n"
"interrupts and bytes copied per operation.  The workload works in its own\n"
"uniquely named subdirectory of DIR and leaves DIR as it found it.\n"
"\n"
"Options of run:\n"
"  --shared DIR        host directory to share (required, must exist)\n"
"  --backend NAME      vqfuse (own passthrough, default) or passthrough_ll\n"
"                      (libfuse3's example)\n"
"  --workload NAME     smallfile (default), seqread, randread, seqwrite,\n"
"                      randwrite\n"
"  --files N           smallfile: files per job (1..10000000, default 1000)\n"
"  --size BYTES        bytes per file (default 4K for smallfile, 64M for\n"
"                      the others); suffixes K, M, G (powers of 1024)\n"
"  --bs BYTES          I/O size (default: the file size up to 1M for\n"
"                      smallfile, 4K for rand*, 128K for seq*; max 64M)\n"
"  --jobs N            guest threads (1..256, default 1); each has its own\n"
"                      subdirectory (smallfile) or file (the others)\n"
"  --queues N          request queues (1..64, default 1)\n"
"  --queue-size N      descriptors per queue (power of two, 8..1024,\n"
"                      default 128)\n"
"  --threads N         device worker threads (0..256, default 0: requests\n"
"                      are served in each queue's thread)\n"
"  --inline            the device runs in the kicking guest thread (QEMU\n"
"                      without ioeventfd) and the guest reaps its own\n"
"                      completions: no thread hand-off per request\n"
"  --ram BYTES         guest RAM (16M..16G, default 256M)\n"
"  --seed N            random offsets of rand* (default fixed)\n"
"  --json              print the results as JSON instead of a table\n"
"  --quiet             no progress line on stderr\n"
"  -h, --help          this text\n"
"\n"
"Workloads:\n"
"  smallfile  phases create (create+write+close), stat, read (open+read+\n"
"             close), append (open O_APPEND+write+close), rename,\n"
"             delete-renamed; one operation is one file\n"
"  seqread    sequential reads of a file written beforehand\n"
"  randread   random reads, each block once, of a file written beforehand\n"
"  seqwrite   sequential writes of a new file\n"
"  randwrite  random writes, each block once, of a new file\n"
"\n"
"Columns: ops/s = operations per second of the phase (all jobs); MiB/s =\n"
"file data; req/op = FUSE requests the driver submitted on the request\n"
"queues (FORGETs on hiprio are counted apart, in the JSON output);\n"
"kick/op = driver kicks of the device; irq/op = driver\n"
"wake-ups on the call eventfd; intr/op = interrupts the device signalled;\n"
"cli-copy/op = bytes the client copied between caller buffers and guest\n"
"pages; drv-copy/op = bytes the driver copied (headers and arguments).\n"
"\n"
"Exit status: 0 success, 1 the workload failed (the failing operation,\n"
"file and errno are named on stderr), 2 bad usage.\n"
"\n", vqf_cli_prog, vqf_cli_prog, vqf_cli_prog);
	vqf_cli_mount_usage(f);
}

int vqf_cli_bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", vqf_cli_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", vqf_cli_prog);
	return EXIT_USAGE;
}

/* See vqf_cli.h. */
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

struct run_opts {
	const char *shared;
	enum vqf_sim_fs fs;
	struct vqf_wl_cfg wl;
	unsigned int queues, queue_size, threads;
	unsigned long long ram;
	bool json, quiet, inline_kick;
};

struct opt_def {
	const char *name;
	bool suffix;
	unsigned long long lo, hi;
};

/* Numeric options: name, suffixes allowed, range. */
static const struct opt_def num_opts[] = {
	{ "--files", false, 1, 10000000 },
	{ "--size", true, 1, 1ull << 40 },
	{ "--bs", true, 1, 64ull << 20 },
	{ "--jobs", false, 1, 256 },
	{ "--queues", false, 1, 64 },
	/* CREATE takes six descriptors, and the ring refuses chains longer
	 * than the queue even with indirect descriptors.
	 */
	{ "--queue-size", false, 8, 1024 },
	{ "--threads", false, 0, 256 },
	{ "--ram", true, 16ull << 20, 16ull << 30 },
	{ "--seed", false, 0, UINT_MAX },
};

static int set_num(struct run_opts *o, const char *name,
		   unsigned long long v)
{
	if (!strcmp(name, "--files"))
		o->wl.files = v;
	else if (!strcmp(name, "--size"))
		o->wl.size = v;
	else if (!strcmp(name, "--bs"))
		o->wl.bs = v;
	else if (!strcmp(name, "--jobs"))
		o->wl.jobs = v;
	else if (!strcmp(name, "--queues"))
		o->queues = v;
	else if (!strcmp(name, "--queue-size"))
		o->queue_size = v;
	else if (!strcmp(name, "--threads"))
		o->threads = v;
	else if (!strcmp(name, "--ram"))
		o->ram = v;
	else if (!strcmp(name, "--seed"))
		o->wl.seed = v;
	return 0;
}

/* Returns 0, EXIT_USAGE after a message, or -1 when help was asked. */
static int parse_run(int argc, char **argv, struct run_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->queues = 1;
	o->queue_size = 128;
	o->wl.jobs = 1;
	for (int i = 0; i < argc; i++) {
		char name[32];
		const char *a = argv[i], *val = NULL, *eq;
		const struct opt_def *nd = NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return -1;
		if (strncmp(a, "--", 2))
			return vqf_cli_bad_usage("run: unexpected argument "
						 "'%s'", a);
		eq = strchr(a, '=');
		if (eq && (size_t)(eq - a) < sizeof(name)) {
			memcpy(name, a, eq - a);
			name[eq - a] = 0;
			val = eq + 1;
		} else if (eq) {
			return vqf_cli_bad_usage("run: unknown option '%s'",
						 a);
		} else {
			snprintf(name, sizeof(name), "%s", a);
		}
		if (!strcmp(name, "--inline")) {
			if (val)
				return vqf_cli_bad_usage("%s takes no value",
							 name);
			o->inline_kick = true;
			continue;
		}
		if (!strcmp(name, "--json") || !strcmp(name, "--quiet")) {
			if (val)
				return vqf_cli_bad_usage("%s takes no value",
							 name);
			if (name[2] == 'j')
				o->json = true;
			else
				o->quiet = true;
			continue;
		}
		for (size_t k = 0; k < sizeof(num_opts) / sizeof(*num_opts);
		     k++)
			if (!strcmp(name, num_opts[k].name))
				nd = &num_opts[k];
		if (!nd && strcmp(name, "--shared") &&
		    strcmp(name, "--backend") && strcmp(name, "--workload"))
			return vqf_cli_bad_usage("run: unknown option '%s'",
						 name);
		if (!val) {
			if (i + 1 >= argc)
				return vqf_cli_bad_usage("%s needs a value",
							 name);
			val = argv[++i];
		}
		if (nd) {
			unsigned long long v;

			if (vqf_cli_parse_num(val, nd->suffix, nd->lo,
					      nd->hi, &v))
				return vqf_cli_bad_usage(
					"%s: invalid value '%s' "
					"(expected %s%llu..%llu)", name, val,
					nd->suffix ? "bytes, K/M/G suffix, " :
					"", nd->lo, nd->hi);
			set_num(o, name, v);
		} else if (!strcmp(name, "--shared")) {
			if (!*val)
				return vqf_cli_bad_usage("--shared: empty "
							 "path");
			o->shared = val;
		} else if (!strcmp(name, "--backend")) {
			if (!strcmp(val, "vqfuse"))
				o->fs = VQF_SIM_FS_VQFUSE;
			else if (!strcmp(val, "passthrough_ll") ||
				 !strcmp(val, "ptll"))
				o->fs = VQF_SIM_FS_PTLL;
			else
				return vqf_cli_bad_usage(
					"--backend: unknown backend '%s' "
					"(vqfuse, passthrough_ll)", val);
		} else if (vqf_wl_kind_parse(val, &o->wl.kind)) {
			return vqf_cli_bad_usage(
				"--workload: unknown workload '%s' "
				"(smallfile, seqread, randread, seqwrite, "
				"randwrite)", val);
		}
	}
	if (o->queue_size & (o->queue_size - 1))
		return vqf_cli_bad_usage("--queue-size: %u is not a power "
					 "of two", o->queue_size);
	if (!o->shared)
		return vqf_cli_bad_usage("run: --shared DIR is required");
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
struct progress {
	struct timespec start, last;
	bool tty, shown;
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
	fprintf(stderr, "%s%s: %s %llu/%llu (%.0f%%)  %.0f s%s", p->tty ?
		"\r" : "", vqf_cli_prog, phase, (unsigned long long)done,
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

static void print_json(const struct run_opts *o, const struct vqf_wl_cfg *wl,
		       const struct vqf_wl_result *res)
{
	printf("{\n  \"version\": ");
	json_str(VQF_VERSION);
	printf(",\n  \"shared\": ");
	json_str(o->shared);
	printf(",\n  \"backend\": ");
	json_str(vqf_wl_sim_fs_name(o->fs));
	printf(",\n  \"workload\": ");
	json_str(vqf_wl_kind_name(wl->kind));
	printf(",\n  \"queues\": %u,\n  \"queue_size\": %u,\n"
	       "  \"threads\": %u,\n  \"jobs\": %u,\n  \"files\": %u,\n"
	       "  \"size\": %llu,\n  \"bs\": %llu,\n  \"ok\": %s,\n",
	       o->queues, o->queue_size, o->threads, wl->jobs,
	       wl->kind == VQF_WL_SMALLFILE ? wl->files : wl->jobs,
	       (unsigned long long)wl->size, (unsigned long long)wl->bs,
	       res->err ? "false" : "true");
	if (res->err) {
		printf("  \"error\": ");
		json_str(res->errmsg);
		printf(",\n  \"errno\": %d,\n", -res->err);
	}
	printf("  \"total_seconds\": %.6f,\n  \"phases\": [", res->total_secs);
	for (unsigned int i = 0; i < res->nphases; i++) {
		const struct vqf_wl_phase *p = &res->phase[i];
		const struct vqf_wl_counters *d = &p->delta;

		printf("%s\n    {\"name\": ", i ? "," : "");
		json_str(p->name);
		printf(", \"ops\": %llu, \"bytes\": %llu, \"seconds\": %.6f, "
		       "\"ops_per_sec\": %.1f, \"mib_per_sec\": %.2f,\n"
		       "     \"requests\": %llu, \"forgets\": %llu, "
		       "\"kicks\": %llu, "
		       "\"irqs\": %llu, \"interrupts\": %llu, "
		       "\"cli_bytes_copied\": %llu, "
		       "\"drv_bytes_copied\": %llu,\n"
		       "     \"requests_per_op\": %.3f, "
		       "\"kicks_per_op\": %.3f, \"irqs_per_op\": %.3f, "
		       "\"interrupts_per_op\": %.3f, "
		       "\"cli_bytes_copied_per_op\": %.1f, "
		       "\"drv_bytes_copied_per_op\": %.1f}",
		       (unsigned long long)p->ops,
		       (unsigned long long)p->bytes, p->secs,
		       rate(p->ops, p->secs),
		       rate(p->bytes, p->secs) / 1048576.0,
		       (unsigned long long)d->requests,
		       (unsigned long long)d->forgets,
		       (unsigned long long)d->kicks,
		       (unsigned long long)d->irqs,
		       (unsigned long long)d->interrupts,
		       (unsigned long long)d->cli_copied,
		       (unsigned long long)d->drv_copied,
		       per_op(d->requests, p->ops), per_op(d->kicks, p->ops),
		       per_op(d->irqs, p->ops),
		       per_op(d->interrupts, p->ops),
		       per_op(d->cli_copied, p->ops),
		       per_op(d->drv_copied, p->ops));
	}
	printf("%s]\n}\n", res->nphases ? "\n  " : "");
}

static void print_table(const struct run_opts *o,
			const struct vqf_wl_cfg *wl,
			const struct vqf_wl_result *res)
{
	printf("%s on %s: backend %s, %u queue(s) x %u, device threads %u, "
	       "jobs %u, ", vqf_wl_kind_name(wl->kind), o->shared,
	       vqf_wl_sim_fs_name(o->fs), o->queues, o->queue_size,
	       o->threads, wl->jobs);
	if (wl->kind == VQF_WL_SMALLFILE)
		printf("%u files x %llu B per job\n", wl->files,
		       (unsigned long long)wl->size);
	else
		printf("%llu B file per job, bs %llu\n",
		       (unsigned long long)wl->size,
		       (unsigned long long)wl->bs);
	printf("%-15s %9s %8s %10s %8s %7s %7s %7s %7s %11s %11s\n",
	       "phase", "ops", "seconds", "ops/s", "MiB/s", "req/op",
	       "kick/op", "irq/op", "intr/op", "cli-copy/op", "drv-copy/op");
	for (unsigned int i = 0; i < res->nphases; i++) {
		const struct vqf_wl_phase *p = &res->phase[i];
		const struct vqf_wl_counters *d = &p->delta;

		printf("%-15s %9llu %8.3f %10.1f %8.2f %7.2f %7.2f %7.2f "
		       "%7.2f %11.0f %11.0f\n", p->name,
		       (unsigned long long)p->ops, p->secs,
		       rate(p->ops, p->secs),
		       rate(p->bytes, p->secs) / 1048576.0,
		       per_op(d->requests, p->ops), per_op(d->kicks, p->ops),
		       per_op(d->irqs, p->ops),
		       per_op(d->interrupts, p->ops),
		       per_op(d->cli_copied, p->ops),
		       per_op(d->drv_copied, p->ops));
	}
}

static int cmd_run(int argc, char **argv)
{
	struct vqf_sim_cfg sc = { 0 };
	struct vqf_wl_result *res;
	struct progress pg = { 0 };
	struct run_opts o;
	struct vqf_wl_fs fs;
	struct vqf_sim *s;
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

	sc.shared = o.shared;
	sc.fs = o.fs;
	sc.queues = o.queues;
	sc.queue_size = o.queue_size;
	sc.threads = o.threads;
	sc.inline_kick = o.inline_kick;
	sc.ram = o.ram;
	ret = vqf_sim_new(&sc, &s);
	if (ret) {
		struct vqf_wl_result fail = { .err = ret };

		snprintf(fail.errmsg, sizeof(fail.errmsg), "cannot start the "
			 "simulated machine over %s (backend %s): %s "
			 "(errno %d)", o.shared, vqf_wl_sim_fs_name(o.fs),
			 strerror(-ret), -ret);
		if (o.json)
			print_json(&o, &o.wl, &fail);
		fprintf(stderr, "%s: %s\n", vqf_cli_prog, fail.errmsg);
		return EXIT_FAIL;
	}
	vqf_wl_sim_fs(s, vqf_wl_sim_fs_name(o.fs), &fs);

	res = calloc(1, sizeof(*res));
	if (!res) {
		vqf_sim_free(s);
		fprintf(stderr, "%s: out of memory\n", vqf_cli_prog);
		return EXIT_FAIL;
	}
	pg.tty = isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &pg.start);
	if (!o.quiet) {
		o.wl.progress = progress_cb;
		o.wl.progress_arg = &pg;
	}
	ret = vqf_wl_run(&fs, &o.wl, res);
	progress_end(&pg);
	vqf_sim_free(s);

	if (o.json)
		print_json(&o, &o.wl, res);
	else if (res->nphases || !ret)
		print_table(&o, &o.wl, res);
	if (ret)
		fprintf(stderr, "%s: %s workload failed: %s\n", vqf_cli_prog,
			vqf_wl_kind_name(o.wl.kind), res->errmsg);
	if (ret == -ENOMEM)
		fprintf(stderr, "%s: guest RAM is %llu MiB: try more --ram, "
			"fewer --jobs or a smaller --bs\n", vqf_cli_prog,
			(o.ram ? o.ram : 256ull << 20) >> 20);
	free(res);
	return ret ? EXIT_FAIL : 0;
}

int main(int argc, char **argv)
{
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
	return vqf_cli_bad_usage("unknown command '%s'", argv[1]);
}
