// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr device, port, user context and protection domain verbs, and the
 * ib_device_ops table that names every verb softmr implements.
 */

#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include "softmr.h"

static int softmr_query_device(struct ib_device *ibdev,
			       struct ib_device_attr *attr,
			       struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(ibdev);

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	*attr = sdev->attr;
	return 0;
}

static int softmr_query_port(struct ib_device *ibdev, u32 port_num,
			     struct ib_port_attr *attr)
{
	struct softmr_dev *sdev = to_sdev(ibdev);
	enum ib_port_state state;
	int err;

	/* ib_core has zeroed *attr and validated port_num */
	spin_lock(&sdev->port_lock);
	state = sdev->port_state;
	spin_unlock(&sdev->port_lock);

	attr->state = state;
	attr->phys_state = state == IB_PORT_ACTIVE ?
			   IB_PORT_PHYS_STATE_LINK_UP :
			   IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = min(ib_mtu_int_to_enum(READ_ONCE(sdev->ndev->mtu)),
			       IB_MTU_4096);
	attr->gid_tbl_len = SOFTMR_GID_TBL_LEN;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = SOFTMR_MAX_MSG_SZ;
	attr->bad_pkey_cntr = 0;
	attr->qkey_viol_cntr = 0;
	attr->pkey_tbl_len = SOFTMR_PKEY_TBL_LEN;
	attr->lid = 0;
	attr->sm_lid = 0;
	attr->lmc = 0;
	attr->max_vl_num = SOFTMR_MAX_VL_NUM;
	attr->sm_sl = 0;
	attr->subnet_timeout = 0;
	attr->init_type_reply = 0;
	attr->ip_gids = true;

	/*
	 * A netdev without link settings (lo, dummy) would make
	 * ib_get_eth_speed() log a warning on every query; it then assumes
	 * 1 Gb/s, which is 1X SDR.
	 */
	if (!sdev->ndev->ethtool_ops ||
	    !sdev->ndev->ethtool_ops->get_link_ksettings) {
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
		return 0;
	}
	err = ib_get_eth_speed(ibdev, port_num, &attr->active_speed,
			       &attr->active_width);
	return err;
}

static int softmr_get_port_immutable(struct ib_device *ibdev, u32 port_num,
				     struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr = {};
	int err;

	/*
	 * RoCE v1 and v2 GIDs from the netdev; MADs and the CM through the
	 * GSI QP (QP1), which the engine runs like a UD QP.
	 */
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE |
				    RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	err = ib_query_port(ibdev, port_num, &attr);
	if (err)
		return err;
	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	return 0;
}

static enum rdma_link_layer softmr_get_link_layer(struct ib_device *ibdev,
						  u32 port_num)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int softmr_query_pkey(struct ib_device *ibdev, u32 port_num,
			     u16 index, u16 *pkey)
{
	if (index >= SOFTMR_PKEY_TBL_LEN)
		return -EINVAL;
	*pkey = 0xffff;	/* the default full-membership P_Key */
	return 0;
}

static void softmr_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%d.%d.%d",
		 (SOFTMR_DRIVER_VERSION >> 16) & 0xff,
		 (SOFTMR_DRIVER_VERSION >> 8) & 0xff,
		 SOFTMR_DRIVER_VERSION & 0xff);
}

static int softmr_alloc_ucontext(struct ib_ucontext *ibuc,
				 struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(ibuc->device);
	struct softmr_ucontext *suc = to_suc(ibuc);

	/* No driver data is defined for this command in either direction. */
	if (udata->inlen && !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;

	softmr_sq_poll_context_init(suc);
	suc->status_entry = softmr_mmap_entry_insert(ibuc, sdev->status,
						     PAGE_SIZE, false);
	if (IS_ERR(suc->status_entry))
		return PTR_ERR(suc->status_entry);
	if (softmr_doorbell_init(suc)) {
		rdma_user_mmap_entry_remove(suc->status_entry);
		return -ENOMEM;
	}
	return 0;
}

static void softmr_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct softmr_ucontext *suc = to_suc(ibuc);

	softmr_doorbell_cleanup(suc);
	rdma_user_mmap_entry_remove(suc->status_entry);
}

/*
 * Nothing of softmr's is reachable from user space but through ib_core's
 * mmap entries, whose mappings keep only memory no one else gets (referenced
 * ring pages, DM held by its VMAs); defining the op lets a device be
 * removed (and the module unloaded once no DM mapping holds it) while
 * processes still have it open.
 */
static void softmr_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static int softmr_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(ibpd->device);

	if (atomic_inc_return(&sdev->pd_count) > sdev->attr.max_pd) {
		atomic_dec(&sdev->pd_count);
		return -ENOMEM;
	}
	return 0;
}

static int softmr_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(ibpd->device);

	atomic_dec(&sdev->pd_count);
	return 0;
}

/*
 * Kernel API adapters (softmr_compat.h): the verbs keep 6.12's signatures.
 */
#if !SOFTMR_CQ_ATTRS
/* Before 6.11 uverbs passed &attrs->driver_udata (NULL for kernel CQs). */
static struct uverbs_attr_bundle *softmr_udata_attrs(struct ib_udata *udata)
{
	return udata ? container_of(udata, struct uverbs_attr_bundle,
				    driver_udata) : NULL;
}

static int softmr_create_cq_udata(struct ib_cq *ibcq,
				  const struct ib_cq_init_attr *attr,
				  struct ib_udata *udata)
{
	return softmr_create_cq(ibcq, attr, softmr_udata_attrs(udata));
}

