// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory registration: reg_user_mr (pinned, explicit and implicit ODP),
 * rereg, dereg, get_dma_mr, and the key table.
 *
 * Keys: lkey == rkey == index << 8 | key.  The 24-bit index is a free
 * slot found from a random point for every registration and the 8-bit key
 * is random too, so a key says nothing about other keys (no neighbours to
 * try), a guess hits one of the live MRs with odds of about their number
 * in 2^32, and a stale key rarely reaches the MR that reuses its index.
 *
 * Lifetime: the key table holds no reference.  softmr_mr_get() looks an MR
 * up under RCU and takes a reference only while the registration's own
 * reference is alive; dereg unpublishes the key, drops the registration's
 * reference and waits until every lookup is done before it releases the
 * memory, then frees the MR after an RCU grace period.  The engine's key
 * caches (softmr_key_cache_get()) hold a reference from WQE to WQE that
 * uses the key; dereg marks the MR unpublished first, so that no cache
 * hands it out again, and waits for them like for any lookup.
 */

#include <linux/hugetlb.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>

#include "softmr.h"

#define SOFTMR_ACCESS_ALL (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			   IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			   IB_ACCESS_MW_BIND | IB_ZERO_BASED | \
			   IB_ACCESS_ON_DEMAND | IB_ACCESS_HUGETLB | \
			   IB_ACCESS_RELAXED_ORDERING)

/**
 * softmr_mr_init_dev() - set up a device's key table
 * @sdev: the device
 */
void softmr_mr_init_dev(struct softmr_dev *sdev)
{
	xa_init_flags(&sdev->mr_xa, XA_FLAGS_ALLOC1);
}

/**
 * softmr_check_access_flags() - validate IB_ACCESS_* flags of an MR
 * @access: the flags
 *
 * Return: 0, or -EINVAL for unknown flags or remote write/atomic without
 * local write (ibv_reg_mr(3)).
 */
