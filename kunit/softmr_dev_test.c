// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of softmr device lifetime and the device, port and PD verbs:
 * creation through the link ops' path, duplicate and bad netdevs, query
 * values, netdev state tracking and removal when the netdev goes away.
 */

#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/rtnetlink.h>
#include <net/net_namespace.h>

#include "softmr_kunit.h"

/* Remove a device by name, as `rdma link del` does; absent is fine. */
void softmr_kunit_dev_del(const char *name)
{
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (ibdev)
		ib_unregister_device_and_put(ibdev);
}

static void softmr_kunit_dev_del_action(void *name)
{
	softmr_kunit_dev_del(name);
}

bool softmr_kunit_dev_gone(const char *name)
{
	struct ib_device *ibdev = ib_device_get_by_name(name,
							RDMA_DRIVER_UNKNOWN);

	if (!ibdev)
		return true;
	ib_device_put(ibdev);
	return false;
}

/**
 * softmr_kunit_dev_add() - create a device as `rdma link add` would
 * @test: the test; the device is removed when it ends
 * @name: ib device name
 * @ndev: netdev to bind
 *
 * Return: the device (no reference held; valid until removed).
 */
struct softmr_dev *softmr_kunit_dev_add(struct kunit *test, const char *name,
					struct net_device *ndev)
{
	struct ib_device *ibdev;
	struct softmr_dev *sdev;

	KUNIT_ASSERT_EQ(test, softmr_dev_add(name, ndev), 0);
	ibdev = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	KUNIT_ASSERT_NOT_NULL(test, ibdev);
	sdev = to_sdev(ibdev);
	ib_device_put(ibdev);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, softmr_kunit_dev_del_action,
						  kunit_kstrdup(test, name, GFP_KERNEL)));
	return sdev;
}

static struct net_device *lo(void)
{
	return init_net.loopback_dev;
}

static void set_lo_up(bool up)
{
	rtnl_lock();
	if (up)
		dev_open(lo(), NULL);
	else
		dev_close(lo());
	rtnl_unlock();
}

static void softmr_test_add_del(struct kunit *test)
{
	struct softmr_dev *sdev;

	sdev = softmr_kunit_dev_add(test, "softmr_kt0", lo());
	KUNIT_EXPECT_STREQ(test, dev_name(&sdev->ibdev.dev), "softmr_kt0");
	KUNIT_EXPECT_PTR_EQ(test, sdev->ndev, lo());
	/* a real struct device that can serve as dma_device */
	KUNIT_ASSERT_NOT_NULL(test, sdev->ibdev.dma_device);
	KUNIT_EXPECT_PTR_EQ(test, sdev->ibdev.dma_device, &sdev->pdev->dev);
	KUNIT_EXPECT_EQ(test, dma_get_mask(sdev->ibdev.dma_device),
			DMA_BIT_MASK(64));
	KUNIT_EXPECT_FALSE(test, ib_uses_virt_dma(&sdev->ibdev));
	KUNIT_EXPECT_EQ(test, rdma_port_get_link_layer(&sdev->ibdev, 1),
			IB_LINK_LAYER_ETHERNET);
	KUNIT_EXPECT_TRUE(test, rdma_protocol_roce(&sdev->ibdev, 1));

	softmr_kunit_dev_del("softmr_kt0");
	KUNIT_EXPECT_TRUE(test, softmr_kunit_dev_gone("softmr_kt0"));
	/* the name and the netdev are free again */
	sdev = softmr_kunit_dev_add(test, "softmr_kt0", lo());
	KUNIT_EXPECT_PTR_EQ(test, sdev->ndev, lo());
}

static void softmr_test_duplicates(struct kunit *test)
{
	softmr_kunit_dev_add(test, "softmr_kt1", lo());
	/* same name */
	KUNIT_EXPECT_EQ(test, softmr_dev_add("softmr_kt1", lo()), -EEXIST);
	/* same netdev under another name */
	KUNIT_EXPECT_EQ(test, softmr_dev_add("softmr_kt2", lo()), -EEXIST);
	KUNIT_EXPECT_TRUE(test, softmr_kunit_dev_gone("softmr_kt2"));
}

