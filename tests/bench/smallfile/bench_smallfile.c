// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench_smallfile.c - the RFC's smallfile table, same workload and same
 * run, on six stacks:
 *
 *   (a) native     plain syscalls on a host directory;
 *   (b) kernel     libfuse3's example passthrough_ll mounted through the
 *                  host kernel's /dev/fuse, plain syscalls on the mount;
 *   (c) sim+ptll   the simulated guest (vqf_sim) over passthrough_ll;
 *   (d) sim+vqfuse the simulated guest over vqfuse's own passthrough.
 *   (e), (f)       (c) and (d) with inline kicks: the device runs in the
 *                  kicking thread, the caller reaps its own reply.
 *   (g), (h)       (c) and (d) with adaptive polling (--poll-us): the
 *                  device's queue thread polls the avail ring, the caller
 *                  its used ring, before sleeping on the eventfds.
 *
 * passthrough_ll is mounted with cache=never (entry and attribute timeouts
 * 0, direct_io) because the simulated guest is cache=none: both send every
 * operation to the server.  Rounds alternate the stacks; the median of the
 * rounds is reported per phase, with ratios c/b, d/b, d/a and the same
 * for the inline-kick stacks (e), (f) and the polled ones (g), (h).  ls-l
 * on (a) and (b) is getdents (the host kernel picks READDIRPLUS on the
 * mount), lstat and lgetxattr, as on the simulated stacks, which list
 * with READDIRPLUS.  After the workload, each stack times --stats stat
 * calls of one file (the latency of one request's round trip).
 *
 *   (i), (j), (k)  the null backend (answers from memory, no system
 *                  call) threaded, inline and polling: the stat loop
 *                  only, the transport alone.
 *
 * Per stat, for every stack: system calls and context switches of this
 * process (all its threads; perf_event_open counters per thread where
 * permitted, else getrusage's context switches and no syscall count);
 * for the simulated stacks, in the last round, a second stat loop on a
 * traced machine splits the round trip into the trace's stages.
 */
#define _GNU_SOURCE
#include "vqf_wl_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <dirent.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef VQF_PTLL_EXE
#define VQF_PTLL_EXE ""
#endif

enum {
	ST_NATIVE, ST_KERNEL, ST_SIM_PTLL, ST_SIM_VQF,
	ST_INL_PTLL, ST_INL_VQF,	/* the same two with inline kicks */
	ST_POLL_PTLL, ST_POLL_VQF,	/* threaded, polling */
	ST_NULL, ST_INL_NULL, ST_POLL_NULL,	/* null backend, stat only */
	/* Threaded, every kick through the queue thread (handoff). */
	ST_HO_PTLL, ST_HO_VQF, ST_HO_NULL,
	ST_NR
};

static const char *const st_name[ST_NR] = {
	"(a) native", "(b) kernel+ptll", "(c) sim+ptll", "(d) sim+vqfuse",
	"(e) inline+ptll", "(f) inline+vqfuse",
	"(g) poll+ptll", "(h) poll+vqfuse",
	"(i) sim+null", "(j) inline+null", "(k) poll+null",
	"(l) handoff+ptll", "(m) handoff+vqfuse", "(n) handoff+null",
};

#define MAX_RUNS	15
#define WHY_LEN		1024
#define BASE_LEN	200
#define PATH_LEN	(BASE_LEN + 64)
#define NPHASES		6

struct bench {
	struct vqf_wl_cfg wl;
	unsigned int queues, threads, runs, poll_us, nstats;
	bool want[ST_NR];		/* --stacks */
	bool poll_fixed;		/* --poll-fixed */
	const char *ptll;
	char base[BASE_LEN];
	char dir[ST_NR][PATH_LEN];
	char mnt[PATH_LEN];
	bool skip[ST_NR];
	char why[ST_NR][WHY_LEN];
	/* ops/s per stack, phase, round */
	double ops[ST_NR][NPHASES][MAX_RUNS];
	double req[ST_NR][NPHASES];	/* requests/op, last round */
	double stat_us[ST_NR][MAX_RUNS];	/* us per stat, per round */
	/* Transport per request over the whole run, last round: kicks,
	 * interrupts, polls that caught their work on the device and in
	 * the driver, and us spent spinning on each side.
	 */
	double kick[ST_NR], irq[ST_NR], dhit[ST_NR], ghit[ST_NR];
	double dspin[ST_NR], gspin[ST_NR];
	double cpu[ST_NR];	/* process CPU us (user + sys) per request */
	/* Per stat of the stat loop, last round: system calls (-1: not
	 * counted) and context switches of this process.
	 */
	double sys[ST_NR], cs[ST_NR];
	/* The traced stat loop: us per stat, then us per stage. */
	double tr_us[ST_NR];
	struct vqf_trace_stages stages[ST_NR];
	const char *phase[NPHASES];
	unsigned int nphases;
	const char *count_src;	/* how sys and cs were counted */
};

/* The mount, for the signal handler. */
static volatile pid_t ptll_pid;
static char sig_mnt[PATH_LEN];

static void usage(FILE *f)
{
	fprintf(f,
"Usage: bench-smallfile [--files N] [--size BYTES] [--jobs N] [--queues N]\n"
"                       [--threads N] [--runs N] [--poll-us N] [--stats N]\n"
"                       [--poll-fixed] [--stacks LETTERS] [--ptll PATH]\n"
"\n"
"Runs the smallfile workload (create, ls-l, read, append, rename,\n"
"delete-renamed) on (a) a native directory, (b) libfuse3's passthrough_ll\n"
"mounted through /dev/fuse with cache=never, (c) the simulated guest over\n"
"passthrough_ll and (d) the simulated guest over vqfuse's passthrough, and\n"
"prints the median ops/s of the rounds and the ratios c/b, d/b, d/a,\n"
"e/b, f/b and f/a ((e), (f): (c), (d) with inline kicks), g/b, h/b and\n"
"h/d ((g), (h): (c), (d) polling), l/b, m/b and d/m ((l), (m): (c), (d)\n"
"with every kick through the device's queue thread), then the latency of\n"
"a stat.  (i), (j), (k), (n): the null backend (no system call) threaded\n"
"(direct kicks), inline, polling and handoff, stat loop only.  Per stat: system calls and context switches\n"
"of this process, and the trace's stages (pending, ring, device, reply).\n"
"\n"
"  --files N      files per job (default 1000)\n"
"  --size BYTES   file size (default 4096)\n"
"  --jobs N       threads, each in its own directory (default 1)\n"
"  --queues N     simulated request queues (default 1)\n"
"  --threads N    simulated device workers (default 0: inline)\n"
"  --runs N       rounds, stacks alternating (1..%d, default 3)\n"
"  --poll-us N    polling window of (g), (h) in us (1..10000, default 50)\n"
"  --poll-fixed   (g), (h) poll the whole window every time (no adapting)\n"
"  --stats N      stat calls timed per stack and round (0..10^7, default\n"
"                 2000; 0: none)\n"
"  --stacks L     only these stacks, e.g. cdgh (default abcdefghijklmn)\n"
"  --ptll PATH    the passthrough_ll executable (default: the one built\n"
"                 with this program)\n"
"Temporary directories are made under $TMPDIR (default /tmp).\n",
		MAX_RUNS);
}

static int num_arg(const char *opt, const char *s, unsigned long long lo,
		   unsigned long long hi, unsigned long long *out)
{
	char *end;

	errno = 0;
	if (!s || *s < '0' || *s > '9')
		goto bad;
	*out = strtoull(s, &end, 10);
	if (errno || *end || *out < lo || *out > hi)
		goto bad;
	return 0;
bad:
	fprintf(stderr, "bench-smallfile: %s: invalid value '%s' "
		"(expected %llu..%llu)\n", opt, s ? s : "", lo, hi);
	return -1;
}

static int parse(int argc, char **argv, struct bench *b)
{
	b->wl.kind = VQF_WL_SMALLFILE;
	b->wl.files = 1000;
	b->wl.size = 4096;
	b->wl.jobs = 1;
	b->queues = 1;
	b->runs = 3;
	b->poll_us = 50;
	b->nstats = 2000;
	for (int s = 0; s < ST_NR; s++)
		b->want[s] = true;
	b->ptll = VQF_PTLL_EXE;
	for (int i = 1; i < argc; i++) {
		static const struct {
			const char *name;
			unsigned long long lo, hi;
		} nums[] = {
			{ "--files", 1, 10000000 },
			{ "--size", 1, 64 << 20 },
			{ "--jobs", 1, 256 },
			{ "--queues", 1, 64 },
			{ "--threads", 0, 256 },
			{ "--runs", 1, MAX_RUNS },
			{ "--poll-us", 1, 10000 },
			{ "--stats", 0, 10000000 },
		};
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned long long n;
		unsigned int k;

		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			usage(stdout);
			exit(0);
		}
		i++;
		if (!strcmp(o, "--ptll") && v) {
			b->ptll = v;
			continue;
		}
		if (!strcmp(o, "--poll-fixed")) {
			b->poll_fixed = true;
			i--;
			continue;
		}
		if (!strcmp(o, "--stacks") && v && *v) {
			for (int s = 0; s < ST_NR; s++)
				b->want[s] = strchr(v, 'a' + s) != NULL;
			for (const char *c = v; *c; c++) {
				if (*c < 'a' || *c >= 'a' + ST_NR) {
					fprintf(stderr, "bench-smallfile: "
						"--stacks: no stack '%c'\n",
						*c);
					return -1;
				}
			}
			continue;
		}
		for (k = 0; k < sizeof(nums) / sizeof(nums[0]); k++)
			if (!strcmp(o, nums[k].name))
				break;
		if (k == sizeof(nums) / sizeof(nums[0])) {
			fprintf(stderr, "bench-smallfile: bad option '%s'\n", o);
			return -1;
		}
		if (num_arg(o, v, nums[k].lo, nums[k].hi, &n))
			return -1;
		switch (k) {
		case 0:
			b->wl.files = n;
			break;
		case 1:
			b->wl.size = n;
			break;
		case 2:
			b->wl.jobs = n;
			break;
		case 3:
			b->queues = n;
			break;
		case 4:
			b->threads = n;
			break;
		case 6:
			b->poll_us = n;
			break;
		case 7:
			b->nstats = n;
			break;
		default:
			b->runs = n;
			break;
		}
	}
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(p);
}

static void on_signal(int sig)
{
	/* Leave no mount behind; all of these are async-signal-safe. */
	if (sig_mnt[0])
		umount2(sig_mnt, MNT_DETACH);
	if (ptll_pid > 0)
		kill(ptll_pid, SIGTERM);
	_exit(128 + sig);
}

static int run_cmd(char *const argv[], int out_fd)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		if (out_fd >= 0) {
			dup2(out_fd, STDOUT_FILENO);
			dup2(out_fd, STDERR_FILENO);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void read_log(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	out[0] = 0;
	if (!f)
		return;
	n = fread(out, 1, size - 1, f);
	fclose(f);
	out[n] = 0;
	for (char *p = out; *p; p++)
		if (*p == '\n')
			*p = *(p + 1) ? ' ' : 0;
}

static bool wait_child(pid_t pid, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return true;
		usleep(10000);
	}
	return false;
}

/* Starts passthrough_ll on dir[ST_KERNEL] at mnt; 0 or a reason in why. */
static int mount_ptll(struct bench *b)
{
	char *why = b->why[ST_KERNEL];
	char log[PATH_LEN], opts[PATH_LEN + 32];
	struct stat sb, sm;
	int fd;
	pid_t pid;

	if (!b->ptll || !*b->ptll || access(b->ptll, X_OK)) {
		snprintf(why, WHY_LEN, "passthrough_ll not built (%s)",
			 b->ptll && *b->ptll ? b->ptll : "no libfuse3 example");
		return -1;
	}
	if (access("/dev/fuse", R_OK | W_OK)) {
		snprintf(why, WHY_LEN, "/dev/fuse: %s", strerror(errno));
		return -1;
	}
	snprintf(log, sizeof(log), "%s/ptll.log", b->base);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(why, WHY_LEN, "%s: %s", log, strerror(errno));
		return -1;
	}
	snprintf(opts, sizeof(opts), "source=%s,cache=never",
		 b->dir[ST_KERNEL]);
	if (stat(b->base, &sb)) {
		close(fd);
		snprintf(why, WHY_LEN, "%s: %s", b->base, strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(fd);
		snprintf(why, WHY_LEN, "fork: %s", strerror(errno));
		return -1;
	}
	if (!pid) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execl(b->ptll, b->ptll, "-f", "-o", opts, b->mnt, (char *)NULL);
		_exit(127);
	}
	close(fd);
	ptll_pid = pid;
	snprintf(sig_mnt, sizeof(sig_mnt), "%s", b->mnt);
	/* Mounted once the mountpoint is another filesystem. */
	for (int i = 0; i < 500; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid) {
			char msg[200];

			ptll_pid = 0;
			sig_mnt[0] = 0;
			read_log(log, msg, sizeof(msg));
			snprintf(why, WHY_LEN, "passthrough_ll exited: %s",
				 *msg ? msg : "no message");
			return -1;
		}
		if (!stat(b->mnt, &sm) && sm.st_dev != sb.st_dev)
			return 0;
		usleep(10000);
	}
	snprintf(why, WHY_LEN, "mount did not appear within 5 s");
	kill(pid, SIGTERM);
	if (!wait_child(pid, 2000)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	ptll_pid = 0;
	sig_mnt[0] = 0;
	return -1;
}

