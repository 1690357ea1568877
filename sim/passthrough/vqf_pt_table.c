// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_pt_table.c - the only way from a guest number to a host object.
 *
 * passthrough_ll hands the guest its inode pointers as nodeids and casts
 * them back: a guest that sends a number it was never given makes the
 * server dereference it.  Here a nodeid or file handle is
 * (generation << 32 | slot index): the index is bounds-checked, the slot
 * must be in use and its generation must match, so a forged number is
 * refused and a forgotten one (whose slot may be in use again) is stale.
 * Objects carry a reference count so that a FORGET or RELEASE racing with
 * an operation on another worker never closes an fd that is in use.
 */
#define _GNU_SOURCE
#include "vqf_pt_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOT_NONE UINT32_MAX

static uint32_t id_index(uint64_t id)
{
	return (uint32_t)id;
}

static uint32_t id_gen(uint64_t id)
{
	return (uint32_t)(id >> 32);
}

static uint64_t make_id(uint32_t idx, uint32_t gen)
{
	return ((uint64_t)gen << 32) | idx;
}

/* Slot 0 is never handed out: nodeid 0 and fh 0 mean "none". */
static int table_init(struct pt_table *t)
{
	t->cap = 64;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->len = 1;
	t->free_head = SLOT_NONE;
	return 0;
}

