/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * RoCEv2 wire format (IBTA vol. 1 ch. 9, Annex A17): the transport headers
 * as they are on the wire, a packet parsed into host order, PSN
 * arithmetic, and the responder's sequence decisions.
 *
 * Every received packet is untrusted: softmr_pkt_parse() is the only way
 * from wire bytes to a struct softmr_pkt, and it checks everything that
 * can be checked without the QP (lengths, opcode, pad, version); the QP
 * layer checks the rest (softmr_pkt_check_len(), softmr_resp_psn(),
 * softmr_resp_opseq()).  Documentation/infiniband/softmr.rst, "Wire
 * format".
 */

#ifndef SOFTMR_WIRE_H
#define SOFTMR_WIRE_H

#include <linux/bits.h>
#include <linux/types.h>

#define SOFTMR_ROCE_UDP_PORT	4791
#define SOFTMR_ICRC_BYTES	4

/* Base Transport Header */
struct softmr_bth {
	u8	opcode;
	u8	flags;		/* SE, M, pad count, transport version */
	__be16	pkey;
	__be32	qpn;		/* resv8a (FECN, BECN) and destination QPN */
	__be32	apsn;		/* AckReq and PSN */
};

#define SOFTMR_BTH_SE		BIT(7)
#define SOFTMR_BTH_MIG		BIT(6)
#define SOFTMR_BTH_PAD_SHIFT	4
#define SOFTMR_BTH_PAD_MASK	(3 << SOFTMR_BTH_PAD_SHIFT)
#define SOFTMR_BTH_TVER_MASK	0x0f
#define SOFTMR_BTH_FECN		BIT(31)
#define SOFTMR_BTH_BECN		BIT(30)
#define SOFTMR_BTH_ACKREQ	BIT(31)
#define SOFTMR_QPN_MASK		0x00ffffff
#define SOFTMR_PSN_MASK		0x00ffffff
#define SOFTMR_DEF_PKEY		0xffff

/* RDMA Extended Transport Header */
struct softmr_reth {
	__be64	va;
	__be32	rkey;
	__be32	len;
} __packed;

/* Atomic Extended Transport Header */
struct softmr_atmeth {
	__be64	va;
	__be32	rkey;
	__be64	swap_add;
	__be64	comp;
} __packed;

/* ACK Extended Transport Header: syndrome and MSN */
struct softmr_aeth {
	__be32	smsn;
};

#define SOFTMR_AETH_SYN_SHIFT	24
#define SOFTMR_AETH_MSN_MASK	0x00ffffff
/* syndrome: bits 6:5 the type, bits 4:0 the value */
#define SOFTMR_AETH_TYPE_MASK	0x60
#define SOFTMR_AETH_ACK		0x00	/* value: credit count */
#define SOFTMR_AETH_RNR_NAK	0x20	/* value: RNR timer */
#define SOFTMR_AETH_NAK		0x60	/* value: one of these: */
#define SOFTMR_NAK_PSN_SEQ	0
#define SOFTMR_NAK_INVALID_REQ	1
#define SOFTMR_NAK_REM_ACCESS	2
#define SOFTMR_NAK_REM_OP	3
#define SOFTMR_NAK_INVALID_RD	4

/* Atomic Acknowledge Extended Transport Header */
struct softmr_atmack {
	__be64	orig;
} __packed;

/* Datagram Extended Transport Header */
struct softmr_deth {
	__be32	qkey;
	__be32	sqpn;
};

/* Immediate data, Invalidate ETH */
struct softmr_immdt {
	__be32	imm;
};

struct softmr_ieth {
	__be32	rkey;
};

/* Opcodes: transport (bits 7:5) | operation (bits 4:0) */
#define SOFTMR_OP_RC			0x00
#define SOFTMR_OP_UC			0x20
#define SOFTMR_OP_UD			0x60
#define SOFTMR_OP_TRANSPORT(op)		((op) & 0xe0)

enum softmr_op {
	SOFTMR_OP_SEND_FIRST		= 0x00,
	SOFTMR_OP_SEND_MIDDLE		= 0x01,
	SOFTMR_OP_SEND_LAST		= 0x02,
	SOFTMR_OP_SEND_LAST_IMM		= 0x03,
	SOFTMR_OP_SEND_ONLY		= 0x04,
	SOFTMR_OP_SEND_ONLY_IMM		= 0x05,
	SOFTMR_OP_WRITE_FIRST		= 0x06,
	SOFTMR_OP_WRITE_MIDDLE		= 0x07,
	SOFTMR_OP_WRITE_LAST		= 0x08,
	SOFTMR_OP_WRITE_LAST_IMM	= 0x09,
	SOFTMR_OP_WRITE_ONLY		= 0x0a,
	SOFTMR_OP_WRITE_ONLY_IMM	= 0x0b,
	SOFTMR_OP_READ_REQ		= 0x0c,
	SOFTMR_OP_READ_RESP_FIRST	= 0x0d,
	SOFTMR_OP_READ_RESP_MIDDLE	= 0x0e,
	SOFTMR_OP_READ_RESP_LAST	= 0x0f,
	SOFTMR_OP_READ_RESP_ONLY	= 0x10,
	SOFTMR_OP_ACK			= 0x11,
	SOFTMR_OP_ATOMIC_ACK		= 0x12,
	SOFTMR_OP_CMP_SWAP		= 0x13,
	SOFTMR_OP_FETCH_ADD		= 0x14,
	SOFTMR_OP_SEND_LAST_INV		= 0x16,
	SOFTMR_OP_SEND_ONLY_INV		= 0x17,
};

