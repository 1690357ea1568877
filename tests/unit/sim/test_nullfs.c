// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_nullfs.c - the null backend on a whole simulated machine, in each
 * transport mode: what it answers, that it never touches the shared
 * directory, and the trace's stages over it.
 */
#include "vqf_sim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define NSTAT	50

static unsigned int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void run(bool inline_kick, u64 poll_ns, bool handoff)
{
	char dir[] = "/tmp/vqf-null-XXXXXX";
	struct vqf_sim_cfg cfg = { 0 };
	struct vqf_trace_stages ts;
	struct vqf_sim_stats st;
	struct vqf_trace *t;
	struct vqf_gcli *c;
	struct vqf_sim *s;
	struct stat sb;
	char buf[8];
	int fd;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(vqf_trace_open(NULL, &t), 0);
	cfg.shared = dir;
	cfg.fs = VQF_SIM_FS_NULL;
	cfg.inline_kick = inline_kick;
	cfg.poll_ns = poll_ns;
	cfg.handoff = handoff;
	cfg.trace = t;
	assert_int_equal(vqf_sim_new(&cfg, &s), 0);
	c = vqf_sim_cli(s);
	assert_int_equal(vqf_gcli_open(c, "f", O_CREAT | O_EXCL | O_RDWR, 0644),
			 -EEXIST);
	fd = vqf_gcli_open(c, "f", O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pwrite(c, fd, "abc", 3, 0), 3);
	assert_int_equal(vqf_gcli_pread(c, fd, buf, sizeof(buf), 0), 0);
	assert_int_equal(vqf_gcli_close(c, fd), 0);
	for (int i = 0; i < NSTAT; i++) {
		assert_int_equal(vqf_gcli_stat(c, "any-name", &sb), 0);
		assert_true(S_ISREG(sb.st_mode));
		assert_int_equal(sb.st_size, 0);
	}
	assert_int_equal(vqf_gcli_stat(c, "", &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	/* Below a file: its parent is no directory. */
	assert_int_equal(vqf_gcli_stat(c, "f/g", &sb), -ENOTDIR);
	assert_int_equal(vqf_gcli_mkdir(c, "d", 0755), -ENOSYS);
	assert_int_equal(vqf_gcli_unlink(c, "f"), 0);
	vqf_sim_get_stats(s, &st);
	assert_true(st.drv.completed >= NSTAT + 5);
	assert_int_equal(st.drv.bad_replies, 0);
	assert_int_equal(st.be.reply_failed, 0);
	/* Inline or direct, the one caller serves and reaps its own
	 * reply: no interrupt for it, whatever the machine's speed (only
	 * FORGETs, which nobody waits for, may signal one).  Handoff,
	 * every reply is one.
	 */
	if (inline_kick || (!poll_ns && !handoff))
		assert_true(st.dev.interrupts < 8);
	else if (!poll_ns)
		assert_true(st.dev.interrupts >= NSTAT);
	vqf_sim_free(s);
	/* Everything it said, it said from memory. */
	assert_int_equal(entries(dir), 0);
	assert_int_equal(vqf_trace_stages(t, FUSE_LOOKUP, &ts), 0);
	assert_true(ts.requests >= NSTAT);
	assert_true(ts.total_ns > 0);
	assert_int_equal(vqf_trace_close(t), 0);
	rmdir(dir);
}

static void test_threaded(void **state)
{
	(void)state;
	run(false, 0, false);
}

static void test_handoff(void **state)
{
	(void)state;
	run(false, 0, true);
}

static void test_inline(void **state)
{
	(void)state;
	run(true, 0, false);
}

static void test_polled(void **state)
{
	(void)state;
	run(false, 50000, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threaded),
		cmocka_unit_test(test_handoff),
		cmocka_unit_test(test_inline),
		cmocka_unit_test(test_polled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
