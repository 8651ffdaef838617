// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The MR access API: the one place where data movers (the QP engine, and
 * later dma-buf and device memory users) reach the memory behind an MR.
 * It checks bounds and permissions and handles every MR kind: pinned pages,
 * ODP (faulted in and held valid against invalidation while copied), the
 * children of implicit ODP MRs, kernel DMA addresses, device memory,
 * dma-buf imports and fast registrations.
 */

#include <linux/dma-direct.h>
#include <linux/highmem.h>
#include <linux/overflow.h>

#include "softmr.h"

/**
 * softmr_mr_check() - may [iova, iova + len) of @mr be accessed so?
 * @mr: the MR
 * @iova: first byte
 * @len: length; 0 is always in bounds
 * @access: IB_ACCESS_* bits the access needs (0 for a local read)
 *
 * Return: 0, -EFAULT when the range is outside the MR, -EACCES when the MR
 * lacks a needed permission.
 */
int softmr_mr_check(struct softmr_mr *mr, u64 iova, u64 len, int access)
{
	u64 end, mr_end, mr_iova, mr_len;

	if ((READ_ONCE(mr->access) & access) != access)
		return -EACCES;
	if (!len)
		return 0;
	/* a fast registration's may change: copies check again, held */
	mr_iova = READ_ONCE(mr->iova);
	mr_len = READ_ONCE(mr->length);
	if (!mr_len || check_add_overflow(iova, len - 1, &end))
		return -EFAULT;
	mr_end = mr_iova + (mr_len - 1);	/* length >= 1 */
	if (iova < mr_iova || end > mr_end)
		return -EFAULT;
	return 0;
}

static void softmr_copy_page(struct page *page, unsigned int offset,
			     void *buf, size_t n, enum softmr_copy_dir dir)
{
	void *kaddr = kmap_local_page(page);

	if (dir == SOFTMR_TO_MR)
		memcpy(kaddr + offset, buf, n);
	else
		memcpy(buf, kaddr + offset, n);
	kunmap_local(kaddr);
}

static int softmr_pinned_copy(struct softmr_mr *mr, u64 iova, void *buf,
			      u64 len, enum softmr_copy_dir dir)
{
	u64 off = iova - mr->iova + mr->page_offset;

	while (len) {
		unsigned int pofs = off & ~PAGE_MASK;
		size_t n = min_t(u64, len, PAGE_SIZE - pofs);

		softmr_copy_page(mr->pages[off >> PAGE_SHIFT], pofs, buf, n,
				 dir);
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/* Kernel DMA MR: iova is a DMA address of the device. */
static int softmr_dma_copy(struct softmr_mr *mr, u64 iova, void *buf,
			   u64 len, enum softmr_copy_dir dir)
{
	struct device *dev = mr->sdev->ibdev.dma_device;

	while (len) {
		phys_addr_t phys = dma_to_phys(dev, iova);
		unsigned int pofs = offset_in_page(phys);
		size_t n = min_t(u64, len, PAGE_SIZE - pofs);

		if (!pfn_valid(PHYS_PFN(phys)))
			return -EFAULT;
		softmr_copy_page(pfn_to_page(PHYS_PFN(phys)), pofs, buf, n,
				 dir);
		iova += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * Fast-registration MR: through its registered page list, held under the
 * key the access started with.
 */
static int softmr_frmr_copy(struct softmr_mr *mr, u32 key, int access,
			    u64 iova, void *buf, u64 len,
			    enum softmr_copy_dir dir)
{
	int err = 0;

	if (!softmr_frmr_lock(mr, key, access, 0))
		return -EFAULT;
	while (len) {
		unsigned int pofs;
		u32 avail;
		struct page *page = softmr_frmr_page(mr, iova, &pofs, &avail);
		size_t n;

		if (!page) {
			err = -EFAULT;
			break;
		}
		n = min_t(u64, len, avail);
		softmr_copy_page(page, pofs, buf, n, dir);
		iova += n;
		buf += n;
		len -= n;
	}
	softmr_frmr_unlock(mr);
	return err;
}

/* dma-buf MR: through the exporter's vmap, under its dma_resv lock. */
static int softmr_dmabuf_copy(struct softmr_mr *mr, u64 iova, void *buf,
			      u64 len, enum softmr_copy_dir dir)
{
	struct ww_acquire_ctx ctx;
	void *p;
	int err;

	err = softmr_dmabuf_lock(mr, NULL, &ctx);
	if (err)
		return err;
	p = softmr_dmabuf_kaddr(mr, iova);
	if (!p)
		err = -EFAULT;
	else if (dir == SOFTMR_TO_MR)
		memcpy(p, buf, len);
	else
		memcpy(buf, p, len);
	softmr_dmabuf_unlock(mr, NULL, &ctx);
	return err;
}

/**
 * softmr_mr_copy_key() - copy between an MR and a kernel buffer
 * @mr: the MR, referenced by the caller
 * @key: the key @mr was found by (a fast registration must still have it)
 * @iova: first byte in the MR
 * @buf: kernel buffer
 * @len: bytes to copy
 * @dir: SOFTMR_TO_MR or SOFTMR_FROM_MR
 * @access: IB_ACCESS_* bits the access needs (e.g. IB_ACCESS_LOCAL_WRITE
 *          for a local write, IB_ACCESS_REMOTE_READ for a remote read)
 *
 * Return: 0, -EFAULT outside the MR or for unmapped ODP memory, -EACCES
 * without the needed permission, or another negative errno from faulting.
 */
int softmr_mr_copy_key(struct softmr_mr *mr, u32 key, u64 iova, void *buf,
		       u64 len, enum softmr_copy_dir dir, int access)
{
	int err;

	if (dir == SOFTMR_TO_MR && !(access & (IB_ACCESS_LOCAL_WRITE |
					       IB_ACCESS_REMOTE_WRITE |
					       IB_ACCESS_REMOTE_ATOMIC)))
		access |= IB_ACCESS_LOCAL_WRITE;
	err = softmr_mr_check(mr, iova, len, access);
	if (err || !len)
		return err;

	switch (mr->kind) {
	case SOFTMR_MR_PINNED:
		return softmr_pinned_copy(mr, iova, buf, len, dir);
	case SOFTMR_MR_ODP:
	case SOFTMR_MR_IMPLICIT:
		return softmr_odp_copy(mr, iova, buf, len, dir);
	case SOFTMR_MR_DMA:
		return softmr_dma_copy(mr, iova, buf, len, dir);
	case SOFTMR_MR_DMABUF:
		return softmr_dmabuf_copy(mr, iova, buf, len, dir);
	case SOFTMR_MR_FRMR:
		return softmr_frmr_copy(mr, key, access, iova, buf, len, dir);
	case SOFTMR_MR_MW:
		return softmr_mw_copy(mr, key, iova, buf, len, dir, access);
	case SOFTMR_MR_DM:
		if (dir == SOFTMR_TO_MR)
			memcpy(mr->dm_kaddr + (iova - mr->iova), buf, len);
		else
			memcpy(buf, mr->dm_kaddr + (iova - mr->iova), len);
		return 0;
	}
	return -EINVAL;
}
