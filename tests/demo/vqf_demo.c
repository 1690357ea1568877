// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vqf-demo - a short walk through lib/: the guest builds FUSE requests
 * and lays them out as a virtqueue descriptor chain (vqf_req), the device
 * parses them and writes its reply (vqf_dev), the guest validates the
 * reply and copies it out.  Then a device that lies and a guest that
 * sends garbage, both refused.  Exit status 0 only if every step did what
 * it should.
 *
 * Guest memory is plain host memory here; the simulator (sim/) runs the
 * same calls over real split virtqueues.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vqf_dev.h"
#include "vqf_req.h"

static int failures;

#define EXPECT(cond, ...) do {						\
	if (!(cond)) {							\
		printf("   FAILED: " __VA_ARGS__);			\
		printf("\n");						\
		failures++;						\
	}								\
} while (0)

/* One request in flight: the guest's view and the device's. */
struct trip {
	struct vqf_req req;
	u8 argbuf[1024];
	struct vqf_sg sg[16];
	struct vqf_sg_counts counts;
	struct vqf_dev_seg seg[16];
	struct vqf_dev_wseg ws[16];
	struct vqf_dev_req dreq;
	u32 used;
};

static struct vqf_dev_conn conn;
static struct vqf_dev_stats dstats;
static struct vqf_req_stats rstats;
static u8 pages[2][4096];

static void zero_page(void *ctx, void *page, u32 offset, u32 len)
{
	(void)ctx;
	memset((u8 *)page + offset, 0, len);
}

static const struct vqf_page_ops page_ops = { .zero = zero_page };

static const char *sg_what(const struct trip *t, const struct vqf_sg *sg)
{
	static char buf[64];

	if (sg->addr == &t->req.in_h)
		return "fuse_in_header";
	if (sg->addr == &t->req.out_h)
		return "fuse_out_header";
	if (sg->addr) {
		snprintf(buf, sizeof(buf), "argbuf + %ld: %s args",
			 (long)((u8 *)sg->addr - t->argbuf),
			 sg->flags & VQF_SG_WRITE ? "out" : "in");
		return buf;
	}
	snprintf(buf, sizeof(buf), "page %d + %u: %s data",
		 sg->page == pages[0] ? 0 : 1, sg->offset,
		 sg->flags & VQF_SG_WRITE ? "out" : "in");
	return buf;
}

/* Guest: argbuf + descriptor chain; map it for the device; print it. */
static int lay_out(struct trip *t, bool show)
{
	u32 k, nr;
	int n;

	if (vqf_req_to_argbuf(&t->req, t->argbuf, sizeof(t->argbuf)))
		return -1;
	n = vqf_req_build_sg(&t->req, t->argbuf, t->sg, 16, &t->counts);
	if (n < 0)
		return -1;
	nr = t->counts.nr_readable;
	if (show)
		printf("   descriptor chain: %d elements, %u device-readable, %u device-writable\n",
		       n, nr, t->counts.nr_writable);
	for (k = 0; k < (u32)n; k++) {
		u8 *p = t->sg[k].addr ? t->sg[k].addr :
			(u8 *)t->sg[k].page + t->sg[k].offset;

		if (show)
			printf("     [%u] %s %4u bytes  %s\n", k,
			       t->sg[k].flags & VQF_SG_WRITE ? "W" : "R",
			       t->sg[k].len, sg_what(t, &t->sg[k]));
		if (k < nr) {
			t->seg[k].base = p;
			t->seg[k].len = t->sg[k].len;
		} else {
			t->ws[k - nr].base = p;
			t->ws[k - nr].len = t->sg[k].len;
		}
	}
	return 0;
}

/* Device: parse the readable part. */
static int device_parse(struct trip *t)
{
	return vqf_dev_parse(&conn, t->seg, t->counts.nr_readable, false,
			     &t->dreq, &dstats);
}

/* Device: reply with @npc pieces into the writable part. */
static int device_reply(struct trip *t, const struct vqf_dev_piece *pc,
			u32 npc)
{
	int ret = vqf_dev_reply_req(&t->dreq, 0, pc, npc, t->ws,
				    t->counts.nr_writable, &dstats);

	if (ret >= 0)
		t->used = ret;
	return ret;
}

