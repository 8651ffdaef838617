/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * softmr_fuzz's world: the verbs objects one round of cases works on, on a
 * context of its own.  Built at the start of a round from the round's
 * random stream, torn down at its end whatever state the cases left it in
 * (closing the context frees whatever the provider could not destroy).
 *
 * QPs come in connected pairs: RC, UC, UD, and RC whose second QP receives
 * on the SRQ; an extra RC QP connects to a forked child's QP in the mm
 * kind.  Each side's sq_psn is the other side's rq_psn, so the engine
 * accepts the partner.  MRs: every kind the device has (pinned, pinned
 * zero-based, ODP explicit, implicit ODP, DM, dma-buf from udmabuf, one on
 * another PD, one already deregistered), all over the arena, device memory
 * or a udmabuf.
 */
#ifndef SOFTMR_FUZZ_WORLD_H
#define SOFTMR_FUZZ_WORLD_H

#include <sys/ioctl.h>
#include <linux/udmabuf.h>

#include "softmr_fuzz.h"

enum fz_qp_index {
	Q_RC0, Q_RC1, Q_UC0, Q_UC1, Q_UD0, Q_UD1, Q_SR0, Q_SR1, Q_X,
	FZ_NQP
};

enum fz_mr_kind {
	M_PINNED, M_ZB, M_ODP, M_IMPLICIT, M_DM, M_DMABUF, M_HUGE, M_PD2,
	M_FREED, M_NKIND
};

static const char *const fz_mr_name[M_NKIND] = {
	"pinned", "zero-based", "odp", "implicit", "dm", "dmabuf", "hugetlb",
	"pd2", "freed",
};

#define FZ_RW	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct fz_mr {
	struct ibv_mr *mr;
	uint32_t lkey, rkey;
	uint64_t iova, len;	/* the range the keys address */
	int kind;
};

struct fz_qp {
	struct ibv_qp *qp;
	enum ibv_qp_type type;
	int peer;		/* the partner's index, -1: none */
	uint32_t psn;		/* our sq_psn, the partner's rq_psn */
	int cq;
	bool srq;
	unsigned int bad;	/* cases seen out of RTS in a row */
};

#define FZ_NCQ		3
#define FZ_NVICTIM	24
#define FZ_QKEY		0x11111111

struct fz_world {
	struct ibv_context *ctx;
	int db_fd;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *cq[FZ_NCQ];
	struct ibv_srq *srq;
	struct fz_qp q[FZ_NQP];
	struct ibv_ah *ah[2];
	uint32_t ah_num[2];
	struct fz_mr mr[M_NKIND];
	struct ibv_dm *dm;
	struct ibv_mr *dm_mr, *dmabuf_mr;
	/* the mm kind: the child's QP number and keys, 0 while unknown */
	uint32_t x_qpn, x_psn;
	struct fz_mr x_mr[2];
	/* objects the verbs and fault kinds make, freed at the round's end */
	void *victim[FZ_NVICTIM];
	int victim_type[FZ_NVICTIM];
	unsigned long wcs, wc_err, foreign;
	unsigned int plausible;	/* % of plausible WQEs this round */
};

static struct fz_world W;
static unsigned long fz_wc_status[32];

/* Objects that persist across rounds: a udmabuf of 1 MiB, or -1. */
static int fz_dmabuf_fd = -1;
#define FZ_DMABUF_SIZE	(1UL << 20)

static void fz_dmabuf_init(void)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC };
	int memfd, dev;

	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		printf("fuzz: no /dev/udmabuf: no dma-buf MRs\n");
		return;
	}
	memfd = memfd_create("softmr-fuzz", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd >= 0 && !ftruncate(memfd, FZ_DMABUF_SIZE) &&
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) >= 0) {
		c.memfd = memfd;
		c.size = FZ_DMABUF_SIZE;
		fz_dmabuf_fd = ioctl(dev, UDMABUF_CREATE, &c);
	}
	if (fz_dmabuf_fd < 0)
		printf("fuzz: udmabuf: %s: no dma-buf MRs\n", strerror(errno));
	if (memfd >= 0)
		close(memfd);
	close(dev);
}

