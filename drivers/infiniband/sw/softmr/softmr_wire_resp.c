// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The responder of an RC or UC connection on the wire (IBTA 9.7.5, 9.8).
 *
 * Runs in the QP's wire worker under sq.lock, in process context: copies
 * into and out of the QP's MRs may fault ODP pages in or wait for a
 * dma-buf exporter.  Every packet is untrusted: its PSN decides first
 * (new, duplicate, ahead), then the opcode sequence and the lengths
 * against the path MTU, then keys, PD, access and range on every packet.
 *
 * RC: a gap is NAKed once (PSN sequence error); a duplicate SEND or WRITE
 * is acknowledged again, a duplicate read or atomic answered again from
 * the responder resources (max_dest_rd_atomic), the atomic with the value
 * it returned the first time; a missing receive WQE is an RNR NAK; bad
 * requests, keys and lengths are NAKed and put the QP in the error state
 * (IBTA classes C and D), as the local transport does.  ACKs are owed
 * for packets that ask for one and go out once per batch of packets.
 * UC: no ACK or NAK; a gap or an error drops the message.
 */

#include "softmr_wire_conn.h"

/* What handling a request came to */
enum softmr_resp_res {
	SOFTMR_RESP_OK,		/* done: the expected PSN moves on */
	SOFTMR_RESP_ANSWERED,	/* a read or atomic: moved on and answered */
	SOFTMR_RESP_RNR,	/* no receive WQE: RNR NAK, try again */
	SOFTMR_RESP_INV,	/* invalid request */
	SOFTMR_RESP_ACC,	/* remote access error */
	SOFTMR_RESP_OP,		/* remote operational error */
};

static void softmr_wire_resp_send_aeth(struct softmr_wire_conn *wc,
				       u8 syndrome, u32 psn)
{
	struct softmr_pkt pkt = {
		.opcode = SOFTMR_OP_RC | SOFTMR_OP_ACK,
		.psn = psn,
		.syndrome = syndrome,
		.msn = wc->msn,
	};

	softmr_wire_conn_send_hdr(wc, &pkt);
}

/* AETH syndrome of an ACK: credits not counted */
#define SOFTMR_AETH_ACK_UNLIMITED	(SOFTMR_AETH_ACK | 0x1f)

/**
 * softmr_wire_resp_ack() - send the ACK owed at the end of a batch
 * @wc: the connection (sq.lock held)
 */
void softmr_wire_resp_ack(struct softmr_wire_conn *wc)
{
	if (!wc->ack_owed)
		return;
	wc->ack_owed = false;
	softmr_wire_resp_send_aeth(wc, SOFTMR_AETH_ACK_UNLIMITED, wc->ack_psn);
}

/* A NAK (it acknowledges what came before, so no ACK is owed). */
static void softmr_wire_resp_nak(struct softmr_wire_conn *wc, u8 syndrome,
				 u32 psn)
{
	wc->ack_owed = false;
	softmr_count(wc->qp->sdev, SOFTMR_CNT_WIRE_NAKS_SENT, 1);
	softmr_wire_resp_send_aeth(wc, syndrome, psn);
}

/* Complete the held receive WQE. */
static void softmr_wire_resp_complete(struct softmr_wire_conn *wc,
				      enum ib_wc_status status, u32 opcode,
				      u32 byte_len,
				      const struct softmr_pkt *pkt)
{
	struct softmr_qp *qp = wc->qp;
	struct ib_uverbs_wc wc_ = {
		.wr_id = wc->rwqe->wr_id,
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.qp_num = qp->ibqp.qp_num,
		.src_qp = wc->dqpn,
		.port_num = 1,
	};
	bool solicited = false;

	wc->rwqe_held = false;
	if (status == IB_WC_SUCCESS && pkt) {
		if (pkt->flags & SOFTMR_PF_IMMDT) {
			wc_.ex.imm_data = pkt->imm;
			wc_.wc_flags |= IB_WC_WITH_IMM;
		} else if (pkt->flags & SOFTMR_PF_IETH) {
			wc_.ex.invalidate_rkey = pkt->inv_rkey;
			wc_.wc_flags |= IB_WC_WITH_INVALIDATE;
		}
		solicited = pkt->se;
	}
	if (status != IB_WC_SUCCESS && status != IB_WC_WR_FLUSH_ERR)
		softmr_count(qp->sdev, SOFTMR_CNT_ERR_COMPLETIONS, 1);
	softmr_count(qp->sdev, SOFTMR_CNT_RECV_WQES, 1);
	softmr_cq_post(to_scq(qp->ibqp.recv_cq), &wc_, &qp->ibqp, solicited);
}