int softmr_check_access_flags(int access)
{
	if (access & ~SOFTMR_ACCESS_ALL)
		return -EINVAL;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

static struct softmr_mr *softmr_mr_alloc(struct softmr_dev *sdev,
					 struct ib_pd *ibpd, int access,
					 atomic_t *count, u32 max)
{
	struct softmr_mr *mr;

	if (atomic_inc_return(count) > max) {
		atomic_dec(count);
		return ERR_PTR(-ENOMEM);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr) {
		atomic_dec(count);
		return ERR_PTR(-ENOMEM);
	}
	mr->sdev = sdev;
	mr->access = access;
	mr->ibmr.device = &sdev->ibdev;
	mr->ibmr.pd = ibpd;
	refcount_set(&mr->users, 1);
	init_completion(&mr->released);
	xa_init(&mr->children);
	mutex_init(&mr->imp_lock);
	spin_lock_init(&mr->imp_spin);
	spin_lock_init(&mr->mw_lock);
	return mr;
}

/**
 * softmr_mr_create() - allocate an MR counted against max_mr
 * @sdev: the device
 * @ibpd: its PD
 * @access: IB_ACCESS_* flags
 *
 * Return: the MR, not yet reachable by key (softmr_mr_commit()), or an
 * ERR_PTR.
 */
struct softmr_mr *softmr_mr_create(struct softmr_dev *sdev,
				   struct ib_pd *ibpd, int access)
{
	return softmr_mr_alloc(sdev, ibpd, access, &sdev->mr_count,
			       sdev->attr.max_mr);
}

/**
 * softmr_mw_entry_create() - allocate a memory window's key-table entry
 * @sdev: the device
 * @ibpd: the window's PD
 *
 * Counted against max_mw.  The entry is unbound: its key stays 0.
 *
 * Return: the entry, reachable by index once committed
 * (softmr_mr_commit()), or an ERR_PTR.
 */
struct softmr_mr *softmr_mw_entry_create(struct softmr_dev *sdev,
					 struct ib_pd *ibpd)
{
	struct softmr_mr *mr = softmr_mr_alloc(sdev, ibpd, 0, &sdev->mw_count,
					       sdev->attr.max_mw);

	if (!IS_ERR(mr))
		mr->kind = SOFTMR_MR_MW;
	return mr;
}

/* Reserve an index; the MR becomes visible only in softmr_mr_publish(). */
static int softmr_mr_key_alloc(struct softmr_mr *mr)
{
	struct softmr_dev *sdev = mr->sdev;
	u32 next = get_random_u32_inclusive(1, BIT(SOFTMR_MR_INDEX_BITS) - 1);
	u32 index;
	int err;

	/* the first free index from a random point: not predictable */
	err = xa_alloc_cyclic(&sdev->mr_xa, &index, NULL,
			      XA_LIMIT(1, BIT(SOFTMR_MR_INDEX_BITS) - 1),
			      &next, GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;
	mr->ibmr.lkey = index << SOFTMR_MR_KEY_BITS | get_random_u8();
	mr->ibmr.rkey = mr->ibmr.lkey;
	return 0;
}

static void softmr_mr_publish(struct softmr_mr *mr)
{
	xa_store(&mr->sdev->mr_xa, mr->ibmr.lkey >> SOFTMR_MR_KEY_BITS, mr,
		 GFP_KERNEL);
	if (mr->kind != SOFTMR_MR_MW)
		softmr_count(mr->sdev, SOFTMR_CNT_MR_REG, 1);
}

/* The entry with @key (MR or window), referenced, or NULL. */
static struct softmr_mr *softmr_key_get(struct softmr_dev *sdev, u32 key)
{
	struct softmr_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, key >> SOFTMR_MR_KEY_BITS);
	/* acquire: a fast registration's fields before its key */
	if (mr && (!key || smp_load_acquire(&mr->key) != key ||
		   !refcount_inc_not_zero(&mr->users)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
}

/**
 * softmr_mr_get() - look up an MR by lkey or rkey
 * @sdev: the device
 * @key: the key
 *
 * Memory windows are not MRs: their keys are only rkeys
 * (softmr_rkey_get()).
 *
 * Return: the MR with a reference held (softmr_mr_put()), or NULL when no
 * registered MR has exactly this key now (struct softmr_mr: @key).
 */
struct softmr_mr *softmr_mr_get(struct softmr_dev *sdev, u32 key)
{
	struct softmr_mr *mr = softmr_key_get(sdev, key);

	if (mr && mr->kind == SOFTMR_MR_MW) {
		softmr_mr_put(mr);
		return NULL;
	}
	return mr;
}

/**
 * softmr_rkey_get() - look up what a remote key reaches: an MR or a bound
 *	memory window's entry
 * @sdev: the device
 * @key: the rkey
 *
 * Return: the MR or window entry, referenced (softmr_mr_put()), or NULL.
 */
struct softmr_mr *softmr_rkey_get(struct softmr_dev *sdev, u32 key)
{
	return softmr_key_get(sdev, key);
}

/**
 * softmr_key_cache_get() - look a key up through a cache
 * @kc: the cache (struct softmr_key_cache), owned by the caller's run;
 *	NULL: no cache, a plain lookup
 * @sdev: the device
 * @key: the key
 * @window: a remote key: a memory window's entry is an answer too
 *
 * The entry the cache holds answers when it has @key on @sdev, still has
 * that key (a fast registration's may have changed, a window's been
 * invalidated) and its dereg has not started; one that has @key but no
 * longer answers is dropped.  Else the key table answers, and the cache
 * is left as it is: the caller keeps the entry there only once every
 * check of the access passed (softmr_key_cache_keep()), and forgets it
 * when a check fails (softmr_key_cache_forget()).
 *
 * Return: the entry with a reference of the caller's own (softmr_mr_put()),
 * or NULL as softmr_mr_get() or softmr_rkey_get() would return.
 */
struct softmr_mr *softmr_key_cache_get(struct softmr_key_cache *kc,
				       struct softmr_dev *sdev, u32 key,
				       bool window)
{
	struct softmr_mr *mr = kc ? kc->mr : NULL;
	bool same = mr && kc->key == key && kc->sdev == sdev;

	/* the fast lane checks a hit likewise (softmr_sq_fast.c) */
	if (same && softmr_key_cache_live(mr, key) &&
	    (window || mr->kind != SOFTMR_MR_MW)) {
		refcount_inc(&mr->users);	/* the cache holds one */
		return mr;
	}
	if (same)
		softmr_key_cache_drop(kc);
	return window ? softmr_rkey_get(sdev, key) : softmr_mr_get(sdev, key);
}

/**
 * softmr_key_cache_keep() - hold an entry in a key cache
 * @kc: the cache, or NULL (nothing to do)
 * @sdev: the device @key was looked up on
 * @key: the key
 * @mr: what softmr_key_cache_get() answered, every check of the access
 *	passed, referenced by the caller
 */
void softmr_key_cache_keep(struct softmr_key_cache *kc,
			   struct softmr_dev *sdev, u32 key,
			   struct softmr_mr *mr)
{
	if (!kc || (kc->mr == mr && kc->key == key && kc->sdev == sdev))
		return;
	softmr_key_cache_drop(kc);
	refcount_inc(&mr->users);	/* the caller holds one */
	kc->sdev = sdev;
	kc->mr = mr;
	kc->key = key;
}

/**
 * softmr_key_cache_forget() - a check of an access refused @mr: not held
 * @kc: the cache, or NULL (nothing to do)
 * @mr: the entry refused
 */
void softmr_key_cache_forget(struct softmr_key_cache *kc,
			     struct softmr_mr *mr)
{
	if (kc && kc->mr == mr)
		softmr_key_cache_drop(kc);
}

/**
 * softmr_key_cache_drop() - empty a key cache
 * @kc: the cache, or NULL (nothing to do)
 */
void softmr_key_cache_drop(struct softmr_key_cache *kc)
{
	if (!kc || !kc->mr)
		return;
	softmr_mr_put(kc->mr);
	kc->mr = NULL;
}

/**
 * softmr_mr_by_index() - the entry with a key index, whatever its key
 * @sdev: the device
 * @index: the key's upper bits
 *
 * For the operations that name a key that may be invalid: fast
 * registration, invalidation and memory window binds; the caller checks
 * kind, PD and key.
 *
 * Return: the MR or window entry, referenced (softmr_mr_put()), or NULL.
 */
struct softmr_mr *softmr_mr_by_index(struct softmr_dev *sdev, u32 index)
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
 * softmr_mr_is_live() - is an MR still registered?
 * @mr: the MR, referenced
 *
 * Return: false once dereg has started: long work on the MR may stop.
 */
bool softmr_mr_is_live(struct softmr_mr *mr)
{
	bool live;

	rcu_read_lock();
	live = xa_load(&mr->sdev->mr_xa,
		       mr->ibmr.lkey >> SOFTMR_MR_KEY_BITS) == mr;
	rcu_read_unlock();
	return live;
}

/**
 * softmr_mr_put() - drop a reference from softmr_mr_get()
 * @mr: the MR
 */
void softmr_mr_put(struct softmr_mr *mr)
{
	if (refcount_dec_and_test(&mr->users))
		complete(&mr->released);
}

static void softmr_mr_release(struct softmr_mr *mr)
{
	switch (mr->kind) {
	case SOFTMR_MR_PINNED:
		kvfree(mr->pages);
		ib_umem_release(mr->umem);
		break;
	case SOFTMR_MR_ODP:
	case SOFTMR_MR_IMPLICIT:
		if (softmr_odp_chunked(mr))
			softmr_odp_release_chunked(mr);
		else
			ib_umem_odp_release(mr->odp);
		break;
	case SOFTMR_MR_DMABUF:
		softmr_dmabuf_release(mr);
		break;
	case SOFTMR_MR_FRMR:
		softmr_frmr_free(mr);
		break;
	case SOFTMR_MR_DMA:
	case SOFTMR_MR_DM:
	case SOFTMR_MR_MW:
		break;
	}
	softmr_odp_uncharge(mr->sdev, mr->odp_charged);
	xa_destroy(&mr->children);
	atomic_dec(mr->kind == SOFTMR_MR_MW ? &mr->sdev->mw_count :
		   &mr->sdev->mr_count);
	kfree_rcu(mr, rcu);
}

/**
 * softmr_mr_abort() - undo a registration that was never published
 * @mr: from softmr_mr_create(), its memory (if any) set up
 */
void softmr_mr_abort(struct softmr_mr *mr)
{
	if (mr->ibmr.lkey)
		xa_erase(&mr->sdev->mr_xa, mr->ibmr.lkey >> SOFTMR_MR_KEY_BITS);
	softmr_mr_release(mr);
}

/**
 * softmr_mr_report_leaks() - say which MR keys outlive their device
 * @sdev: the device, being freed, whose MR table is not empty
 *
 * Every MR is deregistered before the device goes; what is left is a bug.
 * Names each MR, and counts reserved indices, before the WARN.
 */
void softmr_mr_report_leaks(struct softmr_dev *sdev)
{
	struct softmr_mr *mr;
	unsigned long index;
	unsigned int used = softmr_xa_in_use(&sdev->mr_xa), n = 0;

	xa_for_each(&sdev->mr_xa, index, mr) {
		pr_err("softmr: %s: MR index %lu outlives the device: kind %d lkey 0x%x access 0x%x users %u\n",
		       dev_name(&sdev->ibdev.dev), index, mr->kind,
		       mr->ibmr.lkey, mr->access, refcount_read(&mr->users));
		n++;
	}
	pr_err("softmr: %s: %u MR indices in use (%u reserved), %d MRs alive\n",
	       dev_name(&sdev->ibdev.dev), used, used - n,
	       atomic_read(&sdev->mr_count));
	WARN_ON(1);
}

/**
 * softmr_mr_commit() - give a built MR its keys and make it reachable
 * @mr: from softmr_mr_create(), kind, iova, length and memory set
 *
 * Every registration ends here.
 *
 * Return: 0, or a negative errno after which @mr is released.
 */
int softmr_mr_commit(struct softmr_mr *mr)
{
	int err;

	mr->ibmr.iova = mr->iova;
	mr->ibmr.length = mr->length;
	mr->ibmr.page_size = PAGE_SIZE;
	err = softmr_mr_key_alloc(mr);
	if (err) {
		softmr_mr_abort(mr);
		return err;
	}
	/*
	 * A fast-registration MR is reached only after its first REG_MR, a
	 * memory window only while bound.
	 */
	if (mr->kind != SOFTMR_MR_FRMR && mr->kind != SOFTMR_MR_MW)
		mr->key = mr->ibmr.lkey;
	softmr_mr_publish(mr);
	return 0;
}

/**
 * softmr_get_dma_mr() - an MR over kernel DMA addresses (kernel PDs)
 * @ibpd: the PD
 * @access: IB_ACCESS_* flags
 *
 * Return: the MR or an ERR_PTR.
 */
struct ib_mr *softmr_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct softmr_dev *sdev = to_sdev(ibpd->device);
	struct softmr_mr *mr;
	int err;

	err = softmr_check_access_flags(access);
	if (err)
		return ERR_PTR(err);
	if (access & (IB_ACCESS_ON_DEMAND | IB_ZERO_BASED))
		return ERR_PTR(-EINVAL);
	mr = softmr_mr_create(sdev, ibpd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->kind = SOFTMR_MR_DMA;
	mr->length = U64_MAX;
	err = softmr_mr_commit(mr);
	return err ? ERR_PTR(err) : &mr->ibmr;
}

/* Every PAGE_SIZE page of a pinned umem, so an offset finds its page. */
static int softmr_mr_collect_pages(struct softmr_mr *mr)
{
	struct ib_umem *umem = mr->umem;
	struct sg_page_iter it;
	unsigned long i = 0;

	mr->npages = ib_umem_num_pages(umem);
	mr->pages = kvmalloc_array(mr->npages, sizeof(*mr->pages),
				   GFP_KERNEL_ACCOUNT);
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (WARN_ON_ONCE(i >= mr->npages))
			return -EINVAL;
		mr->pages[i++] = sg_page_iter_page(&it);
	}
	return i == mr->npages ? 0 : -EINVAL;
}

static int softmr_mr_init_pinned(struct softmr_mr *mr, u64 start, u64 length)
{
	int err;

	mr->umem = ib_umem_get(&mr->sdev->ibdev, start, length, mr->access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		mr->umem = NULL;
		return err;
	}
	mr->kind = SOFTMR_MR_PINNED;
	mr->page_offset = ib_umem_offset(mr->umem);
	return softmr_mr_collect_pages(mr);
}

/* IBV_ACCESS_HUGETLB promises hugetlb memory: every VMA must be one. */
static int softmr_check_hugetlb(u64 start, u64 length)
{
	struct mm_struct *mm = current->mm;
	u64 addr = start, end = start + length;
	int err = 0;

	if (!IS_ENABLED(CONFIG_HUGETLB_PAGE) || !mm)
		return -EINVAL;
	mmap_read_lock(mm);
	while (addr < end) {
		struct vm_area_struct *vma = vma_lookup(mm, addr);

		if (!vma || !is_vm_hugetlb_page(vma)) {
			err = -EINVAL;
			break;
		}
		addr = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return err;
}

static int softmr_mr_init_odp(struct softmr_mr *mr, u64 start, u64 length)
{
	struct ib_umem_odp *odp;
	u64 npages;
	int err;

	if (mr->access & IB_ACCESS_HUGETLB) {
		err = softmr_check_hugetlb(start, length);
		if (err)
			return err;
	}

	/* ib_core's per-page arrays are not charged anywhere: bounded here */
	npages = (ALIGN(start + length, PAGE_SIZE) -
		  ALIGN_DOWN(start, PAGE_SIZE)) >> PAGE_SHIFT;
	err = softmr_odp_charge(mr->sdev, npages);
	if (err)
		return err;
	mr->odp_charged = npages;
	/*
	 * Larger than one child: map the range through children, made on
	 * first access, rather than allocate its per-page arrays here.
	 * HUGETLB needs one umem of huge pages; a range ending above user
	 * space faults nowhere either way.
	 */
	if (length > SOFTMR_IMPLICIT_CHILD_SIZE &&
	    !(mr->access & IB_ACCESS_HUGETLB) && start + length <= TASK_SIZE) {
		err = softmr_odp_init_root(mr);
	} else {
		odp = ib_umem_odp_get(&mr->sdev->ibdev, start, length,
				      mr->access, &softmr_odp_ops);
		err = PTR_ERR_OR_ZERO(odp);
		if (!err) {
			mr->odp = odp;
			mr->umem = &odp->umem;
		}
	}
	/* the kind says mr->odp is set (softmr_mr_release()) */
	if (!err)
		mr->kind = SOFTMR_MR_ODP;
	return err;
}

static bool softmr_is_implicit(u64 start, u64 length, int access)
{
	return (access & IB_ACCESS_ON_DEMAND) && start == 0 &&
	       length == U64_MAX;
}

/* ibv_reg_mr(3) rules for address, length, iova and flags. */
static int softmr_check_reg(struct softmr_dev *sdev, u64 start, u64 length,
			    u64 iova, int access)
{
	u64 end;
	int err;

	err = softmr_check_access_flags(access);
	if (err)
		return err;
	/*
	 * no ODP on this kernel (softmr_compat.h) or behind this DMA setup
	 * (softmr_dev.c): capability clear
	 */
	if ((access & IB_ACCESS_ON_DEMAND) && !sdev->odp_ok)
		return -EOPNOTSUPP;
	if (softmr_is_implicit(start, length, access)) {
		/* HUGETLB is for explicit ODP only; iova is the address */
		if ((access & (IB_ACCESS_HUGETLB | IB_ZERO_BASED)) || iova)
			return -EINVAL;
		if (!(sdev->attr.odp_caps.general_caps &
		      IB_ODP_SUPPORT_IMPLICIT))
			return -EOPNOTSUPP;
		return 0;
	}
	if (!length || length > sdev->attr.max_mr_size)
		return -EINVAL;
	if (check_add_overflow(start, length, &end) ||
	    check_add_overflow(iova, length, &end))
		return -EINVAL;
	if ((start & ~PAGE_MASK) != (iova & ~PAGE_MASK) &&
	    !(access & IB_ZERO_BASED))
		return -EINVAL;
	if ((access & IB_ACCESS_HUGETLB) && !(access & IB_ACCESS_ON_DEMAND))
		return -EINVAL;
	return 0;
}

/* Build an MR of any user kind, ready for softmr_mr_commit(). */
static struct softmr_mr *softmr_mr_create_user(struct softmr_dev *sdev,
					       struct ib_pd *ibpd, u64 start,
					       u64 length, u64 iova,
					       int access)
{
	struct softmr_mr *mr;
	int err;

	err = softmr_check_reg(sdev, start, length, iova, access);
	if (err)
		return ERR_PTR(err);

	mr = softmr_mr_create(sdev, ibpd, access);
	if (IS_ERR(mr))
		return mr;

	if (softmr_is_implicit(start, length, access)) {
		mr->kind = SOFTMR_MR_IMPLICIT;
		mr->length = U64_MAX;
		err = softmr_odp_init_root(mr);
	} else {
		/* ZERO_BASED: byte offsets from the start of the MR */
		mr->iova = (access & IB_ZERO_BASED) ? 0 : iova;
		mr->length = length;
		mr->va = start;
		if (access & IB_ACCESS_ON_DEMAND)
			err = softmr_mr_init_odp(mr, start, length);
		else
			err = softmr_mr_init_pinned(mr, start, length);
	}
	if (err) {
		softmr_mr_abort(mr);
		return ERR_PTR(err);
	}
	return mr;
}

/**
 * softmr_reg_user_mr() - the reg_user_mr verb
 * @ibpd: the PD
 * @start: user virtual address (0 with length U64_MAX: implicit ODP)
 * @length: length in bytes
 * @iova: address the MR's first byte has for lkey/rkey users
 * @access: IB_ACCESS_* flags
 * @udata: unused: no driver data is defined
 *
 * Return: the MR, or an ERR_PTR: -EINVAL for bad flags, lengths, overflows
 * and iova page offsets, -EOPNOTSUPP for an unsupported kind, -ENOMEM at
 * the MR limit, -EFAULT for memory that cannot be pinned.
 */
struct ib_mr *softmr_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				 u64 iova, int access, struct ib_udata *udata)
{
	struct softmr_mr *mr;
	int err;

	mr = softmr_mr_create_user(to_sdev(ibpd->device), ibpd, start, length,
				   iova, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	err = softmr_mr_commit(mr);
	return err ? ERR_PTR(err) : &mr->ibmr;
}

/*
 * May a PD/access change keep the MR's translation?  Not when it gains
 * write access to pages pinned without FOLL_WRITE: they may be page-cache
 * pages of a file the user may only read (a PROT_READ MAP_SHARED mapping),
 * or pages shared copy-on-write with another process.  Such a change pins
 * again for writing (a new translation), which fails where the user may
 * not write (ib_umem_get() with FOLL_WRITE).  ODP MRs fault every write
 * with write intent (hmm_range_fault() checks the VMA), DM memory is the
 * user's own, and a dma-buf MR may gain write only through a writable fd.
 */
static bool softmr_rereg_keeps_translation(struct softmr_mr *mr,
					   int new_access)
{
	if (!ib_access_writable(new_access))
		return true;
	switch (mr->kind) {
	case SOFTMR_MR_PINNED:
		return mr->umem->writable;
	case SOFTMR_MR_DMABUF:
		return mr->dmabuf_writable;
	default:
		return true;
	}
}

/**
 * softmr_mr_close_mw() - refuse new window binds, unless windows are bound
 * @mr: an MR about to be deregistered or registered anew
 *
 * Return: 0 (no window is bound, none will bind), or -EBUSY.
 */
int softmr_mr_close_mw(struct softmr_mr *mr)
{
	int err = 0;

	spin_lock(&mr->mw_lock);
	if (mr->mw_bound)
		err = -EBUSY;
	else
		mr->mw_closed = true;
	spin_unlock(&mr->mw_lock);
	return err;
}

static void softmr_mr_reopen_mw(struct softmr_mr *mr)
{
	spin_lock(&mr->mw_lock);
	mr->mw_closed = false;
	spin_unlock(&mr->mw_lock);
}

static struct ib_mr *softmr_rereg(struct softmr_mr *old, int flags,
				  u64 start, u64 length, u64 iova,
				  int new_access, struct ib_pd *new_pd)
{
	struct softmr_mr *mr;
	int err;

	if (!(flags & IB_MR_REREG_TRANS) &&
	    !((new_access ^ old->access) & IB_ACCESS_ON_DEMAND) &&
	    old->kind != SOFTMR_MR_IMPLICIT &&
	    softmr_rereg_keeps_translation(old, new_access)) {
		err = softmr_check_access_flags(new_access);
		if (err)
			return ERR_PTR(err);
		if ((new_access ^ old->access) &
		    (IB_ZERO_BASED | IB_ACCESS_HUGETLB))
			return ERR_PTR(-EINVAL);
		WRITE_ONCE(old->access, new_access);
		/* ib_core sets ibmr->pd for IB_MR_REREG_PD */
		return NULL;
	}
	/*
	 * A new translation needs the dma-buf fd again: register anew.  So
	 * does write access to a dma-buf imported through a read-only fd.
	 */
	if (old->kind == SOFTMR_MR_DMABUF)
		return ERR_PTR(flags & IB_MR_REREG_TRANS ? -EOPNOTSUPP :
			       -EACCES);

	if (!(flags & IB_MR_REREG_TRANS)) {
		start = old->va;
		length = old->length;
		iova = old->iova;
		if (old->kind == SOFTMR_MR_IMPLICIT)
			start = 0;
	}
	mr = softmr_mr_create_user(old->sdev, new_pd, start, length, iova,
				   new_access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	err = softmr_mr_commit(mr);
	return err ? ERR_PTR(err) : &mr->ibmr;
}

/**
 * softmr_rereg_user_mr() - the rereg_user_mr verb
 * @ibmr: the MR
 * @flags: IB_MR_REREG_TRANS, IB_MR_REREG_PD, IB_MR_REREG_ACCESS
 * @start: new address (TRANS)
 * @length: new length (TRANS)
 * @iova: new iova (TRANS)
 * @access: new flags (ACCESS)
 * @ibpd: new PD (PD)
 * @udata: unused
 *
 * A new translation, or a change between pinned and ODP, builds a new MR
 * with new keys that ib_core swaps in for the old one; a PD or access change
 * alone is made in place, unless it gains write access to pages that were
 * pinned read-only: then the memory is pinned again for writing, which
 * fails (EFAULT) where the user may not write it.
 *
 * Return: a new MR, NULL when changed in place, or an ERR_PTR.
 */
struct ib_mr *softmr_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				   u64 length, u64 iova, int access,
				   struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct softmr_mr *old = to_smr(ibmr);
	int new_access = (flags & IB_MR_REREG_ACCESS) ? access : old->access;
	struct ib_pd *new_pd = (flags & IB_MR_REREG_PD) ? ibpd : ibmr->pd;
	struct ib_mr *mr;
	int err;

	if (flags & ~IB_MR_REREG_SUPPORTED)
		return ERR_PTR(-EOPNOTSUPP);
	if (old->kind == SOFTMR_MR_DMA)
		return ERR_PTR(-EINVAL);
	/* a window bound to the MR keeps its translation, PD and rights */
	err = softmr_mr_close_mw(old);
	if (err)
		return ERR_PTR(err);
	mr = softmr_rereg(old, flags, start, length, iova, new_access, new_pd);
	/*
	 * The old MR stays (an error, or changed in place): windows may bind
	 * again, checked against its new PD (ib_core writes the same value
	 * after we return).
	 */
	if (!mr && (flags & IB_MR_REREG_PD))
		WRITE_ONCE(ibmr->pd, new_pd);
	if (IS_ERR_OR_NULL(mr))
		softmr_mr_reopen_mw(old);
	return mr;
}

/**
 * softmr_dereg_mr() - the dereg_mr verb
 * @ibmr: the MR
 * @udata: unused
 *
 * Waits for lookups in flight (data movers, queued prefetches) to finish.
 *
 * Return: 0, or -EBUSY while memory windows are bound to the MR.
 */
int softmr_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct softmr_mr *mr = to_smr(ibmr);
	int err = softmr_mr_close_mw(mr);

	if (err)
		return err;
	softmr_mr_unpublish_wait(mr);
	softmr_count(mr->sdev, SOFTMR_CNT_MR_DEREG, 1);
	softmr_mr_release(mr);
	return 0;
}

/**
 * softmr_mr_unpublish_wait() - make an entry unreachable and wait for its
 *	lookups
 * @mr: a committed MR or window entry; the registration's reference goes
 *
 * Return when no lookup holds @mr any more; softmr_mr_free() frees it.
 */
void softmr_mr_unpublish_wait(struct softmr_mr *mr)
{
	/* no key cache hands it out from now on (softmr_key_cache_get()) */
	WRITE_ONCE(mr->unpublished, true);
	xa_erase(&mr->sdev->mr_xa, mr->ibmr.lkey >> SOFTMR_MR_KEY_BITS);
	softmr_mr_put(mr);
	wait_for_completion(&mr->released);
}

/**
 * softmr_mr_free() - release an entry after softmr_mr_unpublish_wait()
 * @mr: the entry
 */
void softmr_mr_free(struct softmr_mr *mr)
{
	softmr_mr_release(mr);
}

