/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The verbs kind: one libibverbs call per case with random arguments, on
 * the round's world and on the victims earlier cases made: registration
 * (every flag, overflowing and unaligned ranges, implicit ODP, HUGETLB,
 * ZERO_BASED, iovas), rereg, advise, device memory, CQs, QPs, SRQs and AHs
 * with random capabilities, modify_qp with random masks and values,
 * imports, queries.  Addresses are fz_addr_ok() or inside the arena.
 */
#ifndef SOFTMR_FUZZ_VERBS_H
#define SOFTMR_FUZZ_VERBS_H

#include "softmr_fuzz_ioctl.h"

/* Random access flags: mostly meaningful combinations, sometimes junk. */
static unsigned int fz_access(void)
{
	unsigned int a = rnd(16);	/* LOCAL_WRITE .. REMOTE_ATOMIC */

	if (one_in(3))
		a |= IBV_ACCESS_ON_DEMAND;
	if (one_in(6))
		a |= IBV_ACCESS_ZERO_BASED;
	if (one_in(8))
		a |= IBV_ACCESS_HUGETLB;
	if (one_in(8))
		a |= IBV_ACCESS_RELAXED_ORDERING;
	if (one_in(10))
		a |= IBV_ACCESS_MW_BIND;
	if (one_in(12))
		a = fz_u32();
	return a;
}

/* A registration range: the arena mostly, wild sometimes. */
static void fz_reg_range(uint64_t *addr, uint64_t *len)
{
	switch (rnd(6)) {
	case 0:
		*addr = fz_wild_addr();
		*len = fz_u64();
		break;
	case 1:
		*addr = (uintptr_t)fz_arena + rnd(FZ_SLOTS * FZ_SLOT);
		*len = fz_len();
		break;
	case 2:
		if (fz_huge) {
			*addr = (uintptr_t)fz_huge + (rnd(2) ? 0 : rnd(1 << 21));
			*len = rnd(2) ? 2UL << 20 : fz_len();
			break;
		}
		/* fall through */
	default:
		*addr = (uintptr_t)fz_slot(rnd(FZ_MR_SLOTS)) + FZ_PAGE * rnd(8);
		*len = FZ_PAGE * (1 + rnd(64));
		break;
	}
}

static struct ibv_pd *fz_any_pd(void)
{
	struct ibv_pd *pd = one_in(6) ? fz_victim_pick(V_PD) : NULL;

	return pd ? pd : (rnd(4) ? W.pd : W.pd2);
}

static struct ibv_mr *fz_any_mr(void)
{
	struct ibv_mr *mr = fz_victim_pick(V_MR);

	return mr ? mr : NULL;
}

static struct ibv_cq *fz_any_cq(void)
{
	struct ibv_cq *cq = one_in(4) ? fz_victim_pick(V_CQ) : NULL;

	return cq ? cq : W.cq[rnd(FZ_NCQ)];
}

static struct ibv_qp *fz_any_qp(void)
{
	struct ibv_qp *qp = rnd(2) ? fz_victim_pick(V_QP) : NULL;

	return qp ? qp : W.q[rnd(FZ_NQP)].qp;
}

static void fz_v_reg_mr(void)
{
	uint64_t addr, len, iova;
	unsigned int acc = fz_access();

	fz_reg_range(&addr, &len);
	if (one_in(8)) {	/* implicit ODP, right or nearly */
		addr = 0;
		len = rnd(2) ? SIZE_MAX : fz_u64();
		acc |= IBV_ACCESS_ON_DEMAND;
	}
	iova = rnd(3) ? addr : (rnd(2) ? fz_u64() : addr + rnd(FZ_PAGE));
	fz_victim_add(V_MR, FZ_PTR(ibv_reg_mr_iova2(fz_any_pd(),
						     (void *)(uintptr_t)addr,
						     len, iova, acc)));
}

