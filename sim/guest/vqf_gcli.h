/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_gcli.h - a POSIX-like client over the simulated virtio-fs guest.
 *
 * What the Linux FUSE client (fs/fuse/dir.c, file.c) does for a process,
 * reduced to a library: paths are walked one component at a time with
 * LOOKUP, files are opened with OPEN/CREATE and read and written with
 * READ/WRITE through data pages in guest RAM, and every inode the server
 * gave us is remembered with its lookup count so that it is forgotten
 * (FORGET/BATCH_FORGET on hiprio) exactly as often as it was looked up.
 *
 * Caching (struct vqf_gcli_cfg.cache), as fs/fuse does it:
 *   - none: nothing kept between calls; every lookup, attribute and byte
 *     goes to the device (virtiofsd's cache=none, FOPEN_DIRECT_IO).
 *   - auto: dentries (negative ones too) and attributes expire after
 *     timeout_ns; pages are kept while a file is open and dropped at the
 *     next open (close-to-open) or when size or mtime are seen to change.
 *   - always: as auto, but nothing expires: a change made behind the
 *     client is seen only after a notification (vqf_gcli_notify()).
 * The client's mode, not the server's entry_valid/attr_valid, sets the
 * timeouts.  Attributes follow fuse_change_attributes()'s attr_version
 * rule.  writeback (auto/always only): writes stay in dirty pages until
 * close, fsync, or too many are dirty (fuse_flush writes them back).
 * Paths are relative to the shared directory's root ("a/b", "/a/b" and
 * "a//b/" are the same); ".." is resolved lexically and never climbs
 * above the root.
 *
 * All calls return >= 0 on success and a negative errno on failure, like
 * the kernel's syscall entry points.  A client may be used by many
 * threads at once.
 */
#ifndef VQF_GCLI_H
#define VQF_GCLI_H

#include "vqf_gdrv.h"
#include "vqf_dax.h"
#include "vqf_version.h"

#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

/* The RFC cover letter's cache modes, as fs/fuse implements them. */
enum vqf_gcli_cache {
	VQF_GCLI_CACHE_NONE,	/* nothing cached, every change pushed */
	VQF_GCLI_CACHE_AUTO,	/* metadata expires after timeout_ns */
	VQF_GCLI_CACHE_ALWAYS,	/* cached until invalidated */
	/* As auto, but an unchanged version in the device's shared table
	 * (seed 010) proves a cached entry or attribute valid whatever its
	 * age, and a changed one refutes it at once.
	 */
	VQF_GCLI_CACHE_SHARED,
};

struct vqf_gcli_cfg {
	u32 uid, gid, pid;	/* credentials in every request (0: ours) */
	unsigned int max_files;	/* open file table size (0: 1024) */
	/* Inodes remembered while unused before FORGET (0: 4096). */
	unsigned int icache_max;
	enum vqf_gcli_cache cache;
	/* Writes may stay in the guest's page cache until close or fsync. */
	bool writeback;
	u64 timeout_ns;		/* cache=auto entry/attr timeout (0: 1 s) */
	/* Monotonic clock in ns, for tests that step time (NULL: real). */
	u64 (*clock)(void *arg);
	void *clock_arg;
	/*
	 * DAX: file data is read and written through the device's cache
	 * window at @dax_base (@dax_window bytes, ranges of @dax_range, 0:
	 * 2 MiB) instead of READ/WRITE; no page cache.  NULL base: off.
	 */
	void *dax_base;
	u64 dax_window;
	u64 dax_range;
	/*
	 * dax=auto (docs/dax.md, "Policy"): read() and write() map only
	 * where lib/vqf_dax's policy says it pays, and go through READ/
	 * WRITE (direct, uncached) elsewhere; mmap always maps.  false:
	 * dax=always.  @dax_policy: its thresholds (NULL: lib's defaults).
	 */
	bool dax_auto;
	const struct vqf_dax_policy *dax_policy;
	/*
	 * Deferred teardown (docs/dax.md, "Deferred teardown at evict"):
	 * read-only ranges of an evicted inode stay mapped on the host, at
	 * most this many, and the next SETUPMAPPING of each replaces its
	 * mapping: no REMOVEMAPPING per evicted file.  0: the default, a
	 * quarter of the window's ranges (at most 256); -1: none, one
	 * REMOVEMAPPING round trip per evicted inode, as upstream.
	 */
	int dax_stale;
	/*
	 * cache=shared: the device's version table (its shared memory region
	 * VQF_VIRTIO_FS_SHMCAP_ID_VERSION, read-only) and its size.  Used
	 * only if the driver asked for it at INIT (vqf_gdrv_cfg.
	 * shared_version) and the device agreed; otherwise cache=auto.
	 */
	const void *ver_base;
	u64 ver_size;
};

