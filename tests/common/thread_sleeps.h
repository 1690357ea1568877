/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * thread_sleeps.h - whether a thread of this process sleeps (state S in
 * /proc/self/task/TID/stat): how a test knows, without a clock, that the
 * thread it races with has reached its blocking poll().
 */
#ifndef VQF_TEST_THREAD_SLEEPS_H
#define VQF_TEST_THREAD_SLEEPS_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static inline bool thread_sleeps(pid_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* the name in parentheses may hold anything: the state follows
	 * the last ')'
	 */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

#endif
