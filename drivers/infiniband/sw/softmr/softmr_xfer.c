// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MR to MR transfers and atomics: the data path of the QP engine.  Data is
 * copied once, page by page, from the source MR's memory to the
 * destination MR's memory, whatever kind each MR is.
 *
 * An ODP MR's pages are valid only while its umem_mutex is held and the
 * pages are marked mapped.  Faulting takes the mm's mmap lock, and an
 * invalidation holding that lock waits for umem_mutex, so a transfer never
 * faults while it holds a umem_mutex.  It takes both mutexes in address
 * order and checks that every page is mapped, which in the steady state
 * they are; when one is not, it drops both, faults each side alone, then
 * takes both again and checks that nothing was invalidated in between; if
 * something was, it drops both and faults again.  A dynamic dma-buf MR's
 * dma_resv lock is taken before either (softmr_dmabuf_lock()) and held over
 * the copy, so the exporter cannot move the buffer under it.  Bounds and
 * permissions are the caller's job (softmr_mr_check()).
 */

#include <linux/dma-direct.h>
#include <linux/highmem.h>
#include <linux/sched.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem_odp.h>

#include "softmr.h"

/* Bytes moved under one hold of the MRs' locks at most. */
#define SOFTMR_XFER_CHUNK	SZ_1M
/*
 * Faults of one piece that an invalidation undid before the copy could
 * take the pages.  A peer that keeps invalidating (munmap, madvise in a
 * loop) makes the transfer fail with an error completion after this many,
 * instead of livelocking the engine.
 */
#define SOFTMR_XFER_RETRIES	128

static bool softmr_mr_is_odp(struct softmr_mr *mr)
{
	return mr->kind == SOFTMR_MR_ODP || mr->kind == SOFTMR_MR_IMPLICIT;
}

/*
 * Pinned pages and device memory stay where they are while the MR is
 * referenced: a copy needs no fault, lock or key check again.
 */
static bool softmr_mr_is_fixed(struct softmr_mr *mr)
{
	return mr->kind == SOFTMR_MR_PINNED || mr->kind == SOFTMR_MR_DM;
}

/*
 * Start a span of @mr at @iova; an ODP MR's pages are faulted in when
 * @fault (softmr_odp_span_get()).
 */
static int softmr_span_get(struct softmr_span *s, struct softmr_mr *mr,
			   u32 key, int access, u64 iova, u64 *len, bool write,
			   bool fault)
{
	memset(s, 0, sizeof(*s));
	s->mr = mr;
	s->key = key;
	s->access = access;
	if (!softmr_mr_is_odp(mr))
		return 0;
	return softmr_odp_span_get(s, iova, len, write, fault);
}

static void softmr_span_put(struct softmr_span *s)
{
	if (s->odp)
		softmr_odp_span_put(s);
}

/*
 * Lock the ODP spans among @a and @b for [ai, ai + n) and [bi, bi + n).
 * Return: 0 with them held, -EAGAIN (nothing held) to fault again.
 */
static int softmr_odp_spans_lock(struct softmr_span *a, u64 ai,
				 struct softmr_span *b, u64 bi, u64 n)
{
	struct softmr_span *first = a, *second = b;
	u64 fi = ai, si = bi;

	if (!a->odp && !b->odp)
		return 0;
	if (!a->odp || !b->odp) {
		struct softmr_span *s = a->odp ? a : b;

		return softmr_odp_span_lock(s, s == a ? ai : bi, n, 0) ?
		       0 : -EAGAIN;
	}
	if (a->odp == b->odp) {
		if (!softmr_odp_span_lock(a, ai, n, 0))
			return -EAGAIN;
		if (softmr_odp_mapped_span(b, bi, n))
			return 0;
		mutex_unlock(&a->odp->umem_mutex);
		return -EAGAIN;
	}
	if (a->odp > b->odp) {
		swap(first, second);
		swap(fi, si);
	}
	if (!softmr_odp_span_lock(first, fi, n, 0))
		return -EAGAIN;
	if (!softmr_odp_span_lock(second, si, n, SINGLE_DEPTH_NESTING)) {
		mutex_unlock(&first->odp->umem_mutex);
		return -EAGAIN;
	}
	return 0;
}

