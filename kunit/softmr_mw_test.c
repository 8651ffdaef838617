// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of memory windows over real user memory (kunit_vm_mmap()):
 * BIND_MW of type 1 and type 2 windows on a pinned MR that itself grants
 * no remote access, RDMA WRITE and READ through the window's rkey (and
 * only inside the window, only with its rights), key rolling on rebind,
 * a type 2 window reached only through the QP it is bound to, local and
 * remote invalidation, dereg and rereg refused while a window is bound,
 * dealloc unbinding; and each bind error the IB spec names.
 */

#include <kunit/test.h>
#include <linux/mman.h>
#include <rdma/ib_verbs.h>

#include "softmr_kunit.h"

#define MW_LEN		(2 * PAGE_SIZE)
#define MW_OFF		100
#define MW_WIN		1000

struct mw_env {
	struct softmr_eng_env *e;
	unsigned long uaddr;
	struct softmr_mr *mr;
};

static void mw_dereg(void *mr)
{
	softmr_dereg_mr(&((struct softmr_mr *)mr)->ibmr, NULL);
}

static struct softmr_mr *mw_reg(struct kunit *test, struct ib_pd *pd,
				unsigned long uaddr, int access)
{
	struct ib_mr *ibmr = softmr_reg_user_mr(pd, uaddr, MW_LEN, uaddr,
						access, NULL);

	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(ibmr), "reg %d",
			       PTR_ERR_OR_ZERO(ibmr));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, mw_dereg,
							   to_smr(ibmr)));
	return to_smr(ibmr);
}

/* The engine env, user memory and a pinned MR: local write, MW bind. */
static struct mw_env *mw_env(struct kunit *test, const char *name)
{
	struct mw_env *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, m);
	m->e = softmr_eng_env(test, name, 7);
	m->uaddr = kunit_vm_mmap(test, NULL, 0, MW_LEN, PROT_READ | PROT_WRITE,
				 MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(m->uaddr));
	KUNIT_ASSERT_EQ(test, clear_user((void __user *)m->uaddr, MW_LEN), 0);
	m->mr = mw_reg(test, m->e->pd, m->uaddr,
		       IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);
	return m;
}

static void mw_dealloc(void *mw)
{
	softmr_dealloc_mw(&((struct softmr_mw *)mw)->ibmw);
}

static struct softmr_mw *mw_alloc(struct kunit *test, struct softmr_eng_env *e,
				  struct ib_pd *pd, enum ib_mw_type type)
{
	struct softmr_mw *mw = kunit_kzalloc(test, sizeof(*mw), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, mw);
	mw->ibmw.device = e->ibdev;
	mw->ibmw.pd = pd;
	mw->ibmw.type = type;
	KUNIT_ASSERT_EQ(test, softmr_alloc_mw(&mw->ibmw, NULL), 0);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, mw_dealloc,
							   mw));
	/* unbound: its key reaches nothing */
	KUNIT_EXPECT_NULL(test, softmr_rkey_get(e->sdev, mw->ibmw.rkey));
	return mw;
}

/* Bind @mw on @qp (as the engine does for a BIND_MW WQE); new key. */
static enum ib_wc_status mw_bind(struct ib_qp *qp, struct softmr_mw *mw,
				 u32 key, struct softmr_mr *mr, u64 addr,
				 u64 len, int access)
{
	struct softmr_send_wqe wqe = {
		.opcode = IB_WR_BIND_MW,
		.wr.bind = {
			.addr = addr, .length = len, .mw_rkey = mw->ibmw.rkey,
			.rkey = key, .mr_lkey = mr ? mr->ibmr.lkey : 0,
			.access = access,
		},
	};
	enum ib_wc_status st = softmr_mw_bind(to_sqp(qp), &wqe);

	if (st == IB_WC_SUCCESS)
		mw->ibmw.rkey = key;
	return st;
}

static int mw_write(struct kunit *test, struct softmr_eng_env *e,
		    struct ib_qp *qp, u64 raddr, u32 len, u32 rkey,
		    struct ib_wc *wc)
{
	int err = softmr_eng_send(e, qp, IB_WR_RDMA_WRITE, e->adma, len, raddr,
				  rkey, 1);

