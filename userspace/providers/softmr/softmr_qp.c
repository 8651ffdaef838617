// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr provider: queue pairs, shared receive queues and address
 * handles.  WQEs are written straight into the rings the kernel maps
 * (struct softmr_wq_hdr, then WQEs of a fixed stride); a send doorbell is
 * a POST_SEND command with no WRs, which runs the send queue in the
 * kernel, in this thread.  Receive WQEs need no doorbell unless the kernel
 * asks for one (a sender waits for a receive WQE, or the QP is in error).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "softmr.h"

struct softmr_qp_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct softmr_create_qp_resp drv;
};

struct softmr_qp_ex_resp {
	struct ib_uverbs_ex_create_qp_resp ibv_resp;
	struct softmr_create_qp_resp drv;
};

struct softmr_srq_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct softmr_create_srq_resp drv;
};

struct softmr_ah_resp {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct softmr_create_ah_resp drv;
};

static uint32_t softmr_load_acquire(const uint32_t *p)
{
	return atomic_load_explicit((_Atomic(uint32_t) *)p,
				    memory_order_acquire);
}

static void softmr_store_release(uint32_t *p, uint32_t v)
{
	atomic_store_explicit((_Atomic(uint32_t) *)p, v,
			      memory_order_release);
}

static int softmr_wq_map(struct softmr_wq *wq, int cmd_fd,
			 const struct softmr_wq_info *info)
{
	void *p;

	if (!info->num || (info->num & (info->num - 1)) ||
	    info->stride < SOFTMR_SEND_WQE_HDR_SIZE)
		return EPROTO;
	p = mmap(NULL, info->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 cmd_fd, info->mmap_offset);
	if (p == MAP_FAILED)
		return errno;
	wq->hdr = p;
	wq->map_size = info->mmap_size;
	wq->num = info->num;
	wq->stride = info->stride;
	wq->prod = wq->hdr->producer;
	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

static void softmr_wq_unmap(struct softmr_wq *wq)
{
	if (wq->hdr) {
		munmap(wq->hdr, wq->map_size);
		pthread_spin_destroy(&wq->lock);
	}
	wq->hdr = NULL;
}

static void *softmr_wq_slot(struct softmr_wq *wq, uint32_t index)
{
	return (uint8_t *)wq->hdr + SOFTMR_WQ_HDR_SIZE +
	       (size_t)(index & (wq->num - 1)) * wq->stride;
}

static bool softmr_wq_full(struct softmr_wq *wq, uint32_t prod)
{
	return prod - softmr_load_acquire(&wq->hdr->consumer) >= wq->num;
}

/*
 * The uverbs doorbell: POST_SEND, POST_RECV or POST_SRQ_RECV with no WRs.
 * The three commands share one layout (response, handle, wr_count,
 * sge_count, wqe_size) and a 4-byte response, so one struct carries each.
 */
static_assert(sizeof(struct ibv_post_send) == sizeof(struct ibv_post_recv) &&
	      sizeof(struct ibv_post_recv) ==
	      sizeof(struct ibv_post_srq_recv) &&
	      offsetof(struct ibv_post_recv, qp_handle) ==
	      offsetof(struct ibv_post_srq_recv, srq_handle) &&
	      offsetof(struct ibv_post_send, wqe_size) ==
	      offsetof(struct ibv_post_recv, wqe_size) &&
	      sizeof(struct ib_uverbs_post_send_resp) ==
	      sizeof(struct ib_uverbs_post_recv_resp),
	      "uverbs post commands differ in layout");

static int softmr_uverbs_doorbell(struct ibv_context *ctx, uint32_t command,
				  uint32_t handle, uint32_t wqe_size)
{
	struct ib_uverbs_post_recv_resp resp;
	struct ibv_post_recv cmd = {};

	cmd.hdr.command = command;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.response = (uintptr_t)&resp;
	cmd.qp_handle = handle;
	cmd.wqe_size = wqe_size;
	if (write(ctx->cmd_fd, &cmd, sizeof(cmd)) != sizeof(cmd))
		return errno;
	return 0;
}

/*
 * Does a send WQE in [from, to) move more than the kernel's poller runs
 * without a doorbell (SOFTMR_SQ_POLL_MAX_BYTES)?
 */
static bool softmr_sq_big(struct softmr_wq *sq, uint32_t from, uint32_t to)
{
	for (; from != to; from++) {
		struct softmr_send_wqe *wqe = softmr_wq_slot(sq, from);
		uint32_t i, n = wqe->num_sge < sq->max_sge ? wqe->num_sge :
							     sq->max_sge;
		uint64_t bytes = 0;

		if (wqe->flags & SOFTMR_SEND_INLINE)
			continue;
		for (i = 0; i < n; i++)
			bytes += wqe->sge[i].length;
		if (bytes > SOFTMR_SQ_POLL_MAX_BYTES)
			return true;
	}
	return false;
}

/*
 * Ring a QP's send doorbell: the doorbell file when the kernel gave one (a
 * 4-byte write naming the QP), else POST_SEND.
 */
static int softmr_ring_send(struct ibv_context *ibctx, uint32_t qpn,
			    uint32_t handle)
{
	struct softmr_context *ctx = to_sctx(ibctx);

	if (ctx->db_fd >= 0) {
		if (write(ctx->db_fd, &qpn, sizeof(qpn)) != sizeof(qpn))
			return errno;
		return 0;
	}
	return softmr_uverbs_doorbell(ibctx, IB_USER_VERBS_CMD_POST_SEND,
				      handle, sizeof(struct ib_uverbs_send_wr));
}

static uint32_t softmr_load_relaxed(const uint32_t *p)
{
	return atomic_load_explicit((_Atomic(uint32_t) *)p,
				    memory_order_relaxed);
}

static void softmr_store_relaxed(uint32_t *p, uint32_t v)
{
	atomic_store_explicit((_Atomic(uint32_t) *)p, v, memory_order_relaxed);
}

/* @qp owes the kernel a send doorbell (sq_deferred): put it on the list. */
static void softmr_owe_doorbell(struct softmr_context *ctx,
				struct softmr_qp *qp)
{
	if (softmr_load_relaxed(&qp->owed))
		return;
	pthread_spin_lock(&ctx->owed_lock);
	if (!qp->owed) {
		softmr_store_relaxed(&qp->owed, 1);
		list_add_tail(&ctx->owed, &qp->owed_node);
		softmr_store_relaxed(&ctx->owed_n, ctx->owed_n + 1);
	}
	pthread_spin_unlock(&ctx->owed_lock);
}

/* Take @qp off the owed list (it is being destroyed). */
static void softmr_forget_owed(struct softmr_context *ctx,
			       struct softmr_qp *qp)
{
	pthread_spin_lock(&ctx->owed_lock);
	if (qp->owed) {
		list_del(&qp->owed_node);
		softmr_store_relaxed(&qp->owed, 0);
		softmr_store_relaxed(&ctx->owed_n, ctx->owed_n - 1);
	}
	pthread_spin_unlock(&ctx->owed_lock);
}

#define SOFTMR_OWED_BATCH	16

/**
 * softmr_ring_owed() - ring the send doorbells the context's QPs owe
 * @ibctx: the context
 *
 * Called when a poll finds a CQ of the context drained and before a CQ's
 * notification is armed: the poster waits for completions, so the WQEs
 * it posted without a doorbell (sq_deferred) run now, in this thread.
 * One pass over the QPs owing when it starts: a QP that owes again while
 * it rings (another thread posting) waits for the next poll, or the
 * kernel's timer, so that a poll never turns into a loop serving another
 * thread's posts.  The doorbells are rung outside the lock, by QP number
 * and handle: a QP destroyed meanwhile gets none (its number, if reused
 * by another QP of the context, gets a doorbell more, which costs nothing
 * else).  A doorbell that fails is not retried: the kernel's timer runs
 * the WQEs.
 */
void softmr_ring_owed(struct ibv_context *ibctx)
{
	struct softmr_context *ctx = to_sctx(ibctx);
	uint32_t qpn[SOFTMR_OWED_BATCH], handle[SOFTMR_OWED_BATCH];
	uint32_t left = softmr_load_relaxed(&ctx->owed_n);
	unsigned int i, n;

	while (left) {
		struct softmr_qp *qp;

		n = 0;
		pthread_spin_lock(&ctx->owed_lock);
		while (n < SOFTMR_OWED_BATCH && n < left &&
		       (qp = list_pop(&ctx->owed, struct softmr_qp,
				      owed_node))) {
			softmr_store_relaxed(&qp->owed, 0);
			qpn[n] = qp->vqp.qp.qp_num;
			handle[n++] = qp->vqp.qp.handle;
		}
		softmr_store_relaxed(&ctx->owed_n, ctx->owed_n - n);
		pthread_spin_unlock(&ctx->owed_lock);
		if (!n)
			break;
		left -= n;
		for (i = 0; i < n; i++)
			softmr_ring_send(ibctx, qpn[i], handle[i]);
	}
}

/*
 * The send doorbell for the WQEs just posted, [@from, @to) of the ring:
 * none while the kernel watches the ring (softmr_wq_hdr.sq_polled) and
 * every WQE is one its poller runs; owed, not rung, while the kernel lets
 * doorbells be deferred (sq_deferred) and every WQE is small.
 */
static int softmr_send_doorbell(struct ibv_qp *ibqp, uint32_t from,
				uint32_t to)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	struct softmr_wq_hdr *hdr = qp->sq.hdr;
	uint32_t polled, deferred;

	/* the producer index before the flags, as the kernel orders them */
	atomic_thread_fence(memory_order_seq_cst);
	polled = softmr_load_relaxed(&hdr->sq_polled);
	deferred = softmr_load_relaxed(&hdr->sq_deferred);
	if ((polled || deferred) && !softmr_sq_big(&qp->sq, from, to)) {
		if (!polled)
			softmr_owe_doorbell(to_sctx(ibqp->context), qp);
		return 0;
	}
	return softmr_ring_send(ibqp->context, ibqp->qp_num, ibqp->handle);
}

