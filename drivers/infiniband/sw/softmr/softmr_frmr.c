// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Fast registration for kernel consumers (NVMe-oF, NFS/RDMA, iSER, ...):
 * ib_alloc_mr(IB_MR_TYPE_MEM_REG) allocates an MR that is invalid (its
 * key reaches nothing), ib_map_mr_sg() builds a page list of DMA
 * addresses, an IB_WR_REG_MR work request makes that list the MR's
 * registration under a new key (same index, the consumer's 8 key bits),
 * and IB_WR_LOCAL_INV or a SEND_WITH_INV from the peer invalidates it.
 *
 * The registration changes only while the MR is invalid, under the MR's
 * frmr lock; REG_MR on a valid MR, a key with another index, another PD
 * or an invalidation with a key that is not the current one fail with the
 * errors the IB spec gives, and leave the MR as it was.  Data movers find
 * the MR by its current key (softmr_mr_get()) and translate through
 * softmr_frmr_page(), which bounds every index by the list's size.
 */

#include <linux/dma-direct.h>
#include <linux/log2.h>
#include <linux/slab.h>

#include "softmr.h"

/**
 * softmr_alloc_mr() - the alloc_mr verb: an invalid fast-registration MR
 * @ibpd: its PD (a kernel PD: user contexts have no alloc_mr)
 * @type: IB_MR_TYPE_MEM_REG; other types are not offered
 * @max_num_sg: pages a registration may hold
 *
 * Return: the MR, its keys set (the consumer changes their low 8 bits with
 * ib_update_fast_reg_key()), or an ERR_PTR: -EINVAL for another type or
 * too many pages, -ENOMEM.
 */
struct ib_mr *softmr_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			      u32 max_num_sg)
{
	struct softmr_dev *sdev = to_sdev(ibpd->device);
	struct softmr_frmr *f;
	struct softmr_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EINVAL);
	if (!max_num_sg || max_num_sg > SOFTMR_MAX_FRMR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = softmr_mr_create(sdev, ibpd, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->kind = SOFTMR_MR_FRMR;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	mr->frmr = f;
	if (f) {
		f->max_pages = max_num_sg;
		f->map = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
		f->pages = kcalloc(max_num_sg, sizeof(u64), GFP_KERNEL);
		spin_lock_init(&f->lock);
	}
	if (!f || !f->map || !f->pages) {
		softmr_mr_abort(mr);
		return ERR_PTR(-ENOMEM);
	}
	err = softmr_mr_commit(mr);
	return err ? ERR_PTR(err) : &mr->ibmr;
}

/* Free the page lists (softmr_mr_release()). */
void softmr_frmr_free(struct softmr_mr *mr)
{
	if (!mr->frmr)
		return;
	kfree(mr->frmr->map);
	kfree(mr->frmr->pages);
	kfree(mr->frmr);
	mr->frmr = NULL;
}

static int softmr_frmr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct softmr_frmr *f = to_smr(ibmr)->frmr;

	if (f->map_n >= f->max_pages)
		return -ENOMEM;
	f->map[f->map_n++] = addr;
	return 0;
}

/**
 * softmr_map_mr_sg() - the map_mr_sg verb: build the next page list
 * @ibmr: a fast-registration MR
 * @sg: DMA-mapped scatterlist (mapped for this device)
 * @sg_nents: its entries
 * @sg_offset: offset into the first entry, or NULL
 *
 * ib_map_mr_sg() has set the page size.  The list takes effect with the
 * next REG_MR of the MR; it may be built while the MR is valid.
 *
 * Return: entries mapped (ib_sg_to_pages()), or a negative errno.
 */
int softmr_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
		     int sg_nents, unsigned int *sg_offset)
{
	struct softmr_mr *mr = to_smr(ibmr);
	struct softmr_frmr *f = mr->frmr;
	int n;

	if (mr->kind != SOFTMR_MR_FRMR || !is_power_of_2(ibmr->page_size) ||
	    ibmr->page_size < SZ_4K || ibmr->page_size > SZ_1G)
		return -EINVAL;
	f->map_n = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, softmr_frmr_set_page);
	f->map_shift = ilog2(ibmr->page_size);
	f->map_first = f->map_n ? ibmr->iova - f->map[0] : 0;
	return n;
}

/* The MR with @index of @sdev, referenced, whatever its current key. */
static struct softmr_mr *softmr_frmr_by_index(struct softmr_dev *sdev,
					      u32 index)
{
	struct softmr_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, index);
	if (mr && !refcount_inc_not_zero(&mr->users))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/**
 * softmr_frmr_reg() - execute a REG_MR work request of a kernel QP
 * @qp: the QP; its PD must be the MR's
 * @wqe: the WQE copy (wr.reg)
 *
 * Return: IB_WC_SUCCESS; IB_WC_LOC_PROT_ERR for an MR of another PD or
 * kind, or access flags the MR cannot have; IB_WC_MW_BIND_ERR for a valid
 * MR, a key of another index, or a registration beyond the page list.
 */