static void fz_v_rereg_mr(void)
{
	struct ibv_mr *mr = fz_any_mr();
	uint64_t addr, len;
	int flags = 1 + rnd(7);
	unsigned int acc;

	if (!mr)
		return fz_v_reg_mr();
	if (one_in(8))
		flags = fz_u32();
	fz_reg_range(&addr, &len);
	acc = fz_access();
	if (rnd(2))
		acc = IBV_ACCESS_LOCAL_WRITE | rnd(16) |
		      (rnd(3) ? 0 : IBV_ACCESS_ON_DEMAND);
	fz_note("rereg_mr", ibv_rereg_mr(mr, flags, fz_any_pd(),
					 (void *)(uintptr_t)addr, len,
					 acc) ? errno ?: EINVAL : 0);
}

static void fz_v_advise_mr(void)
{
	static const uint32_t adv[] = {
		IBV_ADVISE_MR_ADVICE_PREFETCH,
		IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
	};
	uint32_t n = fz_advise_sges(fz_sgbuf, 8) / sizeof(fz_sgbuf[0]);
	uint32_t a = rnd(8) ? adv[rnd(3)] : fz_u32();
	uint32_t f = rnd(2) ? IBV_ADVISE_MR_FLAG_FLUSH : 0;

	struct ibv_pd *pd = fz_any_pd();

	if (one_in(8))
		f = fz_u32();
	if (one_in(10))
		n = 0;
	if (rnd(2)) {	/* ODP MRs of the world, in range */
		uint32_t i;

		for (i = 0; i < n; i++) {
			struct fz_mr *m = &W.mr[rnd(3) ? M_ODP : M_IMPLICIT];
			uint64_t ad;
			uint32_t l;

			fz_range(m, true, &ad, &l);
			fz_sgbuf[i].addr = ad;
			fz_sgbuf[i].length = l;
			fz_sgbuf[i].lkey = m->lkey;
		}
		pd = W.pd;
	}
	fz_rc("advise_mr", ibv_advise_mr(pd, a, f, fz_sgbuf, n));
}

static void fz_v_dm(void)
{
	struct ibv_alloc_dm_attr da = {
		.length = rnd(3) ? 1 + rnd(131072) : fz_u64(),
		.log_align_req = rnd(3) ? rnd(16) : fz_u32(),
		.comp_mask = one_in(16) ? fz_u32() : 0,
	};
	struct ibv_dm *dm = fz_victim_pick(V_DM);
	unsigned int acc = fz_access();
	uint64_t off, len;

	switch (rnd(4)) {
	case 0:
		fz_victim_add(V_DM, FZ_PTR(ibv_alloc_dm(W.ctx, &da)));
		return;
	case 1:
		if (!dm)
			dm = W.dm;
		if (!dm)
			return;
		off = rnd(2) ? rnd(70000) : fz_u64();
		len = rnd(2) ? rnd(70000) : fz_u64();
		if (rnd(2)) {
			off = rnd(4096);
			len = 1 + rnd(4096);
			acc = (rnd(16) | IBV_ACCESS_ZERO_BASED) & ~(rnd(2) ?
				0 : IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_ATOMIC);
			if (acc & (IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_ATOMIC))
				acc |= IBV_ACCESS_LOCAL_WRITE;
		}
		fz_victim_add(V_MR, FZ_PTR(ibv_reg_dm_mr(fz_any_pd(), dm, off,
							 len, acc)));
		return;
	case 2:
		if (dm) {
			int fd = ibv_dm_export_dmabuf_fd(dm);

			fz_sys("dm_export_dmabuf_fd", fd);
			if (fd >= 0)
				fz_victim_add(V_FD, (void *)(intptr_t)(fd + 1));
		}
		return;
	default:
		if (dm && one_in(2)) {
			/* the world's DM is in use: free only victims */
			int i;

			for (i = 0; i < FZ_NVICTIM; i++)
				if (W.victim[i] == dm)
					fz_victim_free(i);
		}
		return;
	}
}

