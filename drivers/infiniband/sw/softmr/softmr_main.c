// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr module: registers the `softmr` rdma link type and follows the
 * netdevs that softmr devices are bound to.
 */

#include <linux/module.h>
#include <rdma/rdma_netlink.h>

#include "softmr.h"

static int softmr_newlink(const char *ibdev_name, struct net_device *ndev)
{
	return softmr_dev_add(ibdev_name, ndev);
}

static struct rdma_link_ops softmr_link_ops = {
	.type = SOFTMR_DRIVER_NAME,
	.newlink = softmr_newlink,
};

static struct notifier_block softmr_netdev_nb = {
	.notifier_call = softmr_netdev_event,
};

static int __init softmr_init(void)
{
	int err;

	err = softmr_odp_wq_init();
	if (err)
		return err;
	err = softmr_engine_init();
	if (err)
		goto err_odp;
	err = softmr_net_init();
	if (err)
		goto err_engine;
	err = register_netdevice_notifier(&softmr_netdev_nb);
	if (err)
		goto err_net;
	rdma_link_register(&softmr_link_ops);
	return 0;

err_net:
	softmr_net_exit();
err_engine:
	softmr_engine_exit();
err_odp:
	softmr_odp_wq_destroy();
	return err;
}

static void __exit softmr_exit(void)
{
	rdma_link_unregister(&softmr_link_ops);
	softmr_dev_unregister_all();
	unregister_netdevice_notifier(&softmr_netdev_nb);
	softmr_net_exit();
	softmr_engine_exit();
	softmr_odp_wq_destroy();
}

late_initcall(softmr_init);
module_exit(softmr_exit);

MODULE_DESCRIPTION("softmr: software RDMA device with full memory registration");
MODULE_AUTHOR("softmr developers");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("softmr");
