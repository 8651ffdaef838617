/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The requester's congestion window: how many packets an RC connection on
 * the wire keeps unacknowledged.  softmr_wire_cc.c.
 */

#ifndef SOFTMR_WIRE_CC_H
#define SOFTMR_WIRE_CC_H

#include <linux/types.h>

/* packets sent and not yet acknowledged at most */
#define SOFTMR_WIRE_PKT_WINDOW	128
/* the window a connection starts with */
#define SOFTMR_WIRE_CWND_INIT	16
/* ... and never goes below */
#define SOFTMR_WIRE_CWND_MIN	4

/**
 * struct softmr_wire_cc - a requester's congestion window (in packets)
 * @cwnd: packets that may be unacknowledged now
 * @ssthresh: below it the window doubles each round trip, above it the window
 *	grows by one packet a round trip
 * @acc: packets acknowledged towards the next growth above @ssthresh
 * @una: the oldest unacknowledged PSN growth was last counted at
 * @recover: a loss before this PSN belongs to the last one counted
 * @recovering: a loss was counted and @una has not passed @recover yet
 */
struct softmr_wire_cc {
	u32 cwnd;
	u32 ssthresh;
	u32 acc;
	u32 una;
	u32 recover;
	bool recovering;
};

void softmr_wire_cc_init(struct softmr_wire_cc *cc, u32 psn);
void softmr_wire_cc_acked(struct softmr_wire_cc *cc, u32 una);
void softmr_wire_cc_loss(struct softmr_wire_cc *cc, u32 psn, u32 hpsn,
			 bool timeout);
bool softmr_wire_cc_ackreq(const struct softmr_wire_cc *cc, u32 psn,
			   u32 una);

#endif /* SOFTMR_WIRE_CC_H */
