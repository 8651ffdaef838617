// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of the RoCEv2 wire format: the ICRC against packets whose
 * ICRC is known (a CNP captured from a ConnectX-4 Lx, scapy's RoCE
 * regression packet), header build/parse round trips for every opcode,
 * the parser's refusals of malformed packets, payload length rules, PSN
 * arithmetic across the 24-bit wrap, the responder's sequence and
 * opcode-order decisions, and the requester's congestion window.
 */

#include <kunit/test.h>
#include <linux/crc32.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "softmr_compat.h"
#include "softmr_wire.h"
#include "softmr_wire_cc.h"

/*
 * A RoCEv2 CNP as a ConnectX-4 Lx sent it (IPv4 10.0.17.1 -> 10.0.18.1,
 * DSCP/ECN 0xc2, BECN set): Ethernet header stripped, ICRC in the last
 * four bytes as the NIC put it on the wire.
 */
static const u8 cnp_cx4lx[] = {
	0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11,
	0x91, 0x61, 0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01,
	0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00,
	0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00,
	0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x82, 0xfd, 0x00, 0x2a,
};

/*
 * scapy's RoCE regression packet: UC SEND ONLY, migreq, pad 2, QPN 211,
 * PSN 13571856, 20 payload bytes; ICRC bytes 78 f3 53 f3.
 */
static const u8 uc_send_scapy[] = {
	0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11,
	0xb4, 0xd5, 0xc0, 0xa8, 0x00, 0x07, 0xc0, 0xa8, 0x00, 0x07,
	0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2,
	0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf,
	0x17, 0x10,
	0x46, 0x30, 0x81, 0x8b, 0xe2, 0x89, 0x35, 0xd9, 0x0e, 0x9a,
	0x95, 0x50, 0x54, 0x01, 0xbe, 0x88, 0x5e, 0x50, 0x00, 0x00,
	0x78, 0xf3, 0x53, 0xf3,
};

#define L3_UDP_V4	(20 + 8)

static void softmr_test_icrc_known(struct kunit *test)
{
	const u8 *bth = cnp_cx4lx + L3_UDP_V4;
	unsigned int len = sizeof(cnp_cx4lx) - L3_UDP_V4 - SOFTMR_ICRC_BYTES;

	KUNIT_EXPECT_EQ(test, softmr_icrc_packet(cnp_cx4lx, false, bth, len),
			get_unaligned_le32(bth + len));

	bth = uc_send_scapy + L3_UDP_V4;
	len = sizeof(uc_send_scapy) - L3_UDP_V4 - SOFTMR_ICRC_BYTES;
	KUNIT_EXPECT_EQ(test, softmr_icrc_packet(uc_send_scapy, false, bth,
						 len),
			get_unaligned_le32(bth + len));
}

/* What routers may change does not change the ICRC; anything else does */
static void softmr_test_icrc_masking(struct kunit *test)
{
	u8 *p = kunit_kmalloc(test, sizeof(uc_send_scapy), GFP_KERNEL);
	const unsigned int len = sizeof(uc_send_scapy) - L3_UDP_V4 -
				 SOFTMR_ICRC_BYTES;
	u32 want = get_unaligned_le32(uc_send_scapy + L3_UDP_V4 + len);
	static const unsigned int mutable[] = { 1, 8, 10, 11, 26, 27,
						L3_UDP_V4 + 4 };
	static const unsigned int covered[] = { 0, 2, 12, 16, 20, 22, 24,
						L3_UDP_V4, L3_UDP_V4 + 1,
						L3_UDP_V4 + 7, L3_UDP_V4 + 11,
						L3_UDP_V4 + 12, 59 };
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, p);
	for (i = 0; i < ARRAY_SIZE(mutable); i++) {
		memcpy(p, uc_send_scapy, sizeof(uc_send_scapy));
		p[mutable[i]] ^= 0x5a;
		KUNIT_EXPECT_EQ_MSG(test, softmr_icrc_packet(p, false,
							     p + L3_UDP_V4,
							     len), want,
				    "byte %u", mutable[i]);
	}
	for (i = 0; i < ARRAY_SIZE(covered); i++) {
		memcpy(p, uc_send_scapy, sizeof(uc_send_scapy));
		p[covered[i]] ^= 0x01;
		KUNIT_EXPECT_NE_MSG(test, softmr_icrc_packet(p, false,
							     p + L3_UDP_V4,
							     len), want,
				    "byte %u", covered[i]);
	}
}

