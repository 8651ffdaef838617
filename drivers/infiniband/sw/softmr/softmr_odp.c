// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * On-demand paging: explicit ODP MRs, implicit ODP MRs and their children,
 * and advise_mr prefetch.
 *
 * The sequence protocol (Documentation/infiniband/softmr.rst, "ODP flow"):
 * an access first checks, under the umem's umem_mutex, that every page of
 * the range is mapped with the permission it needs (dma_list bits; from
 * 6.16 always revalidated: softmr_compat.h); if not
 * it drops the mutex and calls ib_umem_odp_map_dma_and_lock(), which faults
 * the pages with hmm_range_fault() between mmu_interval_read_begin() and
 * mmu_interval_read_retry() and retries on a changed sequence, returning
 * with umem_mutex held.  The copy runs with umem_mutex held.  The
 * invalidation callback takes umem_mutex, calls mmu_interval_set_seq() and
 * unmaps the range, so it waits for a copy in progress and the next access
 * faults again.
 *
 * Implicit ODP MRs cover the whole address space through children of
 * SOFTMR_IMPLICIT_CHILD_SIZE, created on first access and released when an
 * invalidation, or the access that created it, leaves a child with no
 * mapped page.  One MR has at most implicit_max_children at a time: each
 * costs ib_core's per-page arrays (16 bytes a page), which no memory
 * cgroup is charged for.
 *
 * An explicit ODP MR larger than one child is built the same way ("chunked",
 * softmr_odp_chunked()): an implicit root and children clipped to the MR's
 * pages, so that registering 1 GiB does not allocate and clear 4 MiB of
 * per-page arrays up front.  Its registration charged its whole range, so
 * its children are neither charged again nor capped.
 */

#include <linux/hmm.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_umem_odp.h>

#include "softmr.h"

/* Pages faulted and copied under one hold of umem_mutex at most. */
#define SOFTMR_ODP_CHUNK	(256UL << PAGE_SHIFT)
/* aligned chunks must never cross a child (softmr_odp_span_get()) */
static_assert(SOFTMR_ODP_CHUNK <= SOFTMR_IMPLICIT_CHILD_SIZE);

static struct workqueue_struct *softmr_odp_wq;

static unsigned long odp_max_pages;
module_param(odp_max_pages, ulong, 0644);
MODULE_PARM_DESC(odp_max_pages,
		 "pages of address space all ODP MRs of a device may cover (ib_core keeps 16 bytes a page for each; default 0: the machine's RAM pages)");

static unsigned int implicit_max_children = 1024;
module_param(implicit_max_children, uint, 0644);
MODULE_PARM_DESC(implicit_max_children,
		 "children (16 MiB of address space each) one implicit ODP MR may have mapped at once (default 1024)");

/**
 * struct softmr_odp_child - one chunk of an implicit ODP MR
 * @odp: the child umem (its own interval notifier)
 * @parent: the implicit MR
 * @index: chunk index (address >> SOFTMR_IMPLICIT_CHILD_SHIFT)
 * @users: accesses in progress; under parent->imp_lock
 * @releasing: the release work decided to free it; under parent->imp_spin
 * @release_work: frees the child once nothing is mapped
 */
struct softmr_odp_child {
	struct ib_umem_odp *odp;
	struct softmr_mr *parent;
	unsigned long index;
	unsigned int users;
	bool releasing;
	struct work_struct release_work;
};

int softmr_odp_wq_init(void)
{
	softmr_odp_wq = alloc_workqueue("softmr_odp", WQ_UNBOUND | WQ_MEM_RECLAIM,
					0);
	return softmr_odp_wq ? 0 : -ENOMEM;
}

void softmr_odp_wq_destroy(void)
{
	destroy_workqueue(softmr_odp_wq);
}

/**
 * softmr_odp_flush() - wait for queued prefetches and child releases
 */
void softmr_odp_flush(void)
{
	flush_workqueue(softmr_odp_wq);
}

/**
 * softmr_odp_charge() - reserve ODP tracking for @npages pages of a device
 * @sdev: the device
 * @npages: pages of address space an ODP umem will cover
 *
 * ib_core allocates per-page arrays (16 bytes a page) for an ODP umem that
 * no memory cgroup is charged for, and an ODP registration needs no memory
 * behind it: without a bound a user could make the kernel hold gigabytes
 * by registering terabytes of address space.
 *
 * Return: 0, or -ENOMEM when the device's budget (odp_max_pages) is spent.
 */
