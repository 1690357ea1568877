// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench_daemons.c - our vhost-user-fs daemon (`vqfuse-sim vhost-user`)
 * against Debian's C virtiofsd, through one front-end and the same
 * requests, alternating in one run (issue 28, bench-daemons).
 *
 * The front-end is the simulated guest as a vhost-user front-end
 * (vqf_sim with cfg.connect: vqf_vfront under vqf_gdrv and vqf_gcli, as
 * QEMU's vhost-user-fs-pci under a Linux guest).  Both daemons get the
 * same command line, virtiofsd's legacy spelling, which ours reads too:
 *
 *   --socket-path=SOCK -o source=DIR,cache=none --thread-pool-size=N
 *
 * (cache=none on both sides: every call is a request, and the daemon's
 * replies carry no cache validity).  Per measured block one fresh daemon
 * process, one fresh shared directory, one connection; rows:
 *
 *   LOOKUP, GETATTR, READ 4 KiB, WRITE 4 KiB, CREATE+RELEASE: raw FUSE
 *     requests built with lib/vqf_req.h and sent with vqf_gdrv_call()
 *     one at a time (one request in flight, the latency of one request);
 *   the smallfile phases: the workload engine (vqf_wl_run) over the
 *     guest client with cache=none, timed per phase and divided by the
 *     FUSE requests the driver submitted in it.
 *
 * Per row: microseconds per request (wall), and the daemon's CPU time
 * per request (all its processes' user + system time: the sandbox's
 * parent and the serving child, every thread, exited ones included,
 * through their POSIX process CPU clocks), its context switches and
 * read/write-family system calls per request (/proc), and the
 * front-end's (this process's) CPU time per request.  Rounds alternate
 * the daemons (ours, virtiofsd, ours, ...) for each set; medians are
 * reported.  Sets: each thread pool size at equal settings; then, at
 * pool 0 (--poll-us N, 0: not run), the front-end polling its used ring
 * for up to N us for both daemons, and that again with ours polling its
 * ring too (--poll-us N, which virtiofsd has not): "ours polling vs
 * virtiofsd".
 */
#define _GNU_SOURCE
#include "vqf_wl_sim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef VQF_SIM_EXE
#define VQF_SIM_EXE "vqfuse-sim"
#endif
#define VIRTIOFSD_EXE	"/usr/lib/qemu/virtiofsd"

enum { D_OURS, D_VFSD, D_NR };

static const char *const d_name[D_NR] = { "ours", "virtiofsd" };

enum {
	R_LOOKUP, R_GETATTR, R_READ, R_WRITE, R_CREATE,
	R_SF0,			/* the smallfile phases from here */
	R_NR = R_SF0 + 6,
};

static const char *const r_name[R_NR] = {
	"LOOKUP", "GETATTR", "READ 4 KiB", "WRITE 4 KiB",
	"CREATE+RELEASE",
	/* Names of the smallfile phases are taken from the workload. */
};

#define MAX_ROUNDS	15
#define MAX_POOLS	4
#define MAX_SETS	(MAX_POOLS + 2)	/* the pools, then the polled sets */
#define MAX_PIDS	16
#define PATH_LEN	256
#define NSAMP		(2 * (R_NR - R_SF0))

/* What a row measured in one block. */
struct meas {
	double us;	/* wall us per request (per pair for CREATE) */
	double cpu;	/* daemon CPU us per request */
	double cs;	/* daemon context switches per request */
	double sys;	/* daemon read/write-family system calls per rq */
	double rpo;	/* requests per operation (smallfile: per file) */
	double fe;	/* the front-end's (this process's) CPU us per rq */
};

/*
 * A set of blocks: a thread pool size for both daemons, the front-end's
 * polling window (vqf_sim_cfg.poll_ns: the driver spins on its used ring
 * after a kick, the same for both daemons) and ours' (--poll-us, which
 * virtiofsd has not).
 */
struct set {
	unsigned int pool, fe_us, ours_us;
};

struct bench {
	unsigned int rounds, ops, files;
	struct set set[MAX_SETS];
	unsigned int nsets, poll_us;
	bool want[D_NR];
	const char *exe[D_NR];
	char base[PATH_LEN];
	const char *sf_name[R_NR - R_SF0];
	unsigned int nsf;
	bool failed[MAX_SETS][D_NR];
	unsigned int retried[MAX_SETS][D_NR];	/* blocks run again */
	/* The host's own system calls for the raw rows, us per op. */
	double host[MAX_SETS][MAX_ROUNDS][R_SF0];
	struct meas m[MAX_SETS][D_NR][MAX_ROUNDS][R_NR];
	u32 uid, gid, pid;
};

/* A daemon's process tree, sampled around a row. */
struct tree {
	pid_t pid[MAX_PIDS];
	unsigned int n;
};

struct sample {
	double cpu_us, cs, sys;
	double fe_us;	/* this process: the front-end */
};

/* The daemon running now, for the signal handler. */
static volatile pid_t cur_daemon;

