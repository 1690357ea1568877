// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * gcli_dir.c - names and directories: MKDIR, MKNOD, SYMLINK, UNLINK, RMDIR,
 * RENAME, LINK, READLINK, READDIR(PLUS).
 */
#define _GNU_SOURCE	/* SEEK_DATA, F_OFD_*, RENAME_* */
#include "gcli_int.h"
#include "vqf_dirent.h"

/*
 * Sends @cl, which creates @name in @parent and is answered with its
 * entry, and enters the new inode in the caches.
 */
static int entry_call(struct vqf_gcli *c, struct vqf_gdrv_call *cl,
		      u64 parent, const char *name)
{
	struct fuse_entry_out e;
	struct asamp as;
	int ret;

	vqf_req_add_out(&cl->req, &e, sizeof(e));
	gcli_asample_entry(c, parent, &cl->req, &as);
	memset(&e, 0, sizeof(e));
	ret = gcli_send(c, cl);
	if (!ret) {
		gcli_asample_reply(c, &cl->req, &as);
		ret = gcli_new_entry(c, parent, name, &e, &as);
	}
	return ret;
}

/* MKDIR, MKNOD, SYMLINK: an entry in @path's parent. */
static int make_node(struct vqf_gcli *c, const char *path, u32 opcode,
		     const void *arg, u32 arg_size, const char *target)
{
	char name[NAME_MAX + 1];
	struct vqf_gdrv_call cl;
	u64 parent;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = gcli_resolve(c, path, true, true, &parent, name, NULL);
	if (ret)
		return ret == -EBUSY ? -EEXIST : ret;
	gcli_call_init(&cl, opcode, parent);
	if (arg)
		vqf_req_add_in(&cl.req, arg, arg_size);
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	if (target)
		vqf_req_add_in(&cl.req, target, (u32)strlen(target) + 1);
	ret = entry_call(c, &cl, parent, name);
	gcli_iput(c, parent);
	return ret;
}

int vqf_gcli_mkdir(struct vqf_gcli *c, const char *path, mode_t mode)
{
	struct fuse_mkdir_in mi = { .mode = mode, .umask = 0 };

	return make_node(c, path, FUSE_MKDIR, &mi, sizeof(mi), NULL);
}

int vqf_gcli_mknod(struct vqf_gcli *c, const char *path, mode_t mode,
		   dev_t dev)
{
	struct fuse_mknod_in mi = { .mode = mode, .rdev = (u32)dev };

	return make_node(c, path, FUSE_MKNOD, &mi, sizeof(mi), NULL);
}

int vqf_gcli_symlink(struct vqf_gcli *c, const char *target,
		     const char *path)
{
	if (!target || !*target)
		return -ENOENT;
	if (strlen(target) >= VQF_SYMLINK_MAX)
		return -ENAMETOOLONG;
	return make_node(c, path, FUSE_SYMLINK, NULL, 0, target);
}

static int remove_name(struct vqf_gcli *c, const char *path, u32 opcode)
{
	char name[NAME_MAX + 1];
	struct vqf_gdrv_call cl;
	struct fuse_attr a;	/* unused: the inode's own count is */
	u64 parent, child = 0;
	bool held;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = gcli_resolve(c, path, true, true, &parent, name, NULL);
	if (ret)
		return ret;
	/*
	 * The victim first, as the VFS has its dentry: its last link
	 * going lets it be forgotten once unused (evict, FORGET).  With
	 * cache=shared a name known only as renamed here is not cached
	 * (nothing proves it): no LOOKUP for it, the LRU forgets it.
	 */
	ret = gcli_lookup_child(c, parent, name, c->ver_on, &child, &a);
	held = !ret;
	if (ret && !(ret == -ENOENT && c->ver_on)) {
		gcli_iput(c, parent);
		return ret;
	}
	gcli_call_init(&cl, opcode, parent);
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	ret = gcli_send(c, &cl);
	if (!ret) {
		u64 gone = gcli_dentry_drop(c, parent, name);
		u64 n = held ? child : gone;

		if (n) {
			gcli_attr_inval(c, n);	/* nlink, ctime */
			if (opcode == FUSE_RMDIR) {
				pthread_mutex_lock(&c->lock);
				gc_d_drop_node(&c->dc, n);
				pthread_mutex_unlock(&c->lock);
			}
		}
		if (held)
			gcli_inode_drop_nlink(c, child, opcode == FUSE_RMDIR);
		gcli_attr_inval(c, parent);
	}
	if (held)
		gcli_iput(c, child);
	gcli_iput(c, parent);
	return ret;
}

int vqf_gcli_rmdir(struct vqf_gcli *c, const char *path)
{
	return remove_name(c, path, FUSE_RMDIR);
}

