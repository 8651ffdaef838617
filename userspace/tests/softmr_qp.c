// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr QP engine test: every operation on RC (and sends on UD) between
 * two QPs of softmr0, data verified byte by byte, completions checked for
 * opcode, length, immediate data and status, and the error paths: remote
 * access errors, local protection errors, RNR, flushes, a partner that was
 * connected to another QP, and a process writing garbage into its own send
 * ring.
 *
 * usage: softmr_qp DEV
 */

#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <arpa/inet.h>
#include <rdma/softmr-abi.h>

#include "softmr_test.h"
/* the provider's QP layout, to scribble on its send ring */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "../providers/softmr/softmr.h"
#pragma GCC diagnostic pop

#define BUF	(1 << 20)

#include "softmr_qp_util.h"

static void test_rc_errors(struct ibv_mr *mr, uint8_t *buf)
{
	struct end a = {}, b = {};
	struct ibv_wc wc;
	struct ibv_sge s = { (uintptr_t)buf, 4096, mr->lkey };
	struct ibv_send_wr wr;
	struct ibv_mr *ro;

	printf("-- RC error paths\n");
	/* bad rkey: REM_ACCESS_ERR, both QPs to ERR, the rest flushed */
	if (make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE, 7)) {
		CHECK(0, "pair");
		return;
	}
	CHECK(!post_recv(b.qp, 90, &s, 1), "post_recv");
	CHECK(!post_recv(a.qp, 91, &s, 1), "post_recv");
	wr = (struct ibv_send_wr){ .wr_id = 10, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE };
	wr.wr.rdma.remote_addr = (uintptr_t)buf + BUF / 2;
	wr.wr.rdma.rkey = mr->rkey ^ 0x5a00;	/* another index */
	CHECK(!post(a.qp, &wr), "post write with a bad rkey");
	CHECK(!wait_wc(a.cq, &wc) && wc.wr_id == 10 &&
	      wc.status == IBV_WC_REM_ACCESS_ERR,
	      "bad rkey: %s (unsignaled WR still completes in error)",
	      ibv_wc_status_str(wc.status));
	CHECK(qp_state(a.qp) == IBV_QPS_ERR, "requester QP in ERR");
	CHECK(!wait_wc(a.cq, &wc) && wc.wr_id == 91 &&
	      wc.status == IBV_WC_WR_FLUSH_ERR, "requester RQ flushed: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(qp_state(b.qp) == IBV_QPS_ERR, "responder QP in ERR");
	CHECK(!wait_wc(b.cq, &wc) && wc.wr_id == 90 &&
	      wc.status == IBV_WC_WR_FLUSH_ERR, "responder RQ flushed");
	wr.wr_id = 11;
	CHECK(!post(a.qp, &wr), "post in ERR");
	CHECK(!wait_wc(a.cq, &wc) && wc.wr_id == 11 &&
	      wc.status == IBV_WC_WR_FLUSH_ERR, "WR posted in ERR flushed");
	CHECK(!post_recv(a.qp, 92, &s, 1), "post_recv in ERR");
	CHECK(!wait_wc(a.cq, &wc) && wc.wr_id == 92 &&
	      wc.status == IBV_WC_WR_FLUSH_ERR, "recv posted in ERR flushed");
	free_end(&a);
	free_end(&b);

	/* the MR lacks REMOTE_WRITE; the QP lacks REMOTE_READ */
	ro = ibv_reg_mr(pd, buf + BUF / 2, 8192, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ);
	CHECK(ro != NULL, "reg read-only MR");
	if (!ro || make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE, 7))
		return;
	wr = (struct ibv_send_wr){ .wr_id = 12, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)buf + BUF / 2;
	wr.wr.rdma.rkey = ro->rkey;
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_REM_ACCESS_ERR,
	      "write to MR without REMOTE_WRITE: %s",
	      ibv_wc_status_str(wc.status));
	free_end(&a);
	free_end(&b);
	make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		     7);
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_REM_ACCESS_ERR,
	      "read from QP without REMOTE_READ: %s",
	      ibv_wc_status_str(wc.status));
	free_end(&a);
	free_end(&b);

	/* bounds: one byte past the MR */
	make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
		     7);
	wr.wr.rdma.remote_addr = (uintptr_t)buf + BUF / 2 + 8192 - 4095;
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_REM_ACCESS_ERR, "read past the MR's end: %s",
	      ibv_wc_status_str(wc.status));
	free_end(&a);
	free_end(&b);
	ibv_dereg_mr(ro);

	/* local: a bad lkey */
	make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		     7);
	s.lkey ^= 0x100;
	wr = (struct ibv_send_wr){ .wr_id = 13, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE };
	wr.wr.rdma.remote_addr = (uintptr_t)buf;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_LOC_PROT_ERR, "bad lkey: %s",
	      ibv_wc_status_str(wc.status));
	s.lkey ^= 0x100;
	free_end(&a);
	free_end(&b);

	/* atomics: misaligned remote address */
	make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE |
		     IBV_ACCESS_REMOTE_ATOMIC, 7);
	s.length = 8;
	wr = (struct ibv_send_wr){ .wr_id = 14, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	wr.wr.atomic.remote_addr = (uintptr_t)buf + BUF / 2 + 4;
	wr.wr.atomic.rkey = mr->rkey;
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_REM_INV_REQ_ERR, "misaligned atomic: %s",
	      ibv_wc_status_str(wc.status));
	free_end(&a);
	free_end(&b);

	/* RNR: no receive WQE, rnr_retry 0 */
	make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE, 0);
	wr = (struct ibv_send_wr){ .wr_id = 15, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_SEND };
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_RNR_RETRY_EXC_ERR, "RNR, no retry: %s",
	      ibv_wc_status_str(wc.status));
	free_end(&a);
	free_end(&b);

	/* RNR with retries for ever: the send completes once a receive is
	 * posted (the receive doorbell resumes it)
	 */
	make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE, 7);
	s.length = 100;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK(!post(a.qp, &wr), "send before any receive");
	CHECK(no_wc(a.cq), "send waits (RNR)");
	CHECK(!post_recv(b.qp, 93, &s, 1), "post the receive");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 15, "send completed after the receive: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(!wait_wc(b.cq, &wc) && wc.wr_id == 93 && wc.byte_len == 100,
	      "receive completed");

	/*
	 * a QP flushed in the middle of an RNR wait with its last retry
	 * spent (rnr_retry 1, the receiver's timer 491 ms), then connected
	 * anew with rnr_retry 7: its next send waits for a receive again
	 * instead of failing at once
	 */
	{
		struct end c = {}, d = {};
		struct ibv_qp_attr ra = { .qp_state = IBV_QPS_RESET };

		CHECK(!make_rc_pair_timer(&c, &d, IBV_ACCESS_LOCAL_WRITE, 1,
					  31),
		      "RC pair, rnr_retry 1, RNR timer 491 ms");
		CHECK(!post(c.qp, &wr), "send before any receive");
		usleep(20000);	/* its first RNR wait, the last retry left */
		ra.qp_state = IBV_QPS_ERR;
		CHECK(!ibv_modify_qp(c.qp, &ra, IBV_QP_STATE) &&
		      !wait_wc(c.cq, &wc) && wc.status == IBV_WC_WR_FLUSH_ERR,
		      "moved to ERR in the RNR wait: flushed (%s)",
		      ibv_wc_status_str(wc.status));
		ra.qp_state = IBV_QPS_RESET;
		CHECK(!ibv_modify_qp(c.qp, &ra, IBV_QP_STATE) &&
		      !to_rts(c.qp, d.qp->qp_num, IBV_ACCESS_LOCAL_WRITE, 7,
			      31), "reset and connected again, rnr_retry 7");
		CHECK(!post(c.qp, &wr), "send before any receive, again");
		CHECK(no_wc(c.cq), "it waits (RNR), as the new rnr_retry says");
		CHECK(!post_recv(d.qp, 94, &s, 1) && !wait_wc(c.cq, &wc) &&
		      wc.status == IBV_WC_SUCCESS,
		      "the receive resumes it: %s", ibv_wc_status_str(wc.status));
		free_end(&c);
		free_end(&d);
	}

	/* a receive WQE with a stale lkey: responder LOC_PROT_ERR */
	s.lkey ^= 0x300;
	CHECK(!post_recv(b.qp, 95, &s, 1), "post receive with a bad lkey");
	s.lkey ^= 0x300;
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_REM_OP_ERR,
	      "send into a bad receive WQE: requester %s",
	      ibv_wc_status_str(wc.status));
	CHECK(!wait_wc(b.cq, &wc) && wc.wr_id == 95 &&
	      wc.status == IBV_WC_LOC_PROT_ERR, "responder %s",
	      ibv_wc_status_str(wc.status));
	free_end(&a);
	free_end(&b);
	make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE, 7);

	/* receive buffer too small: responder LOC_LEN_ERR */
	s.length = 50;
	CHECK(!post_recv(b.qp, 94, &s, 1), "post small receive");
	s.length = 100;
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_REM_INV_REQ_ERR,
	      "send larger than the receive: requester %s",
	      ibv_wc_status_str(wc.status));
	CHECK(!wait_wc(b.cq, &wc) && wc.wr_id == 94 &&
	      wc.status == IBV_WC_LOC_LEN_ERR, "responder %s",
	      ibv_wc_status_str(wc.status));
	free_end(&a);
	free_end(&b);
}