static void on_signal(int sig)
{
	if (cur_daemon > 0)
		kill(cur_daemon, SIGTERM);
	_exit(128 + sig);
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: bench-daemons [--rounds N] [--ops N] [--files N] [--pools LIST]\n"
"                     [--poll-us N] [--daemons ours,virtiofsd] [--quick]\n"
"                     [--ours PATH] [--virtiofsd PATH]\n"
"\n"
"Our vhost-user-fs daemon (vqfuse-sim vhost-user) against virtiofsd,\n"
"through the simulated guest as a vhost-user front-end, the same\n"
"requests, alternating: us per LOOKUP, GETATTR, 4 KiB READ and WRITE,\n"
"CREATE+RELEASE (raw requests, one in flight) and per request of the\n"
"smallfile phases; the daemon's CPU time, context switches and\n"
"read/write system calls per request; per thread pool size, the same for\n"
"both (--thread-pool-size=N).  Medians of the rounds; ratio is\n"
"virtiofsd / ours (above 1: ours is faster).\n"
"\n"
"  --rounds N     rounds per pool size, daemons alternating (1..%d,\n"
"                 default 5)\n"
"  --ops N        requests per raw row and block (10..10^6, default 2000)\n"
"  --files N      smallfile files per block (1..10^5, default 500)\n"
"  --pools LIST   thread pool sizes, comma-separated (default 64,0:\n"
"                 virtiofsd's default, and served in the queue thread)\n"
"  --poll-us N    then two sets at pool 0 with the front-end polling its\n"
"                 used ring for up to N us for both daemons, the second\n"
"                 with ours polling its ring too (--poll-us N; virtiofsd\n"
"                 cannot); 0: neither set (0..10000, default 50)\n"
"  --daemons L    ours, virtiofsd or both (default ours,virtiofsd)\n"
"  --quick        --rounds 1 --ops 100 --files 20 (a smoke run)\n"
"  --ours PATH    our daemon (default: the vqfuse-sim built with this)\n"
"  --virtiofsd PATH  (default " VIRTIOFSD_EXE ")\n"
"Exit status: 0; 1 a block failed; 2 usage; 77 a daemon is missing or\n"
"not root (virtiofsd's sandbox needs root).\n",
		MAX_ROUNDS);
}

static int num_arg(const char *opt, const char *s, unsigned long lo,
		   unsigned long hi, unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	if (!s || *s < '0' || *s > '9')
		goto bad;
	v = strtoul(s, &end, 10);
	if (errno || (*end && *end != ',') || v < lo || v > hi)
		goto bad;
	*out = (unsigned int)v;
	return 0;
bad:
	fprintf(stderr, "bench-daemons: %s: invalid value '%s' "
		"(expected %lu..%lu)\n", opt, s ? s : "", lo, hi);
	return -1;
}

static int parse(int argc, char **argv, struct bench *b)
{
	b->rounds = 5;
	b->ops = 2000;
	b->files = 500;
	b->set[0].pool = 64;
	b->set[1].pool = 0;
	b->nsets = 2;
	b->poll_us = 50;
	b->want[D_OURS] = b->want[D_VFSD] = true;
	b->exe[D_OURS] = VQF_SIM_EXE;
	b->exe[D_VFSD] = VIRTIOFSD_EXE;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			usage(stdout);
			exit(0);
		}
		if (!strcmp(o, "--quick")) {
			b->rounds = 1;
			b->ops = 100;
			b->files = 20;
			continue;
		}
		i++;
		if (!v) {
			fprintf(stderr, "bench-daemons: %s: no value\n", o);
			return -1;
		}
		if (!strcmp(o, "--rounds")) {
			if (num_arg(o, v, 1, MAX_ROUNDS, &b->rounds))
				return -1;
		} else if (!strcmp(o, "--ops")) {
			if (num_arg(o, v, 10, 1000000, &b->ops))
				return -1;
		} else if (!strcmp(o, "--files")) {
			if (num_arg(o, v, 1, 100000, &b->files))
				return -1;
		} else if (!strcmp(o, "--pools")) {
			b->nsets = 0;
			for (const char *p = v; p; p = strchr(p, ',')) {
				if (*p == ',')
					p++;
				if (b->nsets == MAX_POOLS ||
				    num_arg(o, p, 0, 256,
					    &b->set[b->nsets++].pool))
					return -1;
			}
		} else if (!strcmp(o, "--poll-us")) {
			if (num_arg(o, v, 0, 10000, &b->poll_us))
				return -1;
		} else if (!strcmp(o, "--daemons")) {
			b->want[D_OURS] = strstr(v, "ours") != NULL;
			b->want[D_VFSD] = strstr(v, "virtiofsd") != NULL;
			if (!b->want[D_OURS] && !b->want[D_VFSD]) {
				fprintf(stderr, "bench-daemons: --daemons: "
					"ours and/or virtiofsd\n");
				return -1;
			}
		} else if (!strcmp(o, "--ours")) {
			b->exe[D_OURS] = v;
		} else if (!strcmp(o, "--virtiofsd")) {
			b->exe[D_VFSD] = v;
		} else {
			fprintf(stderr, "bench-daemons: bad option '%s'\n", o);
			return -1;
		}
	}
	if (b->poll_us) {
		b->set[b->nsets++] = (struct set){ 0, b->poll_us, 0 };
		b->set[b->nsets++] = (struct set){ 0, b->poll_us, b->poll_us };
	}
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The parent pid of @pid from /proc, or -1. */
static pid_t ppid_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int pp = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	/* The name may hold spaces and parentheses: skip to the last ')'. */
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		if (sscanf(p + 1, " %*c %d", &pp) != 1)
			pp = -1;
	fclose(f);
	return pp;
}