/* Take a receive WQE into @wc->rwqe.  Return: OK, RNR or OP. */
static enum softmr_resp_res softmr_wire_resp_take(struct softmr_wire_conn *wc)
{
	struct softmr_qp *qp = wc->qp;
	struct softmr_wq *rq = softmr_qp_rq(qp);
	enum softmr_resp_res r = SOFTMR_RESP_OK;
	u32 n;

	if (wc->rwqe_held)
		return SOFTMR_RESP_OK;
	mutex_lock(&rq->lock);
	if (softmr_wq_pending(rq, &n)) {
		r = SOFTMR_RESP_OP;	/* the owner's ring is garbage */
	} else if (!n) {
		r = SOFTMR_RESP_RNR;
	} else {
		memcpy(wc->rwqe, softmr_wq_take(rq), rq->stride);
		softmr_wq_consume(rq);
		wc->rwqe_held = true;
		wc->roff = 0;
		if (qp->srq)
			softmr_srq_check_limit(qp->srq);
	}
	mutex_unlock(&rq->lock);
	return r;
}

/* SEND FIRST, MIDDLE, LAST, ONLY (with immediate or invalidate). */
static enum softmr_resp_res softmr_wire_resp_send(struct softmr_wire_conn *wc,
						  const struct softmr_pkt *pkt)
{
	struct softmr_qp *qp = wc->qp;
	struct softmr_wq *rq = softmr_qp_rq(qp);
	struct softmr_recv_wqe *rwqe = wc->rwqe;
	enum softmr_resp_res r;
	u64 n;

	if (pkt->flags & SOFTMR_PF_FIRST) {
		r = softmr_wire_resp_take(wc);
		if (r != SOFTMR_RESP_OK)
			return r;
		wc->roff = 0;	/* UC: a WQE left by a lost message again */
	}
	if (!wc->rwqe_held)
		return SOFTMR_RESP_INV;
	if (pkt->data_len) {
		if (rwqe->num_sge > rq->max_sge) {
			softmr_wire_resp_complete(wc, IB_WC_LOC_QP_OP_ERR,
						  IB_WC_RECV, 0, NULL);
			return SOFTMR_RESP_OP;
		}
		if (softmr_sgl_resolve(qp->sdev, qp->ibqp.pd, rwqe->sge,
				       rwqe->num_sge, IB_ACCESS_LOCAL_WRITE,
				       wc->sgl, NULL) != IB_WC_SUCCESS) {
			softmr_sgl_release(wc->sgl);
			softmr_wire_resp_complete(wc, IB_WC_LOC_PROT_ERR,
						  IB_WC_RECV, 0, NULL);
			return SOFTMR_RESP_OP;
		}
		if (wc->roff + pkt->data_len > wc->sgl->len) {
			softmr_sgl_release(wc->sgl);
			softmr_wire_resp_complete(wc, IB_WC_LOC_LEN_ERR,
						  IB_WC_RECV, 0, NULL);
			return SOFTMR_RESP_INV;
		}
		n = softmr_wire_sgl_copy(wc->sgl, wc->roff, (void *)pkt->payload,
					 pkt->data_len, SOFTMR_TO_MR,
					 IB_ACCESS_LOCAL_WRITE);
		softmr_sgl_release(wc->sgl);
		if (n != pkt->data_len) {
			softmr_wire_resp_complete(wc, IB_WC_LOC_PROT_ERR,
						  IB_WC_RECV, 0, NULL);
			return SOFTMR_RESP_OP;
		}
		wc->roff += n;
	}
	if (!(pkt->flags & SOFTMR_PF_LAST))
		return SOFTMR_RESP_OK;
	if (pkt->flags & SOFTMR_PF_IETH) {
		if (!softmr_key_invalidate(qp, pkt->inv_rkey, true)) {
			softmr_wire_resp_complete(wc, IB_WC_REM_INV_REQ_ERR,
						  IB_WC_RECV, 0, NULL);
			return SOFTMR_RESP_INV;
		}
		softmr_count(qp->sdev, SOFTMR_CNT_REMOTE_INVS, 1);
	}
	softmr_wire_resp_complete(wc, IB_WC_SUCCESS, IB_WC_RECV, wc->roff, pkt);
	return SOFTMR_RESP_OK;
}

