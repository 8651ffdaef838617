// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_isolation_qp - QP, doorbell and mapping isolation against an
 * unprivileged attacker (uid 65534); the root process is the victim (see
 * softmr_isolation.h).  Each check prints "PASS rule: ..." or
 * "FAIL rule: ..."; the rules:
 *
 *  qpn      (4) a connection is not hijacked by QP number: the victim's V1
 *               and V2 (softmr0) are connected; a QP of the attacker that got
 *               V1's number - on a second device (DEV1) whose numbers start
 *               where softmr0's did, or on softmr0 after V1 is destroyed -
 *               connected to V2 with V2's rkey (and with and without V2's
 *               rq_psn) cannot write, read or use atomics on V2's memory.
 *               When no QP gets the number: passed only if numbers are not
 *               handed out in sequence (unpredictable).
 *  qkey     (5) UD datagrams with a wrong Q_Key are not delivered; a
 *               controlled Q_Key (high bit) cannot be set or borrowed.
 *  doorbell (6) a doorbell file rings only its own context's QPs (EINVAL
 *               for another's QPN), POST_SEND with another process's QP
 *               handle fails; the victim's pending WQE stays unexecuted.
 *  mmap     (7) mmap of the uverbs fd at another context's offsets, random
 *               offsets, wrong lengths, writable read-only entries, private
 *               mappings, without a context: refused, and never the victim's
 *               rings or memory.
 *  ring     (9) garbage in the attacker's own rings (wild producer index,
 *               huge num_sge, bad opcode, another process's lkey or AH
 *               number, overflowing addresses): error completions or the
 *               error state, the victim's memory unchanged.
 *
 * The exit status is the number of failed checks.
 *
 * usage: softmr_isolation_qp [DEV0 [DEV1]]   (root; softmr0 softmr1)
 */

#include "softmr_isolation.h"

#define PG		4096
#define LBUF		(64 * 1024)
#define HALF		(LBUF / 2)
/*
 * QP number hunt: at most this many creations or seconds by default;
 * SOFTMR_ISO_HUNT=N allows N creations and no time limit (a long run that
 * reaches a far number, e.g. natively).
 */
#define HUNT_TRIES	20000
#define HUNT_SECS	120

static int hunt_tries = HUNT_TRIES;
static double hunt_secs = HUNT_SECS;

static const char *dev0 = "softmr0", *dev1 = "softmr1";

/* POST_SEND with no WRs on @cmd_fd: the uverbs send doorbell. */
static int uverbs_post_send(int cmd_fd, uint32_t handle)
{
	struct ib_uverbs_post_send_resp resp;
	struct ibv_post_send cmd = {};

	cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.response = (uintptr_t)&resp;
	cmd.qp_handle = handle;
	cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	if (write(cmd_fd, &cmd, sizeof(cmd)) != sizeof(cmd))
		return errno;
	return 0;
}

/* ---------------------------------------------------------------- victim */

enum {
	V_PAIR_NEW = 1,	/* V1 <-> V2; out: see victim_pair_new() */
	V_PAIR_INTACT,	/* out: v0 V2's memory unchanged, v1 V2's state */
	V_PAIR_KILL_V1,
	V_PAIR_FREE,
	V_UD_NEW,	/* out: U1 qpn, Q1, U2 qpn, Q2, AH number */
	V_UD_COUNT,	/* out: receive completions on U1, U2 since last */
	V_UD_FREE,
	V_DB_NEW,	/* out: VA qpn, VA handle, the post's result */
	V_DB_STATE,	/* out: VA completions, VB unchanged */
	V_DB_RING,	/* out: completion status, the data arrived */
	V_DB_FREE,
	V_MAPS_NEW,	/* out: n, then offset, length pairs */
	V_MAPS_FREE,
	V_CANARY,	/* out: addr, length, lkey, rkey */
	V_CANARY_INTACT,
};

struct vbuf {
	uint8_t *p;
	struct ibv_mr *mr;
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int gid;
	union ibv_gid gid_raw;
	struct vbuf canary;
	/* qpn */
	struct iso_qp v1, v2;
	struct vbuf v2buf, v1buf;
	/* qkey */
	struct iso_qp u1, u2;
	struct vbuf ubuf;
	struct ibv_ah *ah;
	/* doorbell: its own context, whose doorbell file is replaced */
	struct ibv_context *dctx;
	struct ibv_pd *dpd;
	struct iso_qp va, vb;
	struct vbuf dsrc, ddst;
	/* mmap: its own context */
	struct ibv_context *mctx;
	struct ibv_pd *mpd;
	struct iso_qp ma, mb;
	struct vbuf mbuf;
	struct ibv_dm *mdm;
} V;

static int vbuf_new(struct ibv_pd *pd, struct vbuf *b, int secret)
{
	b->p = iso_alloc(LBUF);
	if (!b->p)
		return -1;
	if (secret)
		iso_fill_secret(b->p, LBUF);
	b->mr = ibv_reg_mr(pd, b->p, LBUF, ISO_RW);
	return b->mr ? 0 : -1;
}

static void vbuf_free(struct vbuf *b)
{
	if (b->mr)
		ibv_dereg_mr(b->mr);
	if (b->p)
		munmap(b->p, LBUF);
	b->mr = NULL;
	b->p = NULL;
}

static int victim_init(void)
{
	V.ctx = iso_open(dev0);
	V.pd = V.ctx ? ibv_alloc_pd(V.ctx) : NULL;
	if (!V.pd)
		return -1;
	V.gid = iso_gid_v4(V.ctx, iso_localhost, &V.gid_raw);
	if (V.gid < 0) {
		errno = ENODEV;
		return -1;
	}
	return vbuf_new(V.pd, &V.canary, 1);
}

/* V1 and V2 connected, V2's MR open for remote access; V1 reads it. */
static void victim_pair_new(struct iso_msg *m)
{
	uint32_t p1 = (uint32_t)random() & 0xffffff;
	uint32_t p2 = (uint32_t)random() & 0xffffff;
	int err, st;

	if (iso_qp_new(V.ctx, V.pd, IBV_QPT_RC, &V.v1) ||
	    iso_qp_new(V.ctx, V.pd, IBV_QPT_RC, &V.v2) ||
	    vbuf_new(V.pd, &V.v2buf, 1) || vbuf_new(V.pd, &V.v1buf, 0)) {
		m->status = errno ?: ENOMEM;
		return;
	}
	/* V2 expects p2 from V1; V1 expects p1 from V2 */
	err = iso_connect(V.v1.qp, V.gid, &V.gid_raw, V.v2.qp->qp_num, p1, p2,
			  ISO_RW);
	if (!err)
		err = iso_connect(V.v2.qp, V.gid, &V.gid_raw, V.v1.qp->qp_num,
				  p2, p1, ISO_RW);
	if (err) {
		m->status = err;
		return;
	}
	st = iso_op(&V.v1, IBV_WR_RDMA_READ, (uintptr_t)V.v1buf.p, 256,
		    V.v1buf.mr->lkey, (uintptr_t)V.v2buf.p, V.v2buf.mr->rkey);
	m->v[0] = V.v1.qp->qp_num;
	m->v[1] = V.v2.qp->qp_num;
	m->v[2] = V.v2buf.mr->rkey;
	m->v[3] = (uintptr_t)V.v2buf.p;
	m->v[4] = LBUF;
	m->v[5] = p2;
	m->v[6] = st == IBV_WC_SUCCESS && iso_is_secret(V.v1buf.p, 256);
	memcpy(&m->v[7], V.gid_raw.raw, 16);
}

