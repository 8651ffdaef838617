// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * UD datagrams from the wire whose receive WQE may wait: scatter lists on
 * ODP memory (a page fault can wait on a user's FUSE server for ever) or
 * on a dynamic dma-buf import (the reservation lock and the exporter's
 * fences can wait on a user's GPU jobs).  The device's receive worker
 * serves every QP of the device and never waits for what a user controls;
 * it hands such a datagram to the QP's own worker, on a workqueue of its
 * own, where a fault or a fence delays that QP's datagrams (and those of
 * QPs sharing its SRQ) and holds one of the queue's workers, never the
 * device's worker or the connections' (RC and UC are not affected).  The
 * queue is bounded per QP and per device; what does not fit is lost, as a
 * UD datagram may be (Documentation/infiniband/softmr.rst, "The wire").
 */

#include <linux/skbuff.h>

#include "softmr.h"
#include "softmr_wire.h"
#include "softmr_wire_conn.h"

/* Datagrams waiting for UD QPs' workers, all of a device's together */
#define SOFTMR_WIRE_UD_QUEUED_MAX	4096

/* The UD QPs' workers: unbound, nothing waits for them */
static struct workqueue_struct *softmr_wire_ud_wq;

int softmr_wire_ud_wq_init(void)
{
	softmr_wire_ud_wq = alloc_workqueue("softmr_ud", WQ_UNBOUND,
					    WQ_MAX_ACTIVE);
	return softmr_wire_ud_wq ? 0 : -ENOMEM;
}

void softmr_wire_ud_wq_exit(void)
{
	destroy_workqueue(softmr_wire_ud_wq);
}

/**
 * softmr_wire_ud_reset() - drop the datagrams queued for the QP's worker
 * @qp: the QP, going to RESET (what arrived before is not delivered into
 *	the WQEs posted after it; a datagram the worker has in hand finds the
 *	QP not receiving) or being destroyed
 */
void softmr_wire_ud_reset(struct softmr_qp *qp)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&qp->ud_inq.lock, flags);
	n = skb_queue_len(&qp->ud_inq);
	__skb_queue_purge(&qp->ud_inq);
	spin_unlock_irqrestore(&qp->ud_inq.lock, flags);
	atomic_sub(n, &qp->sdev->wire_ud_queued);
}

/*
 * Deliver the QP's queued datagrams, waiting for its memory if need be; a
 * bounded batch, then it queues itself again.
 */
static void softmr_wire_ud_work(struct work_struct *work)
{
	struct softmr_qp *qp = container_of(work, struct softmr_qp, ud_work);
	struct softmr_dev *sdev = qp->sdev;
	u32 budget = SOFTMR_WIRE_BUDGET;
	unsigned long flags;
	struct sk_buff *skb;

	while (budget-- && (skb = skb_dequeue(&qp->ud_inq))) {
		struct softmr_pkt pkt;

		atomic_dec(&sdev->wire_ud_queued);
		if (READ_ONCE(qp->dying) || softmr_wire_skb_parse(skb, &pkt) ||
		    pkt.dqpn != qp->ibqp.qp_num ||
		    softmr_engine_wire_recv(sdev, &pkt, skb, true))
			softmr_count(sdev, SOFTMR_CNT_WIRE_RX_DROPPED, 1);
		else
			softmr_count(sdev, SOFTMR_CNT_WIRE_RX_PACKETS, 1);
		kfree_skb(skb);
		cond_resched();
	}
	spin_lock_irqsave(&qp->ud_inq.lock, flags);
	if (!qp->ud_closed && !skb_queue_empty(&qp->ud_inq))
		queue_work(softmr_wire_ud_wq, &qp->ud_work);
	spin_unlock_irqrestore(&qp->ud_inq.lock, flags);
}

/**
 * softmr_wire_ud_init() - a QP's deferred datagram queue, empty
 * @qp: a QP being created
 */
void softmr_wire_ud_init(struct softmr_qp *qp)
{
	skb_queue_head_init(&qp->ud_inq);
	INIT_WORK(&qp->ud_work, softmr_wire_ud_work);
	qp->ud_closed = false;
}

/**
 * softmr_wire_ud_defer() - hand a datagram to its QP's worker
 * @sdev: the device
 * @dqpn: the datagram's destination QP
 * @skb: the datagram, as softmr_wire_rx_work() has it
 *
 * The device's receive worker: softmr_engine_wire_recv() found that the
 * receive WQE may wait.
 *
 * Return: 0 when the QP's worker took @skb, -ENOENT when the caller frees
 * it (the QP is gone or closing, or its queue or the device's is full).
 */
int softmr_wire_ud_defer(struct softmr_dev *sdev, u32 dqpn,
			 struct sk_buff *skb)
{
	struct softmr_qp *qp = softmr_qp_get(sdev, dqpn);
	unsigned long flags;
	int ret = -ENOENT;

	if (!qp)
		return -ENOENT;
	spin_lock_irqsave(&qp->ud_inq.lock, flags);
	if (!qp->ud_closed &&
	    skb_queue_len(&qp->ud_inq) < SOFTMR_WIRE_INQ_MAX &&
	    atomic_add_unless(&sdev->wire_ud_queued, 1,
			      SOFTMR_WIRE_UD_QUEUED_MAX)) {
		__skb_queue_tail(&qp->ud_inq, skb);
		queue_work(softmr_wire_ud_wq, &qp->ud_work);
		ret = 0;
	}
	spin_unlock_irqrestore(&qp->ud_inq.lock, flags);
	softmr_qp_put(qp);
	return ret;
}

/**
 * softmr_wire_ud_close() - the QP is being destroyed
 * @qp: the QP, qp->dying set
 *
 * Afterwards nothing is queued to the QP and its worker does not run; the
 * datagrams still queued are dropped.
 */
void softmr_wire_ud_close(struct softmr_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->ud_inq.lock, flags);
	qp->ud_closed = true;
	spin_unlock_irqrestore(&qp->ud_inq.lock, flags);
	cancel_work_sync(&qp->ud_work);
	softmr_wire_ud_reset(qp);
}