/* RDMA WRITE FIRST, MIDDLE, LAST, ONLY (with immediate). */
static enum softmr_resp_res softmr_wire_resp_write(struct softmr_wire_conn *wc,
						   const struct softmr_pkt *pkt)
{
	struct softmr_qp *qp = wc->qp;
	enum softmr_resp_res r;
	struct softmr_mr *mr;
	u32 key;
	int err;

	if (pkt->flags & SOFTMR_PF_FIRST) {
		wc->wva = pkt->va;
		wc->wrkey = pkt->rkey;
		wc->wlen = pkt->dma_len;
		wc->woff = 0;
		if (wc->wlen) {
			mr = softmr_rkey_lookup(qp, wc->wrkey, wc->wva, wc->wlen,
						IB_ACCESS_REMOTE_WRITE, &key,
						NULL);
			if (!mr)
				return SOFTMR_RESP_ACC;
			/*
			 * ODP: the message's pages with one fault; RC only:
			 * a UC peer could start a message (and its 4 MiB
			 * prefetch) with every packet
			 */
			if (!wc->uc)
				softmr_odp_prefetch_ahead(mr, wc->wva, wc->wlen,
							  true);
			softmr_mr_put(mr);
		}
	}
	/* with immediate data: a receive WQE before anything is written */
	if (pkt->flags & SOFTMR_PF_IMMDT) {
		r = softmr_wire_resp_take(wc);
		if (r != SOFTMR_RESP_OK)
			return r;
	}
	if (pkt->data_len) {
		if (wc->woff + pkt->data_len > wc->wlen)
			return SOFTMR_RESP_INV;
		mr = softmr_rkey_lookup(qp, wc->wrkey, wc->wva + wc->woff,
					pkt->data_len, IB_ACCESS_REMOTE_WRITE,
					&key, NULL);
		if (!mr)
			return SOFTMR_RESP_ACC;
		err = softmr_mr_copy_key(mr, key, wc->wva + wc->woff,
					 (void *)pkt->payload, pkt->data_len,
					 SOFTMR_TO_MR, IB_ACCESS_REMOTE_WRITE);
		softmr_mr_put(mr);
		if (err)
			return SOFTMR_RESP_ACC;
		wc->woff += pkt->data_len;
	}
	if (!(pkt->flags & SOFTMR_PF_LAST))
		return SOFTMR_RESP_OK;
	if (wc->woff != wc->wlen)
		return SOFTMR_RESP_INV;
	if (pkt->flags & SOFTMR_PF_IMMDT)
		softmr_wire_resp_complete(wc, IB_WC_SUCCESS,
					  IB_WC_RECV_RDMA_WITH_IMM, wc->wlen,
					  pkt);
	return SOFTMR_RESP_OK;
}

/*
 * Send read response packets @from.. of @res (a duplicate asks from the
 * middle: MIDDLE.., LAST, as rxe's responder replays and its requester
 * expects).  Return: OK, or ACC when the memory is no longer readable.
 */
