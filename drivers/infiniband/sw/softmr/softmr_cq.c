// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Completion queues.  A CQ is a ring of struct ib_uverbs_wc in
 * vmalloc() memory (struct softmr_ring_hdr first).  User CQs map it,
 * and the provider polls it without a system call; kernel CQs are polled
 * by softmr_poll_cq().  The producer is the QP engine
 * (softmr_cq_post()); it indexes only with its own producer counter and
 * reads the consumer index, which user space may scribble on, only to
 * decide whether the ring is full.
 */

#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "softmr.h"

static struct ib_uverbs_wc *softmr_cq_slot(struct softmr_ring_hdr *ring,
					   u32 num, u32 index)
{
	return (struct ib_uverbs_wc *)((u8 *)ring + SOFTMR_RING_HDR_SIZE) +
	       (index & (num - 1));
}

static size_t softmr_cq_ring_bytes(u32 num)
{
	return PAGE_ALIGN(SOFTMR_RING_HDR_SIZE +
			  (size_t)num * sizeof(struct ib_uverbs_wc));
}

/* Ring for @cqe completions: a power of two above it. */
static int softmr_cq_ring_alloc(struct softmr_cq_ring *r, int cqe,
				bool kernel)
{
	r->num = roundup_pow_of_two(cqe + 1);
	r->bytes = softmr_cq_ring_bytes(r->num);
	/* charged to the caller's memory cgroup, like the MR arrays */
	r->hdr = __vmalloc(r->bytes, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
			   __GFP_NOWARN);
	if (!r->hdr)
		return -ENOMEM;
	if (kernel) {
		r->qps = kvcalloc(r->num, sizeof(*r->qps), GFP_KERNEL);
		if (!r->qps) {
			vfree(r->hdr);
			return -ENOMEM;
		}
	}
	return 0;
}

static void softmr_cq_ring_free(struct softmr_cq_ring *r)
{
	kvfree(r->qps);
	softmr_mmap_ring_free(r->entry, r->hdr);
	r->entry = NULL;
	r->hdr = NULL;
}

/*
 * Make @r mappable by the CQ's context (its entry then owns the ring) and
 * tell user space where it is.
 */
static int softmr_cq_publish(struct softmr_cq_ring *r, struct ib_udata *udata)
{
	struct softmr_ucontext *suc =
		rdma_udata_to_drv_context(udata, struct softmr_ucontext, ibuc);
	struct softmr_create_cq_resp resp = {};
	struct rdma_user_mmap_entry *entry;

	entry = softmr_mmap_entry_insert_ring(&suc->ibuc, r->hdr, r->bytes);
	if (IS_ERR(entry))
		return PTR_ERR(entry);
	r->entry = entry;
	resp.mmap_offset = rdma_user_mmap_get_offset(entry);
	resp.mmap_size = r->bytes;
	resp.num_entries = r->num;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

/**
 * softmr_create_cq() - the create_cq verb
 * @ibcq: the CQ, allocated by ib_core
 * @attr: cqe (at most max_cqe), comp_vector; no flags are supported
 * @attrs: uverbs attributes for user CQs, NULL for kernel CQs
 *
 * Return: 0, -EINVAL for a bad size or a too short response buffer,
 * -EOPNOTSUPP for flags, -ENOMEM.
 */
int softmr_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		     struct uverbs_attr_bundle *attrs)
{
	struct softmr_dev *sdev = to_sdev(ibcq->device);
	struct ib_udata *udata = attrs ? &attrs->driver_udata : NULL;
	struct softmr_cq *cq = to_scq(ibcq);
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > sdev->attr.max_cqe)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(struct softmr_create_cq_resp))
		return -EINVAL;
	if (atomic_inc_return(&sdev->cq_count) > sdev->attr.max_cq) {
		err = -ENOMEM;
		goto err_count;
	}

	spin_lock_init(&cq->lock);
	cq->is_user = !!udata;
	err = softmr_cq_ring_alloc(&cq->ring, attr->cqe, !udata);
	if (err)
		goto err_count;
	ibcq->cqe = cq->ring.num - 1;
	if (udata) {
		err = softmr_cq_publish(&cq->ring, udata);
		if (err)
			goto err_ring;
	}
	return 0;

