// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_mw - memory windows through libibverbs: capabilities, type 1
 * windows bound by ibv_bind_mw(), type 2 windows bound by IBV_WR_BIND_MW
 * and invalidated by IBV_WR_LOCAL_INV and a peer's SEND_WITH_INV, data
 * through windows on an MR that grants no remote access itself, accesses
 * outside a window or beyond its rights, ibv_dereg_mr() refused (EBUSY)
 * while a window is bound, the verbs' errnos, windows on ODP MRs (explicit
 * and implicit) where the kernel offers ODP; then, as uid 65534, another
 * user's process that knows the victim's window keys can neither re-bind
 * nor invalidate them, and the victim's windows keep working.
 *
 * usage: softmr_mw [DEV]   (root)
 */

#include <grp.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "softmr_qp_util.h"

#define LEN	(64 * 1024)
#define WOFF	64
#define WLEN	4096
#define PG_OFF	(3 * WLEN + 96)
#define RW	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static const char *dev = "softmr0";
static uint8_t *buf, *src;
static struct ibv_mr *mr, *smr;
static struct end a, b;

/* Fresh a <-> b pair (after an error moved one to the error state). */
static int pair(void)
{
	free_end(&a);
	free_end(&b);
	return make_rc_pair(&a, &b, RW, 7);
}

/* One signalled RDMA op from @qp's end; its completion status. */
static int rdma(struct end *e, enum ibv_wr_opcode op, uint8_t *local,
		uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sg = {
		.addr = (uintptr_t)local, .length = len, .lkey = smr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 7, .opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.sg_list = &sg, .num_sge = 1,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};
	struct ibv_wc wc;

	if (post(e->qp, &wr) || wait_wc(e->cq, &wc))
		return -1;
	return wc.status;
}

/* Post a WR on @e and return its completion (status, opcode). */
static int one(struct end *e, struct ibv_send_wr *wr, struct ibv_wc *wc)
{
	wr->send_flags |= IBV_SEND_SIGNALED;
	if (post(e->qp, wr) || wait_wc(e->cq, wc))
		return -1;
	return wc->status;
}

static int bind2(struct end *e, struct ibv_mw *mw, struct ibv_mr *m,
		 uint64_t addr, uint64_t len, unsigned int acc)
{
	struct ibv_send_wr wr = { .wr_id = 3, .opcode = IBV_WR_BIND_MW };
	struct ibv_wc wc;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info.mr = m;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = acc;
	return one(e, &wr, &wc);
}

static void test_caps(void)
{
	struct ibv_device_attr attr;

	CHECK(!ibv_query_device(ctx, &attr), "query_device");
	CHECK(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW,
	      "IBV_DEVICE_MEM_WINDOW");
	CHECK(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B,
	      "IBV_DEVICE_MEM_WINDOW_TYPE_2B");
	CHECK(attr.max_mw > 0, "max_mw %d", attr.max_mw);
	CHECK(!ibv_alloc_mw(pd, 3), "type 3 window refused");
}

static void test_type1(struct ibv_mw *mw)
{
	struct ibv_mw_bind bind = {
		.wr_id = 11, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = {
			.mr = mr, .addr = (uintptr_t)buf + WOFF,
			.length = WLEN,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ,
		},
	};
	uint32_t before = mw->rkey;
	uint64_t win = (uintptr_t)buf + WOFF;
	struct ibv_wc wc;

	CHECK(!ibv_bind_mw(a.qp, mw, &bind), "ibv_bind_mw type 1");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 11,
	      "bind completion: status %d opcode %d", wc.status, wc.opcode);
	CHECK(mw->rkey == ibv_inc_rkey(before), "the rkey rolled");

	fill(src, WLEN, 3);
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, win, mw->rkey, WLEN) ==
	      IBV_WC_SUCCESS, "RDMA WRITE through the window");
	CHECK(!memcmp(buf + WOFF, src, WLEN) && !buf[WOFF - 1] &&
	      !buf[WOFF + WLEN], "the window's bytes, only those");
	CHECK(rdma(&b, IBV_WR_RDMA_READ, src + WLEN, win + 100, mw->rkey,
		   500) == IBV_WC_SUCCESS &&
	      !memcmp(src + WLEN, buf + WOFF + 100, 500),
	      "RDMA READ through the window");
	CHECK_ERRNO(ibv_dereg_mr(mr) != 0, EBUSY,
		    "dereg of an MR with a bound window");
	errno = 0;
	bind.bind_info.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
	CHECK(ibv_bind_mw(a.qp, mw, &bind) == EINVAL,
	      "zero-based type 1 bind: EINVAL");
	bind.bind_info.mw_access_flags &= ~IBV_ACCESS_ZERO_BASED;

	/* outside the window; the MR's own rkey; a stale window key */
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, win - 1, mw->rkey, 8) ==
	      IBV_WC_REM_ACCESS_ERR, "write before the window");
	CHECK(buf[WOFF - 1] == 0, "nothing written");
	CHECK(!pair(), "new pair");
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, win, mr->rkey, 8) ==
	      IBV_WC_REM_ACCESS_ERR, "the MR's rkey grants no remote write");
	CHECK(!pair(), "new pair");
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, win, before, 8) ==
	      IBV_WC_REM_ACCESS_ERR, "the window's old rkey");
	CHECK(!pair(), "new pair");
}

