// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Queue pairs: creation with their rings, the modify_qp state machine,
 * query and destruction, and the QP number table the engine looks peers
 * up in.
 *
 * A QP is reachable by its number from creation until destroy_qp starts;
 * every lookup takes a reference, and destroy_qp waits until the last one
 * is dropped, so an engine working on a peer never sees it freed.
 */

#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "softmr.h"

#define SOFTMR_QP_ACCESS_ALL	(IB_ACCESS_LOCAL_WRITE | \
				 IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC)

/* QP serial numbers, never reused (unlike QP numbers) */
static atomic64_t softmr_qp_serial = ATOMIC64_INIT(0);

void softmr_qp_init_dev(struct softmr_dev *sdev)
{
	xa_init_flags(&sdev->qp_xa, XA_FLAGS_ALLOC);
	/* numbers that say nothing about other devices' or earlier QPs */
	sdev->qp_next = get_random_u32_inclusive(SOFTMR_QPN_MIN, SOFTMR_QPN_MAX);
	xa_init_flags(&sdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
}

/**
 * softmr_qp_get() - look a QP up by number
 * @sdev: the device
 * @qpn: the QP number
 *
 * Return: the QP with a reference (softmr_qp_put()), or NULL.
 */
struct softmr_qp *softmr_qp_get(struct softmr_dev *sdev, u32 qpn)
{
	struct softmr_qp *qp;

	xa_lock(&sdev->qp_xa);
	qp = xa_load(&sdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->users))
		qp = NULL;
	xa_unlock(&sdev->qp_xa);
	return qp;
}

/**
 * softmr_qp_put() - drop a reference from softmr_qp_get()
 * @qp: the QP
 */
void softmr_qp_put(struct softmr_qp *qp)
{
	if (refcount_dec_and_test(&qp->users))
		complete(&qp->released);
}

