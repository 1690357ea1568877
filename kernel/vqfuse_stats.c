// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_stats.c - counters in debugfs, one folder per device:
 *
 *   /sys/kernel/debug/vqfuse/<virtioN>/tag
 *   /sys/kernel/debug/vqfuse/<virtioN>/queues      per-queue counters
 *   /sys/kernel/debug/vqfuse/<virtioN>/bad_reply   refused replies by cause
 *
 * Tests read these to see that every request queue carried requests and
 * that no reply was refused.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/virtio.h>
#include "vqfuse.h"
#include "vqfuse_req.h"

static struct dentry *vqf_debugfs_root;

static const char *const vqf_kstat_names[VQF_KS_NR] = {
	[VQF_KS_SENT]		= "sent",
	[VQF_KS_DONE]		= "done",
	[VQF_KS_REQUEUED]	= "requeued",
	[VQF_KS_ENQUEUE_ERR]	= "enqueue_err",
	[VQF_KS_BAD_REPLY]	= "bad_reply",
	[VQF_KS_FORGETS]	= "forgets",
	[VQF_KS_FORGET_REQS]	= "forget_reqs",
	[VQF_KS_INTERRUPTS]	= "interrupts",
	[VQF_KS_ABORTED]	= "aborted",
};

static const char *const vqf_bad_names[VQF_BAD_NR] = {
	[VQF_BAD_NONE]		= "none",
	[VQF_BAD_SHORT]		= "short",
	[VQF_BAD_LEN]		= "len",
	[VQF_BAD_OVERFLOW]	= "overflow",
	[VQF_BAD_UNIQUE]	= "unique",
	[VQF_BAD_ERROR]		= "error",
	[VQF_BAD_ERROR_PAYLOAD]	= "error_payload",
	[VQF_BAD_SHORT_ARG]	= "short_arg",
};

/* One line per queue: "<name> sent=N done=N ... in_flight=N". */
static int vqf_queues_show(struct seq_file *m, void *v)
{
	struct vqf_kfs *fs = m->private;
	unsigned int i, s;

	for (i = 0; i < fs->nvqs; i++) {
		struct vqf_kvq *kvq = &fs->vqs[i];

		seq_printf(m, "%s", kvq->name);
		for (s = 0; s < VQF_KS_NR; s++)
			seq_printf(m, " %s=%lld", vqf_kstat_names[s],
				   (long long)atomic64_read(&kvq->stat[s]));
		seq_printf(m, " in_flight=%ld\n", READ_ONCE(kvq->in_flight));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vqf_queues);

static int vqf_bad_reply_show(struct seq_file *m, void *v)
{
	struct vqf_kfs *fs = m->private;
	unsigned int i;

	for (i = 1; i < VQF_BAD_NR; i++)
		seq_printf(m, "%s %lld\n", vqf_bad_names[i],
			   (long long)atomic64_read(&fs->bad_reply[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vqf_bad_reply);

static int vqf_tag_show(struct seq_file *m, void *v)
{
	struct vqf_kfs *fs = m->private;

	seq_printf(m, "%s\n", fs->tag);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vqf_tag);

void vqf_stats_add_device(struct vqf_kfs *fs)
{
	struct dentry *d;

	d = debugfs_create_dir(dev_name(&fs->vdev->dev), vqf_debugfs_root);
	fs->debugfs = d;
	debugfs_create_file("tag", 0444, d, fs, &vqf_tag_fops);
	debugfs_create_file("queues", 0444, d, fs, &vqf_queues_fops);
	debugfs_create_file("bad_reply", 0444, d, fs, &vqf_bad_reply_fops);
}

void vqf_stats_remove_device(struct vqf_kfs *fs)
{
	debugfs_remove(fs->debugfs);
	fs->debugfs = NULL;
}

int vqf_stats_init(void)
{
	/* debugfs errors are not fatal: the counters are a diagnostic. */
	vqf_debugfs_root = debugfs_create_dir("vqfuse", NULL);
	return 0;
}

void vqf_stats_exit(void)
{
	debugfs_remove(vqf_debugfs_root);
}
