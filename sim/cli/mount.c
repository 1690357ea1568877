// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * mount.c - vqfuse-sim mount: the simulated guest's client exposed as a
 * host FUSE mount, so that unmodified programs (cp, tar, fio...) run over
 * the whole simulated stack:
 *
 *   host kernel (/dev/fuse) -> this bridge (libfuse3, high-level, paths)
 *   -> vqf_gcli -> vqf_gdrv -> virtqueues in guest RAM -> vqf_fsdev
 *   -> vqf_backend -> passthrough -> the shared directory
 *
 * The host kernel's caches are switched off (zero entry, attribute and
 * negative timeouts, direct_io on every open, no kernel_cache or
 * auto_cache): every host call then reaches vqf_gcli, and what is cached
 * is what the simulated guest's cache mode decides, which is what the
 * counters printed at exit measure.
 */
#define _GNU_SOURCE
#include "vqf_cli.h"
#include "vqf_wl_sim.h"

#include <fuse.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * How long a stop waits by default for the host kernel to release what is
 * still open (--stop-wait): the kernel sends RELEASE and RELEASEDIR after
 * close() returns, in the background, so a signal that follows a close at
 * once can come before them.  A second signal stops at once.
 */
#define STOP_WAIT_SEC	5

/* Host operations the bridge serves, counted for the exit report. */
enum hop {
	H_GETATTR, H_READLINK, H_MKNOD, H_MKDIR, H_UNLINK, H_RMDIR,
	H_SYMLINK, H_RENAME, H_LINK, H_CHMOD, H_CHOWN, H_TRUNCATE, H_OPEN,
	H_READ, H_WRITE, H_STATFS, H_FLUSH, H_RELEASE, H_FSYNC, H_SETXATTR,
	H_GETXATTR, H_LISTXATTR, H_REMOVEXATTR, H_READDIR, H_CREATE,
	H_UTIMENS, H_FALLOCATE, H_LSEEK, H_COPY_FILE_RANGE, H_FLOCK, H_LOCK,
	H_NR,
};

static const char *const hop_name[H_NR] = {
	"getattr", "readlink", "mknod", "mkdir", "unlink", "rmdir",
	"symlink", "rename", "link", "chmod", "chown", "truncate", "open",
	"read", "write", "statfs", "flush", "release", "fsync", "setxattr",
	"getxattr", "listxattr", "removexattr", "readdir", "create",
	"utimens", "fallocate", "lseek", "copy_file_range", "flock", "lock",
};

/* FUSE opcode names for the per-opcode request counts. */
static const char *const op_name[VQF_GDRV_OPCODES] = {
	[FUSE_LOOKUP] = "LOOKUP", [FUSE_FORGET] = "FORGET",
	[FUSE_GETATTR] = "GETATTR", [FUSE_SETATTR] = "SETATTR",
	[FUSE_READLINK] = "READLINK", [FUSE_SYMLINK] = "SYMLINK",
	[FUSE_MKNOD] = "MKNOD", [FUSE_MKDIR] = "MKDIR",
	[FUSE_UNLINK] = "UNLINK", [FUSE_RMDIR] = "RMDIR",
	[FUSE_RENAME] = "RENAME", [FUSE_LINK] = "LINK", [FUSE_OPEN] = "OPEN",
	[FUSE_READ] = "READ", [FUSE_WRITE] = "WRITE",
	[FUSE_STATFS] = "STATFS", [FUSE_RELEASE] = "RELEASE",
	[FUSE_FSYNC] = "FSYNC", [FUSE_SETXATTR] = "SETXATTR",
	[FUSE_GETXATTR] = "GETXATTR", [FUSE_LISTXATTR] = "LISTXATTR",
	[FUSE_REMOVEXATTR] = "REMOVEXATTR", [FUSE_FLUSH] = "FLUSH",
	[FUSE_INIT] = "INIT", [FUSE_OPENDIR] = "OPENDIR",
	[FUSE_READDIR] = "READDIR", [FUSE_RELEASEDIR] = "RELEASEDIR",
	[FUSE_FSYNCDIR] = "FSYNCDIR", [FUSE_GETLK] = "GETLK",
	[FUSE_SETLK] = "SETLK", [FUSE_SETLKW] = "SETLKW",
	[FUSE_ACCESS] = "ACCESS", [FUSE_CREATE] = "CREATE",
	[FUSE_INTERRUPT] = "INTERRUPT", [FUSE_BMAP] = "BMAP",
	[FUSE_DESTROY] = "DESTROY", [FUSE_IOCTL] = "IOCTL",
	[FUSE_POLL] = "POLL", [FUSE_NOTIFY_REPLY] = "NOTIFY_REPLY",
	[FUSE_BATCH_FORGET] = "BATCH_FORGET", [FUSE_FALLOCATE] = "FALLOCATE",
	[FUSE_READDIRPLUS] = "READDIRPLUS", [FUSE_RENAME2] = "RENAME2",
	[FUSE_LSEEK] = "LSEEK", [FUSE_COPY_FILE_RANGE] = "COPY_FILE_RANGE",
	[FUSE_SETUPMAPPING] = "SETUPMAPPING",
	[FUSE_REMOVEMAPPING] = "REMOVEMAPPING", [FUSE_SYNCFS] = "SYNCFS",
	[FUSE_TMPFILE] = "TMPFILE",
};