static void umount_ptll(struct bench *b)
{
	char *argv[] = { "fusermount3", "-u", b->mnt, NULL };
	pid_t pid = ptll_pid;
	int ret;

	if (pid <= 0)
		return;
	ret = run_cmd(argv, -1);
	if (ret) {
		fprintf(stderr, "bench-smallfile: fusermount3 -u %s: exit %d; "
			"detaching\n", b->mnt, ret);
		umount2(b->mnt, MNT_DETACH);
	}
	if (!wait_child(pid, 5000)) {
		kill(pid, SIGTERM);
		if (!wait_child(pid, 2000)) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	ptll_pid = 0;
	sig_mnt[0] = 0;
}

/* CPU seconds (user + system) of the whole process so far. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * perf stat's counts for this process: every thread's system calls
 * (tracepoint raw_syscalls:sys_enter) and context switches, one counter
 * per thread that exists when counting starts (the simulated machine's
 * threads are all started by then).
 */
#define MAX_TASKS	256

struct counts {
	int fd[MAX_TASKS][2];
	unsigned int n;
	bool perf;
	long rusage_cs;
};

static long rusage_cs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static int perf_open(pid_t tid, __u32 type, __u64 config)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = type,
		.config = config,
		.exclude_hv = 1,
	};

	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

static long long syscall_tp_id(void)
{
	static const char *const path[] = {
		"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
		"/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
	};
	long long id = -1;

	for (unsigned int i = 0; i < 2 && id < 0; i++) {
		FILE *f = fopen(path[i], "r");

		if (f) {
			if (fscanf(f, "%lld", &id) != 1)
				id = -1;
			fclose(f);
		}
	}
	return id;
}

