// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench_shared.c - issue 7's benchmark: two guests on one backend (through
 * the hub and its shared version table), guest A doing stat- and
 * lookup-heavy work, guest B and the host changing one thing now and
 * then, for cache=none, auto, always and shared in the same run.
 *
 * Per mode: a fresh directory (N empty files in ls/, a path of D
 * directories ending in a file under deep/) and a fresh 2-guest machine
 * (vqfuse's passthrough, inline kicks).  Guest A runs two workloads:
 *   ls-l  READDIRPLUS of ls/, then lstat of every entry it listed, as
 *         ls -l does; R rounds;
 *   deep  lstat of deep/d00/.../dNN/leaf, W times.
 * Every K of A's ops one change is made, in turn by guest B and on the
 * host (plain syscalls; the hub sees them through inotify), and A's very
 * next op looks at the changed name and is compared with the host's
 * lstat (rc, inode, mode, size, links, mtime, ctime): a difference is a
 * stale answer.  ls-l changes: chmod, utimes, unlink, create of one file
 * (B's and the host's files are disjoint, so B's own cache never acts on
 * an inode the host replaced); deep: chmod and utimes of the leaf, rename
 * of the middle directory away and back.  With cache=shared a stale
 * answer is followed (untimed, its requests not counted) until A sees
 * the change, which measures the inotify latency for host edits.
 *
 * Reported per workload and mode: A's ops/s (an op is one lstat; the time
 * of A's calls only, listing included, changes and host lstats not),
 * ls -l rounds/s, A's FUSE requests per op, stale answers after B's and
 * after the host's changes, and the ratios shared/always and shared/none.
 * The caches hold every name (icache_max above the file count), or
 * always would pay for LRU misses rather than coherence.  One untimed
 * warm-up round of each workload comes first.  Meant for comparing peers
 * in one run; no asserts.
 */
#define _GNU_SOURCE
#include "vqf_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { M_NONE, M_AUTO, M_ALWAYS, M_SHARED, M_NR };
static const char *const mode_name[M_NR] = { "none", "auto", "always",
					      "shared" };
static const enum vqf_gcli_cache mode_cache[M_NR] = {
	VQF_GCLI_CACHE_NONE, VQF_GCLI_CACHE_AUTO, VQF_GCLI_CACHE_ALWAYS,
	VQF_GCLI_CACHE_SHARED,
};

/* ls -l with READDIRPLUS (the kernel's first getdents) or READDIR. */
enum { W_LSPLUS, W_LS, W_DEEP, W_NR };
static const char *const wl_name[W_NR] = { "ls-l", "ls-l-noplus", "deep" };
static const char *const wl_dir[W_NR] = { "plus", "noplus", NULL };

enum { BY_B, BY_HOST, BY_NR };
static const char *const by_name[BY_NR] = { "guest B", "host" };

enum { K_CHMOD, K_TOUCH, K_UNLINK, K_CREATE, K_RENAME };

/*
 * How long a stale answer is followed (the clients' clock stands still
 * meanwhile, so no timeout can end it) before it counts as not shown by
 * the table.
 */
#define FOLLOW_NS	200000000ull
#define NS		1000000000ull

struct opts {
	unsigned int files, rounds, depth, walks, every, runs;
	bool sync, json, verbose;
};

struct result {
	u64 ops, reqs, lookups, ns, rounds;
	u64 changes[BY_NR], stale[BY_NR];
	/* cache=shared: time from a change to A seeing it, stale ones only */
	u64 lat_n[BY_NR], lat_sum[BY_NR], lat_max[BY_NR], never[BY_NR];
	u64 ver_valid, ver_stale;	/* cache=shared, A's verdicts */
	u64 bumps, host_bumps;		/* the hub's */
	double med;			/* median ops/s of the runs */
	int err;
};

#define MAX_RUNS	15

struct run {
	const struct opts *o;
	int mode;
	char dir[PATH_MAX];
	struct vqf_sim *s;
	struct vqf_gcli *a, *b;
	struct result *r;
	u64 t0, since, nchange;
	u64 skip_req, skip_lookups;	/* following a stale answer */
	/* The clients' clock: real time less the time spent following */
	u64 paused, frozen_at;
	bool frozen;
	char mid[PATH_MAX], mid_away[PATH_MAX];	/* deep: renamed */
	char leaf[PATH_MAX];		/* deep: A's path */
};

/* One name as A or the host sees it. */
struct look {
	int rc;
	u32 mode;
	u64 ino, size, nlink, mtime, ctime;
};

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * NS + (u64)ts.tv_nsec;
}