static void victim_pair_free(void)
{
	iso_qp_free(&V.v1);
	iso_qp_free(&V.v2);
	vbuf_free(&V.v1buf);
	vbuf_free(&V.v2buf);
}

static int ud_ready(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qkey = qkey,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static struct ibv_ah *ah_to(struct ibv_pd *pd, int sgid,
			    const union ibv_gid *dgid)
{
	struct ibv_ah_attr a = {
		.is_global = 1,
		.port_num = 1,
		.grh = { .dgid = *dgid, .sgid_index = sgid, .hop_limit = 64 },
	};

	return ibv_create_ah(pd, &a);
}

#define Q1	0x80005a5au	/* controlled: only a privileged QP may own it */
#define Q2	0x00001234u

static void victim_ud_new(struct iso_msg *m)
{
	int i;

	if (iso_qp_new(V.ctx, V.pd, IBV_QPT_UD, &V.u1) ||
	    iso_qp_new(V.ctx, V.pd, IBV_QPT_UD, &V.u2) ||
	    vbuf_new(V.pd, &V.ubuf, 0) || ud_ready(V.u1.qp, Q1) ||
	    ud_ready(V.u2.qp, Q2)) {
		m->status = errno ?: EINVAL;
		return;
	}
	for (i = 0; i < 8; i++) {
		iso_post_recv(V.u1.qp, i, (uintptr_t)V.ubuf.p + i * 2 * PG,
			      PG + 40, V.ubuf.mr->lkey);
		iso_post_recv(V.u2.qp, i, (uintptr_t)V.ubuf.p + (i * 2 + 1) * PG,
			      PG + 40, V.ubuf.mr->lkey);
	}
	V.ah = ah_to(V.pd, V.gid, &V.gid_raw);
	m->v[0] = V.u1.qp->qp_num;
	m->v[1] = Q1;
	m->v[2] = V.u2.qp->qp_num;
	m->v[3] = Q2;
	m->v[4] = V.ah ? to_sah(V.ah)->num : 0;
}

static void victim_ud_free(void)
{
	if (V.ah)
		ibv_destroy_ah(V.ah);
	V.ah = NULL;
	iso_qp_free(&V.u1);
	iso_qp_free(&V.u2);
	vbuf_free(&V.ubuf);
}

/*
 * VA's RDMA WRITE into VB waits in VA's send ring: the doorbell file of
 * this context is /dev/null now, so the provider's ring goes nowhere.
 */
static void victim_db_new(struct iso_msg *m)
{
	union ibv_gid gid;
	int gidx, nfd, err;

	V.dctx = iso_open(dev0);
	V.dpd = V.dctx ? ibv_alloc_pd(V.dctx) : NULL;
	gidx = V.dctx ? iso_gid_v4(V.dctx, iso_localhost, &gid) : -1;
	if (!V.dpd || gidx < 0 || vbuf_new(V.dpd, &V.dsrc, 0) ||
	    vbuf_new(V.dpd, &V.ddst, 1)) {
		m->status = errno ?: ENODEV;
		return;
	}
	err = iso_rc_pair(V.dctx, V.dpd, gidx, &V.va, &V.vb);
	if (err) {
		m->status = err;
		return;
	}
	if (to_sctx(V.dctx)->db_fd >= 0) {
		nfd = open("/dev/null", O_WRONLY);
		if (nfd < 0 || dup2(nfd, to_sctx(V.dctx)->db_fd) < 0) {
			m->status = errno;
			return;
		}
		close(nfd);
		m->v[3] = 1;
	}
	iso_fill(V.dsrc.p, PG, 0xdb);
	{
		struct ibv_sge s = { (uintptr_t)V.dsrc.p, PG, V.dsrc.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 0xdb, .sg_list = &s, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		wr.wr.rdma.remote_addr = (uintptr_t)V.ddst.p;
		wr.wr.rdma.rkey = V.ddst.mr->rkey;
		m->v[2] = ibv_post_send(V.va.qp, &wr, &bad);
	}
	m->v[0] = V.va.qp->qp_num;
	m->v[1] = V.va.qp->handle;
}

static void victim_db_free(void)
{
	iso_qp_free(&V.va);
	iso_qp_free(&V.vb);
	vbuf_free(&V.dsrc);
	vbuf_free(&V.ddst);
	if (V.dpd)
		ibv_dealloc_pd(V.dpd);
	if (V.dctx)
		ibv_close_device(V.dctx);
	V.dpd = NULL;
	V.dctx = NULL;
}

/*
 * A context whose rings and memory carry the marker: WQEs and completions
 * with wr_id ISO_MARKER, a DM and an MR full of it.  Answer with every
 * uverbs mapping of this process.
 */
static void victim_maps_new(struct iso_msg *m)
{
	struct iso_map maps[19];
	uint8_t tmp[2 * PG];
	union ibv_gid gid;
	struct ibv_alloc_dm_attr da = { .length = sizeof(tmp) };
	struct ibv_send_wr wr = {
		.wr_id = ISO_MARKER, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	int gidx, n, i;

	V.mctx = iso_open(dev0);
	V.mpd = V.mctx ? ibv_alloc_pd(V.mctx) : NULL;
	gidx = V.mctx ? iso_gid_v4(V.mctx, iso_localhost, &gid) : -1;
	if (!V.mpd || gidx < 0 || vbuf_new(V.mpd, &V.mbuf, 1) ||
	    iso_rc_pair(V.mctx, V.mpd, gidx, &V.ma, &V.mb)) {
		m->status = errno ?: ENODEV;
		return;
	}
	V.mdm = ibv_alloc_dm(V.mctx, &da);
	if (V.mdm) {
		iso_fill_secret(tmp, sizeof(tmp));
		ibv_memcpy_to_dm(V.mdm, 0, tmp, sizeof(tmp));
	}
	s = (struct ibv_sge){ (uintptr_t)V.mbuf.p, 64, V.mbuf.mr->lkey };
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)V.mbuf.p + PG;
	wr.wr.rdma.rkey = V.mbuf.mr->rkey;
	ibv_post_send(V.ma.qp, &wr, &bad);
	iso_wait(V.ma.cq, &wc);
	/* leave completions and receive WQEs with the marker in the rings */
	ibv_post_send(V.ma.qp, &wr, &bad);
	iso_post_recv(V.mb.qp, ISO_MARKER, (uintptr_t)V.mbuf.p, 64,
		      V.mbuf.mr->lkey);
	usleep(10000);
	n = iso_uverbs_maps(maps, 19);
	m->v[0] = n;
	for (i = 0; i < n; i++) {
		m->v[1 + 2 * i] = maps[i].offset;
		m->v[2 + 2 * i] = maps[i].end - maps[i].start;
	}
}

static void victim_maps_free(void)
{
	if (V.mdm)
		ibv_free_dm(V.mdm);
	V.mdm = NULL;
	iso_qp_free(&V.ma);
	iso_qp_free(&V.mb);
	vbuf_free(&V.mbuf);
	if (V.mpd)
		ibv_dealloc_pd(V.mpd);
	if (V.mctx)
		ibv_close_device(V.mctx);
	V.mpd = NULL;
	V.mctx = NULL;
}

static void victim_serve(int sock, struct iso_msg *m)
{
	struct ibv_wc wc;
	int st;

	(void)sock;
	if (!V.canary.mr) {
		m->status = ENODEV;
		return;
	}
	switch (m->cmd) {
	case V_PAIR_NEW:
		victim_pair_new(m);
		break;
	case V_PAIR_INTACT:
		m->v[0] = V.v2buf.p && iso_is_secret(V.v2buf.p, LBUF);
		m->v[1] = V.v2.qp ? iso_qp_state(V.v2.qp) : -1;
		break;
	case V_PAIR_KILL_V1:
		iso_qp_free(&V.v1);
		break;
	case V_PAIR_FREE:
		victim_pair_free();
		break;
	case V_UD_NEW:
		victim_ud_new(m);
		break;
	case V_UD_COUNT:
		m->v[0] = V.u1.cq ? iso_count_wc(V.u1.cq, 300) : 0;
		m->v[1] = V.u2.cq ? iso_count_wc(V.u2.cq, 0) : 0;
		break;
	case V_UD_FREE:
		victim_ud_free();
		break;
	case V_DB_NEW:
		victim_db_new(m);
		break;
	case V_DB_STATE:
		m->v[0] = V.va.cq ? iso_count_wc(V.va.cq, 200) : 0;
		m->v[1] = V.ddst.p && iso_is_secret(V.ddst.p, LBUF);
		break;
	case V_DB_RING:
		m->status = uverbs_post_send(V.dctx->cmd_fd, V.va.qp->handle);
		st = iso_wait(V.va.cq, &wc) ? ISO_NO_COMPLETION : (int)wc.status;
		m->v[0] = (uint64_t)(int64_t)st;
		m->v[1] = !memcmp(V.ddst.p, V.dsrc.p, PG);
		break;
	case V_DB_FREE:
		victim_db_free();
		break;
	case V_MAPS_NEW:
		victim_maps_new(m);
		break;
	case V_MAPS_FREE:
		victim_maps_free();
		break;
	case V_CANARY:
		m->v[0] = (uintptr_t)V.canary.p;
		m->v[1] = LBUF;
		m->v[2] = V.canary.mr->lkey;
		m->v[3] = V.canary.mr->rkey;
		break;
	case V_CANARY_INTACT:
		m->v[0] = iso_is_secret(V.canary.p, LBUF);
		break;
	default:
		m->status = EINVAL;
	}
}

/* -------------------------------------------------------------- attacker */

static struct {
	int sock;
	struct ibv_context *ctx0, *ctx1;
	struct ibv_pd *pd0, *pd1;
	int gid0, gid1;
	union ibv_gid gid1_raw;
	struct vbuf own0, own1;	/* [0, HALF) source, [HALF, LBUF) sink */
} A;

static int canary_intact(void)
{
	struct iso_msg m = {};

	return !iso_call(A.sock, V_CANARY_INTACT, &m) && m.v[0];
}

/* ------------------------------------------------------- rule 4: qpn */

struct hunt {
	int tries;
	int sequential;		/* every number was the last one plus 1 */
	uint32_t first, last;
	uint32_t distance;	/* sequential: creations still needed */
	double secs;
};

/*
 * Create RC QPs on @ctx until one gets number @want; keep that one in @out
 * and destroy the others at once.  Gives up when the numbers come in
 * sequence and @want is further away than the tries left (past it: only
 * after the allocator wraps), or when they do not come in sequence (one
 * number of 2^24 will not come up either).  Return: 0 when found.
 */
static int hunt_qpn(struct ibv_context *ctx, struct ibv_pd *pd, uint32_t want,
		    int max_tries, struct iso_qp *out, struct hunt *h)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct timespec t0, t;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	memset(h, 0, sizeof(*h));
	h->sequential = 1;
	out->qp = NULL;
	out->cq = cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq)
		return -1;
	init.send_cq = init.recv_cq = cq;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		h->secs = (t.tv_sec - t0.tv_sec) +
			  (t.tv_nsec - t0.tv_nsec) / 1e9;
		if (h->tries >= max_tries || h->secs > hunt_secs)
			break;
		qp = ibv_create_qp(pd, &init);
		if (!qp)
			break;
		if (!h->tries)
			h->first = qp->qp_num;
		else if (qp->qp_num != h->last + 1)
			h->sequential = 0;
		h->last = qp->qp_num;
		h->tries++;
		h->distance = (want - h->last) & 0xffffff;
		if (qp->qp_num == want) {
			out->qp = qp;
			return 0;
		}
		ibv_destroy_qp(qp);
		if (h->tries < 8)
			continue;
		if (h->sequential && h->distance > (uint32_t)(max_tries - h->tries))
			break;
		if (!h->sequential && h->tries >= 64)
			break;
	}
	ibv_destroy_cq(cq);
	out->cq = NULL;
	return -1;
}

