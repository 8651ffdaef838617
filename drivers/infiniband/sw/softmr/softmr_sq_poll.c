// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Send queue polling: after a user QP's send doorbell, the QP's poller
 * (its own work item) watches the ring's producer index for a while, so
 * that a busy QP's next WQEs run without a kernel entry each.  The
 * provider skips the send doorbell while the ring header says the kernel
 * watches (softmr_wq_hdr.sq_polled), in the Dekker order both sides keep:
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
 *    device (at least one); with one CPU online, none.  A QP whose
 *    doorbell finds its context's poller running joins it: the poller
 *    watches up to SOFTMR_SQ_POLL_QPS of the context's QPs and takes a
 *    batch of each in turn (softmr_sq_poll_take(), _serve());
 *  - it runs on a CPU other than the poster's, on a bound workqueue of
 *    its own (softmr_sq_poll_wq, CPU intensive: its runs hold no other
 *    work back), so that the poster and the poller each have a CPU; the
 *    CPU is kept from run to run while it is not the poster's;
 *  - when another task is runnable on its CPU (single_task_running(), as
 *    KVM's halt polling asks) it gives the CPU up and goes on when alone
 *    again (softmr_sq_poll_crowded()); it stops after
 *    SOFTMR_SQ_POLL_SHARE_NS of sharing, unless root set sq_poll_share:
 *    then it shares the CPU as the scheduler deals it out; a QP leaves it after
 *    sq_poll_usecs without a new WQE, when its head cannot run (fence, a
 *    large WQE), when it leaves RTS or is being destroyed; the
 *    run stops when no QP is left, when its own QP is being destroyed,
 *    when sq_poll_usecs becomes 0,
 *    and, looked at every SOFTMR_SQ_POLL_RUN_NS, when another QP was
 *    refused a poller meanwhile or after SOFTMR_SQ_POLL_MAX_NS; it then
 *    has the engine's worker run the WQEs that wait;
 *  - a run that found nothing to do keeps doorbells from starting another
 *    for SOFTMR_SQ_POLL_BACKOFF_NS, one that left its CPU to another task
 *    for SOFTMR_SQ_POLL_YIELD_NS (the engine's worker that takes the WQEs
 *    it left starts none then either).
 * A head that waits for a receive WQE (an RNR wait) is watched too: the
 * poller looks at the receive queue's producer and runs the head again
 * once one is posted, so the receiver's provider need not ring for it
 * (softmr_rnr_poll()).  It looks only while its CPU is otherwise idle:
 * the receiver may be the task that waits for the CPU.  The receiver is
 * asked to ring again (rnr_waiting) whenever the poller stops looking: the
 * QP leaves after sq_poll_usecs without a receive WQE or as soon as
 * another task wants the CPU, or the poller leaves its CPU
 * (softmr_rnr_unquiet(), in the same Dekker order as sq_polled).
 * QPs on the wire are not polled: their connection's worker takes WQEs as
 * the window opens.  Polling is off unless sq_poll_usecs is set: the
 * poller's time is not charged to the poster, and the engine worker's own
 * continuation runs (a long ring after a doorbell, RNR retries) are not
 * held to the poller's limits (Documentation: "Send queue polling").
 */

#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/isolation.h>
#include <linux/sched/stat.h>
#include <linux/timekeeping.h>

#include "softmr.h"

static unsigned int sq_poll_usecs;
module_param(sq_poll_usecs, uint, 0644);
MODULE_PARM_DESC(sq_poll_usecs,
		 "after a send doorbell, watch the send queue this long for more WQEs (default 0: off; at most 1000)");

/* How often a run looks whether it should make way for another QP. */
#define SOFTMR_SQ_POLL_RUN_NS	(2 * NSEC_PER_MSEC)
/* How long the poller shares its CPU with another task before it leaves. */
#define SOFTMR_SQ_POLL_SHARE_NS	(50 * NSEC_PER_USEC)
/* After a run that left its CPU to another task, none starts this long. */
#define SOFTMR_SQ_POLL_YIELD_NS	(1 * NSEC_PER_MSEC)
/* The longest one poller run lasts. */
#define SOFTMR_SQ_POLL_MAX_NS	(20 * NSEC_PER_MSEC)
/* After a run that found nothing to do, doorbells start none this long. */
#define SOFTMR_SQ_POLL_BACKOFF_NS	(5 * NSEC_PER_MSEC)
/* WQEs one pass runs before the poller looks around again. */
#define SOFTMR_SQ_POLL_BATCH		16

static struct workqueue_struct *softmr_sq_poll_wq;

static bool sq_poll_share;
module_param(sq_poll_share, bool, 0644);
MODULE_PARM_DESC(sq_poll_share,
		 "a poller whose CPU is busy shares it as the scheduler deals it out, instead of leaving after 50 us (default N: it takes idle time only)");

/* The idle time, or 0 when @qp is not polled. */
static u64 softmr_sq_poll_ns(struct softmr_qp *qp)
{
	unsigned int usecs = min(READ_ONCE(sq_poll_usecs), 1000U);

	if (!usecs || !qp->is_user || num_online_cpus() < 2 ||
	    READ_ONCE(qp->wire_on))
		return 0;
	return (u64)usecs * NSEC_PER_USEC;
}

/* May @qp be polled: sending, not being destroyed? */
static bool softmr_sq_poll_live(struct softmr_qp *qp)
{
	return !READ_ONCE(qp->dying) && READ_ONCE(qp->state) == IB_QPS_RTS;
}

/* May @qp's head run now: polled, and in no RNR wait? */
static bool softmr_sq_poll_open(struct softmr_qp *qp)
{
	return softmr_sq_poll_live(qp) && !softmr_rnr_waiting(qp);
}

/*
 * The CPU to poll @qp on: the one it was polled on last, unless that is
 * the poster's (where the last send doorbell came from); else the next
 * online housekeeping one after the poster's.  A hint: the poster may
 * move, a CPU may go offline (the workqueue then runs the work elsewhere).
 */
static int softmr_sq_poll_cpu(struct softmr_qp *qp)
{
	/* not on isolated CPUs (isolcpus=domain, isolated cpuset partitions) */
	const struct cpumask *hk = housekeeping_cpumask(HK_TYPE_DOMAIN);
	int here = READ_ONCE(qp->sq_poster_cpu);
	int cpu = READ_ONCE(qp->sq_poll_cpu);

	if (here < 0 || here >= nr_cpu_ids)
		here = raw_smp_processor_id();
	if (cpu != here && cpu >= 0 && cpu < nr_cpu_ids && cpu_online(cpu) &&
	    cpumask_test_cpu(cpu, hk))
		return cpu;
	cpu = cpumask_next_and(here, hk, cpu_online_mask);
	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first_and(hk, cpu_online_mask);
	if (cpu >= nr_cpu_ids || cpu == here)
		return -1;	/* this one alone is online */
	WRITE_ONCE(qp->sq_poll_cpu, cpu);
	return cpu;
}

/**
 * softmr_sq_poll_context_init() - a new user context: no poller yet
 * @uc: the context
 */
void softmr_sq_poll_context_init(struct softmr_ucontext *uc)
{
	spin_lock_init(&uc->sq_poll_lock);
	INIT_LIST_HEAD(&uc->sq_poll_joining);
}

/* The most QPs one poller run watches: its own and those that join it. */
#define SOFTMR_SQ_POLL_QPS	8

/*
 * Under the context's sq_poll_lock, its poller running: have it watch @qp
 * too.  The joining list holds a reference; a QP the poller watches, or
 * will, or one it is dropping, is left as it is, and so is any QP once
 * SOFTMR_SQ_POLL_QPS are members (watched or joining): a run never owes
 * more QPs a pass than it watches.
 */
static void softmr_sq_poll_join_locked(struct softmr_qp *qp)
{
	struct softmr_ucontext *uc = qp->owner;

	if (qp->sq_poll_member || uc->sq_poll_members >= SOFTMR_SQ_POLL_QPS ||
	    !refcount_inc_not_zero(&qp->users))
		return;
	qp->sq_poll_member = true;
	uc->sq_poll_members++;
	list_add_tail(&qp->sq_poll_entry, &qp->owner->sq_poll_joining);
	softmr_count(qp->sdev, SOFTMR_CNT_SQ_POLL_JOINS, 1);
}

/* Does the context's poller run?  If so, @qp joins it. */
static bool softmr_sq_poll_joined(struct softmr_qp *qp)
{
	struct softmr_ucontext *uc = qp->owner;
	unsigned long flags;
	bool running;

	spin_lock_irqsave(&uc->sq_poll_lock, flags);
	running = uc->sq_poller;
	if (running)
		softmr_sq_poll_join_locked(qp);
	spin_unlock_irqrestore(&uc->sq_poll_lock, flags);
	return running;
}

/**
 * softmr_sq_poll_start() - after a send queue run: have the QP polled
 * @qp: the QP, its send queue just run (by a doorbell in the poster's
 *	context, or by the engine's worker)
 *
 * When a poller runs for the QP's context, the QP joins it; else queues
 * the QP's poller (softmr_sq_poll()) on another CPU than the poster's.
 * Nothing when the QP is watched already or not polled.  Callable in
 * atomic context.
 *
 * Return: polling is on (sq_poll_usecs) and @qp is one it takes, whether
 * or not a poller was queued now.
 */
bool softmr_sq_poll_start(struct softmr_qp *qp)
{
	int cpu;

	if (!softmr_sq_poll_ns(qp))
		return false;
	if (!softmr_sq_poll_open(qp) || READ_ONCE(qp->sq.hdr->sq_polled) ||
	    ktime_get_ns() < READ_ONCE(qp->sq_poll_backoff) ||
	    softmr_sq_poll_joined(qp))
		return true;
	cpu = softmr_sq_poll_cpu(qp);
	if (cpu >= 0)
		queue_delayed_work_on(cpu, softmr_sq_poll_wq,
				      &qp->sq_poll_work, 0);
	return true;
}

/*
 * Say whether the kernel watches the ring (@on: the provider rings no
 * doorbell for small WQEs), the flag stored before the producer is read
 * next: pairs with the provider's barrier between the two.
 */
static void softmr_sq_poll_watch(struct softmr_qp *qp, u32 on)
{
	WRITE_ONCE(qp->sq.hdr->sq_polled, on);
	smp_mb();	/* the flag before the producer */
}

/* Stop watching; true when a WQE came in meanwhile (go on watching). */
static bool softmr_sq_poll_stop(struct softmr_qp *qp)
{
	softmr_sq_poll_watch(qp, 0);
	if (!softmr_sq_unconsumed(qp))
		return false;
	softmr_sq_poll_watch(qp, 1);
	return true;
}

/*
 * The poller slot of the QP's context and one of its device; false when
 * it gets none.  When the context's poller runs, the QP joins it instead.
 * When the device has no slot free, the running pollers (other contexts')
 * are told (sq_poll_refused) to make way at their next look.  The run
 * holds a reference to its own QP like to those that join it.
 */
static bool softmr_sq_poll_get(struct softmr_qp *qp)
{
	int max = max(1U, num_online_cpus() / 2);
	struct softmr_ucontext *uc = qp->owner;
	unsigned long flags;
	bool got = false;

	spin_lock_irqsave(&uc->sq_poll_lock, flags);
	if (uc->sq_poller) {
		softmr_sq_poll_join_locked(qp);
	} else if (atomic_inc_return(&qp->sdev->sq_pollers) > max) {
		atomic_dec(&qp->sdev->sq_pollers);
		atomic_set(&qp->sdev->sq_poll_refused, 1);
	} else if (!qp->sq_poll_member && refcount_inc_not_zero(&qp->users)) {
		/* a slot was free: a refusal before is answered */
		atomic_set(&qp->sdev->sq_poll_refused, 0);
		uc->sq_poller = qp;
		qp->sq_poll_member = true;
		uc->sq_poll_members++;
		got = true;
	} else {
		atomic_dec(&qp->sdev->sq_pollers);
	}
	spin_unlock_irqrestore(&uc->sq_poll_lock, flags);
	return got;
}

/* A QP a poller run watches, with a reference. */
struct softmr_sq_poll_member {
	struct softmr_qp *qp;
	u64 idle_end;
	bool progress;
};

/* One run of a context's poller (softmr_sq_poll()). */
struct softmr_sq_poll_run {
	struct softmr_qp *qp;		/* whose work runs it */
	struct softmr_ucontext *uc;
	struct softmr_sq_poll_member m[SOFTMR_SQ_POLL_QPS];
	unsigned int n;
	u64 idle_ns;
	bool contended;
};

/*
 * @qp leaves the run (or, at its end, the joining list): from now on the
 * provider rings for it, and the run's reference is dropped.  WQEs
 * posted without a doorbell while it was watched run when the QP's work,
 * queued again, takes them (at once when the poller's time was up or it
 * made way; a tick later when the head did not run, @stuck, or the poller
 * left for another task without progress), when what holds the head back
 * resumes the QP (the peer, the doorbell the provider rings for a large
 * WQE), or are flushed in the error state.  A QP no longer open (RNR wait,
 * SQD, dying) is resumed by whatever changes that.
 */
static void softmr_sq_poll_leave(struct softmr_sq_poll_run *run,
				 struct softmr_qp *qp, bool progress,
				 bool stuck)
{
	bool contended = run->contended;
	unsigned long flags;
	u64 backoff = 0;

	/*
	 * no new poller soon when this one found nothing to do, or its CPU
	 * was wanted (the engine's worker queued below starts none either:
	 * it would find the poller it queued on this CPU, which would leave
	 * again)
	 */
	if (!progress)
		backoff = ktime_get_ns() + SOFTMR_SQ_POLL_BACKOFF_NS;
	else if (contended)
		backoff = ktime_get_ns() + SOFTMR_SQ_POLL_YIELD_NS;
	WRITE_ONCE(qp->sq_poll_backoff, backoff);
	softmr_sq_poll_watch(qp, 0);
	softmr_rnr_unquiet(qp);	/* the receiver rings for it from now on */
	/* off every list: a doorbell now may have it join again */
	spin_lock_irqsave(&run->uc->sq_poll_lock, flags);
	qp->sq_poll_member = false;
	run->uc->sq_poll_members--;
	spin_unlock_irqrestore(&run->uc->sq_poll_lock, flags);
	if (contended && qp == run->qp)	/* the next run looks for another CPU */
		WRITE_ONCE(qp->sq_poll_cpu, -1);
	if (!softmr_sq_unconsumed(qp))
		goto put;
	if (softmr_sq_poll_open(qp)) {
		/*
		 * behind other work, then on (softmr_sq_work()); a tick later
		 * when the head did not run (@stuck) or the poller left for
		 * another task without getting anywhere, so that a head the
		 * worker cannot run costs a pass a tick, not a busy loop.  A
		 * stuck head is queued too: a doorbell rung meanwhile may have
		 * run it, and WQEs posted after it without a doorbell, while
		 * the poller watched, are nobody else's.
		 */
		if (stuck || (contended && !progress))
			softmr_qp_kick_delayed(qp, 1);
		else
			softmr_qp_kick(qp);
	} else if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		/*
		 * flushed here, or by the doorbell that holds the lock (the run
		 * waits for no other QP's doorbell), or by the engine's worker
		 */
		if (mutex_trylock(&qp->sq.lock)) {
			softmr_sq_process(qp);
			mutex_unlock(&qp->sq.lock);
		} else {
			softmr_qp_kick(qp);
		}
	}
put:
	softmr_qp_put(qp);	/* may be the last: @qp is not touched after */
}

