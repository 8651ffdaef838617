/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers shared by softmr's KUnit suites: devices created through the
 * same path `rdma link add` takes, released when the test ends.
 */

#ifndef SOFTMR_KUNIT_H
#define SOFTMR_KUNIT_H

#include <kunit/test.h>

#include "softmr.h"

struct softmr_dev *softmr_kunit_dev_add(struct kunit *test, const char *name,
					struct net_device *ndev);
void softmr_kunit_dev_del(const char *name);
bool softmr_kunit_dev_gone(const char *name);
struct ib_pd *softmr_kunit_pd_alloc(struct softmr_dev *sdev, int *err);
void softmr_kunit_pd_free(struct ib_pd *pd);
struct ib_pd *softmr_kunit_pd(struct kunit *test, struct softmr_dev *sdev);
struct softmr_ucontext *softmr_kunit_ucontext(struct kunit *test,
					      struct softmr_dev *sdev);
int softmr_kunit_dontneed(unsigned long addr, size_t len);

#endif /* SOFTMR_KUNIT_H */