/*
 * @root and its descendants: the sandboxes of both daemons fork, and
 * the child (in a pid namespace of its own, seen here by its host pid)
 * is what serves.  Found once per block, after the connection is up.
 */
static void tree_find(pid_t root, struct tree *t)
{
	bool grew = true;

	t->pid[0] = root;
	t->n = 1;
	while (grew && t->n < MAX_PIDS) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		grew = false;
		if (!d)
			return;
		while ((e = readdir(d)) && t->n < MAX_PIDS) {
			pid_t p = (pid_t)atoi(e->d_name), pp;
			bool have = false;

			if (p <= 0)
				continue;
			for (unsigned int i = 0; i < t->n; i++)
				have |= t->pid[i] == p;
			if (have)
				continue;
			pp = ppid_of(p);
			for (unsigned int i = 0; i < t->n && !grew; i++) {
				if (t->pid[i] == pp) {
					t->pid[t->n++] = p;
					grew = true;
				}
			}
		}
		closedir(d);
	}
}

/* Sum of "key: N" lines of a /proc file. */
static double proc_keys(const char *path, const char *k1, const char *k2)
{
	char line[256];
	double sum = 0;
	FILE *f = fopen(path, "r");
	size_t l1 = strlen(k1), l2 = strlen(k2);

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, k1, l1))
			sum += strtod(line + l1, NULL);
		else if (!strncmp(line, k2, l2))
			sum += strtod(line + l2, NULL);
	}
	fclose(f);
	return sum;
}

/*
 * The tree's CPU time: each process's CPU clock (all its threads, the
 * exited ones included, in ns); its context switches (live threads:
 * per-task counts in /proc/PID/task/TID/status); its read/write-family
 * system calls (/proc/PID/io, the whole process).
 */
static void tree_sample(const struct tree *t, struct sample *s)
{
	struct timespec fe;

	memset(s, 0, sizeof(*s));
	if (!clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &fe))
		s->fe_us = fe.tv_sec * 1e6 + fe.tv_nsec / 1e3;
	for (unsigned int i = 0; i < t->n; i++) {
		char path[96];
		struct timespec ts;
		clockid_t cid;
		struct dirent *e;
		DIR *d;

		if (!clock_getcpuclockid(t->pid[i], &cid) &&
		    !clock_gettime(cid, &ts))
			s->cpu_us += ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
		snprintf(path, sizeof(path), "/proc/%d/io", (int)t->pid[i]);
		s->sys += proc_keys(path, "syscr:", "syscw:");
		snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid[i]);
		d = opendir(path);
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path),
				 "/proc/%d/task/%.16s/status",
				 (int)t->pid[i], e->d_name);
			s->cs += proc_keys(path, "voluntary_ctxt_switches:",
					   "nonvoluntary_ctxt_switches:");
		}
		if (d)
			closedir(d);
	}
}

static void meas_set(struct meas *m, const struct sample *s0,
		     const struct sample *s1, double us, double nreq,
		     double nops)
{
	m->us = us / nops;
	m->cpu = (s1->cpu_us - s0->cpu_us) / nreq;
	m->cs = (s1->cs - s0->cs) / nreq;
	m->sys = (s1->sys - s0->sys) / nreq;
	m->rpo = nreq / nops;
	m->fe = (s1->fe_us - s0->fe_us) / nreq;
}

/* One measured block: a daemon, its directory, the front-end over it. */
struct blk {
	struct bench *b;
	struct vqf_sim *sim;
	struct vqf_gdrv *g;
	struct vqf_gram *ram;
	struct tree t;
	struct vqf_wl_fs inner;		/* the workload's operations */
	struct sample samp[NSAMP];	/* around each smallfile phase */
	unsigned int nsamp;
};

static int call(struct blk *k, struct vqf_gdrv_call *cl)
{
	cl->req.in_h.uid = k->b->uid;
	cl->req.in_h.gid = k->b->gid;
	cl->req.in_h.pid = k->b->pid;
	return vqf_gdrv_call(k->g, cl, -1);
}

static int do_lookup(struct blk *k, const char *name,
		     struct fuse_entry_out *e)
{
	struct vqf_gdrv_call cl;
	int ret;

	memset(&cl, 0, sizeof(cl));
	ret = vqf_req_init_lookup(&cl.req, 0, FUSE_ROOT_ID, name,
				  (u32)strlen(name), e, NULL);
	return ret ? ret : call(k, &cl);
}