static u64 cli_clock(void *arg)
{
	struct run *x = arg;

	return x->frozen ? x->frozen_at : now_ns() - x->paused;
}

static void a_start(struct run *x)
{
	x->t0 = now_ns();
}

static void a_stop(struct run *x)
{
	x->r->ns += now_ns() - x->t0;
}

/* A's counters and the hub's. */
struct snap {
	u64 req, lookups, ver_valid, ver_stale, bumps, host_bumps;
};

static struct snap snap(struct run *x)
{
	struct vqf_sim_stats st;
	struct snap n;

	vqf_sim_get_stats_n(x->s, 0, &st);
	n.req = st.cli.requests;
	n.lookups = st.cli.lookups;
	n.ver_valid = st.cli.ver_valid;
	n.ver_stale = st.cli.ver_stale;
	n.bumps = st.hub.bumps;
	n.host_bumps = st.hub.host_bumps;
	return n;
}

static void look_from(struct look *l, int rc, const struct stat *st)
{
	memset(l, 0, sizeof(*l));
	l->rc = rc;
	if (rc)
		return;
	l->mode = st->st_mode;
	l->ino = st->st_ino;
	l->size = (u64)st->st_size;
	l->nlink = st->st_nlink;
	l->mtime = (u64)st->st_mtim.tv_sec * NS + (u64)st->st_mtim.tv_nsec;
	l->ctime = (u64)st->st_ctim.tv_sec * NS + (u64)st->st_ctim.tv_nsec;
}

