// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vu_landlock.c - Landlock as a second wall around the shared directory
 * (beyond virtiofsd), in every sandbox mode where the kernel has it: the
 * daemon's file system access is limited to beneath the shared directory
 * (reads only with --readonly).  A file reached through /proc/self/fd/N
 * is checked at its own path, so the backends' reopen of their O_PATH
 * descriptors still works.  Without a sandbox the daemon also removes
 * its socket file (--socket), so that one folder keeps REMOVE_FILE.
 * Where the kernel lacks Landlock (or it is off at boot), the reason is
 * logged and the daemon goes on.
 */
#define _GNU_SOURCE
#include "vqf_vu.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE	(1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV	(1ULL << 15)
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset	444
#define SYS_landlock_add_rule		445
#define SYS_landlock_restrict_self	446
#endif

/* What reading the shared directory needs. */
#define LL_READ		(LANDLOCK_ACCESS_FS_READ_FILE | \
			 LANDLOCK_ACCESS_FS_READ_DIR)

/* Every file system right the kernel's ABI @abi knows. */
static u64 ll_handled(int abi)
{
	u64 a = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;

	if (abi >= 2)
		a |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		a |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		a |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return a;
}

static int ll_rule(int rs, const char *path, u64 access)
{
	struct landlock_path_beneath_attr pb = { .allowed_access = access };
	int ret;

	pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0)
		return -errno;
	ret = (int)syscall(SYS_landlock_add_rule, rs,
			   LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	ret = ret ? -errno : 0;
	close(pb.parent_fd);
	return ret;
}

int vqf_vu_landlock(const struct vqf_vu_opts *o, struct vqf_vu_conf *c)
{
	struct landlock_ruleset_attr ra = { 0 };
	int abi, rs, ret;
	u64 share;

	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0,
			   LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0) {
		snprintf(c->landlock_why, sizeof(c->landlock_why), "%s",
			 errno == EOPNOTSUPP ? "disabled at boot" :
			 errno == ENOSYS ? "not in this kernel" :
			 strerror(errno));
		return 0;
	}
	ra.handled_access_fs = ll_handled(abi);
	rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0);
	if (rs < 0)
		return -errno;
	share = o->readonly ? LL_READ : ra.handled_access_fs;
	/* anything else is executable nowhere, and only needed reads */
	share &= ~(u64)LANDLOCK_ACCESS_FS_EXECUTE;
	ret = ll_rule(rs, c->shared, share);
	if (!ret && c->sandbox == VQF_VU_SANDBOX_NONE && o->socket) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s", o->socket);
		ret = ll_rule(rs, dirname(dir),
			      LANDLOCK_ACCESS_FS_REMOVE_FILE);
	}
#if defined(__SANITIZE_ADDRESS__)
	/* LeakSanitizer reads /proc/self/maps and the tasks at exit */
	if (!ret)
		ret = ll_rule(rs, "/proc", LL_READ);
#endif
	if (!ret && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		ret = -errno;
	if (!ret && syscall(SYS_landlock_restrict_self, rs, 0))
		ret = -errno;
	close(rs);
	if (!ret)
		c->landlock_abi = abi;
	return ret;
}
