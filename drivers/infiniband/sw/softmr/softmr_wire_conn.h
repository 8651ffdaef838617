/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * RC and UC on the wire: the state a connected QP keeps when its partner
 * is on another host.  softmr_wire_conn.c owns the state and the QP's wire
 * worker, softmr_wire_req.c the requester (send window, go-back-N
 * retransmission, responses), softmr_wire_resp.c the responder (PSN
 * checks, receive WQEs, RDMA, read and atomic resources, ACKs and NAKs).
 * Documentation/infiniband/softmr.rst, "RC and UC on the wire".
 */

#ifndef SOFTMR_WIRE_CONN_H
#define SOFTMR_WIRE_CONN_H

#include <linux/skbuff.h>
#include <linux/workqueue.h>

#include "softmr.h"
#include "softmr_wire.h"
#include "softmr_wire_cc.h"

/* send WQEs a QP keeps in flight at most */
#define SOFTMR_WIRE_WINDOW	32
/* a requester asks for an ACK at least every this many packets */
#define SOFTMR_WIRE_ACK_EVERY	32
/* received packets a QP holds for its worker at most */
#define SOFTMR_WIRE_INQ_MAX	256
/* ... and all connections of a device together */
#define SOFTMR_WIRE_CONN_QUEUED_MAX	16384
/* packets the worker takes per run before it yields */
#define SOFTMR_WIRE_BUDGET	256

/**
 * struct softmr_wire_wqe - a send WQE in flight
 * @wqe: its copy (the send queue's stride)
 * @psn: PSN of its first packet
 * @npkts: PSNs it uses (a read: its response packets)
 * @len: message length
 * @got: a read: bytes of response arrived, in order
 * @resp: a read or atomic: completed by the response, not by an ACK
 * @regap: a read: a response came after a gap, the read was asked again
 *	(no second time until a response in order arrives)
 * @done: answered; completes when it reaches the head of the window
 * @prefetched: its ODP pages were faulted in ahead once (a go-back to its
 *	first packet, which a peer's NAKs can force, does not again)
 * @status: its completion status once @done
 */
struct softmr_wire_wqe {
	struct softmr_send_wqe *wqe;
	u32 psn;
	u32 npkts;
	u64 len;
	u64 got;
	bool resp;
	bool regap;
	bool done;
	bool prefetched;
	u8 status;
};

/**
 * struct softmr_wire_res - a responder resource: a read or atomic seen
 * @op: its BTH opcode (without transport), 0 when unused
 * @psn: its PSN
 * @npkts: PSNs it used
 * @va: RETH or AtomicETH address
 * @rkey: its key
 * @len: read length
 * @orig: atomic: the value returned (replayed for a duplicate)
 */
struct softmr_wire_res {
	u8 op;
	u32 psn;
	u32 npkts;
	u64 va;
	u32 rkey;
	u32 len;
	u64 orig;
};

/**
 * struct softmr_wire_conn - a connected QP's state on the wire
 * @qp: the QP
 * @inq_lock: guards @inq and @closed
 * @inq: received packets for @work
 * @closed: the QP is being destroyed: nothing is queued or scheduled
 * @work: the QP's wire worker: received packets, timers, sending
 * @av: the destination, copied at RTR
 * @dqpn: the destination QP
 * @mtu: payload bytes per packet
 * @sport: UDP source port
 * @forced: force_wire chose the wire at RTR: packets are routed by the
 *	routing table (softmr_wire_xmit())
 * @uc: an unreliable connection (no ACKs, no retransmission)
 * @sgl: scratch SG list (the worker's and the requester's, under sq.lock)
 *
 * Requester (under sq.lock):
 * @win: WQEs in flight, oldest at @head
 * @copies: memory of the @win copies
 * @head: index of the oldest in @win (free running)
 * @tail: index of the next free one
 * @npsn: PSN of the next new WQE
 * @spsn: next PSN to send (go-back-N moves it back)
 * @hpsn: the PSN after the highest one sent (answers beyond it are forged)
 * @una: oldest PSN not acknowledged
 * @cc: the congestion window: no packet is sent @cc.cwnd PSNs or more
 *	after @una (a read counts its responses; one may go beyond)
 * @resp_out: reads and atomics in flight
 * @resp_max: their limit (max_rd_atomic)
 * @timeout: retransmission timeout in jiffies, 0: none
 * @deadline: when the timer fires
 * @timer_on: @deadline is armed
 * @rnr_wait: an RNR NAK: send nothing until @deadline
 * @retry_left: transport retries left
 * @rnr_left: RNR retries left (7: for ever)
 * @retry_cnt: the QP's retry_cnt, what @retry_left starts from
 * @rnr_retry: the QP's rnr_retry, what @rnr_left starts from
 * @sqd_owed: the QP went to SQD with WQEs in flight: the window's last
 *	answer sends IB_EVENT_SQ_DRAINED
 * @sqd_fire: that event, for the worker to send without sq.lock
 *
 * Responder (under sq.lock):
 * @epsn: expected PSN
 * @msn: messages completed
 * @mstate: where a multi-packet message stands
 * @nak_sent: a sequence NAK for @epsn was sent (one per gap)
 * @ack_psn: an ACK owed for this PSN, sent at the end of the batch
 * @ack_owed: @ack_psn is owed
 * @rwqe: the receive WQE a SEND is being scattered into (a copy)
 * @rwqe_held: @rwqe holds one (taken from the receive queue)
 * @roff: bytes scattered into it
 * @wva: the current RDMA WRITE's address
 * @wrkey: its rkey
 * @wlen: its RETH length
 * @woff: bytes written
 * @wimm: the write carries immediate data (needs a receive WQE)
 * @res: responder resources (max_dest_rd_atomic)
 * @nres: entries in @res
 * @res_next: the next one to reuse
 */
