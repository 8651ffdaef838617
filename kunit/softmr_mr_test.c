// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of memory registration on real user mappings of the test
 * thread (kunit_vm_mmap()): pinned, iova and zero-based MRs, keys, every
 * registration error, the MR access API, explicit ODP with invalidation by
 * MADV_DONTNEED and munmap, implicit ODP children, large explicit ODP MRs
 * on children, advise_mr and rereg.
 */

#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/kthread.h>
#include <linux/mman.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <rdma/ib_umem_odp.h>

#include "softmr_kunit.h"

#define RW (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | \
	    IB_ACCESS_REMOTE_WRITE)

struct mr_env {
	struct softmr_dev *sdev;
	struct ib_pd *pd;
	int mr_base;	/* MRs before the test (QP1's PD, ours) */
};

static struct mr_env *env(struct kunit *test, const char *name)
{
	struct mr_env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, e);
	e->sdev = softmr_kunit_dev_add(test, name, init_net.loopback_dev);
	e->pd = softmr_kunit_pd(test, e->sdev);
	e->mr_base = atomic_read(&e->sdev->mr_count);
	return e;
}

/* Anonymous user memory of the test thread, filled with a pattern. */
static unsigned long umem(struct kunit *test, size_t len, u8 seed)
{
	unsigned long uaddr;
	u8 *buf;
	size_t i;

	uaddr = kunit_vm_mmap(test, NULL, 0, len, PROT_READ | PROT_WRITE,
			      MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(uaddr));
	buf = kunit_kmalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < len; i++)
		buf[i] = seed + i * 7;
	KUNIT_ASSERT_EQ(test, copy_to_user((void __user *)uaddr, buf, len), 0);
	kunit_kfree(test, buf);
	return uaddr;
}

static struct softmr_mr *reg(struct mr_env *e, u64 start, u64 len, u64 iova,
			     int access, int *err)
{
	struct ib_mr *ibmr = softmr_reg_user_mr(e->pd, start, len, iova, access,
						NULL);

	*err = PTR_ERR_OR_ZERO(ibmr);
	return IS_ERR(ibmr) ? NULL : to_smr(ibmr);
}

static struct softmr_mr *reg_ok(struct kunit *test, struct mr_env *e,
				u64 start, u64 len, u64 iova, int access)
{
	int err;
	struct softmr_mr *mr = reg(e, start, len, iova, access, &err);

	KUNIT_ASSERT_EQ(test, err, 0);
	return mr;
}

/**
 * softmr_kunit_dontneed() - MADV_DONTNEED on memory of the test's mm
 * @addr: start, page aligned
 * @len: bytes
 *
 * Built into the kernel (UML) this is do_madvise(); in softmr.ko (the
 * debug kernel under QEMU), where do_madvise() is not exported, it is
 * what MADV_DONTNEED does to each VMA: zap_page_range_single() under the
 * mmap read lock (the range may span VMAs; a hole ends it).
 *
 * Return: 0, or -ENOMEM if part of the range is not mapped.
 */
int softmr_kunit_dontneed(unsigned long addr, size_t len)
{
#ifdef MODULE
	struct mm_struct *mm = current->mm;
	unsigned long end = addr + len;
	struct vm_area_struct *vma;
	int err = 0;

	mmap_read_lock(mm);
	while (addr < end) {
		vma = vma_lookup(mm, addr);
		if (!vma) {
			err = -ENOMEM;
			break;
		}
		zap_page_range_single(vma, addr, min(end, vma->vm_end) - addr,
				      NULL);
		addr = min(end, vma->vm_end);
	}
	mmap_read_unlock(mm);
	return err;
#else
	return do_madvise(current->mm, addr, len, MADV_DONTNEED);
#endif
}

/* Keys in the device's table: every MR that exists, nothing else. */
static int mr_xa_entries(struct mr_env *e)
{
	unsigned long index;
	void *entry;
	int n = 0;

	xa_for_each(&e->sdev->mr_xa, index, entry)
		n++;
	return n;
}

static u64 counter(struct mr_env *e, enum softmr_counter c)
{
	return softmr_counter_read(e->sdev, c);
}

static bool user_equals(unsigned long uaddr, const void *buf, size_t len)
{
	void *tmp = kmalloc(len, GFP_KERNEL);
	bool eq;

	if (!tmp || copy_from_user(tmp, (void __user *)uaddr, len)) {
		kfree(tmp);
		return false;
	}
	eq = !memcmp(tmp, buf, len);
	kfree(tmp);
	return eq;
}

