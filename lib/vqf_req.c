// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf_req.c - guest-side FUSE request marshalling and reply validation.
 *
 * Generalises the RFC's copy_args_to_argbuf(), sg_count_fuse_req(),
 * sg_init_fuse_args() and copy_args_from_argbuf() (seed 004, Linux 6.1
 * fs/fuse/virtio_fs.c) so that the sg array is the caller's and the reply
 * is checked before a byte of it is used.
 */
#include "vqf_req.h"

#define OUT_H_SIZE	((u32)sizeof(struct fuse_out_header))
#define IN_H_SIZE	((u32)sizeof(struct fuse_in_header))

/* Bytes of the in (@in) or out args that live in the argbuf. */
static u64 linear_len(const struct vqf_req *req, bool in)
{
	unsigned int n = in ? req->in_numargs : req->out_numargs;
	bool pages = in ? req->in_pages : req->out_pages;
	unsigned int i;
	u64 len = 0;

	if (pages)
		n--;
	for (i = 0; i < n; i++)
		len += in ? req->in_args[i].size : req->out_args[i].size;
	return len;
}

static u32 page_arg_size(const struct vqf_req *req, bool in)
{
	if (in)
		return req->in_pages ? req->in_args[req->in_numargs - 1].size : 0;
	return req->out_pages ? req->out_args[req->out_numargs - 1].size : 0;
}

/*
 * Page descs covering @total bytes: whether they reach it, and how many
 * (@nr_sg is written on every path, 0 when they do not).
 */
static bool pages_cover(const struct vqf_page_desc *pv, u32 nr, u32 total,
			unsigned int *nr_sg)
{
	unsigned int n = 0;
	bool ok = true;
	u32 i;

	for (i = 0; i < nr && total; i++) {
		u32 this_len = VQF_MIN(pv[i].length, total);

		if ((!pv[i].page && this_len) ||
		    (u64)pv[i].offset + pv[i].length > 0xffffffffULL) {
			ok = false;
			break;
		}
		if (this_len)
			n++;
		total -= this_len;
	}
	if (total)
		ok = false;
	if (nr_sg)
		*nr_sg = ok ? n : 0;
	return ok;
}

static bool args_valid(const struct vqf_req *req, bool in)
{
	unsigned int n = in ? req->in_numargs : req->out_numargs;
	bool pages = in ? req->in_pages : req->out_pages;
	unsigned int i;

	if (n > (in ? VQF_REQ_MAX_IN : VQF_REQ_MAX_OUT))
		return false;
	if (pages && n == 0)
		return false;
	for (i = 0; i < n; i++) {
		bool is_page = pages && i == n - 1;
		u32 size = in ? req->in_args[i].size : req->out_args[i].size;
		const void *v = in ? req->in_args[i].value :
				     req->out_args[i].value;

		if (!is_page && size && !v)
			return false;
	}
	if (pages) {
		const struct vqf_page_desc *pv = in ? req->in_pv : req->out_pv;
		u32 nr = in ? req->nr_in_pv : req->nr_out_pv;

		if (nr && !pv)
			return false;
		if (!pages_cover(pv, nr, page_arg_size(req, in), NULL))
			return false;
	}
	return true;
}

/* The sizes of @req's four parts, as linear_len() and page_arg_size(). */
struct req_lens {
	u64 in_lin;
	u64 out_lin;
	u32 in_pg;
	u32 out_pg;
};

/*
 * Everything about @req except the page descs: O(1), so
 * vqf_req_complete() can afford it on every reply.  Fills @l (for a
 * valid @req) so that callers need not sum the args again.
 */