static struct ib_mr *softmr_reg_user_mr_dmabuf_udata(struct ib_pd *ibpd,
						     u64 offset, u64 length,
						     u64 iova, int fd,
						     int access,
						     struct ib_udata *udata)
{
	return softmr_reg_user_mr_dmabuf(ibpd, offset, length, iova, fd,
					 access, softmr_udata_attrs(udata));
}

#define SOFTMR_OP_CREATE_CQ		softmr_create_cq_udata
#define SOFTMR_OP_REG_USER_MR_DMABUF	softmr_reg_user_mr_dmabuf_udata
#elif SOFTMR_HAVE_DMAH
/* No alloc_dmah: ib_core has no DMA handle of ours to pass. */
static struct ib_mr *softmr_reg_user_mr_dmah(struct ib_pd *ibpd, u64 start,
					     u64 length, u64 iova, int access,
					     struct ib_dmah *dmah,
					     struct ib_udata *udata)
{
	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	return softmr_reg_user_mr(ibpd, start, length, iova, access, udata);
}

static struct ib_mr *softmr_reg_user_mr_dmabuf_dmah(struct ib_pd *ibpd,
						    u64 offset, u64 length,
						    u64 iova, int fd,
						    int access,
						    struct ib_dmah *dmah,
						    struct uverbs_attr_bundle *attrs)
{
	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	return softmr_reg_user_mr_dmabuf(ibpd, offset, length, iova, fd,
					 access, attrs);
}

#define SOFTMR_OP_REG_USER_MR		softmr_reg_user_mr_dmah
#define SOFTMR_OP_REG_USER_MR_DMABUF	softmr_reg_user_mr_dmabuf_dmah
#endif

#if SOFTMR_KERNEL_72
static int softmr_resize_user_cq(struct ib_cq *ibcq, unsigned int cqe,
				 struct ib_udata *udata)
{
	if (cqe > INT_MAX)
		return -EINVAL;
	return softmr_resize_cq(ibcq, cqe, udata);
}
#endif

#ifndef SOFTMR_OP_CREATE_CQ
#define SOFTMR_OP_CREATE_CQ		softmr_create_cq
#endif
#ifndef SOFTMR_OP_REG_USER_MR
#define SOFTMR_OP_REG_USER_MR		softmr_reg_user_mr
#endif
#ifndef SOFTMR_OP_REG_USER_MR_DMABUF
#define SOFTMR_OP_REG_USER_MR_DMABUF	softmr_reg_user_mr_dmabuf
#endif

const struct ib_device_ops softmr_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SOFTMR_UVERBS_ABI_VERSION,
	.device_group = &softmr_dev_attr_group,

	.advise_mr = softmr_advise_mr,
	.alloc_dm = softmr_alloc_dm,
	.alloc_hw_port_stats = softmr_alloc_hw_port_stats,
	.alloc_mr = softmr_alloc_mr,
	.alloc_mw = softmr_alloc_mw,
	.alloc_pd = softmr_alloc_pd,
	.create_cq = SOFTMR_OP_CREATE_CQ,
	.alloc_ucontext = softmr_alloc_ucontext,
	.create_ah = softmr_create_ah,
	.create_qp = softmr_create_qp,
	.create_srq = softmr_create_srq,
	.create_user_ah = softmr_create_ah,
	.destroy_ah = softmr_destroy_ah,
	.destroy_qp = softmr_destroy_qp,
	.destroy_srq = softmr_destroy_srq,
	.modify_qp = softmr_modify_qp,
	.modify_srq = softmr_modify_srq,
	.post_recv = softmr_post_recv,
	.post_send = softmr_post_send,
	.post_srq_recv = softmr_post_srq_recv,
	.query_ah = softmr_query_ah,
	.query_qp = softmr_query_qp,
	.query_srq = softmr_query_srq,
	.dealloc_dm = softmr_dealloc_dm,
	.dealloc_driver = softmr_dealloc_driver,
	.dealloc_mw = softmr_dealloc_mw,
	.dealloc_pd = softmr_dealloc_pd,
	.dealloc_ucontext = softmr_dealloc_ucontext,
	.dereg_mr = softmr_dereg_mr,
	.destroy_cq = softmr_destroy_cq,
	.disassociate_ucontext = softmr_disassociate_ucontext,
	.fill_res_mr_entry = softmr_fill_res_mr_entry,
	.get_dev_fw_str = softmr_get_dev_fw_str,
	.get_dma_mr = softmr_get_dma_mr,
	.get_hw_stats = softmr_get_hw_stats,
	.get_link_layer = softmr_get_link_layer,
	.get_port_immutable = softmr_get_port_immutable,
	.map_mr_sg = softmr_map_mr_sg,
	.mmap = softmr_mmap,
	.mmap_free = softmr_mmap_free,
	.poll_cq = softmr_poll_cq,
	.query_device = softmr_query_device,
	.query_pkey = softmr_query_pkey,
	.query_port = softmr_query_port,
	.reg_dm_mr = softmr_reg_dm_mr,
	.query_ucontext = softmr_query_ucontext,
	.reg_user_mr = SOFTMR_OP_REG_USER_MR,
	.reg_user_mr_dmabuf = SOFTMR_OP_REG_USER_MR_DMABUF,
	.req_notify_cq = softmr_req_notify_cq,
	.rereg_user_mr = softmr_rereg_user_mr,
#if SOFTMR_KERNEL_72
	.resize_user_cq = softmr_resize_user_cq,
#else
	.resize_cq = softmr_resize_cq,
#endif

	INIT_RDMA_OBJ_SIZE(ib_ah, softmr_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, softmr_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, softmr_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_qp, softmr_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, softmr_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_pd, softmr_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, softmr_ucontext, ibuc),
};
