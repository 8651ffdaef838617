/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * softmr provider for libibverbs: the userspace half of the softmr
 * software RDMA device.
 */

#ifndef SOFTMR_PROVIDER_H
#define SOFTMR_PROVIDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ccan/list.h>
#include <infiniband/driver.h>
#include <rdma/softmr-abi.h>

struct softmr_device {
	struct verbs_device ibv_dev;
};

struct softmr_context {
	struct verbs_context ibv_ctx;
	struct softmr_query_device_resp dev_info;
	/* read-only page the kernel keeps current (struct softmr_status_page) */
	const struct softmr_status_page *status;
	size_t status_size;
	/* the send doorbell file (SOFTMR_IB_METHOD_DOORBELL_FD), or -1 */
	int db_fd;
	/*
	 * QPs that owe the kernel a send doorbell (sq_deferred): rung when a
	 * poll finds one of the context's CQs drained, or before a CQ's
	 * notification is armed (softmr_ring_owed())
	 */
	pthread_spinlock_t owed_lock;
	struct list_head owed;
	uint32_t owed_n;	/* entries on @owed; read unlocked as a hint */
};

struct softmr_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	/* the ring the kernel fills: struct softmr_ring_hdr, then entries */
	struct softmr_ring_hdr *ring;
	size_t map_size;
	uint32_t num;
	/* extended CQs: the entry start_poll/next_poll stand on */
	uint32_t ex_cons;
	const struct ib_uverbs_wc *ex_cur;
};

static inline struct softmr_cq *to_scq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct softmr_cq, vcq.cq);
}

struct softmr_dm {
	struct verbs_dm vdm;
	void *addr;		/* the allocation, mapped */
	size_t map_size;	/* whole pages */
	size_t length;		/* what was asked for */
};

static inline struct softmr_dm *to_sdm(struct ibv_dm *ibdm)
{
	return container_of(ibdm, struct softmr_dm, vdm.dm);
}

/* A work queue ring the kernel maps: struct softmr_wq_hdr, then WQEs. */
struct softmr_wq {
	struct softmr_wq_hdr *hdr;
	size_t map_size;
	uint32_t num;		/* slots, a power of two */
	uint32_t stride;	/* bytes per WQE */
	uint32_t max_sge;
	uint32_t prod;		/* our producer index */
	pthread_spinlock_t lock;
};

struct softmr_qp {
	struct verbs_qp vqp;
	struct softmr_wq sq;
	struct softmr_wq rq;
	uint32_t max_inline;
	/* ibv_wr_* state, under sq.lock between wr_start and wr_complete */
	uint32_t wr_prod;
	int wr_err;
	struct softmr_send_wqe *wr_cur;
	/* on the context's owed list (under its owed_lock; read as a hint) */
	uint32_t owed;
	struct list_node owed_node;
};

static inline struct softmr_qp *to_sqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct softmr_qp, vqp.qp);
}

struct softmr_srq {
	struct verbs_srq vsrq;
	struct softmr_wq rq;
};

static inline struct softmr_srq *to_ssrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct softmr_srq, vsrq.srq);
}

struct softmr_ah {
	struct ibv_ah ibv_ah;
	uint32_t num;		/* the kernel's AH number */
};

static inline struct softmr_ah *to_sah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct softmr_ah, ibv_ah);
}

/* softmr_qp.c */
extern const struct verbs_context_ops softmr_qp_ops;

/*
 * A completion's flags as the kernel writes them (ib_core's IB_WC_*, which
 * uverbs passes through unchanged) in libibverbs' IBV_WC_* values: the
 * invalidation and checksum bits sit in each other's places.
 */
static inline unsigned int softmr_wc_flags(uint32_t kernel_flags)
{
	unsigned int f = kernel_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM);

	if (kernel_flags & (1 << 2))	/* IB_WC_WITH_INVALIDATE */
		f |= IBV_WC_WITH_INV;
	if (kernel_flags & (1 << 3))	/* IB_WC_IP_CSUM_OK */
		f |= IBV_WC_IP_CSUM_OK;
	return f;
}

static inline struct softmr_context *to_sctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct softmr_context, ibv_ctx.context);
}

/* softmr.c */
int softmr_cq_map(struct softmr_cq *cq, int cmd_fd,
		  const struct softmr_create_cq_resp *drv);
/* softmr_cq_ex.c */
struct ibv_cq_ex *softmr_create_cq_ex(struct ibv_context *ctx,
				      struct ibv_cq_init_attr_ex *attr);
/* softmr_qp.c */
void softmr_ring_owed(struct ibv_context *ibctx);

#endif /* SOFTMR_PROVIDER_H */
