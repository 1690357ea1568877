// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_ver.c - the device's shared version table for fuse.ko.
 *
 * A device may expose a table of s64 versions as shared memory region
 * VQF_VIRTIO_FS_SHMCAP_ID_VERSION (1), bumped by the device on every
 * metadata change (docs/version-table.md).  The guest only reads it: the
 * pointers handed to fuse.ko are const and lib/vqf_version.c never stores
 * through them.  fuse.ko asks INIT for the extension only when a mount's
 * fc->ver_table is set, so a device without the region works as before.
 */
#include <linux/debugfs.h>
#include <linux/io.h>
#include <linux/seq_file.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include "fuse_i.h"
#include "vqfuse.h"
#include "vqfuse_compat.h"

/*
 * version_table=0 leaves a device's table unused, so one guest can compare
 * the same daemon with and without it (the two-guest QEMU test does).
 */
static bool version_table = true;
module_param(version_table, bool, 0444);
MODULE_PARM_DESC(version_table,
		 "use the device's shared version table when it has one (default 1)");

/*
 * vqfk_ver_setup() - called from probe.  No region, or one lib refuses
 * (misaligned, not a whole number of slots), leaves fs->ver_table NULL.
 */
int vqfk_ver_setup(struct virtio_device *vdev, struct vqfk_kfs *fs)
{
	struct virtio_shm_region reg;
	void *base;
	int err;

	fs->ver_table = NULL;
	if (!version_table) {
		dev_notice(&vdev->dev, "vqfuse: version table not used (version_table=0)\n");
		return 0;
	}
	if (!vqfk_fuse_has_ver_table()) {
		dev_notice(&vdev->dev, "vqfuse: version table not used (the kernel's own fuse has none)\n");
		return 0;
	}
	if (!virtio_get_shm_region(vdev, &reg,
				   (u8)VQF_VIRTIO_FS_SHMCAP_ID_VERSION)) {
		dev_notice(&vdev->dev, "vqfuse: no version table (shm region %u)\n",
			   VQF_VIRTIO_FS_SHMCAP_ID_VERSION);
		return 0;
	}
	if (!reg.len) {
		fs->ver_rejected++;
		dev_warn(&vdev->dev, "vqfuse: version table of 0x%llx bytes ignored\n",
			 reg.len);
		return 0;
	}
	if (!devm_request_mem_region(&vdev->dev, reg.addr, reg.len,
				     dev_name(&vdev->dev))) {
		dev_warn(&vdev->dev, "vqfuse: could not reserve version table 0x%llx@0x%llx\n",
			 reg.len, reg.addr);
		return -EBUSY;
	}
	base = devm_memremap(&vdev->dev, reg.addr, reg.len, MEMREMAP_WB);
	if (IS_ERR(base))
		return PTR_ERR(base);
	err = vqf_ver_table_init(&fs->ver_table_s, base, reg.len);
	if (err) {
		fs->ver_rejected++;
		dev_warn(&vdev->dev, "vqfuse: version table 0x%llx@0x%llx refused (%d)\n",
			 reg.len, reg.addr, err);
		return 0;
	}
	fs->ver_table = &fs->ver_table_s;
	dev_info(&vdev->dev, "vqfuse: version table of %llu slots\n",
		 fs->ver_table->nr_slots);
	return 0;
}

static int vqfk_ver_show(struct seq_file *m, void *unused)
{
	struct vqfk_kfs *fs = m->private;
	const struct vqf_ver_stats *s;

	seq_printf(m, "table_rejected %llu\n", fs->ver_rejected);
	if (!fs->ver_table) {
		seq_puts(m, "slots 0\n");
		return 0;
	}
	s = &fs->ver_table->stats;
	seq_printf(m, "slots %llu\n", fs->ver_table->nr_slots);
#define X(f) seq_printf(m, #f " %llu\n", (unsigned long long)READ_ONCE(s->f))
	X(index_none);
	X(index_no_table);
	X(index_out_of_range);
	X(index_changed);
	X(entryver_absent);
	X(entryver_short);
	X(entryver_long);
	X(initial_nonpositive);
	X(backward);
	X(attr_dropped);
	X(attr_stale);
	X(dentry_stale);
	X(negative_stale);
	X(raced);
#undef X
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vqfk_ver);

void vqfk_ver_debugfs(struct vqfk_kfs *fs, struct dentry *dir)
{
	debugfs_create_file("version", 0444, dir, fs, &vqfk_ver_fops);
}