struct vqf_gcli_stats {
	u64 calls;		/* API calls */
	u64 requests;		/* FUSE requests sent */
	u64 lookups;		/* ...of which LOOKUP */
	u64 forgets;		/* lookups given back (sum of nlookup) */
	u64 bytes_read;		/* file bytes delivered to callers */
	u64 bytes_written;	/* file bytes taken from callers */
	u64 bytes_copied;	/* between caller buffers and guest pages */
	u64 inodes;		/* inodes remembered now */
	/* Caches (cache=auto/always). */
	u64 dentry_hits;	/* path components answered without LOOKUP */
	u64 dentry_neg_hits;	/* ...of which negative: -ENOENT */
	u64 attr_hits;		/* attributes answered without GETATTR */
	u64 attr_stale;		/* replies older than what was known: ignored */
	u64 page_hits;		/* pages read from the page cache */
	u64 pages_read;		/* pages filled by READ */
	u64 pages_invalidated;	/* dropped: size/mtime changed, open, notify */
	u64 wb_pages;		/* dirty pages written back */
	u64 wb_writes;		/* WRITE requests of writeback */
	u64 notify_inval_inode;	/* notifications applied */
	u64 notify_inval_entry;
	u64 notify_refused;	/* malformed or unknown notifications */
	u64 dax_reads;		/* read() calls served through the window */
	u64 dax_writes;		/* write() calls served through the window */
	u64 dax_extends;	/* DAX writes growing the file: sent as WRITE */
	/* dax=auto: read()/write() calls the policy sent (in part) through
	 * READ/WRITE instead of the window.
	 */
	u64 dax_fuse_reads;
	u64 dax_fuse_writes;
	/* cache=shared: the table's verdicts (lib's own counters are in
	 * vqf_gcli_get_ver_stats()).
	 */
	u64 ver_valid;		/* checks that proved a cache entry */
	u64 ver_stale;		/* ...that refuted one */
};

struct vqf_gcli;

/* Returns 0, -EINVAL, -ENOMEM. */
int vqf_gcli_new(struct vqf_gdrv *g, const struct vqf_gcli_cfg *cfg,
		 struct vqf_gcli **out);
/* Releases open files, forgets every inode (flushing the forgets) and
 * frees the client.  The driver stays up.  No call may be inside the
 * client (callers still leaving a call would touch freed memory): to
 * stop a guest with calls in flight, vqf_gdrv_shutdown() first, join the
 * callers, then free.
 */
void vqf_gcli_free(struct vqf_gcli *c);

/*
 * Who is calling: what the kernel puts in every request's fuse_in_header
 * from current_cred() (fsuid, fsgid, tgid).  A client serving several
 * users (vqfuse-sim mount) says before each call whose it is.
 */
struct vqf_gcli_creds {
	u32 uid, gid, pid;
};

/*
 * The credentials the calling thread's later calls into @c carry, until
 * the next vqf_gcli_set_creds() on this thread; NULL: the client's own
 * (cfg's); vqf_gcli_free() clears the freeing thread's.  Files opened
 * keep no credentials: a write is the writer's.
 * A write by a caller other than uid 0 clears the file's set-user-ID bit
 * and its set-group-ID bit (when group-executable), as the kernel does
 * for a caller without CAP_FSETID.
 */
