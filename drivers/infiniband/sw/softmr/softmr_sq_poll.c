// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Send queue polling: after a user QP's send doorbell, the QP's engine
 * work item watches the ring's producer index for a while, so that a busy
 * QP's next WQEs run without a kernel entry each.  The provider skips the
 * send doorbell while the ring header says the kernel watches
 * (softmr_wq_hdr.sq_polled), in the Dekker order both sides keep:
 *
 *   provider: store producer; full barrier; load sq_polled (1: no doorbell)
 *   kernel:   store sq_polled = 0; full barrier; load producer (new: go on)
 *
 * so a WQE is either seen by the poller or followed by a doorbell.
 *
 * The poller's work is a kernel worker's, not charged to the poster, so it
 * is kept small and bounded:
 *  - it runs a WQE posted after the last doorbell only when it moves at
 *    most SOFTMR_SQ_POLL_MAX_BYTES; the provider rings for larger ones,
 *    which then run in the poster's context (a ring written by hand that
 *    skips that doorbell stalls its own QP only);
 *  - SOFTMR_SQ_POLL_BATCH WQEs per pass, then the checks below again;
 *  - one poller per context, and at most half the online CPUs' worth per
 *    device (at least one); with one CPU online, none;
 *  - it stops when another task could use its CPU (single_task_running(),
 *    as KVM's halt polling decides), after sq_poll_usecs without a new
 *    WQE, when the head cannot run (RNR wait, fence, a large WQE), when the
 *    QP leaves RTS or is being destroyed, and after SOFTMR_SQ_POLL_RUN_NS,
 *    when it queues itself again behind other work if WQEs wait;
 *  - a run that found nothing to do keeps doorbells from starting another
 *    for SOFTMR_SQ_POLL_BACKOFF_NS.
 * QPs on the wire are not polled: their connection's worker takes WQEs as
 * the window opens.  Polling is off unless sq_poll_usecs is set: the
 * poller's time is not charged to the poster, and the engine worker's own
 * continuation runs (a long ring after a doorbell, RNR retries) are not
 * held to the poller's limits (Documentation: "Send queue polling").
 */

#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/stat.h>
#include <linux/timekeeping.h>

#include "softmr.h"

static unsigned int sq_poll_usecs;
module_param(sq_poll_usecs, uint, 0644);
MODULE_PARM_DESC(sq_poll_usecs,
		 "after a send doorbell, watch the send queue this long for more WQEs (default 0: off; at most 1000)");

/* The longest one poller run lasts before it queues itself again. */
#define SOFTMR_SQ_POLL_RUN_NS	(2 * NSEC_PER_MSEC)
/* After a run that found nothing to do, doorbells start none this long. */
#define SOFTMR_SQ_POLL_BACKOFF_NS	(5 * NSEC_PER_MSEC)
/* WQEs one pass runs before the poller looks around again. */
#define SOFTMR_SQ_POLL_BATCH		16

/* The idle time, or 0 when @qp is not polled. */
static u64 softmr_sq_poll_ns(struct softmr_qp *qp)
{
	unsigned int usecs = min(READ_ONCE(sq_poll_usecs), 1000U);

	if (!usecs || !qp->is_user || num_online_cpus() < 2 ||
	    READ_ONCE(qp->wire_on))
		return 0;
	return (u64)usecs * NSEC_PER_USEC;
}

/* Does the ring hold WQEs the engine has not taken?  A hint, unlocked. */
static bool softmr_sq_poll_pending(struct softmr_qp *qp)
{
	return READ_ONCE(qp->sq.hdr->producer) != READ_ONCE(qp->sq.cons);
}

/* May the poller go on with @qp? */
static bool softmr_sq_poll_open(struct softmr_qp *qp)
{
	return !READ_ONCE(qp->dying) && READ_ONCE(qp->state) == IB_QPS_RTS &&
	       list_empty_careful(&qp->rnr_entry);
}

/**
 * softmr_sq_poll_start() - after a send doorbell: have the QP polled
 * @qp: the QP, its send queue just run
 *
 * Queues the QP's engine work, which polls (softmr_sq_poll()), unless
 * a poller watches already or the QP is not polled.
 */
void softmr_sq_poll_start(struct softmr_qp *qp)
{
	if (softmr_sq_poll_ns(qp) && softmr_sq_poll_open(qp) &&
	    !READ_ONCE(qp->sq.hdr->sq_polled) &&
	    ktime_get_ns() >= READ_ONCE(qp->sq_poll_backoff))
		softmr_qp_kick(qp);
}

/* Stop watching; true when a WQE came in meanwhile (go on watching). */
static bool softmr_sq_poll_stop(struct softmr_qp *qp)
{
	WRITE_ONCE(qp->sq.hdr->sq_polled, 0);
	/* the flag before the producer: pairs with the provider's barrier */
	smp_mb();
	if (!softmr_sq_poll_pending(qp))
		return false;
	WRITE_ONCE(qp->sq.hdr->sq_polled, 1);
	smp_mb();	/* watching again before the next producer check */
	return true;
}

/* A poller slot of the QP's context and device; false when none is free. */
static bool softmr_sq_poll_get(struct softmr_qp *qp)
{
	int max = max(1U, num_online_cpus() / 2);

	if (atomic_inc_return(&qp->owner->sq_pollers) > 1)
		goto put_owner;
	if (atomic_inc_return(&qp->sdev->sq_pollers) > max)
		goto put_dev;
	return true;

put_dev:
	atomic_dec(&qp->sdev->sq_pollers);
put_owner:
	atomic_dec(&qp->owner->sq_pollers);
	return false;
}

static void softmr_sq_poll_put(struct softmr_qp *qp)
{
	atomic_dec(&qp->sdev->sq_pollers);
	atomic_dec(&qp->owner->sq_pollers);
}

/*
 * The poller leaves: from now on the provider rings.  WQEs posted without
 * a doorbell while it watched run when the QP's work, queued again, takes
 * them (the poller left for another task, or its time was up), when what
 * holds the head back resumes the QP (@stuck: the RNR timer, the peer),
 * at the doorbell the provider rings for a large WQE, or are flushed in
 * the error state.  A QP no longer open (RNR wait, SQD, dying) is resumed
 * by whatever changes that.
 */
static void softmr_sq_poll_leave(struct softmr_qp *qp, bool progress,
				 bool stuck, bool contended)
{
	WRITE_ONCE(qp->sq_poll_backoff, progress ? 0 :
		   ktime_get_ns() + SOFTMR_SQ_POLL_BACKOFF_NS);
	WRITE_ONCE(qp->sq.hdr->sq_polled, 0);
	smp_mb();	/* as in _stop() */
	softmr_sq_poll_put(qp);
	if (!softmr_sq_poll_pending(qp))
		return;
	if (!stuck && softmr_sq_poll_open(qp)) {
		/*
		 * behind other work, then on (softmr_sq_work()); a tick later
		 * when it left for another task without getting anywhere, so
		 * that a head the worker cannot run costs a pass a tick, not
		 * a busy loop
		 */
		if (contended && !progress)
			softmr_qp_kick_delayed(qp, 1);
		else
			softmr_qp_kick(qp);
	} else if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		mutex_lock(&qp->sq.lock);
		softmr_sq_process(qp);	/* flushes */
		mutex_unlock(&qp->sq.lock);
	}
}

