// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device memory (ibv_alloc_dm(3)): each device owns a fixed area of
 * physically contiguous memory, the "device memory", sized by the dm_size
 * module parameter and reported as max_dm_size.  Allocations are whole
 * pages (so a mapping never exposes another allocation) aligned as
 * log_align_req asks; the owning process maps them and copies with
 * ibv_memcpy_to_dm()/_from_dm() in user space.  reg_dm_mr registers part
 * of an allocation as a zero-based MR that every data mover reaches through
 * the MR access API.
 *
 * The memory is mapped the way a device's BAR is, as a PFN mapping that
 * get_user_pages() cannot pin, and every VMA holds the allocation's memory
 * (softmr_mmap.c): the range returns to the pool only when the DM is freed
 * and every mapping of it is gone.
 */

#include <linux/log2.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#define UVERBS_MODULE_NAME softmr_ib
#include <rdma/uverbs_named_ioctl.h>

#include "softmr.h"

static unsigned int dm_size_kb = 4096;
module_param_named(dm_size, dm_size_kb, uint, 0444);
MODULE_PARM_DESC(dm_size, "device memory per device in KiB (default 4096, 0: none)");

/*
 * The pool hands out "addresses" base + offset.  The base is a power of two
 * no smaller than the area, so an aligned address is an aligned offset, and
 * no address is 0 (which means failure).
 */
static unsigned long softmr_dm_base(struct softmr_dev *sdev)
{
	return roundup_pow_of_two(sdev->dm_size);
}

static void softmr_dm_area_release(struct kref *ref)
{
	struct softmr_dm_area *area = container_of(ref, struct softmr_dm_area,
						   ref);

	if (area->pool)
		gen_pool_destroy(area->pool);
	if (area->mem)
		free_pages_exact(area->mem, area->size);
	kfree(area);
}

/**
 * softmr_dm_init_dev() - set up a device's device memory
 * @sdev: the device
 *
 * Return: 0 or -ENOMEM.
 */
int softmr_dm_init_dev(struct softmr_dev *sdev)
{
	size_t size = PAGE_ALIGN((size_t)dm_size_kb * SZ_1K);
	struct softmr_dm_area *area;

	if (!size)
		return 0;
	if (get_order(size) > MAX_PAGE_ORDER) {
		pr_warn("softmr: dm_size %u KiB is above the largest contiguous allocation (%lu KiB)\n",
			dm_size_kb, (PAGE_SIZE << MAX_PAGE_ORDER) / SZ_1K);
		return -EINVAL;
	}
	area = kzalloc(sizeof(*area), GFP_KERNEL);
	if (!area)
		return -ENOMEM;
	kref_init(&area->ref);
	sdev->dm_area = area;
	area->size = size;
	area->mem = alloc_pages_exact(size, GFP_KERNEL | __GFP_ZERO |
				      __GFP_NOWARN);
	area->pool = gen_pool_create(PAGE_SHIFT, NUMA_NO_NODE);
	if (!area->mem || !area->pool ||
	    gen_pool_add(area->pool, roundup_pow_of_two(size), size,
			 NUMA_NO_NODE)) {
		softmr_dm_cleanup_dev(sdev);
		return -ENOMEM;
	}
	sdev->dm_mem = area->mem;
	sdev->dm_pool = area->pool;
	sdev->dm_size = size;
	sdev->attr.max_dm_size = size;
	return 0;
}

/**
 * softmr_dm_cleanup_dev() - drop a device's device memory
 * @sdev: the device
 *
 * The area outlives the device while allocations (their mappings, their
 * exported dma-bufs) still use it.
 */
void softmr_dm_cleanup_dev(struct softmr_dev *sdev)
{
	if (sdev->dm_area)
		kref_put(&sdev->dm_area->ref, softmr_dm_area_release);
	sdev->dm_area = NULL;
	sdev->dm_pool = NULL;
	sdev->dm_mem = NULL;
}

static void softmr_dm_chunk_release(struct kref *ref)
{
	struct softmr_dm_chunk *chunk = container_of(ref, struct softmr_dm_chunk,
						     ref);
	struct softmr_dm_area *area = chunk->area;

	gen_pool_free(area->pool, chunk->addr, chunk->size);
	kfree(chunk);
	kref_put(&area->ref, softmr_dm_area_release);
}

/**
 * softmr_dm_chunk_put() - drop a reference on an allocation's memory
 * @chunk: the memory; the last reference returns it to the pool
 */
void softmr_dm_chunk_put(struct softmr_dm_chunk *chunk)
{
	kref_put(&chunk->ref, softmr_dm_chunk_release);
}

struct ib_dm *softmr_alloc_dm(struct ib_device *ibdev,
			      struct ib_ucontext *ibuc,
			      struct ib_dm_alloc_attr *attr,
			      struct uverbs_attr_bundle *attrs)
{
	struct softmr_dev *sdev = to_sdev(ibdev);
	struct genpool_data_align align = {};
	struct softmr_dm_chunk *chunk;
	unsigned long addr;
	struct softmr_dm *dm;
	int err;

	if (!sdev->dm_pool)
		return ERR_PTR(-EOPNOTSUPP);
	if (!attr->length || attr->length > sdev->dm_size ||
	    attr->alignment >= 32 || BIT_ULL(attr->alignment) > sdev->dm_size)
		return ERR_PTR(-EINVAL);

