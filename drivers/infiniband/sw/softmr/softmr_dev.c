// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr device lifetime: creation from `rdma link add`, registration with
 * ib_core, tracking of the underlying netdev and removal.
 *
 * A device is removed by `rdma link del` (ib_core calls
 * ib_unregister_device_and_put()), by the unregistration of its netdev
 * (ib_unregister_device_queued()) or by module unload
 * (softmr_dev_unregister_all()).  Every path ends in softmr_dealloc_driver(),
 * the last driver op ib_core calls for a device.
 */

#include <linux/dma-direct.h>
#include <linux/dma-mapping.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/swiotlb.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <rdma/ib_cache.h>

#include "softmr.h"

static LIST_HEAD(softmr_dev_list);
static DEFINE_SPINLOCK(softmr_dev_list_lock);
/* Serialises device creation so the duplicate checks below are stable. */
static DEFINE_MUTEX(softmr_add_mutex);

/**
 * softmr_dev_get_by_netdev() - find the softmr device bound to a netdev
 * @ndev: the netdev
 *
 * Return: the device with a reference held (release with ib_device_put()),
 * or NULL.
 */
struct softmr_dev *softmr_dev_get_by_netdev(struct net_device *ndev)
{
	struct softmr_dev *sdev, *found = NULL;

	spin_lock_irq(&softmr_dev_list_lock);
	list_for_each_entry(sdev, &softmr_dev_list, list) {
		if (sdev->ndev == ndev && ib_device_try_get(&sdev->ibdev)) {
			found = sdev;
			break;
		}
	}
	spin_unlock_irq(&softmr_dev_list_lock);
	return found;
}

/**
 * softmr_dev_wire_rx() - hand a received packet to the wire device it is for
 * @skb: a RoCEv2 packet, checked by the caller (softmr_net.c)
 * @bad: 0 for a packet to queue, else the counter to count it in
 *
 * Softirq context.  The device is the one on the netdev the packet came
 * in on (a softmr device on the wire), or under the VLAN netdev it came
 * in on, which has the packet's destination address; the VLAN's id goes
 * with the packet as its VLAN tag (softmr_wire_conn_rx() and UD
 * completions look at it).  A packet the IP stack delivered through the
 * loopback device was sent on this host: it goes to the wire device of
 * the same namespace whose netdev (or a VLAN on it) has that address, if
 * that device has force_wire set (softmr_wire_takes()), else nowhere.
 * Everything happens
 * under the device list lock and takes no device reference:
 * softmr_dealloc_driver() takes the device off the list under the same
 * lock before it stops the worker and empties the queue, so nothing is
 * queued after that (and a remote sender cannot hold the device).
 *
 * Return: true when @skb was queued; false when the caller frees it
 * (counted, unless no wire device here takes it).
 */
bool softmr_dev_wire_rx(struct sk_buff *skb, int bad)
{
	struct net_device *in = skb->dev, *real = skb->dev, *vlan;
	struct softmr_dev *sdev;
	union ib_gid saddr, daddr;
	unsigned long flags;
	bool loop = skb->dev->flags & IFF_LOOPBACK;
	bool queued = false;

	/* the netdev's own addresses are its RoCE v2 GIDs */
	softmr_wire_skb_gids(skb, &saddr, &daddr);
	rcu_read_lock();
	if (!loop && !softmr_netdev_has_gid_addr(in, &daddr))
		goto unlock_rcu;
	if (!loop && is_vlan_dev(in)) {
		real = vlan_dev_real_dev(in);
		if (!softmr_vlan_of(in, real))
			goto unlock_rcu;
	}
	spin_lock_irqsave(&softmr_dev_list_lock, flags);
	list_for_each_entry(sdev, &softmr_dev_list, list) {
		if (!READ_ONCE(sdev->wire))
			continue;
		if (!loop && sdev->ndev != real)
			continue;
		if (loop && (!READ_ONCE(sdev->force_wire) ||
			     !net_eq(dev_net_rcu(sdev->ndev),
				     dev_net_rcu(skb->dev))))
			continue;
		/* the netdev or the VLAN on it with the address */
		vlan = loop ? softmr_gid_owner_rcu(sdev->ndev, &daddr) : in;
		if (!vlan)
			continue;
		if (!bad && skb_queue_len(&sdev->wire_rxq) >=
			    SOFTMR_WIRE_RXQ_MAX)
			bad = SOFTMR_CNT_WIRE_RX_DROPPED;
		if (bad) {
			softmr_count(sdev, bad, 1);
			break;
		}
		if (vlan != sdev->ndev)
			__vlan_hwaccel_put_tag(skb, htons(ETH_P_8021Q),
					       vlan_dev_vlan_id(vlan));
		else
			__vlan_hwaccel_clear_tag(skb);
		/* neither the loopback device nor a VLAN is held; ours is */
		skb->dev = sdev->ndev;
		skb_queue_tail(&sdev->wire_rxq, skb);
		softmr_wire_queue_rx(sdev);
		queued = true;
		break;
	}
	spin_unlock_irqrestore(&softmr_dev_list_lock, flags);
unlock_rcu:
	rcu_read_unlock();
	return queued;
}