err_ring:
	softmr_cq_ring_free(&cq->ring);
err_count:
	atomic_dec(&sdev->cq_count);
	return err;
}

/**
 * softmr_destroy_cq() - the destroy_cq verb
 * @ibcq: the CQ
 * @udata: unused
 *
 * Return: 0.
 */
int softmr_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct softmr_cq *cq = to_scq(ibcq);

	softmr_cq_ring_free(&cq->ring);
	atomic_dec(&to_sdev(ibcq->device)->cq_count);
	return 0;
}

/*
 * Completions the consumer has not taken; under lock.  A user consumer
 * index beyond the producer reads as a full ring: the kernel never indexes
 * with it.
 */
static u32 softmr_cq_used(struct softmr_cq *cq)
{
	u32 used = cq->ring.prod - READ_ONCE(cq->ring.hdr->consumer);

	return min(used, cq->ring.num);
}

/**
 * softmr_cq_post() - add a completion (the QP engine's side)
 * @cq: the CQ
 * @wc: the completion, in the uverbs layout
 * @qp: the QP it belongs to (reported to kernel consumers)
 * @solicited: the completion was solicited
 *
 * Calls the completion handler when the CQ is armed for it.  A full ring
 * drops the completion and raises IB_EVENT_CQ_ERR, the first time only.
 *
 * Return: 0 or -EOVERFLOW.
 */
int softmr_cq_post(struct softmr_cq *cq, const struct ib_uverbs_wc *wc,
		   struct ib_qp *qp, bool solicited)
{
	struct softmr_cq_ring *r = &cq->ring;
	unsigned long flags;
	bool notify;
	u32 prod;

	spin_lock_irqsave(&cq->lock, flags);
	if (softmr_cq_used(cq) >= r->num) {
		/*
		 * Once, as a device reports a CQ overrun: a user that keeps
		 * its ring full must not make ib_core queue an event (an
		 * uncharged allocation) per completion.
		 */
		notify = !cq->overflowed;
		cq->overflowed = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (notify && cq->ibcq.event_handler) {
			struct ib_event ev = {
				.device = cq->ibcq.device,
				.element.cq = &cq->ibcq,
				.event = IB_EVENT_CQ_ERR,
			};

			cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
		}
		return -EOVERFLOW;
	}
	prod = r->prod++;
	*softmr_cq_slot(r->hdr, r->num, prod) = *wc;
	if (r->qps)
		r->qps[prod & (r->num - 1)] = qp;
	/* the entry is visible before the producer index moves past it */
	smp_store_release(&r->hdr->producer, r->prod);
	notify = cq->notify == IB_CQ_NEXT_COMP ||
		 (cq->notify == IB_CQ_SOLICITED && solicited);
	if (notify)
		cq->notify = 0;
	spin_unlock_irqrestore(&cq->lock, flags);

	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;
}

/**
 * softmr_req_notify_cq() - the req_notify_cq verb
 * @ibcq: the CQ
 * @flags: IB_CQ_SOLICITED or IB_CQ_NEXT_COMP, IB_CQ_REPORT_MISSED_EVENTS
 *
 * Return: 1 when REPORT_MISSED_EVENTS is asked and completions are
 * waiting, else 0.
 */
int softmr_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct softmr_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* NEXT_COMP already requested covers a SOLICITED request */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && softmr_cq_used(cq))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

