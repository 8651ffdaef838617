// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device memory as a dma-buf (ibv_dm_export_dmabuf_fd()): softmr exports a
 * DM allocation's pages as a static dma-buf (it never moves them).  The
 * dma-buf holds a reference on the allocation's memory, so it stays valid
 * after ibv_free_dm() and after the device is gone; the range returns to
 * the device's pool only when the last user lets go.  Importers get a
 * DMA-mapped scatterlist, a vmap of the pages or an mmap; softmr's own
 * importer (reg_user_mr_dmabuf) takes it like any static exporter.
 */

#include <linux/dma-buf.h>
#include <linux/file.h>
#include <linux/scatterlist.h>
#define UVERBS_MODULE_NAME softmr_ib
#include <rdma/uverbs_named_ioctl.h>

#include "softmr.h"

static struct sg_table *softmr_dm_map_dma_buf(struct dma_buf_attachment *attach,
					      enum dma_data_direction dir)
{
	struct softmr_dm_chunk *chunk = attach->dmabuf->priv;
	void *kaddr = softmr_dm_chunk_kaddr(chunk);
	unsigned int i, n = chunk->size >> PAGE_SHIFT;
	struct scatterlist *sg;
	struct sg_table *sgt;
	int err;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	err = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (err)
		goto err_free;
	for_each_sgtable_sg(sgt, sg, i)
		sg_set_page(sg, virt_to_page(kaddr + i * PAGE_SIZE),
			    PAGE_SIZE, 0);
	err = dma_map_sgtable(attach->dev, sgt, dir, 0);
	if (err)
		goto err_table;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(err);
}

static void softmr_dm_unmap_dma_buf(struct dma_buf_attachment *attach,
				    struct sg_table *sgt,
				    enum dma_data_direction dir)
{
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

static int softmr_dm_dmabuf_vmap(struct dma_buf *buf, struct iosys_map *map)
{
	iosys_map_set_vaddr(map, softmr_dm_chunk_kaddr(buf->priv));
	return 0;
}

static void softmr_dm_dmabuf_vunmap(struct dma_buf *buf, struct iosys_map *map)
{
}

/* Mappings of an exported dma-buf: the dma-buf (the VMA's file) holds the chunk. */
static const struct vm_operations_struct softmr_dm_dmabuf_vm_ops = {
	.fault = softmr_dm_fault,
};

static int softmr_dm_dmabuf_mmap(struct dma_buf *buf,
				 struct vm_area_struct *vma)
{
	struct softmr_dm_chunk *chunk = buf->priv;
	unsigned long pages = vma_pages(vma);

	if (vma->vm_pgoff > chunk->size >> PAGE_SHIFT ||
	    pages > (chunk->size >> PAGE_SHIFT) - vma->vm_pgoff)
		return -EINVAL;
	/*
	 * A PFN mapping, as for the DM mapping itself (vm_pgoff is the page
	 * index in the chunk): get_user_pages() cannot pin it, so nothing
	 * reaches the range after the dma-buf lets the memory go.
	 */
	return softmr_dm_pfnmap(vma, chunk, &softmr_dm_dmabuf_vm_ops);
}

static void softmr_dm_dmabuf_release(struct dma_buf *buf)
{
	softmr_dm_chunk_put(buf->priv);
}

static const struct dma_buf_ops softmr_dm_dmabuf_ops = {
	.map_dma_buf = softmr_dm_map_dma_buf,
	.unmap_dma_buf = softmr_dm_unmap_dma_buf,
	.release = softmr_dm_dmabuf_release,
	.mmap = softmr_dm_dmabuf_mmap,
	.vmap = softmr_dm_dmabuf_vmap,
	.vunmap = softmr_dm_dmabuf_vunmap,
};

/**
 * softmr_dm_export() - a dma-buf of a DM allocation's pages
 * @dm: the allocation
 *
 * Return: the dma-buf (holding a reference on the memory) or an ERR_PTR.
 */
static struct dma_buf *softmr_dm_export(struct softmr_dm *dm)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp);
	struct dma_buf *buf;

	exp.ops = &softmr_dm_dmabuf_ops;
	exp.size = dm->size;
	exp.flags = O_RDWR;
	exp.priv = dm->chunk;
	kref_get(&dm->chunk->ref);
	buf = dma_buf_export(&exp);
	if (IS_ERR(buf))
		softmr_dm_chunk_put(dm->chunk);
	return buf;
}

static int UVERBS_HANDLER(SOFTMR_IB_METHOD_DM_EXPORT_DMABUF)(struct uverbs_attr_bundle *attrs)
{
	struct ib_dm *ibdm = uverbs_attr_get_obj(attrs,
						 SOFTMR_IB_ATTR_DM_EXPORT_HANDLE);
	struct dma_buf *buf;
	s32 fd;
	int err;

	if (IS_ERR(ibdm))
		return PTR_ERR(ibdm);
	buf = softmr_dm_export(to_sdm(ibdm));
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(buf);
		return fd;
	}
	/* the fd becomes visible only once the caller knows it */
	err = uverbs_copy_to(attrs, SOFTMR_IB_ATTR_DM_EXPORT_FD, &fd,
			     sizeof(fd));
	if (err) {
		put_unused_fd(fd);
		dma_buf_put(buf);
		return err;
	}
	fd_install(fd, buf->file);
	return 0;
}

DECLARE_UVERBS_NAMED_METHOD(SOFTMR_IB_METHOD_DM_EXPORT_DMABUF,
			    UVERBS_ATTR_IDR(SOFTMR_IB_ATTR_DM_EXPORT_HANDLE,
					    UVERBS_OBJECT_DM,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(SOFTMR_IB_ATTR_DM_EXPORT_FD,
						UVERBS_ATTR_TYPE(s32),
						UA_MANDATORY));

ADD_UVERBS_METHODS(softmr_ib_dm_methods, UVERBS_OBJECT_DM,
		   &UVERBS_METHOD(SOFTMR_IB_METHOD_DM_EXPORT_DMABUF));

const struct uapi_definition softmr_dm_export_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &softmr_ib_dm_methods),
	{},
};
