// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RC and UC connections on the wire: the per-QP state, its worker, and the
 * way received packets reach it.
 *
 * A connected QP goes on the wire at RTR when its device is a wire device
 * and no softmr device on this host owns the destination GID (the local
 * transport keeps its one-copy path for those).  From then on:
 *
 * - the requester runs where the local one does (the doorbell or the
 *   engine's worker), but a WQE sent is held in the send window until its
 *   ACK, read response or atomic ACK arrives (softmr_wire_req.c);
 * - packets from the wire reach the device's receive worker, which finds
 *   the QP, checks that the packet comes from the QP's destination, and
 *   queues it on the QP (bounded); the QP's own worker then handles it in
 *   process context under sq.lock: responses and ACKs for the requester,
 *   requests for the responder (softmr_wire_resp.c), which may fault ODP
 *   pages in and wait for a dma-buf exporter: it works for this QP only.
 *   The same worker runs the retransmission and RNR timers.
 */

#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/slab.h>
#include <rdma/ib_addr.h>

#include "softmr_wire_conn.h"

static void softmr_wire_conn_work(struct work_struct *work);

/*
 * The connections' workers: a queue of their own (what one waits for is
 * its QP's memory: nothing else queued here waits behind it), able to
 * make progress under memory pressure (kernel consumers' storage).
 */
static struct workqueue_struct *softmr_wire_conn_wq;

static struct workqueue_struct *softmr_conn_wq(void)
{
	return softmr_wire_conn_wq;
}

int softmr_wire_conn_init(void)
{
	softmr_wire_conn_wq = alloc_workqueue("softmr_conn", WQ_UNBOUND |
					      WQ_MEM_RECLAIM, WQ_MAX_ACTIVE);
	return softmr_wire_conn_wq ? 0 : -ENOMEM;
}

void softmr_wire_conn_exit(void)
{
	destroy_workqueue(softmr_wire_conn_wq);
}

/**
 * softmr_wire_conn_kick() - have the QP's wire worker run
 * @wc: the connection
 * @delay: in jiffies; an earlier schedule stands
 */
void softmr_wire_conn_kick(struct softmr_wire_conn *wc, unsigned long delay)
{
	unsigned long flags;

	spin_lock_irqsave(&wc->inq_lock, flags);
	/*
	 * not pending: queue it; its timer pending: an earlier time wins; on
	 * the queue already (it runs now): leave it
	 */
	if (!wc->closed &&
	    (!delayed_work_pending(&wc->work) ||
	     (timer_pending(&wc->work.timer) &&
	      time_before(jiffies + delay, wc->work.timer.expires))))
		mod_delayed_work(softmr_conn_wq(), &wc->work, delay);
	spin_unlock_irqrestore(&wc->inq_lock, flags);
}

/**
 * softmr_wire_conn_prepare() - the connection state, before RTR
 * @qp: an RC or UC QP moving to RTR on a wire device
 *
 * Return: 0 (allocated now or before), or -ENOMEM.
 */
int softmr_wire_conn_prepare(struct softmr_qp *qp)
{
	struct softmr_wq *rq = softmr_qp_rq(qp);
	struct softmr_wire_conn *wc;
	u32 i;

	if (READ_ONCE(qp->wire))
		return 0;
	wc = kzalloc(sizeof(*wc), GFP_KERNEL_ACCOUNT);
	if (!wc)
		return -ENOMEM;
	wc->qp = qp;
	spin_lock_init(&wc->inq_lock);
	skb_queue_head_init(&wc->inq);
	INIT_DELAYED_WORK(&wc->work, softmr_wire_conn_work);
	/* never a window of nothing, whatever RTS finds (set again there) */
	softmr_wire_cc_init(&wc->cc, 0);
	wc->copies = kvcalloc(SOFTMR_WIRE_WINDOW, qp->sq.stride,
			      GFP_KERNEL_ACCOUNT);
	wc->sgl = kmalloc(sizeof(*wc->sgl), GFP_KERNEL_ACCOUNT);
	wc->rwqe = kmalloc(rq->stride, GFP_KERNEL_ACCOUNT);
	wc->res = kcalloc(SOFTMR_MAX_RD_ATOM, sizeof(*wc->res),
			  GFP_KERNEL_ACCOUNT);
	if (!wc->copies || !wc->sgl || !wc->rwqe || !wc->res)
		goto free;
	wc->sgl->num = 0;
	for (i = 0; i < SOFTMR_WIRE_WINDOW; i++)
		wc->win[i].wqe = wc->copies + (size_t)i * qp->sq.stride;
	/* a concurrent modify_qp may have been first */
	if (!cmpxchg(&qp->wire, NULL, wc))
		return 0;
	wc->sgl->num = 0;
free:
	kvfree(wc->copies);
	kfree(wc->sgl);
	kfree(wc->rwqe);
	kfree(wc->res);
	kfree(wc);
	return qp->wire ? 0 : -ENOMEM;
}

/* Does a connection to @av take the wire (forced: by force_wire)? */
static bool softmr_wire_conn_remote(struct softmr_qp *qp,
				    const struct softmr_av *av, bool *forced)
{
	return softmr_wire_takes(qp->sdev, av, forced);
}

/**
 * softmr_wire_conn_rtr() - a connected QP moves to RTR
 * @qp: an RC or UC QP, its new attributes applied
 *
 * Chooses the transport for the connection: the wire when the destination
 * is on another host.  The responder starts at the QP's rq_psn.
 *
 * softmr_wire_conn_prepare() allocated the state.
 */
void softmr_wire_conn_rtr(struct softmr_qp *qp)
{
	struct softmr_wire_conn *wc = qp->wire;
	struct softmr_av av;
	unsigned long flags;
	u32 dqpn, rq_psn, nres;
	unsigned int ndev_mtu;
	enum ib_mtu mtu;
	bool forced;

	spin_lock_irqsave(&qp->state_lock, flags);
	av = qp->av;
	dqpn = qp->attr.dest_qp_num;
	rq_psn = qp->attr.rq_psn;
	mtu = qp->attr.path_mtu;
	nres = qp->attr.max_dest_rd_atomic;
	spin_unlock_irqrestore(&qp->state_lock, flags);

	if (!wc || !softmr_wire_conn_remote(qp, &av, &forced)) {
		WRITE_ONCE(qp->wire_on, false);
		return;
	}
	mutex_lock(&qp->sq.lock);
	wc->av = av;
	wc->forced = forced;
	wc->dqpn = dqpn;
	wc->uc = qp->ibqp.qp_type == IB_QPT_UC;
	/* the path MTU, within what the netdev (or the VLAN) carries */
	ndev_mtu = softmr_av_ndev_mtu(qp->sdev, &av);
	wc->mtu = min(ib_mtu_enum_to_int(mtu ?: IB_MTU_1024),
		      ib_mtu_enum_to_int(iboe_get_mtu(ndev_mtu)));
	if ((int)wc->mtu < 256)
		wc->mtu = 256;
	/* RoCEv2's UDP source port spreads flows: one per QP */
	wc->sport = 0xc000 | (qp->ibqp.qp_num & 0x3fff);
	wc->epsn = rq_psn & SOFTMR_PSN_MASK;
	wc->msn = 0;
	wc->mstate = SOFTMR_MSG_NONE;
	wc->nak_sent = false;
	wc->ack_owed = false;
	wc->rwqe_held = false;
	wc->nres = min_t(u32, nres, SOFTMR_MAX_RD_ATOM);
	wc->res_next = 0;
	memset(wc->res, 0, SOFTMR_MAX_RD_ATOM * sizeof(*wc->res));
	WRITE_ONCE(qp->wire_on, true);
	mutex_unlock(&qp->sq.lock);
}

/**
 * softmr_wire_conn_rts() - a connected QP on the wire moves from RTR to RTS
 * @qp: the QP, its sq.lock held since before the state changed (nothing
 *	is sent with the requester's state not yet set)
 * @attr: the QP's attributes as they will be in RTS
 *
 * The requester starts at the QP's sq_psn with an empty window.
 */
void softmr_wire_conn_rts(struct softmr_qp *qp, const struct ib_qp_attr *attr)
{
	struct softmr_wire_conn *wc = qp->wire;
	u8 timeout;

	lockdep_assert_held(&qp->sq.lock);
	if (!READ_ONCE(qp->wire_on))
		return;
	WARN_ON_ONCE(!softmr_wire_win_empty(wc));
	softmr_wire_req_reset(wc);
	wc->npsn = attr->sq_psn & SOFTMR_PSN_MASK;
	wc->retry_cnt = attr->retry_cnt;
	wc->rnr_retry = attr->rnr_retry;
	wc->retry_left = wc->retry_cnt;
	wc->rnr_left = wc->rnr_retry;
	wc->resp_max = max_t(u32, attr->max_rd_atomic, 1);
	timeout = attr->timeout;
	wc->spsn = wc->npsn;
	wc->hpsn = wc->npsn;
	wc->una = wc->npsn;
	softmr_wire_cc_init(&wc->cc, wc->npsn);
	/* 4.096 µs << timeout; 0: no timer (IBTA 9.7.6.1.3) */
	wc->timeout = timeout ?
		max_t(unsigned long, nsecs_to_jiffies(4096ULL << timeout), 2) : 0;
}

/* Drop the packets queued for the QP's worker. */
static void softmr_wire_conn_purge(struct softmr_wire_conn *wc)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&wc->inq_lock, flags);
	n = skb_queue_len(&wc->inq);
	__skb_queue_purge(&wc->inq);
	spin_unlock_irqrestore(&wc->inq_lock, flags);
	atomic_sub(n, &wc->qp->sdev->wire_conn_queued);
}

