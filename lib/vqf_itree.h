/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vqf_itree.h - augmented red-black interval tree with intrusive nodes.
 *
 * Each node carries a closed interval [start, last] of u64 (both ends
 * inclusive, so [0, U64_MAX] is representable) and is linked into the tree
 * through the struct vqf_itree_node embedded in the caller's object; the
 * tree never allocates.  Nodes are ordered by start; equal starts are
 * allowed (a later insert goes to the right of earlier equal ones).
 *
 * Invariants, all checked by vqf_itree_check():
 *   I1  every node has start <= last;
 *   I2  an in-order walk visits starts in non-decreasing order;
 *   I3  child->parent points back at its parent, the root has no parent;
 *   I4  the root is black and a red node has no red child;
 *   I5  every path from the root to a missing child crosses the same number
 *       of black nodes (together with I4 the height is <= 2*log2(n + 1));
 *   I6  subtree_last == max(last, left->subtree_last, right->subtree_last),
 *       the augmentation that lets a search skip every subtree ending
 *       before the query starts;
 *   I7  root->leftmost is the first node in order (O(1) fast reject of
 *       queries that end before everything) and root->count the node count.
 *
 * Concurrency: none.  The caller serialises every call that takes a root
 * (or a node in a tree) against every modifying call on the same tree;
 * lookups may run concurrently with each other.
 *
 * Complexity: insert, remove O(log n); iter_first O(log n); iter_next
 * amortised O(log n) per result.  No recursion: safe on a kernel stack.
 */
#ifndef VQF_ITREE_H
#define VQF_ITREE_H

#include "vqf_compat.h"

struct vqf_itree_node {
	struct vqf_itree_node *parent;
	struct vqf_itree_node *left;
	struct vqf_itree_node *right;
	u64 start;		/* set by the caller before insert */
	u64 last;		/* set by the caller before insert, >= start */
	u64 subtree_last;	/* private: max last in this subtree (I6) */
	bool red;		/* private */
};

struct vqf_itree_root {
	struct vqf_itree_node *node;		/* private: the root node */
	struct vqf_itree_node *leftmost;	/* private: first in order */
	unsigned long count;			/* read-only: nodes in tree */
};

#define VQF_ITREE_ROOT_INIT	{ NULL, NULL, 0 }

/* The object that embeds @ptr, a struct vqf_itree_node *, as @member. */
#define vqf_itree_entry(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* vqf_itree_init() - make @root an empty tree. */
static inline void vqf_itree_init(struct vqf_itree_root *root)
{
	root->node = NULL;
	root->leftmost = NULL;
	root->count = 0;
}

static inline bool vqf_itree_empty(const struct vqf_itree_root *root)
{
	return !root->node;
}

/*
 * vqf_itree_insert() - link @node into @root.
 * @node->start and @node->last must be set; the other fields are written.
 * @node must not be in any tree.  Returns 0, or -EINVAL if start > last
 * (the tree is then untouched).
 */
int vqf_itree_insert(struct vqf_itree_root *root, struct vqf_itree_node *node);

/*
 * vqf_itree_remove() - unlink @node, which must be in @root.  The node's
 * fields other than start/last are garbage afterwards; it may be inserted
 * again (into any tree) once start/last are set.
 */
void vqf_itree_remove(struct vqf_itree_root *root, struct vqf_itree_node *node);

/*
 * vqf_itree_iter_first() - the first node, in start order, whose interval
 * intersects [@start, @last]; NULL if none or if @start > @last.
 */
struct vqf_itree_node *vqf_itree_iter_first(const struct vqf_itree_root *root,
					    u64 start, u64 last);

/*
 * vqf_itree_iter_next() - the node after @node, in start order, that
 * intersects [@start, @last]; NULL if none.  @node must be a result of
 * vqf_itree_iter_first()/_next() with the same query and the tree must not
 * have been modified since.  To remove while iterating, fetch the next node
 * before removing the current one, or restart with _iter_first().
 */
struct vqf_itree_node *vqf_itree_iter_next(const struct vqf_itree_node *node,
					   u64 start, u64 last);

/* In-order walk of every node: first (NULL if empty) and successor. */
struct vqf_itree_node *vqf_itree_first(const struct vqf_itree_root *root);
struct vqf_itree_node *vqf_itree_next(const struct vqf_itree_node *node);

/*
 * vqf_itree_check() - verify invariants I1-I7 of @root.
 * Returns 0 if they hold, or -EUCLEAN with *@why (if @why is not NULL)
 * naming the first violated invariant.  Bounded by root->count even on a
 * corrupted tree (a cycle is reported, not followed).  O(n log n); for
 * tests and debug builds.
 */
int vqf_itree_check(const struct vqf_itree_root *root, const char **why);

#endif /* VQF_ITREE_H */
