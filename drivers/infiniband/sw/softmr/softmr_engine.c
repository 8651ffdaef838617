// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The QP engine: takes send WQEs, executes them against the peer QP and
 * writes completions.
 *
 * Where it runs: a user QP's send queue is run by the POST_SEND doorbell,
 * in the posting thread, until the queue is empty (bounded per call); a
 * kernel QP's (whose post verbs may be called in atomic context) by a work
 * item.  The work item also runs flushes and RNR retries.  The responder
 * side needs no thread of its own: the requester's context consumes the
 * peer's receive WQE, copies the data once from the source MR to the
 * destination MR (softmr_mr_xfer()) and writes the peer's completion.
 *
 * Ordering: one QP's send queue runs under sq.lock, WQE after WQE, each to
 * completion before the next starts, so operations complete in order and a
 * fence is always satisfied.  A receive queue is consumed under its own
 * lock, taken after the sender's sq.lock (the only nesting).
 *
 * Every WQE is copied out of the ring once (softmr_wq_take()) and only the
 * copy is validated and executed.
 */

#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/checksum.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_pack.h>

#include "softmr.h"
#include "softmr_wire.h"
#include "softmr_wire_conn.h"

/* Bytes of GRH at the start of every UD receive buffer. */
#define SOFTMR_GRH_BYTES	40

/* A copy moves at most this much before it looks whether to stop. */
#define SOFTMR_COPY_PIECE	SZ_1M

static struct workqueue_struct *softmr_engine_wq;

