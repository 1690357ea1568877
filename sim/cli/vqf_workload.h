/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_workload.h - filesystem workloads (smallfile and fio-like jobs) over
 * a small table of filesystem operations, so that one workload runs
 * unchanged against the simulated guest (vqf_gcli), a host directory
 * (plain syscalls) or a real FUSE mount (plain syscalls on the mountpoint).
 *
 * What the workloads measure is the RFC's: smallfile's create / ls-l /
 * read / append / rename / delete-renamed phases, and fio's sequential and
 * random reads and writes of one large file per job.
 */
#ifndef VQF_WORKLOAD_H
#define VQF_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Called for each entry of a directory ("." and ".." may be among them);
 * only the type bits of @st->st_mode are reliable.  Nonzero stops the walk
 * and is returned by readdir.
 */
typedef int (*vqf_wl_dirent_fn)(void *arg, const char *name,
				const struct stat *st);

/* Counters of the transport underneath, sampled around each phase. */
struct vqf_wl_counters {
	uint64_t requests;	/* FUSE requests submitted (drv.submitted) */
	uint64_t lookups;	/* ...of which LOOKUP (cli.lookups) */
	uint64_t forgets;	/* FORGET + BATCH_FORGET sent on hiprio */
	uint64_t kicks;		/* driver kicks (drv.kicks) */
	uint64_t irqs;		/* driver wake-ups on the call fd (drv.irqs) */
	uint64_t interrupts;	/* device call signals (dev.interrupts) */
	uint64_t cli_copied;	/* caller buffer <-> guest page bytes */
	uint64_t drv_copied;	/* argbuf and header bytes */
};

/*
 * The operations a workload uses.  Paths are relative to the filesystem's
 * root; every call returns >= 0 or a negative errno and may be called
 * from several threads at once.
 */
struct vqf_wl_fs {
	const char *name;	/* for messages: "vqfuse", "native", ... */
	void *ctx;
	int (*open)(void *ctx, const char *path, int flags, mode_t mode);
	int (*close)(void *ctx, int fd);
	ssize_t (*pread)(void *ctx, int fd, void *buf, size_t n, off_t off);
	ssize_t (*pwrite)(void *ctx, int fd, const void *buf, size_t n,
			  off_t off);
	/* At the file position (O_APPEND honoured). */
	ssize_t (*write)(void *ctx, int fd, const void *buf, size_t n);
	int (*stat)(void *ctx, const char *path, struct stat *st);
	int (*unlink)(void *ctx, const char *path);
	int (*rename)(void *ctx, const char *from, const char *to);
	int (*mkdir)(void *ctx, const char *path, mode_t mode);
	int (*rmdir)(void *ctx, const char *path);
	int (*readdir)(void *ctx, const char *path, vqf_wl_dirent_fn fn,
		       void *arg);
	/*
	 * What ls -l uses; each may be NULL.  readdir_plus lists with the
	 * attributes (READDIRPLUS; NULL: readdir), lstat does not follow a
	 * final symlink (NULL: stat), getxattr is lgetxattr(2) (NULL: not
	 * asked).
	 */
	int (*readdir_plus)(void *ctx, const char *path, vqf_wl_dirent_fn fn,
			    void *arg);
	int (*lstat)(void *ctx, const char *path, struct stat *st);
	ssize_t (*getxattr)(void *ctx, const char *path, const char *name,
			    void *value, size_t size);
	/* May be NULL: no transport to count (native, kernel FUSE). */
	void (*counters)(void *ctx, struct vqf_wl_counters *out);
};

enum vqf_wl_kind {
	VQF_WL_SMALLFILE = 0,
	VQF_WL_SEQREAD,
	VQF_WL_RANDREAD,
	VQF_WL_SEQWRITE,
	VQF_WL_RANDWRITE,
	VQF_WL_NR_KINDS,
};

/* "smallfile", "seqread", ...; NULL when out of range. */
const char *vqf_wl_kind_name(enum vqf_wl_kind k);
/* Returns 0 and sets @out, or -EINVAL for an unknown name. */
int vqf_wl_kind_parse(const char *name, enum vqf_wl_kind *out);

struct vqf_wl_cfg {
	enum vqf_wl_kind kind;
	/* Threads, each with its own subdirectory or file (0: 1). */
	unsigned int jobs;
	unsigned int files;	/* smallfile: files per job (0: 1000) */
	/* Bytes per file (0: 4 KiB for smallfile, 64 MiB otherwise). */
	uint64_t size;
	/* I/O size (0: 4 KiB random, 128 KiB sequential, the file size up
	 * to 1 MiB for smallfile).
	 */
	size_t bs;
	unsigned int seed;	/* random offsets (0: a fixed one) */
	/*
	 * Called from the calling thread about every @progress_ms while a
	 * phase runs (0: 250 ms), never from the jobs.
	 */
	void (*progress)(void *arg, const char *phase, uint64_t done,
			 uint64_t total);
	void *progress_arg;
	unsigned int progress_ms;
	/*
	 * Called in each job's thread before it runs a phase (NULL: none),
	 * e.g. to send job @job's operations through a guest of its own.
	 * Setup and cleanup run in the calling thread.
	 */
	void (*job_init)(void *arg, unsigned int job);
	void *job_arg;
};

#define VQF_WL_MAX_PHASES	8
#define VQF_WL_ERR_LEN		320

struct vqf_wl_phase {
	const char *name;	/* "create", "ls-l", ..., "seqread" */
	uint64_t ops;		/* operations done (files, or I/Os) */
	uint64_t bytes;		/* file data moved */
	double secs;
	struct vqf_wl_counters delta;	/* when the fs has counters */
};

struct vqf_wl_result {
	unsigned int nphases;	/* phases completed */
	struct vqf_wl_phase phase[VQF_WL_MAX_PHASES];
	bool has_counters;
	double total_secs;	/* whole run, setup and cleanup included */
	/* First failure: 0 or a negative errno, and a message that names
	 * the phase, operation and path ("create: open(...): No space...").
	 */
	int err;
	char errmsg[VQF_WL_ERR_LEN];
};

/*
 * Runs @cfg against @fs: lists the root, creates a uniquely named
 * directory "vqf-wl.<pid>.<n>" there, runs the phases, removes the
 * directory and everything in it, and lists the root again.  Returns 0;
 * -EINVAL for a bad @cfg; or the first failure's negative errno (the
 * cleanup still runs), with @res->err and @res->errmsg set.  A root that
 * differs afterwards fails with -EEXIST (left behind) or -ENOENT
 * (something vanished).
 */
int vqf_wl_run(const struct vqf_wl_fs *fs, const struct vqf_wl_cfg *cfg,
	       struct vqf_wl_result *res);

/* Plain syscalls relative to the directory @root (kept open). */
int vqf_wl_posix_open(const char *root, struct vqf_wl_fs *fs);
void vqf_wl_posix_close(struct vqf_wl_fs *fs);

#endif /* VQF_WORKLOAD_H */
