// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_dev.c - device-side FUSE request parser and reply builder.
 *
 * See vqf_dev.h for the contract.  The parser reads guest memory through
 * a cursor that only ever moves forward, so each byte of a request is read
 * at most once for a decision; lengths are taken from the copies.
 */
#include "vqf_dev.h"

/*
 * What the shared table (vqf_fuse_ops.h) does not say and the parser needs:
 * which names are path components (no '/') and which sizes are bounded by
 * max_read.
 */
static bool dev_name_is_component(u32 opcode, unsigned int nth)
{
	switch (opcode) {
	case FUSE_SETXATTR:
	case FUSE_GETXATTR:
	case FUSE_REMOVEXATTR:
		return false;
	case FUSE_SYMLINK:
		return nth == 0;	/* the second name is the target */
	}
	return true;
}

static bool dev_read_sized(u32 opcode)
{
	return opcode == FUSE_READ || opcode == FUSE_READDIR ||
	       opcode == FUSE_READDIRPLUS;
}

static const struct {
	int err;	/* returned by vqf_dev_parse() */
	int reply;	/* sent to the guest */
	const char *name;
} dev_reasons[VQF_DEV_R_NR] = {
	[VQF_DEV_OK] = { 0, 0, "ok" },
	[VQF_DEV_R_HDR_SHORT] = { -ENODATA, -EPROTO, "hdr_short" },
	[VQF_DEV_R_LEN_SMALL] = { -EBADMSG, -EPROTO, "len_small" },
	[VQF_DEV_R_LEN_OVER] = { -EOVERFLOW, -EPROTO, "len_over" },
	[VQF_DEV_R_LEN_UNDER] = { -EPROTO, -EPROTO, "len_under" },
	[VQF_DEV_R_TOO_BIG] = { -E2BIG, -EINVAL, "too_big" },
	/* FUSE's own meaning of ENOSYS: "not implemented", as fs/fuse uses it */
	[VQF_DEV_R_OPCODE] = { -ENOSYS, -ENOSYS, "opcode" },
	[VQF_DEV_R_NO_INIT] = { -ENOTCONN, -EIO, "no_init" },
	[VQF_DEV_R_REINIT] = { -EISCONN, -EIO, "reinit" },
	[VQF_DEV_R_QUEUE] = { -EPERM, -EINVAL, "queue" },
	[VQF_DEV_R_ARG_SHORT] = { -ENOMSG, -EINVAL, "arg_short" },
	[VQF_DEV_R_TRAILING] = { -EBADR, -EINVAL, "trailing" },
	[VQF_DEV_R_NAME_UNTERM] = { -EILSEQ, -EINVAL, "name_unterm" },
	[VQF_DEV_R_NAME_LONG] = { -ENAMETOOLONG, -ENAMETOOLONG, "name_long" },
	[VQF_DEV_R_NAME_BAD] = { -EBADE, -EINVAL, "name_bad" },
	[VQF_DEV_R_DATA_SIZE] = { -EMSGSIZE, -EINVAL, "data_size" },
	[VQF_DEV_R_DATA_MAX] = { -ERANGE, -EINVAL, "data_max" },
	[VQF_DEV_R_IO_SIZE] = { -EFBIG, -EINVAL, "io_size" },
	[VQF_DEV_R_COUNT] = { -EBADSLT, -EINVAL, "count" },
	[VQF_DEV_R_COUNT_MAX] = { -ETOOMANYREFS, -EINVAL, "count_max" },
	[VQF_DEV_R_EXT] = { -EBADRQC, -EINVAL, "ext" },
	[VQF_DEV_R_EXT_BAD] = { -EUCLEAN, -EINVAL, "ext_bad" },
};

int vqf_dev_reason_errno(enum vqf_dev_reason reason)
{
	if ((unsigned int)reason >= VQF_DEV_R_NR)
		return -EINVAL;
	return dev_reasons[reason].err;
}