struct mount_opts {
	const char *mnt, *shared, *trace;
	const char *connect;		/* --connect SOCKET */
	bool fs_set, threads_set;
	enum vqf_sim_fs fs;
	enum vqf_gcli_cache cache;
	bool writeback, inline_kick, debug, dax, dax_always;
	bool private_mount, nodev;
	unsigned long long dax_window;	/* 0: 64 MiB */
	double timeout;			/* seconds, cache=auto; 0: default */
	bool timeout_set;
	unsigned int queues, queue_size, threads, max_files, poll_us;
	unsigned int stop_wait;		/* seconds */
	unsigned long long ram;
};

struct bridge {
	struct vqf_sim *sim;
	struct vqf_trace *trace;
	struct vqf_gcli *cli;
	struct vqf_gdrv *drv;
	u32 uid, gid, pid;		/* credentials of raw requests */
	/* Descriptors the kernel holds, closed at exit if it did not. */
	pthread_mutex_t lock;
	bool *open;
	unsigned int max_files;
	u64 hops[H_NR];
	/* Files and directories the host kernel has open (atomic). */
	int handles;
};

/*
 * Counts a host operation and makes its caller the one the client's
 * requests name, as a guest kernel fills each request's header from
 * current_cred(): the server creates as that user.
 */
static struct bridge *count(enum hop h)
{
	const struct fuse_context *ctx = fuse_get_context();
	struct bridge *b = ctx->private_data;
	struct vqf_gcli_creds cr = { .uid = ctx->uid, .gid = ctx->gid,
				     .pid = (u32)ctx->pid };

	vqf_gcli_set_creds(b->cli, &cr);
	__atomic_fetch_add(&b->hops[h], 1, __ATOMIC_RELAXED);
	return b;
}

static void track(struct bridge *b, int fd, bool open)
{
	if (fd < 0 || (unsigned int)fd >= b->max_files)
		return;
	pthread_mutex_lock(&b->lock);
	b->open[fd] = open;
	pthread_mutex_unlock(&b->lock);
}

/*
 * The high-level API may give a NULL path with a file handle (a file
 * unlinked while open that it could not rename away): what vqf_gcli can
 * only do by path then fails with -ENOENT, as libfuse documents for
 * hard_remove.
 */

/* ---- the operations ----------------------------------------------------- */

static void *m_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* The host kernel caches nothing: see the top of this file. */
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->auto_cache = 0;
	/* st_ino as the shared directory has it, so that tar and cp see
	 * hard links.
	 */
	cfg->use_ino = 1;
	cfg->readdir_ino = 1;
	/* hard_remove stays off: a file unlinked while open is renamed to
	 * .fuse_hiddenN until its last close (as NFS's silly rename), because
	 * the host kernel's fstat(2) comes without a file handle and the
	 * high-level API can only answer it by path.
	 */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/*
	 * A server without remote locks (virtiofsd without -o posix_lock or
	 * -o flock): the guest kernel would keep such locks local, so the
	 * host kernel keeps them here - the mount is the guest.
	 */
	{
		struct bridge *b = fuse_get_context()->private_data;
		u32 fl = vqf_gdrv_init_out(b->drv)->flags;

		if (!(fl & FUSE_POSIX_LOCKS))
			conn->want &= ~FUSE_CAP_POSIX_LOCKS;
		if (!(fl & FUSE_FLOCK_LOCKS))
			conn->want &= ~FUSE_CAP_FLOCK_LOCKS;
	}
	return fuse_get_context()->private_data;
}

static int m_getattr(const char *path, struct stat *st,
		     struct fuse_file_info *fi)
{
	struct bridge *b = count(H_GETATTR);

	if (fi)
		return vqf_gcli_fstat(b->cli, (int)fi->fh, st);
	return vqf_gcli_lstat(b->cli, path, st);
}

static int m_readlink(const char *path, char *buf, size_t size)
{
	struct bridge *b = count(H_READLINK);
	ssize_t n;

	if (!size)
		return -EINVAL;
	n = vqf_gcli_readlink(b->cli, path, buf, size - 1);
	if (n < 0)
		return (int)n;
	buf[n] = 0;
	return 0;
}

static int m_mknod(const char *path, mode_t mode, dev_t rdev)
{
	return vqf_gcli_mknod(count(H_MKNOD)->cli, path, mode, rdev);
}

static int m_mkdir(const char *path, mode_t mode)
{
	return vqf_gcli_mkdir(count(H_MKDIR)->cli, path, mode);
}

static int m_unlink(const char *path)
{
	return vqf_gcli_unlink(count(H_UNLINK)->cli, path);
}

static int m_rmdir(const char *path)
{
	return vqf_gcli_rmdir(count(H_RMDIR)->cli, path);
}

static int m_symlink(const char *target, const char *path)
{
	return vqf_gcli_symlink(count(H_SYMLINK)->cli, target, path);
}

static int m_rename(const char *from, const char *to, unsigned int flags)
{
	struct bridge *b = count(H_RENAME);

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	return vqf_gcli_rename(b->cli, from, to, flags);
}

static int m_link(const char *from, const char *to)
{
	return vqf_gcli_link(count(H_LINK)->cli, from, to);
}

static int m_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct bridge *b = count(H_CHMOD);

	if (!path)
		return -ENOENT;
	return vqf_gcli_chmod(b->cli, path, mode);
}

/*
 * The host kernel resolved the path itself: @path names the node to
 * change, a symlink included (lchown, utimensat with AT_SYMLINK_NOFOLLOW,
 * l*xattr, which tar uses on the symlinks it extracts).  Hence the
 * vqf_gcli l-variants, which never follow a final symlink.
 */