static void softmr_qp_event(struct softmr_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/**
 * softmr_qp_sq_drained() - the send queue of a QP in SQD is drained
 * @qp: the QP
 *
 * Sends IB_EVENT_SQ_DRAINED when the QP asked for it.
 */
void softmr_qp_sq_drained(struct softmr_qp *qp)
{
	if (READ_ONCE(qp->attr.en_sqd_async_notify))
		softmr_qp_event(qp, IB_EVENT_SQ_DRAINED);
}

/* Publish the state; qp->state_lock held. */
static void softmr_qp_store_state(struct softmr_qp *qp,
				  enum ib_qp_state state)
{
	lockdep_assert_held(&qp->state_lock);
	WRITE_ONCE(qp->state, state);
	WRITE_ONCE(qp->sq.hdr->qp_state, state);
}

/**
 * softmr_qp_set_error() - move a QP to the error state
 * @qp: the QP
 *
 * Its outstanding WQEs are then flushed (by the engine).  Callable from
 * any context the engine runs in, with the QP's queue locks held or not.
 */
void softmr_qp_set_error(struct softmr_qp *qp)
{
	unsigned long flags;
	bool changed;

	spin_lock_irqsave(&qp->state_lock, flags);
	changed = qp->state != IB_QPS_ERR && qp->state != IB_QPS_RESET;
	if (changed)
		softmr_qp_store_state(qp, IB_QPS_ERR);
	spin_unlock_irqrestore(&qp->state_lock, flags);
	if (!changed)
		return;
	if (qp->srq)
		softmr_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
	/* now, an RNR timer armed or not (softmr_rnr_early() lets ERR by) */
	if (!READ_ONCE(qp->dying))
		softmr_qp_kick_at(qp, 0);
}

/* Lock classes of send queues, apart from receive queues (nested in them). */
static struct lock_class_key softmr_sq_lock_key;
static struct lock_class_key softmr_sq_post_lock_key;

static int softmr_qp_check_cap(struct softmr_dev *sdev,
			       struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;

	if (cap->max_send_wr > sdev->attr.max_qp_wr ||
	    cap->max_send_sge > SOFTMR_MAX_SGE ||
	    cap->max_inline_data > SOFTMR_MAX_INLINE)
		return -EINVAL;
	if (init->srq)
		return 0;
	if (cap->max_recv_wr > sdev->attr.max_qp_wr ||
	    cap->max_recv_sge > SOFTMR_MAX_SGE)
		return -EINVAL;
	return 0;
}

/*
 * Give the QP its number, reserved: lookups find nothing there until
 * softmr_qp_publish(), so an error before that frees a QP no one has seen.
 */
static int softmr_qp_reserve(struct softmr_dev *sdev, struct softmr_qp *qp,
			     enum ib_qp_type type)
{
	u32 qpn;
	int err;

	if (type == IB_QPT_GSI) {
		err = xa_insert(&sdev->qp_xa, 1, NULL, GFP_KERNEL);
		qpn = 1;
	} else {
		err = xa_alloc_cyclic(&sdev->qp_xa, &qpn, NULL,
				      XA_LIMIT(SOFTMR_QPN_MIN, SOFTMR_QPN_MAX),
				      &sdev->qp_next, GFP_KERNEL);
		err = err < 0 ? err : 0;
	}
	if (err)
		return err == -EBUSY ? -EINVAL : err;
	qp->ibqp.qp_num = qpn;
	return 0;
}

/* Make a fully built QP reachable by its number: the last step. */
static void softmr_qp_publish(struct softmr_dev *sdev, struct softmr_qp *qp)
{
	xa_store(&sdev->qp_xa, qp->ibqp.qp_num, qp, GFP_KERNEL);
}

/**
 * softmr_create_qp() - the create_qp verb
 * @ibqp: the QP, allocated by ib_core
 * @init: type RC, UD or (kernel) GSI; capabilities; no create flags
 * @udata: user QPs: the response gets the rings' places
 *
 * Return: 0, -EOPNOTSUPP for another type or create flags, -EINVAL for
 * capabilities beyond the device's, -ENOMEM.
 */
int softmr_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		     struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(ibqp->device);
	struct softmr_qp *qp = to_sqp(ibqp);
	struct softmr_create_qp_resp resp = {};
	u32 inline_sz;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:
		if (udata || init->port_num != 1)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	err = softmr_qp_check_cap(sdev, init);
	if (err)
		return err;
	if (udata) {
		if (udata->outlen < sizeof(resp))
			return -EINVAL;
		if (udata->inlen &&
		    !ib_is_udata_cleared(udata, 0, udata->inlen))
			return -EOPNOTSUPP;
	}
	if (atomic_inc_return(&sdev->qp_count) > sdev->attr.max_qp) {
		err = -ENOMEM;
		goto err_count;
	}

	qp->sdev = sdev;
	qp->is_user = !!udata;
	if (udata)
		qp->owner = rdma_udata_to_drv_context(udata,
						      struct softmr_ucontext,
						      ibuc);
	qp->srq = init->srq ? to_ssrq(init->srq) : NULL;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	refcount_set(&qp->users, 1);
	init_completion(&qp->released);
	spin_lock_init(&qp->state_lock);
	mutex_init(&qp->modify_lock);
	qp->serial = atomic64_inc_return(&softmr_qp_serial);
	INIT_LIST_HEAD(&qp->rnr_entry);
	/* an empty list even for a QP on an SRQ (its own rq is no ring) */
	INIT_LIST_HEAD(&qp->rq.rnr_waiters);
	qp->rnr_left = -1;
	INIT_DELAYED_WORK(&qp->sq_work, softmr_sq_work);
	INIT_DELAYED_WORK(&qp->sq_poll_work, softmr_sq_poll_work);
	INIT_LIST_HEAD(&qp->sq_poll_entry);
	softmr_sq_defer_init(qp);
	qp->sq_poll_cpu = -1;
	qp->sq_poster_cpu = -1;
	softmr_wire_ud_init(qp);

	err = softmr_engine_qp_init(qp);
	if (err)
		goto err_count;
	inline_sz = init->cap.max_inline_data;
	err = softmr_wq_init(&qp->sq, init->cap.max_send_wr,
			     init->cap.max_send_sge, inline_sz,
			     SOFTMR_SEND_WQE_HDR_SIZE, udata, &resp.sq);
	if (err)
		goto err_engine;
	/* a send queue's lock is held while the peer's receive queue is used */
	lockdep_set_class(&qp->sq.lock, &softmr_sq_lock_key);
	lockdep_set_class(&qp->sq.post_lock, &softmr_sq_post_lock_key);
	qp->max_inline = min_t(u32, qp->sq.stride - SOFTMR_SEND_WQE_HDR_SIZE,
			       SOFTMR_MAX_INLINE);
	if (!qp->srq) {
		err = softmr_wq_init(&qp->rq, init->cap.max_recv_wr,
				     init->cap.max_recv_sge, 0,
				     SOFTMR_RECV_WQE_HDR_SIZE, udata,
				     &resp.rq);
		if (err)
			goto err_sq;
	}
	qp->state = IB_QPS_RESET;
	qp->sq.hdr->qp_state = IB_QPS_RESET;
	qp->attr.port_num = 1;

	init->cap.max_send_wr = qp->sq.num;
	init->cap.max_send_sge = qp->sq.max_sge;
	init->cap.max_inline_data = qp->max_inline;
	if (!qp->srq) {
		init->cap.max_recv_wr = qp->rq.num;
		init->cap.max_recv_sge = qp->rq.max_sge;
	}

	err = softmr_qp_reserve(sdev, qp, init->qp_type);
	if (err)
		goto err_rq;
	if (udata) {
		resp.max_inline = qp->max_inline;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_unreserve;
	}
	softmr_qp_publish(sdev, qp);
	return 0;

err_unreserve:
	xa_erase(&sdev->qp_xa, ibqp->qp_num);
err_rq:
	if (!qp->srq)
		softmr_wq_cleanup(&qp->rq);
err_sq:
	softmr_wq_cleanup(&qp->sq);
err_engine:
	softmr_engine_qp_cleanup(qp);
err_count:
	atomic_dec(&sdev->qp_count);
	return err;
}

