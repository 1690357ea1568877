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

struct fuse_req;
struct fuse_iqueue;
struct fuse_dev;
struct dentry;

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
enum vqf_kstat {
	VQF_KS_SENT,		/* requests added to a virtqueue */
	VQF_KS_DONE,		/* replies taken off a used ring */
	VQF_KS_REQUEUED,	/* add_sgs failed with -ENOSPC/-ENOMEM */
	VQF_KS_ENQUEUE_ERR,	/* request ended by a submission error */
	VQF_KS_BAD_REPLY,	/* replies that failed validation -> -EIO */
	VQF_KS_FORGETS,		/* forget links sent on hiprio */
	VQF_KS_FORGET_REQS,	/* FORGET/BATCH_FORGET requests on hiprio */
	VQF_KS_INTERRUPTS,	/* FUSE_INTERRUPTs not sent (unsupported) */
	VQF_KS_ABORTED,		/* requests ended because the device died */
	VQF_KS_NR,
};

/* Per-virtqueue state. */
struct vqf_kvq {
	spinlock_t lock;		/* vq, queued, connected, in_flight */
	struct virtqueue *vq;
	struct vqf_kfs *fs;
	struct work_struct done_work;
	struct delayed_work dispatch_work;
	struct list_head queued;	/* waiting for ring space, FIFO */
	struct list_head end_reqs;	/* end from process context */
	struct fuse_dev *fud;
	bool connected;
	long in_flight;
	struct completion in_flight_zero;
	atomic64_t stat[VQF_KS_NR];
	char name[VQF_VQ_NAME_LEN];
} ____cacheline_aligned_in_smp;

/* One virtio-fs device. */
struct vqf_kfs {
	struct kref refcount;		/* device + mounted fuse_conn */
	struct list_head list;		/* on vqf_instances */
	struct virtio_device *vdev;
	char *tag;
	struct vqf_kvq *vqs;
	unsigned int nvqs;		/* hiprio + request queues used */
	unsigned int num_request_queues;	/* as offered by the device */
	unsigned int *mq_map;		/* CPU -> request queue index */
	struct fuse_iqueue *fiq;	/* of the mounted conn; hiprio lock */
	struct dentry *debugfs;
	atomic64_t bad_reply[16];	/* by lib/ validation cause */
};

extern struct mutex vqf_mutex;
extern struct list_head vqf_instances;

/* vqfuse_virtio.c */
extern struct virtio_driver vqf_virtio_driver;
extern const struct fuse_iqueue_ops vqf_fiq_ops;
void vqf_fs_put(struct vqf_kfs *fs);
struct vqf_kfs *vqf_find_instance(const char *tag);
void vqf_start_all_queues(struct vqf_kfs *fs);
void vqf_stop_all_queues(struct vqf_kfs *fs);
void vqf_drain_all_queues(struct vqf_kfs *fs);
void vqf_stop_hiprio(struct vqf_kfs *fs);
void vqf_set_fiq(struct vqf_kfs *fs, struct fuse_iqueue *fiq);
void vqf_free_devs(struct vqf_kfs *fs);

/* vqfuse_super.c */
extern struct file_system_type vqf_fs_type;

/* vqfuse_stats.c */
int vqf_stats_init(void);
void vqf_stats_exit(void);
void vqf_stats_add_device(struct vqf_kfs *fs);
void vqf_stats_remove_device(struct vqf_kfs *fs);

static inline void vqf_stat_inc(struct vqf_kvq *kvq, enum vqf_kstat s)
{
	atomic64_inc(&kvq->stat[s]);
}

#endif /* VQFUSE_H */