/* IB RNR NAK timer field (0..31) in microseconds. */
const u32 softmr_rnr_usecs[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

int softmr_engine_init(void)
{
	int err;

	softmr_engine_wq = alloc_workqueue("softmr_engine",
					   WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!softmr_engine_wq)
		return -ENOMEM;
	err = softmr_sq_poll_init();
	if (err)
		destroy_workqueue(softmr_engine_wq);
	return err;
}

void softmr_engine_exit(void)
{
	softmr_sq_poll_exit();
	destroy_workqueue(softmr_engine_wq);
}

void softmr_sgl_release(struct softmr_sgl *sgl)
{
	while (sgl->num)
		softmr_mr_put(sgl->mr[--sgl->num]);
	sgl->len = 0;
}

/*
 * Look up and check the SGEs of a WQE: every key must name an MR of @pd on
 * @sdev that allows @access over the SGE's range.  Through the key cache
 * @kc, or none when NULL (softmr_key_cache_get()).  The fast lane
 * (softmr_sq_fast.c) makes the same checks.
 */
enum ib_wc_status softmr_sgl_resolve(struct softmr_dev *sdev,
				     struct ib_pd *pd,
				     const struct softmr_sge *sge, u32 num,
				     int access, struct softmr_sgl *sgl,
				     struct softmr_key_cache *kc)
{
	u32 i;

	sgl->num = 0;
	sgl->len = 0;
	/* callers check the count against the queue's; this holds it anyway */
	if (num > SOFTMR_MAX_SGE)
		return IB_WC_LOC_QP_OP_ERR;
	for (i = 0; i < num; i++) {
		struct softmr_mr *mr;

		if (!sge[i].length)
			continue;
		mr = softmr_key_cache_get(kc, sdev, sge[i].lkey, false);
		if (!mr)
			return IB_WC_LOC_PROT_ERR;
		sgl->mr[sgl->num] = mr;
		sgl->sge[sgl->num++] = sge[i];
		if (mr->ibmr.pd != pd ||
		    softmr_mr_check(mr, sge[i].addr, sge[i].length, access)) {
			softmr_key_cache_forget(kc, mr);
			return IB_WC_LOC_PROT_ERR;
		}
		softmr_key_cache_keep(kc, sdev, sge[i].lkey, mr);
		sgl->len += sge[i].length;
		if (sgl->len > SOFTMR_MAX_MSG_SZ)
			return IB_WC_LOC_LEN_ERR;
	}
	return IB_WC_SUCCESS;
}

/* A position in an SG list. */
struct softmr_cursor {
	struct softmr_sgl *sgl;
	u32 i;
	u64 off;
};

static void softmr_cursor_skip(struct softmr_cursor *c)
{
	while (c->i < c->sgl->num && c->off == c->sgl->sge[c->i].length) {
		c->i++;
		c->off = 0;
	}
}

struct softmr_req;
static bool softmr_req_stopped(const struct softmr_req *req);

/*
 * Copy @len bytes to the SG list at @d from the SG list at @s or, when
 * @buf is not NULL, from that kernel buffer.  @daccess and @saccess are
 * the permissions the destination and the source were checked for (fast
 * registrations check them again on each piece).  Large copies go in
 * pieces; between pieces the CPU is yielded and the copy stops when @req
 * must stop.
 *
 * Return: 0, -EFAULT when the source failed, -ENXIO when the destination
 * failed (ODP memory gone from its mm), -EINTR when stopped.
 */
static int softmr_cursor_copy(const struct softmr_req *req,
			      struct softmr_cursor *d, struct softmr_cursor *s,
			      const void *buf, u64 len, int daccess,
			      int saccess)
{
	while (len) {
		struct softmr_mr *dmr;
		u64 diova, n;
		int err;

		softmr_cursor_skip(d);
		if (d->i >= d->sgl->num)
			return -ENXIO;
		dmr = d->sgl->mr[d->i];
		diova = d->sgl->sge[d->i].addr + d->off;
		n = min_t(u64, len, d->sgl->sge[d->i].length - d->off);
		if (n > SOFTMR_COPY_PIECE) {
			n = SOFTMR_COPY_PIECE;
			cond_resched();
			if (softmr_req_stopped(req))
				return -EINTR;
		}
		if (buf) {
			err = softmr_mr_copy_key(dmr, d->sgl->sge[d->i].lkey,
						 diova, (void *)buf, n,
						 SOFTMR_TO_MR, daccess);
			if (err)
				return -ENXIO;
			buf += n;
		} else {
			struct softmr_mr *smr;
			u64 siova;

			softmr_cursor_skip(s);
			if (s->i >= s->sgl->num)
				return -EFAULT;
			smr = s->sgl->mr[s->i];
			siova = s->sgl->sge[s->i].addr + s->off;
			n = min_t(u64, n, s->sgl->sge[s->i].length - s->off);
			err = softmr_mr_xfer_key(dmr, d->sgl->sge[d->i].lkey,
						 daccess, diova, smr,
						 s->sgl->sge[s->i].lkey,
						 saccess, siova, n);
			if (err)
				return err;
			s->off += n;
		}
		d->off += n;
		len -= n;
	}
	return 0;
}

/*
 * Must the engine stop working for @req now?  When either QP is being
 * destroyed (device removal waits for it) or the thread that runs it is
 * being killed (a doorbell write() stays killable).
 */
static bool softmr_req_stopped(const struct softmr_req *req)
{
	if (!req)	/* the wire's receive worker: never killed */
		return false;
	return READ_ONCE(req->qp->dying) ||
	       (req->peer && READ_ONCE(req->peer->dying)) ||
	       fatal_signal_pending(current);
}

struct softmr_wq *softmr_qp_rq(struct softmr_qp *qp)
{
	return qp->srq ? &qp->srq->rq : &qp->rq;
}

/* UD and GSI QPs: datagrams, addressed by AH, GRH in front. */
static bool softmr_qp_datagram(struct softmr_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/* RC only: errors are reported to the requester; UC and UD drop. */
static bool softmr_qp_reliable(struct softmr_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC;
}

bool softmr_qp_receives(struct softmr_qp *qp)
{
	enum ib_qp_state s = READ_ONCE(qp->state);

	return s == IB_QPS_RTR || s == IB_QPS_RTS || s == IB_QPS_SQD ||
	       s == IB_QPS_SQE;
}

/* Write the UD GRH the receiver sees: IPv4 header or IPv6/IB GRH. */
static void softmr_build_grh(u8 *grh, const struct softmr_av *src, u32 len)
{
	memset(grh, 0, SOFTMR_GRH_BYTES);
	if (src->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
	    ipv6_addr_v4mapped((struct in6_addr *)src->sgid.raw)) {
		struct iphdr *ip = (struct iphdr *)(grh + 20);

		ip->version = 4;
		ip->ihl = 5;
		ip->tos = src->traffic_class;
		ip->tot_len = htons(len + 20 + 8 + 12);
		ip->ttl = src->hop_limit ?: 64;
		ip->protocol = IPPROTO_UDP;
		memcpy(&ip->saddr, src->sgid.raw + 12, 4);
		memcpy(&ip->daddr, src->dgid.raw + 12, 4);
		ip->check = ip_fast_csum((u8 *)ip, ip->ihl);
	} else {
		struct ib_grh *g = (struct ib_grh *)grh;

		g->version_tclass_flow =
			cpu_to_be32(6 << 28 | src->traffic_class << 20 |
				    (src->flow_label & 0xfffff));
		g->paylen = cpu_to_be16(len);
		g->next_hdr = src->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP ?
			      IPPROTO_UDP : 0x1b;
		g->hop_limit = src->hop_limit ?: 64;
		g->sgid = src->sgid;
		g->dgid = src->dgid;
	}
}

static enum rdma_network_type softmr_av_net_type(const struct softmr_av *av)
{
	if (av->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return RDMA_NETWORK_IB;
	return ipv6_addr_v4mapped((struct in6_addr *)av->sgid.raw) ?
	       RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
}

/*
 * What a user space UD completion carries in its SL: the received frame's
 * kind, where ConnectX reports it for RoCE (bit 3: UDP, i.e. RoCE v2; bits
 * 2:0: 0 GRH, 1 IPv6, 2 IPv4).  ibv_wc has no network header type, and
 * UCX's UD transport reads it there to find the destination address in the
 * 40 bytes of GRH (the last 4 for IPv4): with 0 it drops every IPv4
 * datagram.  RoCE has no SL of its own; kernel CQs get network_hdr_type.
 */
static u8 softmr_roce_pkt_type(enum rdma_network_type net_type)
{
	switch (net_type) {
	case RDMA_NETWORK_IPV4:
		return 0x8 | 0x2;
	case RDMA_NETWORK_IPV6:
		return 0x8 | 0x1;
	default:
		return 0;
	}
}

/*
 * A datagram's completion: it has a GRH of @net_type; @vlan: the VLAN id
 * it came on, or -1.  Kernel CQs report them as ib_wc.network_hdr_type
 * and ib_wc.vlan_id (ib_cm finds the GID to answer from with them:
 * softmr_wc_from_uverbs()); user CQs get the packet type in sl.
 */
static void softmr_wc_set_datagram(struct softmr_qp *qp,
				   struct ib_uverbs_wc *wc,
				   enum rdma_network_type net_type, int vlan)
{
	wc->wc_flags |= IB_WC_GRH;
	if (!to_scq(qp->ibqp.recv_cq)->is_user) {
		wc->reserved = net_type;
		if (vlan >= 0) {
			wc->wc_flags |= IB_WC_WITH_VLAN;
			wc->slid = vlan;
		}
	} else {
		wc->sl = softmr_roce_pkt_type(net_type);
	}
}

/**
 * softmr_recv_complete() - complete a receive WQE of @qp
 * @qp: the responder, its receive queue's lock held
 * @wr_id: the receive WQE's
 * @status: the completion's status
 * @opcode: IB_WC_RECV or IB_WC_RECV_RDMA_WITH_IMM
 * @byte_len: bytes received
 * @req: the request that delivered it (its immediate data, solicited bit,
 *	source QP), or NULL for an error of the responder's own
 */
void softmr_recv_complete(struct softmr_qp *qp, u64 wr_id,
			  enum ib_wc_status status, u32 opcode, u32 byte_len,
			  const struct softmr_req *req)
{
	struct ib_uverbs_wc wc = {
		.wr_id = wr_id,
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.qp_num = qp->ibqp.qp_num,
		.port_num = 1,
	};
	bool solicited = false;

	if (req && status == IB_WC_SUCCESS) {
		u32 op = req->wqe->opcode;

		wc.src_qp = req->qp->ibqp.qp_num;
		if (op == IB_WR_SEND_WITH_IMM ||
		    op == IB_WR_RDMA_WRITE_WITH_IMM) {
			wc.ex.imm_data = (__force __be32)req->wqe->imm_data;
			wc.wc_flags |= IB_WC_WITH_IMM;
		} else if (op == IB_WR_SEND_WITH_INV) {
			wc.ex.invalidate_rkey = req->wqe->imm_data;
			wc.wc_flags |= IB_WC_WITH_INVALIDATE;
		}
		/* the VLAN: kernel CQs only (softmr_wc_set_datagram()) */
		if (softmr_qp_datagram(qp))
			softmr_wc_set_datagram(qp, &wc,
					       softmr_av_net_type(&req->av),
					       to_scq(qp->ibqp.recv_cq)->is_user ?
					       -1 : softmr_gid_vlan(qp->sdev,
								    &req->av.dgid,
								    &req->av));
		solicited = req->wqe->flags & SOFTMR_SEND_SOLICITED;
	}
	if (status != IB_WC_SUCCESS && status != IB_WC_WR_FLUSH_ERR)
		softmr_count(qp->sdev, SOFTMR_CNT_ERR_COMPLETIONS, 1);
	softmr_count(qp->sdev, SOFTMR_CNT_RECV_WQES, 1);
	softmr_cq_post(to_scq(qp->ibqp.recv_cq), &wc, &qp->ibqp, solicited);
}

/* The responder detected an error: it completes (if it has a WQE) and
 * moves to the error state, as a responder's class C error does.
 */
static void softmr_responder_error(struct softmr_qp *peer, bool has_wqe,
				   u64 wr_id, enum ib_wc_status status)
{
	if (has_wqe)
		softmr_recv_complete(peer, wr_id, status, IB_WC_RECV, 0,
				     NULL);
	if (peer->ibqp.qp_type == IB_QPT_RC)
		softmr_qp_set_error(peer);
}

/*
 * Look up and check a receive WQE's scatter list into @rq->sgl, through
 * the key cache @kc (NULL: none).  The fast lane's SEND
 * (softmr_sq_fast_send()) makes the same checks.
 */
static enum ib_wc_status softmr_rwqe_resolve(struct softmr_qp *qp,
					     struct softmr_wq *rq,
					     const struct softmr_recv_wqe *rwqe,
					     struct softmr_key_cache *kc)
{
	if (rwqe->num_sge > rq->max_sge) {
		rq->sgl->num = 0;
		return IB_WC_LOC_QP_OP_ERR;
	}
	return softmr_sgl_resolve(qp->sdev, qp->ibqp.pd, rwqe->sge,
				  rwqe->num_sge, IB_ACCESS_LOCAL_WRITE, rq->sgl,
				  kc);
}

/* Is a receive WQE's key cached for a WQE of @opcode? */
static bool softmr_opcode_caches_rwqe(u32 opcode)
{
	return opcode == IB_WR_SEND || opcode == IB_WR_SEND_WITH_IMM;
}

/*
 * The receive key cache for @req's delivery, or NULL.  Only a SEND or
 * SEND_WITH_IMM of a connected QP to a user QP, in a run with key caches,
 * uses it: such a WQE waits for nothing between its receive WQE's lookup
 * and the copy into it, and nothing after (the receive queue's lock is
 * taken before, dropping the cache when it must wait: softmr_req_execute()).
 * Datagrams may go to the wire, SEND_WITH_INV invalidates (a window's
 * lock) and RDMA_WRITE_WITH_IMM writes first: with one of them, the entry
 * a WQE before left would be held over a wait that is not its own.
 */
static struct softmr_key_cache *softmr_rqkeys_used(struct softmr_req *req)
{
	if (!req->key_caches || !req->peer->is_user ||
	    softmr_qp_datagram(req->peer) ||
	    !softmr_opcode_caches_rwqe(req->wqe->opcode))
		return NULL;
	return &req->rqkeys;
}

/*
 * SEND, SEND_WITH_IMM and RDMA_WRITE_WITH_IMM at the responder: take a
 * receive WQE and, for sends, scatter the message into it.  Called with
 * the peer's receive queue lock held.  (The fast lane's SEND,
 * softmr_sq_fast_send(), makes the same checks of the receive WQE.)
 */
static int softmr_deliver(struct softmr_req *req, struct softmr_wq *rq,
			  bool is_send)
{
	struct softmr_qp *peer = req->peer;
	bool ud = !softmr_qp_reliable(peer);	/* drops instead of NAKs */
	bool dgram = softmr_qp_datagram(peer);
	struct softmr_cursor d = {}, s = {};
	struct softmr_recv_wqe *rwqe;
	struct softmr_sgl *rsgl;
	enum ib_wc_status st;
	u64 wr_id, need;
	u8 grh[SOFTMR_GRH_BYTES];
	u32 n;
	int err;

	if (softmr_wq_pending(rq, &n)) {
		/* the peer's ring is garbage */
		softmr_qp_set_error(peer);
		return ud ? IB_WC_SUCCESS : IB_WC_REM_OP_ERR;
	}
	if (!n) {
		if (ud) {
			softmr_count(peer->sdev, SOFTMR_CNT_UD_DROPS, 1);
			return IB_WC_SUCCESS;
		}
		return SOFTMR_RNR;
	}
	rwqe = softmr_wq_take(rq);
	wr_id = rwqe->wr_id;
	rsgl = rq->sgl;
	st = softmr_rwqe_resolve(peer, rq, rwqe, softmr_rqkeys_used(req));
	need = is_send ? req->len + (dgram ? SOFTMR_GRH_BYTES : 0) : 0;
	if (st == IB_WC_SUCCESS && rsgl->len < need)
		st = IB_WC_LOC_LEN_ERR;
	if (st != IB_WC_SUCCESS) {
		softmr_wq_consume(rq);
		softmr_responder_error(peer, true, wr_id, st);
		softmr_sgl_release(rsgl);
		if (ud)
			return IB_WC_SUCCESS;
		return st == IB_WC_LOC_LEN_ERR ? IB_WC_REM_INV_REQ_ERR :
		       IB_WC_REM_OP_ERR;
	}

	err = 0;
	if (is_send) {
		d.sgl = rsgl;
		if (dgram) {
			softmr_build_grh(grh, &req->av, req->len);
			err = softmr_cursor_copy(req, &d, NULL, grh, sizeof(grh),
						 IB_ACCESS_LOCAL_WRITE, 0);
		}
		s.sgl = &req->local;
		if (!err && req->len)
			err = softmr_cursor_copy(req, &d, &s, req->inl, req->len,
						 IB_ACCESS_LOCAL_WRITE, 0);
	}
	softmr_sgl_release(rsgl);
	if (err == -EINTR)	/* the receive WQE stays for the next try */
		return SOFTMR_STOP;
	if (err == -EFAULT)	/* our side: the message is not sent */
		return IB_WC_LOC_PROT_ERR;
	softmr_wq_consume(rq);
	if (err) {
		softmr_responder_error(peer, true, wr_id, IB_WC_LOC_PROT_ERR);
		return ud ? IB_WC_SUCCESS : IB_WC_REM_OP_ERR;
	}
	/* SEND_WITH_INV (RC): the responder's MR with that rkey, or an error */
	if (req->wqe->opcode == IB_WR_SEND_WITH_INV &&
	    !softmr_key_invalidate(peer, req->wqe->imm_data, true)) {
		/* an invalid request (class J) at both ends */
		softmr_responder_error(peer, true, wr_id,
				       IB_WC_REM_INV_REQ_ERR);
		return IB_WC_REM_INV_REQ_ERR;
	}
	if (req->wqe->opcode == IB_WR_SEND_WITH_INV)
		softmr_count(peer->sdev, SOFTMR_CNT_REMOTE_INVS, 1);
	softmr_recv_complete(peer, wr_id, IB_WC_SUCCESS,
			     is_send ? IB_WC_RECV : IB_WC_RECV_RDMA_WITH_IMM,
			     need ? (u32)need : (u32)req->len, req);
	if (peer->srq)
		softmr_srq_check_limit(peer->srq);
	return IB_WC_SUCCESS;
}

/*
 * Memory the wire's receive worker does not write: ODP (a fault can wait
 * on a user's FUSE server) and dynamic dma-buf imports (the reservation
 * lock and the exporter's fences can wait on a user's GPU jobs).
 */
static bool softmr_sgl_may_wait(const struct softmr_sgl *sgl)
{
	u32 i;

	for (i = 0; i < sgl->num; i++) {
		const struct softmr_mr *mr = sgl->mr[i];

		if (mr->kind == SOFTMR_MR_ODP || mr->kind == SOFTMR_MR_IMPLICIT ||
		    (mr->kind == SOFTMR_MR_DMABUF && !mr->dmabuf_pinned))
			return true;
	}
	return false;
}

/**
 * softmr_engine_wire_recv() - a UD datagram from the wire for one of our QPs
 * @sdev: the device that owns the packet's destination GID
 * @pkt: the parsed packet (UD SEND ONLY, with or without immediate)
 * @skb: the packet: its IP header is what the receiver finds in the GRH
 *	(IPv6: the whole 40 bytes; IPv4: the last 20)
 * @may_wait: in the QP's own worker (softmr_wire_ud.c), which may wait for
 *	the receive queue's lock and the receive WQE's memory; else in the
 *	device's receive worker, which waits for nothing a user controls
 *
 * Process context.  The QP must be a UD (or, for QP 1, the GSI) QP able
 * to receive, with the packet's Q_Key; a missing receive WQE loses the
 * datagram, as on any UD QP.
 *
 * Return: 0 when delivered or completed in error, -ENOENT when nobody
 * took it (counted by the caller), -EAGAIN (only without @may_wait) when
 * the receive queue is busy elsewhere or its next WQE is on ODP or
 * dynamic dma-buf memory: the QP's worker is to deliver it
 * (softmr_wire_ud_defer()); the WQE stays where it is.
 */
int softmr_engine_wire_recv(struct softmr_dev *sdev,
			    const struct softmr_pkt *pkt,
			    const struct sk_buff *skb, bool may_wait)
{
	bool ipv6 = skb->protocol == htons(ETH_P_IPV6);
	struct ib_uverbs_wc wc = { .port_num = 1 };
	struct softmr_cursor d = {};
	struct softmr_recv_wqe *rwqe;
	enum ib_wc_status st;
	struct softmr_qp *qp;
	struct softmr_wq *rq;
	u8 grh[SOFTMR_GRH_BYTES];
	int ret = -ENOENT;
	u32 n, need;

	qp = softmr_qp_get(sdev, pkt->dqpn);
	if (!qp)
		return -ENOENT;
	if (!softmr_qp_datagram(qp) || !softmr_qp_receives(qp) ||
	    pkt->qkey != READ_ONCE(qp->attr.qkey))
		goto put;
	/* datagrams in order: none past those the QP's worker holds */
	if (!may_wait && !skb_queue_empty_lockless(&qp->ud_inq)) {
		ret = -EAGAIN;
		goto put;
	}
	rq = softmr_qp_rq(qp);
	/*
	 * The device's worker serves every QP of the device: it never waits
	 * for what a user controls.  A receive queue busy elsewhere (a local
	 * sender may be faulting its pages in) is the QP's worker's.
	 */
	if (may_wait) {
		mutex_lock(&rq->lock);
	} else if (!mutex_trylock(&rq->lock)) {
		ret = -EAGAIN;
		goto put;
	}
	if (softmr_wq_pending(rq, &n)) {
		softmr_qp_set_error(qp);	/* the owner's ring is garbage */
		goto unlock;
	}
	if (!n)
		goto unlock;
	rwqe = softmr_wq_take(rq);
	wc.wr_id = rwqe->wr_id;
	st = softmr_rwqe_resolve(qp, rq, rwqe, NULL);
	/*
	 * Nor does it fault ODP memory in or wait for a dma-buf exporter:
	 * such a receive WQE stays where it is for the QP's worker
	 * (Documentation: "The wire").
	 */
	if (st == IB_WC_SUCCESS && !may_wait && softmr_sgl_may_wait(rq->sgl)) {
		softmr_sgl_release(rq->sgl);
		ret = -EAGAIN;
		goto unlock;
	}
	need = pkt->data_len + SOFTMR_GRH_BYTES;
	if (st == IB_WC_SUCCESS && rq->sgl->len < need)
		st = IB_WC_LOC_LEN_ERR;
	if (st == IB_WC_SUCCESS) {
		/* RoCEv2: the IPv6 header, or IPv4's in the last 20 bytes */
		memset(grh, 0, sizeof(grh));
		if (ipv6)
			memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));
		else
			memcpy(grh + 20, ip_hdr(skb), sizeof(struct iphdr));
		d.sgl = rq->sgl;
		if (softmr_cursor_copy(NULL, &d, NULL, grh, sizeof(grh),
				       IB_ACCESS_LOCAL_WRITE, 0) ||
		    (pkt->data_len &&
		     softmr_cursor_copy(NULL, &d, NULL, pkt->payload,
					pkt->data_len, IB_ACCESS_LOCAL_WRITE,
					0)))
			st = IB_WC_LOC_PROT_ERR;
	}
	softmr_sgl_release(rq->sgl);
	softmr_wq_consume(rq);
	wc.status = st;
	wc.opcode = IB_WC_RECV;
	wc.qp_num = qp->ibqp.qp_num;
	if (st == IB_WC_SUCCESS) {
		wc.byte_len = need;
		wc.src_qp = pkt->sqpn;
		if (pkt->opcode == (SOFTMR_OP_UD | SOFTMR_OP_SEND_ONLY_IMM)) {
			wc.ex.imm_data = pkt->imm;
			wc.wc_flags |= IB_WC_WITH_IMM;
		}
		softmr_wc_set_datagram(qp, &wc, ipv6 ? RDMA_NETWORK_IPV6 :
						       RDMA_NETWORK_IPV4,
				       skb_vlan_tag_present(skb) ?
				       skb_vlan_tag_get_id(skb) : -1);
	} else {
		softmr_count(sdev, SOFTMR_CNT_ERR_COMPLETIONS, 1);
	}
	softmr_count(sdev, SOFTMR_CNT_RECV_WQES, 1);
	softmr_cq_post(to_scq(qp->ibqp.recv_cq), &wc, &qp->ibqp,
		       st == IB_WC_SUCCESS && pkt->se);
	if (qp->srq)
		softmr_srq_check_limit(qp->srq);
	ret = 0;
unlock:
	mutex_unlock(&rq->lock);
put:
	softmr_qp_put(qp);
	return ret;
}

/*
 * A UD datagram to another host (softmr_wire_reaches()): one RoCEv2 UD
 * SEND ONLY packet, the payload gathered from the local SGL (or inline).
 * Unreliable: sent or lost, the WQE completes successfully; a local
 * protection error in the gather fails it.
 */
static enum ib_wc_status softmr_wire_send_ud(struct softmr_req *req, u32 qkey,
					     bool by_table)
{
	struct softmr_send_wqe *wqe = req->wqe;
	struct softmr_qp *qp = req->qp;
	struct softmr_pkt pkt = {
		.opcode = SOFTMR_OP_UD | SOFTMR_OP_SEND_ONLY,
		.se = wqe->flags & SOFTMR_SEND_SOLICITED,
		.pkey = SOFTMR_DEF_PKEY,
		.dqpn = wqe->wr.ud.remote_qpn & SOFTMR_QPN_MASK,
		.qkey = qkey,
		.sqpn = qp->ibqp.qp_num,
	};
	unsigned int hl, len = req->len;
	struct sk_buff *skb;
	int mtu;
	u8 *p;
	u32 i;

	/* one packet: the path MTU of the netdev, its headers subtracted */
	mtu = softmr_av_ndev_mtu(qp->sdev, &req->av);
	mtu = ib_mtu_enum_to_int(iboe_get_mtu(mtu));
	if (mtu < 0 || len > mtu)
		return IB_WC_LOC_LEN_ERR;
	if (wqe->opcode == IB_WR_SEND_WITH_IMM) {
		pkt.opcode = SOFTMR_OP_UD | SOFTMR_OP_SEND_ONLY_IMM;
		pkt.imm = (__force __be32)wqe->imm_data;
	}
	pkt.psn = qp->wire_psn;
	qp->wire_psn = softmr_psn_add(qp->wire_psn, 1);
	pkt.pad = -len & 3;
	hl = softmr_op_hdr_len(pkt.opcode);
	skb = softmr_wire_alloc(qp->sdev, hl + len + pkt.pad);
	if (!skb) {
		softmr_count(qp->sdev, SOFTMR_CNT_UD_DROPS, 1);
		return IB_WC_SUCCESS;
	}
	softmr_pkt_build(skb->data, &pkt);
	p = skb->data + hl;
	if (req->inl) {
		memcpy(p, req->inl, len);
	} else {
		for (i = 0; i < req->local.num; i++) {
			const struct softmr_sge *sge = &req->local.sge[i];

			if (softmr_mr_copy_key(req->local.mr[i], sge->lkey,
					       sge->addr, p, sge->length,
					       SOFTMR_FROM_MR, 0)) {
				kfree_skb(skb);
				return IB_WC_LOC_PROT_ERR;
			}
			p += sge->length;
		}
	}
	memset(p, 0, pkt.pad);
	/* RoCEv2's UDP source port spreads flows: one per source QP */
	if (softmr_wire_xmit(qp->sdev, skb, &req->av,
			     0xc000 | (qp->ibqp.qp_num & 0x3fff), by_table))
		softmr_count(qp->sdev, SOFTMR_CNT_UD_DROPS, 1);
	return IB_WC_SUCCESS;
}

/**
 * softmr_rkey_lookup() - a remote key at a responder, checked for @access
 * @qp: the responder QP
 * @rkey: the key the request carries
 * @addr: first byte the request reaches
 * @len: bytes it reaches
 * @access: IB_ACCESS_REMOTE_* it needs
 * @key: set to what the access carries to the copy: the rkey, or for a
 *	window the binding's token (softmr_mw_token())
 * @kc: a key cache to look @rkey up through, or NULL for none
 *
 * An MR or a bound window (type 2: bound to @qp) of @qp's PD, @qp allowing
 * @access, over [@addr, @addr + @len).  Serves the local transport and
 * the wire's responder.  The fast lane (softmr_sq_fast.c) makes the same
 * checks.
 *
 * Return: the MR, referenced (softmr_mr_put()), or NULL.
 */
struct softmr_mr *softmr_rkey_lookup(struct softmr_qp *qp, u32 rkey,
				     u64 addr, u64 len, int access, u32 *key,
				     struct softmr_key_cache *kc)
{
	struct softmr_mr *mr;

	if (!(READ_ONCE(qp->attr.qp_access_flags) & access)) {
		/* refused: not held for the next try either */
		softmr_key_cache_drop(kc);
		return NULL;
	}
	mr = softmr_key_cache_get(kc, qp->sdev, rkey, true);
	if (!mr)
		return NULL;
	*key = rkey;
	if (mr->kind == SOFTMR_MR_MW)
		*key = softmr_mw_token(mr, rkey, qp, addr, len, access);
	if (mr->ibmr.pd != qp->ibqp.pd || !*key ||
	    softmr_mr_check(mr, addr, len, access)) {
		softmr_key_cache_forget(kc, mr);
		softmr_mr_put(mr);
		return NULL;
	}
	softmr_key_cache_keep(kc, qp->sdev, rkey, mr);
	return mr;
}

/* The peer's remote key for @req (softmr_rkey_lookup()). */
static enum ib_wc_status softmr_rkey(struct softmr_req *req, u32 rkey,
				     u64 addr, u64 len, int access,
				     struct softmr_mr **out, u32 *key)
{
	/*
	 * cached only between user QPs: a kernel peer's completion handler,
	 * run in this context, may deregister the MR (and wait for the
	 * cache); not for atomics, whose local write comes after
	 */
	bool cache = req->key_caches && req->peer->is_user &&
		     access != IB_ACCESS_REMOTE_ATOMIC;

	*out = softmr_rkey_lookup(req->peer, rkey, addr, len, access, key,
				  cache ? &req->rkeys : NULL);
	return *out ? IB_WC_SUCCESS : IB_WC_REM_ACCESS_ERR;
}

/*
 * The remote side of an RDMA WRITE or READ as a one-entry SG list (the
 * QP's scratch list): the rkey checked for @access over the WQE's range.
 * A bad rkey is the responder's error too.
 */
static enum ib_wc_status softmr_remote_sgl(struct softmr_req *req, int access,
					   struct softmr_sgl **out)
{
	struct softmr_send_wqe *wqe = req->wqe;
	struct softmr_sgl *remote = req->qp->sq.sgl;
	struct softmr_mr *mr;
	enum ib_wc_status st;
	u32 key;

	st = softmr_rkey(req, wqe->wr.rdma.rkey, wqe->wr.rdma.remote_addr,
			 req->len, access, &mr, &key);
	if (st) {
		softmr_responder_error(req->peer, false, 0, st);
		return st;
	}
	remote->num = 1;
	remote->len = req->len;
	remote->mr[0] = mr;
	remote->sge[0].addr = wqe->wr.rdma.remote_addr;
	remote->sge[0].length = req->len;
	remote->sge[0].lkey = key;	/* checked on each piece */
	*out = remote;
	return IB_WC_SUCCESS;
}

static int softmr_do_write(struct softmr_req *req)
{
	struct softmr_cursor d = {}, s = {};
	struct softmr_sgl *remote;
	enum ib_wc_status st;
	int err;

	if (!req->len)
		return IB_WC_SUCCESS;
	st = softmr_remote_sgl(req, IB_ACCESS_REMOTE_WRITE, &remote);
	if (st)
		return st;
	d.sgl = remote;
	s.sgl = &req->local;
	err = softmr_cursor_copy(req, &d, &s, req->inl, req->len,
				 IB_ACCESS_REMOTE_WRITE, 0);
	softmr_sgl_release(remote);
	if (err == -EINTR)
		return SOFTMR_STOP;
	if (err == -EFAULT)
		return IB_WC_LOC_PROT_ERR;
	if (err) {
		softmr_responder_error(req->peer, false, 0, IB_WC_REM_ACCESS_ERR);
		return IB_WC_REM_ACCESS_ERR;
	}
	return IB_WC_SUCCESS;
}

static int softmr_do_read(struct softmr_req *req)
{
	struct softmr_cursor d = {}, s = {};
	struct softmr_sgl *remote;
	enum ib_wc_status st;
	int err;

	if (!req->len)
		return IB_WC_SUCCESS;
	st = softmr_remote_sgl(req, IB_ACCESS_REMOTE_READ, &remote);
	if (st)
		return st;
	d.sgl = &req->local;
	s.sgl = remote;
	err = softmr_cursor_copy(req, &d, &s, NULL, req->len,
				 IB_ACCESS_LOCAL_WRITE, IB_ACCESS_REMOTE_READ);
	softmr_sgl_release(remote);
	if (err == -EINTR)
		return SOFTMR_STOP;
	/* here the source is remote: the error sides swap */
	if (err == -EFAULT) {
		softmr_responder_error(req->peer, false, 0, IB_WC_REM_ACCESS_ERR);
		return IB_WC_REM_ACCESS_ERR;
	}
	return err ? IB_WC_LOC_PROT_ERR : IB_WC_SUCCESS;
}

static int softmr_do_atomic(struct softmr_req *req)
{
	struct softmr_send_wqe *wqe = req->wqe;
	u64 addr = wqe->wr.atomic.remote_addr;
	struct softmr_mr *mr;
	enum ib_wc_status st;
	u64 orig;
	u32 key;
	int err;

	if (req->len != sizeof(u64) || req->local.num != 1)
		return IB_WC_LOC_LEN_ERR;
	if (addr & 7) {
		softmr_responder_error(req->peer, false, 0,
				       IB_WC_REM_INV_REQ_ERR);
		return IB_WC_REM_INV_REQ_ERR;
	}
	/* the remote MR is not held over the local write: not cached */
	softmr_key_cache_drop(&req->rkeys);
	st = softmr_rkey(req, wqe->wr.atomic.rkey, addr, sizeof(u64),
			 IB_ACCESS_REMOTE_ATOMIC, &mr, &key);
	if (st) {
		softmr_responder_error(req->peer, false, 0, st);
		return st;
	}
	err = softmr_mr_atomic_key(mr, key, addr,
				   wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP,
				   wqe->wr.atomic.compare_add,
				   wqe->wr.atomic.swap, &orig);
	softmr_mr_put(mr);
	if (err) {
		st = err == -EINVAL ? IB_WC_REM_INV_REQ_ERR :
		     IB_WC_REM_ACCESS_ERR;
		softmr_responder_error(req->peer, false, 0, st);
		return st;
	}
	if (softmr_mr_copy_key(req->local.mr[0], req->local.sge[0].lkey,
			       req->local.sge[0].addr, &orig, sizeof(orig),
			       SOFTMR_TO_MR, IB_ACCESS_LOCAL_WRITE))
		return IB_WC_LOC_PROT_ERR;
	return IB_WC_SUCCESS;
}

static bool softmr_opcode_ok(struct softmr_qp *qp, u32 opcode)
{
	switch (opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		return true;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return qp->ibqp.qp_type == IB_QPT_RC ||
		       qp->ibqp.qp_type == IB_QPT_UC;
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
	case IB_WR_SEND_WITH_INV:
		return qp->ibqp.qp_type == IB_QPT_RC;
	case IB_WR_REG_MR:
		/* fast registration: kernel consumers' QPs only */
		return !qp->is_user && qp->ibqp.qp_type != IB_QPT_GSI;
	case IB_WR_LOCAL_INV:
		/* fast registrations (kernel), type 2 windows (RC, UC) */
		return qp->is_user ? qp->ibqp.qp_type == IB_QPT_RC ||
				     qp->ibqp.qp_type == IB_QPT_UC :
				     qp->ibqp.qp_type != IB_QPT_GSI;
	case IB_WR_BIND_MW:
		/* memory windows: user contexts allocate them */
		return qp->is_user && (qp->ibqp.qp_type == IB_QPT_RC ||
				       qp->ibqp.qp_type == IB_QPT_UC);
	default:
		return false;
	}
}

static bool softmr_opcode_local(u32 opcode)
{
	return opcode == IB_WR_REG_MR || opcode == IB_WR_LOCAL_INV ||
	       opcode == IB_WR_BIND_MW;
}

/*
 * Validate the WQE copy and resolve its local SGEs.  (The fast lane,
 * softmr_sq_fast.c, repeats the checks for the WQEs it takes.)
 */
static enum ib_wc_status softmr_req_prepare(struct softmr_req *req)
{
	struct softmr_send_wqe *wqe = req->wqe;
	struct softmr_qp *qp = req->qp;
	bool local_write;

	if (!softmr_opcode_ok(qp, wqe->opcode) ||
	    (wqe->flags & ~SOFTMR_SEND_FLAGS_ALL))
		return IB_WC_LOC_QP_OP_ERR;
	if (softmr_opcode_local(wqe->opcode)) {
		req->inl = NULL;
		return (wqe->flags & SOFTMR_SEND_INLINE) || wqe->num_sge ?
		       IB_WC_LOC_QP_OP_ERR : IB_WC_SUCCESS;
	}
	local_write = wqe->opcode == IB_WR_RDMA_READ ||
		      wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		      wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD;
	if (wqe->flags & SOFTMR_SEND_INLINE) {
		if (local_write)
			return IB_WC_LOC_QP_OP_ERR;
		if (wqe->num_sge > qp->max_inline)
			return IB_WC_LOC_LEN_ERR;
		req->inl = wqe->sge;
		req->len = wqe->num_sge;
		return IB_WC_SUCCESS;
	}
	if (wqe->num_sge > qp->sq.max_sge)
		return IB_WC_LOC_QP_OP_ERR;
	req->inl = NULL;
	return softmr_sgl_resolve(qp->sdev, qp->ibqp.pd, wqe->sge, wqe->num_sge,
				  local_write ? IB_ACCESS_LOCAL_WRITE : 0,
				  &req->local, req->key_caches ? &req->lkeys : NULL);
}

/*
 * Latch @qp to the QP with @serial as its partner, or check that it is the
 * partner latched before.
 */
static bool softmr_qp_latch(struct softmr_qp *qp, u64 serial)
{
	s64 cur = atomic64_read(&qp->peer_serial);

	if (!cur)
		cur = atomic64_cmpxchg(&qp->peer_serial, 0, serial) ?: serial;
	return cur == serial;
}

/*
 * Is @peer, found by our destination GID and QP number, really the other
 * end of @req's connection?  What a responder on the wire checks (the
 * packet's source GID and QP, and its PSN), plus what only a local
 * transport can know: each end existed when the other was connected (a
 * partner's serial is not newer than the other end's RTR), and neither end
 * has talked to another QP since it was connected.  A QP on another device
 * with the same number, or one that got a destroyed partner's number (QP
 * numbers are recycled), is not the partner.  Each end's latch is taken
 * under its state_lock, with the state it was checked against: a modify
 * in between (@gen: the requester's conn_gen its attributes were read at)
 * clears the latch, and the latch is not set again from what was read
 * before it.  *@peer_gen: @peer's conn_gen, read with what was checked.
 */
static bool softmr_peer_is_partner(struct softmr_req *req,
				   struct softmr_qp *peer, u32 sq_psn,
				   u64 rtr_serial, u64 gen, u64 *peer_gen)
{
	struct softmr_qp *qp = req->qp;
	unsigned long flags;
	bool ok;

	/* a QP connected over the wire is nobody's local partner */
	if (peer->ibqp.qp_type != qp->ibqp.qp_type ||
	    peer->serial > rtr_serial || READ_ONCE(peer->wire_on))
		return false;
	spin_lock_irqsave(&peer->state_lock, flags);
	*peer_gen = peer->conn_gen;
	ok = peer->attr.dest_qp_num == qp->ibqp.qp_num &&
	     peer->attr.rq_psn == sq_psn && qp->serial <= peer->rtr_serial &&
	     !memcmp(&peer->av.dgid, &req->av.sgid, sizeof(req->av.sgid)) &&
	     softmr_qp_latch(peer, qp->serial);
	spin_unlock_irqrestore(&peer->state_lock, flags);
	if (!ok)
		return false;
	spin_lock_irqsave(&qp->state_lock, flags);
	ok = qp->conn_gen == gen && softmr_qp_latch(qp, peer->serial);
	spin_unlock_irqrestore(&qp->state_lock, flags);
	return ok;
}

/*
 * Does @peer, found for @c, still stand for the partner checked last time?
 * Neither end connected anew since (such a modify bumps conn_gen under
 * state_lock, and everything the check read, the latches included,
 * changes only then; the state, which others change too, is read here),
 * the same object (serials are never reused), not gone to the wire,
 * receiving, and not being destroyed.
 */
bool softmr_conn_cache_holds(const struct softmr_conn_cache *c,
			     struct softmr_qp *peer)
{
	return peer->serial == c->peer_serial &&
	       READ_ONCE(peer->conn_gen) == c->peer_gen &&
	       !READ_ONCE(peer->wire_on) && !READ_ONCE(peer->dying) &&
	       softmr_qp_receives(peer);
}

/* Give up the partner @c holds (struct softmr_conn_cache). */
static void softmr_conn_cache_release(struct softmr_conn_cache *c)
{
	if (c->held)
		softmr_qp_put(c->held);
	c->held = NULL;
}

/*
 * The partner checked last time, if it still is (softmr_conn_cache_holds()):
 * the one @req's run holds, lent to the WQE, or the one found by number,
 * with a reference of the WQE's own.  NULL: check anew.  The fast lane
 * (softmr_sq_fast.c) checks the held one likewise.
 */
static struct softmr_qp *softmr_req_cached_peer(struct softmr_req *req)
{
	struct softmr_conn_cache *c = &req->conn;
	struct softmr_qp *qp = req->qp;
	struct softmr_qp *peer;

	if (!softmr_conn_cache_current(c, qp)) {
		softmr_conn_cache_release(c);
		return NULL;
	}
	if (c->held) {
		if (softmr_conn_cache_holds(c, c->held))
			return c->held;
		softmr_conn_cache_release(c);
	}
	peer = softmr_xport_find_qp(&req->hint, &c->dgid, c->dqpn, qp->sdev);
	if (!peer)
		return NULL;
	if (softmr_conn_cache_holds(c, peer))
		return peer;
	softmr_qp_put(peer);
	return NULL;
}

/*
 * In a run with key caches, hold @req's checked partner from this WQE to
 * the next (a user QP's only: a kernel QP's completion handler, run in
 * this context, may destroy it and wait; and not one whose destroy has
 * begun, which a lookup still finds until it is erased).  The WQE's reference goes to
 * the cache, which lends it back (softmr_req_put_peer()).
 */
static void softmr_req_hold_peer(struct softmr_req *req)
{
	struct softmr_conn_cache *c = &req->conn;

	if (req->key_caches && !c->held && req->peer->is_user &&
	    !READ_ONCE(req->peer->dying))
		c->held = req->peer;
}

/* The WQE is done with its peer: drop its reference, unless lent. */
static void softmr_req_put_peer(struct softmr_req *req)
{
	if (req->peer && req->peer != req->conn.held)
		softmr_qp_put(req->peer);
	req->peer = NULL;
}

/* A connected requester's responder: its partner, checked. */
static enum ib_wc_status softmr_req_conn_peer(struct softmr_req *req)
{
	struct softmr_conn_cache *c = &req->conn;
	struct softmr_qp *qp = req->qp;
	struct softmr_qp *peer;
	unsigned long flags;
	u64 rtr_serial, gen, peer_gen = 0;
	u32 dqpn, sq_psn;

	/* req->av, copied with the checked attributes, is still theirs */
	peer = softmr_req_cached_peer(req);
	if (peer) {
		req->peer = peer;
		softmr_req_hold_peer(req);
		return IB_WC_SUCCESS;
	}
	c->peer_serial = 0;
	spin_lock_irqsave(&qp->state_lock, flags);
	req->av = qp->av;
	dqpn = qp->attr.dest_qp_num;
	sq_psn = qp->attr.sq_psn;
	rtr_serial = qp->rtr_serial;
	gen = qp->conn_gen;
	spin_unlock_irqrestore(&qp->state_lock, flags);
	peer = softmr_xport_find_qp(&req->hint, &req->av.dgid, dqpn, qp->sdev);
	if (!peer)
		return IB_WC_RETRY_EXC_ERR;
	req->peer = peer;
	if (!softmr_peer_is_partner(req, peer, sq_psn, rtr_serial, gen,
				    &peer_gen) || !softmr_qp_receives(peer))
		return IB_WC_RETRY_EXC_ERR;
	c->gen = gen;
	c->peer_gen = peer_gen;
	c->dqpn = dqpn;
	c->dgid = req->av.dgid;
	c->peer_serial = peer->serial;
	softmr_req_hold_peer(req);
	return IB_WC_SUCCESS;
}

/* Find the responder: the connected QP (RC) or the AH's target (UD). */
static enum ib_wc_status softmr_req_peer(struct softmr_req *req)
{
	struct softmr_qp *qp = req->qp;
	struct softmr_send_wqe *wqe = req->wqe;
	struct softmr_qp *peer;
	u32 qkey;
	bool force, forced;

	if (!softmr_qp_datagram(qp))	/* connected: RC and UC */
		return softmr_req_conn_peer(req);

	if (!softmr_av_lookup(qp->sdev, wqe->wr.ud.ah, qp->ibqp.pd, &req->av))
		return IB_WC_LOC_QP_OP_ERR;
	if (req->len > ib_mtu_enum_to_int(IB_MTU_4096))
		return IB_WC_LOC_LEN_ERR;
	qkey = wqe->wr.ud.remote_qkey;
	if (qkey & 0x80000000)
		qkey = qp->attr.qkey;
	/*
	 * A local peer takes it, unless force_wire may send even to that one:
	 * then the wire is asked first
	 */
	force = READ_ONCE(qp->sdev->force_wire);
	peer = NULL;
	if (!force)
		peer = softmr_xport_find_qp(&req->hint, &req->av.dgid,
					    wqe->wr.ud.remote_qpn, qp->sdev);
	if (!peer && softmr_wire_takes(qp->sdev, &req->av, &forced))
		return softmr_wire_send_ud(req, qkey, forced);
	if (force)
		peer = softmr_xport_find_qp(&req->hint, &req->av.dgid,
					    wqe->wr.ud.remote_qpn, qp->sdev);
	req->peer = peer;
	if (!peer) {	/* nobody there: the datagram is lost */
		softmr_count(qp->sdev, SOFTMR_CNT_UD_DROPS, 1);
		return IB_WC_SUCCESS;
	}
	if (!softmr_qp_datagram(peer) || !softmr_qp_receives(peer) ||
	    qkey != READ_ONCE(peer->attr.qkey)) {
		softmr_count(peer->sdev, SOFTMR_CNT_UD_DROPS, 1);
		softmr_qp_put(peer);
		req->peer = NULL;
	}
	return IB_WC_SUCCESS;
}

static int softmr_req_execute(struct softmr_req *req)
{
	struct softmr_qp *peer = req->peer;
	struct softmr_wq *rq;
	int st;

	switch (req->wqe->opcode) {
	case IB_WR_RDMA_WRITE:
		return softmr_do_write(req);
	case IB_WR_RDMA_READ:
		return softmr_do_read(req);
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return softmr_do_atomic(req);
	default:
		break;
	}

	/* SEND, SEND_WITH_IMM, RDMA_WRITE_WITH_IMM consume a receive WQE */
	rq = softmr_qp_rq(peer);
	softmr_key_cache_drop(&req->rkeys);	/* not held over the wait */
	if (!mutex_trylock(&rq->lock)) {
		softmr_key_cache_drop(&req->rqkeys);	/* nor this one */
		if (mutex_lock_killable(&rq->lock))
			return SOFTMR_STOP;
	}
	if (req->wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM) {
		u32 n;

		if (softmr_wq_pending(rq, &n)) {
			mutex_unlock(&rq->lock);
			softmr_qp_set_error(peer);
			return IB_WC_REM_OP_ERR;
		}
		if (!n) {	/* UC: no RNR, the message is lost */
			st = softmr_qp_reliable(peer) ? SOFTMR_RNR :
			     IB_WC_SUCCESS;
			goto out;
		}
		st = softmr_do_write(req);
		if (st == IB_WC_SUCCESS)
			st = softmr_deliver(req, rq, false);
	} else {
		st = softmr_deliver(req, rq, true);
	}
out:
	if (st == SOFTMR_RNR)
		softmr_rnr_wait(req->qp, rq, READ_ONCE(peer->attr.min_rnr_timer),
				req->rnr_quiet);
	mutex_unlock(&rq->lock);
	return st;
}

static u32 softmr_wc_opcode(u32 wr_opcode)
{
	switch (wr_opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_BIND_MW:
		return IB_WC_BIND_MW;
	default:
		return IB_WC_SEND;
	}
}

/* Does a send WQE that ends with @status have a completion? */
static bool softmr_send_completes(const struct softmr_qp *qp,
				  const struct softmr_send_wqe *wqe,
				  enum ib_wc_status status)
{
	return status != IB_WC_SUCCESS || qp->sig_all ||
	       (wqe->flags & SOFTMR_SEND_SIGNALED);
}

void softmr_send_complete(struct softmr_qp *qp,
			  const struct softmr_send_wqe *wqe,
			  enum ib_wc_status status, u32 byte_len)
{
	struct ib_uverbs_wc wc;

	/* most WQEs of a busy stream ask for no completion */
	if (!softmr_send_completes(qp, wqe, status))
		return;
	wc = (struct ib_uverbs_wc) {
		.wr_id = wqe->wr_id,
		.status = status,
		.opcode = softmr_wc_opcode(wqe->opcode),
		.byte_len = byte_len,
		.qp_num = qp->ibqp.qp_num,
		.port_num = 1,
	};
	if (status != IB_WC_SUCCESS && status != IB_WC_WR_FLUSH_ERR)
		softmr_count(qp->sdev, SOFTMR_CNT_ERR_COMPLETIONS, 1);
	softmr_cq_post(to_scq(qp->ibqp.send_cq), &wc, &qp->ibqp, false);
}

/* REG_MR, BIND_MW and LOCAL_INV: done here, no peer. */
static enum ib_wc_status softmr_local_op(struct softmr_qp *qp,
					 const struct softmr_send_wqe *wqe)
{
	if (wqe->opcode == IB_WR_REG_MR)
		return softmr_frmr_reg(qp, wqe);
	if (wqe->opcode == IB_WR_BIND_MW)
		return softmr_mw_bind(qp, wqe);
	if (!softmr_key_invalidate(qp, wqe->imm_data, false))
		return IB_WC_MW_BIND_ERR;
	softmr_count(qp->sdev, SOFTMR_CNT_LOCAL_INVS, 1);
	return IB_WC_SUCCESS;
}

/*
 * Execute one WQE copy.
 * Return: an ib_wc_status, SOFTMR_RNR or SOFTMR_STOP.
 */
static int softmr_sq_execute(struct softmr_qp *qp,
			     struct softmr_send_wqe *wqe,
			     struct softmr_req *req)
{
	int st;

	req->qp = qp;
	req->wqe = wqe;
	req->peer = NULL;
	req->len = 0;
	req->local.num = 0;
	if (req->key_caches) {
		st = wqe->opcode == IB_WR_RDMA_WRITE ?
		     softmr_sq_fast_write(qp, wqe, req) :
		     softmr_sq_fast_send(qp, wqe, req);
		if (st != SOFTMR_SLOW)
			return st;
	}
	st = softmr_req_prepare(req);
	/*
	 * On the wire, WQEs complete in order: what completes here and now
	 * (local operations, errors) and a fence wait for those in flight.
	 */
	if (READ_ONCE(qp->wire_on) &&
	    (st != IB_WC_SUCCESS || softmr_opcode_local(wqe->opcode) ||
	     (wqe->flags & SOFTMR_SEND_FENCE)) && softmr_wire_conn_busy(qp)) {
		softmr_sgl_release(&req->local);
		return SOFTMR_STOP;
	}
	if (st == IB_WC_SUCCESS && softmr_opcode_local(wqe->opcode))
		return softmr_local_op(qp, wqe);
	if (st == IB_WC_SUCCESS && !req->inl)
		req->len = req->local.len;
	if (st == IB_WC_SUCCESS && READ_ONCE(qp->wire_on)) {
		/* a receive WQE's MR is not held over the wire's waits */
		softmr_key_cache_drop(&req->rqkeys);
		st = softmr_wire_req_post(req);
		softmr_sgl_release(&req->local);
		return st;
	}
	if (st == IB_WC_SUCCESS)
		st = softmr_req_peer(req);
	if (st == IB_WC_SUCCESS && req->peer)
		st = softmr_req_execute(req);
	softmr_req_put_peer(req);
	softmr_sgl_release(&req->local);
	if (st == SOFTMR_STOP)
		return st;
	/* UC has no acknowledgements: what went wrong remotely is a loss */
	if (qp->ibqp.qp_type == IB_QPT_UC &&
	    (st == IB_WC_REM_ACCESS_ERR || st == IB_WC_REM_INV_REQ_ERR ||
	     st == IB_WC_REM_OP_ERR || st == IB_WC_RETRY_EXC_ERR)) {
		softmr_count(qp->sdev, SOFTMR_CNT_UD_DROPS, 1);
		st = IB_WC_SUCCESS;
	}
	return st;
}

/* Complete every pending send WQE with WR_FLUSH_ERR; sq.lock held. */
static void softmr_sq_flush(struct softmr_qp *qp)
{
	struct softmr_wq *sq = &qp->sq;
	u32 n;

	softmr_wire_conn_flush(qp);	/* those in flight first */
	qp->rnr_left = -1;	/* the head's RNR retries end with it */
	if (softmr_wq_pending(sq, &n))
		return;
	while (n--) {
		struct softmr_send_wqe *wqe = softmr_wq_take(sq);

		softmr_wq_consume(sq);
		softmr_send_complete(qp, wqe, IB_WC_WR_FLUSH_ERR, 0);
	}
}

/**
 * softmr_rq_flush() - complete a QP's receive WQEs with WR_FLUSH_ERR
 * @qp: the QP, in the error state
 *
 * WQEs of an SRQ are not the QP's and stay.
 */
void softmr_rq_flush(struct softmr_qp *qp)
{
	struct softmr_wq *rq = &qp->rq;
	u32 n;

	if (qp->srq || READ_ONCE(qp->state) != IB_QPS_ERR)
		return;
	mutex_lock(&rq->lock);
	if (!softmr_wq_pending(rq, &n)) {
		while (n--) {
			struct softmr_recv_wqe *rwqe = softmr_wq_take(rq);

			softmr_wq_consume(rq);
			softmr_recv_complete(qp, rwqe->wr_id,
					     IB_WC_WR_FLUSH_ERR, IB_WC_RECV, 0,
					     NULL);
		}
	}
	mutex_unlock(&rq->lock);
}

/*
 * Bytes a send WQE copy moves (its gather list; inline data is in the
 * ring already).  num_sge is not validated yet: only the SGEs the copy
 * holds are counted.
 */
static u64 softmr_wqe_bytes(const struct softmr_wq *sq,
			    const struct softmr_send_wqe *wqe)
{
	u32 i, n = min_t(u32, wqe->num_sge, sq->max_sge);
	u64 bytes = 0;

	if (wqe->flags & SOFTMR_SEND_INLINE)
		return 0;
	for (i = 0; i < n; i++)
		bytes += wqe->sge[i].length;
	return bytes;
}

/*
 * Was the WQE at the head posted after the last send doorbell?  The
 * poller runs those only up to SOFTMR_SQ_POLL_MAX_BYTES.
 */
static bool softmr_sq_unrung(struct softmr_qp *qp)
{
	return (s32)(qp->sq.cons - READ_ONCE(qp->sq_rung)) >= 0;
}

/* Run the send queue; sq.lock held.  Return: more work is left. */
bool softmr_sq_process(struct softmr_qp *qp)
{
	return softmr_sq_process_budget(qp, qp->sq.num, false, NULL);
}

/* The remote key @wqe names, or 0. */
static u32 softmr_wqe_rkey(const struct softmr_send_wqe *wqe)
{
	switch (wqe->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		return wqe->wr.rdma.rkey;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return wqe->wr.atomic.rkey;
	}
	return 0;
}

/*
 * Before @wqe runs: drop the key caches' entries and the partner it does
 * not use, so that each is held only from WQE to WQE that uses it (struct
 * softmr_key_cache, struct softmr_conn_cache).  @wqe is the kernel's copy; its SGEs are read within
 * the QP's limit, which the WQE's checks enforce afterwards.
 */
static void softmr_key_caches_prune(struct softmr_qp *qp,
				    struct softmr_req *req,
				    const struct softmr_send_wqe *wqe)
{
	u32 i, n = min_t(u32, wqe->num_sge, qp->sq.max_sge);
	bool inl = wqe->flags & SOFTMR_SEND_INLINE;
	bool used = false;
	u64 bytes = inl ? wqe->num_sge : 0;

	for (i = 0; i < n && !inl; i++) {
		bytes += wqe->sge[i].length;
		used |= wqe->sge[i].length &&
			wqe->sge[i].lkey == req->lkeys.key;
	}
	if (!used)
		softmr_key_cache_drop(&req->lkeys);
	/* a zero-length RDMA operation does not look its rkey up */
	if (!bytes || softmr_wqe_rkey(wqe) != req->rkeys.key)
		softmr_key_cache_drop(&req->rkeys);
	/* only a plain send uses a receive WQE's key (softmr_rqkeys_used()) */
	if (!softmr_opcode_caches_rwqe(wqe->opcode))
		softmr_key_cache_drop(&req->rqkeys);
	/* nor does a local operation send to the partner */
	if (softmr_opcode_local(wqe->opcode))
		softmr_conn_cache_release(&req->conn);
}

/**
 * softmr_sq_process_budget() - run at most @budget WQEs of the send queue
 * @qp: the QP, sq.lock held
 * @budget: WQEs
 * @polled: the send queue poller runs it: a WQE posted after the last
 *	doorbell that moves more than SOFTMR_SQ_POLL_MAX_BYTES stays at the
 *	head for the doorbell the provider rings for it
 * @blocked: set when such a WQE stopped the run (may be NULL)
 *
 * Return: more work is left.
 */
bool softmr_sq_process_budget(struct softmr_qp *qp, u32 budget, bool polled,
			      bool *blocked)
{
	struct softmr_wq *sq = &qp->sq;
	struct softmr_req *req = qp->req;
	u32 start = budget;	/* WQEs run so far: start - budget - 1 */
	bool more = false;
	u32 n = 0;

	/*
	 * every run of a user QP: a doorbell's runs many WQEs when the
	 * provider deferred doorbells (softmr_sq_defer.c); for one WQE the
	 * caches cost a reference taken and dropped
	 */
	req->key_caches = qp->is_user;
	while (budget--) {
		struct softmr_send_wqe *wqe;
		enum ib_qp_state state = READ_ONCE(qp->state);
		int st;

		if (state == IB_QPS_ERR) {
			softmr_sq_flush(qp);
			break;
		}
		if (state != IB_QPS_RTS)
			break;
		/*
		 * bounded: a whole ring of large WQEs yields and stops.  A
		 * polled run that has run a WQE stops instead: the poller
		 * gives its CPU up outside sq.lock, with sq_polled cleared
		 * so that the provider rings meanwhile (softmr_sq_poll.c)
		 */
		if (polled && softmr_resched_wanted()) {
			if (budget + 1 < start) {
				more = true;
				break;
			}
		} else {
			cond_resched();
		}
		if (READ_ONCE(qp->dying) || fatal_signal_pending(current))
			break;
		/* an RNR wait: its timer (softmr_sq_work()) retries the head */
		if (softmr_rnr_waiting(qp))
			break;
		/*
		 * the producer index is read again only once the WQEs it
		 * showed are taken: the poster writes its cache line for
		 * each WQE
		 */
		if (!n && softmr_wq_pending(sq, &n)) {
			softmr_qp_set_error(qp);
			break;
		}
		if (!n)
			break;

		wqe = softmr_wq_take(sq);
		n--;	/* the head is taken, or the run stops here */
		if (polled && softmr_sq_unrung(qp) &&
		    softmr_wqe_bytes(sq, wqe) > SOFTMR_SQ_POLL_MAX_BYTES) {
			if (blocked)
				*blocked = true;
			break;
		}
		if (READ_ONCE(qp->rnr_left) < 0)
			WRITE_ONCE(qp->rnr_left, qp->attr.rnr_retry);
		softmr_key_caches_prune(qp, req, wqe);
		st = softmr_sq_execute(qp, wqe, req);
		if (st == SOFTMR_STOP)
			break;	/* the WQE stays at the head */
		if (st == SOFTMR_POSTED) {	/* completes when answered */
			softmr_wq_hold(sq);
			softmr_count(qp->sdev, SOFTMR_CNT_SEND_WQES, 1);
			softmr_count(qp->sdev, SOFTMR_CNT_TX_BYTES, req->len);
			if (!budget)
				more = true;
			continue;
		}
		if (st == SOFTMR_RNR) {
			if (qp->rnr_left == 0) {
				softmr_rnr_forget(qp);
				st = IB_WC_RNR_RETRY_EXC_ERR;
			} else {
				if (qp->rnr_left != 7)	/* 7: for ever */
					qp->rnr_left--;
				break;
			}
		}
		qp->rnr_left = -1;
		softmr_wq_advance(sq);
		/* its slot is free before its completion can be seen */
		if (softmr_send_completes(qp, wqe, st))
			softmr_wq_publish(sq);
		softmr_count(qp->sdev, SOFTMR_CNT_SEND_WQES, 1);
		softmr_send_complete(qp, wqe, st,
				     st == IB_WC_SUCCESS ? (u32)req->len : 0);
		if (st == IB_WC_SUCCESS)
			softmr_count(qp->sdev, SOFTMR_CNT_TX_BYTES, req->len);
		else
			softmr_qp_set_error(qp);
		if (!budget)
			more = true;
	}
	softmr_wq_publish(sq);
	softmr_key_cache_drop(&req->lkeys);
	softmr_key_cache_drop(&req->rkeys);
	softmr_key_cache_drop(&req->rqkeys);
	softmr_conn_cache_release(&req->conn);
	req->key_caches = false;
	return more;
}

/**
 * softmr_engine_qp_init() - the engine's per-QP state
 * @qp: a QP being created
 *
 * Return: 0 or -ENOMEM.
 */
int softmr_engine_qp_init(struct softmr_qp *qp)
{
	qp->req = kzalloc(sizeof(*qp->req), GFP_KERNEL_ACCOUNT);
	return qp->req ? 0 : -ENOMEM;
}

/**
 * softmr_engine_qp_cleanup() - free what softmr_engine_qp_init() took
 * @qp: a QP being destroyed (or not created)
 */
void softmr_engine_qp_cleanup(struct softmr_qp *qp)
{
	/* a run gives its partner up as it ends; never kept past the QP */
	if (qp->req)
		softmr_conn_cache_release(&qp->req->conn);
	kfree(qp->req);
	qp->req = NULL;
	softmr_wire_conn_free(qp);
}

/*
 * Run the send queue; true when more work is left (the caller queues it).
 * @worker: in the engine's worker, not the poster's context: a user QP's
 * large WQEs posted after its last doorbell wait for the doorbell the
 * provider rings for them (softmr_sq_process_budget()).
 */
static bool softmr_qp_run_more(struct softmr_qp *qp, bool worker)
{
	bool more;

	if (softmr_rnr_waiting(qp))
		return false;	/* the RNR timer or a receive doorbell resumes */
	if (mutex_lock_killable(&qp->sq.lock))
		return false;
	more = softmr_sq_process_budget(qp, qp->sq.num, worker && qp->is_user,
					NULL);
	mutex_unlock(&qp->sq.lock);
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		softmr_rq_flush(qp);
	return more;
}

/**
 * softmr_qp_run() - run a QP's send queue now, in this context
 * @qp: the QP
 *
 * Sleeps.  Also flushes the queues of a QP in the error state.
 */
void softmr_qp_run(struct softmr_qp *qp)
{
	if (softmr_qp_run_more(qp, false))
		softmr_qp_kick(qp);
}

/*
 * A send doorbell covers the WQEs posted before it (softmr_sq_unrung()):
 * qp->sq_rung moves forward only, to a producer index within a ring of
 * the consumer (a wild one is the ring's problem, softmr_wq_pending()).
 */
static void softmr_sq_ring(struct softmr_qp *qp)
{
	/* the index after the WQEs; pairs with the provider's release */
	u32 prod = smp_load_acquire(&qp->sq.hdr->producer);
	u32 old = READ_ONCE(qp->sq_rung);

	if (prod - READ_ONCE(qp->sq.cons) > qp->sq.num)
		return;
	while ((s32)(prod - old) > 0) {
		u32 seen = cmpxchg(&qp->sq_rung, old, prod);

		if (seen == old)
			break;
		old = seen;
	}
}

/**
 * softmr_qp_doorbell() - a user QP's send doorbell
 * @qp: the QP
 *
 * Runs the send queue in the caller, then has it polled for a while
 * (softmr_sq_poll_start()) or, with polling off, lets the provider defer
 * the next doorbells for a while (softmr_sq_defer()).  Sleeps.
 */
void softmr_qp_doorbell(struct softmr_qp *qp)
{
	softmr_count(qp->sdev, SOFTMR_CNT_SEND_DOORBELLS, 1);
	WRITE_ONCE(qp->sq_poster_cpu, raw_smp_processor_id());
	softmr_sq_ring(qp);
	if (softmr_qp_run_more(qp, false))
		softmr_qp_kick(qp);
	else if (!softmr_sq_poll_start(qp))
		softmr_sq_defer(qp);
}

/**
 * softmr_qp_kick() - have the engine's worker run a QP's send queue
 * @qp: the QP
 *
 * Callable in atomic context.  A pending RNR timer is left alone.
 */
void softmr_qp_kick(struct softmr_qp *qp)
{
	softmr_qp_kick_delayed(qp, 0);
}

/**
 * softmr_qp_kick_delayed() - have the engine's worker run a QP's send
 *	queue after @delay jiffies
 * @qp: the QP
 * @delay: jiffies
 *
 * Callable in atomic context.  A run already queued sooner is left alone.
 */
void softmr_qp_kick_delayed(struct softmr_qp *qp, unsigned long delay)
{
	if (!READ_ONCE(qp->dying))
		queue_delayed_work(softmr_engine_wq, &qp->sq_work, delay);
}

/**
 * softmr_qp_kick_at() - have the engine's worker run a QP's send queue in
 *	@delay jiffies, sooner or later than a run already queued
 * @qp: the QP
 * @delay: jiffies
 *
 * Not for a QP being destroyed: the caller holds softmr_rnr_lock with the
 * QP on a waiter list (softmr_rnr.c; destroy takes it off first), or saw
 * qp->dying clear with a reference held, or is the QP's deferral timer
 * (softmr_sq_defer.c), which destroy_qp waits for before it quiesces the
 * works.  Callable in atomic context.
 */
void softmr_qp_kick_at(struct softmr_qp *qp, unsigned long delay)
{
	mod_delayed_work(softmr_engine_wq, &qp->sq_work, delay);
}

void softmr_sq_work(struct work_struct *work)
{
	struct softmr_qp *qp = container_of(to_delayed_work(work),
					    struct softmr_qp, sq_work);

	if (softmr_rnr_early(qp))
		return;	/* an RNR wait that is not due */
	if (softmr_qp_run_more(qp, true))
		softmr_qp_kick(qp);
	else
		softmr_sq_poll_start(qp);
}

static int softmr_post_send_one(struct softmr_qp *qp,
				const struct ib_send_wr *wr)
{
	struct softmr_wq *sq = &qp->sq;
	struct softmr_send_wqe *wqe;
	u32 inline_len = 0;
	int i;

	if (!softmr_opcode_ok(qp, wr->opcode) ||
	    (wr->send_flags & ~SOFTMR_SEND_FLAGS_ALL))
		return -EINVAL;
	if (wr->num_sge < 0 || (!(wr->send_flags & IB_SEND_INLINE) &&
				wr->num_sge > sq->max_sge))
		return -EINVAL;
	if (wr->send_flags & IB_SEND_INLINE) {
		/* no wrap: every length is checked before it is added */
		for (i = 0; i < wr->num_sge; i++) {
			if (wr->sg_list[i].length > qp->max_inline - inline_len)
				return -EINVAL;
			inline_len += wr->sg_list[i].length;
		}
	}
	if (sq->prod - READ_ONCE(sq->hdr->consumer) >= sq->num)
		return -ENOMEM;

	wqe = softmr_wq_slot(sq, sq->prod);
	memset(wqe, 0, SOFTMR_SEND_WQE_HDR_SIZE);
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->flags = wr->send_flags;
	wqe->imm_data = (__force u32)wr->ex.imm_data;
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		wqe->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
		wqe->wr.rdma.rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->wr.atomic.remote_addr = atomic_wr(wr)->remote_addr;
		wqe->wr.atomic.rkey = atomic_wr(wr)->rkey;
		wqe->wr.atomic.compare_add = atomic_wr(wr)->compare_add;
		wqe->wr.atomic.swap = atomic_wr(wr)->swap;
		break;
	case IB_WR_REG_MR:
		/* the MR by index: its keys' low bits are the consumer's */
		wqe->wr.reg.mr_index = reg_wr(wr)->mr->lkey >>
				       SOFTMR_MR_KEY_BITS;
		wqe->wr.reg.key = reg_wr(wr)->key;
		wqe->wr.reg.access = reg_wr(wr)->access;
		wqe->wr.reg.iova = reg_wr(wr)->mr->iova;
		wqe->wr.reg.length = reg_wr(wr)->mr->length;
		break;
	case IB_WR_LOCAL_INV:
	case IB_WR_SEND_WITH_INV:
		wqe->imm_data = wr->ex.invalidate_rkey;
		break;
	default:
		if (softmr_qp_datagram(qp)) {
			wqe->wr.ud.ah = to_sah(ud_wr(wr)->ah)->num;
			wqe->wr.ud.remote_qpn = ud_wr(wr)->remote_qpn;
			wqe->wr.ud.remote_qkey = ud_wr(wr)->remote_qkey;
		}
		break;
	}
	if (wr->send_flags & IB_SEND_INLINE) {
		u8 *p = (u8 *)wqe->sge;

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(p, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			p += wr->sg_list[i].length;
		}
		wqe->num_sge = inline_len;
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			wqe->sge[i].addr = wr->sg_list[i].addr;
			wqe->sge[i].length = wr->sg_list[i].length;
			wqe->sge[i].lkey = wr->sg_list[i].lkey;
		}
		wqe->num_sge = wr->num_sge;
	}
	/* the WQE before the index; pairs with softmr_wq_pending() */
	smp_store_release(&sq->prod, sq->prod + 1);
	return 0;
}

