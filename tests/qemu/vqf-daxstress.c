// SPDX-License-Identifier: GPL-2.0
/*
 * DAX reclaim stress: several writers and mmap users on files several
 * times the DAX window, every byte checked.
 *
 *   vqf-daxstress run DIR NPROC FILE_MIB OPS SEED
 *	(guest) creates DIR/s0..s<NPROC-1> of FILE_MIB each, then NPROC
 *	processes do OPS random 4 KiB operations each on their own file:
 *	even ones pwrite/pread, odd ones store/load through a MAP_SHARED
 *	mapping of the whole file (every fourth op of each goes the other
 *	way, so both paths hit every file).  Every load is checked against
 *	what that block must hold; then the parent reads every file back
 *	with pread and checks every byte, and leaves DIR/s<i>.map (one
 *	generation byte per block) for the host.
 *   vqf-daxstress verify DIR NPROC FILE_MIB
 *	(host or guest) checks every byte of every file against its map.
 *
 * Block b of file i at generation g holds the pattern of seed
 * (i << 16 | g) at b's offset, so any block is checkable on its own.
 * With VQF_BENCH_MARK set (the guest's trace_marker), "vqf-phase fill",
 * "stress", "verify" and "end" mark the phases, so that the FUSE requests
 * of each can be counted: the stress and verify phases touch only bytes
 * inside the files, which with dax=always go through the window.
 *
 * Work is bounded by OPS, never by time.  Exit 0 when every byte held,
 * 1 on a mismatch, 2 on an error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pattern.h"

#define BLK		4096u
#define MAX_PROC	16

static uint32_t seed_of(unsigned int file, uint8_t gen)
{
	return (uint32_t)file << 16 | gen;
}

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: fixed seed, same sequence on every run */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static void mark(const char *phase)
{
	const char *path = getenv("VQF_BENCH_MARK");
	char line[64];
	int fd, len;

	if (!path)
		return;
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return;
	len = snprintf(line, sizeof(line), "vqf-phase %s\n", phase);
	if (write(fd, line, len) != len)
		perror("vqf-daxstress: mark");
	close(fd);
}

static void name(char *buf, size_t n, const char *dir, unsigned int i,
		 const char *ext)
{
	snprintf(buf, n, "%s/s%u%s", dir, i, ext);
}

/* Compare block @b of file @i with generation @gen; 0 if it holds. */
static int check_block(unsigned int i, uint64_t b, uint8_t gen,
		       const void *buf)
{
	size_t bad = vqf_pat_check(seed_of(i, gen), b * BLK, buf, BLK);

	if (bad == BLK)
		return 0;
	fprintf(stderr, "vqf-daxstress: s%u byte %" PRIu64
		" differs (block %" PRIu64 " generation %u)\n", i,
		b * BLK + bad, b, gen);
	return 1;
}

static int fill(const char *dir, unsigned int i, uint64_t size)
{
	static char buf[1 << 20];
	char path[4096];
	uint64_t off;
	int fd;

	name(path, sizeof(path), dir, i, "");
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		return 2;
	for (off = 0; off < size; off += sizeof(buf)) {
		vqf_pat_fill(seed_of(i, 0), off, buf, sizeof(buf));
		if (pwrite(fd, buf, sizeof(buf), off) != sizeof(buf))
			return 2;
	}
	return fsync(fd) || close(fd) ? 2 : 0;
}

/* One process's OPS operations on file @i; @gens is shared with the parent. */
static int stress(const char *dir, unsigned int i, uint64_t size, long ops,
		  uint64_t seed, uint8_t *gens)
{
	uint64_t nblk = size / BLK, s = seed * 1000003 + i + 1, b, r;
	static char buf[BLK];
	char path[4096];
	bool use_map;
	uint8_t *map;
	int fd, bad = 0;
	long n;

	name(path, sizeof(path), dir, i, "");
	fd = open(path, O_RDWR);
	if (fd < 0)
		return 2;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return 2;
	for (n = 0; n < ops && !bad; n++) {
		r = rnd(&s);
		b = (r >> 8) % nblk;
		use_map = (i & 1) != ((r & 3) == 0);
		if (r & 4) {
			gens[b]++;
			vqf_pat_fill(seed_of(i, gens[b]), b * BLK, buf, BLK);
			if (use_map)
				memcpy(map + b * BLK, buf, BLK);
			else if (pwrite(fd, buf, BLK, b * BLK) != BLK)
				return 2;
		} else if (use_map) {
			bad = check_block(i, b, gens[b], map + b * BLK);
		} else {
			if (pread(fd, buf, BLK, b * BLK) != BLK)
				return 2;
			bad = check_block(i, b, gens[b], buf);
		}
	}
	if (msync(map, size, MS_SYNC) || munmap(map, size) || close(fd))
		return 2;
	return bad;
}