/**
 * softmr_wire_conn_reset() - a QP goes to RESET: forget the connection
 * @qp: the QP in RESET, before its rings are emptied
 *
 * Off the wire first, under sq.lock: the worker neither completes nor
 * sends anything for the old connection afterwards.
 */
void softmr_wire_conn_reset(struct softmr_qp *qp)
{
	struct softmr_wire_conn *wc = qp->wire;

	WRITE_ONCE(qp->wire_on, false);
	if (!wc)
		return;
	mutex_lock(&qp->sq.lock);
	softmr_wire_req_reset(wc);
	wc->rwqe_held = false;
	wc->mstate = SOFTMR_MSG_NONE;
	wc->ack_owed = false;
	mutex_unlock(&qp->sq.lock);
	softmr_wire_conn_purge(wc);
}

/**
 * softmr_wire_conn_busy() - has the QP WQEs in flight on the wire?
 * @qp: the QP, sq.lock held
 *
 * Return: true while the send window is not empty.
 */
bool softmr_wire_conn_busy(struct softmr_qp *qp)
{
	lockdep_assert_held(&qp->sq.lock);
	return qp->wire && !softmr_wire_win_empty(qp->wire);
}

/**
 * softmr_wire_conn_sqd() - the QP moves to SQD: is its send queue drained?
 * @qp: the QP, sq.lock held
 *
 * Return: true when nothing is in flight on the wire; otherwise the last
 * answer sends the drained event.
 */
