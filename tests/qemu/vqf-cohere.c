// SPDX-License-Identifier: GPL-2.0
/*
 * The two-guest benchmark's workload (bench-guests.sh): guest A's `ls -l`
 * of a big directory and deep path walks, while guest B and the host
 * rename one name between A's chunks of operations.
 *
 *   vqf-cohere mktree ROOT NFILES DEPTH   (host) ROOT/big/b-N (NFILES - 1
 *                                         of them) and ROOT/big/r-0;
 *                                         ROOT/deep/d01/../dDEPTH/f-0
 *   vqf-cohere run ROOT NFILES DEPTH OPS BIGK DEEPK POS
 *                                         OPS operations from position
 *                                         POS of the `ls -l` pass; the
 *                                         renamed names are r-BIGK and
 *                                         f-DEEPK now
 *   vqf-cohere setxattr PATH NAME VALUE   one xattr set (run-guests.sh's
 *                                         setxattr change, by guest B or
 *                                         the host: busybox has no
 *                                         setfattr)
 *
 * Through a MAP_SHARED mapping of a file (run-guests-dax.sh: the guests'
 * DAX windows; a load or store past the end of the file is caught, SIGBUS
 * printed as S):
 *   vqf-cohere mmwrite PATH OFF STRING    one store of STRING at OFF
 *   vqf-cohere mmwatch PATH OFF LEN GO    prints "before=BYTES" (LEN
 *                                         bytes at OFF), waits for file
 *                                         GO to exist, prints
 *                                         "after=BYTES" (the same
 *                                         mapping, no new open or map)
 *   vqf-cohere mmcount PATH N             the u64 at offset 0 incremented
 *                                         N times by a locked add; the
 *                                         u64 at 8 is a start line: each
 *                                         of the two counters adds 1 and
 *                                         waits for 2 first; then they go
 *                                         in lockstep by 1000 adds (the
 *                                         u64s at 16 and 24: chunks each
 *                                         has done), so that they overlap.
 *                                         Prints
 *                                         "count=N first=F start=S"
 *                                         (F: the value its first add
 *                                         made)
 *   vqf-cohere mmpages PATH PAGES GO [GO2]
 *                                         maps PAGES pages, prints
 *                                         "before=..." (the first byte of
 *                                         each page), waits for GO, prints
 *                                         "after=..." and "tail=..." (the
 *                                         bytes at 100 and 4095 of page
 *                                         1); with GO2, waits for it and
 *                                         prints "again=..." (the same
 *                                         mapping all along)
 *
 * The DAX rows of bench-guests.sh (issue 27): every wait is bounded by a
 * count of loads or sleeps, not by a time, and fails with "timeout" past
 * it, so a peer that never answers ends the run instead of hanging it.
 *   vqf-cohere pingpong-mmap PATH a|b N   N round trips through the u64 at
 *                                         offset 0 of a MAP_SHARED mapping
 *                                         of PATH: a stores 2i+1 and waits
 *                                         for 2i+2, b waits for 2i+1 and
 *                                         stores 2i+2.  A start line first
 *                                         (a's u64 at 512, b's at 1024,
 *                                         each sets its own and waits for
 *                                         the other's).  Prints "rt=N sec=S
 *                                         polls=P" by this guest's
 *                                         CLOCK_MONOTONIC from the start
 *                                         line on (P: loads made
 *                                         waiting); a also "p50us= p99us=
 *                                         maxus= samples=", percentiles of
 *                                         every PP_STRIDE-th round trip,
 *                                         each timed alone (a guest's
 *                                         clock read under TCG can cost
 *                                         as much as a round trip through
 *                                         the window: it is left out of
 *                                         the others)
 *   vqf-cohere pingpong-fuse PATH a|b N   the same through pwrite/pread of
 *                                         the 512 bytes that hold the u64
 *                                         (O_DIRECT's alignment on a disk
 *                                         file; FUSE needs none, and a
 *                                         request's cost hardly depends on
 *                                         it), PATH opened O_DIRECT:
 *                                         without DAX every pread and
 *                                         pwrite is then one FUSE READ or
 *                                         WRITE, whatever the cache mode
 *                                         (on a DAX file they go through
 *                                         the window, no request)
 *   vqf-cohere readfile PATH              read() of all of PATH by 1 MiB,
 *                                         then an mmap of it that is never
 *                                         touched: its mincore() is the
 *                                         file's pages in this kernel's
 *                                         page cache.  Prints "bytes=
 *                                         sec= cached0= cached1= incore=
 *                                         sum=" (Cached of /proc/meminfo
 *                                         in kB before and after the read,
 *                                         incore in pages, sum: of the
 *                                         first u64 of every 4 KiB)
 *   vqf-cohere evict PATH                 (host) fsync and
 *                                         POSIX_FADV_DONTNEED: PATH's
 *                                         pages out of the page cache
 *
 * An operation is one stat: an lstat of the next entry of big/ (a pass
 * starts with reading the whole directory, as ls -l does), every 10th a
 * walk of the deep path to f-DEEPK, every 50th an lstat of r-BIGK.  The
 * stale answers: a walk or lstat of the current name that fails, one of
 * the previous name (f-(DEEPK-1), r-(BIGK-1)) that succeeds, a listing
 * that lacks r-BIGK or still has r-(BIGK-1).  Prints one line:
 *   COHERE ops=N sec=S stale=M pos=P
 * Static, so the same binary runs in the guest and on the host.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define PLEN 512

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void deep_path(char *p, const char *root, long depth, long k)
{
	int n = snprintf(p, PLEN, "%s/deep", root);

	for (long i = 1; i <= depth && n < PLEN; i++)
		n += snprintf(p + n, PLEN - n, "/d%02ld", i);
	if (n < PLEN)
		snprintf(p + n, PLEN - n, "/f-%ld", k);
}

static int mktree(const char *root, long nfiles, long depth)
{
	char p[PLEN];
	int fd, n;

	snprintf(p, sizeof(p), "%s/big", root);
	if (mkdir(p, 0755) && errno != EEXIST)
		return 2;
	for (long i = 0; i < nfiles; i++) {
		if (i + 1 < nfiles)
			snprintf(p, sizeof(p), "%s/big/b-%05ld", root, i);
		else
			snprintf(p, sizeof(p), "%s/big/r-0", root);
		fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd))
			return 2;
	}
	n = snprintf(p, sizeof(p), "%s/deep", root);
	if (mkdir(p, 0755) && errno != EEXIST)
		return 2;
	for (long i = 1; i <= depth; i++) {
		n += snprintf(p + n, sizeof(p) - n, "/d%02ld", i);
		if (mkdir(p, 0755) && errno != EEXIST)
			return 2;
	}
	deep_path(p, root, depth, 0);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	return fd < 0 || close(fd) ? 2 : 0;
}

static int exists(const char *p)
{
	struct stat st;

	return !lstat(p, &st);
}

/* The listing, as ls -l reads it: stale if the renamed name is wrong. */
static long list_big(const char *root, long bigk, long *entries)
{
	char p[PLEN], cur[64], old[64];
	struct dirent *e;
	int seen_cur = 0, seen_old = 0;
	DIR *d;

	snprintf(p, sizeof(p), "%s/big", root);
	snprintf(cur, sizeof(cur), "r-%ld", bigk);
	snprintf(old, sizeof(old), "r-%ld", bigk - 1);
	d = opendir(p);
	if (!d)
		return 1;
	*entries = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		(*entries)++;
		seen_cur |= !strcmp(e->d_name, cur);
		seen_old |= bigk && !strcmp(e->d_name, old);
	}
	closedir(d);
	return !seen_cur + seen_old;
}

