// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of the QP engine through the kernel verbs API, the way an
 * in-kernel ULP uses softmr: ib_alloc_pd(), ib_alloc_cq(), ib_create_qp(),
 * ib_modify_qp() and ib_post_send()/ib_post_recv() on kernel buffers mapped
 * with ib_dma_map_single().  Every operation's data is checked byte by
 * byte; error completions (remote access, remote invalid request, local
 * length, RNR retries exceeded) and the flush of outstanding work requests
 * are checked by status, opcode and QP state.
 */

#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/rtnetlink.h>
#include <rdma/ib_cache.h>

#include "softmr_kunit.h"

static void eng_release(void *data)
{
	struct softmr_eng_env *e = data;

	if (e->a)
		ib_destroy_qp(e->a);
	if (e->b)
		ib_destroy_qp(e->b);
	if (e->atomic_mr)
		softmr_dereg_mr(e->atomic_mr, NULL);
	if (e->cq)
		ib_free_cq(e->cq);
	if (e->adma)
		ib_dma_unmap_single(e->ibdev, e->adma, SOFTMR_ENG_BUF,
				    DMA_BIDIRECTIONAL);
	if (e->bdma)
		ib_dma_unmap_single(e->ibdev, e->bdma, SOFTMR_ENG_BUF,
				    DMA_BIDIRECTIONAL);
	if (e->pd)
		ib_dealloc_pd(e->pd);
	kfree(e->abuf);
	kfree(e->bbuf);
}

static void eng_lo_up(void)
{
	rtnl_lock();
	dev_open(init_net.loopback_dev, NULL);
	rtnl_unlock();
}

struct ib_qp *softmr_eng_qp(struct kunit *test, struct softmr_eng_env *e,
			    enum ib_qp_type type)
{
	struct ib_qp_init_attr ia = {
		.send_cq = e->cq,
		.recv_cq = e->cq,
		.qp_type = type,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = {
			.max_send_wr = 32, .max_recv_wr = 32,
			.max_send_sge = 4, .max_recv_sge = 4,
			.max_inline_data = 64,
		},
	};
	struct ib_qp *qp = ib_create_qp(e->pd, &ia);

	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(qp), "create_qp %d",
			       PTR_ERR_OR_ZERO(qp));
	KUNIT_EXPECT_GE(test, ia.cap.max_inline_data, 64);
	return qp;
}

/* RESET -> INIT -> RTR -> RTS, connected to @dqpn on the same GID. */
int softmr_eng_connect(struct softmr_eng_env *e, struct ib_qp *qp, u32 dqpn,
		       u8 rnr_retry, u8 min_rnr_timer)
{
	struct ib_qp_attr attr = {};
	int err;

	attr.qp_state = IB_QPS_INIT;
	attr.port_num = 1;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			       IB_ACCESS_REMOTE_ATOMIC;
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = dqpn;
	attr.rq_psn = 1;
	attr.max_dest_rd_atomic = 4;
	attr.min_rnr_timer = min_rnr_timer;
	attr.ah_attr.type = rdma_ah_find_type(e->ibdev, 1);
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, &e->gid, 0, 0, 1, 0);
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = rnr_retry;
	attr.sq_psn = e->sq_psn ?: 1;
	attr.max_rd_atomic = 4;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/*
 * Device, PD with an unsafe global rkey (remote read/write on kernel
 * memory), one CQ, two RC QPs connected to each other, two buffers.
 */
