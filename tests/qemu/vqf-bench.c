// SPDX-License-Identifier: GPL-2.0
/*
 * Guest-side workloads of the QEMU benchmark and the virtiofsd-kill test.
 *
 *   vqf-bench smallfile DIR N      create/stat/read/append/rename/delete of
 *                                  N 4 KiB files; one "BENCH" line per phase
 *   vqf-bench seqread FILE         drop caches, read FILE in 1 MiB blocks,
 *                                  spot-check the pattern, print MB/s
 *   vqf-bench mkfile FILE MIB      (host) write the pattern file seqread reads
 *   vqf-bench writer FILE MARK S   write FILE until an error or S seconds;
 *                                  create MARK after the first MiB.  Exit 3
 *                                  on an I/O error, 0 if none came
 *   vqf-bench psync FILE seq|rand S  drop caches, 4 KiB pread()s of FILE
 *                                  (in order, wrapping; or at random 4 KiB
 *                                  offsets) for S seconds, print MB/s
 *   vqf-bench rewrite FILE SEED1 SEED2  check all of FILE against pattern
 *                                  SEED1, rewrite it in place with SEED2
 *                                  (first half pwrite, second half stores
 *                                  through a MAP_SHARED mapping), check it
 *                                  again after dropping caches
 *   vqf-bench checkfile FILE SEED MIB  (host) FILE is MIB MiB of SEED
 *   vqf-bench psyncop FILE MODE OPS  4 KiB pread/pwrite of the existing FILE
 *                                  (made by mkfile): MODE seqread, randread,
 *                                  seqwrite or randwrite; OPS operations
 *                                  (sequential ones wrap at EOF), caches
 *                                  dropped first; reads spot-checked.
 *                                  One "BENCH psyncop" line with MB/s
 *   vqf-bench mmapread FILE OPS    4 KiB memcpy()s out of a MAP_SHARED
 *                                  mapping of FILE, in order, wrapping,
 *                                  spot-checked as psyncop's reads; every
 *                                  page touched once first (untimed), so
 *                                  the figure is the copy without faults
 *                                  or syscalls.  "BENCH psyncop mmapread"
 *   vqf-bench pair OP A B CHUNK CHUNKS  one request type on two mounts
 *                                  (A, B: a file on each), alternating in
 *                                  chunks of CHUNK operations, CHUNKS
 *                                  pairs: OP getattr (statx forced to the
 *                                  server: one FUSE_GETATTR), read4k
 *                                  (4 KiB O_DIRECT pread: one FUSE_READ),
 *                                  create (A.pc created, closed and
 *                                  unlinked), rename (A.r0 to A.r1
 *                                  and back) or write (A.r0 opened,
 *                                  4 KiB written at 0, closed).
 *                                  "BENCH pair" with each side's median
 *                                  us/op and the median and quartiles of
 *                                  the per-pair ratio of A's rate to B's,
 *                                  then the guest CPU per op: the
 *                                  caller's own (a_self_us) and every
 *                                  other task's (a_oth_us: completion
 *                                  workers), and the ratio of B's total
 *                                  to A's (cpu_ratio).  With
 *                                  VQF_BENCH_MARK, "vqf-phase pair-a" or
 *                                  "pair-b" before each chunk
 *
 * Static, so the same binary runs in the guest and on the host.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"

#define SEQ_SEED 77
#define FILE_SIZE 4096

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int die(const char *what, const char *path)
{
	fprintf(stderr, "vqf-bench: %s %s: %s\n", what, path, strerror(errno));
	return 2;
}

/*
 * The guest's CPU time so far, all CPUs, in ms: /proc/stat's first line
 * without idle and iowait.  It counts the kernel's work for a request
 * wherever it runs (the caller, the interrupt, the completion worker),
 * which the caller's own rusage would not.  -1 where it cannot be read.
 */
static double busy_ms(void)
{
	unsigned long long v[8] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 7 || hz <= 0)
		return -1;
	return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * 1000.0 / hz;
}

/* cpu_us_op: the guest's CPU time per operation (see busy_ms()). */
static void report(const char *phase, long ops, double sec, double cpu)
{
	printf("BENCH smallfile %s ops=%ld sec=%.3f ops_s=%.1f "
	       "cpu_us_op=%.1f\n", phase, ops, sec, ops / sec,
	       cpu >= 0 ? cpu * 1000 / ops : -1.0);
}