const char *vqf_dev_reason_name(enum vqf_dev_reason reason)
{
	if ((unsigned int)reason >= VQF_DEV_R_NR)
		return "?";
	return dev_reasons[reason].name;
}

void vqf_dev_conn_init(struct vqf_dev_conn *conn)
{
	const struct vqf_fuse_op *op;
	u32 opcode;

	memset(conn, 0, sizeof(*conn));
	conn->max_write = VQF_DEV_DEF_MAX_WRITE;
	conn->max_read = VQF_DEV_DEF_MAX_WRITE;
	conn->name_max = VQF_DEV_NAME_MAX_CAP;
	conn->path_max = VQF_DEV_PATH_MAX_CAP;
	conn->forget_max = VQF_DEV_DEF_FORGET_MAX;
	/* By opcode: vqf_fuse_op_at() walks the table, and a device
	 * resets its connection on every status write.
	 */
	for (opcode = 0; opcode < 64; opcode++) {
		op = vqf_fuse_op(opcode);
		if (!op)
			continue;
		if (op->flags & VQF_OPF_HIPRIO)
			conn->hiprio_ops |= 1ULL << opcode;
		if (op->flags & VQF_OPF_REQUEST_Q)
			conn->request_ops |= 1ULL << opcode;
	}
}

int vqf_dev_conn_init_done(struct vqf_dev_conn *conn,
			   const struct vqf_dev_req *req,
			   const struct fuse_init_out *out, u32 out_size)
{
	const struct fuse_init_in *in = &req->arg.init;
	u32 minor;
	u64 flags;

	if (req->reason != VQF_DEV_OK || req->in.opcode != FUSE_INIT)
		return -EINVAL;
	/* 7.23 added time_gran: anything shorter predates virtio-fs. */
	if (out_size < offsetof(struct fuse_init_out, max_pages) ||
	    out->major != FUSE_KERNEL_VERSION)
		return -EPROTO;
	minor = VQF_MIN(in->minor, out->minor);
	if (in->major != FUSE_KERNEL_VERSION || minor < VQF_DEV_MIN_MINOR)
		return -EPROTONOSUPPORT;
	if (out->max_write < 4096)
		return -ERANGE;

	flags = in->flags & out->flags;
	/* flags2 only counts if both sides sent the extended form. */
	if ((flags & FUSE_INIT_EXT) &&
	    out_size >= offsetof(struct fuse_init_out, unused))
		flags |= (u64)(in->flags2 & out->flags2) << 32;

	conn->minor = minor;
	conn->flags = flags;
	conn->max_write = VQF_MIN(conn->max_write, out->max_write);
	conn->initialized = true;
	return 0;
}

/* A forward-only reader over the readable segments. */
struct dev_cur {
	const struct vqf_dev_seg *seg;
	u32 nseg;
	u32 idx;
	u32 off;
};

/* Skip exhausted and empty segments so that cur->idx names real bytes. */
static void cur_settle(struct dev_cur *c)
{
	while (c->idx < c->nseg && c->off >= c->seg[c->idx].len) {
		c->idx++;
		c->off = 0;
	}
}

/* The view of the next @len bytes; the caller has checked they exist. */
static void cur_view(struct dev_cur *c, u32 len, struct vqf_dev_view *v)
{
	cur_settle(c);
	v->seg = c->idx < c->nseg ? &c->seg[c->idx] : c->seg;
	v->nseg = c->nseg - c->idx;
	v->off = c->off;
	v->len = len;
}

/* Copy (dst != NULL) or skip @len bytes the caller knows are present. */
static void cur_read(struct dev_cur *c, void *dst, u32 len)
{
	u8 *d = dst;

	while (len) {
		u32 n;

		cur_settle(c);
		if (VQF_WARN_ON(c->idx >= c->nseg))
			return;
		n = VQF_MIN(len, c->seg[c->idx].len - c->off);
		if (d) {
			memcpy(d, (const u8 *)c->seg[c->idx].base + c->off, n);
			d += n;
		}
		c->off += n;
		len -= n;
	}
}

