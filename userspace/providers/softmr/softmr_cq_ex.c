// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Extended CQs (ibv_create_cq_ex): the same ring as a plain CQ, read with
 * the start_poll / next_poll / end_poll iterator.  start_poll takes the CQ
 * lock and stands on the oldest completion; next_poll moves on; end_poll
 * gives the consumed slots back to the kernel and drops the lock.
 * Completion timestamps are not offered (EOPNOTSUPP).
 */

#include <config.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "softmr.h"

#define SOFTMR_WC_EX_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
			    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			    IBV_WC_EX_WITH_DLID_PATH_BITS)

struct softmr_cq_ex_resp {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct softmr_create_cq_resp drv;
};

static struct softmr_cq *ex_to_scq(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct softmr_cq, vcq.cq_ex);
}

static const struct ib_uverbs_wc *softmr_cq_slot(struct softmr_cq *cq,
						 uint32_t i)
{
	const struct ib_uverbs_wc *slots =
		(const void *)((uint8_t *)cq->ring + SOFTMR_RING_HDR_SIZE);

	return &slots[i & (cq->num - 1)];
}

/* Stand on entry cq->ex_cons if the kernel has produced it. */
static int softmr_cq_ex_load(struct softmr_cq *cq)
{
	uint32_t prod = atomic_load_explicit(
		(_Atomic(uint32_t) *)&cq->ring->producer, memory_order_acquire);

	if (cq->ex_cons == prod) {
		cq->ex_cur = NULL;
		return ENOENT;
	}
	cq->ex_cur = softmr_cq_slot(cq, cq->ex_cons);
	cq->vcq.cq_ex.status = cq->ex_cur->status;
	cq->vcq.cq_ex.wr_id = cq->ex_cur->wr_id;
	return 0;
}

static int softmr_cq_start_poll(struct ibv_cq_ex *ibcq,
				struct ibv_poll_cq_attr *attr)
{
	struct softmr_cq *cq = ex_to_scq(ibcq);
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	cq->ex_cons = cq->ring->consumer;
	ret = softmr_cq_ex_load(cq);
	if (ret) {
		pthread_spin_unlock(&cq->lock);
		/* drained: the posts it waits for run now */
		softmr_ring_owed(ibcq->context);
	}
	return ret;
}

static int softmr_cq_next_poll(struct ibv_cq_ex *ibcq)
{
	struct softmr_cq *cq = ex_to_scq(ibcq);

	cq->ex_cons++;
	return softmr_cq_ex_load(cq);
}

static void softmr_cq_end_poll(struct ibv_cq_ex *ibcq)
{
	struct softmr_cq *cq = ex_to_scq(ibcq);
	uint32_t cons = cq->ex_cons + (cq->ex_cur ? 1 : 0);

	atomic_store_explicit((_Atomic(uint32_t) *)&cq->ring->consumer, cons,
			      memory_order_release);
	cq->ex_cur = NULL;
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode softmr_cq_read_opcode(struct ibv_cq_ex *ibcq)
{
	return ex_to_scq(ibcq)->ex_cur->opcode;
}

static uint32_t softmr_cq_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return ex_to_scq(ibcq)->ex_cur->vendor_err;
}

static uint32_t softmr_cq_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return ex_to_scq(ibcq)->ex_cur->byte_len;
}

static __be32 softmr_cq_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return (__force __be32)ex_to_scq(ibcq)->ex_cur->ex.imm_data;
}

static uint32_t softmr_cq_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return ex_to_scq(ibcq)->ex_cur->qp_num;
}

static uint32_t softmr_cq_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return ex_to_scq(ibcq)->ex_cur->src_qp;
}

static unsigned int softmr_cq_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return softmr_wc_flags(ex_to_scq(ibcq)->ex_cur->wc_flags);
}

static uint32_t softmr_cq_read_slid(struct ibv_cq_ex *ibcq)
{
	return ex_to_scq(ibcq)->ex_cur->slid;
}

static uint8_t softmr_cq_read_sl(struct ibv_cq_ex *ibcq)
{
	return ex_to_scq(ibcq)->ex_cur->sl;
}

static uint8_t softmr_cq_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return ex_to_scq(ibcq)->ex_cur->dlid_path_bits;
}

static void softmr_cq_ex_set_ops(struct softmr_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *ex = &cq->vcq.cq_ex;

	ex->start_poll = softmr_cq_start_poll;
	ex->next_poll = softmr_cq_next_poll;
	ex->end_poll = softmr_cq_end_poll;
	ex->read_opcode = softmr_cq_read_opcode;
	ex->read_vendor_err = softmr_cq_read_vendor_err;
	ex->read_wc_flags = softmr_cq_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ex->read_byte_len = softmr_cq_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		ex->read_imm_data = softmr_cq_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ex->read_qp_num = softmr_cq_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ex->read_src_qp = softmr_cq_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		ex->read_slid = softmr_cq_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		ex->read_sl = softmr_cq_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ex->read_dlid_path_bits = softmr_cq_read_dlid_path_bits;
}

struct ibv_cq_ex *softmr_create_cq_ex(struct ibv_context *ctx,
				      struct ibv_cq_init_attr_ex *attr)
{
	struct softmr_cq_ex_resp resp = {};
	struct softmr_cq *cq;
	int ret;

	if (attr->wc_flags & ~(uint64_t)SOFTMR_WC_EX_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* single-threaded use needs nothing; other flags are not offered */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_create_cq_ex(ctx, attr, NULL, &cq->vcq, NULL, 0,
				   &resp.ibv_resp, sizeof(resp), 0);
	if (ret)
		goto err_free;
	ret = softmr_cq_map(cq, ctx->cmd_fd, &resp.drv);
	if (ret)
		goto err_destroy;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	softmr_cq_ex_set_ops(cq, attr->wc_flags);
	return &cq->vcq.cq_ex;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}