/*
 * VQF_BENCH_MARK names a file (the guest's trace_marker) that gets a
 * "vqf-phase NAME" line before each phase, so that traced requests can be
 * counted per phase.
 */
static void mark(int fd, const char *phase)
{
	char line[64];
	int len;

	if (fd < 0)
		return;
	len = snprintf(line, sizeof(line), "vqf-phase %s\n", phase);
	if (write(fd, line, len) != len)
		perror("vqf-bench: mark");
}

static int smallfile(const char *dir, long n)
{
	static const char *const phases[] = {
		"create", "stat", "read", "append", "rename", "delete",
	};
	char a[4096], b[4096], buf[FILE_SIZE * 2];
	double t0, total = 0, c0, cpu, cpu_total = 0;
	unsigned int p;
	const char *mpath = getenv("VQF_BENCH_MARK");
	int mfd = mpath ? open(mpath, O_WRONLY) : -1;
	struct stat st;
	long i;
	int fd;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return die("mkdir", dir);
	vqf_pat_fill(1, 0, buf, sizeof(buf));
	for (p = 0; p < sizeof(phases) / sizeof(phases[0]); p++) {
		mark(mfd, phases[p]);
		c0 = busy_ms();
		t0 = now();
		for (i = 0; i < n; i++) {
			snprintf(a, sizeof(a), "%s/f%06ld", dir, i);
			snprintf(b, sizeof(b), "%s/r%06ld", dir, i);
			switch (p) {
			case 0:
				fd = open(a, O_CREAT | O_EXCL | O_WRONLY, 0644);
				if (fd < 0 || write(fd, buf, FILE_SIZE) !=
				    FILE_SIZE)
					return die("create", a);
				close(fd);
				break;
			case 1:
				if (stat(a, &st) || st.st_size != FILE_SIZE)
					return die("stat", a);
				break;
			case 2:
				fd = open(a, O_RDONLY);
				if (fd < 0 || read(fd, buf, sizeof(buf)) !=
				    FILE_SIZE)
					return die("read", a);
				close(fd);
				break;
			case 3:
				fd = open(a, O_WRONLY | O_APPEND);
				if (fd < 0 || write(fd, buf, 1024) != 1024)
					return die("append", a);
				close(fd);
				break;
			case 4:
				if (rename(a, b))
					return die("rename", a);
				break;
			case 5:
				if (unlink(b))
					return die("unlink", b);
				break;
			}
		}
		t0 = now() - t0;
		cpu = c0 < 0 ? -1 : busy_ms() - c0;
		total += t0;
		cpu_total = cpu < 0 || cpu_total < 0 ? -1 : cpu_total + cpu;
		report(phases[p], n, t0, cpu);
	}
	report("all", n * 6, total, cpu_total);
	mark(mfd, "end");
	if (mfd >= 0)
		close(mfd);
	rmdir(dir);
	return 0;
}

static int seqread(const char *path)
{
	static char buf[1 << 20];
	long long total = 0;
	double t0, cpu, cpu_end;
	ssize_t n;
	int fd;

	/* cold cache, or the guest would measure its own page cache */
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "3", 1) != 1)
			perror("drop_caches");
		close(fd);
	}
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return die("open", path);
	cpu = busy_ms();
	t0 = now();
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		/* a spot check keeps the figure honest without costing TCG
		 * a full compare
		 */
		if (vqf_pat_check(SEQ_SEED, total, buf, 64) != 64) {
			fprintf(stderr, "vqf-bench: %s: wrong data at %lld\n",
				path, total);
			return 1;
		}
		total += n;
	}
	t0 = now() - t0;
	cpu_end = busy_ms();
	cpu = cpu >= 0 && cpu_end >= 0 ? cpu_end - cpu : -1;
	close(fd);
	if (n < 0)
		return die("read", path);
	/* cpu_us_mb: the guest's CPU time per MB read (see busy_ms()). */
	printf("BENCH seqread bytes=%lld sec=%.3f mb_s=%.1f cpu_us_mb=%.1f\n",
	       total, t0, total / t0 / 1e6,
	       cpu >= 0 && total ? cpu * 1000 / (total / 1e6) : -1.0);
	return 0;
}