	dm = kzalloc(sizeof(*dm), GFP_KERNEL_ACCOUNT);
	chunk = kzalloc(sizeof(*chunk), GFP_KERNEL_ACCOUNT);
	if (!dm || !chunk) {
		err = -ENOMEM;
		goto err_free;
	}
	dm->size = PAGE_ALIGN(attr->length);
	align.align = max_t(u64, PAGE_SIZE, BIT_ULL(attr->alignment));
	addr = gen_pool_alloc_algo(sdev->dm_pool, dm->size,
				   gen_pool_first_fit_align, &align);
	if (!addr) {
		err = -ENOMEM;
		goto err_free;
	}
	dm->offset = addr - softmr_dm_base(sdev);
	memset(sdev->dm_mem + dm->offset, 0, dm->size);
	kref_init(&chunk->ref);
	kref_get(&sdev->dm_area->ref);
	chunk->area = sdev->dm_area;
	chunk->addr = addr;
	chunk->offset = dm->offset;
	chunk->size = dm->size;
	dm->chunk = chunk;

	/* the memory stays while the entry, so any mapping of it, does */
	kref_get(&chunk->ref);
	dm->mmap_entry = softmr_mmap_entry_insert_dm(ibuc, chunk);
	if (IS_ERR(dm->mmap_entry)) {
		err = PTR_ERR(dm->mmap_entry);
		softmr_dm_chunk_put(chunk);
		goto err_chunk;
	}
	if (attrs) {
		u64 moff = rdma_user_mmap_get_offset(dm->mmap_entry);

		err = uverbs_copy_to(attrs, SOFTMR_IB_ATTR_ALLOC_DM_MMAP_OFFSET,
				     &moff, sizeof(moff));
		if (err)
			goto err_entry;
	}
	softmr_count(sdev, SOFTMR_CNT_DM_ALLOCS, 1);
	softmr_count(sdev, SOFTMR_CNT_DM_BYTES, dm->size);
	return &dm->ibdm;

err_entry:
	rdma_user_mmap_entry_remove(dm->mmap_entry);
err_chunk:
	softmr_dm_chunk_put(chunk);
	kfree(dm);
	return ERR_PTR(err);
err_free:
	kfree(chunk);
	kfree(dm);
	return ERR_PTR(err);
}

/**
 * softmr_dealloc_dm() - the dealloc_dm verb
 * @ibdm: the DM; ib_core refuses (EBUSY) while an MR uses it
 * @attrs: unused
 *
 * A mapping the process still has (also one inherited over fork) keeps
 * the mmap entry and with it the allocation's range: the range returns to
 * the pool, to be zeroed for the next allocation, when the last mapping
 * goes.
 *
 * Return: 0.
 */
int softmr_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct softmr_dev *sdev = to_sdev(ibdm->device);
	struct softmr_dm *dm = to_sdm(ibdm);

	rdma_user_mmap_entry_remove(dm->mmap_entry);
	softmr_dm_chunk_put(dm->chunk);
	softmr_count(sdev, SOFTMR_CNT_DM_FREES, 1);
	softmr_count(sdev, SOFTMR_CNT_DM_BYTES, -(s64)dm->size);
	kfree(dm);
	return 0;
}

/**
 * softmr_reg_dm_mr() - the reg_dm_mr verb
 * @ibpd: the PD
 * @ibdm: the DM
 * @attr: offset and length inside the DM, access flags
 * @attrs: unused
 *
 * Return: the MR, or an ERR_PTR: -EINVAL without IB_ACCESS_ZERO_BASED, for
 * a range outside the DM or for bad access flags (ibv_alloc_dm(3)).  A
 * zero-length MR is allowed; no access reaches through it.
 */
struct ib_mr *softmr_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			       struct ib_dm_mr_attr *attr,
			       struct uverbs_attr_bundle *attrs)
{
	struct softmr_dev *sdev = to_sdev(ibpd->device);
	struct softmr_dm *dm = to_sdm(ibdm);
	struct softmr_mr *mr;
	int err;

	if (!(attr->access_flags & IB_ZERO_BASED) ||
	    (attr->access_flags & (IB_ACCESS_ON_DEMAND | IB_ACCESS_HUGETLB)))
		return ERR_PTR(-EINVAL);
	err = softmr_check_access_flags(attr->access_flags);
	if (err)
		return ERR_PTR(err);
	/* an empty MR at the end is allowed, as on ConnectX */
	if (attr->offset > ibdm->length ||
	    attr->length > ibdm->length - attr->offset)
		return ERR_PTR(-EINVAL);

	mr = softmr_mr_create(sdev, ibpd, attr->access_flags);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->kind = SOFTMR_MR_DM;
	mr->iova = 0;
	mr->length = attr->length;
	mr->dm_kaddr = sdev->dm_mem + dm->offset + attr->offset;
	err = softmr_mr_commit(mr);
	if (err)
		return ERR_PTR(err);
	softmr_count(sdev, SOFTMR_CNT_DM_MRS, 1);
	return &mr->ibmr;
}

ADD_UVERBS_ATTRIBUTES_SIMPLE(softmr_ib_dm_alloc, UVERBS_OBJECT_DM,
			     UVERBS_METHOD_DM_ALLOC,
			     UVERBS_ATTR_PTR_OUT(SOFTMR_IB_ATTR_ALLOC_DM_MMAP_OFFSET,
						 UVERBS_ATTR_TYPE(u64),
						 UA_MANDATORY));

const struct uapi_definition softmr_dm_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &softmr_ib_dm_alloc),
	UAPI_DEF_CHAIN(softmr_dm_export_defs),
	{},
};
