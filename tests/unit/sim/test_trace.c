// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * test_trace.c - the Chrome trace writer: slices balanced and nested per
 * request, stages in order, valid JSON (checked with python3's json when
 * it is there), and a whole simulated machine traced end to end.
 */
#include "vqf_trace.h"
#include "vqf_sim.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

static unsigned int count(const char *s, const char *what)
{
	unsigned int n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

/* python3's json parser, when present: 0 ok, 1 bad, -1 not run. */
static int json_ok(const char *path)
{
	char cmd[512];
	int ret;

	if (system("python3 -c '' 2>/dev/null"))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));"
		 " b=sum(e[\"ph\"]==\"b\" for e in d[\"traceEvents\"]);"
		 " e=sum(e[\"ph\"]==\"e\" for e in d[\"traceEvents\"]);"
		 " sys.exit(0 if b==e and b>0 else 1)' %s", path);
	ret = system(cmd);
	return ret ? 1 : 0;
}

static void test_writer(void **state)
{
	char path[] = "/tmp/vqf-trace-XXXXXX";
	struct vqf_trace *t;
	char *s;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(vqf_trace_open("/nonexistent/dir/t.json", &t),
			 -ENOENT);
	assert_int_equal(vqf_trace_open(path, &t), 0);
	/* A whole life, an interrupted one, one cut off by shutdown. */
	vqf_trace_event(t, VQF_T_QUEUED, 2, FUSE_LOOKUP, 2);
	vqf_trace_event(t, VQF_T_ADDED, 2, FUSE_LOOKUP, 2);
	vqf_trace_event(t, VQF_T_KICKED, 2, FUSE_LOOKUP, 2);
	vqf_trace_event(t, VQF_T_POPPED, 2, FUSE_LOOKUP, 2);
	vqf_trace_event(t, VQF_T_QUEUED, 4, FUSE_SETLKW, 2);
	vqf_trace_event(t, VQF_T_PUSHED, 2, FUSE_LOOKUP, 2);
	vqf_trace_event(t, VQF_T_COMPLETED, 2, FUSE_LOOKUP, 2);
	vqf_trace_event(t, VQF_T_ADDED, 4, FUSE_SETLKW, 2);
	vqf_trace_event(t, VQF_T_INTERRUPTED, 4, FUSE_SETLKW, 2);
	vqf_trace_event(t, VQF_T_QUEUED, 6, FUSE_GETATTR, 3);
	vqf_trace_event(t, VQF_T_NR, 8, FUSE_GETATTR, 3);	/* ignored */
	vqf_trace_event(t, VQF_T_ADDED, 0, FUSE_FORGET, 1);	/* no req */
	assert_int_equal(vqf_trace_count(t), 11);
	assert_int_equal(vqf_trace_close(t), 0);
	s = slurp(path);
	assert_true(!strncmp(s, "{\"displayTimeUnit\":\"ns\"", 22));
	assert_int_equal(count(s, "\"ph\":\"b\""), count(s, "\"ph\":\"e\""));
	/* Three requests, LOOKUP with its four stages. */
	assert_int_equal(count(s, "\"name\":\"LOOKUP\""), 2);
	assert_int_equal(count(s, "\"name\":\"SETLKW\""), 2);
	assert_int_equal(count(s, "\"name\":\"GETATTR\""), 2);
	assert_int_equal(count(s, "\"name\":\"device\""), 2);
	assert_int_equal(count(s, "\"name\":\"kicked\""), 1);
	assert_int_equal(count(s, "\"name\":\"interrupted\""), 1);
	assert_int_equal(count(s, "FORGET"), 0);
	assert_true(strstr(s, "\"id\":\"0x2\"") != NULL);
	assert_int_not_equal(json_ok(path), 1);
	free(s);
	unlink(path);
}