static void drop_caches(void);

/*
 * fio's psync engine at bs=4k, iodepth 1: one syscall per 4 KiB.  Writes
 * put the pattern into the first 64 bytes of each block (what reads
 * spot-check), so reads after writes still hold.
 */
static int psync_ops(const char *path, const char *mode, long ops)
{
	bool rnd = mode[0] == 'r', wr = !strcmp(mode + 3 + rnd, "write");
	uint64_t s = 0x9E3779B97F4A7C15ull, nblk, blk, off;
	static char buf[4096];
	struct stat st;
	double t0;
	long i;
	int fd;

	if (strcmp(mode + 3 + rnd, "read") && !wr)
		return die("mode", mode);
	drop_caches();
	fd = open(path, wr ? O_RDWR : O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return die("open", path);
	nblk = st.st_size / sizeof(buf);
	if (!nblk)
		return die("empty", path);
	t0 = now();
	for (i = 0; i < ops; i++) {
		if (rnd) {
			s ^= s >> 12;
			s ^= s << 25;
			s ^= s >> 27;
			blk = (s * 0x2545F4914F6CDD1Dull >> 16) % nblk;
		} else {
			blk = i % nblk;
		}
		off = blk * sizeof(buf);
		if (wr) {
			vqf_pat_fill(SEQ_SEED, off, buf, 64);
			if (pwrite(fd, buf, sizeof(buf), off) != sizeof(buf))
				return die("pwrite", path);
			continue;
		}
		if (pread(fd, buf, sizeof(buf), off) != sizeof(buf))
			return die("pread", path);
		if (vqf_pat_check(SEQ_SEED, off, buf, 64) != 64) {
			fprintf(stderr, "vqf-bench: %s: wrong data at %llu\n",
				path, (unsigned long long)off);
			return 1;
		}
	}
	t0 = now() - t0;
	close(fd);
	printf("BENCH psyncop %s ops=%ld sec=%.3f mb_s=%.1f\n", mode, ops, t0,
	       ops * 4096.0 / t0 / 1e6);
	return 0;
}

/*
 * On a DAX file this reads the window's memory itself: the bound that a
 * 4 KiB DAX read() (a syscall, iomap, then the kernel's copy out of the
 * same memory) approaches.
 */
static int mmap_read(const char *path, long ops)
{
	static char buf[4096];
	volatile const char *touch;
	uint64_t nblk, off;
	struct stat st;
	const char *map;
	double t0;
	long i;
	int fd;

	drop_caches();
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return die("open", path);
	nblk = st.st_size / sizeof(buf);
	if (!nblk)
		return die("empty", path);
	map = mmap(NULL, nblk * sizeof(buf), PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return die("mmap", path);
	touch = map;
	for (off = 0; off < nblk * sizeof(buf); off += sizeof(buf))
		(void)touch[off];
	t0 = now();
	for (i = 0; i < ops; i++) {
		off = (i % nblk) * sizeof(buf);
		memcpy(buf, map + off, sizeof(buf));
		if (vqf_pat_check(SEQ_SEED, off, buf, 64) != 64) {
			fprintf(stderr, "vqf-bench: %s: wrong data at %llu\n",
				path, (unsigned long long)off);
			return 1;
		}
	}
	t0 = now() - t0;
	munmap((void *)map, nblk * sizeof(buf));
	close(fd);
	printf("BENCH psyncop mmapread ops=%ld sec=%.3f mb_s=%.1f\n", ops, t0,
	       ops * 4096.0 / t0 / 1e6);
	return 0;
}

static int mkfile(const char *path, long mib)
{
	static char buf[1 << 20];
	long i;
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);

	if (fd < 0)
		return die("create", path);
	for (i = 0; i < mib; i++) {
		vqf_pat_fill(SEQ_SEED, (uint64_t)i << 20, buf, sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			return die("write", path);
	}
	return close(fd) ? die("close", path) : 0;
}

static int writer(const char *path, const char *mark, double limit)
{
	static char buf[65536];
	long long done = 0;
	double t0 = now();
	int fd, mfd, err;

	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		return die("create", path);
	memset(buf, 0xa5, sizeof(buf));
	while (now() - t0 < limit) {
		if (write(fd, buf, sizeof(buf)) != sizeof(buf)) {
			err = errno;
			printf("# writer: write failed after %lld bytes: %s\n",
			       done, strerror(err));
			/* the mount must keep failing, not hang */
			mfd = open(mark, O_RDONLY);
			printf("# writer: open after failure: %s\n",
			       mfd < 0 ? strerror(errno) : "succeeded");
			if (mfd >= 0)
				close(mfd);
			close(fd);
			return 3;
		}
		done += sizeof(buf);
		if (done == 1 << 20) {
			mfd = open(mark, O_CREAT | O_WRONLY, 0644);
			if (mfd < 0)
				return die("create", mark);
			close(mfd);
		}
	}
	printf("# writer: no error in %.0f s (%lld bytes)\n", limit, done);
	close(fd);
	return 0;
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	if (fd < 0)
		return;
	sync();
	if (write(fd, "3", 1) != 1)
		perror("drop_caches");
	close(fd);
}

/*
 * The RFC's psync rows: one thread, 4 KiB pread()s.  Bounded by time, not
 * work, so that the slow rows (a FUSE_READ per block) and the fast ones
 * (DAX loads) run equally long; the file is larger than the guest's page
 * cache can keep, so a cached row cannot hide the transport either.
 */
static int psync(const char *path, const char *how, double limit)
{
	static char buf[4096];
	int rnd = !strcmp(how, "rand");
	uint64_t x = 0x9E3779B97F4A7C15ull, blocks, b = 0;
	long long ops = 0;
	struct stat st;
	double t0;
	int fd;

	drop_caches();
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return die("open", path);
	blocks = (uint64_t)st.st_size / sizeof(buf);
	if (!blocks)
		return die("empty", path);
	t0 = now();
	do {
		int i;

		for (i = 0; i < 64; i++, ops++) {
			if (rnd) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				b = x % blocks;
			} else if (++b == blocks) {
				b = 0;
			}
			if (pread(fd, buf, sizeof(buf), b * sizeof(buf)) !=
			    sizeof(buf))
				return die("pread", path);
			if (vqf_pat_check(SEQ_SEED, b * sizeof(buf), buf, 16) !=
			    16) {
				fprintf(stderr, "vqf-bench: %s: wrong data at "
					"block %llu\n", path,
					(unsigned long long)b);
				return 1;
			}
		}
	} while (now() - t0 < limit);
	t0 = now() - t0;
	close(fd);
	printf("BENCH psync-%s ops=%lld sec=%.3f mb_s=%.1f\n", how, ops, t0,
	       ops * (double)sizeof(buf) / t0 / 1e6);
	return 0;
}

static int check_all(int fd, const char *path, uint32_t seed, off_t size)
{
	static char buf[1 << 20];
	off_t off;

	for (off = 0; off < size; off += sizeof(buf)) {
		size_t want = size - off < (off_t)sizeof(buf) ?
			      (size_t)(size - off) : sizeof(buf);
		ssize_t n = pread(fd, buf, want, off);
		size_t bad;

		if (n != (ssize_t)want)
			return die("read", path);
		bad = vqf_pat_check(seed, off, buf, want);
		if (bad != want) {
			fprintf(stderr, "vqf-bench: %s: byte %lld is not "
				"pattern %u\n", path, (long long)(off + bad),
				seed);
			return 1;
		}
	}
	return 0;
}

/*
 * Every byte of a file through the DAX window, read and written, in place
 * (no extending write, which virtiofs sends as FUSE_WRITE): with a window
 * smaller than the file, ranges are reclaimed and mapped again throughout.
 */
static int rewrite(const char *path, uint32_t seed1, uint32_t seed2)
{
	static char buf[4096];
	struct stat st;
	off_t off, half;
	char *map;
	int fd;

	fd = open(path, O_RDWR);
	if (fd < 0 || fstat(fd, &st))
		return die("open", path);
	if (check_all(fd, path, seed1, st.st_size))
		return 1;
	half = st.st_size / 2 & ~(off_t)(sizeof(buf) - 1);
	for (off = 0; off < half; off += sizeof(buf)) {
		vqf_pat_fill(seed2, off, buf, sizeof(buf));
		if (pwrite(fd, buf, sizeof(buf), off) != sizeof(buf))
			return die("pwrite", path);
	}
	map = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   0);
	if (map == MAP_FAILED)
		return die("mmap", path);
	vqf_pat_fill(seed2, half, map + half, st.st_size - half);
	if (msync(map, st.st_size, MS_SYNC) || munmap(map, st.st_size))
		return die("msync", path);
	if (fsync(fd))
		return die("fsync", path);
	close(fd);
	drop_caches();
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return die("reopen", path);
	if (check_all(fd, path, seed2, st.st_size))
		return 1;
	close(fd);
	printf("REWRITE bytes=%lld ok\n", (long long)st.st_size);
	return 0;
}

