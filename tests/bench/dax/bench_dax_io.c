// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench_dax_io.c - issue 6's benchmark: seqread, randread, seqwrite and
 * randwrite with 4 KiB I/O on one file, on five stacks in one run:
 *   native   plain pread/pwrite on the host file;
 *   fuse     the simulated guest, FUSE_READ/FUSE_WRITE (inline kicks);
 *   dax      the guest's read()/write() through a DAX window twice the
 *            file;
 *   dax-mm   the same window through vqf_gcli_mmap(): each 4 KiB is a
 *            get, a memcpy and a put (writes that grow the file go
 *            through write(), as a program would ftruncate first);
 *   dax-rc   read()/write() through a window a quarter of the file
 *            (64 MiB for the default 256 MiB): reclaim all along.
 * Prints MB/s, FUSE requests per MB and ranges reclaimed per stack, and
 * the ratios dax/fuse and native/dax.  -t picks stacks (comma list).
 * Meant for perf stat; no asserts.
 *
 * Then (or alone, -P) dax=auto beside dax=always and no DAX (issue 30):
 * 4 KiB sequential and random reads of a file four times the window
 * (random: the thrash), random reads of a file half the window, and
 * small files read once and three times; -o sets the policy's thresholds
 * (small=BYTES,uses=N,used=BYTES,min=N,pct=N,sample=N,backoff=N,shift=N);
 * with -R too, over each range size's own defaults.
 *
 * -R alone (issue 30 item 3): the reads above through ranges of 2 MiB
 * down to 64 KiB (or the sizes given), under dax=always and dax=auto,
 * with no DAX as the reference, plus reads of a hot set of 64 KiB
 * clusters spread over the big file.
 *
 * -D alone: deferred teardown at evict (docs/dax.md, "Deferred teardown
 * at evict") on and off, under dax=always and dax=auto, in one run:
 * small files created, read twice (auto maps a small file at its second
 * read), deleted, file by file (cycle) and phase by phase; ops/s and
 * SETUPMAPPING, REMOVEMAPPING and all requests per op.
 */
#include "vqf_wl_sim.h"
#include "vqf_workload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

enum { ST_NATIVE, ST_FUSE, ST_DAX, ST_DAXMM, ST_DAXRC, ST_NR };
static const char *const st_name[ST_NR] = { "native", "fuse", "dax",
					     "dax-mm", "dax-rc" };
static const enum vqf_wl_kind kinds[] = { VQF_WL_SEQREAD, VQF_WL_RANDREAD,
					  VQF_WL_SEQWRITE, VQF_WL_RANDWRITE };
#define NK	(sizeof(kinds) / sizeof(kinds[0]))

struct cell {
	double mbs, req_per_mb;
	unsigned long long reclaimed;
};

/* dax-mm: one mapping per open file (the workload is one thread). */
#define MM_FDS		64
static struct vqf_gcli_map *mm_map[MM_FDS];
static unsigned long long mm_len;	/* twice the file: room to grow */
static struct vqf_wl_fs mm_base;

static struct vqf_gcli *mm_cli(void *ctx)
{
	return vqf_sim_cli(ctx);
}

static int mm_open(void *ctx, const char *path, int flags, mode_t mode)
{
	int fd;

	/* a mapping needs read access (the client opens O_RDWR anyway) */
	if ((flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	fd = mm_base.open(ctx, path, flags, mode);
	if (fd >= 0 && fd < MM_FDS &&
	    vqf_gcli_mmap(mm_cli(ctx), fd, 0, mm_len, PROT_READ | PROT_WRITE,
			  &mm_map[fd]))
		mm_map[fd] = NULL;
	return fd;
}

static int mm_close(void *ctx, int fd)
{
	if (fd >= 0 && fd < MM_FDS && mm_map[fd]) {
		vqf_gcli_munmap(mm_cli(ctx), mm_map[fd]);
		mm_map[fd] = NULL;
	}
	return mm_base.close(ctx, fd);
}

/* A load or store through the mapping; -ENXIO (past EOF) falls back. */
static ssize_t mm_io(void *ctx, int fd, void *buf, size_t n, off_t off,
		     bool write)
{
	struct vqf_gcli_map *m = fd >= 0 && fd < MM_FDS ? mm_map[fd] : NULL;
	size_t done = 0;

	while (m && done < n) {
		struct vqf_gcli_mref r;
		size_t k;

		if (vqf_gcli_mmap_get(mm_cli(ctx), m, (size_t)off + done,
				      write, &r))
			break;
		k = n - done < r.len ? n - done : r.len;
		if (write)
			memcpy(r.addr, (char *)buf + done, k);
		else
			memcpy((char *)buf + done, r.addr, k);
		vqf_gcli_mmap_put(mm_cli(ctx), m, &r);
		done += k;
	}
	if (done == n)
		return (ssize_t)n;
	if (write) {
		ssize_t r = mm_base.pwrite(ctx, fd, (char *)buf + done,
					   n - done, off + (off_t)done);

		return r < 0 ? r : (ssize_t)done + r;
	}
	/* a short read at EOF */
	if (done)
		return (ssize_t)done;
	return mm_base.pread(ctx, fd, buf, n, off);
}

static ssize_t mm_pread(void *ctx, int fd, void *buf, size_t n, off_t off)
{
	return mm_io(ctx, fd, buf, n, off, false);
}

static ssize_t mm_pwrite(void *ctx, int fd, const void *buf, size_t n,
			 off_t off)
{
	return mm_io(ctx, fd, (void *)buf, n, off, true);
}

static unsigned long long pow2_at_least(unsigned long long v)
{
	unsigned long long p = 2ull << 20;

	while (p < v)
		p <<= 1;
	return p;
}

/* Stack @st over @dir for a file of @size bytes: *@s (NULL for native). */
static int stack_open(const char *dir, int st, u64 size, struct vqf_sim **s,
		      struct vqf_wl_fs *fs)
{
	struct vqf_sim_cfg sc = { 0 };
	int ret;

	*s = NULL;
	if (st == ST_NATIVE) {
		ret = vqf_wl_posix_open(dir, fs);
	} else {
		sc.shared = dir;
		sc.inline_kick = true;
		sc.ram = 256ull << 20;
		if (st != ST_FUSE) {
			sc.dax_guest = true;
			/* Twice the file: no reclaim (it starts below 20 %
			 * free); a quarter: reclaim all along.
			 */
			sc.dax_window = 2 * pow2_at_least(size);
			if (st == ST_DAXRC)
				sc.dax_window /= 8;
		}
		ret = vqf_sim_new(&sc, s);
		if (!ret)
			vqf_wl_sim_fs(*s, st_name[st], fs);
	}
	if (ret) {
		fprintf(stderr, "bench-dax: %s: %s\n", st_name[st],
			strerror(-ret));
		return ret;
	}
	if (st == ST_DAXMM) {
		mm_len = 2 * pow2_at_least(size);
		mm_base = *fs;
		fs->open = mm_open;
		fs->close = mm_close;
		fs->pread = mm_pread;
		fs->pwrite = mm_pwrite;
	}
	return 0;
}

static unsigned long long reclaimed(struct vqf_sim *s)
{
	struct vqf_dax_stats ds = { 0 };

	if (s)
		vqf_gcli_get_dax_stats(vqf_sim_cli(s), &ds);
	return ds.reclaimed_bg + ds.reclaimed_direct;
}

static void stack_close(struct vqf_sim *s, struct vqf_wl_fs *fs)
{
	if (s)
		vqf_sim_free(s);
	else
		vqf_wl_posix_close(fs);
}

static int run(const char *dir, int st, enum vqf_wl_kind kind, u64 size,
	       struct cell *c)
{
	struct vqf_wl_cfg wl = { .kind = kind, .size = size, .bs = 4096 };
	struct vqf_wl_result res;
	struct vqf_sim *s;
	struct vqf_wl_fs fs;
	int ret;

	ret = stack_open(dir, st, size, &s, &fs);
	if (ret)
		return ret;
	ret = vqf_wl_run(&fs, &wl, &res);
	if (!ret) {
		const struct vqf_wl_phase *p = &res.phase[res.nphases - 1];
		double mb = (double)p->bytes / 1e6;

		c->mbs = p->secs > 0 ? mb / p->secs : 0;
		c->req_per_mb = res.has_counters && mb > 0 ?
				(double)p->delta.requests / mb : 0;
	} else {
		fprintf(stderr, "bench-dax: %s: %s\n", st_name[st],
			res.errmsg);
	}
	c->reclaimed = reclaimed(s);
	stack_close(s, &fs);
	return ret;
}

static double now_s(void);

/* ---- dax=auto beside dax=always and no DAX ---- */

enum { PM_FUSE, PM_ALWAYS, PM_AUTO, PM_NR };
static const char *const pm_name[PM_NR] = { "no-dax", "always", "auto" };
static struct vqf_dax_policy pm_pol;
static bool pm_pol_set;
/* -o as given: -R applies them over each range size's own defaults. */
#define PM_OPT_MAX	8
static const char *pm_opt[PM_OPT_MAX];
static unsigned int pm_nopt;
static int pm_parse_into(const char *arg, struct vqf_dax_policy *p);

struct pcell {
	double rate;		/* MB/s or ops/s */
	double reads, setups;	/* READ, SETUPMAPPING per operation */
};

static int pm_open(const char *dir, int mode, u64 window, struct vqf_sim **s)
{
	struct vqf_sim_cfg sc = { 0 };

	sc.shared = dir;
	sc.inline_kick = true;
	sc.ram = 256ull << 20;
	if (mode != PM_FUSE) {
		sc.dax_guest = true;
		sc.dax_window = window;
		sc.cli.dax_auto = mode == PM_AUTO;
		sc.cli.dax_policy = pm_pol_set ? &pm_pol : NULL;
	}
	return vqf_sim_new(&sc, s);
}

static void pm_count(struct vqf_sim *s, u64 *reads, u64 *setups)
{
	struct vqf_sim_stats st;

	vqf_sim_get_stats(s, &st);
	*reads = st.drv.by_opcode[FUSE_READ];
	*setups = st.drv.by_opcode[FUSE_SETUPMAPPING];
}

static int pm_host_file(const char *dir, const char *name, u64 size)
{
	char path[256], *blk = malloc(1 << 20);
	int fd, ret = 0;
	u64 off;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (!blk || fd < 0) {
		free(blk);
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	memset(blk, 'p', 1 << 20);
	for (off = 0; off < size && !ret; off += 1 << 20) {
		size_t n = size - off < (1 << 20) ? size - off : 1 << 20;

		if (pwrite(fd, blk, n, (off_t)off) != (ssize_t)n)
			ret = -EIO;
	}
	close(fd);
	/*
	 * Read it once on the host: the first read after a write updates
	 * atime (relatime), which would land on whichever stack reads first.
	 */
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		for (off = 0; off < size; off += 1 << 20)
			if (pread(fd, blk, 1 << 20, (off_t)off) <= 0)
				break;
		close(fd);
	}
	free(blk);
	return ret;
}

/* A Fisher-Yates shuffle of @o (@n entries) by xorshift64 from @seed. */
static void shuffle(u32 *o, u64 n, u64 seed)
{
	u64 i, k;
	u32 t;

	for (i = n - 1; n && i > 0; i--) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		k = seed % (i + 1);
		t = o[i];
		o[i] = o[k];
		o[k] = t;
	}
}

/*
 * The order of @nb blocks a pass reads them in: 0..nb-1, or with @rnd a
 * fixed-seed shuffle of it (the same in every run and column).  NULL
 * without memory; free() it.
 */
static u32 *block_order(u64 nb, bool rnd)
{
	u32 *perm = malloc(nb * sizeof(*perm));
	u64 b;

	if (!perm)
		return NULL;
	for (b = 0; b < nb; b++)
		perm[b] = (u32)b;
	if (rnd)
		shuffle(perm, nb, 0x9e3779b97f4a7c15ull);
	return perm;
}

/*
 * One timed pass of 4 KiB reads of "pol.dat" on @s in the order @o (@nb
 * blocks): MB/s, READ and SETUPMAPPING per read into @c.
 */
static int timed_reads(struct vqf_sim *s, const u32 *o, u64 nb,
		       struct pcell *c)
{
	struct vqf_gcli *cl = vqf_sim_cli(s);
	u64 b, r0, s0, r1, s1;
	char buf[4096];
	double t0;
	int fd, ret = 0;

	fd = vqf_gcli_open(cl, "pol.dat", O_RDONLY, 0);
	if (fd < 0)
		return fd;
	pm_count(s, &r0, &s0);
	t0 = now_s();
	for (b = 0; b < nb && !ret; b++)
		if (vqf_gcli_pread(cl, fd, buf, sizeof(buf),
				   (off_t)o[b] * 4096) != sizeof(buf))
			ret = -EIO;
	c->rate = (double)nb * 4096 / 1e6 / (now_s() - t0);
	pm_count(s, &r1, &s1);
	c->reads = (double)(r1 - r0) / (double)nb;
	c->setups = (double)(s1 - s0) / (double)nb;
	vqf_gcli_close(cl, fd);
	return ret;
}

/*
 * One pass of 4 KiB reads over @size bytes of "pol.dat", in order or in
 * a seeded random order, on a fresh machine in @mode: MB/s.
 */
static int pm_reads(const char *dir, int mode, u64 window, u64 size,
		    bool rnd, struct pcell *c)
{
	u32 *perm = block_order(size / 4096, rnd);
	struct vqf_sim *s = NULL;
	int ret;

	if (!perm)
		return -ENOMEM;
	ret = pm_open(dir, mode, window, &s);
	if (!ret)
		ret = timed_reads(s, perm, size / 4096, c);
	if (s)
		vqf_sim_free(s);
	free(perm);
	return ret;
}

/*
 * @nf files of 4 KiB written on the host, then @passes passes of open,
 * read 4 KiB, close over all of them: ops/s (one op = one file once).
 */
static int pm_small(const char *dir, int mode, u64 window, unsigned int nf,
		    unsigned int passes, struct pcell *c)
{
	struct vqf_sim *s = NULL;
	u64 r0, s0, r1, s1;
	unsigned int i, p;
	struct vqf_gcli *cl;
	char name[64], buf[4096];
	double t0;
	int ret;

	ret = pm_open(dir, mode, window, &s);
	if (ret)
		return ret;
	cl = vqf_sim_cli(s);
	pm_count(s, &r0, &s0);
	t0 = now_s();
	for (p = 0; p < passes && !ret; p++) {
		for (i = 0; i < nf && !ret; i++) {
			int fd;

			snprintf(name, sizeof(name), "pol-small/%u", i);
			fd = vqf_gcli_open(cl, name, O_RDONLY, 0);
			if (fd < 0) {
				ret = fd;
				break;
			}
			if (vqf_gcli_pread(cl, fd, buf, sizeof(buf), 0) !=
			    sizeof(buf))
				ret = -EIO;
			vqf_gcli_close(cl, fd);
		}
	}
	c->rate = (double)nf * passes / (now_s() - t0);
	pm_count(s, &r1, &s1);
	c->reads = (double)(r1 - r0) / ((double)nf * passes);
	c->setups = (double)(s1 - s0) / ((double)nf * passes);
	vqf_sim_free(s);
	return ret;
}

static void pm_print(const char *name, const char *unit, struct pcell *row)
{
	int m;

	printf("%-16s %-5s", name, unit);
	for (m = 0; m < PM_NR; m++) {
		char cell[64];

		snprintf(cell, sizeof(cell), "%.0f (%.2f, %.3f)", row[m].rate,
			 row[m].reads, row[m].setups);
		printf(" %24s", cell);
	}
	printf(" %11.2f %11.2f\n",
	       row[PM_FUSE].rate ? row[PM_AUTO].rate / row[PM_FUSE].rate : 0,
	       row[PM_ALWAYS].rate ? row[PM_AUTO].rate / row[PM_ALWAYS].rate :
	       0);
}

/* The policy rows; @size is the big file (the window is a quarter). */
static int policy_rows(const char *dir, u64 size)
{
	u64 window = pow2_at_least(size) / 4;
	unsigned int nf = 2000, i;
	struct pcell row[PM_NR];
	char path[256];
	int m, r, ret;

	printf("\ndax=auto beside dax=always and no DAX: %llu MiB file, %llu MiB "
	       "window (2 MiB ranges); small files: %u x 4 KiB\n",
	       (unsigned long long)size >> 20,
	       (unsigned long long)window >> 20, nf);
	if (pm_pol_set)
		printf("policy: small %llu uses %u used %llu pay %u min %u "
		       "pct %u sample %u backoff %llu shift %u\n",
		       (unsigned long long)pm_pol.small_size,
		       pm_pol.small_uses,
		       (unsigned long long)pm_pol.used_bytes,
		       pm_pol.pay_uses,
		       pm_pol.thrash_min, pm_pol.thrash_pct, pm_pol.sample,
		       (unsigned long long)pm_pol.backoff,
		       pm_pol.backoff_shift_max);
	printf("cells: rate (READ per op, SETUPMAPPING per op)\n");
	printf("%-16s %-5s", "row", "unit");
	for (m = 0; m < PM_NR; m++)
		printf(" %24s", pm_name[m]);
	printf(" %11s %11s\n", "auto/no-dax", "auto/always");
	ret = pm_host_file(dir, "pol.dat", size);
	for (r = 0; r < 3 && !ret; r++) {
		static const char *const nm[3] = {
			"seqread", "randread-thrash", "randread-fits"
		};
		u64 sz = r == 2 ? window / 2 : size;

		for (m = 0; m < PM_NR && !ret; m++)
			ret = pm_reads(dir, m, window, sz, r >= 1, &row[m]);
		if (!ret)
			pm_print(nm[r], "MB/s", row);
	}
	snprintf(path, sizeof(path), "%s/pol.dat", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/pol-small", dir);
	if (!ret && mkdir(path, 0755))
		ret = -errno;
	for (i = 0; i < nf && !ret; i++) {
		char name[64];

		snprintf(name, sizeof(name), "pol-small/%u", i);
		ret = pm_host_file(dir, name, 4096);
	}
	/*
	 * Discarded: the first machine to open this many files grows the
	 * heap (page faults) that the later ones reuse; measured, it made
	 * whichever column ran first half as fast.
	 */
	if (!ret)
		ret = pm_small(dir, PM_FUSE, window, nf, 1, &row[0]);
	for (r = 0; r < 2 && !ret; r++) {
		for (m = 0; m < PM_NR && !ret; m++)
			ret = pm_small(dir, m, window, nf, r ? 3 : 1, &row[m]);
		if (!ret)
			pm_print(r ? "smallfile-3x" : "smallfile-once", "ops/s",
				 row);
	}
	for (i = 0; i < nf; i++) {
		snprintf(path, sizeof(path), "%s/pol-small/%u", dir, i);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/pol-small", dir);
	rmdir(path);
	if (ret)
		fprintf(stderr, "bench-dax: policy rows: %s\n",
			strerror(-ret));
	return ret;
}

/* ---- deferred teardown at evict: on and off (-D) ---- */

enum { TD_ALWAYS_OFF, TD_ALWAYS_ON, TD_AUTO_OFF, TD_AUTO_ON, TD_NR };
static const char *const td_name[TD_NR] = {
	"always", "always+defer", "auto", "auto+defer"
};
#define TD_WINDOW	(64ull << 20)	/* vqfuse-sim's default */
#define TD_ROUNDS	3
#define TD_PHASES	6

struct tcell {
	double rate[TD_ROUNDS];	/* ops/s per round */
	double us[3][TD_ROUNDS];	/* create, read, delete: us per op */
	double setups, removes, reqs;	/* per op (the same every round) */
};

static int td_open(const char *dir, int col, struct vqf_sim **s)
{
	struct vqf_sim_cfg sc = { 0 };

	sc.shared = dir;
	sc.inline_kick = true;
	sc.ram = 256ull << 20;
	sc.dax_guest = true;
	sc.dax_window = TD_WINDOW;
	sc.cli.dax_auto = col == TD_AUTO_OFF || col == TD_AUTO_ON;
	/* 0: gdax's default bound; -1: a REMOVEMAPPING per evicted file */
	sc.cli.dax_stale = col == TD_ALWAYS_ON || col == TD_AUTO_ON ? 0 : -1;
	return vqf_sim_new(&sc, s);
}

/* SETUPMAPPING, REMOVEMAPPING and every request so far. */
static void td_count(struct vqf_sim *s, u64 *c)
{
	struct vqf_sim_stats st;

	vqf_sim_get_stats(s, &st);
	c[0] = st.drv.by_opcode[FUSE_SETUPMAPPING];
	c[1] = st.drv.by_opcode[FUSE_REMOVEMAPPING];
	c[2] = st.drv.submitted;
}

static int td_create(struct vqf_gcli *cl, unsigned int i, const char *buf)
{
	char name[64];
	int fd, ret = 0;

	snprintf(name, sizeof(name), "td/%u", i);
	fd = vqf_gcli_open(cl, name, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0)
		return fd;
	if (vqf_gcli_pwrite(cl, fd, buf, 4096, 0) != 4096)
		ret = -EIO;
	vqf_gcli_close(cl, fd);
	return ret;
}

/* Two reads of the file in one open: auto maps a small file's second. */
static int td_read(struct vqf_gcli *cl, unsigned int i, char *buf)
{
	char name[64];
	int fd, ret = 0, k;

	snprintf(name, sizeof(name), "td/%u", i);
	fd = vqf_gcli_open(cl, name, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	for (k = 0; k < 2 && !ret; k++)
		if (vqf_gcli_pread(cl, fd, buf, 4096, 0) != 4096)
			ret = -EIO;
	vqf_gcli_close(cl, fd);
	return ret;
}

static int td_delete(struct vqf_gcli *cl, unsigned int i)
{
	char name[64];

	snprintf(name, sizeof(name), "td/%u", i);
	return vqf_gcli_unlink(cl, name);
}

/*
 * One column, one round: @nf files on a fresh machine.  Phase 0 is the
 * cycle (create, read, delete each file in turn); phases 1-3 create,
 * read and delete all of them; phase 4 creates them again and phase 5
 * reads and deletes each in turn (the cycle without the create, whose
 * host-side cost hides the rest).  Counts and rates into @c[phase].
 */
static int td_round(const char *dir, int col, unsigned int nf,
		    unsigned int round, struct tcell *c)
{
	struct vqf_sim *s = NULL;
	struct vqf_gcli *cl;
	char buf[4096], rb[4096];
	double t0, t1, t2, t3, step[3];
	u64 c0[3], c1[3];
	unsigned int i, ph;
	int ret;

	memset(buf, 'd', sizeof(buf));
	ret = td_open(dir, col, &s);
	if (ret)
		return ret;
	cl = vqf_sim_cli(s);
	ret = vqf_gcli_mkdir(cl, "td", 0755);
	for (ph = 0; ph < TD_PHASES && !ret; ph++) {
		td_count(s, c0);
		t0 = now_s();
		memset(step, 0, sizeof(step));
		for (i = 0; i < nf && !ret; i++) {
			/* each step timed: the steps of a cycle differ */
			t1 = now_s();
			if (ph == 0 || ph == 1 || ph == 4)
				ret = td_create(cl, i, buf);
			t2 = now_s();
			if (!ret && (ph == 0 || ph == 2 || ph == 5))
				ret = td_read(cl, i, rb);
			t3 = now_s();
			if (!ret && (ph == 0 || ph == 3 || ph == 5))
				ret = td_delete(cl, i);
			step[0] += t2 - t1;
			step[1] += t3 - t2;
			step[2] += now_s() - t3;
		}
		c[ph].rate[round] = (double)nf / (now_s() - t0);
		for (i = 0; i < 3; i++)
			c[ph].us[i][round] = step[i] * 1e6 / nf;
		td_count(s, c1);
		c[ph].setups = (double)(c1[0] - c0[0]) / nf;
		c[ph].removes = (double)(c1[1] - c0[1]) / nf;
		c[ph].reqs = (double)(c1[2] - c0[2]) / nf;
	}
	if (!ret)
		ret = vqf_gcli_rmdir(cl, "td");
	vqf_sim_free(s);
	return ret;
}

static double td_median(const double *v)
{
	double a = v[0], b = v[1], c = v[2];

	if ((a <= b && b <= c) || (c <= b && b <= a))
		return b;
	if ((b <= a && a <= c) || (c <= a && a <= b))
		return a;
	return c;
}

static int teardown_rows(const char *dir, unsigned int nf)
{
	static const char *const ph_name[TD_PHASES] = {
		"cycle", "create", "read-2x", "delete", "create", "rd-cycle"
	};
	static struct tcell t[TD_NR][TD_PHASES];
	unsigned int r, ph;
	int col, ret = 0;

	/* columns alternate within each round: peers see the same load */
	for (r = 0; r < TD_ROUNDS && !ret; r++)
		for (col = 0; col < TD_NR && !ret; col++)
			ret = td_round(dir, col, nf, r, t[col]);
	if (ret) {
		fprintf(stderr, "bench-dax: teardown rows: %s\n",
			strerror(-ret));
		return ret;
	}
	printf("deferred teardown at evict: %u files of 4 KiB, %llu MiB "
	       "window (2 MiB ranges), median of %u rounds\n", nf,
	       TD_WINDOW >> 20, TD_ROUNDS);
	printf("cells: ops/s (SETUPMAPPING, REMOVEMAPPING, requests per "
	       "op)\n");
	printf("%-8s", "phase");
	for (col = 0; col < TD_NR; col++)
		printf(" %30s", td_name[col]);
	printf("\n");
	for (ph = 0; ph < TD_PHASES; ph++) {
		if (ph == 4)
			continue;	/* the same as phase 1 */
		printf("%-8s", ph_name[ph]);
		for (col = 0; col < TD_NR; col++) {
			char cell[64];

			snprintf(cell, sizeof(cell), "%.0f (%.3f, %.3f, %.2f)",
				 td_median(t[col][ph].rate),
				 t[col][ph].setups, t[col][ph].removes,
				 t[col][ph].reqs);
			printf(" %30s", cell);
		}
		printf("\n");
	}
	/*
	 * The cycles' steps apart: a host create now and then waits for
	 * the file system's journal (~1 ms), which swamps the rest of a
	 * cycle's time; the medians of the steps show where the
	 * teardown's cost goes.
	 */
	printf("cycle steps, us per op (create / read-2x / delete), median "
	       "of %u rounds\n", TD_ROUNDS);
	for (ph = 0; ph < TD_PHASES; ph += 5) {
		printf("%-8s", ph_name[ph]);
		for (col = 0; col < TD_NR; col++) {
			char cell[64];

			snprintf(cell, sizeof(cell), "%.0f / %.0f / %.0f",
				 td_median(t[col][ph].us[0]),
				 td_median(t[col][ph].us[1]),
				 td_median(t[col][ph].us[2]));
			printf(" %30s", cell);
		}
		printf("\n");
	}
	return 0;
}

/* ---- range size (-R): 2 MiB against smaller ranges ---- */

#define RS_MAX		8
static u64 rs_cluster = 64ull << 10;	/* randread-hot's cluster (-C) */

/* -R SIZE,...: range sizes (K and M suffixes), powers of two >= 4 KiB. */
static int rs_parse(const char *arg, u64 *sizes, unsigned int *n)
{
	unsigned int k = 0;
	char *end;

	while (*arg) {
		u64 v = strtoull(arg, &end, 0);

		if (*end == 'K' || *end == 'k') {
			v <<= 10;
			end++;
		} else if (*end == 'M' || *end == 'm') {
			v <<= 20;
			end++;
		}
		if (k == RS_MAX || v < 4096 || (v & (v - 1)) ||
		    (*end && *end != ','))
			return -1;
		sizes[k++] = v;
		arg = *end ? end + 1 : end;
	}
	*n = k;
	return k ? 0 : -1;
}

/*
 * The block order of randread-hot: 4 KiB reads drawn, in a seeded
 * random order, from @nc clusters of rs_cluster bytes spread evenly
 * over @size bytes (a stride of size / nc), each block of each cluster
 * read @rep times.  The hot set is @nc * 64 KiB; what a window must hold
 * to keep it is one range per cluster.  NULL without memory.
 */
static u32 *rs_hot_order(u64 size, u64 nc, unsigned int rep, u64 *nb)
{
	u64 per = rs_cluster / 4096, stride = size / nc / 4096, i, n;
	u32 *o;

	n = nc * per * rep;
	o = malloc(n * sizeof(*o));
	if (!o)
		return NULL;
	for (i = 0; i < n; i++) {
		u64 b = i % (nc * per);

		o[i] = (u32)(b / per * stride + b % per);
	}
	shuffle(o, n, 0x2545f4914f6cdd1dull);
	*nb = n;
	return o;
}

/*
 * timed_reads() on a fresh machine: ranges of @range bytes (0: no
 * DAX), dax=auto with @autom.
 */
static int rs_pass(const char *dir, u64 window, u64 range, bool autom,
		   const u32 *o, u64 nb, struct pcell *c)
{
	struct vqf_sim_cfg sc = { 0 };
	struct vqf_dax_policy p;
	struct vqf_sim *s = NULL;
	int ret;

	sc.shared = dir;
	sc.inline_kick = true;
	sc.ram = 256ull << 20;
	if (range) {
		sc.dax_guest = true;
		sc.dax_window = window;
		sc.dax_range = range;
		sc.cli.dax_auto = autom;
		if (pm_nopt) {
			unsigned int i;

			vqf_dax_policy_default(&p, range);
			for (i = 0; i < pm_nopt; i++)
				if (pm_parse_into(pm_opt[i], &p))
					return -EINVAL;
			sc.cli.dax_policy = &p;
		}
	}
	ret = vqf_sim_new(&sc, &s);
	if (ret)
		return ret;
	ret = timed_reads(s, o, nb, c);
	vqf_sim_free(s);
	return ret;
}

/*
 * Issue 30's item 3: the same reads through ranges of each size in
 * @sizes (with no DAX as the reference), under dax=always and dax=auto.
 * Rows: sequential and uniform random reads of a file 4x the window
 * (the hit rate is window/file whatever the range size), random reads
 * of a file half the window, and randread-hot: clusters of 64 KiB
 * (a hot set of half the window) spread over the big file, which 2 MiB
 * ranges cannot hold and 64 KiB ones can.  Medians of 3 rounds; the
 * columns alternate within a round.
 */
static int range_rows(const char *dir, u64 size, const u64 *sizes,
		      unsigned int ns)
{
	static const char *const nm[4] = {
		"seqread", "randread-thrash", "randread-fits", "randread-hot"
	};
	u64 window = pow2_at_least(size) / 4, nb[4], rsz;
	u32 *ord[4] = { NULL };
	double rate[RS_MAX + 1][2][3];
	struct pcell c[RS_MAX + 1][2];
	unsigned int r, i, a, round;
	int ret;

	ret = pm_host_file(dir, "pol.dat", size);
	nb[0] = nb[1] = size / 4096;
	nb[2] = window / 2 / 4096;
	ord[0] = block_order(nb[0], false);
	ord[1] = block_order(nb[1], true);
	ord[2] = block_order(nb[2], true);
	ord[3] = rs_hot_order(size, window / 2 / rs_cluster, 4, &nb[3]);
	for (r = 0; r < 4; r++)
		if (!ord[r])
			ret = -ENOMEM;
	printf("\nrange size: %llu MiB file, %llu MiB window; randread-hot: "
	       "%llu clusters of %llu KiB over the file, each block read 4 "
	       "times\n", (unsigned long long)size >> 20,
	       (unsigned long long)window >> 20,
	       (unsigned long long)(window / 2 / rs_cluster),
	       (unsigned long long)rs_cluster >> 10);
	for (r = 0; r < pm_nopt; r++)
		printf("auto's policy: each size's defaults, then -o %s\n",
		       pm_opt[r]);
	printf("cells: MB/s (SETUPMAPPING, READ per 4 KiB read, last "
	       "round), median of 3 rounds; always / auto\n");
	for (r = 0; r < 4 && !ret; r++) {
		for (round = 0; round < 3 && !ret; round++)
			for (i = 0; i <= ns && !ret; i++)
				for (a = 0; a < 2 && !ret; a++) {
					/* no DAX once: auto means nothing */
					if (!i && a)
						continue;
					rsz = i ? sizes[i - 1] : 0;
					ret = rs_pass(dir, window, rsz, a,
						      ord[r], nb[r], &c[i][a]);
					rate[i][a][round] = c[i][a].rate;
				}
		if (ret)
			break;
		printf("%-16s no-dax %.0f\n", nm[r], td_median(rate[0][0]));
		for (i = 1; i <= ns; i++) {
			printf("%-16s %5llu KiB", "",
			       (unsigned long long)sizes[i - 1] >> 10);
			for (a = 0; a < 2; a++)
				printf("  %s %6.0f (%.4f, %.3f) %5.2fx",
				       a ? "auto" : "always",
				       td_median(rate[i][a]), c[i][a].setups,
				       c[i][a].reads, td_median(rate[i][a]) /
				       td_median(rate[0][0]));
			printf("\n");
		}
	}
	for (r = 0; r < 4; r++)
		free(ord[r]);
	{
		char path[256];

		snprintf(path, sizeof(path), "%s/pol.dat", dir);
		unlink(path);
	}
	if (ret)
		fprintf(stderr, "bench-dax: range rows: %s\n", strerror(-ret));
	return ret;
}

/* -o key=value,...: the policy's thresholds over what @p holds. */
static int pm_parse_into(const char *arg, struct vqf_dax_policy *p)
{
	static const char *const key[] = { "small", "uses", "used", "min",
					   "pct", "sample", "backoff",
					   "shift", "pay" };
	char *copy = strdup(arg), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		unsigned long long v;
		unsigned int k;

		if (!eq) {
			ret = -1;
			break;
		}
		*eq = 0;
		v = strtoull(eq + 1, NULL, 0);
		for (k = 0; k < sizeof(key) / sizeof(key[0]); k++)
			if (!strcmp(tok, key[k]))
				break;
		switch (k) {
		case 0:
			p->small_size = v;
			break;
		case 1:
			p->small_uses = (u32)v;
			break;
		case 2:
			p->used_bytes = v;
			break;
		case 3:
			p->thrash_min = (u32)v;
			break;
		case 4:
			p->thrash_pct = (u32)v;
			break;
		case 5:
			p->sample = (u32)v;
			break;
		case 6:
			p->backoff = v;
			break;
		case 7:
			p->backoff_shift_max = (u32)v;
			break;
		case 8:
			p->pay_uses = (u32)v;
			break;
		default:
			ret = -1;
			break;
		}
	}
	free(copy);
	return ret;
}

static int pm_parse(const char *arg)
{
	if (!pm_pol_set)
		vqf_dax_policy_default(&pm_pol, 2ull << 20);
	pm_pol_set = true;
	if (pm_nopt == PM_OPT_MAX)
		return -1;
	pm_opt[pm_nopt++] = arg;
	return pm_parse_into(arg, &pm_pol);
}

/*
 * Reads of mapped data, the goal: the file (written on the host)
 * is read once in 4 KiB blocks, sequentially or in a random order, to map
 * it (DAX), fill the page cache (native, FUSE) or fault the window in;
 * the second pass is measured.
 */
static int warm(const char *dir, int st, bool rnd, u64 size, struct cell *c)
{
	u64 nb = size / 4096, b;
	struct vqf_wl_counters c0 = { 0 }, c1 = { 0 };
	unsigned long long r0;
	u32 *perm = block_order(nb, rnd);
	char buf[4096];
	struct vqf_sim *s;
	struct vqf_wl_fs fs;
	double t0 = 0, mb;
	int fd, pass, ret;

	if (!perm)
		return -ENOMEM;
	ret = stack_open(dir, st, size, &s, &fs);
	if (ret) {
		free(perm);
		return ret;
	}
	fd = fs.open(fs.ctx, "warm.dat", O_RDWR, 0);
	ret = fd < 0 ? fd : 0;
	for (pass = 0; pass < 2 && !ret; pass++) {
		if (pass) {
			r0 = reclaimed(s);
			if (fs.counters)
				fs.counters(fs.ctx, &c0);
			t0 = now_s();
		}
		for (b = 0; b < nb && !ret; b++)
			if (fs.pread(fs.ctx, fd, buf, sizeof(buf),
				     (off_t)perm[b] * 4096) != sizeof(buf))
				ret = -EIO;
	}
	if (!ret) {
		mb = (double)nb * 4096 / 1e6;
		c->mbs = mb / (now_s() - t0);
		if (fs.counters)
			fs.counters(fs.ctx, &c1);
		c->req_per_mb = (double)(c1.requests - c0.requests) / mb;
		c->reclaimed = reclaimed(s) - r0;
	}
	if (fd >= 0)
		fs.close(fs.ctx, fd);
	stack_close(s, &fs);
	free(perm);
	if (ret)
		fprintf(stderr, "bench-dax: %s: warm read: %s\n",
			st_name[st], strerror(-ret));
	return ret;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The per-read cost without memory bandwidth or first-touch faults: 4 KiB
 * reads cycling over a 64 KiB file that is cached (host page cache) and
 * mapped (DAX window); ns per read.  Returns 0 or -errno.
 */
#define HOT_FILE	(64 * 1024)
static int hot(const char *dir, int st, double *ns)
{
	unsigned int i, n = st == ST_FUSE ? 20000 : 400000;
	struct vqf_sim_cfg sc = { 0 };
	struct vqf_gcli_map *m = NULL;
	struct vqf_sim *s = NULL;
	struct vqf_gcli *c = NULL;
	char path[128], buf[4096];
	double t0 = 0;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/hot", dir);
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	memset(buf, 'h', sizeof(buf));
	for (i = 0; i < HOT_FILE / sizeof(buf); i++)
		if (pwrite(fd, buf, sizeof(buf), i * sizeof(buf)) < 0)
			ret = -errno;
	if (st != ST_NATIVE) {
		close(fd);
		sc.shared = dir;
		sc.inline_kick = true;
		sc.ram = 64ull << 20;
		if (st != ST_FUSE) {
			sc.dax_guest = true;
			sc.dax_window = 4ull << 20;
		}
		ret = vqf_sim_new(&sc, &s);
		if (ret)
			goto out;
		c = vqf_sim_cli(s);
		fd = vqf_gcli_open(c, "hot", O_RDWR, 0);
		if (fd < 0) {
			ret = fd;
			goto out;
		}
		if (st == ST_DAXMM)
			ret = vqf_gcli_mmap(c, fd, 0, HOT_FILE, PROT_READ, &m);
	}
	for (i = 0; i < 2 * n && !ret; i++) {
		off_t off = (off_t)(i % (HOT_FILE / sizeof(buf))) * 4096;
		ssize_t r;

		if (i == n)	/* the first half warms up */
			t0 = now_s();
		if (st == ST_NATIVE) {
			r = pread(fd, buf, sizeof(buf), off);
		} else if (st == ST_DAXMM) {
			struct vqf_gcli_mref ref;

			r = vqf_gcli_mmap_get(c, m, (size_t)off, false, &ref);
			if (!r) {
				memcpy(buf, ref.addr, sizeof(buf));
				vqf_gcli_mmap_put(c, m, &ref);
				r = sizeof(buf);
			}
		} else {
			r = vqf_gcli_pread(c, fd, buf, sizeof(buf), off);
		}
		if (r != (ssize_t)sizeof(buf))
			ret = r < 0 ? (int)r : -EIO;
	}
	*ns = ret ? 0 : (now_s() - t0) * 1e9 / n;
out:
	if (m)
		vqf_gcli_munmap(c, m);
	if (s) {
		if (fd >= 0)
			vqf_gcli_close(c, fd);
		vqf_sim_free(s);
	} else if (fd >= 0) {
		close(fd);
	}
	unlink(path);
	return ret;
}

static void print_row(const char *name, struct cell *row, const bool *want)
{
	int st;

	printf("%-10s", name);
	for (st = 0; st < ST_NR; st++) {
		char cell[64];

		if (want[st])
			snprintf(cell, sizeof(cell), "%.0f (%.1f, %llu)",
				 row[st].mbs, row[st].req_per_mb,
				 row[st].reclaimed);
		else
			snprintf(cell, sizeof(cell), "-");
		printf(" %24s", cell);
	}
	printf(" %9.2f %10.2f %13.2f\n",
	       row[ST_FUSE].mbs ? row[ST_DAX].mbs / row[ST_FUSE].mbs : 0,
	       row[ST_DAX].mbs ? row[ST_NATIVE].mbs / row[ST_DAX].mbs : 0,
	       row[ST_DAXMM].mbs ? row[ST_NATIVE].mbs / row[ST_DAXMM].mbs :
	       0);
}

/* The second pass of reads over a file written on the host. */
static int warm_rows(const char *dir, u64 size, const bool *want)
{
	static const char *const name[2] = { "seqread2", "randread2" };
	struct cell row[ST_NR];
	char path[128];
	int st, r, ret = 0;
	char *blk;

	snprintf(path, sizeof(path), "%s/warm.dat", dir);
	blk = malloc(1 << 20);
	r = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (!blk || r < 0) {
		free(blk);
		return -ENOMEM;
	}
	memset(blk, 'w', 1 << 20);
	for (u64 off = 0; off < size && !ret; off += 1 << 20)
		if (pwrite(r, blk, 1 << 20, (off_t)off) != 1 << 20)
			ret = -EIO;
	close(r);
	free(blk);
	printf("second pass over a file written on the host (mapped data):"
	       "\n");
	for (r = 0; r < 2 && !ret; r++) {
		memset(row, 0, sizeof(row));
		for (st = 0; st < ST_NR && !ret; st++)
			if (want[st])
				ret = warm(dir, st, r, size, &row[st]);
		if (!ret)
			print_row(name[r], row, want);
	}
	unlink(path);
	return ret;
}

/* Whether @name is in the comma list @list (NULL: everything is). */
static bool listed(const char *list, const char *name)
{
	size_t l = strlen(name);

	if (!list)
		return true;
	while (list) {
		if (!strncmp(list, name, l) && (list[l] == ',' || !list[l]))
			return true;
		list = strchr(list, ',');
		if (list)
			list++;
	}
	return false;
}

int main(int argc, char **argv)
{
	unsigned long long size = 256ull << 20;
	struct cell t[NK][ST_NR];
	char dir[] = "/tmp/vqf-bench-dax-XXXXXX";
	unsigned int k;
	bool want[ST_NR], kwant[NK];
	const char *only = NULL, *konly = NULL;
	bool policy_only = false, teardown_only = false, range_only = false;
	u64 rs_sizes[RS_MAX] = { 2ull << 20, 1ull << 20, 512ull << 10,
				 256ull << 10, 128ull << 10, 64ull << 10 };
	unsigned int td_files = 2000, rs_n = 6, rs_one;
	int st, opt;

	while ((opt = getopt(argc, argv, "s:t:k:o:PD::R::C:h")) != -1) {
		if (opt == 's' && strtoull(optarg, NULL, 0) >= (1u << 20)) {
			size = strtoull(optarg, NULL, 0);
		} else if (opt == 'P') {
			policy_only = true;
		} else if (opt == 'D') {
			teardown_only = true;
			if (optarg && strtoul(optarg, NULL, 0))
				td_files = (unsigned int)strtoul(optarg, NULL,
								 0);
		} else if (opt == 'R' &&
			   (!optarg || !rs_parse(optarg, rs_sizes, &rs_n))) {
			range_only = true;
		} else if (opt == 'C' &&
			   rs_parse(optarg, &rs_cluster, &rs_one) == 0 &&
			   rs_one == 1) {
			continue;
		} else if (opt == 'o' && !pm_parse(optarg)) {
			continue;
		} else if (opt == 't') {
			only = optarg;
		} else if (opt == 'k') {
			konly = optarg;
		} else {
			fprintf(stderr, "usage: bench-dax [-s FILE_BYTES] "
				"[-t STACK,...] [-k WORKLOAD,...] [-P] [-o "
				"KEY=N,...] [-D[FILES]] [-R[SIZE,...] [-C SIZE]] "
				"(default 256 MiB, at least 1 MiB; "
				"stacks native,fuse,dax,dax-mm,dax-rc; "
				"workloads seqread,randread,seqwrite,randwrite;"
				" -P: only dax=auto beside always and no DAX, "
				"-o its thresholds (-R too): small, uses, used,"
				" min, pct, sample, backoff, shift, pay; "
				"-D: only deferred "
				"teardown at evict, on and off, 2000 files; "
				"-R: only range sizes, default 2M,1M,512K,256K,"
				"128K,64K, powers of two from 4K, at most 8; "
				"-C: randread-hot's cluster, 64K)\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	for (st = 0; st < ST_NR; st++)
		want[st] = listed(only, st_name[st]);
	for (k = 0; k < NK; k++)
		kwant[k] = listed(konly, vqf_wl_kind_name(kinds[k]));
	if (!mkdtemp(dir)) {
		perror("bench-dax: mkdtemp");
		return 1;
	}
	if (pm_pol_set && vqf_dax_policy_check(&pm_pol)) {
		fprintf(stderr, "bench-dax: -o: pct <= 100, min and sample "
			">= 1, shift <= 32\n");
		rmdir(dir);
		return 2;
	}
	if (policy_only) {
		policy_rows(dir, size);
		goto out;
	}
	if (teardown_only) {
		teardown_rows(dir, td_files);
		goto out;
	}
	if (range_only) {
		range_rows(dir, size, rs_sizes, rs_n);
		goto out;
	}
	memset(t, 0, sizeof(t));
	for (k = 0; k < NK; k++)
		for (st = 0; st < ST_NR; st++)
			if (want[st] && kwant[k] && run(dir, st, kinds[k], size,
					    &t[k][st]))
				goto out;
	printf("4 KiB I/O on a %llu MiB file; MB/s (FUSE requests per MB, "
	       "ranges reclaimed); DAX window %llu MiB, dax-rc %llu MiB "
	       "(2 MiB ranges)\n", size >> 20,
	       2 * pow2_at_least(size) >> 20,
	       2 * pow2_at_least(size) / 8 >> 20);
	printf("%-10s", "workload");
	for (st = 0; st < ST_NR; st++)
		printf(" %24s", st_name[st]);
	printf(" %9s %10s %13s\n", "dax/fuse", "native/dax",
	       "native/dax-mm");
	for (k = 0; k < NK; k++)
		if (kwant[k])
			print_row(vqf_wl_kind_name(kinds[k]), t[k], want);
	if (warm_rows(dir, size, want))
		goto out;
	printf("\nhot 4 KiB reads (64 KiB file, cached and mapped), "
	       "ns per read:");
	for (st = 0; st < ST_NR; st++) {
		double ns = 0;

		if (st == ST_DAXRC || !want[st])
			continue;
		if (hot(dir, st, &ns))
			fprintf(stderr, "bench-dax: hot %s failed\n",
				st_name[st]);
		printf(" %s %.0f", st_name[st], ns);
	}
	printf("\n");
	policy_rows(dir, size);
out:
	rmdir(dir);
	return 0;
}
