// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr deferred send doorbells test (softmr.sq_defer_usecs): after a
 * send doorbell the kernel lets the provider post without one for a while
 * (sq_deferred in the send ring's header); the provider owes the doorbell
 * and rings it when a poll finds a CQ of the context drained, or before
 * ibv_req_notify_cq; the kernel's timer runs what a poster that never
 * polls left.  Checked: off, every post rings; on, a stream of RDMA WRITEs
 * rings far fewer doorbells than posts, in order and with its data; a WQE
 * posted without a doorbell runs at a drained poll and at
 * ibv_req_notify_cq, in the caller (its data is there when the call
 * returns), and by the timer when nobody polls (sq_defer_kicks); a WQE
 * above SOFTMR_SQ_POLL_MAX_BYTES still rings; sends in an RNR wait resume
 * when the receiver posts; a QP moved to ERR flushes what it owes; QPs
 * destroyed with WQEs owed and the timer armed go at once.
 *
 * usage: softmr_sq_defer DEV   (root: it sets the module parameters)
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "softmr_test.h"
/* the provider's QP layout, to read the send ring's header */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "../providers/softmr/softmr.h"
#pragma GCC diagnostic pop

#define BUF	(1 << 20)

#include "softmr_stream.h"

#define PARAM	"/sys/module/softmr/parameters/sq_defer_usecs"
#define POLL	"/sys/module/softmr/parameters/sq_poll_usecs"
#define ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

static const char *dev;
static struct ibv_mr *mr;
static uint8_t *buf;

static uint32_t deferred(struct ibv_qp *qp)
{
	return __atomic_load_n(&to_sqp(qp)->sq.hdr->sq_deferred,
			       __ATOMIC_RELAXED);
}

static long doorbells(void)
{
	return st_counter(dev, "send_doorbells");
}

/* Post one RDMA WRITE of @len bytes from @src to @dst (both in mr). */
static int write_one(struct ibv_qp *qp, uint8_t *src, uint8_t *dst,
		     uint32_t len, uint64_t id, bool signaled)
{
	struct ibv_sge sg = {
		.addr = (uintptr_t)src, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sg, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
		.wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = mr->rkey },
	};

	return post(qp, &wr);
}

/*
 * A stream (write_stream()) from @a: the doorbells rung meanwhile, or -1
 * when it failed (said).
 */
static long stream_doorbells(struct end *a)
{
	long db0 = doorbells();

	return write_stream(a, mr, buf) == NMSG ? doorbells() - db0 : -1;
}

static bool landed(uint64_t seed)
{
	return !memcmp(buf + BUF / 2 + 64, &seed, 8);
}

/*
 * Open a deferral on @a: a write with its doorbell, then a second one
 * posted without (the flag still set): a doorbell runs its WQEs before it
 * returns, so the second write's 8 bytes (@seed, at buf + BUF / 2 + 64)
 * not written when its post returns mean it is owed.  Returns 0 then, 1
 * when the flag was gone by then (try again), -1 on error.
 */