static void init_handshake(void)
{
	static struct trip t;
	struct fuse_init_in in = { .major = 7, .minor = 38,
				   .flags = FUSE_INIT_EXT };
	struct fuse_init_out out, dev_out = {
		.major = 7, .minor = 38, .max_write = 128 * 1024,
		.flags = FUSE_INIT_EXT, .max_pages = 32,
	};
	struct vqf_dev_piece pc = { &dev_out, sizeof(dev_out) };
	int ret;

	vqf_dev_conn_init(&conn);
	vqf_req_init(&t.req, FUSE_INIT, 0, 1);
	vqf_req_add_in(&t.req, &in, sizeof(in));
	vqf_req_add_out(&t.req, &out, sizeof(out));
	EXPECT(!lay_out(&t, false), "INIT layout");
	EXPECT(device_parse(&t) == 0, "INIT parse");
	EXPECT(device_reply(&t, &pc, 1) > 0, "INIT reply");
	ret = vqf_dev_conn_init_done(&conn, &t.dreq, &dev_out,
				     sizeof(dev_out));
	EXPECT(ret == 0, "INIT on the device: %d", ret);
	ret = vqf_req_complete(&t.req, t.argbuf, t.used, NULL, NULL, &rstats);
	EXPECT(ret == 0 && out.max_write == 128 * 1024, "INIT on the guest");
	printf("0. INIT: protocol 7.%u agreed, max_write %u; the device now accepts requests\n\n",
	       conn.minor, conn.max_write);
}

static void lookup(void)
{
	static struct trip t;
	static const char name[] = "hello.txt";
	struct fuse_entry_out entry, dev_entry = {
		.nodeid = 42, .generation = 1, .attr.ino = 42,
		.attr.size = 26, .attr.mode = 0100644, .attr.nlink = 1,
	};
	struct vqf_dev_piece pc = { &dev_entry, sizeof(dev_entry) };
	int ret;

	printf("1. LOOKUP \"%s\" in directory 1\n", name);
	printf("   guest: vqf_req_init_lookup(), vqf_req_to_argbuf(), vqf_req_build_sg()\n");
	ret = vqf_req_init_lookup(&t.req, 2, 1, name, strlen(name), &entry,
				  NULL);
	EXPECT(ret == 0, "vqf_req_init_lookup: %d", ret);
	EXPECT(!lay_out(&t, true), "layout");

	ret = device_parse(&t);
	printf("   device: vqf_dev_parse() = %d: %s, nodeid %llu, name \"%s\" (%u bytes, copied), in.len %u\n",
	       ret, vqf_fuse_op(t.dreq.in.opcode)->name,
	       (unsigned long long)t.dreq.in.nodeid,
	       t.dreq.name ? t.dreq.name : "", t.dreq.name_len,
	       t.dreq.in.len);
	EXPECT(ret == 0 && t.dreq.name && !strcmp(t.dreq.name, name),
	       "parse");
	ret = device_reply(&t, &pc, 1);
	printf("   device: vqf_dev_reply_req() wrote %d bytes (fuse_out_header + fuse_entry_out)\n",
	       ret);
	EXPECT(ret == (int)(sizeof(struct fuse_out_header) + sizeof(entry)),
	       "reply length");

	ret = vqf_req_complete(&t.req, t.argbuf, t.used, NULL, NULL, &rstats);
	printf("   guest: vqf_req_complete() = %d: error %d, inode %llu, size %llu\n\n",
	       ret, t.req.out_h.error, (unsigned long long)entry.nodeid,
	       (unsigned long long)entry.attr.size);
	EXPECT(ret == 0 && entry.nodeid == 42 && entry.attr.size == 26,
	       "complete");
}

