/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The fault kind: registration, creation and traffic verbs with failslab,
 * fail_page_alloc and fail_usercopy armed (task-filter=Y, so only this
 * thread, while its make-it-fail is 1).  The round picks the probability,
 * interval and times; a case arms, calls, disarms and cleans up.  Only on
 * kernels with CONFIG_FAULT_INJECTION_DEBUG_FS and FAILSLAB (the debug
 * kernel); elsewhere the kind is left out with a message.  Whatever the
 * calls answer, the kernel log decides.
 */
#ifndef SOFTMR_FUZZ_FAULT_H
#define SOFTMR_FUZZ_FAULT_H

#include <sys/mount.h>

#include "softmr_fuzz_verbs.h"

/* Fault injection usable?  Mounts debugfs when it is not. */
static bool fz_fault_init(void)
{
	if (access(FZ_DEBUGFS "/failslab", F_OK))
		mount("debugfs", FZ_DEBUGFS, "debugfs", 0, NULL);
	if (!fz_fault_available()) {
		printf("fuzz: no fault injection in this kernel (no %s/failslab): fault kind skipped\n",
		       FZ_DEBUGFS);
		return false;
	}
	fz.fail_fd = open("/proc/thread-self/make-it-fail",
			  O_WRONLY | O_CLOEXEC);
	if (fz.fail_fd < 0) {
		printf("fuzz: no /proc/thread-self/make-it-fail: fault kind skipped\n");
		return false;
	}
	/*
	 * With make-it-fail set, paging in the fuzzer's own code (from the
	 * VM's 9p root) can fail and SIGBUS it: keep what is mapped now
	 * (the program, the libraries, the provider) resident.
	 */
	if (mlockall(MCL_CURRENT))
		printf("fuzz: mlockall: %s (an injected fault may hit the fuzzer's own page-ins)\n",
		       strerror(errno));
	return true;
}

/*
 * fail_usercopy is armed per case with a finite "times": the write that
 * clears make-it-fail copies from user space too, and must get through
 * after at most that many injected failures.
 */
static bool fz_usercopy;

static void fz_fault_begin(void)
{
	unsigned int prob = rnd(3) ? 1 + rnd(20) : 1 + rnd(100);
	unsigned int interval = rnd(2) ? 1 : 1 + rnd(16);
	int times = rnd(2) ? -1 : 1 + (int)rnd(4);

	fz_fault_attr("failslab", rnd(5) ? prob : 0, interval, times);
	fz_fault_attr("fail_page_alloc", rnd(2) ? prob : 0, interval, times);
	fz_usercopy = one_in(3);
	fz_fault_attr("fail_usercopy", fz_usercopy ? prob : 0, interval, 0);
}

static void fz_fault_end(void)
{
	fz_fail_me(false);
	fz_fault_off_all();
}

