// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared receive queues: a receive ring (softmr_wq) that several QPs
 * consume, with the limit event of ibv_modify_srq(3): once armed, the
 * first time fewer WQEs than the limit are left, IB_EVENT_SRQ_LIMIT_REACHED
 * fires and the limit disarms.
 */

#include "softmr.h"

/**
 * softmr_create_srq() - the create_srq verb
 * @ibsrq: the SRQ, allocated by ib_core
 * @init: basic SRQs only; max_wr and max_sge within the device's limits
 * @udata: user SRQs: the response gets the ring's place
 *
 * Return: 0, -EOPNOTSUPP for other SRQ types, -EINVAL, -ENOMEM.
 */
int softmr_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		      struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(ibsrq->device);
	struct softmr_srq *srq = to_ssrq(ibsrq);
	struct softmr_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > sdev->attr.max_srq_wr ||
	    attr->max_sge > sdev->attr.max_srq_sge)
		return -EINVAL;
	if (udata) {
		if (udata->outlen < sizeof(resp))
			return -EINVAL;
		if (udata->inlen &&
		    !ib_is_udata_cleared(udata, 0, udata->inlen))
			return -EOPNOTSUPP;
	}
	if (atomic_inc_return(&sdev->srq_count) > sdev->attr.max_srq) {
		err = -ENOMEM;
		goto err_count;
	}
	err = softmr_wq_init(&srq->rq, attr->max_wr, attr->max_sge, 0,
			     SOFTMR_RECV_WQE_HDR_SIZE, udata, &resp.rq);
	if (err)
		goto err_count;
	srq->limit = 0;
	attr->max_wr = srq->rq.num;
	attr->max_sge = srq->rq.max_sge;
	if (udata) {
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_wq;
	}
	return 0;

err_wq:
	softmr_wq_cleanup(&srq->rq);
err_count:
	atomic_dec(&sdev->srq_count);
	return err;
}

/* Move the fields of a ring, not its locks. */
static void softmr_wq_swap_ring(struct softmr_wq *a, struct softmr_wq *b)
{
	swap(a->hdr, b->hdr);
	swap(a->bytes, b->bytes);
	swap(a->num, b->num);
	swap(a->stride, b->stride);
	swap(a->max_sge, b->max_sge);
	swap(a->cons, b->cons);
	swap(a->prod, b->prod);
	swap(a->wqe, b->wqe);
	swap(a->sgl, b->sgl);
	swap(a->mmap_entry, b->mmap_entry);
}

/* Copy the WQEs waiting in @rq up to @prod into @nwq, at their indices. */
static int softmr_srq_copy(struct softmr_wq *rq, struct softmr_wq *nwq,
			   u32 prod)
{
	u32 i;

	if (prod - rq->cons > nwq->num || nwq->stride < rq->stride)
		return -EINVAL;	/* fewer slots than WQEs waiting */
	for (i = rq->cons; i != prod; i++)
		memcpy(softmr_wq_slot(nwq, i), softmr_wq_slot(rq, i),
		       rq->stride);
	nwq->cons = rq->cons;
	nwq->prod = prod;
	nwq->hdr->producer = prod;
	nwq->hdr->consumer = rq->cons;
	nwq->max_sge = rq->max_sge;
	return 0;
}

/* Swap the new ring in; rq->lock and rq->post_lock held. */
static void softmr_srq_swap(struct softmr_wq *rq, struct softmr_wq *nwq)
{
	unsigned long flags;

	/* softmr_rnr_wake() writes rnr_waiting in the header it sees */
	softmr_rnr_lock_irqsave(&flags);
	nwq->hdr->rnr_waiting = rq->hdr->rnr_waiting;
	softmr_wq_swap_ring(rq, nwq);
	softmr_rnr_unlock_irqrestore(flags);
}

/*
 * Resize: a new ring with the pending WQEs at their indices, swapped in
 * under the consumer lock and the producer lock.  A user SRQ learns the new
 * ring's place through cmd.wq_info_addr and maps it; the provider holds its
 * own lock meanwhile, so nothing is posted to the old ring.
 */