static int check_lens(const struct vqf_req *req, struct req_lens *l)
{
	unsigned int i, n;

	if (!req)
		return -EINVAL;
	if (req->in_numargs > VQF_REQ_MAX_IN ||
	    req->out_numargs > VQF_REQ_MAX_OUT)
		return -EINVAL;
	if ((req->in_pages && !req->in_numargs) ||
	    (req->out_pages && !req->out_numargs))
		return -EINVAL;
	if (req->noreply && (req->out_numargs || req->out_pages))
		return -EINVAL;
	if (req->page_zeroing && (!req->out_pages || !req->out_pv))
		return -EINVAL;
	if (req->out_argvar && req->out_numargs == 0)
		return -EINVAL;
	/*
	 * One pass per direction (this runs twice per request): a linear
	 * arg of non-zero size has somewhere to come from or go to, and the
	 * sizes add up as linear_len() and page_arg_size() would.
	 */
	l->in_lin = 0;
	n = req->in_numargs - (req->in_pages ? 1 : 0);
	for (i = 0; i < n; i++) {
		if (req->in_args[i].size && !req->in_args[i].value)
			return -EINVAL;
		l->in_lin += req->in_args[i].size;
	}
	l->in_pg = req->in_pages ? req->in_args[n].size : 0;
	l->out_lin = 0;
	n = req->out_numargs - (req->out_pages ? 1 : 0);
	for (i = 0; i < n; i++) {
		if (req->out_args[i].size && !req->out_args[i].value)
			return -EINVAL;
		l->out_lin += req->out_args[i].size;
	}
	l->out_pg = req->out_pages ? req->out_args[n].size : 0;
	if (req->in_ext) {
		u32 sz;

		if (!req->in_numargs || req->in_pages)
			return -EINVAL;
		sz = req->in_args[req->in_numargs - 1].size;
		if (!VQF_IS_ALIGNED(sz, 8) || sz / 8 > 0xffff)
			return -EINVAL;
	}
	/* in_h.len and out_h.len are u32: everything must fit in one. */
	if (IN_H_SIZE + l->in_lin + l->in_pg > 0xffffffffULL)
		return -EINVAL;
	if (OUT_H_SIZE + l->out_lin + l->out_pg > 0xffffffffULL)
		return -EINVAL;
	if (l->in_lin + l->out_lin > 0xffffffffULL)
		return -EINVAL;
	return 0;
}

int vqf_req_check(const struct vqf_req *req)
{
	struct req_lens l;
	int ret = check_lens(req, &l);

	if (ret)
		return ret;
	if (!args_valid(req, true) || !args_valid(req, false))
		return -EINVAL;
	return 0;
}

unsigned int vqf_req_sg_count(const struct vqf_req *req)
{
	unsigned int total = 1, n;

	if (vqf_req_check(req))
		return 0;
	if (linear_len(req, true))
		total++;
	if (req->in_pages) {
		pages_cover(req->in_pv, req->nr_in_pv, page_arg_size(req, true),
			    &n);
		total += n;
	}
	if (req->noreply)
		return total;
	total++;
	if (linear_len(req, false))
		total++;
	if (req->out_pages) {
		pages_cover(req->out_pv, req->nr_out_pv,
			    page_arg_size(req, false), &n);
		total += n;
	}
	return total;
}

u32 vqf_req_argbuf_size(const struct vqf_req *req)
{
	u64 len;

	/*
	 * Only counts and sizes matter here, so that a caller may size the
	 * argbuf before its page descs exist (they often share one block).
	 */
	if (!req || req->in_numargs > VQF_REQ_MAX_IN ||
	    req->out_numargs > VQF_REQ_MAX_OUT ||
	    (req->in_pages && !req->in_numargs) ||
	    (req->out_pages && !req->out_numargs))
		return 0;
	len = linear_len(req, true);
	if (!req->noreply)
		len += linear_len(req, false);
	return len > 0xffffffffULL ? 0 : len;
}

u32 vqf_req_reply_capacity(const struct vqf_req *req)
{
	if (vqf_req_check(req) || req->noreply)
		return 0;
	return OUT_H_SIZE + linear_len(req, false) + page_arg_size(req, false);
}