/* The IB limits of the attributes modify_qp takes. */
static int softmr_qp_check_attr(struct softmr_qp *qp, struct ib_qp_attr *attr,
				int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if (!SOFTMR_CORE_CHECKS_QKEY && (mask & IB_QP_QKEY) &&
	    (attr->qkey & 0x80000000) && qp->is_user && !capable(CAP_NET_RAW))
		return -EPERM;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= SOFTMR_PKEY_TBL_LEN)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SOFTMR_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SOFTMR_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > SOFTMR_QPN_MAX)
		return -EINVAL;
	if (mask & (IB_QP_ALT_PATH | IB_QP_CAP | IB_QP_RATE_LIMIT))
		return -EOPNOTSUPP;
	return 0;
}

/* Copy the attributes in @mask; state_lock held. */
static void softmr_qp_apply_attr(struct softmr_qp *qp,
				 const struct ib_qp_attr *attr, int mask,
				 const struct softmr_av *av)
{
	struct ib_qp_attr *a = &qp->attr;

	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	/*
	 * Only the remote access bits mean something for a QP; MR-only bits
	 * (ON_DEMAND, FLUSH_*, ...) are ignored, as ConnectX and rxe do.
	 */
	if (mask & IB_QP_ACCESS_FLAGS)
		WRITE_ONCE(a->qp_access_flags,
			   attr->qp_access_flags & SOFTMR_QP_ACCESS_ALL);
	if (mask & IB_QP_AV) {
		a->ah_attr = attr->ah_attr;
		a->ah_attr.grh.sgid_attr = NULL;	/* not kept referenced */
		qp->av = *av;
	}
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN) {
		a->dest_qp_num = attr->dest_qp_num;
		qp->rtr_serial = atomic64_read(&softmr_qp_serial);
	}
	if (mask & IB_QP_PATH_MIG_STATE)
		a->path_mig_state = attr->path_mig_state;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
}