int vqf_gcli_unlink(struct vqf_gcli *c, const char *path)
{
	return remove_name(c, path, FUSE_UNLINK);
}

int vqf_gcli_rename(struct vqf_gcli *c, const char *from, const char *to,
		    unsigned int flags)
{
	char n1[NAME_MAX + 1], n2[NAME_MAX + 1];
	struct fuse_rename2_in r2 = { 0 };
	struct fuse_rename_in r1 = { 0 };
	struct vqf_gdrv_call cl;
	u64 p1, p2;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = gcli_resolve(c, from, true, true, &p1, n1, NULL);
	if (ret)
		return ret;
	ret = gcli_resolve(c, to, true, true, &p2, n2, NULL);
	if (ret) {
		gcli_iput(c, p1);
		return ret;
	}
	/* Arg values are read at submission: they must outlive gcli_send(). */
	r2.newdir = p2;
	r2.flags = flags;
	r1.newdir = p2;
	if (flags) {
		gcli_call_init(&cl, FUSE_RENAME2, p1);
		vqf_req_add_in(&cl.req, &r2, sizeof(r2));
	} else {
		gcli_call_init(&cl, FUSE_RENAME, p1);
		vqf_req_add_in(&cl.req, &r1, sizeof(r1));
	}
	vqf_req_add_in(&cl.req, n1, (u32)strlen(n1) + 1);
	vqf_req_add_in(&cl.req, n2, (u32)strlen(n2) + 1);
	ret = gcli_send(c, &cl);
	if (!ret) {
		u64 a = gcli_dentry_drop(c, p1, n1), b = gcli_dentry_drop(c, p2, n2);

		/* The names move with their inodes (d_move), so what is
		 * done next under the new name needs no LOOKUP; with
		 * cache=shared only a reply's versions may prove a name.
		 */
		if (a && !c->ver_on)
			gcli_dentry_set(c, p2, n2, a, NULL);
		if (b && !c->ver_on && (flags & RENAME_EXCHANGE))
			gcli_dentry_set(c, p1, n1, b, NULL);
		if (a)
			gcli_attr_inval(c, a);
		if (b)
			gcli_attr_inval(c, b);
		gcli_attr_inval(c, p1);
		gcli_attr_inval(c, p2);
	}
	gcli_iput(c, p1);
	gcli_iput(c, p2);
	return ret;
}

int vqf_gcli_link(struct vqf_gcli *c, const char *from, const char *to)
{
	char name[NAME_MAX + 1];
	struct vqf_gdrv_call cl;
	struct fuse_link_in li;
	struct fuse_attr a;
	u64 old, parent;
	int ret;

	STAT_ADD(c, calls, 1);
	ret = gcli_resolve(c, from, false, false, &old, NULL, &a);
	if (ret)
		return ret;
	if (S_ISDIR(a.mode)) {
		gcli_iput(c, old);
		return -EPERM;
	}
	ret = gcli_resolve(c, to, true, true, &parent, name, NULL);
	if (ret) {
		gcli_iput(c, old);
		return ret == -EBUSY ? -EEXIST : ret;
	}
	li.oldnodeid = old;
	gcli_call_init(&cl, FUSE_LINK, parent);
	vqf_req_add_in(&cl.req, &li, sizeof(li));
	vqf_req_add_in(&cl.req, name, (u32)strlen(name) + 1);
	ret = entry_call(c, &cl, parent, name);
	gcli_iput(c, parent);
	gcli_iput(c, old);
	return ret;
}

ssize_t vqf_gcli_readlink(struct vqf_gcli *c, const char *path, char *buf,
			  size_t size)
{
	struct fuse_attr a;
	char *tmp;
	u64 nodeid;
	ssize_t n;
	int ret;

	STAT_ADD(c, calls, 1);
	if (!size)
		return -EINVAL;
	ret = gcli_resolve(c, path, false, false, &nodeid, NULL, &a);
	if (ret)
		return ret;
	if (!S_ISLNK(a.mode)) {
		gcli_iput(c, nodeid);
		return -EINVAL;
	}
	/* Ask for a page: the server's answer is cut to @size here. */
	tmp = malloc(VQF_SYMLINK_MAX);
	if (!tmp) {
		gcli_iput(c, nodeid);
		return -ENOMEM;
	}
	n = gcli_do_readlink(c, nodeid, tmp, VQF_SYMLINK_MAX);
	gcli_iput(c, nodeid);
	if (n >= 0) {
		if ((size_t)n > size)
			n = (ssize_t)size;
		memcpy(buf, tmp, (size_t)n);
	}
	free(tmp);
	return n;
}

/*
 * Parses one READDIR(PLUS) reply of @len bytes.  The server is not
 * trusted: any record lib/'s walker refuses (cut short, a name empty,
 * longer than NAME_MAX, holding '/' or NUL) fails the reply.  Returns 0
 * and the last offset, a callback's nonzero value, or -EIO for a
 * malformed reply.
 */
