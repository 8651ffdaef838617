// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Object import (ibv_import_device(3)): a second process, or a second
 * context on a duplicated command fd, uses PDs, MRs and DMs by handle.
 * ib_core answers for the context (QUERY_CONTEXT) and MRs (QUERY_MR);
 * these methods answer for what it does not: that a PD handle is a PD,
 * and where a DM allocation maps.
 */

#define UVERBS_MODULE_NAME softmr_ib
#include <rdma/uverbs_named_ioctl.h>
#include <rdma/restrack.h>

#include "softmr.h"

/**
 * softmr_query_ucontext() - the query_ucontext verb (UVERBS_METHOD_QUERY_CONTEXT)
 * @ibuc: the context being imported
 * @attrs: the request
 *
 * A context has no driver data beyond what SOFTMR_IB_METHOD_QUERY_DEVICE
 * reports (ABI version, status page), which the provider asks for next;
 * answering makes ib_core's QUERY_CONTEXT, and so ibv_import_device(),
 * available.
 *
 * Return: 0.
 */
int softmr_query_ucontext(struct ib_ucontext *ibuc,
			  struct uverbs_attr_bundle *attrs)
{
	return 0;
}

static int UVERBS_HANDLER(SOFTMR_IB_METHOD_PD_QUERY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_pd *pd = uverbs_attr_get_obj(attrs,
					       SOFTMR_IB_ATTR_PD_QUERY_HANDLE);
	u32 pdn;

	if (IS_ERR(pd))
		return PTR_ERR(pd);
	pdn = pd->res.id;
	return uverbs_copy_to(attrs, SOFTMR_IB_ATTR_PD_QUERY_PDN, &pdn,
			      sizeof(pdn));
}

static int UVERBS_HANDLER(SOFTMR_IB_METHOD_DM_QUERY)(struct uverbs_attr_bundle *attrs)
{
	struct ib_dm *ibdm = uverbs_attr_get_obj(attrs,
						 SOFTMR_IB_ATTR_DM_QUERY_HANDLE);
	struct softmr_dm *dm;
	u64 off, len;
	int err;

	if (IS_ERR(ibdm))
		return PTR_ERR(ibdm);
	dm = to_sdm(ibdm);
	off = rdma_user_mmap_get_offset(dm->mmap_entry);
	len = ibdm->length;
	err = uverbs_copy_to(attrs, SOFTMR_IB_ATTR_DM_QUERY_MMAP_OFFSET, &off,
			     sizeof(off));
	if (err)
		return err;
	return uverbs_copy_to(attrs, SOFTMR_IB_ATTR_DM_QUERY_LENGTH, &len,
			      sizeof(len));
}

DECLARE_UVERBS_NAMED_METHOD(SOFTMR_IB_METHOD_PD_QUERY,
			    UVERBS_ATTR_IDR(SOFTMR_IB_ATTR_PD_QUERY_HANDLE,
					    UVERBS_OBJECT_PD,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(SOFTMR_IB_ATTR_PD_QUERY_PDN,
						UVERBS_ATTR_TYPE(u32),
						UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD(SOFTMR_IB_METHOD_DM_QUERY,
			    UVERBS_ATTR_IDR(SOFTMR_IB_ATTR_DM_QUERY_HANDLE,
					    UVERBS_OBJECT_DM,
					    UVERBS_ACCESS_READ,
					    UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(SOFTMR_IB_ATTR_DM_QUERY_MMAP_OFFSET,
						UVERBS_ATTR_TYPE(u64),
						UA_MANDATORY),
			    UVERBS_ATTR_PTR_OUT(SOFTMR_IB_ATTR_DM_QUERY_LENGTH,
						UVERBS_ATTR_TYPE(u64),
						UA_MANDATORY));

ADD_UVERBS_METHODS(softmr_ib_pd_import, UVERBS_OBJECT_PD,
		   &UVERBS_METHOD(SOFTMR_IB_METHOD_PD_QUERY));

ADD_UVERBS_METHODS(softmr_ib_dm_import, UVERBS_OBJECT_DM,
		   &UVERBS_METHOD(SOFTMR_IB_METHOD_DM_QUERY));

const struct uapi_definition softmr_import_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_PD, &softmr_ib_pd_import),
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &softmr_ib_dm_import),
	{},
};