	if (err)
		return err;
	return softmr_eng_poll_qp(test, e, qp, wc) ? 0 : -ETIMEDOUT;
}

#define MW_RW (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

static void softmr_test_mw_type2_access(struct kunit *test)
{
	struct mw_env *m = mw_env(test, "softmr_kt95");
	struct softmr_eng_env *e = m->e;
	struct softmr_mw *mw = mw_alloc(test, e, e->pd, IB_MW_TYPE_2);
	u64 win = m->uaddr + MW_OFF;
	u8 *got = kunit_kzalloc(test, MW_LEN, GFP_KERNEL);
	struct ib_wc wc;
	u32 key = ib_inc_rkey(mw->ibmw.rkey);

	KUNIT_ASSERT_NOT_NULL(test, got);
	KUNIT_ASSERT_EQ(test, mw_bind(e->b, mw, key, m->mr, win, MW_WIN, MW_RW),
			IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, m->mr->mw_bound, 1);

	/* WRITE and READ through the window, into the MR's user pages */
	softmr_eng_fill(e->abuf, MW_WIN, 3);
	KUNIT_ASSERT_EQ(test, mw_write(test, e, e->a, win, MW_WIN, key, &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_ASSERT_EQ(test, copy_from_user(got, (void __user *)m->uaddr,
					     MW_LEN), 0);
	KUNIT_EXPECT_EQ(test, memcmp(got + MW_OFF, e->abuf, MW_WIN), 0);
	KUNIT_EXPECT_EQ(test, got[MW_OFF - 1], 0);
	KUNIT_EXPECT_EQ(test, got[MW_OFF + MW_WIN], 0);
	memset(e->bbuf, 0, MW_WIN);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_READ, e->bdma,
					      500, win + 400, key, 2), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, e->abuf + 400, 500), 0);

	/* the MR can go neither away nor change while the window is bound */
	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&m->mr->ibmr, NULL), -EBUSY);
	KUNIT_EXPECT_EQ(test, PTR_ERR(softmr_rereg_user_mr(&m->mr->ibmr,
							   IB_MR_REREG_ACCESS,
							   0, 0, 0,
							   IB_ACCESS_LOCAL_WRITE,
							   NULL, NULL)),
			-EBUSY);
	KUNIT_EXPECT_EQ(test, READ_ONCE(m->mr->access),
			IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);
	/* a type 2 window binds again only after invalidation */
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, mw, ib_inc_rkey(key), m->mr, win,
				      8, MW_RW), IB_WC_MW_BIND_ERR);

	/* only the QP it is bound to invalidates it, with its key */
	KUNIT_EXPECT_FALSE(test, softmr_key_invalidate(to_sqp(e->a), key,
						       false));
	KUNIT_EXPECT_FALSE(test, softmr_key_invalidate(to_sqp(e->b), key ^ 1,
						       true));
	KUNIT_EXPECT_TRUE(test, softmr_key_invalidate(to_sqp(e->b), key, true));
	KUNIT_EXPECT_EQ(test, m->mr->mw_bound, 0);
	KUNIT_EXPECT_NULL(test, softmr_rkey_get(e->sdev, key));

	/* the old key reaches nothing: the pages stay as they were */
	softmr_eng_fill(e->abuf, MW_WIN, 8);
	KUNIT_ASSERT_EQ(test, mw_write(test, e, e->a, win, 64, key, &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_ACCESS_ERR);
	KUNIT_ASSERT_EQ(test, copy_from_user(e->bbuf, (void __user *)win, 64),
			0);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, got + MW_OFF, 64), 0);
}

