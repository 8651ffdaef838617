/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * QP helpers shared by the VM tests that move data: a pair of connected RC
 * QPs on one device, posting and polling, and test_rc_ops(), which runs
 * every RC operation on one MR (whatever its kind) with the data verified.
 */
#ifndef SOFTMR_QP_UTIL_H
#define SOFTMR_QP_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <arpa/inet.h>

#include "softmr_test.h"
/* ibv_query_gid_type() */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <infiniband/driver.h>
#pragma GCC diagnostic pop

#ifndef BUF
#define BUF	(1 << 20)
#endif

static int gid_index;

struct end {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;

static inline int find_gid(void)
{
	union ibv_gid gid;
	int i;

	for (i = 0; i < 16; i++) {
		if (ibv_query_gid(ctx, 1, i, &gid))
			continue;
		if (gid.raw[10] == 0xff && gid.raw[11] == 0xff &&
		    gid.raw[12] == 127 && gid.raw[15] == 1) {
			enum ibv_gid_type_sysfs t;

			if (!ibv_query_gid_type(ctx, 1, i, &t) &&
			    t == IBV_GID_TYPE_SYSFS_ROCE_V2)
				return i;
		}
	}
	return -1;
}

/*
 * The start of every QP test: open @dev into ctx, find its RoCE v2 GID of
 * 127.0.0.1 into gid_index and allocate pd (both checked).  -1 (said) when
 * the device cannot be opened.
 */
static inline int st_setup(const char *dev)
{
	ctx = st_open_dev(dev);
	if (!ctx) {
		printf("cannot open %s\n", dev);
		return -1;
	}
	gid_index = find_gid();
	CHECK(gid_index >= 0, "RoCE v2 GID of 127.0.0.1");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "PD");
	return 0;
}

/* Poll one completion (5 s at most); 0 when one came. */
static inline int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n == 1 ? 0 : -1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			return -1;
	}
}

/* No completion arrives within 100 ms. */
static inline int no_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	usleep(100000);
	return ibv_poll_cq(cq, 1, &wc) == 0;
}

static inline int to_rts(struct ibv_qp *qp, uint32_t remote, int access,
			 int rnr_retry, int rnr_timer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = access,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = remote;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.grh.sgid_index = gid_index;
	if (ibv_query_gid(ctx, 1, gid_index, &a.ah_attr.grh.dgid))
		return -1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 16;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static inline int make_end(struct end *e, enum ibv_qp_type type,
			   struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
		.qp_type = type,
		.srq = srq,
		.cap = {
			.max_send_wr = 64, .max_recv_wr = 64,
			.max_send_sge = 4, .max_recv_sge = 4,
			.max_inline_data = 128,
		},
	};

	e->cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (!e->cq)
		return -1;
	init.send_cq = init.recv_cq = e->cq;
	e->qp = ibv_create_qp(pd, &init);
	return e->qp ? 0 : -1;
}

static inline void free_end(struct end *e)
{
	if (e->qp)
		CHECK(!ibv_destroy_qp(e->qp), "destroy qp");
	if (e->cq)
		CHECK(!ibv_destroy_cq(e->cq), "destroy cq");
	e->qp = NULL;
	e->cq = NULL;
}

/* Two RC QPs connected to each other, each asking for RNR waits of @timer. */
static inline int make_rc_pair_timer(struct end *a, struct end *b, int access,
				     int rnr_retry, int timer)
{
	if (make_end(a, IBV_QPT_RC, NULL) || make_end(b, IBV_QPT_RC, NULL))
		return -1;
	if (to_rts(a->qp, b->qp->qp_num, access, rnr_retry, timer) ||
	    to_rts(b->qp, a->qp->qp_num, access, rnr_retry, timer))
		return -1;
	return 0;
}

/* Two RC QPs connected to each other. */
static inline int make_rc_pair(struct end *a, struct end *b, int access,
			       int rnr_retry)
{
	return make_rc_pair_timer(a, b, access, rnr_retry, 1);
}

