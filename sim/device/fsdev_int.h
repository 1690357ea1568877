/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * fsdev_int.h - what the files of the virtio-fs device model share: the
 * device, its queues and popped chains, and the functions one file calls
 * in another.  Not installed; the API is vqf_fsdev.h.
 *
 *   fsdev.c        creation, features, config, queue descriptions, status
 *                  (start, stop, reset), counters
 *   fsdev_queue.c  popping chains: queue threads, inline and direct kicks,
 *                  polling; the notification queue
 *   fsdev_serve.c  a parsed request: worker pool, backend call, reply, push
 *   fsdev_dax.c    the DAX cache window, served by the device itself
 *   fsdev_fault.c  the fault plan's injection points and its poll timer
 *
 * Threads: one per enabled queue pops chains; a shared pool of workers
 * serves request-queue chains; replies may also arrive from the
 * filesystem's own threads.  Locks, outermost first:
 *   d->lock      status, features, queue descriptions, the work list
 *   d->conn_lock the FUSE connection (read: parse; write: INIT/DESTROY)
 *   q->push_lock one per queue: push + need_notify (the pop side belongs
 *                to the queue's thread alone)
 *   d->dax_lock  the DAX window's map and its host mappings (check,
 *                mmap and commit happen under it as one step)
 *   d->slock     counters
 * With a fault plan, the poll timer (fsdev_tick_main) takes q->pop_lock as
 * an inline kick does; the held completions are under q->push_lock.  With
 * direct kicks, kickers and the queue's thread pop under q->pop_lock and
 * serve outside it.
 */
#ifndef FSDEV_INT_H
#define FSDEV_INT_H

#include "vqf_fsdev.h"

#include <pthread.h>
#include <stdbool.h>

#define FSDEV_MAX_QUEUES	(2 + 64)
#define FSDEV_SEG_CAP		1040	/* 1024 descriptors + region splits */
#define FSDEV_NOTIFY_BACKLOG	64

struct fsq {
	struct vqf_fsdev *d;
	unsigned int idx;
	bool hiprio, notif, set;
	unsigned int num;
	struct vqf_vring_addr addr;
	int kick_fd, call_fd;
	struct vqf_vring_dev *vr;
	struct vqf_vring_dev_stats vs;
	pthread_t thr;
	bool running;
	pthread_mutex_t push_lock;
	pthread_mutex_t pop_lock;	/* inline kicks vs. each other, reset */
	unsigned int seg_cap;
	u64 poll_win;		/* current poll window, ns (queue thread) */

	/* Fault plan state, request queues only; reset by start(). */
	u64 seq;		/* chains popped: the plan's clock (pop_lock) */
	u64 rolled;		/* pre-pop faults rolled for chains < this */
	u16 popped;		/* next avail entry to pop, mod 2^16 */
	u16 base_avail, base_used;	/* where start() begins (vhost-user) */
	const __le16 *avail_idx;	/* the driver's avail->idx */
	u32 stall_left;		/* pop attempts still ignored */
	u32 fill_want;		/* no pops until this many chains wait */
	u32 fill_ticks_left;
	bool deferred;		/* a pop attempt was refused: poll it */
	bool dup_done;		/* (push_lock) */
	bool call_owed;		/* (push_lock) an interrupt was dropped */
	u64 releases;		/* (push_lock) shuffles done */
	unsigned int nheld;	/* (push_lock) */
	struct fsreq *held[VQF_FAULT_HELD_MAX];
};

enum pop_res { POP_EMPTY, POP_GATED, POP_BROKEN };

/* One popped chain, from pop to push. */
struct fsreq {
	struct fsq *q;
	struct fsreq *next;		/* work list */
	struct vqf_chain c;
	struct vqf_dev_req dreq;
	struct vqf_dev_seg *rs;		/* seg_cap each, after seg[] */
	struct vqf_dev_wseg *ws;
	u32 nrs, nws;
	u64 seq;			/* request queues: chain number */
	u32 len;			/* bytes to push (held completions) */
	u32 op;				/* opcode once parsed, else 0 */
	bool injected;			/* a backend fault touched it */
	bool dax_cancel;		/* raised dax_ops->cancel (DESTROY) */
	struct vqf_guard_tx gtx;	/* the guard's pins and rewrites */
	struct vqf_seg seg[];
};

/*
 * An idle worker (fsdev_worker_main, on its stack).  Idle workers wait
 * last-in first-out: a request goes to the one that went idle last, whose
 * stack, caches and CPU are still warm, rather than to the one idle the
 * longest (a shared condition variable wakes in FIFO order, which turns
 * a pool of 64 over one request at a time).  Each waits on its own
 * condition variable but one, the sentinel, which waits on work_cond
 * (what a stop broadcasts) and gets work only when no other is idle.
 * All under d->lock.
 */
struct fsworker {
	pthread_cond_t cond;
	struct fsworker *next, *prev;	/* d->idle, the most recent first */
	bool idle;			/* in d->idle or d->sentinel */
};

struct notif {
	int code;		/* FUSE_NOTIFY_* */
	u32 len;		/* payload bytes */
	u8 buf[];
};