static void softmr_test_pinned_copy(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt30");
	unsigned long u = umem(test, 3 * PAGE_SIZE, 3);
	u64 start = u + 100, len = 2 * PAGE_SIZE;
	struct softmr_mr *mr;
	u8 *buf, *exp;

	buf = kunit_kzalloc(test, len, GFP_KERNEL);
	exp = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_NOT_NULL(test, exp);
	KUNIT_ASSERT_EQ(test, copy_from_user(exp, (void __user *)start, len), 0);

	mr = reg_ok(test, e, start, len, start, RW);
	KUNIT_EXPECT_EQ(test, mr->kind, SOFTMR_MR_PINNED);
	KUNIT_EXPECT_EQ(test, mr->ibmr.lkey, mr->ibmr.rkey);
	KUNIT_EXPECT_NE(test, mr->ibmr.lkey >> SOFTMR_MR_KEY_BITS, 0);
	KUNIT_EXPECT_EQ(test, mr->npages, 3);

	/* read the whole MR, across page boundaries */
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, start, buf, len,
					     SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, memcmp(buf, exp, len), 0);

	/* write 1000 bytes straddling a page boundary */
	memset(buf, 0x5a, 1000);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, start + PAGE_SIZE - 600, buf,
					     1000, SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), 0);
	KUNIT_EXPECT_TRUE(test, user_equals(start + PAGE_SIZE - 600, buf,
					    1000));
	/* bytes around it untouched */
	KUNIT_EXPECT_TRUE(test, user_equals(start, exp, PAGE_SIZE - 600));

	/* bounds and permissions */
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, start - 1, buf, 2,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, start + len - 1, buf, 2,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, U64_MAX - 1, buf, 4,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, start, buf, 8,
					     SOFTMR_FROM_MR,
					     IB_ACCESS_REMOTE_ATOMIC), -EACCES);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, start + len, buf, 0,
					     SOFTMR_FROM_MR, 0), 0);

	softmr_dereg_mr(&mr->ibmr, NULL);
}

static void softmr_test_read_only_mr(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt31");
	unsigned long u = umem(test, PAGE_SIZE, 9);
	struct softmr_mr *mr = reg_ok(test, e, u, PAGE_SIZE, u, 0);
	u8 b[8] = {};

	/* local read is always allowed, writes need LOCAL_WRITE */
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u, b, 8, SOFTMR_FROM_MR, 0),
			0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u, b, 8, SOFTMR_TO_MR, 0),
			-EACCES);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u, b, 8, SOFTMR_FROM_MR,
					     IB_ACCESS_REMOTE_READ), -EACCES);
	softmr_dereg_mr(&mr->ibmr, NULL);
}

static void softmr_test_iova_zero_based(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt32");
	unsigned long u = umem(test, 2 * PAGE_SIZE, 1);
	u64 start = u + 64, iova = 0x7000000000ULL + 64;
	struct softmr_mr *mr;
	u8 a[32], b[32];

	KUNIT_ASSERT_EQ(test, copy_from_user(b, (void __user *)start + 10, 32),
			0);
	mr = reg_ok(test, e, start, PAGE_SIZE, iova, RW);
	KUNIT_EXPECT_EQ(test, mr->ibmr.iova, iova);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, iova + 10, a, 32,
					     SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, memcmp(a, b, 32), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, start + 10, a, 32,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	softmr_dereg_mr(&mr->ibmr, NULL);

	/* ZERO_BASED: byte offsets from the MR's first byte */
	mr = reg_ok(test, e, start, PAGE_SIZE, start, RW | IB_ZERO_BASED);
	KUNIT_EXPECT_EQ(test, mr->ibmr.iova, 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, 10, a, 32, SOFTMR_FROM_MR,
					     0), 0);
	KUNIT_EXPECT_EQ(test, memcmp(a, b, 32), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, PAGE_SIZE - 8, a, 16,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	softmr_dereg_mr(&mr->ibmr, NULL);
}

