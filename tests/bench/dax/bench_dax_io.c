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

/*
 * Reads of mapped data, the goal: the file (written on the host)
 * is read once in 4 KiB blocks, sequentially or in a random order, to map
 * it (DAX), fill the page cache (native, FUSE) or fault the window in;
 * the second pass is measured.
 */
static int warm(const char *dir, int st, bool rnd, u64 size, struct cell *c)
{
	u64 nb = size / 4096, b, seed = 0x9e3779b97f4a7c15ull;
	struct vqf_wl_counters c0 = { 0 }, c1 = { 0 };
	unsigned long long r0;
	u32 *perm = malloc(nb * sizeof(*perm));
	char buf[4096];
	struct vqf_sim *s;
	struct vqf_wl_fs fs;
	double t0 = 0, mb;
	int fd, pass, ret;

	if (!perm)
		return -ENOMEM;
	for (b = 0; b < nb; b++)
		perm[b] = (u32)b;
	for (b = nb - 1; rnd && b > 0; b--) {
		u64 k, t;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		k = seed % (b + 1);
		t = perm[b];
		perm[b] = perm[k];
		perm[k] = (u32)t;
	}
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
	int st, opt;

	while ((opt = getopt(argc, argv, "s:t:k:h")) != -1) {
		if (opt == 's' && strtoull(optarg, NULL, 0) >= (1u << 20)) {
			size = strtoull(optarg, NULL, 0);
		} else if (opt == 't') {
			only = optarg;
		} else if (opt == 'k') {
			konly = optarg;
		} else {
			fprintf(stderr, "usage: bench-dax [-s FILE_BYTES] "
				"[-t STACK,...] [-k WORKLOAD,...] (default "
				"256 MiB, at least 1 MiB; stacks native,fuse,"
				"dax,dax-mm,dax-rc; workloads seqread,"
				"randread,seqwrite,randwrite)\n");
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
out:
	rmdir(dir);
	return 0;
}