static int dev_reject(struct vqf_dev_req *req, struct vqf_dev_stats *stats,
		      enum vqf_dev_reason r)
{
	req->reason = r;
	req->error = dev_reasons[r].reply;
	if (stats)
		stats->reject[r]++;
	return dev_reasons[r].err;
}

/*
 * Find the NUL of a name that starts at @s with @avail bytes copied.
 * Return: the name's length, or -reason.
 */
static int dev_name_end(const char *s, u32 avail, u32 limit)
{
	const char *nul = memchr(s, '\0', VQF_MIN(avail, limit + 1));

	if (nul)
		return nul - s;
	return avail > limit ? -VQF_DEV_R_NAME_LONG : -VQF_DEV_R_NAME_UNTERM;
}

static bool dev_component_ok(const char *s, u32 len)
{
	return len && !memchr(s, '/', len);
}

/* Longest name (bytes, no NUL) the table and the connection allow. */
static u32 dev_name_limit(const struct vqf_dev_conn *conn, u32 opcode,
			  unsigned int nth, const struct vqf_arg_shape *sh)
{
	u32 lim = sh->max ? sh->max - 1 : VQF_DEV_NAMES_SIZE - 1;

	if (opcode == FUSE_SYMLINK && nth == 1)
		return VQF_MIN(lim, conn->path_max);
	return VQF_MIN(lim, conn->name_max);
}

/*
 * Copy the @nnames names that start at the cursor and occupy at most @avail
 * bytes into req->names, once, and check them there.  With @tail, bytes
 * after the last name are allowed (they become req->ext); otherwise they
 * are refused.
 * Return: 0 if the names fill @avail, the bytes they use if a tail follows,
 * or -reason.
 */
static int dev_names(const struct vqf_dev_conn *conn,
		     const struct vqf_fuse_op *op,
		     const struct vqf_arg_shape *const *sh, unsigned int nnames,
		     struct dev_cur *c, u32 avail, bool tail,
		     struct vqf_dev_req *req)
{
	u32 lim[2], cap = 0, ncopy, used = 0;
	const char *name[2] = { NULL, NULL };
	int len[2] = { 0, 0 };
	unsigned int i;

	for (i = 0; i < nnames; i++) {
		lim[i] = dev_name_limit(conn, op->opcode, i, sh[i]);
		cap += lim[i] + 1;
	}
	ncopy = VQF_MIN(avail, VQF_MIN(cap, (u32)VQF_DEV_NAMES_SIZE));
	cur_read(c, req->names, ncopy);

	for (i = 0; i < nnames; i++) {
		name[i] = req->names + used;
		len[i] = dev_name_end(name[i], ncopy - used, lim[i]);
		if (len[i] < 0)
			return len[i];
		if (dev_name_is_component(op->opcode, i) ?
		    !dev_component_ok(name[i], len[i]) : !len[i])
			return -VQF_DEV_R_NAME_BAD;
		used += len[i] + 1;
	}
	req->name = name[0];
	req->name_len = len[0];
	if (nnames > 1) {
		req->name2 = name[1];
		req->name2_len = len[1];
	}

	if (used < avail) {
		if (!tail)
			return -VQF_DEV_R_TRAILING;
		return (int)used;
	}
	return 0;
}

/*
 * The bytes the opcode's last argument (payload or array) occupies, from
 * the count in the copied fixed argument.  @names: names sit in between,
 * so the argument may be shorter than @body.
 * Return: the length, or -reason.
 */