static int m_chown(const char *path, uid_t uid, gid_t gid,
		   struct fuse_file_info *fi)
{
	struct bridge *b = count(H_CHOWN);

	if (!path)
		return -ENOENT;
	return vqf_gcli_lchown(b->cli, path, uid, gid);
}

static int m_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	struct bridge *b = count(H_TRUNCATE);

	if (fi)
		return vqf_gcli_ftruncate(b->cli, (int)fi->fh, size);
	if (!path)
		return -ENOENT;
	return vqf_gcli_truncate(b->cli, path, size);
}

static int opened(struct bridge *b, int fd, struct fuse_file_info *fi)
{
	if (fd < 0)
		return fd;
	track(b, fd, true);
	__atomic_fetch_add(&b->handles, 1, __ATOMIC_RELAXED);
	fi->fh = (u64)fd;
	/* Every read and write reaches vqf_gcli: no host page cache. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	return 0;
}

static int m_open(const char *path, struct fuse_file_info *fi)
{
	struct bridge *b = count(H_OPEN);

	if (!path)
		return -ENOENT;
	return opened(b, vqf_gcli_open(b->cli, path, fi->flags, 0), fi);
}

static int m_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct bridge *b = count(H_CREATE);

	if (!path)
		return -ENOENT;
	return opened(b, vqf_gcli_open(b->cli, path, fi->flags | O_CREAT,
				       mode), fi);
}

static int m_read(const char *path, char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	return (int)vqf_gcli_pread(count(H_READ)->cli, (int)fi->fh, buf,
				   size, off);
}

static int m_write(const char *path, const char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	return (int)vqf_gcli_pwrite(count(H_WRITE)->cli, (int)fi->fh, buf,
				    size, off);
}

static int m_statfs(const char *path, struct statvfs *sv)
{
	return vqf_gcli_statfs(count(H_STATFS)->cli, path ? path : "/", sv);
}

/*
 * Every close(2) of the host file: dirty pages are written back and FLUSH
 * goes to the device with the closer's lock owner, so close() reports a
 * failed writeback and drops that owner's POSIX locks, as on Linux.
 */
static int m_flush(const char *path, struct fuse_file_info *fi)
{
	struct bridge *b = count(H_FLUSH);

	return vqf_gcli_flush(b->cli, (int)fi->fh, fi->lock_owner);
}

/* POSIX locks of the host's processes, by their lock owners. */
static int m_lock(const char *path, struct fuse_file_info *fi, int cmd,
		  struct flock *fl)
{
	struct bridge *b = count(H_LOCK);

	return vqf_gcli_lock_owner(b->cli, (int)fi->fh, cmd, fl,
				   fi->lock_owner);
}

static int m_release(const char *path, struct fuse_file_info *fi)
{
	struct bridge *b = count(H_RELEASE);

	track(b, (int)fi->fh, false);
	__atomic_fetch_sub(&b->handles, 1, __ATOMIC_RELEASE);
	return vqf_gcli_close(b->cli, (int)fi->fh);
}

static int m_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	return vqf_gcli_fsync(count(H_FSYNC)->cli, (int)fi->fh, datasync);
}

static int m_setxattr(const char *path, const char *name, const char *value,
		      size_t size, int flags)
{
	struct bridge *b = count(H_SETXATTR);

	if (!path)
		return -ENOENT;
	return vqf_gcli_lsetxattr(b->cli, path, name, value, size, flags);
}

static int m_getxattr(const char *path, const char *name, char *value,
		      size_t size)
{
	struct bridge *b = count(H_GETXATTR);

	if (!path)
		return -ENOENT;
	return (int)vqf_gcli_lgetxattr(b->cli, path, name, value, size);
}

static int m_listxattr(const char *path, char *list, size_t size)
{
	struct bridge *b = count(H_LISTXATTR);

	if (!path)
		return -ENOENT;
	return (int)vqf_gcli_llistxattr(b->cli, path, list, size);
}

static int m_removexattr(const char *path, const char *name)
{
	struct bridge *b = count(H_REMOVEXATTR);

	if (!path)
		return -ENOENT;
	return vqf_gcli_lremovexattr(b->cli, path, name);
}

struct dir_fill {
	void *buf;
	fuse_fill_dir_t filler;
	bool plus;
};

static int dir_entry(void *ctx, const char *name, const struct stat *st)
{
	struct dir_fill *d = ctx;

	/* Offset 0: libfuse keeps the whole listing for later calls. */
	if (d->filler(d->buf, name, st, 0, d->plus ? FUSE_FILL_DIR_PLUS : 0))
		return -ENOMEM;
	return 0;
}

/*
 * vqf_gcli lists a directory by path in one call (OPENDIR, READDIR...,
 * RELEASEDIR), so opendir and releasedir only count the open directory:
 * libfuse holds the listing until RELEASEDIR, and a stop waits for it.
 */
static int m_opendir(const char *path, struct fuse_file_info *fi)
{
	struct bridge *b = fuse_get_context()->private_data;

	__atomic_fetch_add(&b->handles, 1, __ATOMIC_RELAXED);
	return 0;
}

static int m_releasedir(const char *path, struct fuse_file_info *fi)
{
	struct bridge *b = fuse_get_context()->private_data;

	__atomic_fetch_sub(&b->handles, 1, __ATOMIC_RELEASE);
	return 0;
}

