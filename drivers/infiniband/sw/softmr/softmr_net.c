// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The wire: RoCEv2 packets to and from other hosts over UDP port 4791
 * (IPv4 GIDs), with the module parameter wire=1: UD datagrams here, RC and
 * UC connections in softmr_wire_conn.c (Documentation/infiniband/softmr.rst,
 * "The wire").
 *
 * One kernel UDP socket per network namespace, shared by the wire devices
 * there.  Its receive hook runs in softirq context and does only what
 * needs no sleeping: IP/UDP checks, softmr_pkt_parse(), the ICRC, the
 * device that owns the destination GID on the netdev the packet came in
 * on; then the packet waits on that device's bounded queue for the
 * engine's worker, which finds the QP and delivers in process context
 * (softmr_engine_wire_recv()).  Every packet is untrusted; whatever is
 * refused is counted (wire_rx_malformed, wire_rx_dropped).
 */

#include <linux/ip.h>
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/ip.h>
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

/* A network namespace's socket and the wire devices using it */
struct softmr_net {
	struct socket *sock;
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
 * The UDP socket's receive hook (softirq).  @skb->data is at the UDP
 * header.  Returns 0: the packet is consumed, whatever became of it.
 */
static int softmr_wire_udp_recv(struct sock *sk, struct sk_buff *skb)
{
	int bad = SOFTMR_CNT_WIRE_RX_MALFORMED;
	struct softmr_pkt pkt;
	const struct iphdr *iph;
	struct udphdr *uh;
	__be32 daddr;
	unsigned int len;
	u8 *bth;

	if (skb->protocol != htons(ETH_P_IP))
		goto free;
	daddr = ip_hdr(skb)->daddr;
	/* nothing longer than a UD packet is linearized: fragments neither */
	if (skb->len > SOFTMR_WIRE_PKT_MAX || skb_linearize(skb))
		goto count;
	iph = ip_hdr(skb);
	uh = udp_hdr(skb);
	len = ntohs(uh->len);
	if (iph->ihl != 5 || (u8 *)uh != (u8 *)iph + sizeof(*iph) ||
	    len < sizeof(*uh) || len > skb->len)
		goto count;
	len -= sizeof(*uh);
	bth = (u8 *)(uh + 1);
	/* the ICRC only over what the parser accepted */
	if (softmr_pkt_parse(bth, len, &pkt) ||
	    softmr_icrc_packet(iph, false, bth, len - SOFTMR_ICRC_BYTES) !=
	    get_unaligned_le32(bth + len - SOFTMR_ICRC_BYTES))
		goto count;
	/*
	 * RC, UC and UD; the default partition; a UD packet within the
	 * largest MTU (connections check theirs on the QP's path MTU)
	 */
	bad = SOFTMR_CNT_WIRE_RX_DROPPED;
	if ((pkt.pkey & 0x7fff) != (SOFTMR_DEF_PKEY & 0x7fff) ||
	    (SOFTMR_OP_TRANSPORT(pkt.opcode) == SOFTMR_OP_UD &&
	     softmr_pkt_check_len(&pkt, ib_mtu_enum_to_int(IB_MTU_4096))))
		goto count;
	/* the worker needs neither the route nor conntrack */
	skb_dst_drop(skb);
	nf_reset_ct(skb);
	bad = 0;
count:
	if (softmr_dev_wire_rx(skb, daddr, bad))
		return 0;
free:
	kfree_skb(skb);
	return 0;
}

/**
 * softmr_wire_rx_work() - deliver a device's received packets
 * @work: the device's wire_rx_work
 *
 * Process context: QP lookup, the receive queue's lock, copies into MRs
 * (ODP faults included).
 */
void softmr_wire_rx_work(struct work_struct *work)
{
	struct softmr_dev *sdev = container_of(work, struct softmr_dev,
					       wire_rx_work);
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&sdev->wire_rxq))) {
		const struct iphdr *iph = ip_hdr(skb);
		const struct udphdr *uh = udp_hdr(skb);
		unsigned int len = ntohs(uh->len) - sizeof(*uh);
		struct softmr_pkt pkt;

		/* checked before it was queued; parsed again here */
		if (softmr_pkt_parse(uh + 1, len, &pkt)) {
			softmr_count(sdev, SOFTMR_CNT_WIRE_RX_DROPPED, 1);
		} else if (SOFTMR_OP_TRANSPORT(pkt.opcode) != SOFTMR_OP_UD) {
			/* the QP's worker takes it on (and counts it) */
			if (!softmr_wire_conn_rx(sdev, skb, &pkt, iph)) {
				cond_resched();
				continue;
			}
			softmr_count(sdev, SOFTMR_CNT_WIRE_RX_DROPPED, 1);
		} else if (softmr_engine_wire_recv(sdev, &pkt, iph)) {
			softmr_count(sdev, SOFTMR_CNT_WIRE_RX_DROPPED, 1);
		} else {
			softmr_count(sdev, SOFTMR_CNT_WIRE_RX_PACKETS, 1);
		}
		kfree_skb(skb);
		cond_resched();
	}
}

