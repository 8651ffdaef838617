// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * VLANs on the wire.  A device binds to a real netdev; ib_core gives it
 * the GIDs of the 802.1Q VLAN netdevs on that netdev too (as rxe has
 * them).  Traffic from such a GID leaves through its VLAN netdev, and a
 * packet that arrives through one is the device's, with the VLAN's id as
 * its VLAN tag (softmr_dev_wire_rx()).  Only 802.1Q VLANs directly on the
 * device's netdev, in its namespace, count: an 802.1ad (Q-in-Q outer)
 * VLAN with the same id is another network.
 */

#include <linux/if_vlan.h>
#include <linux/netdevice.h>

#include "softmr.h"

/**
 * softmr_vlan_of() - is @ndev an 802.1Q VLAN directly on @real?
 * @ndev: a netdev
 * @real: a device's netdev
 *
 * Under RCU (or RTNL).
 *
 * Return: true when it is, in @real's namespace.
 */
bool softmr_vlan_of(struct net_device *ndev, struct net_device *real)
{
	return is_vlan_dev(ndev) && vlan_dev_real_dev(ndev) == real &&
	       vlan_dev_vlan_proto(ndev) == htons(ETH_P_8021Q) &&
	       net_eq(dev_net(ndev), dev_net(real));
}

/**
 * softmr_av_ndev_rcu() - the netdev @av's source GID belongs to
 * @sdev: the sending device
 * @av: an address vector of @sdev
 *
 * Under RCU.  The VLAN netdev is found again by its ifindex (ifindexes
 * are reused) and must still be the VLAN it was.
 *
 * Return: @sdev's netdev, the VLAN netdev on it, or NULL when that VLAN
 * is gone.
 */
struct net_device *softmr_av_ndev_rcu(struct softmr_dev *sdev,
				      const struct softmr_av *av)
{
	struct net_device *ndev;

	if (!av->vlan_ifindex)
		return sdev->ndev;
	ndev = dev_get_by_index_rcu(dev_net_rcu(sdev->ndev), av->vlan_ifindex);
	if (!ndev || !softmr_vlan_of(ndev, sdev->ndev) ||
	    vlan_dev_vlan_id(ndev) != av->vlan_id)
		return NULL;
	return ndev;
}

/**
 * softmr_av_ndev_mtu() - the MTU of the netdev @av sends out of
 * @sdev: the sending device
 * @av: an address vector of @sdev
 *
 * Return: that netdev's MTU (the device's netdev's, when the VLAN is
 * gone: nothing is sent then anyway).
 */
unsigned int softmr_av_ndev_mtu(struct softmr_dev *sdev,
				const struct softmr_av *av)
{
	struct net_device *ndev;
	unsigned int mtu;

	rcu_read_lock();
	ndev = softmr_av_ndev_rcu(sdev, av) ?: sdev->ndev;
	mtu = READ_ONCE(ndev->mtu);
	rcu_read_unlock();
	return mtu;
}

/**
 * softmr_gid_owner_rcu() - which of @ndev and its VLANs has address @gid?
 * @ndev: a device's netdev
 * @gid: an IPv4-mapped or IPv6 address
 *
 * Under RCU.
 *
 * Return: @ndev when it has the address, else the one 802.1Q VLAN on it
 * that has it; NULL when none does, or more than one (an IPv6 link-local
 * address all the VLANs share: which one is unknown).
 */
struct net_device *softmr_gid_owner_rcu(struct net_device *ndev,
					const union ib_gid *gid)
{
	struct net_device *upper, *owner = NULL;
	struct list_head *iter;

	if (softmr_netdev_has_gid_addr(ndev, gid))
		return ndev;
	netdev_for_each_upper_dev_rcu(ndev, upper, iter) {
		if (!softmr_vlan_of(upper, ndev) ||
		    !softmr_netdev_has_gid_addr(upper, gid))
			continue;
		if (owner)
			return NULL;
		owner = upper;
	}
	return owner;
}

/**
 * softmr_gid_vlan() - the VLAN a local datagram to @gid arrives on
 * @sdev: the receiving device
 * @gid: the destination GID
 * @from: the sender's address vector
 *
 * A VLAN with the sender's VLAN id that has the address comes first (an
 * IPv6 link-local address is every VLAN's and the netdev's alike), then
 * what softmr_gid_owner_rcu() finds.
 *
 * Return: the id of the VLAN on @sdev's netdev that has the address, or
 * -1 (the netdev's own address, or none known).
 */
int softmr_gid_vlan(struct softmr_dev *sdev, const union ib_gid *gid,
		    const struct softmr_av *from)
{
	struct net_device *owner;
	int vlan = -1;

	rcu_read_lock();
	if (from->vlan_ifindex) {
		owner = __vlan_find_dev_deep_rcu(sdev->ndev,
						 htons(ETH_P_8021Q),
						 from->vlan_id);
		if (owner && softmr_vlan_of(owner, sdev->ndev) &&
		    softmr_netdev_has_gid_addr(owner, gid)) {
			vlan = from->vlan_id;
			goto out;
		}
	}
	owner = softmr_gid_owner_rcu(sdev->ndev, gid);
	if (owner && owner != sdev->ndev)
		vlan = vlan_dev_vlan_id(owner);
out:
	rcu_read_unlock();
	return vlan;
}