static int run(const char *root, long nfiles, long depth, long ops,
	       long bigk, long deepk, long pos)
{
	long stale = 0, entries = 0, i;
	char p[PLEN];
	double t0 = now();

	for (i = 0; i < ops; i++) {
		if (i % 10 == 9) {
			deep_path(p, root, depth, deepk);
			stale += !exists(p);
			if (deepk) {
				deep_path(p, root, depth, deepk - 1);
				stale += exists(p);
			}
			continue;
		}
		if (i % 50 == 48) {
			snprintf(p, sizeof(p), "%s/big/r-%ld", root, bigk);
			stale += !exists(p);
			if (bigk) {
				snprintf(p, sizeof(p), "%s/big/r-%ld", root,
					 bigk - 1);
				stale += exists(p);
			}
			continue;
		}
		if (pos == 0)
			stale += list_big(root, bigk, &entries);
		/* b-N never change: their lstats are the ls -l part */
		snprintf(p, sizeof(p), "%s/big/b-%05ld", root, pos);
		if (!exists(p)) {
			fprintf(stderr, "vqf-cohere: %s: %s\n", p,
				strerror(errno));
			return 2;
		}
		pos = pos + 1 >= nfiles - 1 ? 0 : pos + 1;
	}
	printf("COHERE ops=%ld sec=%.4f stale=%ld pos=%ld\n", ops,
	       now() - t0, stale, pos);
	return 0;
}