/*
 * An argvar last out arg only where the opcode's reply shape has one: the
 * table's OUT_ARGVAR, that last arg present (not an OPTIONAL one left out)
 * and, for an xattr size probe, never (fuse_getxattr_out is fixed).
 * Anything else would let vqf_req_complete() take a truncated fixed reply.
 */
static bool argvar_allowed(const struct vqf_req *req)
{
	const struct vqf_fuse_op *op;
	u64 count;

	if (!req->out_argvar)
		return true;
	op = vqf_fuse_op(req->in_h.opcode);
	if (!op || !(op->flags & VQF_OPF_OUT_ARGVAR) ||
	    req->out_numargs != op->nr_out)
		return false;
	if (op->flags & VQF_OPF_XATTR_PROBE) {
		if (!req->in_numargs ||
		    vqf_fuse_arg_count(&op->out[0], req->in_args[0].value,
				       req->in_args[0].size, &count) ||
		    !count)
			return false;
	}
	return true;
}

/*
 * The in args (not in pages) to the start of @argbuf, the out part up to
 * @need cleared; in_h.len and extlen.  The device may read what it is
 * given to write: whatever a caller's allocator left there (another
 * request's page descs, in a reused block) must not reach it.
 */
static void copy_in_args(struct vqf_req *req, u8 *argbuf, u32 need)
{
	unsigned int i, n;
	u32 off = 0;

	n = req->in_numargs - (req->in_pages ? 1 : 0);
	for (i = 0; i < n; i++) {
		if (req->in_args[i].size)
			memcpy(argbuf + off, req->in_args[i].value,
			       req->in_args[i].size);
		off += req->in_args[i].size;
	}
	if (need > off)
		memset(argbuf + off, 0, need - off);
	req->in_h.len = IN_H_SIZE + off + page_arg_size(req, true);
	if (req->in_ext)
		req->in_h.total_extlen =
			req->in_args[req->in_numargs - 1].size / 8;
}

/* vqf_req_to_argbuf() for a @req that passed vqf_req_check(). */
static int to_argbuf_checked(struct vqf_req *req, void *argbuf,
			     u32 argbuf_size)
{
	u32 need = vqf_req_argbuf_size(req);

	if (!argvar_allowed(req))
		return -EPROTOTYPE;
	if (argbuf_size < need)
		return -ENOSPC;
	if (!argbuf && need)
		return -EINVAL;

	copy_in_args(req, argbuf, need);
	return 0;
}

int vqf_req_to_argbuf(struct vqf_req *req, void *argbuf, u32 argbuf_size)
{
	if (vqf_req_check(req))
		return -EINVAL;
	return to_argbuf_checked(req, argbuf, argbuf_size);
}

/* Appends page elements; false if they would pass @cap. */
static bool sg_pages(struct vqf_sg *sg, unsigned int cap, unsigned int *n,
		     const struct vqf_page_desc *pv, u32 nr, u32 total,
		     u32 flags)
{
	u32 i;

	for (i = 0; i < nr && total; i++) {
		u32 this_len = VQF_MIN(pv[i].length, total);
		struct vqf_sg *e;

		if (!this_len)
			continue;
		if (*n >= cap)
			return false;
		e = &sg[(*n)++];
		e->addr = NULL;
		e->page = pv[i].page;
		e->offset = pv[i].offset;
		e->len = this_len;
		e->flags = flags;
		total -= this_len;
	}
	return true;
}

static bool sg_linear(struct vqf_sg *sg, unsigned int cap, unsigned int *n,
		      void *addr, u32 len, u32 flags)
{
	struct vqf_sg *e;

	if (*n >= cap)
		return false;
	e = &sg[(*n)++];
	e->addr = addr;
	e->page = NULL;
	e->offset = 0;
	e->len = len;
	e->flags = flags;
	return true;
}

