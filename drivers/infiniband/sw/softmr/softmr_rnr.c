// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RNR waits: a connected sender whose message finds no receive WQE waits
 * for one (IB's RNR NAK, rnr_retry and min_rnr_timer, done locally).
 *
 * A waiting QP is on its receive queue's list of waiters (@rnr_waiters of
 * struct softmr_wq) and its send work (sq_work) is armed for the
 * receiver's min_rnr_timer.  The wait ends when
 *  - the receiver posts: a kernel receiver's post, or a user receiver's
 *    receive doorbell, runs softmr_rnr_wake().  A user receiver's provider
 *    rings that doorbell only while the ring header asks for it
 *    (rnr_waiting), in the Dekker order both sides keep:
 *
 *      provider: store producer; full barrier; load rnr_waiting (1: ring)
 *      kernel:   store rnr_waiting = 1; full barrier; load producer
 *
 *    so a receive WQE is either seen by the kernel as the wait begins
 *    (softmr_rnr_announce()) or followed by a doorbell;
 *  - the sender's poller sees a receive WQE (softmr_rnr_poll()): a wait
 *    that begins in the poller's run is "quiet", the receiver is not asked
 *    to ring for it while the poller looks.  When the poller stops looking
 *    (softmr_rnr_unquiet()), or at the wait's first tick in any case
 *    (softmr_rnr_early(): the poller may have slept or been preempted
 *    without a word), the wait asks for the doorbell as above;
 *  - the timer expires: the head is retried (softmr_sq_work());
 *  - the receive queue goes away (softmr_rnr_wq_gone()), the sender is
 *    destroyed (softmr_rnr_forget()).
 *
 * One lock, softmr_rnr_lock, guards every waiter list and the rnr_* fields
 * of the QPs on them.  A list holds no reference: a dying QP is never
 * added and is taken off by its destroy; a queue's waiters are resumed
 * before the queue is freed, so a QP's rnr_wq may be read under the lock.
 */

#include <linux/jiffies.h>
#include <linux/spinlock.h>

#include "softmr.h"

static DEFINE_SPINLOCK(softmr_rnr_lock);

/* A quiet wait asks for the receive doorbell after at most this many
 * jiffies (at least one whole one).
 */
#define SOFTMR_RNR_QUIET_JIFFIES	2UL

/* At most this many waiters resume under one hold of softmr_rnr_lock. */
#define SOFTMR_RNR_RESUME_BATCH	32

/*
 * How many receive WQEs wait in @wq (a user ring's garbage index: at most
 * its size)?  Under softmr_rnr_lock (an SRQ's ring is swapped under it).
 * A hint, read without the queue's lock: a wrong answer costs a retry that
 * finds none (and counts as one, like a retry the RNR timer makes).
 */
static u32 softmr_rnr_wq_count(struct softmr_wq *wq)
{
	u32 prod = wq->is_user ? READ_ONCE(wq->hdr->producer) :
				 READ_ONCE(wq->prod);

	return min(prod - READ_ONCE(wq->cons), wq->num);
}

/* Under softmr_rnr_lock: @qp's wait ends; its sq_work runs it on. */
static void softmr_rnr_end(struct softmr_qp *qp)
{
	list_del_init(&qp->rnr_entry);
	qp->rnr_wq = NULL;
	qp->rnr_quiet = false;
}

/*
 * Under softmr_rnr_lock, @qp in an RNR wait: have the receiver's next post
 * wake it, then look at the producer (the Dekker order above).  True when
 * a receive WQE was seen: the wait has ended (the caller resumes @qp).
 */
static bool softmr_rnr_announce(struct softmr_qp *qp)
{
	struct softmr_wq *wq = qp->rnr_wq;

	qp->rnr_quiet = false;
	WRITE_ONCE(wq->rnr_asked, true);
	if (wq->is_user)
		WRITE_ONCE(wq->hdr->rnr_waiting, 1);
	smp_mb();	/* the flag and the list entry before the producer */
	if (!softmr_rnr_wq_count(wq))
		return false;
	softmr_rnr_end(qp);
	return true;
}

/**
 * softmr_rnr_wait() - @qp waits for a receive WQE on @wq
 * @qp: the sender
 * @wq: the receiver's receive queue or SRQ, its lock held
 * @timer: the receiver's min_rnr_timer (IB encoding)
 * @quiet: @qp's poller watches @wq meanwhile (softmr_rnr_poll()): the
 *	receiver is not asked to ring for it at first
 *
 * Nothing when @qp is being destroyed: destroy_qp sets qp->dying and then
 * takes softmr_rnr_lock (softmr_rnr_forget()), so either this sees dying
 * under the lock or the forget that follows takes the entry off.
 */