/* ---- MAP_SHARED loads and stores, SIGBUS caught ---------------------- */

static sigjmp_buf bus_jmp;

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* The byte at @p, as a printable character; 'S' for a SIGBUS. */
static int load(const volatile unsigned char *p)
{
	unsigned char c;

	if (sigsetjmp(bus_jmp, 1))
		return 'S';
	c = *p;
	return c >= 0x21 && c < 0x7f ? c : c ? '?' : '0';
}

static void *map_file(const char *path, size_t len, int *fdp)
{
	struct sigaction sa = { .sa_handler = on_bus };
	int fd = open(path, O_RDWR);
	void *p;

	sigaction(SIGBUS, &sa, NULL);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	*fdp = fd;
	return p;
}

static void wait_for(const char *go)
{
	/* Bounded by the host's timeout: it kills the guest. */
	while (access(go, F_OK))
		usleep(10000);
}

static int mmwrite(const char *path, long off, const char *str)
{
	size_t n = strlen(str);
	int fd;
	char *p = map_file(path, off + n, &fd);

	memcpy(p + off, str, n);
	return 0;
}

static void print_bytes(const char *what, const unsigned char *p, long len)
{
	printf("%s=", what);
	for (long i = 0; i < len; i++)
		putchar(load(p + i));
	putchar('\n');
}

static int mmwatch(const char *path, long off, long len, const char *go)
{
	int fd;
	unsigned char *p = map_file(path, off + len, &fd);

	print_bytes("before", p + off, len);
	wait_for(go);
	print_bytes("after", p + off, len);
	return 0;
}

static int mmcount(const char *path, long n)
{
	int fd;
	unsigned long long *p = map_file(path, 4096, &fd);
	unsigned long long start, first = 0, id, done = 0;
	long i = 0;

	id = __atomic_fetch_add(&p[1], 1, __ATOMIC_SEQ_CST) & 1;
	while ((start = __atomic_load_n(&p[1], __ATOMIC_ACQUIRE)) < 2)
		usleep(1000);
	/* Lockstep by chunks of 1000, so that the two really overlap. */
	while (i < n) {
		for (long k = 0; k < 1000 && i < n; k++, i++) {
			unsigned long long v = __atomic_add_fetch(&p[0], 1,
							__ATOMIC_SEQ_CST);

			if (!i)
				first = v;
		}
		__atomic_store_n(&p[2 + id], ++done, __ATOMIC_RELEASE);
		while (i < n &&
		       __atomic_load_n(&p[3 - id], __ATOMIC_ACQUIRE) + 1 < done)
			sched_yield();
	}
	printf("count=%llu first=%llu start=%llu\n",
	       __atomic_load_n(&p[0], __ATOMIC_SEQ_CST), first, start);
	return 0;
}

static int mmpages(const char *path, long pages, const char *go,
		   const char *go2)
{
	unsigned char *p;
	char line[256];
	int fd;

	if (pages < 2 || pages > 200)
		return 2;
	p = map_file(path, pages * 4096, &fd);
	for (long i = 0; i < pages; i++)
		line[i] = (char)load(p + i * 4096);
	printf("before=%.*s\n", (int)pages, line);
	wait_for(go);
	for (long i = 0; i < pages; i++)
		line[i] = (char)load(p + i * 4096);
	printf("after=%.*s\n", (int)pages, line);
	printf("tail=%c%c\n", load(p + 4096 + 100), load(p + 4096 + 4095));
	if (!go2)
		return 0;
	wait_for(go2);
	for (long i = 0; i < pages; i++)
		line[i] = (char)load(p + i * 4096);
	printf("again=%.*s\n", (int)pages, line);
	return 0;
}

/* ---- the DAX rows of bench-guests.sh --------------------------------- */

/*
 * A wait gives up after this many loads: under TCG one load through the
 * window is about 10 ns, so 4e9 of them are tens of seconds at least; one
 * pread is a FUSE round trip (100 us or more), so 1e6 of them are minutes.
 */