static int softmr_recv_doorbell(struct ibv_qp *ibqp)
{
	return softmr_uverbs_doorbell(ibqp->context,
				      IB_USER_VERBS_CMD_POST_RECV,
				      ibqp->handle,
				      sizeof(struct ib_uverbs_recv_wr));
}

static int softmr_srq_doorbell(struct ibv_srq *ibsrq)
{
	return softmr_uverbs_doorbell(ibsrq->context,
				      IB_USER_VERBS_CMD_POST_SRQ_RECV,
				      ibsrq->handle,
				      sizeof(struct ib_uverbs_recv_wr));
}

/* Receive WQEs: the same for RQs and SRQs. */
static int softmr_post_recv_wq(struct softmr_wq *wq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad_wr, bool *posted)
{
	int err = 0;

	pthread_spin_lock(&wq->lock);
	for (; wr; wr = wr->next) {
		struct softmr_recv_wqe *wqe;
		int i;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			err = EINVAL;
			break;
		}
		if (softmr_wq_full(wq, wq->prod)) {
			err = ENOMEM;
			break;
		}
		wqe = softmr_wq_slot(wq, wq->prod);
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		wqe->reserved = 0;
		for (i = 0; i < wr->num_sge; i++) {
			wqe->sge[i].addr = wr->sg_list[i].addr;
			wqe->sge[i].length = wr->sg_list[i].length;
			wqe->sge[i].lkey = wr->sg_list[i].lkey;
		}
		wq->prod++;
		*posted = true;
	}
	softmr_store_release(&wq->hdr->producer, wq->prod);
	pthread_spin_unlock(&wq->lock);
	if (err)
		*bad_wr = wr;
	return err;
}

