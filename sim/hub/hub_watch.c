// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * hub_watch.c - edits made directly in the host directory bump versions
 * too, or guests caching with cache=shared would never see them.
 *
 * inotify watches every directory of the tree (new ones as they appear).
 * An event names a directory and an entry: the directory's node is bumped
 * when its entries changed, the entry's node when its inode changed
 * (found by lstat() and the host inode number) or when the name went away
 * (found by the name it was last handed out under).  A lost event
 * (IN_Q_OVERFLOW) bumps every slot: guests revalidate once, nobody keeps
 * a stale answer.  Where inotify cannot be used (no instance, the watch
 * limit), every node with a slot is lstat()ed each period and bumped when
 * what it returns changed.
 * The guests' own changes come through here as well (the backend makes
 * them on the host): a second bump after the hub's own, which costs a
 * revalidation and never a wrong answer.
 */
#define _GNU_SOURCE
#include "hub_int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#define WATCH_MASK	(IN_ATTRIB | IN_MODIFY | IN_CREATE | IN_DELETE | \
			 IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | \
			 IN_ONLYDIR | IN_DONT_FOLLOW)
#define WATCH_DEPTH	64

struct hub_watch_dir {
	char *path;
	u64 ino;
};

static int dir_slot(struct vqf_hub *h, int wd)
{
	struct hub_watch_dir **d;
	unsigned int n;

	if (wd < 0)
		return -EINVAL;
	if ((unsigned int)wd < h->ndirs)
		return 0;
	n = h->ndirs ? h->ndirs : 64;
	while (n <= (unsigned int)wd)
		n *= 2;
	d = realloc(h->dirs, n * sizeof(*d));
	if (!d)
		return -ENOMEM;
	memset(d + h->ndirs, 0, (n - h->ndirs) * sizeof(*d));
	h->dirs = d;
	h->ndirs = n;
	return 0;
}

static void dir_drop(struct vqf_hub *h, int wd)
{
	if (wd < 0 || (unsigned int)wd >= h->ndirs || !h->dirs[wd])
		return;
	free(h->dirs[wd]->path);
	free(h->dirs[wd]);
	h->dirs[wd] = NULL;
	h->st.watches--;
}

/* Watches @path and, below @depth, every directory in it. */
static int watch_tree(struct vqf_hub *h, const char *path, unsigned int depth)
{
	struct hub_watch_dir *wdir;
	struct stat st;
	struct dirent *de;
	DIR *dir;
	int wd, ret = 0;

	if (lstat(path, &st) || !S_ISDIR(st.st_mode))
		return 0;
	wd = inotify_add_watch(h->inotify_fd, path, WATCH_MASK);
	if (wd < 0) {
		h->st.watch_errors++;
		return -errno;
	}
	if (dir_slot(h, wd))
		return -ENOMEM;
	if (!h->dirs[wd]) {
		wdir = calloc(1, sizeof(*wdir));
		if (!wdir)
			return -ENOMEM;
		h->dirs[wd] = wdir;
		h->st.watches++;
	}
	wdir = h->dirs[wd];
	free(wdir->path);
	wdir->path = strdup(path);
	wdir->ino = st.st_ino;
	if (!wdir->path || depth >= WATCH_DEPTH)
		return wdir->path ? 0 : -ENOMEM;
	dir = opendir(path);
	if (!dir)
		return 0;	/* gone or unreadable: nothing under it */
	while (!ret && (de = readdir(dir))) {
		char sub[PATH_MAX];

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >=
		    (int)sizeof(sub))
			continue;
		ret = watch_tree(h, sub, depth + 1);
	}
	closedir(dir);
	return ret;
}