/* ---- victims ------------------------------------------------------------ */

enum { V_MR, V_QP, V_CQ, V_SRQ, V_AH, V_DM, V_PD, V_CH, V_FD, V_CQEX };

static void fz_victim_add(int type, void *obj)
{
	int i;

	if (!obj)
		return;
	for (i = 0; i < FZ_NVICTIM; i++)
		if (!W.victim[i])
			break;
	if (i == FZ_NVICTIM) {	/* full: the oldest goes first */
		i = 0;
		W.victim[0] = NULL;
	}
	W.victim[i] = obj;
	W.victim_type[i] = type;
}

static void fz_victim_free(int i)
{
	void *o = W.victim[i];

	if (!o)
		return;
	W.victim[i] = NULL;
	switch (W.victim_type[i]) {
	case V_MR:
		fz_rc("dereg_mr", ibv_dereg_mr(o));
		break;
	case V_QP:
		fz_rc("destroy_qp", ibv_destroy_qp(o));
		break;
	case V_CQ:
		fz_rc("destroy_cq", ibv_destroy_cq(o));
		break;
	case V_CQEX:
		fz_rc("destroy_cq_ex", ibv_destroy_cq(ibv_cq_ex_to_cq(o)));
		break;
	case V_SRQ:
		fz_rc("destroy_srq", ibv_destroy_srq(o));
		break;
	case V_AH:
		fz_rc("destroy_ah", ibv_destroy_ah(o));
		break;
	case V_DM:
		fz_rc("free_dm", ibv_free_dm(o));
		break;
	case V_PD:
		fz_rc("dealloc_pd", ibv_dealloc_pd(o));
		break;
	case V_CH:
		fz_rc("destroy_comp_channel", ibv_destroy_comp_channel(o));
		break;
	case V_FD:
		close((int)(intptr_t)o - 1);
		break;
	}
}

/* A victim of @type, or NULL. */
static void *fz_victim_pick(int type)
{
	int i, n = 0, pick = -1;

	for (i = 0; i < FZ_NVICTIM; i++)
		if (W.victim[i] && W.victim_type[i] == type && !rnd(++n))
			pick = i;
	return pick < 0 ? NULL : W.victim[pick];
}

/* ---- MRs ------------------------------------------------------------------ */

static void fz_mr_set(int kind, struct ibv_mr *mr, uint64_t iova,
		      uint64_t len)
{
	struct fz_mr *m = &W.mr[kind];

	m->kind = kind;
	m->mr = mr;
	m->iova = iova;
	m->len = len;
	if (mr) {
		m->lkey = mr->lkey;
		m->rkey = mr->rkey;
	}
}

