// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * In-kernel measurements for `make bench` (skipped unless the kernel runs
 * with softmr.bench=1): ODP fault cost per 4 KiB page, refault after
 * invalidation, registration cost of pinned, ODP and implicit MRs by
 * size, and the engine's cost per RDMA WRITE message.  They print
 * numbers; they assert only on correctness, never on time.
 */

#include <kunit/test.h>
#include <linux/ktime.h>
#include <linux/mman.h>
#include <linux/moduleparam.h>

#include "softmr_kunit.h"

static bool bench;
module_param(bench, bool, 0444);
MODULE_PARM_DESC(bench, "run softmr's KUnit measurements");

#define RW (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | \
	    IB_ACCESS_REMOTE_WRITE)

static struct ib_pd *bench_pd(struct kunit *test, const char *name)
{
	if (!bench)
		kunit_skip(test, "measurement: run with softmr.bench=1");
	return softmr_kunit_pd(test, softmr_kunit_dev_add(test, name,
							  init_net.loopback_dev));
}

static unsigned long bench_mmap(struct kunit *test, size_t len)
{
	unsigned long u = kunit_vm_mmap(test, NULL, 0, len,
					PROT_READ | PROT_WRITE,
					MAP_ANONYMOUS | MAP_PRIVATE, 0);

	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(u));
	return u;
}

static int prefetch_write(struct ib_pd *pd, struct ib_sge *sge)
{
	return softmr_advise_mr(pd, IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				IB_UVERBS_ADVISE_MR_FLAG_FLUSH, sge, 1, NULL);
}

static void softmr_bench_odp_fault(struct kunit *test)
{
	struct ib_pd *pd = bench_pd(test, "softmr_kb0");
	const unsigned long npages = 4096;	/* 16 MiB */
	struct ib_sge sge;
	struct ib_mr *ibmr;
	unsigned long u;
	u64 t0, fault_ns, refault_ns, touch_ns;
	unsigned long i;
	u8 b = 1;

	u = bench_mmap(test, npages * PAGE_SIZE);
	ibmr = softmr_reg_user_mr(pd, u, npages * PAGE_SIZE, u,
				  RW | IB_ACCESS_ON_DEMAND, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	sge = (struct ib_sge){ .addr = u, .length = npages * PAGE_SIZE,
			       .lkey = ibmr->lkey };

	/* first touch: hmm_range_fault allocates and maps every page */
	t0 = ktime_get_ns();
	KUNIT_ASSERT_EQ(test, prefetch_write(pd, &sge), 0);
	fault_ns = ktime_get_ns() - t0;

	/* pages present in the process, dropped from the MR: map again */
#ifndef MODULE	/* not exported to modules */
	do_madvise(current->mm, u, npages * PAGE_SIZE, MADV_COLD);
#endif
	KUNIT_ASSERT_EQ(test, softmr_kunit_dontneed(u, npages * PAGE_SIZE), 0);
	t0 = ktime_get_ns();
	KUNIT_ASSERT_EQ(test, prefetch_write(pd, &sge), 0);
	refault_ns = ktime_get_ns() - t0;

	/* the data path: one byte per page through the access API, faulting */
	KUNIT_ASSERT_EQ(test, softmr_kunit_dontneed(u, npages * PAGE_SIZE), 0);
	t0 = ktime_get_ns();
	for (i = 0; i < npages; i++)
		KUNIT_ASSERT_EQ(test, softmr_mr_copy(to_smr(ibmr),
						     u + i * PAGE_SIZE, &b, 1,
						     SOFTMR_TO_MR, 0), 0);
	touch_ns = ktime_get_ns() - t0;

	kunit_info(test, "bench: odp_prefetch_fault_ns_per_page %llu\n",
		   div_u64(fault_ns, npages));
	kunit_info(test, "bench: odp_prefetch_refault_ns_per_page %llu\n",
		   div_u64(refault_ns, npages));
	kunit_info(test, "bench: odp_access_fault_ns_per_page %llu\n",
		   div_u64(touch_ns, npages));
	softmr_dereg_mr(ibmr, NULL);
}

static void softmr_bench_reg_cost(struct kunit *test)
{
	static const unsigned long sizes[] = { 4096, 65536, 1 << 20, 16 << 20,
					       64 << 20 };
	struct ib_pd *pd = bench_pd(test, "softmr_kb1");
	static const struct { const char *name; int access; } kinds[] = {
		{ "pinned", RW },
		{ "odp", RW | IB_ACCESS_ON_DEMAND },
	};
	struct ib_mr *ibmr;
	unsigned int i, k;
	u64 t0, ns;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		unsigned long u = bench_mmap(test, sizes[i]);

		for (k = 0; k < ARRAY_SIZE(kinds); k++) {
			t0 = ktime_get_ns();
			ibmr = softmr_reg_user_mr(pd, u, sizes[i], u,
						  kinds[k].access, NULL);
			ns = ktime_get_ns() - t0;
			KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
			softmr_dereg_mr(ibmr, NULL);
			kunit_info(test, "bench: reg_ns %s %lu %llu\n",
				   kinds[k].name, sizes[i], ns);
		}
		vm_munmap(u, sizes[i]);
	}
	t0 = ktime_get_ns();
	ibmr = softmr_reg_user_mr(pd, 0, U64_MAX, 0, RW | IB_ACCESS_ON_DEMAND,
				  NULL);
	ns = ktime_get_ns() - t0;
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	softmr_dereg_mr(ibmr, NULL);
	kunit_info(test, "bench: reg_ns implicit any %llu\n", ns);
}