/* One event.  Under watch_lock; takes h->lock for the bumps. */
static void event(struct vqf_hub *h, const struct inotify_event *ev)
{
	const u32 dirchg = IN_CREATE | IN_DELETE | IN_MOVED_FROM |
			   IN_MOVED_TO;
	struct hub_watch_dir *d;
	struct hub_node *dn, *cn;
	char path[PATH_MAX];
	struct stat st;
	bool have = false;
	u64 resized = 0, from = 0, to = 0;

	if (ev->mask & IN_Q_OVERFLOW) {
		pthread_mutex_lock(&h->lock);
		h->st.overflows++;
		hub_bump_all(h);
		pthread_mutex_unlock(&h->lock);
		return;
	}
	if (ev->wd < 0 || (unsigned int)ev->wd >= h->ndirs ||
	    !h->dirs[ev->wd])
		return;
	if (ev->mask & IN_IGNORED) {
		dir_drop(h, ev->wd);
		return;
	}
	d = h->dirs[ev->wd];
	if (ev->len && ev->name[0] &&
	    snprintf(path, sizeof(path), "%s/%s", d->path, ev->name) <
	    (int)sizeof(path))
		have = !lstat(path, &st);
	/* A new directory: watch it (and what a move brought along). */
	if (have && S_ISDIR(st.st_mode) && (ev->mask & (IN_CREATE |
							 IN_MOVED_TO)))
		watch_tree(h, path, 1);

	pthread_mutex_lock(&h->lock);
	h->st.host_events++;
	dn = hub_node_by_ino(h, d->ino);
	if (!ev->len || !ev->name[0]) {
		hub_bump(h, dn, true);	/* the directory itself */
		pthread_mutex_unlock(&h->lock);
		return;
	}
	if (ev->mask & dirchg)
		hub_bump(h, dn, true);
	cn = have ? hub_node_by_ino(h, st.st_ino) : NULL;
	hub_bump(h, cn, true);
	/*
	 * A regular file's size changed: the DAX windows' hook.  While a
	 * guest's size change is in the backend, its reply says the size:
	 * an lstat then may be from before it, or from before the next.
	 */
	if (cn && S_ISREG(st.st_mode) && !cn->resizing) {
		if (cn->size_set && (u64)st.st_size != cn->size) {
			resized = cn->nodeid;
			from = cn->size;
			to = (u64)st.st_size;
		}
		cn->size = (u64)st.st_size;
		cn->size_set = true;
	}
	/* What the name meant before it was removed or replaced. */
	if (dn && (ev->mask & dirchg)) {
		struct hub_node *old = hub_node_by_name(h, dn->nodeid,
							ev->name);

		if (old && old != cn)
			hub_bump(h, old, true);
	}
	pthread_mutex_unlock(&h->lock);
	if (resized && h->cfg.resize_hook)
		h->cfg.resize_hook(h->cfg.resize_ctx, resized, from, to, NULL);
}

static void drain(struct vqf_hub *h)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;
	char *p;

	for (;;) {
		n = read(h->inotify_fd, buf, sizeof(buf));
		if (n <= 0)
			return;
		for (p = buf; p + sizeof(struct inotify_event) <= buf + n;) {
			const struct inotify_event *ev = (const void *)p;

			event(h, ev);
			p += sizeof(*ev) + ev->len;
		}
	}
}

/* The path a node was last handed out under, from the root down. */
static bool node_path(struct vqf_hub *h, struct hub_node *n, char *out,
		      size_t size)
{
	const char *parts[WATCH_DEPTH];
	unsigned int k = 0;
	size_t off;

	while (n->nodeid != FUSE_ROOT_ID) {
		if (!n->name || k == WATCH_DEPTH)
			return false;
		parts[k++] = n->name;
		n = hub_node_find(h, n->parent);
		if (!n)
			return false;
	}
	off = (size_t)snprintf(out, size, "%s", h->cfg.root);
	while (k--) {
		off += (size_t)snprintf(out + off, size - off, "/%s",
					parts[k]);
		if (off >= size)
			return false;
	}
	return true;
}