void vqf_gcli_set_creds(struct vqf_gcli *c, const struct vqf_gcli_creds *cr);

/* Files.  flags as open(2): O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL,
 * O_TRUNC, O_APPEND, O_DIRECTORY, O_NOFOLLOW.  Returns a descriptor >= 0.
 */
int vqf_gcli_open(struct vqf_gcli *c, const char *path, int flags,
		  mode_t mode);
int vqf_gcli_close(struct vqf_gcli *c, int fd);
ssize_t vqf_gcli_read(struct vqf_gcli *c, int fd, void *buf, size_t n);
ssize_t vqf_gcli_write(struct vqf_gcli *c, int fd, const void *buf,
		       size_t n);
ssize_t vqf_gcli_pread(struct vqf_gcli *c, int fd, void *buf, size_t n,
		       off_t off);
ssize_t vqf_gcli_pwrite(struct vqf_gcli *c, int fd, const void *buf,
			size_t n, off_t off);
/* SEEK_SET/CUR/END locally; SEEK_DATA/SEEK_HOLE through FUSE_LSEEK. */
off_t vqf_gcli_lseek(struct vqf_gcli *c, int fd, off_t off, int whence);
int vqf_gcli_fsync(struct vqf_gcli *c, int fd, bool datasync);
int vqf_gcli_ftruncate(struct vqf_gcli *c, int fd, off_t len);
int vqf_gcli_fstat(struct vqf_gcli *c, int fd, struct stat *st);
int vqf_gcli_fallocate(struct vqf_gcli *c, int fd, int mode, off_t off,
		       off_t len);
ssize_t vqf_gcli_copy_file_range(struct vqf_gcli *c, int fd_in,
				 off_t off_in, int fd_out, off_t off_out,
				 size_t len);
/* cmd: F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW.
 * POSIX locks are owned by the client (one process), OFD locks by @fd.
 */
int vqf_gcli_lock(struct vqf_gcli *c, int fd, int cmd, struct flock *fl);
/* POSIX locks (F_GETLK/F_SETLK/F_SETLKW) of another owner than the
 * client's (a bridge passing its callers' owners on); 0: the client's.
 */
int vqf_gcli_lock_owner(struct vqf_gcli *c, int fd, int cmd,
			struct flock *fl, u64 lock_owner);
/* op: LOCK_SH, LOCK_EX, LOCK_UN, | LOCK_NB. */
int vqf_gcli_flock(struct vqf_gcli *c, int fd, int op);
/*
 * What close(2) of one descriptor sends (fuse_flush): dirty pages written
 * back, then FLUSH with @lock_owner (0: the client's POSIX owner), whose
 * POSIX locks on the file go.  @fd stays open.  Returns the writeback's or
 * FLUSH's error.
 */
int vqf_gcli_flush(struct vqf_gcli *c, int fd, u64 lock_owner);

/* Names. */
int vqf_gcli_stat(struct vqf_gcli *c, const char *path, struct stat *st);
int vqf_gcli_lstat(struct vqf_gcli *c, const char *path, struct stat *st);
int vqf_gcli_mkdir(struct vqf_gcli *c, const char *path, mode_t mode);
int vqf_gcli_rmdir(struct vqf_gcli *c, const char *path);
int vqf_gcli_unlink(struct vqf_gcli *c, const char *path);
int vqf_gcli_mknod(struct vqf_gcli *c, const char *path, mode_t mode,
		   dev_t dev);
/* flags: 0, RENAME_NOREPLACE, RENAME_EXCHANGE (RENAME2 when nonzero). */
int vqf_gcli_rename(struct vqf_gcli *c, const char *from, const char *to,
		    unsigned int flags);
int vqf_gcli_link(struct vqf_gcli *c, const char *from, const char *to);
int vqf_gcli_symlink(struct vqf_gcli *c, const char *target,
		     const char *path);
/* Returns the target's length (not NUL-terminated if it fills @size). */
ssize_t vqf_gcli_readlink(struct vqf_gcli *c, const char *path, char *buf,
			  size_t size);