bool softmr_wire_conn_sqd(struct softmr_qp *qp)
{
	lockdep_assert_held(&qp->sq.lock);
	if (!softmr_wire_conn_busy(qp))
		return true;
	qp->wire->sqd_owed = true;
	return false;
}

/**
 * softmr_wire_conn_resume() - the QP leaves SQD for RTS
 * @qp: the QP, sq.lock held
 *
 * No drained event is owed any more.
 */
void softmr_wire_conn_resume(struct softmr_qp *qp)
{
	lockdep_assert_held(&qp->sq.lock);
	if (qp->wire)
		qp->wire->sqd_owed = false;
}

/**
 * softmr_wire_conn_flush() - the QP is in the error state: flush its wire
 *	state before the send queue
 * @qp: the QP, sq.lock held
 */
void softmr_wire_conn_flush(struct softmr_qp *qp)
{
	lockdep_assert_held(&qp->sq.lock);
	if (!qp->wire)
		return;
	softmr_wire_req_flush(qp->wire);
	softmr_wire_resp_flush(qp->wire);
}

/**
 * softmr_wire_conn_close() - the QP is being destroyed
 * @qp: the QP, qp->dying set
 *
 * Afterwards nothing is queued to the QP and its worker does not run.
 */
void softmr_wire_conn_close(struct softmr_qp *qp)
{
	struct softmr_wire_conn *wc = qp->wire;
	unsigned long flags;

	if (!wc)
		return;
	spin_lock_irqsave(&wc->inq_lock, flags);
	wc->closed = true;
	spin_unlock_irqrestore(&wc->inq_lock, flags);
	cancel_delayed_work_sync(&wc->work);
	softmr_wire_conn_purge(wc);
}

