// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The wire: RoCEv2 packets to and from other hosts over UDP port 4791
 * (IPv4 and IPv6 GIDs), with the module parameter wire=1: UD datagrams
 * here, RC and UC connections in softmr_wire_conn.c
 * (Documentation/infiniband/softmr.rst, "The wire").
 *
 * Two kernel UDP sockets per network namespace (IPv4, and IPv6 where the
 * kernel has it), shared by the wire devices there.  Their receive hook
 * runs in softirq context and does only what
 * needs no sleeping: IP/UDP checks, softmr_pkt_parse(), the ICRC, the
 * device that owns the destination GID on the netdev the packet came in
 * on; then the packet waits on that device's bounded queue for the
 * engine's worker, which finds the QP and delivers in process context
 * (softmr_engine_wire_recv()).  Every packet is untrusted; whatever is
 * refused is counted (wire_rx_malformed, wire_rx_dropped).
 */

#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/module.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/udp_tunnel.h>

#include <rdma/ib_verbs.h>

#include "softmr.h"
#include "softmr_wire.h"

static bool wire;
module_param(wire, bool, 0444);
MODULE_PARM_DESC(wire,
		 "RoCEv2 (RC, UC, UD) to other hosts over UDP port 4791 (default: off, this host only)");

/*
 * A network namespace's sockets (IPv4; IPv6, or NULL where the kernel has
 * none) and the wire devices using them
 */
struct softmr_net {
	struct socket *sock;
	struct socket *sock6;
	struct list_head devs;	/* softmr_dev.wire_entry */
	bool dead;
};

static unsigned int softmr_net_id;
/*
 * The wire's receive workers: a queue of their own, so that engine work
 * a user can keep busy (RNR retries of QPs on stalled memory) never
 * starves them.
 */
static struct workqueue_struct *softmr_wire_wq;
/* every softmr_net and each device's wire state */
static DEFINE_MUTEX(softmr_wire_lock);

static void softmr_net_sock_release(struct softmr_net *sn)
{
	udp_tunnel_sock_release(softmr_udp_tunnel_sk(sn->sock));
	sn->sock = NULL;
	if (sn->sock6)
		udp_tunnel_sock_release(softmr_udp_tunnel_sk(sn->sock6));
	sn->sock6 = NULL;
	/* receive hooks running elsewhere are done */
	synchronize_net();
}

static int softmr_net_init_ns(struct net *net)
{
	struct softmr_net *sn = net_generic(net, softmr_net_id);

	INIT_LIST_HEAD(&sn->devs);
	return 0;
}

/* Off the wire; softmr_wire_lock held */
static void softmr_wire_detach_locked(struct softmr_dev *sdev)
{
	struct softmr_net *sn = net_generic(sdev->wire_net, softmr_net_id);

	WRITE_ONCE(sdev->wire, false);
	WRITE_ONCE(sdev->wire6, false);
	list_del_init(&sdev->wire_entry);
	sdev->wire_net = NULL;
	if (list_empty(&sn->devs) && sn->sock)
		softmr_net_sock_release(sn);
}

/*
 * A namespace going away: its wire devices normally detached when its
 * netdevs went (softmr_wire_detach() from the netdev notifier); any left
 * (a device whose removal was already under way) are detached here, so
 * that none refers to the namespace after it is gone.
 */
static void softmr_net_exit_ns(struct net *net)
{
	struct softmr_net *sn = net_generic(net, softmr_net_id);
	struct softmr_dev *sdev, *tmp;

	mutex_lock(&softmr_wire_lock);
	sn->dead = true;
	list_for_each_entry_safe(sdev, tmp, &sn->devs, wire_entry)
		softmr_wire_detach_locked(sdev);
	if (sn->sock)
		softmr_net_sock_release(sn);
	mutex_unlock(&softmr_wire_lock);
}

static struct pernet_operations softmr_net_ops = {
	.init = softmr_net_init_ns,
	.exit = softmr_net_exit_ns,
	.id = &softmr_net_id,
	.size = sizeof(struct softmr_net),
};

