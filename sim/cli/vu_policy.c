// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vu_policy.c - what vhost-user's options make the filesystem do for the
 * guest, as virtiofsd does with the same options: the cache mode's
 * timeouts and open flags, readdirplus, xattrs, writeback, locks and
 * O_DIRECT.  The daemon serves the backend's ops through these wrappers;
 * no socket is needed to drive them (test_vu_policy).
 */
#define _GNU_SOURCE
#include "vqf_nullfs.h"
#include "vqf_passthrough.h"
#include "vqf_passthrough_ll.h"
#include "vqf_vu.h"

#include <fcntl.h>
#include <string.h>

void vqf_vu_policy_of(const struct vqf_vu_opts *o, struct vqf_vu_policy *p)
{
	memset(p, 0, sizeof(*p));
	switch (o->cache) {
	case VQF_VU_CACHE_NEVER:
		p->direct_io = true;
		break;
	case VQF_VU_CACHE_METADATA:
		p->direct_io = true;
		p->timeout = VQF_VU_TIMEOUT_LONG;
		break;
	case VQF_VU_CACHE_AUTO:
		p->timeout = 1;
		break;
	case VQF_VU_CACHE_ALWAYS:
		p->keep_cache = true;
		p->timeout = VQF_VU_TIMEOUT_LONG;
		break;
	}
	if (o->timeout > 0)
		p->timeout = o->timeout;
	/* virtiofsd: no READDIRPLUS when nothing may be cached. */
	p->readdirplus = o->readdirplus && o->cache != VQF_VU_CACHE_NEVER;
	p->xattr = o->xattr;
	p->writeback = o->writeback;
	p->posix_locks = o->posix_locks;
	p->flock = o->flock;
	p->allow_direct_io = o->direct_io;
}

static const struct vqf_vu_policy *pol;
static const struct fuse_lowlevel_ops *base_ops;
static struct fuse_lowlevel_ops vu_ops;

static void vu_init(void *userdata, struct fuse_conn_info *conn)
{
	if (base_ops->init)
		base_ops->init(userdata, conn);
	if (!pol->posix_locks)
		conn->want &= ~FUSE_CAP_POSIX_LOCKS;
	if (!pol->flock)
		conn->want &= ~FUSE_CAP_FLOCK_LOCKS;
	if (!pol->readdirplus)
		conn->want &= ~(FUSE_CAP_READDIRPLUS |
				FUSE_CAP_READDIRPLUS_AUTO);
	if (pol->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
}

/*
 * The open flags the host file gets, and the reply's cache flags.  With
 * writeback the guest's page cache may read a page it writes partly, and
 * it keeps O_APPEND's file size itself: the host file is opened for reading
 * too and without O_APPEND, as virtiofsd does.
 */
static void vu_flags(struct fuse_file_info *fi)
{
	if (!pol->allow_direct_io)
		fi->flags &= ~O_DIRECT;
	if (pol->writeback) {
		if ((fi->flags & O_ACCMODE) == O_WRONLY)
			fi->flags = (fi->flags & ~O_ACCMODE) | O_RDWR;
		fi->flags &= ~O_APPEND;
	}
	fi->direct_io = pol->direct_io;
	fi->keep_cache = pol->keep_cache;
}

static void vu_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	vu_flags(fi);
	base_ops->open(req, ino, fi);
}

static void vu_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	vu_flags(fi);
	base_ops->create(req, parent, name, mode, fi);
}

const struct fuse_lowlevel_ops *vqf_vu_policy_ops(
	const struct vqf_vu_policy *p, const struct fuse_lowlevel_ops *ops,
	size_t *op_size)
{
	pol = p;
	base_ops = ops;
	memset(&vu_ops, 0, sizeof(vu_ops));
	memcpy(&vu_ops, ops, *op_size < sizeof(vu_ops) ? *op_size :
	       sizeof(vu_ops));
	*op_size = sizeof(vu_ops);
	vu_ops.init = vu_init;
	if (ops->open)
		vu_ops.open = vu_open;
	if (ops->create)
		vu_ops.create = vu_create;
	/* Without an op libfuse answers ENOSYS, as virtiofsd does. */
	if (!p->posix_locks) {
		vu_ops.getlk = NULL;
		vu_ops.setlk = NULL;
	}
	if (!p->flock)
		vu_ops.flock = NULL;
	if (!p->readdirplus)
		vu_ops.readdirplus = NULL;
	if (!p->xattr) {
		vu_ops.setxattr = NULL;
		vu_ops.getxattr = NULL;
		vu_ops.listxattr = NULL;
		vu_ops.removexattr = NULL;
	}
	return &vu_ops;
}

static const char *const cache_name[] = {
	[VQF_VU_CACHE_NEVER] = "never",
	[VQF_VU_CACHE_METADATA] = "metadata",
	[VQF_VU_CACHE_AUTO] = "auto",
	[VQF_VU_CACHE_ALWAYS] = "always",
};

void vqf_vu_policy_describe(const struct vqf_vu_opts *o,
			    const struct vqf_vu_policy *p, char *buf,
			    size_t size)
{
	bool ll = o->fs == VQF_SIM_FS_PTLL;

	/* passthrough_ll serves its own cache=never, whatever was asked */
	snprintf(buf, size, "%s %s: timeout %g s%s%s; readdirplus %s, "
		 "xattr %s, writeback %s, posix locks %s, flock %s, "
		 "O_DIRECT %s", ll ? "passthrough_ll's own cache" : "cache",
		 ll ? "never" : cache_name[o->cache], ll ? 0.0 : p->timeout,
		 ll || p->direct_io ? ", direct I/O" : "",
		 !ll && p->keep_cache ? ", keep cache" : "",
		 p->readdirplus ? "on" : "off", p->xattr ? "on" : "off",
		 p->writeback ? "on" : "off",
		 p->posix_locks ? "host" : "guest",
		 p->flock ? "host" : "guest",
		 p->allow_direct_io ? "kept" : "dropped");
}

bool vqf_vu_backend_safe(enum vqf_sim_fs fs)
{
	/* what each backend's header declares (docs/guard.md) */
	switch (fs) {
	case VQF_SIM_FS_PTLL:
		return VQF_PTLL_HOSTILE_SAFE;
	case VQF_SIM_FS_NULL:
		return VQF_NULLFS_HOSTILE_SAFE;
	default:
		return VQF_PT_HOSTILE_SAFE;
	}
}