/* Member @i leaves the run; the last one takes its place. */
static void softmr_sq_poll_drop(struct softmr_sq_poll_run *run,
				unsigned int i, bool stuck)
{
	struct softmr_sq_poll_member m = run->m[i];

	run->m[i] = run->m[--run->n];
	softmr_sq_poll_leave(run, m.qp, m.progress, stuck);
}

/* Watch the QPs that joined, as many as the run has room for. */
static void softmr_sq_poll_take(struct softmr_sq_poll_run *run, u64 now)
{
	unsigned int first = run->n, i;
	unsigned long flags;

	spin_lock_irqsave(&run->uc->sq_poll_lock, flags);
	while (run->n < SOFTMR_SQ_POLL_QPS &&
	       !list_empty(&run->uc->sq_poll_joining)) {
		struct softmr_qp *qp;

		qp = list_first_entry(&run->uc->sq_poll_joining,
				      struct softmr_qp, sq_poll_entry);
		list_del_init(&qp->sq_poll_entry);
		run->m[run->n++] = (struct softmr_sq_poll_member){
			.qp = qp, .idle_end = now + run->idle_ns,
		};
	}
	spin_unlock_irqrestore(&run->uc->sq_poll_lock, flags);
	/* the loop reads their producers after this */
	for (i = first; i < run->n; i++)
		softmr_sq_poll_watch(run->m[i].qp, 1);
}