struct softmr_eng_env *softmr_eng_env(struct kunit *test, const char *name,
				      u8 rnr_retry)
{
	struct softmr_eng_env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, e);
	eng_lo_up();
	e->sdev = softmr_kunit_dev_add(test, name, init_net.loopback_dev);
	e->ibdev = &e->sdev->ibdev;
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, eng_release,
							   e));
	/* the default GID appears when ib_core's GID work has run */
	for (i = 0; i < SOFTMR_ENG_WAIT_MS; i++) {
		if (!rdma_query_gid(e->ibdev, 1, 0, &e->gid) &&
		    !rdma_is_zero_gid(&e->gid))
			break;
		usleep_range(500, 1000);
	}
	KUNIT_ASSERT_LT_MSG(test, i, SOFTMR_ENG_WAIT_MS, "no GID on port 1");

	e->pd = ib_alloc_pd(e->ibdev, IB_PD_UNSAFE_GLOBAL_RKEY);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e->pd));
	e->cq = ib_alloc_cq(e->ibdev, NULL, 256, 0, IB_POLL_DIRECT);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e->cq));
	e->abuf = kzalloc(SOFTMR_ENG_BUF, GFP_KERNEL);
	e->bbuf = kzalloc(SOFTMR_ENG_BUF, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, e->abuf);
	KUNIT_ASSERT_NOT_NULL(test, e->bbuf);
	e->adma = ib_dma_map_single(e->ibdev, e->abuf, SOFTMR_ENG_BUF,
				    DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(e->ibdev, e->adma));
	e->bdma = ib_dma_map_single(e->ibdev, e->bbuf, SOFTMR_ENG_BUF,
				    DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_FALSE(test, ib_dma_mapping_error(e->ibdev, e->bdma));

	e->a = softmr_eng_qp(test, e, IB_QPT_RC);
	e->b = softmr_eng_qp(test, e, IB_QPT_RC);
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, e->a, e->b->qp_num, rnr_retry, 1),
			0);
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, e->b, e->a->qp_num, rnr_retry, 1),
			0);
	return e;
}

/* Poll one completion, waiting for the engine's worker. */
bool softmr_eng_poll(struct softmr_eng_env *e, struct ib_wc *wc)
{
	int i;

	for (i = 0; i < SOFTMR_ENG_WAIT_MS; i++) {
		if (ib_poll_cq(e->cq, 1, wc) == 1)
			return true;
		usleep_range(500, 1000);
	}
	return false;
}

/* Poll completions until the one of @qp arrives; others must be success. */
bool softmr_eng_poll_qp(struct kunit *test, struct softmr_eng_env *e,
			struct ib_qp *qp, struct ib_wc *wc)
{
	while (softmr_eng_poll(e, wc)) {
		if (wc->qp == qp)
			return true;
		KUNIT_EXPECT_EQ(test, wc->status, IB_WC_SUCCESS);
	}
	return false;
}

int softmr_eng_send(struct softmr_eng_env *e, struct ib_qp *qp,
		    enum ib_wr_opcode op, u64 laddr, u32 len, u64 raddr,
		    u32 rkey, u64 wr_id)
{
	struct ib_sge sge = {
		.addr = laddr, .length = len, .lkey = e->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = wr_id, .opcode = op, .sg_list = &sge,
			.num_sge = len ? 1 : 0, .send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = raddr,
		.rkey = rkey,
	};

	return ib_post_send(qp, &wr.wr, NULL);
}

int softmr_eng_recv(struct softmr_eng_env *e, struct ib_qp *qp, u64 addr,
		    u32 len, u64 wr_id)
{
	struct ib_sge sge = {
		.addr = addr, .length = len, .lkey = e->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	};

	return ib_post_recv(qp, &wr, NULL);
}

void softmr_eng_fill(u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(seed + i * 7);
}

enum ib_qp_state softmr_eng_state(struct ib_qp *qp)
{
	struct ib_qp_init_attr ia;
	struct ib_qp_attr attr;

	if (ib_query_qp(qp, &attr, IB_QP_STATE, &ia))
		return -1;
	return attr.qp_state;
}

