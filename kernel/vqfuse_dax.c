// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_dax.c - the device's DAX window as a dax_device for fuse.ko.
 *
 * A virtio-fs device may expose a cache window as shared memory region
 * VIRTIO_FS_SHMCAP_ID_CACHE (0).  The guest turns it into struct pages
 * (devm_memremap_pages(), MEMORY_DEVICE_FS_DAX) and a dax_device that
 * fuse.ko's dax.c maps file ranges into, as upstream 6.1's virtio_fs.c
 * does.  Which range maps what is fuse.ko's business (the patched fuse.ko
 * of kernel/fuse-X.Y/ runs lib/vqf_dax.c for it); this file only provides the
 * window.
 */
#include <linux/dax.h>
#include <linux/pfn_t.h>
#include <linux/memremap.h>
#include <linux/slab.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/virtio_fs.h>
#include "fuse_i.h"
#include "vqfuse.h"

/*
 * A window offset (from fuse.ko's iomap_begin) to a kernel address and a
 * page frame, clamped to the window.
 */
static long vqfk_dax_direct_access(struct dax_device *dax_dev, pgoff_t pgoff,
				   long nr_pages, enum dax_access_mode mode,
				   void **kaddr, pfn_t *pfn)
{
	struct vqfk_kfs *fs = dax_get_private(dax_dev);
	phys_addr_t offset = PFN_PHYS(pgoff);
	size_t max_nr_pages = fs->window_len / PAGE_SIZE - pgoff;

	if (kaddr)
		*kaddr = fs->window_kaddr + offset;
	if (pfn)
		*pfn = phys_to_pfn_t(fs->window_phys_addr + offset,
				     PFN_DEV | PFN_MAP);
	return nr_pages > max_nr_pages ? max_nr_pages : nr_pages;
}

static int vqfk_dax_zero_page_range(struct dax_device *dax_dev,
				    pgoff_t pgoff, size_t nr_pages)
{
	void *kaddr;
	long rc;

	rc = dax_direct_access(dax_dev, pgoff, nr_pages, DAX_ACCESS, &kaddr,
			       NULL);
	if (rc < 0)
		return rc;
	memset(kaddr, 0, nr_pages << PAGE_SHIFT);
	dax_flush(dax_dev, kaddr, nr_pages << PAGE_SHIFT);
	return 0;
}

static const struct dax_operations vqfk_dax_ops = {
	.direct_access = vqfk_dax_direct_access,
	.zero_page_range = vqfk_dax_zero_page_range,
};

static void vqfk_dax_cleanup(void *data)
{
	struct dax_device *dax_dev = data;

	kill_dax(dax_dev);
	put_dax(dax_dev);
}

/*
 * vqfk_dax_setup() - called from probe.  No region is not an error: the
 * device then has no window and mounts fall back to FUSE READ/WRITE (or
 * refuse dax=always).  Everything is device-managed, released when the
 * driver unbinds.
 */
int vqfk_dax_setup(struct virtio_device *vdev, struct vqfk_kfs *fs)
{
	struct virtio_shm_region reg;
	struct dev_pagemap *pgmap;
	void *kaddr;

	if (!IS_ENABLED(CONFIG_FUSE_DAX))
		return 0;
	if (!virtio_get_shm_region(vdev, &reg,
				   (u8)VIRTIO_FS_SHMCAP_ID_CACHE)) {
		dev_notice(&vdev->dev, "vqfuse: no DAX window (shm region %u)\n",
			   VIRTIO_FS_SHMCAP_ID_CACHE);
		return 0;
	}
	/* The device's value: fuse.ko works in whole pages of it. */
	if (!reg.len || !IS_ALIGNED(reg.addr | reg.len, PAGE_SIZE)) {
		dev_warn(&vdev->dev, "vqfuse: DAX window 0x%llx@0x%llx not page aligned, ignored\n",
			 reg.len, reg.addr);
		return 0;
	}
	if (!devm_request_mem_region(&vdev->dev, reg.addr, reg.len,
				     dev_name(&vdev->dev))) {
		dev_warn(&vdev->dev, "vqfuse: could not reserve DAX window 0x%llx@0x%llx\n",
			 reg.len, reg.addr);
		return -EBUSY;
	}

	pgmap = devm_kzalloc(&vdev->dev, sizeof(*pgmap), GFP_KERNEL);
	if (!pgmap)
		return -ENOMEM;
	pgmap->type = MEMORY_DEVICE_FS_DAX;
	/* devm_memremap_pages() wants its own copy of the range */
	pgmap->range = (struct range) {
		.start = (phys_addr_t)reg.addr,
		.end = (phys_addr_t)reg.addr + reg.len - 1,
	};
	pgmap->nr_range = 1;
	kaddr = devm_memremap_pages(&vdev->dev, pgmap);
	if (IS_ERR(kaddr))
		return PTR_ERR(kaddr);

	fs->window_kaddr = kaddr;
	fs->window_phys_addr = (phys_addr_t)reg.addr;
	fs->window_len = reg.len;

	fs->dax_dev = alloc_dax(fs, &vqfk_dax_ops);
	if (IS_ERR(fs->dax_dev)) {
		int err = PTR_ERR(fs->dax_dev);

		fs->dax_dev = NULL;
		return err;
	}
	dev_info(&vdev->dev, "vqfuse: DAX window of %llu MiB at 0x%llx\n",
		 reg.len >> 20, reg.addr);
	return devm_add_action_or_reset(&vdev->dev, vqfk_dax_cleanup,
					fs->dax_dev);
}