/* RESET empties both queues: the kernel skips what was posted. */
static void softmr_qp_reset_rings(struct softmr_qp *qp)
{
	struct softmr_wq *wqs[2] = { &qp->sq, qp->srq ? NULL : &qp->rq };
	int i;

	for (i = 0; i < ARRAY_SIZE(wqs); i++) {
		struct softmr_wq *wq = wqs[i];
		unsigned long flags;
		u32 prod;

		if (!wq)
			continue;
		mutex_lock(&wq->lock);
		spin_lock_irqsave(&wq->post_lock, flags);
		prod = wq->is_user ? READ_ONCE(wq->hdr->producer) : wq->prod;
		wq->cons = prod;
		wq->held = 0;
		if (wq == &qp->sq)
			qp->rnr_left = -1;	/* no head, no retries */
		/* slots free only after we are done reading them */
		smp_store_release(&wq->hdr->consumer, prod);
		spin_unlock_irqrestore(&wq->post_lock, flags);
		mutex_unlock(&wq->lock);
	}
}

/*
 * softmr_modify_qp() under the QP's modify_lock; @last_wqe and @drained
 * are set for the asynchronous events to send once the lock is dropped (a
 * consumer's handler may modify the QP).
 */
static int __softmr_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			      int mask, struct ib_udata *udata,
			      bool *last_wqe, bool *drained)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	enum ib_qp_state cur, new;
	struct ib_qp_attr rts_attr;
	struct softmr_av av = {};
	unsigned long flags;
	bool lock_sq;
	int err;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	err = softmr_qp_check_attr(qp, attr, mask);
	if (err)
		return err;
	if (mask & IB_QP_AV) {
		err = softmr_av_from_attr(&av, &attr->ah_attr);
		if (err)
			return err;
	}
	/* a connection that may go on the wire: its state first */
	if ((mask & IB_QP_STATE) && attr->qp_state == IB_QPS_RTR &&
	    (ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC) &&
	    READ_ONCE(qp->sdev->wire)) {
		err = softmr_wire_conn_prepare(qp);
		if (err)
			return err;
	}

	/*
	 * RTR to RTS on the wire: the requester's state is set before any
	 * doorbell can see RTS (sq.lock held across the change)
	 */
	lock_sq = (mask & IB_QP_STATE) && attr->qp_state == IB_QPS_RTS &&
		  READ_ONCE(qp->wire_on);
	if (lock_sq)
		mutex_lock(&qp->sq.lock);
	spin_lock_irqsave(&qp->state_lock, flags);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (cur != qp->state ||
	    !ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask)) {
		spin_unlock_irqrestore(&qp->state_lock, flags);
		if (lock_sq)
			mutex_unlock(&qp->sq.lock);
		return -EINVAL;
	}
	softmr_qp_apply_attr(qp, attr, mask, &av);
	if (lock_sq && cur == IB_QPS_RTR)
		rts_attr = qp->attr;
	if (mask & IB_QP_STATE)
		softmr_qp_store_state(qp, new);
	/*
	 * connected anew: the next first message latches the partner, and
	 * partners checked before are checked anew (softmr_req_conn_peer())
	 */
	if ((mask & (IB_QP_AV | IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_SQ_PSN)) ||
	    new == IB_QPS_RESET) {
		atomic64_set(&qp->peer_serial, 0);
		WRITE_ONCE(qp->conn_gen, qp->conn_gen + 1);
	}
	spin_unlock_irqrestore(&qp->state_lock, flags);
	if (lock_sq) {
		if (cur == IB_QPS_RTR)
			softmr_wire_conn_rts(qp, &rts_attr);
		else
			softmr_wire_conn_resume(qp);
		mutex_unlock(&qp->sq.lock);
	}

	if (!(mask & IB_QP_STATE) || cur == new)
		return 0;
	switch (new) {
	case IB_QPS_RESET:
		softmr_wire_conn_reset(qp);
		softmr_wire_ud_reset(qp);
		softmr_rnr_forget(qp);	/* its head is gone */
		softmr_qp_reset_rings(qp);
		break;
	case IB_QPS_RTR:
		if (ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC)
			softmr_wire_conn_rtr(qp);
		break;
	case IB_QPS_ERR:
		*last_wqe = !!qp->srq;
		softmr_rnr_forget(qp);
		softmr_qp_run(qp);
		softmr_rq_flush(qp);
		break;
	case IB_QPS_RTS:
		/*
		 * WQEs posted before RTS run now, in this context: a worker
		 * kicked here could also run a WQE posted after this call
		 * returns, before its owner rings the doorbell.
		 */
		softmr_qp_run(qp);
		break;
	case IB_QPS_SQD:
		/*
		 * WQEs run to completion when taken: the SQ is drained, but
		 * for those in flight on the wire (their last answer sends
		 * the event, softmr_wire_req_retire())
		 */
		mutex_lock(&qp->sq.lock);
		*drained = softmr_wire_conn_sqd(qp);
		mutex_unlock(&qp->sq.lock);
		break;
	default:
		break;
	}
	return 0;
}