static void fz_world_mrs(void)
{
	size_t len = FZ_PAGE * (16 + rnd(241));	/* 64 KiB .. 1 MiB */
	struct ibv_alloc_dm_attr da = { .length = 65536 };
	struct ibv_mr *mr;

	mr = FZ_PTR(ibv_reg_mr(W.pd, fz_slot(0), len, FZ_RW));
	fz_mr_set(M_PINNED, mr, (uintptr_t)fz_slot(0), len);
	mr = FZ_PTR(ibv_reg_mr(W.pd, fz_slot(1), len,
			       FZ_RW | IBV_ACCESS_ZERO_BASED));
	fz_mr_set(M_ZB, mr, 0, len);
	mr = FZ_PTR(ibv_reg_mr(W.pd, fz_slot(2), len,
			       FZ_RW | IBV_ACCESS_ON_DEMAND));
	fz_mr_set(M_ODP, mr, (uintptr_t)fz_slot(2), len);
	/* implicit ODP: the whole address space; the cases aim at the arena */
	mr = FZ_PTR(ibv_reg_mr(W.pd, NULL, SIZE_MAX,
			       FZ_RW | IBV_ACCESS_ON_DEMAND));
	fz_mr_set(M_IMPLICIT, mr, (uintptr_t)fz_arena, FZ_SLOTS * FZ_SLOT);
	mr = FZ_PTR(ibv_reg_mr(W.pd2, fz_slot(3), len, FZ_RW));
	fz_mr_set(M_PD2, mr, (uintptr_t)fz_slot(3), len);
	mr = FZ_PTR(ibv_reg_mr(W.pd, fz_slot(4), len, FZ_RW));
	fz_mr_set(M_FREED, mr, (uintptr_t)fz_slot(4), len);
	if (mr)
		fz_rc("dereg_mr", ibv_dereg_mr(mr));
	W.mr[M_FREED].mr = NULL;
	if (fz_huge) {
		mr = FZ_PTR(ibv_reg_mr(W.pd, fz_huge, 2UL << 20,
				       FZ_RW | IBV_ACCESS_ON_DEMAND |
				       IBV_ACCESS_HUGETLB));
		/* its iova is the hugetlb page: a write there is harmless */
		fz_mr_set(M_HUGE, mr, (uintptr_t)fz_huge, 2UL << 20);
	}
	W.dm = FZ_PTR(ibv_alloc_dm(W.ctx, &da));
	if (W.dm) {
		mr = FZ_PTR(ibv_reg_dm_mr(W.pd, W.dm, 0, 65536,
					  FZ_RW | IBV_ACCESS_ZERO_BASED));
		fz_mr_set(M_DM, mr, 0, 65536);
	}
	if (fz_dmabuf_fd >= 0) {
		/* iova in the hole: as a plain address it is harmless */
		uint64_t iova = (uintptr_t)fz_hole + FZ_PAGE * rnd(1024);

		mr = FZ_PTR(ibv_reg_dmabuf_mr(W.pd, 0, FZ_DMABUF_SIZE, iova,
					      fz_dmabuf_fd, FZ_RW));
		fz_mr_set(M_DMABUF, mr, iova, FZ_DMABUF_SIZE);
	}
}

/* ---- QPs -------------------------------------------------------------------- */

static struct ibv_qp *fz_make_qp(enum ibv_qp_type type, struct ibv_cq *cq,
				 struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = type,
		.sq_sig_all = one_in(4),
		.cap = {
			.max_send_wr = 1U << rnd(7),
			.max_recv_wr = 1U << rnd(7),
			.max_send_sge = 1 + rnd(8),
			.max_recv_sge = 1 + rnd(8),
			.max_inline_data = rnd(2) ? rnd(257) : 0,
		},
	};

	if (one_in(8))
		a.cap.max_send_sge = 32;
	return FZ_PTR(ibv_create_qp(W.pd, &a));
}

static int fz_modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	return fz_rc("modify_qp", ibv_modify_qp(qp, a, mask));
}

/* RESET -> INIT -> RTR -> RTS towards @dqpn; 0 on success. */
static int fz_connect(struct fz_qp *q, uint32_t dqpn, uint32_t rq_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = FZ_RW, .qkey = FZ_QKEY,
	};
	bool rc = q->type == IBV_QPT_RC, ud = q->type == IBV_QPT_UD;
	int mask;

	if (fz_modify(q->qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET },
		      IBV_QP_STATE))
		return -1;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	if (fz_modify(q->qp, &a, mask))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (!ud) {
		a.path_mtu = IBV_MTU_1024 + (q->psn & 3) % 3;
		a.dest_qp_num = dqpn;
		a.rq_psn = rq_psn;
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.grh.sgid_index = fz.gid_index;
		a.ah_attr.grh.dgid = fz.gid;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (rc)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
	}
	if (fz_modify(q->qp, &a, mask))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = q->psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = q->psn % 7;	/* never 7: that waits for ever */
	a.max_rd_atomic = 16;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	return fz_modify(q->qp, &a, mask);
}

/* Connect QP @i to its partner (or, for Q_X, to the child's QP). */
static int fz_connect_idx(int i)
{
	struct fz_qp *q = &W.q[i];

	if (!q->qp)
		return -1;
	if (i == Q_X)
		return W.x_qpn ? fz_connect(q, W.x_qpn, W.x_psn) : -1;
	if (q->peer < 0 || !W.q[q->peer].qp)
		return -1;
	return fz_connect(q, W.q[q->peer].qp->qp_num, W.q[q->peer].psn);
}

