/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * dirent_vectors.h - shared test vectors for lib/vqf_dirent.h.
 *
 * Plain C tables plus a runner that uses only the lib/ API, so the cmocka
 * program (tests/unit/dirent/) and the in-kernel KTAP module iterate the
 * same cases the same way:
 *
 *   vqf_dirent_vectors_count(), vqf_dirent_vectors_name(i),
 *   vqf_dirent_vectors_run(i)
 *
 * run() returns 0 when the case holds, else the line of the first failed
 * check.  Kernel-clean: no libc beyond vqf_compat.h, the reply built in
 * static storage (the runner is called from one thread).
 *
 * A walk case lays its records back to back as a server would (each padded
 * to 8 bytes), cuts @cut bytes off the end or appends @extra zero bytes,
 * and walks from @start, once with the buffer aligned and once at an odd
 * address.  @want lists what each vqf_dirent_next() call returns, up to
 * and including the one that ends the walk (0 or a refusal that leaves
 * the position).  Every call that returns a record or a name refusal must
 * describe the next record laid and move the position past it; every
 * other call must leave the position where it was.
 */
#ifndef VQF_DIRENT_VECTORS_H
#define VQF_DIRENT_VECTORS_H

#include "vqf_dirent.h"

#define VQF_DIRENT_VEC_CHECK(cond) \
	do { if (!(cond)) return __LINE__; } while (0)
#define VQF_DIRENT_VEC_UNUSED	__attribute__((__unused__))
#define VQF_DIRENT_VEC_RECS	3
#define VQF_DIRENT_VEC_WANTS	5
#define VQF_DIRENT_VEC_BUF	2048

/* One record: @nbytes bytes of @bytes (or @nbytes 'x' when NULL). */
struct vqf_dirent_vec_rec {
	const char *bytes;
	u32 nbytes;
	u32 namelen;		/* what fuse_dirent.namelen says */
};

#define VQF_DIRENT_REC(s)	{ s, sizeof(s) - 1, sizeof(s) - 1 }
#define VQF_DIRENT_LIE(s, n)	{ s, sizeof(s) - 1, n }
#define VQF_DIRENT_FILL(n)	{ NULL, n, n }

struct vqf_dirent_vec {
	const char *name;
	bool plus;
	/* Laid in order; the first with nbytes 0 ends them. */
	struct vqf_dirent_vec_rec rec[VQF_DIRENT_VEC_RECS];
	u32 cut;		/* bytes taken off the end */
	u32 extra;		/* zero bytes added at the end */
	u32 start;		/* bytes past the end to start at */
	int want[VQF_DIRENT_VEC_WANTS];
};

