// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The requester of an RC or UC connection on the wire.
 *
 * A WQE taken from the send queue is copied into the send window and gets
 * its PSNs (a read: one per response packet).  Packets go out from @spsn
 * while the congestion window allows (softmr_wire_cc.c); an ACK, a
 * read response or an atomic ACK answers WQEs, which complete in order
 * from the head of the window.  Loss is repaired go-back-N: a sequence
 * NAK or the retransmission timer moves @spsn to the oldest
 * unacknowledged PSN (retry_cnt times, then IB_WC_RETRY_EXC_ERR; a NAK,
 * or an ACK of a duplicate after a go-back, may move it forward: they may
 * name any PSN sent).  A read
 * or atomic whose answer was lost (a gap in its responses, or an answer
 * to something after it) is asked for again alone, and the answers after
 * it are taken as they come: going back N there would have the responder
 * send the whole window again for each answer that follows a loss.  An
 * RNR NAK stops sending for the responder's RNR timer (rnr_retry times, 7:
 * for ever).  UC sends and completes at once.
 *
 * Everything here runs under the QP's sq.lock; packets from the peer are
 * untrusted: an answer for a PSN never sent, out of order, or of the wrong
 * kind or length is ignored.
 */

#include "softmr_wire_conn.h"

/* Have the worker run at wc->deadline (now, if it has passed). */
static void softmr_wire_req_kick_at_deadline(struct softmr_wire_conn *wc)
{
	long delay = (long)(wc->deadline - jiffies);

	softmr_wire_conn_kick(wc, delay > 0 ? delay : 0);
}

static struct softmr_wire_wqe *softmr_win(struct softmr_wire_conn *wc, u32 i)
{
	return &wc->win[i % SOFTMR_WIRE_WINDOW];
}

static u32 softmr_win_end(const struct softmr_wire_wqe *w)
{
	return softmr_psn_add(w->psn, w->npkts);
}

/*
 * @w's first PSN not yet answered: a read's first missing response (what
 * arrived stays), anything else its first PSN (only reads count @got).
 */
static u32 softmr_win_missing(const struct softmr_wire_conn *wc,
			      const struct softmr_wire_wqe *w)
{
	return softmr_psn_add(w->psn, div_u64(w->got, wc->mtu));
}

static bool softmr_wire_is_atomic(u32 opcode)
{
	return opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
}

/* (Re)start the retransmission timer: something is outstanding. */
static void softmr_wire_req_arm(struct softmr_wire_conn *wc)
{
	if (wc->rnr_wait)	/* the RNR timer stands */
		return;
	if (softmr_wire_win_empty(wc) || !wc->timeout) {
		wc->timer_on = false;
		return;
	}
	wc->timer_on = true;
	wc->deadline = jiffies + wc->timeout;
	softmr_wire_conn_kick(wc, wc->timeout);
}

/* The opcode of packet @idx of a SEND or WRITE of @npkts packets. */
static u8 softmr_wire_msg_opcode(u32 wr_op, u32 idx, u32 npkts)
{
	bool first = idx == 0, last = idx == npkts - 1;

	if (wr_op == IB_WR_RDMA_WRITE || wr_op == IB_WR_RDMA_WRITE_WITH_IMM) {
		bool imm = wr_op == IB_WR_RDMA_WRITE_WITH_IMM;

		if (first && last)
			return imm ? SOFTMR_OP_WRITE_ONLY_IMM :
				     SOFTMR_OP_WRITE_ONLY;
		if (first)
			return SOFTMR_OP_WRITE_FIRST;
		if (last)
			return imm ? SOFTMR_OP_WRITE_LAST_IMM :
				     SOFTMR_OP_WRITE_LAST;
		return SOFTMR_OP_WRITE_MIDDLE;
	}
	if (first && last)
		return wr_op == IB_WR_SEND_WITH_IMM ? SOFTMR_OP_SEND_ONLY_IMM :
		       wr_op == IB_WR_SEND_WITH_INV ? SOFTMR_OP_SEND_ONLY_INV :
		       SOFTMR_OP_SEND_ONLY;
	if (first)
		return SOFTMR_OP_SEND_FIRST;
	if (last)
		return wr_op == IB_WR_SEND_WITH_IMM ? SOFTMR_OP_SEND_LAST_IMM :
		       wr_op == IB_WR_SEND_WITH_INV ? SOFTMR_OP_SEND_LAST_INV :
		       SOFTMR_OP_SEND_LAST;
	return SOFTMR_OP_SEND_MIDDLE;
}