/* Reset @qp and connect it anew to @remote. */
static int reconnect(struct ibv_qp *qp, uint32_t remote)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	return to_rts(qp, remote, IBV_ACCESS_LOCAL_WRITE |
		      IBV_ACCESS_REMOTE_WRITE, 7, 1);
}

/*
 * Fill @len bytes at @src with pattern @seed and post @wr (a signaled
 * write of them) on @e with wr_id @seed.  Return: its completion's status,
 * or -1 when posting or the completion failed.
 */
static int rc_write(struct end *e, struct ibv_send_wr *wr, uint8_t *src,
		    size_t len, unsigned int seed)
{
	struct ibv_wc wc;

	fill(src, len, seed);
	wr->wr_id = seed;
	if (post(e->qp, wr) || wait_wc(e->cq, &wc) || wc.wr_id != seed)
		return -1;
	return wc.status;
}

/*
 * A requester that wrote to its partner must not keep writing to it once
 * the partner was connected to another QP (or it to another partner): the
 * engine remembers the partner it checked, and a modify of either end
 * makes it check anew.
 */
static void test_rc_reconnect(struct ibv_mr *mr, uint8_t *buf)
{
	struct end a = {}, b = {}, c = {};
	uint8_t *src = buf, *dst = buf + BUF / 2, want[64];
	struct ibv_sge s = { (uintptr_t)src, sizeof(want), mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};
	int i, st;

	printf("-- RC partner reconnected\n");
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = mr->rkey;
	if (make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE, 7) ||
	    make_end(&c, IBV_QPT_RC, NULL)) {
		CHECK(0, "QPs");
		goto out;
	}
	/* several writes: the partner is checked, then remembered */
	for (i = 0; i < 4; i++) {
		st = rc_write(&a, &wr, src, sizeof(want), 40 + i);
		CHECK(st == IBV_WC_SUCCESS && !memcmp(dst, src, sizeof(want)),
		      "write %d to the partner: %s", i, ibv_wc_status_str(st));
	}
	/* B is C's partner now; A still names B */
	CHECK(!reconnect(b.qp, c.qp->qp_num) &&
	      !reconnect(c.qp, b.qp->qp_num), "B and C connected");
	memcpy(want, dst, sizeof(want));
	st = rc_write(&a, &wr, src, sizeof(want), 50);
	CHECK(st == IBV_WC_RETRY_EXC_ERR,
	      "write to a partner connected elsewhere: %s",
	      ibv_wc_status_str(st));
	CHECK(!memcmp(dst, want, sizeof(want)), "its memory unchanged");
	/* C, which wrote to B, names A now; B still names C */
	for (i = 0; i < 4; i++) {
		st = rc_write(&c, &wr, src, sizeof(want), 60 + i);
		CHECK(st == IBV_WC_SUCCESS && !memcmp(dst, src, sizeof(want)),
		      "write %d from B's new partner: %s", i,
		      ibv_wc_status_str(st));
	}
	CHECK(!reconnect(c.qp, a.qp->qp_num), "C connected to A");
	memcpy(want, dst, sizeof(want));
	st = rc_write(&c, &wr, src, sizeof(want), 70);
	CHECK(st == IBV_WC_RETRY_EXC_ERR,
	      "write after the requester was connected elsewhere: %s",
	      ibv_wc_status_str(st));
	CHECK(!memcmp(dst, want, sizeof(want)), "B's memory unchanged");
