// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The requester's congestion window.
 *
 * RoCE NICs count on a lossless fabric (PFC) and rate control from ECN
 * (DCQCN); a software device on an ordinary link has neither: a receiver
 * or a switch that falls behind drops, and each drop costs go-back-N (the
 * responder discards everything after the gap) or a timeout.  A fixed
 * window of SOFTMR_WIRE_PKT_WINDOW packets overran QEMU's link between two
 * VMs by a third of what it sent.  So the window adapts to loss as TCP's
 * does (RFC 5681): it starts at SOFTMR_WIRE_CWND_INIT packets, doubles
 * each round trip up to the slow-start threshold and then grows by one
 * packet a round trip; a loss (a sequence NAK, a read response missing)
 * halves it, once for all the losses of one window; a timeout takes it
 * down to SOFTMR_WIRE_CWND_MIN.  It never exceeds SOFTMR_WIRE_PKT_WINDOW.
 *
 * Everything here is called under the QP's sq.lock; the PSNs come from
 * the requester's own state (a peer's answers move them only as far as
 * what was sent, softmr_wire_req.c).
 */

#include <linux/minmax.h>

#include "softmr_wire.h"
#include "softmr_wire_cc.h"

/**
 * softmr_wire_cc_init() - a connection starts sending at @psn
 * @cc: its window
 * @psn: the first PSN it sends
 */
void softmr_wire_cc_init(struct softmr_wire_cc *cc, u32 psn)
{
	cc->cwnd = SOFTMR_WIRE_CWND_INIT;
	cc->ssthresh = SOFTMR_WIRE_PKT_WINDOW;
	cc->acc = 0;
	cc->una = psn;
	cc->recover = psn;
	cc->recovering = false;
}

/**
 * softmr_wire_cc_acked() - the oldest unacknowledged PSN moved to @una
 * @cc: the window
 * @una: the requester's new oldest unacknowledged PSN
 *
 * What was acknowledged since the last call grows the window, except
 * while the losses of the last window are being repaired.
 */
void softmr_wire_cc_acked(struct softmr_wire_cc *cc, u32 una)
{
	s32 n = softmr_psn_diff(una, cc->una);

	if (n <= 0)
		return;
	cc->una = una;
	if (cc->recovering) {
		/* only what was sent after the loss was counted */
		n = softmr_psn_diff(una, cc->recover);
		if (n < 0)
			return;
		cc->recovering = false;
	}
	if (cc->cwnd < cc->ssthresh) {
		u32 room = cc->ssthresh - cc->cwnd;

		if (n <= room) {
			cc->cwnd += n;
			return;
		}
		cc->cwnd = cc->ssthresh;
		n -= room;
	}
	cc->acc += n;
	while (cc->acc >= cc->cwnd && cc->cwnd < SOFTMR_WIRE_PKT_WINDOW) {
		cc->acc -= cc->cwnd;
		cc->cwnd++;
	}
	if (cc->cwnd >= SOFTMR_WIRE_PKT_WINDOW) {
		cc->cwnd = SOFTMR_WIRE_PKT_WINDOW;
		cc->acc = 0;
	}
}

/**
 * softmr_wire_cc_loss() - a packet at @psn was lost
 * @cc: the window
 * @psn: the first PSN missing
 * @hpsn: the PSN after the highest sent so far
 * @timeout: the retransmission timer found it
 *
 * The first loss of a window halves the window; the others of the same
 * window (before @hpsn of the first) do not.  A timeout takes the window
 * to its minimum whatever came before.
 */
void softmr_wire_cc_loss(struct softmr_wire_cc *cc, u32 psn, u32 hpsn,
			 bool timeout)
{
	if (!timeout && cc->recovering &&
	    softmr_psn_diff(psn, cc->recover) < 0)
		return;
	cc->ssthresh = max_t(u32, cc->cwnd / 2, SOFTMR_WIRE_CWND_MIN);
	cc->cwnd = timeout ? SOFTMR_WIRE_CWND_MIN : cc->ssthresh;
	cc->acc = 0;
	cc->recover = hpsn;
	cc->recovering = true;
}

/**
 * softmr_wire_cc_ackreq() - should the packet at @psn ask for an ACK?
 * @cc: the window
 * @psn: the packet's PSN
 * @una: the oldest unacknowledged PSN
 *
 * The last packet the window allows asks, and the one in its middle, so
 * that ACKs arrive while the rest is still on its way.
 *
 * Return: true when it should.
 */
bool softmr_wire_cc_ackreq(const struct softmr_wire_cc *cc, u32 psn, u32 una)
{
	s32 n = softmr_psn_diff(psn, una) + 1;

	return n >= (s32)cc->cwnd || n == (s32)(cc->cwnd / 2);
}