/* IPv6: traffic class, flow label and hop limit are masked */
static void softmr_test_icrc_ipv6(struct kunit *test)
{
	u8 pkt[40 + 8 + 12 + 8] = {
		0x60, 0x00, 0x00, 0x00, 0x00, 0x1c, 0x11, 0x40,
	};
	u8 *bth = pkt + 48;
	u32 a, b, c;

	memset(pkt + 8, 0x11, 32);	/* addresses */
	pkt[40] = 0xc0;			/* UDP source port */
	pkt[42] = 0x12;
	pkt[43] = 0xb7;
	pkt[45] = 28;
	bth[0] = SOFTMR_OP_SEND_ONLY;
	bth[2] = 0xff;
	bth[3] = 0xff;
	bth[7] = 0x42;
	memset(bth + 12, 0xab, 8);
	a = softmr_icrc_packet(pkt, true, bth, 20);
	pkt[0] = 0x6f;	/* traffic class high nibble */
	pkt[1] = 0xff;	/* traffic class low nibble, flow label */
	pkt[3] = 0x77;
	pkt[7] = 0x01;	/* hop limit */
	pkt[46] = 0x12;	/* UDP checksum */
	b = softmr_icrc_packet(pkt, true, bth, 20);
	KUNIT_EXPECT_EQ(test, a, b);
	pkt[8] ^= 1;	/* source address */
	c = softmr_icrc_packet(pkt, true, bth, 20);
	KUNIT_EXPECT_NE(test, a, c);
	/* the split form gives the same as the linear one */
	KUNIT_EXPECT_EQ(test, ~crc32_le(softmr_icrc_hdr(pkt, true, bth, 12),
					bth + 12, 8), c);
}