static bool same(const struct look *a, const struct look *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* @buf: PATH_MAX bytes; an overlong path is cut (no such name here). */
static const char *host_path(struct run *x, const char *rel, char *buf)
{
	if (snprintf(buf, PATH_MAX, "%s/%s", x->dir, rel) >= PATH_MAX)
		buf[0] = 0;
	return buf;
}

static struct look host_look(struct run *x, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;
	struct look l;

	look_from(&l, lstat(host_path(x, rel, p), &st) ? -errno : 0, &st);
	return l;
}

static struct look guest_look(struct vqf_gcli *c, const char *rel)
{
	struct stat st;
	struct look l;

	look_from(&l, vqf_gcli_lstat(c, rel, &st), &st);
	return l;
}

/* ---- changes ------------------------------------------------------------ */

static int host_write(const char *p, size_t len, int flags)
{
	char buf[64];
	int fd = open(p, flags, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	memset(buf, 'x', sizeof(buf));
	n = len ? write(fd, buf, len) : 0;
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

static int guest_create(struct vqf_gcli *c, const char *rel, size_t len)
{
	char buf[64];
	int fd = vqf_gcli_open(c, rel, O_CREAT | O_EXCL | O_WRONLY, 0644);
	ssize_t n;

	if (fd < 0)
		return fd;
	memset(buf, 'x', sizeof(buf));
	n = vqf_gcli_write(c, fd, buf, len);
	vqf_gcli_close(c, fd);
	return n == (ssize_t)len ? 0 : (n < 0 ? (int)n : -EIO);
}

/* Change number @i, by guest B or the host, of @rel (and @rel2). */
static int change(struct run *x, int by, int kind, const char *rel,
		  const char *rel2, u64 i)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
				  { .tv_sec = 1000000000 + (time_t)i } };
	char p[PATH_MAX], p2[PATH_MAX];
	struct look h = host_look(x, rel);
	mode_t m = (h.mode & 07777) == 0644 ? 0600 : 0644;
	size_t len = 1 + i % 61;	/* never the originals' 0 */

	host_path(x, rel, p);
	if (rel2)
		host_path(x, rel2, p2);
	if (by == BY_HOST) {
		switch (kind) {
		case K_CHMOD:
			return chmod(p, m) ? -errno : 0;
		case K_TOUCH:
			return utimensat(AT_FDCWD, p, ts, 0) ? -errno : 0;
		case K_UNLINK:
			return unlink(p) ? -errno : 0;
		case K_CREATE:
			return host_write(p, len, O_CREAT | O_EXCL | O_WRONLY);
		default:
			return rename(p, p2) ? -errno : 0;
		}
	}
	switch (kind) {
	case K_CHMOD:
		return vqf_gcli_chmod(x->b, rel, m);
	case K_TOUCH:
		return vqf_gcli_utimens(x->b, rel, ts);
	case K_UNLINK:
		return vqf_gcli_unlink(x->b, rel);
	case K_CREATE:
		return guest_create(x->b, rel, len);
	default:
		return vqf_gcli_rename(x->b, rel, rel2, 0);
	}
}

static const char *const kind_name[] = { "chmod", "utimes", "unlink",
					 "create", "rename" };

static void print_look(const char *who, const struct look *l)
{
	fprintf(stderr, "    %-5s rc %d ino %llu mode %o size %llu mtime "
		"%llu ctime %llu\n", who, l->rc, (unsigned long long)l->ino,
		l->mode, (unsigned long long)l->size,
		(unsigned long long)l->mtime, (unsigned long long)l->ctime);
}

/*
 * A's next op after a change by @by at @t: a look at @rel, compared with
 * the host's.  With cache=shared a stale answer is followed until A sees
 * the change (untimed, uncounted).
 */
static void check(struct run *x, const char *rel, int by, int kind,
		  u64 t)
{
	struct result *r = x->r;
	struct look g, h;
	struct snap q0, q1;
	u64 lat, f0;

	a_start(x);
	g = guest_look(x->a, rel);
	a_stop(x);
	r->ops++;
	h = host_look(x, rel);
	if (same(&g, &h))
		return;
	r->stale[by]++;
	if (x->o->verbose) {
		fprintf(stderr, "%s: stale answer after %s by %s of %s "
			"(change %llu)\n", mode_name[x->mode],
			kind_name[kind], by_name[by], rel,
			(unsigned long long)x->nchange - 1);
		print_look("A", &g);
		print_look("host", &h);
	}
	if (x->mode != M_SHARED)
		return;
	q0 = snap(x);
	x->frozen_at = cli_clock(x);
	x->frozen = true;
	f0 = now_ns();
	for (;;) {
		lat = now_ns() - t;
		if (same(&g, &h))
			break;
		if (lat > FOLLOW_NS) {
			r->never[by]++;
			if (x->o->verbose)
				fprintf(stderr, "    not shown by the table "
					"within %llu ms\n",
					FOLLOW_NS / 1000000);
			break;
		}
		usleep(20);
		g = guest_look(x->a, rel);
		h = host_look(x, rel);
	}
	x->paused += now_ns() - f0;
	x->frozen = false;
	q1 = snap(x);
	x->skip_req += q1.req - q0.req;
	x->skip_lookups += q1.lookups - q0.lookups;
	if (!same(&g, &h))
		return;
	r->lat_n[by]++;
	r->lat_sum[by] += lat;
	if (lat > r->lat_max[by])
		r->lat_max[by] = lat;
}

/* Every K of A's ops: the next change of workload @w, then A's check. */
static int maybe_change(struct run *x, int w)
{
	const struct opts *o = x->o;
	u64 i, g;
	int by, kind, ret;
	char rel[PATH_MAX], rel2[PATH_MAX];
	const char *look = rel;
	bool two = false;

	if (++x->since < o->every)
		return 0;
	x->since = 0;
	a_stop(x);
	i = x->nchange++;
	g = i / 4;
	by = (int)(g % 2);
	if (w != W_DEEP) {
		/* Groups of four on one file; B's files even, the host's odd
		 * (B's cache never acts on an inode the host replaced).
		 */
		unsigned int half = o->files / 2;
		unsigned int f = (unsigned int)((g * 2654435761u) % half) * 2 +
				 (unsigned int)by;
		static const int kinds[4] = { K_CHMOD, K_TOUCH, K_UNLINK,
					      K_CREATE };

		kind = kinds[i % 4];
		snprintf(rel, sizeof(rel), "%s/f%06u", wl_dir[w], f);
	} else {
		/* The leaf's attributes; the middle directory away, back. */
		static const int kinds[4] = { K_CHMOD, K_TOUCH, K_RENAME,
					      K_RENAME };
		bool away = i % 4 == 2;

		kind = kinds[i % 4];
		look = x->leaf;
		snprintf(rel, sizeof(rel), "%s", kind != K_RENAME ? x->leaf :
			 away ? x->mid : x->mid_away);
		snprintf(rel2, sizeof(rel2), "%s", away ? x->mid_away : x->mid);
		two = kind == K_RENAME;
	}
	ret = change(x, by, kind, rel, two ? rel2 : NULL, i);
	if (ret) {
		fprintf(stderr, "bench-shared: %s: change %llu by %s: %s\n",
			mode_name[x->mode], (unsigned long long)i,
			by_name[by], strerror(-ret));
		return ret;
	}
	x->r->changes[by]++;
	g = now_ns();
	if (by == BY_HOST && o->sync)
		vqf_hub_sync(vqf_sim_hub(x->s));
	check(x, look, by, kind, g);
	a_start(x);
	return 0;
}

/* ---- workloads ---------------------------------------------------------- */

struct names {
	char **v;
	size_t n, cap;
};

static int collect(void *ctx, const char *name, const struct stat *st)
{
	struct names *nm = ctx;

	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 1024;
		char **v = realloc(nm->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		nm->v = v;
		nm->cap = cap;
	}
	nm->v[nm->n] = strdup(name);
	return nm->v[nm->n++] ? 0 : -ENOMEM;
}

/* One ls -l of workload @w: list, then lstat every name listed. */
static int ls_round(struct run *x, int w, bool changes)
{
	struct names nm = { 0 };
	char rel[PATH_MAX];
	struct stat st;
	size_t k;
	int ret;

	a_start(x);
	ret = vqf_gcli_readdir(x->a, wl_dir[w], w == W_LSPLUS, collect, &nm);
	for (k = 0; !ret && k < nm.n; k++) {
		snprintf(rel, sizeof(rel), "%s/%s", wl_dir[w], nm.v[k]);
		/* A name a change took away since the listing is fine. */
		ret = vqf_gcli_lstat(x->a, rel, &st);
		if (ret == -ENOENT)
			ret = 0;
		x->r->ops += changes;
		if (!ret && changes)
			ret = maybe_change(x, w);
	}
	a_stop(x);
	for (k = 0; k < nm.n; k++)
		free(nm.v[k]);
	free(nm.v);
	if (ret)
		fprintf(stderr, "bench-shared: %s: ls -l: %s\n",
			mode_name[x->mode], strerror(-ret));
	return ret;
}

static int deep_walks(struct run *x, unsigned int n, bool changes)
{
	struct stat st;
	unsigned int k;
	int ret = 0;

	a_start(x);
	for (k = 0; !ret && k < n; k++) {
		/* Away (renamed) is an answer too. */
		ret = vqf_gcli_lstat(x->a, x->leaf, &st);
		if (ret == -ENOENT)
			ret = 0;
		x->r->ops += changes;
		if (!ret && changes)
			ret = maybe_change(x, W_DEEP);
	}
	a_stop(x);
	if (ret)
		fprintf(stderr, "bench-shared: %s: deep walk: %s\n",
			mode_name[x->mode], strerror(-ret));
	return ret;
}

/* ---- setup -------------------------------------------------------------- */

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(p);
}

