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
#include <unistd.h>
#include <sys/utsname.h>
#include <infiniband/verbs.h>

static int st_failed, st_passed, st_skipped;

/* A part of a test that this kernel cannot run, and why. */
#define SKIP(...)							\
	do {								\
		st_skipped++;						\
		printf("SKIP ");					\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	} while (0)

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

/* Open the RDMA device called @name, or NULL. */
static inline struct ibv_context *st_open_dev(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

/* A port counter of @dev from sysfs (hw_counters are cached for 10 ms). */
static inline long long st_counter(const char *dev, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	usleep(30000);
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* A number from the first line of @path (a module parameter), or -1. */
static inline long st_read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Write @v to @path (a module parameter): 0, or -1. */
static inline int st_write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fprintf(f, "%ld\n", v) > 0;
	return fclose(f) || !ok ? -1 : 0;
}

/* Whether the running kernel is older than @major.@minor. */
static inline int st_kernel_before(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma < major || (ma == major && mi < minor);
}

/*
 * Whether @ctx offers ODP.  softmr offers it exactly on kernels before
 * 6.16 (Documentation/infiniband/softmr.rst, "Test kernels"): anything else is a failed
 * check, so a lost capability cannot turn the ODP tests into skips.
 * Without ODP, registering with IBV_ACCESS_ON_DEMAND must fail with
 * EOPNOTSUPP (ibv_reg_mr(3)).
 */
static inline int st_has_odp(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_device_attr_ex dx = {};
	int want = st_kernel_before(6, 16), have;
	static char buf[4096];
	struct ibv_mr *mr;

	if (ibv_query_device_ex(ctx, NULL, &dx))
		return 0;
	have = !!(dx.odp_caps.general_caps & IBV_ODP_SUPPORT);
	CHECK(have == want, "ODP %s on this kernel, expected %s",
	      have ? "offered" : "not offered", want ? "offered" : "not");
	if (!have) {
		mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_ON_DEMAND |
				IBV_ACCESS_LOCAL_WRITE);
		CHECK_ERRNO(!mr, EOPNOTSUPP, "ODP reg_mr without ODP");
		if (mr)
			ibv_dereg_mr(mr);
	}
	return have;
}

static inline int st_finish(const char *name)
{
	if (st_skipped)
		printf("%s: %d checks passed, %d failed, %d skipped\n", name,
		       st_passed, st_failed, st_skipped);
	else
		printf("%s: %d checks passed, %d failed\n", name, st_passed,
		       st_failed);
	return st_failed > 100 ? 100 : st_failed;
}

#endif /* SOFTMR_TEST_H */
