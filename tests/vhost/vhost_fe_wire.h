/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vhost_fe_wire.h - the fake front-end's functions (see vhost_fe.h):
 * vhost-user messages and replies, the memory table and rings, guest RAM
 * and one FUSE request at a time on a ring.  Included after struct fe.
 */
#ifndef VHOST_FE_WIRE_H
#define VHOST_FE_WIRE_H

/*
 * How long a reply or a used buffer may take: far beyond any request, even
 * under valgrind on a loaded machine.  Waits are polled, so a run that
 * works never waits for it.
 */
#define FE_WAIT_MS	60000

static inline int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)))
		n++;
	closedir(d);
	return n;
}

static inline void *serve_main(void *arg)
{
	struct fe *f = arg;

	f->serve_ret = vqf_vhost_serve(f->vh, f->sv[1], -1);
	return NULL;
}

static inline void send_raw(struct fe *f, u32 req, u32 flags, const void *p,
		     u32 size, const int *fds, unsigned int nfds)
{
	u8 buf[VQF_VHOST_HDR_SIZE + 512];
	struct vqf_vhost_hdr h = { .request = req, .flags = flags,
				   .size = size };
	union {
		char b[CMSG_SPACE(16 * sizeof(int))];
		struct cmsghdr a;
	} cb;
	struct iovec iov = { .iov_base = buf,
			     .iov_len = VQF_VHOST_HDR_SIZE + size };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	assert_true(size <= 512);
	memset(&cb, 0, sizeof(cb));
	memcpy(buf, &h, sizeof(h));
	if (size)
		memcpy(buf + VQF_VHOST_HDR_SIZE, p, size);
	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	assert_int_equal(sendmsg(f->sv[0], &mh, MSG_NOSIGNAL),
			 (ssize_t)iov.iov_len);
}

static inline void msg(struct fe *f, u32 req, const void *p, u32 size,
		const int *fds, unsigned int nfds)
{
	send_raw(f, req, VQF_VHOST_VERSION, p, size, fds, nfds);
}

/* Reads a reply to @req; returns its payload size. */
static inline u32 reply(struct fe *f, u32 req, void *p, u32 max)
{
	struct vqf_vhost_hdr h;
	struct pollfd pf = { .fd = f->sv[0], .events = POLLIN };

	assert_int_equal(poll(&pf, 1, FE_WAIT_MS), 1);
	assert_int_equal(recv(f->sv[0], &h, sizeof(h), MSG_WAITALL),
			 sizeof(h));
	assert_int_equal(h.request, req);
	assert_int_equal(h.flags, VQF_VHOST_VERSION | VQF_VHOST_FLAG_REPLY);
	assert_true(h.size <= max);
	if (h.size)
		assert_int_equal(recv(f->sv[0], p, h.size, MSG_WAITALL),
				 (ssize_t)h.size);
	return h.size;
}

static inline u64 get_u64(struct fe *f, u32 req)
{
	u64 v = 0;

	msg(f, req, NULL, 0, NULL, 0);
	assert_int_equal(reply(f, req, &v, sizeof(v)), sizeof(v));
	return v;
}

/* A message with NEED_REPLY: the ack's status (0 = done). */
static inline u64 acked(struct fe *f, u32 req, const void *p, u32 size,
		 const int *fds, unsigned int nfds)
{
	u64 v = ~0ull;

	send_raw(f, req, VQF_VHOST_VERSION | VQF_VHOST_FLAG_NEED_REPLY, p,
		 size, fds, nfds);
	assert_int_equal(reply(f, req, &v, sizeof(v)), sizeof(v));
	return v;
}

/* A setting the back-end must take: acked as 0, or sent (f->no_acks). */
static inline void set_msg(struct fe *f, u32 req, const void *p, u32 size,
			   const int *fds, unsigned int nfds)
{
	if (f->no_acks)
		msg(f, req, p, size, fds, nfds);
	else
		assert_int_equal(acked(f, req, p, size, fds, nfds), 0);
}

static inline void set_state(struct fe *f, u32 req, u32 idx, u32 num)
{
	struct vqf_vhost_state s = { .index = idx, .num = num };

	set_msg(f, req, &s, sizeof(s), NULL, 0);
}

static inline u64 ua(const struct fe *f, u64 gpa)
{
	return (u64)(uintptr_t)f->ram + (gpa - RAM_GPA);
}