int softmr_odp_charge(struct softmr_dev *sdev, u64 npages)
{
	u64 max = READ_ONCE(odp_max_pages) ?: totalram_pages();

	if (atomic64_add_return(npages, &sdev->odp_pages) > max) {
		atomic64_sub(npages, &sdev->odp_pages);
		return -ENOMEM;
	}
	return 0;
}

/**
 * softmr_odp_uncharge() - return what softmr_odp_charge() reserved
 * @sdev: the device
 * @npages: the pages
 */
void softmr_odp_uncharge(struct softmr_dev *sdev, u64 npages)
{
	atomic64_sub(npages, &sdev->odp_pages);
}

#define SOFTMR_CHILD_PAGES	(SOFTMR_IMPLICIT_CHILD_SIZE >> PAGE_SHIFT)

/*
 * Are @mr's children charged one by one?  An explicit chunked MR's were
 * charged with its range at registration.
 */
static bool softmr_odp_child_charged(const struct softmr_mr *mr)
{
	return mr->kind == SOFTMR_MR_IMPLICIT;
}

/*
 * The pages child @index maps: its chunk, within the pages of an explicit
 * MR's range (which softmr_mr_init_odp() keeps below TASK_SIZE).
 */
static void softmr_odp_child_range(const struct softmr_mr *mr,
				   unsigned long index, u64 *start, u64 *size)
{
	u64 lo = (u64)index << SOFTMR_IMPLICIT_CHILD_SHIFT;
	u64 hi = lo + SOFTMR_IMPLICIT_CHILD_SIZE;

	if (mr->kind == SOFTMR_MR_ODP) {
		lo = max_t(u64, lo, ALIGN_DOWN(mr->va, PAGE_SIZE));
		hi = min_t(u64, hi, ALIGN(mr->va + mr->length, PAGE_SIZE));
	}
	*start = lo;
	*size = hi - lo;
}

/* Free a child whose umem nothing uses any more. */
static void softmr_odp_child_free(struct softmr_mr *mr,
				  struct softmr_odp_child *child)
{
	ib_umem_odp_release(child->odp);
	if (softmr_odp_child_charged(mr))
		softmr_odp_uncharge(mr->sdev, SOFTMR_CHILD_PAGES);
	softmr_count(mr->sdev, SOFTMR_CNT_IMPLICIT_CHILD_RELEASES, 1);
	kfree(child);
}

/* Unmap what the invalidated range covers; umem_mutex is held. */
static void softmr_odp_unmap(struct softmr_dev *sdev, struct ib_umem_odp *odp,
			     const struct mmu_notifier_range *range,
			     unsigned long cur_seq)
{
	u64 start = max_t(u64, ib_umem_start(odp), range->start);
	u64 end = min_t(u64, ib_umem_end(odp), range->end);

	lockdep_assert_held(&odp->umem_mutex);
	mmu_interval_set_seq(&odp->notifier, cur_seq);
	if (start < end && odp->npages) {
		ib_umem_odp_unmap_dma_pages(odp, start, end);
		softmr_count(sdev, SOFTMR_CNT_ODP_INVALIDATIONS, 1);
	}
}

/*
 * The notifier is live before ib_umem_odp_get() returns, so odp->private
 * may still be unset here: the device comes from the umem instead.
 */
static bool softmr_odp_invalidate(struct mmu_interval_notifier *mni,
				  const struct mmu_notifier_range *range,
				  unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp,
					       notifier);

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	softmr_odp_unmap(to_sdev(odp->umem.ibdev), odp, range, cur_seq);
	mutex_unlock(&odp->umem_mutex);
	return true;
}

const struct mmu_interval_notifier_ops softmr_odp_ops = {
	.invalidate = softmr_odp_invalidate,
};

/* Queue a child's release; parent->imp_lock or its umem_mutex held. */
static void softmr_odp_child_queue_release(struct softmr_odp_child *child)
{
	struct softmr_mr *mr = child->parent;

	spin_lock(&mr->imp_spin);
	if (!mr->imp_dying && !child->releasing)
		queue_work(softmr_odp_wq, &child->release_work);
	spin_unlock(&mr->imp_spin);
}