static int owe_one(struct end *a, uint64_t seed)
{
	uint8_t *src = buf + 4096, *dst = buf + BUF / 2 + 64;
	struct ibv_wc wc;

	memset(dst, 0, 8);
	memcpy(src, &seed, 8);
	if (write_one(a->qp, src, dst - 64, 8, 1, true) || wait_wc(a->cq, &wc) ||
	    wc.status != IBV_WC_SUCCESS)
		return -1;
	if (!deferred(a->qp))
		return 1;
	if (write_one(a->qp, src, dst, 8, 2, true))
		return -1;
	if (landed(seed))	/* rang: its completion is not the caller's */
		return wait_wc(a->cq, &wc) ? -1 : 1;
	return 0;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * An owed WQE on @a, then @notify ? ibv_req_notify_cq : ibv_poll_cq on
 * its drained CQ: true when the call returned with the WQE run (its data
 * there, no completion taken by the poll), its doorbell rung and no
 * timer's kick meanwhile.  A try in which the flag went before the post,
 * or the timer may have run the WQE first, is made again.
 */
static bool owed_rung_by(struct end *a, uint64_t seed, bool notify)
{
	struct ibv_wc wc;
	int tries, r;

	for (tries = 0; tries < 20; tries++) {
		long k0 = st_counter(dev, "sq_defer_kicks");
		long db0 = doorbells();
		bool ran;

		r = owe_one(a, seed + tries);
		if (r < 0)
			break;
		if (r)
			continue;
		if (notify)
			ran = !ibv_req_notify_cq(a->cq, 0) &&
			      landed(seed + tries);
		else
			ran = !ibv_poll_cq(a->cq, 1, &wc) &&
			      landed(seed + tries);
		if (wait_wc(a->cq, &wc) || wc.status != IBV_WC_SUCCESS ||
		    wc.wr_id != 2)
			break;
		if (st_counter(dev, "sq_defer_kicks") != k0)
			continue;	/* the timer came first */
		CHECK(doorbells() - db0 == 2,
		      "the first write's doorbell and the owed one: %ld",
		      doorbells() - db0);
		return ran;
	}
	CHECK(0, "no try with a WQE owed and no timer (%d tries)", tries);
	return false;
}

/* The three ways an owed WQE runs. */
static void test_owed(void)
{
	struct end a = {}, b = {};
	uint32_t big = SOFTMR_SQ_POLL_MAX_BYTES * 2;
	struct ibv_wc wc;
	struct timespec t0;
	long k0, db;
	int r, tries;

	if (make_rc_pair(&a, &b, ACCESS, 7)) {
		CHECK(0, "RC pair");
		return;
	}

	CHECK(owed_rung_by(&a, 0x1100, false),
	      "a poll of the drained CQ ran the owed WQE before it returned");
	CHECK(owed_rung_by(&a, 0x2200, true),
	      "ibv_req_notify_cq ran the owed WQE before it returned");

	/* nobody polls: the timer runs it */
	k0 = st_counter(dev, "sq_defer_kicks");
	for (tries = 0; (r = owe_one(&a, 0x3333)) == 1 && tries < 20; tries++)
		;
	CHECK(r == 0, "a WQE owed, never polled (%d tries)", tries);
	if (!r) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (!landed(0x3333) && ms_since(&t0) < 5000)
			;
		CHECK(landed(0x3333), "the timer ran it: %ld ms, unpolled",
		      ms_since(&t0));
		CHECK(st_counter(dev, "sq_defer_kicks") > k0,
		      "sq_defer_kicks counted it");
		CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
		      wc.wr_id == 2, "its completion");
	}

	/* a WQE above SOFTMR_SQ_POLL_MAX_BYTES rings while deferred */
	db = doorbells();
	for (tries = 0; (r = owe_one(&a, 0x4444)) == 1 && tries < 20; tries++)
		;
	if (!r) {
		uint8_t *src = buf + BUF / 4, *dst = buf + BUF / 2 + 4096;

		fill(src, big, 9);
		memset(dst, 0, big);
		CHECK(!write_one(a.qp, src, dst, big, 3, true) &&
		      !memcmp(src, dst, big) && landed(0x4444),
		      "a 128 KiB WRITE rang and ran (with the owed one) before its post returned");
		db = doorbells() - db;
		CHECK(tries || db == 2,
		      "its doorbell and the first write's: %ld (%d tries)", db,
		      tries);
		CHECK(!wait_wc(a.cq, &wc) && wc.wr_id == 2 &&
		      !wait_wc(a.cq, &wc) && wc.wr_id == 3 &&
		      wc.status == IBV_WC_SUCCESS,
		      "both completions, in order");
	}
	free_end(&a);
	free_end(&b);
}

/* Owed WQEs of a QP moved to ERR complete (flushed or run), none lost. */
static void test_error_owed(void)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct end a = {}, b = {};
	struct ibv_wc wc;
	int i, r, got = 0, tries;

	if (make_rc_pair(&a, &b, ACCESS, 7)) {
		CHECK(0, "RC pair");
		return;
	}
	for (tries = 0; (r = owe_one(&a, 0x5555)) == 1 && tries < 20; tries++)
		;
	for (i = 0; !r && i < 8; i++)
		r = write_one(a.qp, buf, buf + BUF / 2 + 4096, 8, 10 + i, true);
	CHECK(!r && !ibv_modify_qp(a.qp, &attr, IBV_QP_STATE),
	      "WQEs owed, QP to ERR");
	while (got < 9 && !wait_wc(a.cq, &wc))
		got++;
	CHECK(got == 9, "every owed WQE completed: %d of 9", got);
	free_end(&a);
	free_end(&b);
}

