// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The fast lane of a user QP's send queue run (softmr_sq_process_budget()
 * with key caches): a small RDMA WRITE between pinned or DM MRs, or a
 * small SEND into such a receive WQE, to the partner the run holds,
 * through the keys the run's caches hold, is checked and copied here in
 * one go, without the general path's SG lists, cursor,
 * spans and the reference each of those takes and drops per WQE.
 *
 * The lane only reads what the general path left: it takes nothing and
 * keeps nothing.  The caches' own references (struct softmr_key_cache,
 * struct softmr_conn_cache) keep the MRs and the partner alive over the
 * copy; only the run that owns them changes them, and it is here.  Every
 * check the general path makes for such a WQE is made again on each WQE,
 * from the WQE's copy: opcode, flags, lengths, each key still the MR's
 * and its dereg not begun, PD, range and access of both MRs (rereg may
 * change PD and access in place), the partner still the checked one and
 * its qp_access_flags.  When anything differs, or the WQE is of another
 * shape, the lane says SOFTMR_SLOW before it has changed anything, and
 * the general path runs the WQE from the start, with its own errors.
 * A check added to the general path for such a WQE (softmr_req_prepare(),
 * softmr_sgl_resolve(), softmr_key_cache_get(), softmr_rkey_lookup(),
 * softmr_req_cached_peer()) belongs here too; they point here.
 *
 * The lane runs wherever a run has key caches: every run of a user QP's
 * send queue, the doorbell's in the poster's context, the poller's and the
 * engine worker's (softmr_sq_process_budget()).
 */

#include <linux/highmem.h>

#include "softmr.h"

/*
 * Does the entry @kc holds answer @key on @sdev, as a pinned or DM MR of
 * @pd that allows @access over [@iova, @iova + @len)?  The same checks as
 * softmr_key_cache_get() and its callers, for the kinds whose pages stay.
 */
static bool softmr_fast_key(const struct softmr_key_cache *kc,
			    struct softmr_dev *sdev, u32 key, struct ib_pd *pd,
			    u64 iova, u32 len, int access)
{
	struct softmr_mr *mr = kc->mr;

	return mr && kc->key == key && kc->sdev == sdev &&
	       (mr->kind == SOFTMR_MR_PINNED || mr->kind == SOFTMR_MR_DM) &&
	       softmr_key_cache_live(mr, key) &&
	       READ_ONCE(mr->ibmr.pd) == pd &&
	       !softmr_mr_check(mr, iova, len, access);
}

/* The partner @req's run holds for @qp, if it still is the checked one. */
static struct softmr_qp *softmr_fast_peer(struct softmr_qp *qp,
					  const struct softmr_req *req)
{
	const struct softmr_conn_cache *c = &req->conn;
	struct softmr_qp *peer = c->held;

	if (!peer || !softmr_conn_cache_current(c, qp) ||
	    !softmr_conn_cache_holds(c, peer))
		return NULL;
	return peer;
}

/*
 * The data of a fast-lane WQE: inline, or in its one SGE within one page
 * of a pinned or DM MR the run's lkey cache holds (the checks of
 * softmr_req_prepare() and softmr_sgl_resolve() for it).  Sets @inl, or
 * @spage and @sofs; and @len.  False: not for the lane.
 */
static __always_inline bool
softmr_fast_src(struct softmr_qp *qp, const struct softmr_send_wqe *wqe,
		struct softmr_req *req, const void **inl, struct page **spage,
		unsigned int *sofs, u32 *len)
{
	const struct softmr_sge *sge = &wqe->sge[0];

	/* a zero-length message looks no key up: left to the general path */
	if (wqe->flags & SOFTMR_SEND_INLINE) {
		if (!wqe->num_sge || wqe->num_sge > qp->max_inline)
			return false;
		*len = wqe->num_sge;
		*inl = wqe->sge;
		return true;
	}
	if (wqe->num_sge != 1 || qp->sq.max_sge < 1)
		return false;
	*len = sge->length;
	if (!*len || *len > PAGE_SIZE ||
	    !softmr_fast_key(&req->lkeys, qp->sdev, sge->lkey, qp->ibqp.pd,
			     sge->addr, *len, 0))
		return false;
	*spage = softmr_fixed_page(req->lkeys.mr, sge->addr, sofs);
	return *spage && (size_t)*sofs + *len <= PAGE_SIZE;
}

