// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Address handles.  An AH's address vector lives in a per-device table
 * under a number; UD send WQEs (user and kernel) name the AH by that
 * number, and the engine copies the vector out under RCU, checking that
 * the AH belongs to the sending QP's PD.
 */

#include <linux/if_vlan.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>

#include "softmr.h"

/**
 * softmr_av_from_attr() - the address vector of an AH attribute
 * @av: filled in
 * @attr: RoCE AH attribute: a GRH with the source GID's attribute
 *
 * Return: 0, or -EINVAL without a GRH.
 */
int softmr_av_from_attr(struct softmr_av *av, const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;
	struct net_device *ndev, *real;

	if (!(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	if (!grh->sgid_attr)
		return -EINVAL;
	memset(av, 0, sizeof(*av));
	av->dgid = grh->dgid;
	av->sgid = grh->sgid_attr->gid;
	av->gid_type = grh->sgid_attr->gid_type;
	av->sgid_index = grh->sgid_index;
	av->traffic_class = grh->traffic_class;
	av->hop_limit = grh->hop_limit;
	av->flow_label = grh->flow_label;
	/*
	 * A GID of a VLAN on the device's netdev goes out through that VLAN
	 * (tagged); one of another netdev stacked on the device's (a
	 * macvlan, a VLAN on a VLAN) does not go on the wire at all.
	 */
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(grh->sgid_attr);
	real = to_sdev(grh->sgid_attr->device)->ndev;
	if (IS_ERR(ndev)) {
		av->upper = true;
	} else if (ndev != real) {
		if (softmr_vlan_of(ndev, real)) {
			av->vlan_ifindex = ndev->ifindex;
			av->vlan_id = vlan_dev_vlan_id(ndev);
		} else {
			av->upper = true;
		}
	}
	rcu_read_unlock();
	return 0;
}

/**
 * softmr_create_ah() - the create_ah and create_user_ah verbs
 * @ibah: the AH, allocated by ib_core
 * @init: the attribute; may be called in atomic context unless
 *        RDMA_CREATE_AH_SLEEPABLE is set
 * @udata: user AHs: the response gets the AH number
 *
 * Return: 0, -EINVAL for an attribute without GRH, -ENOMEM.
 */
int softmr_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		     struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(ibah->device);
	gfp_t gfp = init->flags & RDMA_CREATE_AH_SLEEPABLE ? GFP_KERNEL :
		    GFP_ATOMIC;
	struct softmr_ah *ah = to_sah(ibah);
	struct softmr_create_ah_resp resp = {};
	struct softmr_av *av;
	unsigned long flags;
	int err;

	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&sdev->ah_count) > sdev->attr.max_ah) {
		err = -ENOMEM;
		goto err_count;
	}
	av = kzalloc(sizeof(*av), gfp);
	if (!av) {
		err = -ENOMEM;
		goto err_count;
	}
	err = softmr_av_from_attr(av, init->ah_attr);
	if (err)
		goto err_free;
	av->pd = ibah->pd;
	xa_lock_irqsave(&sdev->ah_xa, flags);
	err = __xa_alloc_cyclic(&sdev->ah_xa, &ah->num, av,
				XA_LIMIT(1, SOFTMR_MAX_AH), &sdev->ah_next, gfp);
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
	if (err < 0)
		goto err_free;
	ah->av = av;
	if (udata) {
		resp.ah_num = ah->num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_lock_irqsave(&sdev->ah_xa, flags);
	__xa_erase(&sdev->ah_xa, ah->num);
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
	/* UD senders may have found it under RCU meanwhile */
	kfree_rcu(av, rcu);
	goto err_count;
err_free:
	kfree(av);
err_count:
	atomic_dec(&sdev->ah_count);
	return err;
}

/**
 * softmr_destroy_ah() - the destroy_ah verb
 * @ibah: the AH
 * @flags: RDMA_DESTROY_AH_SLEEPABLE or 0: nothing here sleeps
 *
 * Return: 0.
 */
int softmr_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct softmr_dev *sdev = to_sdev(ibah->device);
	struct softmr_ah *ah = to_sah(ibah);
	unsigned long irqflags;

	xa_lock_irqsave(&sdev->ah_xa, irqflags);
	__xa_erase(&sdev->ah_xa, ah->num);
	xa_unlock_irqrestore(&sdev->ah_xa, irqflags);
	kfree_rcu(ah->av, rcu);
	atomic_dec(&sdev->ah_count);
	return 0;
}

/**
 * softmr_query_ah() - the query_ah verb
 * @ibah: the AH
 * @attr: filled with its address
 *
 * Return: 0.
 */
int softmr_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	struct softmr_av *av = to_sah(ibah)->av;

	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(attr, 1);
	rdma_ah_set_grh(attr, &av->dgid, av->flow_label, av->sgid_index,
			av->hop_limit, av->traffic_class);
	return 0;
}

/**
 * softmr_av_lookup() - copy the address vector of an AH number
 * @sdev: the device
 * @num: the AH number from a WQE
 * @pd: the PD the AH must belong to
 * @av: filled in
 *
 * Return: true when @num names an AH of @pd.
 */
bool softmr_av_lookup(struct softmr_dev *sdev, u32 num, struct ib_pd *pd,
		      struct softmr_av *av)
{
	struct softmr_av *p;
	bool ok = false;

	rcu_read_lock();
	p = xa_load(&sdev->ah_xa, num);
	if (p && p->pd == pd) {
		*av = *p;
		ok = true;
	}
	rcu_read_unlock();
	return ok;
}