/*
 * The longest packet a wire device takes: 4096 bytes of payload after the
 * longest headers (BTH, RETH, ImmDt)
 */
#define SOFTMR_WIRE_PKT_MAX	(sizeof(struct udphdr) + 12 + 16 + 4 + 4096 + \
				 3 + SOFTMR_ICRC_BYTES)

/*
 * The IP header in front of the UDP header: IPv4 without options, or IPv6
 * without extension headers (RoCEv2 packets carry neither); the ICRC
 * covers it
 */
static bool softmr_wire_l3_ok(struct sk_buff *skb, bool ipv6)
{
	const u8 *uh = skb_transport_header(skb);

	if (ipv6)
		return ipv6_hdr(skb)->nexthdr == IPPROTO_UDP &&
		       uh == skb_network_header(skb) + sizeof(struct ipv6hdr);
	return ip_hdr(skb)->ihl == 5 &&
	       uh == skb_network_header(skb) + sizeof(struct iphdr);
}

/*
 * An IPv6 source from another host that IPv4's input path (which checks
 * the source against the routes) would have refused: unspecified,
 * loopback, multicast, IPv4-mapped (the destination neither), or an
 * address of this host's namespace.  A packet the loopback device carried
 * was sent on this host (force_wire) and is left to the device checks.
 * RCU held (the UDP receive path).
 */
static bool softmr_wire_src_ok(struct sk_buff *skb, bool ipv6)
{
	const struct ipv6hdr *h = ipv6_hdr(skb);

	if (!IS_ENABLED(CONFIG_IPV6) || !ipv6 ||
	    (skb->dev->flags & IFF_LOOPBACK))
		return true;
	if (ipv6_addr_any(&h->saddr) || ipv6_addr_v4mapped(&h->daddr) ||
	    (ipv6_addr_type(&h->saddr) & (IPV6_ADDR_LOOPBACK |
					  IPV6_ADDR_MULTICAST |
					  IPV6_ADDR_MAPPED)))
		return false;
	/* any device's, VRFs' and tentative ones included */
	return !ipv6_chk_addr_and_flags(dev_net(skb->dev), &h->saddr, skb->dev,
					true, 0, 0);
}

/*
 * The UDP sockets' receive hook (softirq).  @skb->data is at the UDP
 * header.  Returns 0: the packet is consumed, whatever became of it.
 */
static int softmr_wire_udp_recv(struct sock *sk, struct sk_buff *skb)
{
	int bad = SOFTMR_CNT_WIRE_RX_MALFORMED;
	bool ipv6 = skb->protocol == htons(ETH_P_IPV6);
	struct softmr_pkt pkt;
	struct udphdr *uh;
	unsigned int len;
	u8 *bth;

	if (!ipv6 && skb->protocol != htons(ETH_P_IP))
		goto free;
	/* nothing longer than a UD packet is linearized: fragments neither */
	if (skb->len > SOFTMR_WIRE_PKT_MAX || skb_linearize(skb))
		goto count;
	uh = udp_hdr(skb);
	len = ntohs(uh->len);
	if (!softmr_wire_l3_ok(skb, ipv6) || len < sizeof(*uh) ||
	    len > skb->len)
		goto count;
	len -= sizeof(*uh);
	bth = (u8 *)(uh + 1);
	/* the ICRC only over what the parser accepted */
	if (softmr_pkt_parse(bth, len, &pkt) ||
	    softmr_icrc_packet(skb_network_header(skb), ipv6, bth,
			       len - SOFTMR_ICRC_BYTES) !=
	    get_unaligned_le32(bth + len - SOFTMR_ICRC_BYTES))
		goto count;
	/*
	 * A believable source; RC, UC and UD; the default partition; a UD
	 * packet within the largest MTU (connections check theirs on the
	 * QP's path MTU)
	 */
	bad = SOFTMR_CNT_WIRE_RX_DROPPED;
	if (!softmr_wire_src_ok(skb, ipv6) ||
	    (pkt.pkey & 0x7fff) != (SOFTMR_DEF_PKEY & 0x7fff) ||
	    (SOFTMR_OP_TRANSPORT(pkt.opcode) == SOFTMR_OP_UD &&
	     softmr_pkt_check_len(&pkt, ib_mtu_enum_to_int(IB_MTU_4096))))
		goto count;
	/* the worker needs neither the route nor conntrack */
	skb_dst_drop(skb);
	nf_reset_ct(skb);
	bad = 0;
count:
	if (softmr_dev_wire_rx(skb, bad))
		return 0;
free:
	kfree_skb(skb);
	return 0;
}

