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
 *
 * Static, so the same binary runs in the guest and on the host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void report(const char *phase, long ops, double sec)
{
	printf("BENCH smallfile %s ops=%ld sec=%.3f ops_s=%.1f\n", phase, ops,
	       sec, ops / sec);
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
	double t0, total = 0;
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
		total += t0;
		report(phases[p], n, t0);
	}
	report("all", n * 6, total);
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
	double t0;
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
	close(fd);
	if (n < 0)
		return die("read", path);
	printf("BENCH seqread bytes=%lld sec=%.3f mb_s=%.1f\n", total, t0,
	       total / t0 / 1e6);
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
	fprintf(stderr, "usage: vqf-bench smallfile DIR N | seqread FILE | "
		"mkfile FILE MIB | writer FILE MARK SECONDS\n");
	return 2;
}
