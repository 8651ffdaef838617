// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * dma-buf MRs: reg_user_mr_dmabuf.
 *
 * An exporter that can move its buffer (a dynamic exporter: it has pin and
 * unpin operations) is imported dynamically through ib_umem_dmabuf_get()
 * with our move_notify: the exporter calls it with the buffer's dma_resv
 * lock held before it moves the buffer, and we drop the attachment's
 * mapping and our CPU mapping (the exporter's vmap) there.  Every access
 * takes the dma_resv lock, maps again if a move dropped the mapping
 * (ib_umem_dmabuf_map_pages() also waits for the exporter's kernel fences)
 * and copies while holding the lock, so no access ever touches memory the
 * exporter has moved away.  A static exporter (udmabuf, the system dma-heap)
 * cannot move its buffer; it is imported pinned
 * (ib_umem_dmabuf_get_pinned()) and mapped once for the MR's lifetime.
 *
 * CPU access goes only through the exporter's vmap; the pages of the
 * attachment's scatterlist belong to the exporter and are never touched.
 *
 * Lock order: dma_resv (two of them under a ww_acquire_ctx) before an ODP
 * umem_mutex; nothing here faults user memory while a dma_resv is held.
 */

#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>

#include "softmr.h"

static struct dma_buf *softmr_dmabuf_buf(struct softmr_mr *mr)
{
	return mr->dmabuf->attach->dmabuf;
}

/* Drop the CPU and device mappings; the dma_resv lock is held. */
static void softmr_dmabuf_unmap(struct softmr_mr *mr)
{
	dma_resv_assert_held(softmr_dmabuf_buf(mr)->resv);
	if (!mr->dmabuf_mapped)
		return;
	WRITE_ONCE(mr->dmabuf_mapped, false);
	dma_buf_vunmap(softmr_dmabuf_buf(mr), &mr->dmabuf_map);
	iosys_map_clear(&mr->dmabuf_map);
	ib_umem_dmabuf_unmap_pages(mr->dmabuf);
}

/* Map the buffer for the device and the CPU; the dma_resv lock is held. */
static int softmr_dmabuf_map(struct softmr_mr *mr)
{
	struct dma_buf *buf = softmr_dmabuf_buf(mr);
	int err;

	dma_resv_assert_held(buf->resv);
	if (mr->dmabuf_mapped)
		return 0;
	err = ib_umem_dmabuf_map_pages(mr->dmabuf);
	if (err)
		return err;
	err = dma_buf_vmap(buf, &mr->dmabuf_map);
	if (err) {
		ib_umem_dmabuf_unmap_pages(mr->dmabuf);
		return err == -EINVAL ? -EOPNOTSUPP : err;
	}
	if (mr->dmabuf_map.is_iomem) {
		/* I/O memory: no CPU access through plain loads/stores */
		dma_buf_vunmap(buf, &mr->dmabuf_map);
		ib_umem_dmabuf_unmap_pages(mr->dmabuf);
		return -EOPNOTSUPP;
	}
	WRITE_ONCE(mr->dmabuf_mapped, true);
	return 0;
}

static void softmr_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	struct ib_umem_dmabuf *umem_dmabuf = attach->importer_priv;
	struct softmr_mr *mr = umem_dmabuf->private;

	dma_resv_assert_held(attach->dmabuf->resv);
	if (!mr) {	/* still registering: nothing of ours is mapped */
		ib_umem_dmabuf_unmap_pages(umem_dmabuf);
		return;
	}
	if (mr->dmabuf_mapped)
		softmr_count(mr->sdev, SOFTMR_CNT_DMABUF_MOVES, 1);
	softmr_dmabuf_unmap(mr);
}

static const struct dma_buf_attach_ops softmr_dmabuf_attach_ops = {
	.allow_peer2peer = false,
#if SOFTMR_DMABUF_INVALIDATE
	/* the same contract: unmapped before returning, under the resv */
	.invalidate_mappings = softmr_dmabuf_move_notify,
#else
	.move_notify = softmr_dmabuf_move_notify,
#endif
};

/* The reservation an access must hold, or NULL (not dynamic dma-buf). */
static struct dma_resv *softmr_dmabuf_resv(struct softmr_mr *mr)
{
	if (!mr || mr->kind != SOFTMR_MR_DMABUF || mr->dmabuf_pinned)
		return NULL;
	return softmr_dmabuf_buf(mr)->resv;
}

static int softmr_dmabuf_remap(struct softmr_mr *mr)
{
	bool was = mr->dmabuf_mapped;
	int err;

	if (!softmr_dmabuf_resv(mr))
		return 0;
	err = softmr_dmabuf_map(mr);
	if (!err && !was)
		softmr_count(mr->sdev, SOFTMR_CNT_DMABUF_REMAPS, 1);
	return err;
}

/**
 * softmr_dmabuf_lock() - hold the dma-buf MRs among @a and @b accessible
 * @a: an MR (any kind)
 * @b: another MR (any kind, may be @a), or NULL
 * @ctx: acquire context, used when two reservations are locked
 *
 * Takes the dma_resv lock of each dynamic dma-buf MR (two under @ctx, with
 * the wound/wait back-off) and maps what a move unmapped.  Sleeps.
 *
 * Return: 0 with the locks held (softmr_dmabuf_unlock()), or a negative
 * errno with nothing held.
 */
int softmr_dmabuf_lock(struct softmr_mr *a, struct softmr_mr *b,
		       struct ww_acquire_ctx *ctx)
{
	struct dma_resv *ra = softmr_dmabuf_resv(a);
	struct dma_resv *rb = softmr_dmabuf_resv(b);
	int err;

	if (ra == rb)
		rb = NULL;
	if (!ra) {
		ra = rb;
		rb = NULL;
	}
	if (!ra)
		return 0;
	if (!rb) {
		dma_resv_lock(ra, NULL);
	} else {
		struct dma_resv *first = ra, *second = rb;

		ww_acquire_init(ctx, &reservation_ww_class);
		dma_resv_lock(first, ctx);	/* the first cannot back off */
		while (dma_resv_lock(second, ctx) == -EDEADLK) {
			dma_resv_unlock(first);
			dma_resv_lock_slow(second, ctx);
			swap(first, second);
		}
		ww_acquire_done(ctx);
	}
	err = softmr_dmabuf_remap(a);
	if (!err && b != a)
		err = softmr_dmabuf_remap(b);
	if (err)
		softmr_dmabuf_unlock(a, b, ctx);
	return err;
}

/**
 * softmr_dmabuf_unlock() - undo softmr_dmabuf_lock()
 * @a: as passed to softmr_dmabuf_lock()
 * @b: as passed to softmr_dmabuf_lock()
 * @ctx: as passed to softmr_dmabuf_lock()
 */
void softmr_dmabuf_unlock(struct softmr_mr *a, struct softmr_mr *b,
			  struct ww_acquire_ctx *ctx)
{
	struct dma_resv *ra = softmr_dmabuf_resv(a);
	struct dma_resv *rb = softmr_dmabuf_resv(b);

	if (ra)
		dma_resv_unlock(ra);
	if (rb && rb != ra)
		dma_resv_unlock(rb);
	if (ra && rb && rb != ra)
		ww_acquire_fini(ctx);
}

/**
 * softmr_dmabuf_kaddr() - kernel address of an MR byte
 * @mr: a dma-buf MR, held by softmr_dmabuf_lock() (or pinned)
 * @iova: the byte, inside the MR
 *
 * Return: the address in the exporter's vmap, or NULL when not mapped.
 */
void *softmr_dmabuf_kaddr(struct softmr_mr *mr, u64 iova)
{
	if (!READ_ONCE(mr->dmabuf_mapped))
		return NULL;
	return mr->dmabuf_map.vaddr + mr->dmabuf_offset + (iova - mr->iova);
}

/**
 * softmr_dmabuf_page() - the page behind an MR byte, for the engine's copy
 * @mr: a dma-buf MR, held by softmr_dmabuf_lock() (or pinned)
 * @iova: the byte, inside the MR
 * @pofs: set to the byte's offset in the page
 *
 * Return: the page of the exporter's vmap, or NULL.
 */
struct page *softmr_dmabuf_page(struct softmr_mr *mr, u64 iova,
				unsigned int *pofs)
{
	void *p = softmr_dmabuf_kaddr(mr, iova);

	if (!p)
		return NULL;
	*pofs = offset_in_page(p);
	if (is_vmalloc_addr(p))
		return vmalloc_to_page(p);
	if (virt_addr_valid(p))
		return virt_to_page(p);
	return NULL;
}

/**
 * softmr_dmabuf_release() - drop an MR's import
 * @mr: a dma-buf MR no one uses any more
 */
void softmr_dmabuf_release(struct softmr_mr *mr)
{
	struct dma_resv *resv = softmr_dmabuf_buf(mr)->resv;

	dma_resv_lock(resv, NULL);
	softmr_dmabuf_unmap(mr);
	mr->dmabuf->private = NULL;
	dma_resv_unlock(resv);
	ib_umem_release(&mr->dmabuf->umem);	/* detaches, drops the dma-buf */
	mr->dmabuf = NULL;
	softmr_count(mr->sdev, SOFTMR_CNT_DMABUF_MRS, -1);
}

static int softmr_dmabuf_import(struct softmr_mr *mr, u64 offset, u64 length,
				int fd)
{
	struct ib_device *ibdev = &mr->sdev->ibdev;
	struct ib_umem_dmabuf *umem_dmabuf;
	struct dma_buf *buf;
	bool dynamic;
	int err;

	buf = dma_buf_get(fd);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	dynamic = dma_buf_is_dynamic(buf);
	dma_buf_put(buf);

	if (dynamic)
		umem_dmabuf = ib_umem_dmabuf_get(ibdev, offset, length, fd,
						 mr->access,
						 &softmr_dmabuf_attach_ops);
	else
		umem_dmabuf = ib_umem_dmabuf_get_pinned(ibdev, offset, length,
							fd, mr->access);
	if (IS_ERR(umem_dmabuf))
		return PTR_ERR(umem_dmabuf);

	buf = umem_dmabuf->attach->dmabuf;
	mr->kind = SOFTMR_MR_DMABUF;
	mr->dmabuf = umem_dmabuf;
	mr->umem = &umem_dmabuf->umem;
	mr->dmabuf_offset = offset;
	mr->dmabuf_pinned = !dynamic;
	softmr_count(mr->sdev, SOFTMR_CNT_DMABUF_MRS, 1);
	/*
	 * Write access only through a dma-buf the caller may write; checked
	 * on the buffer imported (the fd may name another one by now).
	 */
	mr->dmabuf_writable = buf->file->f_mode & FMODE_WRITE;
	if (ib_access_writable(mr->access) && !mr->dmabuf_writable)
		return -EACCES;
	dma_resv_lock(buf->resv, NULL);
	umem_dmabuf->private = mr;
	err = softmr_dmabuf_map(mr);
	dma_resv_unlock(buf->resv);
	return err;
}

/**
 * softmr_reg_user_mr_dmabuf() - the reg_user_mr_dmabuf verb
 * @ibpd: the PD
 * @offset: offset of the MR's first byte in the dma-buf
 * @length: length in bytes
 * @iova: address the MR's first byte has for lkey/rkey users
 * @fd: the dma-buf file descriptor (may be closed after registration)
 * @access: IB_ACCESS_* flags
 * @attrs: unused: no driver attributes are defined
 *
 * Return: the MR, or an ERR_PTR: -EINVAL for bad flags (ON_DEMAND and
 * HUGETLB have no meaning here), a zero or too long length, an overflowing
 * range, a range outside the dma-buf or an fd that is not a dma-buf,
 * -EBADF for a closed fd, -EACCES for write access through a dma-buf fd
 * opened read-only, -EOPNOTSUPP when the exporter offers no CPU
 * mapping, -ENOMEM at the MR limit.
 */
struct ib_mr *softmr_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
					u64 length, u64 iova, int fd,
					int access,
					struct uverbs_attr_bundle *attrs)
{
	struct softmr_dev *sdev = to_sdev(ibpd->device);
	struct softmr_mr *mr;
	u64 end;
	int err;

	err = softmr_check_access_flags(access);
	if (err)
		return ERR_PTR(err);
	if (access & (IB_ACCESS_ON_DEMAND | IB_ACCESS_HUGETLB))
		return ERR_PTR(-EINVAL);
	if (!length || length > sdev->attr.max_mr_size ||
	    check_add_overflow(offset, length, &end) ||
	    check_add_overflow(iova, length, &end))
		return ERR_PTR(-EINVAL);

	mr = softmr_mr_create(sdev, ibpd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->iova = (access & IB_ZERO_BASED) ? 0 : iova;
	mr->length = length;
	err = softmr_dmabuf_import(mr, offset, length, fd);
	if (err) {
		softmr_mr_abort(mr);
		return ERR_PTR(err);
	}
	err = softmr_mr_commit(mr);
	return err ? ERR_PTR(err) : &mr->ibmr;
}

SOFTMR_IMPORT_NS_DMA_BUF();