static void softmr_test_reg_errors(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt33");
	unsigned long u = umem(test, PAGE_SIZE, 1);
	unsigned long hole;
	int err;

	KUNIT_EXPECT_NULL(test, reg(e, u, PAGE_SIZE, u, 1 << 30, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, reg(e, u, PAGE_SIZE, u,
				    IB_ACCESS_REMOTE_WRITE, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, reg(e, u, PAGE_SIZE, u,
				    IB_ACCESS_REMOTE_ATOMIC, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, reg(e, u, 0, u, RW, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, reg(e, U64_MAX - 100, 4096, U64_MAX - 100, RW,
				    &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, reg(e, u, PAGE_SIZE, U64_MAX - 10, RW, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, reg(e, u, SOFTMR_MAX_MR_SIZE + PAGE_SIZE, u, RW,
				    &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, reg(e, u, PAGE_SIZE, u + 8, RW, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, reg(e, u, PAGE_SIZE, u,
				    RW | IB_ACCESS_HUGETLB, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	/* implicit ODP: no HUGETLB, no iova */
	KUNIT_EXPECT_NULL(test, reg(e, 0, U64_MAX, 0,
				    RW | IB_ACCESS_ON_DEMAND |
				    IB_ACCESS_HUGETLB, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	/* ODP HUGETLB on memory that is not hugetlb */
	KUNIT_EXPECT_NULL(test, reg(e, u, PAGE_SIZE, u,
				    RW | IB_ACCESS_ON_DEMAND |
				    IB_ACCESS_HUGETLB, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);

	/* memory that is not mapped cannot be pinned */
	hole = umem(test, PAGE_SIZE, 0);
	KUNIT_ASSERT_EQ(test, vm_munmap(hole, PAGE_SIZE), 0);
	KUNIT_EXPECT_NULL(test, reg(e, hole, PAGE_SIZE, hole, RW, &err));
	KUNIT_EXPECT_EQ(test, err, -EFAULT);

	KUNIT_EXPECT_EQ(test, atomic_read(&e->sdev->mr_count), e->mr_base);
	KUNIT_EXPECT_EQ(test, mr_xa_entries(e), e->mr_base);
}

static void softmr_test_keys(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt34");
	unsigned long u = umem(test, PAGE_SIZE, 1);
	struct softmr_mr *mr, *got;
	u32 keys[32];
	int i, j;

	for (i = 0; i < 32; i++) {
		mr = reg_ok(test, e, u, PAGE_SIZE, u, RW);
		keys[i] = mr->ibmr.lkey;
		got = softmr_mr_get(e->sdev, keys[i]);
		KUNIT_EXPECT_PTR_EQ(test, got, mr);
		if (got)
			softmr_mr_put(got);
		/* a key differing in the random part does not match */
		KUNIT_EXPECT_NULL(test, softmr_mr_get(e->sdev, keys[i] ^ 0x5));
		softmr_dereg_mr(&mr->ibmr, NULL);
		/* a stale key finds nothing */
		KUNIT_EXPECT_NULL(test, softmr_mr_get(e->sdev, keys[i]));
	}
	for (i = 0; i < 32; i++)
		for (j = 0; j < i; j++)
			KUNIT_EXPECT_NE(test, keys[i], keys[j]);
}

struct dereg_ctx {
	struct softmr_mr *mr;
	struct completion done;
};

static int softmr_dereg_thread(void *data)
{
	struct dereg_ctx *c = data;

	softmr_dereg_mr(&c->mr->ibmr, NULL);
	complete(&c->done);
	return 0;
}

/*
 * The engine's key cache (softmr_key_cache_get(), through
 * softmr_sgl_resolve()): an entry is kept only when the access passed its
 * checks (PD, range) and forgotten when one fails; a dereg waits for the
 * cache, and from its start the cache hands the MR out no more.
 */
static void softmr_test_key_cache(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt3a");
	unsigned long u = umem(test, PAGE_SIZE, 1);
	struct softmr_key_cache kc = {};
	struct softmr_sge sge = { .addr = u, .length = 64 };
	struct softmr_mr *mr, *got;
	struct softmr_sgl *sgl;
	struct task_struct *t;
	struct dereg_ctx *c;
	unsigned long left;
	int i;

	sgl = kunit_kzalloc(test, sizeof(*sgl), GFP_KERNEL);
	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, sgl);
	KUNIT_ASSERT_NOT_NULL(test, c);
	mr = reg_ok(test, e, u, PAGE_SIZE, u, RW);
	sge.lkey = mr->ibmr.lkey;

	/* another PD: refused, not kept */
	KUNIT_EXPECT_EQ(test, softmr_sgl_resolve(e->sdev, NULL, &sge, 1, 0, sgl,
						 &kc), IB_WC_LOC_PROT_ERR);
	softmr_sgl_release(sgl);
	KUNIT_EXPECT_NULL(test, kc.mr);
	/* passed: kept, and found again */
	for (i = 0; i < 2; i++) {
		KUNIT_EXPECT_EQ(test, softmr_sgl_resolve(e->sdev, e->pd, &sge, 1,
							 0, sgl, &kc),
				IB_WC_SUCCESS);
		KUNIT_EXPECT_PTR_EQ(test, sgl->mr[0], mr);
		softmr_sgl_release(sgl);
		KUNIT_EXPECT_PTR_EQ(test, kc.mr, mr);
	}
	/* out of range through the cached entry: refused, forgotten */
	sge.length = PAGE_SIZE + 1;
	KUNIT_EXPECT_EQ(test, softmr_sgl_resolve(e->sdev, e->pd, &sge, 1, 0, sgl,
						 &kc), IB_WC_LOC_PROT_ERR);
	softmr_sgl_release(sgl);
	KUNIT_EXPECT_NULL(test, kc.mr);
	sge.length = 64;
	KUNIT_EXPECT_EQ(test, softmr_sgl_resolve(e->sdev, e->pd, &sge, 1, 0, sgl,
						 &kc), IB_WC_SUCCESS);
	softmr_sgl_release(sgl);
	KUNIT_EXPECT_PTR_EQ(test, kc.mr, mr);
	/* a key differing in the random part: nothing, the cache kept */
	KUNIT_EXPECT_NULL(test, softmr_key_cache_get(&kc, e->sdev,
						     sge.lkey ^ 0x5, false));
	KUNIT_EXPECT_PTR_EQ(test, kc.mr, mr);

	c->mr = mr;
	init_completion(&c->done);
	t = kthread_run(softmr_dereg_thread, c, "softmr_kt_dereg");
	if (IS_ERR(t)) {
		softmr_key_cache_drop(&kc);
		softmr_dereg_mr(&mr->ibmr, NULL);
		KUNIT_FAIL(test, "kthread_run: %ld", PTR_ERR(t));
		return;
	}
	for (i = 0; i < 2000 && softmr_mr_is_live(mr); i++)
		usleep_range(500, 1000);
	KUNIT_EXPECT_FALSE(test, softmr_mr_is_live(mr));
	msleep(20);
	KUNIT_EXPECT_FALSE(test, completion_done(&c->done));
	got = softmr_key_cache_get(&kc, e->sdev, sge.lkey, false);
	if (got)
		softmr_mr_put(got);
	/* dropped whatever happened above: the dereg can end */
	softmr_key_cache_drop(&kc);
	left = wait_for_completion_timeout(&c->done, 10 * HZ);
	KUNIT_EXPECT_NULL(test, got);
	KUNIT_EXPECT_GT(test, left, 0UL);
}

static void softmr_test_odp_invalidate(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt35");
	unsigned long u = umem(test, 4 * PAGE_SIZE, 11);
	struct softmr_mr *mr;
	u64 faults, inval;
	u8 *buf, *exp;

	buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	exp = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_NOT_NULL(test, exp);

	mr = reg_ok(test, e, u, 4 * PAGE_SIZE, u, RW | IB_ACCESS_ON_DEMAND);
	KUNIT_EXPECT_EQ(test, mr->kind, SOFTMR_MR_ODP);
	KUNIT_EXPECT_EQ(test, mr->odp->npages, 0);	/* nothing pinned */

	faults = counter(e, SOFTMR_CNT_ODP_FAULTS);
	KUNIT_ASSERT_EQ(test, copy_from_user(exp, (void __user *)u + PAGE_SIZE,
					     PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u + PAGE_SIZE, buf,
					     PAGE_SIZE, SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, memcmp(buf, exp, PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_ODP_FAULTS), faults + 1);
	/* mapped now: no new fault */
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u + PAGE_SIZE, buf, 64,
					     SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_ODP_FAULTS), faults + 1);

	/* a write faults for write and lands in the process's memory */
	memset(buf, 0xa5, 256);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u + 2 * PAGE_SIZE - 128, buf,
					     256, SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), 0);
	KUNIT_EXPECT_TRUE(test, user_equals(u + 2 * PAGE_SIZE - 128, buf,
					    256));

	/* MADV_DONTNEED invalidates; the next access faults a zero page */
	inval = counter(e, SOFTMR_CNT_ODP_INVALIDATIONS);
	KUNIT_ASSERT_EQ(test, softmr_kunit_dontneed(u + PAGE_SIZE, PAGE_SIZE),
			0);
	KUNIT_EXPECT_GT(test, counter(e, SOFTMR_CNT_ODP_INVALIDATIONS), inval);
	faults = counter(e, SOFTMR_CNT_ODP_FAULTS);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u + PAGE_SIZE, buf,
					     PAGE_SIZE, SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_ODP_FAULTS), faults + 1);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(buf, 0, PAGE_SIZE));

	/* munmap: the memory is gone from the address space */
	KUNIT_ASSERT_EQ(test, vm_munmap(u, 4 * PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, mr->odp->npages, 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u, buf, 16, SOFTMR_FROM_MR,
					     0), -EFAULT);
	softmr_dereg_mr(&mr->ibmr, NULL);
}

static void softmr_test_implicit(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt36");
	unsigned long u = umem(test, 2 * PAGE_SIZE, 5);
	u64 children, releases;
	struct softmr_mr *mr;
	u8 buf[100];

	children = counter(e, SOFTMR_CNT_IMPLICIT_CHILDREN);
	releases = counter(e, SOFTMR_CNT_IMPLICIT_CHILD_RELEASES);
	mr = reg_ok(test, e, 0, U64_MAX, 0, RW | IB_ACCESS_ON_DEMAND);
	KUNIT_EXPECT_EQ(test, mr->kind, SOFTMR_MR_IMPLICIT);
	KUNIT_EXPECT_TRUE(test, xa_empty(&mr->children));

	memset(buf, 0x3c, sizeof(buf));
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u + PAGE_SIZE - 50, buf,
					     sizeof(buf), SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), 0);
	KUNIT_EXPECT_TRUE(test, user_equals(u + PAGE_SIZE - 50, buf,
					    sizeof(buf)));
	KUNIT_EXPECT_GE(test, counter(e, SOFTMR_CNT_IMPLICIT_CHILDREN),
			children + 1);
	KUNIT_EXPECT_FALSE(test, xa_empty(&mr->children));

	/* unmapped: the child is released; access then fails */
	KUNIT_ASSERT_EQ(test, vm_munmap(u, 2 * PAGE_SIZE), 0);
	softmr_odp_flush();
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_IMPLICIT_CHILD_RELEASES),
			releases + (counter(e, SOFTMR_CNT_IMPLICIT_CHILDREN) -
				    children));
	KUNIT_EXPECT_TRUE(test, xa_empty(&mr->children));
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u, buf, 8, SOFTMR_FROM_MR, 0),
			-EFAULT);
	/* beyond the user address space */
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, TASK_SIZE + PAGE_SIZE, buf, 8,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	softmr_dereg_mr(&mr->ibmr, NULL);
}