/* vqf_req_build_sg() for a @req that passed vqf_req_check(). */
static int build_sg_checked(struct vqf_req *req, void *argbuf,
			    struct vqf_sg *sg, unsigned int cap,
			    struct vqf_sg_counts *counts)
{
	unsigned int n = 0, nr_readable;
	u32 in_len, out_len;
	u8 *p = argbuf;
	bool fits;

	in_len = linear_len(req, true);
	out_len = req->noreply ? 0 : linear_len(req, false);
	if (!argbuf && (in_len || out_len))
		return -EINVAL;
	if (!sg)
		cap = 0;

	fits = sg_linear(sg, cap, &n, &req->in_h, IN_H_SIZE, 0);
	if (fits && in_len)
		fits = sg_linear(sg, cap, &n, p, in_len, 0);
	if (fits && req->in_pages)
		fits = sg_pages(sg, cap, &n, req->in_pv, req->nr_in_pv,
				page_arg_size(req, true), 0);
	nr_readable = n;
	if (fits && !req->noreply) {
		fits = sg_linear(sg, cap, &n, &req->out_h, OUT_H_SIZE,
				 VQF_SG_WRITE);
		if (fits && out_len)
			fits = sg_linear(sg, cap, &n, p + in_len, out_len,
					 VQF_SG_WRITE);
		if (fits && req->out_pages)
			fits = sg_pages(sg, cap, &n, req->out_pv,
					req->nr_out_pv,
					page_arg_size(req, false),
					VQF_SG_WRITE);
	}
	if (!fits)
		return -ENOSPC;
	if (counts) {
		counts->nr_readable = nr_readable;
		counts->nr_writable = n - nr_readable;
	}
	return n;
}

int vqf_req_build_sg(struct vqf_req *req, void *argbuf, struct vqf_sg *sg,
		     unsigned int cap, struct vqf_sg_counts *counts)
{
	if (vqf_req_check(req))
		return -EINVAL;
	return build_sg_checked(req, argbuf, sg, cap, counts);
}

/*
 * sg_pages() and pages_cover() in one walk: appends the elements that fit
 * @cap and counts the rest in *@n; false if the descs are not valid
 * (args_valid()'s page rules), whatever @cap.
 */
static bool sg_pages_checked(struct vqf_sg *sg, unsigned int cap,
			     unsigned int *n, const struct vqf_page_desc *pv,
			     u32 nr, u32 total, u32 flags)
{
	u32 i;

	if (nr && !pv)
		return false;
	for (i = 0; i < nr && total; i++) {
		u32 this_len = VQF_MIN(pv[i].length, total);
		struct vqf_sg *e;

		if ((!pv[i].page && this_len) ||
		    (u64)pv[i].offset + pv[i].length > 0xffffffffULL)
			return false;
		if (!this_len)
			continue;
		if (*n < cap) {
			e = &sg[*n];
			e->addr = NULL;
			e->page = pv[i].page;
			e->offset = pv[i].offset;
			e->len = this_len;
			e->flags = flags;
		}
		(*n)++;
		total -= this_len;
	}
	return !total;
}

/* A linear element if it fits @cap; counted either way. */
static void sg_linear_counted(struct vqf_sg *sg, unsigned int cap,
			      unsigned int *n, void *addr, u32 len, u32 flags)
{
	unsigned int before = *n;

	if (!sg_linear(sg, cap, n, addr, len, flags))
		*n = before + 1;
}

int vqf_req_marshal(struct vqf_req *req, void *argbuf, u32 argbuf_size,
		    struct vqf_sg *sg, unsigned int cap,
		    struct vqf_sg_counts *counts)
{
	unsigned int n = 0, nr_readable;
	struct req_lens l;
	u8 *p = argbuf;
	u32 need;