/* A traced machine: every request the driver completed has a slice. */
static void test_machine(void **state)
{
	char path[] = "/tmp/vqf-trace-XXXXXX", dir[] = "/tmp/vqf-tr-XXXXXX";
	struct vqf_sim_cfg cfg = { 0 };
	struct vqf_sim_stats st;
	struct vqf_trace *t;
	struct vqf_sim *s;
	struct stat sb;
	char *js;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(vqf_trace_open(path, &t), 0);
	cfg.shared = dir;
	cfg.trace = t;
	assert_int_equal(vqf_sim_new(&cfg, &s), 0);
	fd = vqf_gcli_open(vqf_sim_cli(s), "f", O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	assert_int_equal(vqf_gcli_pwrite(vqf_sim_cli(s), fd, "x", 1, 0), 1);
	assert_int_equal(vqf_gcli_close(vqf_sim_cli(s), fd), 0);
	assert_int_equal(vqf_gcli_stat(vqf_sim_cli(s), "f", &sb), 0);
	assert_int_equal(vqf_gcli_unlink(vqf_sim_cli(s), "f"), 0);
	vqf_sim_get_stats(s, &st);
	vqf_sim_free(s);
	assert_int_equal(vqf_trace_close(t), 0);
	js = slurp(path);
	/* INIT, LOOKUP, CREATE, WRITE, FLUSH, RELEASE, LOOKUP, UNLINK,
	 * DESTROY...: each completed request is a slice with its stages.
	 */
	assert_true(count(js, "\"name\":\"ring\"") / 2 >=
		    st.drv.completed);
	assert_true(count(js, "\"name\":\"device\"") / 2 >=
		    st.drv.completed);
	assert_true(count(js, "\"name\":\"reply\"") / 2 >=
		    st.drv.completed);
	assert_true(count(js, "\"name\":\"CREATE\"") == 2);
	assert_int_equal(count(js, "\"ph\":\"b\""), count(js, "\"ph\":\"e\""));
	assert_int_not_equal(json_ok(path), 1);
	free(js);
	unlink(path);
	rmdir(dir);
}

/* The stage means of in-memory traces: whole lives only, unique 0 not. */
static void test_stages(void **state)
{
	struct vqf_trace_stages ts;
	struct vqf_trace *t;

	(void)state;
	assert_int_equal(vqf_trace_open(NULL, &t), 0);
	assert_int_equal(vqf_trace_stages(t, 0, &ts), -ENODATA);
	assert_int_equal(ts.requests, 0);
	for (uint64_t u = 2; u <= 6; u += 2) {
		vqf_trace_event(t, VQF_T_QUEUED, u, FUSE_LOOKUP, 1);
		vqf_trace_event(t, VQF_T_ADDED, u, FUSE_LOOKUP, 1);
		vqf_trace_event(t, VQF_T_KICKED, u, FUSE_LOOKUP, 1);
		vqf_trace_event(t, VQF_T_POPPED, u, FUSE_LOOKUP, 1);
		vqf_trace_event(t, VQF_T_PUSHED, u, FUSE_LOOKUP, 1);
		/* The third never completes (shutdown): not counted. */
		if (u != 6)
			vqf_trace_event(t, VQF_T_COMPLETED, u, FUSE_LOOKUP, 1);
	}
	vqf_trace_event(t, VQF_T_QUEUED, 0, FUSE_FORGET, 1);
	vqf_trace_event(t, VQF_T_COMPLETED, 0, FUSE_FORGET, 1);
	assert_int_equal(vqf_trace_stages(t, FUSE_GETATTR, &ts), -ENODATA);
	assert_int_equal(vqf_trace_stages(t, FUSE_LOOKUP, &ts), 0);
	assert_int_equal(ts.requests, 2);
	assert_int_equal(vqf_trace_stages(t, 0, &ts), 0);
	assert_int_equal(ts.requests, 2);
	assert_true(ts.pending_ns >= 0 && ts.ring_ns >= 0 &&
		    ts.device_ns >= 0 && ts.reply_ns >= 0);
	/* The stages tile the life: their sum is the whole, to rounding. */
	assert_true(ts.pending_ns + ts.ring_ns + ts.device_ns + ts.reply_ns <=
		    ts.total_ns + 1);
	assert_true(ts.pending_ns + ts.ring_ns + ts.device_ns + ts.reply_ns >=
		    ts.total_ns - 1);
	assert_int_equal(vqf_trace_close(t), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer),
		cmocka_unit_test(test_machine),
		cmocka_unit_test(test_stages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