static int advise(struct mr_env *e, struct ib_pd *pd, int advice, u32 flags,
		  u32 lkey, u64 addr, u32 len)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };

	return softmr_advise_mr(pd, advice, flags, &sge, 1, NULL);
}

static void softmr_test_advise(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt37");
	unsigned long u = umem(test, 8 * PAGE_SIZE, 2);
	const int P = IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH;
	const int PW = IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	const int NF = IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	const u32 F = IB_UVERBS_ADVISE_MR_FLAG_FLUSH;
	struct softmr_mr *odp, *ro, *pinned, *imp;
	struct ib_pd *pd2;
	u32 unused;
	int err;

	odp = reg_ok(test, e, u, 4 * PAGE_SIZE, u, RW | IB_ACCESS_ON_DEMAND);
	ro = reg_ok(test, e, u, 4 * PAGE_SIZE, u, IB_ACCESS_ON_DEMAND);
	pinned = reg_ok(test, e, u, PAGE_SIZE, u, RW);
	imp = reg_ok(test, e, 0, U64_MAX, 0, RW | IB_ACCESS_ON_DEMAND);

	/* synchronous prefetch maps the range */
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, PW, F, odp->ibmr.lkey, u,
				     2 * PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, odp->odp->npages, 2);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, P, F, imp->ibmr.lkey,
				     u + 4 * PAGE_SIZE, PAGE_SIZE), 0);
	KUNIT_EXPECT_FALSE(test, xa_empty(&imp->children));
	/* NO_FAULT maps only what is present */
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, NF, F, ro->ibmr.lkey, u,
				     4 * PAGE_SIZE), 0);

	/* ibv_advise_mr(3) errors */
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, PW, F, ro->ibmr.lkey, u, 64),
			-EPERM);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, P, F, pinned->ibmr.lkey, u, 64),
			-EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, P, F, odp->ibmr.lkey,
				     u + 3 * PAGE_SIZE, 2 * PAGE_SIZE),
			-EFAULT);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, P, F, odp->ibmr.lkey, u - 1, 2),
			-EFAULT);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, P, F, odp->ibmr.lkey ^ 0x1, u,
				     64), -ENOENT);
	unused = (odp->ibmr.lkey >> SOFTMR_MR_KEY_BITS) + 0x1000;
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, P, F,
				     unused << SOFTMR_MR_KEY_BITS, u, 64),
			-EFAULT);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, 99, F, odp->ibmr.lkey, u, 64),
			-EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, P, 2, odp->ibmr.lkey, u, 64),
			-EINVAL);
	pd2 = softmr_kunit_pd_alloc(e->sdev, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_EQ(test, advise(e, pd2, P, F, odp->ibmr.lkey, u, 64),
			-EPERM);
	softmr_kunit_pd_free(pd2);

	/* range no longer in the address space: EFAULT when synchronous */
	KUNIT_ASSERT_EQ(test, vm_munmap(u + 2 * PAGE_SIZE, 2 * PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, P, F, odp->ibmr.lkey,
				     u + 2 * PAGE_SIZE, 64), -EFAULT);

	/* asynchronous prefetch, then dereg at once: dereg waits for it */
	KUNIT_EXPECT_EQ(test, advise(e, e->pd, P, 0, odp->ibmr.lkey, u,
				     2 * PAGE_SIZE), 0);
	softmr_dereg_mr(&odp->ibmr, NULL);
	softmr_odp_flush();

	softmr_dereg_mr(&ro->ibmr, NULL);
	softmr_dereg_mr(&pinned->ibmr, NULL);
	softmr_dereg_mr(&imp->ibmr, NULL);
	KUNIT_EXPECT_EQ(test, atomic_read(&e->sdev->mr_count), e->mr_base);
}