/*
 * No QP got V1's number.  Numbers out of sequence: unpredictable, passed.
 * In sequence on another device: the devices' numbers do not line up (a
 * random start per device), passed, with the distance.  In sequence on the
 * same device (V1's number recycled): it comes back only after the
 * allocator wraps, about 2^24 creations - not something to do under
 * emulation, so the check is skipped either way.
 */
static void hunt_missed(const char *what, uint32_t want, struct hunt *h,
			int same_device)
{
	if (!h->sequential)
		iso_check("qpn", 1,
			  "%s: no QP got V1's number %#x in %d creations (%#x, ..., %#x): numbers are unpredictable",
			  what, want, h->tries, h->first, h->last);
	else if (!same_device)
		iso_check("qpn", h->tries >= 8,
			  "%s: V1's number %#x is %u creations away on %s (numbers there run %#x..%#x): the devices' QP numbers do not line up (the partner check itself is not exercised; SOFTMR_ISO_HUNT=N hunts further)",
			  what, want, h->distance, dev1, h->first, h->last);
	else
		iso_skip("qpn",
			 "%s: V1's old number %#x comes back only after the allocator wraps (%u more creations; numbers run %#x..%#x in sequence): not exercised",
			 what, want, h->distance, h->first, h->last);
}

enum attack { ATK_WRITE, ATK_READ, ATK_ATOMIC };

static const char *const attack_name[] = {
	[ATK_WRITE] = "RDMA WRITE", [ATK_READ] = "RDMA READ",
	[ATK_ATOMIC] = "atomic fetch-add",
};