	/*
	 * The enqueue path of a driver, with the results (and errno order)
	 * of vqf_req_to_argbuf() then vqf_req_build_sg(), but the request
	 * checked once and its page descs walked once: they are validated
	 * as they are laid out.  Elements are laid out before anything is
	 * copied, so a refused request leaves the argbuf alone.
	 */
	if (check_lens(req, &l))
		return -EINVAL;
	if (!sg)
		cap = 0;
	if (req->noreply)
		l.out_lin = 0;
	need = l.in_lin + l.out_lin;

	sg_linear_counted(sg, cap, &n, &req->in_h, IN_H_SIZE, 0);
	if (l.in_lin)
		sg_linear_counted(sg, cap, &n, p, l.in_lin, 0);
	if (req->in_pages &&
	    !sg_pages_checked(sg, cap, &n, req->in_pv, req->nr_in_pv,
			      l.in_pg, 0))
		return -EINVAL;
	nr_readable = n;
	if (!req->noreply) {
		sg_linear_counted(sg, cap, &n, &req->out_h, OUT_H_SIZE,
				  VQF_SG_WRITE);
		if (l.out_lin)
			sg_linear_counted(sg, cap, &n, p + l.in_lin, l.out_lin,
					  VQF_SG_WRITE);
		if (req->out_pages &&
		    !sg_pages_checked(sg, cap, &n, req->out_pv,
				      req->nr_out_pv, l.out_pg, VQF_SG_WRITE))
			return -EINVAL;
	}
	if (!argvar_allowed(req))
		return -EPROTOTYPE;
	/* -ENOSPC is kept for @sg, the one a caller retries with more. */
	if (argbuf_size < need)
		return -EMSGSIZE;
	if (!argbuf && need)
		return -EINVAL;
	copy_in_args(req, argbuf, need);
	if (n > cap)
		return -ENOSPC;
	if (counts) {
		counts->nr_readable = nr_readable;
		counts->nr_writable = n - nr_readable;
	}
	return n;
}

/* Turn a rejected reply into an ordinary error for whoever ends @req. */
static int reject(struct vqf_req *req, u64 *counter, int err)
{
	req->out_h.len = OUT_H_SIZE;
	req->out_h.error = -EIO;
	req->out_h.unique = req->in_h.unique;
	if (counter)
		(*counter)++;
	return err;
}

#define STAT(stats, field)	((stats) ? &(stats)->field : NULL)

/*
 * Checks that every out arg except an argvar last one is complete in
 * @payload bytes.  Returns the bytes left for the last arg when it is
 * argvar, or 0, or -1 for a short fixed arg.
 */
static s64 fixed_args_present(const struct vqf_req *req, u32 payload)
{
	unsigned int i, n = req->out_numargs;
	u64 need = 0;

	for (i = 0; i < n; i++) {
		if (req->out_argvar && i == n - 1)
			break;
		need += req->out_args[i].size;
	}
	if (need > payload)
		return -1;
	return payload - need;
}

static void zero_page_tails(const struct vqf_req *req, u32 len,
			    const struct vqf_page_ops *ops, void *ctx)
{
	u32 i;

	for (i = 0; i < req->nr_out_pv; i++) {
		const struct vqf_page_desc *d = &req->out_pv[i];

		if (!d->page)	/* not checked since layout; never passed on */
			continue;
		if (len < d->length) {
			ops->zero(ctx, d->page, d->offset + len,
				  d->length - len);
			len = 0;
		} else {
			len -= d->length;
		}
	}
}

int vqf_req_complete(struct vqf_req *req, const void *argbuf, u32 used_len,
		     const struct vqf_page_ops *ops, void *ops_ctx,
		     struct vqf_req_stats *stats)
{
	u32 linear, pages, offered, payload, off, remaining;
	struct fuse_out_header oh;
	const u8 *p = argbuf;
	struct req_lens l;
	unsigned int i, n;
	s64 var;