/* The host kernel's choice of READDIR or READDIRPLUS is passed on. */
static int m_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		     off_t off, struct fuse_file_info *fi,
		     enum fuse_readdir_flags flags)
{
	struct bridge *b = count(H_READDIR);
	struct dir_fill d = { .buf = buf, .filler = filler,
			      .plus = flags & FUSE_READDIR_PLUS };

	if (!path)
		return -ENOENT;
	return vqf_gcli_readdir(b->cli, path, d.plus, dir_entry, &d);
}

static int m_utimens(const char *path, const struct timespec tv[2],
		     struct fuse_file_info *fi)
{
	struct bridge *b = count(H_UTIMENS);

	if (!path)
		return -ENOENT;
	return vqf_gcli_lutimens(b->cli, path, tv);
}

static int m_fallocate(const char *path, int mode, off_t off, off_t len,
		       struct fuse_file_info *fi)
{
	struct bridge *b = count(H_FALLOCATE);

	if (!fi)
		return -EBADF;
	return vqf_gcli_fallocate(b->cli, (int)fi->fh, mode, off, len);
}

static off_t m_lseek(const char *path, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct bridge *b = count(H_LSEEK);

	if (!fi)
		return -EBADF;
	return vqf_gcli_lseek(b->cli, (int)fi->fh, off, whence);
}

static ssize_t m_copy_file_range(const char *path_in,
				 struct fuse_file_info *fi_in, off_t off_in,
				 const char *path_out,
				 struct fuse_file_info *fi_out, off_t off_out,
				 size_t len, int flags)
{
	struct bridge *b = count(H_COPY_FILE_RANGE);

	if (flags)
		return -EINVAL;
	return vqf_gcli_copy_file_range(b->cli, (int)fi_in->fh, off_in,
					(int)fi_out->fh, off_out, len);
}

/*
 * flock(2) locks belong to an open file description, which is one
 * vqf_gcli descriptor here.  POSIX (fcntl) locks are not bridged: their
 * owner is the host process, and vqf_gcli_lock() has one owner per client;
 * without a .lock operation the host kernel keeps them itself, which is
 * correct for every host process using the mount.
 */
static int m_flock(const char *path, struct fuse_file_info *fi, int op)
{
	return vqf_gcli_flock(count(H_FLOCK)->cli, (int)fi->fh, op);
}

static const struct fuse_operations bridge_ops = {
	.init = m_init,
	.getattr = m_getattr,
	.readlink = m_readlink,
	.mknod = m_mknod,
	.mkdir = m_mkdir,
	.unlink = m_unlink,
	.rmdir = m_rmdir,
	.symlink = m_symlink,
	.rename = m_rename,
	.link = m_link,
	.chmod = m_chmod,
	.chown = m_chown,
	.truncate = m_truncate,
	.open = m_open,
	.read = m_read,
	.write = m_write,
	.statfs = m_statfs,
	.flush = m_flush,
	.lock = m_lock,
	.release = m_release,
	.fsync = m_fsync,
	.setxattr = m_setxattr,
	.getxattr = m_getxattr,
	.listxattr = m_listxattr,
	.removexattr = m_removexattr,
	.opendir = m_opendir,
	.readdir = m_readdir,
	.releasedir = m_releasedir,
	.create = m_create,
	.utimens = m_utimens,
	.fallocate = m_fallocate,
	.lseek = m_lseek,
	.copy_file_range = m_copy_file_range,
	.flock = m_flock,
};

/* ---- the command -------------------------------------------------------- */

void vqf_cli_mount_usage(FILE *f)
{
	fprintf(f,
"Options of mount (vqfuse-sim mount MOUNTPOINT --shared DIR [options]):\n"
"  --shared DIR        host directory to share (required unless --connect,\n"
"                      must exist; the mountpoint must not be DIR or\n"
"                      inside it)\n"
"  --connect SOCKET    put the vhost-user-fs back-end listening at SOCKET\n"
"                      (virtiofsd, vqfuse-sim vhost-user) behind the mount\n"
"                      instead of the simulator's own device and backend,\n"
"                      as run --connect; if the back-end dies, host\n"
"                      operations fail with ENOTCONN until the unmount\n"
"  --backend NAME      vqfuse (default) or passthrough_ll; --fs is the same\n");
	vqf_cli_cache_usage(f, false);
	fprintf(f,
"  --queues N, --queue-size N, --threads N, --inline, --poll-us N,"
" --ram BYTES\n"
"                      the simulated machine, as for run\n"
"  --max-files N       guest open files (16..1048576, default 4096)\n"
"  --debug             libfuse logs every host request on stderr\n"
"  --dax[=MODE], --dax-window SIZE\n"
"                      file data through a DAX window (power of two,\n"
"                      default 64M); MODE auto (the default) or always,\n"
"                      as for run\n"
"  --trace FILE        every request's life as Chrome trace-event JSON,\n"
"                      written at unmount (ui.perfetto.dev)\n"
"  --private           as root: no allow_other,default_permissions (only\n"
"                      root may use the mount)\n"
"  --nodev             refuse to create character and block devices\n"
"  --stop-wait SEC     on a signal, serve until the host kernel has\n"
"                      released every open file, at most SEC s (default\n"
"                      %d; 0: stop at once)\n"
"  -h, --help          this text\n"
"\n"
"mount exposes the simulated guest's client as a FUSE mount of the host\n"
"at MOUNTPOINT: host programs -> host kernel -> vqfuse-sim (libfuse3) ->\n"
"guest client -> virtqueues -> device -> backend -> DIR.  The host\n"
"kernel's caching is off (timeouts 0, direct I/O) so that the guest's\n"
"cache mode is what is measured.  Mounted by root it is shared with every\n"
"user (allow_other) and the host kernel checks permissions\n"
"(default_permissions); each request carries its caller's uid, gid and\n"
"pid, and the server creates files as that user (docs/posix.md).  It\n"
"runs in the foreground, prints \"%s: mounted DIR on MOUNTPOINT\" on\n"
"stdout once the mount is there, and unmounts on SIGINT, SIGTERM or\n"
"SIGHUP (or fusermount3 -u MOUNTPOINT): it first serves the releases the\n"
"host kernel sends after close() (--stop-wait; a second signal stops at\n"
"once), closes what the host left open, and prints its counters on\n"
"stdout: host operations served, FUSE requests, kicks, interrupts and\n"
"requests per opcode.  Exit status: 0 unmounted cleanly, 1 the machine\n"
"or the mount failed, 2 bad usage.\n", STOP_WAIT_SEC, vqf_cli_prog);
}

