// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr device memory as an RDMA target and source: a DM MR
 * (ibv_reg_dm_mr, zero based) receives RDMA WRITEs and SENDs, serves RDMA
 * READs, takes both atomics and is the local side of a write, with the
 * data checked through ibv_memcpy_from_dm() / _to_dm(); a DM MR without
 * remote access gives IBV_WC_REM_ACCESS_ERR and leaves the memory alone.
 *
 * usage: softmr_dm_traffic DEV
 */

#include <stdint.h>
#include <stdlib.h>

#define BUF	(1 << 16)
#include "softmr_qp_util.h"

#define RW	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_send_wr rdma_wr(uint64_t id, enum ibv_wr_opcode op,
				  struct ibv_sge *sge, uint64_t raddr,
				  uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = sge, .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return wr;
}

static int done(struct ibv_cq *cq, uint64_t id, enum ibv_wc_status want)
{
	struct ibv_wc wc;

	if (wait_wc(cq, &wc))
		return 0;
	if (wc.wr_id != id || wc.status != want) {
		printf("  wr %llu: %s\n", (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status));
		return 0;
	}
	return 1;
}

static void test_dm_traffic(void)
{
	struct ibv_alloc_dm_attr da = { .length = BUF };
	uint8_t *plain = calloc(1, BUF), *back = calloc(1, BUF);
	struct ibv_mr *pm = NULL, *dmr = NULL, *ro = NULL;
	struct end a = {}, b = {};
	struct ibv_send_wr wr;
	struct ibv_sge s, r;
	struct ibv_wc wc;
	struct ibv_dm *dm;
	uint64_t v;

	dm = ibv_alloc_dm(ctx, &da);
	CHECK(dm && plain && back, "alloc_dm: %s", strerror(errno));
	if (!dm)
		goto out;
	pm = ibv_reg_mr(pd, plain, BUF, RW);
	dmr = ibv_reg_dm_mr(pd, dm, 0, BUF, RW | IBV_ACCESS_ZERO_BASED);
	ro = ibv_reg_dm_mr(pd, dm, 0, 4096, IBV_ACCESS_ZERO_BASED);
	CHECK(pm && dmr && ro, "MRs: %s", strerror(errno));
	if (!pm || !dmr || !ro || make_rc_pair(&a, &b, RW, 7)) {
		CHECK(0, "setup");
		goto out;
	}

	printf("-- RDMA WRITE into DM, RDMA READ out of it\n");
	fill(plain, BUF, 3);
	s = (struct ibv_sge){ (uintptr_t)plain, 5000, pm->lkey };
	wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &s, 100, dmr->rkey);
	CHECK(!post(a.qp, &wr) && done(a.cq, 1, IBV_WC_SUCCESS), "write");
	CHECK(!ibv_memcpy_from_dm(back, dm, 100, 5000) &&
	      !memcmp(back, plain, 5000), "DM holds the written bytes");
	memset(plain + 20000, 0, 5000);
	s = (struct ibv_sge){ (uintptr_t)plain + 20000, 5000, pm->lkey };
	wr = rdma_wr(2, IBV_WR_RDMA_READ, &s, 100, dmr->rkey);
	CHECK(!post(a.qp, &wr) && done(a.cq, 2, IBV_WC_SUCCESS), "read");
	CHECK(!memcmp(plain + 20000, plain, 5000), "read back from DM");

	printf("-- DM as the local side and as a receive buffer\n");
	memset(plain + 40000, 0, 4096);
	s = (struct ibv_sge){ 100, 4096, dmr->lkey };
	wr = rdma_wr(3, IBV_WR_RDMA_WRITE, &s, (uintptr_t)plain + 40000,
		     pm->rkey);
	CHECK(!post(a.qp, &wr) && done(a.cq, 3, IBV_WC_SUCCESS),
	      "write from DM");
	CHECK(!memcmp(plain + 40000, plain, 4096), "DM bytes arrived");
	r = (struct ibv_sge){ 30000, 2000, dmr->lkey };
	CHECK(!post_recv(b.qp, 40, &r, 1), "post_recv into DM");
	s = (struct ibv_sge){ (uintptr_t)plain + 7, 1500, pm->lkey };
	wr = rdma_wr(4, IBV_WR_SEND, &s, 0, 0);
	CHECK(!post(a.qp, &wr) && done(a.cq, 4, IBV_WC_SUCCESS), "send");
	CHECK(!wait_wc(b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 40 && wc.byte_len == 1500, "receive into DM");
	CHECK(!ibv_memcpy_from_dm(back, dm, 30000, 1500) &&
	      !memcmp(back, plain + 7, 1500), "DM holds the message");

	printf("-- atomics on DM\n");
	v = 1000;
	CHECK(!ibv_memcpy_to_dm(dm, 64, &v, sizeof(v)), "memcpy_to_dm");
	s = (struct ibv_sge){ (uintptr_t)plain + 60000, 8, pm->lkey };
	wr = rdma_wr(5, IBV_WR_ATOMIC_FETCH_AND_ADD, &s, 0, 0);
	wr.wr.atomic.remote_addr = 64;
	wr.wr.atomic.rkey = dmr->rkey;
	wr.wr.atomic.compare_add = 24;
	CHECK(!post(a.qp, &wr) && done(a.cq, 5, IBV_WC_SUCCESS), "fetch_add");
	CHECK(*(uint64_t *)(plain + 60000) == 1000, "fetch_add returned old");
	CHECK(!ibv_memcpy_from_dm(&v, dm, 64, 8) && v == 1024, "DM now 1024");
	wr.wr_id = 6;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 1024;
	wr.wr.atomic.swap = 7;
	CHECK(!post(a.qp, &wr) && done(a.cq, 6, IBV_WC_SUCCESS), "cmp_swap");
	CHECK(!ibv_memcpy_from_dm(&v, dm, 64, 8) && v == 7, "DM swapped to 7");

	printf("-- errors\n");
	s = (struct ibv_sge){ (uintptr_t)plain, 16, pm->lkey };
	wr = rdma_wr(7, IBV_WR_RDMA_WRITE, &s, 0, ro->rkey);
	CHECK(!post(a.qp, &wr) && done(a.cq, 7, IBV_WC_REM_ACCESS_ERR),
	      "write through a DM MR without remote write: REM_ACCESS_ERR");
	CHECK(!ibv_memcpy_from_dm(&v, dm, 64, 8) && v == 7,
	      "DM untouched");
out:
	free_end(&a);
	free_end(&b);
	if (ro)
		ibv_dereg_mr(ro);
	if (dmr)
		CHECK(!ibv_dereg_mr(dmr), "dereg DM MR");
	if (pm)
		ibv_dereg_mr(pm);
	if (dm)
		CHECK(!ibv_free_dm(dm), "free_dm");
	free(plain);
	free(back);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "softmr0";

	if (st_setup(dev))
		return 1;
	if (pd) {
		test_dm_traffic();
		CHECK(!ibv_dealloc_pd(pd), "dealloc PD");
	}
	ibv_close_device(ctx);
	return st_finish("softmr_dm_traffic");
}