static s64 dev_tail_len(const struct vqf_dev_conn *conn,
			const struct vqf_fuse_op *op,
			const struct vqf_arg_shape *sh,
			const struct vqf_dev_req *req, u64 body, bool names)
{
	u64 n, max;

	if (sh->kind == VQF_ARG_DATA) {
		if (names || (sh->max && body > sh->max))
			return -VQF_DEV_R_DATA_MAX;
		return body;
	}
	if (vqf_fuse_arg_count(sh, &req->arg, req->arg_size, &n))
		return -VQF_DEV_R_ARG_SHORT;

	if (sh->kind == VQF_ARG_PAYLOAD) {
		if (sh->max && n > sh->max)
			return -VQF_DEV_R_DATA_MAX;
		if (op->opcode == FUSE_WRITE && n > conn->max_write)
			return -VQF_DEV_R_IO_SIZE;
		if (names ? n > body : n != body)
			return -VQF_DEV_R_DATA_SIZE;
		return n;
	}

	/* VQF_ARG_ARRAY */
	max = sh->max;
	if (op->opcode == FUSE_BATCH_FORGET && (!max || conn->forget_max < max))
		max = conn->forget_max;
	if (max && n > max)
		return -VQF_DEV_R_COUNT_MAX;
	/* Divide rather than multiply: a 64-bit count must not wrap. */
	if (!sh->size || n > body / sh->size)
		return -VQF_DEV_R_COUNT;
	n *= sh->size;
	if (!names && n != body)
		return -VQF_DEV_R_COUNT;
	return n;
}

/*
 * The security contexts of one fuse_secctx_header of @size bytes at @off:
 * @nr records of fuse_secctx, a NUL-terminated name and the value, each
 * padded to 8 (Linux 6.1 fs/fuse/dir.c get_security_context()), filling
 * it exactly.  Each fixed part is copied once, then checked.
 */
static bool dev_secctx_ok(const struct vqf_dev_view *v, u32 off, u32 size,
			  u32 nr)
{
	u32 end = off + size, i;
	char name[VQF_XATTR_NAME_MAX + 1];

	off += sizeof(struct fuse_secctx_header);
	for (i = 0; i < nr; i++) {
		struct fuse_secctx sc;
		u32 room, nlen;
		const char *nul;
		u64 rec;

		if (end - off < sizeof(sc) ||
		    vqf_dev_view_copy(v, off, &sc, sizeof(sc)))
			return false;
		room = VQF_MIN(end - off - (u32)sizeof(sc), (u32)sizeof(name));
		if (vqf_dev_view_copy(v, off + sizeof(sc), name, room))
			return false;
		nul = memchr(name, '\0', room);
		if (!nul || nul == name)
			return false;
		nlen = nul - name + 1;
		rec = VQF_ALIGN((u64)sizeof(sc) + nlen + sc.size, 8);
		if (rec > end - off)
			return false;
		off += rec;
	}
	return off == end;
}

/*
 * An extension block (total_extlen * 8 bytes, or the plain security
 * context tail of Linux 5.17 - 6.0) is a run of headers {size, type}, each
 * at least a header, a multiple of 8 and inside the block.  The only type
 * a guest may send is a security context header (type <= 31 is its
 * nr_secctx); another (FUSE_EXT_GROUPS and anything newer) was never
 * negotiated.  Each header is copied once from the guest's bytes.
 */
static bool dev_ext_ok(const struct vqf_dev_view *v)
{
	u32 off = 0;

	if (!v->len)
		return true;
	while (off < v->len) {
		struct fuse_secctx_header h;
		u32 left = v->len - off;

		if (left < sizeof(h) ||
		    vqf_dev_view_copy(v, off, &h, sizeof(h)))
			return false;
		if (h.size < sizeof(h) || h.size % 8 || h.size > left)
			return false;
		if (h.nr_secctx > VQF_FUSE_MAX_NR_SECCTX ||
		    !dev_secctx_ok(v, off, h.size, h.nr_secctx))
			return false;
		off += h.size;
	}
	return true;
}