static ssize_t force_wire_show(struct device *device,
			       struct device_attribute *attr, char *buf)
{
	struct softmr_dev *sdev = rdma_device_to_drv_device(device,
							    struct softmr_dev,
							    ibdev);

	return sysfs_emit(buf, "%d\n", READ_ONCE(sdev->force_wire));
}

static ssize_t force_wire_store(struct device *device,
				struct device_attribute *attr,
				const char *buf, size_t count)
{
	struct softmr_dev *sdev = rdma_device_to_drv_device(device,
							    struct softmr_dev,
							    ibdev);
	bool on;
	int err;

	err = kstrtobool(buf, &on);
	if (err)
		return err;
	WRITE_ONCE(sdev->force_wire, on);
	return count;
}

/*
 * force_wire (root only): traffic from this device to softmr devices on
 * this host takes the wire rather than the local one-copy path, when the
 * device is on the wire (wire=1, a netdev that is not loopback).  Set it on
 * both ends.  Connections choose their path when they reach RTR.
 */
static DEVICE_ATTR_RW(force_wire);

static struct attribute *softmr_dev_attrs[] = {
	&dev_attr_force_wire.attr,
	NULL
};

const struct attribute_group softmr_dev_attr_group = {
	.attrs = softmr_dev_attrs,
};

/**
 * softmr_dev_try_get() - reference a device known by pointer and index
 * @sdev: a device pointer remembered earlier (maybe gone since)
 * @index: its ib_device index then
 *
 * The pointer is only compared with the live devices, never followed
 * unless found among them.
 *
 * Return: @sdev with a reference held, or NULL.
 */
struct softmr_dev *softmr_dev_try_get(struct softmr_dev *sdev, u32 index)
{
	struct softmr_dev *d, *found = NULL;
	unsigned long flags;

	spin_lock_irqsave(&softmr_dev_list_lock, flags);
	list_for_each_entry(d, &softmr_dev_list, list) {
		if (d == sdev && d->ibdev.index == index &&
		    ib_device_try_get(&d->ibdev)) {
			found = d;
			break;
		}
	}
	spin_unlock_irqrestore(&softmr_dev_list_lock, flags);
	return found;
}

/**
 * softmr_dev_get_by_gid() - find the softmr device that owns a GID
 * @gid: the GID (RoCE v2 or v1)
 *
 * Callable in atomic context.
 *
 * Return: the device with a reference held (release with ib_device_put()),
 * or NULL.
 */
struct softmr_dev *softmr_dev_get_by_gid(const union ib_gid *gid)
{
	static const enum ib_gid_type types[] = {
		IB_GID_TYPE_ROCE_UDP_ENCAP, IB_GID_TYPE_ROCE,
	};
	struct softmr_dev *sdev, *found = NULL;
	unsigned long flags;
	int i;

	spin_lock_irqsave(&softmr_dev_list_lock, flags);
	list_for_each_entry(sdev, &softmr_dev_list, list) {
		for (i = 0; i < ARRAY_SIZE(types) && !found; i++) {
			const struct ib_gid_attr *attr;

			attr = rdma_find_gid_by_port(&sdev->ibdev, gid, types[i],
						     1, NULL);
			if (IS_ERR(attr))
				continue;
			rdma_put_gid_attr(attr);
			if (ib_device_try_get(&sdev->ibdev))
				found = sdev;
		}
		if (found)
			break;
	}
	spin_unlock_irqrestore(&softmr_dev_list_lock, flags);
	return found;
}