static void softmr_test_rereg(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt38");
	unsigned long u = umem(test, 2 * PAGE_SIZE, 7);
	struct softmr_mr *mr, *nmr;
	struct ib_mr *ret;
	u8 b[16];
	u32 key;

	mr = reg_ok(test, e, u, PAGE_SIZE, u, IB_ACCESS_LOCAL_WRITE);
	key = mr->ibmr.lkey;
	/* access in place: same MR, same key, new permission */
	ret = softmr_rereg_user_mr(&mr->ibmr, IB_MR_REREG_ACCESS, 0, 0, 0,
				   RW, NULL, NULL);
	KUNIT_EXPECT_NULL(test, ret);
	KUNIT_EXPECT_EQ(test, mr->ibmr.lkey, key);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, u, b, 16, SOFTMR_FROM_MR,
					     IB_ACCESS_REMOTE_READ), 0);
	ret = softmr_rereg_user_mr(&mr->ibmr, IB_MR_REREG_ACCESS, 0, 0, 0,
				   IB_ACCESS_REMOTE_WRITE, NULL, NULL);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(ret), -EINVAL);
	ret = softmr_rereg_user_mr(&mr->ibmr, 1 << 5, 0, 0, 0, 0, NULL, NULL);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(ret), -EOPNOTSUPP);

	/* new translation: a new MR with a new key */
	ret = softmr_rereg_user_mr(&mr->ibmr, IB_MR_REREG_TRANS,
				   u + PAGE_SIZE, PAGE_SIZE, 0x1000, 0,
				   NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(ret));
	nmr = to_smr(ret);
	KUNIT_EXPECT_NE(test, nmr->ibmr.lkey, key);
	KUNIT_EXPECT_EQ(test, nmr->iova, 0x1000);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(nmr, 0x1000, b, 16,
					     SOFTMR_FROM_MR,
					     IB_ACCESS_REMOTE_READ), 0);
	KUNIT_EXPECT_TRUE(test, user_equals(u + PAGE_SIZE, b, 16));
	softmr_dereg_mr(&nmr->ibmr, NULL);
	softmr_dereg_mr(&mr->ibmr, NULL);
}

/*
 * Gaining write access never reuses pages pinned read-only: a read-only
 * MR over memory the user may not write (here a PROT_READ mapping, whose
 * read-only pin is the shared zero page) cannot be made writable; one
 * over writable memory is pinned again for writing (a new MR, new keys).
 */