int vqf_dev_parse(const struct vqf_dev_conn *conn,
		  const struct vqf_dev_seg *seg, u32 nseg, bool hiprio,
		  struct vqf_dev_req *req, struct vqf_dev_stats *stats)
{
	const u32 hdr = sizeof(struct fuse_in_header);
	const struct vqf_arg_shape *names[2], *last = NULL;
	struct dev_cur c = { .seg = seg, .nseg = nseg }, start;
	const struct vqf_fuse_op *op;
	unsigned int nnames = 0, i = 0;
	u64 total = 0, body, ext, mask;
	u32 len, opcode;
	bool secctx;
	s64 tail;
	int r;

	memset(req, 0, offsetof(struct vqf_dev_req, names));
	req->names[0] = '\0';
	req->data.seg = seg;
	req->ext.seg = seg;

	for (i = 0; i < nseg; i++)
		total += seg[i].len;
	if (total < hdr) {
		/* len, opcode and unique if they are all there: a reply
		 * then carries the guest's unique, not the notification
		 * marker 0 (a partial unique is no unique).
		 */
		if (total >= offsetof(struct fuse_in_header, nodeid))
			cur_read(&c, &req->in,
				 offsetof(struct fuse_in_header, nodeid));
		return dev_reject(req, stats, VQF_DEV_R_HDR_SHORT);
	}
	cur_read(&c, &req->in, hdr);

	len = req->in.len;
	if (len < hdr)
		return dev_reject(req, stats, VQF_DEV_R_LEN_SMALL);
	if (len > total)
		return dev_reject(req, stats, VQF_DEV_R_LEN_OVER);
	if (len < total)
		return dev_reject(req, stats, VQF_DEV_R_LEN_UNDER);
	if ((u64)len > (u64)conn->max_write + VQF_DEV_HDR_ROOM)
		return dev_reject(req, stats, VQF_DEV_R_TOO_BIG);

	opcode = req->in.opcode;
	op = vqf_fuse_op(opcode);
	if (!op)
		return dev_reject(req, stats, VQF_DEV_R_OPCODE);
	req->noreply = op->flags & VQF_OPF_NOREPLY;
	mask = hiprio ? conn->hiprio_ops : conn->request_ops;
	if (opcode >= 64 || !(mask & (1ULL << opcode)))
		return dev_reject(req, stats, VQF_DEV_R_QUEUE);
	if (!conn->initialized && opcode != FUSE_INIT)
		return dev_reject(req, stats, VQF_DEV_R_NO_INIT);
	if (conn->initialized && opcode == FUSE_INIT)
		return dev_reject(req, stats, VQF_DEV_R_REINIT);

	/* Extensions sit at the very end, after every argument. */
	body = len - hdr;
	ext = (u64)req->in.total_extlen * 8;
	if (ext > body || (ext && !(op->flags & VQF_OPF_EXT)))
		return dev_reject(req, stats, VQF_DEV_R_EXT);
	body -= ext;

	i = 0;
	if (op->nr_in && op->in[0].kind == VQF_ARG_FIXED) {
		u32 fixed = vqf_fuse_op_in_fixed_size(op, conn->minor,
					conn->flags & FUSE_SETXATTR_EXT);

		/* INIT comes before any minor is agreed: take either form. */
		if (opcode == FUSE_INIT && body >= op->in[0].min_size)
			fixed = VQF_MIN((u32)body, fixed);
		if (VQF_WARN_ON(fixed > sizeof(req->arg)))
			return dev_reject(req, stats, VQF_DEV_R_OPCODE);
		if (body < fixed)
			return dev_reject(req, stats, VQF_DEV_R_ARG_SHORT);
		cur_read(&c, &req->arg, fixed);
		req->arg_size = fixed;
		body -= fixed;
		i = 1;
	}
	while (i < op->nr_in && op->in[i].kind == VQF_ARG_NAME &&
	       nnames < ARRAY_SIZE(names))
		names[nnames++] = &op->in[i++];
	if (i < op->nr_in)
		last = &op->in[i++];
	/* A table shape this parser does not know: refuse, don't guess. */
	if (VQF_WARN_ON(i != op->nr_in ||
			(last && last->kind != VQF_ARG_PAYLOAD &&
			 last->kind != VQF_ARG_ARRAY &&
			 last->kind != VQF_ARG_DATA)))
		return dev_reject(req, stats, VQF_DEV_R_OPCODE);