/* The QP state the kernel publishes in the send ring's header. */
static uint32_t softmr_qp_state(struct softmr_qp *qp)
{
	return softmr_load_acquire(&qp->sq.hdr->qp_state);
}

/* Send WRs may be posted in RTS, SQD, SQE and ERR (flushed) only. */
static bool softmr_sq_open(struct softmr_qp *qp)
{
	uint32_t s = softmr_qp_state(qp);

	return s != IBV_QPS_RESET && s != IBV_QPS_INIT && s != IBV_QPS_RTR;
}

/*
 * After receive WQEs were posted to @wq: does a sender wait for them, so
 * that the receive doorbell must resume it (rnr_waiting)?  The producer
 * index before the flag, as the kernel orders them.
 */
static bool softmr_rnr_asked(struct softmr_wq *wq)
{
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit((_Atomic(uint32_t) *)&wq->hdr->rnr_waiting,
				    memory_order_relaxed);
}

static int softmr_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad_wr)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	bool posted = false;
	int err;

	if (ibqp->srq || softmr_qp_state(qp) == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	err = softmr_post_recv_wq(&qp->rq, wr, bad_wr, &posted);
	if (posted && (softmr_rnr_asked(&qp->rq) ||
		       softmr_qp_state(qp) == IBV_QPS_ERR)) {
		int ret = softmr_recv_doorbell(ibqp);

		if (!err)
			err = ret;
	}
	return err;
}

static int softmr_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
				struct ibv_recv_wr **bad_wr)
{
	struct softmr_srq *srq = to_ssrq(ibsrq);
	bool posted = false;
	int err;

	err = softmr_post_recv_wq(&srq->rq, wr, bad_wr, &posted);
	if (posted && softmr_rnr_asked(&srq->rq)) {
		int ret = softmr_srq_doorbell(ibsrq);

		if (!err)
			err = ret;
	}
	return err;
}

static bool softmr_opcode_ok(struct softmr_qp *qp, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return qp->vqp.qp.qp_type == IBV_QPT_RC ||
		       qp->vqp.qp.qp_type == IBV_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	/* invalidates a type 2 window, or a kernel consumer's fast
	 * registration, at the peer
	 */
	case IBV_WR_SEND_WITH_INV:
		return qp->vqp.qp.qp_type == IBV_QPT_RC;
	/* memory windows */
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		return qp->vqp.qp.qp_type == IBV_QPT_RC ||
		       qp->vqp.qp.qp_type == IBV_QPT_UC;
	default:
		return false;
	}
}