enum ib_wc_status softmr_frmr_reg(struct softmr_qp *qp,
				  const struct softmr_send_wqe *wqe)
{
	u32 index = wqe->wr.reg.mr_index, key = wqe->wr.reg.key;
	int access = wqe->wr.reg.access;
	enum ib_wc_status st = IB_WC_SUCCESS;
	struct softmr_frmr *f;
	struct softmr_mr *mr;
	u64 span, end;

	mr = softmr_frmr_by_index(qp->sdev, index);
	if (!mr)
		return IB_WC_LOC_PROT_ERR;
	if (mr->kind != SOFTMR_MR_FRMR || mr->ibmr.pd != qp->ibqp.pd ||
	    softmr_check_access_flags(access) ||
	    (access & (IB_ACCESS_ON_DEMAND | IB_ZERO_BASED))) {
		softmr_mr_put(mr);
		return IB_WC_LOC_PROT_ERR;
	}
	f = mr->frmr;
	spin_lock(&f->lock);
	/* the list must cover [iova, iova + length) from its first byte */
	span = (u64)f->map_n << f->map_shift;
	if (READ_ONCE(mr->key) || key >> SOFTMR_MR_KEY_BITS != index ||
	    !wqe->wr.reg.length || !f->map_n ||
	    check_add_overflow((u64)f->map_first, wqe->wr.reg.length, &end) ||
	    end > span) {
		st = IB_WC_MW_BIND_ERR;
		goto out;
	}
	memcpy(f->pages, f->map, f->map_n * sizeof(u64));
	f->npages = f->map_n;
	f->page_shift = f->map_shift;
	f->first = f->map_first;
	WRITE_ONCE(mr->iova, wqe->wr.reg.iova);
	WRITE_ONCE(mr->length, wqe->wr.reg.length);
	WRITE_ONCE(mr->access, access);
	/* the registration before the key that reaches it */
	smp_store_release(&mr->key, key);
	softmr_count(qp->sdev, SOFTMR_CNT_FAST_REGS, 1);
out:
	spin_unlock(&f->lock);
	softmr_mr_put(mr);
	return st;
}

/**
 * softmr_frmr_invalidate() - invalidate a fast-registration MR by its key
 * @sdev: the device of the QP that invalidates (locally or remotely)
 * @ibpd: that QP's PD
 * @key: the MR's current key
 *
 * Data movers that found the MR before keep their reference and finish.
 *
 * Return: IB_WC_SUCCESS, or IB_WC_LOC_PROT_ERR when no valid
 * fast-registration MR of @ibpd has @key.
 */
enum ib_wc_status softmr_frmr_invalidate(struct softmr_dev *sdev,
					 struct ib_pd *ibpd, u32 key)
{
	enum ib_wc_status st = IB_WC_LOC_PROT_ERR;
	struct softmr_mr *mr;

	mr = softmr_frmr_by_index(sdev, key >> SOFTMR_MR_KEY_BITS);
	if (!mr)
		return st;
	if (mr->kind == SOFTMR_MR_FRMR && mr->ibmr.pd == ibpd) {
		spin_lock(&mr->frmr->lock);
		if (READ_ONCE(mr->key) == key) {
			WRITE_ONCE(mr->key, 0);
			st = IB_WC_SUCCESS;
		}
		spin_unlock(&mr->frmr->lock);
	}
	softmr_mr_put(mr);
	return st;
}

/**
 * softmr_frmr_page() - the page behind @iova of a fast-registration MR
 * @mr: the MR, referenced, @iova checked against its range
 * @iova: the address
 * @pofs: set to @iova's offset in the returned page
 *
 * Return: the page, or NULL when @iova is not in the registration or its
 * DMA address is not memory.
 */
struct page *softmr_frmr_page(struct softmr_mr *mr, u64 iova,
			      unsigned int *pofs)
{
	struct softmr_frmr *f = mr->frmr;
	u32 shift = READ_ONCE(f->page_shift);
	u32 n = min(READ_ONCE(f->npages), f->max_pages);
	phys_addr_t phys;
	u64 off, idx;

	if (shift < 12 || shift > 30)
		return NULL;
	off = iova - READ_ONCE(mr->iova) + READ_ONCE(f->first);
	idx = off >> shift;
	if (idx >= n)
		return NULL;
	phys = dma_to_phys(mr->sdev->ibdev.dma_device,
			   READ_ONCE(f->pages[idx]) +
			   (off & (BIT_ULL(shift) - 1)));
	if (!pfn_valid(PHYS_PFN(phys)))
		return NULL;
	*pofs = offset_in_page(phys);
	return pfn_to_page(PHYS_PFN(phys));
}
