/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * gcli_int.h - what the files of the guest client share: the client, its
 * inodes and open files, and the functions one file calls in another.
 * Not installed; the API is vqf_gcli.h.
 *
 * Inodes: every nodeid the server handed out (LOOKUP, CREATE, MKDIR,
 * MKNOD, SYMLINK, LINK, READDIRPLUS) is counted in a small hash table
 * with its nlookup; it is forgotten with that count when evicted (the
 * table is over icache_max and nobody holds it) or at vqf_gcli_free().
 * An operation holds a reference on the inodes it uses, so eviction never
 * forgets a nodeid that a request in flight still names.
 */
#ifndef GCLI_INT_H
#define GCLI_INT_H

#include "vqf_gcli.h"
#include "gcache.h"
#include "gdax.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>

#define GCLI_BUCKETS	1024
#define GCLI_MAX_LINKS	40		/* MAXSYMLINKS */
#define GCLI_DIRBUF	(32 * 1024)
#define GCLI_OFFSET_MAX	0x7fffffffffffffffULL

struct ginode {
	u64 nodeid;
	u64 nlookup;
	u32 refs;
	struct ginode *next;
	struct gc_attr ca;	/* attribute cache */
	struct gc_pages pc;	/* page cache (cache=auto/always) */
	/* Writeback: the size as the client knows it while pages are
	 * dirty (fuse_change_attributes keeps i_size from the server out).
	 */
	u64 wb_size;
	bool wb_size_set;
	/* The next size/mtime change seen is our own write-through. */
	bool own_write;
	struct gdax_inode gdi;	/* DAX; gdi.ready: mapped, pinned */
	struct vqf_ver_inode ver;	/* cache=shared (under c->lock) */
	/* cache=shared: an entry reply (LOOKUP, CREATE...) was applied, so
	 * ver has the slot the device gives it, if any.  Inodes known only
	 * from READDIRPLUS (which carries no slot) do not have it yet.
	 */
	bool ver_entry;
	/* Its last link went: forgotten when the last reference goes. */
	bool unlinked;
	/* A POSIX lock was asked for (unlocks before that are no-ops). */
	bool plocked;
};

struct gfile {
	bool used, dir;
	u64 nodeid;
	u64 fh;
	int flags;
	off_t pos;
	u64 owner;		/* OFD / flock lock owner */
	bool ofd_locked;	/* an OFD lock was ever asked for */
	pthread_mutex_t lock;	/* pos */
	struct gmfile *mf;	/* DAX mappings' hold on this open */
};

/*
 * An open file that mappings keep open past close() (vma->vm_file): the
 * descriptor and each mapping hold a reference (under the client's lock);
 * the last one sends FLUSH and RELEASE and drops the inode.
 */
struct gmfile {
	struct gfile f;
	u32 refs;
};

struct vqf_gcli_map {
	struct gdax_vma *v;
	struct gmfile *mf;
};

struct vqf_gcli {
	struct vqf_gdrv *g;
	struct vqf_gcli_cfg cfg;
	u32 wchunk, rchunk;
	pthread_mutex_t lock;		/* inodes, file table */
	struct ginode *buckets[GCLI_BUCKETS];
	u64 ninodes;
	struct gfile *files;
	u64 posix_owner;
	struct gc_dcache dc;		/* under lock */
	u64 attr_version;		/* under lock (fc->attr_version) */
	/* An xattr opcode the server answered ENOSYS (atomic; by
	 * gcli_xattr.c's xattr_slot()): not sent again, as fc->no_getxattr.
	 */
	bool no_xattr[4];
	u64 ttl;			/* entry and attr validity, ns */
	struct gdax dax;
	bool dax_on;
	/* cache=shared with a table the device agreed to keep us posted in */
	bool ver_on;
	struct vqf_ver_table vt;
	/* Evicted DAX inodes waiting for REMOVEMAPPING, then FORGET. */
	struct ginode *dax_dead;	/* under lock */
	pthread_mutex_t slock;
	struct vqf_gcli_stats st;
};

#define STAT_ADD(c, field, n) do {				\
	pthread_mutex_lock(&(c)->slock);			\
	(c)->st.field += (n);					\
	pthread_mutex_unlock(&(c)->slock);			\
} while (0)

/*
 * What a reply carrying attributes is judged against, sampled before the
 * request went out: the client's attr_version and, with cache=shared,
 * the inode's version stamp (for an entry request: the directory's, and
 * the extension the reply brings along).
 */
struct asamp {
	u64 av;
	struct vqf_ver_stamp st;	/* the inode's */
	bool entry;			/* LOOKUP, CREATE, ... */
	struct vqf_ver_stamp parent;	/* entry: the directory's */
	struct fuse_entryver_out raw;	/* entry: as the device wrote it */
	struct fuse_entryver_out ev;	/* ...validated */
	struct vqf_ver_stamp est;	/* entry: the stamp the reply set */
	bool dirplus;			/* READDIRPLUS: parent, no inode */
};

/* gcli.c */
struct ginode **gcli_ifind(struct vqf_gcli *c, u64 nodeid);
int gcli_iget(struct vqf_gcli *c, u64 nodeid, u64 n);
void gcli_iput(struct vqf_gcli *c, u64 nodeid);
void gcli_inode_drop_nlink(struct vqf_gcli *c, u64 nodeid, bool all);
u64 gcli_now_ns(struct vqf_gcli *c);
bool gcli_caching(const struct vqf_gcli *c);
bool gcli_writeback(const struct vqf_gcli *c);
u64 gcli_expiry(struct vqf_gcli *c);
/* The credentials this thread's calls into @c carry. */
void gcli_creds(const struct vqf_gcli *c, struct vqf_gcli_creds *out);
int gcli_send(struct vqf_gcli *c, struct vqf_gdrv_call *cl);
void gcli_call_init(struct vqf_gdrv_call *cl, u32 opcode, u64 nodeid);