/*
 * The run ends: its members leave, then, with the context's poller slot
 * given up, the QPs that joined too late for it (their doorbells ran
 * what they posted; the provider rings for them again).
 */
static void softmr_sq_poll_end(struct softmr_sq_poll_run *run)
{
	struct softmr_qp *qp, *next;
	unsigned long flags;
	LIST_HEAD(late);

	while (run->n)
		softmr_sq_poll_drop(run, run->n - 1, false);
	spin_lock_irqsave(&run->uc->sq_poll_lock, flags);
	list_splice_init(&run->uc->sq_poll_joining, &late);
	atomic_dec(&run->qp->sdev->sq_pollers);
	run->uc->sq_poller = NULL;
	spin_unlock_irqrestore(&run->uc->sq_poll_lock, flags);
	/*
	 * they stay members, which no doorbell has join a next run, until
	 * they are off @late: its entries are the run's alone
	 */
	list_for_each_entry_safe(qp, next, &late, sq_poll_entry) {
		list_del_init(&qp->sq_poll_entry);
		softmr_sq_poll_leave(run, qp, true, false);
		cond_resched();
	}
}

/*
 * Give the CPU up, still runnable.  Off the CPU, the poller does not
 * watch: the provider rings meanwhile (the loop looks at the producers
 * again after watching again).
 */