/*
 * Send packet @idx of @w; @wc->sgl holds @w's gather list (unless inline).
 * @ask: a packet of a SEND or WRITE asks for an ACK (besides the last of
 * its message and every SOFTMR_WIRE_ACK_EVERY-th).
 * Return: 0 (sent, or lost for want of memory: retransmission repairs it),
 * -EFAULT when the gather failed.
 */
static int softmr_wire_req_send_one(struct softmr_wire_conn *wc,
				    struct softmr_wire_wqe *w, u32 idx,
				    bool ask)
{
	const struct softmr_send_wqe *wqe = w->wqe;
	struct softmr_pkt pkt = { .psn = softmr_psn_add(w->psn, idx) };
	u32 n = 0, op = wqe->opcode;
	u64 off = (u64)idx * wc->mtu;
	struct sk_buff *skb;
	u8 *p;

	switch (op) {
	case IB_WR_RDMA_READ:
		/* from the first response missing (IBTA 9.7.4.1.4) */
		pkt.opcode = SOFTMR_OP_READ_REQ;
		pkt.psn = softmr_win_missing(wc, w);
		pkt.va = wqe->wr.rdma.remote_addr + w->got;
		pkt.rkey = wqe->wr.rdma.rkey;
		pkt.dma_len = w->len - w->got;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		pkt.opcode = op == IB_WR_ATOMIC_CMP_AND_SWP ?
			     SOFTMR_OP_CMP_SWAP : SOFTMR_OP_FETCH_ADD;
		pkt.va = wqe->wr.atomic.remote_addr;
		pkt.rkey = wqe->wr.atomic.rkey;
		if (op == IB_WR_ATOMIC_CMP_AND_SWP) {
			pkt.swap_add = wqe->wr.atomic.swap;
			pkt.comp = wqe->wr.atomic.compare_add;
		} else {
			pkt.swap_add = wqe->wr.atomic.compare_add;
		}
		break;
	default:
		n = min_t(u64, wc->mtu, w->len - off);
		pkt.opcode = softmr_wire_msg_opcode(op, idx, w->npkts);
		pkt.va = wqe->wr.rdma.remote_addr;
		pkt.rkey = wqe->wr.rdma.rkey;
		pkt.dma_len = w->len;
		pkt.imm = (__force __be32)wqe->imm_data;
		pkt.inv_rkey = wqe->imm_data;
		if (idx == w->npkts - 1) {
			pkt.ackreq = true;
			pkt.se = (wqe->flags & SOFTMR_SEND_SOLICITED) &&
				 op != IB_WR_RDMA_WRITE;
		} else if (ask || idx % SOFTMR_WIRE_ACK_EVERY ==
				  SOFTMR_WIRE_ACK_EVERY - 1) {
			pkt.ackreq = true;
		}
		break;
	}
	pkt.opcode |= wc->uc ? SOFTMR_OP_UC : SOFTMR_OP_RC;
	skb = softmr_wire_conn_pkt(wc, &pkt, n, &p);
	if (!skb)
		return 0;
	if (n && (wqe->flags & SOFTMR_SEND_INLINE)) {
		memcpy(p, (const u8 *)wqe->sge + off, n);
	} else if (n && softmr_wire_sgl_copy(wc->sgl, off, p, n,
					     SOFTMR_FROM_MR, 0) != n) {
		kfree_skb(skb);
		return -EFAULT;
	}
	softmr_wire_conn_send(wc, skb);
	return 0;
}

/*
 * @w's list (in @wc->sgl) is used for the first time, at its first
 * packet or first read response: the ODP pages of a message of several
 * packets are faulted in ahead, not one per packet.  Once: a go-back to
 * the first packet, which a peer's NAKs can force, does not again.
 */
static void softmr_wire_req_prefetch(struct softmr_wire_conn *wc,
				     struct softmr_wire_wqe *w, bool write)
{
	if (w->npkts > 1 && !w->prefetched) {
		w->prefetched = true;
		softmr_wire_sgl_prefetch(wc->sgl, write);
	}
}

