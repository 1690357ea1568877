/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vqfuse_compat.h - the kernel API differences vqfuse.ko builds across.
 *
 * One source builds for every kernel series with an fs/fuse series
 * (kernel/fuse-X.Y/): today Debian's 6.1 and 6.12 LTS.  Every place the
 * two disagree is here, behind a kernel version check
 * (VQFK_KERNEL_AT_LEAST()) that says what changed, when and why; the glue
 * calls the vqfk_* names below and reads as if there were one kernel.  The
 * 6.1 branches do what the glue did before this file existed.  lib/ needs
 * none of it.
 *
 * Compared with upstream's fs/fuse/virtio_fs.c of each series, the driver
 * that vqfuse_virtio.c does the work of.
 */
#ifndef VQFUSE_COMPAT_H
#define VQFUSE_COMPAT_H

#include <linux/version.h>
#include <linux/slab.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include "fuse_i.h"

struct vqf_ver_table;

/*
 * True when building for kernel a.b.c or later.  checkpatch.pl warns on
 * every LINUX_VERSION_CODE (in-tree code is only built for the kernel it
 * is merged into); kernel/checkpatch.sh ignores that warning for this
 * file alone, the one place an out-of-tree module needs it.
 */
#define VQFK_KERNEL_AT_LEAST(a, b, c)					\
	(KERNEL_VERSION(a, b, c) <= LINUX_VERSION_CODE)

/*
 * struct fuse_iqueue_ops: how fuse.ko hands over requests, FORGETs and
 * INTERRUPTs.
 *
 * Up to 6.10 the core queued them itself under fiq->lock (request on
 * fiq->pending with its unique already set, forget on fiq->forget_list,
 * interrupt on fiq->interrupts) and then called
 * ->wake_{pending,forget,interrupt}_and_unlock(fiq), which drop the lock.
 * Since 6.11 (5de8acb41c86 "fuse: cleanup request queuing towards
 * virtiofs") the core calls ->send_req(fiq, req), ->send_forget(fiq, link)
 * and ->send_interrupt(fiq, req) without the lock and queues nothing: the
 * transport assigns the unique itself (except for FUSE_NOTIFY_REPLY, whose
 * unique is the server's) and clears FR_PENDING, as /dev/fuse's
 * fuse_dev_queue_req() does; it owns a forget link from then on.
 *
 * VQFK_DEFINE_FIQ_OPS() takes vqfuse's three version-free handlers
 *	void req_fn(struct vqfk_kfs *fs, struct fuse_req *req);
 *	void forget_fn(struct vqfk_kfs *fs);	a forget is on the fiq;
 *						called without fiq->lock, in
 *						the forgetting task (may sleep)
 *	void interrupt_fn(struct vqfk_kfs *fs);
 * plus ->release, and defines the const struct fuse_iqueue_ops @name whose
 * callbacks adapt each kernel's calling convention to them.  Forgets stay
 * on fiq->forget_list in both: the hiprio path takes them from there
 * (vqfk_dequeue_forget()), and fuse_abort_conn() frees what is left.
 */
#if !VQFK_KERNEL_AT_LEAST(6, 11, 0)
#define VQFK_DEFINE_FIQ_OPS(name, req_fn, forget_fn, interrupt_fn,	\
			    release_fn)					\
static void name##_wake_pending_and_unlock(struct fuse_iqueue *fiq)	\
__releases(fiq->lock)							\
{									\
	struct fuse_req *req;						\
									\
	req = list_last_entry(&fiq->pending, struct fuse_req, list);	\
	clear_bit(FR_PENDING, &req->flags);				\
	list_del_init(&req->list);					\
	WARN_ON(!list_empty(&fiq->pending));				\
	spin_unlock(&fiq->lock);					\
	req_fn(fiq->priv, req);						\
}									\
									\
static void name##_wake_forget_and_unlock(struct fuse_iqueue *fiq)	\
__releases(fiq->lock)							\
{									\
	spin_unlock(&fiq->lock);					\
	forget_fn(fiq->priv);						\
}									\
									\
static void name##_wake_interrupt_and_unlock(struct fuse_iqueue *fiq)	\
__releases(fiq->lock)							\
{									\
	interrupt_fn(fiq->priv);					\
	spin_unlock(&fiq->lock);					\
}									\
									\