static void fz_v_cq(void)
{
	struct ibv_cq *cq = fz_victim_pick(V_CQ);
	struct ibv_cq_init_attr_ex cx = {
		.cqe = rnd(2) ? rnd(70000) : fz_u32(),
		.wc_flags = rnd(2) ? rnd(0x400) : fz_u64(),
		.comp_vector = rnd(3) ? 0 : fz_u32(),
		.comp_mask = rnd(3) ? 0 : rnd(8),
		.flags = rnd(3) ? 0 : rnd(4),
	};
	struct ibv_comp_channel *ch = fz_victim_pick(V_CH);

	switch (rnd(6)) {
	case 0:
		fz_victim_add(V_CQ, FZ_PTR(ibv_create_cq(W.ctx, cx.cqe, NULL,
							 rnd(2) ? ch : NULL,
							 cx.comp_vector)));
		break;
	case 1:
		fz_victim_add(V_CQEX, FZ_PTR(ibv_create_cq_ex(W.ctx, &cx)));
		break;
	case 2:
		fz_victim_add(V_CH, FZ_PTR(ibv_create_comp_channel(W.ctx)));
		break;
	case 3:
		fz_rc("resize_cq", ibv_resize_cq(cq ? cq : fz_any_cq(),
						 rnd(2) ? rnd(70000) : fz_u32()));
		break;
	default:
		fz_rc("req_notify_cq", ibv_req_notify_cq(fz_any_cq(), rnd(2)));
		break;
	}
}

static void fz_v_qp(void)
{
	static const uint32_t types[] = {
		IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RAW_PACKET,
		IBV_QPT_XRC_SEND, IBV_QPT_DRIVER,
	};
	bool ok = pct(60);
	struct ibv_qp_init_attr_ex a = {
		.qp_type = rnd(4) ? types[rnd(3)] :
			   (rnd(2) ? types[rnd(FZ_N(types))] : fz_u32()),
		.send_cq = one_in(16) ? NULL : fz_any_cq(),
		.recv_cq = fz_any_cq(),
		.srq = one_in(4) ? W.srq : NULL,
		.sq_sig_all = rnd(2),
		.pd = fz_any_pd(),
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.cap = {
			.max_send_wr = rnd(2) ? rnd(300) : fz_u32(),
			.max_recv_wr = rnd(2) ? rnd(300) : fz_u32(),
			.max_send_sge = rnd(2) ? rnd(40) : fz_u32(),
			.max_recv_sge = rnd(2) ? rnd(40) : fz_u32(),
			.max_inline_data = rnd(2) ? rnd(1024) : fz_u32(),
		},
	};

	if (ok) {	/* what a careful caller asks for */
		a.send_cq = W.cq[rnd(FZ_NCQ)];
		a.cap.max_send_wr = 1 + rnd(64);
		a.cap.max_recv_wr = 1 + rnd(64);
		a.cap.max_send_sge = 1 + rnd(8);
		a.cap.max_recv_sge = 1 + rnd(8);
		a.cap.max_inline_data = rnd(300);
	}
	if (one_in(3)) {
		a.comp_mask |= rnd(2) ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS :
			       fz_u32();
		a.send_ops_flags = rnd(2) ? rnd(0x80) : fz_u64();
		a.create_flags = one_in(4) ? fz_u32() : 0;
		fz_victim_add(V_QP, FZ_PTR(ibv_create_qp_ex(W.ctx, &a)));
		return;
	}
	fz_victim_add(V_QP, FZ_PTR(ibv_create_qp(a.pd,
						 (struct ibv_qp_init_attr *)&a)));
}