static void softmr_status_write(struct softmr_dev *sdev,
				enum ib_port_state state, bool changed)
{
	struct softmr_status_page *st = sdev->status;

	lockdep_assert_held(&sdev->port_lock);
	WRITE_ONCE(st->seq, st->seq + 1);
	/* odd seq visible before the fields change; pairs with reader's rmb */
	smp_wmb();
	WRITE_ONCE(st->port_state, state);
	WRITE_ONCE(st->netdev_mtu, READ_ONCE(sdev->ndev->mtu));
	WRITE_ONCE(st->active_mtu,
		   ib_mtu_int_to_enum(READ_ONCE(sdev->ndev->mtu)));
	WRITE_ONCE(st->ifindex, sdev->ndev->ifindex);
	if (changed)
		WRITE_ONCE(st->port_events, st->port_events + 1);
	/* fields visible before seq turns even again */
	smp_wmb();
	WRITE_ONCE(st->seq, st->seq + 1);
}

/**
 * softmr_port_update() - derive the port state from the netdev
 * @sdev: the device
 *
 * The port is ACTIVE while the netdev is up and has carrier.  A change is
 * reported to ib_core consumers as IB_EVENT_PORT_ACTIVE or
 * IB_EVENT_PORT_ERR, and published in the status page.
 */
void softmr_port_update(struct softmr_dev *sdev)
{
	struct net_device *ndev = sdev->ndev;
	enum ib_port_state state;
	struct ib_event ev = {};
	bool changed;

	state = netif_running(ndev) && netif_carrier_ok(ndev) ?
		IB_PORT_ACTIVE : IB_PORT_DOWN;

	spin_lock(&sdev->port_lock);
	changed = sdev->port_state != state;
	sdev->port_state = state;
	softmr_status_write(sdev, state, changed);
	spin_unlock(&sdev->port_lock);

	if (!changed)
		return;
	ev.device = &sdev->ibdev;
	ev.element.port_num = 1;
	ev.event = state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
					     IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);
}

/**
 * softmr_netdev_event() - follow the netdevs softmr devices are bound to
 * @nb: the notifier block
 * @event: NETDEV_* event
 * @arg: struct netdev_notifier_info
 *
 * Return: NOTIFY_OK.
 */
int softmr_netdev_event(struct notifier_block *nb, unsigned long event,
			void *arg)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(arg);
	struct softmr_dev *sdev;

	sdev = softmr_dev_get_by_netdev(ndev);
	if (!sdev)
		return NOTIFY_OK;

	switch (event) {
	case NETDEV_UNREGISTER:
		/* now: the netdev's namespace may be going too */
		softmr_wire_detach(sdev);
		ib_unregister_device_queued(&sdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
	case NETDEV_CHANGEMTU:
		softmr_port_update(sdev);
		break;
	default:
		break;
	}
	ib_device_put(&sdev->ibdev);
	return NOTIFY_OK;
}

static bool softmr_netdev_supported(struct net_device *ndev)
{
	if (is_vlan_dev(ndev))
		return false;
	return ndev->type == ARPHRD_ETHER || ndev->type == ARPHRD_LOOPBACK;
}

/*
 * Does @dev map pages one to one, so that a DMA address leads back to its
 * page?  ODP copies find their pages that way (softmr_odp_page()); behind
 * an IOMMU, Xen's swiotlb, GART or forced bounce buffers they could not,
 * and ODP stays off.
 */
static bool softmr_dma_is_direct(struct device *dev)
{
	struct page *page = alloc_page(GFP_KERNEL);
	bool direct;
	dma_addr_t dma;

	if (!page)
		return false;
	dma = dma_map_page(dev, page, 0, PAGE_SIZE, DMA_BIDIRECTIONAL);
	if (dma_mapping_error(dev, dma)) {
		__free_page(page);
		return false;
	}
	direct = dma_to_phys(dev, dma) == page_to_phys(page) &&
		 !is_swiotlb_force_bounce(dev);
	dma_unmap_page(dev, dma, PAGE_SIZE, DMA_BIDIRECTIONAL);
	__free_page(page);
	return direct;
}

