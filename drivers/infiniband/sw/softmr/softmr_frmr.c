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
 * rwsem held for writing; REG_MR on a valid MR, a key with another index,
 * another PD, or an invalidation naming another key fail with a memory
 * management operation error and leave the MR as it was.  Data movers find
 * the MR by its current key (softmr_mr_get()), then copy piece by piece
 * under the rwsem held for reading (softmr_frmr_lock()), each time checking
 * that the key is still the one their access started with and translating
 * within the registration (softmr_frmr_page()).  So once an invalidation
 * completes, no copy through the old key is running or can start: the ULP
 * may unmap and free the pages.
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
		init_rwsem(&f->rwsem);
	}
	if (!f || !f->map || !f->pages) {
		softmr_mr_abort(mr);
		return ERR_PTR(-ENOMEM);
	}
	/* what LOCAL_INV may name before the first REG_MR: the lkey to come */
	err = softmr_mr_commit(mr);
	if (err)
		return ERR_PTR(err);
	down_write(&f->rwsem);
	f->key = mr->ibmr.lkey;
	up_write(&f->rwsem);
	return &mr->ibmr;
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

/**
 * softmr_frmr_reg() - execute a REG_MR work request of a kernel QP
 * @qp: the QP; its PD must be the MR's
 * @wqe: the WQE copy (wr.reg)
 *
 * Return: IB_WC_SUCCESS, or IB_WC_MW_BIND_ERR (a memory management
 * operation error) for an MR of another PD or kind, access flags the MR
 * cannot have, a valid MR, a key of another index, or a registration
 * beyond the mapped page list.
 */
enum ib_wc_status softmr_frmr_reg(struct softmr_qp *qp,
				  const struct softmr_send_wqe *wqe)
{
	u32 index = wqe->wr.reg.mr_index, key = wqe->wr.reg.key;
	int access = wqe->wr.reg.access;
	enum ib_wc_status st = IB_WC_MW_BIND_ERR;
	struct softmr_frmr *f;
	struct softmr_mr *mr;
	u32 n, shift, first;
	u64 end;

	mr = softmr_mr_by_index(qp->sdev, index);
	if (!mr)
		return st;
	if (mr->kind != SOFTMR_MR_FRMR || mr->ibmr.pd != qp->ibqp.pd ||
	    softmr_check_access_flags(access) ||
	    (access & (IB_ACCESS_ON_DEMAND | IB_ZERO_BASED)) ||
	    key >> SOFTMR_MR_KEY_BITS != index)
		goto put;
	f = mr->frmr;
	down_write(&f->rwsem);
	/* what map_mr_sg built, read once: the ULP may be mapping again */
	n = min(READ_ONCE(f->map_n), f->max_pages);
	shift = READ_ONCE(f->map_shift);
	first = READ_ONCE(f->map_first);
	if (READ_ONCE(mr->key) || !n || shift < 12 || shift > 30 ||
	    !wqe->wr.reg.length ||
	    check_add_overflow((u64)first, wqe->wr.reg.length, &end) ||
	    end > (u64)n << shift)
		goto unlock;
	memcpy(f->pages, f->map, n * sizeof(u64));
	f->npages = n;
	f->page_shift = shift;
	f->first = first;
	WRITE_ONCE(mr->iova, wqe->wr.reg.iova);
	WRITE_ONCE(mr->length, wqe->wr.reg.length);
	WRITE_ONCE(mr->access, access);
	f->key = key;
	/* the registration before the key that reaches it */
	smp_store_release(&mr->key, key);
	softmr_count(qp->sdev, SOFTMR_CNT_FAST_REGS, 1);
	st = IB_WC_SUCCESS;
unlock:
	up_write(&f->rwsem);
put:
	softmr_mr_put(mr);
	return st;
}

/**
 * softmr_frmr_invalidate() - invalidate a fast-registration MR by its key
 * @sdev: the device of the QP that invalidates (locally or remotely)
 * @ibpd: that QP's PD
 * @key: the key of the MR's last registration (it may be invalid already)
 *
 * Waits for the copies through the key that are running (each holds the
 * rwsem for one piece); none starts after this returns.
 *
 * Return: true, or false when no fast-registration MR of @ibpd has @key.
 */