/* gcli_walk.c */
void gcli_dput_locked(void *ctx, u64 nodeid);
void gcli_dentry_set(struct vqf_gcli *c, u64 parent, const char *name,
		     u64 nodeid, const struct asamp *s);
u64 gcli_dentry_drop(struct vqf_gcli *c, u64 parent, const char *name);
int gcli_entry_got(struct vqf_gcli *c, const struct fuse_entry_out *e,
		   bool keep_ref);
int gcli_do_lookup(struct vqf_gcli *c, u64 parent, const char *name,
		   struct fuse_entry_out *e, struct asamp *s);
int gcli_new_entry(struct vqf_gcli *c, u64 parent, const char *name,
		   const struct fuse_entry_out *e, struct asamp *s);
ssize_t gcli_do_readlink(struct vqf_gcli *c, u64 nodeid, char *buf,
			 size_t size);
int gcli_lookup_child(struct vqf_gcli *c, u64 parent, const char *name,
		      bool cached_only, u64 *out, struct fuse_attr *a);
int gcli_resolve(struct vqf_gcli *c, const char *path, bool parent,
		 bool follow, u64 *out, char *last,
		 struct fuse_attr *attr);

/* gcli_attr.c */
void gcli_asample(struct vqf_gcli *c, u64 nodeid, struct asamp *s);
void gcli_asample_entry(struct vqf_gcli *c, u64 parent, struct vqf_req *r,
			struct asamp *s);
void gcli_asample_reply(struct vqf_gcli *c, const struct vqf_req *r,
			struct asamp *s);
bool gcli_attr_fresh_locked(struct vqf_gcli *c, struct ginode *i, u64 now);
void gcli_attr_got(struct vqf_gcli *c, u64 nodeid,
		   const struct fuse_attr *a, struct asamp *s);
void gcli_attr_inval(struct vqf_gcli *c, u64 nodeid);
void gcli_attr_fix_size(struct vqf_gcli *c, u64 nodeid, struct fuse_attr *a);
void gcli_attr_to_stat(const struct fuse_attr *a, struct stat *st);
int gcli_getattr_node(struct vqf_gcli *c, u64 nodeid, u64 fh,
		      struct fuse_attr *a);
int gcli_node_attr(struct vqf_gcli *c, u64 nodeid, u64 fh,
		   struct fuse_attr *a);
int gcli_setattr(struct vqf_gcli *c, u64 nodeid,
		 struct fuse_setattr_in *si);

/* gcli_file.c */
struct gfile *gcli_fget(struct vqf_gcli *c, int fd);
void gcli_release(struct vqf_gcli *c, const struct gfile *f);
int gcli_open_node(struct vqf_gcli *c, u64 nodeid, int flags, bool dir,
		   u64 *fh);

/* gcli_pages.c */
void gcli_pages_truncate(struct vqf_gcli *c, u64 nodeid, u64 size);
void gcli_pages_drop(struct vqf_gcli *c, u64 nodeid, u64 off, u64 len);
void gcli_pages_written(struct vqf_gcli *c, u64 nodeid, const u8 *buf,
			u64 off, u64 n);
ssize_t gcli_cached_pread(struct vqf_gcli *c, struct gfile *f, u8 *buf,
			  size_t n, off_t off);
int gcli_wb_flush(struct vqf_gcli *c, u64 nodeid, u64 fh);
int gcli_wb_flush_any(struct vqf_gcli *c, u64 nodeid);
ssize_t gcli_wb_write(struct vqf_gcli *c, struct gfile *f, const void *buf,
		      size_t n, off_t off);

/* gcli_mmap.c */
void gcli_dax_truncate(struct vqf_gcli *c, u64 nodeid, u64 size);
ssize_t gcli_dax_copy(struct vqf_gcli *c, struct gfile *f,
		      struct gdax_inode *gi, void *buf, size_t n, off_t off,
		      bool write, u64 size);
ssize_t gcli_dax_pread(struct vqf_gcli *c, struct gfile *f, void *buf,
		       size_t n, off_t off);
bool gcli_dax_grows(struct vqf_gcli *c, struct gfile *f, size_t n,
		    off_t off, struct gdax_inode **gi, u64 *size);
/* READ/WRITE requests for @n bytes at @off, no page cache (gcli_file.c) */
ssize_t gcli_fuse_pread(struct vqf_gcli *c, struct gfile *f, void *buf,
			size_t n, off_t off);
ssize_t gcli_fuse_pwrite(struct vqf_gcli *c, struct gfile *f,
			 const void *buf, size_t n, off_t off);
void gcli_dax_size_grew(struct vqf_gcli *c, u64 nodeid, u64 end);
int gcli_dax_isize(void *ctx, struct gdax_inode *gi, u64 fh, u64 *size);
bool gcli_dax_file_put(struct vqf_gcli *c, struct gmfile *mf);
void gcli_dax_unmap_all(struct vqf_gcli *c);

/* gcli_xattr.c */
int gcli_lk_call(struct vqf_gcli *c, const struct gfile *f, u32 opcode,
		 u64 owner, u32 lk_flags, struct fuse_file_lock *lk,
		 struct fuse_lk_out *lo);

#endif /* GCLI_INT_H */