	tail = 0;
	if (last) {
		tail = dev_tail_len(conn, op, last, req, body, nnames);
		if (tail < 0)
			return dev_reject(req, stats, -tail);
	}

	if (nnames) {
		/*
		 * Linux 5.17 - 6.0 sent the security context as a plain extra
		 * argument (no total_extlen); accept it as req->ext when the
		 * feature was negotiated.
		 */
		secctx = !last && !ext && (op->flags & VQF_OPF_EXT) &&
			 (conn->flags & FUSE_SECURITY_CTX);
		start = c;
		r = dev_names(conn, op, names, nnames, &c, body - tail, secctx,
			      req);
		if (r < 0)
			return dev_reject(req, stats, -r);
		if (r > 0) {
			/*
			 * A security context follows the names.  Its bytes
			 * copied along with the names are dropped; the view
			 * starts right after the names.
			 */
			c = start;
			cur_read(&c, NULL, r);
			cur_view(&c, body - r, &req->ext);
			cur_read(&c, NULL, body - r);
		}
	} else if (body != (u64)tail) {
		return dev_reject(req, stats, VQF_DEV_R_TRAILING);
	}
	if (last) {
		cur_view(&c, tail, &req->data);
		cur_read(&c, NULL, tail);
	}

	if (dev_read_sized(opcode) && req->arg.read.size > conn->max_read)
		return dev_reject(req, stats, VQF_DEV_R_IO_SIZE);
	if (ext)
		cur_view(&c, ext, &req->ext);
	if (!dev_ext_ok(&req->ext))
		return dev_reject(req, stats, VQF_DEV_R_EXT_BAD);
	if (stats)
		stats->parsed++;
	return 0;
}

int vqf_dev_view_copy(const struct vqf_dev_view *v, u32 off, void *dst,
		      u32 len)
{
	struct dev_cur c = { .seg = v->seg, .nseg = v->nseg, .off = v->off };

	if ((u64)off + len > v->len)
		return -ERANGE;
	cur_read(&c, NULL, off);
	cur_read(&c, dst, len);
	return 0;
}

int vqf_dev_view_segs(const struct vqf_dev_view *v, struct vqf_dev_seg *out,
		      u32 max)
{
	u32 left = v->len, off = v->off, i, n = 0;

	for (i = 0; i < v->nseg && left; i++) {
		u32 take;

		if (off >= v->seg[i].len) {
			off -= v->seg[i].len;
			continue;
		}
		if (n == max)
			return -E2BIG;
		take = VQF_MIN(left, v->seg[i].len - off);
		out[n].base = (const u8 *)v->seg[i].base + off;
		out[n].len = take;
		n++;
		left -= take;
		off = 0;
	}
	return n;
}

u32 vqf_dev_flat_len(const struct vqf_dev_req *req)
{
	u32 len = sizeof(struct fuse_in_header) + req->arg_size;

	if (req->name)
		len += req->name_len + 1;
	if (req->name2)
		len += req->name2_len + 1;
	return len + req->data.len + req->ext.len;
}

int vqf_dev_flatten(const struct vqf_dev_req *req, void *buf, u32 size)
{
	struct fuse_in_header h = req->in;
	u8 *p = buf;
	u32 len;

	if (req->reason != VQF_DEV_OK)
		return -EINVAL;
	len = vqf_dev_flat_len(req);
	if (len > size)
		return -ENOSPC;

	h.len = len;
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	memcpy(p, &req->arg, req->arg_size);
	p += req->arg_size;
	if (req->name) {
		memcpy(p, req->name, req->name_len + 1);
		p += req->name_len + 1;
	}
	if (req->name2) {
		memcpy(p, req->name2, req->name2_len + 1);
		p += req->name2_len + 1;
	}
	vqf_dev_view_copy(&req->data, 0, p, req->data.len);
	p += req->data.len;
	if (req->ext.len) {
		struct vqf_dev_seg copy = { p, req->ext.len };
		struct vqf_dev_view v = { &copy, 1, 0, req->ext.len };

		vqf_dev_view_copy(&req->ext, 0, p, req->ext.len);
		/*
		 * vqf_dev_parse() checked the guest's bytes, which the guest
		 * may have rewritten since: check the copy the server reads.
		 */
		if (!dev_ext_ok(&v))
			return -EUCLEAN;
	}
	return len;
}