/* Real bytes: scapy's UC packet, and hand-laid headers at fixed offsets */
static void softmr_test_parse_bytes(struct kunit *test)
{
	static const u8 write_only_imm[] = {
		0x0b, 0x80, 0xff, 0xff, 0x00, 0x00, 0x12, 0x34,	/* BTH */
		0x80, 0xab, 0xcd, 0xef,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,	/* RETH */
		0xaa, 0xbb, 0xcc, 0xdd, 0x00, 0x00, 0x00, 0x04,
		0xde, 0xad, 0xbe, 0xef,				/* ImmDt */
		0x01, 0x02, 0x03, 0x04,				/* data */
		0x00, 0x00, 0x00, 0x00,				/* ICRC */
	};
	static const u8 ud_send_imm[] = {
		0x65, 0x10, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,	/* pad 1 */
		0x00, 0x00, 0x00, 0x07,
		0x11, 0x11, 0x11, 0x11, 0x00, 0x00, 0x01, 0x23,	/* DETH */
		0xca, 0xfe, 0xf0, 0x0d,				/* ImmDt */
		0x61, 0x62, 0x63, 0x00,				/* "abc" */
		0x00, 0x00, 0x00, 0x00,
	};
	static const u8 cmp_swap[] = {
		0x13, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x22,
		0x00, 0x00, 0x00, 0x09,
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,	/* va */
		0x00, 0x00, 0x42, 0x01,				/* rkey */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,	/* swap */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03,	/* compare */
		0x00, 0x00, 0x00, 0x00,
	};
	static const u8 atomic_ack[] = {
		0x12, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x33,
		0x00, 0x00, 0x00, 0x09,
		0x00, 0x00, 0x00, 0x2a,				/* AETH */
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,	/* orig */
		0x00, 0x00, 0x00, 0x00,
	};
	static const u8 send_last_inv[] = {
		0x16, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x44,
		0x00, 0x00, 0x00, 0x0a,
		0x00, 0x00, 0x99, 0x01,				/* IETH */
		0x00, 0x00, 0x00, 0x00,
	};
	struct softmr_pkt p;

	KUNIT_ASSERT_EQ(test, softmr_pkt_parse(uc_send_scapy + L3_UDP_V4,
					       sizeof(uc_send_scapy) -
					       L3_UDP_V4, &p), 0);
	KUNIT_EXPECT_EQ(test, p.opcode, SOFTMR_OP_UC | SOFTMR_OP_SEND_ONLY);
	KUNIT_EXPECT_TRUE(test, p.mig);
	KUNIT_EXPECT_FALSE(test, p.se);
	KUNIT_EXPECT_EQ(test, p.pad, 2);
	KUNIT_EXPECT_EQ(test, p.pkey, 0xffff);
	KUNIT_EXPECT_EQ(test, p.dqpn, 211);
	KUNIT_EXPECT_EQ(test, p.psn, 13571856);
	KUNIT_EXPECT_EQ(test, p.data_len, 18);
	KUNIT_EXPECT_PTR_EQ(test, p.payload, uc_send_scapy + L3_UDP_V4 + 12);

	KUNIT_ASSERT_EQ(test, softmr_pkt_parse(write_only_imm,
					       sizeof(write_only_imm), &p), 0);
	KUNIT_EXPECT_TRUE(test, p.se);
	KUNIT_EXPECT_EQ(test, p.dqpn, 0x1234);
	KUNIT_EXPECT_TRUE(test, p.ackreq);
	KUNIT_EXPECT_EQ(test, p.psn, 0xabcdef);
	KUNIT_EXPECT_EQ(test, p.va, 0x1122334455667788ULL);
	KUNIT_EXPECT_EQ(test, p.rkey, 0xaabbccdd);
	KUNIT_EXPECT_EQ(test, p.dma_len, 4);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(p.imm), 0xdeadbeef);
	KUNIT_EXPECT_EQ(test, p.hdr_len, 32);
	KUNIT_EXPECT_EQ(test, p.data_len, 4);
	KUNIT_EXPECT_EQ(test, p.payload[0], 0x01);

	KUNIT_ASSERT_EQ(test, softmr_pkt_parse(ud_send_imm,
					       sizeof(ud_send_imm), &p), 0);
	KUNIT_EXPECT_EQ(test, p.qkey, 0x11111111);
	KUNIT_EXPECT_EQ(test, p.sqpn, 0x123);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(p.imm), 0xcafef00d);
	KUNIT_EXPECT_EQ(test, p.data_len, 3);
	KUNIT_EXPECT_EQ(test, p.payload[0], 'a');

	KUNIT_ASSERT_EQ(test, softmr_pkt_parse(cmp_swap, sizeof(cmp_swap),
					       &p), 0);
	KUNIT_EXPECT_EQ(test, p.va, 0x7f0000001000ULL);
	KUNIT_EXPECT_EQ(test, p.rkey, 0x4201);
	KUNIT_EXPECT_EQ(test, p.swap_add, 5);
	KUNIT_EXPECT_EQ(test, p.comp, 3);

	KUNIT_ASSERT_EQ(test, softmr_pkt_parse(atomic_ack, sizeof(atomic_ack),
					       &p), 0);
	KUNIT_EXPECT_EQ(test, p.syndrome, 0);
	KUNIT_EXPECT_EQ(test, p.msn, 0x2a);
	KUNIT_EXPECT_EQ(test, p.orig, 0x0102030405060708ULL);

	KUNIT_ASSERT_EQ(test, softmr_pkt_parse(send_last_inv,
					       sizeof(send_last_inv), &p), 0);
	KUNIT_EXPECT_EQ(test, p.inv_rkey, 0x9901);
	KUNIT_EXPECT_EQ(test, p.data_len, 0);
	KUNIT_EXPECT_PTR_EQ(test, p.payload, (const u8 *)NULL);
}