static void softmr_init_attr(struct softmr_dev *sdev)
{
	struct ib_device_attr *attr = &sdev->attr;

	attr->fw_ver = SOFTMR_FW_VER;
	attr->sys_image_guid = sdev->ibdev.node_guid;
	attr->vendor_id = SOFTMR_VENDOR_ID;
	attr->vendor_part_id = SOFTMR_VENDOR_PART_ID;
	attr->hw_ver = SOFTMR_HW_VER;
	attr->page_size_cap = PAGE_SIZE;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	attr->max_pd = SOFTMR_MAX_PD;
	attr->max_mr = SOFTMR_MAX_MR;
	attr->max_cq = SOFTMR_MAX_CQ;
	attr->max_cqe = SOFTMR_MAX_CQE;
	attr->max_mr_size = SOFTMR_MAX_MR_SIZE;
	attr->max_qp = SOFTMR_MAX_QP;
	attr->max_qp_wr = SOFTMR_MAX_QP_WR;
	attr->max_send_sge = SOFTMR_MAX_SGE;
	attr->max_recv_sge = SOFTMR_MAX_SGE;
	attr->max_sge_rd = SOFTMR_MAX_SGE;
	attr->max_srq = SOFTMR_MAX_SRQ;
	attr->max_srq_wr = SOFTMR_MAX_SRQ_WR;
	attr->max_srq_sge = SOFTMR_MAX_SGE;
	attr->max_ah = SOFTMR_MAX_AH;
	attr->max_qp_rd_atom = SOFTMR_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = SOFTMR_MAX_RD_ATOM;
	attr->max_res_rd_atom = SOFTMR_MAX_RD_ATOM * SOFTMR_MAX_QP;
	/* atomics are CPU atomics on the memory: global */
	attr->atomic_cap = IB_ATOMIC_GLOB;
	/*
	 * Memory management extensions: fast registration (alloc_mr,
	 * REG_MR), local and remote invalidation; kernel consumers only
	 * (softmr_frmr.c).  Memory windows type 1 and 2B (softmr_mw.c).
	 */
	attr->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_SRQ_RESIZE |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B;
	attr->max_mw = SOFTMR_MAX_MW;
	attr->max_fast_reg_page_list_len = SOFTMR_MAX_FRMR_PAGES;
	/*
	 * ODP: MRs fault on access, and the engine reaches every MR through
	 * the MR access API, so every RC and UD operation works on ODP MRs.
	 */
	if (sdev->odp_ok) {
		attr->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
		attr->odp_caps.general_caps = IB_ODP_SUPPORT |
					      IB_ODP_SUPPORT_IMPLICIT;
		attr->odp_caps.per_transport_caps.rc_odp_caps =
			IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
			IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
			IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;
		attr->odp_caps.per_transport_caps.ud_odp_caps =
			IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
			IB_ODP_SUPPORT_SRQ_RECV;
	}
	attr->max_pkeys = SOFTMR_PKEY_TBL_LEN;
}

/* Node GUID: the netdev's EUI-48 as EUI-64, or a random one for lo. */
static void softmr_init_guid(struct softmr_dev *sdev, struct net_device *ndev)
{
	u8 *guid = (u8 *)&sdev->ibdev.node_guid;

	if (ndev->addr_len == ETH_ALEN && !is_zero_ether_addr(ndev->dev_addr)) {
		addrconf_addr_eui48(guid, ndev->dev_addr);
		return;
	}
	get_random_bytes(guid, sizeof(sdev->ibdev.node_guid));
	guid[0] = (guid[0] & ~0x01) | 0x02;	/* locally administered */
}