static void fz_v_modify_qp(void)
{
	struct ibv_qp *qp = fz_any_qp();
	struct ibv_qp_attr a;
	static const struct {
		enum ibv_qp_state to;
		int mask, ud_mask;
	} tr[] = {
		{ IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		  IBV_QP_ACCESS_FLAGS, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		  IBV_QP_PORT | IBV_QP_QKEY },
		{ IBV_QPS_RTR, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		  IBV_QP_MIN_RNR_TIMER, IBV_QP_STATE },
		{ IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
		  IBV_QP_STATE | IBV_QP_SQ_PSN },
		{ IBV_QPS_SQD, IBV_QP_STATE, IBV_QP_STATE },
		{ IBV_QPS_ERR, IBV_QP_STATE, IBV_QP_STATE },
		{ IBV_QPS_RESET, IBV_QP_STATE, IBV_QP_STATE },
		{ IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_CUR_STATE, IBV_QP_STATE },
		{ IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER |
		  IBV_QP_ACCESS_FLAGS, IBV_QP_STATE | IBV_QP_QKEY },
	};
	int t = rnd(FZ_N(tr)), mask;
	unsigned int i, k;

	if (!qp)
		return;
	mask = qp->qp_type == IBV_QPT_UD ? tr[t].ud_mask : tr[t].mask;
	if (one_in(3))
		mask ^= 1 << rnd(26);
	if (one_in(8))
		mask = rnd(2) ? (int)(r64() & 0x3ffffff) : (int)fz_u32();
	/* plausible values mostly: the checks behind the first ones run */
	memset(&a, 0, sizeof(a));
	a.qp_state = rnd(4) ? tr[t].to : rnd(8);
	a.cur_qp_state = rnd(8);
	a.path_mtu = rnd(7);
	a.qkey = rnd(2) ? FZ_QKEY : fz_u32();
	a.rq_psn = fz_u32();
	a.sq_psn = fz_u32();
	k = rnd(FZ_NQP);
	a.dest_qp_num = rnd(2) ? (W.q[k].qp ? W.q[k].qp->qp_num : 1) :
			fz_u32();
	a.qp_access_flags = fz_access();
	a.cap.max_send_wr = fz_u32();
	a.cap.max_inline_data = fz_u32();
	a.ah_attr.is_global = rnd(4) != 0;
	a.ah_attr.port_num = rnd(4) ? 1 : rnd(256);
	a.ah_attr.grh.sgid_index = rnd(4) ? (uint32_t)fz.gid_index : rnd(256);
	a.ah_attr.grh.dgid = fz.gid;
	if (one_in(4))
		for (i = 0; i < 16; i++)
			a.ah_attr.grh.dgid.raw[i] = r64();
	a.ah_attr.grh.hop_limit = rnd(256);
	a.ah_attr.dlid = fz_u32();
	a.ah_attr.sl = rnd(16);
	a.alt_ah_attr = a.ah_attr;
	a.pkey_index = rnd(4) ? 0 : fz_u32();
	a.alt_pkey_index = fz_u32();
	a.en_sqd_async_notify = rnd(2);
	a.max_rd_atomic = rnd(2) ? rnd(20) : fz_u32();
	a.max_dest_rd_atomic = rnd(2) ? rnd(20) : fz_u32();
	a.min_rnr_timer = rnd(32);
	a.port_num = rnd(4) ? 1 : rnd(256);
	a.timeout = rnd(32);
	a.retry_cnt = rnd(8);
	a.rnr_retry = rnd(8);
	a.alt_port_num = rnd(3);
	a.alt_timeout = rnd(32);
	a.rate_limit = one_in(8) ? fz_u32() : 0;
	if (rnd(2)) {	/* values a careful caller would give */
		a.qp_access_flags = FZ_RW;
		a.path_mtu = IBV_MTU_1024;
		a.pkey_index = 0;
		a.port_num = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.sgid_index = fz.gid_index;
		a.ah_attr.grh.dgid = fz.gid;
		a.ah_attr.grh.hop_limit = 1;
		a.max_rd_atomic = a.max_dest_rd_atomic = 1 + rnd(16);
		a.rnr_retry = rnd(7);
	}
	fz_rc("modify_qp_random", ibv_modify_qp(qp, &a, mask));
}

