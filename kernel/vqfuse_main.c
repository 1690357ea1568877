// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_main.c - module entry: the virtio driver and the filesystem type.
 *
 * The driver matches every VIRTIO_ID_FS device, exactly like the in-tree
 * virtiofs: whichever of the two is loaded first binds a device.  To put a
 * device under the other driver, unbind it through sysfs
 * (/sys/bus/virtio/drivers/<driver>/unbind) and bind it to the other.
 */
#include <linux/module.h>
#include <linux/virtio.h>
#include "vqfuse.h"

static int __init vqfk_init(void)
{
	int ret;

	ret = vqfk_stats_init();
	if (ret < 0)
		return ret;
	ret = register_virtio_driver(&vqfk_virtio_driver);
	if (ret < 0)
		goto out_stats;
	ret = register_filesystem(&vqfk_fs_type);
	if (ret < 0)
		goto out_driver;
	return 0;

out_driver:
	unregister_virtio_driver(&vqfk_virtio_driver);
out_stats:
	vqfk_stats_exit();
	return ret;
}
module_init(vqfk_init);

static void __exit vqfk_exit(void)
{
	unregister_filesystem(&vqfk_fs_type);
	unregister_virtio_driver(&vqfk_virtio_driver);
	vqfk_stats_exit();
}
module_exit(vqfk_exit);

MODULE_DESCRIPTION("vqfuse: virtio-fs transport built from a portable core");
MODULE_LICENSE("GPL");
MODULE_ALIAS_FS("vqfuse");
MODULE_SOFTDEP("pre: fuse");
#ifdef VQF_MODULE_VERSION
MODULE_VERSION(VQF_MODULE_VERSION);
#endif