static void test_type2(struct ibv_mw *mw)
{
	struct ibv_mw_bind bind = { .bind_info = { .mr = mr } };
	uint64_t win = (uintptr_t)buf + 2 * WLEN;
	struct ibv_send_wr wr = {};
	struct ibv_wc wc;
	uint32_t key;

	CHECK(ibv_bind_mw(a.qp, mw, &bind) == EINVAL,
	      "ibv_bind_mw of a type 2 window: EINVAL");
	CHECK(bind2(&a, mw, mr, win, WLEN, IBV_ACCESS_REMOTE_WRITE) ==
	      IBV_WC_SUCCESS, "BIND_MW type 2");
	key = mw->rkey;
	fill(src, 64, 9);
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, win, key, 64) == IBV_WC_SUCCESS &&
	      !memcmp(buf + 2 * WLEN, src, 64), "write through type 2");
	CHECK(bind2(&a, mw, mr, win, WLEN, IBV_ACCESS_REMOTE_WRITE) ==
	      IBV_WC_MW_BIND_ERR, "a bound type 2 window does not re-bind");
	mw->rkey = key;
	CHECK(!pair(), "new pair");
	CHECK(bind2(&b, mw, mr, win, WLEN, IBV_ACCESS_REMOTE_WRITE) ==
	      IBV_WC_MW_BIND_ERR, "...nor from another QP");
	mw->rkey = key;
	CHECK(!pair(), "new pair");
	/* bound to the old a: through the new pair it reaches nothing */
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, win, key, 8) ==
	      IBV_WC_REM_ACCESS_ERR, "type 2 through another QP");
	CHECK(!pair(), "new pair");
	/* invalidation is the bound QP's: the old a is gone, so this fails */
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = key;
	CHECK(one(&a, &wr, &wc) == IBV_WC_MW_BIND_ERR,
	      "LOCAL_INV from a QP the window is not bound to");
	CHECK(!pair(), "new pair");
}

static void test_type2_inv(void)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	uint64_t win = (uintptr_t)buf + 4 * WLEN;
	struct ibv_send_wr wr = {};
	struct ibv_sge rs = {
		.addr = (uintptr_t)src + 8192, .length = 64, .lkey = smr->lkey,
	};
	struct ibv_wc wc;

	CHECK(mw != NULL, "alloc type 2");
	if (!mw)
		return;
	/* local invalidation by the bound QP */
	CHECK(bind2(&a, mw, mr, win, WLEN, IBV_ACCESS_REMOTE_WRITE) ==
	      IBV_WC_SUCCESS, "bind");
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = mw->rkey;
	CHECK(one(&a, &wr, &wc) == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_LOCAL_INV, "LOCAL_INV");
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, win, mw->rkey, 8) ==
	      IBV_WC_REM_ACCESS_ERR, "invalidated key");
	CHECK(!pair(), "new pair");

	/* remote invalidation: b's SEND_WITH_INV to a, the bound QP */
	CHECK(bind2(&a, mw, mr, win, WLEN, IBV_ACCESS_REMOTE_WRITE) ==
	      IBV_WC_SUCCESS, "bind again after invalidation");
	CHECK(!post_recv(a.qp, 5, &rs, 1), "post recv");
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = mw->rkey;
	CHECK(one(&b, &wr, &wc) == IBV_WC_SUCCESS, "SEND_WITH_INV");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS &&
	      (wc.wc_flags & IBV_WC_WITH_INV) &&
	      wc.invalidated_rkey == mw->rkey, "receive with invalidation");
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, win, mw->rkey, 8) ==
	      IBV_WC_REM_ACCESS_ERR, "remotely invalidated key");
	CHECK(!pair(), "new pair");
	CHECK(!ibv_dealloc_mw(mw), "dealloc");
}