static bool softmr_odp_child_invalidate(struct mmu_interval_notifier *mni,
					const struct mmu_notifier_range *range,
					unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp,
					       notifier);
	struct softmr_odp_child *child;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	softmr_odp_unmap(to_sdev(odp->umem.ibdev), odp, range, cur_seq);
	/* unset while the child is being created: nothing mapped yet */
	child = READ_ONCE(odp->private);
	if (child && !odp->npages)
		softmr_odp_child_queue_release(child);
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops softmr_odp_child_ops = {
	.invalidate = softmr_odp_child_invalidate,
};

/* Does a child in no use map nothing?  parent->imp_lock held. */
static bool softmr_odp_child_empty(struct softmr_odp_child *child)
{
	bool empty;

	lockdep_assert_held(&child->parent->imp_lock);
	if (child->users)
		return false;
	mutex_lock(&child->odp->umem_mutex);
	empty = !child->odp->npages;
	mutex_unlock(&child->odp->umem_mutex);
	return empty;
}

/*
 * The whole release runs under parent->imp_lock, so that
 * softmr_odp_release_chunked() needs nothing but that lock and each
 * child's own work to know no release is in flight.
 */
static void softmr_odp_child_release_work(struct work_struct *work)
{
	struct softmr_odp_child *child =
		container_of(work, struct softmr_odp_child, release_work);
	struct softmr_mr *mr = child->parent;
	bool release;

	mutex_lock(&mr->imp_lock);
	release = softmr_odp_child_empty(child);
	if (release) {
		spin_lock(&mr->imp_spin);
		release = !mr->imp_dying;
		child->releasing = release;
		spin_unlock(&mr->imp_spin);
	}
	if (release) {
		xa_erase(&mr->children, child->index);
		mr->imp_children--;
		/* an invalidation may have queued us again meanwhile */
		cancel_work(&child->release_work);
		/* waits for invalidations in flight, which may use @child */
		softmr_odp_child_free(mr, child);
	}
	/*
	 * Once @child is gone, deregistration no longer waits for this work
	 * (cancel_work_sync() of its children), only for imp_lock, which a
	 * mutex_unlock() may still touch after a waiter took it: the MR is
	 * freed by kfree_rcu(), so an RCU read section keeps it until then.
	 */
	rcu_read_lock();
	mutex_unlock(&mr->imp_lock);
	rcu_read_unlock();
}

/*
 * Find or create the child that maps user address @va (inside the MR's
 * range for an explicit MR), and mark it in use.
 */
static struct softmr_odp_child *softmr_odp_child_get(struct softmr_mr *mr,
						     u64 va)
{
	unsigned long index = va >> SOFTMR_IMPLICIT_CHILD_SHIFT;
	bool charged = softmr_odp_child_charged(mr);
	struct softmr_odp_child *child;
	struct ib_umem_odp *odp;
	u64 start, size;
	int err;

	if (va >= TASK_SIZE)
		return ERR_PTR(-EFAULT);

	mutex_lock(&mr->imp_lock);
	child = xa_load(&mr->children, index);
	if (child)
		goto found;

	if (charged) {
		if (mr->imp_children >= READ_ONCE(implicit_max_children)) {
			err = -ENOMEM;
			goto err_unlock;
		}
		err = softmr_odp_charge(mr->sdev, SOFTMR_CHILD_PAGES);
		if (err)
			goto err_unlock;
	}
	child = kzalloc(sizeof(*child), GFP_KERNEL_ACCOUNT);
	if (!child) {
		err = -ENOMEM;
		goto err_uncharge;
	}
	child->parent = mr;
	child->index = index;
	INIT_WORK(&child->release_work, softmr_odp_child_release_work);
	/*
	 * Until it is in mr->children, an invalidation of the (already live)
	 * notifier queues no release: an error below frees it at once.
	 */
	child->releasing = true;
	softmr_odp_child_range(mr, index, &start, &size);
	odp = ib_umem_odp_alloc_child(mr->odp, start, size,
				      &softmr_odp_child_ops);
	if (IS_ERR(odp)) {
		err = PTR_ERR(odp);
		goto err_free;
	}
	child->odp = odp;
	WRITE_ONCE(odp->private, child);
	err = xa_err(xa_store(&mr->children, index, child, GFP_KERNEL));
	if (err)
		goto err_release;
	spin_lock(&mr->imp_spin);
	child->releasing = false;
	spin_unlock(&mr->imp_spin);
	mr->imp_children++;
	softmr_count(mr->sdev, SOFTMR_CNT_IMPLICIT_CHILDREN, 1);
found:
	child->users++;
	mutex_unlock(&mr->imp_lock);
	return child;

err_release:
	ib_umem_odp_release(odp);
err_free:
	kfree(child);
err_uncharge:
	if (charged)
		softmr_odp_uncharge(mr->sdev, SOFTMR_CHILD_PAGES);
err_unlock:
	mutex_unlock(&mr->imp_lock);
	return ERR_PTR(err);
}

