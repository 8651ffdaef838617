/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * softmr: a software RDMA device with the full memory registration family.
 *
 * Objects, their lifetime and where each verb lives are described in
 * Documentation/infiniband/softmr.rst.
 */

#ifndef SOFTMR_H
#define SOFTMR_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/netdevice.h>
#include <linux/platform_device.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/softmr-abi.h>

#define SOFTMR_DRIVER_NAME	"softmr"
#define SOFTMR_DRIVER_VERSION	0x000100	/* 0.1.0 */

/* Device limits; only objects that exist are advertised as non-zero. */
#define SOFTMR_VENDOR_ID	0xffffff	/* no OUI: a software device */
#define SOFTMR_VENDOR_PART_ID	0x5346		/* "SF" */
#define SOFTMR_HW_VER		1
/* fw_ver as rdma-core prints it: major << 32 | minor << 16 | patch */
#define SOFTMR_FW_VER		(((u64)(SOFTMR_DRIVER_VERSION >> 16) << 32) | \
				 ((SOFTMR_DRIVER_VERSION >> 8 & 0xff) << 16) | \
				 (SOFTMR_DRIVER_VERSION & 0xff))
#define SOFTMR_MAX_PD		0x10000
#define SOFTMR_GID_TBL_LEN	1024
#define SOFTMR_PKEY_TBL_LEN	1
#define SOFTMR_MAX_VL_NUM	1

/**
 * struct softmr_dev - one softmr RDMA device
 * @ibdev: the ib_core device, first so ib_alloc_device() can allocate us
 * @pdev: platform device that owns the DMA setup; parent and dma_device
 * @ndev: netdev the device is bound to, held for the device's lifetime
 * @ndev_tracker: reference tracker for @ndev
 * @list: entry in the driver's device list
 * @attr: device attributes reported by query_device
 * @port_lock: protects @port_state and the status page
 * @port_state: current IB port state, derived from the netdev
 * @status: read-only page mapped by user contexts (struct softmr_status_page)
 * @pd_count: PDs allocated now
 */
struct softmr_dev {
	struct ib_device ibdev;
	struct platform_device *pdev;
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	struct list_head list;
	struct ib_device_attr attr;

	spinlock_t port_lock;		/* port_state and the status page */
	enum ib_port_state port_state;
	struct softmr_status_page *status;

	atomic_t pd_count;
};

/**
 * struct softmr_ucontext - a user context (one open of the device)
 * @ibuc: the ib_core context
 * @status_entry: mmap entry of the device status page for this context
 */
struct softmr_ucontext {
	struct ib_ucontext ibuc;
	struct rdma_user_mmap_entry *status_entry;
};

/**
 * struct softmr_pd - a protection domain
 * @ibpd: the ib_core PD
 */
struct softmr_pd {
	struct ib_pd ibpd;
};

static inline struct softmr_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct softmr_dev, ibdev);
}

static inline struct softmr_ucontext *to_suc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct softmr_ucontext, ibuc);
}

static inline struct softmr_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct softmr_pd, ibpd);
}

/* softmr_dev.c: device creation, registration and netdev tracking */
int softmr_dev_add(const char *name, struct net_device *ndev);
struct softmr_dev *softmr_dev_get_by_netdev(struct net_device *ndev);
void softmr_dev_unregister_all(void);
void softmr_dealloc_driver(struct ib_device *ibdev);
void softmr_port_update(struct softmr_dev *sdev);
int softmr_netdev_event(struct notifier_block *nb, unsigned long event,
			void *arg);

/* softmr_verbs.c: device, port and PD verbs */
extern const struct ib_device_ops softmr_dev_ops;

/* softmr_mmap.c: user mappings of kernel memory */
struct rdma_user_mmap_entry *
softmr_mmap_entry_insert(struct ib_ucontext *ibuc, void *kaddr, size_t size,
			 bool writable);
int softmr_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void softmr_mmap_free(struct rdma_user_mmap_entry *rdma_entry);

/* softmr_ioctl.c: the driver-specific uverbs namespace */
extern const struct uapi_definition softmr_uapi_defs[];
void softmr_fill_query_device_resp(struct softmr_dev *sdev,
				   struct softmr_ucontext *suc,
				   struct softmr_query_device_resp *resp);

#endif /* SOFTMR_H */