/* SENDs owed during an RNR wait run when the receiver posts. */
static void test_rnr(void)
{
	struct end a = {}, b = {};
	struct ibv_sge sg = { .addr = (uintptr_t)buf, .length = 8,
			      .lkey = mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_sge rsg = { .addr = (uintptr_t)buf + BUF / 2, .length = 8,
			       .lkey = mr->lkey };
	struct ibv_wc wc;
	int i, ok = 0;
	long k0;

	/* RNR waits of 655 ms: no retry while the test looks */
	if (make_rc_pair_timer(&a, &b, ACCESS, 7, 0)) {
		CHECK(0, "RC pair");
		return;
	}
	k0 = st_counter(dev, "sq_defer_kicks");
	for (i = 0; i < 4; i++) {
		wr.wr_id = i;
		if (post(a.qp, &wr))
			break;
	}
	CHECK(i == 4 && no_wc(a.cq), "4 SENDs wait for receive WQEs");
	/* the deferral's timer leaves a QP in an RNR wait to the wait */
	CHECK(st_counter(dev, "sq_defer_kicks") == k0,
	      "no timer kick during the RNR wait");
	for (i = 0; i < 4; i++)
		post_recv(b.qp, i, &rsg, 1);
	for (i = 0; i < 4; i++)
		if (!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
		    wc.wr_id == (uint64_t)i)
			ok++;
	CHECK(ok == 4, "the receiver's posts resumed them: %d of 4 in order",
	      ok);
	for (i = 0, ok = 0; i < 4; i++)
		if (!wait_wc(b.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
		    wc.opcode == IBV_WC_RECV && wc.byte_len == 8)
			ok++;
	CHECK(ok == 4, "4 receives completed");
	free_end(&a);
	free_end(&b);
}

/*
 * Post @n SENDs of @len bytes from @src, chained: one doorbell, one run.
 * @imm: SEND_WITH_IMM, solicited, the immediate data the wr_id.
 */
static int send_chain_imm(struct ibv_qp *qp, uint8_t *src, uint32_t len,
			  int n, uint64_t id, bool imm)
{
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sg[4];
	int i;

	if (n > 4)
		return EINVAL;
	for (i = 0; i < n; i++) {
		sg[i] = (struct ibv_sge){ .addr = (uintptr_t)src + i * len,
					  .length = len, .lkey = mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = id + i, .sg_list = &sg[i], .num_sge = 1,
			.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED |
				      (imm ? IBV_SEND_SOLICITED : 0),
			.imm_data = htonl(id + i),
			.next = i + 1 < n ? &wr[i + 1] : NULL,
		};
	}
	return ibv_post_send(qp, wr, &bad);
}

static int send_chain(struct ibv_qp *qp, uint8_t *src, uint32_t len, int n,
		      uint64_t id)
{
	return send_chain_imm(qp, src, len, n, id, false);
}

/*
 * The third of three chained SENDs (the first, on the general path, warms
 * the run's key caches; the second goes the fast lane) goes to a receive
 * WQE that is wrong in @how: both ends see the general path's errors, the
 * receive buffer beyond the messages untouched, and the lane took only the
 * second.  @rmr: the receive MR, @at: its receive buffers.
 */
static void fast_send_refused(struct ibv_mr *rmr, uint8_t *at, bool past_mr)
{
	struct end a = {}, b = {};
	uint8_t *src = buf + 8192;
	struct ibv_sge rsg[3] = {
		{ .addr = (uintptr_t)at, .length = 64, .lkey = rmr->lkey },
		{ .addr = (uintptr_t)at + 64, .length = 64, .lkey = rmr->lkey },
		/* too short for 64 bytes; or 64 bytes from the MR's last 8 */
		{ .addr = (uintptr_t)(past_mr ? at + rmr->length - 8 : at + 128),
		  .length = past_mr ? 64 : 32, .lkey = rmr->lkey },
	};
	uint32_t len = past_mr ? 8 : 64;
	struct ibv_wc wc = {}, rwc[3] = {};
	long long f0;
	bool ok;
	int i;

	if (make_rc_pair(&a, &b, ACCESS, 7)) {
		CHECK(0, "RC pair");
		return;
	}
	fill(src, 3 * len, 13);
	memset(at, 0, past_mr ? rmr->length : 192);
	f0 = st_counter(dev, "sq_fast_sends");
	ok = true;
	for (i = 0; i < 3; i++)
		ok = ok && !post_recv(b.qp, i + 1, &rsg[i], 1);
	ok = ok && !send_chain(a.qp, src, len, 3, 1);
	ok = ok && !wait_wc(a.cq, &wc) && wc.wr_id == 1 &&
	     wc.status == IBV_WC_SUCCESS && !wait_wc(a.cq, &wc) &&
	     wc.wr_id == 2 && wc.status == IBV_WC_SUCCESS &&
	     !wait_wc(a.cq, &wc) && wc.wr_id == 3 &&
	     wc.status == (past_mr ? IBV_WC_REM_OP_ERR :
				     IBV_WC_REM_INV_REQ_ERR);
	CHECK(ok, "%s: the sender's completions: success twice, then %s (got %s)",
	      past_mr ? "a receive SGE past its MR" : "a receive buffer too short",
	      past_mr ? "remote operation error" : "remote invalid request",
	      ibv_wc_status_str(wc.status));
	ok = true;
	for (i = 0; i < 3; i++)
		ok = ok && !wait_wc(b.cq, &rwc[i]) &&
		     rwc[i].wr_id == (uint64_t)i + 1;
	ok = ok && rwc[0].status == IBV_WC_SUCCESS &&
	     rwc[1].status == IBV_WC_SUCCESS &&
	     rwc[2].status == (past_mr ? IBV_WC_LOC_PROT_ERR :
					 IBV_WC_LOC_LEN_ERR);
	CHECK(ok, "the receiver's: success twice, then %s (got %s)",
	      past_mr ? "local protection error" : "local length error",
	      ibv_wc_status_str(rwc[2].status));
	CHECK(!memcmp(at, src, len) && !memcmp(at + 64, src + len, len) &&
	      (past_mr ? at[rmr->length - 8] == 0 : at[128] == 0),
	      "the first two messages delivered, nothing of the third");
	f0 = st_counter(dev, "sq_fast_sends") - f0;
	CHECK(f0 == 1, "the fast lane took the second SEND, not the third: %lld",
	      f0);
	free_end(&a);
	free_end(&b);
}

/*
 * SENDs on the fast lane (a run of many WQEs, the receive key cached):
 * the data and both ends' completions as on the general path; a receive
 * WQE too short, or one whose SGE runs past its MR, refused as there.
 */
static void test_fast_send(void)
{
	uint8_t *src = buf + 8192, *dst = buf + BUF / 2 + 8192;
	struct end a = {}, b = {};
	long f0 = st_counter(dev, "sq_fast_sends");
	struct ibv_mr *small;
	int i, round, good = 0;

	if (make_rc_pair(&a, &b, ACCESS, 7)) {
		CHECK(0, "RC pair");
		return;
	}
	for (round = 0; round < 16; round++) {
		struct ibv_wc wc;
		int ok = 0;

		fill(src, 16 * 64, 20 + round);
		memset(dst, 0, 16 * 64);
		for (i = 0; i < 16; i++) {
			struct ibv_sge rsg = { .addr = (uintptr_t)dst + i * 64,
					       .length = 64,
					       .lkey = mr->lkey };

			post_recv(b.qp, i, &rsg, 1);
		}
		for (i = 0; i < 16; i += 4)
			if (send_chain_imm(a.qp, src + i * 64, 64, 4, i,
					   round & 1))
				break;
		for (i = 0; i < 16; i++)
			if (!wait_wc(a.cq, &wc) && wc.wr_id == (uint64_t)i &&
			    wc.status == IBV_WC_SUCCESS)
				ok++;
		for (i = 0; i < 16; i++)
			if (!wait_wc(b.cq, &wc) && wc.wr_id == (uint64_t)i &&
			    wc.status == IBV_WC_SUCCESS &&
			    wc.opcode == IBV_WC_RECV && wc.byte_len == 64 &&
			    wc.qp_num == b.qp->qp_num &&
			    wc.src_qp == a.qp->qp_num &&
			    (round & 1 ? (wc.wc_flags & IBV_WC_WITH_IMM) &&
					 wc.imm_data == htonl(i) :
					 !(wc.wc_flags & IBV_WC_WITH_IMM)))
				ok++;
		if (ok == 32 && !memcmp(src, dst, 16 * 64))
			good++;
	}
	CHECK(good == 16, "%d of 16 rounds of 16 SENDs (odd rounds with immediate data): data, both ends' completions in order",
	      good);
	CHECK(st_counter(dev, "sq_fast_sends") > f0,
	      "the fast lane took some: %lld",
	      st_counter(dev, "sq_fast_sends") - f0);
	free_end(&a);
	free_end(&b);

	fast_send_refused(mr, buf + BUF / 2 + 65536, false);
	small = ibv_reg_mr(pd, buf + BUF / 2 + 131072, 4096, ACCESS);
	CHECK(small != NULL, "a one-page MR");
	if (small) {
		fast_send_refused(small, small->addr, true);
		ibv_dereg_mr(small);
	}
}

/* QPs destroyed with a WQE owed and the timer armed go at once. */
static void test_destroy_owed(void)
{
	struct timespec t0;
	int i, r, owed = 0, done = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 50; i++) {
		struct end a = {}, b = {};

		if (make_rc_pair(&a, &b, ACCESS, 7))
			break;
		r = owe_one(&a, 0x6666 + i);
		if (!r && deferred(a.qp))
			owed++;	/* destroyed with the WQE owed, timer armed */
		free_end(&a);
		free_end(&b);
		if (r < 0)
			break;
		done++;
	}
	CHECK(done == 50 && owed >= 10 && ms_since(&t0) < 30000,
	      "50 QPs destroyed, %d with a WQE owed and the timer armed (%ld ms)",
	      owed, ms_since(&t0));
}

int main(int argc, char **argv)
{
	long usecs, poll_usecs, db;
	struct end a = {}, b = {};

	dev = argc > 1 ? argv[1] : "softmr0";
	usecs = st_read_long(PARAM);
	if (usecs < 0) {
		SKIP("no %s: a module without deferred doorbells", PARAM);
		return st_finish("softmr_sq_defer");
	}
	poll_usecs = st_read_long(POLL);
	if (st_setup(dev))
		return 1;
	buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mr = ibv_reg_mr(pd, buf, BUF, ACCESS);
	CHECK(buf != MAP_FAILED && mr, "buffer and MR");
	if (!mr)
		return st_finish("softmr_sq_defer");
	CHECK(!st_write_long(POLL, 0), "sq_poll_usecs=0 (polling takes precedence)");

	printf("-- a doorbell per post (sq_defer_usecs=0)\n");
	CHECK(!st_write_long(PARAM, 0), "sq_defer_usecs=0");
	if (make_rc_pair(&a, &b, ACCESS, 7)) {
		CHECK(0, "RC pair");
		goto out;
	}
	db = stream_doorbells(&a);
	CHECK(db == NMSG && !deferred(a.qp), "%d posts rang %ld doorbells",
	      NMSG, db);

	printf("-- deferred doorbells (sq_defer_usecs=1000)\n");
	CHECK(!st_write_long(PARAM, 1000), "sq_defer_usecs=1000");
	db = stream_doorbells(&a);
	/* an idle VM: about one doorbell per DEPTH posts */
	CHECK(db > 0 && db < NMSG / 4, "%d posts rang %ld doorbells", NMSG,
	      db);
	free_end(&a);
	free_end(&b);
	test_owed();
	test_error_owed();
	test_rnr();
	test_fast_send();
	test_destroy_owed();
out:
	CHECK(!st_write_long(PARAM, usecs), "sq_defer_usecs restored to %ld",
	      usecs);
	if (poll_usecs >= 0)
		CHECK(!st_write_long(POLL, poll_usecs),
		      "sq_poll_usecs restored to %ld", poll_usecs);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return st_finish("softmr_sq_defer");
}