static void softmr_odp_spans_unlock(struct softmr_span *a,
				    struct softmr_span *b)
{
	if (a->odp)
		mutex_unlock(&a->odp->umem_mutex);
	if (b->odp && b->odp != a->odp)
		mutex_unlock(&b->odp->umem_mutex);
}

static bool softmr_span_frmr(const struct softmr_span *s)
{
	return s->mr && s->mr->kind == SOFTMR_MR_FRMR;
}

static void softmr_frmr_spans_unlock(struct softmr_span *a,
				     struct softmr_span *b)
{
	if (softmr_span_frmr(a))
		softmr_frmr_unlock(a->mr);
	if (softmr_span_frmr(b) && b->mr != a->mr)
		softmr_frmr_unlock(b->mr);
}

/*
 * Hold the fast-registration MRs among @a and @b (in address order) and
 * check that their keys are still the ones the access started with.
 * Return: 0 with them held; -EFAULT (@a) or -ENXIO (@b) when a key was
 * invalidated, nothing held.
 */
static int softmr_frmr_spans_lock(struct softmr_span *a, struct softmr_span *b)
{
	struct softmr_span *first = a, *second = b;

	if (!softmr_span_frmr(a) || !softmr_span_frmr(b) || a->mr == b->mr) {
		/* one hold for both sides of one MR, for both rights */
		if (softmr_span_frmr(a) &&
		    !softmr_frmr_lock(a->mr, a->key, a->access |
				      (b->mr == a->mr ? b->access : 0), 0))
			return -EFAULT;
		if (softmr_span_frmr(b) && b->mr != a->mr &&
		    !softmr_frmr_lock(b->mr, b->key, b->access, 0)) {
			if (softmr_span_frmr(a))
				softmr_frmr_unlock(a->mr);
			return -ENXIO;
		}
		if (softmr_span_frmr(b) && b->mr == a->mr && b->key != a->key) {
			softmr_frmr_unlock(a->mr);
			return -ENXIO;
		}
		return 0;
	}
	if (a->mr > b->mr)
		swap(first, second);
	if (!softmr_frmr_lock(first->mr, first->key, first->access, 0))
		return first == a ? -EFAULT : -ENXIO;
	if (!softmr_frmr_lock(second->mr, second->key, second->access,
			      SINGLE_DEPTH_NESTING)) {
		softmr_frmr_unlock(first->mr);
		return second == a ? -EFAULT : -ENXIO;
	}
	return 0;
}

/*
 * Lock what a copy between @a and @b needs: the ODP spans (every page
 * mapped), then the fast registrations.  Return: 0 with everything held,
 * -EAGAIN to fault (again), -EFAULT or -ENXIO when @a's or @b's key was
 * invalidated.
 */
static int softmr_spans_lock(struct softmr_span *a, u64 ai,
			     struct softmr_span *b, u64 bi, u64 n)
{
	int err = softmr_odp_spans_lock(a, ai, b, bi, n);

	if (err)
		return err;
	err = softmr_frmr_spans_lock(a, b);
	if (err)
		softmr_odp_spans_unlock(a, b);
	return err;
}

static void softmr_spans_unlock(struct softmr_span *a, struct softmr_span *b)
{
	softmr_frmr_spans_unlock(a, b);
	softmr_odp_spans_unlock(a, b);
}

/*
 * The page behind @iova of a (locked) span, or NULL; *@avail: the bytes
 * from @iova that are contiguous there (to the page's end, or for a fast
 * registration with pages smaller than PAGE_SIZE, to its page's end).
 */