out:
	free_end(&a);
	free_end(&b);
	free_end(&c);
}

/* The provider's send doorbell, rung by hand. */
static int send_doorbell(struct ibv_qp *qp)
{
	struct ib_uverbs_post_send_resp resp;
	struct ibv_post_send cmd = {};

	cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.response = (uintptr_t)&resp;
	cmd.qp_handle = qp->handle;
	cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	return write(qp->context->cmd_fd, &cmd, sizeof(cmd)) == sizeof(cmd) ?
	       0 : -1;
}

/* Garbage in the send ring: error completions or a QP in error. */
static void test_garbage_ring(struct ibv_mr *mr, uint8_t *buf)
{
	struct end a = {}, b = {};
	struct softmr_qp *sq;
	struct softmr_send_wqe *w;
	struct ibv_sge s = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_wc wc;
	int i;

	printf("-- garbage in the send ring\n");
	static const struct {
		uint32_t opcode, flags, num_sge, lkey;
		enum ibv_wc_status status;
	} bad[] = {
		{ 200, 0, 1, 0, IBV_WC_LOC_QP_OP_ERR },		/* opcode */
		{ IBV_WR_SEND, 0x1000, 1, 0, IBV_WC_LOC_QP_OP_ERR },/* flags */
		{ IBV_WR_SEND, 0, 100000, 0, IBV_WC_LOC_QP_OP_ERR },/* SGEs */
		{ IBV_WR_SEND, 0, 1, 0x12345678, IBV_WC_LOC_PROT_ERR },
		{ IBV_WR_SEND, SOFTMR_SEND_INLINE, 1 << 30, 0,
		  IBV_WC_LOC_LEN_ERR },
	};

	for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE, 7);
		post_recv(b.qp, 1, &s, 1);
		sq = to_sqp(a.qp);
		w = (void *)((uint8_t *)sq->sq.hdr + SOFTMR_WQ_HDR_SIZE +
			     (sq->sq.prod & (sq->sq.num - 1)) * sq->sq.stride);
		memset(w, 0xa5, sq->sq.stride);
		w->wr_id = 1000 + i;
		w->opcode = bad[i].opcode;
		w->flags = bad[i].flags | SOFTMR_SEND_SIGNALED;
		w->num_sge = bad[i].num_sge;
		w->sge[0].addr = (uintptr_t)buf;
		w->sge[0].length = 64;
		w->sge[0].lkey = bad[i].lkey ? bad[i].lkey : mr->lkey;
		sq->sq.prod++;
		/* a valid WR after it rings the doorbell */
		CHECK(!post(a.qp, &wr), "post after garbage");
		CHECK(!wait_wc(a.cq, &wc) && wc.wr_id == 1000u + i &&
		      wc.status == bad[i].status, "garbage %d: %s", i,
		      ibv_wc_status_str(wc.status));
		CHECK(!wait_wc(a.cq, &wc) && wc.wr_id == 1 &&
		      wc.status == IBV_WC_WR_FLUSH_ERR,
		      "the valid WR behind it flushed");
		free_end(&a);
		free_end(&b);
	}

	/* a producer index far beyond the ring: the QP goes to ERR */
	make_rc_pair(&a, &b, IBV_ACCESS_LOCAL_WRITE, 7);
	sq = to_sqp(a.qp);
	sq->sq.hdr->producer += 1000000;
	CHECK(!send_doorbell(a.qp), "doorbell with a wild producer index");
	CHECK(qp_state(a.qp) == IBV_QPS_ERR, "QP in ERR after wild producer");
	free_end(&a);
	free_end(&b);
}

