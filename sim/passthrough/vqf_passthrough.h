/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_passthrough.h - vqfuse's passthrough filesystem: a host directory
 * served to an untrusted guest through the libfuse3 low-level API.
 *
 * Modelled on virtiofsd, not on a path-string design: every inode the
 * guest knows is an O_PATH file descriptor, names are resolved one
 * component at a time relative to it (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, O_NOFOLLOW), and the few
 * operations that need a real open file reopen the O_PATH fd through
 * /proc/self/fd after checking its type.  Nodeids and file handles are
 * table indices with a generation, checked on every use: a forged or stale
 * number is refused, never turned into a pointer.  Each refusal is counted
 * in struct vqf_pt_stats.  See docs/backend.md.
 */
#ifndef VQF_PASSTHROUGH_H
#define VQF_PASSTHROUGH_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vqf_pt_io_mode {
	VQF_PT_IO_AUTO = 0,	/* io_uring if it works here, else pread */
	VQF_PT_IO_URING,	/* io_uring or vqf_pt_new() fails */
	VQF_PT_IO_PREAD,	/* pread/pwrite only */
};

struct vqf_pt_config {
	const char *source;	/* the shared directory */
	double timeout;		/* entry/attr validity in s (0: cache=none) */
	enum vqf_pt_io_mode io;	/* env VQF_PT_IO=pread forces PREAD */
	/* Reads/writes of at least this many bytes go through io_uring, cut
	 * into io_chunk pieces submitted together (0: 128 KiB / 32 KiB). */
	size_t uring_min;
	size_t io_chunk;
	/* New inodes (CREATE, MKNOD, MKDIR, SYMLINK) belong to the guest
	 * caller's uid/gid: the worker thread's fsuid/fsgid are switched
	 * around the syscall, as virtiofsd does.  Only possible as root;
	 * VQF_PT_CREDS_AUTO: on when running as root. */
	enum { VQF_PT_CREDS_AUTO = 0, VQF_PT_CREDS_ON, VQF_PT_CREDS_OFF } creds;
	/* With creds: the callers are processes of this host (vqfuse-sim
	 * mount), so their supplementary groups are read from /proc
	 * (fuse_req_getgroups()) and set on the worker thread too; else a
	 * switched thread has none (a guest's pid means nothing here, and
	 * Linux before 6.2 sends no groups: FUSE_CREATE_SUPP_GROUP). */
	bool host_callers;
	/* MKNOD of character and block devices fails EPERM.  By default
	 * they are created, as virtiofsd does: the guest opens its device
	 * nodes with its own kernel, never through this server (which
	 * never opens a special file, see vqf_passthrough.c). */
	bool nodev;
	/* A blocking lock (SETLKW, flock without LOCK_NB) waits at most this
	 * long, then fails EDEADLK (0: until granted or interrupted).  For a
	 * device that serves in the kicking thread with no workers: the
	 * wait would hold the only thread that could bring the unlock or the
	 * INTERRUPT (fuzz_device D2). */
	unsigned int lock_wait_ms;
};

/* Every refused guest attempt lands in exactly one refused_* counter. */
struct vqf_pt_stats {
	uint64_t refused_name_slash;	/* -EINVAL: '/' in a name */
	uint64_t refused_name_dot;	/* -EPERM: "." or ".." as a name */
	uint64_t refused_name_empty;	/* -ENOENT: empty name */
	uint64_t refused_name_long;	/* -ENAMETOOLONG: > NAME_MAX */
	uint64_t refused_forged_nodeid;	/* -EBADF: never issued */
	uint64_t refused_stale_nodeid;	/* -ESTALE: issued, then forgotten */
	uint64_t refused_bad_fh;	/* -EBADF: forged/stale/foreign fh */
	uint64_t refused_not_dir;	/* -ENOTDIR: parent is no directory */
	uint64_t refused_symlink;	/* -ELOOP: open/create through one */
	uint64_t refused_special;	/* -EPERM: open of device/fifo/socket */
	uint64_t refused_mknod_dev;	/* -EPERM: mknod of a device node */
	uint64_t refused_flags;		/* -EINVAL: rename/setattr flags */
	uint64_t uring_ios;		/* reads+writes through io_uring */
	uint64_t sync_ios;		/* ...through pread/pwrite */
	uint64_t lock_waits_bounded;	/* blocking locks ended EDEADLK */
	uint64_t inodes;		/* now in the table (root included) */
	uint64_t files;			/* open file/dir handles now */
};

struct vqf_pt;

/*
 * For vqf_backend_config.hostile_safe: built for a guest that breaks the
 * rules (docs/posix.md, tests/e2e/test_e2e_confine.c, fuzz_device).
 */
#define VQF_PT_HOSTILE_SAFE	true

/*
 * Opens @cfg->source and returns the filesystem, whose address is the
 * userdata to give vqf_backend_new() with vqf_pt_ops().  Sets the process
 * umask to 0, as virtiofsd does: the guest has applied its own.
 * Returns NULL with errno: ENOTDIR, what open() failed with, ENOMEM,
 * ENOSYS when VQF_PT_IO_URING was asked and io_uring is unavailable, or
 * EPERM when VQF_PT_CREDS_ON was asked without root.
 */
struct vqf_pt *vqf_pt_new(const struct vqf_pt_config *cfg);

/* Closes everything.  The backend using it must be freed first. */
void vqf_pt_free(struct vqf_pt *pt);

const struct fuse_lowlevel_ops *vqf_pt_ops(size_t *op_size);

void vqf_pt_get_stats(struct vqf_pt *pt, struct vqf_pt_stats *out);

/*
 * A new descriptor (close-on-exec; the caller closes it) sharing the open
 * file description of handle @fh on @nodeid, so the caller sees that
 * open's access mode: what the device mmaps into its DAX window for
 * FUSE_SETUPMAPPING.  Returns the fd, -EBADF for a forged, stale or
 * foreign handle (counted in refused_bad_fh) or a directory handle, or
 * fcntl's -errno.
 */
int vqf_pt_file_fd(struct vqf_pt *pt, uint64_t nodeid, uint64_t fh);

/*
 * A new descriptor (close-on-exec) of the regular file @nodeid, opened
 * O_RDWR when @write, else O_RDONLY: what the device mmaps for a
 * FUSE_SETUPMAPPING that names no handle (fh ~0, as Linux's in-tree
 * virtiofs sends it).  Returns the fd, -EBADF/-ESTALE for a forged or
 * stale nodeid (counted as pt_inode_get() counts them), -ENODEV for an
 * inode that is not a regular file, or open's -errno.
 */
int vqf_pt_node_fd(struct vqf_pt *pt, uint64_t nodeid, bool write);

/*
 * The two above with the pt as a void * context, as a callback table
 * takes them (the device's vqf_fsdev_dax_ops with dax_ctx = the pt;
 * unsigned long long is lib's u64 there).
 */
int vqf_pt_dax_file_fd(void *pt, unsigned long long nodeid,
		       unsigned long long fh);
int vqf_pt_dax_node_fd(void *pt, unsigned long long nodeid, bool write);

/* Whether data I/O goes through io_uring (detected at vqf_pt_new()). */
bool vqf_pt_uses_uring(struct vqf_pt *pt);

#endif /* VQF_PASSTHROUGH_H */