static void fz_v_srq(void)
{
	struct ibv_srq *srq = fz_victim_pick(V_SRQ);
	struct ibv_srq_init_attr sa = {
		.attr = {
			.max_wr = rnd(2) ? rnd(300) : fz_u32(),
			.max_sge = rnd(2) ? rnd(40) : fz_u32(),
			.srq_limit = rnd(2) ? rnd(300) : fz_u32(),
		},
	};
	struct ibv_srq_attr a;

	if (!srq || rnd(2))
		srq = W.srq;
	switch (rnd(4)) {
	case 0:
		fz_victim_add(V_SRQ, FZ_PTR(ibv_create_srq(fz_any_pd(), &sa)));
		break;
	case 1:
		if (srq)
			fz_rc("modify_srq", ibv_modify_srq(srq, &sa.attr,
							   rnd(2) ? (int)rnd(4) :
							   (int)fz_u32()));
		break;
	default:
		if (srq)
			fz_rc("query_srq", ibv_query_srq(srq, &a));
		break;
	}
}

static void fz_v_ah(void)
{
	struct ibv_ah_attr a = {
		.is_global = rnd(4) != 0,
		.port_num = rnd(4) ? 1 : rnd(256),
		.dlid = fz_u32(),
		.sl = rnd(16),
		.static_rate = rnd(20),
		.grh = {
			.dgid = fz.gid,
			.sgid_index = rnd(4) ? (uint32_t)fz.gid_index : rnd(256),
			.hop_limit = rnd(256),
			.traffic_class = rnd(256),
			.flow_label = fz_u32(),
		},
	};
	unsigned int i;

	if (one_in(3))
		for (i = 0; i < 16; i++)
			a.grh.dgid.raw[i] = r64();
	fz_victim_add(V_AH, FZ_PTR(ibv_create_ah(fz_any_pd(), &a)));
}

static void fz_v_query(void)
{
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_gid_entry ge[16];
	union ibv_gid gid;
	struct ibv_qp *qp;
	__be16 pkey;

	switch (rnd(7)) {
	case 0:
		fz_rc("query_device_ex", ibv_query_device_ex(W.ctx, NULL, &dx));
		break;
	case 1:
		fz_rc("query_port", ibv_query_port(W.ctx, rnd(4), &pa));
		break;
	case 2:
		fz_rc("query_gid", ibv_query_gid(W.ctx, rnd(3),
						 rnd(2) ? rnd(16) : fz_u32(),
						 &gid));
		break;
	case 3:
		fz_rc("query_pkey", ibv_query_pkey(W.ctx, rnd(3),
						   rnd(2) ? 0 : fz_u32(),
						   &pkey));
		break;
	case 4:
		qp = fz_any_qp();
		if (qp)
			fz_rc("query_qp", ibv_query_qp(qp, &qa,
						       (int)fz_u32(), &qi));
		break;
	case 5:
		fz_sys("query_gid_table",
		       ibv_query_gid_table(W.ctx, ge, rnd(17),
					   rnd(4) ? 0 : fz_u32()));
		break;
	default:
		fz_rc("query_gid_ex", ibv_query_gid_ex(W.ctx, rnd(3),
						       rnd(16), ge,
						       rnd(4) ? 0 : fz_u32()));
		break;
	}
}

/* ibv_import_device() on a dup of the command fd, then objects by handle. */
static void fz_v_import(void)
{
	int fd = dup(W.ctx->cmd_fd);
	struct ibv_context *ic;
	struct ibv_pd *pd;
	struct ibv_mr *mr = NULL;
	struct ibv_dm *dm = NULL;

	if (fd < 0)
		return;
	ic = FZ_PTR(ibv_import_device(fd));
	if (!ic) {
		close(fd);
		return;
	}
	pd = FZ_PTR(ibv_import_pd(ic, rnd(2) ? W.pd->handle : rnd(16)));
	if (pd)
		mr = FZ_PTR(ibv_import_mr(pd, rnd(2) && W.mr[M_PINNED].mr ?
					  W.mr[M_PINNED].mr->handle :
					  rnd(32)));
	dm = FZ_PTR(ibv_import_dm(ic, rnd(2) && W.dm ?
				  container_of(W.dm, struct verbs_dm,
					       dm)->handle : rnd(8)));
	if (mr)
		ibv_unimport_mr(mr);
	if (dm)
		ibv_unimport_dm(dm);
	if (pd)
		ibv_unimport_pd(pd);
	fz_rc("close_imported_device", ibv_close_device(ic));
}

