// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RoCEv2 transport headers: the opcode table, parsing of untrusted packets
 * into struct softmr_pkt, building headers from one, and the responder's
 * opcode sequence rule.  See softmr_wire.h.
 */

#include <linux/errno.h>
#include <linux/string.h>

#include "softmr_compat.h"
#include "softmr_wire.h"

#define REQ_SEND	(SOFTMR_PF_REQ | SOFTMR_PF_SEND | SOFTMR_PF_PAYLOAD)
#define REQ_WRITE	(SOFTMR_PF_REQ | SOFTMR_PF_WRITE | SOFTMR_PF_PAYLOAD)
#define READ_RESP	(SOFTMR_PF_READ | SOFTMR_PF_PAYLOAD)

/* RC's opcodes by operation; UC has the first twelve, UD two sends */
static const u16 softmr_rc_ops[32] = {
	[SOFTMR_OP_SEND_FIRST]	    = REQ_SEND | SOFTMR_PF_FIRST,
	[SOFTMR_OP_SEND_MIDDLE]	    = REQ_SEND | SOFTMR_PF_MIDDLE,
	[SOFTMR_OP_SEND_LAST]	    = REQ_SEND | SOFTMR_PF_LAST,
	[SOFTMR_OP_SEND_LAST_IMM]   = REQ_SEND | SOFTMR_PF_LAST |
				      SOFTMR_PF_IMMDT,
	[SOFTMR_OP_SEND_ONLY]	    = REQ_SEND | SOFTMR_PF_ONLY,
	[SOFTMR_OP_SEND_ONLY_IMM]   = REQ_SEND | SOFTMR_PF_ONLY |
				      SOFTMR_PF_IMMDT,
	[SOFTMR_OP_WRITE_FIRST]	    = REQ_WRITE | SOFTMR_PF_FIRST |
				      SOFTMR_PF_RETH,
	[SOFTMR_OP_WRITE_MIDDLE]    = REQ_WRITE | SOFTMR_PF_MIDDLE,
	[SOFTMR_OP_WRITE_LAST]	    = REQ_WRITE | SOFTMR_PF_LAST,
	[SOFTMR_OP_WRITE_LAST_IMM]  = REQ_WRITE | SOFTMR_PF_LAST |
				      SOFTMR_PF_IMMDT,
	[SOFTMR_OP_WRITE_ONLY]	    = REQ_WRITE | SOFTMR_PF_ONLY |
				      SOFTMR_PF_RETH,
	[SOFTMR_OP_WRITE_ONLY_IMM]  = REQ_WRITE | SOFTMR_PF_ONLY |
				      SOFTMR_PF_RETH | SOFTMR_PF_IMMDT,
	[SOFTMR_OP_READ_REQ]	    = SOFTMR_PF_REQ | SOFTMR_PF_READ |
				      SOFTMR_PF_ONLY | SOFTMR_PF_RETH,
	[SOFTMR_OP_READ_RESP_FIRST] = READ_RESP | SOFTMR_PF_FIRST |
				      SOFTMR_PF_AETH,
	[SOFTMR_OP_READ_RESP_MIDDLE] = READ_RESP | SOFTMR_PF_MIDDLE,
	[SOFTMR_OP_READ_RESP_LAST]  = READ_RESP | SOFTMR_PF_LAST |
				      SOFTMR_PF_AETH,
	[SOFTMR_OP_READ_RESP_ONLY]  = READ_RESP | SOFTMR_PF_ONLY |
				      SOFTMR_PF_AETH,
	[SOFTMR_OP_ACK]		    = SOFTMR_PF_ONLY | SOFTMR_PF_AETH,
	[SOFTMR_OP_ATOMIC_ACK]	    = SOFTMR_PF_ONLY | SOFTMR_PF_ATOMIC |
				      SOFTMR_PF_AETH | SOFTMR_PF_ATMACK,
	[SOFTMR_OP_CMP_SWAP]	    = SOFTMR_PF_REQ | SOFTMR_PF_ATOMIC |
				      SOFTMR_PF_ONLY | SOFTMR_PF_ATMETH,
	[SOFTMR_OP_FETCH_ADD]	    = SOFTMR_PF_REQ | SOFTMR_PF_ATOMIC |
				      SOFTMR_PF_ONLY | SOFTMR_PF_ATMETH,
	[SOFTMR_OP_SEND_LAST_INV]   = REQ_SEND | SOFTMR_PF_LAST |
				      SOFTMR_PF_IETH,
	[SOFTMR_OP_SEND_ONLY_INV]   = REQ_SEND | SOFTMR_PF_ONLY |
				      SOFTMR_PF_IETH,
};