static inline int post_recv(struct ibv_qp *qp, uint64_t id, struct ibv_sge *sg,
			    int n)
{
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = sg, .num_sge = n };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static inline int post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	return ibv_post_send(qp, wr, &bad);
}

static inline void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

static inline int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &i))
		return -1;
	return a.qp_state;
}

static inline void test_rc_ops(struct ibv_mr *mr, uint8_t *buf,
			       const char *what)
{
	struct end a = {}, b = {};
	struct ibv_wc wc;
	struct ibv_sge ss[3], rs[2];
	struct ibv_send_wr wr;
	uint8_t *src = buf, *dst = buf + BUF / 2;
	uint64_t *atom;
	int i;

	printf("-- RC operations on %s MRs\n", what);
	if (make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC, 7)) {
		CHECK(0, "RC pair setup: %s", strerror(errno));
		return;
	}

	/* SEND_WITH_IMM, 3 SGEs gathered, 2 SGEs scattered */
	fill(src, 10000, 1);
	memset(dst, 0, 10000);
	rs[0] = (struct ibv_sge){ (uintptr_t)dst, 3000, mr->lkey };
	rs[1] = (struct ibv_sge){ (uintptr_t)dst + 5000, 5000, mr->lkey };
	CHECK(!post_recv(b.qp, 77, rs, 2), "post_recv");
	ss[0] = (struct ibv_sge){ (uintptr_t)src, 1000, mr->lkey };
	ss[1] = (struct ibv_sge){ (uintptr_t)src + 1000, 4000, mr->lkey };
	ss[2] = (struct ibv_sge){ (uintptr_t)src + 5000, 2500, mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = ss, .num_sge = 3,
				   .opcode = IBV_WR_SEND_WITH_IMM,
				   .send_flags = IBV_SEND_SIGNALED,
				   .imm_data = htonl(0x1234) };
	CHECK(!post(a.qp, &wr), "post_send SEND_WITH_IMM");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_SEND && wc.wr_id == 1 && wc.byte_len == 7500,
	      "send completion: %s op %d len %u", ibv_wc_status_str(wc.status),
	      wc.opcode, wc.byte_len);
	CHECK(!wait_wc(b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RECV && wc.wr_id == 77 &&
	      wc.byte_len == 7500 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
	      ntohl(wc.imm_data) == 0x1234 && wc.src_qp == a.qp->qp_num &&
	      wc.qp_num == b.qp->qp_num,
	      "recv completion: %s op %d len %u imm %x",
	      ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len,
	      ntohl(wc.imm_data));
	CHECK(!memcmp(dst, src, 3000) && !memcmp(dst + 5000, src + 3000, 4500),
	      "SEND data scattered byte for byte");
	for (i = 3000; i < 5000; i++)
		if (dst[i])
			break;
	CHECK(i == 5000, "bytes between scatter entries untouched");

	/* RDMA_WRITE, 2 SGEs, unsignaled then signaled */
	fill(src, 65536, 2);
	memset(dst, 0, 65536);
	ss[0] = (struct ibv_sge){ (uintptr_t)src, 30000, mr->lkey };
	ss[1] = (struct ibv_sge){ (uintptr_t)src + 30000, 35536, mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 2, .sg_list = ss, .num_sge = 2,
				   .opcode = IBV_WR_RDMA_WRITE };
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK(!post(a.qp, &wr), "post RDMA_WRITE unsignaled");
	CHECK(no_wc(a.cq), "unsignaled write: no completion");
	CHECK(!memcmp(dst, src, 65536), "RDMA_WRITE data");

	/* RDMA_WRITE_WITH_IMM consumes a receive WQE, no data into it */
	CHECK(!post_recv(b.qp, 78, NULL, 0), "post_recv (0 SGEs)");
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htonl(0xabcd);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr_id = 3;
	fill(src, 65536, 3);
	CHECK(!post(a.qp, &wr), "post RDMA_WRITE_WITH_IMM");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 3,
	      "write-imm requester completion %s", ibv_wc_status_str(wc.status));
	CHECK(!wait_wc(b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.wr_id == 78 &&
	      wc.byte_len == 65536 && ntohl(wc.imm_data) == 0xabcd,
	      "write-imm responder completion op %d len %u", wc.opcode,
	      wc.byte_len);
	CHECK(!memcmp(dst, src, 65536), "RDMA_WRITE_WITH_IMM data");

	/* RDMA_READ into 2 SGEs */
	fill(dst, 20000, 4);
	memset(src, 0, 20000);
	ss[0] = (struct ibv_sge){ (uintptr_t)src, 12345, mr->lkey };
	ss[1] = (struct ibv_sge){ (uintptr_t)src + 12345, 7655, mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 4, .sg_list = ss, .num_sge = 2,
				   .opcode = IBV_WR_RDMA_READ,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK(!post(a.qp, &wr), "post RDMA_READ");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 20000,
	      "read completion %s len %u", ibv_wc_status_str(wc.status),
	      wc.byte_len);
	CHECK(!memcmp(src, dst, 20000), "RDMA_READ data");

	/* atomics */
	atom = (uint64_t *)(dst + 4096);
	*atom = 100;
	ss[0] = (struct ibv_sge){ (uintptr_t)src, 8, mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 5, .sg_list = ss, .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.atomic.remote_addr = (uintptr_t)atom;
	wr.wr.atomic.rkey = mr->rkey;
	wr.wr.atomic.compare_add = 23;
	CHECK(!post(a.qp, &wr), "post FETCH_ADD");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_FETCH_ADD && wc.byte_len == 8,
	      "fetch-add completion %s", ibv_wc_status_str(wc.status));
	CHECK(*atom == 123 && *(uint64_t *)src == 100,
	      "fetch-add: memory %llu, returned %llu",
	      (unsigned long long)*atom, (unsigned long long)*(uint64_t *)src);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 123;
	wr.wr.atomic.swap = 7;
	CHECK(!post(a.qp, &wr), "post CMP_AND_SWP");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_COMP_SWAP, "cmp-swap completion");
	CHECK(*atom == 7 && *(uint64_t *)src == 123, "cmp-swap swapped");
	wr.wr.atomic.compare_add = 999;
	wr.wr.atomic.swap = 8;
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_SUCCESS, "cmp-swap (no match)");
	CHECK(*atom == 7 && *(uint64_t *)src == 7,
	      "cmp-swap without match leaves memory, returns it");

	/* zero-length SEND and WRITE; inline SEND */
	CHECK(!post_recv(b.qp, 79, rs, 1), "post_recv");
	wr = (struct ibv_send_wr){ .wr_id = 6, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_SUCCESS && wc.byte_len == 0,
	      "zero-length send");
	CHECK(!wait_wc(b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.byte_len == 0 && wc.wr_id == 79, "zero-length recv");
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.rkey = 0xdeadbeef;	/* not checked for 0 bytes */
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_SUCCESS, "zero-length write");
	CHECK(!post_recv(b.qp, 80, rs, 1), "post_recv");
	memcpy(src, "inline data here", 17);
	ss[0] = (struct ibv_sge){ (uintptr_t)src, 17, 0 };
	wr = (struct ibv_send_wr){ .wr_id = 7, .sg_list = ss, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED |
						 IBV_SEND_INLINE };
	CHECK(!post(a.qp, &wr), "post inline send");
	memset(src, 0, 17);	/* inline: the data was copied at post */
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS,
	      "inline send completion");
	CHECK(!wait_wc(b.cq, &wc) && wc.byte_len == 17 &&
	      !memcmp(dst, "inline data here", 17), "inline data arrived");

	/* inline beyond max_inline_data: EINVAL at post */
	ss[0].length = 4096;
	CHECK(post(a.qp, &wr) == EINVAL, "inline too long: EINVAL");

	free_end(&a);
	free_end(&b);
}

#endif /* SOFTMR_QP_UTIL_H */