/* Copy @len bytes of the fast lane's source to @dpage at @dofs. */
static __always_inline void
softmr_fast_copy(struct page *dpage, unsigned int dofs, const void *inl,
		 struct page *spage, unsigned int sofs, u32 len)
{
	void *src, *dst = kmap_local_page(dpage);

	if (inl) {
		memcpy(dst + dofs, inl, len);
	} else {
		src = kmap_local_page(spage);
		memcpy(dst + dofs, src + sofs, len);
		kunmap_local(src);
	}
	kunmap_local(dst);
}

/* A connected user QP's WQE of @opcode, and flags within @flags? */
static bool softmr_fast_shape(struct softmr_qp *qp,
			      const struct softmr_send_wqe *wqe, u32 flags)
{
	return !(wqe->flags & ~flags) &&
	       (qp->ibqp.qp_type == IB_QPT_RC ||
		qp->ibqp.qp_type == IB_QPT_UC) &&
	       !READ_ONCE(qp->wire_on);
}

/**
 * softmr_sq_fast_write() - run a small RDMA WRITE on the fast lane
 * @qp: the requester, a user RC or UC QP (sq.lock held)
 * @wqe: the WQE's copy
 * @req: the run, with its key caches and held partner
 *
 * Takes an RDMA WRITE without fence or solicited bit whose data, inline
 * or in one SGE, lies within one page of the source and lands within one
 * page of the destination, when the run's caches hold its lkey, its rkey
 * and its partner.
 *
 * Return: IB_WC_SUCCESS, the data written and @req->len set; or
 * SOFTMR_SLOW, nothing done.
 */
int softmr_sq_fast_write(struct softmr_qp *qp,
			 const struct softmr_send_wqe *wqe,
			 struct softmr_req *req)
{
	u64 raddr = wqe->wr.rdma.remote_addr;
	u32 rkey = wqe->wr.rdma.rkey;
	unsigned int sofs = 0, dofs;
	struct page *spage = NULL, *dpage;
	struct softmr_qp *peer;
	const void *inl = NULL;
	u32 len;

	if (wqe->opcode != IB_WR_RDMA_WRITE ||
	    !softmr_fast_shape(qp, wqe, SOFTMR_SEND_SIGNALED |
					SOFTMR_SEND_INLINE) ||
	    !softmr_fast_src(qp, wqe, req, &inl, &spage, &sofs, &len))
		return SOFTMR_SLOW;

	peer = softmr_fast_peer(qp, req);
	if (!peer ||
	    !(READ_ONCE(peer->attr.qp_access_flags) & IB_ACCESS_REMOTE_WRITE) ||
	    !softmr_fast_key(&req->rkeys, peer->sdev, rkey, peer->ibqp.pd,
			     raddr, len, IB_ACCESS_REMOTE_WRITE))
		return SOFTMR_SLOW;
	dpage = softmr_fixed_page(req->rkeys.mr, raddr, &dofs);
	if (!dpage || (size_t)dofs + len > PAGE_SIZE)
		return SOFTMR_SLOW;

	softmr_fast_copy(dpage, dofs, inl, spage, sofs, len);
	softmr_count(qp->sdev, SOFTMR_CNT_SQ_FAST_WRITES, 1);
	req->len = len;
	return IB_WC_SUCCESS;
}

