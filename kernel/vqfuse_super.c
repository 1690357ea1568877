// SPDX-License-Identifier: GPL-2.0
/*
 * vqfuse_super.c - filesystem type "vqfuse": mount a virtio-fs tag.
 *
 *   mount -t vqfuse TAG /mnt [-o dax=never]
 *
 * Options and defaults are upstream virtiofs's: "dax" or "dax=always" maps
 * every file through the device's DAX window (vqfuse_dax.c) and is refused
 * when the device has none; "dax=inode" (the default) leaves it to the
 * server's FUSE_ATTR_DAX per file; "dax=never" does not use the window.
 * "dax=auto" (with the fs/fuse series: fs/fuse 0007) is dax=always whose
 * read() and write() map only what lib's policy says pays, the rest going
 * through FUSE READ/WRITE; refused without a window as dax=always is.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/slab.h>
#include <linux/virtio.h>
#include <linux/virtio_fs.h>
#include "fuse_i.h"
#include "vqfuse.h"
#include "vqfuse_compat.h"

/* sg elements of a request besides its pages (see fc->max_pages_limit). */
#define VQF_HEADER_OVERHEAD	4

static const struct constant_table vqfk_dax_enums[] = {
	{ "always",	FUSE_DAX_ALWAYS },
	{ "never",	FUSE_DAX_NEVER },
	{ "inode",	FUSE_DAX_INODE_USER },
#if VQFK_DAX_AUTO
	{ "auto",	FUSE_DAX_AUTO },
#endif
	{}
};

enum {
	OPT_DAX,
	OPT_DAX_ENUM,
};

static const struct fs_parameter_spec vqfk_fs_parameters[] = {
	fsparam_flag("dax", OPT_DAX),
	fsparam_enum("dax", OPT_DAX_ENUM, vqfk_dax_enums),
	{}
};

/* dax=always and dax=auto put every file on the window: they need one */
static bool vqfk_dax_needs_window(enum fuse_dax_mode mode)
{
#if VQFK_DAX_AUTO
	if (mode == FUSE_DAX_AUTO)
		return true;
#endif
	return mode == FUSE_DAX_ALWAYS;
}

