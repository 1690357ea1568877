// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench_backend.c - figures for the host side, peers in the same run:
 * native syscalls on the directory, vqfuse's passthrough (io_uring and
 * pread modes) and libfuse3's passthrough_ll, each driven by raw FUSE
 * requests through vqf_backend (no transport: this is the server's cost).
 *
 *   bench_backend [seconds-per-case]   (default 1)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tf_fs.h"

#define FILE_MB 64
#define IO_SIZE (1 << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* create, write 4 KiB, release, getattr, unlink, forget: one "op" */
static double smallfile_fuse(struct tf_fs *f, double secs)
{
	struct tf *t = &f->t;
	struct fuse_entry_out e;
	static char buf[4096];
	double t0 = now(), t1;
	long n = 0;
	uint64_t fh;

	do {
		if (tf_create(t, FUSE_ROOT_ID, "sf", O_RDWR, 0644, &e, &fh) ||
		    tf_write(t, e.nodeid, fh, 0, buf, sizeof(buf)) != 4096 ||
		    tf_release(t, e.nodeid, fh, false) ||
		    tf_getattr(t, e.nodeid, NULL) ||
		    tf_unlink(t, FUSE_ROOT_ID, "sf"))
			return -1;
		tf_forget(t, e.nodeid, 1);
		n++;
		t1 = now();
	} while (t1 - t0 < secs);
	return n / (t1 - t0);
}

static double smallfile_native(const char *dir, double secs)
{
	static char buf[4096];
	char path[128];
	double t0 = now(), t1;
	struct stat st;
	long n = 0;

	snprintf(path, sizeof(path), "%s/sf", dir);
	do {
		int fd = open(path, O_CREAT | O_RDWR, 0644);

		if (fd < 0 || write(fd, buf, sizeof(buf)) != 4096)
			return -1;
		close(fd);
		if (stat(path, &st) || unlink(path))
			return -1;
		n++;
		t1 = now();
	} while (t1 - t0 < secs);
	return n / (t1 - t0);
}

static int make_big(const char *path)
{
	char *buf = calloc(1, IO_SIZE);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644), i, ret = 0;

	if (fd < 0 || !buf)
		ret = -1;
	for (i = 0; !ret && i < FILE_MB; i++)
		if (write(fd, buf, IO_SIZE) != IO_SIZE)
			ret = -1;
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* sequential 1 MiB READs of a 64 MiB file (page cache), in MB/s */
static double seqread_fuse(struct tf_fs *f, double secs, int oflags)
{
	struct tf *t = &f->t;
	struct fuse_entry_out e;
	double t0, t1, bytes = 0;
	uint64_t fh, off = 0;

	if ((access(tf_host(f, "big"), F_OK) && make_big(tf_host(f, "big"))) ||
	    tf_lookup(t, FUSE_ROOT_ID, "big", &e) ||
	    tf_open(t, e.nodeid, O_RDONLY | oflags, &fh))
		return -1;
	t0 = now();
	do {
		if (tf_read(t, e.nodeid, fh, off, NULL, IO_SIZE) != IO_SIZE)
			return -1;
		bytes += IO_SIZE;
		off = (off + IO_SIZE) % ((uint64_t)FILE_MB * IO_SIZE);
		t1 = now();
	} while (t1 - t0 < secs);
	tf_release(t, e.nodeid, fh, false);
	return bytes / (t1 - t0) / 1e6;
}

static double seqread_native(const char *dir, double secs, int oflags)
{
	char path[128], *buf = aligned_alloc(4096, IO_SIZE);
	double t0, t1, bytes = 0;
	off_t off = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/big", dir);
	fd = open(path, O_RDONLY | oflags);
	if (fd < 0 || !buf)
		return -1;
	t0 = now();
	do {
		if (pread(fd, buf, IO_SIZE, off) != IO_SIZE)
			return -1;
		bytes += IO_SIZE;
		off = (off + IO_SIZE) % ((off_t)FILE_MB * IO_SIZE);
		t1 = now();
	} while (t1 - t0 < secs);
	close(fd);
	free(buf);
	return bytes / (t1 - t0) / 1e6;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	static const struct {
		enum tf_kind kind;
		const char *name;
	} peers[] = {
		{ TF_VQF_PT, "vqf passthrough (io_uring)" },
		{ TF_VQF_PT_PREAD, "vqf passthrough (pread)" },
#ifdef VQF_TEST_PTLL
		{ TF_PTLL, "libfuse passthrough_ll" },
#endif
	};
	double sf_native, rd_native, dr_native;
	double sf[3] = { 0 }, rd[3] = { 0 }, dr[3] = { 0 };
	struct tf_fs *f;
	size_t i;

	if (secs <= 0)
		secs = 1.0;
	f = tf_fs_new(TF_VQF_PT);
	if (!f) {
		fprintf(stderr, "bench_backend: cannot set up a directory\n");
		return 1;
	}
	sf_native = smallfile_native(f->dir, secs);
	make_big(tf_host(f, "big"));
	rd_native = seqread_native(f->dir, secs, 0);
	dr_native = seqread_native(f->dir, secs, O_DIRECT);
	tf_fs_free(f);

	for (i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
		f = tf_fs_new(peers[i].kind);
		if (!f) {
			fprintf(stderr, "bench_backend: %s: setup failed\n",
				peers[i].name);
			return 1;
		}
		sf[i] = smallfile_fuse(f, secs);
		rd[i] = seqread_fuse(f, secs, 0);
		dr[i] = seqread_fuse(f, secs, O_DIRECT);
		tf_fs_free(f);
	}

	printf("%-28s %12s %7s %12s %7s %12s %7s\n", "server",
	       "smallfile/s", "/nat", "seqread MB/s", "/nat", "O_DIRECT MB/s",
	       "/nat");
	printf("%-28s %12.0f %7s %12.0f %7s %12.0f %7s\n", "native syscalls",
	       sf_native, "1.00", rd_native, "1.00", dr_native, "1.00");
	for (i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
		printf("%-28s %12.0f %7.2f %12.0f %7.2f %12.0f %7.2f\n",
		       peers[i].name, sf[i], sf[i] / sf_native, rd[i],
		       rd[i] / rd_native, dr[i], dr[i] / dr_native);
	printf("(smallfile op = CREATE, WRITE 4 KiB, RELEASE, GETATTR, UNLINK,"
	       " FORGET; seqread = 1 MiB READs of a %d MiB file, cached"
	       " or O_DIRECT)\n",
	       FILE_MB);
	return 0;
}
