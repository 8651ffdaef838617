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
#include <linux/dma-resv.h>
#include <linux/iosys-map.h>
#include <linux/genalloc.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/refcount.h>
#include <linux/rwsem.h>
#include <linux/xarray.h>
#include <linux/netdevice.h>
#include <linux/platform_device.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/softmr-abi.h>

#include "softmr_compat.h"

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
#define SOFTMR_MAX_CQE		0xfffff
#define SOFTMR_MAX_MR_SIZE	BIT_ULL(46)	/* 64 TiB */
#define SOFTMR_MAX_QP		0x10000
#define SOFTMR_MAX_QP_WR	0x4000
#define SOFTMR_MAX_SGE		32
#define SOFTMR_MAX_INLINE	512
#define SOFTMR_MAX_SRQ		0x4000
#define SOFTMR_MAX_SRQ_WR	0x4000
#define SOFTMR_MAX_AH		0x10000
#define SOFTMR_MAX_RD_ATOM	128
#define SOFTMR_MAX_MSG_SZ	0x80000000U	/* 2 GiB */
/* QP numbers: 1 is the GSI QP of each device, others from this range */
#define SOFTMR_QPN_MIN		0x10
#define SOFTMR_QPN_MAX		0xffffff
/* MR keys: index << 8 | key, both random; index 0 is never used */
#define SOFTMR_MR_INDEX_BITS	24
#define SOFTMR_MR_KEY_BITS	8
/*
 * Implicit ODP MRs map the address space in children of this size, and
 * explicit ODP MRs larger than one child map their range the same way.
 */
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
	SOFTMR_CNT_SEND_WQES,
	SOFTMR_CNT_RECV_WQES,
	SOFTMR_CNT_TX_BYTES,
	SOFTMR_CNT_RNR_WAITS,
	SOFTMR_CNT_ERR_COMPLETIONS,
	SOFTMR_CNT_UD_DROPS,
	SOFTMR_CNT_DMABUF_MRS,
	SOFTMR_CNT_DMABUF_MOVES,
	SOFTMR_CNT_DMABUF_REMAPS,
	SOFTMR_CNT_FAST_REGS,
	SOFTMR_CNT_LOCAL_INVS,
	SOFTMR_CNT_REMOTE_INVS,
	SOFTMR_CNT_MW_BINDS,
	SOFTMR_CNT_WIRE_TX_PACKETS,
	SOFTMR_CNT_WIRE_RX_PACKETS,
	SOFTMR_CNT_WIRE_RX_MALFORMED,
	SOFTMR_CNT_WIRE_RX_DROPPED,
	SOFTMR_CNT_WIRE_TIMEOUTS,
	SOFTMR_CNT_WIRE_NAKS_RCVD,
	SOFTMR_CNT_WIRE_NAKS_SENT,
	SOFTMR_CNT_WIRE_DUP_REQUESTS,
	SOFTMR_CNT_SQ_POLLS,
	SOFTMR_CNT_SEND_DOORBELLS,
	SOFTMR_CNT_SQ_FAST_WRITES,
	SOFTMR_CNT_SQ_POLL_JOINS,
	SOFTMR_CNT_RECV_DOORBELLS,
	SOFTMR_CNT_RNR_POLL_RESUMES,
	SOFTMR_CNT_SQ_DEFER_KICKS,
	SOFTMR_CNT_SQ_FAST_SENDS,
	SOFTMR_NUM_COUNTERS
};

/**
 * struct softmr_counters - one CPU's share of a device's counters
 * @v: by enum softmr_counter; a counter is the sum over the CPUs
 *	(softmr_counter_read()), so counting never bounces a cache line
 */
struct softmr_counters {
	s64 v[SOFTMR_NUM_COUNTERS];
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
 * @mr_count: MRs registered now
 * @mw_count: memory windows allocated now
 * @cq_count: CQs allocated now
 * @qp_xa: QPs by QP number (1: the GSI QP); lookups take a reference
 * @qp_next: next QP number tried by the cyclic allocator
 * @qp_count: QPs now
 * @sq_pollers: send queue pollers running (softmr_sq_poll.c)
 * @sq_poll_refused: a QP was refused a poller since the running ones last
 *	looked (softmr_sq_poll.c)
 * @odp_ok: ODP offered: the kernel allows it and the DMA setup maps pages
 *	one to one (softmr_odp_page())
 * @srq_count: SRQs now
 * @ah_xa: address vectors by AH number, RCU
 * @ah_next: next AH number tried
 * @ah_count: AHs now
 * @odp_pages: pages of address space ODP umems cover now (ib_core keeps
 *	16 bytes for each), bounded by odp_max_pages
 * @counters: per CPU, by enum softmr_counter (softmr_count())
 * @dm_area: the device memory, referenced (allocations outlive the device)
 * @dm_pool: device memory allocator: offsets into @dm_mem (plus PAGE_SIZE)
 * @dm_mem: device memory, physically contiguous
 * @dm_size: its size (max_dm_size)
 * @wire: on the wire (softmr_net.c): UD datagrams to other hosts
 * @wire6: and its namespace's IPv6 socket has port 4791: IPv6 GIDs too
 * @force_wire: traffic to softmr devices on this host takes the wire too
 *	(sysfs force_wire, for testing: softmr_wire_takes())
 * @wire_net: the network namespace whose socket it uses (NULL: detached)
 * @wire_entry: in that namespace's list of wire devices
 * @wire_rxq: received packets waiting for @wire_rx_work (queued under the
 *	device list lock, holding no device reference: softmr_dev_wire_rx())
 * @wire_rx_work: delivers @wire_rxq in process context
 * @wire_conn_queued: received packets waiting on the device's connections'
 *	queues, all together (SOFTMR_WIRE_CONN_QUEUED_MAX at most)
 * @wire_ud_queued: received datagrams waiting for UD QPs' workers, all
 *	together (softmr_wire_ud.c)
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
	atomic_t mr_count;
	atomic_t mw_count;
	atomic_t cq_count;

	struct xarray qp_xa;
	u32 qp_next;
	atomic_t qp_count;
	atomic_t sq_pollers;
	atomic_t sq_poll_refused;
	bool odp_ok;
	atomic_t srq_count;
	struct xarray ah_xa;
	u32 ah_next;
	atomic_t ah_count;

	atomic64_t odp_pages;
	struct softmr_counters __percpu *counters;

	struct softmr_dm_area *dm_area;
	struct gen_pool *dm_pool;
	void *dm_mem;
	size_t dm_size;
	bool wire;
	bool wire6;
	bool force_wire;
	struct net *wire_net;
	struct list_head wire_entry;
	struct sk_buff_head wire_rxq;
	struct work_struct wire_rx_work;
	atomic_t wire_conn_queued;
	atomic_t wire_ud_queued;
};

