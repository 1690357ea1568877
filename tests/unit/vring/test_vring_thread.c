// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Threaded mode: the device half runs in its own thread (vqf_vring_thread),
 * woken by eventfd kicks; the driver waits for eventfd interrupts with the
 * disable_cb / get_buf / enable_cb loop.  Every buffer must come back
 * exactly once with the device's answer to its own request, and no kick or
 * interrupt may be lost (a lost one shows up as a wait that times out).
 * Bounded in buffers and in time; run under helgrind too.
 */
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "vring_fixture.h"
#include "vqf_vring_thread.h"
#include "vring_hg.h"

#define SLOTS		96	/* buffers the driver keeps in flight */
#define REQ_LEN		64
#define RSP_LEN		64
/* slot 47's request straddles the border between regions 1 and 2 */
#define REQ_BASE	(BUF2_GPA - SLOTS * REQ_LEN / 2 + 32)
#define RSP_BASE	(BUF_GPA + 0x100)

struct req {
	u32 seq;
	u8 pat[REQ_LEN - 4];
};

/* Device side: answer with the sequence number and the inverted pattern. */
static u32 serve(void *priv, const struct vqf_chain *c)
{
	u8 in[REQ_LEN], out[RSP_LEN];
	const struct vqf_seg *s;
	unsigned int i, off = 0;
	u32 written = 0;

	for (i = 0; i < c->nr_rd; i++) {
		s = &vqf_chain_rd(c)[i];
		if (off + s->len > sizeof(in))
			return 0;
		memcpy(in + off, s->hva, s->len);
		off += s->len;
	}
	if (off != REQ_LEN)
		return 0;
	memcpy(out, in, 4);
	for (i = 4; i < RSP_LEN; i++)
		out[i] = (u8)~in[i];
	for (i = 0; i < c->nr_wr && written < RSP_LEN; i++) {
		u32 n;

		s = &vqf_chain_wr(c)[i];
		n = s->len < RSP_LEN - written ? s->len : RSP_LEN - written;
		memcpy(s->hva, out + written, n);
		written += n;
	}
	return written;
}

static void run(u64 features, unsigned int num, unsigned int total)
{
	struct vqf_vring_thread_cfg tc = { 0 };
	struct vqf_vring_thread *t;
	static u8 done[200000];
	u32 slot_seq[SLOTS];
	unsigned int free_slots[SLOTS], nfree = SLOTS, i;
	unsigned int started = 0, completed = 0, waits = 0;
	int kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct fx f;

	assert_true(total <= sizeof(done));
	memset(done, 0, total);
	fx_init(&f, num, features, 65500, 0);
	for (i = 0; i < SLOTS; i++)
		free_slots[i] = SLOTS - 1 - i;
	tc.dev = f.dev;
	tc.kick_fd = kick_fd;
	tc.call_fd = call_fd;
	tc.serve = serve;
	assert_int_equal(vqf_vring_thread_start(&tc, &t), 0);

	while (completed < total) {
		bool progress = false;
		void *cookie;
		u32 len;
		int r;

		/* produce */
		while (started < total && nfree) {
			unsigned int s = free_slots[nfree - 1];
			u64 req = REQ_BASE + (u64)s * REQ_LEN;
			u64 rsp = RSP_BASE + (u64)s * RSP_LEN;
			struct req q;
			/* 1..3 readable pieces, 1..2 writable */
			struct vqf_vring_gseg rd[3] = { { req, 4 },
				{ req + 4, 20 }, { req + 24, REQ_LEN - 24 } };
			struct vqf_vring_gseg rd1 = { req, REQ_LEN };
			struct vqf_vring_gseg wr[2] = { { rsp, 10 },
				{ rsp + 10, RSP_LEN - 10 } };
			struct vqf_vring_gseg wr1 = { rsp, RSP_LEN };
			bool multi = started % 3 != 0;

			q.seq = started;
			for (i = 0; i < sizeof(q.pat); i++)
				q.pat[i] = (u8)(started * 7 + i);
			/* the driver writes its request into guest memory */
			for (i = 0; i < REQ_LEN; i++)
				*fx_hva(&f, req + i) = ((u8 *)&q)[i];
			memset(fx_hva(&f, rsp), 0, RSP_LEN);
			r = vqf_vring_drv_add(f.drv, multi ? rd : &rd1,
					      multi ? 3 : 1, multi ? wr : &wr1,
					      multi ? 2 : 1,
					      (void *)(uintptr_t)(s + 1));
			if (r == -ENOSPC)
				break;
			assert_int_equal(r, 0);
			slot_seq[s] = started++;
			nfree--;
			if (started % 4 == 0 &&
			    vqf_vring_drv_kick_prepare(f.drv))
				assert_int_equal(vqf_eventfd_signal(kick_fd), 0);
		}
		if (vqf_vring_drv_kick_prepare(f.drv))
			assert_int_equal(vqf_eventfd_signal(kick_fd), 0);

		/* consume: the race-free completion loop */
		do {
			vqf_vring_drv_disable_cb(f.drv);
			while ((r = vqf_vring_drv_get_buf(f.drv, &cookie,
							  &len)) > 0) {
				unsigned int s = (uintptr_t)cookie - 1;
				u8 *p = fx_hva(&f, RSP_BASE + (u64)s * RSP_LEN);
				u32 seq;

				assert_true(s < SLOTS);
				memcpy(&seq, p, 4);
				assert_int_equal(len, RSP_LEN);
				assert_int_equal(seq, slot_seq[s]);
				assert_int_equal(done[seq], 0);
				done[seq] = 1;
				for (i = 4; i < RSP_LEN; i++)
					assert_int_equal(p[i],
						(u8)~(u8)(seq * 7 + i - 4));
				free_slots[nfree++] = s;
				completed++;
				progress = true;
			}
			assert_int_equal(r, 0);
		} while (!vqf_vring_drv_enable_cb(f.drv));

		if (!progress && (nfree == 0 || started == total)) {
			/*
			 * Nothing to do but wait for the interrupt.  The work
			 * is bounded (total buffers); time is not: one wait
			 * far beyond any delay a loaded machine or valgrind
			 * can cause catches a lost wakeup.
			 */
			int ms = fx_under_valgrind() ? 600000 : 60000;
			s64 w = vqf_eventfd_wait(call_fd, ms);

			assert_true(w >= 0);
			if (w == 0)
				fail_msg("no interrupt in %d s: lost wakeup? "
					 "%u/%u done", ms / 1000, completed,
					 total);
			waits++;
		}
	}
	assert_int_equal(vqf_vring_thread_stop(t), 0);
	for (i = 0; i < total; i++)
		assert_int_equal(done[i], 1);
	assert_int_equal(f.ds.bufs_used, total);
	assert_int_equal(f.vs.chains, total);
	assert_int_equal(f.vs.pushed, total);
	assert_true(f.ds.kicks_sent > 0);
	assert_true(f.vs.interrupts_sent > 0);
	print_message("features %#llx num %u: %u bufs, kicks %llu sent %llu "
		      "suppressed, interrupts %llu sent %llu suppressed, "
		      "%u waits, %llu indirect\n",
		      (unsigned long long)features, num, total,
		      (unsigned long long)f.ds.kicks_sent,
		      (unsigned long long)f.ds.kicks_suppressed,
		      (unsigned long long)f.vs.interrupts_sent,
		      (unsigned long long)f.vs.interrupts_suppressed, waits,
		      (unsigned long long)f.ds.indirect_added);
	fx_fini(&f);
	close(kick_fd);
	close(call_fd);
}