static void softmr_test_tunnel_setup(struct net_device *ndev)
{
	ndev->type = ARPHRD_IPGRE;
	ndev->addr_len = 4;
}

static void softmr_test_non_ethernet(struct kunit *test)
{
	struct net_device *ndev;

	ndev = alloc_netdev(0, "smrkt%d", NET_NAME_ENUM,
			    softmr_test_tunnel_setup);
	KUNIT_ASSERT_NOT_NULL(test, ndev);
	KUNIT_EXPECT_EQ(test, softmr_dev_add("softmr_kt3", ndev), -EINVAL);
	KUNIT_EXPECT_TRUE(test, softmr_kunit_dev_gone("softmr_kt3"));
	free_netdev(ndev);
}

static void softmr_test_query_device(struct kunit *test)
{
	struct softmr_dev *sdev = softmr_kunit_dev_add(test, "softmr_kt4",
						       lo());
	struct ib_device_attr *a = &sdev->ibdev.attrs;
	struct softmr_query_device_resp resp;
	char fw[IB_FW_VERSION_NAME_MAX];

	KUNIT_EXPECT_EQ(test, a->vendor_id, SOFTMR_VENDOR_ID);
	KUNIT_EXPECT_EQ(test, a->vendor_part_id, SOFTMR_VENDOR_PART_ID);
	KUNIT_EXPECT_EQ(test, a->max_pd, SOFTMR_MAX_PD);
	KUNIT_EXPECT_EQ(test, a->page_size_cap, (u64)PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, a->sys_image_guid, sdev->ibdev.node_guid);
	KUNIT_EXPECT_NE(test, sdev->ibdev.node_guid, 0);
	KUNIT_EXPECT_TRUE(test, a->kernel_cap_flags & IBK_ALLOW_USER_UNREG);
	KUNIT_EXPECT_EQ(test, a->max_qp, SOFTMR_MAX_QP);
	KUNIT_EXPECT_EQ(test, a->max_qp_wr, SOFTMR_MAX_QP_WR);
	KUNIT_EXPECT_EQ(test, a->max_send_sge, SOFTMR_MAX_SGE);
	KUNIT_EXPECT_EQ(test, a->atomic_cap, IB_ATOMIC_GLOB);
	KUNIT_EXPECT_EQ(test, a->max_cq, SOFTMR_MAX_CQ);
	KUNIT_EXPECT_EQ(test, a->max_cqe, SOFTMR_MAX_CQE);
	KUNIT_EXPECT_EQ(test, a->max_mr, SOFTMR_MAX_MR);
	KUNIT_EXPECT_EQ(test, a->max_mr_size, SOFTMR_MAX_MR_SIZE);
	KUNIT_EXPECT_EQ(test, a->max_srq, SOFTMR_MAX_SRQ);
	KUNIT_EXPECT_EQ(test, a->odp_caps.general_caps,
			IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT);
	/* every operation reaches MRs through the MR access API */
	KUNIT_EXPECT_EQ(test, a->odp_caps.per_transport_caps.rc_odp_caps,
			IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
			IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
			IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV);
	KUNIT_EXPECT_EQ(test, a->odp_caps.per_transport_caps.ud_odp_caps,
			IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
			IB_ODP_SUPPORT_SRQ_RECV);
	KUNIT_EXPECT_TRUE(test, a->kernel_cap_flags & IBK_ON_DEMAND_PAGING);
	/* fast registration (memory management extensions), windows 1, 2B */
	KUNIT_EXPECT_EQ(test, a->device_cap_flags,
			IB_DEVICE_RC_RNR_NAK_GEN | IB_DEVICE_SYS_IMAGE_GUID |
			IB_DEVICE_SRQ_RESIZE | IB_DEVICE_MEM_MGT_EXTENSIONS |
			IB_DEVICE_MEM_WINDOW | IB_DEVICE_MEM_WINDOW_TYPE_2B);
	KUNIT_EXPECT_EQ(test, a->max_fast_reg_page_list_len,
			SOFTMR_MAX_FRMR_PAGES);
	KUNIT_EXPECT_EQ(test, a->max_mw, SOFTMR_MAX_MW);

	ib_get_device_fw_str(&sdev->ibdev, fw);
	KUNIT_EXPECT_STREQ(test, fw, "0.1.0");

	softmr_fill_query_device_resp(sdev, NULL, &resp);
	KUNIT_EXPECT_EQ(test, resp.abi_version, SOFTMR_UVERBS_ABI_VERSION);
	KUNIT_EXPECT_EQ(test, resp.max_pd, SOFTMR_MAX_PD);
	KUNIT_EXPECT_EQ(test, resp.features, 0);
	KUNIT_EXPECT_EQ(test, resp.reserved, 0);
}

