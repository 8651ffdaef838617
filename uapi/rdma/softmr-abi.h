/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * softmr: the ABI shared by the softmr kernel driver and its rdma-core
 * provider.
 */

#ifndef SOFTMR_ABI_USER_H
#define SOFTMR_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_ioctl_cmds.h>

/*
 * Version of the softmr driver ABI.  Reported as the device's uverbs ABI
 * version (sysfs abi_version) and by SOFTMR_IB_METHOD_QUERY_DEVICE; the
 * provider refuses a device whose version differs from its own.  (Tests
 * build a module with another version to check that refusal.)
 */
#ifndef SOFTMR_UVERBS_ABI_VERSION
#define SOFTMR_UVERBS_ABI_VERSION	1
#endif

/*
 * Driver-specific uverbs ioctl methods, in the driver namespace.  They are
 * methods of UVERBS_OBJECT_DEVICE.
 */
enum softmr_ib_device_methods {
	SOFTMR_IB_METHOD_QUERY_DEVICE = (1U << UVERBS_ID_NS_SHIFT),
	/*
	 * A write-only file for send doorbells: write(fd, &qpn, 4) runs the
	 * send queue of the context's QP qpn (as POST_SEND with no WRs does).
	 */
	SOFTMR_IB_METHOD_DOORBELL_FD,
};

enum softmr_ib_doorbell_fd_attrs {
	/* out: s32, the new file descriptor (O_CLOEXEC) */
	SOFTMR_IB_ATTR_DOORBELL_FD = (1U << UVERBS_ID_NS_SHIFT),
};

enum softmr_ib_query_device_attrs {
	/* in: u32, must be 0 (no flags are defined yet) */
	SOFTMR_IB_ATTR_QUERY_DEVICE_FLAGS = (1U << UVERBS_ID_NS_SHIFT),
	/* out: struct softmr_query_device_resp */
	SOFTMR_IB_ATTR_QUERY_DEVICE_RESP,
};

/*
 * Driver attribute added to UVERBS_METHOD_DM_ALLOC: u64 out, the mmap()
 * offset of the allocation's pages.
 */
enum softmr_ib_dm_alloc_attrs {
	SOFTMR_IB_ATTR_ALLOC_DM_MMAP_OFFSET = (1U << UVERBS_ID_NS_SHIFT),
};

/*
 * A driver method of UVERBS_OBJECT_DM: export the allocation as a dma-buf
 * (ibv_dm_export_dmabuf_fd()).  The kernel of the test environment has no
 * UVERBS_OBJECT_DMABUF, so softmr offers it in its own namespace.
 */
enum softmr_ib_dm_methods {
	SOFTMR_IB_METHOD_DM_EXPORT_DMABUF = (1U << UVERBS_ID_NS_SHIFT),
	/* for ibv_import_dm(): where the allocation maps, how long it is */
	SOFTMR_IB_METHOD_DM_QUERY,
};

enum softmr_ib_dm_query_attrs {
	/* in: the DM handle */
	SOFTMR_IB_ATTR_DM_QUERY_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	/* out: u64, mmap() offset of the allocation's pages */
	SOFTMR_IB_ATTR_DM_QUERY_MMAP_OFFSET,
	/* out: u64, the allocation's length */
	SOFTMR_IB_ATTR_DM_QUERY_LENGTH,
};

/* A driver method of UVERBS_OBJECT_PD, for ibv_import_pd(). */
enum softmr_ib_pd_methods {
	SOFTMR_IB_METHOD_PD_QUERY = (1U << UVERBS_ID_NS_SHIFT),
};

enum softmr_ib_pd_query_attrs {
	/* in: the PD handle */
	SOFTMR_IB_ATTR_PD_QUERY_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	/* out: u32, the PD's number (as rdma res show pd prints it) */
	SOFTMR_IB_ATTR_PD_QUERY_PDN,
};

enum softmr_ib_dm_export_attrs {
	/* in: the DM handle */
	SOFTMR_IB_ATTR_DM_EXPORT_HANDLE = (1U << UVERBS_ID_NS_SHIFT),
	/* out: s32, the new dma-buf file descriptor (O_RDWR | O_CLOEXEC) */
	SOFTMR_IB_ATTR_DM_EXPORT_FD,
};

/* Device memory is read and written in units of this many bytes. */
#define SOFTMR_DM_ACCESS_ALIGN	4

/* Feature bits in softmr_query_device_resp.features. */
enum softmr_device_features {
	/* The per-device status page can be mapped (status_mmap_offset). */
	SOFTMR_FEATURE_STATUS_PAGE = 1 << 0,
};

/**
 * struct softmr_query_device_resp - softmr-specific device facts
 * @abi_version: SOFTMR_UVERBS_ABI_VERSION of the running driver
 * @features: enum softmr_device_features
 * @max_pd: protection domains the device allows at once
 * @pd_count: protection domains allocated now on the device
 * @status_mmap_offset: mmap() offset of the read-only status page
 * @status_mmap_size: its length in bytes
 * @driver_version: driver version, major << 16 | minor << 8 | patch
 * @reserved: zero
 */