static inline void softmr_count(struct softmr_dev *sdev, enum softmr_counter c,
				s64 n)
{
	this_cpu_add(sdev->counters->v[c], n);
}

/**
 * struct softmr_ucontext - a user context (one open of the device)
 * @ibuc: the ib_core context
 * @status_entry: mmap entry of the device status page for this context
 * @doorbell: what the context's doorbell files reach (softmr_doorbell.c)
 * @sq_poll_lock: guards @sq_poller, @sq_poll_joining and its QPs'
 *	sq_poll_member (softmr_sq_poll.c)
 * @sq_poller: the QP whose send queue poller runs for the context, or NULL
 * @sq_poll_joining: QPs for that poller to watch too, each with a reference
 * @sq_poll_members: QPs with sq_poll_member set (softmr_sq_poll.c bounds it)
 */
struct softmr_ucontext {
	struct ib_ucontext ibuc;
	struct rdma_user_mmap_entry *status_entry;
	struct softmr_doorbell *doorbell;
	spinlock_t sq_poll_lock;	/* sq_poller, sq_poll_joining */
	struct softmr_qp *sq_poller;
	struct list_head sq_poll_joining;
	unsigned int sq_poll_members;
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
	SOFTMR_MR_DMABUF,	/* dma-buf import, dynamic or pinned */
	SOFTMR_MR_FRMR,		/* alloc_mr: fast registration by REG_MR */
	SOFTMR_MR_MW,		/* a memory window's key-table entry */
};

/* Memory windows a device offers. */
#define SOFTMR_MAX_MW		BIT(16)

/* Fast registration: page lists of up to this many pages. */
#define SOFTMR_MAX_FRMR_PAGES	512

/**
 * struct softmr_frmr - the page lists of a fast-registration MR
 * @map: what ib_map_mr_sg() built: DMA addresses of @map_n pages
 * @map_n: entries in @map
 * @map_shift: log2 of the page size of @map
 * @map_first: offset of the MR's first byte in @map[0]
 * @pages: the registered list, copied from @map by a REG_MR work request
 * @npages: entries in @pages
 * @page_shift: log2 of the registered page size
 * @first: offset of the registered first byte in @pages[0]
 * @max_pages: room in each list (alloc_mr's max_num_sg)
 * @key: the key of the last registration (at first the MR's lkey): what
 *	LOCAL_INV and SEND_WITH_INV must name, valid or not
 * @rwsem: written by REG_MR and invalidations; read by data movers over
 *	each piece they copy, after checking that the MR's key is still the
 *	one their access started with
 *
 * The registration (@pages, @npages, @page_shift, @first and the MR's
 * iova, length and access) changes only while the MR is invalid (its key
 * is 0) and under @rwsem: an invalidation that completed has waited for
 * every copy through the old key, and none starts after it.
 */
struct softmr_frmr {
	u64 *map;
	u32 map_n;
	u32 map_shift;
	u32 map_first;
	u64 *pages;
	u32 npages;
	u32 page_shift;
	u32 first;
	u32 max_pages;
	u32 key;
	struct rw_semaphore rwsem;
};

/**
 * struct softmr_dm_area - a device's device memory and its allocator
 * @ref: the device's reference and one per allocation's memory
 * @mem: physically contiguous memory (alloc_pages_exact())
 * @size: its length
 * @pool: the allocator
 */
struct softmr_dm_area {
	struct kref ref;
	void *mem;
	size_t size;
	struct gen_pool *pool;
};

/**
 * struct softmr_dm_chunk - the memory of one DM allocation
 * @ref: the DM object's, its mmap entry's (until the last mapping goes)
 *	and each exported dma-buf's; the range returns to the pool with the
 *	last, so no mapping ever sees a later allocation's bytes
 * @area: the area, referenced
 * @addr: the pool address
 * @offset: offset in the area
 * @size: whole pages
 */
struct softmr_dm_chunk {
	struct kref ref;
	struct softmr_dm_area *area;
	unsigned long addr;
	u64 offset;
	u64 size;
};

/**
 * struct softmr_dm - a device memory allocation
 * @ibdm: the ib_core DM
 * @offset: offset in the device's DM area, page aligned
 * @size: bytes reserved (whole pages)
 * @chunk: the memory, referenced
 * @mmap_entry: the pages' mmap entry for the owning context
 */
struct softmr_dm {
	struct ib_dm ibdm;
	u64 offset;
	u64 size;
	struct softmr_dm_chunk *chunk;
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
 * @dmabuf: dma-buf MRs: the import
 * @dmabuf_offset: dma-buf MRs: offset of the MR's first byte in the buffer
 * @dmabuf_map: dma-buf MRs: the exporter's vmap of the buffer, while mapped
 * @dmabuf_mapped: dma-buf MRs: @dmabuf_map is valid (under the dma_resv lock)
 * @dmabuf_pinned: dma-buf MRs: a pinned import, mapped for its lifetime
 * @dmabuf_writable: dma-buf MRs: imported through an fd opened for writing
 * @frmr: fast-registration MRs: the page lists
 * @mw: memory windows' key-table entries: the window
 * @mw_lock: guards @mw_bound and @mw_closed, and binds against rereg
 * @mw_bound: memory windows bound to this MR now
 * @mw_closed: dereg or rereg started: no window may bind
 * @key: the key that reaches this MR now (softmr_mr_get()): its lkey; for
 *	fast-registration MRs the key of the last REG_MR, or 0 while invalid
 * @unpublished: dereg started: the key table no longer has it, and a key
 *	cache may not hand it out again (softmr_key_cache_get())
 * @odp: explicit ODP umem, or the root of a chunked ODP MR (implicit, or
 *	explicit and larger than one child: softmr_odp_chunked())
 * @children: chunked ODP: struct softmr_odp_child by chunk index
 * @imp_lock: chunked ODP: serialises child creation, use and release
 * @imp_spin: chunked ODP: guards @imp_dying against queued releases
 * @imp_dying: chunked ODP: deregistration started, release no child
 * @imp_children: implicit: children now; under @imp_lock
 * @odp_charged: explicit ODP: pages charged by softmr_odp_charge()
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
	struct ib_umem_dmabuf *dmabuf;
	u64 dmabuf_offset;
	struct iosys_map dmabuf_map;
	bool dmabuf_mapped;
	bool dmabuf_pinned;
	bool dmabuf_writable;
	struct softmr_frmr *frmr;
	struct softmr_mw *mw;
	spinlock_t mw_lock;		/* mw_bound, mw_closed */
	unsigned int mw_bound;
	bool mw_closed;
	u32 key;
	bool unpublished;
	struct ib_umem_odp *odp;
	struct xarray children;
	struct mutex imp_lock;		/* children: creation, users, release */
	spinlock_t imp_spin;		/* imp_dying vs. queued releases */
	bool imp_dying;
	unsigned int imp_children;
	u64 odp_charged;
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
 * @entry: user CQs: the ring's mmap entry, which owns @hdr
 */
struct softmr_cq_ring {
	struct softmr_ring_hdr *hdr;
	size_t bytes;
	u32 num;
	u32 prod;
	struct ib_qp **qps;
	struct rdma_user_mmap_entry *entry;
};

/**
 * struct softmr_cq - a completion queue
 * @ibcq: the ib_core CQ
 * @lock: producer side, arming and resize
 * @ring: the ring
 * @notify: armed for IB_CQ_NEXT_COMP or IB_CQ_SOLICITED, or 0
 * @is_user: mapped by a user context (polled there)
 * @overflowed: the ring overflowed: IB_EVENT_CQ_ERR was reported, later
 *	completions are dropped silently
 */
struct softmr_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* see above */
	struct softmr_cq_ring ring;
	u8 notify;
	bool is_user;
	bool overflowed;
};