/**
 * softmr_wire_conn_free() - free a closed connection's state
 * @qp: the QP
 */
void softmr_wire_conn_free(struct softmr_qp *qp)
{
	struct softmr_wire_conn *wc = qp->wire;

	if (!wc)
		return;
	softmr_sgl_release(wc->sgl);
	kvfree(wc->copies);
	kfree(wc->sgl);
	kfree(wc->rwqe);
	kfree(wc->res);
	kfree(wc);
	qp->wire = NULL;
}

/**
 * softmr_wire_conn_rx() - an RC or UC packet from the wire for a QP here
 * @sdev: the device that owns the destination GID
 * @skb: the packet (consumed when 0 is returned)
 * @pkt: its parse
 *
 * The device's receive worker: finds the QP, checks that the packet comes
 * from the QP's destination on the wire, and queues it for the QP's worker.
 *
 * Return: 0 when queued, -ENOENT when nobody here takes it.
 */
int softmr_wire_conn_rx(struct softmr_dev *sdev, struct sk_buff *skb,
			const struct softmr_pkt *pkt)
{
	enum ib_qp_type type = SOFTMR_OP_TRANSPORT(pkt->opcode) ==
			       SOFTMR_OP_RC ? IB_QPT_RC : IB_QPT_UC;
	struct softmr_wire_conn *wc;
	union ib_gid src, dst;
	struct softmr_qp *qp;
	unsigned long flags;
	int ret = -ENOENT;

	qp = softmr_qp_get(sdev, pkt->dqpn);
	if (!qp)
		return -ENOENT;
	/* once set, qp->wire stays until the QP is freed */
	wc = READ_ONCE(qp->wire);
	if (qp->ibqp.qp_type != type || !wc || !READ_ONCE(qp->wire_on) ||
	    !softmr_qp_receives(qp))
		goto put;
	/*
	 * from the QP's destination to its source address, nobody else, on
	 * the source GID's VLAN (none for the netdev's own GIDs)
	 */
	softmr_wire_skb_gids(skb, &src, &dst);
	spin_lock_irqsave(&qp->state_lock, flags);
	if (memcmp(&src, &qp->av.dgid, sizeof(src)) ||
	    memcmp(&dst, &qp->av.sgid, sizeof(dst)) ||
	    skb_vlan_tag_present(skb) != !!qp->av.vlan_ifindex ||
	    (qp->av.vlan_ifindex &&
	     skb_vlan_tag_get_id(skb) != qp->av.vlan_id)) {
		spin_unlock_irqrestore(&qp->state_lock, flags);
		goto put;
	}
	spin_unlock_irqrestore(&qp->state_lock, flags);

	spin_lock_irqsave(&wc->inq_lock, flags);
	if (!wc->closed && skb_queue_len(&wc->inq) < SOFTMR_WIRE_INQ_MAX &&
	    atomic_add_unless(&sdev->wire_conn_queued, 1,
			      SOFTMR_WIRE_CONN_QUEUED_MAX)) {
		__skb_queue_tail(&wc->inq, skb);
		mod_delayed_work(softmr_conn_wq(), &wc->work, 0);
		ret = 0;
	}
	spin_unlock_irqrestore(&wc->inq_lock, flags);
put:
	softmr_qp_put(qp);
	return ret;
}

