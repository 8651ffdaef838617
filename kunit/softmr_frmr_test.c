// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of fast registration as kernel ULPs (NVMe-oF, NFS/RDMA) use
 * it: ib_alloc_mr(IB_MR_TYPE_MEM_REG), ib_map_mr_sg() on a DMA-mapped
 * scatterlist of separate pages, IB_WR_REG_MR under a rolled key, RDMA
 * WRITE and READ through the rkey, IB_WR_LOCAL_INV and SEND_WITH_INV with
 * the receive completion's IB_WC_WITH_INVALIDATE.  The errors: a key that
 * is not registered yet or any more, REG_MR on a valid MR, a key of another
 * index, another PD, a registration beyond the page list, a remote
 * invalidation with a stale key; each leaves the data untouched.
 */

#include <kunit/test.h>
#include <linux/scatterlist.h>

#include "softmr_kunit.h"

#define FRMR_PAGES	3
#define FRMR_FIRST_OFF	100
#define FRMR_LAST_LEN	96	/* FRMR_LEN fits SOFTMR_ENG_BUF */
#define FRMR_LEN	(PAGE_SIZE - FRMR_FIRST_OFF + PAGE_SIZE + FRMR_LAST_LEN)

/* Three separate pages, DMA-mapped as one scatterlist, and an FRMR. */
struct frmr_buf {
	struct ib_device *ibdev;
	struct page *page[FRMR_PAGES];
	struct scatterlist sg[FRMR_PAGES];
	int mapped;
	struct ib_mr *mr;
};

static void frmr_buf_release(void *data)
{
	struct frmr_buf *b = data;
	int i;

	if (b->mr)
		ib_dereg_mr(b->mr);
	if (b->mapped)
		ib_dma_unmap_sg(b->ibdev, b->sg, FRMR_PAGES, DMA_BIDIRECTIONAL);
	for (i = 0; i < FRMR_PAGES; i++)
		if (b->page[i])
			__free_page(b->page[i]);
}

static struct frmr_buf *frmr_buf(struct kunit *test, struct softmr_eng_env *e,
				 struct ib_pd *pd, u32 max_num_sg)
{
	struct frmr_buf *b = kunit_kzalloc(test, sizeof(*b), GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, b);
	b->ibdev = e->ibdev;
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test,
							   frmr_buf_release,
							   b));
	sg_init_table(b->sg, FRMR_PAGES);
	for (i = 0; i < FRMR_PAGES; i++) {
		b->page[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		KUNIT_ASSERT_NOT_NULL(test, b->page[i]);
	}
	sg_set_page(&b->sg[0], b->page[0], PAGE_SIZE - FRMR_FIRST_OFF,
		    FRMR_FIRST_OFF);
	sg_set_page(&b->sg[1], b->page[1], PAGE_SIZE, 0);
	sg_set_page(&b->sg[2], b->page[2], FRMR_LAST_LEN, 0);
	b->mapped = ib_dma_map_sg(e->ibdev, b->sg, FRMR_PAGES,
				  DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_EQ(test, b->mapped, FRMR_PAGES);
	b->mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, max_num_sg);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(b->mr), "alloc_mr %d",
			       PTR_ERR_OR_ZERO(b->mr));
	return b;
}

/* The FRMR's bytes, in order: its three page pieces. */
static void frmr_read(struct frmr_buf *b, u8 *out)
{
	memcpy(out, page_address(b->page[0]) + FRMR_FIRST_OFF,
	       PAGE_SIZE - FRMR_FIRST_OFF);
	out += PAGE_SIZE - FRMR_FIRST_OFF;
	memcpy(out, page_address(b->page[1]), PAGE_SIZE);
	memcpy(out + PAGE_SIZE, page_address(b->page[2]), FRMR_LAST_LEN);
}

