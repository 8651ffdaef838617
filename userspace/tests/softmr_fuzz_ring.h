/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The ring kind: WQEs written straight into the mapped send, receive and
 * shared receive rings, producer indices that run ahead, go backwards or
 * wrap, consumer indices and the published QP state overwritten, then the
 * doorbells (the doorbell file, POST_SEND/POST_RECV/POST_SRQ_RECV with no
 * WRs, sometimes with garbage around them) and a drain of the CQs.
 *
 * One case: one batch of 1..8 WQEs into one ring, its index games and its
 * doorbells.  A round's share of plausible WQEs (an opcode the QP type
 * has, keys and ranges of live MRs) is 50, 70, 85 or 95 %, so that some
 * rounds carry mostly traffic and others mostly errors; the rest have one
 * or more fields out of range.
 */
#ifndef SOFTMR_FUZZ_RING_H
#define SOFTMR_FUZZ_RING_H

#include "softmr_fuzz_world.h"

static void fz_store_release(uint32_t *p, uint32_t v)
{
	atomic_store_explicit((_Atomic(uint32_t) *)p, v, memory_order_release);
}

static void *fz_wqe_at(struct softmr_wq *wq, uint32_t index)
{
	return (uint8_t *)wq->hdr + SOFTMR_WQ_HDR_SIZE +
	       (size_t)(index & (wq->num - 1)) * wq->stride;
}

/* A live MR of the world, by kind; NULL if there is none. */
static struct fz_mr *fz_pick_mr(bool remote)
{
	static const int w[M_NKIND] = {
		[M_PINNED] = 6, [M_ZB] = 3, [M_ODP] = 5, [M_IMPLICIT] = 4,
		[M_DM] = 3, [M_DMABUF] = 3, [M_HUGE] = 1, [M_PD2] = 1,
		[M_FREED] = 1,
	};
	int i, t = 0, r;

	if (remote && W.x_qpn && one_in(2))
		return &W.x_mr[rnd(2)];
	for (i = 0; i < M_NKIND; i++)
		t += w[i];
	r = rnd(t);
	for (i = 0; i < M_NKIND; i++) {
		if (r < w[i])
			break;
		r -= w[i];
	}
	if (!W.mr[i].len)	/* a kind this world lacks */
		i = M_PINNED;
	return &W.mr[i];
}

/* A key: mostly the MR's, sometimes another one or garbage. */
static uint32_t fz_key(const struct fz_mr *m, bool remote, bool plausible)
{
	uint32_t k = remote ? m->rkey : m->lkey;

	if (plausible || rnd(3))
		return k;
	switch (rnd(5)) {
	case 0:
		return fz_u32();
	case 1:
		return k ^ (1U << rnd(32));
	case 2:
		return k + 0x100;
	case 3:
		return remote ? m->lkey : m->rkey;
	default:
		return W.mr[M_FREED].lkey;
	}
}

/* An address and length for an access through @m. */
static void fz_range(const struct fz_mr *m, bool plausible, uint64_t *addr,
		     uint32_t *len)
{
	uint64_t off = m->len ? rnd(m->len) : 0;

	if (plausible || rnd(2)) {
		*len = rnd(4) ? rnd(4097) : rnd(65537);
		if (*len > m->len - off)
			*len = m->len - off;
		if (one_in(4))
			off &= ~7ULL;
		*addr = m->iova + off;
		/* an implicit ODP MR's range is the arena: already safe */
		return;
	}
	switch (rnd(6)) {
	case 0:	/* running over the end */
		*addr = m->iova + m->len - rnd(64);
		*len = 1 + rnd(8192);
		break;
	case 1:	/* overflowing addr + len */
		*addr = ~0ULL - rnd(4096);
		*len = fz_u32();
		break;
	case 2:	/* before the start */
		*addr = m->iova - 1 - rnd(4096);
		*len = fz_len();
		break;
	case 3:
		*addr = m->iova + off;
		*len = fz_u32();
		break;
	default:
		*addr = fz_wild_addr();
		*len = fz_len();
		break;
	}
	*addr = fz_safe(*addr);
}

static void fz_sge(struct softmr_sge *s, bool plausible)
{
	struct fz_mr *m = fz_pick_mr(false);
	uint64_t a;
	uint32_t l;

	fz_range(m, plausible, &a, &l);
	s->addr = a;
	s->length = l;
	s->lkey = fz_key(m, false, plausible);
}

static uint32_t fz_send_opcode(struct fz_qp *q, bool plausible)
{
	static const uint32_t rc[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};

	if (!plausible && one_in(3))
		return one_in(2) ? rnd(16) : fz_u32();
	switch (q->type) {
	case IBV_QPT_UD:
		return rc[rnd(2)];
	case IBV_QPT_UC:
		return rc[rnd(4)];
	default:
		return rc[rnd(FZ_N(rc))];
	}
}