/* Outside the window, beyond its rights, through another QP: no access. */
static void softmr_test_mw_bounds_rights(struct kunit *test)
{
	struct mw_env *m = mw_env(test, "softmr_kt96");
	struct softmr_eng_env *e = m->e;
	struct softmr_mw *ro = mw_alloc(test, e, e->pd, IB_MW_TYPE_1);
	struct softmr_mw *mw = mw_alloc(test, e, e->pd, IB_MW_TYPE_2);
	u64 win = m->uaddr + MW_OFF;
	struct ib_qp *c, *d;
	struct ib_wc wc;
	u8 zero[64] = {};
	u32 key = ib_inc_rkey(mw->ibmw.rkey);
	u32 rokey = ib_inc_rkey(ro->ibmw.rkey);
	struct softmr_mr *got;
	u32 token = 0;

	KUNIT_ASSERT_EQ(test, mw_bind(e->b, mw, key, m->mr, win, MW_WIN,
				      IB_ACCESS_REMOTE_WRITE), IB_WC_SUCCESS);
	KUNIT_ASSERT_EQ(test, mw_bind(e->a, ro, rokey, m->mr, win, MW_WIN,
				      IB_ACCESS_REMOTE_READ), IB_WC_SUCCESS);
	/* windows are rkeys only: an lkey lookup finds nothing */
	KUNIT_EXPECT_NULL(test, softmr_mr_get(e->sdev, key));
	got = softmr_rkey_get(e->sdev, key);
	KUNIT_EXPECT_NOT_NULL(test, got);
	if (got) {
		/* type 2: through the QP it is bound to, with its rights */
		token = softmr_mw_token(got, key, to_sqp(e->b), win, 8,
					IB_ACCESS_REMOTE_WRITE);
		KUNIT_EXPECT_NE(test, token, 0);
		KUNIT_EXPECT_EQ(test, softmr_mw_token(got, key, to_sqp(e->a),
						      win, 8,
						      IB_ACCESS_REMOTE_WRITE),
				0);
		KUNIT_EXPECT_EQ(test, softmr_mw_token(got, key, to_sqp(e->b),
						      win, 8,
						      IB_ACCESS_REMOTE_READ),
				0);
		KUNIT_EXPECT_EQ(test, softmr_mw_token(got, key ^ 1,
						      to_sqp(e->b), win, 8,
						      IB_ACCESS_REMOTE_WRITE),
				0);
		softmr_mr_put(got);
	}

	/* a type 2 window through a QP it is not bound to */
	c = softmr_eng_qp(test, e, IB_QPT_RC);
	d = softmr_eng_qp(test, e, IB_QPT_RC);
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, c, d->qp_num, 7, 1), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, d, c->qp_num, 7, 1), 0);
	softmr_eng_fill(e->abuf, 64, 1);
	KUNIT_ASSERT_EQ(test, mw_write(test, e, c, win, 64, key, &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_ACCESS_ERR);
	/* a type 1 window goes through any QP of its PD, with its rights */
	ib_destroy_qp(c);
	ib_destroy_qp(d);
	c = softmr_eng_qp(test, e, IB_QPT_RC);
	d = softmr_eng_qp(test, e, IB_QPT_RC);
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, c, d->qp_num, 7, 1), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, d, c->qp_num, 7, 1), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, c, IB_WR_RDMA_READ, e->bdma,
					      64, win, rokey, 3), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, zero, 64), 0);
	KUNIT_ASSERT_EQ(test, mw_write(test, e, c, win, 64, rokey, &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_ACCESS_ERR);
	ib_destroy_qp(c);
	ib_destroy_qp(d);

	/* the MR's own rkey grants no remote write */
	KUNIT_ASSERT_EQ(test, mw_write(test, e, e->a, win, 64, m->mr->ibmr.rkey,
				       &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_ACCESS_ERR);
	/* past the window's end: the access fails, nothing is written */
	KUNIT_EXPECT_EQ(test, softmr_mw_copy(mw->entry, token,
					     win + MW_WIN - 8, e->abuf, 16,
					     SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), -EFAULT);
	KUNIT_ASSERT_EQ(test, copy_from_user(e->bbuf,
					     (void __user *)(win + MW_WIN - 32),
					     64), 0);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, zero, 64), 0);
	KUNIT_EXPECT_EQ(test, softmr_mw_copy(mw->entry, token, win, e->abuf,
					     16, SOFTMR_FROM_MR,
					     IB_ACCESS_REMOTE_READ), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_mw_copy(mw->entry, token, win, e->abuf,
					     16, SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), 0);

	/*
	 * Invalidated and bound again under the same key, to another QP: an
	 * access checked against the old binding copies no further piece.
	 */
	KUNIT_ASSERT_TRUE(test, softmr_key_invalidate(to_sqp(e->b), key,
						      false));
	mw->ibmw.rkey = key;
	KUNIT_ASSERT_EQ(test, mw_bind(e->a, mw, key, m->mr, win, MW_WIN,
				      IB_ACCESS_REMOTE_WRITE), IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, softmr_mw_copy(mw->entry, token, win, e->abuf,
					     16, SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), -EFAULT);
	KUNIT_EXPECT_NE(test, softmr_mw_token(mw->entry, key, to_sqp(e->a), win,
					      16, IB_ACCESS_REMOTE_WRITE), 0);
	KUNIT_EXPECT_EQ(test, softmr_mw_token(mw->entry, key, to_sqp(e->b), win,
					      16, IB_ACCESS_REMOTE_WRITE), 0);
}

