// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_sim_smoke - one simulated machine brought up and down, with the
 * basic file operations through the whole stack: client, driver,
 * virtqueues, device, libfuse3, passthrough, host directory.  The full
 * end-to-end suite is tests/e2e; this is the quick check that the parts
 * fit, for both backends and for several queues and worker threads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vqf_sim.h"

struct fix {
	char dir[64];
	struct vqf_sim *s;
};

static int host_rm(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static bool inline_kick;

static int setup_cfg(void **state, enum vqf_sim_fs fs, unsigned int queues,
		     unsigned int threads)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct vqf_sim_cfg cfg = { 0 };

	strcpy(f->dir, "/tmp/vqf-smoke-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	cfg.shared = f->dir;
	cfg.fs = fs;
	cfg.queues = queues;
	cfg.threads = threads;
	cfg.ram = 64 << 20;
	cfg.inline_kick = inline_kick;
	if (vqf_sim_new(&cfg, &f->s))
		return -1;
	*state = f;
	return 0;
}

static int setup_pt(void **state)
{
	return setup_cfg(state, VQF_SIM_FS_VQFUSE, 1, 0);
}

static int setup_pt_mq(void **state)
{
	return setup_cfg(state, VQF_SIM_FS_VQFUSE, 4, 4);
}

/* The device served in the kicking thread, reaped by the caller. */
static int setup_inline(void **state)
{
	inline_kick = true;
	return setup_cfg(state, VQF_SIM_FS_VQFUSE, 1, 0);
}

static int setup_inline_mq(void **state)
{
	inline_kick = true;
	return setup_cfg(state, VQF_SIM_FS_VQFUSE, 2, 2);
}

#ifdef VQF_TEST_PTLL
static int setup_ptll(void **state)
{
	return setup_cfg(state, VQF_SIM_FS_PTLL, 2, 2);
}
#endif

static int teardown(void **state)
{
	struct fix *f = *state;
	vqf_sim_free(f->s);
	inline_kick = false;
	host_rm(f->dir);
	free(f);
	return 0;
}

static int count_entry(void *ctx, const char *name, const struct stat *st)
{
	(void)st;
	if (strcmp(name, ".") && strcmp(name, ".."))
		(*(int *)ctx)++;
	return 0;
}

static void test_basic(void **state)
{
	struct fix *f = *state;
	struct vqf_gcli *c = vqf_sim_cli(f->s);
	struct vqf_sim_stats st;
	char host[128], buf[64];
	struct stat sb;
	int fd, n = 0;
	FILE *h;

	assert_int_equal(vqf_gcli_mkdir(c, "d", 0755), 0);
	fd = vqf_gcli_open(c, "d/f", O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_write(c, fd, "hello world", 11), 11);
	assert_int_equal(vqf_gcli_pread(c, fd, buf, sizeof(buf), 6), 5);
	assert_memory_equal(buf, "world", 5);
	assert_int_equal(vqf_gcli_close(c, fd), 0);

	snprintf(host, sizeof(host), "%s/d/f", f->dir);
	h = fopen(host, "r");
	assert_non_null(h);
	assert_int_equal(fread(buf, 1, sizeof(buf), h), 11);
	fclose(h);
	assert_memory_equal(buf, "hello world", 11);

	assert_int_equal(vqf_gcli_stat(c, "/d//f", &sb), 0);
	assert_int_equal(sb.st_size, 11);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(vqf_gcli_readdir(c, "d", true, count_entry, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(vqf_gcli_rename(c, "d/f", "g", 0), 0);
	assert_int_equal(vqf_gcli_stat(c, "d/f", &sb), -ENOENT);
	assert_int_equal(vqf_gcli_unlink(c, "g"), 0);
	assert_int_equal(vqf_gcli_rmdir(c, "d"), 0);
	assert_int_equal(vqf_gcli_stat(c, "d", &sb), -ENOENT);

	vqf_sim_get_stats(f->s, &st);
	assert_true(st.drv.submitted > 10);
	assert_int_equal(st.drv.submitted, st.drv.completed);
	assert_int_equal(st.drv.bad_replies, 0);
	assert_int_equal(st.dev.refused, 0);
}

/* Forgets reach the server: nothing stays looked up after the client. */
static void test_forgets(void **state)
{
	struct fix *f = *state;
	struct vqf_gcli *c = vqf_sim_cli(f->s);
	struct vqf_sim_stats st;
	char name[32];
	struct stat sb;
	int i, fd;

	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		fd = vqf_gcli_open(c, name, O_CREAT | O_WRONLY, 0600);
		assert_true(fd >= 0);
		assert_int_equal(vqf_gcli_close(c, fd), 0);
		assert_int_equal(vqf_gcli_stat(c, name, &sb), 0);
	}
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(vqf_gcli_unlink(c, name), 0);
	}
	assert_int_equal(vqf_gdrv_forget(vqf_sim_drv(f->s), 1234567, 1), 0);
	assert_int_equal(vqf_gdrv_forget_flush(vqf_sim_drv(f->s)), 0);
	vqf_sim_get_stats(f->s, &st);
	assert_true(st.drv.forgets + st.drv.batch_forgets >= 1);
	assert_true(st.dev.hiprio >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_basic, setup_pt,
						teardown),
		cmocka_unit_test_setup_teardown(test_forgets, setup_pt,
						teardown),
		cmocka_unit_test_setup_teardown(test_basic, setup_pt_mq,
						teardown),
		cmocka_unit_test_setup_teardown(test_basic, setup_inline,
						teardown),
		cmocka_unit_test_setup_teardown(test_forgets, setup_inline,
						teardown),
		cmocka_unit_test_setup_teardown(test_basic, setup_inline_mq,
						teardown),
#ifdef VQF_TEST_PTLL
		cmocka_unit_test_setup_teardown(test_basic, setup_ptll,
						teardown),
#endif
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