static enum softmr_resp_res
softmr_wire_resp_read_send(struct softmr_wire_conn *wc,
			   const struct softmr_wire_res *res, u32 from)
{
	struct softmr_mr *mr = NULL;
	u32 i, key = 0;

	if (res->len) {
		mr = softmr_rkey_lookup(wc->qp, res->rkey, res->va, res->len,
					IB_ACCESS_REMOTE_READ, &key, NULL);
		if (!mr)
			return SOFTMR_RESP_ACC;
		if (!from)
			softmr_odp_prefetch_ahead(mr, res->va, res->len, false);
	}
	for (i = from; i < res->npkts; i++) {
		u64 off = (u64)i * wc->mtu;
		u32 n = min_t(u64, wc->mtu, res->len - off);
		struct softmr_pkt pkt = {
			.psn = softmr_psn_add(res->psn, i),
			.syndrome = SOFTMR_AETH_ACK_UNLIMITED,
			.msn = wc->msn,
		};
		struct sk_buff *skb;
		u8 *p;

		/* a replay from the middle goes on as MIDDLE.., LAST */
		if (res->npkts == 1)
			pkt.opcode = SOFTMR_OP_READ_RESP_ONLY;
		else if (!i)
			pkt.opcode = SOFTMR_OP_READ_RESP_FIRST;
		else if (i == res->npkts - 1)
			pkt.opcode = SOFTMR_OP_READ_RESP_LAST;
		else
			pkt.opcode = SOFTMR_OP_READ_RESP_MIDDLE;
		skb = softmr_wire_conn_pkt(wc, &pkt, n, &p);
		if (!skb)
			break;	/* lost: the requester asks again */
		if (n && softmr_mr_copy_key(mr, key, res->va + off, p, n,
					    SOFTMR_FROM_MR,
					    IB_ACCESS_REMOTE_READ)) {
			kfree_skb(skb);
			softmr_mr_put(mr);
			return SOFTMR_RESP_ACC;
		}
		softmr_wire_conn_send(wc, skb);
		if (!(i % 64)) {
			cond_resched();
			if (READ_ONCE(wc->qp->dying) ||
			    !softmr_qp_receives(wc->qp))
				break;
		}
	}
	if (mr)
		softmr_mr_put(mr);
	return SOFTMR_RESP_OK;
}

/* A new responder resource (the oldest is reused). */
static struct softmr_wire_res *softmr_wire_res_new(struct softmr_wire_conn *wc)
{
	struct softmr_wire_res *res = &wc->res[wc->res_next];

	wc->res_next = (wc->res_next + 1) % wc->nres;
	return res;
}

/* RDMA READ request */
static enum softmr_resp_res softmr_wire_resp_read(struct softmr_wire_conn *wc,
						  const struct softmr_pkt *pkt)
{
	struct softmr_wire_res *res;
	enum softmr_resp_res r;
	u32 npkts;

	if (!wc->nres || pkt->dma_len > SOFTMR_MAX_MSG_SZ)
		return SOFTMR_RESP_INV;
	npkts = pkt->dma_len ? DIV_ROUND_UP_ULL((u64)pkt->dma_len, wc->mtu) : 1;
	/* as the requester refuses: far within the 24-bit PSN space */
	if (npkts >= BIT(22))
		return SOFTMR_RESP_INV;
	res = softmr_wire_res_new(wc);
	*res = (struct softmr_wire_res){
		.op = SOFTMR_OP_READ_REQ, .psn = pkt->psn, .npkts = npkts,
		.va = pkt->va, .rkey = pkt->rkey, .len = pkt->dma_len,
	};
	r = softmr_wire_resp_read_send(wc, res, 0);
	if (r != SOFTMR_RESP_OK) {
		res->op = 0;
		return r;
	}
	wc->epsn = softmr_psn_add(pkt->psn, npkts);
	return SOFTMR_RESP_ANSWERED;
}

static void softmr_wire_resp_atomic_ack(struct softmr_wire_conn *wc,
					const struct softmr_wire_res *res)
{
	struct softmr_pkt pkt = {
		.opcode = SOFTMR_OP_RC | SOFTMR_OP_ATOMIC_ACK,
		.psn = res->psn,
		.syndrome = SOFTMR_AETH_ACK_UNLIMITED,
		.msn = wc->msn,
		.orig = res->orig,
	};

	softmr_wire_conn_send_hdr(wc, &pkt);
}