static unsigned int count(void)
{
	return fx_under_valgrind() ? 3000 : 100000;
}

static void test_thread_event_idx(void **state)
{
	run(F_EVENT | F_INDIRECT, 64, count());
}

static void test_thread_flags(void **state)
{
	run(F_INDIRECT, 32, count());
}

static void test_thread_direct_small(void **state)
{
	run(F_EVENT, 16, count() / 2);
}

/* A hostile chain breaks the queue: the thread stops serving and reports
 * why when stopped; nothing it had served is lost.
 */
static void test_thread_broken(void **state)
{
	struct vqf_vring_thread_cfg tc = { 0 };
	struct vqf_vring_gseg rd = { REQ_BASE, REQ_LEN };
	struct vqf_vring_gseg wr = { RSP_BASE, RSP_LEN };
	struct vqf_vring_thread *t;
	int kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	void *cookie;
	u32 len;
	struct fx f;
	u16 idx;
	int r;

	fx_init(&f, 8, F_EVENT, 0, 0);
	tc.dev = f.dev;
	tc.kick_fd = kick_fd;
	tc.call_fd = call_fd;
	tc.serve = serve;
	assert_int_equal(vqf_vring_thread_start(&tc, &t), 0);
	memset(fx_hva(&f, REQ_BASE), 0, REQ_LEN);
	assert_int_equal(vqf_vring_drv_add(f.drv, &rd, 1, &wr, 1, (void *)1),
			 0);
	assert_true(vqf_vring_drv_kick_prepare(f.drv));
	assert_int_equal(vqf_eventfd_signal(kick_fd), 0);
	do {
		assert_true(vqf_eventfd_wait(call_fd, 10000) > 0);
		r = vqf_vring_drv_get_buf(f.drv, &cookie, &len);
	} while (r == 0);
	assert_int_equal(r, 1);
	assert_int_equal(len, RSP_LEN);

	/* now the driver publishes a head out of range, and kicks */
	idx = le16_to_cpu(READ_ONCE(f.avail->idx));
	WRITE_ONCE(f.avail->ring[idx % 8], cpu_to_le16(8));
	smp_wmb();
	vqf_hg_before(&f.avail->idx);	/* as vqf_vring_drv_add() does */
	WRITE_ONCE(f.avail->idx, cpu_to_le16(idx + 1));
	assert_int_equal(vqf_eventfd_signal(kick_fd), 0);
	while (!vqf_vring_dev_is_broken(f.dev))
		usleep(1000);
	assert_int_equal(vqf_vring_thread_stop(t), -ERANGE);
	assert_int_equal(f.vs.err_head, 1);
	assert_int_equal(f.vs.chains, 1);
	fx_fini(&f);
	close(kick_fd);
	close(call_fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_event_idx),
		cmocka_unit_test(test_thread_flags),
		cmocka_unit_test(test_thread_direct_small),
		cmocka_unit_test(test_thread_broken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