static const struct vqf_dirent_vec vqf_dirent_vecs[] VQF_DIRENT_VEC_UNUSED = {
	{ "readdir: empty reply", false, { }, 0, 0, 0, { 0 } },
	{ "plus: empty reply", true, { }, 0, 0, 0, { 0 } },
	{ "readdir: dots and a name", false,
	  { VQF_DIRENT_REC("."), VQF_DIRENT_REC(".."),
	    VQF_DIRENT_REC("name") }, 0, 0, 0, { 1, 1, 1, 0 } },
	{ "plus: dots and a name", true,
	  { VQF_DIRENT_REC("."), VQF_DIRENT_REC(".."),
	    VQF_DIRENT_REC("name") }, 0, 0, 0, { 1, 1, 1, 0 } },
	{ "readdir: name filling the padding", false,
	  { VQF_DIRENT_REC("8bytes!!"), VQF_DIRENT_REC("b") }, 0, 0, 0,
	  { 1, 1, 0 } },
	{ "plus: name at the cap (1024)", true,
	  { VQF_DIRENT_FILL(1024) }, 0, 0, 0, { 1, 0 } },
	{ "readdir: start past the end", false,
	  { VQF_DIRENT_REC("a") }, 0, 0, 8, { 0 } },
	/* Refusals that end the walk: the position stays. */
	{ "readdir: header cut short", false,
	  { VQF_DIRENT_REC("a") }, 0, 8, 0, { 1, -ENODATA } },
	{ "plus: header cut short", true,
	  { VQF_DIRENT_REC("a") }, 0, 8, 0, { 1, -ENODATA } },
	{ "plus: only part of an entry_out", true,
	  { VQF_DIRENT_REC("a") }, 32, 0, 0, { -ENODATA } },
	{ "readdir: namelen 0", false,
	  { VQF_DIRENT_LIE("a", 0), VQF_DIRENT_REC("b") }, 0, 0, 0,
	  { -EBADMSG } },
	{ "plus: namelen 0 after a record", true,
	  { VQF_DIRENT_REC("a"), VQF_DIRENT_LIE("b", 0) }, 0, 0, 0,
	  { 1, -EBADMSG } },
	{ "readdir: name over the cap (1025)", false,
	  { VQF_DIRENT_FILL(1025) }, 0, 0, 0, { -ENAMETOOLONG } },
	{ "plus: namelen 0xffffffff", true,
	  { VQF_DIRENT_LIE("a", 0xffffffffu) }, 0, 0, 0,
	  { -ENAMETOOLONG } },
	{ "readdir: padding cut off", false,
	  { VQF_DIRENT_REC("a"), VQF_DIRENT_REC("abc") }, 1, 0, 0,
	  { 1, -EOVERFLOW } },
	{ "plus: name cut short", true,
	  { VQF_DIRENT_REC("abcdefghijk") }, 8, 0, 0, { -EOVERFLOW } },
	{ "plus: namelen running past the reply", true,
	  { VQF_DIRENT_LIE("z", 200), VQF_DIRENT_REC("y") }, 0, 0, 0,
	  { -EOVERFLOW } },
	/* Name refusals: the record is framed, the walk may go on. */
	{ "readdir: '/' in a name", false,
	  { VQF_DIRENT_REC("a/b"), VQF_DIRENT_REC("c") }, 0, 0, 0,
	  { -EBADE, 1, 0 } },
	{ "plus: name '/'", true,
	  { VQF_DIRENT_REC("/"), VQF_DIRENT_REC("c") }, 0, 0, 0,
	  { -EBADE, 1, 0 } },
	{ "readdir: NUL in a name", false,
	  { VQF_DIRENT_REC("a\0b"), VQF_DIRENT_REC("c") }, 0, 0, 0,
	  { -EILSEQ, 1, 0 } },
	{ "plus: name ending in NUL", true,
	  { VQF_DIRENT_REC("c"), VQF_DIRENT_REC("ab\0") }, 0, 0, 0,
	  { 1, -EILSEQ, 0 } },
	{ "plus: '/' before NUL is -EBADE", true,
	  { VQF_DIRENT_REC("\0/") }, 0, 0, 0, { -EBADE, 0 } },
};

/* vqf_dirent_is_dot() over a name's first @len bytes. */
struct vqf_dirent_dot_vec {
	const char *name;
	const char *bytes;
	u32 len;
	bool want;
};

static const struct vqf_dirent_dot_vec
vqf_dirent_dot_vecs[] VQF_DIRENT_VEC_UNUSED = {
	{ "dot: .", ".", 1, true },
	{ "dot: ..", "..", 2, true },
	{ "dot: ... is a name", "...", 3, false },
	{ "dot: .a is a name", ".a", 2, false },
	{ "dot: a. is a name", "a.", 2, false },
	{ "dot: only len bytes count", "..x", 2, true },
	{ "dot: empty", "", 0, false },
};

static u8 vqf_dirent_vec_buf[VQF_DIRENT_VEC_BUF + 8];

/* Whether record @r is laid as "." or "..", by the table alone. */
static inline bool vqf_dirent_vec_dot(const struct vqf_dirent_vec_rec *r)
{
	return r->bytes && r->nbytes <= 2 &&
	       !memcmp(r->bytes, "..", r->nbytes);
}

/* Lays @v's records at @buf; returns the reply's length. */
static inline u32 vqf_dirent_vec_build(const struct vqf_dirent_vec *v,
				       u8 *buf)
{
	const u32 hdr = v->plus ? FUSE_NAME_OFFSET_DIRENTPLUS :
				  FUSE_NAME_OFFSET;
	u32 len = 0, k;

	memset(buf, 0, VQF_DIRENT_VEC_BUF);
	for (k = 0; k < VQF_DIRENT_VEC_RECS && v->rec[k].nbytes; k++) {
		const struct vqf_dirent_vec_rec *r = &v->rec[k];
		struct fuse_entry_out eo;
		struct fuse_dirent d;

		memset(&eo, 0, sizeof(eo));
		eo.nodeid = 10 + k;
		eo.attr.ino = 20 + k;
		memset(&d, 0, sizeof(d));
		d.ino = 30 + k;
		d.off = 40 + k;
		d.type = 4 + k;
		d.namelen = r->namelen;
		if (v->plus)
			memcpy(buf + len, &eo, sizeof(eo));
		memcpy(buf + len + hdr - FUSE_NAME_OFFSET, &d,
		       FUSE_NAME_OFFSET);
		if (r->bytes)
			memcpy(buf + len + hdr, r->bytes, r->nbytes);
		else
			memset(buf + len + hdr, 'x', r->nbytes);
		len += (u32)FUSE_DIRENT_ALIGN(hdr + r->nbytes);
	}
	return len - v->cut + v->extra;
}