/* Look up @w's gather list into @wc->sgl. */
static int softmr_wire_req_gather_list(struct softmr_wire_conn *wc,
				       struct softmr_wire_wqe *w)
{
	struct softmr_qp *qp = wc->qp;
	const struct softmr_send_wqe *wqe = w->wqe;

	softmr_sgl_release(wc->sgl);
	if ((wqe->flags & SOFTMR_SEND_INLINE) || w->resp)
		return 0;
	if (softmr_sgl_resolve(qp->sdev, qp->ibqp.pd, wqe->sge, wqe->num_sge,
			       0, wc->sgl, NULL) != IB_WC_SUCCESS)
		return -EFAULT;
	softmr_wire_req_prefetch(wc, w, false);
	return 0;
}

/* @w failed here: it completes in error when it reaches the head. */
static void softmr_wire_req_fail(struct softmr_wire_wqe *w,
				 enum ib_wc_status st)
{
	w->done = true;
	w->status = st;
}

/**
 * softmr_wire_req_push() - send what the packet window allows
 * @wc: the connection (sq.lock held)
 */
void softmr_wire_req_push(struct softmr_wire_conn *wc)
{
	enum ib_qp_state state = READ_ONCE(wc->qp->state);
	bool sent = false;
	u32 i;

	if (wc->rnr_wait || (state != IB_QPS_RTS && state != IB_QPS_SQD))
		return;
	for (i = wc->head; i != wc->tail; i++) {
		struct softmr_wire_wqe *w = softmr_win(wc, i);
		u32 end = softmr_win_end(w);
		bool listed = false;

		if (softmr_psn_diff(wc->spsn, end) >= 0)
			continue;	/* all sent */
		if (w->done && w->status != IB_WC_SUCCESS)
			break;		/* failed: nothing after it goes */
		/* answered, or asked for again already: not again */
		if (w->done || (w->resp && w->regap)) {
			wc->spsn = end;
			continue;
		}
		if (softmr_psn_diff(wc->spsn, w->psn) < 0)
			wc->spsn = w->psn;
		while (softmr_psn_diff(wc->spsn, end) < 0) {
			u32 idx = softmr_psn_diff(wc->spsn, w->psn);

			if (softmr_psn_diff(wc->spsn, wc->una) >=
			    (s32)wc->cc.cwnd)
				goto out;
			if (!listed && softmr_wire_req_gather_list(wc, w)) {
				softmr_wire_req_fail(w, IB_WC_LOC_PROT_ERR);
				goto out;
			}
			listed = true;
			if (w->resp)	/* one request for all its PSNs */
				idx = 0;
			if (softmr_wire_req_send_one(wc, w, idx,
						     softmr_wire_cc_ackreq(&wc->cc,
									   wc->spsn,
									   wc->una))) {
				softmr_wire_req_fail(w, IB_WC_LOC_PROT_ERR);
				goto out;
			}
			sent = true;
			wc->spsn = w->resp ? end : softmr_psn_add(wc->spsn, 1);
			if (softmr_psn_diff(wc->spsn, wc->hpsn) > 0)
				wc->hpsn = wc->spsn;
		}
	}
out:
	softmr_sgl_release(wc->sgl);
	if (sent && !wc->timer_on)
		softmr_wire_req_arm(wc);
}

/* UC: send the whole message now; it completes when sent. */
static int softmr_wire_req_uc(struct softmr_wire_conn *wc,
			      struct softmr_req *req, u32 npkts)
{
	struct softmr_wire_wqe w = {
		.wqe = req->wqe, .psn = wc->npsn, .npkts = npkts,
		.len = req->len,
	};
	u32 i;

	/* the gather list is the one the engine resolved */
	swap(*wc->sgl, req->local);
	for (i = 0; i < npkts; i++) {
		if (softmr_wire_req_send_one(wc, &w, i, false)) {
			swap(*wc->sgl, req->local);
			return IB_WC_LOC_PROT_ERR;
		}
		cond_resched();
	}
	swap(*wc->sgl, req->local);
	wc->npsn = softmr_psn_add(wc->npsn, npkts);
	return IB_WC_SUCCESS;
}