/* A type 1 window on an ODP MR: WRITE, READ and an atomic through it. */
static void test_odp(const char *what, void *addr, size_t len, int implicit)
{
	struct ibv_mr *odp = ibv_reg_mr(pd, implicit ? NULL : addr,
					implicit ? SIZE_MAX : len,
					IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_MW_BIND |
					IBV_ACCESS_ON_DEMAND);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	uint64_t win = (uintptr_t)addr + PG_OFF;
	struct ibv_mw_bind bind = {
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {
			.mr = odp, .addr = win, .length = WLEN,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ |
					   IBV_ACCESS_REMOTE_ATOMIC,
		},
	};
	struct ibv_send_wr wr = { .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD };
	struct ibv_sge sg = {
		.addr = (uintptr_t)src + 2 * WLEN, .length = 8,
		.lkey = smr->lkey,
	};
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS };

	CHECK(odp && mw, "%s: ODP MR with MW_BIND and a window", what);
	if (!odp || !mw)
		goto out;
	CHECK(!ibv_bind_mw(a.qp, mw, &bind) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_SUCCESS, "%s: bind", what);
	fill(src, WLEN, 17);
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, win, mw->rkey, WLEN) ==
	      IBV_WC_SUCCESS && !memcmp((uint8_t *)addr + PG_OFF, src, WLEN),
	      "%s: RDMA WRITE through the window", what);
	CHECK(rdma(&b, IBV_WR_RDMA_READ, src + WLEN, win + 8, mw->rkey, 256) ==
	      IBV_WC_SUCCESS && !memcmp(src + WLEN, src + 8, 256),
	      "%s: RDMA READ through the window", what);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = win + 64;
	wr.wr.atomic.rkey = mw->rkey;
	wr.wr.atomic.compare_add = 5;
	CHECK(one(&b, &wr, &wc) == IBV_WC_SUCCESS &&
	      !memcmp(src + 2 * WLEN, src + 64, 8),
	      "%s: fetch-and-add through the window", what);
	CHECK_ERRNO(ibv_dereg_mr(odp) != 0, EBUSY, "dereg of a bound ODP MR");
out:
	if (mw)
		CHECK(!ibv_dealloc_mw(mw), "%s: dealloc", what);
	if (odp)
		CHECK(!ibv_dereg_mr(odp), "%s: dereg", what);
	if (wc.status != IBV_WC_SUCCESS)
		pair();
}

/*
 * As uid 65534, with its own device context, PD, MR and QPs: re-bind and
 * invalidate the victim's windows by their keys.  Returns failures.
 */