/* Handle one queued packet; sq.lock held. */
static void softmr_wire_conn_handle(struct softmr_wire_conn *wc,
				    struct sk_buff *skb)
{
	struct softmr_pkt pkt;

	if (softmr_wire_skb_parse(skb, &pkt)) {
		softmr_count(wc->qp->sdev, SOFTMR_CNT_WIRE_RX_DROPPED, 1);
		return;
	}
	softmr_count(wc->qp->sdev, SOFTMR_CNT_WIRE_RX_PACKETS, 1);
	if (pkt.flags & SOFTMR_PF_REQ)
		softmr_wire_resp_rx(wc, &pkt);
	else if (!wc->uc)
		softmr_wire_req_rx(wc, &pkt);
}

/*
 * The QP's wire worker: received packets (a bounded batch), the ACK owed
 * for them, the requester's timers and whatever the window lets it send.
 */
static void softmr_wire_conn_work(struct work_struct *work)
{
	struct softmr_wire_conn *wc = container_of(to_delayed_work(work),
						   struct softmr_wire_conn,
						   work);
	struct softmr_qp *qp = wc->qp;
	u32 budget = SOFTMR_WIRE_BUDGET;
	struct sk_buff *skb;
	unsigned long flags;
	bool more, drained;

	mutex_lock(&qp->sq.lock);
	while (budget--) {
		spin_lock_irqsave(&wc->inq_lock, flags);
		skb = __skb_dequeue(&wc->inq);
		spin_unlock_irqrestore(&wc->inq_lock, flags);
		if (!skb)
			break;
		atomic_dec(&qp->sdev->wire_conn_queued);
		if (READ_ONCE(qp->wire_on) && !READ_ONCE(qp->dying))
			softmr_wire_conn_handle(wc, skb);
		kfree_skb(skb);
	}
	if (READ_ONCE(qp->wire_on))
		softmr_wire_resp_ack(wc);
	if (READ_ONCE(qp->wire_on) && !wc->uc)
		softmr_wire_req_timer(wc);
	/* the window may have room: more WQEs from the send queue */
	more = READ_ONCE(qp->wire_on) && !READ_ONCE(qp->dying) &&
	       softmr_sq_process(qp);
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		softmr_sq_process(qp);	/* flushes */
	drained = wc->sqd_fire;
	wc->sqd_fire = false;
	mutex_unlock(&qp->sq.lock);
	/* outside sq.lock: the handler may modify the QP */
	if (drained)
		softmr_qp_sq_drained(qp);
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		softmr_rq_flush(qp);

	spin_lock_irqsave(&wc->inq_lock, flags);
	more |= !skb_queue_empty(&wc->inq);
	spin_unlock_irqrestore(&wc->inq_lock, flags);
	if (more)
		softmr_wire_conn_kick(wc, 0);
}

/**
 * softmr_wire_conn_pkt() - a packet of the connection to fill
 * @wc: the connection
 * @pkt: its headers (opcode and the fields it needs); PSN and flags set by
 *	the caller, pad, P_Key and destination QP here
 * @data_len: payload bytes
 * @payload: set to where the payload goes
 *
 * Return: the skb (headers written), or NULL.
 */