	/* O(1): the page descs were checked when the request was laid out. */
	if (check_lens(req, &l))
		return -EINVAL;
	if (req->page_zeroing && (!ops || !ops->zero))
		return -EINVAL;
	linear = l.out_lin;
	if (!argbuf && (linear || l.in_lin) && !req->noreply)
		return -EINVAL;

	if (req->noreply) {
		if (used_len)
			return reject(req, STAT(stats, len_overflow),
				      -EOVERFLOW);
		if (stats)
			stats->ok_noreply++;
		return 0;
	}

	/* One snapshot of the device-written header; no re-reads below. */
	memcpy(&oh, &req->out_h, sizeof(oh));

	pages = l.out_pg;
	offered = OUT_H_SIZE + linear + pages;

	if (used_len < OUT_H_SIZE)
		return reject(req, STAT(stats, short_header), -ENODATA);
	if (used_len > offered) {
		if (req->out_pages)
			return reject(req, STAT(stats, page_overflow), -EFBIG);
		return reject(req, STAT(stats, len_overflow), -EOVERFLOW);
	}
	if (oh.len != used_len)
		return reject(req, STAT(stats, len_mismatch), -EBADMSG);
	if (oh.unique != req->in_h.unique)
		return reject(req, STAT(stats, unique_mismatch), -ENOMSG);
	if (oh.error > 0 || oh.error < -VQF_FUSE_ERRNO_MAX)
		return reject(req, STAT(stats, bad_error), -ERANGE);
	payload = oh.len - OUT_H_SIZE;
	if (oh.error) {
		if (payload)
			return reject(req, STAT(stats, error_payload),
				      -EPROTO);
		memcpy(&req->out_h, &oh, sizeof(oh));
		if (stats)
			stats->ok_error++;
		return 0;
	}
	var = fixed_args_present(req, payload);
	if (var < 0)
		return reject(req, STAT(stats, short_fixed_arg), -EREMOTEIO);

	/* Valid: copy out.  @payload <= offered, so argbuf reads stay in it. */
	memcpy(&req->out_h, &oh, sizeof(oh));
	n = req->out_numargs - (req->out_pages ? 1 : 0);
	remaining = payload;
	off = l.in_lin;
	for (i = 0; i < n; i++) {
		u32 size = req->out_args[i].size;
		u32 take = VQF_MIN(size, remaining);

		if (take)
			memcpy(req->out_args[i].value, p + off, take);
		off += size;
		remaining -= take;
	}
	if (req->out_argvar)
		req->out_args[req->out_numargs - 1].size =
			req->out_pages ? remaining : (u32)var;
	if (req->out_pages && req->page_zeroing)
		zero_page_tails(req, remaining, ops, ops_ctx);
	if (stats)
		stats->ok++;
	return 0;
}

static bool name_ok(const struct vqf_arg_shape *sh, const struct vqf_in_arg *a)
{
	const char *v = a->value;

	if (a->size < 2 || (sh->max && a->size > sh->max) || !v)
		return false;
	if ((sh->flags & VQF_ARGF_COMPONENT) && memchr(v, '/', a->size - 1))
		return false;
	return v[a->size - 1] == '\0' && !memchr(v, '\0', a->size - 1);
}