#define PP_SPINS_MMAP 4000000000LL
#define PP_SPINS_FUSE 1000000LL
/* The start line: sleeps of 1 ms, while the host starts the other one. */
#define PP_START_TRIES 100000
/*
 * pread/pwrite's unit and the layout: the sequence at 0, a's start at
 * PP_BLOCK, b's at 2 * PP_BLOCK, each alone in its block so that a block
 * written whole never takes another's u64 with it.
 */
#define PP_BLOCK 512
#define PP_STRIDE 16

struct pp {
	int fd;
	volatile unsigned long long *map;	/* NULL: pread/pwrite */
	unsigned long long *buf;		/* O_DIRECT's aligned buffer */
	long long spins;			/* a wait's bound */
	long long polls;			/* loads made waiting */
};

static int pp_load(struct pp *c, long off, unsigned long long *v)
{
	if (c->map) {
		*v = __atomic_load_n(&c->map[off / 8], __ATOMIC_ACQUIRE);
		return 0;
	}
	if (pread(c->fd, c->buf, PP_BLOCK, off) != PP_BLOCK) {
		perror("pread");
		return -1;
	}
	*v = c->buf[0];
	return 0;
}

static int pp_store(struct pp *c, long off, unsigned long long v)
{
	if (c->map) {
		__atomic_store_n(&c->map[off / 8], v, __ATOMIC_RELEASE);
		return 0;
	}
	/* the whole block: each block has one writer at a time */
	memset(c->buf, 0, PP_BLOCK);
	c->buf[0] = v;
	if (pwrite(c->fd, c->buf, PP_BLOCK, off) != PP_BLOCK) {
		perror("pwrite");
		return -1;
	}
	return 0;
}