static void test_ud(struct ibv_mr *mr, uint8_t *buf)
{
	struct end a = {}, b = {};
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1 };
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qkey = 0x11111111 };
	struct ibv_sge s = { (uintptr_t)buf, 1000, mr->lkey };
	struct ibv_sge r = { (uintptr_t)buf + BUF / 2, 2048, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(42) };
	struct ibv_wc wc;
	struct ibv_ah *ah;
	uint8_t *grh = buf + BUF / 2;
	struct end *ends[2] = { &a, &b };
	int i;

	printf("-- UD sends\n");
	for (i = 0; i < 2; i++) {
		if (make_end(ends[i], IBV_QPT_UD, NULL)) {
			CHECK(0, "UD QP");
			return;
		}
		qa.qp_state = IBV_QPS_INIT;
		CHECK(!ibv_modify_qp(ends[i]->qp, &qa, IBV_QP_STATE |
				     IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_QKEY), "UD INIT");
		qa.qp_state = IBV_QPS_RTR;
		CHECK(!ibv_modify_qp(ends[i]->qp, &qa, IBV_QP_STATE), "UD RTR");
		qa.qp_state = IBV_QPS_RTS;
		CHECK(!ibv_modify_qp(ends[i]->qp, &qa, IBV_QP_STATE |
				     IBV_QP_SQ_PSN), "UD RTS");
	}
	ah_attr.grh.sgid_index = gid_index;
	ah_attr.grh.hop_limit = 64;
	ibv_query_gid(ctx, 1, gid_index, &ah_attr.grh.dgid);
	ah = ibv_create_ah(pd, &ah_attr);
	CHECK(ah != NULL, "create AH: %s", strerror(errno));
	if (!ah)
		goto out;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b.qp->qp_num;
	wr.wr.ud.remote_qkey = 0x11111111;
	fill(buf, 1000, 9);
	memset(grh, 0, 2048);
	CHECK(!post_recv(b.qp, 5, &r, 1), "UD post_recv");
	CHECK(!post(a.qp, &wr), "UD send");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS,
	      "UD send completion");
	CHECK(!wait_wc(b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.byte_len == 1040 && (wc.wc_flags & IBV_WC_GRH) &&
	      wc.src_qp == a.qp->qp_num && ntohl(wc.imm_data) == 42,
	      "UD recv: len %u flags %x src_qp %u", wc.byte_len, wc.wc_flags,
	      wc.src_qp);
	CHECK(!memcmp(grh + 40, buf, 1000), "UD payload after the GRH");
	CHECK(grh[20] == 0x45 && grh[32] == 127 && grh[35] == 1,
	      "GRH holds the IPv4 header from 127.0.0.1");

	/* wrong Q_Key: silently dropped, the sender still succeeds */
	wr.wr.ud.remote_qkey = 0x22222222;
	CHECK(!post_recv(b.qp, 6, &r, 1), "UD post_recv");
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_SUCCESS, "send with a wrong Q_Key completes");
	CHECK(no_wc(b.cq), "datagram with a wrong Q_Key dropped");
	/* larger than the MTU: local length error */
	s.length = 8192;
	wr.wr.ud.remote_qkey = 0x11111111;
	CHECK(!post(a.qp, &wr) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_LOC_LEN_ERR, "UD send beyond MTU: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(!ibv_destroy_ah(ah), "destroy AH");
out:
	free_end(&a);
	free_end(&b);
}