/**
 * softmr_sq_fast_send() - run a small SEND on the fast lane
 * @qp: the requester, a user RC or UC QP (sq.lock held)
 * @wqe: the WQE's copy
 * @req: the run, with its key caches and held partner
 *
 * Takes a SEND or SEND_WITH_IMM without fence whose data, inline or in
 * one SGE, lies within one page of the source, when the run holds its
 * lkey and its partner, the partner has its own receive queue (no SRQ)
 * whose lock is free, and the receive WQE at its head has one SGE, as
 * long as the message or longer, within one page, through the key the
 * run's receive key cache holds.  The receive WQE's checks are those of
 * softmr_deliver() and softmr_rwqe_resolve(): its SGE count, its length
 * (at most SOFTMR_MAX_MSG_SZ) and its whole SGE against the MR (PD,
 * range, LOCAL_WRITE).  The partner check is made again under the receive
 * queue's lock.  Anything else (no receive WQE: the general path
 * waits, RNR) leaves the lane before a byte is written or the receive
 * WQE consumed.
 *
 * Return: IB_WC_SUCCESS, the message delivered, its receive completed and
 * @req->len set; or SOFTMR_SLOW, nothing done.
 */
int softmr_sq_fast_send(struct softmr_qp *qp,
			const struct softmr_send_wqe *wqe,
			struct softmr_req *req)
{
	unsigned int sofs = 0, dofs;
	struct page *spage = NULL, *dpage;
	const struct softmr_recv_wqe *rwqe;
	const struct softmr_sge *rsge;
	struct softmr_qp *peer;
	const void *inl = NULL;
	struct softmr_wq *rq;
	int st = SOFTMR_SLOW;
	u32 len, n;

	if ((wqe->opcode != IB_WR_SEND && wqe->opcode != IB_WR_SEND_WITH_IMM) ||
	    !softmr_fast_shape(qp, wqe, SOFTMR_SEND_SIGNALED |
					SOFTMR_SEND_INLINE |
					SOFTMR_SEND_SOLICITED) ||
	    !softmr_fast_src(qp, wqe, req, &inl, &spage, &sofs, &len))
		return SOFTMR_SLOW;
	peer = softmr_fast_peer(qp, req);
	if (!peer || peer->srq)
		return SOFTMR_SLOW;

	rq = softmr_qp_rq(peer);
	if (!mutex_trylock(&rq->lock))
		return SOFTMR_SLOW;
	/*
	 * the partner still the checked one, receiving, now that its queue
	 * is ours: a reconnect or RESET bumps conn_gen before it takes the
	 * lock, ERR is set before the queue is flushed
	 */
	if (!softmr_conn_cache_holds(&req->conn, peer) ||
	    softmr_wq_pending(rq, &n) || !n)
		goto out;
	rwqe = softmr_wq_take(rq);
	rsge = &rwqe->sge[0];
	/* softmr_sgl_resolve() refuses a scatter list above 2 GiB */
	if (rwqe->num_sge != 1 || rq->max_sge < 1 || rsge->length < len ||
	    rsge->length > SOFTMR_MAX_MSG_SZ ||
	    !softmr_fast_key(&req->rqkeys, peer->sdev, rsge->lkey,
			     peer->ibqp.pd, rsge->addr, rsge->length,
			     IB_ACCESS_LOCAL_WRITE))
		goto out;
	dpage = softmr_fixed_page(req->rqkeys.mr, rsge->addr, &dofs);
	if (!dpage || (size_t)dofs + len > PAGE_SIZE)
		goto out;

	softmr_fast_copy(dpage, dofs, inl, spage, sofs, len);
	softmr_wq_consume(rq);
	softmr_recv_complete(peer, rwqe->wr_id, IB_WC_SUCCESS, IB_WC_RECV, len,
			     req);
	softmr_count(qp->sdev, SOFTMR_CNT_SQ_FAST_SENDS, 1);
	req->len = len;
	st = IB_WC_SUCCESS;
out:
	mutex_unlock(&rq->lock);
	return st;
}