/**
 * softmr_wire_req_post() - a send WQE of a QP on the wire
 * @req: the WQE, validated, its gather list resolved (sq.lock held)
 *
 * Return: SOFTMR_POSTED (in the window: it completes when answered),
 * SOFTMR_STOP (the window is full: it stays at the head of the send
 * queue), or a status to complete it with now (UC; errors while nothing
 * is in flight).
 */
int softmr_wire_req_post(struct softmr_req *req)
{
	struct softmr_qp *qp = req->qp;
	struct softmr_wire_conn *wc = qp->wire;
	struct softmr_send_wqe *wqe = req->wqe;
	bool atomic = softmr_wire_is_atomic(wqe->opcode);
	bool resp = atomic || wqe->opcode == IB_WR_RDMA_READ;
	struct softmr_wire_wqe *w;
	u32 npkts;

	if (atomic && (req->len != sizeof(u64) || req->local.num != 1))
		return softmr_wire_win_empty(wc) ? IB_WC_LOC_LEN_ERR :
						   SOFTMR_STOP;
	npkts = atomic || !req->len ? 1 : DIV_ROUND_UP_ULL(req->len, wc->mtu);
	if (wc->uc)
		return softmr_wire_req_uc(wc, req, npkts);
	/* PSNs in flight stay far within the 24-bit space */
	if (npkts >= BIT(22))	/* 1 GiB and more at an MTU of 256 */
		return softmr_wire_win_empty(wc) ? IB_WC_LOC_LEN_ERR :
						   SOFTMR_STOP;
	if (wc->tail - wc->head >= SOFTMR_WIRE_WINDOW ||
	    (resp && wc->resp_out >= wc->resp_max) ||
	    softmr_psn_diff(softmr_psn_add(wc->npsn, npkts), wc->una) >=
	    BIT(22) || softmr_psn_diff(softmr_psn_add(wc->npsn, npkts),
				       wc->una) < 0)
		return SOFTMR_STOP;
	w = softmr_win(wc, wc->tail);
	memcpy(w->wqe, wqe, qp->sq.stride);
	w->psn = wc->npsn;
	w->npkts = npkts;
	w->len = req->len;
	w->got = 0;
	w->regap = false;
	w->resp = resp;
	w->done = false;
	w->prefetched = false;
	w->status = IB_WC_SUCCESS;
	wc->npsn = softmr_psn_add(wc->npsn, npkts);
	wc->tail++;
	if (resp)
		wc->resp_out++;
	softmr_wire_req_push(wc);
	return SOFTMR_POSTED;
}

/* Complete the answered WQEs at the head of the window, in order. */
static void softmr_wire_req_retire(struct softmr_wire_conn *wc)
{
	struct softmr_qp *qp = wc->qp;

	while (!softmr_wire_win_empty(wc)) {
		struct softmr_wire_wqe *w = softmr_win(wc, wc->head);

		if (!w->done)
			break;
		if (w->resp)
			wc->resp_out--;
		wc->head++;
		/*
		 * the slot first: a poller who sees the completion may post
		 * into it at once (w->wqe is the window's own copy)
		 */
		softmr_wq_retire(&qp->sq);
		softmr_send_complete(qp, w->wqe, w->status,
				     w->status == IB_WC_SUCCESS ? (u32)w->len : 0);
		if (w->status != IB_WC_SUCCESS) {
			u32 i;

			/*
			 * what was answered out of order behind it is flushed
			 * like the rest (softmr_wire_req_flush())
			 */
			for (i = wc->head; i != wc->tail; i++)
				softmr_win(wc, i)->done = false;
			softmr_qp_set_error(qp);
			break;
		}
	}
	if (!softmr_wire_win_empty(wc))
		return;
	wc->timer_on = false;
	/* sent by the worker once sq.lock is dropped */
	if (wc->sqd_owed && READ_ONCE(qp->state) == IB_QPS_SQD) {
		wc->sqd_owed = false;
		wc->sqd_fire = true;
	}
}

/* Send again from @psn (an unacknowledged PSN). */
static void softmr_wire_req_goback(struct softmr_wire_conn *wc, u32 psn)
{
	struct softmr_wire_wqe *w;
	u32 i;

	/*
	 * a read is asked again from its first missing response: what it
	 * got stays (responses come in order); @spsn at a read's first PSN
	 * sends its request
	 */
	for (i = wc->head; i != wc->tail; i++) {
		w = softmr_win(wc, i);
		if (w->resp && !w->done && softmr_psn_diff(psn, w->psn) > 0 &&
		    softmr_psn_diff(psn, softmr_win_end(w)) < 0)
			psn = w->psn;
	}
	wc->spsn = psn;
}

