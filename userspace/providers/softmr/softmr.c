// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr provider: device matching, context setup (ABI check through the
 * driver's QUERY_DEVICE ioctl, status page mapping) and the verbs the
 * kernel driver implements so far.  Every verb not listed in
 * softmr_ctx_ops is left to libibverbs, which answers EOPNOTSUPP.
 */

#include <config.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/cmd_ioctl.h>
#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include "softmr.h"

static const struct verbs_match_ent softmr_match_table[] = {
	VERBS_NAME_MATCH("softmr", NULL),
	VERBS_MODALIAS_MATCH("platform:softmr", NULL),
	{},
};

static int softmr_query_device(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(context, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff,
		 (unsigned int)fw & 0xffff);
	return 0;
}

static int softmr_query_port(struct ibv_context *context, uint8_t port,
			     struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *softmr_alloc_pd(struct ibv_context *context)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_alloc_pd(context, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int softmr_dealloc_pd(struct ibv_pd *pd)
{
	int ret;

	ret = ibv_cmd_dealloc_pd(pd);
	if (!ret)
		free(pd);
	return ret;
}

static struct ibv_mr *softmr_reg_mr(struct ibv_pd *pd, void *addr,
				    size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/* dma-buf import: the kernel attaches to the buffer and maps it. */
static struct ibv_mr *softmr_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					   size_t length, uint64_t iova, int fd,
					   int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_reg_dmabuf_mr(pd, offset, length, iova, fd, access, vmr,
				    NULL);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static int softmr_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			   void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

static int softmr_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

/* create_cq and resize_cq answer with the ring's place. */
struct softmr_cq_resp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct softmr_create_cq_resp drv;
};

struct softmr_resize_cq_resp {
	struct ib_uverbs_resize_cq_resp ibv_resp;
	struct softmr_create_cq_resp drv;
};

int softmr_cq_map(struct softmr_cq *cq, int cmd_fd,
		  const struct softmr_create_cq_resp *drv)
{
	void *p;

	if (!drv->num_entries || (drv->num_entries & (drv->num_entries - 1)))
		return EPROTO;
	p = mmap(NULL, drv->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 cmd_fd, drv->mmap_offset);
	if (p == MAP_FAILED)
		return errno;
	cq->ring = p;
	cq->map_size = drv->mmap_size;
	cq->num = drv->num_entries;
	return 0;
}

static struct ibv_cq *softmr_create_cq(struct ibv_context *ctx, int cqe,
				       struct ibv_comp_channel *channel,
				       int comp_vector)
{
	struct softmr_cq_resp resp = {};
	struct ibv_create_cq cmd;
	struct softmr_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err_free;
	ret = softmr_cq_map(cq, ctx->cmd_fd, &resp.drv);
	if (ret)
		goto err_destroy;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	return &cq->vcq.cq;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

static int softmr_destroy_cq(struct ibv_cq *ibcq)
{
	struct softmr_cq *cq = to_scq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	munmap(cq->ring, cq->map_size);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

static int softmr_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct softmr_cq *cq = to_scq(ibcq);
	struct ib_uverbs_wc *slots;
	uint32_t cons, prod;
	int n = 0;

	pthread_spin_lock(&cq->lock);
	slots = (void *)((uint8_t *)cq->ring + SOFTMR_RING_HDR_SIZE);
	cons = cq->ring->consumer;
	prod = atomic_load_explicit((_Atomic(uint32_t) *)&cq->ring->producer,
				    memory_order_acquire);
	while (n < ne && cons != prod) {
		const struct ib_uverbs_wc *s = &slots[cons & (cq->num - 1)];
		struct ibv_wc *w = &wc[n++];

		w->wr_id = s->wr_id;
		w->status = s->status;
		w->opcode = s->opcode;
		w->vendor_err = s->vendor_err;
		w->byte_len = s->byte_len;
		w->imm_data = s->ex.imm_data;
		w->qp_num = s->qp_num;
		w->src_qp = s->src_qp;
		w->wc_flags = softmr_wc_flags(s->wc_flags);
		w->pkey_index = s->pkey_index;
		w->slid = s->slid;
		w->sl = s->sl;
		w->dlid_path_bits = s->dlid_path_bits;
		cons++;
	}
	atomic_store_explicit((_Atomic(uint32_t) *)&cq->ring->consumer, cons,
			      memory_order_release);
	pthread_spin_unlock(&cq->lock);
	if (n < ne)	/* drained: the posts it waits for run now */
		softmr_ring_owed(ibcq->context);
	return n;
}

static int softmr_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	/* before sleeping on the CQ: WQEs posted without a doorbell run */
	softmr_ring_owed(ibcq->context);
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

static int softmr_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct softmr_cq *cq = to_scq(ibcq);
	struct softmr_resize_cq_resp resp = {};
	struct softmr_cq old;
	struct ibv_resize_cq cmd;
	int ret;

	pthread_spin_lock(&cq->lock);
	old = *cq;
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (!ret)
		ret = softmr_cq_map(cq, ibcq->context->cmd_fd, &resp.drv);
	if (!ret)
		munmap(old.ring, old.map_size);
	pthread_spin_unlock(&cq->lock);
	return ret;
}

/*
 * Device memory is accessed in 4-byte units, as on ConnectX (and as
 * rdma-core's tests expect): offset and length must be multiples of 4 and
 * inside the allocation.
 */
static bool softmr_dm_range_ok(struct softmr_dm *dm, uint64_t offset,
			       size_t length)
{
	return !(offset % SOFTMR_DM_ACCESS_ALIGN) &&
	       !(length % SOFTMR_DM_ACCESS_ALIGN) && offset <= dm->length &&
	       length <= dm->length - offset;
}

/* ibv_memcpy_to_dm(3): a checked copy into the mapped pages. */
static int softmr_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			       const void *host_addr, size_t length)
{
	struct softmr_dm *dm = to_sdm(ibdm);

	if (!softmr_dm_range_ok(dm, dm_offset, length))
		return EINVAL;
	memcpy((uint8_t *)dm->addr + dm_offset, host_addr, length);
	return 0;
}

static int softmr_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
				 uint64_t dm_offset, size_t length)
{
	struct softmr_dm *dm = to_sdm(ibdm);

	if (!softmr_dm_range_ok(dm, dm_offset, length))
		return EINVAL;
	memcpy(host_addr, (uint8_t *)dm->addr + dm_offset, length);
	return 0;
}