static inline int vqf_dirent_vec_walk(const struct vqf_dirent_vec *v,
				      u8 *buf)
{
	const u32 hdr = v->plus ? FUSE_NAME_OFFSET_DIRENTPLUS :
				  FUSE_NAME_OFFSET;
	u32 len = vqf_dirent_vec_build(v, buf);
	u32 pos = v->start ? len + v->start : 0, at = 0, i, k = 0;
	struct vqf_dirent e;
	bool dot;
	int ret;

	for (i = 0; i < VQF_DIRENT_VEC_WANTS; i++) {
		u32 was = pos;

		ret = vqf_dirent_next(buf, len, v->plus, &pos, &e);
		VQF_DIRENT_VEC_CHECK(ret == v->want[i]);
		if (!vqf_dirent_framed(ret)) {
			VQF_DIRENT_VEC_CHECK(pos == was);
			/* Asked again, the same answer. */
			VQF_DIRENT_VEC_CHECK(vqf_dirent_next(buf, len, v->plus,
							     &pos, &e) == ret);
			VQF_DIRENT_VEC_CHECK(pos == was);
			return 0;
		}
		VQF_DIRENT_VEC_CHECK(k < VQF_DIRENT_VEC_RECS);
		VQF_DIRENT_VEC_CHECK(e.name == (const char *)buf + at + hdr);
		VQF_DIRENT_VEC_CHECK(e.namelen == v->rec[k].nbytes);
		VQF_DIRENT_VEC_CHECK(e.ino == 30 + k && e.off == 40 + k &&
				     e.type == 4 + k);
		VQF_DIRENT_VEC_CHECK(e.entry.nodeid == (v->plus ? 10 + k : 0));
		VQF_DIRENT_VEC_CHECK(e.entry.attr.ino ==
				     (v->plus ? 20 + k : 0));
		/* Every record laid has a node id: all but dots count. */
		dot = vqf_dirent_vec_dot(&v->rec[k]);
		VQF_DIRENT_VEC_CHECK(vqf_dirent_counts_lookup(&e) ==
				     (v->plus && !dot));
		at += (u32)FUSE_DIRENT_ALIGN(hdr + e.namelen);
		VQF_DIRENT_VEC_CHECK(pos == at);
		k++;
	}
	return __LINE__;	/* the case never ended its walk */
}

static inline int vqf_dirent_vec_run(const struct vqf_dirent_vec *v)
{
	int ret = vqf_dirent_vec_walk(v, vqf_dirent_vec_buf);

	return ret ? ret : vqf_dirent_vec_walk(v, vqf_dirent_vec_buf + 1);
}

#define VQF_DIRENT_VEC_N(t)	((unsigned int)ARRAY_SIZE(t))

static inline unsigned int vqf_dirent_vectors_count(void)
{
	return VQF_DIRENT_VEC_N(vqf_dirent_vecs) +
	       VQF_DIRENT_VEC_N(vqf_dirent_dot_vecs);
}

/* Name of vector @i, "?" past the end. */
static inline const char *vqf_dirent_vectors_name(unsigned int i)
{
	if (i < VQF_DIRENT_VEC_N(vqf_dirent_vecs))
		return vqf_dirent_vecs[i].name;
	i -= VQF_DIRENT_VEC_N(vqf_dirent_vecs);
	if (i < VQF_DIRENT_VEC_N(vqf_dirent_dot_vecs))
		return vqf_dirent_dot_vecs[i].name;
	return "?";
}

/* 0 = pass; otherwise the line of the failed check in this file. */
static inline int vqf_dirent_vectors_run(unsigned int i)
{
	const struct vqf_dirent_dot_vec *d;

	if (i < VQF_DIRENT_VEC_N(vqf_dirent_vecs))
		return vqf_dirent_vec_run(&vqf_dirent_vecs[i]);
	i -= VQF_DIRENT_VEC_N(vqf_dirent_vecs);
	if (i >= VQF_DIRENT_VEC_N(vqf_dirent_dot_vecs))
		return __LINE__;
	d = &vqf_dirent_dot_vecs[i];
	VQF_DIRENT_VEC_CHECK(vqf_dirent_is_dot(d->bytes, d->len) == d->want);
	return 0;
}

#endif /* VQF_DIRENT_VECTORS_H */