static void softmr_test_rereg_write_repins(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt3a");
	unsigned long u = umem(test, PAGE_SIZE, 9);
	unsigned long ro;
	struct softmr_mr *mr, *nmr;
	struct ib_mr *ret;
	u8 b[16] = { 0x5a };
	u32 key;

	ro = kunit_vm_mmap(test, NULL, 0, PAGE_SIZE, PROT_READ,
			   MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(ro));
	mr = reg_ok(test, e, ro, PAGE_SIZE, ro, 0);
	key = mr->ibmr.lkey;
	ret = softmr_rereg_user_mr(&mr->ibmr, IB_MR_REREG_ACCESS, 0, 0, 0,
				   RW, NULL, NULL);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(ret), -EFAULT);
	/* unchanged: same key, still read-only */
	KUNIT_EXPECT_EQ(test, mr->ibmr.lkey, key);
	KUNIT_EXPECT_EQ(test, READ_ONCE(mr->access), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, ro, b, sizeof(b),
					     SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), -EACCES);
	softmr_dereg_mr(&mr->ibmr, NULL);

	/* writable memory registered read-only: pinned again for writing */
	mr = reg_ok(test, e, u, PAGE_SIZE, u, IB_ACCESS_REMOTE_READ);
	KUNIT_EXPECT_FALSE(test, mr->umem->writable);
	ret = softmr_rereg_user_mr(&mr->ibmr, IB_MR_REREG_ACCESS, 0, 0, 0,
				   RW, NULL, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(ret));
	nmr = to_smr(ret);
	KUNIT_EXPECT_NE(test, nmr->ibmr.lkey, mr->ibmr.lkey);
	KUNIT_EXPECT_TRUE(test, nmr->umem->writable);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(nmr, u, b, sizeof(b),
					     SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), 0);
	KUNIT_EXPECT_TRUE(test, user_equals(u, b, sizeof(b)));
	/* dropping write access again stays in place */
	KUNIT_EXPECT_NULL(test, softmr_rereg_user_mr(&nmr->ibmr,
						     IB_MR_REREG_ACCESS, 0, 0,
						     0, IB_ACCESS_REMOTE_READ,
						     NULL, NULL));
	softmr_dereg_mr(&nmr->ibmr, NULL);
	softmr_dereg_mr(&mr->ibmr, NULL);
}

/*
 * Touching unmapped space through an implicit MR leaves nothing behind:
 * the children such an access creates map nothing and are released.
 */
static void softmr_test_implicit_empty_children(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt3b");
	u64 len = 4 * SOFTMR_IMPLICIT_CHILD_SIZE;
	unsigned long u;
	struct softmr_mr *mr;

	u = kunit_vm_mmap(test, NULL, 0, len, PROT_READ | PROT_WRITE,
			  MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(u));
	KUNIT_ASSERT_EQ(test, vm_munmap(u, len), 0);

	mr = reg_ok(test, e, 0, U64_MAX, 0, RW | IB_ACCESS_ON_DEMAND);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd,
				     IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				     IB_UVERBS_ADVISE_MR_FLAG_FLUSH,
				     mr->ibmr.lkey, u, len), 0);
	softmr_odp_flush();
	KUNIT_EXPECT_TRUE(test, xa_empty(&mr->children));
	KUNIT_EXPECT_EQ(test, mr->imp_children, 0);
	softmr_dereg_mr(&mr->ibmr, NULL);
}

/*
 * An explicit ODP MR larger than one child maps its range through
 * children made on first access and clipped to its pages: registration
 * allocates no per-page array, data crosses a child boundary intact, and
 * an munmap releases the children.
 */
static void softmr_test_odp_chunked(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt3c");
	u64 len = SOFTMR_IMPLICIT_CHILD_SIZE + 3 * PAGE_SIZE;
	u64 map = len + 2 * PAGE_SIZE, iova0 = 1ULL << 40, b, off;
	u64 children, releases, charged;
	struct softmr_mr *mr, *small;
	unsigned long u, va;
	u8 *buf, *out;

	buf = kunit_kzalloc(test, 256, GFP_KERNEL);
	out = kunit_kzalloc(test, 256, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_NOT_NULL(test, out);
	u = kunit_vm_mmap(test, NULL, 0, map, PROT_READ | PROT_WRITE,
			  MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(u));
	va = u + PAGE_SIZE + 100;

	children = counter(e, SOFTMR_CNT_IMPLICIT_CHILDREN);
	releases = counter(e, SOFTMR_CNT_IMPLICIT_CHILD_RELEASES);
	charged = atomic64_read(&e->sdev->odp_pages);
	mr = reg_ok(test, e, va, len, iova0 + 100, RW | IB_ACCESS_ON_DEMAND);
	KUNIT_EXPECT_EQ(test, mr->kind, SOFTMR_MR_ODP);
	KUNIT_EXPECT_TRUE(test, softmr_odp_chunked(mr));
	KUNIT_EXPECT_TRUE(test, xa_empty(&mr->children));
	/* the whole range is charged at registration, as for one umem */
	KUNIT_EXPECT_EQ(test, atomic64_read(&e->sdev->odp_pages) - charged,
			(ALIGN(va + len, PAGE_SIZE) -
			 ALIGN_DOWN(va, PAGE_SIZE)) >> PAGE_SHIFT);
	/* one child's worth or less stays one umem */
	small = reg_ok(test, e, u, SOFTMR_IMPLICIT_CHILD_SIZE, u,
		       RW | IB_ACCESS_ON_DEMAND);
	KUNIT_EXPECT_FALSE(test, softmr_odp_chunked(small));
	softmr_dereg_mr(&small->ibmr, NULL);

	/* 256 bytes across the first child boundary inside the MR */
	b = ALIGN(va + 1, SOFTMR_IMPLICIT_CHILD_SIZE);
	KUNIT_ASSERT_LT(test, b + 128, va + len);
	off = b - 128 - va;
	memset(buf, 0x5e, 256);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, iova0 + 100 + off, buf, 256,
					     SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), 0);
	KUNIT_EXPECT_TRUE(test, user_equals(b - 128, buf, 256));
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_IMPLICIT_CHILDREN),
			children + 2);
	/* the last byte and the first: each in its clipped child */
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, iova0 + 100 + len - 1, out, 1,
					     SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, iova0 + 100, out, 1,
					     SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, iova0 + 100 + off, out, 256,
					     SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, memcmp(out, buf, 256), 0);
	/* bounds are the MR's, not its children's */
	KUNIT_EXPECT_NE(test, softmr_mr_copy(mr, iova0 + 100 + len - 1, out, 2,
					     SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, advise(e, e->pd,
				     IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				     IB_UVERBS_ADVISE_MR_FLAG_FLUSH,
				     mr->ibmr.lkey, iova0 + 100 + len - 64,
				     128), -EFAULT);

	/* munmap: every child goes, and access fails */
	KUNIT_ASSERT_EQ(test, vm_munmap(u, map), 0);
	softmr_odp_flush();
	KUNIT_EXPECT_TRUE(test, xa_empty(&mr->children));
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_IMPLICIT_CHILD_RELEASES),
			releases + (counter(e, SOFTMR_CNT_IMPLICIT_CHILDREN) -
				    children));
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, iova0 + 100 + off, out, 8,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	softmr_dereg_mr(&mr->ibmr, NULL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&e->sdev->odp_pages), charged);
}

