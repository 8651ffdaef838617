// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The RoCEv2 invariant CRC (IBTA Annex A17.3.3): a CRC-32 over an 8-byte
 * all-ones stand-in for the LRH, the IP and UDP headers and the transport
 * headers with the fields routers may change set to ones, and the payload
 * with its pad.  It goes on the wire least significant byte first.
 */

#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/string.h>
#include <linux/udp.h>
#include <net/checksum.h>

#include "softmr_wire.h"

/**
 * softmr_icrc_hdr() - the ICRC's running value over a packet's headers
 * @l3: an IPv4 header without options, or an IPv6 header without
 *      extension headers, followed by the UDP header
 * @ipv6: which of the two @l3 is
 * @bth: the transport headers (need not follow the UDP header in memory)
 * @hdr_len: transport header bytes at @bth (BTH included, at least 12)
 *
 * Continue it with crc32_le() over the payload and pad, then complement
 * it; softmr_icrc_packet() does all of that for a linear packet.
 *
 * Compute it only over a packet softmr_pkt_parse() accepted: that is what
 * guarantees @hdr_len bytes (and the BTH) are there.
 *
 * Return: the running CRC (not yet complemented).
 */
u32 softmr_icrc_hdr(const void *l3, bool ipv6, const void *bth,
		    unsigned int hdr_len)
{
	static const u8 lrh[8] = { 0xff, 0xff, 0xff, 0xff,
				   0xff, 0xff, 0xff, 0xff };
	u8 ps[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
	      sizeof(struct softmr_bth)];
	unsigned int l3_len = ipv6 ? sizeof(struct ipv6hdr) :
				     sizeof(struct iphdr);
	struct udphdr *udp;
	u32 crc;

	if (WARN_ON_ONCE(hdr_len < sizeof(struct softmr_bth)))
		hdr_len = sizeof(struct softmr_bth);
	memcpy(ps, l3, l3_len + sizeof(*udp));
	if (ipv6) {
		struct ipv6hdr *h = (struct ipv6hdr *)ps;

		/* traffic class, flow label, hop limit */
		h->priority = 0xf;
		memset(h->flow_lbl, 0xff, sizeof(h->flow_lbl));
		h->hop_limit = 0xff;
	} else {
		struct iphdr *h = (struct iphdr *)ps;

		h->tos = 0xff;
		h->ttl = 0xff;
		h->check = CSUM_MANGLED_0;
	}
	udp = (struct udphdr *)(ps + l3_len);
	udp->check = CSUM_MANGLED_0;
	memcpy(ps + l3_len + sizeof(*udp), bth, sizeof(struct softmr_bth));
	/* BTH resv8a: FECN, BECN and reserved bits */
	ps[l3_len + sizeof(*udp) + 4] = 0xff;

	crc = crc32_le(~0U, lrh, sizeof(lrh));
	crc = crc32_le(crc, ps, l3_len + sizeof(*udp) +
		       sizeof(struct softmr_bth));
	return crc32_le(crc, (const u8 *)bth + sizeof(struct softmr_bth),
			hdr_len - sizeof(struct softmr_bth));
}

/**
 * softmr_icrc_packet() - the ICRC of a linear packet
 * @l3: the IP header, followed by the UDP header (see softmr_icrc_hdr())
 * @ipv6: whether @l3 is IPv6
 * @bth: the transport packet
 * @len: its bytes from the BTH to the end of the pad (without the ICRC);
 *       at least the BTH: a packet softmr_pkt_parse() accepted, or one
 *       being built
 *
 * Return: the ICRC; put_unaligned_le32() puts it on the wire.
 */
u32 softmr_icrc_packet(const void *l3, bool ipv6, const void *bth,
		       unsigned int len)
{
	u32 crc;

	if (WARN_ON_ONCE(len < sizeof(struct softmr_bth)))
		return 0;
	crc = softmr_icrc_hdr(l3, ipv6, bth, sizeof(struct softmr_bth));

	crc = crc32_le(crc, (const u8 *)bth + sizeof(struct softmr_bth),
		       len - sizeof(struct softmr_bth));
	return ~crc;
}