static void softmr_test_eng_write_read(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt70", 7);
	struct ib_wc wc;

	/* RDMA WRITE 5000 bytes from a[100] to b[1000] */
	softmr_eng_fill(e->abuf, SOFTMR_ENG_BUF, 3);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE,
					      e->adma + 100, 5000, e->bdma + 1000,
					      e->pd->unsafe_global_rkey, 1), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RDMA_WRITE);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 1);
	KUNIT_EXPECT_PTR_EQ(test, wc.qp, e->a);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf + 1000, e->abuf + 100, 5000), 0);
	KUNIT_EXPECT_EQ(test, e->bbuf[999], 0);
	KUNIT_EXPECT_EQ(test, e->bbuf[6000], 0);

	/* RDMA READ 3000 bytes of b[2000] into a[4000] */
	softmr_eng_fill(e->bbuf, SOFTMR_ENG_BUF, 99);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_READ,
					      e->adma + 4000, 3000, e->bdma + 2000,
					      e->pd->unsafe_global_rkey, 2), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RDMA_READ);
	KUNIT_EXPECT_EQ(test, wc.byte_len, 3000);
	KUNIT_EXPECT_EQ(test, memcmp(e->abuf + 4000, e->bbuf + 2000, 3000), 0);

	/* zero-length write: completes, touches nothing */
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, 0, 0, 0,
					      e->pd->unsafe_global_rkey, 3), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 3);
}

static void softmr_test_eng_send_imm(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt71", 7);
	struct ib_sge sge[3];
	struct ib_send_wr wr = {};
	struct ib_wc wc;
	int i;

	softmr_eng_fill(e->abuf, SOFTMR_ENG_BUF, 11);
	KUNIT_ASSERT_EQ(test, softmr_eng_recv(e, e->b, e->bdma + 8, 4096, 20), 0);
	/* three SGEs gathered into one receive */
	for (i = 0; i < 3; i++) {
		sge[i].addr = e->adma + i * 1000;
		sge[i].length = 100 * (i + 1);
		sge[i].lkey = e->pd->local_dma_lkey;
	}
	wr.wr_id = 10;
	wr.opcode = IB_WR_SEND_WITH_IMM;
	wr.ex.imm_data = cpu_to_be32(0xabcd1234);
	wr.sg_list = sge;
	wr.num_sge = 3;
	wr.send_flags = IB_SEND_SIGNALED | IB_SEND_SOLICITED;
	KUNIT_ASSERT_EQ(test, ib_post_send(e->a, &wr, NULL), 0);

	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->b, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RECV);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 20);
	KUNIT_EXPECT_EQ(test, wc.byte_len, 600);
	KUNIT_EXPECT_TRUE(test, wc.wc_flags & IB_WC_WITH_IMM);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(wc.ex.imm_data), 0xabcd1234);
	KUNIT_EXPECT_EQ(test, wc.src_qp, e->a->qp_num);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf + 8, e->abuf, 100), 0);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf + 108, e->abuf + 1000, 200), 0);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf + 308, e->abuf + 2000, 300), 0);

	/* inline send: the payload is copied at post time */
	KUNIT_ASSERT_EQ(test, softmr_eng_recv(e, e->b, e->bdma + 5000, 64, 21), 0);
	sge[0].addr = (u64)(uintptr_t)e->abuf + 50;
	sge[0].length = 40;
	wr.opcode = IB_WR_SEND;
	wr.num_sge = 1;
	wr.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE;
	wr.wr_id = 11;
	KUNIT_ASSERT_EQ(test, ib_post_send(e->a, &wr, NULL), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->b, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.byte_len, 40);
	KUNIT_EXPECT_FALSE(test, wc.wc_flags & IB_WC_WITH_IMM);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf + 5000, e->abuf + 50, 40), 0);

	/* write with immediate consumes a receive and reports the length */
	KUNIT_ASSERT_EQ(test, softmr_eng_recv(e, e->b, 0, 0, 22), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE_WITH_IMM,
					      e->adma, 700, e->bdma + 7000,
					      e->pd->unsafe_global_rkey, 12), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->b, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RECV_RDMA_WITH_IMM);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 22);
	KUNIT_EXPECT_EQ(test, wc.byte_len, 700);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf + 7000, e->abuf, 700), 0);
}

