/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * softmr: a software RDMA device with the full memory registration family.
 *
 * Objects, their lifetime and where each verb lives are described in
 * Documentation/infiniband/softmr.rst.
 */

#ifndef SOFTMR_H
#define SOFTMR_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/genalloc.h>
#include <linux/list.h>
#include <linux/refcount.h>
#include <linux/xarray.h>
#include <linux/netdevice.h>
#include <linux/platform_device.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/softmr-abi.h>

#define SOFTMR_DRIVER_NAME	"softmr"
#define SOFTMR_DRIVER_VERSION	0x000100	/* 0.1.0 */

/* Device limits; only objects that exist are advertised as non-zero. */
#define SOFTMR_VENDOR_ID	0xffffff	/* no OUI: a software device */
#define SOFTMR_VENDOR_PART_ID	0x5346		/* "SF" */
#define SOFTMR_HW_VER		1
/* fw_ver as rdma-core prints it: major << 32 | minor << 16 | patch */
#define SOFTMR_FW_VER		(((u64)(SOFTMR_DRIVER_VERSION >> 16) << 32) | \
				 ((SOFTMR_DRIVER_VERSION >> 8 & 0xff) << 16) | \
				 (SOFTMR_DRIVER_VERSION & 0xff))
#define SOFTMR_MAX_PD		0x10000
#define SOFTMR_MAX_MR		0x100000
#define SOFTMR_MAX_CQ		0x4000
#define SOFTMR_MAX_CQE		0xffff
#define SOFTMR_MAX_MR_SIZE	BIT_ULL(46)	/* 64 TiB */
/* MR keys: index << 8 | key; index 0 is never used */
#define SOFTMR_MR_INDEX_BITS	24
#define SOFTMR_MR_KEY_BITS	8
/* Implicit ODP MRs map the address space in children of this size. */
#define SOFTMR_IMPLICIT_CHILD_SHIFT	24		/* 16 MiB */
#define SOFTMR_IMPLICIT_CHILD_SIZE	BIT(SOFTMR_IMPLICIT_CHILD_SHIFT)
#define SOFTMR_GID_TBL_LEN	1024
#define SOFTMR_PKEY_TBL_LEN	1
#define SOFTMR_MAX_VL_NUM	1

/* Device counters, shown by `rdma statistic` (softmr_stats.c). */
enum softmr_counter {
	SOFTMR_CNT_MR_REG,
	SOFTMR_CNT_MR_DEREG,
	SOFTMR_CNT_ODP_FAULTS,
	SOFTMR_CNT_ODP_FAULT_PAGES,
	SOFTMR_CNT_ODP_INVALIDATIONS,
	SOFTMR_CNT_ODP_PREFETCHES,
	SOFTMR_CNT_ODP_PREFETCH_ERRORS,
	SOFTMR_CNT_IMPLICIT_CHILDREN,
	SOFTMR_CNT_IMPLICIT_CHILD_RELEASES,
	SOFTMR_CNT_DM_ALLOCS,
	SOFTMR_CNT_DM_FREES,
	SOFTMR_CNT_DM_BYTES,		/* in use now */
	SOFTMR_CNT_DM_MRS,
	SOFTMR_NUM_COUNTERS
};

/**
 * struct softmr_dev - one softmr RDMA device
 * @ibdev: the ib_core device, first so ib_alloc_device() can allocate us
 * @pdev: platform device that owns the DMA setup; parent and dma_device
 * @ndev: netdev the device is bound to, held for the device's lifetime
 * @ndev_tracker: reference tracker for @ndev
 * @list: entry in the driver's device list
 * @attr: device attributes reported by query_device
 * @port_lock: protects @port_state and the status page
 * @port_state: current IB port state, derived from the netdev
 * @status: read-only page mapped by user contexts (struct softmr_status_page)
 * @pd_count: PDs allocated now
 * @mr_xa: MRs by key index; lookups under RCU take a reference
 * @mr_next: next index tried by the cyclic allocator
 * @mr_count: MRs registered now
 * @cq_count: CQs allocated now
 * @counters: enum softmr_counter
 * @dm_pool: device memory allocator: offsets into @dm_mem (plus PAGE_SIZE)
 * @dm_mem: device memory, vmalloc_user()
 * @dm_size: its size (max_dm_size)
 */
struct softmr_dev {
	struct ib_device ibdev;
	struct platform_device *pdev;
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	struct list_head list;
	struct ib_device_attr attr;

	spinlock_t port_lock;		/* port_state and the status page */
	enum ib_port_state port_state;
	struct softmr_status_page *status;

	atomic_t pd_count;

	struct xarray mr_xa;
	u32 mr_next;
	atomic_t mr_count;
	atomic_t cq_count;

	atomic64_t counters[SOFTMR_NUM_COUNTERS];