/* Copy a gather list as inline data after the WQE header. */
static int softmr_copy_inline(struct softmr_qp *qp,
			      struct softmr_send_wqe *wqe,
			      const struct ibv_sge *sg, int num)
{
	uint8_t *p = (uint8_t *)wqe->sge;
	uint32_t len = 0;
	int i;

	for (i = 0; i < num; i++) {
		if (sg[i].length > qp->max_inline - len)
			return EINVAL;
		memcpy(p + len, (void *)(uintptr_t)sg[i].addr, sg[i].length);
		len += sg[i].length;
	}
	wqe->num_sge = len;
	return 0;
}

/*
 * A BIND_MW WQE.  The window's rkey becomes the new one now, as the verbs
 * expect (ibv_bind_mw(3), IBV_WR_BIND_MW): a later WQE names the window by
 * it; a failed bind completes in error and the QP with it.
 */
static void softmr_build_bind(struct softmr_send_wqe *wqe, struct ibv_mw *mw,
			      uint32_t rkey,
			      const struct ibv_mw_bind_info *info)
{
	wqe->wr.bind.addr = info->addr;
	wqe->wr.bind.length = info->length;
	wqe->wr.bind.mw_rkey = mw->rkey;
	wqe->wr.bind.rkey = rkey;
	wqe->wr.bind.mr_lkey = info->mr ? info->mr->lkey : 0;
	wqe->wr.bind.access = info->mw_access_flags;
	wqe->num_sge = 0;
	mw->rkey = rkey;
}

static int softmr_build_send(struct softmr_qp *qp, struct softmr_send_wqe *wqe,
			     struct ibv_send_wr *wr)
{
	int i;

	if (!softmr_opcode_ok(qp, wr->opcode) ||
	    (wr->send_flags & ~SOFTMR_SEND_FLAGS_ALL) || wr->num_sge < 0)
		return EINVAL;
	memset(wqe, 0, SOFTMR_SEND_WQE_HDR_SIZE);
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->flags = wr->send_flags;
	wqe->imm_data = wr->imm_data;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wqe->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->wr.atomic.rkey = wr->wr.atomic.rkey;
		wqe->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->wr.atomic.swap = wr->wr.atomic.swap;
		break;
	case IBV_WR_BIND_MW:
		/* ibv_bind_mw(3): an MR for a window with a length, no data */
		if (!wr->bind_mw.mw || (wr->send_flags & IBV_SEND_INLINE) ||
		    (wr->bind_mw.bind_info.length &&
		     !wr->bind_mw.bind_info.mr))
			return EINVAL;
		softmr_build_bind(wqe, wr->bind_mw.mw, wr->bind_mw.rkey,
				  &wr->bind_mw.bind_info);
		return 0;
	case IBV_WR_LOCAL_INV:
		/* imm_data shares its place with invalidate_rkey */
		return 0;
	default:
		if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
			if (!wr->wr.ud.ah)
				return EINVAL;
			wqe->wr.ud.ah = to_sah(wr->wr.ud.ah)->num;
			wqe->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
			wqe->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		}
		break;
	}
	if (wr->send_flags & IBV_SEND_INLINE)
		return softmr_copy_inline(qp, wqe, wr->sg_list, wr->num_sge);
	if ((uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		wqe->sge[i].addr = wr->sg_list[i].addr;
		wqe->sge[i].length = wr->sg_list[i].length;
		wqe->sge[i].lkey = wr->sg_list[i].lkey;
	}
	wqe->num_sge = wr->num_sge;
	return 0;
}

static int softmr_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			    struct ibv_send_wr **bad_wr)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	struct softmr_wq *sq = &qp->sq;
	bool posted = false;
	uint32_t from, to;
	int err = 0;

	if (!softmr_sq_open(qp)) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&sq->lock);
	from = sq->prod;
	for (; wr; wr = wr->next) {
		if (softmr_wq_full(sq, sq->prod)) {
			err = ENOMEM;
			break;
		}
		err = softmr_build_send(qp, softmr_wq_slot(sq, sq->prod), wr);
		if (err)
			break;
		sq->prod++;
		posted = true;
	}
	softmr_store_release(&sq->hdr->producer, sq->prod);
	to = sq->prod;
	pthread_spin_unlock(&sq->lock);
	if (err)
		*bad_wr = wr;
	if (posted) {
		int ret = softmr_send_doorbell(ibqp, from, to);

		if (!err)
			err = ret;
	}
	return err;
}

/* The extended send API (ibv_wr_*): WQEs are built in the ring. */

static struct softmr_send_wqe *softmr_wr_next(struct ibv_qp_ex *ibqpx,
					      enum ibv_wr_opcode op)
{
	struct softmr_qp *qp = container_of(ibqpx, struct softmr_qp,
					    vqp.qp_ex);
	struct softmr_send_wqe *wqe;