static inline struct softmr_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct softmr_cq, ibcq);
}

struct softmr_req;

/**
 * struct softmr_sgl - the MRs a WQE's SGEs name, looked up and checked
 * @num: entries
 * @len: total bytes
 * @mr: the MRs, referenced
 * @sge: the SGEs (zero-length ones left out)
 */
struct softmr_sgl {
	u32 num;
	u64 len;
	struct softmr_mr *mr[SOFTMR_MAX_SGE];
	struct softmr_sge sge[SOFTMR_MAX_SGE];
};

/**
 * struct softmr_wq - a work queue ring (send, receive or shared receive)
 * @hdr: struct softmr_wq_hdr, then @num WQEs of @stride bytes
 * @bytes: length of the vmalloc_user() area
 * @num: slots, a power of two
 * @stride: bytes per WQE, a power of two
 * @max_sge: SGEs a WQE may carry
 * @cons: the kernel's consumer index: next WQE to take
 * @prod: kernel queues: the producer index of the post verbs
 * @post_lock: kernel queues: serialises the post verbs
 * @lock: the consumer side: WQEs are taken and executed under it
 * @wqe: copy of the WQE being executed (under @lock)
 * @sgl: scratch SG list of the consumer (under @lock)
 * @is_user: the ring is mapped by a user context
 * @mmap_entry: user rings: the mmap entry, which owns @hdr
 * @held: WQEs taken (@cons is past them) whose slots are not yet free:
 *	send WQEs in flight on the wire (softmr_wq_hold())
 * @rnr_waiters: receive queues: the QPs in an RNR wait for a WQE here
 *	(softmr_rnr.c, under softmr_rnr_lock)
 * @rnr_asked: a waiter asked the receiver to ring (rnr_waiting); the
 *	kernel's own copy of the flag, which a swapped ring keeps
 */
struct softmr_wq {
	struct softmr_wq_hdr *hdr;
	size_t bytes;
	u32 num;
	u32 stride;
	u32 max_sge;
	u32 cons;
	u32 prod;
	spinlock_t post_lock;		/* kernel producers */
	struct mutex lock;		/* consumer */
	void *wqe;
	struct softmr_sgl *sgl;
	bool is_user;
	struct rdma_user_mmap_entry *mmap_entry;
	u32 held;
	struct list_head rnr_waiters;
	bool rnr_asked;
};

/**
 * struct softmr_srq - a shared receive queue
 * @ibsrq: the ib_core SRQ
 * @rq: its ring
 * @limit: armed limit (IB_SRQ_LIMIT), 0 when not armed; under @rq.lock
 */
struct softmr_srq {
	struct ib_srq ibsrq;
	struct softmr_wq rq;
	u32 limit;
};

static inline struct softmr_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct softmr_srq, ibsrq);
}

/**
 * struct softmr_av - where a UD send or an RC connection goes
 * @dgid: destination GID
 * @sgid: source GID (reported to the receiver in the GRH)
 * @gid_type: enum ib_gid_type of the source GID
 * @sgid_index: its index
 * @traffic_class: GRH traffic class
 * @hop_limit: GRH hop limit
 * @flow_label: GRH flow label
 * @pd: protection domain of the AH (UD sends must match)
 * @upper: the source GID belongs to a netdev stacked on the device's
 *	other than a VLAN on it (a macvlan, a VLAN on a VLAN): not on the
 *	wire (its packets would leave out of the wrong netdev)
 * @vlan_ifindex: the source GID belongs to a VLAN on the device's netdev:
 *	that VLAN netdev's ifindex (0: the device's own netdev's GID)
 * @vlan_id: that VLAN's id
 * @rcu: freed after concurrent lookups
 */
struct softmr_av {
	union ib_gid dgid;
	union ib_gid sgid;
	enum ib_gid_type gid_type;
	u8 sgid_index;
	u8 traffic_class;
	u8 hop_limit;
	u32 flow_label;
	struct ib_pd *pd;
	bool upper;
	int vlan_ifindex;
	u16 vlan_id;
	struct rcu_head rcu;
};

/**
 * struct softmr_ah - an address handle
 * @ibah: the ib_core AH
 * @av: its address vector, reachable by @num
 * @num: number UD WQEs name it by
 */
struct softmr_ah {
	struct ib_ah ibah;
	struct softmr_av *av;
	u32 num;
};

static inline struct softmr_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct softmr_ah, ibah);
}