static int frmr_post_reg(struct ib_qp *qp, struct ib_mr *mr, u32 key,
			 int access, u64 wr_id)
{
	struct ib_reg_wr wr = {
		.wr = {
			.wr_id = wr_id, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
		},
		.mr = mr, .key = key, .access = access,
	};

	return ib_post_send(qp, &wr.wr, NULL);
}

static int frmr_post_inv(struct ib_qp *qp, enum ib_wr_opcode op, u32 key,
			 u64 laddr, u32 lkey, u32 len, u64 wr_id)
{
	struct ib_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct ib_send_wr wr = {
		.wr_id = wr_id, .opcode = op, .send_flags = IB_SEND_SIGNALED,
		.sg_list = &sge, .num_sge = len ? 1 : 0,
		.ex.invalidate_rkey = key,
	};

	return ib_post_send(qp, &wr, NULL);
}

static void frmr_qp_release(void *qp)
{
	ib_destroy_qp(qp);
}

/* Another RC QP of the env's PD, in RTS: REG_MR and LOCAL_INV need no peer. */
static struct ib_qp *frmr_qp(struct kunit *test, struct softmr_eng_env *e)
{
	struct ib_qp *qp = softmr_eng_qp(test, e, IB_QPT_RC);

	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test,
							   frmr_qp_release,
							   qp));
	KUNIT_ASSERT_EQ(test, softmr_eng_connect(e, qp, e->a->qp_num, 7, 1),
			0);
	return qp;
}

/* Map the whole buffer and register it on @qp with a rolled key. */
static void frmr_register(struct kunit *test, struct softmr_eng_env *e,
			  struct ib_qp *qp, struct frmr_buf *b, int access)
{
	struct ib_wc wc;

	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(b->mr, b->sg, FRMR_PAGES, NULL,
					   PAGE_SIZE), FRMR_PAGES);
	KUNIT_EXPECT_EQ(test, b->mr->length, FRMR_LEN);
	KUNIT_EXPECT_EQ(test, b->mr->iova, sg_dma_address(&b->sg[0]));
	ib_update_fast_reg_key(b->mr, ib_inc_rkey(b->mr->rkey));
	KUNIT_ASSERT_EQ(test, frmr_post_reg(qp, b->mr, b->mr->rkey, access,
					    10), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, qp, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_REG_MR);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 10);
}

#define FRMR_RW (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
		 IB_ACCESS_REMOTE_READ)

static void softmr_test_frmr_write_read_inv(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt90", 7);
	struct frmr_buf *b = frmr_buf(test, e, e->pd, 4);
	u8 *got = kunit_kzalloc(test, FRMR_LEN, GFP_KERNEL);
	struct ib_qp *c;
	struct ib_wc wc;
	u32 old;

	KUNIT_ASSERT_NOT_NULL(test, got);
	frmr_register(test, e, e->b, b, FRMR_RW);

	/* RDMA WRITE of the whole registration lands in the three pages */
	softmr_eng_fill(e->abuf, SOFTMR_ENG_BUF, 5);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma,
					      FRMR_LEN, b->mr->iova,
					      b->mr->rkey, 1), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	frmr_read(b, got);
	KUNIT_EXPECT_EQ(test, memcmp(got, e->abuf, FRMR_LEN), 0);
	KUNIT_EXPECT_EQ(test, ((u8 *)page_address(b->page[0]))[99], 0);
	KUNIT_EXPECT_EQ(test, ((u8 *)page_address(b->page[2]))[FRMR_LAST_LEN],
			0);

	/* RDMA READ across the page boundaries */
	memset(e->bbuf, 0, SOFTMR_ENG_BUF);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_READ,
					      e->bdma, 5000, b->mr->iova + 50,
					      b->mr->rkey, 2), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, got + 50, 5000), 0);

	/* LOCAL_INV with a key that is not the current one fails... */
	old = b->mr->rkey;
	c = frmr_qp(test, e);
	KUNIT_ASSERT_EQ(test, frmr_post_inv(c, IB_WR_LOCAL_INV, old ^ 1, 0, 0,
					    0, 3), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, softmr_eng_state(c), IB_QPS_ERR);

	/* ...and another QP's LOCAL_INV with the current key works */
	c = frmr_qp(test, e);
	KUNIT_ASSERT_EQ(test, frmr_post_inv(c, IB_WR_LOCAL_INV, old, 0, 0, 0,
					    4), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_LOCAL_INV);
	/* invalidating an invalid MR with its last key is no error */
	KUNIT_ASSERT_EQ(test, frmr_post_inv(c, IB_WR_LOCAL_INV, old, 0, 0, 0,
					    6), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);

	/* the invalidated rkey reaches nothing: the pages stay as they were */
	softmr_eng_fill(e->abuf, SOFTMR_ENG_BUF, 9);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma,
					      64, b->mr->iova, old, 5), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_ACCESS_ERR);
	frmr_read(b, e->bbuf);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, got, FRMR_LEN), 0);
}