/**
 * softmr_op_flags() - what an opcode carries (SOFTMR_PF_*)
 * @opcode: BTH opcode
 *
 * Return: its flags, 0 for an opcode softmr does not speak.
 */
u16 softmr_op_flags(u8 opcode)
{
	u8 op = opcode & 0x1f;

	switch (SOFTMR_OP_TRANSPORT(opcode)) {
	case SOFTMR_OP_RC:
		return softmr_rc_ops[op];
	case SOFTMR_OP_UC:
		return op <= SOFTMR_OP_WRITE_ONLY_IMM ? softmr_rc_ops[op] : 0;
	case SOFTMR_OP_UD:
		if (op != SOFTMR_OP_SEND_ONLY && op != SOFTMR_OP_SEND_ONLY_IMM)
			return 0;
		return softmr_rc_ops[op] | SOFTMR_PF_DETH;
	default:	/* RD, CNP, XRC, reserved, manufacturer */
		return 0;
	}
}

/**
 * softmr_op_hdr_len() - transport header bytes of an opcode
 * @opcode: BTH opcode
 *
 * Return: BTH and extension header bytes, 0 for an unknown opcode.
 */
unsigned int softmr_op_hdr_len(u8 opcode)
{
	u16 f = softmr_op_flags(opcode);

	if (!f)
		return 0;
	return sizeof(struct softmr_bth) +
	       (f & SOFTMR_PF_DETH ? sizeof(struct softmr_deth) : 0) +
	       (f & SOFTMR_PF_RETH ? sizeof(struct softmr_reth) : 0) +
	       (f & SOFTMR_PF_ATMETH ? sizeof(struct softmr_atmeth) : 0) +
	       (f & SOFTMR_PF_AETH ? sizeof(struct softmr_aeth) : 0) +
	       (f & SOFTMR_PF_ATMACK ? sizeof(struct softmr_atmack) : 0) +
	       (f & SOFTMR_PF_IMMDT ? sizeof(struct softmr_immdt) : 0) +
	       (f & SOFTMR_PF_IETH ? sizeof(struct softmr_ieth) : 0);
}

/**
 * softmr_pkt_parse() - parse an untrusted RoCEv2 transport packet
 * @buf: the UDP payload: BTH, extension headers, payload, pad, ICRC
 * @len: its length in bytes
 * @pkt: filled in on success; @pkt->payload points into @buf
 *
 * Checks what the packet alone decides: an opcode softmr speaks, transport
 * version 0, headers and ICRC within @len, a payload only where the
 * opcode has one, a multiple of 4 bytes with the pad inside it and only
 * on a message's last packet.  The ICRC itself is checked by the caller,
 * who has the IP header (softmr_icrc_packet()).
 *
 * On an error, @pkt holds nothing but possibly the opcode and pad.
 *
 * Return: 0, -EPROTO (opcode or version), -EMSGSIZE (lengths, and any
 * @len above 65535) or -EINVAL (pad).
 */
