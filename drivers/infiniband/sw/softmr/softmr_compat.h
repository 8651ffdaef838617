/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Kernel API differences between the kernels softmr builds for: Debian's
 * 6.1 (bookworm), 6.12 (the reference: every #if below keeps 6.12's code
 * as it is) and 7.3.  One source, no forks: a difference is bridged here,
 * or at its one use with a LINUX_VERSION_CODE test that names the release.
 * Releases verified against the headers of 6.1, 6.12, 7.2 and 7.3; a gate
 * between two of those is the upstream release as far as known.
 *
 * A feature a kernel cannot offer answers -EOPNOTSUPP there with its
 * capability bit clear; nothing is stubbed as success.
 */

#ifndef SOFTMR_COMPAT_H
#define SOFTMR_COMPAT_H

#include <linux/version.h>
#include <linux/kconfig.h>
#include <linux/dma-direct.h>
#include <linux/hmm.h>
#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/workqueue.h>
#include <rdma/ib_umem_odp.h>

/* What softmr cannot do without: one message instead of a page of errors. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#error "softmr needs Linux 6.1 or newer"
#endif
#if !IS_ENABLED(CONFIG_INFINIBAND)
#error "softmr needs a kernel with CONFIG_INFINIBAND (y or m)"
#endif
#if !IS_ENABLED(CONFIG_INFINIBAND_USER_ACCESS)
#error "softmr needs a kernel with CONFIG_INFINIBAND_USER_ACCESS (y or m)"
#endif
#if !IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING)
#error "softmr needs a kernel with CONFIG_INFINIBAND_ON_DEMAND_PAGING=y"
#endif
#if !IS_ENABLED(CONFIG_DMA_SHARED_BUFFER)
#error "softmr needs a kernel with CONFIG_DMA_SHARED_BUFFER=y"
#endif

/*
 * 6.5: ib_core refuses a controlled Q_Key (bit 31) to a user without
 * CAP_NET_RAW unless the admin allows it (rdma system set privileged-qkey
 * on); before, softmr refuses it itself, or a user's UD QP could send
 * with the GSI QP's Q_Key.
 */
#define SOFTMR_CORE_CHECKS_QKEY	\
	(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0))

/*
 * 7.1: setup_udp_tunnel_sock() and udp_tunnel_sock_release() take the
 * struct sock instead of the struct socket.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 1, 0)
#define softmr_udp_tunnel_sk(sock)	((sock)->sk)
#else
#define softmr_udp_tunnel_sk(sock)	(sock)
#endif

/* 6.12 moved the unaligned accessors from asm/ to linux/. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/* 6.8: MAX_ORDER became MAX_PAGE_ORDER; before 6.4 it was one past it. */
#ifndef MAX_PAGE_ORDER
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)
#define MAX_PAGE_ORDER (MAX_ORDER - 1)
#else
#define MAX_PAGE_ORDER MAX_ORDER
#endif
#endif

/* 6.3: vm_flags became read-only outside these helpers. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void vm_flags_set(struct vm_area_struct *vma,
				unsigned long flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  unsigned long flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * 6.10: disable_delayed_work_sync() cancels a work and keeps it from being
 * queued again.  Before it there is only cancel_delayed_work_sync(): a QP's
 * kicker (softmr_qp_kick() checks ->dying without a lock) may queue the
 * work again after the cancel, so softmr_destroy_qp() cancels once more
 * after the last reference is gone (softmr_work_quiesce()), when no kicker
 * can run; that second cancel is the disable's job on newer kernels.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 10, 0)
#define disable_delayed_work_sync(dwork) cancel_delayed_work_sync(dwork)
static inline void softmr_work_quiesce(struct delayed_work *dwork)
{
	cancel_delayed_work_sync(dwork);
}
#else
static inline void softmr_work_quiesce(struct delayed_work *dwork) { }
#endif

/*
 * 6.17: WQ_PERCPU names a per-CPU (bound) workqueue; 7.x warns when a
 * workqueue has neither it nor WQ_UNBOUND (Debian's 6.12 has it backported,
 * and needs it not).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define SOFTMR_WQ_PERCPU	WQ_PERCPU
#else
#define SOFTMR_WQ_PERCPU	0
#endif

/* 6.13: hrtimer_setup() sets the callback with the rest. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
static inline void
softmr_hrtimer_setup(struct hrtimer *timer,
		     enum hrtimer_restart (*function)(struct hrtimer *),
		     clockid_t clock_id, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock_id, mode);
	timer->function = function;
}
#else
#define softmr_hrtimer_setup hrtimer_setup
#endif

/* 6.13: MODULE_IMPORT_NS() takes a string. */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
#define SOFTMR_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#else
#define SOFTMR_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
#endif

/*
 * 6.11: create_cq and reg_user_mr_dmabuf take the uverbs attribute bundle
 * instead of the udata (softmr_verbs.c adapts the old signatures).
 * 6.17: reg_user_mr and reg_user_mr_dmabuf take a DMA handle (struct
 * ib_dmah, TPH steering); softmr implements no alloc_dmah, so ib_core has
 * none to pass: one arriving anyway is refused with -EOPNOTSUPP.
 */