static void softmr_test_mw_bind_errors(struct kunit *test)
{
	struct mw_env *m = mw_env(test, "softmr_kt97");
	struct softmr_eng_env *e = m->e;
	struct ib_pd *pd2 = softmr_kunit_pd(test, e->sdev);
	struct softmr_mw *t1 = mw_alloc(test, e, e->pd, IB_MW_TYPE_1);
	struct softmr_mw *t2 = mw_alloc(test, e, e->pd, IB_MW_TYPE_2);
	struct softmr_mw *other = mw_alloc(test, e, pd2, IB_MW_TYPE_1);
	struct softmr_mr *nobind, *nowrite, *mr2;
	u64 win = m->uaddr + MW_OFF;
	u32 k1 = ib_inc_rkey(t1->ibmw.rkey), k2 = ib_inc_rkey(t2->ibmw.rkey);
	u32 old, token;

	nobind = mw_reg(test, e->pd, m->uaddr, IB_ACCESS_LOCAL_WRITE);
	nowrite = mw_reg(test, e->pd, m->uaddr, IB_ACCESS_MW_BIND);
	mr2 = mw_reg(test, pd2, m->uaddr,
		     IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND);

	/* C10-73, C10-74, C10-75, PDs, rights, type rules */
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t1, k1, nobind, win, 8, MW_RW),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t1, k1, nowrite, win, 8,
				      IB_ACCESS_REMOTE_WRITE),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t1, k1, m->mr, win, MW_LEN, MW_RW),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t1, k1, m->mr, U64_MAX - 4, 8,
				      MW_RW), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t1, k1, mr2, win, 8, MW_RW),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, other,
				      ib_inc_rkey(other->ibmw.rkey), m->mr,
				      win, 8, MW_RW), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t1, k1 + BIT(SOFTMR_MR_KEY_BITS),
				      m->mr, win, 8, MW_RW), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t1, k1, m->mr, win, 8,
				      IB_ACCESS_MW_BIND), IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t1, k1, m->mr, win, 8,
				      MW_RW | IB_ZERO_BASED),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t2, k2, m->mr, win, 0, MW_RW),
			IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, nowrite->mw_bound + nobind->mw_bound +
			mr2->mw_bound + m->mr->mw_bound, 0);

	/* a stale window key: the bind names the window's current rkey */
	t1->ibmw.rkey ^= 1;
	KUNIT_EXPECT_EQ(test, mw_bind(e->b, t1, k1, m->mr, win, 8, MW_RW),
			IB_WC_MW_BIND_ERR);
	t1->ibmw.rkey ^= 1;

	/* type 1 rebinds: the key rolls, the old one stops working */
	KUNIT_ASSERT_EQ(test, mw_bind(e->b, t1, k1, m->mr, win, 8, MW_RW),
			IB_WC_SUCCESS);
	old = k1;
	k1 = ib_inc_rkey(k1);
	KUNIT_ASSERT_EQ(test, mw_bind(e->a, t1, k1, m->mr, win + 8, 8, MW_RW),
			IB_WC_SUCCESS);
	KUNIT_EXPECT_NULL(test, softmr_rkey_get(e->sdev, old));
	KUNIT_EXPECT_EQ(test, m->mr->mw_bound, 1);
	/* no LOCAL_INV for type 1: a zero-length bind unbinds it */
	KUNIT_EXPECT_FALSE(test, softmr_key_invalidate(to_sqp(e->a), k1,
						       false));
	KUNIT_ASSERT_EQ(test, mw_bind(e->a, t1, ib_inc_rkey(k1), NULL, 0, 0, 0),
			IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, m->mr->mw_bound, 0);

	/* zero based (type 2): the window's addresses start at 0 */
	KUNIT_ASSERT_EQ(test, mw_bind(e->b, t2, k2, m->mr, win, 64,
				      MW_RW | IB_ZERO_BASED), IB_WC_SUCCESS);
	memset(e->abuf, 0x5a, 16);
	token = softmr_mw_token(t2->entry, k2, to_sqp(e->b), 48, 16,
				IB_ACCESS_REMOTE_WRITE);
	KUNIT_EXPECT_NE(test, token, 0);
	KUNIT_EXPECT_EQ(test, softmr_mw_copy(t2->entry, token, 48, e->abuf, 16,
					     SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), 0);
	KUNIT_ASSERT_EQ(test, copy_from_user(e->bbuf, (void __user *)win + 48,
					     16), 0);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, e->abuf, 16), 0);
	KUNIT_EXPECT_EQ(test, softmr_mw_copy(t2->entry, token, 56, e->abuf, 16,
					     SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), -EFAULT);
}