int softmr_pkt_parse(const void *buf, size_t len, struct softmr_pkt *pkt)
{
	const struct softmr_bth *bth = buf;
	const u8 *p = buf;
	unsigned int hdr_len;
	u32 qpn, apsn;
	size_t paylen;
	u16 f;

	memset(pkt, 0, sizeof(*pkt));
	/* no IP datagram is longer: no length below can wrap */
	if (len < sizeof(*bth) + SOFTMR_ICRC_BYTES || len > U16_MAX)
		return -EMSGSIZE;
	pkt->opcode = bth->opcode;
	f = softmr_op_flags(bth->opcode);
	if (!f || (bth->flags & SOFTMR_BTH_TVER_MASK))
		return -EPROTO;
	hdr_len = softmr_op_hdr_len(bth->opcode);
	if (len < hdr_len + SOFTMR_ICRC_BYTES)
		return -EMSGSIZE;
	paylen = len - hdr_len - SOFTMR_ICRC_BYTES;
	pkt->pad = (bth->flags & SOFTMR_BTH_PAD_MASK) >> SOFTMR_BTH_PAD_SHIFT;
	if (!(f & SOFTMR_PF_PAYLOAD) && paylen)
		return -EMSGSIZE;
	if (paylen % 4 || pkt->pad > paylen ||
	    (pkt->pad && !(f & SOFTMR_PF_LAST)))
		return -EINVAL;

	pkt->flags = f;
	pkt->se = bth->flags & SOFTMR_BTH_SE;
	pkt->mig = bth->flags & SOFTMR_BTH_MIG;
	pkt->pkey = be16_to_cpu(bth->pkey);
	qpn = be32_to_cpu(bth->qpn);
	apsn = be32_to_cpu(bth->apsn);
	pkt->becn = qpn & SOFTMR_BTH_BECN;
	pkt->dqpn = qpn & SOFTMR_QPN_MASK;
	pkt->ackreq = apsn & SOFTMR_BTH_ACKREQ;
	pkt->psn = apsn & SOFTMR_PSN_MASK;
	pkt->hdr_len = hdr_len;
	pkt->data_len = paylen - pkt->pad;
	pkt->payload = paylen ? p + hdr_len : NULL;

	p += sizeof(*bth);
	if (f & SOFTMR_PF_DETH) {
		const struct softmr_deth *d = (const void *)p;

		pkt->qkey = be32_to_cpu(d->qkey);
		pkt->sqpn = be32_to_cpu(d->sqpn) & SOFTMR_QPN_MASK;
		p += sizeof(*d);
	}
	if (f & SOFTMR_PF_RETH) {
		pkt->va = get_unaligned_be64(p);
		pkt->rkey = get_unaligned_be32(p + 8);
		pkt->dma_len = get_unaligned_be32(p + 12);
		p += sizeof(struct softmr_reth);
	}
	if (f & SOFTMR_PF_ATMETH) {
		pkt->va = get_unaligned_be64(p);
		pkt->rkey = get_unaligned_be32(p + 8);
		pkt->swap_add = get_unaligned_be64(p + 12);
		pkt->comp = get_unaligned_be64(p + 20);
		p += sizeof(struct softmr_atmeth);
	}
	if (f & SOFTMR_PF_AETH) {
		u32 smsn = get_unaligned_be32(p);

		pkt->syndrome = smsn >> SOFTMR_AETH_SYN_SHIFT;
		pkt->msn = smsn & SOFTMR_AETH_MSN_MASK;
		p += sizeof(struct softmr_aeth);
	}
	if (f & SOFTMR_PF_ATMACK) {
		pkt->orig = get_unaligned_be64(p);
		p += sizeof(struct softmr_atmack);
	}
	if (f & SOFTMR_PF_IMMDT) {
		memcpy(&pkt->imm, p, sizeof(pkt->imm));
		p += sizeof(struct softmr_immdt);
	}
	if (f & SOFTMR_PF_IETH)
		pkt->inv_rkey = get_unaligned_be32(p);
	return 0;
}

/**
 * softmr_pkt_check_len() - a packet's payload against the path MTU
 * @pkt: a parsed packet
 * @mtu: the QP's path MTU in bytes
 *
 * A first or middle packet carries exactly @mtu bytes, a last one 1 to
 * @mtu, an only one 0 to @mtu; a write's RETH length must agree: an only
 * packet carries all of it, a first one starts a message longer than one
 * packet (IBTA 9.7.5.1, C9-95).  The responder NAKs a violation as an
 * invalid request (RC) or drops it (UC, UD).
 *
 * Return: 0 or -EMSGSIZE.
 */
int softmr_pkt_check_len(const struct softmr_pkt *pkt, u32 mtu)
{
	u16 f = pkt->flags;

	if (!(f & SOFTMR_PF_PAYLOAD))
		return 0;
	if ((f & SOFTMR_PF_ONLY) == SOFTMR_PF_ONLY) {
		if (pkt->data_len > mtu)
			return -EMSGSIZE;
		if ((f & SOFTMR_PF_WRITE) && pkt->dma_len != pkt->data_len)
			return -EMSGSIZE;
		return 0;
	}
	if (f & SOFTMR_PF_LAST)
		return pkt->data_len && pkt->data_len <= mtu ? 0 : -EMSGSIZE;
	if (pkt->data_len != mtu)
		return -EMSGSIZE;
	if ((f & SOFTMR_PF_FIRST) && (f & SOFTMR_PF_WRITE) &&
	    pkt->dma_len <= mtu)
		return -EMSGSIZE;
	return 0;
}

/**
 * softmr_pkt_build() - write a packet's transport headers
 * @buf: room for softmr_op_hdr_len(@pkt->opcode) bytes
 * @pkt: what to write; @pkt->opcode must be one softmr speaks
 *
 * Return: the bytes written (the payload follows them).
 */