static void softmr_sq_poll_off_cpu(struct softmr_sq_poll_run *run)
{
	unsigned int i;

	for (i = 0; i < run->n; i++) {
		softmr_sq_poll_watch(run->m[i].qp, 0);
		softmr_rnr_unquiet(run->m[i].qp);
	}
	schedule();
	for (i = 0; i < run->n; i++)
		softmr_sq_poll_watch(run->m[i].qp, 1);
}

/*
 * Has another task wanted this CPU for SOFTMR_SQ_POLL_SHARE_NS?  The
 * poller gives the CPU to it at once (schedule(): the scheduler would let
 * the poller run out its slice first), and goes on when it is alone again:
 * a task that runs briefly (a timer's, the engine worker's) costs the
 * poller nothing, one that stays (the poster itself, moved here) sends it
 * away.  With sq_poll_share, it stays and gives the CPU up only when the
 * scheduler asks (its slice is over): it competes for a busy CPU like any
 * task, bounded by the run's other limits.  @since: when the CPU was
 * first seen shared, 0 when it is not.
 */
static bool softmr_sq_poll_crowded(struct softmr_sq_poll_run *run, u64 *since)
{
	u64 now;

	if (single_task_running()) {
		*since = 0;
		return false;
	}
	if (READ_ONCE(sq_poll_share)) {
		/* the scheduler's share: off the CPU when its slice is over */
		*since = 0;
		if (softmr_resched_wanted())
			softmr_sq_poll_off_cpu(run);
		return false;
	}
	now = ktime_get_ns();
	if (!*since)
		*since = now;
	if (now - *since >= SOFTMR_SQ_POLL_SHARE_NS)
		return true;
	softmr_sq_poll_off_cpu(run);	/* back when the other has run */
	return false;
}

