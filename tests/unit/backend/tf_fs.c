// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * tf_fs.c - temporary shared directories for the op and confinement
 * suites (see tf_fs.h).
 */
#define _GNU_SOURCE
#include "tf_fs.h"
#ifdef VQF_TEST_PTLL
#include "vqf_passthrough_ll.h"
#endif

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

struct tf_fs *tf_fs_new(enum tf_kind kind)
{
	struct tf_fs *f = calloc(1, sizeof(*f));
	const struct fuse_lowlevel_ops *ops = NULL;
	struct vqf_backend *be;
	void *ud = NULL;
	size_t size = 0;

	if (!f)
		return NULL;
	f->kind = kind;
	snprintf(f->dir, sizeof(f->dir), "/tmp/vqf-be-XXXXXX");
	snprintf(f->out, sizeof(f->out), "/tmp/vqf-out-XXXXXX");
	if (!mkdtemp(f->dir))
		goto fail;
	f->made |= 1;
	if (!mkdtemp(f->out))
		goto fail;
	f->made |= 2;
	if (kind == TF_PTLL) {
#ifdef VQF_TEST_PTLL
		f->ptll = vqf_ptll_new(f->dir);
		if (!f->ptll)
			goto fail;
		ops = vqf_ptll_ops(&size);
		ud = vqf_ptll_userdata(f->ptll);
#else
		goto fail;
#endif
	} else {
		struct vqf_pt_config cfg = {
			.source = f->dir,
			.io = kind == TF_VQF_PT_PREAD ? VQF_PT_IO_PREAD :
							VQF_PT_IO_AUTO,
		};

		f->pt = vqf_pt_new(&cfg);
		if (!f->pt)
			goto fail;
		ops = vqf_pt_ops(&size);
		ud = f->pt;
	}
	be = vqf_backend_new(ops, size, ud, NULL);
	if (!be)
		goto fail;
	tf_setup(&f->t, be);
	if (tf_init(&f->t, NULL)) {
		tf_fs_free(f);
		return NULL;
	}
	return f;
fail:
	tf_fs_free(f);
	return NULL;
}

void tf_fs_free(struct tf_fs *f)
{
	if (!f)
		return;
	if (f->t.be) {
		vqf_backend_free(f->t.be);
		tf_teardown(&f->t);
	}
	vqf_pt_free(f->pt);
#ifdef VQF_TEST_PTLL
	vqf_ptll_free(f->ptll);
#endif
	if (f->made & 1)
		rm_rf(f->dir);
	if (f->made & 2)
		rm_rf(f->out);
	free(f);
}

const char *tf_host(struct tf_fs *f, const char *name)
{
	static __thread char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", f->dir, name);
	return buf;
}

struct vqf_pt_stats tf_pt_stats(struct tf_fs *f)
{
	struct vqf_pt_stats s = { 0 };

	if (f->pt)
		vqf_pt_get_stats(f->pt, &s);
	return s;
}