/* One creation or registration verb (or a little traffic) under faults. */
static void fz_fault_case(void)
{
	struct ibv_alloc_dm_attr da = { .length = FZ_PAGE * (1 + rnd(16)) };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1 + rnd(64),
						  .max_sge = 1 + rnd(4) } };
	struct ibv_srq_attr sx = { .max_wr = 1 + rnd(256) };
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .hop_limit = 1, .sgid_index = fz.gid_index,
			 .dgid = fz.gid },
	};
	void *o[3] = { NULL, NULL, NULL };
	int t[3] = { 0, 0, 0 }, op = rnd(15), i;
	bool free_armed = one_in(4);
	uint8_t *p = fz_slot(rnd(FZ_MR_SLOTS));
	size_t len = FZ_PAGE * (1 + rnd(32));
	struct fz_qp q = { .type = IBV_QPT_RC, .psn = 7 };
	struct ibv_context *ctx;

	if (fz_usercopy) {
		char v[16];

		snprintf(v, sizeof(v), "%u", 1 + rnd(8));
		fz_write_file(FZ_DEBUGFS "/fail_usercopy/times", v);
	}
	fz_fail_me(true);
	switch (op) {
	case 0:
		o[0] = FZ_PTR(ibv_alloc_pd(W.ctx));
		t[0] = V_PD;
		break;
	case 1:
		o[0] = FZ_PTR(ibv_reg_mr(W.pd, p, len, FZ_RW));
		t[0] = V_MR;
		break;
	case 2:
		o[0] = FZ_PTR(ibv_reg_mr(W.pd, p, len,
					 FZ_RW | IBV_ACCESS_ON_DEMAND));
		t[0] = V_MR;
		if (o[0]) {
			struct ibv_sge sg = { (uintptr_t)p, len,
					      ((struct ibv_mr *)o[0])->lkey };

			fz_rc("advise_mr", ibv_advise_mr(W.pd,
				IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				IBV_ADVISE_MR_FLAG_FLUSH, &sg, 1));
		}
		break;
	case 3:
		o[0] = FZ_PTR(ibv_reg_mr(W.pd, NULL, SIZE_MAX,
					 FZ_RW | IBV_ACCESS_ON_DEMAND));
		t[0] = V_MR;
		break;
	case 4:
		o[0] = FZ_PTR(ibv_create_cq(W.ctx, 1 + rnd(4096), NULL, NULL,
					    0));
		t[0] = V_CQ;
		break;
	case 5:
		q.qp = fz_make_qp(IBV_QPT_RC, W.cq[0], NULL);
		if (q.qp)
			fz_connect(&q, q.qp->qp_num, q.psn);	/* to itself */
		o[0] = q.qp;
		t[0] = V_QP;
		break;
	case 6:
		o[0] = FZ_PTR(ibv_create_srq(W.pd, &sa));
		t[0] = V_SRQ;
		if (o[0])
			fz_rc("modify_srq", ibv_modify_srq(o[0], &sx,
							   IBV_SRQ_MAX_WR));
		break;
	case 7:
		o[0] = FZ_PTR(ibv_alloc_dm(W.ctx, &da));
		t[0] = V_DM;
		if (!o[0])
			break;
		o[1] = FZ_PTR(ibv_reg_dm_mr(W.pd, o[0], 0, da.length,
					    FZ_RW | IBV_ACCESS_ZERO_BASED));
		t[1] = V_MR;
		i = ibv_dm_export_dmabuf_fd(o[0]);
		fz_sys("dm_export_dmabuf_fd", i);
		if (i >= 0) {
			o[2] = (void *)(intptr_t)(i + 1);
			t[2] = V_FD;
		}
		break;
	case 8:
		if (fz_dmabuf_fd >= 0)
			o[0] = FZ_PTR(ibv_reg_dmabuf_mr(W.pd, 0, FZ_DMABUF_SIZE,
							0, fz_dmabuf_fd, FZ_RW));
		t[0] = V_MR;
		break;
	case 9:
		o[0] = FZ_PTR(ibv_create_ah(W.pd, &aa));
		t[0] = V_AH;
		break;
	case 10:	/* not fz_open(): its "device gone?" look is no fault's */
		errno = 0;
		ctx = ibv_open_device(fz.dev);
		fz_note("open_device_faulty", ctx ? 0 : errno);
		if (ctx) {
			fz_fail_me(false);
			ibv_close_device(ctx);
		}
		break;
	case 11:
		fz_rc("resize_cq", ibv_resize_cq(W.cq[rnd(FZ_NCQ)],
						 1 + rnd(2048)));
		break;
	case 12:
		fz_ioctl_case();
		break;
	default:
		fz_ring_case();
		break;
	}
	if (!free_armed)
		fz_fail_me(false);
	/* the last made first: an MR of a DM before the DM */
	for (i = 2; i >= 0; i--) {
		int k;

		if (!o[i])
			continue;
		for (k = 0; k < FZ_NVICTIM && W.victim[k]; k++)
			;
		if (k == FZ_NVICTIM)
			k = 0;
		fz_victim_free(k);
		W.victim[k] = o[i];
		W.victim_type[k] = t[i];
		fz_victim_free(k);
	}
	fz_fail_me(false);
}

#endif /* SOFTMR_FUZZ_FAULT_H */
