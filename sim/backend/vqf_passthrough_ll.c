// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_passthrough_ll.c - glue around libfuse3's example passthrough_ll.c.
 *
 * The example is included (not copied) from the build folder, where CMake
 * put a copy of /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c: its
 * lo_oper and struct lo_data are static, so the glue lives in the same
 * translation unit.  Its main() is renamed away and the part of main()
 * that sets up struct lo_data is redone in vqf_ptll_new().
 */
#define HAVE_COPY_FILE_RANGE 1
#define HAVE_FALLOCATE 1
#define HAVE_POSIX_FALLOCATE 1
#define main vqf_ptll_example_main
#include "passthrough_ll.c"
#undef main

#include "vqf_passthrough_ll.h"

struct vqf_ptll {
	struct lo_data lo;
};

struct vqf_ptll *vqf_ptll_new(const char *source)
{
	struct vqf_ptll *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lo.mutex, NULL);
	p->lo.root.next = p->lo.root.prev = &p->lo.root;
	p->lo.root.refcount = 2;
	p->lo.source = source;
	p->lo.xattr = 1;
	p->lo.flock = 1;
	p->lo.cache = CACHE_NEVER;
	p->lo.timeout = 0.0;
	p->lo.root.fd = open(source, O_PATH);
	if (p->lo.root.fd < 0) {
		err = errno;
		pthread_mutex_destroy(&p->lo.mutex);
		free(p);
		errno = err;
		return NULL;
	}
	return p;
}

void vqf_ptll_free(struct vqf_ptll *p)
{
	struct lo_inode *i, *n;

	if (!p)
		return;
	/* lo_destroy() ran only if INIT did; it frees but never closes. */
	for (i = p->lo.root.next; i != &p->lo.root; i = n) {
		n = i->next;
		close(i->fd);
		free(i);
	}
	close(p->lo.root.fd);
	pthread_mutex_destroy(&p->lo.mutex);
	free(p);
}

const struct fuse_lowlevel_ops *vqf_ptll_ops(size_t *op_size)
{
	*op_size = sizeof(lo_oper);
	return &lo_oper;
}

void *vqf_ptll_userdata(struct vqf_ptll *p)
{
	return &p->lo;
}