static int checkfile(const char *path, uint32_t seed, long mib)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		return die("open", path);
	if (st.st_size != (off_t)mib << 20) {
		fprintf(stderr, "vqf-bench: %s: %lld bytes, not %ld MiB\n",
			path, (long long)st.st_size, mib);
		return 1;
	}
	if (check_all(fd, path, seed, st.st_size))
		return 1;
	printf("%s: %ld MiB of pattern %u\n", path, mib, seed);
	return close(fd) ? die("close", path) : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Linear interpolation between order statistics of sorted @v. */
static double quantile(const double *v, long n, double p)
{
	double x = (n - 1) * p;
	long i = (long)x;

	return i + 1 < n ? v[i] + (x - i) * (v[i + 1] - v[i]) : v[i];
}

static double thread_cpu(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The first field of a schedstat file: the task's run time in ns. */
static double schedstat_sec(int dirfd, const char *name)
{
	unsigned long long ns = 0;
	char path[sizeof(((struct dirent *)0)->d_name) + 16];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/schedstat", name);
	fd = openat(dirfd, path, O_RDONLY);
	if (fd < 0)
		return 0;	/* it exited: its time left with it */
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return 0;
	}
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	fclose(f);
	return ns / 1e9;
}

/*
 * CPU time of every task in the guest but the caller, in seconds: the
 * scheduler's sum_exec_runtime of each thread, exact for a thread that is
 * not running (read it between chunks, never inside one).  This is the
 * completion workers' share of a request, which the caller's own clock
 * does not see.  Interrupts that land on an idle CPU count nowhere
 * (Debian's kernels have no IRQ_TIME_ACCOUNTING), alike for both drivers.
 */