	struct gen_pool *dm_pool;
	void *dm_mem;
	size_t dm_size;
};

static inline void softmr_count(struct softmr_dev *sdev, enum softmr_counter c,
				s64 n)
{
	atomic64_add(n, &sdev->counters[c]);
}

/**
 * struct softmr_ucontext - a user context (one open of the device)
 * @ibuc: the ib_core context
 * @status_entry: mmap entry of the device status page for this context
 */
struct softmr_ucontext {
	struct ib_ucontext ibuc;
	struct rdma_user_mmap_entry *status_entry;
};

/**
 * struct softmr_pd - a protection domain
 * @ibpd: the ib_core PD
 */
struct softmr_pd {
	struct ib_pd ibpd;
};

/* How an MR reaches its memory. */
enum softmr_mr_kind {
	SOFTMR_MR_DMA,		/* get_dma_mr: kernel DMA addresses */
	SOFTMR_MR_PINNED,	/* ib_umem_get: pages pinned at registration */
	SOFTMR_MR_ODP,		/* explicit ODP: faulted on access */
	SOFTMR_MR_IMPLICIT,	/* implicit ODP: the whole address space */
	SOFTMR_MR_DM,		/* device memory: zero based */
};

/**
 * struct softmr_dm - a device memory allocation
 * @ibdm: the ib_core DM
 * @offset: offset in the device's DM area, page aligned
 * @size: bytes reserved (whole pages)
 * @mmap_entry: the pages' mmap entry for the owning context
 */
struct softmr_dm {
	struct ib_dm ibdm;
	u64 offset;
	u64 size;
	struct rdma_user_mmap_entry *mmap_entry;
};

static inline struct softmr_dm *to_sdm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct softmr_dm, ibdm);
}

/**
 * struct softmr_mr - a memory region
 * @ibmr: the ib_core MR; lkey == rkey
 * @sdev: the device
 * @kind: enum softmr_mr_kind
 * @access: IB_ACCESS_* flags (may change by rereg, read with READ_ONCE)
 * @iova: first iova of the MR as keys address it
 * @length: length in bytes
 * @va: user virtual address of the byte at @iova (ODP)
 * @page_offset: offset of the first byte in its page (pinned)
 * @umem: pinned or ODP umem (for implicit, the root's)
 * @pages: pinned: every PAGE_SIZE page of the MR, in order
 * @npages: entries in @pages
 * @dm_kaddr: DM MRs: kernel address of the MR's first byte
 * @odp: explicit ODP umem, or the implicit root
 * @children: implicit: struct softmr_odp_child by chunk index
 * @imp_lock: implicit: serialises child creation, use and release
 * @imp_spin: implicit: guards @imp_dying against queued releases
 * @imp_dying: implicit: deregistration started, release no child
 * @users: references: one for the registration, one per lookup
 * @released: completed when @users drops to zero
 * @rcu: frees the MR after concurrent RCU lookups are done
 */
struct softmr_mr {
	struct ib_mr ibmr;
	struct softmr_dev *sdev;
	enum softmr_mr_kind kind;
	int access;
	u64 iova;
	u64 length;
	u64 va;
	unsigned long page_offset;
	struct ib_umem *umem;
	struct page **pages;
	unsigned long npages;
	void *dm_kaddr;
	struct ib_umem_odp *odp;
	struct xarray children;
	struct mutex imp_lock;		/* children: creation, users, release */
	spinlock_t imp_spin;		/* imp_dying vs. queued releases */
	bool imp_dying;
	refcount_t users;
	struct completion released;
	struct rcu_head rcu;
};

/**
 * struct softmr_cq_ring - the memory of a CQ
 * @hdr: struct softmr_ring_hdr, then @num struct ib_uverbs_wc
 * @bytes: length of the vmalloc_user() area
 * @num: slots, a power of two
 * @prod: the producer index; the kernel's own, copied to @hdr
 * @qps: kernel CQs: the QP of each slot (ib_wc.qp)
 */
struct softmr_cq_ring {
	struct softmr_ring_hdr *hdr;
	size_t bytes;
	u32 num;
	u32 prod;
	struct ib_qp **qps;
};

/**
 * struct softmr_cq - a completion queue
 * @ibcq: the ib_core CQ
 * @lock: producer side, arming and resize
 * @ring: the ring
 * @notify: armed for IB_CQ_NEXT_COMP or IB_CQ_SOLICITED, or 0
 * @is_user: mapped by a user context (polled there)
 * @mmap_entry: user CQs: the ring's mmap entry
 */
struct softmr_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* see above */
	struct softmr_cq_ring ring;
	u8 notify;
	bool is_user;
	struct rdma_user_mmap_entry *mmap_entry;
};

static inline struct softmr_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct softmr_cq, ibcq);
}