/* Ring @i's size, base, addresses and kick: it starts without its call. */
static inline void set_ring_kick(struct fe *f, unsigned int i)
{
	struct vqf_vhost_addr a = {
		.index = i,
		.desc = ua(f, f->addr[i].desc),
		.used = ua(f, f->addr[i].used),
		.avail = ua(f, f->addr[i].avail),
	};
	u64 v;

	set_state(f, VQF_VHOST_SET_VRING_NUM, i, RING_NUM);
	set_state(f, VQF_VHOST_SET_VRING_BASE, i, 0);
	set_msg(f, VQF_VHOST_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	v = i;
	set_msg(f, VQF_VHOST_SET_VRING_KICK, &v, sizeof(v), &f->kick[i], 1);
}

static inline void set_ring_call(struct fe *f, unsigned int i)
{
	u64 v = i;

	set_msg(f, VQF_VHOST_SET_VRING_CALL, &v, sizeof(v), &f->call[i], 1);
}

static inline void set_ring(struct fe *f, unsigned int i)
{
	set_ring_kick(f, i);
	set_ring_call(f, i);
}

static inline void set_mem(struct fe *f)
{
	struct vqf_vhost_mem m = {
		.nregions = 1,
		.r[0] = { .gpa = RAM_GPA, .size = RAM_SIZE,
			  .uaddr = (u64)(uintptr_t)f->ram },
	};

	set_msg(f, VQF_VHOST_SET_MEM_TABLE, &m, 8 + sizeof(m.r[0]),
		&f->memfd, 1);
}

static inline void rings_create(struct fe *f, const u16 *start)
{
	unsigned int i;

	for (i = 0; i < NQ; i++) {
		struct vqf_vring_drv_cfg dc = {
			.num = RING_NUM,
			.features = 1ull << VIRTIO_RING_F_EVENT_IDX,
			.mem = &f->gm,
			.start_idx = start ? start[i] : 0,
		};

		vqf_vring_layout(RING_NUM, RAM_GPA + i * RING_AREA, 4,
				 &f->addr[i]);
		dc.addr = f->addr[i];
		assert_int_equal(vqf_vring_drv_create(&dc, &f->vq[i]), 0);
	}
}

static inline u64 galloc(struct fe *f, u64 len)
{
	u64 g = RAM_GPA + f->bump;

	f->bump += (len + 63) & ~63ull;
	assert_true(f->bump <= RAM_SIZE);
	return g;
}

static inline void *hva(struct fe *f, u64 gpa)
{
	return f->ram + (gpa - RAM_GPA);
}

/*
 * One FUSE request on ring @q: @arg (@alen bytes) after the header, @out
 * bytes of room after the out header.  Returns the out header; the reply
 * payload is copied to @rep.
 */
static inline struct fuse_out_header fuse_call(struct fe *f, unsigned int q,
					u32 opcode, u64 nodeid,
					const void *arg, u32 alen,
					void *rep, u32 out)
{
	struct fuse_in_header ih = {
		.len = sizeof(ih) + alen, .opcode = opcode,
		.unique = ++f->unique, .nodeid = nodeid,
	};
	struct fuse_out_header oh;
	struct vqf_vring_gseg rd, wr;
	u64 ig = galloc(f, sizeof(ih) + alen);
	u64 og = galloc(f, sizeof(oh) + out);
	void *cookie = NULL;
	u32 len = 0;
	int i, r;

	memcpy(hva(f, ig), &ih, sizeof(ih));
	if (alen)
		memcpy((u8 *)hva(f, ig) + sizeof(ih), arg, alen);
	memset(hva(f, og), 0xaa, sizeof(oh) + out);
	rd.addr = ig;
	rd.len = sizeof(ih) + alen;
	wr.addr = og;
	wr.len = sizeof(oh) + out;
	assert_int_equal(vqf_vring_drv_add(f->vq[q], &rd, 1, &wr, 1,
					   (void *)(uintptr_t)ih.unique), 0);
	if (vqf_vring_drv_kick_prepare(f->vq[q]))
		assert_int_equal(vqf_eventfd_signal(f->kick[q]), 0);
	for (i = 0; i < FE_WAIT_MS / 10; i++) {
		r = vqf_vring_drv_get_buf(f->vq[q], &cookie, &len);
		if (r)
			break;
		if (f->hup_fails) {
			/* a back-end that died answers nothing: say so now */
			struct pollfd pf = { .fd = f->sv[0],
					     .events = POLLRDHUP };

			if (poll(&pf, 1, 0) == 1 &&
			    (pf.revents & (POLLRDHUP | POLLHUP | POLLERR)))
				fail_msg("opcode %u: the back-end hung up "
					 "without a reply", opcode);
		}
		vqf_eventfd_wait(f->call[q], 10);
	}
	assert_int_equal(r, 1);
	assert_int_equal((uintptr_t)cookie, ih.unique);
	assert_true(len >= sizeof(oh));
	memcpy(&oh, hva(f, og), sizeof(oh));
	assert_int_equal(oh.unique, ih.unique);
	assert_int_equal(oh.len, len);
	if (rep && len > sizeof(oh))
		memcpy(rep, (u8 *)hva(f, og) + sizeof(oh), len - sizeof(oh));
	return oh;
}

static inline void fuse_init(struct fe *f, unsigned int q)
{
	struct fuse_init_in ii = {
		.major = FUSE_KERNEL_VERSION, .minor = 31,
		.max_readahead = 65536,
	};
	struct fuse_init_out io;
	struct fuse_out_header oh;

	oh = fuse_call(f, q, FUSE_INIT, 0, &ii, sizeof(ii), &io, sizeof(io));
	assert_int_equal(oh.error, 0);
	assert_int_equal(io.major, FUSE_KERNEL_VERSION);
}

static inline void rm_dir(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * QEMU 7.2's sequence when the guest sets DRIVER_OK, first half: the
 * features; *@pf gets the protocol features offered.  The caller sends
 * SET_PROTOCOL_FEATURES (and what they call for), then fe_handshake_end().
 */
static inline u64 fe_handshake_begin(struct fe *f, u64 *pf)
{
	u64 feat = get_u64(f, VQF_VHOST_GET_FEATURES);

	assert_true(feat & (1ull << VIRTIO_F_VERSION_1));
	assert_true(feat & (1ull << VQF_VHOST_F_PROTOCOL_FEATURES));
	*pf = get_u64(f, VQF_VHOST_GET_PROTOCOL_FEATURES);
	assert_true(*pf & (1ull << VQF_VHOST_PF_REPLY_ACK));
	assert_true(*pf & (1ull << VQF_VHOST_PF_MQ));
	return feat;
}

/* The second half: owner, features, memory table, rings, enables. */
static inline void fe_handshake_end(struct fe *f, u64 feat)
{
	unsigned int i;

	assert_int_equal(get_u64(f, VQF_VHOST_GET_QUEUE_NUM), NQ);
	assert_int_equal(acked(f, VQF_VHOST_SET_OWNER, NULL, 0, NULL, 0), 0);
	feat &= (1ull << VIRTIO_F_VERSION_1) |
		(1ull << VIRTIO_RING_F_EVENT_IDX) |
		(1ull << VQF_VHOST_F_PROTOCOL_FEATURES);
	assert_int_equal(acked(f, VQF_VHOST_SET_FEATURES, &feat,
			       sizeof(feat), NULL, 0), 0);
	set_mem(f);
	for (i = 0; i < NQ; i++)
		set_ring(f, i);
	for (i = 0; i < NQ; i++)
		set_state(f, VQF_VHOST_SET_VRING_ENABLE, i, 1);
}

/* Guest RAM (a memfd), its driver view and the rings' eventfds. */
static inline void fe_ram_init(struct fe *f)
{
	unsigned int i;

	f->memfd = memfd_create("vqf-guest-ram", MFD_CLOEXEC);
	assert_true(f->memfd >= 0);
	assert_int_equal(ftruncate(f->memfd, RAM_SIZE), 0);
	f->ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		      f->memfd, 0);
	assert_true(f->ram != MAP_FAILED);
	vqf_gmem_init(&f->gm);
	assert_int_equal(vqf_gmem_add(&f->gm, RAM_GPA, RAM_SIZE, f->ram), 0);
	for (i = 0; i < NQ; i++) {
		f->kick[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		f->call[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_true(f->kick[i] >= 0 && f->call[i] >= 0);
	}
	f->bump = BUF_START;
}

static inline void fe_ram_free(struct fe *f)
{
	unsigned int i;

	for (i = 0; i < NQ; i++) {
		vqf_vring_drv_destroy(f->vq[i]);
		close(f->kick[i]);
		close(f->call[i]);
	}
	munmap(f->ram, RAM_SIZE);
	close(f->memfd);
}

/* A temporary directory served by vqf_pt through a backend. */
static inline void fe_backend_init(struct fe *f)
{
	struct vqf_pt_config pc = { 0 };
	const struct fuse_lowlevel_ops *ops;
	size_t osz;

	f->fds_before = count_fds();
	strcpy(f->dir, "/tmp/vqf-vhost-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	pc.source = f->dir;
	pc.io = VQF_PT_IO_PREAD;
	f->pt = vqf_pt_new(&pc);
	assert_non_null(f->pt);
	ops = vqf_pt_ops(&osz);
	f->be = vqf_backend_new(ops, osz, f->pt, NULL);
	assert_non_null(f->be);
}

/* The back-end @vc describes, serving the socket pair's far end. */
static inline void fe_serve_start(struct fe *f, struct vqf_vhost_cfg *vc)
{
	vc->num_request_queues = NREQ;
	vc->threads = 2;
	vc->be = f->be;
	vc->log = getenv("VQF_VHOST_LOG") ? stderr : NULL;
	assert_int_equal(vqf_vhost_new(vc, &f->vh), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    f->sv), 0);
	assert_int_equal(pthread_create(&f->thr, NULL, serve_main, f), 0);
}

/* Ends the connection and the serving thread; frees what setup made. */
static inline void fe_teardown(struct fe *f)
{
	if (f->sv[0] >= 0)
		close(f->sv[0]);
	pthread_join(f->thr, NULL);
	close(f->sv[1]);
	vqf_vhost_free(f->vh);
	vqf_backend_free(f->be);
	vqf_pt_free(f->pt);
	fe_ram_free(f);
	rm_dir(f->dir);
}

#endif