static int do_getattr(struct blk *k, u64 nodeid)
{
	struct fuse_getattr_in gi = { 0 };
	struct fuse_attr_out ao;
	struct vqf_gdrv_call cl;

	memset(&cl, 0, sizeof(cl));
	vqf_req_init_getattr(&cl.req, 0, nodeid, &gi, &ao);
	return call(k, &cl);
}

static int do_create(struct blk *k, const char *name,
		     struct fuse_entry_out *e, u64 *fh)
{
	struct fuse_create_in ci = { .flags = O_RDWR, .mode = S_IFREG | 0644 };
	struct fuse_open_out oo;
	struct vqf_gdrv_call cl;
	int ret;

	memset(&cl, 0, sizeof(cl));
	vqf_req_init(&cl.req, FUSE_CREATE, FUSE_ROOT_ID, 0);
	vqf_req_add_in(&cl.req, &ci, sizeof(ci));
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	vqf_req_add_out(&cl.req, e, sizeof(*e));
	vqf_req_add_out(&cl.req, &oo, sizeof(oo));
	/* No fuse_entryver_out asked for (as vqf_req_init_lookup()). */
	cl.req.out_argvar = false;
	ret = call(k, &cl);
	if (!ret)
		*fh = oo.fh;
	return ret;
}

static int do_release(struct blk *k, u64 nodeid, u64 fh)
{
	struct fuse_release_in ri = { .fh = fh, .flags = O_RDWR };
	struct vqf_gdrv_call cl;

	memset(&cl, 0, sizeof(cl));
	vqf_req_init(&cl.req, FUSE_RELEASE, nodeid, 0);
	vqf_req_add_in(&cl.req, &ri, sizeof(ri));
	return call(k, &cl);
}

static int do_unlink(struct blk *k, const char *name)
{
	struct vqf_gdrv_call cl;

	memset(&cl, 0, sizeof(cl));
	vqf_req_init(&cl.req, FUSE_UNLINK, FUSE_ROOT_ID, 0);
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	return call(k, &cl);
}

static int do_rw(struct blk *k, bool wr, u64 nodeid, u64 fh, void *page)
{
	struct vqf_page_desc pd = { .page = page, .length = 4096 };
	struct vqf_gdrv_call cl;
	int ret;

	memset(&cl, 0, sizeof(cl));
	if (wr) {
		struct fuse_write_in wi = { .fh = fh, .size = 4096,
					    .flags = O_RDWR };
		struct fuse_write_out wo = { 0 };

		vqf_req_init_write(&cl.req, 0, nodeid, &wi, &pd, 1, &wo);
		ret = call(k, &cl);
		return ret ? ret : wo.size == 4096 ? 0 : -EIO;
	}
	struct fuse_read_in ri = { .fh = fh, .size = 4096, .flags = O_RDWR };

	vqf_req_init_read(&cl.req, FUSE_READ, 0, nodeid, &ri, &pd, 1, false);
	ret = call(k, &cl);
	return ret ? ret : cl.req.out_args[0].size == 4096 ? 0 : -EIO;
}

/* The raw rows, one request in flight; @m[row] filled. */
static int raw_rows(struct blk *k, struct meas *m, char *err, size_t esz)
{
	unsigned int n = k->b->ops, i;
	struct fuse_entry_out e;
	struct sample s0, s1;
	u64 nodeid, fh, cfh;
	char name[32];
	double t0;
	void *page;
	int ret;

	page = vqf_gram_alloc(k->ram, 4096, true);
	if (!page) {
		snprintf(err, esz, "guest RAM exhausted");
		return -ENOMEM;
	}
	/* The file of the LOOKUP, GETATTR, READ and WRITE rows. */
	ret = do_create(k, "f", &e, &fh);
	if (ret) {
		snprintf(err, esz, "CREATE f: %s", strerror(-ret));
		goto out;
	}
	nodeid = e.nodeid;
	ret = do_rw(k, true, nodeid, fh, page);
	/*
	 * Warm-up, not measured: the daemons' first requests start threads
	 * (virtiofsd's pool grows on demand) and fault in their code.
	 */
	for (i = 0; i < 200 && !ret; i++)
		ret = do_getattr(k, nodeid);
	if (ret) {
		snprintf(err, esz, "warm-up: %s", strerror(-ret));
		goto out;
	}

	for (int row = R_LOOKUP; row <= R_CREATE; row++) {
		tree_sample(&k->t, &s0);
		t0 = now_us();
		for (i = 0; i < n && !ret; i++) {
			switch (row) {
			case R_LOOKUP:
				ret = do_lookup(k, "f", &e);
				break;
			case R_GETATTR:
				ret = do_getattr(k, nodeid);
				break;
			case R_READ:
			case R_WRITE:
				ret = do_rw(k, row == R_WRITE, nodeid, fh,
					    page);
				break;
			default:
				snprintf(name, sizeof(name), "c%u", i);
				ret = do_create(k, name, &e, &cfh);
				if (!ret)
					ret = do_release(k, e.nodeid, cfh);
				/* Dropped after the row: LOOKUP count 1. */
				break;
			}
		}
		tree_sample(&k->t, &s1);
		if (ret) {
			snprintf(err, esz, "%s #%u: %s", r_name[row], i,
				 strerror(-ret));
			goto out;
		}
		meas_set(&m[row], &s0, &s1, now_us() - t0,
			 row == R_CREATE ? 2.0 * n : n, n);
	}
	/* Outside the rows: give back what they looked up and made. */
	vqf_gdrv_forget(k->g, nodeid, n);
	for (i = 0; i < n && !ret; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		ret = do_unlink(k, name);
	}
	ret = ret ? ret : do_release(k, nodeid, fh);
	ret = ret ? ret : do_unlink(k, "f");
	if (ret)
		snprintf(err, esz, "clean-up: %s", strerror(-ret));
	vqf_gdrv_forget_flush(k->g);
out:
	vqf_gram_release(k->ram, page);
	return ret;
}