static int softmr_dev_init(struct softmr_dev *sdev, struct net_device *ndev)
{
	struct platform_device_info info = {
		.name = SOFTMR_DRIVER_NAME,
		.id = PLATFORM_DEVID_AUTO,
		.dma_mask = DMA_BIT_MASK(64),
	};
	struct ib_device *ibdev = &sdev->ibdev;
	int err;

	INIT_LIST_HEAD(&sdev->list);
	spin_lock_init(&sdev->port_lock);
	sdev->port_state = IB_PORT_NOP;
	softmr_mr_init_dev(sdev);
	softmr_qp_init_dev(sdev);

	/* before anything can fail: softmr_dealloc_driver() stops these */
	skb_queue_head_init(&sdev->wire_rxq);
	INIT_WORK(&sdev->wire_rx_work, softmr_wire_rx_work);
	INIT_LIST_HEAD(&sdev->wire_entry);

	sdev->counters = alloc_percpu(struct softmr_counters);
	if (!sdev->counters)
		return -ENOMEM;
	sdev->status = vmalloc_user(PAGE_SIZE);
	if (!sdev->status)
		return -ENOMEM;
	sdev->status->abi_version = SOFTMR_UVERBS_ABI_VERSION;

	sdev->pdev = platform_device_register_full(&info);
	if (IS_ERR(sdev->pdev)) {
		err = PTR_ERR(sdev->pdev);
		sdev->pdev = NULL;
		return err;
	}

	sdev->odp_ok = SOFTMR_ODP_SUPPORTED &&
		       softmr_dma_is_direct(&sdev->pdev->dev);
	sdev->ndev = ndev;
	netdev_hold(ndev, &sdev->ndev_tracker, GFP_KERNEL);

	ib_set_device_ops(ibdev, &softmr_dev_ops);
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->dev.parent = &sdev->pdev->dev;
	ibdev->local_dma_lkey = 0;
	ibdev->driver_def = softmr_uapi_defs;
	/* arming goes through the kernel; user CQs are polled in user space */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	/* doorbells: a POST_SEND/POST_RECV/POST_SRQ_RECV with no WRs */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV);
	strscpy(ibdev->node_desc, "softmr", sizeof(ibdev->node_desc));
	softmr_init_guid(sdev, ndev);
	softmr_init_attr(sdev);
	err = softmr_dm_init_dev(sdev);
	if (err)
		return err;

	return ib_device_set_netdev(ibdev, ndev, 1);
}

/**
 * softmr_xa_in_use() - count the used indices of a table
 * @xa: an allocating xarray (keys, QPNs, AHs)
 *
 * Entries and reservations (xa_alloc() with a NULL entry) both count.  Not
 * xa_empty(): an allocation failing inside the xarray (xas_create() under
 * memory pressure or fault injection) can leave empty nodes linked in,
 * which hold no index and which xa_destroy() frees.
 *
 * Return: the number of used indices.
 */
unsigned int softmr_xa_in_use(struct xarray *xa)
{
	XA_STATE(xas, xa, 0);
	unsigned long flags;
	unsigned int n = 0;
	void *entry;

	/*
	 * Under the lock: no retry entries.  Reservations are XA_ZERO_ENTRY;
	 * so is index 0 of an XA_FLAGS_ALLOC1 array once it has nodes.
	 */
	xas_lock_irqsave(&xas, flags);
	xas_for_each(&xas, entry, ULONG_MAX)
		if (xas.xa_index || !xa_is_zero(entry) ||
		    !(xa->xa_flags & XA_FLAGS_ZERO_BUSY))
			n++;
	xas_unlock_irqrestore(&xas, flags);
	return n;
}

/**
 * softmr_dealloc_driver() - release what softmr_dev_init() acquired
 * @ibdev: the device
 *
 * Called by ib_dealloc_device(), after unregistration or a failed
 * registration; the last driver op for a device.
 */
void softmr_dealloc_driver(struct ib_device *ibdev)
{
	struct softmr_dev *sdev = to_sdev(ibdev);

	spin_lock_irq(&softmr_dev_list_lock);
	list_del_init(&sdev->list);
	spin_unlock_irq(&softmr_dev_list_lock);

	softmr_wire_dev_cleanup(sdev);
	WARN_ON(atomic_read(&sdev->pd_count));
	if (softmr_xa_in_use(&sdev->mr_xa) || atomic_read(&sdev->mr_count) ||
	    atomic_read(&sdev->mw_count))
		softmr_mr_report_leaks(sdev);
	else if (!xa_empty(&sdev->mr_xa))
		dev_info(&sdev->ibdev.dev,
			 "MR table: empty nodes left by a failed allocation, no key in use\n");
	xa_destroy(&sdev->mr_xa);
	WARN_ON(softmr_xa_in_use(&sdev->qp_xa));
	xa_destroy(&sdev->qp_xa);
	WARN_ON(softmr_xa_in_use(&sdev->ah_xa));
	xa_destroy(&sdev->ah_xa);
	if (sdev->ndev)
		netdev_put(sdev->ndev, &sdev->ndev_tracker);
	if (sdev->pdev)
		platform_device_unregister(sdev->pdev);
	vfree(sdev->status);
	softmr_dm_cleanup_dev(sdev);
	free_percpu(sdev->counters);
}