struct softmr_query_device_resp {
	__u32 abi_version;
	__u32 features;
	__u32 max_pd;
	__u32 pd_count;
	__aligned_u64 status_mmap_offset;
	__u32 status_mmap_size;
	__u32 driver_version;
	__aligned_u64 reserved;
};

/**
 * struct softmr_status_page - read-only page the kernel keeps current
 * @abi_version: SOFTMR_UVERBS_ABI_VERSION
 * @seq: even while stable; incremented before and after each update
 * @port_state: enum ib_port_state of port 1
 * @active_mtu: enum ib_mtu of port 1
 * @netdev_mtu: MTU of the underlying netdev in bytes
 * @ifindex: ifindex of the underlying netdev
 * @port_events: number of port state changes seen
 *
 * A reader copies the fields while @seq is even and unchanged.
 */
struct softmr_status_page {
	__u32 abi_version;
	__u32 seq;
	__u32 port_state;
	__u32 active_mtu;
	__u32 netdev_mtu;
	__u32 ifindex;
	__aligned_u64 port_events;
};

/**
 * struct softmr_ring_hdr - head of a ring shared with user space
 * @producer: the next slot the producer fills; written by the producer only
 * @pad0: keeps the indices in separate cache lines
 * @consumer: the next slot the consumer reads; written by the consumer only
 * @pad1: padding
 *
 * Indices run freely (mod 2^32); slot = index & (num_entries - 1).  The
 * entries follow at SOFTMR_RING_HDR_SIZE.  The kernel never trusts a value
 * user space wrote: it indexes only with its own counter.
 */
struct softmr_ring_hdr {
	__u32 producer;
	__u32 pad0[15];
	__u32 consumer;
	__u32 pad1[15];
};

#define SOFTMR_RING_HDR_SIZE	128

/*
 * A completion queue ring holds struct ib_uverbs_wc entries, written by the
 * kernel and consumed by the provider without a system call.
 */

/**
 * struct softmr_create_cq_resp - driver part of create_cq / resize_cq
 * @mmap_offset: mmap() offset of the CQ ring
 * @mmap_size: its length in bytes
 * @num_entries: ring slots, a power of two
 */
struct softmr_create_cq_resp {
	__aligned_u64 mmap_offset;
	__u32 mmap_size;
	__u32 num_entries;
};

/*
 * Work queues (send queue, receive queue, shared receive queue) are rings
 * of fixed-size WQEs after a struct softmr_wq_hdr.  The provider writes
 * WQEs and moves @producer; the kernel copies each WQE once, validates the
 * copy, executes it and moves @consumer.  The kernel never indexes with
 * @producer: a value more than the ring size ahead of its own consumer puts
 * the QP into the error state.
 */

/*
 * The largest WQE (bytes of its gather list) the kernel's send queue
 * poller runs without a doorbell: after posting a larger one the provider
 * rings the send doorbell even while sq_polled is set, and the WQE runs
 * in the poster's context.
 */
#define SOFTMR_SQ_POLL_MAX_BYTES	65536

/**
 * struct softmr_wq_hdr - head of a work queue ring
 * @producer: next slot the provider fills; written by the provider only
 * @pad0: keeps the indices in separate cache lines
 * @consumer: WQEs the kernel has taken; written by the kernel only
 * @qp_state: send queue of a QP: its enum ib_qp_state, kept current by the
 *            kernel (the provider rings the receive doorbell in ERR so
 *            that new receive WQEs are flushed)
 * @rnr_waiting: receive queues: set by the kernel while a sender waits for
 *               a receive WQE here; the provider, after moving @producer
 *               and a full barrier, then rings the receive doorbell, so
 *               the sender resumes at once.  The kernel sets it, then
 *               (after a full barrier) reads @producer once more.  A
 *               sender whose kernel poller watches @producer meanwhile
 *               leaves it clear until the poller stops.
 * @sq_polled: send queues: set by the kernel while it watches @producer
 *             (after a doorbell, for a while); the provider, after moving
 *             @producer and a full barrier, skips the send doorbell while
 *             it reads 1.  The kernel clears it, then (after a full barrier)
 *             reads @producer once more, so a WQE is never left unseen.
 *             A WQE above SOFTMR_SQ_POLL_MAX_BYTES always gets a doorbell.
 * @sq_deferred: send queues: set by the kernel after a send doorbell, for
 *               a while (module parameter sq_defer_usecs), when it will
 *               look at @producer once more by itself at the end of that
 *               while.  The provider, after moving @producer and a full
 *               barrier, skips the send doorbell while it reads 1 and owes
 *               it instead: it rings it when a poll of one of the
 *               context's CQs finds that CQ drained, or before it arms a
 *               CQ's notification.  The kernel clears it, then (after a
 *               full barrier) reads @producer once more and runs what came,
 *               so a WQE is never left unseen.  A WQE above
 *               SOFTMR_SQ_POLL_MAX_BYTES always gets a doorbell.
 * @pad1: padding
 */
struct softmr_wq_hdr {
	__u32 producer;
	__u32 pad0[15];
	__u32 consumer;
	__u32 qp_state;
	__u32 rnr_waiting;
	__u32 sq_polled;
	__u32 sq_deferred;
	__u32 pad1[11];
};