/* One packet of each opcode with every field set, built and parsed back */
static void softmr_test_build_parse(struct kunit *test)
{
	u8 *buf = kunit_kzalloc(test, 256, GFP_KERNEL);
	unsigned int op, n = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (op = 0; op < 256; op++) {
		u16 f = softmr_op_flags(op);
		struct softmr_pkt in = {
			.opcode = op, .se = true, .ackreq = op & 1,
			.pkey = 0x8001, .dqpn = 0xabcdef, .psn = 0xfffffe,
			.va = 0x0123456789abcdefULL, .rkey = 0xdeadbeef,
			.dma_len = 8, .swap_add = 0x1111222233334444ULL,
			.comp = 0x5555666677778888ULL, .syndrome = 0x61,
			.msn = 0x123456, .orig = 0x99aabbccddeeff00ULL,
			.imm = cpu_to_be32(0xcafef00d), .inv_rkey = 0x1234,
			.qkey = 0x80010000, .sqpn = 0x000001,
		};
		struct softmr_pkt out;
		unsigned int hl, len, dl;

		if (!f)
			continue;
		n++;
		dl = f & SOFTMR_PF_PAYLOAD ? 8 : 0;
		in.pad = (f & SOFTMR_PF_LAST) && dl ? 2 : 0;
		memset(buf, 0xee, 256);
		hl = softmr_pkt_build(buf, &in);
		KUNIT_EXPECT_EQ_MSG(test, hl, softmr_op_hdr_len(op), "op %#x",
				    op);
		len = hl + dl + SOFTMR_ICRC_BYTES;
		KUNIT_ASSERT_EQ_MSG(test, softmr_pkt_parse(buf, len, &out), 0,
				    "op %#x", op);
		KUNIT_EXPECT_EQ(test, out.opcode, op);
		KUNIT_EXPECT_EQ(test, out.flags, f);
		KUNIT_EXPECT_TRUE(test, out.se);
		KUNIT_EXPECT_EQ(test, out.ackreq, in.ackreq);
		KUNIT_EXPECT_EQ(test, out.pkey, 0x8001);
		KUNIT_EXPECT_EQ(test, out.dqpn, 0xabcdef);
		KUNIT_EXPECT_EQ(test, out.psn, 0xfffffe);
		KUNIT_EXPECT_EQ(test, out.hdr_len, hl);
		KUNIT_EXPECT_EQ(test, out.data_len, dl - in.pad);
		KUNIT_EXPECT_PTR_EQ(test, out.payload, dl ? buf + hl : NULL);
		if (f & (SOFTMR_PF_RETH | SOFTMR_PF_ATMETH)) {
			KUNIT_EXPECT_EQ(test, out.va, in.va);
			KUNIT_EXPECT_EQ(test, out.rkey, in.rkey);
		}
		if (f & SOFTMR_PF_RETH)
			KUNIT_EXPECT_EQ(test, out.dma_len, 8);
		if (f & SOFTMR_PF_ATMETH) {
			KUNIT_EXPECT_EQ(test, out.swap_add, in.swap_add);
			KUNIT_EXPECT_EQ(test, out.comp, in.comp);
		}
		if (f & SOFTMR_PF_AETH) {
			KUNIT_EXPECT_EQ(test, out.syndrome, 0x61);
			KUNIT_EXPECT_EQ(test, out.msn, 0x123456);
		}
		if (f & SOFTMR_PF_ATMACK)
			KUNIT_EXPECT_EQ(test, out.orig, in.orig);
		if (f & SOFTMR_PF_IMMDT)
			KUNIT_EXPECT_EQ(test, be32_to_cpu(out.imm), 0xcafef00d);
		if (f & SOFTMR_PF_IETH)
			KUNIT_EXPECT_EQ(test, out.inv_rkey, 0x1234);
		if (f & SOFTMR_PF_DETH) {
			KUNIT_EXPECT_EQ(test, out.qkey, 0x80010000);
			KUNIT_EXPECT_EQ(test, out.sqpn, 1);
		}
		/* nothing is written past the headers */
		KUNIT_EXPECT_EQ(test, buf[hl], 0xee);
	}
	/* RC 0x00-0x14, 0x16, 0x17; UC 0x20-0x2b; UD 0x64, 0x65 */
	KUNIT_EXPECT_EQ(test, n, 21 + 2 + 12 + 2);
	KUNIT_EXPECT_EQ(test, softmr_op_hdr_len(SOFTMR_OP_CMP_SWAP), 12 + 28);
	KUNIT_EXPECT_EQ(test, softmr_op_hdr_len(SOFTMR_OP_ATOMIC_ACK),
			12 + 4 + 8);
	KUNIT_EXPECT_EQ(test, softmr_op_hdr_len(SOFTMR_OP_WRITE_ONLY_IMM),
			12 + 16 + 4);
	KUNIT_EXPECT_EQ(test, softmr_op_hdr_len(SOFTMR_OP_UD |
						SOFTMR_OP_SEND_ONLY_IMM),
			12 + 8 + 4);
}