/* From the attacker's QP @q (connected to V2): one attack. */
static int attack_v2(struct iso_qp *q, struct vbuf *own, enum attack a,
		     const struct iso_msg *pair)
{
	uint8_t *sink = own->p + HALF;

	memset(sink, 0, HALF);
	iso_fill(own->p, HALF, 0xa7);
	switch (a) {
	case ATK_WRITE:
		return iso_op(q, IBV_WR_RDMA_WRITE, (uintptr_t)own->p, PG,
			      own->mr->lkey, pair->v[3], pair->v[2]);
	case ATK_READ:
		return iso_op(q, IBV_WR_RDMA_READ, (uintptr_t)sink, PG,
			      own->mr->lkey, pair->v[3], pair->v[2]);
	case ATK_ATOMIC:
		return iso_op(q, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)sink,
			      8, own->mr->lkey, pair->v[3], pair->v[2]);
	}
	return ISO_SETUP_FAILED;
}

/* V2 is untouched and nothing of it reached the attacker. */
static void report_attack(const char *what, enum attack a, int st,
			  struct vbuf *own)
{
	struct iso_msg m = {};
	int intact, leak;

	intact = !iso_call(A.sock, V_PAIR_INTACT, &m) && m.v[0];
	leak = iso_has_secret(own->p + HALF, HALF);
	iso_check("qpn", iso_failed(st) && intact && !leak,
		  "%s, %s into V2's MR with V2's rkey: %s; V2's memory %s%s",
		  what, attack_name[a], iso_st(st),
		  intact ? "unchanged" : "MODIFIED",
		  leak ? ", its bytes LEAKED to the attacker" : "");
}

static int pair_new(struct iso_msg *m)
{
	memset(m, 0, sizeof(*m));
	if (iso_call(A.sock, V_PAIR_NEW, m) || !m->v[6]) {
		iso_check("qpn", 0, "the victim's V1 <-> V2 pair works: %s",
			  m->status ? strerror(m->status) : "V1's RDMA READ of V2 failed");
		return -1;
	}
	return 0;
}

static void pair_free(void)
{
	struct iso_msg m = {};

	iso_call(A.sock, V_PAIR_FREE, &m);
}

/* The attacker's own QP on DEV1 reaches its own QP on DEV0 (control). */
static int xdev_control(void)
{
	struct iso_qp x = {}, y = {};
	union ibv_gid g0;
	int err, st;

	ibv_query_gid(A.ctx0, 1, A.gid0, &g0);
	if (iso_qp_new(A.ctx1, A.pd1, IBV_QPT_RC, &x) ||
	    iso_qp_new(A.ctx0, A.pd0, IBV_QPT_RC, &y)) {
		iso_check("qpn", 0, "QPs: %s", strerror(errno));
		err = -1;
		goto out;
	}
	err = iso_connect(x.qp, A.gid1, &g0, y.qp->qp_num, 5, 6, ISO_RW);
	if (!err)
		err = iso_connect(y.qp, A.gid0, &A.gid1_raw, x.qp->qp_num, 6,
				  5, ISO_RW);
	if (err) {
		iso_check("qpn", 0,
			  "control: connect a %s QP to a %s QP: %s", dev1, dev0,
			  strerror(err));
		goto out;
	}
	iso_fill(A.own1.p, PG, 0xc0);
	memset(A.own0.p + HALF, 0, PG);
	st = iso_op(&x, IBV_WR_RDMA_WRITE, (uintptr_t)A.own1.p, PG,
		    A.own1.mr->lkey, (uintptr_t)A.own0.p + HALF,
		    A.own0.mr->rkey);
	err = !(st == IBV_WC_SUCCESS &&
		!memcmp(A.own1.p, A.own0.p + HALF, PG));
	iso_check("qpn", !err,
		  "control: a %s QP writes into the %s QP it is connected to (%s)",
		  dev1, dev0, iso_st(st));
out:
	iso_qp_free(&x);
	iso_qp_free(&y);
	return err;
}

/* V1's number on DEV1, connected to V2 with PSN @same_psn or another. */
static void xdev_attack(enum attack a, int same_psn)
{
	struct iso_msg m;
	union ibv_gid dgid;
	struct iso_qp q;
	struct hunt h;
	char what[160];
	uint32_t psn;
	int err, st;

	if (pair_new(&m))
		return;
	memcpy(dgid.raw, &m.v[7], 16);
	psn = same_psn ? m.v[5] : (m.v[5] ^ 0x5a5a5) & 0xffffff;
	snprintf(what, sizeof(what),
		 "%s QP with V1's number %#x, connected to V2 (%#x) with %s PSN",
		 dev1, (uint32_t)m.v[0], (uint32_t)m.v[1],
		 same_psn ? "V2's rq_psn as its" : "a wrong");
	if (hunt_qpn(A.ctx1, A.pd1, m.v[0], hunt_tries, &q, &h)) {
		hunt_missed(what, m.v[0], &h, 0);
		pair_free();
		return;
	}
	iso_info("%s got V1's number %#x after %d creations (%.1f s)", dev1,
		 (uint32_t)m.v[0], h.tries, h.secs);
	err = iso_connect(q.qp, A.gid1, &dgid, m.v[1], 0x321, psn, ISO_RW);
	if (err) {
		/* refusing the connection is a way of failing it */
		iso_check("qpn", err == EINVAL || err == EPERM ||
			  err == ENETUNREACH,
			  "%s: connecting is refused (%s)", what,
			  strerror(err));
	} else {
		st = attack_v2(&q, &A.own1, a, &m);
		report_attack(what, a, st, &A.own1);
	}
	iso_qp_free(&q);
	pair_free();
}

/* V1 destroyed; a QP of the attacker on DEV0 gets its number back. */
static void recycle_attack(void)
{
	const char *what = "V1 destroyed, an attacker's QP on the same device with V1's old number";
	struct iso_msg m, k = {};
	union ibv_gid dgid;
	struct iso_qp q;
	struct hunt h;
	char w2[200];
	int err, st, same;

	if (pair_new(&m))
		return;
	memcpy(dgid.raw, &m.v[7], 16);
	iso_call(A.sock, V_PAIR_KILL_V1, &k);
	if (hunt_qpn(A.ctx0, A.pd0, m.v[0], hunt_tries, &q, &h)) {
		hunt_missed(what, m.v[0], &h, 1);
		pair_free();
		return;
	}
	iso_info("%s got V1's old number %#x after %d creations", dev0,
		 (uint32_t)m.v[0], h.tries);
	for (same = 0; same < 2; same++) {
		snprintf(w2, sizeof(w2), "%s (%#x), same GID, %s PSN", what,
			 (uint32_t)m.v[0], same ? "V2's rq_psn as its" : "a wrong");
		iso_reset(q.qp);
		err = iso_connect(q.qp, A.gid0, &dgid, m.v[1], 0x321,
				  same ? m.v[5] : (m.v[5] ^ 0x5a5a5) & 0xffffff,
				  ISO_RW);
		if (err) {
			iso_check("qpn", 1, "%s: connecting is refused (%s)",
				  w2, strerror(err));
			continue;
		}
		st = attack_v2(&q, &A.own0, ATK_WRITE, &m);
		report_attack(w2, ATK_WRITE, st, &A.own0);
	}
	iso_qp_free(&q);
	pair_free();
}