static int verify_file(const char *dir, unsigned int i, uint64_t size,
		       const uint8_t *gens)
{
	static char buf[1 << 20];
	char path[4096];
	uint64_t off, b;
	int fd, bad = 0;

	name(path, sizeof(path), dir, i, "");
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 2;
	for (off = 0; off < size && !bad; off += sizeof(buf)) {
		if (pread(fd, buf, sizeof(buf), off) != sizeof(buf))
			return 2;
		for (b = 0; b < sizeof(buf) / BLK && !bad; b++)
			bad = check_block(i, off / BLK + b,
					  gens[off / BLK + b], buf + b * BLK);
	}
	close(fd);
	return bad;
}

static int write_map(const char *dir, unsigned int i, const uint8_t *gens,
		     uint64_t nblk)
{
	char path[4096];
	int fd;

	name(path, sizeof(path), dir, i, ".map");
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0 || write(fd, gens, nblk) != (ssize_t)nblk)
		return 2;
	return close(fd) ? 2 : 0;
}

/* Fork one child per file running @what, and collect the worst status. */
static int each(unsigned int nproc, int (*what)(unsigned int, void *),
		void *arg)
{
	int st, worst = 0;
	unsigned int i;
	pid_t pid;

	for (i = 0; i < nproc; i++) {
		pid = fork();
		if (pid < 0)
			return 2;
		if (!pid)
			_exit(what(i, arg));
	}
	while (wait(&st) > 0) {
		st = WIFEXITED(st) ? WEXITSTATUS(st) : 2;
		if (st > worst)
			worst = st;
	}
	return worst;
}

struct run {
	const char *dir;
	uint64_t size;
	long ops;
	uint64_t seed;
	uint8_t *gens;		/* nproc * nblk, MAP_SHARED */
};

static int do_fill(unsigned int i, void *arg)
{
	struct run *r = arg;

	return fill(r->dir, i, r->size);
}

static int do_stress(unsigned int i, void *arg)
{
	struct run *r = arg;

	return stress(r->dir, i, r->size, r->ops, r->seed,
		      r->gens + i * (r->size / BLK));
}

static int run(const char *dir, unsigned int nproc, uint64_t size, long ops,
	       uint64_t seed)
{
	uint64_t nblk = size / BLK;
	struct run r = { dir, size, ops, seed, NULL };
	unsigned int i;
	int st, worst;

	r.gens = mmap(NULL, nproc * nblk, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r.gens == MAP_FAILED)
		return 2;
	mark("fill");
	worst = each(nproc, do_fill, &r);
	if (worst)
		goto out;
	mark("stress");
	worst = each(nproc, do_stress, &r);
	if (worst)
		goto out;
	mark("verify");
	for (i = 0; i < nproc && !worst; i++)
		worst = verify_file(dir, i, size, r.gens + i * nblk);
out:
	mark("end");
	for (i = 0; i < nproc; i++) {
		st = write_map(dir, i, r.gens + i * nblk, nblk);
		if (st > worst)
			worst = st;
	}
	printf("# vqf-daxstress: %u processes x %ld ops on %" PRIu64
	       " MiB files: %s\n", nproc, ops, size >> 20,
	       worst ? "FAILED" : "every byte held");
	return worst;
}

static int verify(const char *dir, unsigned int nproc, uint64_t size)
{
	uint64_t nblk = size / BLK;
	static uint8_t gens[1 << 20];
	char path[4096];
	unsigned int i;
	int fd, bad = 0;

	if (nblk > sizeof(gens))
		return 2;
	for (i = 0; i < nproc && !bad; i++) {
		name(path, sizeof(path), dir, i, ".map");
		fd = open(path, O_RDONLY);
		if (fd < 0 || read(fd, gens, nblk) != (ssize_t)nblk)
			return 2;
		close(fd);
		bad = verify_file(dir, i, size, gens);
	}
	printf("# vqf-daxstress verify: %u files of %" PRIu64 " MiB: %s\n",
	       nproc, size >> 20, bad ? "MISMATCH" : "every byte as expected");
	return bad;
}

int main(int argc, char **argv)
{
	unsigned int nproc;
	uint64_t size;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 5)
		goto usage;
	nproc = atoi(argv[3]);
	size = strtoull(argv[4], NULL, 0) << 20;
	if (!nproc || nproc > MAX_PROC || !size)
		goto usage;
	if (argc == 7 && !strcmp(argv[1], "run"))
		return run(argv[2], nproc, size, atol(argv[5]),
			   strtoull(argv[6], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "verify"))
		return verify(argv[2], nproc, size);
usage:
	fprintf(stderr, "usage: vqf-daxstress run DIR NPROC FILE_MIB OPS SEED"
		" | verify DIR NPROC FILE_MIB  (NPROC 1..%d)\n", MAX_PROC);
	return 2;
}
