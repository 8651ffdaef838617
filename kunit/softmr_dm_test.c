// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of device memory: the pool (page granularity, alignment,
 * fragmentation, exhaustion, reuse), zeroing of fresh allocations, and DM
 * MRs through the MR access API with their range and permission rules.
 */

#include <kunit/test.h>

#include "softmr_kunit.h"

struct dm_env {
	int mr_base;	/* MRs before the test (QP1's PD, ours) */
	struct softmr_dev *sdev;
	struct softmr_ucontext *suc;
	struct ib_pd *pd;
};

static struct dm_env *dm_env(struct kunit *test, const char *name)
{
	struct dm_env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, e);
	e->sdev = softmr_kunit_dev_add(test, name, init_net.loopback_dev);
	e->suc = softmr_kunit_ucontext(test, e->sdev);
	e->pd = softmr_kunit_pd(test, e->sdev);
	e->mr_base = atomic_read(&e->sdev->mr_count);
	return e;
}

static struct softmr_dm *dm_alloc(struct dm_env *e, u64 len, u32 align,
				  int *err)
{
	struct ib_dm_alloc_attr attr = { .length = len, .alignment = align };
	struct ib_dm *ibdm;

	ibdm = softmr_alloc_dm(&e->sdev->ibdev, &e->suc->ibuc, &attr, NULL);
	*err = PTR_ERR_OR_ZERO(ibdm);
	if (IS_ERR(ibdm))
		return NULL;
	ibdm->device = &e->sdev->ibdev;
	ibdm->length = len;
	return to_sdm(ibdm);
}

static void dm_free(struct softmr_dm *dm)
{
	softmr_dealloc_dm(&dm->ibdm, NULL);
}

static void softmr_test_dm_pool(struct kunit *test)
{
	struct dm_env *e = dm_env(test, "softmr_kt60");
	size_t size = e->sdev->dm_size;
	struct softmr_dm *a, *b, *c, *big;
	int err;

	KUNIT_EXPECT_EQ(test, e->sdev->attr.max_dm_size, size);
	a = dm_alloc(e, 100, 0, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_EQ(test, a->size, PAGE_SIZE);	/* whole pages */
	KUNIT_EXPECT_EQ(test, a->offset % PAGE_SIZE, 0);
	b = dm_alloc(e, 3 * PAGE_SIZE, 16, &err);	/* 64 KiB aligned */
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_EQ(test, b->offset % SZ_64K, 0);
	KUNIT_EXPECT_NE(test, a->offset, b->offset);

	/* errors */
	KUNIT_EXPECT_NULL(test, dm_alloc(e, 0, 0, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, dm_alloc(e, size + 1, 0, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, dm_alloc(e, 64, 40, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	/* fragmentation: the whole area is not free while a and b live */
	KUNIT_EXPECT_NULL(test, dm_alloc(e, size, 0, &err));
	KUNIT_EXPECT_EQ(test, err, -ENOMEM);

	/* freed space is reused, and handed out zeroed */
	memset(e->sdev->dm_mem + a->offset, 0xab, PAGE_SIZE);
	dm_free(a);
	c = dm_alloc(e, PAGE_SIZE, 0, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(e->sdev->dm_mem + c->offset, 0,
					    PAGE_SIZE));
	dm_free(c);
	dm_free(b);
	big = dm_alloc(e, size, 0, &err);
	KUNIT_EXPECT_EQ(test, err, 0);
	if (big)
		dm_free(big);
	KUNIT_EXPECT_EQ(test,
			softmr_counter_read(e->sdev, SOFTMR_CNT_DM_BYTES),
			0);
}

static void softmr_test_dm_mr(struct kunit *test)
{
	struct dm_env *e = dm_env(test, "softmr_kt61");
	struct ib_dm_mr_attr attr = {
		.offset = 64, .length = 1000,
		.access_flags = IB_ZERO_BASED | IB_ACCESS_LOCAL_WRITE |
				IB_ACCESS_REMOTE_READ,
	};
	struct softmr_dm *dm;
	struct ib_mr *ibmr;
	u8 buf[32], got[32];
	int err;

	dm = dm_alloc(e, 2000, 0, &err);
	KUNIT_ASSERT_EQ(test, err, 0);

	ibmr = softmr_reg_dm_mr(e->pd, &dm->ibdm, &attr, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	KUNIT_EXPECT_EQ(test, to_smr(ibmr)->kind, SOFTMR_MR_DM);
	KUNIT_EXPECT_EQ(test, ibmr->iova, 0);

	/* zero based: iova 10 is DM byte 64 + 10 */
	memset(buf, 0x42, sizeof(buf));
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(to_smr(ibmr), 10, buf, 32,
					     SOFTMR_TO_MR,
					     IB_ACCESS_LOCAL_WRITE), 0);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(e->sdev->dm_mem + dm->offset + 74,
					    0x42, 32));
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(to_smr(ibmr), 10, got, 32,
					     SOFTMR_FROM_MR,
					     IB_ACCESS_REMOTE_READ), 0);
	KUNIT_EXPECT_EQ(test, memcmp(buf, got, 32), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(to_smr(ibmr), 990, got, 32,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(to_smr(ibmr), 0, got, 8,
					     SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), -EACCES);
	softmr_dereg_mr(ibmr, NULL);

	/* ibv_alloc_dm(3): ZERO_BASED required, range inside the DM */
	attr.access_flags = IB_ACCESS_LOCAL_WRITE;
	KUNIT_EXPECT_EQ(test, PTR_ERR(softmr_reg_dm_mr(e->pd, &dm->ibdm, &attr,
						       NULL)), -EINVAL);
	attr.access_flags = IB_ZERO_BASED;
	attr.offset = 1500;
	attr.length = 501;
	KUNIT_EXPECT_EQ(test, PTR_ERR(softmr_reg_dm_mr(e->pd, &dm->ibdm, &attr,
						       NULL)), -EINVAL);
	attr.offset = 2000;
	attr.length = 1;
	KUNIT_EXPECT_EQ(test, PTR_ERR(softmr_reg_dm_mr(e->pd, &dm->ibdm, &attr,
						       NULL)), -EINVAL);
	attr.offset = 2001;
	attr.length = 0;
	KUNIT_EXPECT_EQ(test, PTR_ERR(softmr_reg_dm_mr(e->pd, &dm->ibdm, &attr,
						       NULL)), -EINVAL);
	KUNIT_EXPECT_EQ(test, atomic_read(&e->sdev->mr_count), e->mr_base);

	/* an empty MR is allowed, and reaches nothing */
	attr.offset = 2000;
	attr.length = 0;
	ibmr = softmr_reg_dm_mr(e->pd, &dm->ibdm, &attr, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(to_smr(ibmr), 0, got, 1,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(to_smr(ibmr), 0, got, 0,
					     SOFTMR_FROM_MR, 0), 0);
	softmr_dereg_mr(ibmr, NULL);
	dm_free(dm);
}

static struct kunit_case softmr_dm_cases[] = {
	KUNIT_CASE(softmr_test_dm_pool),
	KUNIT_CASE(softmr_test_dm_mr),
	{}
};

static struct kunit_suite softmr_dm_suite = {
	.name = "softmr_dm",
	.test_cases = softmr_dm_cases,
};

kunit_test_suite(softmr_dm_suite);
