/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The mm kind: two processes at once, each driving ring traffic on its own
 * world, connected to each other through their Q_X QPs (RDMA into each
 * other's pinned and ODP MRs), while their registered memory is unmapped,
 * zapped (MADV_DONTNEED), moved (mremap), protected, populated and forked
 * under them: by a thread of the parent that runs for the whole round, by
 * the cases themselves, and by the child between its steps.  The child
 * sometimes exits in the middle of its traffic, or is killed.
 *
 * The arena never gets a hole another mapping could fill: "unmapping" is
 * replacing with PROT_NONE, mremap() uses MREMAP_DONTUNMAP and only where
 * a failure can be repaired before anything else maps (fz_mm_move()); user
 * space never touches the arena (MADV_POPULATE_WRITE instead of stores), so a
 * protection change cannot fault the fuzzer.
 *
 * One case: one ring case of the parent, sometimes with an mm operation or
 * a fork in this thread first.  The child's and the thread's operations
 * come from streams of their own (seed, round): reproducible in order,
 * not in timing.
 */
#ifndef SOFTMR_FUZZ_MM_H
#define SOFTMR_FUZZ_MM_H

#include <pthread.h>
#include <sys/wait.h>

#include "softmr_fuzz_ring.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif

/* What each side tells the other about itself. */
struct fz_mm_hello {
	uint32_t qpn, psn;
	struct fz_mr mr[2];
};

static struct {
	pid_t child;
	int to_child, from_child;
	pthread_t thread;
	bool thread_on;
	atomic_bool stop;
	uint64_t thread_rng;
	unsigned long ops;
} fz_mm = { .to_child = -1, .from_child = -1 };

/* A splitmix64 stream for another thread or process. */
static uint64_t fz_mm_r64(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return fz_mix(*s);
}

/*
 * Move slot @slot to spare slot @dst.  mremap(MREMAP_FIXED) unmaps the
 * destination before it looks at the source (a source of several VMAs
 * fails with EFAULT after that), so the source is made one fresh,
 * populated VMA first and a failure refills the destination at once.
 * Only for a caller no other thread maps memory beside (the main thread
 * and the child: the mm thread maps nothing outside the arena).
 */
static void fz_mm_move(unsigned int slot, unsigned int dst)
{
	void *r;

	mmap(fz_slot(slot), FZ_SLOT, PROT_READ | PROT_WRITE, MAP_FIXED |
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	madvise(fz_slot(slot), FZ_SLOT, MADV_POPULATE_WRITE);
	r = mremap(fz_slot(slot), FZ_SLOT, FZ_SLOT,
		   MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
		   fz_slot(dst));
	if (r == MAP_FAILED)
		mmap(fz_slot(dst), FZ_SLOT, PROT_READ | PROT_WRITE, MAP_FIXED |
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

/* One memory operation on the arena, drawn from stream @s. */
static void fz_mm_op(uint64_t *s, bool may_move)
{
	uint64_t r = fz_mm_r64(s);
	unsigned int slot = r % FZ_SLOTS, dst;
	size_t off = FZ_PAGE * ((r >> 8) % 256);
	size_t len = FZ_PAGE * (1 + (r >> 16) % 64);
	uint8_t *p = fz_slot(slot) + off;
	int op = (r >> 32) % 12;

	if (off + len > FZ_SLOT)
		len = FZ_SLOT - off;
	fz_mm.ops++;
	switch (op) {
	case 0:	/* munmap, leaving no hole */
		mmap(p, len, PROT_NONE, MAP_FIXED | MAP_PRIVATE |
		     MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		break;
	case 1:	/* fresh memory */
		mmap(p, len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE |
		     MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		break;
	case 4:	/* move a whole slot to a spare one, the source stays */
		dst = FZ_MR_SLOTS + (r >> 40) % (FZ_SLOTS - FZ_MR_SLOTS);
		if (may_move && dst != slot) {
			fz_mm_move(slot, dst);
			break;
		}
		/* fall through */
	case 2:
	case 3:
		madvise(p, len, MADV_DONTNEED);
		break;
	case 5:
		mprotect(p, len, PROT_READ);
		break;
	case 6:
		mprotect(p, len, PROT_READ | PROT_WRITE);
		break;
	case 7:
	case 8:
		madvise(p, len, MADV_POPULATE_WRITE);
		break;
	case 9:
		madvise(p, len, (r >> 44) & 1 ? MADV_HUGEPAGE :
			MADV_NOHUGEPAGE);
		break;
	case 10:
		madvise(p, len, (r >> 44) & 1 ? MADV_DONTFORK : MADV_DOFORK);
		break;
	default:
		madvise(p, len, (r >> 44) & 1 ? MADV_COLD : MADV_FREE);
		break;
	}
}

/* A child that populates some of the arena (copy on write) and exits. */
static void fz_mm_fork(uint64_t *s)
{
	pid_t pid = fork();

	if (pid == 0) {
		uint64_t r = fz_mm_r64(s);

		madvise(fz_slot(r % FZ_SLOTS), FZ_SLOT, MADV_POPULATE_WRITE);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

static void *fz_mm_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&fz_mm.stop)) {
		if (fz_mm_r64(&fz_mm.thread_rng) % 64 == 0)
			fz_mm_fork(&fz_mm.thread_rng);
		else
			fz_mm_op(&fz_mm.thread_rng, false);
		usleep(200 + fz_mm_r64(&fz_mm.thread_rng) % 2000);
	}
	return NULL;
}

static void fz_mm_hello_fill(struct fz_mm_hello *h)
{
	h->qpn = W.q[Q_X].qp ? W.q[Q_X].qp->qp_num : 0;
	h->psn = W.q[Q_X].psn;
	h->mr[0] = W.mr[M_PINNED];
	h->mr[1] = W.mr[M_ODP];
	h->mr[0].mr = h->mr[1].mr = NULL;
}

static void fz_mm_hello_take(const struct fz_mm_hello *h)
{
	W.x_qpn = h->qpn;
	W.x_psn = h->psn;
	W.x_mr[0] = h->mr[0];
	W.x_mr[1] = h->mr[1];
}

/* The child: its own world, traffic to the parent, memory games. */
static void fz_mm_child(uint64_t round, const struct fz_mm_hello *parent,
			int rfd, int wfd)
{
	struct fz_mm_hello me;
	uint64_t steps, i, s;
	char c;

	fz.in_child = true;
	fz_seed_case(fz.seed, round, 0xc1);
	s = r64();
	memset(&W, 0, sizeof(W));	/* the parent's: not ours to touch */
	fz_arena_reset();
	if (!fz_world_build(true))
		_exit(0);
	fz_mm_hello_take(parent);
	fz_connect_idx(Q_X);
	fz_mm_hello_fill(&me);
	if (write(wfd, &me, sizeof(me)) != sizeof(me))
		_exit(0);
	steps = one_in(3) ? rnd(200) : 100000;	/* exits mid-traffic */
	for (i = 0; i < steps; i++) {
		if (read(rfd, &c, 1) == 0)	/* the parent is done */
			break;
		fz_seed_case(fz.seed, round * 100000 + i, 0xc2);
		if (one_in(4))
			fz_mm_op(&s, true);
		fz_ring_case();
	}
	_exit(0);	/* no cleanup: the kernel's */
}

static void fz_mm_begin(uint64_t round)
{
	struct fz_mm_hello me;
	int p2c[2], c2p[2];

	fz_mm_hello_fill(&me);
	if (pipe2(p2c, O_CLOEXEC) || pipe2(c2p, O_CLOEXEC | O_NONBLOCK))
		return;
	fcntl(p2c[0], F_SETFL, O_NONBLOCK);
	fflush(stdout);
	fz_mm.child = fork();
	if (fz_mm.child == 0) {
		close(p2c[1]);
		close(c2p[0]);
		fz_mm_child(round, &me, p2c[0], c2p[1]);
	}
	close(p2c[0]);
	close(c2p[1]);
	fz_mm.to_child = p2c[1];
	fz_mm.from_child = c2p[0];
	atomic_store(&fz_mm.stop, false);
	fz_mm.thread_rng = fz_mix(fz.seed ^ fz_mix(round) ^ 0x7e);
	fz_mm.thread_on = !pthread_create(&fz_mm.thread, NULL, fz_mm_thread,
					  NULL);
}

/* Reap the child: it stops when the pipe closes, else it is killed. */
static void fz_mm_end(void)
{
	int i, st;

	if (fz_mm.thread_on) {
		atomic_store(&fz_mm.stop, true);
		pthread_join(fz_mm.thread, NULL);
		fz_mm.thread_on = false;
	}
	if (fz_mm.to_child >= 0)
		close(fz_mm.to_child);
	if (fz_mm.from_child >= 0)
		close(fz_mm.from_child);
	fz_mm.to_child = fz_mm.from_child = -1;
	if (fz_mm.child <= 0)
		return;
	for (i = 0; i < 1000; i++) {
		if (waitpid(fz_mm.child, &st, WNOHANG) == fz_mm.child)
			break;
		usleep(10000);
	}
	if (i == 1000) {
		fz_info("info: seed %#llx case %llu: mm child did not stop in 10 s: killed\n",
			(unsigned long long)fz.seed,
			(unsigned long long)fz.cur);
		kill(fz_mm.child, SIGKILL);
		waitpid(fz_mm.child, &st, 0);
	}
	fz_mm.child = 0;
}

static void fz_mm_case(void)
{
	struct fz_mm_hello h;

	if (!W.x_qpn && fz_mm.from_child >= 0 &&
	    read(fz_mm.from_child, &h, sizeof(h)) == sizeof(h)) {
		fz_mm_hello_take(&h);
		fz_connect_idx(Q_X);
	}
	switch (rnd(32)) {
	case 0:
		fz_mm_fork(&fz_rng.s);
		break;
	case 1:	/* the child dies now, whatever it is doing */
		if (fz_mm.child > 0)
			kill(fz_mm.child, SIGKILL);
		break;
	case 2: case 3: case 4: case 5:
		fz_mm_op(&fz_rng.s, true);
		break;
	default:
		break;
	}
	fz_ring_case();
}

#endif /* SOFTMR_FUZZ_MM_H */