unsigned int softmr_pkt_build(void *buf, const struct softmr_pkt *pkt)
{
	struct softmr_bth *bth = buf;
	u16 f = softmr_op_flags(pkt->opcode);
	u8 *p = buf;

	bth->opcode = pkt->opcode;
	bth->flags = (pkt->se ? SOFTMR_BTH_SE : 0) |
		     (pkt->mig ? SOFTMR_BTH_MIG : 0) |
		     ((pkt->pad << SOFTMR_BTH_PAD_SHIFT) & SOFTMR_BTH_PAD_MASK);
	bth->pkey = cpu_to_be16(pkt->pkey);
	bth->qpn = cpu_to_be32((pkt->becn ? SOFTMR_BTH_BECN : 0) |
			       (pkt->dqpn & SOFTMR_QPN_MASK));
	bth->apsn = cpu_to_be32((pkt->ackreq ? SOFTMR_BTH_ACKREQ : 0) |
				(pkt->psn & SOFTMR_PSN_MASK));
	p += sizeof(*bth);
	if (f & SOFTMR_PF_DETH) {
		put_unaligned_be32(pkt->qkey, p);
		put_unaligned_be32(pkt->sqpn & SOFTMR_QPN_MASK, p + 4);
		p += sizeof(struct softmr_deth);
	}
	if (f & (SOFTMR_PF_RETH | SOFTMR_PF_ATMETH)) {
		put_unaligned_be64(pkt->va, p);
		put_unaligned_be32(pkt->rkey, p + 8);
	}
	if (f & SOFTMR_PF_RETH) {
		put_unaligned_be32(pkt->dma_len, p + 12);
		p += sizeof(struct softmr_reth);
	}
	if (f & SOFTMR_PF_ATMETH) {
		put_unaligned_be64(pkt->swap_add, p + 12);
		put_unaligned_be64(pkt->comp, p + 20);
		p += sizeof(struct softmr_atmeth);
	}
	if (f & SOFTMR_PF_AETH) {
		put_unaligned_be32((u32)pkt->syndrome << SOFTMR_AETH_SYN_SHIFT |
				   (pkt->msn & SOFTMR_AETH_MSN_MASK), p);
		p += sizeof(struct softmr_aeth);
	}
	if (f & SOFTMR_PF_ATMACK) {
		put_unaligned_be64(pkt->orig, p);
		p += sizeof(struct softmr_atmack);
	}
	if (f & SOFTMR_PF_IMMDT) {
		memcpy(p, &pkt->imm, sizeof(pkt->imm));
		p += sizeof(struct softmr_immdt);
	}
	if (f & SOFTMR_PF_IETH) {
		put_unaligned_be32(pkt->inv_rkey, p);
		p += sizeof(struct softmr_ieth);
	}
	return p - (u8 *)buf;
}

/**
 * softmr_resp_opseq() - the responder's opcode sequence rule
 * @state: where the responder stands in the current message
 * @opcode: the next in-sequence request's opcode (RC or UC)
 * @next: the state after it, on success
 *
 * Between messages only a first or only packet may come; within a send
 * only send middle/last packets, within a write only write middle/last
 * ones (IBTA 9.7.5.1.2, C9-87).  An RC responder answers a violation with
 * a NAK (invalid request); a UC responder drops the partial message and
 * may take a first/only packet as the start of a new one.
 *
 * Return: 0, or -EBADMSG for an out-of-sequence opcode, -EPROTO for one
 * that is not a request.
 */
int softmr_resp_opseq(enum softmr_msg_state state, u8 opcode,
		      enum softmr_msg_state *next)
{
	u16 f = softmr_op_flags(opcode);

	if (!(f & SOFTMR_PF_REQ))
		return -EPROTO;
	switch (state) {
	case SOFTMR_MSG_NONE:
		if (!(f & SOFTMR_PF_FIRST))
			return -EBADMSG;
		break;
	case SOFTMR_MSG_IN_SEND:
		if (!(f & SOFTMR_PF_SEND) || (f & SOFTMR_PF_FIRST))
			return -EBADMSG;
		break;
	case SOFTMR_MSG_IN_WRITE:
		if (!(f & SOFTMR_PF_WRITE) || (f & SOFTMR_PF_FIRST))
			return -EBADMSG;
		break;
	default:
		return -EBADMSG;
	}
	if (f & SOFTMR_PF_LAST)
		*next = SOFTMR_MSG_NONE;
	else
		*next = f & SOFTMR_PF_SEND ? SOFTMR_MSG_IN_SEND :
					     SOFTMR_MSG_IN_WRITE;
	return 0;
}