/**
 * softmr_sq_poll() - watch a QP's send queue for new WQEs and run them
 * @qp: a QP, in its engine work
 *
 * Sleeps (sq.lock).  Returns when the QP has been idle for sq_poll_usecs,
 * when another task wants the CPU, when the head cannot run or the QP is
 * no longer open, or after SOFTMR_SQ_POLL_RUN_NS (then queued again when
 * it made progress and WQEs wait).
 */
void softmr_sq_poll(struct softmr_qp *qp)
{
	u64 idle_ns = softmr_sq_poll_ns(qp);
	bool progress = false, stuck = false, contended = false;
	u64 now, idle_end, run_end;

	if (!idle_ns || !softmr_sq_poll_open(qp) || !softmr_sq_poll_get(qp))
		return;
	now = ktime_get_ns();
	idle_end = now + idle_ns;
	run_end = now + SOFTMR_SQ_POLL_RUN_NS;
	WRITE_ONCE(qp->sq.hdr->sq_polled, 1);
	smp_mb();	/* the flag before the producer, as in _stop() */
	softmr_count(qp->sdev, SOFTMR_CNT_SQ_POLLS, 1);
	for (;;) {
		cond_resched();
		if (!softmr_sq_poll_open(qp))
			break;
		if (!single_task_running()) {
			contended = true;
			break;
		}
		now = ktime_get_ns();
		if (softmr_sq_poll_pending(qp)) {
			u32 cons = READ_ONCE(qp->sq.cons);
			bool more, blocked = false;

			mutex_lock(&qp->sq.lock);
			more = softmr_sq_process_budget(qp, SOFTMR_SQ_POLL_BATCH,
							true, &blocked);
			mutex_unlock(&qp->sq.lock);
			if (READ_ONCE(qp->sq.cons) != cons)
				progress = true;
			/* the head waits for something (a large one: a doorbell) */
			stuck = blocked || (READ_ONCE(qp->sq.cons) == cons && !more);
			if (stuck)
				break;
			idle_end = now + idle_ns;
		} else if (now > idle_end && !softmr_sq_poll_stop(qp)) {
			break;	/* idle: nothing waits */
		}
		if (now > run_end)
			break;
		cpu_relax();
	}
	softmr_sq_poll_leave(qp, progress, stuck, contended);
}