static int attacker(uint32_t k1, uint32_t k2)
{
	struct ibv_mw fake = { .type = IBV_MW_TYPE_1 };
	struct ibv_sge sg = { .length = 64 };
	struct ibv_send_wr wr = {};
	struct ibv_wc wc;
	struct ibv_mr *own;
	uint8_t *mem;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 100;
	st_failed = st_passed = 0;
	mr = smr = NULL;
	a.qp = b.qp = NULL;
	a.cq = b.cq = NULL;
	ctx = st_open_dev(dev);
	if (!ctx)
		return 100;
	pd = ibv_alloc_pd(ctx);
	mem = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	own = ibv_reg_mr(pd, mem, LEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_MW_BIND);
	smr = own;
	if (!pd || !own || make_rc_pair(&a, &b, RW, 7))
		return 100;
	/* the victim's window named by its key, bound onto our MR */
	fake.rkey = k1;
	CHECK(bind2(&a, &fake, own, (uintptr_t)mem, 64,
		    IBV_ACCESS_REMOTE_WRITE) == IBV_WC_MW_BIND_ERR,
	      "uid 65534: BIND_MW of another user's type 1 window");
	CHECK(!pair(), "new pair");
	fake.rkey = k2;
	CHECK(bind2(&a, &fake, own, (uintptr_t)mem, 64,
		    IBV_ACCESS_REMOTE_WRITE) == IBV_WC_MW_BIND_ERR,
	      "uid 65534: BIND_MW of another user's type 2 window");
	CHECK(!pair(), "new pair");
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = k2;
	CHECK(one(&a, &wr, &wc) == IBV_WC_MW_BIND_ERR,
	      "uid 65534: LOCAL_INV of another user's window");
	CHECK(!pair(), "new pair");
	/* its own responder is asked to invalidate the victim's key */
	sg.addr = (uintptr_t)mem + 4096;
	sg.lkey = own->lkey;
	CHECK(!post_recv(b.qp, 1, &sg, 1), "post recv");
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = k2;
	CHECK(one(&a, &wr, &wc) == IBV_WC_REM_INV_REQ_ERR,
	      "uid 65534: SEND_WITH_INV of another user's window: %d",
	      wc.status);
	return st_finish("softmr_mw (uid 65534)");
}

static void test_isolation(void)
{
	struct ibv_mw *w1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *w2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind bind = {
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {
			.mr = mr, .addr = (uintptr_t)buf + 8 * WLEN,
			.length = WLEN,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
		},
	};
	uint64_t w2addr = (uintptr_t)buf + 10 * WLEN;
	struct ibv_wc wc;
	int status;
	pid_t pid;

	CHECK(w1 && w2, "alloc");
	if (!w1 || !w2)
		return;
	CHECK(!ibv_bind_mw(a.qp, w1, &bind) && !wait_wc(a.cq, &wc) &&
	      wc.status == IBV_WC_SUCCESS, "victim binds type 1");
	CHECK(bind2(&a, w2, mr, w2addr, WLEN, IBV_ACCESS_REMOTE_WRITE) ==
	      IBV_WC_SUCCESS, "victim binds type 2");
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(attacker(w1->rkey, w2->rkey));
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid &&
	      WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the attacker's checks");
	/* the victim's windows are as they were */
	fill(src, 64, 21);
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, (uintptr_t)buf + 8 * WLEN,
		   w1->rkey, 64) == IBV_WC_SUCCESS &&
	      !memcmp(buf + 8 * WLEN, src, 64), "victim's type 1 window works");
	CHECK(rdma(&b, IBV_WR_RDMA_WRITE, src, w2addr, w2->rkey, 64) ==
	      IBV_WC_SUCCESS && !memcmp(buf + 10 * WLEN, src, 64),
	      "victim's type 2 window works");
	CHECK(!ibv_dealloc_mw(w1) && !ibv_dealloc_mw(w2), "dealloc");
}

int main(int argc, char **argv)
{
	struct ibv_mw *t1, *t2;

	if (argc > 1)
		dev = argv[1];
	if (st_setup(dev))
		return 1;
	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* the windows' MR grants no remote access of its own */
	mr = ibv_reg_mr(pd, buf, LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_MW_BIND);
	smr = ibv_reg_mr(pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK(pd && mr && smr, "PD and MRs");
	if (!mr || !smr || pair())
		return st_finish("softmr_mw");

	test_caps();
	t1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	t2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	CHECK(t1 && t2, "alloc type 1 and type 2");
	if (t1 && t2) {
		test_type1(t1);
		test_type2(t2);
		CHECK(!ibv_dealloc_mw(t1) && !ibv_dealloc_mw(t2),
		      "dealloc bound windows");
	}
	test_type2_inv();
	if (st_has_odp(ctx, pd)) {
		uint8_t *odp = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		test_odp("explicit ODP", odp, LEN, 0);
		test_odp("implicit ODP", odp, LEN, 1);
		munmap(odp, LEN);
	} else {
		SKIP("windows on ODP MRs: this kernel has no ODP for softmr");
	}
	test_isolation();
	CHECK(!ibv_dereg_mr(mr), "dereg once no window is bound");
	free_end(&a);
	free_end(&b);
	ibv_dereg_mr(smr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return st_finish("softmr_mw");
}