static void softmr_test_query_port(struct kunit *test)
{
	struct softmr_dev *sdev = softmr_kunit_dev_add(test, "softmr_kt5",
						       lo());
	struct ib_port_attr pa;
	u16 pkey;

	KUNIT_ASSERT_EQ(test, ib_query_port(&sdev->ibdev, 1, &pa), 0);
	KUNIT_EXPECT_EQ(test, pa.gid_tbl_len, SOFTMR_GID_TBL_LEN);
	KUNIT_EXPECT_EQ(test, pa.pkey_tbl_len, SOFTMR_PKEY_TBL_LEN);
	KUNIT_EXPECT_EQ(test, pa.max_mtu, IB_MTU_4096);
	KUNIT_EXPECT_EQ(test, pa.active_mtu, IB_MTU_4096);	/* lo: 64 KiB */
	KUNIT_EXPECT_TRUE(test, pa.ip_gids);
	KUNIT_EXPECT_EQ(test, ib_query_port(&sdev->ibdev, 2, &pa), -EINVAL);

	KUNIT_EXPECT_EQ(test, ib_query_pkey(&sdev->ibdev, 1, 0, &pkey), 0);
	KUNIT_EXPECT_EQ(test, pkey, 0xffff);
	KUNIT_EXPECT_EQ(test, ib_query_pkey(&sdev->ibdev, 1, 1, &pkey),
			-EINVAL);
}

static atomic_t softmr_test_events[IB_EVENT_GID_CHANGE + 1];

static void softmr_test_event_handler(struct ib_event_handler *h,
				      struct ib_event *ev)
{
	if (ev->event <= IB_EVENT_GID_CHANGE)
		atomic_inc(&softmr_test_events[ev->event]);
}

static enum ib_port_state port_state(struct softmr_dev *sdev)
{
	struct ib_port_attr pa;

	if (ib_query_port(&sdev->ibdev, 1, &pa))
		return IB_PORT_NOP;
	return pa.state;
}

/* Port state follows the netdev; changes raise events and the status page. */
static void softmr_test_port_follows_netdev(struct kunit *test)
{
	struct ib_event_handler h;
	struct softmr_dev *sdev;
	bool was_up = netif_running(lo());
	u32 seq;
	u64 events;

	set_lo_up(false);
	sdev = softmr_kunit_dev_add(test, "softmr_kt6", lo());
	KUNIT_EXPECT_EQ(test, port_state(sdev), IB_PORT_DOWN);
	KUNIT_EXPECT_EQ(test, sdev->status->port_state, IB_PORT_DOWN);
	seq = READ_ONCE(sdev->status->seq);
	events = READ_ONCE(sdev->status->port_events);
	KUNIT_EXPECT_EQ(test, seq % 2, 0);

	flush_workqueue(ib_wq);	/* events of the creation are delivered */
	memset(softmr_test_events, 0, sizeof(softmr_test_events));
	INIT_IB_EVENT_HANDLER(&h, &sdev->ibdev, softmr_test_event_handler);
	ib_register_event_handler(&h);

	set_lo_up(true);
	flush_workqueue(ib_wq);
	KUNIT_EXPECT_EQ(test, port_state(sdev), IB_PORT_ACTIVE);
	KUNIT_EXPECT_EQ(test, sdev->status->port_state, IB_PORT_ACTIVE);
	KUNIT_EXPECT_EQ(test, sdev->status->port_events, events + 1);
	KUNIT_EXPECT_GT(test, READ_ONCE(sdev->status->seq), seq);
	KUNIT_EXPECT_EQ(test, READ_ONCE(sdev->status->seq) % 2, 0);

	set_lo_up(false);
	KUNIT_EXPECT_EQ(test, port_state(sdev), IB_PORT_DOWN);
	KUNIT_EXPECT_EQ(test, sdev->status->port_events, events + 2);

	set_lo_up(true);
	KUNIT_EXPECT_EQ(test, port_state(sdev), IB_PORT_ACTIVE);

	flush_workqueue(ib_wq);
	ib_unregister_event_handler(&h);
	KUNIT_EXPECT_EQ(test,
			atomic_read(&softmr_test_events[IB_EVENT_PORT_ACTIVE]),
			2);
	KUNIT_EXPECT_EQ(test,
			atomic_read(&softmr_test_events[IB_EVENT_PORT_ERR]), 1);
	set_lo_up(was_up);
}