/* Post through the provider: its checks, then the kernel's. */
static void fz_v_post(void)
{
	struct ibv_sge sg[4];
	struct ibv_send_wr swr = {}, *bs;
	struct ibv_recv_wr rwr = {}, *br;
	int i = rnd(FZ_NQP), k;
	struct fz_qp *q = &W.q[i];

	if (!q->qp)
		return;
	for (k = 0; k < 4; k++) {
		struct fz_mr *m = fz_pick_mr(false);
		uint64_t a;
		uint32_t l;

		fz_range(m, rnd(2), &a, &l);
		sg[k].addr = a;
		sg[k].length = l;
		sg[k].lkey = fz_key(m, false, rnd(2));
	}
	if (rnd(2)) {
		rwr.wr_id = r64();
		rwr.sg_list = sg;
		rwr.num_sge = rnd(5);
		fz_rc("post_recv", q->srq ? ibv_post_srq_recv(W.srq, &rwr, &br) :
			ibv_post_recv(q->qp, &rwr, &br));
		return;
	}
	swr.wr_id = r64();
	swr.sg_list = sg;
	swr.num_sge = rnd(5);
	swr.opcode = rnd(8) ? fz_send_opcode(q, true) : fz_u32();
	swr.send_flags = rnd(4);
	if (one_in(4)) {	/* inline copies from our memory: the arena */
		swr.send_flags |= IBV_SEND_INLINE;
		for (k = 0; k < 4; k++) {
			sg[k].addr = (uintptr_t)fz_slot(rnd(FZ_MR_SLOTS));
			sg[k].length = rnd(300);
		}
	}
	swr.wr.rdma.remote_addr = fz_safe(fz_wild_addr());
	swr.wr.rdma.rkey = W.mr[rnd(M_NKIND)].rkey;
	if (q->type == IBV_QPT_UD) {
		swr.wr.ud.ah = W.ah[rnd(2)];
		swr.wr.ud.remote_qpn = W.q[q->peer].qp ?
				       W.q[q->peer].qp->qp_num : 1;
		swr.wr.ud.remote_qkey = FZ_QKEY;
		if (!swr.wr.ud.ah)
			return;
	}
	fz_rc("post_send", ibv_post_send(q->qp, &swr, &bs));
}

static void fz_verbs_case(void)
{
	switch (rnd(22)) {
	case 0: case 1: case 2:
		fz_v_reg_mr();
		break;
	case 3:
		fz_v_rereg_mr();
		break;
	case 4:
		fz_v_advise_mr();
		break;
	case 5: case 6:
		fz_v_dm();
		break;
	case 7: case 8:
		fz_v_cq();
		break;
	case 9: case 10:
		fz_v_qp();
		break;
	case 11: case 12:
		fz_v_modify_qp();
		break;
	case 13:
		fz_v_srq();
		break;
	case 14:
		fz_v_ah();
		break;
	case 15:
		fz_v_query();
		break;
	case 16:
		fz_v_import();
		break;
	case 17:
		fz_victim_add(V_PD, FZ_PTR(ibv_alloc_pd(W.ctx)));
		break;
	case 18: case 19:
		fz_v_post();
		break;
	default:
		fz_victim_free(rnd(FZ_NVICTIM));
		break;
	}
	fz_poll_all();
}

#endif /* SOFTMR_FUZZ_VERBS_H */
