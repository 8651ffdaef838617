// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_mr - memory registration as a libibverbs program sees it:
 * ibv_reg_mr(3) flags and errnos, ibv_reg_mr_iova, ZERO_BASED, explicit and
 * implicit ODP, HUGETLB, ibv_advise_mr(3) (sync, async, every errno),
 * ibv_rereg_mr, fork with RDMAV_FORK_SAFE, ODP MRs whose process is gone,
 * and the device counters that show faults, prefetches and implicit
 * children.
 *
 * usage: softmr_mr [DEVICE]
 *        softmr_mr --hold DEVICE   register pinned, ODP and implicit MRs,
 *                                  queue a large asynchronous prefetch,
 *                                  print "holding" and sleep (to be killed)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>

#include "softmr_test.h"

static const char *dev_name = "softmr0";
static size_t pg;

static long long counter(const char *name)
{
	return st_counter(dev_name, name);
}

/* `rdma -dd res show mr` output for the device, into buf. */
static void res_show_mr(char *buf, size_t len)
{
	char cmd[128];
	size_t n = 0;
	FILE *f;

	buf[0] = 0;
	snprintf(cmd, sizeof(cmd), "rdma -dd res show mr dev %s 2>&1",
		 dev_name);
	f = popen(cmd, "r");
	if (!f)
		return;
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	pclose(f);
}

static void *map_pages(size_t n)
{
	void *p = mmap(NULL, n * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

#define REG_OK(pd, a, l, acc, what)					\
	({								\
		struct ibv_mr *__m = ibv_reg_mr(pd, a, l, acc);		\
		CHECK(__m != NULL, "%s: %s", what, strerror(errno));	\
		__m;							\
	})

#define REG_FAILS(pd, a, l, acc, err, what)				\
	do {								\
		struct ibv_mr *__m;					\
		errno = 0;						\
		__m = ibv_reg_mr(pd, a, l, acc);			\
		CHECK_ERRNO(__m == NULL, err, what);			\
		if (__m)						\
			ibv_dereg_mr(__m);				\
	} while (0)

static void test_flags(struct ibv_pd *pd, int odp)
{
	static const struct { int acc; const char *name; } ok[] = {
		{ 0, "read-only" },
		{ IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE" },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		  "REMOTE_WRITE" },
		{ IBV_ACCESS_REMOTE_READ, "REMOTE_READ" },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
		  "REMOTE_ATOMIC" },
		{ IBV_ACCESS_MW_BIND, "MW_BIND" },
		{ IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE,
		  "ZERO_BASED" },
		{ IBV_ACCESS_RELAXED_ORDERING, "RELAXED_ORDERING" },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		  IBV_ACCESS_MW_BIND | IBV_ACCESS_RELAXED_ORDERING, "all" },
	};
	char *buf = map_pages(4);
	uint32_t keys[16];
	unsigned int i, j;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct ibv_mr *mr = REG_OK(pd, buf + 100, 2 * pg, ok[i].acc,
					   ok[i].name);

		if (!mr)
			continue;
		CHECK(mr->lkey == mr->rkey, "%s: lkey == rkey", ok[i].name);
		CHECK(mr->addr == buf + 100 && mr->length == 2 * pg,
		      "%s: addr/length", ok[i].name);
		keys[i] = mr->lkey;
		for (j = 0; j < i; j++)
			CHECK(keys[j] != keys[i], "keys differ");
		CHECK(ibv_dereg_mr(mr) == 0, "%s: dereg", ok[i].name);
	}

	REG_FAILS(pd, buf, pg, IBV_ACCESS_REMOTE_WRITE, EINVAL,
		  "REMOTE_WRITE without LOCAL_WRITE");
	REG_FAILS(pd, buf, pg, IBV_ACCESS_REMOTE_ATOMIC, EINVAL,
		  "REMOTE_ATOMIC without LOCAL_WRITE");
	REG_FAILS(pd, buf, pg, 1 << 28, EINVAL, "unknown flag");
	REG_FAILS(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE, EINVAL, "length 0");
	REG_FAILS(pd, (void *)(uintptr_t)-pg, 2 * pg, 0, EINVAL,
		  "address + length overflows");
	REG_FAILS(pd, buf, (1ULL << 46) + pg, 0, EINVAL,
		  "length above max_mr_size");
	REG_FAILS(pd, buf, pg, IBV_ACCESS_HUGETLB, EINVAL,
		  "HUGETLB without ON_DEMAND");
	REG_FAILS(pd, NULL, SIZE_MAX,
		  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB,
		  odp ? EINVAL : EOPNOTSUPP, "implicit ODP with HUGETLB");
	munmap(buf + 2 * pg, 2 * pg);
	REG_FAILS(pd, buf + 2 * pg, pg, 0, EFAULT, "unmapped memory");
	munmap(buf, 2 * pg);
}