/**
 * softmr_wire_skb_parse() - parse a queued packet again
 * @skb: a packet the receive hook accepted and queued
 * @pkt: set to its parse
 *
 * The workers parse what they take off a queue once more rather than
 * keep the receive hook's parse with the packet.
 *
 * Return: 0, or the parser's error.
 */
int softmr_wire_skb_parse(const struct sk_buff *skb, struct softmr_pkt *pkt)
{
	const struct udphdr *uh = udp_hdr(skb);

	return softmr_pkt_parse(uh + 1, ntohs(uh->len) - sizeof(*uh), pkt);
}

/**
 * softmr_wire_skb_gids() - a received packet's source and destination
 * @skb: a packet the receive hook accepted (its IP header is IPv4 or IPv6)
 * @src: set to its source address as a GID (IPv4 mapped into IPv6)
 * @dst: set to its destination address likewise
 */
void softmr_wire_skb_gids(const struct sk_buff *skb, union ib_gid *src,
			  union ib_gid *dst)
{
	if (skb->protocol == htons(ETH_P_IPV6)) {
		memcpy(src->raw, &ipv6_hdr(skb)->saddr, sizeof(src->raw));
		memcpy(dst->raw, &ipv6_hdr(skb)->daddr, sizeof(dst->raw));
	} else {
		ipv6_addr_set_v4mapped(ip_hdr(skb)->saddr,
				       (struct in6_addr *)src->raw);
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)dst->raw);
	}
}

/**
 * softmr_netdev_has_gid_addr() - is @gid an address of @ndev?
 * @ndev: a netdev
 * @gid: an IPv4-mapped or IPv6 address
 *
 * Under RCU (softirq included).  Only the netdev's own addresses count,
 * tentative IPv6 addresses not: no GID table entry is referenced (its last
 * reference must not be dropped in softirq while the device goes away).
 *
 * Return: true when @ndev has the address.
 */
bool softmr_netdev_has_gid_addr(struct net_device *ndev,
				const union ib_gid *gid)
{
	const struct in6_addr *a = (const struct in6_addr *)gid->raw;
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;

	if (!ipv6_addr_v4mapped(a))
		return IS_ENABLED(CONFIG_IPV6) && ipv6_mod_enabled() &&
		       ipv6_dev_find(dev_net_rcu(ndev), a, ndev) == ndev;
	in_dev = __in_dev_get_rcu(ndev);
	if (!in_dev)
		return false;
	in_dev_for_each_ifa_rcu(ifa, in_dev)
		if (ifa->ifa_local == a->s6_addr32[3])
			return true;
	return false;
}

/*
 * One received packet: an RC or UC packet goes to its connection's worker;
 * a UD datagram is delivered here, or by its QP's worker when the receive
 * WQE may wait.  Return: 1 when a worker took @skb on (and counts it), 0
 * when delivered here, a negative errno when nobody takes it.
 */
static int softmr_wire_rx_one(struct softmr_dev *sdev, struct sk_buff *skb)
{
	struct softmr_pkt pkt;
	int err;

	if (softmr_wire_skb_parse(skb, &pkt))
		return -EINVAL;
	if (SOFTMR_OP_TRANSPORT(pkt.opcode) != SOFTMR_OP_UD)
		return softmr_wire_conn_rx(sdev, skb, &pkt) ?: 1;
	err = softmr_engine_wire_recv(sdev, &pkt, skb, false);
	if (err == -EAGAIN)
		return softmr_wire_ud_defer(sdev, pkt.dqpn, skb) ?: 1;
	return err;
}