struct softmr_wire_conn {
	struct softmr_qp *qp;
	spinlock_t inq_lock;		/* inq, closed */
	struct sk_buff_head inq;
	bool closed;
	struct delayed_work work;
	struct softmr_av av;
	u32 dqpn;
	u32 mtu;
	u16 sport;
	bool forced;
	bool uc;
	struct softmr_sgl *sgl;

	struct softmr_wire_wqe win[SOFTMR_WIRE_WINDOW];
	void *copies;
	u32 head, tail;
	u32 npsn, spsn, hpsn, una;
	struct softmr_wire_cc cc;
	u32 resp_out, resp_max;
	unsigned long timeout;
	unsigned long deadline;
	bool timer_on;
	bool rnr_wait;
	int retry_left;
	int rnr_left;
	u8 retry_cnt;
	u8 rnr_retry;
	bool sqd_owed;
	bool sqd_fire;

	u32 epsn, msn;
	enum softmr_msg_state mstate;
	bool nak_sent;
	u32 ack_psn;
	bool ack_owed;
	struct softmr_recv_wqe *rwqe;
	bool rwqe_held;
	u64 roff;
	u64 wva;
	u32 wrkey, wlen;
	u64 woff;
	bool wimm;
	struct softmr_wire_res *res;
	u32 nres, res_next;
};

static inline bool softmr_wire_win_empty(const struct softmr_wire_conn *wc)
{
	return wc->head == wc->tail;
}

/* softmr_wire_conn.c */
struct sk_buff *softmr_wire_conn_pkt(struct softmr_wire_conn *wc,
				     struct softmr_pkt *pkt, u32 data_len,
				     u8 **payload);
void softmr_wire_conn_send(struct softmr_wire_conn *wc, struct sk_buff *skb);
void softmr_wire_conn_send_hdr(struct softmr_wire_conn *wc,
			       struct softmr_pkt *pkt);
void softmr_wire_conn_kick(struct softmr_wire_conn *wc, unsigned long delay);
void softmr_wire_sgl_prefetch(struct softmr_sgl *sgl, bool write);
u64 softmr_wire_sgl_copy(struct softmr_sgl *sgl, u64 off, void *buf, u64 len,
			 enum softmr_copy_dir dir, int access);

/* softmr_wire_req.c */
int softmr_wire_req_post(struct softmr_req *req);
void softmr_wire_req_rx(struct softmr_wire_conn *wc,
			const struct softmr_pkt *pkt);
void softmr_wire_req_timer(struct softmr_wire_conn *wc);
void softmr_wire_req_push(struct softmr_wire_conn *wc);
void softmr_wire_req_flush(struct softmr_wire_conn *wc);
void softmr_wire_req_reset(struct softmr_wire_conn *wc);

/* softmr_wire_resp.c */
void softmr_wire_resp_rx(struct softmr_wire_conn *wc,
			 const struct softmr_pkt *pkt);
void softmr_wire_resp_ack(struct softmr_wire_conn *wc);
void softmr_wire_resp_flush(struct softmr_wire_conn *wc);

#endif /* SOFTMR_WIRE_CONN_H */