static void read_file(void)
{
	static struct trip t;
	static const char text[] = "Hello from the device side";
	struct fuse_read_in in = { .fh = 7, .offset = 0, .size = 100 };
	struct vqf_page_desc pv[2] = {
		{ pages[0], 4080, 16 }, { pages[1], 0, 84 },
	};
	struct vqf_dev_piece pc[2];
	int ret;

	memset(pages, 0xaa, sizeof(pages));
	printf("2. READ 100 bytes of file handle 7 into two pages (16 + 84 bytes)\n");
	ret = vqf_req_init_read(&t.req, FUSE_READ, 4, 42, &in, pv, 2, true);
	EXPECT(ret == 0, "vqf_req_init_read: %d", ret);
	EXPECT(!lay_out(&t, true), "layout");

	ret = device_parse(&t);
	printf("   device: vqf_dev_parse() = %d: READ fh %llu offset %llu size %u\n",
	       ret, (unsigned long long)t.dreq.arg.read.fh,
	       (unsigned long long)t.dreq.arg.read.offset,
	       t.dreq.arg.read.size);
	EXPECT(ret == 0 && t.dreq.arg.read.size == 100, "parse");
	/* The file has 26 bytes: a short read, sent as two pieces. */
	pc[0] = (struct vqf_dev_piece){ text, 10 };
	pc[1] = (struct vqf_dev_piece){ text + 10, 16 };
	ret = device_reply(&t, pc, 2);
	printf("   device: vqf_dev_reply_req() wrote %d bytes (header + a short read of 26 bytes)\n",
	       ret);
	EXPECT(ret == 16 + 26, "reply");

	ret = vqf_req_complete(&t.req, t.argbuf, t.used, &page_ops, NULL,
			       &rstats);
	printf("   guest: vqf_req_complete() = %d: %u bytes read: page 0 \"%.16s\" + page 1 \"%.10s\",\n"
	       "          the 74 bytes the device did not write zeroed\n\n",
	       ret, t.req.out_args[0].size, (char *)pages[0] + 4080,
	       (char *)pages[1]);
	EXPECT(ret == 0 && t.req.out_args[0].size == 26, "complete");
	EXPECT(!memcmp(pages[0] + 4080, text, 16) &&
	       !memcmp(pages[1], text + 16, 10) && pages[1][10] == 0 &&
	       pages[1][83] == 0 && pages[1][84] == 0xaa, "page contents");
}

static void hostile_reply(void)
{
	static struct trip t;
	static const char name[] = "x";
	struct fuse_entry_out entry;
	struct fuse_out_header lie;
	int ret;

	printf("3. A hostile device: it answers LOOKUP \"x\" with out.len = 4096 in a 16-byte reply\n");
	vqf_req_init_lookup(&t.req, 6, 1, name, 1, &entry, NULL);
	EXPECT(!lay_out(&t, false), "layout");
	EXPECT(device_parse(&t) == 0, "parse");
	lie = (struct fuse_out_header){ .len = 4096, .error = 0,
					.unique = 6 };
	memcpy(t.ws[0].base, &lie, sizeof(lie));
	memset(&entry, 0x5a, sizeof(entry));
	ret = vqf_req_complete(&t.req, t.argbuf, sizeof(lie), NULL, NULL,
			       &rstats);
	printf("   guest: vqf_req_complete() = %d (%s),\n"
	       "          nothing copied, the request ends with error %d\n",
	       ret, ret == -EBADMSG ?
	       "-EBADMSG: out.len differs from the used length" : "?",
	       t.req.out_h.error);
	EXPECT(ret == -EBADMSG && rstats.len_mismatch == 1 &&
	       ((u8 *)&entry)[0] == 0x5a && t.req.out_h.error == -EIO,
	       "hostile reply must be refused with -EBADMSG");
}

static void hostile_request(void)
{
	static u8 junk[20] = { 20, 0, 0, 0, FUSE_LOOKUP };
	struct vqf_dev_seg seg = { junk, sizeof(junk) };
	struct fuse_out_header oh;
	struct vqf_dev_wseg ws = { &oh, sizeof(oh) };
	static struct vqf_dev_req dreq;
	int ret, len;

	printf("\n4. A hostile guest: a 20-byte request, shorter than fuse_in_header\n");
	ret = vqf_dev_parse(&conn, &seg, 1, false, &dreq, &dstats);
	len = vqf_dev_reply_req(&dreq, 0, NULL, 0, &ws, 1, &dstats);
	printf("   device: vqf_dev_parse() = %d (-ENODATA, reason %s), replies error %d (-EPROTO)\n"
	       "          in %d bytes; nothing aborts (QEMU's C virtiofsd asserts here)\n",
	       ret, vqf_dev_reason_name(dreq.reason), oh.error, len);
	EXPECT(ret == -ENODATA && oh.error == -EPROTO && len == 16 &&
	       dstats.reject[VQF_DEV_R_HDR_SHORT] == 1,
	       "short request must get an EPROTO reply");
}

int main(void)
{
	printf("vqfuse: a FUSE request's round trip through lib/ (guest -> virtqueue -> device -> guest)\n\n");
	init_handshake();
	lookup();
	read_file();
	hostile_reply();
	hostile_request();
	printf("\ndevice: %llu requests parsed, %llu refused; guest: %llu replies accepted, %llu refused\n",
	       (unsigned long long)dstats.parsed,
	       (unsigned long long)dstats.reject[VQF_DEV_R_HDR_SHORT],
	       (unsigned long long)rstats.ok,
	       (unsigned long long)rstats.len_mismatch);
	printf("%s\n", failures ? "demo FAILED" : "demo OK");
	return failures ? 1 : 0;
}