static int table_alloc(struct pt_table *t, void *obj, uint64_t *id)
{
	uint32_t idx;

	if (t->free_head != SLOT_NONE) {
		idx = t->free_head;
		t->free_head = t->slots[idx].next_free;
	} else {
		if (t->len == t->cap) {
			struct pt_slot *n;

			if (t->cap >= (UINT32_MAX >> 1))
				return -ENFILE;
			n = realloc(t->slots, 2 * t->cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			memset(n + t->cap, 0, t->cap * sizeof(*n));
			t->slots = n;
			t->cap *= 2;
		}
		idx = t->len++;
		t->slots[idx].gen = 0;
	}
	t->slots[idx].gen++;
	if (!t->slots[idx].gen)		/* 0 is the root's generation */
		t->slots[idx].gen = 1;
	t->slots[idx].obj = obj;
	*id = make_id(idx, t->slots[idx].gen);
	return 0;
}

/* -EBADF: never issued; -ESTALE: issued and gone. */
static void *table_find(struct pt_table *t, uint64_t id, int *err)
{
	uint32_t idx = id_index(id);

	if (idx == 0 || idx >= t->len) {
		*err = -EBADF;
		return NULL;
	}
	if (!t->slots[idx].obj || t->slots[idx].gen != id_gen(id)) {
		*err = -ESTALE;
		return NULL;
	}
	return t->slots[idx].obj;
}

static void table_free(struct pt_table *t, uint64_t id)
{
	uint32_t idx = id_index(id);

	t->slots[idx].obj = NULL;
	t->slots[idx].next_free = t->free_head;
	t->free_head = idx;
}

static unsigned int hash_of(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;

	return (unsigned int)(h >> 40) % PT_HASH;
}

static void inode_destroy(struct pt_inode *in)
{
	struct pt_plock *p, *n;

	for (p = in->plocks; p; p = n) {
		n = p->next;
		close(p->fd);
		free(p);
	}
	pthread_mutex_destroy(&in->plock_lock);
	close(in->fd);
	free(in);
}

static struct pt_inode *inode_alloc(int fd, const struct stat *st)
{
	struct pt_inode *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	in->fd = fd;
	in->dev = st->st_dev;
	in->ino = st->st_ino;
	in->type = st->st_mode & S_IFMT;
	pthread_mutex_init(&in->plock_lock, NULL);
	return in;
}

int pt_tables_init(struct vqf_pt *pt, int rootfd)
{
	struct stat st;
	struct pt_inode *root;
	uint64_t id;

	if (fstat(rootfd, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (table_init(&pt->inodes))
		return -ENOMEM;
	if (table_init(&pt->files)) {
		free(pt->inodes.slots);
		return -ENOMEM;
	}
	root = inode_alloc(rootfd, &st);
	if (!root) {
		free(pt->inodes.slots);
		free(pt->files.slots);
		return -ENOMEM;
	}
	/* Slot 1 with generation 0: nodeid 1 == FUSE_ROOT_ID. */
	table_alloc(&pt->inodes, root, &id);
	pt->inodes.slots[1].gen = 0;
	root->nodeid = FUSE_ROOT_ID;
	root->nlookup = 1;
	root->refs = 1;
	root->hnext = pt->hash[hash_of(root->dev, root->ino)];
	pt->hash[hash_of(root->dev, root->ino)] = root;
	pt->root = root;
	pt->stats.inodes = 1;
	return 0;
}

static void inode_put_locked(struct vqf_pt *pt, struct pt_inode *in,
			     struct pt_inode **dead);

void pt_tables_fini(struct vqf_pt *pt)
{
	uint32_t i;

	for (i = 1; i < pt->files.len; i++) {
		struct pt_file *f = pt->files.slots[i].obj;
		struct pt_inode *dead = NULL;

		if (!f)
			continue;
		if (f->dir)
			closedir(f->dir);
		else
			close(f->fd);
		/* An inode the guest forgot while the file was open is out
		 * of the table: this was its last reference (fuzz_device D3).
		 */
		if (f->inode)
			inode_put_locked(pt, f->inode, &dead);
		if (dead)
			inode_destroy(dead);
		pthread_mutex_destroy(&f->dlock);
		free(f);
	}
	for (i = 1; i < pt->inodes.len; i++)
		if (pt->inodes.slots[i].obj)
			inode_destroy(pt->inodes.slots[i].obj);
	free(pt->files.slots);
	free(pt->inodes.slots);
}

static void count_id_refusal(struct vqf_pt *pt, int err)
{
	pthread_mutex_lock(&pt->stats_lock);
	if (err == -EBADF)
		pt->stats.refused_forged_nodeid++;
	else
		pt->stats.refused_stale_nodeid++;
	pthread_mutex_unlock(&pt->stats_lock);
}

struct pt_inode *pt_inode_get(struct vqf_pt *pt, uint64_t nodeid, int *err)
{
	struct pt_inode *in;

	pthread_mutex_lock(&pt->lock);
	in = table_find(&pt->inodes, nodeid, err);
	if (in)
		in->refs++;
	pthread_mutex_unlock(&pt->lock);
	if (!in)
		count_id_refusal(pt, *err);
	return in;
}

static void inode_put_locked(struct vqf_pt *pt, struct pt_inode *in,
			     struct pt_inode **dead)
{
	(void)pt;
	if (--in->refs == 0)
		*dead = in;
}

void pt_inode_put(struct vqf_pt *pt, struct pt_inode *in)
{
	struct pt_inode *dead = NULL;

	if (!in)
		return;
	pthread_mutex_lock(&pt->lock);
	inode_put_locked(pt, in, &dead);
	pthread_mutex_unlock(&pt->lock);
	if (dead)
		inode_destroy(dead);	/* close() outside the lock */
}

struct pt_inode *pt_inode_lookup_fd(struct vqf_pt *pt, int pathfd,
				    const struct stat *st, int *err)
{
	unsigned int h = hash_of(st->st_dev, st->st_ino);
	struct pt_inode *in, *fresh;
	int ret;

	/* Allocated before the lock; thrown away if the inode is known. */
	fresh = inode_alloc(pathfd, st);
	if (!fresh) {
		close(pathfd);
		*err = -ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&pt->lock);
	for (in = pt->hash[h]; in; in = in->hnext)
		if (in->ino == st->st_ino && in->dev == st->st_dev)
			break;
	if (in) {
		in->nlookup++;
		in->refs++;
		pthread_mutex_unlock(&pt->lock);
		inode_destroy(fresh);
		return in;
	}
	ret = table_alloc(&pt->inodes, fresh, &fresh->nodeid);
	if (ret) {
		pthread_mutex_unlock(&pt->lock);
		inode_destroy(fresh);
		*err = ret;
		return NULL;
	}
	fresh->nlookup = 1;
	fresh->refs = 2;		/* table + caller */
	fresh->hnext = pt->hash[h];
	pt->hash[h] = fresh;
	pthread_mutex_lock(&pt->stats_lock);
	pt->stats.inodes++;
	pthread_mutex_unlock(&pt->stats_lock);
	pthread_mutex_unlock(&pt->lock);
	return fresh;
}

void pt_inode_forget(struct vqf_pt *pt, uint64_t nodeid, uint64_t n)
{
	struct pt_inode *in, **pp, *dead = NULL;
	int err;

	pthread_mutex_lock(&pt->lock);
	in = table_find(&pt->inodes, nodeid, &err);
	if (!in) {
		pthread_mutex_unlock(&pt->lock);
		count_id_refusal(pt, err);
		return;
	}
	if (in == pt->root) {
		pthread_mutex_unlock(&pt->lock);
		return;
	}
	in->nlookup -= n < in->nlookup ? n : in->nlookup;
	if (in->nlookup == 0) {
		for (pp = &pt->hash[hash_of(in->dev, in->ino)]; *pp;
		     pp = &(*pp)->hnext) {
			if (*pp == in) {
				*pp = in->hnext;
				break;
			}
		}
		table_free(&pt->inodes, in->nodeid);
		pthread_mutex_lock(&pt->stats_lock);
		pt->stats.inodes--;
		pthread_mutex_unlock(&pt->stats_lock);
		inode_put_locked(pt, in, &dead);
	}
	pthread_mutex_unlock(&pt->lock);
	if (dead)
		inode_destroy(dead);
}

struct pt_file *pt_file_new(struct vqf_pt *pt, struct pt_inode *in, int fd,
			    DIR *dir)
{
	struct pt_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fd = fd;
	f->dir = dir;
	f->inode = in;
	f->refs = 1;
	pthread_mutex_init(&f->dlock, NULL);
	pthread_mutex_lock(&pt->lock);
	if (table_alloc(&pt->files, f, &f->fh)) {
		pthread_mutex_unlock(&pt->lock);
		pthread_mutex_destroy(&f->dlock);
		free(f);
		return NULL;
	}
	in->refs++;
	pthread_mutex_unlock(&pt->lock);
	PT_STAT(pt, files);
	return f;
}

struct pt_file *pt_file_get(struct vqf_pt *pt, uint64_t fh, uint64_t nodeid,
			    int *err)
{
	struct pt_file *f;

	pthread_mutex_lock(&pt->lock);
	f = table_find(&pt->files, fh, err);
	if (f && f->inode->nodeid != nodeid)
		f = NULL;	/* someone else's handle */
	if (f)
		f->refs++;
	pthread_mutex_unlock(&pt->lock);
	if (!f) {
		*err = -EBADF;
		PT_STAT(pt, refused_bad_fh);
	}
	return f;
}

void pt_file_put(struct vqf_pt *pt, struct pt_file *f)
{
	struct pt_inode *dead = NULL;
	bool last;

	pthread_mutex_lock(&pt->lock);
	last = --f->refs == 0;
	if (last)
		inode_put_locked(pt, f->inode, &dead);
	pthread_mutex_unlock(&pt->lock);
	if (!last)
		return;
	if (f->dir)
		closedir(f->dir);
	else
		close(f->fd);
	pthread_mutex_destroy(&f->dlock);
	free(f);
	if (dead)
		inode_destroy(dead);
}

/*
 * A session's end (DESTROY, or the reset that makes a new session): every
 * file and every inode but the root goes, as virtiofsd's lo_destroy()
 * drops them, so that a guest that remounts or reboots leaks nothing.
 * The backend serves DESTROY and INIT alone; a request still using a file
 * or inode holds its own reference.
 */
void pt_tables_drop(struct vqf_pt *pt)
{
	uint32_t i;

	for (i = 1; i < pt->files.len; i++) {
		struct pt_file *f;
		uint64_t fh = 0, node = 0;

		pthread_mutex_lock(&pt->lock);
		f = pt->files.slots[i].obj;
		if (f) {
			fh = f->fh;
			node = f->inode->nodeid;
		}
		pthread_mutex_unlock(&pt->lock);
		if (f)
			pt_file_release(pt, fh, node);
	}
	for (i = 1; i < pt->inodes.len; i++) {
		struct pt_inode *in;
		uint64_t node = 0, n = 0;

		pthread_mutex_lock(&pt->lock);
		in = pt->inodes.slots[i].obj;
		if (in && in != pt->root) {
			node = in->nodeid;
			n = in->nlookup;
		}
		pthread_mutex_unlock(&pt->lock);
		if (node)
			pt_inode_forget(pt, node, n);
	}
}

int pt_file_release(struct vqf_pt *pt, uint64_t fh, uint64_t nodeid)
{
	struct pt_file *f;
	int err = 0;

	pthread_mutex_lock(&pt->lock);
	f = table_find(&pt->files, fh, &err);
	if (f && f->inode->nodeid != nodeid)
		f = NULL;
	if (f)
		table_free(&pt->files, fh);
	pthread_mutex_unlock(&pt->lock);
	if (!f) {
		PT_STAT(pt, refused_bad_fh);
		return -EBADF;
	}
	pthread_mutex_lock(&pt->stats_lock);
	pt->stats.files--;
	pthread_mutex_unlock(&pt->stats_lock);
	pt_file_put(pt, f);
	return 0;
}