static struct ibv_dm *softmr_alloc_dm(struct ibv_context *ctx,
				      struct ibv_alloc_dm_attr *attr)
{
	DECLARE_COMMAND_BUFFER(cmdb, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
			       1);
	size_t pg = sysconf(_SC_PAGESIZE);
	struct softmr_dm *dm;
	uint64_t mmap_offset;
	int ret;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	fill_attr_out(cmdb, SOFTMR_IB_ATTR_ALLOC_DM_MMAP_OFFSET, &mmap_offset,
		      sizeof(mmap_offset));
	ret = ibv_cmd_alloc_dm(ctx, attr, &dm->vdm, cmdb);
	if (ret)
		goto err_free;
	dm->length = attr->length;
	dm->map_size = (attr->length + pg - 1) & ~(pg - 1);
	dm->addr = mmap(NULL, dm->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			ctx->cmd_fd, mmap_offset);
	if (dm->addr == MAP_FAILED) {
		ret = errno;
		ibv_cmd_free_dm(&dm->vdm);
		goto err_free;
	}
	dm->vdm.dm.memcpy_to_dm = softmr_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = softmr_memcpy_from_dm;
	return &dm->vdm.dm;

err_free:
	free(dm);
	errno = ret;
	return NULL;
}

/*
 * Import (ibv_import_device(3)): a context on a duplicated command fd uses
 * the PDs, MRs and DMs of the original by handle; the kernel checks each
 * handle and tells where a DM maps.
 */
static struct ibv_pd *softmr_import_pd(struct ibv_context *ctx,
				       uint32_t pd_handle)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_PD,
			       SOFTMR_IB_METHOD_PD_QUERY, 2);
	struct ibv_pd *pd;
	uint32_t pdn;
	int ret;

	fill_attr_in_obj(cmd, SOFTMR_IB_ATTR_PD_QUERY_HANDLE, pd_handle);
	fill_attr_out_ptr(cmd, SOFTMR_IB_ATTR_PD_QUERY_PDN, &pdn);
	ret = execute_ioctl(ctx, cmd);
	if (ret) {
		errno = ret;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = ctx;
	pd->handle = pd_handle;
	return pd;
}

static void softmr_unimport_pd(struct ibv_pd *pd)
{
	free(pd);
}

static struct ibv_mr *softmr_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct verbs_mr *vmr = calloc(1, sizeof(*vmr));
	int ret;

	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_query_mr(pd, vmr, mr_handle);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static void softmr_unimport_mr(struct ibv_mr *mr)
{
	free(verbs_get_mr(mr));
}