static void test_qpn(void)
{
	printf("-- rule 4 (qpn): a connection is not taken over by QP number\n");
	if (!A.ctx1) {
		iso_check("qpn", 0, "%s is not there (run-all creates it on a dummy netdev)",
			  dev1);
	} else if (!xdev_control()) {
		xdev_attack(ATK_WRITE, 0);
		xdev_attack(ATK_WRITE, 1);
		xdev_attack(ATK_READ, 1);
		xdev_attack(ATK_ATOMIC, 1);
	}
	recycle_attack();
}

/* ------------------------------------------------------- rule 5: qkey */

static struct iso_qp ud;
static struct ibv_ah *ud_ah;

/* One datagram of 64 bytes from the attacker's UD QP. */
static int ud_send(struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct ibv_sge s = { (uintptr_t)A.own0.p, 64, A.own0.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0x0d, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	if (ibv_post_send(ud.qp, &wr, &bad))
		return ISO_POST_REFUSED;
	if (iso_wait(ud.cq, &wc))
		return ISO_NO_COMPLETION;
	return wc.status;
}

/* Receive completions on U1 and U2 since the last look. */
static void ud_count(int *u1, int *u2)
{
	struct iso_msg m = {};

	*u1 = *u2 = -1;
	if (!iso_call(A.sock, V_UD_COUNT, &m)) {
		*u1 = m.v[0];
		*u2 = m.v[1];
	}
}

static void test_qkey(void)
{
	struct ibv_qp_attr qa = { .qkey = Q1 };
	struct iso_msg m = {};
	struct softmr_ah fake;
	union ibv_gid g0;
	int st, u1, u2, err;

	printf("-- rule 5 (qkey): UD datagrams need the receiver's Q_Key\n");
	if (iso_call(A.sock, V_UD_NEW, &m)) {
		iso_check("qkey", 0, "the victim's UD QPs: %s",
			  strerror(m.status));
		return;
	}
	ibv_query_gid(A.ctx0, 1, A.gid0, &g0);
	if (iso_qp_new(A.ctx0, A.pd0, IBV_QPT_UD, &ud) ||
	    ud_ready(ud.qp, 0x4321)) {
		iso_check("qkey", 0, "attacker UD QP: %s", strerror(errno));
		goto out;
	}
	ud_ah = ah_to(A.pd0, A.gid0, &g0);
	if (!ud_ah) {
		iso_check("qkey", 0, "attacker AH: %s", strerror(errno));
		goto out;
	}
	st = ud_send(ud_ah, m.v[2], Q2);
	ud_count(&u1, &u2);
	iso_check("qkey", st == IBV_WC_SUCCESS && u2 == 1 && u1 == 0,
		  "control: a datagram with U2's Q_Key %#x is delivered (%s, %d receive completion)",
		  Q2, iso_st(st), u2);
	st = ud_send(ud_ah, m.v[2], Q2 ^ 1);
	ud_count(&u1, &u2);
	iso_check("qkey", u2 == 0 && u1 == 0,
		  "a datagram with a wrong Q_Key %#x is not delivered (%s, %d receive completions)",
		  Q2 ^ 1, iso_st(st), u2);
	st = ud_send(ud_ah, m.v[0], Q1 & 0x7fffffff);
	ud_count(&u1, &u2);
	iso_check("qkey", u1 == 0 && u2 == 0,
		  "a datagram with the controlled Q_Key minus its high bit is not delivered (%s, %d)",
		  iso_st(st), u1);
	st = ud_send(ud_ah, m.v[0], Q1);
	ud_count(&u1, &u2);
	iso_check("qkey", u1 == 0 && u2 == 0,
		  "a WR naming the controlled Q_Key %#x sends with the QP's own Q_Key: not delivered (%s, %d)",
		  Q1, iso_st(st), u1);
	err = ibv_modify_qp(ud.qp, &qa, IBV_QP_QKEY);
	iso_check("qkey", err == EPERM,
		  "an unprivileged QP cannot take the controlled Q_Key %#x (%s)",
		  Q1, err ? strerror(err) : "it could");

	/* rule 9: the victim's AH number in the attacker's WQE */
	memset(&fake, 0, sizeof(fake));
	fake.ibv_ah.context = A.ctx0;
	fake.ibv_ah.pd = A.pd0;
	fake.num = m.v[4];
	st = ud_send(&fake.ibv_ah, m.v[2], Q2);
	ud_count(&u1, &u2);
	iso_check("ring", iso_failed(st) && u2 == 0,
		  "a UD WQE naming another process's AH number %u fails (%s) and delivers nothing",
		  (uint32_t)m.v[4], iso_st(st));
out:
	if (ud_ah)
		ibv_destroy_ah(ud_ah);
	iso_qp_free(&ud);
	iso_call(A.sock, V_UD_FREE, &m);
}

/* --------------------------------------------------- rule 6: doorbell */

static void test_doorbell(void)
{
	struct iso_msg m = {}, s = {};
	struct ibv_context *fresh;
	struct iso_qp a, b;
	uint32_t qpn, q2[2];
	int db, err;
	ssize_t n;

	printf("-- rule 6 (doorbell): only the owner rings its QPs\n");
	if (iso_call(A.sock, V_DB_NEW, &m) || m.v[2]) {
		iso_check("doorbell", 0, "the victim's pending WQE: %s",
			  strerror(m.status ?: (int)m.v[2]));
		goto out;
	}
	iso_call(A.sock, V_DB_STATE, &s);
	iso_check("doorbell", s.v[0] == 0 && s.v[1],
		  "setup: the victim's RDMA WRITE waits in its send ring (%d completions)",
		  (int)s.v[0]);
	db = to_sctx(A.ctx0)->db_fd;
	qpn = m.v[0];
	if (db < 0) {
		iso_skip("doorbell", "no doorbell file (doorbell_file=0)");
	} else {
		errno = 0;
		n = write(db, &qpn, 4);
		iso_check("doorbell", n < 0 && errno == EINVAL,
			  "the attacker's doorbell file refuses the victim's QPN %#x (%s)",
			  qpn, n < 0 ? strerror(errno) : "accepted");
		q2[0] = q2[1] = qpn;
		errno = 0;
		n = write(db, q2, 8);
		iso_check("doorbell", n < 0 && errno == EINVAL,
			  "an 8-byte doorbell write is refused (%s)",
			  n < 0 ? strerror(errno) : "accepted");
		qpn = 0xfffff0;
		errno = 0;
		n = write(db, &qpn, 4);
		iso_check("doorbell", n < 0 && errno == EINVAL,
			  "a QPN nobody has is refused (%s)",
			  n < 0 ? strerror(errno) : "accepted");
		err = iso_rc_pair(A.ctx0, A.pd0, A.gid0, &a, &b);
		if (!err) {
			qpn = a.qp->qp_num;
			n = write(db, &qpn, 4);
			iso_check("doorbell", n == 4,
				  "control: the attacker's doorbell rings its own QP (%s)",
				  n == 4 ? "ok" : strerror(errno));
		}
		iso_qp_free(&a);
		iso_qp_free(&b);
	}
	/* a context without objects: no handle of it is a QP */
	fresh = iso_open(dev0);
	err = fresh ? uverbs_post_send(fresh->cmd_fd, m.v[1]) : ENODEV;
	iso_check("doorbell", err == EINVAL || err == ENOENT,
		  "POST_SEND with the victim's QP handle %u on the attacker's own uverbs file fails (%s)",
		  (uint32_t)m.v[1], err ? strerror(err) : "it ran");
	if (fresh)
		ibv_close_device(fresh);
	iso_call(A.sock, V_DB_STATE, &s);
	iso_check("doorbell", s.v[0] == 0 && s.v[1],
		  "the victim's WQE did not run (%d completions, its memory %s)",
		  (int)s.v[0], s.v[1] ? "unchanged" : "MODIFIED");
	iso_call(A.sock, V_DB_RING, &s);
	iso_check("doorbell", (int64_t)s.v[0] == IBV_WC_SUCCESS && s.v[1],
		  "control: the owner's own POST_SEND runs that WQE (%s)",
		  iso_st((int)(int64_t)s.v[0]));
out:
	iso_call(A.sock, V_DB_FREE, &m);
}

/* ------------------------------------------------------- rule 7: mmap */

/* Map @len at @off of @fd read-only; 0 or errno; *leak when it shows the
 * victim's marker.
 */
static int try_map(int fd, uint64_t off, size_t len, int prot, int flags,
		   int *leak)
{
	void *p = mmap(NULL, len, prot, flags, fd, off);

	*leak = 0;
	if (p == MAP_FAILED)
		return errno;
	*leak = iso_has_secret(p, len);
	munmap(p, len);
	return 0;
}

static const char *err_str(int e)
{
	return e ? strerror(e) : "mapped";
}

/* The offset of this process's uverbs mapping at @addr, or -1. */
static int64_t map_offset(const void *addr)
{
	struct iso_map maps[32];
	int i, n = iso_uverbs_maps(maps, 32);

	for (i = 0; i < n; i++)
		if (maps[i].start == (uintptr_t)addr)
			return maps[i].offset;
	return -1;
}

static void test_mmap(void)
{
	struct iso_msg m = {};
	struct ibv_context *c;
	struct ibv_pd *pd = NULL;
	struct ibv_dm *dm = NULL;
	struct ibv_cq *big = NULL;
	struct ibv_alloc_dm_attr da = { .length = 2 * PG };
	struct iso_qp a = {}, b = {};
	struct softmr_context *sc;
	char path[128];
	int i, n, e, leak, refused = 0, mapped = 0, leaked = 0, bad = 0;
	int fd;
	int64_t ring_off = -1;
	size_t ring_len = 0;

	printf("-- rule 7 (mmap): only the context's own entries map\n");
	/* the attacker's context, with objects like the victim's */
	c = iso_open(dev0);
	pd = c ? ibv_alloc_pd(c) : NULL;
	big = c ? ibv_create_cq(c, 1000, NULL, NULL, 0) : NULL;
	if (!pd || !big || iso_rc_pair(c, pd, A.gid0, &a, &b)) {
		iso_check("mmap", 0, "attacker context: %s", strerror(errno));
		goto out;
	}
	dm = ibv_alloc_dm(c, &da);
	sc = to_sctx(c);
	ring_off = map_offset(to_scq(big)->ring);
	ring_len = to_scq(big)->map_size;
	if (iso_call(A.sock, V_MAPS_NEW, &m)) {
		iso_check("mmap", 0, "the victim's mappings: %s",
			  strerror(m.status));
		goto out;
	}
	n = m.v[0];
	for (i = 0; i < n; i++) {
		e = try_map(c->cmd_fd, m.v[1 + 2 * i], m.v[2 + 2 * i],
			    PROT_READ, MAP_SHARED, &leak);
		if (e == EINVAL)
			refused++;
		else if (!e)
			mapped++;
		else
			bad++;
		leaked += leak;
		if (leak)
			iso_info("offset %#" PRIx64 " length %" PRIu64
				 " showed the victim's bytes",
				 m.v[1 + 2 * i], m.v[2 + 2 * i]);
	}
	iso_check("mmap", n > 0 && !leaked && !bad,
		  "the victim's %d mappings at their offsets and lengths on the attacker's uverbs fd: %d refused (EINVAL), %d mapped the attacker's own objects there, %d showed the victim's bytes",
		  n, refused, mapped, leaked);
	iso_call(A.sock, V_MAPS_FREE, &m);

	/* random offsets far from any entry */
	for (i = 0, bad = 0; i < 32; i++) {
		uint64_t off = ((uint64_t)(random() | 0x10000) & 0xffffffff) * PG;

		e = try_map(c->cmd_fd, off, PG, PROT_READ, MAP_SHARED, &leak);
		bad += e != EINVAL;
	}
	iso_check("mmap", !bad,
		  "32 random offsets: all refused with EINVAL (%d not)", bad);

	/* the attacker's own entries, wrongly */
	if (ring_off < 0 || ring_len < 2 * PG) {
		iso_check("mmap", 0, "the own CQ ring's mapping not found");
	} else {
		e = try_map(c->cmd_fd, ring_off, ring_len, PROT_READ,
			    MAP_SHARED, &leak);
		iso_check("mmap", !e,
			  "control: the own CQ ring maps again at its offset (%s)",
			  err_str(e));
		e = try_map(c->cmd_fd, ring_off, ring_len + PG, PROT_READ,
			    MAP_SHARED, &leak);
		iso_check("mmap", e == EINVAL,
			  "an own ring mapped one page too long is refused (%s)",
			  err_str(e));
		e = try_map(c->cmd_fd, ring_off, ring_len - PG, PROT_READ,
			    MAP_SHARED, &leak);
		iso_check("mmap", e == EINVAL,
			  "an own ring mapped one page too short is refused (%s)",
			  err_str(e));
		e = try_map(c->cmd_fd, ring_off + PG, ring_len - PG,
			    PROT_READ, MAP_SHARED, &leak);
		iso_check("mmap", e == EINVAL,
			  "an own ring mapped from its second page is refused (%s)",
			  err_str(e));
		e = try_map(c->cmd_fd, ring_off, ring_len,
			    PROT_READ | PROT_WRITE, MAP_PRIVATE, &leak);
		iso_check("mmap", e == EINVAL,
			  "a private (copy-on-write) mapping of an own ring is refused (%s)",
			  err_str(e));
	}
	e = try_map(c->cmd_fd, sc->dev_info.status_mmap_offset,
		    sc->dev_info.status_mmap_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED, &leak);
	iso_check("mmap", e == EPERM,
		  "the read-only status page cannot be mapped writable (%s)",
		  err_str(e));
	e = sc->status ? mprotect((void *)sc->status, sc->status_size,
				  PROT_READ | PROT_WRITE) : 0;
	iso_check("mmap", sc->status && e && errno == EACCES,
		  "the status page mapping cannot be made writable by mprotect (%s)",
		  e ? strerror(errno) : "it could");
	e = try_map(c->cmd_fd, sc->dev_info.status_mmap_offset + 1,
		    sc->dev_info.status_mmap_size, PROT_READ, MAP_SHARED,
		    &leak);
	iso_check("mmap", e == EINVAL, "an unaligned offset is refused (%s)",
		  err_str(e));

	/* a uverbs file without a context maps nothing */
	snprintf(path, sizeof(path), "/dev/infiniband/%s",
		 c->device->dev_name);
	fd = open(path, O_RDWR);
	e = fd >= 0 ? try_map(fd, sc->dev_info.status_mmap_offset,
			      sc->dev_info.status_mmap_size, PROT_READ,
			      MAP_SHARED, &leak) : errno;
	iso_check("mmap", fd >= 0 && e != 0,
		  "a uverbs file with no context maps nothing (%s)",
		  err_str(e));
	if (fd >= 0)
		close(fd);

	/* a destroyed object's entry is gone */
	ibv_destroy_cq(big);
	big = NULL;
	if (ring_off >= 0) {
		e = try_map(c->cmd_fd, ring_off, ring_len, PROT_READ,
			    MAP_SHARED, &leak);
		iso_check("mmap", e == EINVAL,
			  "a destroyed CQ's ring offset no longer maps (%s)",
			  err_str(e));
	}
out:
	if (dm)
		ibv_free_dm(dm);
	if (big)
		ibv_destroy_cq(big);
	iso_qp_free(&a);
	iso_qp_free(&b);
	if (pd)
		ibv_dealloc_pd(pd);
	if (c)
		ibv_close_device(c);
}

/* ------------------------------------------------------- rule 9: ring */

/* The next send WQE slot of @qp, zeroed. */
static struct softmr_send_wqe *raw_wqe(struct ibv_qp *qp)
{
	struct softmr_qp *q = to_sqp(qp);
	struct softmr_send_wqe *w = (void *)((uint8_t *)q->sq.hdr +
					     SOFTMR_WQ_HDR_SIZE +
					     (size_t)(q->sq.prod & (q->sq.num - 1)) *
					     q->sq.stride);

	memset(w, 0, q->sq.stride);
	return w;
}

/* Publish the WQE and ring the send doorbell. */
static void raw_post(struct ibv_context *ctx, struct ibv_qp *qp)
{
	struct softmr_qp *q = to_sqp(qp);
	uint32_t qpn = qp->qp_num;
	int db = to_sctx(ctx)->db_fd;

	q->sq.prod++;
	__atomic_store_n(&q->sq.hdr->producer, q->sq.prod, __ATOMIC_RELEASE);
	if (db < 0 || write(db, &qpn, 4) != 4)
		uverbs_post_send(ctx->cmd_fd, qp->handle);
}

static struct softmr_recv_wqe *raw_recv_wqe(struct ibv_qp *qp)
{
	struct softmr_qp *q = to_sqp(qp);
	struct softmr_recv_wqe *w = (void *)((uint8_t *)q->rq.hdr +
					     SOFTMR_WQ_HDR_SIZE +
					     (size_t)(q->rq.prod & (q->rq.num - 1)) *
					     q->rq.stride);

	memset(w, 0, q->rq.stride);
	return w;
}

static void raw_recv_post(struct ibv_qp *qp)
{
	struct softmr_qp *q = to_sqp(qp);

	q->rq.prod++;
	__atomic_store_n(&q->rq.hdr->producer, q->rq.prod, __ATOMIC_RELEASE);
}

enum garbage {
	G_HUGE_SGE, G_HUGE_INLINE, G_OPCODE, G_FOREIGN_LKEY, G_ADDR_WRAP,
	G_RKEY_WRAP, G_PRODUCER_AHEAD, G_PRODUCER_BEHIND, G_RECV_HUGE_SGE,
	G_RECV_FOREIGN_LKEY, G_REG_MR, G_LOCAL_INV, G_SEND_INV, G_NUM
};

static const char *const garbage_name[] = {
	[G_HUGE_SGE] = "a send WQE with num_sge 0xffffffff",
	[G_HUGE_INLINE] = "an inline send WQE claiming 0xffffffff bytes",
	[G_OPCODE] = "a send WQE with opcode 0x77",
	[G_FOREIGN_LKEY] = "a SEND gathering from another process's memory with its lkey",
	[G_ADDR_WRAP] = "an SGE whose address + length wraps around",
	[G_RKEY_WRAP] = "an RDMA WRITE whose remote address + length wraps around",
	[G_PRODUCER_AHEAD] = "a send producer index 0x10000 ahead of the consumer",
	[G_PRODUCER_BEHIND] = "a send producer index behind the consumer",
	[G_RECV_HUGE_SGE] = "a receive WQE with num_sge 0xffffffff",
	[G_RECV_FOREIGN_LKEY] = "a receive WQE scattering into another process's memory with its lkey",
	[G_REG_MR] = "a REG_MR WQE (kernel QPs only) re-registering another process's MR",
	[G_LOCAL_INV] = "a LOCAL_INV WQE naming another process's key",
	[G_SEND_INV] = "a SEND_WITH_INV invalidating another process's key",
};

static void garbage_case(enum garbage g, const struct iso_msg *cn)
{
	struct softmr_send_wqe *w;
	struct softmr_recv_wqe *r;
	struct iso_qp a, b;
	struct ibv_wc wc;
	uint8_t *sink = A.own0.p + HALF;
	int st = ISO_NO_COMPLETION, state, intact, leak, ok, err;

	err = iso_rc_pair(A.ctx0, A.pd0, A.gid0, &a, &b);
	if (err) {
		iso_check("ring", 0, "RC pair: %s", strerror(err));
		goto out;
	}
	memset(sink, 0, HALF);
	iso_post_recv(b.qp, 1, (uintptr_t)sink, HALF, A.own0.mr->lkey);
	w = raw_wqe(a.qp);
	w->wr_id = 0x9a;
	w->opcode = IBV_WR_SEND;
	w->flags = SOFTMR_SEND_SIGNALED;
	w->num_sge = 1;
	w->sge[0].addr = (uintptr_t)A.own0.p;
	w->sge[0].length = 256;
	w->sge[0].lkey = A.own0.mr->lkey;
	switch (g) {
	case G_HUGE_SGE:
		w->num_sge = 0xffffffff;
		break;
	case G_HUGE_INLINE:
		w->flags |= SOFTMR_SEND_INLINE;
		w->num_sge = 0xffffffff;
		break;
	case G_OPCODE:
		w->opcode = 0x77;
		break;
	case G_FOREIGN_LKEY:
		w->sge[0].addr = cn->v[0];
		w->sge[0].lkey = cn->v[2];
		break;
	case G_ADDR_WRAP:
		w->sge[0].addr = UINT64_MAX - 16;
		w->sge[0].length = PG;
		break;
	case G_REG_MR:
		w->opcode = 0x20;	/* IB_WR_REG_MR */
		w->num_sge = 0;
		w->wr.reg.mr_index = (uint32_t)cn->v[2] >> 8;
		w->wr.reg.key = (uint32_t)cn->v[2];
		w->wr.reg.access = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE;
		w->wr.reg.iova = cn->v[0];
		w->wr.reg.length = PG;
		break;
	case G_LOCAL_INV:
		w->opcode = IBV_WR_LOCAL_INV;
		w->num_sge = 0;
		w->imm_data = (uint32_t)cn->v[2];
		break;
	case G_SEND_INV:
		w->opcode = IBV_WR_SEND_WITH_INV;
		w->imm_data = (uint32_t)cn->v[2];
		break;
	case G_RKEY_WRAP:
		w->opcode = IBV_WR_RDMA_WRITE;
		w->wr.rdma.remote_addr = UINT64_MAX - 16;
		w->wr.rdma.rkey = A.own0.mr->rkey;
		break;
	case G_RECV_HUGE_SGE:
	case G_RECV_FOREIGN_LKEY:
		/* b's receive ring: reset it and put the garbage first */
		iso_qp_free(&b);
		if (iso_qp_new(A.ctx0, A.pd0, IBV_QPT_RC, &b))
			goto out;
		r = raw_recv_wqe(b.qp);
		r->wr_id = 0x9b;
		r->num_sge = 1;
		r->sge[0].addr = cn->v[0];
		r->sge[0].length = PG;
		r->sge[0].lkey = cn->v[2];
		if (g == G_RECV_HUGE_SGE)
			r->num_sge = 0xffffffff;
		raw_recv_post(b.qp);
		{
			union ibv_gid gid;

			ibv_query_gid(A.ctx0, 1, A.gid0, &gid);
			iso_reset(a.qp);
			iso_connect(a.qp, A.gid0, &gid, b.qp->qp_num, 100,
				    200, ISO_RW);
			iso_connect(b.qp, A.gid0, &gid, a.qp->qp_num, 200,
				    100, ISO_RW);
		}
		break;
	default:
		break;
	}
	if (g == G_PRODUCER_AHEAD || g == G_PRODUCER_BEHIND) {
		struct softmr_qp *q = to_sqp(a.qp);
		uint32_t cons = q->sq.hdr->consumer;
		uint32_t qpn = a.qp->qp_num;

		__atomic_store_n(&q->sq.hdr->producer,
				 g == G_PRODUCER_AHEAD ? cons + 0x10000 :
				 cons - 1, __ATOMIC_RELEASE);
		if (to_sctx(A.ctx0)->db_fd < 0 ||
		    write(to_sctx(A.ctx0)->db_fd, &qpn, 4) != 4)
			uverbs_post_send(A.ctx0->cmd_fd, a.qp->handle);
		usleep(20000);
		state = iso_qp_state(a.qp);
		st = iso_count_wc(a.cq, 50);
		intact = canary_intact();
		iso_check("ring", state == IBV_QPS_ERR && intact,
			  "%s puts the QP in the error state (state %d, %d completions); the victim's memory %s",
			  garbage_name[g], state, st,
			  intact ? "unchanged" : "MODIFIED");
		goto out;
	}
	raw_post(A.ctx0, a.qp);
	if (!iso_wait(a.cq, &wc))
		st = (int)wc.status;
	usleep(10000);
	state = iso_qp_state(a.qp);
	intact = canary_intact();
	leak = iso_has_secret(sink, HALF);
	ok = iso_failed(st) && state == IBV_QPS_ERR && intact && !leak;
	iso_check("ring", ok,
		  "%s: %s, requester QP in %s; the victim's memory %s%s",
		  garbage_name[g], iso_st(st),
		  state == IBV_QPS_ERR ? "ERR" : "another state",
		  intact ? "unchanged" : "MODIFIED",
		  leak ? ", its bytes LEAKED" : "");
out:
	iso_qp_free(&a);
	iso_qp_free(&b);
}

static void test_rings(void)
{
	struct iso_msg cn = {};
	int g;

	printf("-- rule 9 (ring): garbage in the attacker's own rings\n");
	if (iso_call(A.sock, V_CANARY, &cn)) {
		iso_check("ring", 0, "victim canary");
		return;
	}
	for (g = 0; g < G_NUM; g++)
		garbage_case(g, &cn);
}

static void attacker(int sock)
{
	A.sock = sock;
	A.ctx0 = iso_open(dev0);
	A.ctx1 = iso_open(dev1);
	A.pd0 = A.ctx0 ? ibv_alloc_pd(A.ctx0) : NULL;
	A.pd1 = A.ctx1 ? ibv_alloc_pd(A.ctx1) : NULL;
	A.gid0 = A.ctx0 ? iso_gid_v4(A.ctx0, iso_localhost, NULL) : -1;
	A.gid1 = A.ctx1 ? iso_gid_v4(A.ctx1, NULL, &A.gid1_raw) : -1;
	if (!A.pd0 || A.gid0 < 0 || vbuf_new(A.pd0, &A.own0, 0)) {
		iso_check("setup", 0, "attacker context on %s: %s", dev0,
			  strerror(errno));
		return;
	}
	if (A.ctx1 && (!A.pd1 || A.gid1 < 0 || vbuf_new(A.pd1, &A.own1, 0))) {
		iso_check("setup", 0, "attacker context on %s (IPv4 GID %d): %s",
			  dev1, A.gid1, strerror(errno));
		ibv_close_device(A.ctx1);
		A.ctx1 = NULL;
	}
	test_qpn();
	test_qkey();
	test_doorbell();
	test_mmap();
	test_rings();
}

int main(int argc, char **argv)
{
	if (argc > 1)
		dev0 = argv[1];
	/* the attacker's random offsets differ from run to run */
	if (argc > 2)
		dev1 = argv[2];
	iso_init();
	srandom(time(NULL) ^ getpid());
	if (getenv("SOFTMR_ISO_HUNT")) {
		hunt_tries = atoi(getenv("SOFTMR_ISO_HUNT"));
		hunt_secs = 1e9;
	}
	if (geteuid() != 0) {
		iso_check("setup", 0, "must start as root (sets up, then drops to 65534)");
		return iso_finish("softmr_isolation_qp");
	}
	iso_unlimit_memlock();
	iso_run(attacker, victim_serve, victim_init, -1);
	victim_ud_free();
	victim_db_free();
	victim_maps_free();
	victim_pair_free();
	vbuf_free(&V.canary);
	if (V.pd)
		ibv_dealloc_pd(V.pd);
	if (V.ctx)
		ibv_close_device(V.ctx);
	return iso_finish("softmr_isolation_qp");
}