static int check_in_shape(const struct vqf_req *req,
			  const struct vqf_fuse_op *op, u32 minor,
			  bool setxattr_ext)
{
	unsigned int n = req->in_numargs - (req->in_ext ? 1 : 0), i;
	unsigned int nr_in = op->nr_in;
	const struct vqf_in_arg *in0 = &req->in_args[0];
	u64 count;

	if (req->in_ext && !(op->flags & VQF_OPF_EXT))
		return -EINVAL;
	if (n + 1 == nr_in && n && !req->in_pages &&
	    op->in[n].kind == VQF_ARG_PAYLOAD) {
		/* A payload may be left out when its count is 0. */
		if (vqf_fuse_arg_count(&op->in[n], in0->value, in0->size,
				       &count) || count)
			return -EINVAL;
	} else if (n != nr_in) {
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		const struct vqf_arg_shape *sh = &op->in[i];
		const struct vqf_in_arg *a = &req->in_args[i];
		bool in_pages = req->in_pages && i + 1 == req->in_numargs;

		switch (sh->kind) {
		case VQF_ARG_FIXED:
			if (in_pages || a->size !=
			    vqf_fuse_op_in_fixed_size(op, minor, setxattr_ext))
				return -EINVAL;
			break;
		case VQF_ARG_NAME:
			if (in_pages || !name_ok(sh, a))
				return -EINVAL;
			break;
		case VQF_ARG_PAYLOAD:
		case VQF_ARG_ARRAY:
			if (vqf_fuse_arg_count(sh, in0->value, in0->size,
					       &count))
				return -EINVAL;
			if (sh->kind == VQF_ARG_ARRAY) {
				if (sh->max && count > sh->max)
					return -EINVAL;
				count *= sh->size;
			} else if (sh->max && count > sh->max) {
				return -EINVAL;
			}
			if (a->size != count)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

static int check_out_shape(const struct vqf_req *req,
			   const struct vqf_fuse_op *op, u32 minor)
{
	const struct vqf_in_arg *in0 = &req->in_args[0];
	unsigned int n = req->out_numargs, nr_out = op->nr_out, i;
	bool argvar = op->flags & VQF_OPF_OUT_ARGVAR;
	u64 count;

	if (op->flags & VQF_OPF_XATTR_PROBE) {
		if (vqf_fuse_arg_count(&op->out[0], in0->value, in0->size,
				       &count))
			return -EINVAL;
		if (!count)
			return n == 1 && !req->out_argvar && !req->out_pages &&
			       req->out_args[0].size == op->out_probe.size ?
			       0 : -EINVAL;
	}
	if (n + 1 == nr_out &&
	    (op->out[n].flags & VQF_ARGF_OPTIONAL))
		argvar = false;
	else if (n != nr_out)
		return -EINVAL;
	if (req->out_argvar != argvar)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		const struct vqf_arg_shape *sh = &op->out[i];
		u32 size = req->out_args[i].size;
		bool in_pages = req->out_pages && i + 1 == n;

		if (sh->kind == VQF_ARG_FIXED) {
			u32 want = i ? sh->size :
				   vqf_fuse_op_out_fixed_size(op, minor);

			if (in_pages || size != want)
				return -EINVAL;
			continue;
		}
		/* VQF_ARG_DATA */
		if (sh->max && size > sh->max)
			return -EINVAL;
		if (sh->count_width) {
			if (vqf_fuse_arg_count(sh, in0->value, in0->size,
					       &count) || size > count)
				return -EINVAL;
		}
	}
	return 0;
}

int vqf_req_check_shape(const struct vqf_req *req, u32 minor,
			bool setxattr_ext)
{
	const struct vqf_fuse_op *op;
	int ret;

	ret = vqf_req_check(req);
	if (ret)
		return ret;
	op = vqf_fuse_op(req->in_h.opcode);
	if (!op)
		return -EOPNOTSUPP;
	if (req->noreply != !!(op->flags & VQF_OPF_NOREPLY))
		return -EINVAL;
	ret = check_in_shape(req, op, minor, setxattr_ext);
	if (ret)
		return ret;
	return check_out_shape(req, op, minor);
}

int vqf_req_init(struct vqf_req *req, u32 opcode, u64 nodeid, u64 unique)
{
	const struct vqf_fuse_op *op = vqf_fuse_op(opcode);

	if (!op)
		return -EOPNOTSUPP;
	memset(req, 0, sizeof(*req));
	req->in_h.opcode = opcode;
	req->in_h.nodeid = nodeid;
	req->in_h.unique = unique;
	req->noreply = op->flags & VQF_OPF_NOREPLY;
	req->out_argvar = op->flags & VQF_OPF_OUT_ARGVAR;
	return 0;
}

int vqf_req_add_in(struct vqf_req *req, const void *value, u32 size)
{
	if (req->in_numargs >= VQF_REQ_MAX_IN || req->in_pages)
		return -E2BIG;
	req->in_args[req->in_numargs].value = value;
	req->in_args[req->in_numargs].size = size;
	req->in_numargs++;
	return 0;
}

int vqf_req_add_out(struct vqf_req *req, void *value, u32 size)
{
	if (req->out_numargs >= VQF_REQ_MAX_OUT || req->out_pages)
		return -E2BIG;
	req->out_args[req->out_numargs].value = value;
	req->out_args[req->out_numargs].size = size;
	req->out_numargs++;
	return 0;
}

int vqf_req_set_in_pages(struct vqf_req *req, const struct vqf_page_desc *pv,
			 u32 nr, u32 size)
{
	int ret;

	if (req->in_pages)
		return -EINVAL;
	ret = vqf_req_add_in(req, NULL, size);
	if (ret)
		return ret;
	req->in_pages = true;
	req->in_pv = pv;
	req->nr_in_pv = nr;
	return 0;
}

int vqf_req_set_out_pages(struct vqf_req *req, const struct vqf_page_desc *pv,
			  u32 nr, u32 size, bool zeroing)
{
	int ret;

	if (req->out_pages)
		return -EINVAL;
	ret = vqf_req_add_out(req, NULL, size);
	if (ret)
		return ret;
	req->out_pages = true;
	req->out_pv = pv;
	req->nr_out_pv = nr;
	req->page_zeroing = zeroing;
	return 0;
}

int vqf_req_init_lookup(struct vqf_req *req, u64 unique, u64 parent,
			const char *name, u32 namelen,
			struct fuse_entry_out *entry,
			struct fuse_entryver_out *ver)
{
	if (namelen == 0 || !name)
		return -EINVAL;
	if (namelen > VQF_FUSE_NAME_MAX)
		return -ENAMETOOLONG;
	vqf_req_init(req, FUSE_LOOKUP, parent, unique);
	vqf_req_add_in(req, name, namelen + 1);
	vqf_req_add_out(req, entry, sizeof(*entry));
	if (ver)
		vqf_req_add_out(req, ver, sizeof(*ver));
	else
		req->out_argvar = false;
	return 0;
}

int vqf_req_init_getattr(struct vqf_req *req, u64 unique, u64 nodeid,
			 const struct fuse_getattr_in *in,
			 struct fuse_attr_out *out)
{
	vqf_req_init(req, FUSE_GETATTR, nodeid, unique);
	vqf_req_add_in(req, in, sizeof(*in));
	vqf_req_add_out(req, out, sizeof(*out));
	return 0;
}

int vqf_req_init_read(struct vqf_req *req, u32 opcode, u64 unique,
		      u64 nodeid, const struct fuse_read_in *in,
		      const struct vqf_page_desc *pv, u32 nr, bool zeroing)
{
	if (opcode != FUSE_READ && opcode != FUSE_READDIR &&
	    opcode != FUSE_READDIRPLUS)
		return -EINVAL;
	vqf_req_init(req, opcode, nodeid, unique);
	vqf_req_add_in(req, in, sizeof(*in));
	return vqf_req_set_out_pages(req, pv, nr, in->size, zeroing);
}

int vqf_req_init_write(struct vqf_req *req, u64 unique, u64 nodeid,
		       const struct fuse_write_in *in,
		       const struct vqf_page_desc *pv, u32 nr,
		       struct fuse_write_out *out)
{
	vqf_req_init(req, FUSE_WRITE, nodeid, unique);
	vqf_req_add_in(req, in, sizeof(*in));
	vqf_req_set_in_pages(req, pv, nr, in->size);
	vqf_req_add_out(req, out, sizeof(*out));
	return 0;
}
