// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Deferred send doorbells (module parameter sq_defer_usecs, off by
 * default).  A send doorbell runs the send queue in the poster's context,
 * so a stream of small WQEs with a doorbell each costs a system call per
 * WQE.  With deferral, a doorbell that has run the queue sets sq_deferred
 * in the ring's header and arms a timer of sq_defer_usecs.  While the flag
 * is set the provider posts without a doorbell and owes one: it rings it
 * when a poll of one of the context's CQs finds that CQ drained (the
 * poster waits for completions, so now is the time to make them), and
 * before it arms a CQ's notification.  One doorbell then runs the WQEs of
 * many posts, in the poster's context and charged to it, like any other.
 *
 * The timer bounds the wait of a WQE whose poster never polls: it clears
 * the flag, issues a full barrier and reads the producer index once more
 * (the provider stores the index, issues a full barrier and reads the
 * flag: the Dekker order of sq_polled, softmr_sq_poll.c), and has the
 * engine's worker run the queue now (counter sq_defer_kicks) when WQEs
 * came meanwhile, unless the QP waits for a receive WQE: every end of an
 * RNR wait runs the queue (softmr_rnr.c).  The worker's runs take the
 * WQEs posted after the last doorbell only up to SOFTMR_SQ_POLL_MAX_BYTES
 * each (softmr_sq_process_budget(); the provider rings for a larger one).
 * They are a kernel worker's time, not the user's: like the worker's
 * continuation of a doorbell whose ring outlasted its run, and the end of
 * an RNR wait, they go on while a user keeps the ring filled without
 * doorbells, within no per-user cap (Documentation: "Send queue
 * polling", why it is off by default; deferral is off by default for the
 * same reason).  Only a doorbell sets the flag, never the worker's run,
 * and not while the QP's poller is on (it watches instead).
 *
 * The flag lives in memory the user writes: a user that sets it only
 * skips its own doorbells.  The kernel writes it and never reads it.
 */

#include <linux/hrtimer.h>
#include <linux/moduleparam.h>

#include "softmr.h"

static unsigned int sq_defer_usecs;
module_param(sq_defer_usecs, uint, 0644);
MODULE_PARM_DESC(sq_defer_usecs,
		 "after a send doorbell, let the provider defer the next ones for up to this many microseconds, at most 1000 (0: off)");

/* The deferral's while is over: anything posted since runs now. */
static enum hrtimer_restart softmr_sq_defer_end(struct hrtimer *timer)
{
	struct softmr_qp *qp = container_of(timer, struct softmr_qp,
					    sq_defer_timer);

	WRITE_ONCE(qp->sq.hdr->sq_deferred, 0);
	smp_mb();	/* the flag before the producer: the provider's order */
	/*
	 * hints: the worker's run reads the ring under sq.lock, and the end
	 * of an RNR wait runs the queue (softmr_rnr.c)
	 */
	if (softmr_sq_unconsumed(qp) && !softmr_rnr_waiting(qp) &&
	    !READ_ONCE(qp->dying)) {
		softmr_count(qp->sdev, SOFTMR_CNT_SQ_DEFER_KICKS, 1);
		/*
		 * now, even when a run is queued for later (the timer of an
		 * RNR wait that RESET ended); destroy_qp waits for this
		 * callback before it quiesces the works
		 */
		softmr_qp_kick_at(qp, 0);
	}
	return HRTIMER_NORESTART;
}

/**
 * softmr_sq_defer_init() - a new QP's deferral timer
 * @qp: the QP being created
 */
void softmr_sq_defer_init(struct softmr_qp *qp)
{
	softmr_hrtimer_setup(&qp->sq_defer_timer, softmr_sq_defer_end,
			     CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
}

/**
 * softmr_sq_defer() - after a doorbell's run: let the provider defer
 * @qp: a user QP whose send queue its doorbell just ran, in the
 *	poster's context
 *
 * Sets sq_deferred and (re)arms the timer that clears it.  Nothing when
 * deferral is off, or the QP is not a local user QP sending.
 */
void softmr_sq_defer(struct softmr_qp *qp)
{
	unsigned int usecs = min(READ_ONCE(sq_defer_usecs), 1000U);

	if (!usecs || !qp->is_user || READ_ONCE(qp->wire_on) ||
	    READ_ONCE(qp->dying) || READ_ONCE(qp->state) != IB_QPS_RTS)
		return;
	WRITE_ONCE(qp->sq.hdr->sq_deferred, 1);
	/* a while that began before ends later: one timer, the last one */
	hrtimer_start(&qp->sq_defer_timer, ns_to_ktime((u64)usecs * NSEC_PER_USEC),
		      HRTIMER_MODE_REL_SOFT);
}

/**
 * softmr_sq_defer_stop() - a QP's deferral over for good
 * @qp: a QP being destroyed, which no doorbell reaches any more
 *
 * Waits for a running timer; the QP's works are disabled (or quiesced)
 * after it.
 */
void softmr_sq_defer_stop(struct softmr_qp *qp)
{
	hrtimer_cancel(&qp->sq_defer_timer);
}