const struct fuse_iqueue_ops name = {					\
	.wake_forget_and_unlock = name##_wake_forget_and_unlock,	\
	.wake_interrupt_and_unlock = name##_wake_interrupt_and_unlock,	\
	.wake_pending_and_unlock = name##_wake_pending_and_unlock,	\
	.release = release_fn,						\
}
#else
#define VQFK_DEFINE_FIQ_OPS(name, req_fn, forget_fn, interrupt_fn,	\
			    release_fn)					\
static void name##_send_req(struct fuse_iqueue *fiq,			\
			    struct fuse_req *req)			\
{									\
	if (req->in.h.opcode != FUSE_NOTIFY_REPLY)			\
		req->in.h.unique = fuse_get_unique(fiq);		\
	clear_bit(FR_PENDING, &req->flags);				\
	req_fn(fiq->priv, req);						\
}									\
									\
/* What fuse_queue_forget() did under fiq->lock before 6.11. */		\
static void name##_send_forget(struct fuse_iqueue *fiq,			\
			       struct fuse_forget_link *link)		\
{									\
	spin_lock(&fiq->lock);						\
	if (fiq->connected) {						\
		fiq->forget_list_tail->next = link;			\
		fiq->forget_list_tail = link;				\
		spin_unlock(&fiq->lock);				\
		forget_fn(fiq->priv);					\
	} else {							\
		spin_unlock(&fiq->lock);				\
		kfree(link);						\
	}								\
}									\
									\
static void name##_send_interrupt(struct fuse_iqueue *fiq,		\
				  struct fuse_req *req)			\
{									\
	interrupt_fn(fiq->priv);					\
}									\
									\
const struct fuse_iqueue_ops name = {					\
	.send_forget = name##_send_forget,				\
	.send_interrupt = name##_send_interrupt,			\
	.send_req = name##_send_req,					\
	.release = release_fn,						\
}
#endif

/*
 * One forget off fiq->forget_list; fiq->lock held, the list not empty.
 * fuse_dequeue_forget() is static since 6.11 (5de8acb41c86: virtiofs was
 * its only other user and now gets each link through ->send_forget); this
 * is its max = 1 case.
 */
static inline struct fuse_forget_link *
vqfk_dequeue_forget(struct fuse_iqueue *fiq)
{
#if !VQFK_KERNEL_AT_LEAST(6, 11, 0)
	return fuse_dequeue_forget(fiq, 1, NULL);
#else
	struct fuse_forget_link *link = fiq->forget_list_head.next;

	fiq->forget_list_head.next = link->next;
	link->next = NULL;
	if (!fiq->forget_list_head.next)
		fiq->forget_list_tail = &fiq->forget_list_head;
	return link;
#endif
}

/*
 * A request id for a request vqfuse builds itself (BATCH_FORGET), called
 * without fiq->lock.  fuse_get_unique() wants the caller to hold fiq->lock
 * up to 6.10 and takes it itself since 6.11 (5de8acb41c86, with its
 * fuse_get_unique_locked() kept static).
 */
static inline u64 vqfk_get_unique(struct fuse_iqueue *fiq)
{
#if !VQFK_KERNEL_AT_LEAST(6, 11, 0)
	u64 unique;

	spin_lock(&fiq->lock);
	unique = fuse_get_unique(fiq);
	spin_unlock(&fiq->lock);
	return unique;
#else
	return fuse_get_unique(fiq);
#endif
}

/*
 * The request queues' interrupts.  6.1's virtiofs has one request queue
 * and gives it an ordinary interrupt; since 6.11 (529395d2ae64 "virtio-fs:
 * add multi-queue support") every request queue gets a managed one, spread
 * over the CPUs, a single queue too.  vqfuse does as the kernel's own
 * virtiofs does, so that both land their interrupts on the same CPU: which
 * CPU that is decides between a local and a cross-CPU wake-up of every
 * synchronous caller.
 */
#define VQFK_MANAGED_IRQ_ALWAYS	VQFK_KERNEL_AT_LEAST(6, 11, 0)

/*
 * virtio_find_vqs(): since 6.11 the per-queue callbacks and names come as
 * one array of struct virtqueue_info (c502eb85c34e "virtio: introduce
 * virtqueue_info struct and find_vqs_info() config op", then "virtio:
 * rename virtio_find_vqs_info() to virtio_find_vqs()"); up to 6.10 as two
 * parallel arrays.  vqfuse gives every queue the same @callback.
 */
static inline int vqfk_find_vqs(struct virtio_device *vdev, unsigned int nvqs,
				struct virtqueue *vqs[],
				vq_callback_t *callback,
				const char *const names[],
				struct irq_affinity *desc)
{
#if !VQFK_KERNEL_AT_LEAST(6, 11, 0)
	vq_callback_t **callbacks;
	unsigned int i;
	int ret;