static void softmr_test_eng_atomics(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt72", 7);
	struct ib_sge sge = { .length = 8 };
	struct ib_atomic_wr wr = {};
	u64 *target = (u64 *)(e->bbuf + 64);
	u64 *result = (u64 *)(e->abuf + 8);
	struct ib_wc wc;

	e->atomic_mr = softmr_get_dma_mr(e->pd, IB_ACCESS_LOCAL_WRITE |
					 IB_ACCESS_REMOTE_ATOMIC);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e->atomic_mr));
	e->atomic_mr->device = e->ibdev;
	e->atomic_mr->pd = e->pd;

	*target = 1000;
	sge.addr = e->adma + 8;
	sge.lkey = e->pd->local_dma_lkey;
	wr.wr.opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.remote_addr = e->bdma + 64;
	wr.rkey = e->atomic_mr->rkey;
	wr.compare_add = 24;
	KUNIT_ASSERT_EQ(test, ib_post_send(e->a, &wr.wr, NULL), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_FETCH_ADD);
	KUNIT_EXPECT_EQ(test, *result, 1000);
	KUNIT_EXPECT_EQ(test, *target, 1024);

	/* compare and swap: a miss leaves the target, a hit swaps */
	wr.wr.opcode = IB_WR_ATOMIC_CMP_AND_SWP;
	wr.compare_add = 5;
	wr.swap = 77;
	KUNIT_ASSERT_EQ(test, ib_post_send(e->a, &wr.wr, NULL), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_COMP_SWAP);
	KUNIT_EXPECT_EQ(test, *result, 1024);
	KUNIT_EXPECT_EQ(test, *target, 1024);
	wr.compare_add = 1024;
	KUNIT_ASSERT_EQ(test, ib_post_send(e->a, &wr.wr, NULL), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, *result, 1024);
	KUNIT_EXPECT_EQ(test, *target, 77);

	/* the PD's global rkey has no REMOTE_ATOMIC: access error */
	wr.rkey = e->pd->unsafe_global_rkey;
	KUNIT_ASSERT_EQ(test, ib_post_send(e->a, &wr.wr, NULL), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_EQ(test, *target, 77);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->a), IB_QPS_ERR);
}

static void softmr_test_eng_misaligned_atomic(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt73", 7);
	struct ib_sge sge = { .length = 8 };
	struct ib_atomic_wr wr = {};
	struct ib_wc wc;

	e->atomic_mr = softmr_get_dma_mr(e->pd, IB_ACCESS_LOCAL_WRITE |
					 IB_ACCESS_REMOTE_ATOMIC);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e->atomic_mr));
	e->atomic_mr->device = e->ibdev;
	e->atomic_mr->pd = e->pd;
	sge.addr = e->adma;
	sge.lkey = e->pd->local_dma_lkey;
	wr.wr.opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.remote_addr = e->bdma + 4;	/* not 8-byte aligned */
	wr.rkey = e->atomic_mr->rkey;
	wr.compare_add = 1;
	KUNIT_ASSERT_EQ(test, ib_post_send(e->a, &wr.wr, NULL), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_NE(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, *(u64 *)e->bbuf, 0);
	KUNIT_EXPECT_EQ(test, *(u64 *)(e->bbuf + 8), 0);
}

/* A bad rkey fails the WR, moves the QP to error and flushes the rest. */
static void softmr_test_eng_rem_access_and_flush(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt74", 7);
	struct ib_wc wc;

	KUNIT_ASSERT_EQ(test, softmr_eng_recv(e, e->a, e->adma, 64, 30), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma, 64,
					      e->bdma, e->pd->unsafe_global_rkey ^
					      0x5a5a00, 31), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma, 64,
					      e->bdma, e->pd->unsafe_global_rkey, 32),
			0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.wr_id, 31);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_ACCESS_ERR);
	/* the rest of the SQ and the RQ flush, in order within each queue */
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	if (wc.wr_id == 30) {
		KUNIT_EXPECT_EQ(test, wc.status, IB_WC_WR_FLUSH_ERR);
		KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	}
	KUNIT_EXPECT_EQ(test, wc.wr_id, 32);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->a), IB_QPS_ERR);
	/* the remote buffer was not written */
	KUNIT_EXPECT_TRUE(test, !memchr_inv(e->bbuf, 0, 64));
	/* posting to a QP in error completes with a flush */
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma, 8,
					      e->bdma, e->pd->unsafe_global_rkey, 33),
			0);
	do {
		KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	} while (wc.wr_id == 30);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 33);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_WR_FLUSH_ERR);
}