/* What workload @w works on. */
static int populate(struct run *x, int w)
{
	char p[PATH_MAX], rel[PATH_MAX];
	unsigned int k;
	size_t off;
	int ret;

	if (w != W_DEEP) {
		if (mkdir(host_path(x, wl_dir[w], p), 0755))
			return -errno;
		for (k = 0; k < x->o->files; k++) {
			snprintf(rel, sizeof(rel), "%s/f%06u", wl_dir[w], k);
			ret = host_write(host_path(x, rel, p), 0,
					 O_CREAT | O_EXCL | O_WRONLY);
			if (ret)
				return ret;
		}
		return 0;
	}
	if (mkdir(host_path(x, "deep", p), 0755))
		return -errno;
	off = (size_t)snprintf(rel, sizeof(rel), "deep");
	for (k = 0; k < x->o->depth; k++) {
		/* At most 64 directories: 4 + 64 * 4 bytes. */
		if (snprintf(rel + off, sizeof(rel) - off, "/d%02u", k) != 4)
			return -ENAMETOOLONG;
		off += 4;
		if (k == x->o->depth / 2) {
			strcpy(x->mid, rel);
			strcpy(x->mid_away, rel);
			strcat(x->mid_away, ".away");
		}
		if (mkdir(host_path(x, rel, p), 0755))
			return -errno;
	}
	if (snprintf(x->leaf, sizeof(x->leaf), "%s/leaf", rel) >= PATH_MAX)
		return -ENAMETOOLONG;
	return host_write(host_path(x, x->leaf, p), 0,
			  O_CREAT | O_EXCL | O_WRONLY);
}