static struct socket *softmr_wire_sock_create(struct net *net)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.encap_type = 1,
		.encap_rcv = softmr_wire_udp_recv,
	};
	struct udp_port_cfg ucfg = {
		.family = AF_INET,
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
		sock = softmr_wire_sock_create(net);
		if (IS_ERR(sock)) {
			dev_info(&sdev->ibdev.dev,
				 "UDP port %d: error %ld (rdma_rxe there?): this device reaches this host only\n",
				 SOFTMR_ROCE_UDP_PORT, PTR_ERR(sock));
			goto unlock;
		}
		sn->sock = sock;
	}
	list_add(&sdev->wire_entry, &sn->devs);
	sdev->wire_net = net;
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
			    sizeof(struct iphdr) + sizeof(struct udphdr);
	struct sk_buff *skb;

	skb = alloc_skb(head + size + SOFTMR_ICRC_BYTES, GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_reserve(skb, head);
	skb_put(skb, size);
	skb->protocol = htons(ETH_P_IP);
	return skb;
}

/**
 * softmr_wire_xmit() - send a packet built in softmr_wire_alloc()'s skb
 * @sdev: the sending device
 * @skb: the transport packet (consumed, whatever happens)
 * @av: source and destination (IPv4 RoCEv2 GIDs)
 * @sport: UDP source port
 * @by_table: routed by the routing table rather than out of the device's
 *	netdev: force_wire chose the wire (softmr_wire_takes()), and an
 *	address of this host is reached through the loopback device
 *
 * Return: 0, or -EHOSTUNREACH without a route.
 */
int softmr_wire_xmit(struct softmr_dev *sdev, struct sk_buff *skb,
		     const struct softmr_av *av, u16 sport, bool by_table)
{
	struct flowi4 fl = {
		.flowi4_oif = by_table ? 0 : sdev->ndev->ifindex,
		.flowi4_proto = IPPROTO_UDP,
	};
	unsigned int len = skb->len;
	struct udphdr *uh;
	struct iphdr *iph;
	struct rtable *rt;
	struct net *net;

	memcpy(&fl.saddr, av->sgid.raw + 12, 4);
	memcpy(&fl.daddr, av->dgid.raw + 12, 4);
	/* the netdev may move to another namespace: this one stays meanwhile */
	rcu_read_lock();
	net = dev_net_rcu(sdev->ndev);
	rt = ip_route_output_key(net, &fl);
	if (IS_ERR(rt)) {
		rcu_read_unlock();
		kfree_skb(skb);
		return -EHOSTUNREACH;
	}
	skb_put(skb, SOFTMR_ICRC_BYTES);

	uh = skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh->source = htons(sport);
	uh->dest = htons(SOFTMR_ROCE_UDP_PORT);
	uh->len = htons(skb->len);
	uh->check = 0;

	skb_dst_set(skb, &rt->dst);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	iph = skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
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
	softmr_count(sdev, SOFTMR_CNT_WIRE_TX_PACKETS, 1);
	ip_local_out(net, NULL, skb);
	rcu_read_unlock();
	return 0;
}

/**
 * softmr_wire_reaches() - does @av's destination go out on the wire?
 * @sdev: the sending device
 * @av: a UD destination no softmr device on this host owns
 *
 * Return: true for a wire device and an IPv4 RoCEv2 destination from a
 * GID of the device's own netdev.
 */
bool softmr_wire_reaches(struct softmr_dev *sdev, const struct softmr_av *av)
{
	return READ_ONCE(sdev->wire) && !av->upper &&
	       av->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
	       ipv6_addr_v4mapped((const struct in6_addr *)av->dgid.raw) &&
	       ipv6_addr_v4mapped((const struct in6_addr *)av->sgid.raw);
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
	err = register_pernet_subsys(&softmr_net_ops);
	if (err)
		goto err_conn;
	return 0;

err_conn:
	softmr_wire_conn_exit();
err_wq:
	destroy_workqueue(softmr_wire_wq);
	return err;
}

void softmr_net_exit(void)
{
	unregister_pernet_subsys(&softmr_net_ops);
	softmr_wire_conn_exit();
	destroy_workqueue(softmr_wire_wq);
}