static void test_iova(struct ibv_pd *pd)
{
	char *buf = map_pages(2);
	struct ibv_mr *mr;

	mr = ibv_reg_mr_iova(pd, buf, pg, 0x100000000ULL,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(mr != NULL, "reg_mr_iova: %s", strerror(errno));
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	errno = 0;
	mr = ibv_reg_mr_iova(pd, buf, pg, 0x100000008ULL, 0);
	CHECK_ERRNO(mr == NULL, EINVAL, "iova with another page offset");
	if (mr)
		ibv_dereg_mr(mr);
	/* hca_va 0 is the same as ZERO_BASED */
	mr = ibv_reg_mr_iova(pd, buf, pg, 0, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL, "reg_mr_iova 0: %s", strerror(errno));
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	munmap(buf, 2 * pg);
}

static int advise1(struct ibv_pd *pd, int advice, uint32_t flags,
		   uint32_t lkey, void *addr, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = lkey };

	return ibv_advise_mr(pd, advice, flags, &sge, 1);
}

#define ADV_PF IBV_ADVISE_MR_ADVICE_PREFETCH
#define ADV_PW IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
#define ADV_NF IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
#define FLUSH IBV_ADVISE_MR_FLAG_FLUSH

static void test_odp(struct ibv_context *ctx, struct ibv_pd *pd)
{
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND;
	char *buf = map_pages(64);
	struct ibv_mr *odp, *ro, *pinned, *other;
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	long long faults, pages, prefetches;
	int i, ret;

	odp = REG_OK(pd, buf, 32 * pg, rw, "ODP MR");
	ro = REG_OK(pd, buf, 32 * pg, IBV_ACCESS_ON_DEMAND, "read-only ODP");
	pinned = REG_OK(pd, buf + 32 * pg, pg, IBV_ACCESS_LOCAL_WRITE,
			"pinned MR");
	other = pd2 ? REG_OK(pd2, buf, pg, rw, "ODP MR, other PD") : NULL;
	if (!odp || !ro || !pinned || !other)
		return;

	/* restrack shows each MR with its kind */
	{
		static char out[16384];

		res_show_mr(out, sizeof(out));
		CHECK(strstr(out, "kind odp") && strstr(out, "kind pinned"),
		      "rdma res show mr: kinds shown:\n%s", out);
		CHECK(strstr(out, "mapped_pages 0"),
		      "rdma res show mr: ODP MR has no page yet");
	}

	/* synchronous prefetch faults the pages in */
	faults = counter("odp_faults");
	pages = counter("odp_fault_pages");
	CHECK(faults >= 0 && pages >= 0, "counters readable");
	ret = advise1(pd, ADV_PW, FLUSH, odp->lkey, buf, 16 * pg);
	CHECK(ret == 0, "prefetch write, flush: %s", strerror(ret));
	CHECK(counter("odp_faults") > faults, "faults counted");
	CHECK(counter("odp_fault_pages") >= pages + 16, "16 pages faulted");
	/* the pages are now the process's: the app sees them populated */
	CHECK(buf[0] == 0 && buf[16 * pg - 1] == 0, "zero pages");

	ret = advise1(pd, ADV_PF, FLUSH, ro->lkey, buf + 16 * pg, 4 * pg);
	CHECK(ret == 0, "prefetch read-only: %s", strerror(ret));
	ret = advise1(pd, ADV_NF, FLUSH, odp->lkey, buf, 32 * pg);
	CHECK(ret == 0, "prefetch no-fault: %s", strerror(ret));

	/* asynchronous: returns at once, done on a workqueue */
	prefetches = counter("odp_prefetches");
	ret = advise1(pd, ADV_PF, 0, odp->lkey, buf + 20 * pg, 8 * pg);
	CHECK(ret == 0, "async prefetch: %s", strerror(ret));
	for (i = 0; i < 50 && counter("odp_prefetches") <= prefetches; i++)
		;
	CHECK(counter("odp_prefetches") > prefetches, "async prefetch counted");

	/* several SGEs at once */
	{
		struct ibv_sge sg[2] = {
			{ (uintptr_t)buf, 64, odp->lkey },
			{ (uintptr_t)buf + pg, 64, ro->lkey },
		};
		ret = ibv_advise_mr(pd, ADV_PF, FLUSH, sg, 2);
		CHECK(ret == 0, "two SGEs: %s", strerror(ret));
		sg[1].lkey = pinned->lkey;
		ret = ibv_advise_mr(pd, ADV_PF, FLUSH, sg, 2);
		CHECK(ret == EOPNOTSUPP, "second SGE on a pinned MR: %s",
		      strerror(ret));
	}

	/* ibv_advise_mr(3) errors */
	ret = advise1(pd, ADV_PW, FLUSH, ro->lkey, buf, 64);
	CHECK(ret == EPERM, "PREFETCH_WRITE on read-only MR: %s",
	      strerror(ret));
	ret = advise1(pd, ADV_PF, FLUSH, pinned->lkey, buf + 32 * pg, 64);
	CHECK(ret == EOPNOTSUPP, "non-ODP MR: %s", strerror(ret));
	ret = advise1(pd, ADV_PF, FLUSH, odp->lkey, buf + 30 * pg, 4 * pg);
	CHECK(ret == EFAULT, "range beyond the MR: %s", strerror(ret));
	ret = advise1(pd, ADV_PF, FLUSH, odp->lkey, buf - 1, 16);
	CHECK(ret == EFAULT, "range before the MR: %s", strerror(ret));
	ret = advise1(pd, ADV_PF, FLUSH, odp->lkey ^ 0x3, buf, 64);
	CHECK(ret == ENOENT, "lkey not consistent with the MR's: %s",
	      strerror(ret));
	ret = advise1(pd, ADV_PF, FLUSH, 0x00ffff00, buf, 64);
	CHECK(ret == EFAULT, "unknown lkey: %s", strerror(ret));
	ret = advise1(pd, ADV_PF, FLUSH, other->lkey, buf, 64);
	CHECK(ret == EPERM, "another PD's MR: %s", strerror(ret));
	ret = advise1(pd, ADV_PF, 0x2, odp->lkey, buf, 64);
	CHECK(ret == EINVAL, "bad flags: %s", strerror(ret));
	ret = advise1(pd, 17, FLUSH, odp->lkey, buf, 64);
	CHECK(ret == EOPNOTSUPP, "unknown advice: %s", strerror(ret));
	munmap(buf + 24 * pg, 8 * pg);
	ret = advise1(pd, ADV_PF, FLUSH, odp->lkey, buf + 24 * pg, 64);
	CHECK(ret == EFAULT, "range not in the address space: %s",
	      strerror(ret));

	/* dereg while a prefetch is queued */
	ret = advise1(pd, ADV_PW, 0, odp->lkey, buf, 24 * pg);
	CHECK(ret == 0, "async prefetch before dereg: %s", strerror(ret));
	CHECK(ibv_dereg_mr(odp) == 0, "dereg with prefetch queued");

	CHECK(ibv_dereg_mr(ro) == 0, "dereg");
	CHECK(ibv_dereg_mr(pinned) == 0, "dereg");
	CHECK(ibv_dereg_mr(other) == 0, "dereg");
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc pd2");
	munmap(buf, 24 * pg);
	munmap(buf + 32 * pg, 32 * pg);
}