static const struct vqf_cli_num_opt mount_nums[] = {
	{ "--queues", false, 1, 64 },
	{ "--queue-size", false, 8, 1024 },
	{ "--threads", false, 0, 256 },
	{ "--poll-us", false, 0, 10000 },
	{ "--ram", true, 16ull << 20, 16ull << 30 },
	{ "--max-files", false, 16, 1u << 20 },
	{ "--dax-window", true, 2ull << 20, 64ull << 30 },
	{ "--stop-wait", false, 0, 3600 },
};

static void set_mount_num(struct mount_opts *o, const char *name,
			  unsigned long long v)
{
	if (!strcmp(name, "--queues"))
		o->queues = v;
	else if (!strcmp(name, "--queue-size"))
		o->queue_size = v;
	else if (!strcmp(name, "--threads"))
		o->threads = v, o->threads_set = true;
	else if (!strcmp(name, "--poll-us"))
		o->poll_us = v;
	else if (!strcmp(name, "--ram"))
		o->ram = v;
	else if (!strcmp(name, "--dax-window"))
		o->dax = (o->dax_window = v) != 0;
	else if (!strcmp(name, "--stop-wait"))
		o->stop_wait = v;
	else
		o->max_files = v;
}

/* One option of mount, as vqf_cli_walk() found it. */
static int mount_set(void *arg, const char *name, const char *val,
		     const unsigned long long *num)
{
	struct mount_opts *o = arg;

	if (num) {
		set_mount_num(o, name, *num);
	} else if (!strcmp(name, "--writeback")) {
		o->writeback = true;
	} else if (!strcmp(name, "--inline")) {
		o->inline_kick = true;
	} else if (!strcmp(name, "--debug")) {
		o->debug = true;
	} else if (!strcmp(name, "--dax")) {
		return vqf_cli_parse_dax(val, &o->dax, &o->dax_always);
	} else if (!strcmp(name, "--private")) {
		o->private_mount = true;
	} else if (!strcmp(name, "--nodev")) {
		o->nodev = true;
	} else if (!strcmp(name, "--shared")) {
		if (!*val)
			return vqf_cli_bad_usage("--shared: empty path");
		o->shared = val;
	} else if (!strcmp(name, "--connect")) {
		if (!*val)
			return vqf_cli_bad_usage("--connect: empty path");
		o->connect = val;
	} else if (!strcmp(name, "--backend") || !strcmp(name, "--fs")) {
		o->fs_set = true;
		return vqf_cli_parse_backend(name, val, &o->fs);
	} else if (!strcmp(name, "--cache")) {
		return vqf_cli_parse_cache(val, &o->cache, NULL);
	} else if (!strcmp(name, "--trace")) {
		if (!*val)
			return vqf_cli_bad_usage("--trace: empty path");
		o->trace = val;
	} else {
		o->timeout_set = true;
		return vqf_cli_parse_timeout(val, &o->timeout);
	}
	return 0;
}

/* The mountpoint: one argument, also after "--". */
static int mount_arg(void *arg, const char *a)
{
	struct mount_opts *o = arg;

	if (o->mnt)
		return vqf_cli_bad_usage("mount: unexpected argument '%s'", a);
	o->mnt = a;
	return 0;
}

static const char *const mount_flags[] = {
	"--writeback", "--inline", "--debug", "--dax", "--private",
	"--nodev", NULL
};
static const char *const mount_strs[] = {
	"--shared", "--connect", "--backend", "--fs", "--cache", "--timeout",
	"--trace", NULL
};
static const char *const mount_valued[] = { "--dax", NULL };
static const struct vqf_cli_spec mount_spec = {
	.cmd = "mount", .flags = mount_flags, .valued = mount_valued,
	.strs = mount_strs,
	.nums = mount_nums, .nnums = sizeof(mount_nums) / sizeof(*mount_nums),
	.set = mount_set, .arg = mount_arg,
};

/* Is @in the directory @dir or below it?  Both are real paths. */
static bool under(const char *in, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1)
		return true;	/* "/" */
	return !strncmp(in, dir, n) && (!in[n] || in[n] == '/');
}

