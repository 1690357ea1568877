// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fuzz_dev_parse - lib/vqf_dev.h: the device-side FUSE request parser on
 * bytes a guest wrote, split over several segments.
 *
 * Input: u8 mode (bit 0 hiprio queue, bit 1 connection not initialised,
 * bit 2 max_write 4096, bit 3 name_max 16, bit 4 forget_max 2), u64
 * negotiated INIT flags, u8 number of cuts (mod 8), that many u16 cut
 * positions, then the request bytes.  Each segment is a separate heap
 * block of exactly its length, so any read past one is an ASan report.
 *
 * Invariants: the return value is the reason's documented errno and
 * exactly one counter moved; an accepted request's header length equals
 * the bytes sent, its names are NUL-terminated copies of the stated
 * length, its views lie inside the segments, vqf_dev_flatten() writes
 * exactly vqf_dev_flat_len() bytes; every request that wants a reply gets
 * one that fits.
 */
#include "fuzz_common.h"
#include "vqf_dev.h"

#define MAXCUT	7

static int cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

static u64 counters(const struct vqf_dev_stats *st)
{
	u64 n = st->parsed;
	unsigned int r;

	for (r = 0; r < VQF_DEV_R_NR; r++)
		n += st->reject[r];
	return n;
}

static void check_view(const struct vqf_dev_view *v, u32 total)
{
	struct vqf_dev_seg segs[MAXCUT + 1];
	u8 *tmp;
	int n;

	FZ_CHECK(v->len <= total);
	if (!v->len)
		return;
	tmp = malloc(v->len);
	FZ_CHECK(tmp);
	FZ_CHECK(vqf_dev_view_copy(v, 0, tmp, v->len) == 0);
	FZ_CHECK(vqf_dev_view_copy(v, 1, tmp, v->len) == -ERANGE);
	n = vqf_dev_view_segs(v, segs, MAXCUT + 1);
	FZ_CHECK(n > 0 && n <= MAXCUT + 1);
	free(tmp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vqf_dev_seg seg[MAXCUT + 1];
	struct vqf_dev_req *req = malloc(sizeof(*req));
	struct vqf_dev_conn conn;
	struct vqf_dev_stats st;
	struct vqf_dev_wseg ws;
	u32 cut[MAXCUT + 2], ncut, total, i, flen;
	u8 reply[64], *flat;
	struct fz f;
	u8 mode;
	int rc;

	FZ_CHECK(req);
	fz_init(&f, data, size);
	mode = fz_u8(&f);
	vqf_dev_conn_init(&conn);
	conn.flags = fz_u64(&f);
	if (!(mode & 2)) {
		conn.initialized = true;
		conn.minor = FUSE_KERNEL_MINOR_VERSION;
	}
	if (mode & 4)
		conn.max_write = 4096;
	if (mode & 8)
		conn.name_max = 16;
	if (mode & 16)
		conn.forget_max = 2;
	ncut = fz_u8(&f) % (MAXCUT + 1);
	for (i = 0; i < ncut; i++)
		cut[i] = fz_u16(&f);
	total = f.n > 0xffffff ? 0xffffff : f.n;
	for (i = 0; i < ncut; i++)
		cut[i] %= total + 1;
	cut[ncut] = total;
	qsort(cut, ncut + 1, sizeof(cut[0]), cmp_u32);
	for (i = 0; i <= ncut; i++) {
		u32 from = i ? cut[i - 1] : 0, len = cut[i] - from;
		void *p = malloc(len ? len : 1);

		FZ_CHECK(p);
		memcpy(p, f.p + from, len);
		seg[i].base = p;
		seg[i].len = len;
	}

	memset(&st, 0, sizeof(st));
	rc = vqf_dev_parse(&conn, seg, ncut + 1, mode & 1, req, &st);
	FZ_CHECK(rc == vqf_dev_reason_errno(req->reason));
	FZ_CHECK((rc == 0) == (req->reason == VQF_DEV_OK));
	FZ_CHECK(counters(&st) == 1);
	FZ_CHECK(strcmp(vqf_dev_reason_name(req->reason), "?") != 0);

	if (!rc) {
		FZ_CHECK(st.parsed == 1);
		FZ_CHECK(req->in.len == total);
		FZ_CHECK(req->error == 0);
		if (req->name) {
			FZ_CHECK(req->name >= req->names &&
				 req->name < req->names + sizeof(req->names));
			FZ_CHECK(strlen(req->name) == req->name_len);
		}
		if (req->name2) {
			FZ_CHECK(req->name2 >= req->names &&
				 req->name2 < req->names + sizeof(req->names));
			FZ_CHECK(strlen(req->name2) == req->name2_len);
		}
		check_view(&req->data, total);
		check_view(&req->ext, total);
		flen = vqf_dev_flat_len(req);
		flat = malloc(flen ? flen : 1);
		FZ_CHECK(flat);
		FZ_CHECK(vqf_dev_flatten(req, flat, flen) == (int)flen);
		FZ_CHECK(flen < 1 || vqf_dev_flatten(req, flat, flen - 1) ==
			 -ENOSPC);
		free(flat);
	} else {
		FZ_CHECK(st.reject[req->reason] == 1);
		FZ_CHECK(req->error < 0 && req->error >= -4095);
	}

	ws.base = reply;
	ws.len = sizeof(reply);
	rc = vqf_dev_reply_req(req, 0, NULL, 0, &ws, 1, NULL);
	if (req->noreply)
		FZ_CHECK(rc == 0);
	else
		FZ_CHECK(rc == (int)sizeof(struct fuse_out_header));

	for (i = 0; i <= ncut; i++)
		free((void *)seg[i].base);
	free(req);
	return 0;
}