/*
 * Done with a child.  One the access left empty (it faulted nothing in:
 * PREFETCH_NO_FAULT, or memory not in the mm) goes again, so that
 * unmapped space costs nothing after the access.
 */
static void softmr_odp_child_put(struct softmr_odp_child *child)
{
	struct softmr_mr *mr = child->parent;

	mutex_lock(&mr->imp_lock);
	child->users--;
	if (softmr_odp_child_empty(child))
		softmr_odp_child_queue_release(child);
	mutex_unlock(&mr->imp_lock);
}

/**
 * softmr_odp_init_root() - the implicit root of a chunked ODP MR
 * @mr: an implicit MR, or an explicit one larger than one child (its range
 *	charged and below TASK_SIZE); access set
 *
 * Registration then costs what an implicit MR's does; each child's
 * per-page arrays are allocated on the first access to its chunk.
 *
 * Return: 0 or a negative errno.
 */
int softmr_odp_init_root(struct softmr_mr *mr)
{
	struct ib_umem_odp *root;

	if (!current->mm)
		return -EINVAL;
	root = ib_umem_odp_alloc_implicit(&mr->sdev->ibdev, mr->access);
	if (IS_ERR(root))
		return PTR_ERR(root);
	/*
	 * ib_core's implicit root records current->mm without a reference,
	 * and ib_umem_odp_alloc_child() expects one: without it a child made
	 * after the process exited or exec'd (the fd lives on in a fork)
	 * would use a freed mm_struct, or another process's in its place.
	 * Held until softmr_odp_release_chunked().
	 */
	mmgrab(root->umem.owning_mm);
	mr->odp = root;
	mr->umem = &root->umem;
	return 0;
}

/**
 * softmr_odp_release_chunked() - release a chunked MR's children and root
 * @mr: the MR, no longer reachable by key and with no user left
 */
void softmr_odp_release_chunked(struct softmr_mr *mr)
{
	struct softmr_odp_child *child;
	unsigned long index;

	spin_lock(&mr->imp_spin);
	mr->imp_dying = true;
	spin_unlock(&mr->imp_spin);
	/*
	 * No release work is queued for this MR after this, and none
	 * releases a child: one that was releasing did so under imp_lock,
	 * later ones see imp_dying.  Wait only for this MR's own work: a
	 * global flush would wait behind every user's prefetches.
	 */
	mutex_lock(&mr->imp_lock);
	mutex_unlock(&mr->imp_lock);

	xa_for_each(&mr->children, index, child) {
		cancel_work_sync(&child->release_work);
		xa_erase(&mr->children, index);
		softmr_odp_child_free(mr, child);
	}
	if (mr->odp) {
		struct mm_struct *mm = mr->odp->umem.owning_mm;

		ib_umem_odp_release(mr->odp);
		mmdrop(mm);
	}
}

/* The user address of an ODP MR's @iova: implicit MRs' iova is the address. */
static u64 softmr_odp_va(const struct softmr_mr *mr, u64 iova)
{
	return mr->kind == SOFTMR_MR_IMPLICIT ? iova :
	       mr->va + (iova - mr->iova);
}