/* Kernel users: a DMA MR reaches memory by the device's DMA addresses. */
static void softmr_test_dma_mr(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt39");
	struct device *dev = e->sdev->ibdev.dma_device;
	u8 *kbuf = kunit_kzalloc(test, 256, GFP_KERNEL);
	struct ib_mr *ibmr;
	dma_addr_t dma;
	u8 b[64];

	KUNIT_ASSERT_NOT_NULL(test, kbuf);
	ibmr = softmr_get_dma_mr(e->pd, IB_ACCESS_LOCAL_WRITE);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	dma = dma_map_single(dev, kbuf, 256, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, dma_mapping_error(dev, dma));
	memset(b, 0x77, sizeof(b));
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(to_smr(ibmr), dma + 100, b, 64,
					     SOFTMR_TO_MR, 0), 0);
	dma_unmap_single(dev, dma, 256, DMA_BIDIRECTIONAL);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(kbuf + 100, 0x77, 64));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(kbuf, 0, 100));
	softmr_dereg_mr(ibmr, NULL);
}

struct race_ctx {
	struct softmr_mr *mr;
	u64 iova;
	u64 len;
	atomic_t stop;
	int errors;
	int copies;
	struct completion done;
};

static int softmr_race_copier(void *data)
{
	struct race_ctx *rc = data;
	u8 *buf = kmalloc(rc->len, GFP_KERNEL);

	if (buf) {
		memset(buf, 0x6b, rc->len);
		while (!atomic_read(&rc->stop)) {
			if (softmr_mr_copy(rc->mr, rc->iova, buf, rc->len,
					   SOFTMR_TO_MR, 0))
				rc->errors++;
			rc->copies++;
			cond_resched();
		}
	}
	kfree(buf);
	complete(&rc->done);
	return 0;
}

/*
 * Copies racing invalidations: a kernel thread writes through an ODP MR
 * while the owner zaps the pages again and again.  Every copy succeeds
 * (it re-faults), lockdep and KASAN watch the locking, and a write after
 * the storm is what the process reads.
 */
static void softmr_test_odp_copy_vs_invalidate(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt40");
	unsigned long u = umem(test, 16 * PAGE_SIZE, 0);
	struct task_struct *t;
	struct race_ctx *rc;
	u8 *exp;
	int i;

	rc = kunit_kzalloc(test, sizeof(*rc), GFP_KERNEL);
	exp = kunit_kzalloc(test, 16 * PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rc);
	KUNIT_ASSERT_NOT_NULL(test, exp);
	rc->mr = reg_ok(test, e, u, 16 * PAGE_SIZE, u,
			RW | IB_ACCESS_ON_DEMAND);
	rc->iova = u;
	rc->len = 16 * PAGE_SIZE;
	init_completion(&rc->done);

	t = kthread_run(softmr_race_copier, rc, "softmr-race");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	/* the storm starts once the copier mapped the pages (slow under TCG) */
	for (i = 0; i < 2000 && !READ_ONCE(rc->copies); i++)
		usleep_range(1000, 2000);
	for (i = 0; i < 200; i++) {
		softmr_kunit_dontneed(u + (i % 16) * PAGE_SIZE,
				      4 * PAGE_SIZE);
		cond_resched();
	}
	atomic_set(&rc->stop, 1);
	wait_for_completion(&rc->done);

	KUNIT_EXPECT_EQ(test, rc->errors, 0);
	KUNIT_EXPECT_GT(test, rc->copies, 0);
	KUNIT_EXPECT_GT(test, counter(e, SOFTMR_CNT_ODP_INVALIDATIONS), 0);
	memset(exp, 0x6b, 16 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(rc->mr, u, exp, 16 * PAGE_SIZE,
					     SOFTMR_TO_MR, 0), 0);
	KUNIT_EXPECT_TRUE(test, user_equals(u, exp, 16 * PAGE_SIZE));
	softmr_dereg_mr(&rc->mr->ibmr, NULL);
}