static netdev_tx_t softmr_test_xmit(struct sk_buff *skb,
				    struct net_device *ndev)
{
	dev_kfree_skb_any(skb);
	return NETDEV_TX_OK;
}

static const struct net_device_ops softmr_test_netdev_ops = {
	.ndo_start_xmit = softmr_test_xmit,
};

/* Unregistering the netdev removes the softmr device and its reference. */
static void softmr_test_netdev_unregister(struct kunit *test)
{
	struct net_device *ndev;
	int i;

	ndev = alloc_etherdev(0);
	KUNIT_ASSERT_NOT_NULL(test, ndev);
	ndev->netdev_ops = &softmr_test_netdev_ops;
	eth_hw_addr_random(ndev);
	KUNIT_ASSERT_EQ(test, register_netdev(ndev), 0);

	KUNIT_ASSERT_EQ(test, softmr_dev_add("softmr_kt7", ndev), 0);
	KUNIT_EXPECT_FALSE(test, softmr_kunit_dev_gone("softmr_kt7"));

	/* returns only once every reference, softmr's too, is dropped */
	unregister_netdev(ndev);
	for (i = 0; i < 100 && !softmr_kunit_dev_gone("softmr_kt7"); i++)
		msleep(20);
	KUNIT_EXPECT_TRUE(test, softmr_kunit_dev_gone("softmr_kt7"));
	free_netdev(ndev);
}

/* A PD as ib_uverbs allocates one: driver object, then the op. */
struct ib_pd *softmr_kunit_pd_alloc(struct softmr_dev *sdev, int *err)
{
	struct ib_device *ibdev = &sdev->ibdev;
	struct ib_pd *pd = rdma_zalloc_drv_obj(ibdev, ib_pd);

	if (!pd) {
		*err = -ENOMEM;
		return NULL;
	}
	pd->device = &sdev->ibdev;
	*err = sdev->ibdev.ops.alloc_pd(pd, NULL);
	if (*err) {
		kfree(pd);
		return NULL;
	}
	return pd;
}

void softmr_kunit_pd_free(struct ib_pd *pd)
{
	pd->device->ops.dealloc_pd(pd, NULL);
	kfree(pd);
}

static void softmr_kunit_pd_free_action(void *pd)
{
	softmr_kunit_pd_free(pd);
}

/**
 * softmr_kunit_pd() - a PD freed when the test ends
 * @test: the test
 * @sdev: the device
 *
 * Return: the PD.
 */
struct ib_pd *softmr_kunit_pd(struct kunit *test, struct softmr_dev *sdev)
{
	struct ib_pd *pd;
	int err;

	pd = softmr_kunit_pd_alloc(sdev, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test,
						  softmr_kunit_pd_free_action,
						  pd));
	return pd;
}

