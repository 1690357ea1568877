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

static struct dentry *vqfk_debugfs_root;

static const char *const vqfk_kstat_names[VQF_KS_NR] = {
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

static const struct {
	int err;
	const char *name;
} vqfk_bad[VQF_BAD_NR] = {
	[VQF_BAD_SHORT_HEADER]	= { -ENODATA, "short_header" },
	[VQF_BAD_LEN_OVERFLOW]	= { -EOVERFLOW, "len_overflow" },
	[VQF_BAD_PAGE_OVERFLOW]	= { -EFBIG, "page_overflow" },
	[VQF_BAD_LEN_MISMATCH]	= { -EBADMSG, "len_mismatch" },
	[VQF_BAD_UNIQUE]	= { -ENOMSG, "unique_mismatch" },
	[VQF_BAD_ERROR]		= { -ERANGE, "bad_error" },
	[VQF_BAD_ERROR_PAYLOAD]	= { -EPROTO, "error_payload" },
	[VQF_BAD_SHORT_ARG]	= { -EREMOTEIO, "short_fixed_arg" },
	[VQF_BAD_OTHER]		= { 0, "other" },
};

enum vqfk_bad_reply vqfk_bad_index(int err)
{
	unsigned int i;

	for (i = 0; i < VQF_BAD_OTHER; i++)
		if (vqfk_bad[i].err == err)
			return i;
	return VQF_BAD_OTHER;
}

/*
 * One line per queue: "<name> sent=N done=N ... in_flight=N blocks=N
 * block_allocs=N" (request blocks cached now, and kmalloc'ed so far).
 */
static int vqfk_queues_show(struct seq_file *m, void *v)
{
	struct vqfk_kfs *fs = m->private;
	unsigned int i, s;

	for (i = 0; i < fs->nvqs; i++) {
		struct vqfk_kvq *kvq = &fs->vqs[i];

		seq_printf(m, "%s", kvq->name);
		for (s = 0; s < VQF_KS_NR; s++)
			seq_printf(m, " %s=%lld", vqfk_kstat_names[s],
				   (long long)atomic64_read(&kvq->stat[s]));
		seq_printf(m, " in_flight=%ld blocks=%u block_allocs=%lu\n",
			   READ_ONCE(kvq->in_flight), READ_ONCE(kvq->kreqs.nr),
			   READ_ONCE(kvq->kreqs.allocs));
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vqfk_queues);

static int vqfk_bad_reply_show(struct seq_file *m, void *v)
{
	struct vqfk_kfs *fs = m->private;
	unsigned int i;

	for (i = 0; i < VQF_BAD_NR; i++)
		seq_printf(m, "%s %lld\n", vqfk_bad[i].name,
			   (long long)atomic64_read(&fs->bad_reply[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vqfk_bad_reply);

static int vqfk_tag_show(struct seq_file *m, void *v)
{
	struct vqfk_kfs *fs = m->private;

	seq_printf(m, "%s%s\n", fs->tag, READ_ONCE(fs->dead) ? " dead" : "");
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vqfk_tag);

void vqfk_stats_add_device(struct vqfk_kfs *fs)
{
	struct dentry *d;

	d = debugfs_create_dir(dev_name(&fs->vdev->dev), vqfk_debugfs_root);
	fs->debugfs = d;
	debugfs_create_file("tag", 0444, d, fs, &vqfk_tag_fops);
	debugfs_create_file("queues", 0444, d, fs, &vqfk_queues_fops);
	debugfs_create_file("bad_reply", 0444, d, fs, &vqfk_bad_reply_fops);
	vqfk_ver_debugfs(fs, d);
}

void vqfk_stats_remove_device(struct vqfk_kfs *fs)
{
	debugfs_remove(fs->debugfs);
	fs->debugfs = NULL;
}

int vqfk_stats_init(void)
{
	/* debugfs errors are not fatal: the counters are a diagnostic. */
	vqfk_debugfs_root = debugfs_create_dir("vqfuse", NULL);
	return 0;
}

void vqfk_stats_exit(void)
{
	debugfs_remove(vqfk_debugfs_root);
}