static void softmr_test_frmr_send_with_inv(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt91", 7);
	struct frmr_buf *b = frmr_buf(test, e, e->pd, 4);
	struct ib_wc wc;
	u32 key;

	frmr_register(test, e, e->b, b, FRMR_RW);
	key = b->mr->rkey;

	/* A's SEND_WITH_INV invalidates B's MR as B receives it */
	KUNIT_ASSERT_EQ(test, softmr_eng_recv(e, e->b, e->bdma, 64, 20), 0);
	softmr_eng_fill(e->abuf, 64, 1);
	KUNIT_ASSERT_EQ(test, frmr_post_inv(e->a, IB_WR_SEND_WITH_INV, key,
					    e->adma, e->pd->local_dma_lkey, 64,
					    21), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->b, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RECV);
	KUNIT_EXPECT_TRUE(test, wc.wc_flags & IB_WC_WITH_INVALIDATE);
	KUNIT_EXPECT_EQ(test, wc.ex.invalidate_rkey, key);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, e->abuf, 64), 0);

	/* invalid now: B registers it again under the next key */
	frmr_register(test, e, e->b, b, FRMR_RW);
	KUNIT_EXPECT_NE(test, b->mr->rkey, key);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma,
					      64, b->mr->iova, b->mr->rkey,
					      22), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(page_address(b->page[0]) + FRMR_FIRST_OFF,
				     e->abuf, 64), 0);

	/* a SEND_WITH_INV with the old key: both sides see the error */
	KUNIT_ASSERT_EQ(test, softmr_eng_recv(e, e->b, e->bdma, 64, 23), 0);
	KUNIT_ASSERT_EQ(test, frmr_post_inv(e->a, IB_WR_SEND_WITH_INV, key,
					    e->adma, e->pd->local_dma_lkey, 64,
					    24), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->b, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_INV_REQ_ERR);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_INV_REQ_ERR);
}

static void softmr_test_frmr_reg_errors(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt92", 7);
	struct frmr_buf *b = frmr_buf(test, e, e->pd, 4);
	struct frmr_buf *small = frmr_buf(test, e, e->pd, 2);
	struct ib_qp *c;
	struct ib_mr *mr;
	struct ib_wc wc;

	mr = ib_alloc_mr(e->pd, IB_MR_TYPE_SG_GAPS, 4);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(mr), -EINVAL);
	mr = ib_alloc_mr(e->pd, IB_MR_TYPE_MEM_REG, SOFTMR_MAX_FRMR_PAGES + 1);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(mr), -EINVAL);

	/* more pages than max_num_sg: only what fits is mapped */
	KUNIT_EXPECT_EQ(test, ib_map_mr_sg(small->mr, small->sg, FRMR_PAGES,
					   NULL, PAGE_SIZE), 2);

	/* the rkey of an MR never registered reaches nothing */
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma,
					      64, small->mr->iova,
					      small->mr->rkey, 30), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_EQ(test, ((u8 *)page_address(small->page[0]))[100], 0);

	/* a key with another MR's index */
	mr = b->mr;
	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(mr, b->sg, FRMR_PAGES, NULL,
					   PAGE_SIZE), FRMR_PAGES);
	c = frmr_qp(test, e);
	KUNIT_ASSERT_EQ(test, frmr_post_reg(c, mr, mr->rkey ^ BIT(9), FRMR_RW,
					    31), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_MW_BIND_ERR);

	/* a length beyond the page list */
	mr->length += PAGE_SIZE;
	c = frmr_qp(test, e);
	KUNIT_ASSERT_EQ(test, frmr_post_reg(c, mr, mr->rkey, FRMR_RW, 32), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_MW_BIND_ERR);

	/* REG_MR on a valid MR */
	c = frmr_qp(test, e);
	frmr_register(test, e, c, b, FRMR_RW);
	KUNIT_ASSERT_EQ(test, frmr_post_reg(c, mr, mr->rkey, FRMR_RW, 33), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, c, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_MW_BIND_ERR);
}