static void test_implicit(struct ibv_pd *pd)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND;
	long long children, releases;
	struct ibv_mr *mr;
	char *buf;
	int i, ret;

	mr = REG_OK(pd, NULL, SIZE_MAX, acc, "implicit ODP MR");
	if (!mr)
		return;
	{
		static char out[16384];

		res_show_mr(out, sizeof(out));
		CHECK(strstr(out, "kind implicit") != NULL,
		      "rdma res show mr: implicit shown:\n%s", out);
	}
	buf = map_pages(8);
	children = counter("odp_implicit_children");
	releases = counter("odp_implicit_releases");
	ret = advise1(pd, ADV_PW, FLUSH, mr->lkey, buf, 8 * pg);
	CHECK(ret == 0, "prefetch via implicit MR: %s", strerror(ret));
	CHECK(counter("odp_implicit_children") > children,
	      "implicit child created");
	munmap(buf, 8 * pg);
	for (i = 0; i < 100 && counter("odp_implicit_releases") <= releases;
	     i++)
		;
	CHECK(counter("odp_implicit_releases") > releases,
	      "implicit child released after munmap");
	ret = advise1(pd, ADV_PF, FLUSH, mr->lkey, buf, 64);
	CHECK(ret == EFAULT, "unmapped range via implicit MR: %s",
	      strerror(ret));
	CHECK(ibv_dereg_mr(mr) == 0, "dereg implicit");
}