void softmr_rnr_wait(struct softmr_qp *qp, struct softmr_wq *wq, u8 timer,
		     bool quiet)
{
	unsigned long delay = usecs_to_jiffies(softmr_rnr_usecs[timer & 31]);
	unsigned long flags;
	bool dying;

	lockdep_assert_held(&wq->lock);
	delay = max(delay, 1UL);
	spin_lock_irqsave(&softmr_rnr_lock, flags);
	dying = READ_ONCE(qp->dying);
	if (!dying) {
		qp->rnr_wq = wq;
		qp->rnr_quiet = quiet;
		qp->rnr_deadline = jiffies + delay;
		list_move_tail(&qp->rnr_entry, &wq->rnr_waiters);
		if (quiet)
			delay = min(delay, SOFTMR_RNR_QUIET_JIFFIES);
		else if (softmr_rnr_announce(qp))
			delay = 0;	/* one came as the wait began */
		/*
		 * under the lock: a wake that follows runs the queue now, not
		 * after this delay
		 */
		softmr_qp_kick_at(qp, delay);
	}
	spin_unlock_irqrestore(&softmr_rnr_lock, flags);
	if (!dying)
		softmr_count(qp->sdev, SOFTMR_CNT_RNR_WAITS, 1);
}

/**
 * softmr_rnr_poll() - may a poller run @qp's head?
 * @qp: a QP its poller watches
 *
 * A WQE posted to the receive queue of @qp's RNR wait ends the wait here,
 * as the receive doorbell would (the timer left armed finds no wait, or a
 * later one that is not due: softmr_rnr_early()).  Callable in atomic
 * context.
 *
 * Return: true when @qp is in no RNR wait (any more).
 */
bool softmr_rnr_poll(struct softmr_qp *qp)
{
	unsigned long flags;
	bool ready = true;

	if (list_empty_careful(&qp->rnr_entry))
		return true;
	/* a poller does not queue for the lock others need: it looks again */
	if (!spin_trylock_irqsave(&softmr_rnr_lock, flags))
		return false;
	if (!list_empty(&qp->rnr_entry)) {
		ready = softmr_rnr_wq_count(qp->rnr_wq);
		if (ready) {
			softmr_rnr_end(qp);
			softmr_count(qp->sdev, SOFTMR_CNT_RNR_POLL_RESUMES, 1);
		}
	}
	spin_unlock_irqrestore(&softmr_rnr_lock, flags);
	return ready;
}

/**
 * softmr_rnr_unquiet() - @qp's poller stops watching: a quiet RNR wait
 *	becomes one the receiver's doorbell ends
 * @qp: the QP
 *
 * When a receive WQE came meanwhile, the wait ends now and the engine's
 * worker runs the queue.  Callable in atomic context.
 */
void softmr_rnr_unquiet(struct softmr_qp *qp)
{
	unsigned long flags;

	if (list_empty_careful(&qp->rnr_entry))
		return;
	spin_lock_irqsave(&softmr_rnr_lock, flags);
	if (!list_empty(&qp->rnr_entry) && qp->rnr_quiet &&
	    softmr_rnr_announce(qp))
		softmr_qp_kick_at(qp, 0);
	spin_unlock_irqrestore(&softmr_rnr_lock, flags);
}

/**
 * softmr_rnr_early() - sq_work runs: does @qp's RNR wait go on?
 * @qp: the QP, in its sq_work
 *
 * A quiet wait's first tick asks for the receive doorbell (its poller may
 * have stopped looking without a word: slept, or been preempted); a timer
 * left from a wait that ended earlier, or the tick, is set again for the
 * wait's deadline: the head is retried when min_rnr_timer has passed, not
 * before.  Otherwise the wait ends here, in the same hold of the lock (a
 * wait begun after this look is left alone).  A QP in ERR or RESET is
 * not held back: its queues are flushed.
 *
 * Return: true when the wait goes on (the caller does nothing now).
 */