static void softmr_test_frmr_other_pd(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt93", 7);
	struct ib_pd *pd2 = ib_alloc_pd(e->ibdev, 0);
	struct frmr_buf *b;
	struct ib_wc wc;

	KUNIT_ASSERT_FALSE(test, IS_ERR(pd2));
	b = frmr_buf(test, e, pd2, 4);
	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(b->mr, b->sg, FRMR_PAGES, NULL,
					   PAGE_SIZE), FRMR_PAGES);
	/* e->a is of the env's PD: it cannot register pd2's MR */
	KUNIT_ASSERT_EQ(test, frmr_post_reg(e->a, b->mr, b->mr->rkey, FRMR_RW,
					    40), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_MW_BIND_ERR);
	/* nor invalidate it */
	KUNIT_ASSERT_EQ(test, frmr_post_inv(e->b, IB_WR_LOCAL_INV, b->mr->rkey,
					    0, 0, 0, 41), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->b, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_MW_BIND_ERR);
	ib_dereg_mr(b->mr);
	b->mr = NULL;
	ib_dealloc_pd(pd2);
}

/*
 * A data mover that found the MR by a key which was invalidated, or
 * invalidated and registered anew, before it copies reaches nothing: the
 * key is checked again, under the registration's lock, for every piece.
 */