/*
 * MR to MR between ODP MRs (the engine's RDMA data path): an explicit ODP
 * source into an implicit MR's cold chunk faults both sides and makes one
 * child, which stays; the same transfer again faults nothing (both locks
 * taken, every page found mapped), nor does one within a single MR once
 * its pages are mapped for it; after MADV_DONTNEED of the destination only
 * that side faults again; memory gone from the mm is the source's
 * (-EFAULT) or the destination's (-ENXIO) error.
 */
/* Four pages of an eight-page mapping within one 1 MiB transfer piece. */
static unsigned long window(unsigned long u)
{
	if ((u + 4 * PAGE_SIZE - 1) / SZ_1M != u / SZ_1M)
		return ALIGN(u, SZ_1M);
	return u;
}

static void softmr_test_odp_xfer(struct kunit *test)
{
	struct mr_env *e = env(test, "softmr_kt3d");
	size_t len = 3 * PAGE_SIZE;
	unsigned long ms = umem(test, 8 * PAGE_SIZE, 23);
	unsigned long md = umem(test, 8 * PAGE_SIZE, 0);
	unsigned long us = window(ms), ud = window(md);
	u64 faults, children, releases;
	struct softmr_mr *src, *dst;
	u8 *exp;

	exp = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, exp);
	KUNIT_ASSERT_EQ(test, copy_from_user(exp, (void __user *)us + 100,
					     len), 0);
	/* the destination's pages are not yet in its mm at all */
	KUNIT_ASSERT_EQ(test, softmr_kunit_dontneed(ud, 4 * PAGE_SIZE), 0);
	src = reg_ok(test, e, us, 4 * PAGE_SIZE, us, RW | IB_ACCESS_ON_DEMAND);
	dst = reg_ok(test, e, 0, U64_MAX, 0, RW | IB_ACCESS_ON_DEMAND);
	KUNIT_EXPECT_EQ(test, src->kind, SOFTMR_MR_ODP);
	KUNIT_EXPECT_EQ(test, dst->kind, SOFTMR_MR_IMPLICIT);

	faults = counter(e, SOFTMR_CNT_ODP_FAULTS);
	children = counter(e, SOFTMR_CNT_IMPLICIT_CHILDREN);
	releases = counter(e, SOFTMR_CNT_IMPLICIT_CHILD_RELEASES);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(dst, ud + 50, src, us + 100, len),
			0);
	KUNIT_EXPECT_TRUE(test, user_equals(ud + 50, exp, len));
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_ODP_FAULTS), faults + 2);
	softmr_odp_flush();
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_IMPLICIT_CHILDREN),
			children + 1);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_IMPLICIT_CHILD_RELEASES),
			releases);

	/* the steady state: nothing faults */
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(dst, ud + 50, src, us + 100, len),
			0);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_ODP_FAULTS), faults + 2);
	/*
	 * within one MR: the last page, mapped for reading so far, faults
	 * for writing; then the same copy again faults nothing
	 */
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(src, us + 3 * PAGE_SIZE + 200,
					     src, us + 100, 256), 0);
	KUNIT_EXPECT_TRUE(test, user_equals(us + 3 * PAGE_SIZE + 200, exp,
					    256));
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_ODP_FAULTS), faults + 3);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(src, us + 3 * PAGE_SIZE + 200,
					     src, us + 100, 256), 0);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_ODP_FAULTS), faults + 3);

	/* the destination invalidated: it alone faults, the data lands */
	KUNIT_ASSERT_EQ(test, softmr_kunit_dontneed(ud, 4 * PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(dst, ud + 50, src, us + 100, len),
			0);
	KUNIT_EXPECT_TRUE(test, user_equals(ud + 50, exp, len));
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_ODP_FAULTS), faults + 4);

	/* gone from the mm: the side that is gone answers */
	KUNIT_ASSERT_EQ(test, vm_munmap(md, 8 * PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(dst, ud + 50, src, us + 100, len),
			-ENXIO);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(src, us + 100, dst, ud + 50, len),
			-EFAULT);
	KUNIT_ASSERT_EQ(test, vm_munmap(ms, 8 * PAGE_SIZE), 0);
	softmr_dereg_mr(&dst->ibmr, NULL);
	softmr_dereg_mr(&src->ibmr, NULL);
}

static struct kunit_case softmr_mr_cases[] = {
	KUNIT_CASE(softmr_test_pinned_copy),
	KUNIT_CASE(softmr_test_read_only_mr),
	KUNIT_CASE(softmr_test_iova_zero_based),
	KUNIT_CASE(softmr_test_reg_errors),
	KUNIT_CASE(softmr_test_keys),
	KUNIT_CASE(softmr_test_key_cache),
	KUNIT_CASE(softmr_test_odp_invalidate),
	KUNIT_CASE(softmr_test_implicit),
	KUNIT_CASE(softmr_test_advise),
	KUNIT_CASE(softmr_test_rereg),
	KUNIT_CASE(softmr_test_rereg_write_repins),
	KUNIT_CASE(softmr_test_implicit_empty_children),
	KUNIT_CASE(softmr_test_odp_chunked),
	KUNIT_CASE(softmr_test_dma_mr),
	KUNIT_CASE(softmr_test_odp_copy_vs_invalidate),
	KUNIT_CASE(softmr_test_odp_xfer),
	{}
};

static struct kunit_suite softmr_mr_suite = {
	.name = "softmr_mr",
	.test_cases = softmr_mr_cases,
};

kunit_test_suite(softmr_mr_suite);