/* Under umem_mutex: is every page of [va, va + len) mapped for @need? */
static bool softmr_odp_mapped(struct ib_umem_odp *odp, u64 va, u64 len,
			      u64 need)
{
	unsigned int shift = odp->page_shift;
	u64 start = ib_umem_start(odp);
	unsigned long i, first, last;

	lockdep_assert_held(&odp->umem_mutex);
	first = (va - start) >> shift;
	last = (va + len - 1 - start) >> shift;
	for (i = first; i <= last; i++)
		if ((softmr_odp_state(odp, i) & need) != need)
			return false;
	return true;
}

/*
 * Make [va, va + len) of one umem present with @need and return with
 * umem_mutex held; @fault false only maps what is already present.
 */
static int softmr_odp_map_and_lock(struct softmr_dev *sdev,
				   struct ib_umem_odp *odp, u64 va, u64 len,
				   u64 need, bool fault)
{
	bool present = false;
	int ret;

	mutex_lock(&odp->umem_mutex);
	if (softmr_odp_mapped(odp, va, len, need)) {
		if (SOFTMR_ODP_TRUST_MAP)
			return 0;
		present = true;	/* softmr_compat.h: revalidate */
	}
	mutex_unlock(&odp->umem_mutex);

	ret = ib_umem_odp_map_dma_and_lock(odp, va, len, need, fault);
	if (ret < 0)
		return ret == -EINVAL ? -EFAULT : ret;
	if (present)
		return 0;
	softmr_count(sdev, SOFTMR_CNT_ODP_FAULTS, 1);
	softmr_count(sdev, SOFTMR_CNT_ODP_FAULT_PAGES, ret);
	return 0;
}

/* Bytes from @va to the end of its chunk, at most @len. */
static u64 softmr_odp_chunk(u64 va, u64 len)
{
	return min_t(u64, len, SOFTMR_ODP_CHUNK - (va & (SOFTMR_ODP_CHUNK - 1)));
}

/* Copy within one umem (explicit MR or implicit child), chunk by chunk. */
static int softmr_umem_copy(struct softmr_dev *sdev, struct ib_umem_odp *odp,
			    u64 va, void *buf, u64 len,
			    enum softmr_copy_dir dir)
{
	u64 need = SOFTMR_ODP_READ;
	int err;

	if (dir == SOFTMR_TO_MR)
		need |= SOFTMR_ODP_WRITE;

