/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * hub_int.h - the hub's state, shared by hub.c (requests, replies, nodes)
 * and hub_watch.c (edits made directly on the host).
 */
#ifndef VQF_HUB_INT_H
#define VQF_HUB_INT_H

#include "vqf_hub.h"

#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <linux/fs.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE		(1 << 1)
#endif

#define HUB_BUCKETS		4096	/* power of two */

/*
 * What the hub knows of a nodeid some guest holds a lookup on.  Three
 * maps find it: by nodeid, by host inode number (inotify reports names,
 * stat() turns them into inodes) and by the last (parent, name) it was
 * handed out under (a deleted name can no longer be stat()ed).
 */
struct hub_node {
	u64 nodeid;
	u64 slot;		/* version index; 0: none */
	u64 total;		/* lookups over all ports */
	u64 per_port[VQF_HUB_MAX_PORTS];
	u64 ino;		/* st_ino on the host, 0: unknown */
	u64 size;		/* with size_set: the file's size, last seen */
	bool size_set;
	u32 resizing;		/* served size changes in the backend: the
				 * watcher leaves the size to their replies */
	u32 wmaps;		/* writable DAX mappings in guests' windows */
	u64 parent;		/* with name: where it was last seen */
	char *name;
	struct hub_node *next_id, *next_ino, *next_name;
	/* Rescan mode: what lstat() said last time. */
	bool sig_set;
	struct {
		u64 ino, size, mtime, ctime;
		u32 mode, nlink, uid, gid;
	} sig;
};

/* A request in the backend. */
struct hub_rec {
	struct hub_rec *next;		/* port->inflight */
	struct vqf_hub_port *port;
	vqf_backend_reply_fn reply;
	void *ctx;
	u64 unique;			/* the backend's */
	u64 guest_unique;
	u32 opcode;
	u64 nodeid;			/* in header: the (parent) inode */
	u64 nodeid2;			/* LINK's inode, RENAME's new dir,
					 * COPY_FILE_RANGE's destination */
	char *name, *name2;
	u64 victim, victim2;		/* what the names bound before */
	bool trunc, exchange;
	bool size_set;			/* SETATTR with FATTR_SIZE */
	/* The size change the request makes, for cfg.resize_hook */
	bool resize;
	u64 old_size, new_size;
	u64 epoch;			/* h->epoch when sent */
	u64 own;			/* bumps this reply made itself */
};

struct vqf_hub_port {
	struct vqf_hub *h;
	unsigned int idx;
	bool versions;			/* negotiated at INIT */
	struct hub_rec *inflight;
};

struct hub_watch_dir;

struct vqf_hub {
	struct vqf_hub_cfg cfg;
	pthread_mutex_t lock, init_lock;
	bool inited;
	atomic_ullong next_unique;
	struct vqf_hub_port *ports[VQF_HUB_MAX_PORTS];
	struct hub_node *by_id[HUB_BUCKETS];
	struct hub_node *by_ino[HUB_BUCKETS];
	struct hub_node *by_name[HUB_BUCKETS];
	/* Bumps so far: a reply built while it moved may predate it. */
	u64 epoch;

	bool has_table;
	int memfd;
	s64 *table;
	const s64 *table_ro;
	u64 table_size;
	u64 *bitmap;
	struct vqf_ver_dev vd;

	/* hub_watch.c: under watch_lock, except the thread's own fields. */
	pthread_mutex_t watch_lock;
	enum vqf_hub_watch mode;	/* what actually runs */
	int inotify_fd, stop_fd;
	struct hub_watch_dir **dirs;	/* by watch descriptor */
	unsigned int ndirs;
	pthread_t thr;
	bool thr_running;

	struct vqf_hub_stats st;
};

/* hub_nodes.c, all under h->lock */
struct hub_node *hub_node_find(struct vqf_hub *h, u64 nodeid);
/* The node of @nodeid, created (with a slot) when new; NULL on ENOMEM. */
struct hub_node *hub_node_get(struct vqf_hub *h, u64 nodeid);
void hub_node_free(struct vqf_hub *h, struct hub_node *n);
int hub_root_node(struct vqf_hub *h);
void hub_name_clear(struct vqf_hub *h, struct hub_node *n);
void hub_name_set(struct vqf_hub *h, struct hub_node *n, u64 parent,
		  const char *name);
void hub_ino_set(struct vqf_hub *h, struct hub_node *n, u64 ino);
u64 hub_forget_locked(struct vqf_hub *h, unsigned int p, u64 nodeid,
		      u64 count);
struct hub_node *hub_node_by_ino(struct vqf_hub *h, u64 ino);
struct hub_node *hub_node_by_name(struct vqf_hub *h, u64 parent,
				  const char *name);
void hub_bump(struct vqf_hub *h, struct hub_node *n, bool host);
void hub_bump_all(struct vqf_hub *h);
/* hub.c */
u64 hub_unique(struct vqf_hub *h);
void hub_backend_forget(struct vqf_hub *h, u64 nodeid, u64 count);


/* hub_watch.c */
int hub_watch_start(struct vqf_hub *h);
void hub_watch_stop(struct vqf_hub *h);

#endif /* VQF_HUB_INT_H */