	if (qp->wr_err)
		return NULL;
	if (softmr_wq_full(&qp->sq, qp->wr_prod) ||
	    !softmr_opcode_ok(qp, op)) {
		qp->wr_err = softmr_wq_full(&qp->sq, qp->wr_prod) ? ENOMEM :
			     EINVAL;
		return NULL;
	}
	wqe = softmr_wq_slot(&qp->sq, qp->wr_prod++);
	memset(wqe, 0, SOFTMR_SEND_WQE_HDR_SIZE);
	wqe->wr_id = ibqpx->wr_id;
	wqe->opcode = op;
	wqe->flags = ibqpx->wr_flags & SOFTMR_SEND_FLAGS_ALL;
	if (ibqpx->wr_flags & ~SOFTMR_SEND_FLAGS_ALL)
		qp->wr_err = EINVAL;
	qp->wr_cur = wqe;
	return wqe;
}

static void softmr_wr_start(struct ibv_qp_ex *ibqpx)
{
	struct softmr_qp *qp = container_of(ibqpx, struct softmr_qp,
					    vqp.qp_ex);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_prod = qp->sq.prod;
	qp->wr_err = 0;
	qp->wr_cur = NULL;
}

static int softmr_wr_complete(struct ibv_qp_ex *ibqpx)
{
	struct softmr_qp *qp = container_of(ibqpx, struct softmr_qp,
					    vqp.qp_ex);
	bool posted = qp->wr_prod != qp->sq.prod;
	uint32_t from = qp->sq.prod, to = qp->wr_prod;
	int err = qp->wr_err;

	if (!err && !softmr_sq_open(qp))
		err = EINVAL;

	if (!err) {
		qp->sq.prod = qp->wr_prod;
		softmr_store_release(&qp->sq.hdr->producer, qp->sq.prod);
	}
	pthread_spin_unlock(&qp->sq.lock);
	if (err)
		return err;
	return posted ? softmr_send_doorbell(&qp->vqp.qp, from, to) : 0;
}

static void softmr_wr_abort(struct ibv_qp_ex *ibqpx)
{
	struct softmr_qp *qp = container_of(ibqpx, struct softmr_qp,
					    vqp.qp_ex);

	pthread_spin_unlock(&qp->sq.lock);
}

static void softmr_wr_send(struct ibv_qp_ex *ibqpx)
{
	softmr_wr_next(ibqpx, IBV_WR_SEND);
}

static void softmr_wr_send_imm(struct ibv_qp_ex *ibqpx, __be32 imm)
{
	struct softmr_send_wqe *wqe = softmr_wr_next(ibqpx,
						     IBV_WR_SEND_WITH_IMM);

	if (wqe)
		wqe->imm_data = imm;
}

static void softmr_wr_rdma(struct ibv_qp_ex *ibqpx, enum ibv_wr_opcode op,
			   uint32_t rkey, uint64_t addr, __be32 imm)
{
	struct softmr_send_wqe *wqe = softmr_wr_next(ibqpx, op);

	if (!wqe)
		return;
	wqe->wr.rdma.remote_addr = addr;
	wqe->wr.rdma.rkey = rkey;
	wqe->imm_data = imm;
}