static __always_inline struct page *
softmr_span_page(struct softmr_span *s, u64 iova, unsigned int *pofs,
		 u32 *avail)
{
	struct softmr_mr *mr = s->mr;
	struct page *page = NULL;
	phys_addr_t phys;

	*avail = 0;
	switch (mr->kind) {
	case SOFTMR_MR_PINNED:
	case SOFTMR_MR_DM:
		page = softmr_fixed_page(mr, iova, pofs);
		break;
	case SOFTMR_MR_ODP:
	case SOFTMR_MR_IMPLICIT:
		lockdep_assert_held(&s->odp->umem_mutex);
		*pofs = offset_in_page(iova + s->va_off);
		page = softmr_odp_page(s->odp, iova + s->va_off);
		break;
	case SOFTMR_MR_DMABUF:
		page = softmr_dmabuf_page(mr, iova, pofs);
		break;
	case SOFTMR_MR_FRMR:
		return softmr_frmr_page(mr, iova, pofs, avail);
	case SOFTMR_MR_DMA:
		phys = dma_to_phys(mr->sdev->ibdev.dma_device, iova);
		if (!pfn_valid(PHYS_PFN(phys)))
			return NULL;
		*pofs = offset_in_page(phys);
		page = pfn_to_page(PHYS_PFN(phys));
		break;
	case SOFTMR_MR_MW:	/* resolved to its MR (softmr_mw_xfer()) */
		return NULL;
	}
	if (page)
		*avail = PAGE_SIZE - *pofs;
	return page;
}

static int softmr_copy_spans(struct softmr_span *d, u64 diova,
			     struct softmr_span *s, u64 siova, u64 n)
{
	while (n) {
		unsigned int so, dof;
		u32 sa, da;
		struct page *sp = softmr_span_page(s, siova, &so, &sa);
		struct page *dp = softmr_span_page(d, diova, &dof, &da);
		size_t c;
		void *src, *dst;

		if (!sp || !dp)
			return sp ? -ENXIO : -EFAULT;
		c = min3(n, (u64)sa, (u64)da);
		src = kmap_local_page(sp);
		dst = kmap_local_page(dp);
		memcpy(dst + dof, src + so, c);
		kunmap_local(dst);
		kunmap_local(src);
		siova += c;
		diova += c;
		n -= c;
	}
	return 0;
}

/**
 * softmr_mr_xfer_key() - copy bytes from one MR to another
 * @dst: destination MR, referenced; range and permission checked
 * @dkey: the key @dst was found by (a fast registration must still have it)
 * @daccess: IB_ACCESS_* bits the write into @dst needs (rechecked likewise)
 * @diova: first destination byte
 * @src: source MR, referenced; range and permission checked
 * @skey: the key @src was found by
 * @saccess: IB_ACCESS_* bits the read of @src needs
 * @siova: first source byte
 * @len: bytes
 *
 * Sleeps (ODP faults).  The MRs may be the same.
 *
 * Return: 0, -EFAULT when the source could not be read (ODP memory no
 * longer in its mm, or invalidated again and again), -ENXIO when the
 * destination could not be written, -EINTR when the thread is being
 * killed.
 */