static const struct {
	enum ibv_qp_type type;
	int peer, cq;
	bool srq;
} fz_qp_plan[FZ_NQP] = {
	[Q_RC0] = { IBV_QPT_RC, Q_RC1, 0, false },
	[Q_RC1] = { IBV_QPT_RC, Q_RC0, 1, false },
	[Q_UC0] = { IBV_QPT_UC, Q_UC1, 0, false },
	[Q_UC1] = { IBV_QPT_UC, Q_UC0, 1, false },
	[Q_UD0] = { IBV_QPT_UD, Q_UD1, 2, false },
	[Q_UD1] = { IBV_QPT_UD, Q_UD0, 2, false },
	[Q_SR0] = { IBV_QPT_RC, Q_SR1, 1, false },
	[Q_SR1] = { IBV_QPT_RC, Q_SR0, 2, true },
	[Q_X] = { IBV_QPT_RC, -1, 2, false },
};

static void fz_qp_create(int i)
{
	struct fz_qp *q = &W.q[i];

	q->type = fz_qp_plan[i].type;
	q->peer = fz_qp_plan[i].peer;
	q->cq = fz_qp_plan[i].cq;
	q->srq = fz_qp_plan[i].srq;
	q->psn = (uint32_t)r64() & 0xffffff;
	q->bad = 0;
	if (q->srq && !W.srq) {
		q->qp = NULL;
		return;
	}
	q->qp = fz_make_qp(q->type, W.cq[q->cq], q->srq ? W.srq : NULL);
}

/* Destroy and make QP @i again, connected to its partner, and the partner
 * to it. */
static void fz_qp_recreate(int i)
{
	struct fz_qp *q = &W.q[i];

	if (q->qp)
		fz_rc("destroy_qp", ibv_destroy_qp(q->qp));
	q->qp = NULL;
	fz_qp_create(i);
	fz_connect_idx(i);
	if (q->peer >= 0)
		fz_connect_idx(q->peer);
}

/* ---- build and tear down ------------------------------------------------- */

/* The round's world; false when not even a context and a PD came up. */
static bool fz_world_build(bool cross)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 1U << rnd(8), .max_sge = 1 + rnd(6) },
	};
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .hop_limit = 1 },
	};
	static const unsigned int plaus[] = { 50, 70, 85, 95 };
	int i;

	memset(&W, 0, sizeof(W));
	W.db_fd = -1;
	W.plausible = plaus[rnd(4)];
	W.ctx = fz_open();
	if (!W.ctx)
		return false;
	W.db_fd = to_sctx(W.ctx)->db_fd;
	W.pd = FZ_PTR(ibv_alloc_pd(W.ctx));
	W.pd2 = FZ_PTR(ibv_alloc_pd(W.ctx));
	if (!W.pd || !W.pd2)
		return false;
	for (i = 0; i < FZ_NCQ; i++)
		W.cq[i] = FZ_PTR(ibv_create_cq(W.ctx, 64 << rnd(4), NULL,
					       NULL, 0));
	if (!W.cq[0] || !W.cq[1] || !W.cq[2])
		return false;
	W.srq = FZ_PTR(ibv_create_srq(W.pd, &sa));
	fz_world_mrs();
	for (i = 0; i < FZ_NQP; i++)
		if (i != Q_X || cross)
			fz_qp_create(i);
	for (i = 0; i < Q_X; i++)
		fz_connect_idx(i);
	if (cross && W.q[Q_X].qp) {
		/* INIT now; the child's QP number comes later */
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT, .port_num = 1,
			.qp_access_flags = FZ_RW,
		};

		fz_modify(W.q[Q_X].qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	}
	aa.grh.sgid_index = fz.gid_index;
	aa.grh.dgid = fz.gid;
	W.ah[0] = FZ_PTR(ibv_create_ah(W.pd, &aa));
	aa.grh.sgid_index = rnd(8);
	aa.grh.hop_limit = rnd(256);
	aa.grh.traffic_class = rnd(256);
	W.ah[1] = FZ_PTR(ibv_create_ah(W.pd2, &aa));
	for (i = 0; i < 2; i++)
		W.ah_num[i] = W.ah[i] ? to_sah(W.ah[i])->num : (uint32_t)r64();
	return true;
}