static void softmr_test_pd(struct kunit *test)
{
	struct softmr_dev *sdev = softmr_kunit_dev_add(test, "softmr_kt8",
						       lo());
	/* ib_core's MAD layer holds a PD (and its DMA MR) for QP1 */
	int pd_base = atomic_read(&sdev->pd_count);
	int mr_base = atomic_read(&sdev->mr_count);
	int saved = sdev->attr.max_pd;
	struct ib_pd *pd[3], *kpd;
	int err;

	KUNIT_EXPECT_EQ(test, pd_base, 1);
	KUNIT_EXPECT_EQ(test, mr_base, 1);
	pd[0] = softmr_kunit_pd_alloc(sdev, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&sdev->pd_count), pd_base + 1);

	/* the device limit is enforced */
	sdev->attr.max_pd = pd_base + 2;
	pd[1] = softmr_kunit_pd_alloc(sdev, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	pd[2] = softmr_kunit_pd_alloc(sdev, &err);
	KUNIT_EXPECT_EQ(test, err, -ENOMEM);
	KUNIT_EXPECT_NULL(test, pd[2]);
	KUNIT_EXPECT_EQ(test, atomic_read(&sdev->pd_count), pd_base + 2);
	sdev->attr.max_pd = saved;

	softmr_kunit_pd_free(pd[1]);
	softmr_kunit_pd_free(pd[0]);
	KUNIT_EXPECT_EQ(test, atomic_read(&sdev->pd_count), pd_base);

	/* kernel PDs come with a DMA MR for their local_dma_lkey */
	kpd = ib_alloc_pd(&sdev->ibdev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(kpd));
	KUNIT_EXPECT_NE(test, kpd->local_dma_lkey, 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&sdev->mr_count), mr_base + 1);
	ib_dealloc_pd(kpd);
	KUNIT_EXPECT_EQ(test, atomic_read(&sdev->pd_count), pd_base);
	KUNIT_EXPECT_EQ(test, atomic_read(&sdev->mr_count), mr_base);
}

/*
 * The device's tables must be empty when it is freed.  An xarray whose
 * node allocation failed half-way (fault injection in the VM fuzzer) keeps
 * empty nodes: not empty to xa_empty(), yet no index is used.
 * Reservations do count.
 */
static void softmr_test_table_in_use(struct kunit *test)
{
	DEFINE_XARRAY_ALLOC1(xa);
	XA_STATE(xas, &xa, 0xabcdef);	/* deep: several nodes */
	u32 a, b;

	KUNIT_EXPECT_EQ(test, softmr_xa_in_use(&xa), 0);
	do {
		xas_lock(&xas);
		xas_create_range(&xas);
		xas_unlock(&xas);
	} while (xas_nomem(&xas, GFP_KERNEL));
	KUNIT_ASSERT_EQ(test, xas_error(&xas), 0);
	KUNIT_EXPECT_FALSE(test, xa_empty(&xa));
	KUNIT_EXPECT_EQ(test, softmr_xa_in_use(&xa), 0);

	KUNIT_ASSERT_EQ(test, xa_alloc(&xa, &a, NULL, xa_limit_32b,
				       GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, softmr_xa_in_use(&xa), 1);
	KUNIT_ASSERT_EQ(test, xa_alloc(&xa, &b, test, xa_limit_32b,
				       GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, softmr_xa_in_use(&xa), 2);
	xa_erase(&xa, a);
	KUNIT_EXPECT_EQ(test, softmr_xa_in_use(&xa), 1);
	xa_erase(&xa, b);
	KUNIT_EXPECT_EQ(test, softmr_xa_in_use(&xa), 0);
	xa_destroy(&xa);
	KUNIT_EXPECT_TRUE(test, xa_empty(&xa));
}

static struct kunit_case softmr_dev_cases[] = {
	KUNIT_CASE(softmr_test_add_del),
	KUNIT_CASE(softmr_test_duplicates),
	KUNIT_CASE(softmr_test_non_ethernet),
	KUNIT_CASE(softmr_test_query_device),
	KUNIT_CASE(softmr_test_query_port),
	KUNIT_CASE(softmr_test_port_follows_netdev),
	KUNIT_CASE(softmr_test_netdev_unregister),
	KUNIT_CASE(softmr_test_pd),
	KUNIT_CASE(softmr_test_table_in_use),
	{}
};

static struct kunit_suite softmr_dev_suite = {
	.name = "softmr_dev",
	.test_cases = softmr_dev_cases,
};

kunit_test_suite(softmr_dev_suite);