static int vqfk_parse_param(struct fs_context *fsc, struct fs_parameter *param)
{
	struct fuse_fs_context *ctx = fsc->fs_private;
	struct fs_parse_result result;
	int opt;

	opt = fs_parse(fsc, vqfk_fs_parameters, param, &result);
	if (opt < 0)
		return opt;
	switch (opt) {
	case OPT_DAX:
		ctx->dax_mode = FUSE_DAX_ALWAYS;
		break;
	case OPT_DAX_ENUM:
		ctx->dax_mode = result.uint_32;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

static void vqfk_free_fsc(struct fs_context *fsc)
{
	kfree(fsc->fs_private);
}

static void vqfk_ctx_set_defaults(struct fuse_fs_context *ctx)
{
	ctx->rootmode = S_IFDIR;
	ctx->default_permissions = 1;
	ctx->allow_other = 1;
	ctx->max_read = UINT_MAX;
	ctx->blksize = 512;
	ctx->destroy = true;
	ctx->no_control = true;
	ctx->no_force_umount = true;
}

static int vqfk_fill_super(struct super_block *sb, struct fs_context *fsc)
{
	struct fuse_mount *fm = get_fuse_mount_super(sb);
	struct fuse_conn *fc = fm->fc;
	struct vqfk_kfs *fs = fc->iq.priv;
	struct fuse_fs_context *ctx = fsc->fs_private;
	unsigned int i;
	int err;

	vqfk_ctx_set_defaults(ctx);
	mutex_lock(&vqfk_mutex);

	/* ->remove() may have run since get_tree found the tag. */
	err = -EINVAL;
	if (list_empty(&fs->list)) {
		pr_info("vqfuse: tag <%s> gone\n", fs->tag);
		goto err;
	}

	err = -EIO;
	if (READ_ONCE(fs->dead)) {
		pr_info("vqfuse: tag <%s>: device is dead\n", fs->tag);
		goto err;
	}

	err = -ENOMEM;
	for (i = 0; i < fs->nvqs; i++) {
		fs->vqs[i].fud = fuse_dev_alloc();
		if (!fs->vqs[i].fud)
			goto err_free_fuse_devs;
	}

	/* vqfuse installs its own fuse devices, one per virtqueue. */
	ctx->fudptr = NULL;
	ctx->dax_dev = NULL;
	if (ctx->dax_mode != FUSE_DAX_NEVER) {
		err = -EINVAL;
		if (vqfk_dax_needs_window(ctx->dax_mode) && !fs->dax_dev) {
			errorf(fsc, "vqfuse: tag <%s>: dax=%s needs a DAX window, and the device has no shared memory region %u",
			       fs->tag,
			       ctx->dax_mode == FUSE_DAX_ALWAYS ? "always" :
			       "auto", VIRTIO_FS_SHMCAP_ID_CACHE);
			goto err_free_fuse_devs;
		}
		ctx->dax_dev = fs->dax_dev;
	}
	err = fuse_fill_super_common(sb, ctx);
	if (err < 0)
		goto err_free_fuse_devs;

	for (i = 0; i < fs->nvqs; i++)
		fuse_dev_install(fs->vqs[i].fud, fc);

	/* A previous unmount stopped the queues. */
	vqfk_set_fiq(fs, &fc->iq);
	vqfk_start_all_queues(fs);
	vqfk_watchdog_start(fs);
	fuse_send_init(fm);
	mutex_unlock(&vqfk_mutex);
	return 0;

err_free_fuse_devs:
	vqfk_free_devs(fs);
err:
	mutex_unlock(&vqfk_mutex);
	return err;
}

static void vqfk_conn_destroy(struct fuse_mount *fm)
{
	struct fuse_conn *fc = fm->fc;
	struct vqfk_kfs *fs = fc->iq.priv;

	/* The DAX reclaim worker sends requests: stop it before the queues. */
	if (IS_ENABLED(CONFIG_FUSE_DAX))
		fuse_dax_cancel_work(fc);

#if VQF_FUSE_SERIES
	/*
	 * Ranges of evicted inodes the window left mapped for reuse (fs/fuse
	 * 0008, deferred teardown) get their REMOVEMAPPING while requests
	 * can still go out: DESTROY comes next.  A built-in fuse has none.
	 */
	if (IS_ENABLED(CONFIG_FUSE_DAX))
		fuse_dax_flush_stale(fm);
#endif

	/* Pending FORGETs go out, then hiprio stops before DESTROY. */
	vqfk_stop_hiprio(fs);
	vqfk_drain_all_queues(fs);

	fuse_conn_destroy(fm);

	/*
	 * DESTROY has been answered.  Stop and drain again, then free the
	 * fuse devices: their conn references drop, and with the last one
	 * ->release() drops the conn's reference on fs.
	 */
	vqfk_stop_all_queues(fs);
	vqfk_drain_all_queues(fs);
	vqfk_watchdog_stop(fs);
	vqfk_set_fiq(fs, NULL);
	vqfk_free_devs(fs);
}

static void vqfk_kill_sb(struct super_block *sb)
{
	struct fuse_mount *fm = get_fuse_mount_super(sb);

	/* A failed mount comes here without a root. */
	if (sb->s_root && fuse_mount_remove(fm))
		vqfk_conn_destroy(fm);
	kill_anon_super(sb);
	fuse_mount_destroy(fm);
}

static int vqfk_test_super(struct super_block *sb, struct fs_context *fsc)
{
	struct fuse_mount *fsc_fm = fsc->s_fs_info;
	struct fuse_mount *sb_fm = get_fuse_mount_super(sb);

	return fsc_fm->fc->iq.priv == sb_fm->fc->iq.priv;
}

static int vqfk_get_tree(struct fs_context *fsc)
{
	struct vqfk_kfs *fs;
	struct super_block *sb;
	struct fuse_conn *fc = NULL;
	struct fuse_mount *fm;
	unsigned int vring_size;
	int err = -EIO;

	if (!fsc->source)
		return invalf(fsc, "vqfuse: no tag given as source");

	/* The reference goes to fc->iq.priv and is dropped by ->release(). */
	fs = vqfk_find_instance(fsc->source);
	if (!fs) {
		pr_info("vqfuse: tag <%s> not found\n", fsc->source);
		return -EINVAL;
	}

	vring_size = virtqueue_get_vring_size(fs->vqs[VQF_VQ_REQUEST].vq);
	if (WARN_ON(vring_size <= VQF_HEADER_OVERHEAD))
		goto out_err;

	err = -ENOMEM;
	fc = kzalloc(sizeof(*fc), GFP_KERNEL);
	if (!fc)
		goto out_err;
	fm = kzalloc(sizeof(*fm), GFP_KERNEL);
	if (!fm)
		goto out_err;

	fuse_conn_init(fc, fm, fsc->user_ns, &vqfk_fiq_ops, fs);
	fc->release = fuse_free_conn;
	fc->delete_stale = true;
	fc->auto_submounts = true;
	fc->sync_fs = true;
	/* fuse.ko asks INIT for entry versions only with a table */
	vqfk_conn_set_ver_table(fc, fs->ver_table);
	/* A request's sg list must fit the ring: FUSE splits bigger I/O. */
	fc->max_pages_limit = min_t(unsigned int, fc->max_pages_limit,
				    vring_size - VQF_HEADER_OVERHEAD);

	fsc->s_fs_info = fm;
	sb = sget_fc(fsc, vqfk_test_super, set_anon_super_fc);
	if (fsc->s_fs_info)
		fuse_mount_destroy(fm);
	if (IS_ERR(sb))
		return PTR_ERR(sb);

	if (!sb->s_root) {
		err = vqfk_fill_super(sb, fsc);
		if (err) {
			deactivate_locked_super(sb);
			return err;
		}
		sb->s_flags |= SB_ACTIVE;
	}

	WARN_ON(fsc->root);
	fsc->root = dget(sb->s_root);
	return 0;

out_err:
	kfree(fc);
	mutex_lock(&vqfk_mutex);
	vqfk_fs_put(fs);
	mutex_unlock(&vqfk_mutex);
	return err;
}

static const struct fs_context_operations vqfk_context_ops = {
	.free		= vqfk_free_fsc,
	.parse_param	= vqfk_parse_param,
	.get_tree	= vqfk_get_tree,
};

static int vqfk_init_fs_context(struct fs_context *fsc)
{
	struct fuse_fs_context *ctx;

	if (fsc->purpose == FS_CONTEXT_FOR_SUBMOUNT)
		return fuse_init_fs_context_submount(fsc);

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx)
		return -ENOMEM;
	fsc->fs_private = ctx;
	fsc->ops = &vqfk_context_ops;
	return 0;
}

struct file_system_type vqfk_fs_type = {
	.owner		= THIS_MODULE,
	.name		= "vqfuse",
	.init_fs_context = vqfk_init_fs_context,
	.kill_sb	= vqfk_kill_sb,
};