/*
 * Around each smallfile phase: the driver's counters, then the daemon's.
 * The operations' ctx must stay the machine, so the block is found here
 * (the workload calls this from the thread that runs it, one at a time).
 */
static struct blk *wl_blk;

static void wl_counters(void *ctx, struct vqf_wl_counters *out)
{
	struct blk *k = wl_blk;

	k->inner.counters(ctx, out);
	if (k->nsamp < NSAMP)
		tree_sample(&k->t, &k->samp[k->nsamp++]);
}

static int sf_rows(struct blk *k, struct meas *m, char *err, size_t esz)
{
	struct vqf_wl_cfg wc = {
		.kind = VQF_WL_SMALLFILE,
		.jobs = 1,
		.files = k->b->files,
		.size = 4096,
	};
	struct vqf_wl_result res;
	struct vqf_wl_fs fs;
	int ret;

	vqf_wl_sim_fs(k->sim, "daemon", &k->inner);
	fs = k->inner;
	fs.counters = wl_counters;
	/*
	 * ls -l lists with READDIRPLUS only where INIT's reply offers it
	 * (FUSE_DO_READDIRPLUS), as fs/fuse does; the guest client sends it
	 * regardless, which ours answers with ENOSYS at cache=none (no
	 * READDIRPLUS) and virtiofsd serves anyway.
	 */
	if (!(vqf_gdrv_init_out(k->g)->flags & FUSE_DO_READDIRPLUS))
		fs.readdir_plus = NULL;
	wl_blk = k;
	k->nsamp = 0;
	memset(&res, 0, sizeof(res));
	ret = vqf_wl_run(&fs, &wc, &res);
	if (ret) {
		snprintf(err, esz, "smallfile: %s", res.errmsg);
		return ret;
	}
	/* Every phase of smallfile is measured: pair i is phase i. */
	if (res.nphases > R_NR - R_SF0 || k->nsamp != 2 * res.nphases) {
		snprintf(err, esz, "smallfile: %u phases, %u samples",
			 res.nphases, k->nsamp);
		return -EPROTO;
	}
	k->b->nsf = res.nphases;
	for (unsigned int i = 0; i < res.nphases; i++) {
		const struct vqf_wl_phase *p = &res.phase[i];
		double nreq = p->delta.requests ? (double)p->delta.requests : 1;

		k->b->sf_name[i] = p->name;
		meas_set(&m[R_SF0 + i], &k->samp[2 * i], &k->samp[2 * i + 1],
			 p->secs * 1e6, nreq, nreq);
		m[R_SF0 + i].rpo = p->ops ? nreq / p->ops : 0;
	}
	return 0;
}

static bool wait_exit(pid_t pid, int ms, int *status)
{
	for (int i = 0; i < ms; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return true;
		usleep(1000);
	}
	return false;
}

static void reap(pid_t pid)
{
	int st;

	if (wait_exit(pid, 5000, &st))
		return;
	kill(pid, SIGTERM);
	if (!wait_exit(pid, 2000, &st)) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
}

static void tail_log(const char *path)
{
	char buf[2048];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	fprintf(stderr, "bench-daemons: %s:\n%s\n", path, buf);
}

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(p);
}