/* One send WQE at @w (the ring's stride is @stride bytes). */
static void fz_send_wqe(struct fz_qp *q, struct softmr_send_wqe *w,
			uint32_t stride, bool plausible)
{
	uint32_t max_sge = (stride - SOFTMR_SEND_WQE_HDR_SIZE) /
			   sizeof(struct softmr_sge);
	struct fz_mr *rm = fz_pick_mr(true);
	uint32_t n, i, rlen;
	uint64_t raddr;

	if (!plausible && one_in(6)) {	/* pure garbage */
		memcpy(w, fz_in + rnd(FZ_IN_SIZE - stride), stride);
		return;
	}
	memset(w, 0, SOFTMR_SEND_WQE_HDR_SIZE);
	w->wr_id = r64();
	w->opcode = fz_send_opcode(q, plausible);
	w->flags = rnd(2) ? SOFTMR_SEND_SIGNALED : 0;
	if (one_in(4))
		w->flags |= rnd(SOFTMR_SEND_FLAGS_ALL + 1);
	if (!plausible && one_in(4))
		w->flags = fz_u32();
	w->imm_data = (uint32_t)r64();
	fz_range(rm, plausible, &raddr, &rlen);
	if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w->wr.atomic.remote_addr = plausible ? raddr & ~7ULL : raddr;
		w->wr.atomic.rkey = fz_key(rm, true, plausible);
		w->wr.atomic.compare_add = r64();
		w->wr.atomic.swap = r64();
	} else if (q->type == IBV_QPT_UD) {
		int peer = one_in(8) ? (int)rnd(FZ_NQP) : q->peer;

		w->wr.ud.ah = plausible || rnd(2) ? W.ah_num[rnd(2)] : fz_u32();
		w->wr.ud.remote_qpn = plausible && W.q[peer].qp ?
				      W.q[peer].qp->qp_num :
				      (one_in(2) ? 1 : fz_u32() & 0xffffff);
		w->wr.ud.remote_qkey = plausible || rnd(2) ? FZ_QKEY :
				       fz_u32();
	} else {
		w->wr.rdma.remote_addr = raddr;
		w->wr.rdma.rkey = fz_key(rm, true, plausible);
	}
	if (!plausible && one_in(8))
		w->reserved[rnd(2)] = fz_u32();
	if ((w->flags & SOFTMR_SEND_INLINE) && (plausible || rnd(2))) {
		/* inline: num_sge is the byte count of what follows */
		n = rnd(stride - SOFTMR_SEND_WQE_HDR_SIZE + 1);
		if (!plausible && one_in(3))
			n = fz_u32();
		w->num_sge = n;
		memcpy(w->sge, fz_in + rnd(FZ_IN_SIZE - stride),
		       stride - SOFTMR_SEND_WQE_HDR_SIZE);
		return;
	}
	n = rnd(max_sge + 1);
	if (w->opcode >= IBV_WR_RDMA_READ && w->opcode <=
	    IBV_WR_ATOMIC_FETCH_AND_ADD && plausible)
		n = 1;
	for (i = 0; i < n; i++) {
		fz_sge(&w->sge[i], plausible);
		if (w->opcode >= IBV_WR_ATOMIC_CMP_AND_SWP &&
		    w->opcode <= IBV_WR_ATOMIC_FETCH_AND_ADD && plausible)
			w->sge[i].length = 8;
	}
	w->num_sge = n;
	if (!plausible && one_in(3))
		w->num_sge = one_in(2) ? max_sge + rnd(4) : fz_u32();
}

static void fz_recv_wqe(struct softmr_recv_wqe *w, uint32_t stride,
			bool plausible)
{
	uint32_t max_sge = (stride - SOFTMR_RECV_WQE_HDR_SIZE) /
			   sizeof(struct softmr_sge);
	uint32_t n, i;

	if (!plausible && one_in(6)) {
		memcpy(w, fz_in + rnd(FZ_IN_SIZE - stride), stride);
		return;
	}
	w->wr_id = r64();
	w->reserved = plausible || rnd(4) ? 0 : fz_u32();
	n = rnd(max_sge + 1);
	for (i = 0; i < n; i++)
		fz_sge(&w->sge[i], plausible);
	w->num_sge = n;
	if (!plausible && one_in(3))
		w->num_sge = one_in(2) ? max_sge + rnd(4) : fz_u32();
}

/* ---- doorbells ---------------------------------------------------------------- */