/*
 * At a look (every SOFTMR_SQ_POLL_RUN_NS): may the run go on?  The idle
 * time is read again (0: polling was turned off).
 */
static bool softmr_sq_poll_go_on(struct softmr_sq_poll_run *run, u64 now,
				 u64 start)
{
	unsigned int i;

	run->idle_ns = softmr_sq_poll_ns(run->qp);
	if (!run->idle_ns || now - start >= SOFTMR_SQ_POLL_MAX_NS)
		return false;
	for (i = 0; i < run->n; i++)
		run->m[i].idle_end = min(run->m[i].idle_end, now + run->idle_ns);
	/* another QP wanted a poller: make way */
	return !atomic_xchg(&run->qp->sdev->sq_poll_refused, 0);
}

/*
 * One pass over member @m: up to SOFTMR_SQ_POLL_BATCH of its WQEs.  False
 * when it leaves the run: idle for the idle time (no new WQE, or none
 * posted to the receive queue its head waits for), not live, or its head
 * cannot run (@stuck: a large WQE, or no progress for the idle time).
 */
static bool softmr_sq_poll_serve(struct softmr_sq_poll_run *run,
				 struct softmr_sq_poll_member *m, u64 now,
				 bool *stuck)
{
	struct softmr_qp *qp = m->qp;

	/* moved onto the wire meanwhile, say: as at the start of a run */
	if (!softmr_sq_poll_ns(qp) || !softmr_sq_poll_live(qp))
		return false;
	/*
	 * an RNR wait: its end is watched for the idle time, while no other
	 * task wants this CPU (the receiver may be the one that waits)
	 */
	if (!softmr_rnr_poll(qp))
		return now <= m->idle_end && single_task_running();
	if (softmr_sq_unconsumed(qp)) {
		u32 cons = READ_ONCE(qp->sq.cons);
		bool more, blocked = false;

		/*
		 * a doorbell runs the ring: the run does not wait for it (the
		 * other members, a destroy waiting for the run), and the QP
		 * leaves after the idle time if that goes on
		 */
		if (!mutex_trylock(&qp->sq.lock)) {
			*stuck = now > m->idle_end;
			return !*stuck;
		}
		qp->req->rnr_quiet = true;	/* this run watches its RNR waits */
		more = softmr_sq_process_budget(qp, SOFTMR_SQ_POLL_BATCH, true,
						&blocked);
		qp->req->rnr_quiet = false;
		mutex_unlock(&qp->sq.lock);
		if (blocked) {	/* a large one: it waits for a doorbell */
			*stuck = true;
			return false;
		}
		if (READ_ONCE(qp->sq.cons) != cons || more) {
			m->progress = true;
			m->idle_end = now + run->idle_ns;
		} else if (now > m->idle_end) {
			/*
			 * the head has not run for the idle time (a stop: the
			 * wire's window, a peer going away).  Nothing run once
			 * is no sign of that: a doorbell, rung while the poller
			 * was off its CPU, may have emptied the ring since the
			 * producer was looked at.
			 */
			*stuck = true;
			return false;
		}
	} else if (now > m->idle_end) {
		if (!softmr_sq_poll_stop(qp))
			return false;	/* idle: nothing waits */
		m->idle_end = now + run->idle_ns;	/* one came as it stopped */
	}
	return true;
}