static void test_srq(struct ibv_mr *mr, uint8_t *buf)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 2 } };
	struct ibv_srq_attr mod = { .srq_limit = 3 };
	struct end a = {}, b = {};
	struct ibv_sge s = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_async_event ev;
	struct ibv_recv_wr rwr = { .sg_list = &s, .num_sge = 1 }, *bad;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	struct pollfd pfd;
	int i, got = 0;

	printf("-- SRQ and its limit event\n");
	srq = ibv_create_srq(pd, &sa);
	CHECK(srq != NULL, "create SRQ: %s", strerror(errno));
	if (!srq)
		return;
	CHECK(sa.attr.max_wr >= 16, "SRQ max_wr %u", sa.attr.max_wr);
	for (i = 0; i < 5; i++) {
		rwr.wr_id = 100 + i;
		CHECK(!ibv_post_srq_recv(srq, &rwr, &bad), "post_srq_recv");
	}
	CHECK(!ibv_modify_srq(srq, &mod, IBV_SRQ_LIMIT), "arm limit 3");
	mod.srq_limit = 1000;
	CHECK(ibv_modify_srq(srq, &mod, IBV_SRQ_LIMIT) == EINVAL,
	      "limit beyond the queue: EINVAL");
	if (make_end(&a, IBV_QPT_RC, NULL) || make_end(&b, IBV_QPT_RC, srq) ||
	    to_rts(a.qp, b.qp->qp_num, IBV_ACCESS_LOCAL_WRITE, 7, 1) ||
	    to_rts(b.qp, a.qp->qp_num, IBV_ACCESS_LOCAL_WRITE, 7, 1)) {
		CHECK(0, "SRQ pair");
		goto out;
	}
	CHECK(post_recv(b.qp, 1, &s, 1) == EINVAL,
	      "post_recv on a QP with an SRQ: EINVAL");
	for (i = 0; i < 3; i++) {
		wr.wr_id = i;
		CHECK(!post(a.qp, &wr), "send into SRQ");
		CHECK(!wait_wc(b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
		      wc.wr_id == 100u + i, "SRQ WQE %d used in order", i);
	}
	pfd.fd = ctx->async_fd;
	pfd.events = POLLIN;
	while (poll(&pfd, 1, 1000) > 0 && !ibv_get_async_event(ctx, &ev)) {
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
		    ev.element.srq == srq)
			got++;
		ibv_ack_async_event(&ev);
		break;
	}
	CHECK(got == 1, "SRQ_LIMIT_REACHED once below 3 WQEs");
	CHECK(!ibv_query_srq(srq, &mod) && mod.srq_limit == 0,
	      "limit disarmed after the event");

	/* resize with 2 WQEs waiting: they move along, in order */
	mod.max_wr = 1;
	CHECK(ibv_modify_srq(srq, &mod, IBV_SRQ_MAX_WR) == EINVAL,
	      "resize below the waiting WQEs: EINVAL");
	mod.max_wr = 200;
	CHECK(!ibv_modify_srq(srq, &mod, IBV_SRQ_MAX_WR), "resize to 200");
	CHECK(!ibv_query_srq(srq, &mod) && mod.max_wr >= 200,
	      "max_wr %u after resize", mod.max_wr);
	for (i = 5; i < 150; i++) {
		rwr.wr_id = 100 + i;
		if (ibv_post_srq_recv(srq, &rwr, &bad))
			break;
	}
	CHECK(i == 150, "145 more WQEs fit after the resize (%d)", i - 5);
	for (i = 3; i < 150; i++) {
		wr.wr_id = i;
		if (post(a.qp, &wr) || wait_wc(b.cq, &wc) ||
		    wc.status != IBV_WC_SUCCESS || wc.wr_id != 100u + i)
			break;
	}
	CHECK(i == 150, "every WQE used in order across the resize (%d)", i);