bool softmr_frmr_invalidate(struct softmr_dev *sdev, struct ib_pd *ibpd,
			    u32 key)
{
	struct softmr_mr *mr;
	bool ok;

	mr = softmr_mr_by_index(sdev, key >> SOFTMR_MR_KEY_BITS);
	if (!mr)
		return false;
	ok = softmr_frmr_invalidate_mr(mr, ibpd, key);
	softmr_mr_put(mr);
	return ok;
}

/**
 * softmr_frmr_invalidate_mr() - softmr_frmr_invalidate() of an MR found
 * @mr: the entry with @key's index, referenced
 * @ibpd: the invalidating QP's PD
 * @key: the key of the MR's last registration
 *
 * Return: true, or false when @mr is no fast-registration MR of @ibpd with
 * @key.
 */
bool softmr_frmr_invalidate_mr(struct softmr_mr *mr, struct ib_pd *ibpd,
			       u32 key)
{
	bool ok = false;

	if (mr->kind != SOFTMR_MR_FRMR || mr->ibmr.pd != ibpd)
		return false;
	down_write(&mr->frmr->rwsem);
	if (mr->frmr->key == key) {
		WRITE_ONCE(mr->key, 0);
		ok = true;
	}
	up_write(&mr->frmr->rwsem);
	return ok;
}

/**
 * softmr_frmr_lock() - hold a fast-registration MR's registration
 * @mr: the MR, referenced
 * @key: the key the access started with
 * @access: IB_ACCESS_* bits the access needs
 * @subclass: lockdep subclass (0, or SINGLE_DEPTH_NESTING for a second MR)
 *
 * Return: true with the registration held for reading (softmr_frmr_unlock()),
 * false (nothing held) when @key no longer reaches the MR or the
 * registration lacks @access.
 */
bool softmr_frmr_lock(struct softmr_mr *mr, u32 key, int access,
		      int subclass)
{
	down_read_nested(&mr->frmr->rwsem, subclass);
	/* a registration under the same key (ULPs roll only 8 bits) may
	 * have other rights than the one the access was checked against
	 */
	if (key && READ_ONCE(mr->key) == key &&
	    (READ_ONCE(mr->access) & access) == access)
		return true;
	up_read(&mr->frmr->rwsem);
	return false;
}

/**
 * softmr_frmr_unlock() - let go of softmr_frmr_lock()
 * @mr: the MR
 */
void softmr_frmr_unlock(struct softmr_mr *mr)
{
	up_read(&mr->frmr->rwsem);
}

/**
 * softmr_frmr_page() - the page behind @iova of a fast-registration MR
 * @mr: the MR, held by softmr_frmr_lock()
 * @iova: the address
 * @pofs: set to @iova's offset in the returned page
 * @avail: set to the bytes from @iova that the page, the registration's
 *	page (which may be smaller than PAGE_SIZE) and the MR all hold
 *
 * Return: the page, or NULL when @iova is not in the registration or its
 * DMA address is not memory.
 */
struct page *softmr_frmr_page(struct softmr_mr *mr, u64 iova,
			      unsigned int *pofs, u32 *avail)
{
	struct softmr_frmr *f = mr->frmr;
	u64 rel = iova - mr->iova, off, in_frag;
	phys_addr_t phys;

	if (iova < mr->iova || rel >= mr->length)
		return NULL;
	off = rel + f->first;
	if ((off >> f->page_shift) >= f->npages)
		return NULL;
	in_frag = BIT_ULL(f->page_shift) - (off & (BIT_ULL(f->page_shift) - 1));
	phys = dma_to_phys(mr->sdev->ibdev.dma_device,
			   f->pages[off >> f->page_shift] +
			   (off & (BIT_ULL(f->page_shift) - 1)));
	if (!pfn_valid(PHYS_PFN(phys)))
		return NULL;
	*pofs = offset_in_page(phys);
	*avail = min3(PAGE_SIZE - *pofs, in_frag, mr->length - rel);
	return pfn_to_page(PHYS_PFN(phys));
}