/**
 * softmr_wire_rx_work() - deliver a device's received packets
 * @work: the device's wire_rx_work
 *
 * Process context: QP lookup, the receive queue's lock, copies into MRs
 * (never into memory that may wait: softmr_wire_ud.c).
 */
void softmr_wire_rx_work(struct work_struct *work)
{
	struct softmr_dev *sdev = container_of(work, struct softmr_dev,
					       wire_rx_work);
	struct sk_buff *skb;
	int r;

	while ((skb = skb_dequeue(&sdev->wire_rxq))) {
		r = softmr_wire_rx_one(sdev, skb);
		if (r <= 0) {
			softmr_count(sdev, r ? SOFTMR_CNT_WIRE_RX_DROPPED :
					       SOFTMR_CNT_WIRE_RX_PACKETS, 1);
			kfree_skb(skb);
		}
		cond_resched();
	}
}

/*
 * Port 4791 for one family.  IPv6: that family only, and UDP checksums of
 * zero accepted, as RoCEv2 senders (rxe, ConnectX) send them: the ICRC
 * covers the packet.
 */
static struct socket *softmr_wire_sock_create(struct net *net, bool ipv6)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.encap_type = 1,
		.encap_rcv = softmr_wire_udp_recv,
	};
	struct udp_port_cfg ucfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.ipv6_v6only = ipv6,
		.local_udp_port = htons(SOFTMR_ROCE_UDP_PORT),
	};
	struct socket *sock;
	int err;

	err = udp_sock_create(net, &ucfg, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(net, softmr_udp_tunnel_sk(sock), &tcfg);
	return sock;
}

/**
 * softmr_wire_attach() - put a device on the wire, if it is to be
 * @sdev: a device being added
 *
 * With wire=1 and a netdev that is not loopback, the device shares its
 * network namespace's socket on UDP port 4791.  When the port is taken
 * (rdma_rxe has it) the device stays local-only and the kernel log says
 * so; that is not an error.
 */
void softmr_wire_attach(struct softmr_dev *sdev)
{
	struct net *net = dev_net(sdev->ndev);
	struct softmr_net *sn = net_generic(net, softmr_net_id);
	struct socket *sock;

	if (!wire || (sdev->ndev->flags & IFF_LOOPBACK))
		return;
	mutex_lock(&softmr_wire_lock);
	if (sn->dead || !check_net(net))	/* the namespace is going */
		goto unlock;
	if (!sn->sock) {
		sock = softmr_wire_sock_create(net, false);
		if (IS_ERR(sock)) {
			dev_info(&sdev->ibdev.dev,
				 "UDP port %d: error %ld (rdma_rxe there?): this device reaches this host only\n",
				 SOFTMR_ROCE_UDP_PORT, PTR_ERR(sock));
			goto unlock;
		}
		sn->sock = sock;
		/*
		 * IPv6 GIDs too, where the kernel has IPv6.  Without the port
		 * (any user may bind it first) no IPv6 GID takes the wire:
		 * the answers to what we sent would go to that socket.
		 */
		sock = IS_ENABLED(CONFIG_IPV6) ?
		       softmr_wire_sock_create(net, true) :
		       ERR_PTR(-EAFNOSUPPORT);
		if (IS_ERR(sock) && PTR_ERR(sock) != -EAFNOSUPPORT)
			dev_info(&sdev->ibdev.dev,
				 "UDP port %d over IPv6: error %ld: IPv4 GIDs only\n",
				 SOFTMR_ROCE_UDP_PORT, PTR_ERR(sock));
		sn->sock6 = IS_ERR(sock) ? NULL : sock;
	}
	list_add(&sdev->wire_entry, &sn->devs);
	sdev->wire_net = net;
	WRITE_ONCE(sdev->wire6, !!sn->sock6);
	WRITE_ONCE(sdev->wire, true);
unlock:
	mutex_unlock(&softmr_wire_lock);
}