/**
 * struct softmr_qp - a queue pair
 * @ibqp: the ib_core QP
 * @sdev: the device
 * @users: references: one for the QP number, one per engine lookup
 * @released: completed when @users drops to zero
 * @sq: send queue
 * @rq: receive queue (unused with an SRQ)
 * @srq: the SRQ, or NULL
 * @state_lock: guards @state, @attr and @av
 * @state: enum ib_qp_state; read by the engine with READ_ONCE()
 * @attr: the attributes modify_qp set (query_qp, the engine)
 * @av: RC: the destination (from the AV given at RTR)
 * @max_inline: inline bytes a send WQE may carry
 * @sig_all: every send WQE completes
 * @is_user: created by a user context
 * @owner: that context (doorbell files check it); not referenced
 * @dying: being destroyed: no more work is queued
 * @rnr_left: RNR retries left for the WQE at the head of the SQ
 * @rnr_wq: the receive queue an RNR wait is for (softmr_rnr.c: these
 *	four under softmr_rnr_lock)
 * @rnr_quiet: the RNR wait is watched by the QP's poller: the receiver
 *	is not asked to ring for it
 * @rnr_deadline: jiffies when the RNR wait's min_rnr_timer has passed
 * @rnr_entry: entry in @rnr_wq's rnr_waiters
 * @serial: unique for the module's lifetime (QP numbers are recycled)
 * @rtr_serial: the newest serial when the destination was set (RTR): the
 *	partner existed then, so a QP with a higher serial is not it
 * @peer_serial: connected QPs: @serial of the partner this QP exchanged
 *	its first message with since it was connected, or 0
 * @conn_gen: bumped under @state_lock by every modify_qp that changes
 *	what the partner check reads (and clears @peer_serial): a check made
 *	at an older value is made anew (softmr_conn_cache)
 * @sq_work: runs the SQ: kernel QPs, flushes, RNR retries
 * @sq_poll_work: polls a user QP's SQ, and those of its context that join
 *	it (softmr_sq_poll.c)
 * @sq_poll_entry: entry in the context's sq_poll_joining
 * @sq_poll_member: watched by its context's poller, or joining it (under
 *	owner->sq_poll_lock)
 * @sq_poll_cpu: the CPU the QP was last queued to be polled on, or -1
 * @sq_poster_cpu: the CPU of the last send doorbell, or -1
 * @sq_poll_backoff: ktime (ns) before which no poller starts: the last
 *	one found nothing to do, or left its CPU to another task
 *	(softmr_sq_poll_leave())
 * @sq_rung: the producer index the last send doorbell saw: WQEs before it
 *	were rung for, later ones the poller runs only when small
 * @sq_defer_timer: ends a deferred doorbell's while (softmr_sq_defer.c)
 * @req: the engine's state for the WQE being executed (under sq.lock)
 * @wire_psn: the PSN of the next UD packet to the wire (under sq.lock)
 * @wire: RC and UC: the connection's wire state (softmr_wire_conn.h),
 *	allocated when a connection first goes on the wire
 * @wire_on: connected to a QP on another host (set at RTR): the wire
 *	carries the connection, not the local transport
 * @ud_inq: UD: datagrams from the wire for a receive WQE that may wait,
 *	for @ud_work (softmr_wire_ud.c); its lock guards @ud_closed
 * @ud_work: delivers @ud_inq on the softmr_ud workqueue
 * @ud_closed: being destroyed: nothing more is queued on @ud_inq
 * @modify_lock: one modify_qp at a time: a transition and the wire state
 *	set up for it (softmr_wire_conn_rtr(), _rts()) are not interleaved
 *	with another transition
 */
struct softmr_qp {
	struct ib_qp ibqp;
	struct softmr_dev *sdev;
	refcount_t users;
	struct completion released;
	struct softmr_wq sq;
	struct softmr_wq rq;
	struct softmr_srq *srq;
	spinlock_t state_lock;		/* state, attr, av */
	struct mutex modify_lock;	/* modify_qp */
	enum ib_qp_state state;
	struct ib_qp_attr attr;
	struct softmr_av av;
	u32 max_inline;
	bool sig_all;
	bool is_user;
	struct softmr_ucontext *owner;
	bool dying;
	int rnr_left;
	struct softmr_wq *rnr_wq;
	bool rnr_quiet;
	unsigned long rnr_deadline;
	struct list_head rnr_entry;
	u64 serial;
	u64 rtr_serial;
	atomic64_t peer_serial;
	u64 conn_gen;
	struct delayed_work sq_work;
	struct delayed_work sq_poll_work;
	struct list_head sq_poll_entry;
	bool sq_poll_member;
	int sq_poll_cpu;
	int sq_poster_cpu;
	u64 sq_poll_backoff;
	u32 sq_rung;
	struct hrtimer sq_defer_timer;
	struct softmr_req *req;
	u32 wire_psn;
	struct softmr_wire_conn *wire;
	bool wire_on;
	struct sk_buff_head ud_inq;
	struct work_struct ud_work;
	bool ud_closed;
};

static inline struct softmr_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct softmr_qp, ibqp);
}

struct softmr_odp_child;

/**
 * struct softmr_span - part of an MR held accessible for a transfer
 * @mr: the MR
 * @key: the key the access found @mr by (checked again for fast registrations)
 * @access: IB_ACCESS_* bits the access needs (checked again likewise)
 * @odp: ODP: the umem whose umem_mutex guards the pages, else NULL
 * @child: implicit ODP: the child in use
 * @va_off: ODP: user virtual address minus iova
 * @need: ODP: dma_list permission bits the access needs
 */
struct softmr_span {
	struct softmr_mr *mr;
	u32 key;
	int access;
	struct ib_umem_odp *odp;
	struct softmr_odp_child *child;
	u64 va_off;
	u64 need;
};

/* Direction of a copy through the MR access API. */
enum softmr_copy_dir {
	SOFTMR_FROM_MR,		/* read the MR into a buffer */
	SOFTMR_TO_MR,		/* write a buffer into the MR */
};

/**
 * struct softmr_mw - a memory window (type 1 or 2B)
 * @ibmw: the ib_core MW; its rkey is what the owner sees
 * @entry: the window's key-table entry (kind SOFTMR_MR_MW): its iova,
 *	length and access are the binding, its key is the bound rkey (0
 *	while unbound), so remote keys find windows like MRs
 * @rkey: the key the next bind must name (the last one bound, valid or not)
 * @parent: the MR the window is bound to, referenced; NULL while unbound
 * @parent_addr: the address in @parent of the window's first byte
 * @qp_serial: type 2: the serial of the QP it is bound to
 * @token: the binding's token: changes with every bind and unbind
 * @rwsem: written by binds, invalidations and dealloc; read by data movers
 *	over each access, after checking that the entry's key is still the
 *	one the access started with and the access is inside the binding
 */
struct softmr_mw {
	struct ib_mw ibmw;
	struct softmr_mr *entry;
	u32 rkey;
	struct softmr_mr *parent;
	u64 parent_addr;
	u64 qp_serial;
	u32 token;
	struct rw_semaphore rwsem;
};

static inline struct softmr_mw *to_smw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct softmr_mw, ibmw);
}

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
struct softmr_dev *softmr_dev_get_by_gid(const union ib_gid *gid);
struct softmr_dev *softmr_dev_try_get(struct softmr_dev *sdev, u32 index);
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
struct softmr_mr *softmr_rkey_get(struct softmr_dev *sdev, u32 key);
struct softmr_key_cache;
struct softmr_mr *softmr_key_cache_get(struct softmr_key_cache *kc,
				       struct softmr_dev *sdev, u32 key,
				       bool window);
void softmr_key_cache_keep(struct softmr_key_cache *kc,
			   struct softmr_dev *sdev, u32 key,
			   struct softmr_mr *mr);
void softmr_key_cache_forget(struct softmr_key_cache *kc,
			     struct softmr_mr *mr);
