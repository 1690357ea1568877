// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * hub_nodes.c - what the hub knows of each nodeid a guest holds: its
 * lookups per guest, its version slot, its host inode and last name, and
 * the bumps that publish its changes.  Everything here runs under h->lock.
 */
#define _GNU_SOURCE
#include "hub_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned int hash64(u64 v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (unsigned int)(v & (HUB_BUCKETS - 1));
}

static unsigned int hash_name(u64 parent, const char *name)
{
	u64 v = parent * 0x9e3779b97f4a7c15ULL;

	while (*name)
		v = (v ^ (u8)*name++) * 0x100000001b3ULL;
	return hash64(v);
}

struct hub_node *hub_node_find(struct vqf_hub *h, u64 nodeid)
{
	struct hub_node *n;

	for (n = h->by_id[hash64(nodeid)]; n; n = n->next_id)
		if (n->nodeid == nodeid)
			return n;
	return NULL;
}

struct hub_node *hub_node_by_ino(struct vqf_hub *h, u64 ino)
{
	struct hub_node *n;

	for (n = h->by_ino[hash64(ino)]; n; n = n->next_ino)
		if (n->ino == ino)
			return n;
	return NULL;
}

struct hub_node *hub_node_by_name(struct vqf_hub *h, u64 parent,
				  const char *name)
{
	struct hub_node *n;

	for (n = h->by_name[hash_name(parent, name)]; n; n = n->next_name)
		if (n->name && n->parent == parent && !strcmp(n->name, name))
			return n;
	return NULL;
}

static void unlink_from(struct hub_node **pp, struct hub_node *n,
			size_t next_off)
{
	while (*pp && *pp != n)
		pp = (struct hub_node **)((char *)*pp + next_off);
	if (*pp)
		*pp = *(struct hub_node **)((char *)n + next_off);
}

void hub_name_clear(struct vqf_hub *h, struct hub_node *n)
{
	if (!n->name)
		return;
	unlink_from(&h->by_name[hash_name(n->parent, n->name)], n,
		    offsetof(struct hub_node, next_name));
	free(n->name);
	n->name = NULL;
	n->parent = 0;
}

/* (@parent, @name) names @n now; whoever had that name loses it. */
void hub_name_set(struct vqf_hub *h, struct hub_node *n, u64 parent,
		     const char *name)
{
	struct hub_node *old = hub_node_by_name(h, parent, name);
	char *copy;

	if (old == n)
		return;
	if (old)
		hub_name_clear(h, old);
	copy = strdup(name);
	if (!copy)
		return;		/* only a host-side hint is lost */
	hub_name_clear(h, n);
	n->name = copy;
	n->parent = parent;
	n->next_name = h->by_name[hash_name(parent, name)];
	h->by_name[hash_name(parent, name)] = n;
}

void hub_ino_set(struct vqf_hub *h, struct hub_node *n, u64 ino)
{
	if (n->ino == ino)
		return;
	if (n->ino)
		unlink_from(&h->by_ino[hash64(n->ino)], n,
			    offsetof(struct hub_node, next_ino));
	n->ino = ino;
	if (ino) {
		n->next_ino = h->by_ino[hash64(ino)];
		h->by_ino[hash64(ino)] = n;
	}
}

void hub_node_free(struct vqf_hub *h, struct hub_node *n)
{
	unlink_from(&h->by_id[hash64(n->nodeid)], n,
		    offsetof(struct hub_node, next_id));
	hub_ino_set(h, n, 0);
	hub_name_clear(h, n);
	h->st.nodes--;
	if (!n->slot)
		h->st.unversioned--;
	free(n);
}

/* The node of @nodeid, created (with a slot) when new; NULL on ENOMEM. */
struct hub_node *hub_node_get(struct vqf_hub *h, u64 nodeid)
{
	struct hub_node *n = hub_node_find(h, nodeid);

	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->nodeid = nodeid;
	n->slot = h->has_table ? vqf_ver_dev_alloc(&h->vd) : VQF_VER_NO_INDEX;
	n->next_id = h->by_id[hash64(nodeid)];
	h->by_id[hash64(nodeid)] = n;
	h->st.nodes++;
	if (!n->slot)
		h->st.unversioned++;
	return n;
}

/*
 * The root is nodeid 1: no reply names it, so it gets slot 1 here, where
 * guests that negotiated versions expect it (VQF_VER_ROOT_INDEX).
 */
int hub_root_node(struct vqf_hub *h)
{
	struct hub_node *n = hub_node_get(h, FUSE_ROOT_ID);
	struct stat st;

	if (!n)
		return -ENOMEM;
	if (h->has_table && n->slot != VQF_VER_ROOT_INDEX)
		return -EPROTO;
	n->total = 1;		/* the hub's own: never forgotten */
	if (h->cfg.root && !lstat(h->cfg.root, &st))
		hub_ino_set(h, n, (u64)st.st_ino);
	return 0;
}

/* A metadata change of @n is done: publish it before anyone is told. */
void hub_bump(struct vqf_hub *h, struct hub_node *n, bool host)
{
	h->epoch++;
	if (!n)
		return;
	if (n->slot)
		vqf_ver_dev_bump(&h->vd, n->slot);
	if (host)
		h->st.host_bumps++;
	else
		h->st.bumps++;
}

/* Every slot, e.g. after inotify lost events. */
void hub_bump_all(struct vqf_hub *h)
{
	unsigned int b;
	struct hub_node *n;

	for (b = 0; b < HUB_BUCKETS; b++)
		for (n = h->by_id[b]; n; n = n->next_id)
			hub_bump(h, n, true);
}

/*
 * @count lookups of @nodeid given back by port @p (clamped to its own);
 * returns how many the backend must forget.  Under h->lock.
 */
u64 hub_forget_locked(struct vqf_hub *h, unsigned int p, u64 nodeid,
			 u64 count)
{
	struct hub_node *n = hub_node_find(h, nodeid);
	u64 own, take;
	bool had_slot;
	int ret;

	if (!n) {
		h->st.forget_unknown++;
		return 0;
	}
	own = n->per_port[p];
	take = count < own ? count : own;
	had_slot = n->slot != VQF_VER_NO_INDEX;
	ret = vqf_ver_dev_forget(&h->vd, &n->total, &n->per_port[p], count,
				 &n->slot);
	if (ret == -EOVERFLOW)
		h->st.forget_clamped++;
	h->st.forgets += take;
	if (!n->total) {
		/* The slot went back with the last lookup (n->slot 0 now). */
		if (had_slot)
			h->st.unversioned++;
		hub_node_free(h, n);
	}
	return take;
}