#define SOFTMR_CQ_ATTRS		(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0))
#define SOFTMR_HAVE_DMAH	(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0))

/*
 * 6.16: ib_umem_odp keeps its pages in an hmm_dma_map (odp->map.pfn_list,
 * HMM pfns indexed by PAGE_SIZE page, flags HMM_PFN_VALID/WRITE) instead of
 * pfn_list + dma_list (dma_list per odp->page_shift unit with
 * ODP_READ/WRITE_ALLOWED_BIT set under umem_mutex once a page is mapped).
 * ib_umem_odp_map_dma_and_lock() takes HMM_PFN_WRITE for write access and
 * no longer DMA-maps: the driver does (mlx5: hmm_dma_map_pfn()).  softmr
 * copies with the CPU, so it needs only the pages.  A VALID entry is
 * written by hmm_range_fault() outside umem_mutex before the notifier
 * sequence is checked, so on these kernels no entry is trusted without
 * ib_umem_odp_map_dma_and_lock() (SOFTMR_ODP_TRUST_MAP false): every
 * access revalidates the range under umem_mutex; the entries only tell
 * whether that was a fault (for the counters).
 */
#define SOFTMR_ODP_HMM_MAP	(LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0))
/*
 * Not yet: on these kernels ib_umem_odp_map_dma_and_lock() no longer
 * counts odp->npages and invalidation leaves the pfn entries alone unless
 * the driver unmaps them, so softmr's span checks (which trust the entries
 * between faulting one MR and locking another) would reach freed pages.
 * Until softmr validates spans by the notifier sequence (or with private
 * pfn arrays, as the HMM documentation shows), ODP is off there: ODP
 * registration answers -EOPNOTSUPP and the ODP capabilities stay clear.
 */
#define SOFTMR_ODP_SUPPORTED	(!SOFTMR_ODP_HMM_MAP)
#if SOFTMR_ODP_HMM_MAP
#define SOFTMR_ODP_READ		HMM_PFN_VALID
#define SOFTMR_ODP_WRITE	HMM_PFN_WRITE
#define SOFTMR_ODP_TRUST_MAP	false
static inline struct page *softmr_odp_page(struct ib_umem_odp *odp, u64 va)
{
	return hmm_pfn_to_page(odp->map.pfn_list[(va - ib_umem_start(odp)) >>
						 PAGE_SHIFT]);
}

static inline u64 softmr_odp_state(struct ib_umem_odp *odp, unsigned long i)
{
	return odp->map.pfn_list[i << (odp->page_shift - PAGE_SHIFT)];
}
#else
#define SOFTMR_ODP_READ		ODP_READ_ALLOWED_BIT
#define SOFTMR_ODP_WRITE	ODP_WRITE_ALLOWED_BIT
#define SOFTMR_ODP_TRUST_MAP	true
/*
 * The page behind @va, from dma_list: ib_core writes dma_list only under
 * umem_mutex, while hmm_range_fault() fills pfn_list without it; a fault
 * racing an invalidation can leave a freed page's pfn there for a moment
 * after another fault mapped the new page.  softmr's DMA device maps
 * directly, so the address leads back to the page.
 */
static inline struct page *softmr_odp_page(struct ib_umem_odp *odp, u64 va)
{
	u64 off = va - ib_umem_start(odp);
	dma_addr_t dma = odp->dma_list[off >> odp->page_shift] &
			 ODP_DMA_ADDR_MASK;
	phys_addr_t phys = dma_to_phys(odp->umem.ibdev->dma_device, dma);

	return pfn_to_page(PHYS_PFN(phys) +
			   ((off & (BIT_ULL(odp->page_shift) - 1)) >>
			    PAGE_SHIFT));
}

static inline u64 softmr_odp_state(struct ib_umem_odp *odp, unsigned long i)
{
	return odp->dma_list[i];
}
#endif

/* 7.1: dma_buf_attach_ops.move_notify became invalidate_mappings. */
#define SOFTMR_DMABUF_INVALIDATE (LINUX_VERSION_CODE >= KERNEL_VERSION(7, 1, 0))

/*
 * 7.2 (present in 7.2, absent in 6.12): ib_umem_get() became
 * ib_umem_get_va(); ops.resize_cq became resize_user_cq (unsigned cqe);
 * ib_device_get_by_name() is no longer exported (ib_register_device()
 * still refuses a name in use, with -ENFILE).
 */
#define SOFTMR_KERNEL_72	(LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0))
#if SOFTMR_KERNEL_72
#define ib_umem_get(dev, addr, size, access) \
	ib_umem_get_va(dev, addr, size, access)
#endif

/**
 * softmr_resched_wanted() - does the scheduler want this CPU back?
 *
 * need_resched(), or on kernels with lazy preemption (7.x) the lazy
 * request that the next tick turns into a preemption.
 *
 * Return: true when the task should give the CPU up soon.
 */
static inline bool softmr_resched_wanted(void)
{
#ifdef TIF_NEED_RESCHED_LAZY
	if (test_thread_flag(TIF_NEED_RESCHED_LAZY))
		return true;
#endif
	return need_resched();
}

#endif /* SOFTMR_COMPAT_H */