/* Rescan mode: lstat() every versioned node, bump what changed. */
static void rescan(struct vqf_hub *h)
{
	char path[PATH_MAX];
	struct hub_node *n;
	struct stat st;
	unsigned int b;

	pthread_mutex_lock(&h->lock);
	h->st.rescans++;
	for (b = 0; b < HUB_BUCKETS; b++) {
		for (n = h->by_id[b]; n; n = n->next_id) {
			bool same;

			if (!n->slot || !node_path(h, n, path, sizeof(path)))
				continue;
			if (lstat(path, &st))
				memset(&st, 0, sizeof(st));
			same = n->sig_set && n->sig.ino == (u64)st.st_ino &&
			       n->sig.size == (u64)st.st_size &&
			       n->sig.mtime == (u64)st.st_mtim.tv_sec *
			       1000000000ULL + (u64)st.st_mtim.tv_nsec &&
			       n->sig.ctime == (u64)st.st_ctim.tv_sec *
			       1000000000ULL + (u64)st.st_ctim.tv_nsec &&
			       n->sig.mode == st.st_mode &&
			       n->sig.nlink == st.st_nlink &&
			       n->sig.uid == st.st_uid &&
			       n->sig.gid == st.st_gid;
			if (n->sig_set && !same)
				hub_bump(h, n, true);
			n->sig_set = true;
			n->sig.ino = (u64)st.st_ino;
			n->sig.size = (u64)st.st_size;
			n->sig.mtime = (u64)st.st_mtim.tv_sec * 1000000000ULL +
				       (u64)st.st_mtim.tv_nsec;
			n->sig.ctime = (u64)st.st_ctim.tv_sec * 1000000000ULL +
				       (u64)st.st_ctim.tv_nsec;
			n->sig.mode = st.st_mode;
			n->sig.nlink = (u32)st.st_nlink;
			n->sig.uid = st.st_uid;
			n->sig.gid = st.st_gid;
		}
	}
	pthread_mutex_unlock(&h->lock);
}

int vqf_hub_sync(struct vqf_hub *h)
{
	pthread_mutex_lock(&h->watch_lock);
	if (h->mode == VQF_HUB_WATCH_INOTIFY)
		drain(h);
	else if (h->mode == VQF_HUB_WATCH_RESCAN)
		rescan(h);
	pthread_mutex_unlock(&h->watch_lock);
	return 0;
}

static void *watch_main(void *arg)
{
	struct vqf_hub *h = arg;
	struct pollfd pf[2];
	int timeout, n = 1;

	pf[0].fd = h->stop_fd;
	pf[0].events = POLLIN;
	if (h->mode == VQF_HUB_WATCH_INOTIFY) {
		pf[1].fd = h->inotify_fd;
		pf[1].events = POLLIN;
		n = 2;
	}
	timeout = h->mode == VQF_HUB_WATCH_RESCAN ?
		  (int)(h->cfg.rescan_ms ? h->cfg.rescan_ms : 1000) : -1;
	for (;;) {
		if (poll(pf, n, timeout) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		vqf_hub_sync(h);
	}
	return NULL;
}

int hub_watch_start(struct vqf_hub *h)
{
	int ret;

	h->mode = h->cfg.root ? h->cfg.watch : VQF_HUB_WATCH_OFF;
	if (h->mode == VQF_HUB_WATCH_INOTIFY) {
		h->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (h->inotify_fd < 0 || watch_tree(h, h->cfg.root, 0)) {
			/* No instance or the watch limit: poll instead. */
			if (h->inotify_fd >= 0)
				close(h->inotify_fd);
			h->inotify_fd = -1;
			h->mode = VQF_HUB_WATCH_RESCAN;
		}
	}
	if (h->mode == VQF_HUB_WATCH_OFF)
		return 0;
	h->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (h->stop_fd < 0)
		return -errno;
	ret = pthread_create(&h->thr, NULL, watch_main, h);
	if (ret)
		return -ret;
	h->thr_running = true;
	return 0;
}

void hub_watch_stop(struct vqf_hub *h)
{
	u64 one = 1;
	unsigned int i;

	if (h->thr_running) {
		if (write(h->stop_fd, &one, sizeof(one)) != sizeof(one))
			abort();	/* the thread would never stop */
		pthread_join(h->thr, NULL);
		h->thr_running = false;
	}
	if (h->stop_fd >= 0)
		close(h->stop_fd);
	if (h->inotify_fd >= 0)
		close(h->inotify_fd);
	for (i = 0; i < h->ndirs; i++)
		dir_drop(h, (int)i);
	free(h->dirs);
	h->dirs = NULL;
	h->ndirs = 0;
}