/* What an opcode carries and where it sits in a message */
#define SOFTMR_PF_RETH		BIT(0)
#define SOFTMR_PF_ATMETH	BIT(1)
#define SOFTMR_PF_AETH		BIT(2)
#define SOFTMR_PF_ATMACK	BIT(3)
#define SOFTMR_PF_IMMDT		BIT(4)
#define SOFTMR_PF_IETH		BIT(5)
#define SOFTMR_PF_DETH		BIT(6)
#define SOFTMR_PF_PAYLOAD	BIT(7)	/* may carry data */
#define SOFTMR_PF_FIRST		BIT(8)
#define SOFTMR_PF_MIDDLE	BIT(9)
#define SOFTMR_PF_LAST		BIT(10)
#define SOFTMR_PF_REQ		BIT(11)	/* requester to responder */
#define SOFTMR_PF_SEND		BIT(12)
#define SOFTMR_PF_WRITE		BIT(13)
#define SOFTMR_PF_READ		BIT(14)	/* read request or response */
#define SOFTMR_PF_ATOMIC	BIT(15)
#define SOFTMR_PF_ONLY		(SOFTMR_PF_FIRST | SOFTMR_PF_LAST)

/**
 * struct softmr_pkt - a RoCEv2 transport packet in host order
 * @opcode: BTH opcode
 * @flags: SOFTMR_PF_* of the opcode
 * @se: solicited event
 * @mig: migration state
 * @pad: pad count (bytes added to the payload to make it a multiple of 4)
 * @becn: congestion notification seen by the sender
 * @ackreq: acknowledge requested
 * @pkey: partition key
 * @dqpn: destination QP number
 * @psn: packet sequence number
 * @hdr_len: transport header bytes (BTH and extension headers)
 * @data_len: payload bytes, without pad and ICRC
 * @payload: the payload within the buffer parsed, or NULL when none
 * @va: RETH or AtomicETH virtual address
 * @rkey: RETH or AtomicETH remote key
 * @dma_len: RETH DMA length
 * @swap_add: AtomicETH swap or add data
 * @comp: AtomicETH compare data
 * @syndrome: AETH syndrome
 * @msn: AETH message sequence number
 * @orig: AtomicAckETH original remote data
 * @imm: immediate data, network order as in ib_wc
 * @inv_rkey: IETH key to invalidate
 * @qkey: DETH queue key
 * @sqpn: DETH source QP number
 */
struct softmr_pkt {
	u8 opcode;
	u16 flags;
	bool se, mig, becn, ackreq;
	u8 pad;
	u16 pkey;
	u32 dqpn, psn;
	u32 hdr_len, data_len;
	const u8 *payload;
	u64 va;
	u32 rkey, dma_len;
	u64 swap_add, comp;
	u8 syndrome;
	u32 msn;
	u64 orig;
	__be32 imm;
	u32 inv_rkey;
	u32 qkey, sqpn;
};

u16 softmr_op_flags(u8 opcode);
unsigned int softmr_op_hdr_len(u8 opcode);
int softmr_pkt_parse(const void *buf, size_t len, struct softmr_pkt *pkt);
int softmr_pkt_check_len(const struct softmr_pkt *pkt, u32 mtu);
unsigned int softmr_pkt_build(void *buf, const struct softmr_pkt *pkt);

u32 softmr_icrc_hdr(const void *l3, bool ipv6, const void *bth,
		    unsigned int hdr_len);
u32 softmr_icrc_packet(const void *l3, bool ipv6, const void *bth,
		       unsigned int len);

/* PSNs are 24 bits and wrap: a is before b when a - b < 0 in 24 bits */
static inline s32 softmr_psn_diff(u32 a, u32 b)
{
	return (s32)((a - b) << 8) >> 8;
}

static inline u32 softmr_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SOFTMR_PSN_MASK;
}

/* The responder's decision on a request's PSN (IBTA 9.7.5.1.3) */
enum softmr_seq {
	SOFTMR_SEQ_NEW,		/* the expected PSN */
	SOFTMR_SEQ_DUP,		/* behind it: a duplicate to replay or ack */
	SOFTMR_SEQ_AHEAD,	/* ahead: packets were lost (RC: NAK) */
};

static inline enum softmr_seq softmr_resp_psn(u32 epsn, u32 psn)
{
	s32 d = softmr_psn_diff(psn, epsn);

	return d == 0 ? SOFTMR_SEQ_NEW : d < 0 ? SOFTMR_SEQ_DUP :
			SOFTMR_SEQ_AHEAD;
}

/* Where the responder stands within a multi-packet message */
enum softmr_msg_state {
	SOFTMR_MSG_NONE,	/* between messages */
	SOFTMR_MSG_IN_SEND,	/* after a SEND FIRST or MIDDLE */
	SOFTMR_MSG_IN_WRITE,	/* after a WRITE FIRST or MIDDLE */
};

int softmr_resp_opseq(enum softmr_msg_state state, u8 opcode,
		      enum softmr_msg_state *next);

#endif /* SOFTMR_WIRE_H */