/* Dealloc of a bound window unbinds it: the MR can go. */
static void softmr_test_mw_dealloc_bound(struct kunit *test)
{
	struct mw_env *m = mw_env(test, "softmr_kt98");
	struct softmr_eng_env *e = m->e;
	struct softmr_mw *mw = kunit_kzalloc(test, sizeof(*mw), GFP_KERNEL);
	int before = atomic_read(&e->sdev->mw_count);
	u32 key;

	KUNIT_ASSERT_NOT_NULL(test, mw);
	mw->ibmw.device = e->ibdev;
	mw->ibmw.pd = e->pd;
	mw->ibmw.type = IB_MW_TYPE_2;
	KUNIT_ASSERT_EQ(test, softmr_alloc_mw(&mw->ibmw, NULL), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&e->sdev->mw_count), before + 1);
	key = ib_inc_rkey(mw->ibmw.rkey);
	KUNIT_ASSERT_EQ(test, mw_bind(e->b, mw, key, m->mr, m->uaddr, 64,
				      MW_RW), IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&m->mr->ibmr, NULL), -EBUSY);
	KUNIT_EXPECT_EQ(test, softmr_dealloc_mw(&mw->ibmw), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&e->sdev->mw_count), before);
	KUNIT_EXPECT_EQ(test, m->mr->mw_bound, 0);
	KUNIT_EXPECT_NULL(test, softmr_rkey_get(e->sdev, key));
	/* type 3 does not exist */
	mw->ibmw.type = 3;
	KUNIT_EXPECT_EQ(test, softmr_alloc_mw(&mw->ibmw, NULL), -EINVAL);
}

static struct kunit_case softmr_mw_cases[] = {
	KUNIT_CASE(softmr_test_mw_type2_access),
	KUNIT_CASE(softmr_test_mw_bounds_rights),
	KUNIT_CASE(softmr_test_mw_bind_errors),
	KUNIT_CASE(softmr_test_mw_dealloc_bound),
	{}
};

static struct kunit_suite softmr_mw_suite = {
	.name = "softmr_mw",
	.test_cases = softmr_mw_cases,
};

kunit_test_suite(softmr_mw_suite);