static void test_hugetlb(struct ibv_pd *pd)
{
	size_t huge = 2 << 20;
	struct ibv_mr *mr;
	void *p;
	int ret;

	p = mmap(NULL, huge, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	CHECK(p != MAP_FAILED, "hugetlb mapping (nr_hugepages set?): %s",
	      strerror(errno));
	if (p == MAP_FAILED)
		return;
	mr = REG_OK(pd, p, huge, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND |
		    IBV_ACCESS_HUGETLB, "ODP HUGETLB MR");
	if (mr) {
		ret = advise1(pd, ADV_PW, FLUSH, mr->lkey, p, huge);
		CHECK(ret == 0, "prefetch hugetlb: %s", strerror(ret));
		CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	}
	munmap(p, huge);
	p = map_pages(4);
	REG_FAILS(pd, p, 4 * pg, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB,
		  EINVAL, "HUGETLB on memory that is not hugetlb");
	munmap(p, 4 * pg);
}

static void test_rereg(struct ibv_context *ctx, struct ibv_pd *pd)
{
	char *buf = map_pages(4);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *mr;
	uint32_t key;
	int ret;

	mr = REG_OK(pd, buf, pg, IBV_ACCESS_LOCAL_WRITE, "MR to rereg");
	if (!mr || !pd2)
		return;
	key = mr->lkey;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(ret == 0, "rereg access: %d", ret);
	CHECK(mr->lkey == key, "access change keeps the key");
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	CHECK(ret == 0 && mr->pd == pd2, "rereg PD: %d", ret);
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			   buf + 2 * pg, pg, 0);
	CHECK(ret == 0, "rereg translation: %d", ret);
	CHECK(mr->lkey != key, "new translation, new key");
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_REMOTE_WRITE);
	CHECK(ret != 0, "rereg to REMOTE_WRITE without LOCAL_WRITE fails");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc");
	munmap(buf, 4 * pg);
}