/* Direction of a copy through the MR access API. */
enum softmr_copy_dir {
	SOFTMR_FROM_MR,		/* read the MR into a buffer */
	SOFTMR_TO_MR,		/* write a buffer into the MR */
};

static inline struct softmr_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct softmr_mr, ibmr);
}

static inline struct softmr_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct softmr_dev, ibdev);
}

static inline struct softmr_ucontext *to_suc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct softmr_ucontext, ibuc);
}

static inline struct softmr_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct softmr_pd, ibpd);
}

/* softmr_dev.c: device creation, registration and netdev tracking */
int softmr_dev_add(const char *name, struct net_device *ndev);
struct softmr_dev *softmr_dev_get_by_netdev(struct net_device *ndev);
void softmr_dev_unregister_all(void);
void softmr_dealloc_driver(struct ib_device *ibdev);
void softmr_port_update(struct softmr_dev *sdev);
int softmr_netdev_event(struct notifier_block *nb, unsigned long event,
			void *arg);

/* softmr_cq.c: completion queues */
int softmr_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		     struct uverbs_attr_bundle *attrs);
int softmr_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int softmr_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int softmr_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int softmr_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int softmr_cq_post(struct softmr_cq *cq, const struct ib_uverbs_wc *wc,
		   struct ib_qp *qp, bool solicited);

/* softmr_mr.c: registration, keys and lookup */
struct ib_mr *softmr_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *softmr_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				 u64 iova, int access, struct ib_udata *udata);
struct ib_mr *softmr_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				   u64 length, u64 iova, int access,
				   struct ib_pd *ibpd, struct ib_udata *udata);
int softmr_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct softmr_mr *softmr_mr_get(struct softmr_dev *sdev, u32 key);
void softmr_mr_put(struct softmr_mr *mr);
void softmr_mr_init_dev(struct softmr_dev *sdev);
int softmr_check_access_flags(int access);

/* softmr_dm.c: device memory */
extern const struct uapi_definition softmr_dm_defs[];
int softmr_dm_init_dev(struct softmr_dev *sdev);
void softmr_dm_cleanup_dev(struct softmr_dev *sdev);
struct ib_dm *softmr_alloc_dm(struct ib_device *ibdev,
			      struct ib_ucontext *ibuc,
			      struct ib_dm_alloc_attr *attr,
			      struct uverbs_attr_bundle *attrs);
int softmr_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);
struct ib_mr *softmr_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			       struct ib_dm_mr_attr *attr,
			       struct uverbs_attr_bundle *attrs);
struct softmr_mr *softmr_mr_create(struct softmr_dev *sdev,
				   struct ib_pd *ibpd, int access);
int softmr_mr_commit(struct softmr_mr *mr);

/* softmr_mr_access.c: the one way data movers reach MR memory */
int softmr_mr_check(struct softmr_mr *mr, u64 iova, u64 len, int access);
int softmr_mr_copy(struct softmr_mr *mr, u64 iova, void *buf, u64 len,
		   enum softmr_copy_dir dir, int access);

/* softmr_odp.c: on-demand paging, implicit children, advise_mr */
extern const struct mmu_interval_notifier_ops softmr_odp_ops;
int softmr_odp_init_implicit(struct softmr_mr *mr);
void softmr_odp_release_implicit(struct softmr_mr *mr);
int softmr_odp_copy(struct softmr_mr *mr, u64 iova, void *buf, u64 len,
		    enum softmr_copy_dir dir);
int softmr_advise_mr(struct ib_pd *ibpd,
		     enum ib_uverbs_advise_mr_advice advice, u32 flags,
		     struct ib_sge *sg_list, u32 num_sge,
		     struct uverbs_attr_bundle *attrs);
int softmr_odp_wq_init(void);
void softmr_odp_wq_destroy(void);
void softmr_odp_flush(void);

/* softmr_stats.c: counters and restrack details */
struct rdma_hw_stats *softmr_alloc_hw_port_stats(struct ib_device *ibdev,
						 u32 port_num);
int softmr_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			u32 port_num, int index);
int softmr_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);

/* softmr_verbs.c: device, port and PD verbs */
extern const struct ib_device_ops softmr_dev_ops;

/* softmr_mmap.c: user mappings of kernel memory */
struct rdma_user_mmap_entry *
softmr_mmap_entry_insert(struct ib_ucontext *ibuc, void *kaddr, size_t size,
			 bool writable);
int softmr_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void softmr_mmap_free(struct rdma_user_mmap_entry *rdma_entry);

/* softmr_ioctl.c: the driver-specific uverbs namespace */
extern const struct uapi_definition softmr_uapi_defs[];
void softmr_fill_query_device_resp(struct softmr_dev *sdev,
				   struct softmr_ucontext *suc,
				   struct softmr_query_device_resp *resp);

#endif /* SOFTMR_H */