/* Waits, at most c->spins loads, for the u64 at @off to hold @want. */
static int pp_wait(struct pp *c, long off, unsigned long long want)
{
	unsigned long long v = 0;

	for (long long i = 0; i < c->spins; i++) {
		if (pp_load(c, off, &v))
			return -1;
		c->polls++;
		if (v == want)
			return 0;
	}
	fprintf(stderr, "vqf-cohere: timeout: %llu at %ld, not %llu\n", v,
		off, want);
	return -1;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static int pingpong(const char *path, const char *role, long n, int mmapped)
{
	struct pp c = { .fd = -1 };
	int b = !strcmp(role, "b");
	unsigned long long v = 0;
	double t0, t = 0, *lat;
	long i, k = 0;

	if ((!b && strcmp(role, "a")) || n < 1)
		return 2;
	lat = calloc(n / PP_STRIDE + 1, sizeof(*lat));
	if (!lat)
		return 1;
	if (mmapped) {
		c.map = map_file(path, 4096, &c.fd);
		c.spins = PP_SPINS_MMAP;
	} else {
		c.fd = open(path, O_RDWR | O_DIRECT);
		if (c.fd < 0 || posix_memalign((void **)&c.buf, 4096, 4096)) {
			perror(path);
			return 1;
		}
		c.spins = PP_SPINS_FUSE;
	}
	if (pp_load(&c, 0, &v) || v) {
		fprintf(stderr, "vqf-cohere: the sequence starts at %llu\n", v);
		return 1;
	}
	/* the start line: each sets its own u64, then waits for the other's */
	if (pp_store(&c, PP_BLOCK * (1 + b), 1))
		return 1;
	for (i = 0; i < PP_START_TRIES; i++) {
		if (pp_load(&c, PP_BLOCK * (2 - b), &v))
			return 1;
		if (v == 1)
			break;
		usleep(1000);
	}
	if (v != 1) {
		fprintf(stderr, "vqf-cohere: timeout: the other never started\n");
		return 1;
	}
	t0 = now();
	for (i = 0; i < n; i++) {
		if (b) {
			if (pp_wait(&c, 0, 2 * i + 1) ||
			    pp_store(&c, 0, 2 * i + 2))
				return 1;
			continue;
		}
		if (i % PP_STRIDE == 0)
			t = now();
		if (pp_store(&c, 0, 2 * i + 1) || pp_wait(&c, 0, 2 * i + 2))
			return 1;
		if (i % PP_STRIDE == 0)
			lat[k++] = now() - t;
	}
	printf("rt=%ld sec=%.4f polls=%lld", n, now() - t0, c.polls);
	if (!b) {
		/* the mean hides how often the host ran the other guest late */
		qsort(lat, k, sizeof(*lat), cmp_double);
		printf(" p50us=%.2f p99us=%.2f maxus=%.0f samples=%ld",
		       1e6 * lat[k / 2], 1e6 * lat[k - 1 - k / 100],
		       1e6 * lat[k - 1], k);
	}
	putchar('\n');
	return 0;
}

/* Cached of /proc/meminfo, in kB (-1 if absent). */
static long meminfo_cached(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Cached: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int readfile(const char *path)
{
	size_t bsz = 1 << 20;
	unsigned long long sum = 0, x;
	long long bytes = 0;
	long cached0, cached1, incore = 0, pages;
	unsigned char *buf = malloc(bsz), *vec;
	int fd = open(path, O_RDONLY);
	double t0, sec;
	ssize_t r;
	void *m;

	if (fd < 0 || !buf) {
		perror(path);
		return 1;
	}
	cached0 = meminfo_cached();
	t0 = now();
	while ((r = read(fd, buf, bsz)) > 0) {
		/* the first u64 of each 4 KiB: the bytes are there, cheaply */
		for (ssize_t o = 0; o + 8 <= r; o += 4096) {
			memcpy(&x, buf + o, 8);
			sum += x;
		}
		bytes += r;
	}
	sec = now() - t0;
	if (r < 0) {
		perror("read");
		return 1;
	}
	cached1 = meminfo_cached();
	/*
	 * An untouched mapping: mincore() then answers from the file's page
	 * cache alone (a DAX file's window entries count as not there).
	 */
	pages = (bytes + 4095) / 4096;
	vec = malloc(pages ? pages : 1);
	m = pages ? mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0) : NULL;
	if (!vec || m == MAP_FAILED || (pages && mincore(m, bytes, vec))) {
		perror("mincore");
		return 1;
	}
	for (long i = 0; i < pages; i++)
		incore += vec[i] & 1;
	printf("bytes=%lld sec=%.4f cached0=%ld cached1=%ld incore=%ld sum=%llx\n",
	       bytes, sec, cached0, cached1, incore, sum);
	return 0;
}

static int evict(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fsync(fd) ||
	    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) {
		perror(path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "mktree"))
		return mktree(argv[2], atol(argv[3]), atol(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "setxattr")) {
		if (!setxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0))
			return 0;
		perror(argv[2]);
		return 1;
	}
	if (argc == 9 && !strcmp(argv[1], "run"))
		return run(argv[2], atol(argv[3]), atol(argv[4]),
			   atol(argv[5]), atol(argv[6]), atol(argv[7]),
			   atol(argv[8]));
	if (argc == 5 && !strcmp(argv[1], "mmwrite"))
		return mmwrite(argv[2], atol(argv[3]), argv[4]);
	if (argc == 6 && !strcmp(argv[1], "mmwatch"))
		return mmwatch(argv[2], atol(argv[3]), atol(argv[4]), argv[5]);
	if (argc == 4 && !strcmp(argv[1], "mmcount"))
		return mmcount(argv[2], atol(argv[3]));
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "mmpages"))
		return mmpages(argv[2], atol(argv[3]), argv[4],
			       argc == 6 ? argv[5] : NULL);
	if (argc == 5 && !strcmp(argv[1], "pingpong-mmap"))
		return pingpong(argv[2], argv[3], atol(argv[4]), 1);
	if (argc == 5 && !strcmp(argv[1], "pingpong-fuse"))
		return pingpong(argv[2], argv[3], atol(argv[4]), 0);
	if (argc == 3 && !strcmp(argv[1], "readfile"))
		return readfile(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "evict"))
		return evict(argv[2]);
	fprintf(stderr, "usage: vqf-cohere mktree ROOT NFILES DEPTH | "
		"run ROOT NFILES DEPTH OPS BIGK DEEPK POS | "
		"setxattr PATH NAME VALUE | mmwrite PATH OFF STRING | "
		"mmwatch PATH OFF LEN GO | mmcount PATH N | "
		"mmpages PATH PAGES GO [GO2] | "
		"pingpong-mmap|pingpong-fuse PATH a|b N | readfile PATH | "
		"evict PATH\n");
	return 2;
}
