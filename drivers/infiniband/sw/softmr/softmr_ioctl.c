// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr's driver-specific uverbs ioctl namespace (methods added to
 * UVERBS_OBJECT_DEVICE).  ib_core parses and validates the attributes
 * against the declarations below before a handler runs: an unknown
 * mandatory attribute, a wrong length or a missing mandatory attribute never
 * reaches the handler.
 */

#define UVERBS_MODULE_NAME softmr_ib
#include <rdma/uverbs_named_ioctl.h>

#include "softmr.h"

/**
 * softmr_fill_query_device_resp() - softmr-specific device facts
 * @sdev: the device
 * @suc: the asking context, or NULL for a kernel caller
 * @resp: filled in
 */
void softmr_fill_query_device_resp(struct softmr_dev *sdev,
				   struct softmr_ucontext *suc,
				   struct softmr_query_device_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	resp->abi_version = SOFTMR_UVERBS_ABI_VERSION;
	resp->max_pd = sdev->attr.max_pd;
	resp->pd_count = atomic_read(&sdev->pd_count);
	resp->driver_version = SOFTMR_DRIVER_VERSION;
	if (suc && suc->status_entry) {
		resp->features |= SOFTMR_FEATURE_STATUS_PAGE;
		resp->status_mmap_offset =
			rdma_user_mmap_get_offset(suc->status_entry);
		resp->status_mmap_size = PAGE_SIZE;
	}
}

static int UVERBS_HANDLER(SOFTMR_IB_METHOD_QUERY_DEVICE)(struct uverbs_attr_bundle *attrs)
{
	struct softmr_query_device_resp resp;
	struct ib_ucontext *ibuc;
	u32 flags = 0;
	int err;

	err = uverbs_get_flags32(&flags, attrs,
				 SOFTMR_IB_ATTR_QUERY_DEVICE_FLAGS, 0);
	if (err)
		return err;

	ibuc = ib_uverbs_get_ucontext(attrs);
	if (IS_ERR(ibuc))
		return PTR_ERR(ibuc);

	softmr_fill_query_device_resp(to_sdev(ibuc->device), to_suc(ibuc),
				      &resp);
	return uverbs_copy_to_struct_or_zero(attrs,
					     SOFTMR_IB_ATTR_QUERY_DEVICE_RESP,
					     &resp, sizeof(resp));
}

DECLARE_UVERBS_NAMED_METHOD(SOFTMR_IB_METHOD_QUERY_DEVICE,
			    UVERBS_ATTR_FLAGS_IN(SOFTMR_IB_ATTR_QUERY_DEVICE_FLAGS,
						 u32, UA_OPTIONAL),
			    UVERBS_ATTR_PTR_OUT(SOFTMR_IB_ATTR_QUERY_DEVICE_RESP,
						UVERBS_ATTR_STRUCT(struct softmr_query_device_resp,
								   reserved),
						UA_MANDATORY));

ADD_UVERBS_METHODS(softmr_device, UVERBS_OBJECT_DEVICE,
		   &UVERBS_METHOD(SOFTMR_IB_METHOD_QUERY_DEVICE));

const struct uapi_definition softmr_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE, &softmr_device),
	UAPI_DEF_CHAIN(softmr_dm_defs),
	UAPI_DEF_CHAIN(softmr_import_defs),
	UAPI_DEF_CHAIN(softmr_doorbell_defs),
	{},
};