static double others_sec(void)
{
	DIR *proc = opendir("/proc"), *tasks;
	char self[32], path[sizeof(((struct dirent *)0)->d_name) + 16];
	struct dirent *p, *t;
	double sum = 0;

	if (!proc)
		return -1;
	snprintf(self, sizeof(self), "%d", gettid());
	while ((p = readdir(proc))) {
		if (p->d_name[0] < '0' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", p->d_name);
		tasks = opendir(path);
		if (!tasks)
			continue;
		while ((t = readdir(tasks))) {
			if (t->d_name[0] < '0' || t->d_name[0] > '9' ||
			    !strcmp(t->d_name, self))
				continue;
			sum += schedstat_sec(dirfd(tasks), t->d_name);
		}
		closedir(tasks);
	}
	closedir(proc);
	return sum;
}

/* One side's chunk: wall, own CPU and other tasks' CPU, in seconds. */
struct pair_time {
	double wall, self, others;
};

/* What one "operation" of vqf-bench pair is. */
enum pair_op {
	PAIR_GETATTR,	/* statx forced to the server: one GETATTR */
	PAIR_READ4K,	/* 4 KiB O_DIRECT pread: one READ */
	PAIR_CREATE,	/* create, close, unlink: the smallfile create+delete */
	PAIR_RENAME,	/* rename there and back: two RENAMEs */
	PAIR_WRITE,	/* open, 4 KiB write at 0, close: smallfile's append */
};

static const char *const pair_op_names[] = {
	[PAIR_GETATTR] = "getattr", [PAIR_READ4K] = "read4k",
	[PAIR_CREATE] = "create", [PAIR_RENAME] = "rename",
	[PAIR_WRITE] = "write",
};

/* @path's sibling with @suffix, for the ops that make names. */
static void pair_name(char *out, size_t size, const char *path,
		      const char *suffix)
{
	snprintf(out, size, "%s%s", path, suffix);
}

static int pair_one(enum pair_op op, int fd, const char *path, void *buf)
{
	char n0[4096], n1[4096];
	struct statx sx;
	int f;

	switch (op) {
	case PAIR_GETATTR:
		return statx(AT_FDCWD, path, AT_STATX_FORCE_SYNC,
			     STATX_BASIC_STATS, &sx) ? die("statx", path) : 0;
	case PAIR_READ4K:
		return pread(fd, buf, 4096, 0) != 4096 ? die("pread", path) : 0;
	case PAIR_CREATE:
		pair_name(n0, sizeof(n0), path, ".pc");
		f = open(n0, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (f < 0 || close(f) || unlink(n0))
			return die("create/close/unlink", n0);
		return 0;
	case PAIR_RENAME:
		pair_name(n0, sizeof(n0), path, ".r0");
		pair_name(n1, sizeof(n1), path, ".r1");
		if (rename(n0, n1) || rename(n1, n0))
			return die("rename", n0);
		return 0;
	case PAIR_WRITE:
		pair_name(n0, sizeof(n0), path, ".r0");
		f = open(n0, O_WRONLY);
		if (f < 0 || pwrite(f, buf, 4096, 0) != 4096 || close(f))
			return die("open/write/close", n0);
		return 0;
	}
	return 2;
}

static int pair_chunk(enum pair_op op, int fd, const char *path, void *buf,
		      long chunk, struct pair_time *pt)
{
	double o0 = others_sec(), c0 = thread_cpu(), t0 = now();
	long i;

	for (i = 0; i < chunk; i++)
		if (pair_one(op, fd, path, buf))
			return 2;
	pt->wall = now() - t0;
	pt->self = thread_cpu() - c0;
	pt->others = others_sec() - o0;
	return 0;
}

/* The median over @n chunks of field @get of @pt, per op in us. */
static double pair_median_us(const struct pair_time *pt, long n, long chunk,
			     double (*get)(const struct pair_time *),
			     double *scratch)
{
	long i;

	for (i = 0; i < n; i++)
		scratch[i] = get(&pt[i]);
	qsort(scratch, n, sizeof(*scratch), cmp_double);
	return quantile(scratch, n, 0.5) * 1e6 / chunk;
}

static double pt_wall(const struct pair_time *pt)
{
	return pt->wall;
}

static double pt_self(const struct pair_time *pt)
{
	return pt->self;
}

static double pt_others(const struct pair_time *pt)
{
	return pt->others;
}

/*
 * Alternating chunks, each pair in the other order than the last, so that
 * a slow second of the host falls on both sides alike; the ratio is taken
 * within a pair only.
 */
static int pair(const char *op, const char *a, const char *b, long chunk,
		long chunks)
{
	const char *mpath = getenv("VQF_BENCH_MARK");
	enum pair_op kind = PAIR_GETATTR;
	char name[4096];
	struct pair_time *ta, *tb;
	double *r, *cr, *scratch;
	int fa = -1, fb = -1, mfd = -1;
	void *buf = NULL;
	long c;
	int ret = 1;

	while (strcmp(op, pair_op_names[kind]))
		if (++kind > PAIR_WRITE)
			break;
	if (kind > PAIR_WRITE || chunk < 1 || chunks < 1) {
		fprintf(stderr, "pair: OP getattr|read4k|create|rename|write, CHUNK, CHUNKS >= 1\n");
		return 2;
	}
	ta = calloc(chunks, sizeof(*ta));
	tb = calloc(chunks, sizeof(*tb));
	r = calloc(chunks, sizeof(*r));
	cr = calloc(chunks, sizeof(*cr));
	scratch = calloc(chunks, sizeof(*scratch));
	if (!ta || !tb || !r || !cr || !scratch ||
	    posix_memalign(&buf, 4096, 4096))
		return die("alloc", op);
	if (kind == PAIR_RENAME || kind == PAIR_WRITE) {
		pair_name(name, sizeof(name), a, ".r0");
		fa = open(name, O_CREAT | O_WRONLY, 0644);
		if (fa < 0 || close(fa))
			return die("create", name);
		pair_name(name, sizeof(name), b, ".r0");
		fb = open(name, O_CREAT | O_WRONLY, 0644);
		if (fb < 0 || close(fb))
			return die("create", name);
		fa = fb = -1;
	}
	if (kind == PAIR_READ4K) {
		fa = open(a, O_RDONLY | O_DIRECT);
		if (fa < 0)
			return die("open O_DIRECT", a);
		fb = open(b, O_RDONLY | O_DIRECT);
		if (fb < 0)
			return die("open O_DIRECT", b);
	}
	if (mpath) {
		mfd = open(mpath, O_WRONLY);
		if (mfd < 0)
			return die("open", mpath);
	}
	for (c = 0; c < chunks; c++) {
		bool b_first = c % 2;

		mark(mfd, b_first ? "pair-b" : "pair-a");
		if (pair_chunk(kind, b_first ? fb : fa, b_first ? b : a,
			       buf, chunk, b_first ? &tb[c] : &ta[c]))
			goto out;
		mark(mfd, b_first ? "pair-a" : "pair-b");
		if (pair_chunk(kind, b_first ? fa : fb, b_first ? a : b,
			       buf, chunk, b_first ? &ta[c] : &tb[c]))
			goto out;
		r[c] = tb[c].wall / ta[c].wall;
		cr[c] = (tb[c].self + tb[c].others) /
			(ta[c].self + ta[c].others);
	}
	qsort(r, chunks, sizeof(*r), cmp_double);
	qsort(cr, chunks, sizeof(*cr), cmp_double);
	printf("BENCH pair %s chunks=%ld chunk=%ld a_us=%.1f b_us=%.1f ratio=%.3f q1=%.3f q3=%.3f a_self_us=%.2f b_self_us=%.2f a_oth_us=%.2f b_oth_us=%.2f cpu_ratio=%.3f cpu_q1=%.3f cpu_q3=%.3f\n",
	       op, chunks, chunk,
	       pair_median_us(ta, chunks, chunk, pt_wall, scratch),
	       pair_median_us(tb, chunks, chunk, pt_wall, scratch),
	       quantile(r, chunks, 0.5), quantile(r, chunks, 0.25),
	       quantile(r, chunks, 0.75),
	       pair_median_us(ta, chunks, chunk, pt_self, scratch),
	       pair_median_us(tb, chunks, chunk, pt_self, scratch),
	       pair_median_us(ta, chunks, chunk, pt_others, scratch),
	       pair_median_us(tb, chunks, chunk, pt_others, scratch),
	       quantile(cr, chunks, 0.5), quantile(cr, chunks, 0.25),
	       quantile(cr, chunks, 0.75));
	ret = 0;
out:
	mark(mfd, "end");
	if (kind == PAIR_RENAME || kind == PAIR_WRITE) {
		pair_name(name, sizeof(name), a, ".r0");
		unlink(name);
		pair_name(name, sizeof(name), b, ".r0");
		unlink(name);
	}
	if (mfd >= 0)
		close(mfd);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	free(buf);
	free(ta);
	free(tb);
	free(r);
	free(cr);
	free(scratch);
	return ret;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "smallfile"))
		return smallfile(argv[2], atol(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "seqread"))
		return seqread(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "mkfile"))
		return mkfile(argv[2], atol(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "writer"))
		return writer(argv[2], argv[3], atof(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "psync") &&
	    (!strcmp(argv[3], "seq") || !strcmp(argv[3], "rand")))
		return psync(argv[2], argv[3], atof(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "rewrite"))
		return rewrite(argv[2], strtoul(argv[3], NULL, 0),
			       strtoul(argv[4], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "checkfile"))
		return checkfile(argv[2], strtoul(argv[3], NULL, 0),
				 atol(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "psyncop"))
		return psync_ops(argv[2], argv[3], atol(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "mmapread"))
		return mmap_read(argv[2], atol(argv[3]));
	if (argc == 7 && !strcmp(argv[1], "pair"))
		return pair(argv[2], argv[3], argv[4], atol(argv[5]),
			    atol(argv[6]));
	fprintf(stderr, "usage: vqf-bench smallfile DIR N | seqread FILE | "
		"mkfile FILE MIB | writer FILE MARK SECONDS | "
		"psync FILE seq|rand SECONDS | rewrite FILE SEED1 SEED2 | "
		"checkfile FILE SEED MIB | "
		"psyncop FILE seqread|randread|seqwrite|randwrite OPS | "
		"mmapread FILE OPS | "
		"pair getattr|read4k|create|rename|write A B CHUNK CHUNKS\n");
	return 2;
}
