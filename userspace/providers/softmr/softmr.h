/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * softmr provider for libibverbs: the userspace half of the softmr
 * software RDMA device.
 */

#ifndef SOFTMR_PROVIDER_H
#define SOFTMR_PROVIDER_H

#include <pthread.h>
#include <stddef.h>
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
};

struct softmr_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	/* the ring the kernel fills: struct softmr_ring_hdr, then entries */
	struct softmr_ring_hdr *ring;
	size_t map_size;
	uint32_t num;
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

static inline struct softmr_context *to_sctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct softmr_context, ibv_ctx.context);
}

#endif /* SOFTMR_PROVIDER_H */