/* RDMAV_FORK_SAFE: a child's writes never reach the registered pages. */
static void test_fork(struct ibv_pd *pd)
{
	char *buf = map_pages(2);
	struct ibv_mr *mr;
	pid_t pid;
	int st = -1;

	memset(buf, 0x11, 2 * pg);
	mr = REG_OK(pd, buf, 2 * pg, IBV_ACCESS_LOCAL_WRITE, "MR before fork");
	if (!mr)
		return;
	pid = fork();
	if (pid == 0) {
		memset(buf, 0x22, 2 * pg);
		_exit(buf[0] == 0x22 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "child ran");
	CHECK(buf[0] == 0x11 && buf[2 * pg - 1] == 0x11,
	      "parent's registered memory unchanged");
	CHECK(ibv_dereg_mr(mr) == 0, "dereg after fork");
	munmap(buf, 2 * pg);
}

/*
 * The user half of test_dead_mm(), in a grandchild holding the registrar's
 * uverbs fd after the registrar exited: a prefetch through each ODP MR
 * must fail with EFAULT.  Exit status: 0, or which MR misbehaved.
 */
static int dead_mm_user(pid_t registrar, struct ibv_pd *p, char *mem,
			struct ibv_mr *big, struct ibv_mr *imp)
{
	int i, bad = 0;

	cpu_set_t all, one;

	for (i = 0; i < 1000 && getppid() == registrar; i++)
		usleep(10000);
	/*
	 * An idle CPU keeps the last mm it ran as its lazy one: run on each
	 * CPU in turn so that the registrar's mm_struct is really dropped.
	 */
	usleep(50000);
	if (!sched_getaffinity(0, sizeof(all), &all)) {
		for (i = 0; i < CPU_SETSIZE; i++) {
			if (!CPU_ISSET(i, &all))
				continue;
			CPU_ZERO(&one);
			CPU_SET(i, &one);
			sched_setaffinity(0, sizeof(one), &one);
			usleep(1000);
		}
		sched_setaffinity(0, sizeof(all), &all);
	}
	usleep(50000);
	if (advise1(p, ADV_PW, FLUSH, big->lkey, mem, 4096) != EFAULT)
		bad |= 1;
	if (advise1(p, ADV_PW, FLUSH, imp->lkey, mem, 4096) != EFAULT)
		bad |= 2;
	return bad;
}

/*
 * ODP MRs built on children (implicit, and explicit ones above 16 MiB)
 * make a child on first access in the registering process's mm.  When
 * that process is gone but its uverbs fd lives on in a fork, the access
 * must fail (EFAULT), never reach a freed mm_struct or another process's
 * memory in its place (the debug kernel's KASAN would report it).
 */
static void test_dead_mm(void)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND;
	size_t len = 64UL << 20;
	pid_t pid, user = -1;
	int st = -1, ust = -1;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		CHECK(0, "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct ibv_context *c = st_open_dev(dev_name);
		struct ibv_pd *p = c ? ibv_alloc_pd(c) : NULL;
		char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ibv_mr *big = NULL, *imp = NULL;
		pid_t me = getpid();

		if (p && mem != MAP_FAILED) {
			big = ibv_reg_mr(p, mem, len, acc);
			imp = ibv_reg_mr(p, NULL, SIZE_MAX, acc);
		}
		if (!big || !imp)
			_exit(100);
		if (fork() == 0)
			_exit(dead_mm_user(me, p, mem, big, imp));
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0, "registrar: 64 MiB ODP and implicit MRs (status %d)",
	      st);
	if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		user = waitpid(-1, &ust, 0);
	CHECK(user > 0 && WIFEXITED(ust) && WEXITSTATUS(ust) == 0,
	      "prefetch after the registrar exited: EFAULT through both MRs (status %d: 1 explicit, 2 implicit wrong)",
	      WIFEXITED(ust) ? WEXITSTATUS(ust) : -1);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
}

static int hold(struct ibv_context *ctx, struct ibv_pd *pd)
{
	int odp = st_has_odp(ctx, pd);
	int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND;
	size_t len = 256UL << 20;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *odp_mr, *imp, *pinned;
	struct ibv_sge sge;

	if (buf == MAP_FAILED)
		return 1;
	pinned = ibv_reg_mr(pd, buf, 16 * pg, IBV_ACCESS_LOCAL_WRITE);
	if (!pinned)
		return 1;
	if (!odp) {
		printf("holding 1 MR\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	odp_mr = ibv_reg_mr(pd, buf, len, rw);
	imp = ibv_reg_mr(pd, NULL, SIZE_MAX, rw);
	if (!odp_mr || !imp)
		return 1;
	sge = (struct ibv_sge){ (uintptr_t)buf, (uint32_t)len, odp_mr->lkey };
	if (ibv_advise_mr(pd, ADV_PW, 0, &sge, 1))
		return 1;
	sge.lkey = imp->lkey;
	if (ibv_advise_mr(pd, ADV_PW, 0, &sge, 1))
		return 1;
	printf("holding 3 MRs\n");
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int holding = 0, odp;

	pg = sysconf(_SC_PAGESIZE);
	if (argc > 2 && !strcmp(argv[1], "--hold")) {
		holding = 1;
		argv++;
		argc--;
	}
	if (argc > 1)
		dev_name = argv[1];
	setenv("RDMAV_FORK_SAFE", "1", 1);
	ctx = st_open_dev(dev_name);
	CHECK(ctx != NULL, "open %s", dev_name);
	if (!ctx)
		return st_finish("softmr_mr");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "alloc_pd");
	if (!pd)
		return st_finish("softmr_mr");
	if (holding)
		return hold(ctx, pd);

	odp = st_has_odp(ctx, pd);
	test_flags(pd, odp);
	test_iova(pd);
	if (odp) {
		test_odp(ctx, pd);
		test_implicit(pd);
		test_hugetlb(pd);
		test_dead_mm();
	} else {
		SKIP("ODP, implicit ODP, HUGETLB: no ODP on this kernel");
	}
	test_rereg(ctx, pd);
	test_fork(pd);

	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close");
	return st_finish("softmr_mr");
}