/**
 * softmr_dev_add() - create and register a softmr device
 * @name: the ib device name, e.g. "softmr0"
 * @ndev: the Ethernet (or loopback) netdev to bind to
 *
 * Return: 0, -EINVAL for an unsuitable netdev, -EEXIST when the name is
 * taken or @ndev already has a softmr device, or another negative errno.
 */
int softmr_dev_add(const char *name, struct net_device *ndev)
{
	struct softmr_dev *sdev, *other;
#if !SOFTMR_KERNEL_72
	struct ib_device *ibdev;
#endif
	int err;

	if (!softmr_netdev_supported(ndev)) {
		pr_err("%s: netdev %s is not an Ethernet device\n",
		       SOFTMR_DRIVER_NAME, ndev->name);
		return -EINVAL;
	}

	mutex_lock(&softmr_add_mutex);
#if !SOFTMR_KERNEL_72	/* later: only ib_register_device() checks */
	ibdev = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (ibdev) {
		ib_device_put(ibdev);
		pr_err("%s: device name %s is in use\n", SOFTMR_DRIVER_NAME,
		       name);
		err = -EEXIST;
		goto unlock;
	}
#endif
	other = softmr_dev_get_by_netdev(ndev);
	if (other) {
		pr_err("%s: %s already has device %s\n", SOFTMR_DRIVER_NAME,
		       ndev->name, dev_name(&other->ibdev.dev));
		ib_device_put(&other->ibdev);
		err = -EEXIST;
		goto unlock;
	}

	sdev = ib_alloc_device(softmr_dev, ibdev);
	if (!sdev) {
		err = -ENOMEM;
		goto unlock;
	}
	err = softmr_dev_init(sdev, ndev);
	if (err)
		goto dealloc;

	err = ib_register_device(&sdev->ibdev, name, &sdev->pdev->dev);
	if (err) {
		/* ib_core reports a name taken meanwhile as ENFILE */
		if (err == -ENFILE)
			err = -EEXIST;
		goto dealloc;
	}

	spin_lock_irq(&softmr_dev_list_lock);
	list_add_tail(&sdev->list, &softmr_dev_list);
	spin_unlock_irq(&softmr_dev_list_lock);
	softmr_wire_attach(sdev);
	softmr_port_update(sdev);
	mutex_unlock(&softmr_add_mutex);
	return 0;

dealloc:
	ib_dealloc_device(&sdev->ibdev);
unlock:
	mutex_unlock(&softmr_add_mutex);
	return err;
}

/**
 * softmr_dev_unregister_all() - remove every softmr device
 *
 * For module unload, after the link ops are unregistered.  A device whose
 * removal is already under way elsewhere (rdma link del, or the queued
 * unregistration of a vanished netdev) is still on the list until its
 * softmr_dealloc_driver() ran; ib_unregister_device() waits for that.  What
 * such a removal does after softmr_dealloc_driver() is ib_core's own code,
 * so nothing of this module is called once the list is empty.
 */
void softmr_dev_unregister_all(void)
{
	struct softmr_dev *sdev;

	for (;;) {
		spin_lock_irq(&softmr_dev_list_lock);
		sdev = list_first_entry_or_null(&softmr_dev_list,
						struct softmr_dev, list);
		if (sdev) {
			list_del_init(&sdev->list);
			get_device(&sdev->ibdev.dev);
		}
		spin_unlock_irq(&softmr_dev_list_lock);
		if (!sdev)
			break;
		softmr_wire_detach(sdev);
		ib_unregister_device(&sdev->ibdev);
		put_device(&sdev->ibdev.dev);
	}
}