void softmr_key_cache_drop(struct softmr_key_cache *kc);
struct softmr_mr *softmr_mr_by_index(struct softmr_dev *sdev, u32 index);
void softmr_mr_put(struct softmr_mr *mr);
int softmr_mr_close_mw(struct softmr_mr *mr);
void softmr_mr_unpublish_wait(struct softmr_mr *mr);
void softmr_mr_free(struct softmr_mr *mr);
struct softmr_mr *softmr_mw_entry_create(struct softmr_dev *sdev,
					 struct ib_pd *ibpd);
bool softmr_mr_is_live(struct softmr_mr *mr);
void softmr_mr_init_dev(struct softmr_dev *sdev);
int softmr_check_access_flags(int access);

/* softmr_frmr.c: fast registration for kernel consumers */
struct ib_mr *softmr_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			      u32 max_num_sg);
int softmr_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
		     int sg_nents, unsigned int *sg_offset);
void softmr_frmr_free(struct softmr_mr *mr);
enum ib_wc_status softmr_frmr_reg(struct softmr_qp *qp,
				  const struct softmr_send_wqe *wqe);
bool softmr_frmr_invalidate(struct softmr_dev *sdev, struct ib_pd *ibpd,
			    u32 key);
bool softmr_frmr_invalidate_mr(struct softmr_mr *mr, struct ib_pd *ibpd,
			       u32 key);
bool softmr_frmr_lock(struct softmr_mr *mr, u32 key, int access,
		      int subclass);
void softmr_frmr_unlock(struct softmr_mr *mr);
struct page *softmr_frmr_page(struct softmr_mr *mr, u64 iova,
			      unsigned int *pofs, u32 *avail);

/* softmr_mw.c: memory windows */
int softmr_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int softmr_dealloc_mw(struct ib_mw *ibmw);
enum ib_wc_status softmr_mw_bind(struct softmr_qp *qp,
				 const struct softmr_send_wqe *wqe);
bool softmr_key_invalidate(struct softmr_qp *qp, u32 key, bool remote);
u32 softmr_mw_token(struct softmr_mr *entry, u32 key, struct softmr_qp *qp,
		    u64 iova, u64 len, int access);
int softmr_mw_copy(struct softmr_mr *entry, u32 key, u64 iova, void *buf,
		   u64 len, enum softmr_copy_dir dir, int access);
int softmr_mw_xfer(struct softmr_mr *dst, u32 dkey, int daccess, u64 diova,
		   struct softmr_mr *src, u32 skey, int saccess, u64 siova,
		   u64 len);
int softmr_mw_atomic(struct softmr_mr *entry, u32 key, u64 iova,
		     bool cmp_swap, u64 compare_add, u64 swap, u64 *orig);

/* softmr_wq.c: work queue rings shared by QPs and SRQs */
int softmr_wq_init(struct softmr_wq *wq, u32 wr, u32 sge, u32 payload,
		   u32 hdr_size, struct ib_udata *udata,
		   struct softmr_wq_info *info);
void softmr_wq_cleanup(struct softmr_wq *wq);
int softmr_wq_pending(struct softmr_wq *wq, u32 *count);
void *softmr_wq_take(struct softmr_wq *wq);
void softmr_wq_advance(struct softmr_wq *wq);
void softmr_wq_publish(struct softmr_wq *wq);
void softmr_wq_consume(struct softmr_wq *wq);
void softmr_wq_hold(struct softmr_wq *wq);
void softmr_wq_retire(struct softmr_wq *wq);
void *softmr_wq_slot(struct softmr_wq *wq, u32 index);
int softmr_post_recv_kernel(struct softmr_wq *wq, const struct ib_recv_wr *wr,
			    const struct ib_recv_wr **bad_wr);

/* softmr_qp.c: QPs and their state machine */
int softmr_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		     struct ib_udata *udata);
int softmr_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		     int mask, struct ib_udata *udata);
int softmr_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_qp_init_attr *init);
int softmr_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
struct softmr_qp *softmr_qp_get(struct softmr_dev *sdev, u32 qpn);
void softmr_qp_put(struct softmr_qp *qp);
void softmr_qp_set_error(struct softmr_qp *qp);
void softmr_qp_sq_drained(struct softmr_qp *qp);
void softmr_qp_init_dev(struct softmr_dev *sdev);

/* softmr_srq.c: shared receive queues */
int softmr_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		      struct ib_udata *udata);
int softmr_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		      enum ib_srq_attr_mask mask, struct ib_udata *udata);
int softmr_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int softmr_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int softmr_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr);
void softmr_srq_check_limit(struct softmr_srq *srq);

/* softmr_ah.c: address handles */
int softmr_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		     struct ib_udata *udata);
int softmr_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int softmr_destroy_ah(struct ib_ah *ibah, u32 flags);
int softmr_av_from_attr(struct softmr_av *av, const struct rdma_ah_attr *attr);
bool softmr_av_lookup(struct softmr_dev *sdev, u32 num, struct ib_pd *pd,
		      struct softmr_av *av);

/* softmr_engine.c: executes WQEs */
int softmr_engine_init(void);
struct softmr_pkt;
int softmr_engine_wire_recv(struct softmr_dev *sdev,
			    const struct softmr_pkt *pkt,
			    const struct sk_buff *skb, bool may_wait);
void softmr_wire_ud_init(struct softmr_qp *qp);
int softmr_wire_ud_defer(struct softmr_dev *sdev, u32 dqpn,
			 struct sk_buff *skb);
void softmr_wire_ud_close(struct softmr_qp *qp);
void softmr_wire_ud_reset(struct softmr_qp *qp);
int softmr_wire_ud_wq_init(void);
void softmr_wire_ud_wq_exit(void);

/* softmr_net.c: the wire */
int softmr_net_init(void);
void softmr_net_exit(void);
void softmr_wire_attach(struct softmr_dev *sdev);
void softmr_wire_detach(struct softmr_dev *sdev);
void softmr_wire_dev_cleanup(struct softmr_dev *sdev);
void softmr_wire_rx_work(struct work_struct *work);
void softmr_wire_queue_rx(struct softmr_dev *sdev);
struct sk_buff *softmr_wire_alloc(struct softmr_dev *sdev, unsigned int size);
int softmr_wire_xmit(struct softmr_dev *sdev, struct sk_buff *skb,
		     const struct softmr_av *av, u16 sport, bool by_table);
bool softmr_wire_reaches(struct softmr_dev *sdev, const struct softmr_av *av);
bool softmr_wire_takes(struct softmr_dev *sdev, const struct softmr_av *av,
		       bool *forced);
int softmr_wire_skb_parse(const struct sk_buff *skb, struct softmr_pkt *pkt);
void softmr_wire_skb_gids(const struct sk_buff *skb, union ib_gid *src,
			  union ib_gid *dst);