/* Out of bounds of the remote buffer: REM_ACCESS; local lkey: LOC_PROT. */
static void softmr_test_eng_bounds(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt75", 7);
	struct ib_sge sge = { .addr = e->adma, .length = 16, .lkey = 0x123456 };
	struct ib_rdma_wr wr = {
		.wr = {
			.opcode = IB_WR_RDMA_WRITE, .sg_list = &sge,
			.num_sge = 1, .send_flags = IB_SEND_SIGNALED,
			.wr_id = 40,
		},
		.remote_addr = e->bdma,
		.rkey = e->pd->unsafe_global_rkey,
	};
	struct ib_wc wc;

	KUNIT_ASSERT_EQ(test, ib_post_send(e->a, &wr.wr, NULL), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.wr_id, 40);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_LOC_PROT_ERR);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->a), IB_QPS_ERR);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->b), IB_QPS_RTS);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(e->bbuf, 0, 64));

	/* b -> a: the remote address wraps around the end of memory */
	sge.lkey = e->pd->local_dma_lkey;
	wr.remote_addr = ~0ULL - 7;
	wr.wr.wr_id = 41;
	KUNIT_ASSERT_EQ(test, ib_post_send(e->b, &wr.wr, NULL), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->b, &wc));
	KUNIT_EXPECT_EQ(test, wc.wr_id, 41);
	KUNIT_EXPECT_NE(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->b), IB_QPS_ERR);
}

/* A receive too small: LOC_LEN at the responder, REM_INV_REQ at the sender. */
static void softmr_test_eng_recv_too_small(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt76", 7);
	struct ib_wc wc;
	bool got_a = false, got_b = false;
	int i;

	KUNIT_ASSERT_EQ(test, softmr_eng_recv(e, e->b, e->bdma, 100, 50), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_SEND, e->adma, 200, 0, 0,
					      51), 0);
	for (i = 0; i < 2; i++) {
		KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
		if (wc.qp == e->b) {
			got_b = true;
			KUNIT_EXPECT_EQ(test, wc.wr_id, 50);
			KUNIT_EXPECT_EQ(test, wc.status, IB_WC_LOC_LEN_ERR);
		} else {
			got_a = true;
			KUNIT_EXPECT_EQ(test, wc.wr_id, 51);
			KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_INV_REQ_ERR);
		}
	}
	KUNIT_EXPECT_TRUE(test, got_a && got_b);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->a), IB_QPS_ERR);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->b), IB_QPS_ERR);
}

/* No receive posted: rnr_retry 0 gives RNR_RETRY_EXC after one NAK. */
static void softmr_test_eng_rnr_exceeded(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt77", 0);
	struct ib_wc wc;

	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_SEND, e->adma, 10, 0, 0,
					      60), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.wr_id, 60);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_RNR_RETRY_EXC_ERR);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->a), IB_QPS_ERR);
	/* the responder is not at fault */
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->b), IB_QPS_RTS);
}

/* rnr_retry 7 waits forever: a receive posted later completes the send. */
static void softmr_test_eng_rnr_then_recv(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt78", 7);
	struct ib_wc wc;

	softmr_eng_fill(e->abuf, 64, 5);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_SEND, e->adma, 64, 0, 0,
					      70), 0);
	msleep(50);
	KUNIT_EXPECT_EQ(test, ib_poll_cq(e->cq, 1, &wc), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_recv(e, e->b, e->bdma, 64, 71), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, e->abuf, 64), 0);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(e->a), IB_QPS_RTS);
}