static void softmr_wr_rdma_write(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				 uint64_t addr)
{
	softmr_wr_rdma(ibqpx, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void softmr_wr_rdma_write_imm(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				     uint64_t addr, __be32 imm)
{
	softmr_wr_rdma(ibqpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void softmr_wr_rdma_read(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				uint64_t addr)
{
	softmr_wr_rdma(ibqpx, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void softmr_wr_atomic(struct ibv_qp_ex *ibqpx, enum ibv_wr_opcode op,
			     uint32_t rkey, uint64_t addr, uint64_t cmp_add,
			     uint64_t swap)
{
	struct softmr_send_wqe *wqe = softmr_wr_next(ibqpx, op);

	if (!wqe)
		return;
	wqe->wr.atomic.remote_addr = addr;
	wqe->wr.atomic.rkey = rkey;
	wqe->wr.atomic.compare_add = cmp_add;
	wqe->wr.atomic.swap = swap;
}

static void softmr_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				     uint64_t addr, uint64_t compare,
				     uint64_t swap)
{
	softmr_wr_atomic(ibqpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr,
			 compare, swap);
}

static void softmr_wr_atomic_fetch_add(struct ibv_qp_ex *ibqpx, uint32_t rkey,
				       uint64_t addr, uint64_t add)
{
	softmr_wr_atomic(ibqpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add,
			 0);
}

static void softmr_wr_bind_mw(struct ibv_qp_ex *ibqpx, struct ibv_mw *mw,
			      uint32_t rkey,
			      const struct ibv_mw_bind_info *info)
{
	struct softmr_send_wqe *wqe = softmr_wr_next(ibqpx, IBV_WR_BIND_MW);

	if (wqe)
		softmr_build_bind(wqe, mw, rkey, info);
}

static void softmr_wr_local_inv(struct ibv_qp_ex *ibqpx,
				uint32_t invalidate_rkey)
{
	struct softmr_send_wqe *wqe = softmr_wr_next(ibqpx, IBV_WR_LOCAL_INV);

	if (wqe)
		wqe->imm_data = invalidate_rkey;
}

static void softmr_wr_send_inv(struct ibv_qp_ex *ibqpx,
			       uint32_t invalidate_rkey)
{
	struct softmr_send_wqe *wqe = softmr_wr_next(ibqpx,
						     IBV_WR_SEND_WITH_INV);

	if (wqe)
		wqe->imm_data = invalidate_rkey;
}

static struct softmr_send_wqe *softmr_wr_cur(struct ibv_qp_ex *ibqpx)
{
	struct softmr_qp *qp = container_of(ibqpx, struct softmr_qp,
					    vqp.qp_ex);

	return qp->wr_err ? NULL : qp->wr_cur;
}

static void softmr_wr_set_ud_addr(struct ibv_qp_ex *ibqpx, struct ibv_ah *ah,
				  uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct softmr_send_wqe *wqe = softmr_wr_cur(ibqpx);

	if (!wqe)
		return;
	wqe->wr.ud.ah = ah ? to_sah(ah)->num : 0;
	wqe->wr.ud.remote_qpn = remote_qpn;
	wqe->wr.ud.remote_qkey = remote_qkey;
}

static void softmr_wr_set_sge_list(struct ibv_qp_ex *ibqpx, size_t num,
				   const struct ibv_sge *sg)
{
	struct softmr_qp *qp = container_of(ibqpx, struct softmr_qp,
					    vqp.qp_ex);
	struct softmr_send_wqe *wqe = softmr_wr_cur(ibqpx);
	size_t i;

	if (!wqe)
		return;
	if (num > qp->sq.max_sge) {
		qp->wr_err = EINVAL;
		return;
	}
	for (i = 0; i < num; i++) {
		wqe->sge[i].addr = sg[i].addr;
		wqe->sge[i].length = sg[i].length;
		wqe->sge[i].lkey = sg[i].lkey;
	}
	wqe->num_sge = num;
}

static void softmr_wr_set_sge(struct ibv_qp_ex *ibqpx, uint32_t lkey,
			      uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	softmr_wr_set_sge_list(ibqpx, 1, &sge);
}

static void softmr_wr_set_inline_data_list(struct ibv_qp_ex *ibqpx,
					   size_t num,
					   const struct ibv_data_buf *buf)
{
	struct softmr_qp *qp = container_of(ibqpx, struct softmr_qp,
					    vqp.qp_ex);
	struct softmr_send_wqe *wqe = softmr_wr_cur(ibqpx);
	uint8_t *p;
	uint32_t len = 0;
	size_t i;

	if (!wqe)
		return;
	p = (uint8_t *)wqe->sge;
	for (i = 0; i < num; i++) {
		if (buf[i].length > qp->max_inline - len) {
			qp->wr_err = EINVAL;
			return;
		}
		memcpy(p + len, buf[i].addr, buf[i].length);
		len += buf[i].length;
	}
	wqe->flags |= SOFTMR_SEND_INLINE;
	wqe->num_sge = len;
}

static void softmr_wr_set_inline_data(struct ibv_qp_ex *ibqpx, void *addr,
				      size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	softmr_wr_set_inline_data_list(ibqpx, 1, &buf);
}

#define SOFTMR_QP_EX_OPS	(IBV_QP_EX_WITH_RDMA_WRITE | \
				 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
				 IBV_QP_EX_WITH_SEND | \
				 IBV_QP_EX_WITH_SEND_WITH_IMM | \
				 IBV_QP_EX_WITH_RDMA_READ | \
				 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
				 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
				 IBV_QP_EX_WITH_BIND_MW | \
				 IBV_QP_EX_WITH_LOCAL_INV | \
				 IBV_QP_EX_WITH_SEND_WITH_INV)

static void softmr_set_qp_ex_ops(struct softmr_qp *qp)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;

	x->wr_start = softmr_wr_start;
	x->wr_complete = softmr_wr_complete;
	x->wr_abort = softmr_wr_abort;
	x->wr_send = softmr_wr_send;
	x->wr_send_imm = softmr_wr_send_imm;
	x->wr_rdma_write = softmr_wr_rdma_write;
	x->wr_rdma_write_imm = softmr_wr_rdma_write_imm;
	x->wr_rdma_read = softmr_wr_rdma_read;
	x->wr_atomic_cmp_swp = softmr_wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = softmr_wr_atomic_fetch_add;
	x->wr_bind_mw = softmr_wr_bind_mw;
	x->wr_local_inv = softmr_wr_local_inv;
	x->wr_send_inv = softmr_wr_send_inv;
	x->wr_set_ud_addr = softmr_wr_set_ud_addr;
	x->wr_set_sge = softmr_wr_set_sge;
	x->wr_set_sge_list = softmr_wr_set_sge_list;
	x->wr_set_inline_data = softmr_wr_set_inline_data;
	x->wr_set_inline_data_list = softmr_wr_set_inline_data_list;
}

static int softmr_qp_map(struct softmr_qp *qp, int cmd_fd,
			 const struct softmr_create_qp_resp *drv, bool has_rq)
{
	int err;

	err = softmr_wq_map(&qp->sq, cmd_fd, &drv->sq);
	if (err)
		return err;
	qp->sq.max_sge = (qp->sq.stride - SOFTMR_SEND_WQE_HDR_SIZE) /
			 sizeof(struct softmr_sge);
	if (qp->sq.max_sge > 32)
		qp->sq.max_sge = 32;
	qp->max_inline = drv->max_inline;
	if (!has_rq)
		return 0;
	err = softmr_wq_map(&qp->rq, cmd_fd, &drv->rq);
	if (err) {
		softmr_wq_unmap(&qp->sq);
		return err;
	}
	qp->rq.max_sge = (qp->rq.stride - SOFTMR_RECV_WQE_HDR_SIZE) /
			 sizeof(struct softmr_sge);
	if (qp->rq.max_sge > 32)
		qp->rq.max_sge = 32;
	return 0;
}

/* Both CQs are required (RC and UD; an SRQ still needs a recv CQ). */
static bool softmr_qp_cqs_ok(struct ibv_cq *send_cq, struct ibv_cq *recv_cq)
{
	return send_cq && recv_cq;
}

static struct ibv_qp *softmr_create_qp_ex(struct ibv_context *ctx,
					  struct ibv_qp_init_attr_ex *attr)
{
	struct softmr_qp_ex_resp resp = {};
	struct ibv_create_qp_ex cmd = {};
	struct softmr_qp *qp;
	int err;

	/* create flags: the kernel refuses every one (EOPNOTSUPP) */
	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_CREATE_FLAGS |
				IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & ~SOFTMR_QP_EX_OPS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!softmr_qp_cqs_ok(attr->send_cq, attr->recv_cq)) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_qp_ex2(ctx, &qp->vqp, attr, &cmd, sizeof(cmd),
				    &resp.ibv_resp, sizeof(resp), NULL);
	if (err)
		goto err_free;
	err = softmr_qp_map(qp, ctx->cmd_fd, &resp.drv, !attr->srq);
	if (err)
		goto err_destroy;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		softmr_set_qp_ex_ops(qp);
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = err;
	return NULL;
}

static struct ibv_qp *softmr_create_qp(struct ibv_pd *pd,
				       struct ibv_qp_init_attr *attr)
{
	struct softmr_qp_resp resp = {};
	struct ibv_create_qp cmd = {};
	struct softmr_qp *qp;
	int err;

	if (!softmr_qp_cqs_ok(attr->send_cq, attr->recv_cq)) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (err)
		goto err_free;
	err = softmr_qp_map(qp, pd->context->cmd_fd, &resp.drv, !attr->srq);
	if (err)
		goto err_destroy;
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = err;
	return NULL;
}

/*
 * Drop a QP's completions from a CQ (at RESET and destroy, as ConnectX
 * does): entries are shifted towards the producer and the consumer index
 * moves past the freed slots, so completions the kernel adds meanwhile
 * are untouched.
 */
static void softmr_cq_clean(struct ibv_cq *ibcq, uint32_t qpn)
{
	struct softmr_cq *cq;
	struct ib_uverbs_wc *slots;
	uint32_t cons, prod, i, nfreed = 0;

	if (!ibcq)
		return;
	cq = to_scq(ibcq);
	pthread_spin_lock(&cq->lock);
	slots = (void *)((uint8_t *)cq->ring + SOFTMR_RING_HDR_SIZE);
	cons = cq->ring->consumer;
	prod = softmr_load_acquire(&cq->ring->producer);
	for (i = prod; i-- != cons;) {
		struct ib_uverbs_wc *e = &slots[i & (cq->num - 1)];

		if (e->qp_num == qpn)
			nfreed++;
		else if (nfreed)
			slots[(i + nfreed) & (cq->num - 1)] = *e;
	}
	softmr_store_release(&cq->ring->consumer, cons + nfreed);
	pthread_spin_unlock(&cq->lock);
}

static int softmr_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			   int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd = {};

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

static int softmr_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			    int attr_mask)
{
	struct ibv_modify_qp cmd = {};
	int err;

	err = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	/* RESET emptied the queues (the kernel skipped what was posted) */
	if (!err && (attr_mask & IBV_QP_STATE) &&
	    attr->qp_state == IBV_QPS_RESET) {
		softmr_cq_clean(ibqp->recv_cq, ibqp->qp_num);
		if (ibqp->send_cq != ibqp->recv_cq)
			softmr_cq_clean(ibqp->send_cq, ibqp->qp_num);
	}
	return err;
}

static int softmr_destroy_qp(struct ibv_qp *ibqp)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	int err;

	err = ibv_cmd_destroy_qp(ibqp);
	if (err)
		return err;
	softmr_forget_owed(to_sctx(ibqp->context), qp);
	softmr_cq_clean(ibqp->recv_cq, ibqp->qp_num);
	if (ibqp->send_cq != ibqp->recv_cq)
		softmr_cq_clean(ibqp->send_cq, ibqp->qp_num);
	softmr_wq_unmap(&qp->sq);
	softmr_wq_unmap(&qp->rq);
	free(qp);
	return 0;
}