bool softmr_rnr_early(struct softmr_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);
	unsigned long flags;
	bool early = false;

	if (list_empty_careful(&qp->rnr_entry))
		return false;
	spin_lock_irqsave(&softmr_rnr_lock, flags);
	if (!list_empty(&qp->rnr_entry) &&
	    state != IB_QPS_ERR && state != IB_QPS_RESET &&
	    !(qp->rnr_quiet && softmr_rnr_announce(qp)) &&
	    time_before(jiffies, qp->rnr_deadline)) {
		softmr_qp_kick_at(qp, qp->rnr_deadline - jiffies);
		early = true;
	} else if (!list_empty(&qp->rnr_entry)) {
		softmr_rnr_end(qp);	/* due, or flushed */
	}
	spin_unlock_irqrestore(&softmr_rnr_lock, flags);
	return early;
}

/**
 * softmr_rnr_lock_irqsave() - hold off RNR waits and wakes
 * @flags: saved interrupt state
 *
 * For swapping a receive ring's header that softmr_rnr_wake() may write.
 */
void softmr_rnr_lock_irqsave(unsigned long *flags)
	__acquires(softmr_rnr_lock)
{
	spin_lock_irqsave(&softmr_rnr_lock, *flags);
}

/**
 * softmr_rnr_unlock_irqrestore() - undo softmr_rnr_lock_irqsave()
 * @flags: the saved interrupt state
 */
void softmr_rnr_unlock_irqrestore(unsigned long flags)
	__releases(softmr_rnr_lock)
{
	spin_unlock_irqrestore(&softmr_rnr_lock, flags);
}

/*
 * Under softmr_rnr_lock (@flags: its saved state): the first waiters of
 * @wq, as many as @wqes (U32_MAX: all) resume now, oldest first.  The lock
 * is let go between batches: a queue may have many waiters.
 */
static void softmr_rnr_resume(struct softmr_wq *wq, u32 wqes,
			      unsigned long *flags)
	__must_hold(softmr_rnr_lock)
{
	u32 n = 0;

	while (wqes-- && !list_empty(&wq->rnr_waiters)) {
		struct softmr_qp *qp = list_first_entry(&wq->rnr_waiters,
							struct softmr_qp,
							rnr_entry);

		softmr_rnr_end(qp);
		softmr_qp_kick_at(qp, 0);
		if (++n % SOFTMR_RNR_RESUME_BATCH == 0) {
			spin_unlock_irqrestore(&softmr_rnr_lock, *flags);
			spin_lock_irqsave(&softmr_rnr_lock, *flags);
		}
	}
}

/**
 * softmr_rnr_wake() - receive WQEs were posted to @wq: resume its senders
 * @wq: a receive queue or SRQ
 *
 * As many senders resume as WQEs wait (a doorbell with none resumes none,
 * a WQE is not raced for by every waiter); when none waits any more, the
 * receiver need not ring again.  Callable in atomic context.
 */
void softmr_rnr_wake(struct softmr_wq *wq)
{
	unsigned long flags;

	/* the WQEs before the list: pairs with softmr_rnr_announce() */
	smp_mb();
	if (list_empty_careful(&wq->rnr_waiters) && !READ_ONCE(wq->rnr_asked))
		return;
	spin_lock_irqsave(&softmr_rnr_lock, flags);
	softmr_rnr_resume(wq, softmr_rnr_wq_count(wq), &flags);
	if (list_empty(&wq->rnr_waiters)) {
		WRITE_ONCE(wq->rnr_asked, false);
		if (wq->is_user)
			WRITE_ONCE(wq->hdr->rnr_waiting, 0);
	}
	spin_unlock_irqrestore(&softmr_rnr_lock, flags);
}

/**
 * softmr_rnr_wq_gone() - @wq is about to be freed: resume its senders
 * @wq: a queue no QP can begin an RNR wait on any more (its QP or SRQ is
 *	being destroyed, after every engine reference to it is gone)
 *
 * Nothing reads the queue through a waiter after this.  The senders retry
 * and find the receiver gone.
 */
void softmr_rnr_wq_gone(struct softmr_wq *wq)
{
	unsigned long flags;

	spin_lock_irqsave(&softmr_rnr_lock, flags);
	softmr_rnr_resume(wq, U32_MAX, &flags);
	spin_unlock_irqrestore(&softmr_rnr_lock, flags);
}

/**
 * softmr_rnr_forget() - end a QP's RNR wait, if any, without resuming it
 * @qp: the QP
 */
void softmr_rnr_forget(struct softmr_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&softmr_rnr_lock, flags);
	softmr_rnr_end(qp);
	spin_unlock_irqrestore(&softmr_rnr_lock, flags);
}