/* CMP_SWAP and FETCH_ADD */
static enum softmr_resp_res
softmr_wire_resp_atomic(struct softmr_wire_conn *wc,
			const struct softmr_pkt *pkt)
{
	bool cmp_swap = (pkt->opcode & 0x1f) == SOFTMR_OP_CMP_SWAP;
	struct softmr_wire_res *res;
	struct softmr_mr *mr;
	u64 orig;
	u32 key;
	int err;

	if (!wc->nres || (pkt->va & 7))
		return SOFTMR_RESP_INV;
	mr = softmr_rkey_lookup(wc->qp, pkt->rkey, pkt->va, sizeof(u64),
				IB_ACCESS_REMOTE_ATOMIC, &key, NULL);
	if (!mr)
		return SOFTMR_RESP_ACC;
	err = softmr_mr_atomic_key(mr, key, pkt->va, cmp_swap,
				   cmp_swap ? pkt->comp : pkt->swap_add,
				   pkt->swap_add, &orig);
	softmr_mr_put(mr);
	if (err)
		return err == -EINVAL ? SOFTMR_RESP_INV : SOFTMR_RESP_ACC;
	res = softmr_wire_res_new(wc);
	*res = (struct softmr_wire_res){
		.op = pkt->opcode & 0x1f, .psn = pkt->psn, .npkts = 1,
		.va = pkt->va, .rkey = pkt->rkey, .orig = orig,
	};
	wc->epsn = softmr_psn_add(pkt->psn, 1);
	wc->msn = (wc->msn + 1) & SOFTMR_AETH_MSN_MASK;
	softmr_wire_resp_atomic_ack(wc, res);
	return SOFTMR_RESP_ANSWERED;
}

/* A duplicate request (RC): acknowledge or answer it again. */
static void softmr_wire_resp_dup(struct softmr_wire_conn *wc,
				 const struct softmr_pkt *pkt)
{
	u8 op = pkt->opcode & 0x1f;
	u32 i;

	softmr_count(wc->qp->sdev, SOFTMR_CNT_WIRE_DUP_REQUESTS, 1);
	if (!(pkt->flags & (SOFTMR_PF_READ | SOFTMR_PF_ATOMIC))) {
		wc->ack_owed = true;
		wc->ack_psn = softmr_psn_add(wc->epsn, -1);
		return;
	}
	for (i = 0; i < wc->nres; i++) {
		struct softmr_wire_res *res = &wc->res[i];
		s32 d = softmr_psn_diff(pkt->psn, res->psn);

		if (res->op != op || d < 0 || d >= res->npkts)
			continue;
		/* the rest of that read, asked for as it is: else dropped */
		if (op == SOFTMR_OP_READ_REQ && pkt->rkey == res->rkey &&
		    pkt->va == res->va + (u64)d * wc->mtu &&
		    pkt->dma_len == res->len - (u64)d * wc->mtu)
			softmr_wire_resp_read_send(wc, res, d);
		else if (!d)
			softmr_wire_resp_atomic_ack(wc, res);
		return;
	}
	/* not (or no longer) a resource here: dropped */
}

/* UC: a gap or an error loses the message in progress. */
static void softmr_wire_resp_uc(struct softmr_wire_conn *wc,
				const struct softmr_pkt *pkt)
{
	enum softmr_msg_state next;
	enum softmr_resp_res r;

	if (pkt->psn != wc->epsn)
		wc->mstate = SOFTMR_MSG_NONE;	/* a held WQE is reused */
	wc->epsn = softmr_psn_add(pkt->psn, 1);
	if (softmr_resp_opseq(wc->mstate, pkt->opcode, &next) ||
	    softmr_pkt_check_len(pkt, wc->mtu)) {
		wc->mstate = SOFTMR_MSG_NONE;
		return;
	}
	if (pkt->flags & SOFTMR_PF_SEND)
		r = softmr_wire_resp_send(wc, pkt);
	else
		r = softmr_wire_resp_write(wc, pkt);
	if (r != SOFTMR_RESP_OK) {
		softmr_count(wc->qp->sdev, SOFTMR_CNT_UD_DROPS, 1);
		wc->mstate = SOFTMR_MSG_NONE;
		return;
	}
	wc->mstate = next;
}

/* What a receive WQE held by a failed message completes with */
static enum ib_wc_status softmr_wire_resp_status(enum softmr_resp_res r)
{
	switch (r) {
	case SOFTMR_RESP_ACC:
		return IB_WC_REM_ACCESS_ERR;
	case SOFTMR_RESP_OP:
		return IB_WC_REM_OP_ERR;
	default:
		return IB_WC_REM_INV_REQ_ERR;
	}
}