static void softmr_test_frmr_stale_key(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt94", 7);
	struct frmr_buf *b = frmr_buf(test, e, e->pd, 4);
	struct softmr_mr *mr = to_smr(b->mr), *src;
	u8 data[64] = { 1, 2, 3 }, back[64];
	u32 k1, k2;

	src = softmr_mr_get(e->sdev, e->pd->unsafe_global_rkey);
	KUNIT_ASSERT_NOT_NULL(test, src);
	frmr_register(test, e, e->b, b, FRMR_RW);
	k1 = b->mr->rkey;
	KUNIT_EXPECT_EQ(test, softmr_mr_copy_key(mr, k1, b->mr->iova, data, 64,
						 SOFTMR_TO_MR, 0), 0);
	KUNIT_EXPECT_TRUE(test, softmr_frmr_invalidate(e->sdev, e->pd, k1));
	KUNIT_EXPECT_EQ(test, softmr_mr_copy_key(mr, k1, b->mr->iova, back, 64,
						 SOFTMR_FROM_MR, 0), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer_key(mr, k1, IB_ACCESS_REMOTE_WRITE,
						 b->mr->iova, src, src->key, 0,
						 e->adma, 64), -ENXIO);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer_key(src, src->key, 0, e->adma, mr,
						 k1, IB_ACCESS_REMOTE_READ,
						 b->mr->iova, 64), -EFAULT);

	/* registered again: the new key works, the old one still does not */
	frmr_register(test, e, e->b, b, FRMR_RW);
	k2 = b->mr->rkey;
	KUNIT_EXPECT_NE(test, k1, k2);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy_key(mr, k1, b->mr->iova, back, 64,
						 SOFTMR_FROM_MR, 0), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy_key(mr, k2, b->mr->iova, back, 64,
						 SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, memcmp(back, data, 64), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_atomic_key(mr, k1, b->mr->iova, false,
						   1, 0, (u64 *)back),
			-EFAULT);
	/* a transfer running past the registration's end stops there */
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer_key(src, src->key, 0, e->adma, mr,
						 k2, 0, b->mr->iova +
						 FRMR_LEN - 8, 16), -EFAULT);

	/*
	 * registered again under the same key with read rights only: a write
	 * checked against the earlier registration is refused
	 */
	KUNIT_EXPECT_TRUE(test, softmr_frmr_invalidate(e->sdev, e->pd, k2));
	ib_update_fast_reg_key(b->mr, k2 & 0xff);
	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(b->mr, b->sg, FRMR_PAGES, NULL,
					   PAGE_SIZE), FRMR_PAGES);
	{
		struct ib_wc wc;

		KUNIT_ASSERT_EQ(test, frmr_post_reg(e->b, b->mr, k2,
						    IB_ACCESS_REMOTE_READ, 50),
				0);
		KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->b, &wc));
		KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	}
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer_key(mr, k2, IB_ACCESS_REMOTE_WRITE,
						 b->mr->iova, src, src->key, 0,
						 e->adma, 64), -ENXIO);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer_key(src, src->key, 0, e->adma, mr,
						 k2, IB_ACCESS_REMOTE_READ,
						 b->mr->iova, 64), 0);
	softmr_mr_put(src);
}

/*
 * A registration with remote read only (xprtrdma's read chunks): the peer
 * reads it into its own memory; a write is refused.
 */
static void softmr_test_frmr_remote_read_only(struct kunit *test)
{
	struct softmr_eng_env *e = softmr_eng_env(test, "softmr_kt94", 7);
	struct frmr_buf *b = frmr_buf(test, e, e->pd, 4);
	u8 *want = kunit_kzalloc(test, FRMR_LEN, GFP_KERNEL);
	struct ib_wc wc;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, want);
	for (i = 0; i < FRMR_PAGES; i++)
		softmr_eng_fill(page_address(b->page[i]), PAGE_SIZE, 11 + i);
	frmr_read(b, want);
	frmr_register(test, e, e->b, b, IB_ACCESS_REMOTE_READ);
	memset(e->bbuf, 0, SOFTMR_ENG_BUF);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_READ,
					      e->bdma, FRMR_LEN, b->mr->iova,
					      b->mr->rkey, 1), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, want, FRMR_LEN), 0);
	KUNIT_ASSERT_EQ(test, softmr_eng_send(e, e->a, IB_WR_RDMA_WRITE, e->adma,
					      64, b->mr->iova, b->mr->rkey,
					      2), 0);
	KUNIT_ASSERT_TRUE(test, softmr_eng_poll_qp(test, e, e->a, &wc));
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_REM_ACCESS_ERR);
	frmr_read(b, e->bbuf);
	KUNIT_EXPECT_EQ(test, memcmp(e->bbuf, want, FRMR_LEN), 0);
}

static struct kunit_case softmr_frmr_cases[] = {
	KUNIT_CASE(softmr_test_frmr_write_read_inv),
	KUNIT_CASE(softmr_test_frmr_send_with_inv),
	KUNIT_CASE(softmr_test_frmr_reg_errors),
	KUNIT_CASE(softmr_test_frmr_other_pd),
	KUNIT_CASE(softmr_test_frmr_stale_key),
	KUNIT_CASE(softmr_test_frmr_remote_read_only),
	{}
};

static struct kunit_suite softmr_frmr_suite = {
	.name = "softmr_frmr",
	.test_cases = softmr_frmr_cases,
};

kunit_test_suite(softmr_frmr_suite);
