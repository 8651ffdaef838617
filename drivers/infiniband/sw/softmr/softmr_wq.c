// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Work queue rings: the send and receive queues of QPs and shared receive
 * queues.  A ring is vmalloc() memory: struct softmr_wq_hdr, then
 * fixed-size WQEs.  User rings are mapped by the provider, which writes
 * WQEs and the producer index; kernel rings are filled by the post verbs.
 *
 * The consumer (the engine, under wq->lock) reads the producer index once,
 * checks it against its own consumer index, copies the WQE at its own
 * index into wq->wqe and works only on that copy: user space can change
 * the ring at any time without affecting a WQE being executed.
 */

#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "softmr.h"

/**
 * softmr_wq_init() - allocate a work queue ring
 * @wq: the queue, zeroed
 * @wr: WQEs it must hold at least
 * @sge: SGEs a WQE must carry at least
 * @payload: bytes of inline data a WQE must carry at least
 * @hdr_size: WQE header size (send or receive WQE)
 * @udata: user queues: the udata of the create verb, else NULL
 * @info: user queues: filled with the ring's place and shape
 *
 * The stride is rounded up to a power of two; the SGEs that fit in it are
 * offered (at most SOFTMR_MAX_SGE).
 *
 * Return: 0 or -ENOMEM.
 */
int softmr_wq_init(struct softmr_wq *wq, u32 wr, u32 sge, u32 payload,
		   u32 hdr_size, struct ib_udata *udata,
		   struct softmr_wq_info *info)
{
	u32 need = hdr_size + max_t(u32, sge * sizeof(struct softmr_sge),
				    payload);
	struct softmr_ucontext *suc;

	wq->stride = roundup_pow_of_two(max_t(u32, need, 64));
	wq->num = roundup_pow_of_two(max_t(u32, wr, 1));
	wq->max_sge = min_t(u32, (wq->stride - hdr_size) /
				 sizeof(struct softmr_sge), SOFTMR_MAX_SGE);
	wq->bytes = PAGE_ALIGN(SOFTMR_WQ_HDR_SIZE +
			       (size_t)wq->num * wq->stride);
	spin_lock_init(&wq->post_lock);
	mutex_init(&wq->lock);
	INIT_LIST_HEAD(&wq->rnr_waiters);

	/* charged to the caller's memory cgroup */
	wq->hdr = __vmalloc(wq->bytes, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
			    __GFP_NOWARN);
	if (!wq->hdr)
		return -ENOMEM;
	wq->wqe = kmalloc(wq->stride, GFP_KERNEL_ACCOUNT);
	wq->sgl = kmalloc(sizeof(*wq->sgl), GFP_KERNEL_ACCOUNT);
	if (!wq->wqe || !wq->sgl)
		goto err;
	if (!udata)
		return 0;

	wq->is_user = true;
	suc = rdma_udata_to_drv_context(udata, struct softmr_ucontext, ibuc);
	wq->mmap_entry = softmr_mmap_entry_insert_ring(&suc->ibuc, wq->hdr,
						       wq->bytes);
	if (IS_ERR(wq->mmap_entry)) {
		wq->mmap_entry = NULL;
		goto err;
	}
	info->mmap_offset = rdma_user_mmap_get_offset(wq->mmap_entry);
	info->mmap_size = wq->bytes;
	info->num = wq->num;
	info->stride = wq->stride;
	return 0;

err:
	softmr_wq_cleanup(wq);
	return -ENOMEM;
}

/**
 * softmr_wq_cleanup() - free a work queue ring
 * @wq: the queue; nothing uses it any more
 */
void softmr_wq_cleanup(struct softmr_wq *wq)
{
	kfree(wq->wqe);
	wq->wqe = NULL;
	kfree(wq->sgl);
	wq->sgl = NULL;
	/* the ring goes with its entry, once no mmap() in flight uses it */
	softmr_mmap_ring_free(wq->mmap_entry, wq->hdr);
	wq->mmap_entry = NULL;
	wq->hdr = NULL;
	mutex_destroy(&wq->lock);
}

/**
 * softmr_wq_slot() - the WQE at a ring index
 * @wq: the queue
 * @index: free-running index
 *
 * Return: its address in the ring.
 */
void *softmr_wq_slot(struct softmr_wq *wq, u32 index)
{
	return (u8 *)wq->hdr + SOFTMR_WQ_HDR_SIZE +
	       (size_t)(index & (wq->num - 1)) * wq->stride;
}

/**
 * softmr_wq_pending() - how many WQEs wait to be taken
 * @wq: the queue, consumer lock held
 * @count: set to that number
 *
 * Return: 0, or -EOVERFLOW when a user producer index is more than the
 * ring size ahead: the ring is garbage.
 */