/* Daemon @d in set @si, round @r: one block, rows into @m. */
static int run_block(struct bench *b, int d, unsigned int si,
		     unsigned int r, struct meas *m)
{
	char dir[PATH_LEN + 32], sock[PATH_LEN + 40], log[PATH_LEN + 40];
	char opt[PATH_LEN + 64], pools[32], sockopt[PATH_LEN + 64];
	char poll[16];
	const struct set *st = &b->set[si];
	unsigned int pool = st->pool;
	char err[512] = "";
	struct vqf_sim_cfg sc = { 0 };
	struct blk k = { .b = b };
	double t0;
	pid_t pid;
	int ret, fd;

	snprintf(dir, sizeof(dir), "%s/%s-%u-%u", b->base, d_name[d], si, r);
	snprintf(sock, sizeof(sock), "%s.sock", dir);
	snprintf(log, sizeof(log), "%s.log", dir);
	if (mkdir(dir, 0755)) {
		fprintf(stderr, "bench-daemons: %s: %m\n", dir);
		return -1;
	}
	snprintf(opt, sizeof(opt), "source=%s,cache=none", dir);
	snprintf(pools, sizeof(pools), "--thread-pool-size=%u", pool);
	snprintf(poll, sizeof(poll), "%u", st->ours_us);
	snprintf(sockopt, sizeof(sockopt), "--socket-path=%s", sock);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "bench-daemons: %s: %m\n", log);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(fd);
		return -1;
	}
	if (!pid) {
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (d == D_OURS && st->ours_us)
			execl(b->exe[d], b->exe[d], "vhost-user", sockopt,
			      "-o", opt, pools, "--poll-us", poll,
			      (char *)NULL);
		else if (d == D_OURS)
			execl(b->exe[d], b->exe[d], "vhost-user", sockopt,
			      "-o", opt, pools, (char *)NULL);
		else
			execl(b->exe[d], b->exe[d], sockopt, "-o", opt,
			      pools, (char *)NULL);
		_exit(127);
	}
	close(fd);
	cur_daemon = pid;

	/* Connect as soon as the socket listens: no fixed sleep. */
	sc.connect = sock;
	sc.queue_size = 128;
	sc.cli.cache = VQF_GCLI_CACHE_NONE;
	/* The driver's callers spin on the used ring (the front-end). */
	sc.poll_ns = (u64)st->fe_us * 1000;
	t0 = now_us();
	for (;;) {
		int st;

		ret = vqf_sim_new(&sc, &k.sim);
		if (ret != -ENOENT && ret != -ECONNREFUSED)
			break;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			snprintf(err, sizeof(err), "the daemon exited (%d) "
				 "before listening", st);
			cur_daemon = 0;
			pid = 0;
			break;
		}
		if (now_us() - t0 > 10e6) {
			snprintf(err, sizeof(err), "no socket in 10 s");
			break;
		}
		usleep(500);
	}
	if (ret) {
		if (!*err)
			snprintf(err, sizeof(err), "connect: %s",
				 strerror(-ret));
		goto fail;
	}
	k.g = vqf_sim_drv(k.sim);
	k.ram = vqf_gdrv_ram(k.g);
	tree_find(pid, &k.t);
	ret = raw_rows(&k, m, err, sizeof(err));
	if (!ret)
		ret = sf_rows(&k, m, err, sizeof(err));
	vqf_sim_free(k.sim);
	if (ret)
		goto fail;
	/* The daemon exits once the front-end hangs up. */
	reap(pid);
	cur_daemon = 0;
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	unlink(log);
	return 0;
fail:
	fprintf(stderr, "bench-daemons: %s, pool %u, front-end poll %u us, "
		"ours' poll %u us, round %u: %s\n", d_name[d], pool,
		st->fe_us, st->ours_us, r + 1, err);
	if (pid > 0) {
		kill(pid, SIGTERM);
		reap(pid);
	}
	cur_daemon = 0;
	tail_log(log);
	/* Room for the block to run again. */
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	unlink(log);
	unlink(sock);
	return -1;
}

/*
 * What the raw rows ask of the host file system, as plain system calls
 * in a fresh directory of the same file system: fstatat (LOOKUP's
 * name resolution), fstat (GETATTR), pread and pwrite of 4 KiB,
 * openat(O_CREAT) + close (CREATE+RELEASE).  No daemon can serve a row
 * faster than this part of it.
 */
static int host_rows(struct bench *b, double *us)
{
	char dir[PATH_LEN + 16], name[32], buf[4096] = { 0 };
	struct stat st;
	int dfd, fd = -1, ret = 0;

	snprintf(dir, sizeof(dir), "%s/host", b->base);
	if (mkdir(dir, 0755) || (dfd = open(dir, O_DIRECTORY)) < 0)
		return -errno;
	fd = openat(dfd, "f", O_RDWR | O_CREAT, 0644);
	if (fd < 0 || pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf))
		ret = -EIO;
	for (int row = R_LOOKUP; row <= R_CREATE && !ret; row++) {
		double t0 = now_us();

		for (unsigned int i = 0; i < b->ops && !ret; i++) {
			int c;

			switch (row) {
			case R_LOOKUP:
				ret = fstatat(dfd, "f", &st,
					      AT_SYMLINK_NOFOLLOW);
				break;
			case R_GETATTR:
				ret = fstat(fd, &st);
				break;
			case R_READ:
				ret = pread(fd, buf, 4096, 0) == 4096 ? 0 : -1;
				break;
			case R_WRITE:
				ret = pwrite(fd, buf, 4096, 0) == 4096 ? 0 : -1;
				break;
			default:
				snprintf(name, sizeof(name), "c%u", i);
				c = openat(dfd, name, O_RDWR | O_CREAT, 0644);
				ret = c < 0 ? -1 : close(c);
				break;
			}
		}
		us[row] = (now_us() - t0) / b->ops;
	}
	if (fd >= 0)
		close(fd);
	close(dfd);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return ret ? -EIO : 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median over the rounds of field @off of struct meas. */