/*
 * Workload @w with one mode on a fresh directory and machine (one per
 * workload: the passthrough keeps a descriptor per inode a guest holds).
 */
static void run_one(const struct opts *o, int mode, int w, struct result *r)
{
	const char *tmp = getenv("TMPDIR");
	struct vqf_sim_cfg cfg = { 0 };
	struct run x = { .o = o, .mode = mode, .r = r };
	struct snap q0, q1;
	unsigned int k;
	int ret;

	memset(r, 0, sizeof(*r));
	snprintf(x.dir, sizeof(x.dir), "%s/vqf-bench-shared-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(x.dir)) {
		ret = -errno;
		x.dir[0] = 0;
		goto out;
	}
	ret = populate(&x, w);
	if (ret)
		goto out;
	cfg.shared = x.dir;
	cfg.fs = VQF_SIM_FS_VQFUSE;
	cfg.inline_kick = true;
	cfg.guests = 2;
	cfg.ram = 64 << 20;
	cfg.cli.cache = mode_cache[mode];
	cfg.cli.clock = cli_clock;
	cfg.cli.clock_arg = &x;
	/* Every name fits: the LRU is not what is measured. */
	cfg.cli.icache_max = 2 * o->files + 4 * o->depth + 1024;
	cfg.hub.nr_slots = 2ull * (o->files + o->depth) + 65536;
	ret = vqf_sim_new(&cfg, &x.s);
	if (ret)
		goto out;
	x.a = vqf_sim_cli_n(x.s, 0);
	x.b = vqf_sim_cli_n(x.s, 1);
	/* Warm-up: untimed, uncounted. */
	ret = w == W_DEEP ? deep_walks(&x, 1, false) : ls_round(&x, w, false);
	if (ret)
		goto out;
	r->ns = 0;
	q0 = snap(&x);
	if (w == W_DEEP) {
		ret = deep_walks(&x, o->walks, true);
	} else {
		for (k = 0; !ret && k < o->rounds; k++) {
			ret = ls_round(&x, w, true);
			r->rounds++;
		}
	}
	q1 = snap(&x);
	r->reqs = q1.req - q0.req - x.skip_req;
	r->lookups = q1.lookups - q0.lookups - x.skip_lookups;
	r->ver_valid = q1.ver_valid - q0.ver_valid;
	r->ver_stale = q1.ver_stale - q0.ver_stale;
	r->bumps = q1.bumps - q0.bumps;
	r->host_bumps = q1.host_bumps - q0.host_bumps;
out:
	if (ret)
		fprintf(stderr, "bench-shared: %s: %s: %s\n", mode_name[mode],
			wl_name[w], strerror(-ret));
	r->err = ret;
	vqf_sim_free(x.s);
	if (x.dir[0])
		nftw(x.dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Sums run @b into @a. */
static void add(struct result *a, const struct result *b)
{
	int by;

	a->ops += b->ops;
	a->reqs += b->reqs;
	a->lookups += b->lookups;
	a->ns += b->ns;
	a->rounds += b->rounds;
	for (by = 0; by < BY_NR; by++) {
		a->changes[by] += b->changes[by];
		a->stale[by] += b->stale[by];
		a->lat_n[by] += b->lat_n[by];
		a->lat_sum[by] += b->lat_sum[by];
		if (b->lat_max[by] > a->lat_max[by])
			a->lat_max[by] = b->lat_max[by];
		a->never[by] += b->never[by];
	}
	a->ver_valid += b->ver_valid;
	a->ver_stale += b->ver_stale;
	a->bumps += b->bumps;
	a->host_bumps += b->host_bumps;
	if (!a->err)
		a->err = b->err;
}

/* ---- output ------------------------------------------------------------- */

static double ops_s(const struct result *r)
{
	return r->ns ? (double)r->ops * 1e9 / (double)r->ns : 0;
}

static double per(u64 a, u64 b)
{
	return b ? (double)a / (double)b : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void print_table(const struct opts *o, struct result r[M_NR][W_NR])
{
	static const char *const what[W_NR] = {
		"READDIRPLUS + lstat of each of %u files, %u rounds\n",
		"READDIR + lstat of each of %u files, %u rounds\n",
		"lstat of a path %u directories deep, %u times\n",
	};
	int w, m;

	for (w = 0; w < W_NR; w++) {
		const struct result *sh = &r[M_SHARED][w];

		printf("\n%s: ", wl_name[w]);
		printf(what[w], w == W_DEEP ? o->depth : o->files,
		       w == W_DEEP ? o->walks : o->rounds);
		printf("%-7s %9s %8s %7s %7s %8s %8s %16s\n", "mode", "ops/s",
		       w == W_DEEP ? "" : "rounds/s", "req/op", "changes",
		       "stale(B)", "stale(h)", "host seen (us)");
		for (m = 0; m < M_NR; m++) {
			const struct result *c = &r[m][w];
			char rs[16] = "", lat[32] = "-";

			if (c->err) {
				printf("%-7s failed: %s\n", mode_name[m],
				       strerror(-c->err));
				continue;
			}
			if (w != W_DEEP)
				snprintf(rs, sizeof(rs), "%.2f",
					 c->med * per(c->rounds, c->ops));
			if (c->lat_n[BY_HOST])
				snprintf(lat, sizeof(lat), "%.0f/%.0f",
					 per(c->lat_sum[BY_HOST],
					     c->lat_n[BY_HOST]) / 1e3,
					 (double)c->lat_max[BY_HOST] / 1e3);
			printf("%-7s %9.0f %8s %7.3f %7llu %8llu %8llu "
			       "%16s\n", mode_name[m], c->med, rs,
			       per(c->reqs, c->ops),
			       (unsigned long long)(c->changes[BY_B] +
						    c->changes[BY_HOST]),
			       (unsigned long long)c->stale[BY_B],
			       (unsigned long long)c->stale[BY_HOST], lat);
		}
		printf("shared/always %.2f (goal >= %.2f), shared/none %.2f\n",
		       ratio(sh->med, r[M_ALWAYS][w].med), 1 / 1.5,
		       ratio(sh->med, r[M_NONE][w].med));
		if (sh->never[BY_B] || sh->never[BY_HOST])
			printf("shared: %llu+%llu stale answers (B+host) the "
			       "table did not end within %llu ms (left to the "
			       "timeout)\n",
			       (unsigned long long)sh->never[BY_B],
			       (unsigned long long)sh->never[BY_HOST],
			       FOLLOW_NS / 1000000);
	}
}

static void print_json(const struct opts *o, struct result r[M_NR][W_NR])
{
	int w, m, by;

	printf("{\"files\": %u, \"rounds\": %u, \"depth\": %u, "
	       "\"walks\": %u, \"change_every\": %u, \"runs\": %u, "
	       "\"sync\": %s, \"workloads\": [", o->files, o->rounds,
	       o->depth, o->walks, o->every, o->runs,
	       o->sync ? "true" : "false");
	for (w = 0; w < W_NR; w++) {
		printf("%s\n {\"name\": \"%s\", \"modes\": [", w ? "," : "",
		       wl_name[w]);
		for (m = 0; m < M_NR; m++) {
			const struct result *c = &r[m][w];

			printf("%s\n  {\"mode\": \"%s\", \"error\": %d, "
			       "\"ops\": %llu, \"ns\": %llu, "
			       "\"ops_per_s_median\": %.1f, "
			       "\"ops_per_s_all\": %.1f, \"rounds\": %llu, "
			       "\"requests\": %llu, \"requests_per_op\": %.4f, "
			       "\"lookups\": %llu",
			       m ? "," : "", mode_name[m], c->err,
			       (unsigned long long)c->ops,
			       (unsigned long long)c->ns, c->med, ops_s(c),
			       (unsigned long long)c->rounds,
			       (unsigned long long)c->reqs,
			       per(c->reqs, c->ops),
			       (unsigned long long)c->lookups);
			for (by = 0; by < BY_NR; by++)
				printf(", \"%s\": {\"changes\": %llu, "
				       "\"stale\": %llu, \"seen_n\": %llu, "
				       "\"seen_mean_ns\": %.0f, "
				       "\"seen_max_ns\": %llu, "
				       "\"never\": %llu}",
				       by == BY_B ? "guest_b" : "host",
				       (unsigned long long)c->changes[by],
				       (unsigned long long)c->stale[by],
				       (unsigned long long)c->lat_n[by],
				       per(c->lat_sum[by], c->lat_n[by]),
				       (unsigned long long)c->lat_max[by],
				       (unsigned long long)c->never[by]);
			printf(", \"ver_valid\": %llu, \"ver_stale\": %llu, "
			       "\"hub_bumps\": %llu, \"hub_host_bumps\": %llu}",
			       (unsigned long long)c->ver_valid,
			       (unsigned long long)c->ver_stale,
			       (unsigned long long)c->bumps,
			       (unsigned long long)c->host_bumps);
		}
		printf("]}");
	}
	printf("]}\n");
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: bench-shared [--files N] [--rounds N] [--depth N] [--walks N]\n"
"                    [--change-every K] [--sync] [--json] [-v]\n"
"\n"
"Two simulated guests on one backend; guest A lists a directory and\n"
"lstats every entry (ls -l) and walks a deep path, guest B and the host\n"
"take turns changing one thing every K of A's ops.  Prints A's ops/s,\n"
"requests per op and stale answers for cache=none, auto, always and\n"
"shared, each on a fresh directory and machine.\n"
"\n"
"  --files N         files in the listed directory (default 10000)\n"
"  --rounds N        ls -l rounds (default 5)\n"
"  --depth N         directories in the deep path (default 16)\n"
"  --walks N         deep path walks (default 20000)\n"
"  --change-every K  A's ops between changes (default 500)\n"
"  --runs N          rounds of all modes, alternating; the median ops/s\n"
"                    is printed (1..%d, default 3)\n"
"  --sync            vqf_hub_sync() after each host change (no inotify\n"
"                    latency)\n"
"  --json            one JSON object instead of the tables\n"
"  -v, --verbose     every stale answer on stderr\n"
"Temporary directories are made under $TMPDIR (default /tmp).\n",
		MAX_RUNS);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct {
		const char *name;
		unsigned long lo, hi;
	} nums[] = {
		{ "--files", 2, 10000000 },
		{ "--rounds", 1, 1000000 },
		{ "--depth", 1, 64 },
		{ "--walks", 1, 100000000 },
		{ "--change-every", 1, 100000000 },
		{ "--runs", 1, MAX_RUNS },
	};
	unsigned int *dst[] = { &o->files, &o->rounds, &o->depth, &o->walks,
				&o->every, &o->runs };
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		unsigned long n;
		unsigned int k;
		char *end;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		}
		if (!strcmp(a, "--sync")) {
			o->sync = true;
			continue;
		}
		if (!strcmp(a, "--json")) {
			o->json = true;
			continue;
		}
		if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			o->verbose = true;
			continue;
		}
		for (k = 0; k < sizeof(nums) / sizeof(nums[0]); k++)
			if (!strcmp(a, nums[k].name))
				break;
		if (k == sizeof(nums) / sizeof(nums[0])) {
			fprintf(stderr, "bench-shared: bad option '%s'\n", a);
			usage(stderr);
			return -1;
		}
		v = ++i < argc ? argv[i] : "";
		errno = 0;
		n = strtoul(v, &end, 10);
		if (*v < '0' || *v > '9' || errno || *end ||
		    n < nums[k].lo || n > nums[k].hi) {
			fprintf(stderr, "bench-shared: %s: invalid value '%s' "
				"(expected %lu..%lu)\n", a, v, nums[k].lo,
				nums[k].hi);
			return -1;
		}
		*dst[k] = (unsigned int)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .files = 10000, .rounds = 5, .depth = 16,
			  .walks = 20000, .every = 500, .runs = 3 };
	static struct result r[M_NR][W_NR], one;
	static double v[M_NR][W_NR][MAX_RUNS];
	unsigned int k;
	int m, w, bad = 0;

	if (parse(argc, argv, &o))
		return 2;
	/* Modes alternate, so a load change hits them all alike. */
	for (k = 0; k < o.runs; k++) {
		for (w = 0; w < W_NR; w++) {
			for (m = 0; m < M_NR; m++) {
				run_one(&o, m, w, &one);
				add(&r[m][w], &one);
				v[m][w][k] = ops_s(&one);
				bad |= one.err != 0;
			}
		}
	}
	for (m = 0; m < M_NR; m++)
		for (w = 0; w < W_NR; w++)
			r[m][w].med = median(v[m][w], o.runs);
	if (o.json) {
		print_json(&o, r);
	} else {
		printf("bench-shared: 2 guests on one vqfuse passthrough "
		       "(hub, inline kicks), %u runs (median ops/s, other "
		       "columns summed); a change every %u ops of guest A, "
		       "by guest B and the host in turn%s\n", o.runs, o.every,
		       o.sync ? " (host changes synced)" : "");
		print_table(&o, r);
	}
	return bad;
}