/**
 * softmr_sq_poll() - watch a context's send queues for new WQEs and run them
 * @qp: a QP, in its poller work (softmr_sq_poll_work())
 *
 * Watches @qp, and up to SOFTMR_SQ_POLL_QPS - 1 QPs of its context that
 * join it meanwhile, taking SOFTMR_SQ_POLL_BATCH WQEs of each in turn.  A
 * QP leaves when it has been idle for sq_poll_usecs, when its head cannot
 * run or it is no longer open.  Sleeps (sq.lock).  Returns when no QP is
 * left, when @qp is being destroyed, when another task wants the CPU, or
 * at a look (every SOFTMR_SQ_POLL_RUN_NS) when another QP was refused a
 * poller, polling was turned off or the run has lasted
 * SOFTMR_SQ_POLL_MAX_NS; WQEs that wait then go to the engine's worker.
 */
static void softmr_sq_poll(struct softmr_qp *qp)
{
	struct softmr_sq_poll_run run = { .qp = qp, .uc = qp->owner };
	u64 now, start, run_end, crowded_since = 0;
	unsigned int i;

	run.idle_ns = softmr_sq_poll_ns(qp);
	if (!run.idle_ns || !softmr_sq_poll_open(qp) || !softmr_sq_poll_get(qp))
		return;
	now = ktime_get_ns();
	start = now;
	run_end = now + SOFTMR_SQ_POLL_RUN_NS;
	run.m[0] = (struct softmr_sq_poll_member){
		.qp = qp, .idle_end = now + run.idle_ns,
	};
	run.n = 1;
	softmr_sq_poll_watch(qp, 1);
	softmr_count(qp->sdev, SOFTMR_CNT_SQ_POLLS, 1);
	while (run.n) {
		/* its destroy waits for the run */
		if (READ_ONCE(qp->dying))
			break;
		if (softmr_sq_poll_crowded(&run, &crowded_since)) {
			run.contended = true;
			break;
		}
		cond_resched();
		now = ktime_get_ns();
		if (run.n < SOFTMR_SQ_POLL_QPS &&
		    !list_empty_careful(&run.uc->sq_poll_joining))
			softmr_sq_poll_take(&run, now);
		/* each member's pass may be long: its destroy waits for the run */
		for (i = 0; i < run.n && !READ_ONCE(qp->dying); ) {
			bool stuck = false;

			if (softmr_sq_poll_serve(&run, &run.m[i], now, &stuck))
				i++;
			else
				softmr_sq_poll_drop(&run, i, stuck);
		}
		if (now > run_end) {
			if (!softmr_sq_poll_go_on(&run, now, start))
				break;
			run_end = now + SOFTMR_SQ_POLL_RUN_NS;
		}
		cpu_relax();
	}
	softmr_sq_poll_end(&run);
}

void softmr_sq_poll_work(struct work_struct *work)
{
	struct softmr_qp *qp = container_of(to_delayed_work(work),
					    struct softmr_qp, sq_poll_work);

	softmr_sq_poll(qp);
}

int softmr_sq_poll_init(void)
{
	softmr_sq_poll_wq = alloc_workqueue("softmr_sq_poll", SOFTMR_WQ_PERCPU |
					    WQ_CPU_INTENSIVE, 0);
	return softmr_sq_poll_wq ? 0 : -ENOMEM;
}

void softmr_sq_poll_exit(void)
{
	destroy_workqueue(softmr_sq_poll_wq);
}