/**
 * softmr_wire_detach() - take a device off the wire
 * @sdev: a device whose netdev goes away, or a device being freed
 *
 * Called from the netdev notifier (the namespace is still there), before
 * module unload unregisters it, and when the device is freed; later
 * calls, and calls after the namespace's exit detached it, find it
 * detached.
 */
void softmr_wire_detach(struct softmr_dev *sdev)
{
	mutex_lock(&softmr_wire_lock);
	if (sdev->wire_net)
		softmr_wire_detach_locked(sdev);
	mutex_unlock(&softmr_wire_lock);
}

/**
 * softmr_wire_dev_cleanup() - the device's received packets go
 * @sdev: a device being freed (no longer registered: nothing queues
 *        packets to it any more)
 */
void softmr_wire_dev_cleanup(struct softmr_dev *sdev)
{
	softmr_wire_detach(sdev);
	cancel_work_sync(&sdev->wire_rx_work);
	skb_queue_purge(&sdev->wire_rxq);
}

/**
 * softmr_wire_alloc() - a buffer for one packet to @sdev's wire
 * @sdev: a wire device
 * @size: transport headers, payload and pad (the ICRC is added)
 *
 * Return: an skb with @size bytes put (at skb->data), or NULL.
 */
struct sk_buff *softmr_wire_alloc(struct softmr_dev *sdev, unsigned int size)
{
	unsigned int head = LL_RESERVED_SPACE(sdev->ndev) +
			    sizeof(struct ipv6hdr) + sizeof(struct udphdr);
	struct sk_buff *skb;

	skb = alloc_skb(head + size + SOFTMR_ICRC_BYTES, GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_reserve(skb, head);
	skb_put(skb, size);
	return skb;
}

/* The ICRC and the UDP header around a transport packet of @len bytes */
static struct udphdr *softmr_wire_push_udp(struct sk_buff *skb, u16 sport)
{
	struct udphdr *uh;