static struct ibv_srq *softmr_create_srq(struct ibv_pd *pd,
					 struct ibv_srq_init_attr *attr)
{
	struct softmr_srq_resp resp = {};
	struct ibv_create_srq cmd = {};
	struct softmr_srq *srq;
	int err;

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err_free;
	err = softmr_wq_map(&srq->rq, pd->context->cmd_fd, &resp.drv.rq);
	if (err)
		goto err_destroy;
	srq->rq.max_sge = (srq->rq.stride - SOFTMR_RECV_WQE_HDR_SIZE) /
			  sizeof(struct softmr_sge);
	if (srq->rq.max_sge > 32)
		srq->rq.max_sge = 32;
	return &srq->vsrq.srq;

err_destroy:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
err_free:
	free(srq);
	errno = err;
	return NULL;
}

static int softmr_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
			     int attr_mask)
{
	struct softmr_srq *srq = to_ssrq(ibsrq);
	struct softmr_wq_info info = {};
	struct {
		struct ibv_modify_srq ibv_cmd;
		struct softmr_modify_srq_cmd drv;
	} cmd = {};
	struct softmr_wq nrq;
	int err;

	if (!(attr_mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
					  sizeof(cmd.ibv_cmd));
	/* resize: nothing is posted while the kernel moves the ring */
	cmd.drv.wq_info_addr = (uintptr_t)&info;
	pthread_spin_lock(&srq->rq.lock);
	err = ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd.ibv_cmd,
				 sizeof(cmd));
	if (!err) {
		nrq = srq->rq;
		err = softmr_wq_map(&nrq, ibsrq->context->cmd_fd, &info);
		if (!err) {
			munmap(srq->rq.hdr, srq->rq.map_size);
			srq->rq.hdr = nrq.hdr;
			srq->rq.map_size = nrq.map_size;
			srq->rq.num = nrq.num;
			srq->rq.stride = nrq.stride;
		}
	}
	pthread_spin_unlock(&srq->rq.lock);
	return err;
}