static void fz_world_destroy(void)
{
	int i;

	if (!W.ctx)
		return;
	for (i = 0; i < FZ_NVICTIM; i++)
		fz_victim_free(i);
	for (i = 0; i < FZ_NQP; i++)
		if (W.q[i].qp)
			fz_rc("destroy_qp", ibv_destroy_qp(W.q[i].qp));
	if (W.srq)
		fz_rc("destroy_srq", ibv_destroy_srq(W.srq));
	for (i = 0; i < 2; i++)
		if (W.ah[i])
			fz_rc("destroy_ah", ibv_destroy_ah(W.ah[i]));
	for (i = 0; i < M_NKIND; i++)
		if (W.mr[i].mr)
			fz_rc("dereg_mr", ibv_dereg_mr(W.mr[i].mr));
	if (W.dm)
		fz_rc("free_dm", ibv_free_dm(W.dm));
	for (i = 0; i < FZ_NCQ; i++)
		if (W.cq[i])
			fz_rc("destroy_cq", ibv_destroy_cq(W.cq[i]));
	if (W.pd2)
		fz_rc("dealloc_pd", ibv_dealloc_pd(W.pd2));
	if (W.pd)
		fz_rc("dealloc_pd", ibv_dealloc_pd(W.pd));
	fz_rc("close_device", ibv_close_device(W.ctx));
	W.ctx = NULL;
}

/* ---- completions ------------------------------------------------------------ */

/* Drain the world's CQs; a completion of a QP not on that CQ is noted. */
static void fz_poll_all(void)
{
	struct ibv_wc wc[16];
	int i, j, n;

	for (i = 0; i < FZ_NCQ; i++) {
		if (!W.cq[i])
			continue;
		n = ibv_poll_cq(W.cq[i], 16, wc);
		if (n < 0) {
			fz_note("poll_cq", EIO);
			continue;
		}
		for (j = 0; j < n; j++) {
			int k;

			W.wcs++;
			fz_wc_status[wc[j].status < 32 ? wc[j].status : 31]++;
			if (wc[j].status != IBV_WC_SUCCESS)
				W.wc_err++;
			for (k = 0; k < FZ_NQP; k++)
				if (W.q[k].qp && W.q[k].cq == i &&
				    W.q[k].qp->qp_num == wc[j].qp_num)
					break;
			if (k == FZ_NQP && !W.foreign++)
				fz_info("info: seed %#llx case %llu: CQ %d has a completion of QP %u, not one of its QPs (status %d)\n",
					(unsigned long long)fz.seed,
					(unsigned long long)fz.cur, i,
					wc[j].qp_num, wc[j].status);
		}
	}
}

/* A QP's state as the kernel publishes it in the send ring. */
static uint32_t fz_qp_state(struct fz_qp *q)
{
	return atomic_load_explicit((_Atomic(uint32_t) *)
				    &to_sqp(q->qp)->sq.hdr->qp_state,
				    memory_order_acquire);
}

/*
 * QPs out of RTS for 3 cases in a row are connected again (with their
 * partners).  Uses no random numbers: what the kernel did does not shift
 * the case stream.
 */
static void fz_recover(void)
{
	int i;

	for (i = 0; i < FZ_NQP; i++) {
		struct fz_qp *q = &W.q[i];

		if (!q->qp || (i == Q_X && !W.x_qpn))
			continue;
		if (fz_qp_state(q) == IBV_QPS_RTS) {
			q->bad = 0;
			continue;
		}
		if (++q->bad < 3)
			continue;
		q->bad = 0;
		fz_connect_idx(i);
		if (q->peer >= 0 && W.q[q->peer].qp &&
		    fz_qp_state(&W.q[q->peer]) != IBV_QPS_RTS) {
			W.q[q->peer].bad = 0;
			fz_connect_idx(q->peer);
		}
	}
}

#endif /* SOFTMR_FUZZ_WORLD_H */