/* Progress: the peer answered; the retry counters start again. */
static void softmr_wire_req_progress(struct softmr_wire_conn *wc)
{
	wc->retry_left = wc->retry_cnt;
	wc->rnr_left = wc->rnr_retry;
	softmr_wire_req_arm(wc);
}

/*
 * Ask for @w (a read or an atomic whose answer was lost) again, alone: the
 * answers to what follows it are on their way, and asking for them too
 * (go-back-N) would have the responder send them all again -- under loss,
 * once for every answer that arrives after the gap.  Once, until an
 * answer to it arrives in order or the timer fires (which goes back N).
 */
static void softmr_wire_req_reask(struct softmr_wire_conn *wc,
				  struct softmr_wire_wqe *w)
{
	enum ib_qp_state state = READ_ONCE(wc->qp->state);

	if (w->regap || wc->rnr_wait ||
	    softmr_psn_diff(w->psn, wc->hpsn) >= 0 ||
	    (state != IB_QPS_RTS && state != IB_QPS_SQD))
		return;
	w->regap = true;
	softmr_wire_cc_loss(&wc->cc, softmr_win_missing(wc, w), wc->hpsn,
			    false);
	/* a read from its first missing response (send_one) */
	softmr_wire_req_send_one(wc, w, 0, false);
}

/* The oldest WQE not yet answered, or NULL. */
static struct softmr_wire_wqe *softmr_wire_req_oldest(struct softmr_wire_conn *wc)
{
	u32 i;

	for (i = wc->head; i != wc->tail; i++) {
		struct softmr_wire_wqe *w = softmr_win(wc, i);

		if (!w->done)
			return w;
	}
	return NULL;
}

/*
 * @una moved on: what it passed is not sent again, and it grows the
 * congestion window.
 */
static void softmr_wire_req_una_moved(struct softmr_wire_conn *wc)
{
	if (softmr_psn_diff(wc->spsn, wc->una) < 0)
		wc->spsn = wc->una;
	softmr_wire_cc_acked(&wc->cc, wc->una);
}

/*
 * An answer completed a WQE: @una moves to the oldest one still not
 * answered.  Only that is progress: a later WQE answered first (out of
 * order) neither resets the retries nor restarts the timer.
 */
static void softmr_wire_req_answered(struct softmr_wire_conn *wc)
{
	struct softmr_wire_wqe *w = softmr_wire_req_oldest(wc);
	u32 una = wc->una, missing;

	if (!w) {
		wc->una = wc->npsn;
	} else {
		missing = softmr_win_missing(wc, w);
		if (softmr_psn_diff(missing, wc->una) > 0)
			wc->una = missing;
	}
	softmr_wire_req_una_moved(wc);
	if (wc->una != una)
		softmr_wire_req_progress(wc);
}

/*
 * Everything up to and including @psn is acknowledged.  A read or atomic
 * there without its answer lost it: it is asked for again (alone); what
 * follows it is acknowledged all the same.
 * Return: false when such an answer is missing.
 */
static bool softmr_wire_req_acked(struct softmr_wire_conn *wc, u32 psn)
{
	bool all = true;
	u32 i;

	for (i = wc->head; i != wc->tail; i++) {
		struct softmr_wire_wqe *w = softmr_win(wc, i);
		u32 last = softmr_psn_add(w->psn, w->npkts - 1);

		if (softmr_psn_diff(w->psn, psn) > 0)
			break;
		if (w->done)
			continue;
		if (w->resp) {
			if (all)
				wc->una = softmr_win_missing(wc, w);
			all = false;
			softmr_wire_req_reask(wc, w);
			continue;
		}
		if (softmr_psn_diff(last, psn) <= 0)
			w->done = true;
	}
	if (all && softmr_psn_diff(psn, wc->una) >= 0)
		wc->una = softmr_psn_add(psn, 1);
	softmr_wire_req_una_moved(wc);
	return all;
}