static int softmr_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

static int softmr_destroy_srq(struct ibv_srq *ibsrq)
{
	struct softmr_srq *srq = to_ssrq(ibsrq);
	int err;

	err = ibv_cmd_destroy_srq(ibsrq);
	if (err)
		return err;
	softmr_wq_unmap(&srq->rq);
	free(srq);
	return 0;
}

static struct ibv_ah *softmr_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct softmr_ah_resp resp = {};
	struct softmr_ah *ah;
	int err;

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}
	ah->num = resp.drv.ah_num;
	return &ah->ibv_ah;
}

static int softmr_destroy_ah(struct ibv_ah *ibah)
{
	int err;

	err = ibv_cmd_destroy_ah(ibah);
	if (!err)
		free(to_sah(ibah));
	return err;
}

/* Memory windows: type 1 binds through ibv_bind_mw(), type 2 by WQE. */
static struct ibv_mw *softmr_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int err;

	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		free(mw);
		errno = err;
		return NULL;
	}
	return mw;
}

static int softmr_dealloc_mw(struct ibv_mw *mw)
{
	int err = ibv_cmd_dealloc_mw(mw);

	if (err)
		return err;
	free(mw);
	return 0;
}

static int softmr_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
			  struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr = {}, *bad;
	uint32_t old = mw->rkey;
	int err;

	/* ibv_bind_mw(3): type 1 only, not zero based */
	if (mw->type != IBV_MW_TYPE_1 ||
	    (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED))
		return EINVAL;
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	err = softmr_post_send(qp, &wr, &bad);
	if (err)
		mw->rkey = old;
	return err;
}

const struct verbs_context_ops softmr_qp_ops = {
	.alloc_mw = softmr_alloc_mw,
	.bind_mw = softmr_bind_mw,
	.create_ah = softmr_create_ah,
	.create_qp = softmr_create_qp,
	.create_qp_ex = softmr_create_qp_ex,
	.create_srq = softmr_create_srq,
	.dealloc_mw = softmr_dealloc_mw,
	.destroy_ah = softmr_destroy_ah,
	.destroy_qp = softmr_destroy_qp,
	.destroy_srq = softmr_destroy_srq,
	.modify_qp = softmr_modify_qp,
	.modify_srq = softmr_modify_srq,
	.post_recv = softmr_post_recv,
	.post_send = softmr_post_send,
	.post_srq_recv = softmr_post_srq_recv,
	.query_qp = softmr_query_qp,
	.query_srq = softmr_query_srq,
};