int softmr_wq_pending(struct softmr_wq *wq, u32 *count)
{
	u32 prod, n;

	lockdep_assert_held(&wq->lock);
	if (wq->is_user)
		/* the index before the WQEs; pairs with the provider */
		prod = smp_load_acquire(&wq->hdr->producer);
	else
		/* pairs with softmr_post_send_one() / _recv_kernel() */
		prod = smp_load_acquire(&wq->prod);
	n = prod - wq->cons;
	/* held slots (in flight on the wire) are not free */
	if (n > wq->num - wq->held)
		return -EOVERFLOW;
	*count = n;
	return 0;
}

/**
 * softmr_wq_take() - copy the WQE at the head of the queue
 * @wq: the queue, consumer lock held, softmr_wq_pending() > 0
 *
 * Return: wq->wqe, the copy; it stays valid until the next take.
 */
void *softmr_wq_take(struct softmr_wq *wq)
{
	lockdep_assert_held(&wq->lock);
	memcpy(wq->wqe, softmr_wq_slot(wq, wq->cons), wq->stride);
	return wq->wqe;
}

/**
 * softmr_wq_advance() - retire the WQE at the head, the producer not told
 * @wq: the queue, consumer lock held
 *
 * A run of many WQEs tells the producer once (softmr_wq_publish()), so
 * that the ring header's consumer line is not written for each WQE; it
 * must tell before a completion of a WQE retired so becomes visible (a
 * completed WQE's slot is free: ibv_post_send(3) counts on it) and when
 * it ends.
 */
void softmr_wq_advance(struct softmr_wq *wq)
{
	lockdep_assert_held(&wq->lock);
	wq->cons++;
}

/**
 * softmr_wq_publish() - tell the producer which slots are free
 * @wq: the queue, consumer lock held
 */
void softmr_wq_publish(struct softmr_wq *wq)
{
	lockdep_assert_held(&wq->lock);
	/* the slots may be reused once the producer sees this */
	smp_store_release(&wq->hdr->consumer, wq->cons - wq->held);
}

/**
 * softmr_wq_consume() - retire the WQE at the head of the queue
 * @wq: the queue, consumer lock held
 */
void softmr_wq_consume(struct softmr_wq *wq)
{
	softmr_wq_advance(wq);
	softmr_wq_publish(wq);
}

/**
 * softmr_wq_hold() - take the WQE at the head, keep its slot busy
 * @wq: a send queue, consumer lock held
 *
 * For a WQE in flight on the wire: the next take sees the WQE after it,
 * the producer sees its slot in use until softmr_wq_retire(), so no more
 * WQEs are outstanding than the queue holds.
 */
void softmr_wq_hold(struct softmr_wq *wq)
{
	lockdep_assert_held(&wq->lock);
	wq->held++;
	wq->cons++;
}

/**
 * softmr_wq_retire() - free the oldest held slot
 * @wq: a send queue with softmr_wq_hold() WQEs, consumer lock held
 */
void softmr_wq_retire(struct softmr_wq *wq)
{
	lockdep_assert_held(&wq->lock);
	if (WARN_ON_ONCE(!wq->held))
		return;
	wq->held--;
	/* the slot may be reused once the producer sees this */
	smp_store_release(&wq->hdr->consumer, wq->cons - wq->held);
}

/**
 * softmr_post_recv_kernel() - post receive WRs to a kernel ring
 * @wq: a kernel receive queue or SRQ
 * @wr: the WR list
 * @bad_wr: set to the first WR not posted
 *
 * Callable in atomic context.
 *
 * Return: 0, -EINVAL for too many SGEs, -ENOMEM when the ring is full.
 */
int softmr_post_recv_kernel(struct softmr_wq *wq, const struct ib_recv_wr *wr,
			    const struct ib_recv_wr **bad_wr)
{
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&wq->post_lock, flags);
	for (; wr; wr = wr->next) {
		struct softmr_recv_wqe *wqe;
		int i;

		if (wr->num_sge < 0 || wr->num_sge > wq->max_sge) {
			err = -EINVAL;
			break;
		}
		if (wq->prod - READ_ONCE(wq->hdr->consumer) >= wq->num) {
			err = -ENOMEM;
			break;
		}
		wqe = softmr_wq_slot(wq, wq->prod);
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		wqe->reserved = 0;
		for (i = 0; i < wr->num_sge; i++) {
			wqe->sge[i].addr = wr->sg_list[i].addr;
			wqe->sge[i].length = wr->sg_list[i].length;
			wqe->sge[i].lkey = wr->sg_list[i].lkey;
		}
		/* the WQE before the index; pairs with softmr_wq_pending() */
		smp_store_release(&wq->prod, wq->prod + 1);
	}
	spin_unlock_irqrestore(&wq->post_lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}
