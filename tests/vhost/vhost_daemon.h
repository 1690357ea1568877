/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * vhost_daemon.h - `vqfuse-sim vhost-user` as a program, for the tests
 * that run it (test_vhost_shmem, test_escape): started with its stderr in
 * DIR/log, connected to once it listens, waited for, its log read.
 *
 * Every wait is bounded by DAEMON_WAIT_MS against a hang only, far beyond
 * a start or an exit under valgrind on a loaded machine: a run that works
 * never waits for it.
 */
#ifndef VHOST_DAEMON_H
#define VHOST_DAEMON_H

#define DAEMON_WAIT_MS	120000

static inline long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Its log so far, NUL-terminated in @buf (empty if none yet). */
static inline void daemon_log(const char *dir, char *buf, size_t size)
{
	char p[160];
	ssize_t n = -1;
	int fd;

	snprintf(p, sizeof(p), "%s/log", dir);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, size - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = 0;
}

/* Runs @argv (argv[0] looked up in PATH) with its stderr in @dir/log. */
static inline pid_t daemon_spawn(const char *dir, const char *const *argv)
{
	char lg[160];
	pid_t pid;
	int fd;

	snprintf(lg, sizeof(lg), "%s/log", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		fd = open(lg, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/*
 * Its exit status, 128 + the signal if one ended it, -1 if it did not
 * end in time; *@pid becomes 0 once it is reaped.
 */
static inline int daemon_wait(pid_t *pid)
{
	long long t0 = mono_ms();
	int st = 0;

	while (mono_ms() - t0 < DAEMON_WAIT_MS) {
		if (waitpid(*pid, &st, WNOHANG) == *pid) {
			*pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) :
			       128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	return -1;
}

/*
 * A connection to its socket @path: the file appears at bind(), connect()
 * is refused until listen(), so both are retried; a daemon that ended
 * first fails the case with its log.
 */
static inline int daemon_connect(const char *dir, pid_t *pid,
				 const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char lg[16384];
	long long t0 = mono_ms();
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno != ENOENT && errno != ECONNREFUSED)
			fail_msg("connect %s: %s", path, strerror(errno));
		if (waitpid(*pid, NULL, WNOHANG) == *pid) {
			*pid = 0;
			daemon_log(dir, lg, sizeof(lg));
			fail_msg("the daemon ended at its start:\n%s", lg);
		}
		if (mono_ms() - t0 > DAEMON_WAIT_MS) {
			daemon_log(dir, lg, sizeof(lg));
			fail_msg("the daemon did not listen:\n%s", lg);
		}
		usleep(10000);
	}
	return fd;
}

#endif