out:
	free_end(&a);
	free_end(&b);
	CHECK(!ibv_destroy_srq(srq), "destroy SRQ");
}

/* UC QP to RTS: the UC attribute masks (no RNR, retries, read limits). */
static int uc_to_rts(struct ibv_qp *qp, uint32_t remote)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = remote;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.grh.sgid_index = gid_index;
	if (ibv_query_gid(ctx, 1, gid_index, &a.ah_attr.grh.dgid))
		return -1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/*
 * UC: writes, writes with immediate and sends arrive with their data; what
 * goes wrong at the responder (bad rkey, no receive posted) is a lost
 * message, not an error: the sender completes successfully and both QPs
 * stay usable.  RDMA READ and atomics are refused at post time.
 */
static void test_uc(struct ibv_mr *mr, uint8_t *buf)
{
	struct end a = {}, b = {};
	uint8_t *src = buf, *dst = buf + BUF / 2;
	struct ibv_sge s, r;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	printf("-- UC QPs\n");
	if (make_end(&a, IBV_QPT_UC, NULL) || make_end(&b, IBV_QPT_UC, NULL) ||
	    uc_to_rts(a.qp, b.qp->qp_num) || uc_to_rts(b.qp, a.qp->qp_num)) {
		CHECK(0, "UC pair: %s", strerror(errno));
		goto out;
	}
	fill(src, 8192, 5);
	memset(dst, 0, 8192);
	s = (struct ibv_sge){ (uintptr_t)src, 5000, mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)dst + 10;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK(!post(a.qp, &wr), "UC write");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RDMA_WRITE, "UC write completes");
	CHECK(!memcmp(dst + 10, src, 5000), "UC write data");

	/* a bad rkey: the message is lost, the sender does not know */
	memset(dst, 0, 8192);
	wr.wr.rdma.rkey = mr->rkey ^ 0x100;
	wr.wr_id = 2;
	CHECK(!post(a.qp, &wr), "UC write, bad rkey");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 2, "UC write with a bad rkey completes: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(dst[10] == 0, "nothing written");
	CHECK(qp_state(a.qp) == IBV_QPS_RTS && qp_state(b.qp) == IBV_QPS_RTS,
	      "both UC QPs still in RTS");

	/* a send with no receive posted is lost; the next one arrives */
	s.length = 100;
	wr = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	CHECK(!post(a.qp, &wr), "UC send, no receive");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 3, "lost UC send completes");
	CHECK(no_wc(b.cq), "no receive completion for it");
	r = (struct ibv_sge){ (uintptr_t)dst, 4096, mr->lkey };
	CHECK(!post_recv(b.qp, 30, &r, 1), "post_recv");
	wr.wr_id = 4;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(0xc0ffee);
	CHECK(!post(a.qp, &wr), "UC send with imm");
	CHECK(!wait_wc(b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 30 && wc.byte_len == 100 &&
	      (wc.wc_flags & IBV_WC_WITH_IMM) &&
	      ntohl(wc.imm_data) == 0xc0ffee && !(wc.wc_flags & IBV_WC_GRH),
	      "UC receive: len %u flags %x", wc.byte_len, wc.wc_flags);
	CHECK(!memcmp(dst, src, 100), "UC send data");
	CHECK(!wait_wc(a.cq, &wc) && wc.wr_id == 4, "send completion");

	/* RDMA READ is not a UC operation */
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK(post(a.qp, &wr) == EINVAL, "UC RDMA READ refused: EINVAL");
out:
	free_end(&a);
	free_end(&b);
}