struct vqf_fsdev {
	struct vqf_fsdev_cfg cfg;
	const struct vqf_gmem *mem;
	char tag[VQF_FS_TAG_LEN];
	u64 offered, features;
	u8 status;

	pthread_mutex_t lock;
	pthread_cond_t work_cond;	/* work list non-empty or stopping */
	pthread_cond_t idle_cond;	/* outstanding dropped to 0 */
	struct fsreq *work_head, *work_tail;
	struct fsworker *idle;		/* idle workers but the sentinel */
	struct fsworker *sentinel;	/* set whenever d->idle is */
	unsigned int outstanding;	/* popped, not yet pushed/dropped */
	unsigned int busy;
	bool stopping;
	pthread_t *workers;
	unsigned int nr_workers;
	int stop_fd;

	pthread_rwlock_t conn_lock;
	struct vqf_dev_conn conn;

	pthread_mutex_t nlock;		/* notification backlog */
	struct notif *backlog[FSDEV_NOTIFY_BACKLOG];
	unsigned int nbacklog;

	pthread_mutex_t slock;
	struct vqf_fsdev_stats st;

	unsigned int nq;		/* queues with current features */
	struct fsq q[FSDEV_MAX_QUEUES];

	/* DAX window (cfg.dax_window): reserved at new, unmapped at free. */
	pthread_mutex_t dax_lock;
	bool dax_on;			/* a window (cfg.dax_window) */
	bool dax_remote;		/* ...behind dax_ops->map/unmap */
	bool dax_off;			/* vqf_fsdev_set_dax() (atomic) */
	/* The guest mounted dax=inode and cfg.dax_inode_min is set: its
	 * files' attributes carry FUSE_ATTR_DAX by the daemon's policy
	 * (atomic: set at INIT, read by every reply).
	 */
	bool dax_inode;
	u8 *dax_base;			/* the local window, or NULL */
	struct vqf_dax_dev_map dax_map;	/* (dax_lock) */
	struct vqf_dax_dev_mapping *dax_slots;
	struct vqf_dax_dev_stats dax_st;	/* (dax_lock) */

	bool faulty;			/* cfg.faults was given: plan holds it */
	struct vqf_fault_plan plan;
	struct vqf_guard *guard;		/* per device: per guest */
	pthread_t tick_thr;
	bool tick_running;
};

#define STAT_ADD(d, field, n) do {				\
	pthread_mutex_lock(&(d)->slock);			\
	(d)->st.field += (n);					\
	pthread_mutex_unlock(&(d)->slock);			\
} while (0)

static inline bool fsdev_has_notif(const struct vqf_fsdev *d)
{
	return d->features & (1ULL << VIRTIO_FS_F_NOTIFICATION);
}

/* fsdev.c */
void fsdev_set_needs_reset(struct vqf_fsdev *d);

/* fsdev_queue.c */
struct fsreq *fsdev_req_new(struct fsq *q);
void fsdev_run_queue(struct fsq *q, struct fsreq **spare, bool tick);
void *fsdev_queue_main(void *arg);

/* fsdev_serve.c */
void fsdev_req_free(struct fsreq *r);
void fsdev_free_all(struct vqf_fsdev *d, struct fsreq **v, unsigned int n);
bool fsdev_is_stopping(struct vqf_fsdev *d);
bool fsdev_push_locked(struct fsq *q, struct fsreq *r, bool stopping);
void fsdev_finish(struct fsreq *r, u32 len);
void fsdev_serve(struct vqf_fsdev *d, struct fsreq *r);
void fsdev_handle_chain(struct fsq *q, struct fsreq *r);
void *fsdev_worker_main(void *arg);

/* fsdev_dax.c */
int fsdev_dax_init(struct vqf_fsdev *d, u64 size, bool remote);
void fsdev_dax_reset(struct vqf_fsdev *d);
void fsdev_dax_fini(struct vqf_fsdev *d);
/* The daemon's dax=inode policy on a reply, in place (fsdev_dax.c). */
void fsdev_dax_inode_reply(struct vqf_fsdev *d, const struct fsreq *r,
			   int error, const struct iovec *iov, int iovcnt,
			   size_t len);
bool fsdev_dax_serve(struct vqf_fsdev *d, struct fsreq *r);

/* fsdev_fault.c */
bool fsdev_faulted(const struct fsq *q);
bool fsdev_roll(const struct fsq *q, u64 seq, enum vqf_fault_kind k);
bool fsdev_data_op(const struct fsreq *r);
bool fsdev_fault_may_pop(struct fsq *q, bool tick);
bool fsdev_fault_backend(struct vqf_fsdev *d, struct fsreq *r);
u32 fsdev_fault_short_write(struct vqf_fsdev *d, struct fsreq *r, void *flat,
			    u32 flen);
void fsdev_fault_reply(struct fsq *q, struct fsreq *r);
bool fsdev_release_held_locked(struct fsq *q, struct fsreq **out,
			       unsigned int *nout, bool stopping);
void *fsdev_tick_main(void *arg);

#endif /* FSDEV_INT_H */
