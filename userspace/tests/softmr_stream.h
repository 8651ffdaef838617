/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * A stream of small signaled RDMA WRITEs, the load of the send queue
 * tests (softmr_sq_poll, softmr_sq_defer): NMSG of MSG bytes, at most
 * DEPTH outstanding, completions, order and data checked.
 */
#ifndef SOFTMR_STREAM_H
#define SOFTMR_STREAM_H

#include "softmr_qp_util.h"

#define MSG	16
#define NMSG	20000
#define DEPTH	48	/* below make_end()'s 64 send WRs */

/*
 * NMSG RDMA WRITEs of MSG bytes from @a to distinct offsets of @mr, at
 * most DEPTH outstanding, each signaled: completions in order, success,
 * and the destination holds each message.  Returns the posts made (one WR
 * each), or -1.
 */
static long write_stream(struct end *a, struct ibv_mr *mr, uint8_t *buf)
{
	uint8_t *src = buf, *dst = buf + BUF / 2;
	uint64_t next_wc = 0;
	long posted = 0, bad = 0;
	struct timespec seen, t;
	struct ibv_wc wc[16];
	int i, n;

	memset(dst, 0, BUF / 2);
	fill(src, BUF / 2, 3);
	clock_gettime(CLOCK_MONOTONIC, &seen);
	while (next_wc < NMSG) {
		while (posted < NMSG && posted - (long)next_wc < DEPTH) {
			size_t off = (size_t)posted * MSG % (BUF / 2);
			struct ibv_sge sg = {
				.addr = (uintptr_t)(src + off),
				.length = MSG, .lkey = mr->lkey,
			};
			struct ibv_send_wr wr = {
				.wr_id = posted, .sg_list = &sg, .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = (uintptr_t)(dst + off),
					     .rkey = mr->rkey },
			};

			if (post(a->qp, &wr))
				return -1;
			posted++;
		}
		n = ibv_poll_cq(a->cq, 16, wc);
		if (n < 0)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (n)
			seen = t;
		/* a WQE nobody runs: neither poller nor doorbell saw it */
		if (t.tv_sec - seen.tv_sec > 5) {
			CHECK(0, "no completion for 5 s: %ld posted, %llu completed",
			      posted, (unsigned long long)next_wc);
			return -1;
		}
		for (i = 0; i < n; i++, next_wc++)
			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].wr_id != next_wc)
				bad++;
		if (bad)
			break;
	}
	CHECK(!bad, "%ld completions out of order or in error", bad);
	CHECK(!memcmp(src, dst, (size_t)NMSG * MSG < BUF / 2 ?
		      (size_t)NMSG * MSG : BUF / 2),
	      "every message written");
	return bad ? -1 : posted;
}

#endif /* SOFTMR_STREAM_H */