static int check_dirs(struct mount_opts *o)
{
	char rs[PATH_MAX], rm[PATH_MAX];
	struct stat st;

	if (!o->mnt)
		return vqf_cli_bad_usage("mount: MOUNTPOINT is required");
	if (o->connect) {
		/* The back-end's own settings are its command line's. */
		if (o->shared || o->fs_set || o->threads_set ||
		    o->inline_kick || o->nodev || o->dax_window)
			return vqf_cli_bad_usage("--connect: --shared, "
				"--backend, --threads, --inline, --nodev and "
				"--dax-window are the back-end's (use --dax "
				"for the guest's side)");
		if (stat(o->mnt, &st) || !S_ISDIR(st.st_mode))
			return vqf_cli_bad_usage("mountpoint %s: %s", o->mnt,
						 errno ? strerror(errno) :
						 "not a directory");
		return 0;
	}
	if (!o->shared)
		return vqf_cli_bad_usage("mount: --shared DIR or --connect "
					 "SOCKET is required");
	if (stat(o->shared, &st))
		return vqf_cli_bad_usage("--shared: %s: %s", o->shared,
					 strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return vqf_cli_bad_usage("--shared: %s: not a directory",
					 o->shared);
	if (stat(o->mnt, &st))
		return vqf_cli_bad_usage("mountpoint %s: %s", o->mnt,
					 strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return vqf_cli_bad_usage("mountpoint %s: not a directory",
					 o->mnt);
	if (!realpath(o->shared, rs) || !realpath(o->mnt, rm))
		return vqf_cli_bad_usage("cannot resolve %s or %s: %s",
					 o->shared, o->mnt, strerror(errno));
	/* The backend would serve requests through its own mount. */
	if (under(rm, rs))
		return vqf_cli_bad_usage("mountpoint %s is inside the shared "
					 "directory %s", o->mnt, o->shared);
	return 0;
}

/* Returns 0, EXIT_USAGE after a message, or -1 when help was asked. */
static int parse_mount(int argc, char **argv, struct mount_opts *o)
{
	int ret;

	memset(o, 0, sizeof(*o));
	o->queues = 1;
	o->queue_size = 128;
	o->max_files = 4096;
	o->stop_wait = STOP_WAIT_SEC;
	ret = vqf_cli_walk(&mount_spec, argc, argv, o);
	if (ret)
		return ret;
	if (vqf_cli_check_machine(o->queue_size, o->dax_window, o->dax,
				  o->fs))
		return VQF_CLI_EXIT_USAGE;
	if (vqf_cli_check_cache(o->cache, o->timeout_set))
		return VQF_CLI_EXIT_USAGE;
	return check_dirs(o);
}

static void print_counters(struct bridge *b, const struct mount_opts *o,
			   unsigned int leftover)
{
	struct vqf_wl_counters wc = { 0 };
	struct vqf_sim_stats st;
	struct vqf_wl_fs fs;
	u64 hops = 0;

	vqf_wl_sim_fs(b->sim, vqf_wl_sim_fs_name(o->fs), &fs);
	fs.counters(fs.ctx, &wc);
	vqf_sim_get_stats(b->sim, &st);
	for (int i = 0; i < H_NR; i++)
		hops += b->hops[i];
	/* One line of key=value for scripts, the names of run's columns. */
	printf("%s: counters: host_ops=%llu calls=%llu requests=%llu "
	       "forgets=%llu kicks=%llu irqs=%llu interrupts=%llu "
	       "cli_bytes_copied=%llu drv_bytes_copied=%llu "
	       "bytes_read=%llu bytes_written=%llu failed=%llu "
	       "bad_replies=%llu left_open=%u\n", vqf_cli_prog,
	       (unsigned long long)hops, (unsigned long long)st.cli.calls,
	       (unsigned long long)wc.requests,
	       (unsigned long long)wc.forgets,
	       (unsigned long long)wc.kicks, (unsigned long long)wc.irqs,
	       (unsigned long long)wc.interrupts,
	       (unsigned long long)wc.cli_copied,
	       (unsigned long long)wc.drv_copied,
	       (unsigned long long)st.cli.bytes_read,
	       (unsigned long long)st.cli.bytes_written,
	       (unsigned long long)st.drv.failed,
	       (unsigned long long)st.drv.bad_replies, leftover);
	if (o->connect)
		printf("%s: front-end: msgs=%llu shm_maps=%llu "
		       "shm_unmaps=%llu shm_refused=%llu lost=%llu "
		       "lost_errno=%lld\n", vqf_cli_prog,
		       (unsigned long long)st.front.msgs,
		       (unsigned long long)st.front.shm_maps,
		       (unsigned long long)st.front.shm_unmaps,
		       (unsigned long long)st.front.shm_refused,
		       (unsigned long long)st.front.lost,
		       (long long)-st.front.lost_err);
	printf("%s: host operations:", vqf_cli_prog);
	for (int i = 0; i < H_NR; i++)
		if (b->hops[i])
			printf(" %s=%llu", hop_name[i],
			       (unsigned long long)b->hops[i]);
	printf("\n%s: requests by opcode:", vqf_cli_prog);
	for (int i = 0; i < VQF_GDRV_OPCODES; i++)
		if (st.drv.by_opcode[i])
			printf(" %s=%llu", op_name[i] ? op_name[i] : "other",
			       (unsigned long long)st.drv.by_opcode[i]);
	if (hops)
		printf("\n%s: per host operation: requests %.2f, kicks %.2f, "
		       "interrupts %.2f\n", vqf_cli_prog,
		       (double)wc.requests / (double)hops,
		       (double)wc.kicks / (double)hops,
		       (double)wc.interrupts / (double)hops);
	else
		printf("\n");
	fflush(stdout);
}

/*
 * The back-end went away or broke the protocol: every host operation
 * fails from now on (ENOTCONN, as a guest's virtiofs mount whose device
 * is gone), and the mount stays until it is unmounted, as a guest's.
 */
static void front_lost(void *ctx, int err)
{
	(void)ctx;
	fprintf(stderr, "%s: the vhost-user back-end is lost: %s; host "
		"operations fail from now on\n", vqf_cli_prog,
		strerror(-err));
}

static int start_machine(const struct mount_opts *o, struct bridge *b)
{
	struct vqf_sim_cfg sc = { 0 };
	int ret;

	sc.shared = o->shared;
	sc.connect = o->connect;
	sc.front.lost = front_lost;
	sc.fs = o->fs;
	/* Callers are this host's processes: their groups are in /proc. */
	sc.host_callers = true;
	sc.nodev = o->nodev;
	sc.queues = o->queues;
	sc.queue_size = o->queue_size;
	sc.threads = o->threads;
	sc.poll_ns = (u64)o->poll_us * 1000;
	sc.inline_kick = o->inline_kick;
	sc.ram = o->ram;
	vqf_cli_dax_cfg(&sc, o->dax, o->dax_always, o->dax_window);
	sc.cli.uid = b->uid;
	sc.cli.gid = b->gid;
	sc.cli.pid = b->pid;
	sc.cli.max_files = o->max_files;
	vqf_cli_cache_cfg(&sc.cli, o->cache, o->writeback, o->timeout);
	if (o->trace) {
		ret = vqf_trace_open(o->trace, &b->trace);
		if (ret) {
			fprintf(stderr, "%s: --trace %s: %s\n", vqf_cli_prog,
				o->trace, strerror(-ret));
			return ret;
		}
		sc.trace = b->trace;
	}
	ret = vqf_sim_new(&sc, &b->sim);
	if (ret) {
		vqf_trace_close(b->trace);
		b->trace = NULL;
		if (o->connect)
			fprintf(stderr, "%s: cannot start the simulated guest "
				"on the vhost-user back-end at %s: %s (errno "
				"%d)\n", vqf_cli_prog, o->connect,
				strerror(-ret), -ret);
		else
			fprintf(stderr, "%s: cannot start the simulated "
				"machine over %s (backend %s): %s (errno "
				"%d)\n", vqf_cli_prog, o->shared,
				vqf_wl_sim_fs_name(o->fs), strerror(-ret),
				-ret);
		return ret;
	}
	b->cli = vqf_sim_cli(b->sim);
	b->drv = vqf_sim_drv(b->sim);
	return 0;
}

/*
 * Stopping.  libfuse's handlers end the loop the moment a signal comes,
 * but the host kernel sends RELEASE and RELEASEDIR after close() has
 * returned, in the background: a stop right after a program's last close
 * then lost them (the file closed late by the leftover loop below, the
 * directory's listing left in libfuse).  So a signal only wakes the
 * stopper thread, which lets the loop serve until nothing is open, at
 * most --stop-wait seconds or until a second signal, and then ends it.
 */
static sem_t stop_sem;
static volatile sig_atomic_t stop_signal;

static void stop_handler(int sig)
{
	if (!stop_signal)
		stop_signal = sig;
	sem_post(&stop_sem);	/* async-signal-safe */
}

/*
 * Without SA_RESTART: fuse_loop_mt() rechecks fuse_session_exited() only
 * when its sem_wait() returns, which a restarted wait never does.  A
 * signal already ignored (nohup, a shell's background job) stays so, as
 * libfuse's own handlers leave it.
 */
static int stop_handlers(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = stop_handler }, old;

	sigemptyset(&sa.sa_mask);
	for (unsigned int i = 0; i < sizeof(sigs) / sizeof(*sigs); i++) {
		if (sigaction(sigs[i], NULL, &old))
			return -1;
		if (old.sa_handler == SIG_IGN)
			continue;
		if (sigaction(sigs[i], &sa, NULL))
			return -1;
	}
	/* A host program that closes its end must not end the mount. */
	sa.sa_handler = SIG_IGN;
	return sigaction(SIGPIPE, &sa, NULL);
}

struct stopper {
	struct bridge *b;
	unsigned int wait_sec;
	struct fuse_session *se;
	pthread_t loop;		/* the thread in fuse_loop_mt() */
	int loop_done;		/* atomic: fuse_loop_mt() returned */
};

static bool loop_done(struct stopper *s)
{
	return __atomic_load_n(&s->loop_done, __ATOMIC_ACQUIRE);
}

/* Waits for @sem until @ms from now; true if it was posted. */
static bool sem_wait_ms(sem_t *sem, long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (sem_timedwait(sem, &ts)) {
		if (errno != EINTR)
			return false;
	}
	return true;
}

static void *stopper_main(void *arg)
{
	struct stopper *s = arg;
	long waited = 0;
	int open;

	while (sem_wait(&stop_sem) && errno == EINTR)
		;
	if (loop_done(s))
		return NULL;	/* unmounted: nothing to stop */
	open = __atomic_load_n(&s->b->handles, __ATOMIC_ACQUIRE);
	if (open > 0 && s->wait_sec) {
		fprintf(stderr, "%s: waiting up to %u s for %d open file(s) "
			"to be released (again to stop now)\n", vqf_cli_prog,
			s->wait_sec, open);
		/* Polled: a release has no way to post to us safely. */
		while (__atomic_load_n(&s->b->handles, __ATOMIC_ACQUIRE) > 0 &&
		       waited < s->wait_sec * 1000L && !loop_done(s)) {
			if (sem_wait_ms(&stop_sem, 20))
				break;	/* a second signal */
			waited += 20;
		}
	}
	fuse_session_exit(s->se);
	/* Wake the loop's sem_wait(); again in case it was not yet in it. */
	while (!loop_done(s)) {
		pthread_kill(s->loop, SIGTERM);
		sem_wait_ms(&stop_sem, 50);
	}
	return NULL;
}

/* The kernel's FUSE loop until a signal or an unmount; 0 when clean. */
static int serve(const struct mount_opts *o, struct bridge *b)
{
	char *fargv[5] = { (char *)vqf_cli_prog, NULL, NULL, NULL, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(0, fargv);
	struct fuse_loop_config lc = { .clone_fd = 0,
				       .max_idle_threads = 10 };
	struct stopper st = { .b = b, .wait_sec = o->stop_wait,
			      .loop = pthread_self() };
	pthread_t stopper;
	struct fuse *f;
	int fargc = 1, ret;

	fargv[fargc++] = "-ofsname=vqfuse-sim,subtype=vqfuse";
	/* Every user, with the host kernel checking permissions as a guest
	 * kernel does; unprivileged, a mount of one's own (fusermount3).
	 */
	if (!geteuid() && !o->private_mount)
		fargv[fargc++] = "-oallow_other,default_permissions";
	if (o->debug)
		fargv[fargc++] = "-d";
	args.argc = fargc;
	f = fuse_new(&args, &bridge_ops, sizeof(bridge_ops), b);
	fuse_opt_free_args(&args);
	if (!f) {
		fprintf(stderr, "%s: fuse_new failed\n", vqf_cli_prog);
		return -1;
	}
	st.se = fuse_get_session(f);
	/* Before the mount, so that a signal never leaves one behind. */
	if (sem_init(&stop_sem, 0, 0) || stop_handlers()) {
		fprintf(stderr, "%s: cannot install signal handlers\n",
			vqf_cli_prog);
		fuse_destroy(f);
		return -1;
	}
	if (fuse_mount(f, o->mnt)) {
		fprintf(stderr, "%s: cannot mount on %s (libfuse's reason "
			"above; is /dev/fuse there and fusermount3 "
			"installed?)\n", vqf_cli_prog, o->mnt);
		fuse_destroy(f);
		return -1;
	}
	if (pthread_create(&stopper, NULL, stopper_main, &st)) {
		fprintf(stderr, "%s: cannot start a thread\n", vqf_cli_prog);
		fuse_unmount(f);
		fuse_destroy(f);
		return -1;
	}
	if (o->connect)
		printf("%s: mounted %s on %s (cache %s%s, vhost-user "
		       "back-end)\n", vqf_cli_prog, o->connect, o->mnt,
		       vqf_cli_cache_name(o->cache),
		       o->writeback ? ", writeback" : "");
	else
		printf("%s: mounted %s on %s (cache %s%s, backend %s)\n",
		       vqf_cli_prog, o->shared, o->mnt,
		       vqf_cli_cache_name(o->cache),
		       o->writeback ? ", writeback" : "",
		       vqf_wl_sim_fs_name(o->fs));
	fflush(stdout);
	ret = fuse_loop_mt(f, &lc);
	__atomic_store_n(&st.loop_done, 1, __ATOMIC_RELEASE);
	sem_post(&stop_sem);	/* an unmount: the stopper is still waiting */
	pthread_join(stopper, NULL);
	fuse_unmount(f);
	fuse_destroy(f);
	/* A signal's number is how libfuse reports a stop by signal. */
	if (ret == SIGINT || ret == SIGTERM || ret == SIGHUP)
		ret = 0;
	if (ret)
		fprintf(stderr, "%s: the FUSE loop failed: %s\n", vqf_cli_prog,
			ret < 0 ? strerror(-ret) : "error");
	return ret;
}

int vqf_cli_mount(int argc, char **argv)
{
	struct mount_opts o;
	struct bridge b = { 0 };
	unsigned int leftover = 0;
	int ret;

	ret = parse_mount(argc, argv, &o);
	if (ret < 0) {
		vqf_cli_mount_usage(stdout);
		return 0;
	}
	if (ret)
		return ret;
	b.uid = getuid();
	b.gid = getgid();
	b.pid = getpid();
	b.max_files = o.max_files;
	b.open = calloc(o.max_files, sizeof(*b.open));
	if (!b.open) {
		fprintf(stderr, "%s: out of memory\n", vqf_cli_prog);
		return VQF_CLI_EXIT_FAIL;
	}
	pthread_mutex_init(&b.lock, NULL);
	if (start_machine(&o, &b)) {
		ret = -1;
		goto out;
	}
	ret = serve(&o, &b);
	/* Files the kernel never released (a lazy unmount): their data,
	 * writeback included, reaches DIR now.
	 */
	for (unsigned int i = 0; i < b.max_files; i++) {
		if (b.open[i]) {
			vqf_gcli_close(b.cli, (int)i);
			leftover++;
		}
	}
	print_counters(&b, &o, leftover);
	vqf_sim_free(b.sim);
	if (vqf_trace_close(b.trace)) {
		fprintf(stderr, "%s: --trace %s: not written\n", vqf_cli_prog,
			o.trace);
		ret = -EIO;
	}
out:
	pthread_mutex_destroy(&b.lock);
	free(b.open);
	return ret ? VQF_CLI_EXIT_FAIL : 0;
}