struct sk_buff *softmr_wire_conn_pkt(struct softmr_wire_conn *wc,
				     struct softmr_pkt *pkt, u32 data_len,
				     u8 **payload)
{
	unsigned int hl = softmr_op_hdr_len(pkt->opcode);
	struct sk_buff *skb;

	pkt->pad = -data_len & 3;
	pkt->pkey = SOFTMR_DEF_PKEY;
	pkt->dqpn = wc->dqpn;
	skb = softmr_wire_alloc(wc->qp->sdev, hl + data_len + pkt->pad);
	if (!skb)
		return NULL;
	softmr_pkt_build(skb->data, pkt);
	*payload = skb->data + hl;
	memset(*payload + data_len, 0, pkt->pad);
	return skb;
}

/**
 * softmr_wire_conn_send() - send a packet from softmr_wire_conn_pkt()
 * @wc: the connection
 * @skb: the packet (consumed)
 */
void softmr_wire_conn_send(struct softmr_wire_conn *wc, struct sk_buff *skb)
{
	softmr_wire_xmit(wc->qp->sdev, skb, &wc->av, wc->sport, wc->forced);
}

/**
 * softmr_wire_conn_send_hdr() - send a packet without payload (ACK, NAK,
 *	atomic ACK); lost when no memory is left, as on any wire
 * @wc: the connection
 * @pkt: its headers (as for softmr_wire_conn_pkt())
 */
void softmr_wire_conn_send_hdr(struct softmr_wire_conn *wc,
			       struct softmr_pkt *pkt)
{
	struct sk_buff *skb;
	u8 *p;

	skb = softmr_wire_conn_pkt(wc, pkt, 0, &p);
	if (skb)
		softmr_wire_conn_send(wc, skb);
}

/**
 * softmr_wire_sgl_prefetch() - fault in the ODP memory of a message's list
 * @sgl: the SG list, resolved and checked for the access that follows
 * @write: the message lands there (read responses), else it is sent
 *
 * The requester, at a message's first packet or first read response:
 * each ODP MR's pages come in with one fault, not one per packet, as the
 * responder's do (softmr_odp_prefetch_ahead(); the first
 * SOFTMR_PREFETCH_AHEAD_MAX bytes of the list).  Best effort: the copies
 * check and fault each page themselves.
 */
void softmr_wire_sgl_prefetch(struct softmr_sgl *sgl, bool write)
{
	u64 left = SOFTMR_PREFETCH_AHEAD_MAX;
	u32 i;

	for (i = 0; i < sgl->num && left; i++) {
		u64 n = min_t(u64, sgl->sge[i].length, left);

		softmr_odp_prefetch_ahead(sgl->mr[i], sgl->sge[i].addr, n,
					  write);
		left -= n;
	}
}

/**
 * softmr_wire_sgl_copy() - copy between a buffer and an SG list at an offset
 * @sgl: the SG list, resolved
 * @off: byte offset into the list
 * @buf: the buffer
 * @len: bytes
 * @dir: SOFTMR_FROM_MR (gather into @buf) or SOFTMR_TO_MR (scatter)
 * @access: what the list was checked for
 *
 * Return: bytes copied; less than @len when the list ends or an access
 * fails.
 */
u64 softmr_wire_sgl_copy(struct softmr_sgl *sgl, u64 off, void *buf, u64 len,
			 enum softmr_copy_dir dir, int access)
{
	u64 done = 0;
	u32 i;

	for (i = 0; i < sgl->num && done < len; i++) {
		const struct softmr_sge *sge = &sgl->sge[i];
		u64 n;

		if (off >= sge->length) {
			off -= sge->length;
			continue;
		}
		n = min_t(u64, sge->length - off, len - done);
		if (softmr_mr_copy_key(sgl->mr[i], sge->lkey, sge->addr + off,
				       buf + done, n, dir, access))
			break;
		done += n;
		off = 0;
	}
	return done;
}
