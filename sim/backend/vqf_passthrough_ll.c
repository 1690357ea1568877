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

/*
 * What the example does not do and a guest's server must: never block on
 * a FIFO, never open anything but a regular file, never follow a symlink
 * the guest made.  @fd is open()'s result with O_NONBLOCK added: it
 * becomes the guest's handle in @fi if it is a regular file, and loses
 * O_NONBLOCK again unless the guest asked for it.  Returns 0 or an errno
 * (@fd closed).
 */
static int ptll_take(struct lo_data *lo, int fd, struct fuse_file_info *fi)
{
	struct stat st;
	int fl, err;

	if (fd == -1)
		return errno;
	if (fstat(fd, &st)) {
		err = errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return EPERM;
	}
	fl = fcntl(fd, F_GETFL);
	if (!(fi->flags & O_NONBLOCK) &&
	    (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))) {
		err = errno;
		close(fd);
		return err;
	}
	fi->fh = fd;
	if (lo->cache == CACHE_NEVER)
		fi->direct_io = 1;
	else if (lo->cache == CACHE_ALWAYS)
		fi->keep_cache = 1;
	return 0;
}

/* OPEN: only a regular file, looked at through its O_PATH descriptor. */
static void ptll_open(fuse_req_t req, fuse_ino_t ino,
		      struct fuse_file_info *fi)
{
	struct lo_data *lo = lo_data(req);
	struct stat st;
	char buf[64];
	int fd, err;

	if (fstatat(lo_fd(req, ino), "", &st,
		    AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		return (void)fuse_reply_err(req, errno);
	if (!S_ISREG(st.st_mode))
		return (void)fuse_reply_err(req, EPERM);
	if (lo->writeback && (fi->flags & O_ACCMODE) == O_WRONLY) {
		fi->flags &= ~O_ACCMODE;
		fi->flags |= O_RDWR;
	}
	if (lo->writeback && (fi->flags & O_APPEND))
		fi->flags &= ~O_APPEND;
	sprintf(buf, "/proc/self/fd/%i", lo_fd(req, ino));
	fd = open(buf, (fi->flags & ~(O_NOFOLLOW | O_CREAT)) | O_NONBLOCK);
	err = ptll_take(lo, fd, fi);
	if (err)
		return (void)fuse_reply_err(req, err);
	fuse_reply_open(req, fi);
}

/*
 * CREATE: the example opens (flags | O_CREAT) & ~O_NOFOLLOW, which
 * follows a symlink the guest planted to any host file and opens an
 * existing FIFO or device node.  Here: O_EXCL first; an existing name
 * is opened only if it is a regular file, with O_NOFOLLOW and
 * O_NONBLOCK, and checked again on the descriptor.
 */
static void ptll_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode, struct fuse_file_info *fi)
{
	struct lo_data *lo = lo_data(req);
	int dfd = lo_fd(req, parent);
	int fl = (fi->flags & ~O_CREAT) | O_NOFOLLOW | O_NONBLOCK;
	struct fuse_entry_param e;
	struct stat st;
	int fd, err;

	fd = openat(dfd, name, fl | O_CREAT | O_EXCL, mode);
	if (fd == -1 && errno == EEXIST && !(fi->flags & O_EXCL)) {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
			return (void)fuse_reply_err(req, errno);
		if (!S_ISREG(st.st_mode))
			return (void)fuse_reply_err(req, S_ISLNK(st.st_mode) ?
						    ELOOP : EPERM);
		fd = openat(dfd, name, fl);
	}
	err = ptll_take(lo, fd, fi);
	if (err)
		return (void)fuse_reply_err(req, err);
	err = lo_do_lookup(req, parent, name, &e);
	if (err) {
		close(fi->fh);
		fuse_reply_err(req, err);
	} else {
		fuse_reply_create(req, &e, fi);
	}
}

/* LOOKUP: "." and ".." would walk out of the share from its root. */
static void ptll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return (void)fuse_reply_err(req, EPERM);
	lo_lookup(req, parent, name);
}

static struct fuse_lowlevel_ops ptll_oper;
static pthread_once_t ptll_once = PTHREAD_ONCE_INIT;

static void ptll_oper_init(void)
{
	ptll_oper = lo_oper;
	ptll_oper.lookup = ptll_lookup;
	ptll_oper.open = ptll_open;
	ptll_oper.create = ptll_create;
}

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
	pthread_once(&ptll_once, ptll_oper_init);
	*op_size = sizeof(ptll_oper);
	return &ptll_oper;
}

void *vqf_ptll_userdata(struct vqf_ptll *p)
{
	return &p->lo;
}
