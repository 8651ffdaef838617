/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Tiny assertion helpers for softmr's VM tests: every check prints one line,
 * the program's exit status is the number of failed checks (capped).
 */
#ifndef SOFTMR_TEST_H
#define SOFTMR_TEST_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int st_failed, st_passed;

#define CHECK(cond, ...)						\
	do {								\
		if (cond) {						\
			st_passed++;					\
		} else {						\
			st_failed++;					\
			printf("FAIL %s:%d: ", __FILE__, __LINE__);	\
			printf(__VA_ARGS__);				\
			printf(" [%s]\n", #cond);			\
		}							\
	} while (0)

/* An expression that must fail with errno == err (returns -1/NULL). */
#define CHECK_ERRNO(failed, err, what)					\
	do {								\
		int __f = (failed);					\
		int __e = errno;					\
		CHECK(__f && __e == (err), "%s: expected %s, got %s%s",	\
		      what, strerror(err), __f ? "" : "success / ",	\
		      __f ? strerror(__e) : "");			\
	} while (0)

static inline int st_finish(const char *name)
{
	printf("%s: %d checks passed, %d failed\n", name, st_passed,
	       st_failed);
	return st_failed > 100 ? 100 : st_failed;
}

#endif /* SOFTMR_TEST_H */