/**
 * softmr_post_send() - the post_send verb
 * @ibqp: the QP
 * @wr: kernel QPs: the WR list; user QPs: NULL (the doorbell)
 * @bad_wr: set to the first WR not posted
 *
 * A user QP's doorbell runs its send queue in the calling thread.  Kernel
 * WRs are written to the ring and run by the engine's worker.
 *
 * Return: 0, -EINVAL for a bad WR or a QP not yet in RTS, -ENOMEM when
 * the send queue is full.
 */
int softmr_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	enum ib_qp_state state = READ_ONCE(qp->state);
	unsigned long flags;
	int err = 0;

	if (qp->is_user) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		softmr_qp_doorbell(qp);
		return 0;
	}
	if (state == IB_QPS_RESET || state == IB_QPS_INIT ||
	    state == IB_QPS_RTR) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->sq.post_lock, flags);
	for (; wr; wr = wr->next) {
		err = softmr_post_send_one(qp, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->sq.post_lock, flags);
	softmr_qp_kick(qp);
	return err;
}

/**
 * softmr_post_recv() - the post_recv verb
 * @ibqp: the QP
 * @wr: kernel QPs: the WR list; user QPs: NULL (the receive doorbell)
 * @bad_wr: set to the first WR not posted
 *
 * The receive doorbell resumes senders waiting for a receive WQE and
 * flushes receive WQEs posted in the error state.
 *
 * Return: 0, -EINVAL for a bad WR, a QP in RESET or one on an SRQ,
 * -ENOMEM when the queue is full.
 */
int softmr_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	int err;

	if (qp->srq || (!qp->is_user && READ_ONCE(qp->state) == IB_QPS_RESET)) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->is_user) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		softmr_count(qp->sdev, SOFTMR_CNT_RECV_DOORBELLS, 1);
		softmr_rq_flush(qp);
		softmr_rnr_wake(&qp->rq);
		return 0;
	}
	err = softmr_post_recv_kernel(&qp->rq, wr, bad_wr);
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		softmr_qp_kick(qp);
	softmr_rnr_wake(&qp->rq);
	return err;
}