bool softmr_netdev_has_gid_addr(struct net_device *ndev,
				const union ib_gid *gid);
extern const struct attribute_group softmr_dev_attr_group;
/* received packets a wire device holds for its worker at most */
#define SOFTMR_WIRE_RXQ_MAX	1024
bool softmr_dev_wire_rx(struct sk_buff *skb, int bad);
/* softmr_vlan.c */
bool softmr_vlan_of(struct net_device *ndev, struct net_device *real);
struct net_device *softmr_av_ndev_rcu(struct softmr_dev *sdev,
				      const struct softmr_av *av);
unsigned int softmr_av_ndev_mtu(struct softmr_dev *sdev,
				const struct softmr_av *av);
struct net_device *softmr_gid_owner_rcu(struct net_device *ndev,
					const union ib_gid *gid);
int softmr_gid_vlan(struct softmr_dev *sdev, const union ib_gid *gid,
		    const struct softmr_av *from);
void softmr_engine_exit(void);
int softmr_engine_qp_init(struct softmr_qp *qp);
void softmr_engine_qp_cleanup(struct softmr_qp *qp);
void softmr_qp_run(struct softmr_qp *qp);
void softmr_qp_doorbell(struct softmr_qp *qp);
int softmr_sq_poll_init(void);
void softmr_sq_poll_context_init(struct softmr_ucontext *uc);
void softmr_sq_poll_exit(void);
bool softmr_sq_poll_start(struct softmr_qp *qp);

/* softmr_sq_defer.c: deferred send doorbells */
void softmr_sq_defer_init(struct softmr_qp *qp);
void softmr_sq_defer(struct softmr_qp *qp);
void softmr_sq_defer_stop(struct softmr_qp *qp);
void softmr_sq_poll_work(struct work_struct *work);
void softmr_qp_kick(struct softmr_qp *qp);
void softmr_qp_kick_delayed(struct softmr_qp *qp, unsigned long delay);
void softmr_sq_work(struct work_struct *work);
void softmr_rq_flush(struct softmr_qp *qp);
void softmr_qp_kick_at(struct softmr_qp *qp, unsigned long delay);

/*
 * Does a user QP's send ring hold WQEs the engine has not taken?  A hint,
 * unlocked: runs read the ring under sq.lock (softmr_wq_pending()).
 */
static inline bool softmr_sq_unconsumed(struct softmr_qp *qp)
{
	return READ_ONCE(qp->sq.hdr->producer) != READ_ONCE(qp->sq.cons);
}

/**
 * softmr_rnr_waiting() - is @qp in an RNR wait (softmr_rnr.c)?
 * @qp: the QP
 *
 * A hint, without softmr_rnr_lock: what acts on it looks again under the
 * lock, or under sq.lock in the send queue's run.
 *
 * Return: true when it is.
 */
static inline bool softmr_rnr_waiting(struct softmr_qp *qp)
{
	return !list_empty_careful(&qp->rnr_entry);
}

/* softmr_rnr.c */
void softmr_rnr_wait(struct softmr_qp *qp, struct softmr_wq *wq, u8 timer,
		     bool quiet);
void softmr_rnr_wake(struct softmr_wq *wq);
void softmr_rnr_forget(struct softmr_qp *qp);
bool softmr_rnr_poll(struct softmr_qp *qp);
void softmr_rnr_unquiet(struct softmr_qp *qp);
bool softmr_rnr_early(struct softmr_qp *qp);
void softmr_rnr_wq_gone(struct softmr_wq *wq);
void softmr_rnr_lock_irqsave(unsigned long *flags)
	__acquires(softmr_rnr_lock);
void softmr_rnr_unlock_irqrestore(unsigned long flags)
	__releases(softmr_rnr_lock);
int softmr_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr);
int softmr_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr);

/* softmr_loopback.c: the transport: reach QPs of softmr devices here */

/**
 * struct softmr_xport_hint - the device a GID resolved to last time
 * @dgid: the GID
 * @sdev: the device then (compared, not followed)
 * @index: its ib_device index then
 */
struct softmr_xport_hint {
	union ib_gid dgid;
	struct softmr_dev *sdev;
	u32 index;
};

struct softmr_qp *softmr_xport_find_qp(struct softmr_xport_hint *hint,
				       const union ib_gid *dgid, u32 qpn,
				       struct softmr_dev *self);

/**
 * struct softmr_key_cache - the entry a key found last, held over a run
 * @sdev: the device the key was looked up on
 * @mr: the MR or window entry, referenced by the cache; NULL: empty
 * @key: the key
 *
 * A polled send queue run of a user QP (softmr_sq_process_budget()) looks
 * its keys up through one of these.  An entry is kept only after every
 * check of an access through it passed, and forgotten when one fails; it
 * is held only while WQE after WQE uses it: a WQE that does not is
 * preceded by dropping it, and so are the waits of a WQE that come
 * before or after its use, and the end of the run (a dereg waits for no
 * more than it would for the WQEs using the key; from its start, the
 * cache does not hand the entry out again: softmr_mr_unpublish_wait()).
 */
struct softmr_key_cache {
	struct softmr_dev *sdev;
	struct softmr_mr *mr;
	u32 key;
};

/**
 * struct softmr_conn_cache - a connected requester's partner, checked
 * @peer_serial: the partner's serial; 0: nothing cached
 * @gen: the requester's conn_gen when the partner was checked
 * @peer_gen: the partner's conn_gen then
 * @dqpn: the partner's QP number
 * @dgid: the partner's GID
 * @held: in a run with key caches (struct softmr_req), a user QP partner
 *	with a reference of the cache's own, lent to each WQE as its peer;
 *	NULL: none held
 *
 * While neither end was connected anew since (both conn_gen unchanged)
 * and the QP found by @dgid and @dqpn is the one with @peer_serial, the
 * partner check holds still (softmr_req_cached_peer()).  @held spares a
 * WQE the lookup by number; it is held only from WQE to WQE that sends to
 * it, within one run (softmr_sq_process_budget()), and not once the
 * partner is being destroyed: its destroy waits for no more than the WQE
 * that runs, as it would without the cache.
 */
struct softmr_conn_cache {
	u64 peer_serial;
	u64 gen;
	u64 peer_gen;
	u32 dqpn;
	union ib_gid dgid;
	struct softmr_qp *held;
};