int softmr_mr_xfer_key(struct softmr_mr *dst, u32 dkey, int daccess,
		       u64 diova, struct softmr_mr *src, u32 skey,
		       int saccess, u64 siova, u64 len)
{
	unsigned int retries = 0;
	/* without a trusted map every access faults (softmr_compat.h) */
	bool fault = !SOFTMR_ODP_TRUST_MAP;

	if (dst->kind == SOFTMR_MR_MW || src->kind == SOFTMR_MR_MW)
		return softmr_mw_xfer(dst, dkey, daccess, diova, src, skey,
				      saccess, siova, len);
	if (softmr_mr_is_fixed(dst) && softmr_mr_is_fixed(src)) {
		struct softmr_span ss = { .mr = src }, ds = { .mr = dst };

		return softmr_copy_spans(&ds, diova, &ss, siova, len);
	}
	while (len) {
		u64 n = min_t(u64, len, SOFTMR_XFER_CHUNK);
		struct softmr_span ss, ds;
		struct ww_acquire_ctx ww;
		int err;

		err = softmr_span_get(&ss, src, skey, saccess, siova, &n,
				      false, fault);
		if (err)
			return -EFAULT;
		err = softmr_span_get(&ds, dst, dkey, daccess, diova, &n,
				      true, fault);
		if (err) {
			softmr_span_put(&ss);
			return -ENXIO;
		}
		err = softmr_dmabuf_lock(src, dst, &ww);
		if (err) {
			softmr_span_put(&ds);
			softmr_span_put(&ss);
			/* an ODP side that cannot be faulted answers first */
			if (!fault) {
				fault = true;
				continue;
			}
			return src->kind == SOFTMR_MR_DMABUF ? -EFAULT : -ENXIO;
		}
		err = softmr_spans_lock(&ss, siova, &ds, diova, n);
		if (!err) {
			err = softmr_copy_spans(&ds, diova, &ss, siova, n);
			softmr_spans_unlock(&ss, &ds);
		}
		softmr_dmabuf_unlock(src, dst, &ww);
		softmr_span_put(&ds);
		softmr_span_put(&ss);
		if (err == -EAGAIN) {
			if (fatal_signal_pending(current))
				return -EINTR;
			/* not all mapped: fault, then try again */
			if (!fault) {
				fault = true;
				continue;
			}
			if (++retries > SOFTMR_XFER_RETRIES)
				return softmr_mr_is_odp(src) ? -EFAULT : -ENXIO;
			cond_resched();
			continue;
		}
		retries = 0;
		fault = !SOFTMR_ODP_TRUST_MAP;
		if (err)
			return err;
		siova += n;
		diova += n;
		len -= n;
	}
	return 0;
}

/**
 * softmr_mr_atomic_key() - an 8-byte atomic operation on MR memory
 * @mr: the MR, referenced; range and permission checked
 * @key: the key @mr was found by (a fast registration must still have it)
 * @iova: the 8 bytes, 8-byte aligned
 * @cmp_swap: true: compare-and-swap, false: fetch-and-add
 * @compare_add: the compare value, or the addend
 * @swap: the value stored when the compare matches
 * @orig: the value before the operation
 *
 * The operation is a CPU atomic on the memory, so it is atomic with
 * respect to every other softmr atomic and to the CPU (IB_ATOMIC_GLOB).
 *
 * Return: 0, -EINVAL when the memory is not 8-byte aligned, -EFAULT.
 */
int softmr_mr_atomic_key(struct softmr_mr *mr, u32 key, u64 iova,
			 bool cmp_swap, u64 compare_add, u64 swap, u64 *orig)
{
	struct softmr_span s, none = {};
	struct ww_acquire_ctx ww;
	unsigned int pofs;
	struct page *page;
	unsigned int retries = 0;
	u32 avail;
	u64 n = sizeof(u64);
	void *kaddr;
	int err;

	if (mr->kind == SOFTMR_MR_MW)
		return softmr_mw_atomic(mr, key, iova, cmp_swap, compare_add,
					swap, orig);
	do {
		if (retries++ > SOFTMR_XFER_RETRIES)
			return -EFAULT;
		err = softmr_span_get(&s, mr, key, IB_ACCESS_REMOTE_ATOMIC,
				      iova, &n, true, true);
		if (err)
			return err;
		err = softmr_dmabuf_lock(mr, NULL, &ww);
		if (err) {
			softmr_span_put(&s);
			return err;
		}
		err = softmr_spans_lock(&s, iova, &none, 0, n);
		if (err) {
			softmr_dmabuf_unlock(mr, NULL, &ww);
			softmr_span_put(&s);
		}
	} while (err == -EAGAIN);
	if (err)	/* the key was invalidated: nothing is held */
		return -EFAULT;

	page = softmr_span_page(&s, iova, &pofs, &avail);
	if (!page || (pofs & 7) || avail < sizeof(u64)) {
		err = page ? -EINVAL : -EFAULT;
		goto out;
	}
	kaddr = kmap_local_page(page);
	if (cmp_swap)
		*orig = atomic64_cmpxchg(kaddr + pofs, compare_add, swap);
	else
		*orig = atomic64_fetch_add(compare_add, kaddr + pofs);
	kunmap_local(kaddr);
out:
	softmr_spans_unlock(&s, &none);
	softmr_dmabuf_unlock(mr, NULL, &ww);
	softmr_span_put(&s);
	return err;
}