	callbacks = kmalloc_array(nvqs, sizeof(callbacks[0]), GFP_KERNEL);
	if (!callbacks)
		return -ENOMEM;
	for (i = 0; i < nvqs; i++)
		callbacks[i] = callback;
	ret = virtio_find_vqs(vdev, nvqs, vqs, callbacks, names, desc);
	kfree(callbacks);
	return ret;
#else
	struct virtqueue_info *info;
	unsigned int i;
	int ret;

	info = kcalloc(nvqs, sizeof(info[0]), GFP_KERNEL);
	if (!info)
		return -ENOMEM;
	for (i = 0; i < nvqs; i++) {
		info[i].name = names[i];
		info[i].callback = callback;
	}
	ret = virtio_find_vqs(vdev, nvqs, vqs, info, desc);
	kfree(info);
	return ret;
#endif
}

/*
 * The memory of a request's page arg.  Until 6.12.109 struct
 * fuse_args_pages holds pages[], descs[] and num_pages.  6.12.110 took
 * mainline 6.14's "fuse: support folios in struct fuse_args_pages and
 * fuse_copy_pages()" and "fuse: convert readdir to use folios" (Debian
 * changelog of linux 6.12.110): a union of those with folios[],
 * folio_descs[] and num_folios, chosen by ap->uses_folios, which
 * fuse_readdir_uncached() sets.  Upstream 6.12's virtio_fs.c reads
 * ap->pages[] either way and relies on the folio pointer aliasing its head
 * page; vqfuse asks.  A folio piece is (head page, offset into the folio),
 * as fuse_copy_pages() hands it to fuse_copy_page(); lib/ takes any
 * offset, and the scatterlist and the zeroing span the folio.
 */
#if VQFK_KERNEL_AT_LEAST(6, 12, 110)
#define VQFK_AP_FOLIOS 1
#endif

static inline unsigned int vqfk_ap_count(const struct fuse_args_pages *ap)
{
#ifdef VQFK_AP_FOLIOS
	if (ap->uses_folios)
		return ap->num_folios;
#endif
	return ap->num_pages;
}

static inline void vqfk_ap_piece(const struct fuse_args_pages *ap,
				 unsigned int i, struct page **page,
				 u32 *offset, u32 *length)
{
#ifdef VQFK_AP_FOLIOS
	if (ap->uses_folios) {
		*page = folio_page(ap->folios[i], 0);
		*offset = ap->folio_descs[i].offset;
		*length = ap->folio_descs[i].length;
		return;
	}
#endif
	*page = ap->pages[i];
	*offset = ap->descs[i].offset;
	*length = ap->descs[i].length;
}

/*
 * Which fs/fuse vqfuse.ko is built against (kernel/Makefile sets
 * VQF_FUSE_SERIES through kernel/Kbuild; 1 when it does not say): 1, the
 * patched fuse.ko of kernel/fuse-X.Y, loaded as a module; 0, a kernel
 * whose fs/fuse is built in (Debian's 6.12 images: CONFIG_FUSE_FS=y), so
 * no module can replace it and vqfuse.ko uses it as it is, unpatched
 * fuse_i.h included.  What only the series provides is then absent: the
 * shared version table (fuse_conn.ver_table, fs/fuse 0010-0013), which
 * vqfuse.ko then leaves unused as with version_table=0.  DAX needs no
 * series: the in-tree dax.c manages the window's ranges itself.
 */
#ifndef VQF_FUSE_SERIES
#define VQF_FUSE_SERIES 1
#endif

static inline bool vqfk_fuse_has_ver_table(void)
{
	return VQF_FUSE_SERIES;
}

/* Hands a mount's fuse_conn the device's table (NULL: none) before INIT. */
static inline void vqfk_conn_set_ver_table(struct fuse_conn *fc,
					   struct vqf_ver_table *t)
{
#if VQF_FUSE_SERIES
	fc->ver_table = t;
#endif
}

/*
 * dax=auto (fs/fuse 0007: FUSE_DAX_AUTO, lib's policy choosing between the
 * window and FUSE READ/WRITE per range) needs the series too: a built-in
 * fuse knows dax=always, never and inode only, and vqfuse.ko's "dax"
 * option then refuses "auto" as an unknown value.
 */
#define VQFK_DAX_AUTO VQF_FUSE_SERIES

#endif /* VQFUSE_COMPAT_H */