/**
 * struct softmr_req - one send WQE being executed
 * @qp: the requester
 * @wqe: the copy of the WQE
 * @local: its gather (or, for reads and atomics, scatter) list
 * @inl: inline data, or NULL
 * @len: message length
 * @peer: the responder QP, referenced (by the WQE, or lent by @conn.held)
 * @av: where the message goes (the AH's or, for RC, the QP's)
 * @hint: the device the last destination GID resolved to
 * @conn: connected QPs: the partner checked last
 * @key_caches: this run looks keys up through @lkeys and @rkeys, and
 *	holds its partner in @conn: any run of a user QP (a polled run, a
 *	doorbell's run of deferred doorbells: many WQEs in a row)
 * @lkeys: the local key found last, while each WQE uses it
 * @rkeys: with a user QP as peer: the remote key found last, likewise
 * @rqkeys: for a connected QP's SEND and SEND_WITH_IMM to a user QP: the
 *	key of the receive WQE the last one filled, likewise (a stream of
 *	sends finds the buffers its receiver reposts under one key)
 * @rnr_quiet: the run is its poller's, which watches the receive queue
 *	of an RNR wait it begins (softmr_rnr_poll())
 */
struct softmr_req {
	struct softmr_qp *qp;
	struct softmr_send_wqe *wqe;
	struct softmr_sgl local;
	const void *inl;
	u64 len;
	struct softmr_qp *peer;
	struct softmr_av av;
	struct softmr_xport_hint hint;
	struct softmr_conn_cache conn;
	bool key_caches;
	struct softmr_key_cache lkeys;
	struct softmr_key_cache rkeys;
	struct softmr_key_cache rqkeys;
	bool rnr_quiet;
};

/* Engine results that are not an ib_wc_status (softmr_engine.c) */
/* the peer has no receive WQE: wait and retry */
#define SOFTMR_RNR		(-1)
/*
 * stop without completing the WQE, it stays at the head of the queue: a
 * QP is being destroyed, the thread that rang the doorbell is being
 * killed, or the wire's send window is full
 */
#define SOFTMR_STOP		(-2)
/* the WQE went on the wire: it completes when it is acknowledged */
#define SOFTMR_POSTED		(-3)

enum ib_wc_status softmr_sgl_resolve(struct softmr_dev *sdev,
				     struct ib_pd *pd,
				     const struct softmr_sge *sge, u32 num,
				     int access, struct softmr_sgl *sgl,
				     struct softmr_key_cache *kc);
void softmr_sgl_release(struct softmr_sgl *sgl);
void softmr_send_complete(struct softmr_qp *qp,
			  const struct softmr_send_wqe *wqe,
			  enum ib_wc_status status, u32 byte_len);
bool softmr_sq_process(struct softmr_qp *qp);
bool softmr_sq_process_budget(struct softmr_qp *qp, u32 budget, bool polled,
			      bool *blocked);
extern const u32 softmr_rnr_usecs[32];
struct softmr_mr *softmr_rkey_lookup(struct softmr_qp *qp, u32 rkey,
				     u64 addr, u64 len, int access, u32 *key,
				     struct softmr_key_cache *kc);
bool softmr_qp_receives(struct softmr_qp *qp);
struct softmr_wq *softmr_qp_rq(struct softmr_qp *qp);

/* softmr_wire_conn.c: RC and UC connections on the wire */
struct softmr_wire_conn;
int softmr_wire_conn_prepare(struct softmr_qp *qp);
void softmr_wire_conn_rtr(struct softmr_qp *qp);
void softmr_wire_conn_rts(struct softmr_qp *qp, const struct ib_qp_attr *attr);
int softmr_wire_conn_init(void);
void softmr_wire_conn_exit(void);
void softmr_wire_conn_reset(struct softmr_qp *qp);
void softmr_wire_conn_close(struct softmr_qp *qp);
void softmr_wire_conn_free(struct softmr_qp *qp);
void softmr_wire_conn_flush(struct softmr_qp *qp);
bool softmr_wire_conn_busy(struct softmr_qp *qp);
bool softmr_wire_conn_sqd(struct softmr_qp *qp);
void softmr_wire_conn_resume(struct softmr_qp *qp);
int softmr_wire_conn_rx(struct softmr_dev *sdev, struct sk_buff *skb,
			const struct softmr_pkt *pkt);

/**
 * softmr_key_cache_live() - may a key cache's entry still answer @key?
 * @mr: the entry, held by the cache
 * @key: the key it was kept for
 *
 * Return: it still has the key (a fast registration's may have changed,
 * a window's been invalidated) and its dereg has not started.
 */
static inline bool softmr_key_cache_live(struct softmr_mr *mr, u32 key)
{
	/* acquire: a fast registration's fields before its key */
	return key && smp_load_acquire(&mr->key) == key &&
	       !READ_ONCE(mr->unpublished);
}

/**
 * softmr_fixed_page() - the page behind @iova of a pinned or DM MR
 * @mr: the MR, referenced: its pages stay while it is (a new translation
 *	is a new MR)
 * @iova: the byte, within the MR (softmr_mr_check())
 * @pofs: set to @iova's offset in the page
 *
 * Return: the page, or NULL for an MR of another kind.
 */
static __always_inline struct page *
softmr_fixed_page(const struct softmr_mr *mr, u64 iova, unsigned int *pofs)
{
	u64 off;
	void *p;

	switch (mr->kind) {
	case SOFTMR_MR_PINNED:
		off = iova - mr->iova + mr->page_offset;
		*pofs = off & ~PAGE_MASK;
		return mr->pages[off >> PAGE_SHIFT];
	case SOFTMR_MR_DM:	/* dm_mem: alloc_pages_exact(), lowmem */
		p = mr->dm_kaddr + (iova - mr->iova);
		*pofs = offset_in_page(p);
		return virt_to_page(p);
	default:
		return NULL;
	}
}

/**
 * softmr_conn_cache_current() - does @c still stand for @qp's connection?
 * @c: the requester's partner cache
 * @qp: the requester
 *
 * Return: a partner was checked and @qp was not connected anew since (its
 * conn_gen unchanged); the partner itself is softmr_conn_cache_holds()'.
 */
static inline bool softmr_conn_cache_current(const struct softmr_conn_cache *c,
					     struct softmr_qp *qp)
{
	return c->peer_serial && READ_ONCE(qp->conn_gen) == c->gen;
}

/* softmr_sq_fast.c: the fast lane of a user QP's runs */
/* softmr_sq_fast_write(): not for the fast lane, run the WQE the usual way */
#define SOFTMR_SLOW		(-4)
int softmr_sq_fast_write(struct softmr_qp *qp,
			 const struct softmr_send_wqe *wqe,
			 struct softmr_req *req);
int softmr_sq_fast_send(struct softmr_qp *qp,
			const struct softmr_send_wqe *wqe,
			struct softmr_req *req);
void softmr_recv_complete(struct softmr_qp *qp, u64 wr_id,
			  enum ib_wc_status status, u32 opcode, u32 byte_len,
			  const struct softmr_req *req);
bool softmr_conn_cache_holds(const struct softmr_conn_cache *c,
			     struct softmr_qp *peer);