/**
 * softmr_modify_qp() - the modify_qp verb
 * @ibqp: the QP
 * @attr: new attributes
 * @mask: IB_QP_* bits of @attr to apply
 * @udata: user QPs: no driver data is defined
 *
 * Transitions and required/optional attributes follow the IB spec
 * (ib_modify_qp_is_ok()).
 *
 * Return: 0, -EINVAL for a transition or attribute the spec forbids,
 * -EOPNOTSUPP for alternate paths and capability changes.
 */
int softmr_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		     int mask, struct ib_udata *udata)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	bool last_wqe = false, drained = false;
	int err;

	mutex_lock(&qp->modify_lock);
	err = __softmr_modify_qp(ibqp, attr, mask, udata, &last_wqe, &drained);
	mutex_unlock(&qp->modify_lock);
	if (last_wqe)
		softmr_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
	if (drained)
		softmr_qp_sq_drained(qp);
	return err;
}

/**
 * softmr_query_qp() - the query_qp verb
 * @ibqp: the QP
 * @attr: filled with the current attributes
 * @mask: ignored: everything is filled
 * @init: filled with the creation attributes
 *
 * Return: 0.
 */
int softmr_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_qp_init_attr *init)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	unsigned long flags;

	spin_lock_irqsave(&qp->state_lock, flags);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	spin_unlock_irqrestore(&qp->state_lock, flags);
	attr->sq_draining = 0;
	attr->port_num = 1;
	attr->cap.max_send_wr = qp->sq.num;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;
	if (!qp->srq) {
		attr->cap.max_recv_wr = qp->rq.num;
		attr->cap.max_recv_sge = qp->rq.max_sge;
	}

	memset(init, 0, sizeof(*init));
	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->qp_type = ibqp->qp_type;
	init->port_num = 1;
	return 0;
}

/**
 * softmr_destroy_qp() - the destroy_qp verb
 * @ibqp: the QP
 * @udata: unused
 *
 * Waits until no engine works on the QP (as a requester or a responder).
 *
 * Return: 0.
 */
int softmr_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct softmr_qp *qp = to_sqp(ibqp);
	struct softmr_dev *sdev = qp->sdev;
	unsigned long flags;

	spin_lock_irqsave(&qp->state_lock, flags);
	qp->dying = true;
	spin_unlock_irqrestore(&qp->state_lock, flags);
	softmr_rnr_forget(qp);
	/* the poller first: it may queue sq_work as it leaves */
	disable_delayed_work_sync(&qp->sq_poll_work);
	disable_delayed_work_sync(&qp->sq_work);
	softmr_wire_conn_close(qp);
	softmr_wire_ud_close(qp);

	xa_erase(&sdev->qp_xa, ibqp->qp_num);
	softmr_qp_put(qp);
	wait_for_completion(&qp->released);
	/* no doorbell arms it now; a running one may queue sq_work */
	softmr_sq_defer_stop(qp);
	softmr_work_quiesce(&qp->sq_poll_work);	/* before 6.10 only */
	softmr_work_quiesce(&qp->sq_work);	/* before 6.10 only */
	/* nothing runs the QP now; softmr_rnr_wait() skipped it since dying */
	if (WARN_ON_ONCE(softmr_rnr_waiting(qp)))
		softmr_rnr_forget(qp);

	if (!qp->srq) {
		softmr_rnr_wq_gone(&qp->rq);
		softmr_wq_cleanup(&qp->rq);
	}
	softmr_wq_cleanup(&qp->sq);
	softmr_engine_qp_cleanup(qp);
	mutex_destroy(&qp->modify_lock);
	atomic_dec(&sdev->qp_count);
	return 0;
}