static double med(const struct bench *b, unsigned int p, int d, int row,
		  size_t off)
{
	double v[MAX_ROUNDS];
	unsigned int n = b->rounds;

	for (unsigned int r = 0; r < n; r++)
		v[r] = *(const double *)((const char *)&b->m[p][d][r][row] +
					 off);
	qsort(v, n, sizeof(v[0]), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *row_name(const struct bench *b, int row)
{
	static char buf[R_NR - R_SF0][40];

	if (row < R_SF0)
		return r_name[row];
	snprintf(buf[row - R_SF0], sizeof(buf[0]), "smallfile %s",
		 b->sf_name[row - R_SF0] ? b->sf_name[row - R_SF0] : "?");
	return buf[row - R_SF0];
}

static void ratio(char *out, size_t size, double ours, double theirs)
{
	if (ours > 0 && theirs > 0)
		snprintf(out, size, "%.2f", theirs / ours);
	else
		snprintf(out, size, "-");
}

static void report(const struct bench *b)
{
	const bool both = b->want[D_OURS] && b->want[D_VFSD];
	const int nrows = R_SF0 + (int)b->nsf;

	for (unsigned int p = 0; p < b->nsets; p++) {
		const struct set *st = &b->set[p];
		bool ok[D_NR];

		for (int d = 0; d < D_NR; d++)
			ok[d] = b->want[d] && !b->failed[p][d];
		if (st->ours_us)
			printf("\nOURS POLLING vs virtiofsd: --thread-pool-size="
			       "%u, front-end polling %u us for both, ours "
			       "--poll-us %u\n(virtiofsd cannot poll)",
			       st->pool, st->fe_us, st->ours_us);
		else if (st->fe_us)
			printf("\n--thread-pool-size=%u, front-end polling %u "
			       "us for both (equal settings)", st->pool,
			       st->fe_us);
		else
			printf("\n--thread-pool-size=%u (equal settings)",
			       st->pool);
		printf(", median of %u round(s); us/rq: wall time per "
		       "request (CREATE+RELEASE: per pair);\ncpu: the "
		       "daemon's CPU us per request; fe: the front-end's; x: "
		       "virtiofsd / ours (>= 2 is the goal)\n", b->rounds);
		printf("%-24s %9s %9s %6s %9s %9s %6s %7s %7s %7s %7s %7s %7s "
		       "%6s %6s\n", "row", "ours", "vfsd", "x", "ours-cpu",
		       "vfsd-cpu", "x-cpu", "ours-fe", "vfsd-fe", "ours-cs",
		       "vfsd-cs", "ours-rw", "vfsd-rw", "rq/op", "host");
		for (int row = 0; row < nrows; row++) {
			static const size_t off[] = {
				offsetof(struct meas, us),
				offsetof(struct meas, cpu),
				offsetof(struct meas, fe),
				offsetof(struct meas, cs),
				offsetof(struct meas, sys),
			};
			double v[D_NR][5];
			char x[16], xc[16];

			for (int d = 0; d < D_NR; d++)
				for (int c = 0; c < 5; c++)
					v[d][c] = ok[d] ? med(b, p, d, row,
							      off[c]) : -1;
			ratio(x, sizeof(x), v[D_OURS][0], v[D_VFSD][0]);
			ratio(xc, sizeof(xc), v[D_OURS][1], v[D_VFSD][1]);
			printf("%-24s", row_name(b, row));
			for (int c = 0; c < 2; c++) {
				for (int d = 0; d < D_NR; d++) {
					if (v[d][c] < 0)
						printf(" %9s", "-");
					else
						printf(" %9.2f", v[d][c]);
				}
				printf(" %6s", both ? (c ? xc : x) : "-");
			}
			for (int c = 2; c < 5; c++)
				for (int d = 0; d < D_NR; d++) {
					if (v[d][c] < 0)
						printf(" %7s", "-");
					else
						printf(" %7.2f", v[d][c]);
				}
			printf(" %6.2f", med(b, p, ok[D_OURS] ? D_OURS :
					     D_VFSD, row,
					     offsetof(struct meas, rpo)));
			if (row < R_SF0) {
				double h[MAX_ROUNDS];

				for (unsigned int r = 0; r < b->rounds; r++)
					h[r] = b->host[p][r][row];
				qsort(h, b->rounds, sizeof(h[0]), cmp_dbl);
				printf(" %6.2f", h[b->rounds / 2]);
			}
			printf("\n");
		}
		for (int d = 0; d < D_NR; d++) {
			if (b->want[d] && b->failed[p][d])
				printf("%s failed in this set (see "
				       "stderr)\n", d_name[d]);
			if (b->retried[p][d])
				printf("%s: %u block(s) failed and were run "
				       "again (see stderr)\n", d_name[d],
				       b->retried[p][d]);
		}
	}
	printf("\n(fe: the front-end's CPU us per request, this whole "
	       "process: the caller, the vhost-user\nfront-end's threads; "
	       "cs: the daemon's context switches per request, its live "
	       "threads;\nrw: its read/write-family system calls per request "
	       "(/proc/PID/io syscr + syscw); rq/op: FUSE requests per "
	       "file\nin the smallfile phases; host: us per op of the "
	       "same system calls made here on the host\n(fstatat, fstat, "
	       "pread, pwrite, openat+close), the part of a row no daemon "
	       "avoids)\n");
}

static void loadavg(char *out, size_t size)
{
	FILE *f = fopen("/proc/loadavg", "r");

	out[0] = 0;
	if (f) {
		if (!fgets(out, (int)size, f))
			out[0] = 0;
		fclose(f);
	}
	out[strcspn(out, "\n")] = 0;
}

int main(int argc, char **argv)
{
	static struct bench b;
	struct sigaction sa = { .sa_handler = on_signal };
	const char *tmp = getenv("TMPDIR");
	char la[128], arenas[24];
	int ret = 0;

	if (parse(argc, argv, &b)) {
		usage(stderr);
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "bench-daemons: needs root (virtiofsd's "
			"namespace sandbox)\n");
		return 77;
	}
	for (int d = 0; d < D_NR; d++) {
		if (b.want[d] && access(b.exe[d], X_OK)) {
			fprintf(stderr, "bench-daemons: %s: %s: %s\n",
				d_name[d], b.exe[d], strerror(errno));
			return 77;
		}
	}
	b.uid = (u32)geteuid();
	b.gid = (u32)getegid();
	b.pid = (u32)getpid();
	if (!tmp || !*tmp)
		tmp = "/tmp";
	/* The socket path must fit in sun_path (108 bytes). */
	if (strlen(tmp) > 48) {
		fprintf(stderr, "bench-daemons: TMPDIR too long\n");
		return 2;
	}
	snprintf(b.base, sizeof(b.base), "%s/vqf-bench-daemons.XXXXXX", tmp);
	if (!mkdtemp(b.base)) {
		perror("bench-daemons: mkdtemp");
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A daemon that dies under us must not kill the bench. */
	signal(SIGPIPE, SIG_IGN);

	/*
	 * glibc's malloc sizes its arena limit by the CPU count once a
	 * process has more than 8 arenas.  Inside virtiofsd's namespace
	 * sandbox /sys and /proc/stat are gone, so glibc falls back to
	 * sched_getaffinity(), which virtiofsd 7.2's seccomp allowlist
	 * lacks: the pool thread that makes the 9th arena is killed with
	 * SIGSYS (docs/bench-daemons.md).  Telling both daemons glibc's
	 * own default limit (8 per CPU) keeps malloc as it was and skips
	 * the lookup.  A value the user set is left alone.
	 */
	snprintf(arenas, sizeof(arenas), "%ld",
		 8 * sysconf(_SC_NPROCESSORS_ONLN));
	setenv("MALLOC_ARENA_MAX", arenas, 0);

	loadavg(la, sizeof(la));
	printf("bench-daemons: nproc %ld, load %s; %u round(s), %u requests "
	       "per raw row, smallfile %u files x 4 KiB; under %s\n",
	       sysconf(_SC_NPROCESSORS_ONLN), la, b.rounds, b.ops, b.files,
	       b.base);
	printf("ours: %s vhost-user; virtiofsd: %s; both: --socket-path=SOCK "
	       "-o source=DIR,cache=none --thread-pool-size=N\n"
	       "front-end: simulated guest over vqf_vfront, 1 request queue "
	       "x 128, cache=none, one request in flight; polled sets: the "
	       "driver\nspins on its used ring (poll_ns), ours also gets "
	       "--poll-us N; environment of both: MALLOC_ARENA_MAX=%s\n",
	       b.exe[D_OURS], b.exe[D_VFSD], getenv("MALLOC_ARENA_MAX"));
	fflush(stdout);
	for (unsigned int p = 0; p < b.nsets; p++) {
		for (unsigned int r = 0; r < b.rounds; r++) {
			if (host_rows(&b, b.host[p][r]))
				fprintf(stderr, "bench-daemons: host rows "
					"failed\n");
			for (int d = 0; d < D_NR; d++) {
				unsigned int tries = 0;

				if (!b.want[d] || b.failed[p][d])
					continue;
				fprintf(stderr, "bench-daemons: pool %u, "
					"polling %u/%u us, round %u/%u %s\n",
					b.set[p].pool, b.set[p].fe_us,
					d == D_OURS ? b.set[p].ours_us : 0,
					r + 1, b.rounds, d_name[d]);
				/*
				 * A daemon that dies mid-block (virtiofsd's
				 * own seccomp kills it now and then, see
				 * docs/bench-daemons.md) runs the block
				 * again, twice at most.
				 */
				while (run_block(&b, d, p, r,
						 b.m[p][d][r])) {
					if (++tries == 3) {
						b.failed[p][d] = true;
						ret = 1;
						break;
					}
					b.retried[p][d]++;
				}
			}
		}
	}
	/* Every row or a failure: what the smoke test asserts. */
	if (b.nsf != R_NR - R_SF0) {
		fprintf(stderr, "bench-daemons: %u smallfile phases, not %d\n",
			b.nsf, R_NR - R_SF0);
		ret = 1;
	}
	loadavg(la, sizeof(la));
	report(&b);
	printf("load afterwards %s\n", la);
	nftw(b.base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return ret;
}