/* The not yet answered WQE whose PSNs hold @psn, or NULL. */
static struct softmr_wire_wqe *softmr_wire_req_find(struct softmr_wire_conn *wc,
						    u32 psn)
{
	u32 i;

	for (i = wc->head; i != wc->tail; i++) {
		struct softmr_wire_wqe *w = softmr_win(wc, i);

		if (softmr_psn_diff(psn, w->psn) >= 0 &&
		    softmr_psn_diff(psn, softmr_win_end(w)) < 0)
			return w->done ? NULL : w;
	}
	return NULL;
}

static enum ib_wc_status softmr_wire_nak_status(u8 code)
{
	switch (code) {
	case SOFTMR_NAK_REM_ACCESS:
		return IB_WC_REM_ACCESS_ERR;
	case SOFTMR_NAK_REM_OP:
		return IB_WC_REM_OP_ERR;
	case SOFTMR_NAK_INVALID_RD:
		return IB_WC_REM_INV_RD_REQ_ERR;
	default:
		return IB_WC_REM_INV_REQ_ERR;
	}
}

/* An ACK or NAK (AETH) for @psn. */
static void softmr_wire_req_aeth(struct softmr_wire_conn *wc,
				 const struct softmr_pkt *pkt)
{
	u8 type = pkt->syndrome & SOFTMR_AETH_TYPE_MASK;
	u8 val = pkt->syndrome & 0x1f;
	struct softmr_wire_wqe *w;
	u32 psn = pkt->psn;

	/*
	 * only PSNs sent and not yet acknowledged mean something: up to the
	 * highest sent, for a go-back may have moved @spsn back over what
	 * the responder has already (its ACK of a duplicate says so)
	 */
	if (softmr_psn_diff(psn, wc->hpsn) >= 0 ||
	    softmr_psn_diff(psn, wc->una) < 0)
		return;
	if (type == SOFTMR_AETH_ACK) {
		if (softmr_wire_req_acked(wc, psn))
			softmr_wire_req_progress(wc);
		return;
	}
	softmr_count(wc->qp->sdev, SOFTMR_CNT_WIRE_NAKS_RCVD, 1);
	/*
	 * a NAK acknowledges what came before it (a read or atomic there
	 * without its answer is asked for again; the NAK stands)
	 */
	if (psn != wc->una)
		softmr_wire_req_acked(wc, softmr_psn_add(psn, -1));
	w = softmr_wire_req_find(wc, psn);
	if (!w)
		return;
	if (type == SOFTMR_AETH_RNR_NAK) {
		if (!wc->rnr_left) {
			softmr_wire_req_fail(w, IB_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (wc->rnr_left != 7)
			wc->rnr_left--;
		softmr_wire_req_goback(wc, psn);
		wc->rnr_wait = true;
		wc->timer_on = true;
		wc->deadline = jiffies + usecs_to_jiffies(softmr_rnr_usecs[val]);
		softmr_count(wc->qp->sdev, SOFTMR_CNT_RNR_WAITS, 1);
		softmr_wire_req_kick_at_deadline(wc);
		return;
	}
	if (type != SOFTMR_AETH_NAK)
		return;		/* reserved */
	if (val == SOFTMR_NAK_PSN_SEQ) {
		/* what followed an RNR NAK'd packet: resent after the wait */
		if (wc->rnr_wait)
			return;
		softmr_wire_cc_loss(&wc->cc, psn, wc->hpsn, false);
		softmr_wire_req_goback(wc, psn);
		softmr_wire_req_arm(wc);
		return;
	}
	softmr_wire_req_fail(w, softmr_wire_nak_status(val));
}

/*
 * Write @len bytes of a read response at @w->got into @w's scatter list.
 * Return: 0, or -EFAULT when the list no longer resolves or takes them.
 */
static int softmr_wire_req_scatter(struct softmr_wire_conn *wc,
				   struct softmr_wire_wqe *w,
				   const void *data, u32 len)
{
	struct softmr_qp *qp = wc->qp;
	int err = -EFAULT;

	if (softmr_sgl_resolve(qp->sdev, qp->ibqp.pd, w->wqe->sge,
			       w->wqe->num_sge, IB_ACCESS_LOCAL_WRITE,
			       wc->sgl, NULL) != IB_WC_SUCCESS)
		goto out;
	softmr_wire_req_prefetch(wc, w, true);
	if (softmr_wire_sgl_copy(wc->sgl, w->got, (void *)data, len,
				 SOFTMR_TO_MR, IB_ACCESS_LOCAL_WRITE) == len)
		err = 0;
out:
	softmr_sgl_release(wc->sgl);
	return err;
}

/* A read response packet. */
static void softmr_wire_req_read_resp(struct softmr_wire_conn *wc,
				      const struct softmr_pkt *pkt)
{
	struct softmr_wire_wqe *w = softmr_wire_req_find(wc, pkt->psn);
	bool last, start;
	u32 idx, want;
	u8 op;

	/* an answer to a PSN not yet sent is forged */
	if (!w || w->wqe->opcode != IB_WR_RDMA_READ ||
	    softmr_psn_diff(pkt->psn, wc->hpsn) >= 0)
		return;
	idx = div_u64(w->got, wc->mtu);
	if (pkt->psn != softmr_psn_add(w->psn, idx)) {
		/*
		 * After a gap: responses were lost, ask again now rather
		 * than when the timer fires (once, until one arrives in
		 * order); a response already seen: ignored.
		 */
		if (softmr_psn_diff(pkt->psn, softmr_psn_add(w->psn, idx)) > 0)
			softmr_wire_req_reask(wc, w);
		return;
	}
	/*
	 * the last response ends the message (LAST, ONLY), the first starts
	 * it (FIRST, ONLY); a read asked again from the middle starts anew
	 */
	op = pkt->opcode & 0x1f;
	last = op == SOFTMR_OP_READ_RESP_LAST || op == SOFTMR_OP_READ_RESP_ONLY;
	start = op == SOFTMR_OP_READ_RESP_FIRST || op == SOFTMR_OP_READ_RESP_ONLY;
	want = min_t(u64, wc->mtu, w->len - w->got);
	if (last != (idx == w->npkts - 1) || (!idx && !start) ||
	    pkt->data_len != want)
		return;
	/* an answer in order: a later gap may ask again */
	w->regap = false;
	/*
	 * it answers everything before it (a read or atomic there without
	 * its answer is asked for again; this one goes on)
	 */
	if (w->psn != wc->una)
		softmr_wire_req_acked(wc, softmr_psn_add(w->psn, -1));
	if (want && softmr_wire_req_scatter(wc, w, pkt->payload, want)) {
		softmr_wire_req_fail(w, IB_WC_LOC_PROT_ERR);
		return;
	}
	w->got += want;
	/*
	 * a long read is alive while its responses come (the oldest one:
	 * a later read's stream must not put off the repair of an earlier)
	 */
	if (wc->timer_on && !wc->rnr_wait && w == softmr_wire_req_oldest(wc))
		softmr_wire_req_arm(wc);
	if (idx == w->npkts - 1) {
		w->done = true;
		/* progress is a read done: a tail always lost fails it */
		softmr_wire_req_answered(wc);
	}
}

/* An atomic ACK: the original value for the atomic at its PSN. */
static void softmr_wire_req_atomic_ack(struct softmr_wire_conn *wc,
				       const struct softmr_pkt *pkt)
{
	struct softmr_qp *qp = wc->qp;
	struct softmr_wire_wqe *w = softmr_wire_req_find(wc, pkt->psn);
	u64 orig = pkt->orig;

	if (!w || !softmr_wire_is_atomic(w->wqe->opcode) ||
	    w->psn != pkt->psn || softmr_psn_diff(pkt->psn, wc->hpsn) >= 0)
		return;
	if (w->psn != wc->una)
		softmr_wire_req_acked(wc, softmr_psn_add(w->psn, -1));
	if (softmr_sgl_resolve(qp->sdev, qp->ibqp.pd, w->wqe->sge,
			       w->wqe->num_sge, IB_ACCESS_LOCAL_WRITE,
			       wc->sgl, NULL) != IB_WC_SUCCESS ||
	    softmr_wire_sgl_copy(wc->sgl, 0, &orig, sizeof(orig),
				 SOFTMR_TO_MR, IB_ACCESS_LOCAL_WRITE) !=
	    sizeof(orig))
		softmr_wire_req_fail(w, IB_WC_LOC_PROT_ERR);
	else
		w->done = true;
	softmr_sgl_release(wc->sgl);
	softmr_wire_req_answered(wc);
}

/**
 * softmr_wire_req_rx() - a response from the peer's responder
 * @wc: the connection (sq.lock held)
 * @pkt: an RC packet that is not a request
 */
void softmr_wire_req_rx(struct softmr_wire_conn *wc,
			const struct softmr_pkt *pkt)
{
	enum ib_qp_state state = READ_ONCE(wc->qp->state);

	if ((state != IB_QPS_RTS && state != IB_QPS_SQD &&
	     state != IB_QPS_SQE) || softmr_wire_win_empty(wc))
		return;
	if (pkt->flags & SOFTMR_PF_READ)
		softmr_wire_req_read_resp(wc, pkt);
	else if (pkt->flags & SOFTMR_PF_ATOMIC)
		softmr_wire_req_atomic_ack(wc, pkt);
	else
		softmr_wire_req_aeth(wc, pkt);
	softmr_wire_req_retire(wc);
	softmr_wire_req_push(wc);
}

/**
 * softmr_wire_req_timer() - the retransmission and RNR timers
 * @wc: the connection (sq.lock held)
 */
void softmr_wire_req_timer(struct softmr_wire_conn *wc)
{
	enum ib_qp_state state = READ_ONCE(wc->qp->state);

	if (!wc->timer_on || (state != IB_QPS_RTS && state != IB_QPS_SQD &&
			      state != IB_QPS_SQE))
		return;
	if (time_before(jiffies, wc->deadline)) {
		softmr_wire_req_kick_at_deadline(wc);
		return;
	}
	wc->timer_on = false;
	if (softmr_wire_win_empty(wc))
		return;
	if (!wc->rnr_wait)
		softmr_count(wc->qp->sdev, SOFTMR_CNT_WIRE_TIMEOUTS, 1);
	if (!wc->rnr_wait && wc->retry_left-- <= 0) {
		softmr_wire_req_fail(softmr_win(wc, wc->head),
				     IB_WC_RETRY_EXC_ERR);
		softmr_wire_req_retire(wc);
		return;
	}
	if (!wc->rnr_wait) {
		u32 i;

		/* what was asked for again may be lost too */
		for (i = wc->head; i != wc->tail; i++)
			softmr_win(wc, i)->regap = false;
		softmr_wire_cc_loss(&wc->cc, wc->una, wc->hpsn, true);
		softmr_wire_req_goback(wc, wc->una);
	}
	wc->rnr_wait = false;
	softmr_wire_req_push(wc);
	if (!wc->timer_on)
		softmr_wire_req_arm(wc);
}

/**
 * softmr_wire_req_flush() - complete the window in the error state
 * @wc: the connection (sq.lock held)
 *
 * WQEs answered before the first one that failed or was never answered
 * complete as they were; that one as it failed, and everything after it
 * with IB_WC_WR_FLUSH_ERR, in order.
 */
void softmr_wire_req_flush(struct softmr_wire_conn *wc)
{
	struct softmr_qp *qp = wc->qp;
	bool err = false;

	while (!softmr_wire_win_empty(wc)) {
		struct softmr_wire_wqe *w = softmr_win(wc, wc->head);
		enum ib_wc_status st = w->done && !err ? w->status :
					IB_WC_WR_FLUSH_ERR;

		/*
		 * answered out of order behind one that failed or was never
		 * answered: flushed, as everything after an error is
		 */
		err |= st != IB_WC_SUCCESS;
		wc->head++;
		softmr_wq_retire(&qp->sq);
		softmr_send_complete(qp, w->wqe, st,
				     st == IB_WC_SUCCESS ? (u32)w->len : 0);
	}
	wc->resp_out = 0;
	wc->timer_on = false;
	wc->rnr_wait = false;
}

/**
 * softmr_wire_req_reset() - forget the window (RESET, or a new RTS)
 * @wc: the connection (sq.lock held)
 */
void softmr_wire_req_reset(struct softmr_wire_conn *wc)
{
	wc->sqd_owed = false;
	wc->head = 0;
	wc->tail = 0;
	wc->resp_out = 0;
	wc->timer_on = false;
	wc->rnr_wait = false;
}