/* POST_SEND / POST_RECV / POST_SRQ_RECV with no WRs (or garbage WRs). */
static void fz_uverbs_doorbell(uint32_t command, uint32_t handle)
{
	struct {
		struct ibv_post_recv cmd;
		uint8_t wrs[256];
	} c = {};
	size_t len = sizeof(c.cmd);
	const char *name = command == IB_USER_VERBS_CMD_POST_SEND ?
			   "post_send_doorbell" :
			   command == IB_USER_VERBS_CMD_POST_RECV ?
			   "post_recv_doorbell" : "post_srq_recv_doorbell";

	c.cmd.hdr.command = command;
	c.cmd.response = (uintptr_t)fz_out;
	c.cmd.qp_handle = handle;
	c.cmd.wqe_size = command == IB_USER_VERBS_CMD_POST_SEND ?
			 sizeof(struct ib_uverbs_send_wr) :
			 sizeof(struct ib_uverbs_recv_wr);
	if (one_in(16)) {	/* WRs in the command: refused for user QPs */
		memcpy(c.wrs, fz_in + rnd(FZ_IN_SIZE - sizeof(c.wrs)),
		       sizeof(c.wrs));
		c.cmd.wr_count = 1 + rnd(3);
		c.cmd.sge_count = rnd(3);
		if (one_in(4))
			c.cmd.wqe_size = fz_u32();
		if (one_in(4))
			c.cmd.response = fz_wild_addr();
		len = sizeof(c);
	}
	c.cmd.hdr.in_words = len / 4;
	c.cmd.hdr.out_words = sizeof(struct ib_uverbs_post_recv_resp) / 4;
	fz_sys(name, write(W.ctx->cmd_fd, &c, len) == (ssize_t)len ? 0 : -1);
}

static void fz_send_doorbell(struct fz_qp *q)
{
	uint32_t qpn = q->qp->qp_num;

	if (W.db_fd >= 0 && rnd(4)) {
		size_t len = 4;

		if (one_in(16))	/* another QP, a random number */
			qpn = one_in(2) ? fz_u32() : qpn ^ 1;
		if (one_in(32))
			len = rnd(9);
		fz_sys("doorbell_file",
		       write(W.db_fd, &qpn, len) == (ssize_t)len ? 0 : -1);
		return;
	}
	fz_uverbs_doorbell(IB_USER_VERBS_CMD_POST_SEND, q->qp->handle);
}

/* ---- the case ------------------------------------------------------------------ */

/* Move a ring's producer index after @n WQEs, sometimes wrongly. */
static void fz_publish(struct softmr_wq *wq, uint32_t prod, uint32_t n)
{
	uint32_t v = prod + n;

	switch (rnd(50)) {
	case 0:
		v = prod + wq->num + 1 + rnd(1000);	/* beyond the ring */
		break;
	case 1:
		v = prod - 1 - rnd(4);			/* backwards */
		break;
	case 2:
		v = fz_u32();				/* anywhere */
		break;
	case 3:
		return;					/* not published */
	case 4:
		v = prod + wq->num;			/* exactly full */
		break;
	case 5:	/* garbage near 2^32: after the reset the ring wraps */
		v = 0xfffffff0U + rnd(16);
		break;
	default:
		break;
	}
	fz_store_release(&wq->hdr->producer, v);
	if (one_in(40))
		fz_store_release(&wq->hdr->consumer, fz_u32());
	if (one_in(80))
		fz_store_release(&wq->hdr->qp_state, rnd(8));
	if (one_in(80))
		fz_store_release(&wq->hdr->rnr_waiting, rnd(3));
}

/* A random state change on a random QP. */
static void fz_ring_state(void)
{
	int i = rnd(FZ_NQP);
	struct ibv_qp_attr a = { .qp_state = rnd(7) };

	if (!W.q[i].qp)
		return;
	switch (rnd(4)) {
	case 0:
		fz_qp_recreate(i);
		break;
	case 1:
		fz_connect_idx(i);
		break;
	default:
		fz_modify(W.q[i].qp, &a, IBV_QP_STATE);
		break;
	}
}

static void fz_ring_case(void)
{
	int r = rnd(100), i = rnd(FZ_NQP), k;
	struct fz_qp *q = &W.q[i];
	struct softmr_wq *wq;
	uint32_t n = one_in(4) ? 1 + rnd(8) : 1, prod, j;
	bool srq = false;

	if (r >= 95) {
		fz_ring_state();
		goto out;
	}
	if (!q->qp)
		goto out;
	if (r < 55) {
		wq = &to_sqp(q->qp)->sq;
	} else if (r < 83 && !q->srq) {
		wq = &to_sqp(q->qp)->rq;
	} else {
		if (!W.srq)
			goto out;
		wq = &to_ssrq(W.srq)->rq;
		srq = true;
	}
	prod = wq->hdr->producer;
	for (j = 0; j < n; j++) {
		bool plausible = pct(W.plausible);
		void *w = fz_wqe_at(wq, prod + j);

		if (r < 55)
			fz_send_wqe(q, w, wq->stride, plausible);
		else
			fz_recv_wqe(w, wq->stride, plausible);
	}
	fz_publish(wq, prod, n);

	/* the doorbells: this queue's, and the sender's behind a receive */
	if (r < 55) {
		fz_send_doorbell(q);
	} else {
		if (rnd(2))
			fz_uverbs_doorbell(srq ? IB_USER_VERBS_CMD_POST_SRQ_RECV :
					   IB_USER_VERBS_CMD_POST_RECV,
					   srq ? W.srq->handle : q->qp->handle);
		k = srq ? Q_SR0 : q->peer;
		if (k >= 0 && W.q[k].qp && rnd(2))
			fz_send_doorbell(&W.q[k]);
	}
out:
	fz_poll_all();
	fz_recover();
}

#endif /* SOFTMR_FUZZ_RING_H */
