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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	fprintf(stderr, "usage: vqf-cohere mktree ROOT NFILES DEPTH | "
		"run ROOT NFILES DEPTH OPS BIGK DEEPK POS | "
		"setxattr PATH NAME VALUE\n");
	return 2;
}