static void softmr_wc_from_uverbs(struct ib_wc *wc,
				  const struct ib_uverbs_wc *uwc,
				  struct ib_qp *qp)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = uwc->wr_id;
	wc->status = uwc->status;
	wc->opcode = uwc->opcode;
	wc->vendor_err = uwc->vendor_err;
	wc->byte_len = uwc->byte_len;
	wc->ex.imm_data = uwc->ex.imm_data;
	wc->qp = qp;
	wc->src_qp = uwc->src_qp;
	wc->wc_flags = uwc->wc_flags;
	if (wc->wc_flags & IB_WC_GRH) {
		/* the engine passes the GRH's kind in the spare byte */
		wc->network_hdr_type = uwc->reserved;
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
	}
	wc->pkey_index = uwc->pkey_index;
	/* and a datagram's VLAN in slid: RoCE has no LIDs */
	if (wc->wc_flags & IB_WC_WITH_VLAN)
		wc->vlan_id = uwc->slid;
	else
		wc->slid = uwc->slid;
	wc->sl = uwc->sl;
	wc->dlid_path_bits = uwc->dlid_path_bits;
	wc->port_num = uwc->port_num;
}

/**
 * softmr_poll_cq() - the poll_cq verb, for kernel CQs
 * @ibcq: the CQ
 * @num_entries: room in @wc
 * @wc: filled with completions
 *
 * Return: completions taken, or -EINVAL for a user CQ.
 */
int softmr_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct softmr_cq *cq = to_scq(ibcq);
	struct softmr_cq_ring *r = &cq->ring;
	unsigned long flags;
	u32 cons, prod;
	int n = 0;

	if (cq->is_user)
		return -EINVAL;
	spin_lock_irqsave(&cq->lock, flags);
	cons = r->hdr->consumer;	/* kernel CQ: only we write it */
	prod = r->prod;
	while (n < num_entries && cons != prod) {
		u32 slot = cons & (r->num - 1);

		softmr_wc_from_uverbs(&wc[n++], softmr_cq_slot(r->hdr, r->num,
							       cons),
				      r->qps[slot]);
		cons++;
	}
	r->hdr->consumer = cons;
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/**
 * softmr_resize_cq() - the resize_cq verb
 * @ibcq: the CQ
 * @cqe: new minimum number of completions
 * @udata: for user CQs: the new ring's mmap offset goes back here
 *
 * Completions not yet consumed move to the new ring.  A user CQ's old ring
 * stays mapped (its pages referenced) until the provider unmaps it; the
 * provider holds its CQ lock across the call and maps the new ring.
 *
 * Return: 0, -EINVAL for a bad size or one below the completions waiting.
 */
int softmr_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(ibcq->device);
	struct softmr_cq *cq = to_scq(ibcq);
	struct softmr_cq_ring nr = {}, old;
	unsigned long flags;
	u32 used, i, cons;
	int err;

	if (cqe < 1 || cqe > sdev->attr.max_cqe)
		return -EINVAL;
	if (cq->is_user &&
	    (!udata || udata->outlen < sizeof(struct softmr_create_cq_resp)))
		return -EINVAL;
	err = softmr_cq_ring_alloc(&nr, cqe, !cq->is_user);
	if (err)
		return err;
	if (cq->is_user) {
		err = softmr_cq_publish(&nr, udata);
		if (err) {
			softmr_cq_ring_free(&nr);
			return err;
		}
	}

	spin_lock_irqsave(&cq->lock, flags);
	cons = READ_ONCE(cq->ring.hdr->consumer);
	used = cq->ring.prod - cons;
	if (used > cq->ring.num || used > nr.num - 1) {
		spin_unlock_irqrestore(&cq->lock, flags);
		softmr_cq_ring_free(&nr);
		return -EINVAL;
	}
	for (i = 0; i < used; i++) {
		*softmr_cq_slot(nr.hdr, nr.num, i) =
			*softmr_cq_slot(cq->ring.hdr, cq->ring.num, cons + i);
		if (nr.qps)
			nr.qps[i] = cq->ring.qps[(cons + i) &
						 (cq->ring.num - 1)];
	}
	nr.prod = used;
	nr.hdr->producer = used;
	nr.hdr->consumer = 0;
	old = cq->ring;
	cq->ring = nr;
	cq->overflowed = false;
	ibcq->cqe = nr.num - 1;
	spin_unlock_irqrestore(&cq->lock, flags);

	softmr_cq_ring_free(&old);
	return 0;
}