/* The parser refuses what the packet alone shows to be malformed */
static void softmr_test_parse_refusals(struct kunit *test)
{
	u8 *buf = kunit_kzalloc(test, 128, GFP_KERNEL);
	struct softmr_pkt in = { .opcode = SOFTMR_OP_SEND_ONLY }, out;
	unsigned int hl, op, len;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	hl = softmr_pkt_build(buf, &in);
	/* too short for BTH + ICRC, for the extension headers */
	for (len = 0; len < 16; len++)
		KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, len, &out),
				-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, hl + 4, &out), 0);
	in.opcode = SOFTMR_OP_WRITE_ONLY;
	softmr_pkt_build(buf, &in);
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, 12 + 4 + 15, &out),
			-EMSGSIZE);
	/* opcodes softmr does not speak: reserved, RD, XRC, CNP */
	for (op = 0; op < 256; op++) {
		if (softmr_op_flags(op))
			continue;
		buf[0] = op;
		KUNIT_EXPECT_EQ_MSG(test, softmr_pkt_parse(buf, 64, &out),
				    -EPROTO, "op %#x", op);
	}
	/* transport version other than 0 */
	in.opcode = SOFTMR_OP_SEND_ONLY;
	hl = softmr_pkt_build(buf, &in);
	buf[1] |= 1;
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, hl + 4, &out), -EPROTO);
	/* payload not a multiple of 4, pad beyond the payload */
	hl = softmr_pkt_build(buf, &in);
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, hl + 6 + 4, &out),
			-EINVAL);
	in.pad = 3;
	hl = softmr_pkt_build(buf, &in);
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, hl + 4, &out), -EINVAL);
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, hl + 4 + 4, &out), 0);
	KUNIT_EXPECT_EQ(test, out.data_len, 1);
	/* pad on a packet that is not a message's last */
	in.opcode = SOFTMR_OP_SEND_FIRST;
	in.pad = 1;
	hl = softmr_pkt_build(buf, &in);
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, hl + 8 + 4, &out),
			-EINVAL);
	/* a payload on an opcode without one */
	in.opcode = SOFTMR_OP_READ_REQ;
	in.pad = 0;
	hl = softmr_pkt_build(buf, &in);
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, hl + 4 + 4, &out),
			-EMSGSIZE);
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, hl + 4, &out), 0);
	in.opcode = SOFTMR_OP_ACK;
	hl = softmr_pkt_build(buf, &in);
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, hl + 4 + 4, &out),
			-EMSGSIZE);
}