/* softmr_xfer.c: MR to MR copies and atomics */
int softmr_mr_xfer_key(struct softmr_mr *dst, u32 dkey, int daccess,
		       u64 diova, struct softmr_mr *src, u32 skey,
		       int saccess, u64 siova, u64 len);
int softmr_mr_atomic_key(struct softmr_mr *mr, u32 key, u64 iova,
			 bool cmp_swap, u64 compare_add, u64 swap, u64 *orig);

/* The same with the MRs' current keys (callers that hold the MRs). */
static inline int softmr_mr_xfer(struct softmr_mr *dst, u64 diova,
				 struct softmr_mr *src, u64 siova, u64 len)
{
	return softmr_mr_xfer_key(dst, READ_ONCE(dst->key), 0, diova, src,
				  READ_ONCE(src->key), 0, siova, len);
}

static inline int softmr_mr_atomic(struct softmr_mr *mr, u64 iova,
				   bool cmp_swap, u64 compare_add, u64 swap,
				   u64 *orig)
{
	return softmr_mr_atomic_key(mr, READ_ONCE(mr->key), iova, cmp_swap,
				    compare_add, swap, orig);
}

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
int softmr_mr_copy_key(struct softmr_mr *mr, u32 key, u64 iova, void *buf,
		       u64 len, enum softmr_copy_dir dir, int access);

static inline int softmr_mr_copy(struct softmr_mr *mr, u64 iova, void *buf,
				 u64 len, enum softmr_copy_dir dir, int access)
{
	return softmr_mr_copy_key(mr, READ_ONCE(mr->key), iova, buf, len, dir,
				  access);
}

/* softmr_odp.c: on-demand paging, implicit children, advise_mr */

/**
 * softmr_odp_chunked() - does an ODP MR map its range through children?
 * @mr: the MR
 *
 * Return: true for implicit ODP MRs and for explicit ones built on an
 * implicit root (softmr_odp_init_root()).
 */
static inline bool softmr_odp_chunked(const struct softmr_mr *mr)
{
	return mr->kind == SOFTMR_MR_IMPLICIT ||
	       (mr->kind == SOFTMR_MR_ODP && mr->odp->is_implicit_odp);
}

extern const struct mmu_interval_notifier_ops softmr_odp_ops;
int softmr_odp_init_root(struct softmr_mr *mr);
int softmr_odp_charge(struct softmr_dev *sdev, u64 npages);
void softmr_odp_uncharge(struct softmr_dev *sdev, u64 npages);
void softmr_odp_release_chunked(struct softmr_mr *mr);
int softmr_odp_copy(struct softmr_mr *mr, u64 iova, void *buf, u64 len,
		    enum softmr_copy_dir dir);
int softmr_advise_mr(struct ib_pd *ibpd,
		     enum ib_uverbs_advise_mr_advice advice, u32 flags,
		     struct ib_sge *sg_list, u32 num_sge,
		     struct uverbs_attr_bundle *attrs);
int softmr_odp_wq_init(void);
void softmr_odp_wq_destroy(void);
void softmr_odp_flush(void);
/* The most faulted in ahead of one message (as mlx5's responder) */
#define SOFTMR_PREFETCH_AHEAD_MAX	SZ_4M
void softmr_odp_prefetch_ahead(struct softmr_mr *mr, u64 iova, u64 len,
			       bool write);
int softmr_odp_span_get(struct softmr_span *s, u64 iova, u64 *len,
			bool write, bool fault);
bool softmr_odp_span_lock(struct softmr_span *s, u64 iova, u64 len,
			  unsigned int subclass);
bool softmr_odp_mapped_span(struct softmr_span *s, u64 iova, u64 len);
void softmr_odp_span_put(struct softmr_span *s);

/* softmr_stats.c: counters and restrack details */
s64 softmr_counter_read(struct softmr_dev *sdev, enum softmr_counter c);
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
struct rdma_user_mmap_entry *
softmr_mmap_entry_insert_ring(struct ib_ucontext *ibuc, void *kaddr,
			      size_t size);
void softmr_mmap_ring_free(struct rdma_user_mmap_entry *rdma_entry,
			   void *kaddr);
struct rdma_user_mmap_entry *
softmr_mmap_entry_insert_dm(struct ib_ucontext *ibuc,
			    struct softmr_dm_chunk *chunk);
int softmr_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
vm_fault_t softmr_dm_fault(struct vm_fault *vmf);
int softmr_dm_pfnmap(struct vm_area_struct *vma, struct softmr_dm_chunk *chunk,
		     const struct vm_operations_struct *ops);
void softmr_mmap_free(struct rdma_user_mmap_entry *rdma_entry);

/* softmr_ioctl.c: the driver-specific uverbs namespace */
extern const struct uapi_definition softmr_uapi_defs[];
void softmr_fill_query_device_resp(struct softmr_dev *sdev,
				   struct softmr_ucontext *suc,
				   struct softmr_query_device_resp *resp);

/* dma-buf MRs (softmr_dmabuf.c) */
struct ib_mr *softmr_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
					u64 length, u64 iova, int fd,
					int access,
					struct uverbs_attr_bundle *attrs);
int softmr_dmabuf_lock(struct softmr_mr *a, struct softmr_mr *b,
		       struct ww_acquire_ctx *ctx);
void softmr_dmabuf_unlock(struct softmr_mr *a, struct softmr_mr *b,
			  struct ww_acquire_ctx *ctx);
void *softmr_dmabuf_kaddr(struct softmr_mr *mr, u64 iova);
struct page *softmr_dmabuf_page(struct softmr_mr *mr, u64 iova,
				unsigned int *pofs);
void softmr_dmabuf_release(struct softmr_mr *mr);
void softmr_mr_abort(struct softmr_mr *mr);
void softmr_mr_report_leaks(struct softmr_dev *sdev);
unsigned int softmr_xa_in_use(struct xarray *xa);

/* device memory lifetime and dma-buf export (softmr_dm.c, softmr_dm_export.c) */
/* The kernel address of a DM allocation's memory. */
static inline void *softmr_dm_chunk_kaddr(struct softmr_dm_chunk *chunk)
{
	return chunk->area->mem + chunk->offset;
}

void softmr_dm_chunk_put(struct softmr_dm_chunk *chunk);
extern const struct uapi_definition softmr_dm_export_defs[];
extern const struct uapi_definition softmr_import_defs[];
extern const struct uapi_definition softmr_doorbell_defs[];
struct softmr_doorbell;
int softmr_doorbell_init(struct softmr_ucontext *suc);
void softmr_doorbell_cleanup(struct softmr_ucontext *suc);
int softmr_query_ucontext(struct ib_ucontext *ibuc,
			  struct uverbs_attr_bundle *attrs);

#endif /* SOFTMR_H */