static u8 softmr_wire_nak_code(enum softmr_resp_res r)
{
	switch (r) {
	case SOFTMR_RESP_ACC:
		return SOFTMR_NAK_REM_ACCESS;
	case SOFTMR_RESP_OP:
		return SOFTMR_NAK_REM_OP;
	default:
		return SOFTMR_NAK_INVALID_REQ;
	}
}

/**
 * softmr_wire_resp_rx() - a request from the peer's requester
 * @wc: the connection (sq.lock held)
 * @pkt: an RC or UC request packet
 */
void softmr_wire_resp_rx(struct softmr_wire_conn *wc,
			 const struct softmr_pkt *pkt)
{
	struct softmr_qp *qp = wc->qp;
	enum softmr_msg_state next = wc->mstate;
	enum softmr_resp_res r;
	u16 f = pkt->flags;

	if (!softmr_qp_receives(qp))
		return;
	if (wc->uc) {
		softmr_wire_resp_uc(wc, pkt);
		return;
	}
	switch (softmr_resp_psn(wc->epsn, pkt->psn)) {
	case SOFTMR_SEQ_AHEAD:
		/* packets were lost: say so once, drop until they come */
		if (!wc->nak_sent) {
			wc->nak_sent = true;
			softmr_wire_resp_nak(wc, SOFTMR_AETH_NAK |
					     SOFTMR_NAK_PSN_SEQ, wc->epsn);
		}
		return;
	case SOFTMR_SEQ_DUP:
		softmr_wire_resp_dup(wc, pkt);
		return;
	case SOFTMR_SEQ_NEW:
		break;
	}
	wc->nak_sent = false;
	if (softmr_resp_opseq(wc->mstate, pkt->opcode, &next) ||
	    softmr_pkt_check_len(pkt, wc->mtu))
		r = SOFTMR_RESP_INV;
	else if (f & SOFTMR_PF_SEND)
		r = softmr_wire_resp_send(wc, pkt);
	else if (f & SOFTMR_PF_WRITE)
		r = softmr_wire_resp_write(wc, pkt);
	else if (f & SOFTMR_PF_READ)
		r = softmr_wire_resp_read(wc, pkt);
	else
		r = softmr_wire_resp_atomic(wc, pkt);

	switch (r) {
	case SOFTMR_RESP_OK:
		wc->epsn = softmr_psn_add(pkt->psn, 1);
		wc->mstate = next;
		if (f & SOFTMR_PF_LAST)
			wc->msn = (wc->msn + 1) & SOFTMR_AETH_MSN_MASK;
		if (pkt->ackreq) {
			wc->ack_owed = true;
			wc->ack_psn = pkt->psn;
		}
		break;
	case SOFTMR_RESP_ANSWERED:
		if (f & SOFTMR_PF_READ)
			wc->msn = (wc->msn + 1) & SOFTMR_AETH_MSN_MASK;
		wc->ack_owed = false;	/* the answer acknowledges */
		break;
	case SOFTMR_RESP_RNR:
		wc->nak_sent = true;	/* what follows is ahead: dropped */
		softmr_wire_resp_nak(wc, SOFTMR_AETH_RNR_NAK |
				     (READ_ONCE(qp->attr.min_rnr_timer) & 0x1f),
				     pkt->psn);
		break;
	default:
		softmr_wire_resp_nak(wc, SOFTMR_AETH_NAK |
				     softmr_wire_nak_code(r), pkt->psn);
		if (wc->rwqe_held)
			softmr_wire_resp_complete(wc, softmr_wire_resp_status(r),
						  IB_WC_RECV, 0, NULL);
		softmr_qp_set_error(qp);
		break;
	}
}

/**
 * softmr_wire_resp_flush() - the QP is in the error state
 * @wc: the connection (sq.lock held)
 *
 * A receive WQE a SEND was being scattered into completes flushed.
 */
void softmr_wire_resp_flush(struct softmr_wire_conn *wc)
{
	if (wc->rwqe_held)
		softmr_wire_resp_complete(wc, IB_WC_WR_FLUSH_ERR, IB_WC_RECV, 0,
					  NULL);
	wc->mstate = SOFTMR_MSG_NONE;
}