static int parse_dir(struct vqf_gcli *c, u64 dir, struct asamp *ds,
		     const u8 *buf,
		     u32 len, bool plus, vqf_gcli_dirent_fn fn, void *ctx,
		     u64 *last_off)
{
	char name[NAME_MAX + 1];
	struct vqf_dirent e;
	u32 pos = 0;
	int ret;

	while ((ret = vqf_dirent_next(buf, len, plus, &pos, &e)) > 0) {
		struct stat st;

		if (e.namelen > NAME_MAX)
			return -EIO;
		memcpy(name, e.name, e.namelen);
		name[e.namelen] = 0;
		memset(&st, 0, sizeof(st));
		if (plus) {
			gcli_attr_to_stat(&e.entry.attr, &st);
			if (!st.st_ino)
				st.st_ino = e.ino;
			if (!st.st_mode)
				st.st_mode = e.type << 12;
			/* Every entry but . and .. counts a lookup, and
			 * primes the caches (fuse_direntplus_link).
			 */
			if (vqf_dirent_counts_lookup(&e) &&
			    !gcli_entry_got(c, &e.entry, false)) {
				gcli_attr_got(c, e.entry.nodeid, &e.entry.attr,
					      ds);
				gcli_dentry_set(c, dir, name, e.entry.nodeid,
						ds);
			}
		} else {
			st.st_ino = e.ino;
			st.st_mode = e.type << 12;
		}
		*last_off = e.off;
		ret = fn(ctx, name, &st);
		if (ret)
			return ret;
	}
	return ret ? -EIO : 0;
}

int vqf_gcli_readdir(struct vqf_gcli *c, const char *path, bool plus,
		     vqf_gcli_dirent_fn fn, void *ctx)
{
	struct vqf_gram *ram = vqf_gdrv_ram(c->g);
	u64 nodeid, fh, off = 0;
	unsigned int rounds = 0;
	u8 *page, *copy;
	int ret;

	STAT_ADD(c, calls, 1);
	/* As fs/fuse: READDIRPLUS only for a server whose INIT reply asked
	 * for it (a daemon at cache=none answers it ENOSYS).
	 */
	if (!(vqf_gdrv_init_out(c->g)->flags & FUSE_DO_READDIRPLUS))
		plus = false;
	ret = gcli_resolve(c, path, false, true, &nodeid, NULL, NULL);
	if (ret)
		return ret;
	ret = gcli_open_node(c, nodeid, O_RDONLY | O_DIRECTORY, true, &fh);
	if (ret) {
		gcli_iput(c, nodeid);
		return ret;
	}
	page = vqf_gram_alloc(ram, GCLI_DIRBUF, false);
	copy = malloc(GCLI_DIRBUF);
	if (!page || !copy) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		struct vqf_gdrv_call cl;
		struct fuse_read_in ri = { .fh = fh, .offset = off,
					   .size = GCLI_DIRBUF };
		struct vqf_page_desc pd = { .page = page,
					    .length = GCLI_DIRBUF };
		u64 prev = off;
		struct asamp as;
		u32 got;

		/* No extension on READDIRPLUS (seed 010): its entries are
		 * proven only through the directory's version.
		 */
		gcli_asample(c, 0, &as);
		as.dirplus = true;
		if (c->ver_on) {
			pthread_mutex_lock(&c->lock);
			as.parent = vqf_ver_sample(&c->vt,
						   &(*gcli_ifind(c, nodeid))->ver);
			pthread_mutex_unlock(&c->lock);
		}
		memset(&cl, 0, sizeof(cl));
		vqf_req_init_read(&cl.req, plus ? FUSE_READDIRPLUS :
				  FUSE_READDIR, 0, nodeid, &ri, &pd, 1, false);
		ret = gcli_send(c, &cl);
		if (ret)
			break;
		got = cl.req.out_args[0].size;
		if (!got)
			break;
		/* Parse a private copy: the device may still write. */
		memcpy(copy, page, got);
		ret = parse_dir(c, nodeid, &as, copy, got, plus, fn, ctx, &off);
		if (ret)
			break;
		/* A server that never moves on would loop forever. */
		if (off == prev || ++rounds > (1u << 20)) {
			ret = -EIO;
			break;
		}
	}
out:
	free(copy);
	vqf_gram_release(ram, page);
	{
		struct vqf_gdrv_call cl;
		struct fuse_release_in rl = { .fh = fh };

		gcli_call_init(&cl, FUSE_RELEASEDIR, nodeid);
		vqf_req_add_in(&cl.req, &rl, sizeof(rl));
		gcli_send(c, &cl);
	}
	gcli_iput(c, nodeid);
	return ret;
}