/*
 * The send doorbell file: 4 bytes naming a QP of its own context; other
 * sizes, unknown QPs and another context's QPs are EINVAL, and once the
 * context is closed a write is ENODEV.
 */
static void test_doorbell_file(void)
{
	struct softmr_context *sc = to_sctx(ctx);
	struct ibv_context *ctx2 = st_open_dev(ibv_get_device_name(ctx->device));
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_pd *pd2 = NULL;
	struct ibv_cq *cq2 = NULL;
	struct ibv_qp *qp2 = NULL;
	struct end a = {};
	uint32_t qpn;
	int fd2 = -1;

	printf("-- the send doorbell file\n");
	CHECK(sc->db_fd >= 0, "the context has a doorbell file");
	CHECK(ctx2 != NULL, "second context");
	if (sc->db_fd < 0 || !ctx2 || make_end(&a, IBV_QPT_RC, NULL))
		goto out;
	qpn = a.qp->qp_num;
	CHECK(write(sc->db_fd, &qpn, 4) == 4, "ring an own QP");
	errno = 0;
	CHECK_ERRNO(write(sc->db_fd, &qpn, 3) < 0, EINVAL, "3 bytes");
	qpn = 0xfffff0;
	errno = 0;
	CHECK_ERRNO(write(sc->db_fd, &qpn, 4) < 0, EINVAL, "no such QP");
	qpn = 1;
	errno = 0;
	CHECK_ERRNO(write(sc->db_fd, &qpn, 4) < 0, EINVAL,
		    "the kernel's GSI QP");
	pd2 = ibv_alloc_pd(ctx2);
	cq2 = ibv_create_cq(ctx2, 4, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = cq2;
	qp2 = pd2 && cq2 ? ibv_create_qp(pd2, &qa) : NULL;
	CHECK(qp2 != NULL, "QP in the second context");
	if (!qp2)
		goto out;
	qpn = qp2->qp_num;
	errno = 0;
	CHECK_ERRNO(write(sc->db_fd, &qpn, 4) < 0, EINVAL,
		    "another context's QP");
	fd2 = dup(to_sctx(ctx2)->db_fd);
	CHECK(write(fd2, &qpn, 4) == 4, "its own doorbell file rings it");
	ibv_destroy_qp(qp2);
	ibv_destroy_cq(cq2);
	ibv_dealloc_pd(pd2);
	ibv_close_device(ctx2);
	ctx2 = NULL;
	errno = 0;
	CHECK_ERRNO(write(fd2, &qpn, 4) < 0, ENODEV,
		    "a doorbell file outliving its context");
out:
	if (fd2 >= 0)
		close(fd2);
	free_end(&a);
	if (ctx2)
		ibv_close_device(ctx2);
}

/*
 * An explicit ODP MR larger than one 16 MiB child is mapped through
 * children made on first access: every RC operation on a buffer with a
 * child boundary inside the scatter list of its first SEND.
 */
static void test_rc_ops_chunked(void)
{
	size_t child = 16UL << 20, len = 3 * child;
	uint8_t *big, *bbuf;
	struct ibv_mr *odp;
	uintptr_t edge;

	big = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(big != MAP_FAILED, "48 MiB mapping");
	if (big == MAP_FAILED)
		return;
	edge = ((uintptr_t)big + BUF + child - 1) & ~(child - 1);
	bbuf = (uint8_t *)edge - BUF / 2 - 2504;
	odp = ibv_reg_mr(pd, big, len, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND);
	CHECK(odp != NULL, "48 MiB explicit ODP MR: %s", strerror(errno));
	if (odp) {
		test_rc_ops(odp, bbuf, "48 MiB explicit ODP");
		CHECK(!ibv_dereg_mr(odp), "dereg 48 MiB ODP MR");
	}
	munmap(big, len);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "softmr0";
	struct ibv_qp_init_attr bad_init = { .qp_type = IBV_QPT_XRC_SEND };
	struct ibv_mr *mr, *odp, *imp;
	uint8_t *buf;

	if (st_setup(dev))
		return 1;
	buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(pd && mr, "PD and MR");
	if (!mr)
		return st_finish("softmr_qp");

	bad_init.send_cq = bad_init.recv_cq = ibv_create_cq(ctx, 4, NULL,
							     NULL, 0);
	CHECK(!ibv_create_qp(pd, &bad_init), "XRC QP refused");
	bad_init.qp_type = IBV_QPT_RC;
	bad_init.cap.max_send_wr = 1 << 20;
	CHECK_ERRNO(!ibv_create_qp(pd, &bad_init), EINVAL,
		    "max_send_wr beyond max_qp_wr");
	bad_init.cap.max_send_wr = 1;
	bad_init.cap.max_send_sge = 1000;
	CHECK_ERRNO(!ibv_create_qp(pd, &bad_init), EINVAL,
		    "max_send_sge beyond the device's");
	ibv_destroy_cq(bad_init.send_cq);

	test_rc_ops(mr, buf, "pinned");
	test_rc_errors(mr, buf);
	test_rc_reconnect(mr, buf);
	test_garbage_ring(mr, buf);
	test_ud(mr, buf);
	test_srq(mr, buf);
	test_uc(mr, buf);
	test_doorbell_file();
	CHECK(!ibv_dereg_mr(mr), "dereg");

	if (!st_has_odp(ctx, pd)) {
		SKIP("RC operations on ODP MRs: no ODP on this kernel");
		goto out;
	}
	odp = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND);
	CHECK(odp != NULL, "ODP MR");
	if (odp) {
		/* drop the pages: every operation faults them back */
		madvise(buf, BUF, MADV_DONTNEED);
		test_rc_ops(odp, buf, "explicit ODP");
		ibv_dereg_mr(odp);
	}
	imp = ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND);
	CHECK(imp != NULL, "implicit ODP MR");
	if (imp) {
		madvise(buf, BUF, MADV_DONTNEED);
		test_rc_ops(imp, buf, "implicit ODP");
		ibv_dereg_mr(imp);
	}
	test_rc_ops_chunked();
out:
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return st_finish("softmr_qp");
}
