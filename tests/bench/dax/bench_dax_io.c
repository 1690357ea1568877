// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * bench_dax_io.c - issue 6's benchmark: seqread, randread, seqwrite and
 * randwrite with 4 KiB I/O on one file, on four stacks in one run:
 *   native   plain pread/pwrite on the host file;
 *   fuse     the simulated guest, FUSE_READ/FUSE_WRITE (inline kicks);
 *   dax      the guest through a DAX window as large as the file;
 *   dax-rc   the guest through a window a quarter of the file: reclaim.
 * Prints MB/s, FUSE requests per MB and ranges reclaimed per stack, and
 * the ratios dax/fuse and native/dax.  Meant for perf stat; no asserts.
 */
#include "vqf_wl_sim.h"
#include "vqf_workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ST_NATIVE, ST_FUSE, ST_DAX, ST_DAXRC, ST_NR };
static const char *const st_name[ST_NR] = { "native", "fuse", "dax",
					     "dax-rc" };
static const enum vqf_wl_kind kinds[] = { VQF_WL_SEQREAD, VQF_WL_RANDREAD,
					  VQF_WL_SEQWRITE, VQF_WL_RANDWRITE };
#define NK	(sizeof(kinds) / sizeof(kinds[0]))

struct cell {
	double mbs, req_per_mb;
	unsigned long long reclaimed;
};

static unsigned long long pow2_at_least(unsigned long long v)
{
	unsigned long long p = 2ull << 20;

	while (p < v)
		p <<= 1;
	return p;
}

static int run(const char *dir, int st, enum vqf_wl_kind kind, u64 size,
	       struct cell *c)
{
	struct vqf_wl_cfg wl = { .kind = kind, .size = size, .bs = 4096 };
	struct vqf_sim_cfg sc = { 0 };
	struct vqf_wl_result res;
	struct vqf_dax_stats ds = { 0 };
	struct vqf_sim *s = NULL;
	struct vqf_wl_fs fs;
	int ret;

	if (st == ST_NATIVE) {
		ret = vqf_wl_posix_open(dir, &fs);
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
		ret = vqf_sim_new(&sc, &s);
		if (!ret)
			vqf_wl_sim_fs(s, st_name[st], &fs);
	}
	if (ret) {
		fprintf(stderr, "bench-dax: %s: %s\n", st_name[st],
			strerror(-ret));
		return ret;
	}
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
	if (s) {
		vqf_gcli_get_dax_stats(vqf_sim_cli(s), &ds);
		c->reclaimed = ds.reclaimed_bg + ds.reclaimed_direct;
		vqf_sim_free(s);
	} else {
		vqf_wl_posix_close(&fs);
	}
	return ret;
}

int main(int argc, char **argv)
{
	unsigned long long size = 256ull << 20;
	struct cell t[NK][ST_NR];
	char dir[] = "/tmp/vqf-bench-dax-XXXXXX";
	unsigned int k;
	int st, opt;

	while ((opt = getopt(argc, argv, "s:h")) != -1) {
		if (opt == 's' && strtoull(optarg, NULL, 0) >= (1u << 20)) {
			size = strtoull(optarg, NULL, 0);
		} else {
			fprintf(stderr, "usage: bench-dax [-s FILE_BYTES] "
				"(default 256 MiB, at least 1 MiB)\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!mkdtemp(dir)) {
		perror("bench-dax: mkdtemp");
		return 1;
	}
	memset(t, 0, sizeof(t));
	for (k = 0; k < NK; k++)
		for (st = 0; st < ST_NR; st++)
			if (run(dir, st, kinds[k], size, &t[k][st]))
				goto out;
	printf("4 KiB I/O on a %llu MiB file; MB/s (FUSE requests per MB, "
	       "ranges reclaimed)\n", size >> 20);
	printf("%-10s", "workload");
	for (st = 0; st < ST_NR; st++)
		printf(" %24s", st_name[st]);
	printf(" %9s %10s\n", "dax/fuse", "native/dax");
	for (k = 0; k < NK; k++) {
		printf("%-10s", vqf_wl_kind_name(kinds[k]));
		for (st = 0; st < ST_NR; st++) {
			char cell[64];

			snprintf(cell, sizeof(cell), "%.0f (%.1f, %llu)",
				 t[k][st].mbs, t[k][st].req_per_mb,
				 t[k][st].reclaimed);
			printf(" %24s", cell);
		}
		printf(" %9.2f %10.2f\n",
		       t[k][ST_FUSE].mbs ? t[k][ST_DAX].mbs /
		       t[k][ST_FUSE].mbs : 0,
		       t[k][ST_DAX].mbs ? t[k][ST_NATIVE].mbs /
		       t[k][ST_DAX].mbs : 0);
	}
out:
	rmdir(dir);
	return 0;
}