/* Random bytes never crash the parser, and what it accepts is consistent */
static void softmr_test_parse_random(struct kunit *test)
{
	struct softmr_pkt out;
	unsigned int i, len;
	u8 *buf;

	for (i = 0; i < 20000; i++) {
		/* exactly @len bytes: KASAN sees any read past them */
		len = get_random_u32() % 257;
		buf = kmalloc(len ?: 1, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, buf);
		get_random_bytes(buf, len);
		if (len > 1)
			buf[1] &= i & 1 ? 0xf0 : 0xff;	/* half version 0 */
		if (!softmr_pkt_parse(buf, len, &out)) {
			KUNIT_EXPECT_EQ(test, (u64)out.hdr_len + out.data_len +
					out.pad + SOFTMR_ICRC_BYTES, (u64)len);
			KUNIT_EXPECT_NE(test, out.flags, 0);
		}
		kfree(buf);
	}
	/* longer than any IP datagram */
	buf = kunit_kzalloc(test, 16, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	buf[0] = SOFTMR_OP_SEND_ONLY;
	KUNIT_EXPECT_EQ(test, softmr_pkt_parse(buf, (size_t)U32_MAX + 17, &out),
			-EMSGSIZE);
}

static void softmr_test_check_len(struct kunit *test)
{
	struct softmr_pkt p = {};
	const u32 mtu = 1024;

	p.flags = softmr_op_flags(SOFTMR_OP_SEND_FIRST);
	p.data_len = mtu;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), 0);
	p.data_len = mtu - 4;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), -EMSGSIZE);
	p.flags = softmr_op_flags(SOFTMR_OP_SEND_MIDDLE);
	p.data_len = mtu + 4;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), -EMSGSIZE);
	p.flags = softmr_op_flags(SOFTMR_OP_SEND_LAST);
	p.data_len = 0;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), -EMSGSIZE);
	p.data_len = 1;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), 0);
	p.data_len = mtu + 1;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), -EMSGSIZE);
	p.data_len = mtu;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), 0);
	p.flags = softmr_op_flags(SOFTMR_OP_SEND_ONLY);
	p.data_len = 0;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), 0);
	p.data_len = mtu;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), 0);
	p.data_len = mtu + 4;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), -EMSGSIZE);
	/* write: the RETH length agrees with what the packets carry */
	p.flags = softmr_op_flags(SOFTMR_OP_WRITE_ONLY);
	p.data_len = 100;
	p.dma_len = 100;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), 0);
	p.dma_len = 4096;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), -EMSGSIZE);
	p.flags = softmr_op_flags(SOFTMR_OP_WRITE_FIRST);
	p.data_len = mtu;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), 0);
	p.dma_len = mtu;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), -EMSGSIZE);
	/* no payload: nothing to check */
	p.flags = softmr_op_flags(SOFTMR_OP_READ_REQ);
	p.dma_len = 1 << 30;
	KUNIT_EXPECT_EQ(test, softmr_pkt_check_len(&p, mtu), 0);
}

static void softmr_test_psn(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, softmr_psn_add(0xffffff, 1), 0);
	KUNIT_EXPECT_EQ(test, softmr_psn_add(0xfffff0, 0x20), 0x10);
	KUNIT_EXPECT_EQ(test, softmr_psn_diff(0, 0xffffff), 1);
	KUNIT_EXPECT_EQ(test, softmr_psn_diff(0xffffff, 0), -1);
	KUNIT_EXPECT_EQ(test, softmr_psn_diff(5, 5), 0);
	KUNIT_EXPECT_EQ(test, softmr_psn_diff(0x7fffff, 0), 0x7fffff);
	KUNIT_EXPECT_EQ(test, softmr_psn_diff(0x800000, 0), -0x800000);

	KUNIT_EXPECT_EQ(test, softmr_resp_psn(100, 100), SOFTMR_SEQ_NEW);
	KUNIT_EXPECT_EQ(test, softmr_resp_psn(100, 99), SOFTMR_SEQ_DUP);
	KUNIT_EXPECT_EQ(test, softmr_resp_psn(100, 101), SOFTMR_SEQ_AHEAD);
	/* across the wrap */
	KUNIT_EXPECT_EQ(test, softmr_resp_psn(2, 0xfffffe), SOFTMR_SEQ_DUP);
	KUNIT_EXPECT_EQ(test, softmr_resp_psn(0xfffffe, 2), SOFTMR_SEQ_AHEAD);
	/* half the PSN space behind is a duplicate, not a future packet */
	KUNIT_EXPECT_EQ(test, softmr_resp_psn(0x800000, 0), SOFTMR_SEQ_DUP);
	KUNIT_EXPECT_EQ(test, softmr_resp_psn(0, 0x7fffff), SOFTMR_SEQ_AHEAD);
}