#define SOFTMR_WQ_HDR_SIZE	128

/**
 * struct softmr_sge - a scatter/gather element in a WQE
 * @addr: first byte (iova of the MR named by @lkey)
 * @length: bytes
 * @lkey: local key of the MR
 */
struct softmr_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* softmr_send_wqe.flags: the values of IBV_SEND_* / IB_SEND_* */
enum softmr_send_flags {
	SOFTMR_SEND_FENCE = 1 << 0,
	SOFTMR_SEND_SIGNALED = 1 << 1,
	SOFTMR_SEND_SOLICITED = 1 << 2,
	SOFTMR_SEND_INLINE = 1 << 3,
};

#define SOFTMR_SEND_FLAGS_ALL	(SOFTMR_SEND_FENCE | SOFTMR_SEND_SIGNALED | \
				 SOFTMR_SEND_SOLICITED | SOFTMR_SEND_INLINE)

/**
 * struct softmr_send_wqe - a send queue entry
 * @wr_id: returned in the completion
 * @opcode: enum ib_uverbs_wr_opcode
 * @flags: enum softmr_send_flags
 * @num_sge: entries in @sge, or with SOFTMR_SEND_INLINE the bytes of
 *           inline data that follow the header instead
 * @imm_data: immediate data, network byte order (…_WITH_IMM), or the rkey
 *            to invalidate (SEND_WITH_INV, LOCAL_INV)
 * @wr: operation-specific part
 * @wr.rdma: RDMA write and read: remote address and key
 * @wr.atomic: compare-and-swap and fetch-and-add on 8 remote bytes
 * @wr.ud: UD sends: address handle number, remote QPN and Q_Key
 * @wr.reg: REG_MR (kernel QPs only): the MR by index, its new key, access,
 *	iova and length
 * @wr.bind: BIND_MW: the window by its current rkey (@mw_rkey), the rkey it
 *	gets (same index, new low 8 bits), the MR by @mr_lkey, the window's
 *	address in the MR, length (0 unbinds a type 1 window) and
 *	IB_ACCESS_* rights (remote read, write, atomic; zero based, type 2)
 * @reserved: zero
 * @sge: gather list (or inline data) up to the queue's stride
 */
struct softmr_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;
	__u32 flags;
	__u32 num_sge;
	__u32 imm_data;
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		struct {
			__u32 ah;
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 reserved;
		} ud;
		struct {
			__aligned_u64 iova;
			__aligned_u64 length;
			__u32 mr_index;
			__u32 key;
			__u32 access;
			__u32 reserved;
		} reg;
		struct {
			__aligned_u64 addr;
			__aligned_u64 length;
			__u32 mw_rkey;
			__u32 rkey;
			__u32 mr_lkey;
			__u32 access;
		} bind;
	} wr;
	__u32 reserved[2];
	struct softmr_sge sge[];
};

#define SOFTMR_SEND_WQE_HDR_SIZE	64

/**
 * struct softmr_recv_wqe - a receive queue entry
 * @wr_id: returned in the completion
 * @num_sge: entries in @sge
 * @reserved: zero
 * @sge: scatter list
 */
struct softmr_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
	struct softmr_sge sge[];
};

#define SOFTMR_RECV_WQE_HDR_SIZE	16

/**
 * struct softmr_wq_info - where a work queue ring is and how it is cut
 * @mmap_offset: mmap() offset of the ring
 * @mmap_size: its length in bytes
 * @num: slots, a power of two
 * @stride: bytes per WQE, a power of two
 * @reserved: zero
 */
struct softmr_wq_info {
	__aligned_u64 mmap_offset;
	__u32 mmap_size;
	__u32 num;
	__u32 stride;
	__u32 reserved;
};

/**
 * struct softmr_create_qp_resp - driver part of create_qp
 * @sq: the send queue
 * @rq: the receive queue; all zero for a QP on an SRQ
 * @max_inline: bytes of inline data a send WQE may carry
 * @reserved: zero
 */
struct softmr_create_qp_resp {
	struct softmr_wq_info sq;
	struct softmr_wq_info rq;
	__u32 max_inline;
	__u32 reserved;
};

/**
 * struct softmr_create_srq_resp - driver part of create_srq
 * @rq: the shared receive queue
 */
struct softmr_create_srq_resp {
	struct softmr_wq_info rq;
};

/**
 * struct softmr_modify_srq_cmd - driver part of modify_srq
 * @wq_info_addr: user address of a struct softmr_wq_info; a resize
 *	(IBV_SRQ_MAX_WR) writes the new ring's place there (modify_srq has no
 *	response).  Pending WQEs keep their indices in the new ring.
 */
struct softmr_modify_srq_cmd {
	__aligned_u64 wq_info_addr;
};

/**
 * struct softmr_create_ah_resp - driver part of create_ah
 * @ah_num: the number UD send WQEs name the address handle by
 * @reserved: zero
 */
struct softmr_create_ah_resp {
	__u32 ah_num;
	__u32 reserved;
};

#endif /* SOFTMR_ABI_USER_H */