/* Moving a QP to ERR flushes every posted receive, in order. */
static void softmr_test_eng_flush_rq(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt79", 7);
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_wc wc;
	int i;

	for (i = 0; i < 5; i++)
		KUNIT_ASSERT_EQ(test, softmr_eng_recv(e, e->b, e->bdma, 64, 80 + i),
				0);
	KUNIT_ASSERT_EQ(test, ib_modify_qp(e->b, &attr, IB_QP_STATE), 0);
	for (i = 0; i < 5; i++) {
		KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
		KUNIT_EXPECT_EQ(test, wc.wr_id, 80 + i);
		KUNIT_EXPECT_EQ(test, wc.status, IB_WC_WR_FLUSH_ERR);
		KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RECV);
	}
	KUNIT_EXPECT_EQ(test, ib_poll_cq(e->cq, 1, &wc), 0);
	/* a sender to the dead QP sees it as a fatal remote error */
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_SEND, e->adma, 8, 0, 0,
					      90), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.wr_id, 90);
	KUNIT_EXPECT_NE(test, wc.status, IB_WC_SUCCESS);
}

/* Many WRs in one list: all complete, in order, the data in place. */
static void softmr_test_eng_wr_list(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt80", 7);
	struct ib_rdma_wr wr[16] = {};
	struct ib_sge sge[16];
	struct ib_wc wc;
	int i;

	softmr_eng_fill(e->abuf, SOFTMR_ENG_BUF, 42);
	for (i = 0; i < 16; i++) {
		sge[i].addr = e->adma + i * 256;
		sge[i].length = 256;
		sge[i].lkey = e->pd->local_dma_lkey;
		wr[i].wr.wr_id = 100 + i;
		wr[i].wr.opcode = IB_WR_RDMA_WRITE;
		wr[i].wr.sg_list = &sge[i];
		wr[i].wr.num_sge = 1;
		/* only the last is signaled; the QP signals all anyway */
		wr[i].wr.next = i < 15 ? &wr[i + 1].wr : NULL;
		wr[i].remote_addr = e->bdma + (15 - i) * 256;
		wr[i].rkey = e->pd->unsafe_global_rkey;
	}
	KUNIT_ASSERT_EQ(test, ib_post_send(e->a, &wr[0].wr, NULL), 0);
	for (i = 0; i < 16; i++) {
		KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
		KUNIT_EXPECT_EQ(test, wc.wr_id, 100 + i);
		KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	}
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_EQ(test, memcmp(e->bbuf + (15 - i) * 256,
					     e->abuf + i * 256, 256), 0);
}

/* Inline SGE lengths whose sum wraps 32 bits are refused, not copied. */
static void softmr_test_eng_inline_wrap(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt81", 7);
	struct ib_sge sge[2] = {
		{ .addr = (uintptr_t)e->abuf, .length = 0xfffffff0 },
		{ .addr = (uintptr_t)e->abuf, .length = 0x20 },
	};
	struct ib_send_wr wr = {
		.opcode = IB_WR_SEND, .sg_list = sge, .num_sge = 2,
		.send_flags = IB_SEND_INLINE | IB_SEND_SIGNALED,
	};
	const struct ib_send_wr *bad = NULL;
	struct ib_wc wc;

	KUNIT_EXPECT_EQ(test, ib_post_send(e->a, &wr, &bad), -EINVAL);
	KUNIT_EXPECT_PTR_EQ(test, bad, (const struct ib_send_wr *)&wr);
	msleep(20);
	KUNIT_EXPECT_EQ(test, ib_poll_cq(e->cq, 1, &wc), 0);
}

struct eng_timer {
	struct timer_list timer;
	struct softmr_eng_env *e;
	int err;
	bool done;
};

static void eng_recv_timer(struct timer_list *t)
{
	struct eng_timer *et = from_timer(et, t, timer);

	et->err = softmr_eng_recv(et->e, et->e->b, et->e->bdma, 64, 83);
	WRITE_ONCE(et->done, true);
}

/*
 * A kernel ULP may post receives in softirq context, where the RNR wake
 * takes the RNR lock; lockdep reports an inconsistent lock state if the
 * lock is ever taken with softirqs enabled elsewhere.  The sender waits
 * (RNR) while a timer posts the receive.
 */