static int softmr_srq_resize(struct softmr_srq *srq, u32 max_wr,
			     struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(srq->ibsrq.device);
	struct softmr_modify_srq_cmd cmd = {};
	struct softmr_wq_info info = {};
	struct softmr_wq *rq = &srq->rq;
	struct softmr_wq nwq = {};
	unsigned long flags;
	u32 prod;
	int err;

	if (!max_wr || max_wr > sdev->attr.max_srq_wr)
		return -EINVAL;
	if (udata) {
		if (udata->inlen < sizeof(cmd))
			return -EINVAL;
		err = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
		if (err)
			return err;
	}
	err = softmr_wq_init(&nwq, max_wr, rq->max_sge, 0,
			     SOFTMR_RECV_WQE_HDR_SIZE, udata, &info);
	if (err)
		return err;

	mutex_lock(&rq->lock);
	if (rq->is_user) {
		/*
		 * No kernel producer: copy with interrupts on (up to 16 MiB);
		 * what user space posts meanwhile, bypassing the provider's
		 * lock, is its own loss.
		 */
		prod = READ_ONCE(rq->hdr->producer);
		err = softmr_srq_copy(rq, &nwq, prod);
		if (!err) {
			spin_lock_irqsave(&rq->post_lock, flags);
			softmr_srq_swap(rq, &nwq);
			spin_unlock_irqrestore(&rq->post_lock, flags);
		}
	} else {
		spin_lock_irqsave(&rq->post_lock, flags);
		err = softmr_srq_copy(rq, &nwq, rq->prod);
		if (!err)
			softmr_srq_swap(rq, &nwq);
		spin_unlock_irqrestore(&rq->post_lock, flags);
	}
	mutex_unlock(&rq->lock);
	softmr_wq_cleanup(&nwq);	/* the old ring, or the unused new one */
	if (err || !udata)
		return err;
	info.num = rq->num;
	if (copy_to_user(u64_to_user_ptr(cmd.wq_info_addr), &info,
			 sizeof(info)))
		return -EFAULT;
	return 0;
}

/**
 * softmr_modify_srq() - the modify_srq verb
 * @ibsrq: the SRQ
 * @attr: srq_limit to arm, max_wr to resize to
 * @mask: IB_SRQ_LIMIT, IB_SRQ_MAX_WR
 * @udata: user SRQs: struct softmr_modify_srq_cmd (for a resize)
 *
 * Return: 0, -EINVAL for a limit beyond the queue or a size below the
 * WQEs waiting or above max_srq_wr, -EFAULT, -ENOMEM.
 */
int softmr_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		      enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct softmr_srq *srq = to_ssrq(ibsrq);

	int err;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR) {
		err = softmr_srq_resize(srq, attr->max_wr, udata);
		if (err)
			return err;
	}
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->rq.num)
			return -EINVAL;
		mutex_lock(&srq->rq.lock);
		srq->limit = attr->srq_limit;
		mutex_unlock(&srq->rq.lock);
	}
	return 0;
}

/**
 * softmr_query_srq() - the query_srq verb
 * @ibsrq: the SRQ
 * @attr: filled in
 *
 * Return: 0.
 */
int softmr_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct softmr_srq *srq = to_ssrq(ibsrq);

	attr->max_wr = srq->rq.num;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

/**
 * softmr_destroy_srq() - the destroy_srq verb
 * @ibsrq: the SRQ; ib_core keeps it while QPs use it
 * @udata: unused
 *
 * Return: 0.
 */
int softmr_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct softmr_srq *srq = to_ssrq(ibsrq);

	softmr_rnr_wq_gone(&srq->rq);
	softmr_wq_cleanup(&srq->rq);
	atomic_dec(&to_sdev(ibsrq->device)->srq_count);
	return 0;
}

/**
 * softmr_post_srq_recv() - the post_srq_recv verb
 * @ibsrq: the SRQ
 * @wr: kernel SRQs: the WR list; user SRQs: NULL (the doorbell)
 * @bad_wr: set to the first WR not posted
 *
 * Return: 0, -EINVAL, -ENOMEM when the queue is full.
 */
int softmr_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	struct softmr_srq *srq = to_ssrq(ibsrq);
	int err = 0;

	if (srq->rq.is_user) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
	} else {
		err = softmr_post_recv_kernel(&srq->rq, wr, bad_wr);
	}
	if (srq->rq.is_user)
		softmr_count(to_sdev(ibsrq->device), SOFTMR_CNT_RECV_DOORBELLS,
			     1);
	softmr_rnr_wake(&srq->rq);
	return err;
}

/**
 * softmr_srq_check_limit() - fire the limit event when it is reached
 * @srq: the SRQ, its queue lock held, after a WQE was taken
 */
void softmr_srq_check_limit(struct softmr_srq *srq)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};
	u32 n;

	lockdep_assert_held(&srq->rq.lock);
	if (!srq->limit || softmr_wq_pending(&srq->rq, &n) || n >= srq->limit)
		return;
	WRITE_ONCE(srq->limit, 0);
	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}