static void counts_close(struct counts *c)
{
	for (unsigned int i = 0; i < c->n; i++) {
		close(c->fd[i][0]);
		close(c->fd[i][1]);
	}
	c->n = 0;
}

static void counts_start(struct counts *c)
{
	long long tp = syscall_tp_id();
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	memset(c, 0, sizeof(*c));
	c->perf = tp >= 0 && d;
	while (c->perf && (e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);

		if (tid <= 0)
			continue;
		if (c->n == MAX_TASKS) {
			c->perf = false;
			break;
		}
		c->fd[c->n][0] = perf_open(tid, PERF_TYPE_TRACEPOINT,
					   (__u64)tp);
		c->fd[c->n][1] = perf_open(tid, PERF_TYPE_SOFTWARE,
					   PERF_COUNT_SW_CONTEXT_SWITCHES);
		if (c->fd[c->n][0] < 0 || c->fd[c->n][1] < 0) {
			if (c->fd[c->n][0] >= 0)
				close(c->fd[c->n][0]);
			if (c->fd[c->n][1] >= 0)
				close(c->fd[c->n][1]);
			c->perf = false;
			break;
		}
		c->n++;
	}
	if (d)
		closedir(d);
	if (!c->perf)
		counts_close(c);
	c->rusage_cs = rusage_cs();
}