static void softmr_test_eng_recv_in_softirq(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt82", 7);
	struct eng_timer et = { .e = e };
	struct ib_wc wc;
	int i;

	softmr_eng_fill(e->abuf, 64, 9);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_SEND, e->adma, 64, 0, 0,
					      82), 0);
	msleep(20);
	KUNIT_EXPECT_EQ(test, ib_poll_cq(e->cq, 1, &wc), 0);
	timer_setup_on_stack(&et.timer, eng_recv_timer, 0);
	mod_timer(&et.timer, jiffies + 1);
	for (i = 0; i < SOFTMR_ENG_WAIT_MS && !READ_ONCE(et.done); i++)
		usleep_range(500, 1000);
	del_timer_sync(&et.timer);
	destroy_timer_on_stack(&et.timer);
	KUNIT_ASSERT_TRUE(test, READ_ONCE(et.done));
	KUNIT_ASSERT_EQ(test, et.err, 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll(e, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, e->abuf, 64), 0);
}

/*
 * A QP being destroyed is never put on the RNR wait list (which holds no
 * reference): a run already in flight when destroy_qp starts must not
 * leave it there.
 */
static void softmr_test_eng_dying_not_rnr(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt83", 7);
	struct softmr_qp *qa = to_sqp(e->a);
	unsigned long flags;

	spin_lock_irqsave(&qa->state_lock, flags);
	qa->dying = true;
	spin_unlock_irqrestore(&qa->state_lock, flags);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_SEND, e->adma, 64, 0, 0,
					      84), 0);
	softmr_qp_run(qa);	/* as a doorbell write() in flight would */
	KUNIT_EXPECT_TRUE(test, list_empty_careful(&qa->rnr_entry));
}

/*
 * Only the connected partner reaches a QP: a QP that got the number of
 * the partner after it was destroyed (numbers are recycled), and a
 * requester whose PSN is not the responder's, are refused as a wire
 * responder would refuse them; the memory stays untouched.
 */
static void softmr_test_eng_partner_binding(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt84", 7);
	u32 rkey = e->pd->unsafe_global_rkey;
	struct ib_qp *c;
	struct ib_wc wc;
	u32 old_qpn;

	/* the pair talks: each end latches the other */
	softmr_eng_fill(e->abuf, 256, 1);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma, 64,
					      e->bdma, rkey, 1), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);

	/* A goes; C gets its number and connects to B like A was */
	old_qpn = e->a->qp_num;
	ib_destroy_qp(e->a);
	e->a = NULL;
	e->sdev->qp_next = old_qpn;
	c = softmr_eng_qp(test, e, IB_QPT_RC);
	e->a = c;	/* released with the env */
	KUNIT_ASSERT_EQ(test, c->qp_num, old_qpn);
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, c, e->b->qp_num, 7, 1), 0);
	memset(e->bbuf, 0, SOFTMR_ENG_BUF);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, c, IB_WR_RDMA_WRITE, e->adma, 64,
					      e->bdma, rkey, 2), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_RETRY_EXC_ERR);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(e->bbuf, 0, SOFTMR_ENG_BUF));

	/* B connected anew to C: now C is the partner, with matching PSNs */
	{
		struct ib_qp_attr attr = { .qp_state = IB_QPS_RESET };

		KUNIT_ASSERT_EQ(test, ib_modify_qp(e->b, &attr, IB_QP_STATE),
				0);
		KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, e->b, c->qp_num, 7, 1),
				0);
		attr.qp_state = IB_QPS_RESET;
		KUNIT_ASSERT_EQ(test, ib_modify_qp(c, &attr, IB_QP_STATE), 0);
		KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, c, e->b->qp_num, 7, 1),
				0);
	}
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, c, IB_WR_RDMA_WRITE, e->adma, 64,
					      e->bdma, rkey, 3), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, e->abuf, 64), 0);
}

static void softmr_eng_qp_release(void *qp)
{
	ib_destroy_qp(qp);
}

