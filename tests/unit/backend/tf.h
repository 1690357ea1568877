/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * tf.h - a hand-rolled FUSE "guest" for the backend tests: builds raw
 * request bytes, hands them to vqf_backend_process() and captures the
 * reply, plus one wrapper per operation used by the op suites.
 */
#ifndef VQF_TF_H
#define VQF_TF_H

#include "vqf_backend.h"

#include <linux/fuse.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define TF_MAX_MSG	((1 << 20) + 4096)

struct tf_msg {
	size_t len;
	char buf[TF_MAX_MSG];
};

struct tf_reply {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int calls;
	size_t len;		/* total reply length, header included */
	struct fuse_out_header h;
	char data[TF_MAX_MSG];	/* payload after the header */
	int fail_with;		/* reply_fn returns this (0: success) */
};

struct tf {
	struct vqf_backend *be;
	uint64_t unique;	/* next unique */
	struct tf_msg m;
	struct tf_reply r;
};

void tf_reply_init(struct tf_reply *r);
void tf_reply_destroy(struct tf_reply *r);
int tf_reply_fn(void *ctx, const struct iovec *iov, int iovcnt, size_t len);
/* Waits (bounded: 5 s) until @r has been called @calls times. */
bool tf_reply_wait(struct tf_reply *r, int calls);

void tf_begin(struct tf_msg *m, uint32_t opcode, uint64_t nodeid,
	      uint64_t unique);
void tf_put(struct tf_msg *m, const void *p, size_t n);
void tf_puts(struct tf_msg *m, const char *s);
/* Sets the header's len to the bytes put so far. */
void tf_end(struct tf_msg *m);

void tf_setup(struct tf *t, struct vqf_backend *be);
void tf_teardown(struct tf *t);
/* Sends t->m (tf_end()ed here) with a fresh unique; returns process()'s
 * result; the reply is in t->r. */
int tf_send(struct tf *t);
/* Sends and returns the reply's error (0 or -errno), -1000 if none came. */
int tf_call(struct tf *t);

/* INIT 7.38 with every capability offered; returns the reply error. */
int tf_init(struct tf *t, struct fuse_init_out *out);

int tf_lookup(struct tf *t, uint64_t parent, const char *name,
	      struct fuse_entry_out *e);
void tf_forget(struct tf *t, uint64_t nodeid, uint64_t n);
int tf_getattr(struct tf *t, uint64_t nodeid, struct fuse_attr *a);
int tf_mkdir(struct tf *t, uint64_t parent, const char *name, uint32_t mode,
	     struct fuse_entry_out *e);
int tf_mknod(struct tf *t, uint64_t parent, const char *name, uint32_t mode,
	     uint32_t rdev, struct fuse_entry_out *e);
int tf_symlink(struct tf *t, uint64_t parent, const char *name,
	       const char *target, struct fuse_entry_out *e);
int tf_link(struct tf *t, uint64_t nodeid, uint64_t newparent,
	    const char *name, struct fuse_entry_out *e);
int tf_unlink(struct tf *t, uint64_t parent, const char *name);
int tf_rmdir(struct tf *t, uint64_t parent, const char *name);
int tf_rename(struct tf *t, uint64_t parent, const char *name,
	      uint64_t newparent, const char *newname, uint32_t flags);
int tf_readlink(struct tf *t, uint64_t nodeid, char *buf, size_t size);
int tf_create(struct tf *t, uint64_t parent, const char *name, uint32_t flags,
	      uint32_t mode, struct fuse_entry_out *e, uint64_t *fh);
int tf_open(struct tf *t, uint64_t nodeid, uint32_t flags, uint64_t *fh);
int tf_opendir(struct tf *t, uint64_t nodeid, uint64_t *fh);
/* Returns bytes written or -errno. */
int tf_write(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t off,
	     const void *buf, uint32_t size);
/* Returns bytes read (copied into @buf) or -errno. */
int tf_read(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t off,
	    void *buf, uint32_t size);
int tf_release(struct tf *t, uint64_t nodeid, uint64_t fh, bool dir);
int tf_flush(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t owner);
int tf_fsync(struct tf *t, uint64_t nodeid, uint64_t fh, bool dir);
int tf_setattr(struct tf *t, uint64_t nodeid, const struct fuse_setattr_in *in,
	       struct fuse_attr *a);
int tf_statfs(struct tf *t, uint64_t nodeid, struct fuse_kstatfs *st);
/* READDIR(PLUS): reply payload left in t->r.data, length returned. */
int tf_readdir(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t off,
	       uint32_t size, bool plus);
/* Whether a READDIR(PLUS) payload in t->r lists @name. */
bool tf_dir_has(struct tf *t, size_t len, bool plus, const char *name);
int tf_setxattr(struct tf *t, uint64_t nodeid, const char *name,
		const void *val, uint32_t size, uint32_t flags);
/* size 0: returns the needed size; else the value length, copied. */
int tf_getxattr(struct tf *t, uint64_t nodeid, const char *name, void *val,
		uint32_t size);
int tf_listxattr(struct tf *t, uint64_t nodeid, void *val, uint32_t size);
int tf_removexattr(struct tf *t, uint64_t nodeid, const char *name);
int tf_fallocate(struct tf *t, uint64_t nodeid, uint64_t fh, uint32_t mode,
		 uint64_t off, uint64_t len);
/* Returns 0 and the offset in *res, or -errno. */
int tf_lseek(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t off,
	     uint32_t whence, uint64_t *res);
int tf_copy_file_range(struct tf *t, uint64_t nin, uint64_t fhin,
		       uint64_t offin, uint64_t nout, uint64_t fhout,
		       uint64_t offout, uint64_t len);
int tf_getlk(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t owner,
	     struct fuse_file_lock *lk);
int tf_setlk(struct tf *t, uint64_t nodeid, uint64_t fh, uint64_t owner,
	     const struct fuse_file_lock *lk, bool sleep, bool flock);

#endif /* VQF_TF_H */