static void softmr_test_opseq(struct kunit *test)
{
	enum softmr_msg_state s = SOFTMR_MSG_NONE;
	static const u8 send3[] = { SOFTMR_OP_SEND_FIRST,
				    SOFTMR_OP_SEND_MIDDLE,
				    SOFTMR_OP_SEND_LAST_INV };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(send3); i++)
		KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, send3[i], &s), 0);
	KUNIT_EXPECT_EQ(test, s, SOFTMR_MSG_NONE);
	/* a middle or last packet between messages */
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_SEND_MIDDLE, &s),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_WRITE_LAST, &s),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_UC |
						SOFTMR_OP_WRITE_LAST_IMM, &s),
			-EBADMSG);
	/* within a write: no send, no read, no new message */
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_WRITE_FIRST, &s),
			0);
	KUNIT_EXPECT_EQ(test, s, SOFTMR_MSG_IN_WRITE);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_SEND_LAST, &s),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_READ_REQ, &s),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_WRITE_ONLY, &s),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_WRITE_MIDDLE,
						&s), 0);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_WRITE_LAST_IMM,
						&s), 0);
	KUNIT_EXPECT_EQ(test, s, SOFTMR_MSG_NONE);
	/* within a send: no write */
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_UC |
						SOFTMR_OP_SEND_FIRST, &s), 0);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_UC |
						SOFTMR_OP_WRITE_MIDDLE, &s),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, s, SOFTMR_MSG_IN_SEND);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_SEND_FIRST, &s),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_SEND_ONLY_IMM,
						&s), -EBADMSG);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(s, SOFTMR_OP_SEND_MIDDLE, &s),
			0);
	KUNIT_EXPECT_EQ(test, s, SOFTMR_MSG_IN_SEND);
	/* responses and acknowledgements are not requests */
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(SOFTMR_MSG_NONE,
						SOFTMR_OP_ACK, &s), -EPROTO);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(SOFTMR_MSG_NONE,
						SOFTMR_OP_READ_RESP_ONLY, &s),
			-EPROTO);
	KUNIT_EXPECT_EQ(test, softmr_resp_opseq(SOFTMR_MSG_NONE, 0x15, &s),
			-EPROTO);
}

/* the window doubles a round trip up to the threshold, across the wrap */
static void softmr_test_cc_slow_start(struct kunit *test)
{
	struct softmr_wire_cc cc;
	u32 una = 0xfffff8;

	softmr_wire_cc_init(&cc, una);
	KUNIT_EXPECT_EQ(test, cc.cwnd, SOFTMR_WIRE_CWND_INIT);
	una = softmr_psn_add(una, cc.cwnd);
	softmr_wire_cc_acked(&cc, una);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 2 * SOFTMR_WIRE_CWND_INIT);
	/* an answer behind what was counted grows nothing */
	softmr_wire_cc_acked(&cc, softmr_psn_add(una, -3));
	softmr_wire_cc_acked(&cc, una);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 2 * SOFTMR_WIRE_CWND_INIT);
	/* never beyond the largest window */
	una = softmr_psn_add(una, 10 * SOFTMR_WIRE_PKT_WINDOW);
	softmr_wire_cc_acked(&cc, una);
	KUNIT_EXPECT_EQ(test, cc.cwnd, SOFTMR_WIRE_PKT_WINDOW);
	KUNIT_EXPECT_EQ(test, cc.acc, 0);
}

/*
 * A loss halves the window once per window; above the threshold it grows
 * by one packet for a window's worth acknowledged.
 */
