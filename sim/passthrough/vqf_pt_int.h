/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_pt_int.h - internals of vqf_passthrough shared by its files: the
 * inode and file-handle tables (vqf_pt_table.c) and data I/O
 * (vqf_pt_io.c).
 */
#ifndef VQF_PT_INT_H
#define VQF_PT_INT_H

#include "vqf_passthrough.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A POSIX lock owner's own open file: OFD locks on it act as its locks. */
struct pt_plock {
	uint64_t owner;
	int fd;
	struct pt_plock *next;
};

struct pt_inode {
	int fd;			/* O_PATH | O_NOFOLLOW */
	dev_t dev;
	ino_t ino;
	mode_t type;		/* S_IFMT bits */
	uint64_t nodeid;
	/* Under pt->lock: */
	uint64_t nlookup;	/* guest references */
	uint32_t refs;		/* table (while nlookup > 0) + users */
	struct pt_inode *hnext;
	/* Lock owners, under plock_lock. */
	pthread_mutex_t plock_lock;
	struct pt_plock *plocks;
};

struct pt_file {
	int fd;
	struct pt_inode *inode;	/* holds a ref */
	uint64_t fh;
	uint32_t refs;		/* under pt->lock */
	/* Directories only, under dlock: */
	pthread_mutex_t dlock;
	DIR *dir;
	struct dirent *entry;	/* read but not yet sent */
	off_t offset;
};

struct pt_slot {
	void *obj;
	uint32_t gen;
	uint32_t next_free;
};

struct pt_table {
	struct pt_slot *slots;
	uint32_t len, cap, free_head;
};

#define PT_HASH 4096

struct vqf_pt {
	int proc_fd;		/* /proc/self/fd, O_PATH */
	double timeout;
	bool uring;
	bool creds;		/* switch fsuid/fsgid for creations */
	bool host_callers;	/* vqf_pt_config.host_callers */
	bool nodev;		/* vqf_pt_config.nodev */
	/* The process's supplementary groups, restored after a switch. */
	int ngroups;
	gid_t *groups;
	bool openat2;		/* the kernel has openat2() */
	unsigned int lock_wait_ms;	/* vqf_pt_config.lock_wait_ms */
	size_t uring_min, io_chunk;

	pthread_mutex_t lock;	/* tables and hash */
	struct pt_table inodes;
	struct pt_table files;
	struct pt_inode *hash[PT_HASH];
	struct pt_inode *root;

	pthread_mutex_t stats_lock;
	struct vqf_pt_stats stats;
};

#define PT_STAT(pt, field) do {					\
	pthread_mutex_lock(&(pt)->stats_lock);			\
	(pt)->stats.field++;					\
	pthread_mutex_unlock(&(pt)->stats_lock);		\
} while (0)

/* vqf_pt_table.c */
int pt_tables_init(struct vqf_pt *pt, int rootfd);
void pt_tables_fini(struct vqf_pt *pt);
/* Every file and inode but the root dropped: a session's end. */
void pt_tables_drop(struct vqf_pt *pt);
/* Referenced inode for a guest nodeid, or NULL with *err set. */
struct pt_inode *pt_inode_get(struct vqf_pt *pt, uint64_t nodeid, int *err);
void pt_inode_put(struct vqf_pt *pt, struct pt_inode *in);
/*
 * Finds or adds the inode of @pathfd (an O_PATH fd, consumed) and counts
 * one guest lookup on it.  Returns the inode with a user ref, or NULL
 * with *err.
 */
struct pt_inode *pt_inode_lookup_fd(struct vqf_pt *pt, int pathfd,
				    const struct stat *st, int *err);
/* Drops @n guest lookups; forged/stale ids are counted and ignored. */
void pt_inode_forget(struct vqf_pt *pt, uint64_t nodeid, uint64_t n);

/* Registers an open fd (consumed) of @in; returns the file or NULL. */
struct pt_file *pt_file_new(struct vqf_pt *pt, struct pt_inode *in, int fd,
			    DIR *dir);
/* Referenced file for @fh, which must belong to @nodeid. */
struct pt_file *pt_file_get(struct vqf_pt *pt, uint64_t fh, uint64_t nodeid,
			    int *err);
void pt_file_put(struct vqf_pt *pt, struct pt_file *f);
/* Removes @fh from the table (RELEASE); the last put closes it. */
int pt_file_release(struct vqf_pt *pt, uint64_t fh, uint64_t nodeid);

/* vqf_pt_io.c */
bool pt_io_uring_works(void);
ssize_t pt_io_read(struct vqf_pt *pt, int fd, void *buf, size_t len,
		   off_t off);
ssize_t pt_io_write(struct vqf_pt *pt, int fd, const void *buf, size_t len,
		    off_t off);

#endif /* VQF_PT_INT_H */