	while (len) {
		u64 n = softmr_odp_chunk(va, len);
		u64 done = 0;

		err = softmr_odp_map_and_lock(sdev, odp, va, n, need, true);
		if (err)
			return err;
		while (done < n) {
			u64 addr = va + done;
			unsigned int pofs = offset_in_page(addr);
			size_t c = min_t(u64, n - done, PAGE_SIZE - pofs);
			void *kaddr = kmap_local_page(softmr_odp_page(odp, addr));

			if (dir == SOFTMR_TO_MR)
				memcpy(kaddr + pofs, buf + done, c);
			else
				memcpy(buf + done, kaddr + pofs, c);
			kunmap_local(kaddr);
			done += c;
		}
		mutex_unlock(&odp->umem_mutex);
		va += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/**
 * softmr_odp_span_get() - find, and fault in, the ODP piece of a transfer
 * @s: the span; @s->mr is set by the caller
 * @iova: first byte
 * @len: in: bytes wanted; out: bytes this span covers (up to a chunk)
 * @write: the transfer writes the memory
 * @fault: fault the pages in; false only finds the umem (the steady state,
 *	where softmr_odp_span_lock() finds the pages mapped), unless it is a
 *	child that maps nothing yet
 *
 * Takes the implicit child and, when faulting, faults the pages in without
 * holding any lock afterwards, so that softmr_odp_span_lock() can later
 * hold the umem together with another one.  Release with
 * softmr_odp_span_put().
 *
 * Return: 0 or a negative errno (-EFAULT for memory not in the mm).
 */
int softmr_odp_span_get(struct softmr_span *s, u64 iova, u64 *len,
			bool write, bool fault)
{
	struct softmr_mr *mr = s->mr;
	u64 va = softmr_odp_va(mr, iova);
	u64 n = softmr_odp_chunk(va, *len);
	int err;

	s->need = SOFTMR_ODP_READ | (write ? SOFTMR_ODP_WRITE : 0);
	s->va_off = va - iova;
	if (softmr_odp_chunked(mr)) {
		/* chunks are aligned, so one never crosses a child */
		s->child = softmr_odp_child_get(mr, va);
		if (IS_ERR(s->child)) {
			err = PTR_ERR(s->child);
			s->child = NULL;
			return err;
		}
		s->odp = s->child->odp;
	} else {
		s->odp = mr->odp;
	}
	*len = n;
	/*
	 * a child that maps nothing yet is faulted at once: left empty, its
	 * put would queue its release and the fault make it again
	 */
	if (!fault && (!s->child || READ_ONCE(s->odp->npages)))
		return 0;
	err = softmr_odp_map_and_lock(mr->sdev, s->odp, va, n, s->need, true);
	if (err) {
		softmr_odp_span_put(s);
		return err;
	}
	mutex_unlock(&s->odp->umem_mutex);
	return 0;
}

/**
 * softmr_odp_span_lock() - hold a span valid if every page is mapped
 * @s: the span
 * @iova: first byte
 * @len: bytes
 * @subclass: lockdep subclass (the second of two umems is nested)
 *
 * Return: true with umem_mutex held when every page is mapped; false
 * (nothing held) when one is not (never faulted, or an invalidation came
 * since the fault): fault, then lock again.
 */
bool softmr_odp_span_lock(struct softmr_span *s, u64 iova, u64 len,
			  unsigned int subclass)
{
	mutex_lock_nested(&s->odp->umem_mutex, subclass);
	if (softmr_odp_mapped(s->odp, iova + s->va_off, len, s->need))
		return true;
	mutex_unlock(&s->odp->umem_mutex);
	return false;
}

/**
 * softmr_odp_mapped_span() - is a span's range still mapped?
 * @s: the span, its umem_mutex held
 * @iova: first byte
 * @len: bytes
 *
 * Return: true when every page is mapped with the span's permission.
 */
bool softmr_odp_mapped_span(struct softmr_span *s, u64 iova, u64 len)
{
	return softmr_odp_mapped(s->odp, iova + s->va_off, len, s->need);
}

/**
 * softmr_odp_span_put() - release what softmr_odp_span_get() took
 * @s: the span, unlocked
 */
void softmr_odp_span_put(struct softmr_span *s)
{
	if (s->child)
		softmr_odp_child_put(s->child);
	s->child = NULL;
	s->odp = NULL;
}

/* Run @fn on each child chunk of user range [va, va + len). */
static int softmr_chunks_for_each(struct softmr_mr *mr, u64 va, u64 len,
				  int (*fn)(struct softmr_mr *mr,
					    struct ib_umem_odp *odp, u64 va,
					    u64 len, void *arg),
				  void *arg)
{
	while (len) {
		u64 end = (va | (SOFTMR_IMPLICIT_CHILD_SIZE - 1)) + 1;
		u64 n = min_t(u64, len, end - va);
		struct softmr_odp_child *child;
		int err;

		child = softmr_odp_child_get(mr, va);
		if (IS_ERR(child))
			return PTR_ERR(child);
		err = fn(mr, child->odp, va, n, arg);
		softmr_odp_child_put(child);
		if (err)
			return err;
		va += n;
		len -= n;
	}
	return 0;
}

struct softmr_copy_arg {
	void *buf;
	enum softmr_copy_dir dir;
};

static int softmr_child_copy(struct softmr_mr *mr, struct ib_umem_odp *odp,
			     u64 va, u64 len, void *arg)
{
	struct softmr_copy_arg *c = arg;
	int err;

	err = softmr_umem_copy(mr->sdev, odp, va, c->buf, len, c->dir);
	c->buf += len;
	return err;
}

/**
 * softmr_odp_copy() - the MR access API for explicit and implicit ODP MRs
 * @mr: the MR; bounds and permissions already checked
 * @iova: first byte
 * @buf: kernel buffer
 * @len: bytes
 * @dir: direction
 *
 * Return: 0, -EFAULT when the memory is not in the address space, or
 * another negative errno.
 */
int softmr_odp_copy(struct softmr_mr *mr, u64 iova, void *buf, u64 len,
		    enum softmr_copy_dir dir)
{
	struct softmr_copy_arg c = { .buf = buf, .dir = dir };
	u64 va = softmr_odp_va(mr, iova);

	if (softmr_odp_chunked(mr))
		return softmr_chunks_for_each(mr, va, len, softmr_child_copy,
					      &c);
	return softmr_umem_copy(mr->sdev, mr->odp, va, buf, len, dir);
}

/* Prefetch: map (and fault unless NO_FAULT) one umem range. */
static int softmr_prefetch_umem(struct softmr_mr *mr, struct ib_umem_odp *odp,
				u64 va, u64 len, void *arg)
{
	enum ib_uverbs_advise_mr_advice advice = (uintptr_t)arg;
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	u64 need = SOFTMR_ODP_READ;
	int err;

	if (advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE)
		need |= SOFTMR_ODP_WRITE;
	while (len) {
		u64 n = softmr_odp_chunk(va, len);

		/* a long prefetch yields, and ends with a dereg or a kill */
		cond_resched();
		if (fatal_signal_pending(current) || !softmr_mr_is_live(mr))
			return -EINTR;

		err = softmr_odp_map_and_lock(mr->sdev, odp, va, n, need,
					      fault);
		if (err)
			return err;
		mutex_unlock(&odp->umem_mutex);
		va += n;
		len -= n;
	}
	return 0;
}

static int softmr_prefetch_mr(struct softmr_mr *mr, u64 iova, u64 len,
			      enum ib_uverbs_advise_mr_advice advice)
{
	void *arg = (void *)(uintptr_t)advice;
	u64 va = softmr_odp_va(mr, iova);

	if (!len)
		return 0;
	if (softmr_odp_chunked(mr))
		return softmr_chunks_for_each(mr, va, len,
					      softmr_prefetch_umem, arg);
	return softmr_prefetch_umem(mr, mr->odp, va, len, arg);
}

/**
 * softmr_odp_prefetch_ahead() - fault in what an incoming request reaches
 * @mr: the MR the request's key found (referenced; bounds and access
 *	checked for the whole range); anything but an ODP MR is left alone
 * @iova: the request's first byte
 * @len: its length (the first 4 MiB are faulted in)
 * @write: for an RDMA WRITE (else an RDMA READ)
 *
 * The wire responder's worker (process context) calls it at the first
 * packet of an RDMA WRITE and at an RDMA READ request, so that the pages
 * of the whole message come in with one fault rather than one per packet,
 * as mlx5's responder page-fault handler prefetches; the requester does
 * likewise for what it sends and for where read responses land
 * (softmr_wire_sgl_prefetch()).  Best effort: the
 * copies that follow check and fault each page themselves under the
 * interval notifier's sequence, so a page invalidated meanwhile is faulted
 * in again, never written stale; an error is theirs to report.
 */
void softmr_odp_prefetch_ahead(struct softmr_mr *mr, u64 iova, u64 len,
			       bool write)
{
	if (mr->kind != SOFTMR_MR_ODP && mr->kind != SOFTMR_MR_IMPLICIT)
		return;
	softmr_prefetch_mr(mr, iova, min_t(u64, len, SOFTMR_PREFETCH_AHEAD_MAX),
			   write ? IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE :
				   IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH);
}

/**
 * struct softmr_prefetch - an asynchronous prefetch
 * @work: on softmr_odp_wq
 * @advice: IB_UVERBS_ADVISE_MR_ADVICE_*
 * @num_sge: entries in @sg
 * @sg: MR (referenced), iova and length of each range
 */
struct softmr_prefetch {
	struct work_struct work;
	enum ib_uverbs_advise_mr_advice advice;
	u32 num_sge;
	struct {
		struct softmr_mr *mr;
		u64 iova;
		u64 len;
	} sg[] __counted_by(num_sge);
};

static void softmr_prefetch_work(struct work_struct *work)
{
	struct softmr_prefetch *pf = container_of(work, struct softmr_prefetch,
						  work);
	u32 i;

	for (i = 0; i < pf->num_sge; i++) {
		struct softmr_mr *mr = pf->sg[i].mr;

		/* best effort: an error only shows in the counters */
		if (softmr_prefetch_mr(mr, pf->sg[i].iova, pf->sg[i].len,
				       pf->advice))
			softmr_count(mr->sdev, SOFTMR_CNT_ODP_PREFETCH_ERRORS,
				     1);
		softmr_mr_put(mr);
	}
	kfree(pf);
}

/*
 * ibv_advise_mr(3) errors for one SGE: EFAULT for a bad lkey or a range
 * outside the MR, ENOENT for a key whose index is registered with another
 * key, EPERM for another PD's MR or PREFETCH_WRITE on a non-writable MR,
 * EOPNOTSUPP for a non-ODP MR.
 */
static struct softmr_mr *softmr_advise_lookup(struct softmr_dev *sdev,
					      struct ib_pd *ibpd,
					      const struct ib_sge *sge,
					      enum ib_uverbs_advise_mr_advice advice)
{
	struct softmr_mr *mr;
	int err;

	mr = softmr_mr_get(sdev, sge->lkey);
	if (!mr) {
		bool other_key;

		rcu_read_lock();
		other_key = xa_load(&sdev->mr_xa,
				    sge->lkey >> SOFTMR_MR_KEY_BITS);
		rcu_read_unlock();
		return ERR_PTR(other_key ? -ENOENT : -EFAULT);
	}
	if (mr->ibmr.pd != ibpd) {
		err = -EPERM;
		goto put;
	}
	if (mr->kind != SOFTMR_MR_ODP && mr->kind != SOFTMR_MR_IMPLICIT) {
		err = -EOPNOTSUPP;
		goto put;
	}
	err = softmr_mr_check(mr, sge->addr, sge->length, 0);
	if (err)
		goto put;
	if (advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    !(READ_ONCE(mr->access) & IB_ACCESS_LOCAL_WRITE)) {
		err = -EPERM;
		goto put;
	}
	return mr;
put:
	softmr_mr_put(mr);
	return ERR_PTR(err);
}

/**
 * softmr_advise_mr() - the advise_mr verb (ibv_advise_mr(3))
 * @ibpd: the PD the MRs must belong to
 * @advice: PREFETCH, PREFETCH_WRITE or PREFETCH_NO_FAULT
 * @flags: IB_UVERBS_ADVISE_MR_FLAG_FLUSH: run synchronously
 * @sg_list: ranges, by lkey
 * @num_sge: entries
 * @attrs: unused
 *
 * Every range is validated before anything is done.  Without FLUSH the
 * prefetch runs on a workqueue holding references on the MRs.
 *
 * Return: 0 or a negative errno as ibv_advise_mr(3) lists them.
 */
int softmr_advise_mr(struct ib_pd *ibpd,
		     enum ib_uverbs_advise_mr_advice advice, u32 flags,
		     struct ib_sge *sg_list, u32 num_sge,
		     struct uverbs_attr_bundle *attrs)
{
	struct softmr_dev *sdev = to_sdev(ibpd->device);
	struct softmr_prefetch *pf;
	int err = 0;
	u32 i, n = 0;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	if (flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
		return -EINVAL;

	pf = kzalloc(struct_size(pf, sg, num_sge), GFP_KERNEL_ACCOUNT);
	if (!pf)
		return -ENOMEM;
	pf->num_sge = num_sge;
	pf->advice = advice;
	for (n = 0; n < num_sge; n++) {
		struct softmr_mr *mr = softmr_advise_lookup(sdev, ibpd,
							    &sg_list[n],
							    advice);

		if (IS_ERR(mr)) {
			err = PTR_ERR(mr);
			goto out;
		}
		pf->sg[n].mr = mr;
		pf->sg[n].iova = sg_list[n].addr;
		pf->sg[n].len = sg_list[n].length;
	}
	softmr_count(sdev, SOFTMR_CNT_ODP_PREFETCHES, 1);

	if (!(flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH)) {
		INIT_WORK(&pf->work, softmr_prefetch_work);
		queue_work(softmr_odp_wq, &pf->work);
		return 0;
	}
	for (i = 0; i < num_sge && !err; i++)
		err = softmr_prefetch_mr(pf->sg[i].mr, pf->sg[i].iova,
					 pf->sg[i].len, advice);
	if (err)
		softmr_count(sdev, SOFTMR_CNT_ODP_PREFETCH_ERRORS, 1);
out:
	for (i = 0; i < n; i++)
		softmr_mr_put(pf->sg[i].mr);
	kfree(pf);
	return err;
}
