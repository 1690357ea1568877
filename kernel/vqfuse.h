/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vqfuse.h - state shared by the glue files of vqfuse.ko.
 *
 * vqfuse.ko is a virtio-fs transport for the 6.1 FUSE core (fuse.ko): a
 * virtio driver for VIRTIO_ID_FS plus the filesystem type "vqfuse".  What
 * can be portable (request layout, reply validation, FORGET batching) lives
 * in lib/; this glue turns it into scatterlists, virtqueues and fuse_req
 * completions.
 */
#ifndef VQFUSE_H
#define VQFUSE_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/completion.h>
#include <linux/virtio.h>
#include <linux/atomic.h>
#include "vqf_forget.h"
#include "vqf_version.h"
#include "vqfuse_req.h"

struct fuse_req;
struct fuse_iqueue;
struct fuse_dev;
struct dentry;
struct dax_device;

#define VQF_VQ_NAME_LEN	24

enum {
	VQF_VQ_HIPRIO,
	VQF_VQ_REQUEST,
};

/*
 * Counters, exported read-only through debugfs (vqfuse_stats.c).  Reply
 * validation failures are counted per cause so that a misbehaving device
 * is visible without a debugger.
 */
enum vqfk_kstat {
	VQF_KS_SENT,		/* requests added to a virtqueue */
	VQF_KS_DONE,		/* replies taken off a used ring */
	VQF_KS_REQUEUED,	/* ring full or no memory: sent later */
	VQF_KS_ENQUEUE_ERR,	/* request ended by a submission error */
	VQF_KS_BAD_REPLY,	/* replies that failed validation -> -EIO */
	VQF_KS_FORGETS,		/* inodes forgotten on hiprio */
	VQF_KS_FORGET_REQS,	/* FORGET/BATCH_FORGET requests on hiprio */
	VQF_KS_INTERRUPTS,	/* FUSE_INTERRUPTs not sent (unsupported) */
	VQF_KS_ABORTED,		/* requests ended because the device died */
	VQF_KS_NR,
};

/*
 * Replies lib/ refused (vqf_req_complete()'s errnos), by cause; each ends
 * its request with -EIO.
 */
enum vqfk_bad_reply {
	VQF_BAD_SHORT_HEADER,		/* -ENODATA */
	VQF_BAD_LEN_OVERFLOW,		/* -EOVERFLOW */
	VQF_BAD_PAGE_OVERFLOW,		/* -EFBIG */
	VQF_BAD_LEN_MISMATCH,		/* -EBADMSG */
	VQF_BAD_UNIQUE,			/* -ENOMSG */
	VQF_BAD_ERROR,			/* -ERANGE */
	VQF_BAD_ERROR_PAYLOAD,		/* -EPROTO */
	VQF_BAD_SHORT_ARG,		/* -EREMOTEIO */
	VQF_BAD_OTHER,			/* anything else (a glue bug) */
	VQF_BAD_NR,
};

/* Per-virtqueue state. */
struct vqfk_kvq {
	spinlock_t lock;		/* vq, queued, connected, in_flight */
	struct virtqueue *vq;
	struct vqfk_kfs *fs;
	struct work_struct done_work;
	struct delayed_work dispatch_work;
	struct list_head queued;	/* waiting for ring space, FIFO */
	struct list_head end_reqs;	/* end from process context */
	struct fuse_dev *fud;
	bool connected;
	long in_flight;
	unsigned long progress;		/* jiffies of the last completion */
	struct completion in_flight_zero;
	struct vqfk_kreq_cache kreqs;	/* request blocks (vqfuse_req.h) */
	atomic64_t stat[VQF_KS_NR];
	char name[VQF_VQ_NAME_LEN];
} ____cacheline_aligned_in_smp;

/* One virtio-fs device. */
struct vqfk_kfs {
	struct kref refcount;		/* device + mounted fuse_conn */
	struct list_head list;		/* on vqfk_instances */
	struct virtio_device *vdev;
	char *tag;
	struct vqfk_kvq *vqs;
	/* FORGETs taken off the fuse_iqueue, owned by forget_lock's holder */
	struct mutex forget_lock;
	struct vqf_forget_queue forgets;
	struct fuse_forget_one *forget_slots;
	bool forgets_waiting;		/* send them on the next completion */
	unsigned int nvqs;		/* hiprio + request queues used */
	unsigned int num_request_queues;	/* as offered by the device */
	unsigned int *mq_map;		/* CPU -> request queue index */
	struct fuse_iqueue *fiq;	/* of the mounted conn; hiprio lock */
	struct dentry *debugfs;
	atomic64_t bad_reply[VQF_BAD_NR];
	struct delayed_work watchdog;	/* see dead_timeout */
	bool dead;			/* reset by the watchdog: for good */
	/* DAX window (vqfuse_dax.c), NULL/0 without shm region 0 */
	struct dax_device *dax_dev;
	void *window_kaddr;
	phys_addr_t window_phys_addr;
	size_t window_len;
	/* version table (vqfuse_ver.c), NULL without shm region 1 */
	struct vqf_ver_table *ver_table;
	struct vqf_ver_table ver_table_s;
	u64 ver_rejected;		/* regions lib refused */
};

extern struct mutex vqfk_mutex;
extern struct list_head vqfk_instances;

/* vqfuse_virtio.c */
extern struct virtio_driver vqfk_virtio_driver;
extern const struct fuse_iqueue_ops vqfk_fiq_ops;
void vqfk_fs_put(struct vqfk_kfs *fs);
struct vqfk_kfs *vqfk_find_instance(const char *tag);
void vqfk_start_all_queues(struct vqfk_kfs *fs);
void vqfk_stop_all_queues(struct vqfk_kfs *fs);
void vqfk_drain_all_queues(struct vqfk_kfs *fs);
void vqfk_stop_hiprio(struct vqfk_kfs *fs);
void vqfk_set_fiq(struct vqfk_kfs *fs, struct fuse_iqueue *fiq);
void vqfk_free_devs(struct vqfk_kfs *fs);
void vqfk_watchdog_start(struct vqfk_kfs *fs);
void vqfk_watchdog_stop(struct vqfk_kfs *fs);

/* vqfuse_dax.c */
int vqfk_dax_setup(struct virtio_device *vdev, struct vqfk_kfs *fs);

/* vqfuse_ver.c */
int vqfk_ver_setup(struct virtio_device *vdev, struct vqfk_kfs *fs);
void vqfk_ver_debugfs(struct vqfk_kfs *fs, struct dentry *dir);

/* vqfuse_super.c */
extern struct file_system_type vqfk_fs_type;

/* vqfuse_stats.c */
int vqfk_stats_init(void);
void vqfk_stats_exit(void);
void vqfk_stats_add_device(struct vqfk_kfs *fs);
void vqfk_stats_remove_device(struct vqfk_kfs *fs);
enum vqfk_bad_reply vqfk_bad_index(int err);

static inline void vqfk_stat_inc(struct vqfk_kvq *kvq, enum vqfk_kstat s)
{
	atomic64_inc(&kvq->stat[s]);
}

#endif /* VQFUSE_H */