	skb_put(skb, SOFTMR_ICRC_BYTES);
	uh = skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh->source = htons(sport);
	uh->dest = htons(SOFTMR_ROCE_UDP_PORT);
	uh->len = htons(skb->len);
	/* zero, as RoCEv2 has it for IPv6 too: the ICRC covers the packet */
	uh->check = 0;
	return uh;
}

/* IPv4: routed, the header built, the ICRC computed, sent; RCU held */
static int softmr_wire_xmit4(struct net *net, struct sk_buff *skb,
			     const struct softmr_av *av, u16 sport, int oif)
{
	struct flowi4 fl = {
		.flowi4_oif = oif,
		.flowi4_proto = IPPROTO_UDP,
	};
	unsigned int len = skb->len;
	struct udphdr *uh;
	struct iphdr *iph;
	struct rtable *rt;

	memcpy(&fl.saddr, av->sgid.raw + 12, 4);
	memcpy(&fl.daddr, av->dgid.raw + 12, 4);
	rt = ip_route_output_key(net, &fl);
	if (IS_ERR(rt))
		return -EHOSTUNREACH;
	uh = softmr_wire_push_udp(skb, sport);
	skb_dst_set(skb, &rt->dst);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	iph = skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	skb->protocol = htons(ETH_P_IP);
	iph->version = 4;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = av->traffic_class;
	iph->tot_len = htons(skb->len);
	iph->frag_off = htons(IP_DF);
	iph->ttl = av->hop_limit ?: 64;
	iph->protocol = IPPROTO_UDP;
	iph->saddr = fl.saddr;
	iph->daddr = fl.daddr;
	iph->check = 0;
	__ip_select_ident(net, iph, 1);

	put_unaligned_le32(softmr_icrc_packet(iph, false, uh + 1, len),
			   (u8 *)(uh + 1) + len);
	ip_local_out(net, NULL, skb);
	return 0;
}

#if IS_ENABLED(CONFIG_IPV6)
/* IPv6 likewise; RCU held */
static int softmr_wire_xmit6(struct net *net, struct sk_buff *skb,
			     const struct softmr_av *av, u16 sport, int oif)
{
	struct flowi6 fl = {
		.flowi6_oif = oif,
		.flowi6_proto = IPPROTO_UDP,
	};
	unsigned int len = skb->len;
	struct dst_entry *dst;
	struct ipv6hdr *ip6h;
	struct udphdr *uh;

	memcpy(&fl.saddr, av->sgid.raw, sizeof(fl.saddr));
	memcpy(&fl.daddr, av->dgid.raw, sizeof(fl.daddr));
	/* link-local addresses are reached out of the device's own netdev */
	if (!oif && (ipv6_addr_type(&fl.daddr) & IPV6_ADDR_LINKLOCAL))
		return -EHOSTUNREACH;
	dst = ip6_dst_lookup_flow(net, NULL, &fl, NULL);
	if (IS_ERR(dst))
		return -EHOSTUNREACH;
	/*
	 * out of the device's own netdev (IPv6 routing with a source address
	 * is not bound to the interface asked for), unless routed by the
	 * table for force_wire
	 */
	if (oif && dst->dev->ifindex != oif) {
		dst_release(dst);
		return -EHOSTUNREACH;
	}
	uh = softmr_wire_push_udp(skb, sport);
	skb_dst_set(skb, dst);
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
	ip6h = skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	skb->protocol = htons(ETH_P_IPV6);
	ip6_flow_hdr(ip6h, av->traffic_class,
		     cpu_to_be32(av->flow_label) & IPV6_FLOWLABEL_MASK);
	/* what __ip6_local_out() would set: the ICRC covers it */
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = av->hop_limit ?: ip6_dst_hoplimit(dst);
	ip6h->saddr = fl.saddr;
	ip6h->daddr = fl.daddr;

	put_unaligned_le32(softmr_icrc_packet(ip6h, true, uh + 1, len),
			   (u8 *)(uh + 1) + len);
	ip6_local_out(net, NULL, skb);
	return 0;
}
#endif

/**
 * softmr_wire_xmit() - send a packet built in softmr_wire_alloc()'s skb
 * @sdev: the sending device
 * @skb: the transport packet (consumed, whatever happens)
 * @av: source and destination (IPv4 or IPv6 RoCEv2 GIDs of one family)
 * @sport: UDP source port
 * @by_table: routed by the routing table rather than out of the device's
 *	netdev: force_wire chose the wire (softmr_wire_takes()), and an
 *	address of this host is reached through the loopback device
 *
 * A source GID of a VLAN on the device's netdev sends out of that VLAN
 * netdev (tagged), as long as it is still one (ifindexes are reused).
 *
 * Return: 0, or -EHOSTUNREACH without a route.
 */
int softmr_wire_xmit(struct softmr_dev *sdev, struct sk_buff *skb,
		     const struct softmr_av *av, u16 sport, bool by_table)
{
	struct net_device *ndev;
	struct net *net;
	int err, oif;

	/* the netdev may move to another namespace: this one stays meanwhile */
	rcu_read_lock();
	net = dev_net_rcu(sdev->ndev);
	ndev = softmr_av_ndev_rcu(sdev, av);
	oif = by_table || !ndev ? 0 : ndev->ifindex;
	/*
	 * The source GID is still an address of the netdev: an address
	 * handle or a connection outlives the address it was made with,
	 * which may belong to another host by now.
	 */
	if (!ndev || !softmr_netdev_has_gid_addr(ndev, &av->sgid))
		err = -EHOSTUNREACH;
	else if (ipv6_addr_v4mapped((const struct in6_addr *)av->dgid.raw))
		err = softmr_wire_xmit4(net, skb, av, sport, oif);
	else
#if IS_ENABLED(CONFIG_IPV6)
		err = softmr_wire_xmit6(net, skb, av, sport, oif);
#else
		err = -EHOSTUNREACH;
#endif
	rcu_read_unlock();
	if (err) {
		kfree_skb(skb);
		return err;
	}
	softmr_count(sdev, SOFTMR_CNT_WIRE_TX_PACKETS, 1);
	return 0;
}

/**
 * softmr_wire_reaches() - does @av's destination go out on the wire?
 * @sdev: the sending device
 * @av: a UD destination no softmr device on this host owns
 *
 * Return: true for a wire device and a RoCEv2 destination from a GID of
 * the device's own netdev or of a VLAN on it, both IPv4 or both IPv6
 * (unicast: softmr has no multicast).
 */
bool softmr_wire_reaches(struct softmr_dev *sdev, const struct softmr_av *av)
{
	const struct in6_addr *d = (const struct in6_addr *)av->dgid.raw;
	const struct in6_addr *s = (const struct in6_addr *)av->sgid.raw;

	if (!READ_ONCE(sdev->wire) || av->upper ||
	    av->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return false;
	if (ipv6_addr_v4mapped(d))
		return ipv6_addr_v4mapped(s) &&
		       !ipv4_is_multicast(d->s6_addr32[3]);
	return READ_ONCE(sdev->wire6) && !ipv6_addr_v4mapped(s) &&
	       !ipv6_addr_is_multicast(d);
}

/**
 * softmr_wire_takes() - does traffic from @sdev to @av go out on the wire?
 * @sdev: the sending device
 * @av: a destination
 * @forced: set when force_wire chose the wire (pass it to
 *	softmr_wire_xmit() as by_table: the flag may change meanwhile)
 *
 * The wire carries what it reaches (softmr_wire_reaches()) unless a
 * softmr device on this host owns the destination GID: then the local
 * one-copy path does, except between two wire devices that both have
 * force_wire set, which send to each other through the IP stack (it
 * delivers the packets back through the loopback device:
 * softmr_dev_wire_rx()).  Both ends reach the same answer, so a
 * connection never has one end on each path.
 *
 * Return: true for the wire.
 */
bool softmr_wire_takes(struct softmr_dev *sdev, const struct softmr_av *av,
		       bool *forced)
{
	struct softmr_dev *dst;
	bool wire;

	*forced = false;
	if (!softmr_wire_reaches(sdev, av))
		return false;
	dst = softmr_dev_get_by_gid(&av->dgid);
	if (!dst)
		return true;
	wire = READ_ONCE(sdev->force_wire) && READ_ONCE(dst->force_wire) &&
	       READ_ONCE(dst->wire);
	ib_device_put(&dst->ibdev);
	*forced = wire;
	return wire;
}

/**
 * softmr_wire_queue_rx() - have a device's wire receive worker run
 * @sdev: the device (under the device list lock)
 */
void softmr_wire_queue_rx(struct softmr_dev *sdev)
{
	queue_work(softmr_wire_wq, &sdev->wire_rx_work);
}

int softmr_net_init(void)
{
	int err;

	softmr_wire_wq = alloc_workqueue("softmr_wire",
					 WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!softmr_wire_wq)
		return -ENOMEM;
	err = softmr_wire_conn_init();
	if (err)
		goto err_wq;
	err = softmr_wire_ud_wq_init();
	if (err)
		goto err_conn;
	err = register_pernet_subsys(&softmr_net_ops);
	if (err)
		goto err_ud;
	return 0;

err_ud:
	softmr_wire_ud_wq_exit();
err_conn:
	softmr_wire_conn_exit();
err_wq:
	destroy_workqueue(softmr_wire_wq);
	return err;
}

void softmr_net_exit(void)
{
	unregister_pernet_subsys(&softmr_net_ops);
	softmr_wire_ud_wq_exit();
	softmr_wire_conn_exit();
	destroy_workqueue(softmr_wire_wq);
}
