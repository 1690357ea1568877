/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_vu.h - `vqfuse-sim vhost-user`'s options and serving policy, shared
 * by vhost_user.c (the daemon), vu_compat.c (its command line: ours and
 * virtiofsd's, Rust and legacy C forms) and vu_policy.c (what the options
 * make the filesystem do).  See docs/virtiofsd-compat.md.
 */
#ifndef VQF_VU_H
#define VQF_VU_H

#include "vqf_sim.h"
#include "vqf_vu_shm.h"

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* virtiofsd's --cache; each maps onto a guest cache mode of ours. */
enum vqf_vu_cache {
	VQF_VU_CACHE_NEVER,	/* our none: timeouts 0, direct I/O */
	VQF_VU_CACHE_METADATA,	/* long timeouts, file data direct */
	VQF_VU_CACHE_AUTO,	/* our auto: 1 s timeouts (the default) */
	VQF_VU_CACHE_ALWAYS,	/* our always: long timeouts, keep_cache */
};

/* What the daemon logs; each level includes the ones before it. */
enum vqf_vu_log {
	VQF_VU_LOG_OFF,
	VQF_VU_LOG_ERROR,	/* failures */
	VQF_VU_LOG_WARN,	/* options accepted with no effect here */
	VQF_VU_LOG_INFO,	/* start, stop, counters (the default) */
	VQF_VU_LOG_DEBUG,	/* every vhost-user message (--verbose) */
};

/* The longest timeout virtiofsd gives for cache=always and metadata. */
#define VQF_VU_TIMEOUT_LONG	86400.0

struct vqf_vu_opts {
	const char *socket;	/* --socket, --socket-path */
	int fd;			/* --fd: a listening socket (-1: none) */
	const char *socket_group;	/* --socket-group */
	const char *shared;	/* --shared, --shared-dir, -o source= */
	const char *tag;
	unsigned int queues, threads, queue_size;
	enum vqf_sim_fs fs;
	enum vqf_vu_cache cache;
	bool cache_set;
	double timeout;		/* --timeout, -o timeout=; 0: the cache's */
	bool xattr, readdirplus, writeback;
	bool posix_locks, flock;	/* --host-locks sets both */
	bool direct_io;		/* --allow-direct-io */
	bool announce_submounts;
	enum vqf_vu_log log_level;
	bool syslog;
	bool print_caps, version;
	const char *sandbox, *seccomp;	/* accepted values, for the log */
	unsigned long long rlimit_nofile;	/* 0: unchanged */
	struct vqf_vu_shm shm;	/* --dax-window, --version-table */
	char *owned[8];		/* -o lists, unescaped; see release */
	unsigned int nowned;
};

/*
 * Parses vhost-user's arguments (vu_compat.c).  Returns 0; -1 for --help;
 * or a usage status (exit 2) after a message naming the offending option,
 * which includes every virtiofsd option this daemon does not implement.
 * With --print-capabilities or --version nothing else is checked.
 */
int vqf_vu_parse(int argc, char **argv, struct vqf_vu_opts *o);

/* Frees what parsing allocated (the strings of "-o" lists). */
void vqf_vu_opts_release(struct vqf_vu_opts *o);

/* The vhost-user spec's backend capabilities JSON for "fs". */
void vqf_vu_print_capabilities(FILE *f);

/* The options' names in --help: ours, then virtiofsd's. */
void vqf_vu_usage(FILE *f);

/* What the filesystem's ops do for the guest (vu_policy.c). */
struct vqf_vu_policy {
	double timeout;		/* entry and attribute validity, s */
	bool direct_io;		/* FOPEN_DIRECT_IO on files */
	bool keep_cache;	/* FOPEN_KEEP_CACHE on files */
	bool readdirplus;
	bool xattr;		/* off: xattr ops answer ENOSYS */
	bool writeback;		/* FUSE_CAP_WRITEBACK_CACHE when offered */
	bool posix_locks, flock;	/* off: the guest keeps them */
	bool allow_direct_io;	/* off: O_DIRECT dropped from opens */
};

/* @o's policy, as virtiofsd derives it from the same options. */
void vqf_vu_policy_of(const struct vqf_vu_opts *o, struct vqf_vu_policy *p);

/*
 * The backend's @ops (@op_size bytes) wrapped to serve @p: returns ops
 * to give vqf_backend_new(), *@op_size updated.  One policy per process
 * (the wrappers have no context of their own); @ops and @p must outlive
 * the backend.
 */
const struct fuse_lowlevel_ops *vqf_vu_policy_ops(
	const struct vqf_vu_policy *p, const struct fuse_lowlevel_ops *ops,
	size_t *op_size);

/* The policy as one line for the log ("cache auto: timeout 1 s, ..."). */
void vqf_vu_policy_describe(const struct vqf_vu_opts *o,
			    const struct vqf_vu_policy *p, char *buf,
			    size_t size);

#endif /* VQF_VU_H */
