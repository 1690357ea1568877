/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What vqf-posix's parts share: the failure message, the check macros and
 * the KTAP runner.
 */
#ifndef VQF_POSIX_H
#define VQF_POSIX_H

#include <errno.h>
#include <string.h>

#define VQF_WHY_LEN 512

/* The directory under test; why a case failed (shared with children). */
extern int dfd;
extern char *why;

int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A failed call: name it with the source line and errno. */
#define CALL(expr)							\
	do {								\
		if ((long)(expr) < 0)					\
			return fail("%s failed at line %d: %s", #expr,	\
				    __LINE__, strerror(errno));		\
	} while (0)

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond))						\
			return fail(__VA_ARGS__);			\
	} while (0)

/* expr must fail with errno err. */
#define EXPECT_ERR(expr, err)						\
	do {								\
		errno = 0;						\
		if ((long)(expr) >= 0 || errno != (err))		\
			return fail("%s at line %d: want %s, got %s",	\
				    #expr, __LINE__, strerror(err),	\
				    errno ? strerror(errno) : "success"); \
	} while (0)

/* A case: 0 passed, -1 failed (why says why), 1 skipped (why says why). */
struct tcase {
	const char *name;
	int (*fn)(void);
};

int run_ktap(const char *suite, const struct tcase *c, unsigned int n);

/* vqf-posix users DIR: the multi-user part (vqf-posix-users.c). */
int vqf_posix_users(const char *dir);

#endif /* VQF_POSIX_H */