/*
 * The engine's cost per message: RDMA WRITEs between two kernel RC QPs of
 * one device, 16 WRs posted as a list, run in this thread
 * (softmr_qp_run()), their completions polled; by message size.
 */
static void softmr_bench_msg_cost(struct kunit *test)
{
	static const u32 sizes[] = { 64, 4096 };
	const unsigned int batch = 16, nmsg = 20000;
	struct softmr_eng_env *e;
	struct ib_rdma_wr *wr;
	struct ib_sge *sge;
	struct ib_wc *wc;
	unsigned int i, k, n, got, bad;
	u64 t0, ns;

	if (!bench)
		kunit_skip(test, "measurement: run with softmr.bench=1");
	wr = kunit_kcalloc(test, batch, sizeof(*wr), GFP_KERNEL);
	sge = kunit_kcalloc(test, batch, sizeof(*sge), GFP_KERNEL);
	wc = kunit_kcalloc(test, batch, sizeof(*wc), GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, wr && sge && wc);
	e = softmr_eng_env(test, "softmr_kb2", 7);
	for (k = 0; k < ARRAY_SIZE(sizes); k++) {
		softmr_eng_fill(e->abuf, SOFTMR_ENG_BUF, k + 1);
		memset(e->bbuf, 0, SOFTMR_ENG_BUF);
		for (i = 0; i < batch; i++) {
			sge[i] = (struct ib_sge){ .addr = e->adma,
						  .length = sizes[k],
						  .lkey = e->pd->local_dma_lkey };
			wr[i] = (struct ib_rdma_wr){
				.wr = { .wr_id = i, .opcode = IB_WR_RDMA_WRITE,
					.sg_list = &sge[i], .num_sge = 1,
					.send_flags = IB_SEND_SIGNALED,
					.next = i + 1 < batch ?
						&wr[i + 1].wr : NULL },
				.remote_addr = e->bdma,
				.rkey = e->pd->unsafe_global_rkey,
			};
		}
		bad = 0;
		t0 = ktime_get_ns();
		for (n = 0; n < nmsg; n += batch) {
			KUNIT_ASSERT_EQ(test, 0,
					ib_post_send(e->a, &wr[0].wr, NULL));
			softmr_qp_run(to_sqp(e->a));
			for (got = 0; got < batch; ) {
				int r = ib_poll_cq(e->cq, batch - got, wc);

				KUNIT_ASSERT_GE(test, r, 0);
				for (i = 0; i < r; i++)
					bad += wc[i].status != IB_WC_SUCCESS;
				got += r;
				if (!r)
					cond_resched();
			}
		}
		ns = ktime_get_ns() - t0;
		KUNIT_EXPECT_EQ(test, bad, 0);
		KUNIT_EXPECT_EQ(test, 0, memcmp(e->abuf, e->bbuf, sizes[k]));
		kunit_info(test, "bench: engine_write_ns_per_msg %u %llu\n",
			   sizes[k], div_u64(ns, nmsg));
	}
}

static struct kunit_case softmr_bench_cases[] = {
	KUNIT_CASE(softmr_bench_odp_fault),
	KUNIT_CASE(softmr_bench_reg_cost),
	KUNIT_CASE(softmr_bench_msg_cost),
	{}
};

static struct kunit_suite softmr_bench_suite = {
	.name = "softmr_bench",
	.test_cases = softmr_bench_cases,
};

kunit_test_suite(softmr_bench_suite);
