// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * wl_sim.c - workload operations over vqf_gcli (see vqf_wl_sim.h).
 */
#include "vqf_wl_sim.h"

#include <string.h>

/* The guest the calling thread works through (vqf_wl_sim_job_init()). */
static __thread unsigned int wl_guest;

static struct vqf_gcli *cli(void *ctx)
{
	struct vqf_gcli *c = vqf_sim_cli_n(ctx, wl_guest);

	return c ? c : vqf_sim_cli(ctx);
}

void vqf_wl_sim_job_init(void *sim, unsigned int job)
{
	wl_guest = job % vqf_sim_guests(sim);
}

static int s_open(void *ctx, const char *path, int flags, mode_t mode)
{
	return vqf_gcli_open(cli(ctx), path, flags, mode);
}

static int s_close(void *ctx, int fd)
{
	return vqf_gcli_close(cli(ctx), fd);
}

static ssize_t s_pread(void *ctx, int fd, void *buf, size_t n, off_t off)
{
	return vqf_gcli_pread(cli(ctx), fd, buf, n, off);
}

static ssize_t s_pwrite(void *ctx, int fd, const void *buf, size_t n,
			off_t off)
{
	return vqf_gcli_pwrite(cli(ctx), fd, buf, n, off);
}

static ssize_t s_write(void *ctx, int fd, const void *buf, size_t n)
{
	return vqf_gcli_write(cli(ctx), fd, buf, n);
}

static int s_stat(void *ctx, const char *path, struct stat *st)
{
	return vqf_gcli_stat(cli(ctx), path, st);
}

static int s_unlink(void *ctx, const char *path)
{
	return vqf_gcli_unlink(cli(ctx), path);
}

static int s_rename(void *ctx, const char *from, const char *to)
{
	return vqf_gcli_rename(cli(ctx), from, to, 0);
}

static int s_mkdir(void *ctx, const char *path, mode_t mode)
{
	return vqf_gcli_mkdir(cli(ctx), path, mode);
}

static int s_rmdir(void *ctx, const char *path)
{
	return vqf_gcli_rmdir(cli(ctx), path);
}

static int s_readdir(void *ctx, const char *path, vqf_wl_dirent_fn fn,
		     void *arg)
{
	return vqf_gcli_readdir(cli(ctx), path, false, fn, arg);
}

static int s_readdir_plus(void *ctx, const char *path, vqf_wl_dirent_fn fn,
			  void *arg)
{
	return vqf_gcli_readdir(cli(ctx), path, true, fn, arg);
}

static int s_lstat(void *ctx, const char *path, struct stat *st)
{
	return vqf_gcli_lstat(cli(ctx), path, st);
}

static ssize_t s_getxattr(void *ctx, const char *path, const char *name,
			  void *value, size_t size)
{
	return vqf_gcli_lgetxattr(cli(ctx), path, name, value, size);
}

static void s_counters(void *ctx, struct vqf_wl_counters *out)
{
	struct vqf_sim_stats st;
	unsigned int i;

	/* All guests together: the jobs are spread over them. */
	memset(out, 0, sizeof(*out));
	for (i = 0; i < vqf_sim_guests(ctx); i++) {
		vqf_sim_get_stats_n(ctx, i, &st);
		out->requests += st.drv.submitted;
		out->lookups += st.cli.lookups;
		out->forgets += st.drv.forgets + st.drv.batch_forgets;
		out->kicks += st.drv.kicks;
		out->irqs += st.drv.irqs;
		out->interrupts += st.dev.interrupts;
		out->cli_copied += st.cli.bytes_copied;
		out->drv_copied += st.drv.bytes_copied;
	}
}

void vqf_wl_sim_fs(struct vqf_sim *s, const char *name, struct vqf_wl_fs *fs)
{
	*fs = (struct vqf_wl_fs){
		.name = name,
		.ctx = s,
		.open = s_open,
		.close = s_close,
		.pread = s_pread,
		.pwrite = s_pwrite,
		.write = s_write,
		.stat = s_stat,
		.unlink = s_unlink,
		.rename = s_rename,
		.mkdir = s_mkdir,
		.rmdir = s_rmdir,
		.readdir = s_readdir,
		.readdir_plus = s_readdir_plus,
		.lstat = s_lstat,
		.getxattr = s_getxattr,
		.counters = s_counters,
	};
}

const char *vqf_wl_sim_fs_name(enum vqf_sim_fs fs)
{
	return fs == VQF_SIM_FS_PTLL ? "passthrough_ll" :
	       fs == VQF_SIM_FS_NULL ? "null" : "vqfuse";
}