static void softmr_test_cc_loss(struct kunit *test)
{
	struct softmr_wire_cc cc;
	u32 una = 100, hpsn;

	softmr_wire_cc_init(&cc, una);
	una += 24;
	softmr_wire_cc_acked(&cc, una);
	KUNIT_ASSERT_EQ(test, cc.cwnd, 40);
	hpsn = una + 40;
	softmr_wire_cc_loss(&cc, una + 3, hpsn, false);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 20);
	KUNIT_EXPECT_EQ(test, cc.ssthresh, 20);
	/* more of the same window: no second halving */
	softmr_wire_cc_loss(&cc, una + 30, hpsn + 5, false);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 20);
	/* no growth while the window's losses are repaired */
	softmr_wire_cc_acked(&cc, hpsn - 1);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 20);
	/* past the loss: growth by one for each window acknowledged */
	softmr_wire_cc_acked(&cc, hpsn);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 20);
	softmr_wire_cc_acked(&cc, hpsn + 19);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 20);
	softmr_wire_cc_acked(&cc, hpsn + 20);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 21);
	softmr_wire_cc_acked(&cc, hpsn + 20 + 21 + 22);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 23);
	/* a loss in a later window halves again */
	softmr_wire_cc_loss(&cc, hpsn + 63, hpsn + 80, false);
	KUNIT_EXPECT_EQ(test, cc.cwnd, 11);
	/* a timeout: down to the least, whatever came before */
	softmr_wire_cc_loss(&cc, hpsn + 63, hpsn + 80, true);
	KUNIT_EXPECT_EQ(test, cc.cwnd, SOFTMR_WIRE_CWND_MIN);
	KUNIT_EXPECT_EQ(test, cc.ssthresh, 5);
	/* and never below it */
	softmr_wire_cc_loss(&cc, hpsn + 90, hpsn + 100, true);
	KUNIT_EXPECT_EQ(test, cc.cwnd, SOFTMR_WIRE_CWND_MIN);
	softmr_wire_cc_acked(&cc, hpsn + 100);
	softmr_wire_cc_acked(&cc, hpsn + 100 + SOFTMR_WIRE_CWND_MIN);
	KUNIT_EXPECT_EQ(test, cc.cwnd, SOFTMR_WIRE_CWND_MIN + 1);
}

/* the last packet the window allows asks for an ACK, and its middle one */
static void softmr_test_cc_ackreq(struct kunit *test)
{
	struct softmr_wire_cc cc;
	u32 una = 0xfffffa, i, asked = 0;

	softmr_wire_cc_init(&cc, una);
	for (i = 0; i < SOFTMR_WIRE_CWND_INIT; i++)
		if (softmr_wire_cc_ackreq(&cc, softmr_psn_add(una, i), una))
			asked |= BIT(i);
	KUNIT_EXPECT_EQ(test, asked, BIT(SOFTMR_WIRE_CWND_INIT / 2 - 1) |
			BIT(SOFTMR_WIRE_CWND_INIT - 1));
	/* beyond the window (a go-back moved una): each asks */
	i = softmr_psn_add(una, 40);
	KUNIT_EXPECT_TRUE(test, softmr_wire_cc_ackreq(&cc, i, una));
}

static struct kunit_case softmr_wire_cases[] = {
	KUNIT_CASE(softmr_test_icrc_known),
	KUNIT_CASE(softmr_test_icrc_masking),
	KUNIT_CASE(softmr_test_icrc_ipv6),
	KUNIT_CASE(softmr_test_parse_bytes),
	KUNIT_CASE(softmr_test_build_parse),
	KUNIT_CASE(softmr_test_parse_refusals),
	KUNIT_CASE(softmr_test_parse_random),
	KUNIT_CASE(softmr_test_check_len),
	KUNIT_CASE(softmr_test_psn),
	KUNIT_CASE(softmr_test_opseq),
	KUNIT_CASE(softmr_test_cc_slow_start),
	KUNIT_CASE(softmr_test_cc_loss),
	KUNIT_CASE(softmr_test_cc_ackreq),
	{}
};

static struct kunit_suite softmr_wire_suite = {
	.name = "softmr_wire",
	.test_cases = softmr_wire_cases,
};

kunit_test_suite(softmr_wire_suite);