int vqf_gcli_truncate(struct vqf_gcli *c, const char *path, off_t len);
int vqf_gcli_chmod(struct vqf_gcli *c, const char *path, mode_t mode);
int vqf_gcli_chown(struct vqf_gcli *c, const char *path, uid_t uid,
		   gid_t gid);
/* The l-variants act on a final symlink itself (AT_SYMLINK_NOFOLLOW). */
int vqf_gcli_lchown(struct vqf_gcli *c, const char *path, uid_t uid,
		    gid_t gid);
/* times[0] atime, times[1] mtime; UTIME_NOW / UTIME_OMIT honoured. */
int vqf_gcli_utimens(struct vqf_gcli *c, const char *path,
		     const struct timespec times[2]);
int vqf_gcli_lutimens(struct vqf_gcli *c, const char *path,
		      const struct timespec times[2]);
int vqf_gcli_statfs(struct vqf_gcli *c, const char *path,
		    struct statvfs *sv);

/*
 * Directory listing: @fn(ctx, name, st) for every entry, "." and ".."
 * included, in the server's order.  With @plus (READDIRPLUS, sent only
 * when INIT's reply has FUSE_DO_READDIRPLUS, as fs/fuse does), @st holds
 * the attributes and the entries' inodes are remembered as LOOKUP would;
 * without, only st_ino and the type bits of st_mode are set.  A nonzero
 * return from @fn stops the walk and is returned.
 */
typedef int (*vqf_gcli_dirent_fn)(void *ctx, const char *name,
				  const struct stat *st);
int vqf_gcli_readdir(struct vqf_gcli *c, const char *path, bool plus,
		     vqf_gcli_dirent_fn fn, void *ctx);

/* Extended attributes, as the *xattr(2) calls (size 0 probes). */
int vqf_gcli_setxattr(struct vqf_gcli *c, const char *path,
		      const char *name, const void *value, size_t size,
		      int flags);
ssize_t vqf_gcli_getxattr(struct vqf_gcli *c, const char *path,
			  const char *name, void *value, size_t size);
ssize_t vqf_gcli_listxattr(struct vqf_gcli *c, const char *path, char *list,
			   size_t size);
int vqf_gcli_removexattr(struct vqf_gcli *c, const char *path,
			 const char *name);
int vqf_gcli_lsetxattr(struct vqf_gcli *c, const char *path,
		       const char *name, const void *value, size_t size,
		       int flags);
ssize_t vqf_gcli_lgetxattr(struct vqf_gcli *c, const char *path,
			   const char *name, void *value, size_t size);
ssize_t vqf_gcli_llistxattr(struct vqf_gcli *c, const char *path,
			    char *list, size_t size);
int vqf_gcli_lremovexattr(struct vqf_gcli *c, const char *path,
			  const char *name);

/*
 * A notification from the device (the driver's notify callback): @code is
 * fuse_out_header.error, @data/@len the payload.  INVAL_INODE drops the
 * inode's attributes and pages, INVAL_ENTRY and DELETE a name.  Returns 0,
 * or -EINVAL (counted in notify_refused) for anything else or malformed.
 */
int vqf_gcli_notify(struct vqf_gcli *c, int code, const void *data,
		    u32 len);

void vqf_gcli_get_stats(struct vqf_gcli *c, struct vqf_gcli_stats *out);
/* lib/vqf_dax's counters (all zero without DAX). */
void vqf_gcli_get_dax_stats(struct vqf_gcli *c, struct vqf_dax_stats *out);
/* cache=shared: whether versions are in use, and lib's counters. */
bool vqf_gcli_get_ver_stats(struct vqf_gcli *c, struct vqf_ver_stats *out);