static struct ibv_dm *softmr_import_dm(struct ibv_context *ctx,
				       uint32_t dm_handle)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_DM,
			       SOFTMR_IB_METHOD_DM_QUERY, 3);
	size_t pg = sysconf(_SC_PAGESIZE);
	uint64_t mmap_offset, length;
	struct softmr_dm *dm;
	int ret;

	fill_attr_in_obj(cmd, SOFTMR_IB_ATTR_DM_QUERY_HANDLE, dm_handle);
	fill_attr_out_ptr(cmd, SOFTMR_IB_ATTR_DM_QUERY_MMAP_OFFSET,
			  &mmap_offset);
	fill_attr_out_ptr(cmd, SOFTMR_IB_ATTR_DM_QUERY_LENGTH, &length);
	ret = execute_ioctl(ctx, cmd);
	if (ret) {
		errno = ret;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	dm->length = length;
	dm->map_size = (length + pg - 1) & ~(pg - 1);
	dm->addr = mmap(NULL, dm->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			ctx->cmd_fd, mmap_offset);
	if (dm->addr == MAP_FAILED) {
		ret = errno;
		free(dm);
		errno = ret;
		return NULL;
	}
	dm->vdm.handle = dm_handle;
	dm->vdm.dm.context = ctx;
	dm->vdm.dm.handle = dm_handle;
	dm->vdm.dm.memcpy_to_dm = softmr_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = softmr_memcpy_from_dm;
	return &dm->vdm.dm;
}

static void softmr_unimport_dm(struct ibv_dm *ibdm)
{
	struct softmr_dm *dm = to_sdm(ibdm);

	munmap(dm->addr, dm->map_size);
	free(dm);
}

/* The allocation as a dma-buf fd (softmr's DM method). */
static int softmr_dm_export_dmabuf_fd(struct ibv_dm *ibdm)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_DM,
			       SOFTMR_IB_METHOD_DM_EXPORT_DMABUF, 2);
	int32_t fd = -1;
	int ret;

	fill_attr_in_obj(cmd, SOFTMR_IB_ATTR_DM_EXPORT_HANDLE,
			 to_sdm(ibdm)->vdm.handle);
	fill_attr_out_ptr(cmd, SOFTMR_IB_ATTR_DM_EXPORT_FD, &fd);
	ret = execute_ioctl(ibdm->context, cmd);
	if (ret) {
		errno = ret;
		return -1;
	}
	return fd;
}

static int softmr_free_dm(struct ibv_dm *ibdm)
{
	struct softmr_dm *dm = to_sdm(ibdm);
	int ret;

	ret = ibv_cmd_free_dm(&dm->vdm);
	if (ret)
		return ret;
	munmap(dm->addr, dm->map_size);
	free(dm);
	return 0;
}

static struct ibv_mr *softmr_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
				       uint64_t dm_offset, size_t length,
				       unsigned int access)
{
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_reg_dm_mr(pd, &to_sdm(ibdm)->vdm, dm_offset, length,
				access, vmr, NULL);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

static void softmr_free_context(struct ibv_context *ibctx)
{
	struct softmr_context *ctx = to_sctx(ibctx);

	if (ctx->status)
		munmap((void *)ctx->status, ctx->status_size);
	if (ctx->db_fd >= 0)
		close(ctx->db_fd);
	pthread_spin_destroy(&ctx->owed_lock);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

/* The send doorbell file; without it (an older module) POST_SEND rings. */
static int softmr_open_doorbell(struct ibv_context *ibctx)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_DEVICE,
			       SOFTMR_IB_METHOD_DOORBELL_FD, 1);
	int32_t fd = -1;

	fill_attr_out_ptr(cmd, SOFTMR_IB_ATTR_DOORBELL_FD, &fd);
	if (execute_ioctl(ibctx, cmd))
		return -1;
	return fd;
}

static const struct verbs_context_ops softmr_ctx_ops = {
	.advise_mr = ibv_cmd_advise_mr,
	.alloc_dm = softmr_alloc_dm,
	.alloc_pd = softmr_alloc_pd,
	.create_cq = softmr_create_cq,
	.create_cq_ex = softmr_create_cq_ex,
	.dealloc_pd = softmr_dealloc_pd,
	.dereg_mr = softmr_dereg_mr,
	.destroy_cq = softmr_destroy_cq,
	.free_context = softmr_free_context,
	.free_dm = softmr_free_dm,
	.import_dm = softmr_import_dm,
	.import_mr = softmr_import_mr,
	.import_pd = softmr_import_pd,
	.unimport_dm = softmr_unimport_dm,
	.unimport_mr = softmr_unimport_mr,
	.unimport_pd = softmr_unimport_pd,
	.dm_export_dmabuf_fd = softmr_dm_export_dmabuf_fd,
	.query_device_ex = softmr_query_device,
	.query_port = softmr_query_port,
	.poll_cq = softmr_poll_cq,
	.reg_dm_mr = softmr_reg_dm_mr,
	.reg_dmabuf_mr = softmr_reg_dmabuf_mr,
	.reg_mr = softmr_reg_mr,
	.req_notify_cq = softmr_req_notify_cq,
	.rereg_mr = softmr_rereg_mr,
	.resize_cq = softmr_resize_cq,
};