/* Per @n calls: *sys (-1 without perf) and *cs. */
static void counts_stop(struct counts *c, unsigned int n, double *sys,
			double *cs, const char **src)
{
	long long v[2] = { 0, 0 };
	bool ok = c->perf;

	for (unsigned int i = 0; ok && i < c->n; i++) {
		for (int k = 0; k < 2; k++) {
			long long x;

			if (read(c->fd[i][k], &x, sizeof(x)) != sizeof(x))
				ok = false;
			else
				v[k] += x;
		}
	}
	if (ok) {
		*sys = (double)v[0] / n;
		*cs = (double)v[1] / n;
		*src = "perf_event_open per thread (raw_syscalls:sys_enter, "
		       "context-switches)";
	} else {
		*sys = -1;
		*cs = (double)(rusage_cs() - c->rusage_cs) / n;
		*src = "getrusage (context switches only: perf_event_open "
		       "refused)";
	}
	counts_close(c);
}

/* us per stat of one file, or a negative errno; @c counts the loop. */
static double stat_latency_counted(const struct vqf_wl_fs *fs,
				   unsigned int n, struct counts *c)
{
	static const char name[] = "vqf-bench-stat";
	struct stat st;
	double t0, t1;
	int fd, ret = 0;

	/* Not O_EXCL: on the null backend every name exists. */
	fd = fs->open(fs->ctx, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return fd;
	fs->close(fs->ctx, fd);
	if (c)
		counts_start(c);
	t0 = now_s();
	for (unsigned int i = 0; i < n && !ret; i++)
		ret = fs->stat(fs->ctx, name, &st);
	t1 = now_s();
	fs->unlink(fs->ctx, name);
	return ret ? ret : (t1 - t0) * 1e6 / n;
}

static double stat_latency(const struct vqf_wl_fs *fs, unsigned int n)
{
	return stat_latency_counted(fs, n, NULL);
}

static bool is_inline(int st)
{
	return st == ST_INL_PTLL || st == ST_INL_VQF || st == ST_INL_NULL;
}

static bool is_poll(int st)
{
	return st == ST_POLL_PTLL || st == ST_POLL_VQF || st == ST_POLL_NULL;
}

static bool is_null(int st)
{
	return (st >= ST_NULL && st <= ST_POLL_NULL) || st == ST_HO_NULL;
}

static bool is_handoff(int st)
{
	return st >= ST_HO_PTLL;
}

static enum vqf_sim_fs fs_of(int st)
{
	if (is_null(st))
		return VQF_SIM_FS_NULL;
	return st == ST_SIM_PTLL || st == ST_INL_PTLL ||
	       st == ST_POLL_PTLL || st == ST_HO_PTLL ?
	       VQF_SIM_FS_PTLL : VQF_SIM_FS_VQFUSE;
}

/* The simulated machine of stack @st. */
static struct vqf_sim_cfg sim_cfg(const struct bench *b, int st)
{
	struct vqf_sim_cfg sc = {
		.shared = b->dir[st],
		.fs = fs_of(st),
		.queues = b->queues,
		.threads = b->threads,
		.inline_kick = is_inline(st),
		.poll_ns = is_poll(st) ? b->poll_us * 1000ULL : 0,
		.poll_fixed = b->poll_fixed,
		.handoff = is_handoff(st),
	};

	return sc;
}

/*
 * A second stat loop of @n calls on a fresh traced machine of stack @st:
 * the round trip split into the trace's stages (recording costs a clock
 * read and a mutex per event, so the traced loop is slower: its own us
 * per stat is kept beside the stages).
 */
static int traced_stats(struct bench *b, int st, unsigned int n)
{
	struct vqf_sim_cfg sc = sim_cfg(b, st);
	struct vqf_trace *t;
	struct vqf_sim *sim;
	struct vqf_wl_fs fs;
	double us;
	int ret;

	ret = vqf_trace_open(NULL, &t);
	if (ret)
		return ret;
	sc.trace = t;
	ret = vqf_sim_new(&sc, &sim);
	if (ret) {
		vqf_trace_close(t);
		return ret;
	}
	vqf_wl_sim_fs(sim, st_name[st], &fs);
	us = stat_latency(&fs, n);
	vqf_sim_free(sim);
	if (us < 0) {
		vqf_trace_close(t);
		return (int)us;
	}
	b->tr_us[st] = us;
	ret = vqf_trace_stages(t, FUSE_LOOKUP, &b->stages[st]);
	vqf_trace_close(t);
	return ret;
}

static int run_one(struct bench *b, int st, unsigned int round)
{
	struct vqf_wl_result res;
	struct vqf_wl_fs fs;
	struct vqf_sim *sim = NULL;
	struct counts cnt = { .n = 0 };
	double cpu0;
	int ret;

	if (st == ST_NATIVE || st == ST_KERNEL) {
		ret = vqf_wl_posix_open(st == ST_KERNEL ? b->mnt : b->dir[st],
					&fs);
		if (ret)
			goto fail_open;
		fs.name = st_name[st];
	} else {
		struct vqf_sim_cfg sc = sim_cfg(b, st);

		ret = vqf_sim_new(&sc, &sim);
		if (ret)
			goto fail_open;
		vqf_wl_sim_fs(sim, st_name[st], &fs);
	}
	cpu0 = cpu_s();
	memset(&res, 0, sizeof(res));
	/* No workload on the null backend (it keeps no files). */
	ret = is_null(st) ? 0 : vqf_wl_run(&fs, &b->wl, &res);
	if (!ret && b->nstats) {
		double us = stat_latency_counted(&fs, b->nstats, &cnt);

		counts_stop(&cnt, b->nstats, &b->sys[st], &b->cs[st],
			    &b->count_src);
		if (us < 0) {
			snprintf(res.errmsg, sizeof(res.errmsg),
				 "stat latency: %s", strerror((int)-us));
			ret = (int)us;
		}
		b->stat_us[st][round] = us;
	}
	if (!ret && sim) {
		struct vqf_sim_stats ss;
		double nr;

		vqf_sim_get_stats(sim, &ss);
		nr = ss.drv.submitted ? (double)ss.drv.submitted : 1;
		b->kick[st] = ss.drv.kicks / nr;
		b->irq[st] = ss.drv.irqs / nr;
		b->dhit[st] = ss.dev.poll_hits / nr;
		b->ghit[st] = ss.drv.poll_hits / nr;
		b->dspin[st] = ss.dev.poll_spin_ns / 1e3 / nr;
		b->gspin[st] = ss.drv.poll_spin_ns / 1e3 / nr;
		b->cpu[st] = (cpu_s() - cpu0) * 1e6 / nr;
	}
	if (sim)
		vqf_sim_free(sim);
	else
		vqf_wl_posix_close(&fs);
	if (!ret && sim && b->nstats && round == b->runs - 1) {
		ret = traced_stats(b, st, b->nstats);
		if (ret)
			snprintf(res.errmsg, sizeof(res.errmsg),
				 "traced stat loop: %s", strerror(-ret));
	}
	if (ret) {
		snprintf(b->why[st], sizeof(b->why[st]), "failed: %s",
			 res.errmsg);
		return -1;
	}
	if (is_null(st))
		return 0;
	b->nphases = res.nphases < NPHASES ? res.nphases : NPHASES;
	for (unsigned int i = 0; i < b->nphases; i++) {
		const struct vqf_wl_phase *p = &res.phase[i];

		b->phase[i] = p->name;
		b->ops[st][i][round] = p->secs > 0 ? p->ops / p->secs : 0;
		b->req[st][i] = p->ops ? (double)p->delta.requests / p->ops :
					 0;
	}
	return 0;
fail_open:
	snprintf(b->why[st], sizeof(b->why[st]), "cannot start: %s",
		 strerror(-ret));
	return -1;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned int n)
{
	double s[MAX_RUNS];

	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_dbl);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void ratio(char *out, size_t size, const struct bench *b, int x,
		  int y, unsigned int ph)
{
	double vy = median(b->ops[y][ph], b->runs);

	if (b->skip[x] || b->skip[y] || vy <= 0)
		snprintf(out, size, "-");
	else
		snprintf(out, size, "%.3g",
			 median(b->ops[x][ph], b->runs) / vy);
}

/*
 * Per stat of the last round's loop: this process's system calls and
 * context switches (perf stat's counts; on (b) the daemon's are not
 * ours), then, from the traced loop, the round trip by stage: the us
 * per stat of the traced loop, the four stages of the request's life,
 * and the rest of it (client, call set-up, the caller's wake-up after
 * COMPLETED).
 */
static void report_stages(const struct bench *b)
{
	printf("\nper stat, last round: counts of this process by %s;\n"
	       "stages from a second, traced stat loop (us; tracing adds a "
	       "clock read and a mutex per event):\n"
	       "%-18s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n",
	       b->count_src ? b->count_src : "-", "stack", "us/stat",
	       "sys/rq", "cs/rq", "traced", "pending", "ring", "device",
	       "reply", "rest");
	for (int s = 0; s < ST_NR; s++) {
		const struct vqf_trace_stages *t = &b->stages[s];

		if (b->skip[s])
			continue;
		printf("%-18s %8.2f", st_name[s],
		       median(b->stat_us[s], b->runs));
		if (b->sys[s] >= 0)
			printf(" %8.2f", b->sys[s]);
		else
			printf(" %8s", "-");
		printf(" %8.2f", b->cs[s]);
		if (s >= ST_SIM_PTLL && t->requests)
			printf(" %8.2f %8.3f %8.3f %8.3f %8.3f %8.3f",
			       b->tr_us[s], t->pending_ns / 1e3,
			       t->ring_ns / 1e3, t->device_ns / 1e3,
			       t->reply_ns / 1e3,
			       b->tr_us[s] - t->total_ns / 1e3);
		printf("\n");
	}
	printf("(the LOOKUPs of the traced loop; pending: QUEUED->ADDED, "
	       "ring: ADDED->POPPED,\ndevice: POPPED->PUSHED (parse, "
	       "libfuse, backend, reply), "
	       "reply: PUSHED->COMPLETED (used ring, validation, wake-up "
	       "call); rest: traced us/stat minus QUEUED->COMPLETED)\n");
}

static void report(const struct bench *b)
{
	static const int pair[][2] = {
		{ ST_SIM_PTLL, ST_KERNEL }, { ST_SIM_VQF, ST_KERNEL },
		{ ST_SIM_VQF, ST_NATIVE }, { ST_INL_PTLL, ST_KERNEL },
		{ ST_INL_VQF, ST_KERNEL }, { ST_INL_VQF, ST_NATIVE },
		{ ST_POLL_PTLL, ST_KERNEL }, { ST_POLL_VQF, ST_KERNEL },
		{ ST_POLL_VQF, ST_SIM_VQF }, { ST_HO_PTLL, ST_KERNEL },
		{ ST_HO_VQF, ST_KERNEL }, { ST_SIM_VQF, ST_HO_VQF },
	};
	const unsigned int npair = sizeof(pair) / sizeof(pair[0]);
	char c[16];

	printf("\nops/s, median of %u round(s); one operation is one file\n",
	       b->runs);
	printf("%-15s", "phase");
	for (int s = 0; s < ST_NR; s++)
		if (!is_null(s))
			printf(" %15s", st_name[s]);
	for (unsigned int k = 0; k < npair; k++)
		printf(" %c/%c   ", st_name[pair[k][0]][1],
		       st_name[pair[k][1]][1]);
	printf("\n");
	for (unsigned int i = 0; i < b->nphases; i++) {
		printf("%-15s", b->phase[i]);
		for (int s = 0; s < ST_NR; s++) {
			if (is_null(s))
				continue;
			if (b->skip[s])
				printf(" %15s", "skipped");
			else
				printf(" %15.0f", median(b->ops[s][i],
							 b->runs));
		}
		for (unsigned int k = 0; k < npair; k++) {
			ratio(c, sizeof(c), b, pair[k][0], pair[k][1], i);
			printf(" %6s", c);
		}
		printf("\n");
	}
	printf("\nFUSE requests per operation in the simulated guest "
	       "(cache=none):\n%-15s %15s %15s\n", "phase", st_name[2],
	       st_name[3]);
	for (unsigned int i = 0; i < b->nphases; i++)
		printf("%-15s %15.2f %15.2f\n", b->phase[i],
		       b->req[ST_SIM_PTLL][i], b->req[ST_SIM_VQF][i]);
	if (b->nstats) {
		printf("\nstat of one file, %u calls, median of %u round(s); "
		       "transport per request over the whole run (last "
		       "round):\n%-18s %8s %8s %8s %9s %9s %10s %10s %8s\n",
		       b->nstats, b->runs, "stack", "us/stat", "kick/rq",
		       "irq/rq", "dev-poll", "drv-poll", "dev-poll-us",
		       "drv-poll-us", "cpu-us");
		for (int s = 0; s < ST_NR; s++) {
			if (b->skip[s])
				continue;
			printf("%-18s %8.2f", st_name[s],
			       median(b->stat_us[s], b->runs));
			if (s >= ST_SIM_PTLL)
				printf(" %8.2f %8.2f %9.2f %9.2f %10.2f "
				       "%10.2f %8.2f", b->kick[s], b->irq[s],
				       b->dhit[s], b->ghit[s], b->dspin[s],
				       b->gspin[s], b->cpu[s]);
			printf("\n");
		}
		printf("(dev-poll, drv-poll: polls per request that caught "
		       "their work; *-poll-us: time per request in the poll\n"
		       "loops, yields included; cpu-us: the process's user + "
		       "system CPU time per request)\n");
		report_stages(b);
	}
	for (int s = 0; s < ST_NR; s++)
		if (b->skip[s] && b->want[s])
			printf("%s skipped: %s\n", st_name[s], b->why[s]);
}

int main(int argc, char **argv)
{
	static struct bench b;
	static const char *const sub[ST_NR] = {
		"native", "ptll-source", "sim-ptll", "sim-vqfuse",
		"inline-ptll", "inline-vqfuse", "poll-ptll", "poll-vqfuse",
		"null", "inline-null", "poll-null",
		"handoff-ptll", "handoff-vqfuse", "handoff-null",
	};
	const char *tmp = getenv("TMPDIR");
	struct sigaction sa = { .sa_handler = on_signal };
	int ret = 0;

	if (parse(argc, argv, &b)) {
		usage(stderr);
		return 2;
	}
	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (strlen(tmp) > BASE_LEN - 32) {
		fprintf(stderr, "bench-smallfile: TMPDIR too long\n");
		return 2;
	}
	snprintf(b.base, sizeof(b.base), "%s/vqf-bench-smallfile.XXXXXX",
		 tmp);
	if (!mkdtemp(b.base)) {
		perror("bench-smallfile: mkdtemp");
		return 1;
	}
	for (int s = 0; s < ST_NR; s++) {
		snprintf(b.dir[s], sizeof(b.dir[s]), "%s/%s", b.base, sub[s]);
		if (mkdir(b.dir[s], 0755)) {
			perror(b.dir[s]);
			ret = 1;
			goto out;
		}
	}
	snprintf(b.mnt, sizeof(b.mnt), "%s/mnt", b.base);
	if (mkdir(b.mnt, 0755)) {
		perror(b.mnt);
		ret = 1;
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	printf("bench-smallfile: %u file(s) x %llu B per job, %u job(s), "
	       "%u round(s); under %s\n", b.wl.files,
	       (unsigned long long)b.wl.size, b.wl.jobs, b.runs, b.base);
	printf("(b) passthrough_ll -f -o source=DIR,cache=never (timeout 0, "
	       "direct_io; multithreaded loop) on /dev/fuse;\n"
	       "(c),(d) simulated guest cache=none, %u queue(s) x 128, "
	       "device threads %u, direct kicks (the default);\n"
	       "(e),(f) the same with inline kicks (device in the kicking "
	       "thread, caller reaps);\n"
	       "(g),(h) the same threaded, polling up to %u us on both sides "
	       "(%s);\n(i),(j),(k) the null backend threaded, inline, "
	       "polling: stat loop only;\n(l),(m),(n) ptll, vqfuse, null "
	       "threaded with every kick through the queue thread "
	       "(handoff)\n", b.queues, b.threads, b.poll_us,
	       b.poll_fixed ? "fixed" : "adaptive");
	for (int s = 0; s < ST_NR; s++)
		if (!b.want[s]) {
			b.skip[s] = true;
			snprintf(b.why[s], sizeof(b.why[s]), "not asked");
		}
	fflush(stdout);
	if (!b.skip[ST_KERNEL])
		b.skip[ST_KERNEL] = mount_ptll(&b) != 0;
	if (b.skip[ST_KERNEL] && b.want[ST_KERNEL])
		fprintf(stderr, "bench-smallfile: (b) skipped: %s\n",
			b.why[ST_KERNEL]);

	for (unsigned int r = 0; r < b.runs; r++) {
		for (int s = 0; s < ST_NR; s++) {
			if (b.skip[s])
				continue;
			fprintf(stderr, "bench-smallfile: round %u/%u %s\n",
				r + 1, b.runs, st_name[s]);
			if (run_one(&b, s, r)) {
				b.skip[s] = true;
				fprintf(stderr, "bench-smallfile: %s %s\n",
					st_name[s], b.why[s]);
				ret = 1;
			}
		}
	}
	umount_ptll(&b);
	report(&b);
out:
	nftw(b.base, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return ret;
}