/*
 * The partner a requester checked is remembered (softmr_conn_cache) only
 * while neither end is connected anew: B, connected to C after A's
 * writes, is not A's partner any more, and A's next write is refused.
 */
static void softmr_test_eng_partner_cache(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt89", 7);
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RESET };
	u32 rkey = e->pd->unsafe_global_rkey;
	struct softmr_qp *qa = to_sqp(e->a);
	struct ib_qp *c;
	struct ib_wc wc;
	int i;

	for (i = 0; i < 3; i++) {
		softmr_eng_fill(e->abuf, 256, 10 + i);
		KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE,
						      e->adma, 64, e->bdma,
						      rkey, 10 + i), 0);
		KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
		KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
		KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, e->abuf, 64), 0);
	}
	/* the check was made once and remembered */
	KUNIT_EXPECT_EQ(test, qa->req->conn.peer_serial, to_sqp(e->b)->serial);

	c = softmr_eng_qp(test, e, IB_QPT_RC);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test,
							   softmr_eng_qp_release,
							   c));
	KUNIT_ASSERT_EQ(test, ib_modify_qp(e->b, &attr, IB_QP_STATE), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, e->b, c->qp_num, 7, 1), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, c, e->b->qp_num, 7, 1), 0);
	memset(e->bbuf, 0, SOFTMR_ENG_BUF);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma,
					      64, e->bdma, rkey, 20), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_RETRY_EXC_ERR);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(e->bbuf, 0, SOFTMR_ENG_BUF));
	KUNIT_EXPECT_EQ(test, qa->req->conn.peer_serial, 0);

	/* C, B's partner now, writes */
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, c, IB_WR_RDMA_WRITE, e->adma, 64,
					      e->bdma, rkey, 21), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, e->abuf, 64), 0);
}

/* A requester whose send PSN is not the responder's receive PSN is refused. */
static void softmr_test_eng_psn_mismatch(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt85", 7);
	u32 rkey = e->pd->unsafe_global_rkey;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RESET };
	struct ib_wc wc;

	KUNIT_ASSERT_EQ(test, ib_modify_qp(e->a, &attr, IB_QP_STATE), 0);
	e->sq_psn = 2;	/* B expects 1 */
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, e->a, e->b->qp_num, 7, 1), 0);
	memset(e->bbuf, 0, SOFTMR_ENG_BUF);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma, 64,
					      e->bdma, rkey, 5), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_RETRY_EXC_ERR);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(e->bbuf, 0, SOFTMR_ENG_BUF));
}

static struct kunit_case softmr_engine_cases[] = {
	KUNIT_CASE(softmr_test_eng_write_read),
	KUNIT_CASE(softmr_test_eng_send_imm),
	KUNIT_CASE(softmr_test_eng_atomics),
	KUNIT_CASE(softmr_test_eng_misaligned_atomic),
	KUNIT_CASE(softmr_test_eng_rem_access_and_flush),
	KUNIT_CASE(softmr_test_eng_bounds),
	KUNIT_CASE(softmr_test_eng_recv_too_small),
	KUNIT_CASE(softmr_test_eng_rnr_exceeded),
	KUNIT_CASE(softmr_test_eng_rnr_then_recv),
	KUNIT_CASE(softmr_test_eng_flush_rq),
	KUNIT_CASE(softmr_test_eng_wr_list),
	KUNIT_CASE(softmr_test_eng_inline_wrap),
	KUNIT_CASE(softmr_test_eng_recv_in_softirq),
	KUNIT_CASE(softmr_test_eng_dying_not_rnr),
	KUNIT_CASE(softmr_test_eng_partner_binding),
	KUNIT_CASE(softmr_test_eng_partner_cache),
	KUNIT_CASE(softmr_test_eng_psn_mismatch),
	{}
};

static struct kunit_suite softmr_engine_suite = {
	.name = "softmr_engine",
	.test_cases = softmr_engine_cases,
};

kunit_test_suite(softmr_engine_suite);
