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

/*
 * --uid-map/--gid-map (":namespace_id:host_id:count:", any separator
 * that opens and closes it, as virtiofsd reads them): the user namespace
 * of an unprivileged start; --translate-uid/--translate-gid
 * ("TYPE:a:b:count"): only identity "map"/"guest"/"host" entries are
 * served here, every other one is refused by name at parse time.
 */
struct vqf_vu_idmap {
	unsigned int inside, outside, count;
};

#define VQF_VU_IDMAPS	8

/*
 * --rlimit-nofile's floor: VQF_VU_FDS_BASE, and per guest a call eventfd
 * for every ring vqf_vhost_new() can serve, one per memory region,
 * VQF_VU_FDS_GUEST more and two per queue (fds_needed() in vu_compat.c).
 */
#define VQF_VU_FDS_BASE		16
#define VQF_VU_FDS_GUEST	8

/* The longest timeout virtiofsd gives for cache=always and metadata. */
#define VQF_VU_TIMEOUT_LONG	86400.0

struct vqf_vu_opts {
	const char *socket;	/* --socket, --socket-path */
	int fd;			/* --fd: a listening socket (-1: none) */
	const char *socket_group;	/* --socket-group */
	const char *shared;	/* --shared, --shared-dir, -o source= */
	const char *tag;
	unsigned int queues, threads, queue_size;
	unsigned int poll_us;	/* --poll-us: queue threads poll (0: off) */
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
	const char *sandbox, *seccomp;	/* as given; NULL: the default */
	bool trust_guest;	/* --trust-guest: serve an unsafe backend */
	bool readonly;		/* --readonly, -o readonly */
	const char *modcaps;	/* --modcaps, -o modcaps= ("+a:-b") */
	struct vqf_vu_idmap uid_map[VQF_VU_IDMAPS], gid_map[VQF_VU_IDMAPS];
	unsigned int n_uid_map, n_gid_map;
	unsigned long long rlimit_nofile;	/* 0: unchanged */
	bool rlimit_set;	/* given: else virtiofsd's default */
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

/* vhost-user's --help: our options, then virtiofsd's named. */
void vqf_vu_usage(FILE *f);

/*
 * vqfuse-virtiofsd's --help (and so its manual page): virtiofsd's options
 * one per line, the legacy -o items, then ours.
 */
void vqf_vu_virtiofsd_usage(FILE *f);

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

/*
 * Whether backend @fs may face a guest that is not trusted: what its
 * header declares (VQF_PT_HOSTILE_SAFE, VQF_NULLFS_HOSTILE_SAFE,
 * VQF_PTLL_HOSTILE_SAFE; docs/guard.md).  Known before the backend
 * exists (parsing refuses an unsafe one without --trust-guest), then
 * given to vqf_backend_new() as vqf_backend_config.hostile_safe.
 */
bool vqf_vu_backend_safe(enum vqf_sim_fs fs);

/* The capability names --modcaps may name; 0 or a usage exit code. */
int vqf_vu_check_modcaps(const char *list);

/*
 * The daemon's confinement (vu_sandbox.c, vu_landlock.c, vu_caps.c,
 * vu_seccomp.c), entered in this order once the listening sockets exist
 * and before any backend or thread is made.  Each fills its part of
 * struct vqf_vu_conf for the start line.
 */
enum vqf_vu_sandbox {
	VQF_VU_SANDBOX_NAMESPACE,
	VQF_VU_SANDBOX_CHROOT,
	VQF_VU_SANDBOX_NONE,
};

enum vqf_vu_seccomp {
	VQF_VU_SECCOMP_KILL,
	VQF_VU_SECCOMP_LOG,
	VQF_VU_SECCOMP_TRAP,
	VQF_VU_SECCOMP_NONE,
};

struct vqf_vu_conf {
	enum vqf_vu_sandbox sandbox;
	enum vqf_vu_seccomp seccomp;
	bool userns;		/* a user namespace of ours */
	char shared[4096];	/* the shared directory, canonical */
	int notify_fd;		/* to the unconfined parent, or -1 */
	int landlock_abi;	/* 0: not enforced */
	char landlock_why[64];	/* why not, when 0 */
	unsigned int nr_syscalls;	/* the allowlist's size */
	char caps[256];		/* kept, by name */
};

/* Which sandbox @o asks for, resolved against the caller's uid. */
enum vqf_vu_sandbox vqf_vu_sandbox_of(const struct vqf_vu_opts *o);
enum vqf_vu_seccomp vqf_vu_seccomp_of(const struct vqf_vu_opts *o);

/*
 * Why the namespace and chroot sandboxes cannot serve @shared, or NULL:
 * their root holds the shared directory at its own path beside a proc of
 * their own at /proc, so neither "/" nor /proc or beneath it fits.
 */
const char *vqf_vu_sandbox_unfit(const char *shared);

/*
 * Enters @c->sandbox.  With namespace and chroot the caller forks: this
 * returns 0 in the child, which goes on serving; the parent stays
 * outside, waits for it, forwards SIGTERM, SIGINT and SIGHUP, removes
 * socket @socks[i] (host paths, NULL-terminated) when the child has
 * accepted on it (vqf_vu_socket_gone()) or has ended, and exits with the
 * child's status without returning.  Returns 0, or a negative errno
 * after a message on @log.
 */
int vqf_vu_sandbox_enter(const struct vqf_vu_opts *o, struct vqf_vu_conf *c,
			 const char *const *socks, FILE *log);

/* Closes every descriptor from 3 up but @a and @b (-1: none). */
void vqf_vu_close_all_but(int a, int b);

/* Socket @i (@path outside a sandbox) is no longer listened on. */
void vqf_vu_socket_gone(const struct vqf_vu_conf *c, unsigned int i,
			const char *path);

/*
 * Landlock: file system access beneath @c->shared only (read-only with
 * --readonly); without a sandbox, also removing --socket's file.  Where
 * the kernel lacks it, records why and returns 0.
 */
int vqf_vu_landlock(const struct vqf_vu_opts *o, struct vqf_vu_conf *c);

/* Capabilities: virtiofsd's set, changed by --modcaps; also the bounds. */
int vqf_vu_caps(const struct vqf_vu_opts *o, struct vqf_vu_conf *c);

/* The syscall allowlist, all threads, NoNewPrivs; @c->nr_syscalls. */
int vqf_vu_seccomp(struct vqf_vu_conf *c);

/* One line naming the confinement in force. */
void vqf_vu_conf_describe(const struct vqf_vu_conf *c, char *buf,
			  size_t size);

#endif /* VQF_VU_H */