/*
 * mmap (DAX only: -ENODEV without a window).  A MAP_SHARED mapping of
 * file bytes [@off, @off + @len) of @fd straight onto the cache window:
 * loads and stores reach the host file with no FUSE request and no copy.
 * @off page-aligned; @prot PROT_READ and/or PROT_WRITE; @fd must be open
 * for reading, and read-write without O_APPEND for PROT_WRITE (else
 * -EACCES, as mmap(2)).  The mapping keeps the open file: after close(fd)
 * its FLUSH and RELEASE wait for the last munmap (the kernel sends FLUSH
 * at close; here both go at the last put of the open file).  Returns 0,
 * -EBADF, -ENODEV (directory, no DAX), -EINVAL, -EACCES, -ENOMEM.
 *
 * Access has fault semantics (fs/fuse/dax.c): vqf_gcli_mmap_get() is a
 * load (or @write store) at byte @off of the mapping.  If the mapping's
 * page-table entry for that DAX range is present it is used as is;
 * otherwise it faults: SETUPMAPPING if the range is not in the window
 * (read-only for a load, FLAG_WRITE for a store, upgrading a read-only
 * range), the entry installed, and the range reference dropped again.
 * @ref->addr then points at the byte, valid for @ref->len bytes (up to
 * the end of the DAX range, of the mapping or of the page holding EOF)
 * until vqf_gcli_mmap_put().  Between a put and the next get, reclaim or
 * truncation may zap the entry (REMOVEMAPPING, the range reused): the
 * next get faults again and sees the file's current bytes.  A zap waits
 * for gets in progress, so while holding a ref a thread may make other
 * gets and puts but no other client call (read, write, truncate... could
 * wait for the reclaim that waits for its ref).
 * Returns 0 or -EFAULT (outside the mapping: SIGSEGV), -EACCES (store
 * to a read-only mapping, load of a PROT_NONE one: SIGSEGV), -ENXIO (at
 * or past the page holding EOF: SIGBUS), or the fault's errno.
 *
 * Stores are coherent with read(), write() and the host at once (the
 * window shares the host's page cache).  vqf_gcli_msync(): MS_SYNC sends
 * FSYNC (datasync, as msync's vfs_fsync_range) for the mapped file;
 * MS_ASYNC and MS_INVALIDATE have nothing to do.  vqf_gcli_munmap():
 * -EBUSY while a ref is held.  vqf_gcli_free() unmaps what is left.
 */
struct vqf_gcli_map;

struct vqf_gcli_mref {
	void *addr;
	size_t len;
	void *priv;
};

struct vqf_gcli_mm_stats {
	u64 maps, unmaps;
	u64 faults;		/* gets that found no usable entry */
	u64 fault_waits;	/* no free range: L dropped, waited, retried */
	u64 zapped;		/* entries removed by reclaim/truncation */
	u64 pin_waits;		/* a zap waited for a get to be put */
	u64 evicted;		/* DAX inodes evicted (REMOVEMAPPING batches) */
};

int vqf_gcli_mmap(struct vqf_gcli *c, int fd, off_t off, size_t len,
		  int prot, struct vqf_gcli_map **out);
int vqf_gcli_mmap_get(struct vqf_gcli *c, struct vqf_gcli_map *m,
		      size_t off, bool write, struct vqf_gcli_mref *ref);
void vqf_gcli_mmap_put(struct vqf_gcli *c, struct vqf_gcli_map *m,
		       struct vqf_gcli_mref *ref);
/* flags: MS_ASYNC or MS_SYNC, | MS_INVALIDATE. */
int vqf_gcli_msync(struct vqf_gcli *c, struct vqf_gcli_map *m, int flags);
int vqf_gcli_munmap(struct vqf_gcli *c, struct vqf_gcli_map *m);
void vqf_gcli_get_mm_stats(struct vqf_gcli *c, struct vqf_gcli_mm_stats *out);

/* The driver underneath (for raw requests in tests). */
struct vqf_gdrv *vqf_gcli_drv(struct vqf_gcli *c);

/* Resolves @path to a nodeid with one more lookup held by the caller, who
 * gives it back with vqf_gcli_put_nodeid() (tests of raw requests).
 */
int vqf_gcli_get_nodeid(struct vqf_gcli *c, const char *path, u64 *nodeid);
void vqf_gcli_put_nodeid(struct vqf_gcli *c, u64 nodeid);

#endif /* VQF_GCLI_H */