/* softmr's driver-specific method: ABI version, limits, status page. */
static int softmr_query_driver(struct ibv_context *ibctx,
			       struct softmr_query_device_resp *resp)
{
	DECLARE_COMMAND_BUFFER(cmd, UVERBS_OBJECT_DEVICE,
			       SOFTMR_IB_METHOD_QUERY_DEVICE, 1);

	fill_attr_out_ptr(cmd, SOFTMR_IB_ATTR_QUERY_DEVICE_RESP, resp);
	return execute_ioctl(ibctx, cmd);
}

static int softmr_map_status(struct softmr_context *ctx)
{
	void *p;

	if (!(ctx->dev_info.features & SOFTMR_FEATURE_STATUS_PAGE))
		return 0;
	p = mmap(NULL, ctx->dev_info.status_mmap_size, PROT_READ, MAP_SHARED,
		 ctx->ibv_ctx.context.cmd_fd,
		 ctx->dev_info.status_mmap_offset);
	if (p == MAP_FAILED)
		return errno;
	ctx->status = p;
	ctx->status_size = ctx->dev_info.status_mmap_size;
	if (ctx->status->abi_version != SOFTMR_UVERBS_ABI_VERSION)
		return EPROTO;
	return 0;
}

/* A new context (alloc), or one on an fd that already has one (import). */
static struct verbs_context *softmr_init_context(struct ibv_device *ibdev,
						 int cmd_fd, bool import)
{
	struct ib_uverbs_get_context_resp resp;
	struct softmr_context *ctx;
	struct ibv_get_context cmd;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;
	ctx->db_fd = -1;
	pthread_spin_init(&ctx->owed_lock, PTHREAD_PROCESS_PRIVATE);
	list_head_init(&ctx->owed);

	if (import)
		ret = ibv_cmd_query_context(&ctx->ibv_ctx.context, NULL);
	else
		ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
					  NULL, &resp, sizeof(resp));
	if (ret)
		goto err;

	ret = softmr_query_driver(&ctx->ibv_ctx.context, &ctx->dev_info);
	if (ret) {
		verbs_err(&ctx->ibv_ctx,
			  "softmr: %s: driver query failed (%s); kernel module too old?\n",
			  ibdev->name, strerror(ret));
		goto err;
	}
	if (ctx->dev_info.abi_version != SOFTMR_UVERBS_ABI_VERSION) {
		fprintf(stderr,
			"softmr: %s: kernel ABI version %u, this provider supports %u; refusing the device\n",
			ibdev->name, ctx->dev_info.abi_version,
			SOFTMR_UVERBS_ABI_VERSION);
		ret = EPROTO;
		goto err;
	}
	ret = softmr_map_status(ctx);
	if (ret) {
		verbs_err(&ctx->ibv_ctx, "softmr: %s: status page: %s\n",
			  ibdev->name, strerror(ret));
		goto err;
	}

	ctx->db_fd = softmr_open_doorbell(&ctx->ibv_ctx.context);
	verbs_set_ops(&ctx->ibv_ctx, &softmr_ctx_ops);
	verbs_set_ops(&ctx->ibv_ctx, &softmr_qp_ops);
	return &ctx->ibv_ctx;

err:
	if (ctx->status)
		munmap((void *)ctx->status, ctx->status_size);
	pthread_spin_destroy(&ctx->owed_lock);
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret;
	return NULL;
}

static struct verbs_context *softmr_alloc_context(struct ibv_device *ibdev,
						  int cmd_fd,
						  void *private_data)
{
	return softmr_init_context(ibdev, cmd_fd, false);
}

static struct verbs_context *softmr_import_context(struct ibv_device *ibdev,
						   int cmd_fd)
{
	return softmr_init_context(ibdev, cmd_fd, true);
}

static void softmr_uninit_device(struct verbs_device *verbs_device)
{
	free(container_of(verbs_device, struct softmr_device, ibv_dev));
}

static struct verbs_device *
softmr_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct softmr_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->ibv_dev;
}

static const struct verbs_device_ops softmr_dev_ops = {
	.name = "softmr",
	/*
	 * The kernel reports SOFTMR_UVERBS_ABI_VERSION as the device's
	 * abi_version; libibverbs refuses another one with a message naming
	 * both versions.
	 */
	.match_min_abi_version = SOFTMR_UVERBS_ABI_VERSION,
	.match_max_abi_version = SOFTMR_UVERBS_ABI_VERSION,
	.match_table = softmr_match_table,
	.alloc_device = softmr_alloc_device,
	.uninit_device = softmr_uninit_device,
	.alloc_context = softmr_alloc_context,
	.import_context = softmr_import_context,
};
PROVIDER_DRIVER(softmr, softmr_dev_ops);