/* Scatter @len bytes from @src into the writable segments at (@i, @off). */
static void dev_scatter(const struct vqf_dev_wseg *ws, u32 nws, u32 *i,
			u32 *off, const void *src, u32 len)
{
	const u8 *s = src;

	while (len && *i < nws) {
		u32 n = VQF_MIN(len, ws[*i].len - *off);

		memcpy((u8 *)ws[*i].base + *off, s, n);
		s += n;
		len -= n;
		*off += n;
		if (*off == ws[*i].len) {
			(*i)++;
			*off = 0;
		}
	}
}

/* Header + pieces into @ws, after the caller checked @error. */
static int dev_write(const struct vqf_dev_wseg *ws, u32 nws, u64 unique,
		     int error, const struct vqf_dev_piece *pc, u32 npc,
		     struct vqf_dev_stats *stats)
{
	struct fuse_out_header oh;
	u64 room = 0, want = sizeof(oh);
	u32 i, si = 0, soff = 0;

	for (i = 0; i < nws; i++)
		room += ws[i].len;
	for (i = 0; i < npc; i++)
		want += pc[i].len;
	if (room < sizeof(oh)) {
		if (stats)
			stats->reply_no_room++;
		return -ENOBUFS;
	}
	if (want > room || want > 0xffffffffULL) {
		if (stats)
			stats->reply_overflow++;
		return -EMSGSIZE;
	}
	oh.len = want;
	oh.error = error;
	oh.unique = unique;
	dev_scatter(ws, nws, &si, &soff, &oh, sizeof(oh));
	for (i = 0; i < npc; i++)
		dev_scatter(ws, nws, &si, &soff, pc[i].base, pc[i].len);
	if (stats)
		stats->replies++;
	return want;
}

int vqf_dev_reply(const struct vqf_dev_wseg *ws, u32 nws, u64 unique,
		  int error, const struct vqf_dev_piece *pc, u32 npc,
		  struct vqf_dev_stats *stats)
{
	u32 i;

	if (error > 0 || error < -4095) {
		if (stats)
			stats->reply_bad_error++;
		return -ERANGE;
	}
	for (i = 0; error && i < npc; i++) {
		if (pc[i].len) {
			if (stats)
				stats->reply_err_payload++;
			return -EINVAL;
		}
	}
	return dev_write(ws, nws, unique, error, pc, npc, stats);
}

int vqf_dev_notify(const struct vqf_dev_wseg *ws, u32 nws, int code,
		   const struct vqf_dev_piece *pc, u32 npc,
		   struct vqf_dev_stats *stats)
{
	if (code <= 0 || code >= FUSE_NOTIFY_CODE_MAX) {
		if (stats)
			stats->reply_bad_error++;
		return -ERANGE;
	}
	return dev_write(ws, nws, 0, code, pc, npc, stats);
}

int vqf_dev_reply_req(const struct vqf_dev_req *req, int error,
		      const struct vqf_dev_piece *pc, u32 npc,
		      const struct vqf_dev_wseg *ws, u32 nws,
		      struct vqf_dev_stats *stats)
{
	if (req->noreply)
		return 0;
	if (req->reason != VQF_DEV_OK)
		return vqf_dev_reply(ws, nws, req->in.unique, req->error,
				     NULL, 0, stats);
	return vqf_dev_reply(ws, nws, req->in.unique, error, pc, npc, stats);
}
