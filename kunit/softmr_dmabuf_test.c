// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of dma-buf MRs against a fake exporter: a dynamic exporter
 * (pin/unpin, so the import is dynamic) whose backing store is vmalloc
 * memory it can move.  A move copies the data to a new store, calls
 * dma_buf_move_notify() under the reservation lock, then poisons and frees
 * the old store, so an importer that touched a stale page would read
 * poison or write into freed memory.  The tests check the MR access API
 * and the engine's MR-to-MR copy across moves (one mover thread moving two
 * buffers while copies run), the re-map counters, the pinned import of a
 * static exporter, and the registration errors.
 */

#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/fdtable.h>
#include <linux/kthread.h>
#include <linux/scatterlist.h>
#include <linux/vmalloc.h>

#include "softmr_kunit.h"

#define FAKE_SIZE	(16 * PAGE_SIZE)

struct fake_buf {
	struct dma_buf *db;
	void *store;		/* the current backing store */
	size_t size;
	int moves;
	int pins;
};

static struct sg_table *fake_map(struct dma_buf_attachment *attach,
				 enum dma_data_direction dir)
{
	struct fake_buf *fb = attach->dmabuf->priv;
	struct scatterlist *sg;
	struct sg_table *sgt;
	int i;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt || sg_alloc_table(sgt, fb->size / PAGE_SIZE, GFP_KERNEL)) {
		kfree(sgt);
		return ERR_PTR(-ENOMEM);
	}
	/* an identity "DMA mapping" of the store's pages */
	for_each_sgtable_sg(sgt, sg, i) {
		struct page *p = vmalloc_to_page(fb->store + i * PAGE_SIZE);

		sg_set_page(sg, p, PAGE_SIZE, 0);
		sg_dma_address(sg) = page_to_phys(p);
		sg_dma_len(sg) = PAGE_SIZE;
	}
	return sgt;
}

static void fake_unmap(struct dma_buf_attachment *attach,
		       struct sg_table *sgt, enum dma_data_direction dir)
{
	sg_free_table(sgt);
	kfree(sgt);
}

static int fake_pin(struct dma_buf_attachment *attach)
{
	((struct fake_buf *)attach->dmabuf->priv)->pins++;
	return 0;
}

static void fake_unpin(struct dma_buf_attachment *attach)
{
	((struct fake_buf *)attach->dmabuf->priv)->pins--;
}

static int fake_vmap(struct dma_buf *db, struct iosys_map *map)
{
	struct fake_buf *fb = db->priv;

	dma_resv_assert_held(db->resv);
	iosys_map_set_vaddr(map, fb->store);
	return 0;
}

static void fake_vunmap(struct dma_buf *db, struct iosys_map *map)
{
}

static void fake_release(struct dma_buf *db)
{
	struct fake_buf *fb = db->priv;

	vfree(fb->store);
	kfree(fb);
}

static const struct dma_buf_ops fake_dynamic_ops = {
	.pin = fake_pin,
	.unpin = fake_unpin,
	.map_dma_buf = fake_map,
	.unmap_dma_buf = fake_unmap,
	.release = fake_release,
	.vmap = fake_vmap,
	.vunmap = fake_vunmap,
};

/* A static exporter: no pin/unpin, it never moves. */
static const struct dma_buf_ops fake_static_ops = {
	.map_dma_buf = fake_map,
	.unmap_dma_buf = fake_unmap,
	.release = fake_release,
	.vmap = fake_vmap,
	.vunmap = fake_vunmap,
};

static void fake_put(void *db)
{
	dma_buf_put(db);
}

static struct fake_buf *fake_new(struct kunit *test,
				 const struct dma_buf_ops *ops)
{
	DEFINE_DMA_BUF_EXPORT_INFO(exp);
	struct fake_buf *fb = kzalloc(sizeof(*fb), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, fb);
	fb->size = FAKE_SIZE;
	fb->store = vzalloc(fb->size);
	KUNIT_ASSERT_NOT_NULL(test, fb->store);
	exp.ops = ops;
	exp.size = fb->size;
	exp.flags = O_RDWR;
	exp.priv = fb;
	fb->db = dma_buf_export(&exp);
	KUNIT_ASSERT_FALSE(test, IS_ERR(fb->db));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, fake_put,
							   fb->db));
	return fb;
}

/* Move the buffer: new store, move_notify, poison and free the old one. */
static void fake_move(struct fake_buf *fb)
{
	void *new = vmalloc(fb->size), *old;

	if (!new)
		return;
	dma_resv_lock(fb->db->resv, NULL);
	memcpy(new, fb->store, fb->size);
	dma_buf_move_notify(fb->db);
	old = fb->store;
	fb->store = new;
	fb->moves++;
	memset(old, 0xdd, fb->size);
	dma_resv_unlock(fb->db->resv);
	vfree(old);
}

struct dmabuf_env {
	struct softmr_dev *sdev;
	struct ib_pd *pd;
};

static struct dmabuf_env *dmabuf_env(struct kunit *test, const char *name)
{
	struct dmabuf_env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, e);
	e->sdev = softmr_kunit_dev_add(test, name, init_net.loopback_dev);
	e->pd = softmr_kunit_pd(test, e->sdev);
	return e;
}

/* Register [offset, offset + len) of @fb at @iova through a real fd. */
static struct softmr_mr *dmabuf_reg(struct dmabuf_env *e, struct fake_buf *fb,
				    u64 offset, u64 len, u64 iova, int access,
				    int *err)
{
	struct ib_mr *ibmr;
	int fd;

	get_dma_buf(fb->db);
	fd = dma_buf_fd(fb->db, O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(fb->db);
		*err = fd;
		return NULL;
	}
	ibmr = softmr_reg_user_mr_dmabuf(e->pd, offset, len, iova, fd, access,
					 NULL);
	close_fd(fd);	/* the MR keeps the buffer */
	*err = IS_ERR(ibmr) ? PTR_ERR(ibmr) : 0;
	return IS_ERR(ibmr) ? NULL : to_smr(ibmr);
}

static u64 counter(struct dmabuf_env *e, enum softmr_counter c)
{
	return softmr_counter_read(e->sdev, c);
}

#define RW (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
	    IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

static void softmr_test_dmabuf_access(struct kunit *test)
{
	struct dmabuf_env *e = dmabuf_env(test, "softmr_kt90");
	struct fake_buf *fb = fake_new(test, &fake_dynamic_ops);
	u8 *buf = kunit_kzalloc(test, 3 * PAGE_SIZE, GFP_KERNEL);
	struct softmr_mr *mr;
	u64 orig;
	int err, i;

	mr = dmabuf_reg(e, fb, PAGE_SIZE, 8 * PAGE_SIZE, 0x100000, RW, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_ASSERT_NOT_NULL(test, mr);
	KUNIT_EXPECT_EQ(test, mr->kind, SOFTMR_MR_DMABUF);
	KUNIT_EXPECT_FALSE(test, mr->dmabuf_pinned);
	KUNIT_EXPECT_TRUE(test, mr->dmabuf_mapped);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_DMABUF_MRS), 1);

	/* write through the MR: lands in the store at offset + 100 */
	for (i = 0; i < 3 * PAGE_SIZE; i++)
		buf[i] = (u8)(i * 13 + 1);
	KUNIT_ASSERT_EQ(test, softmr_mr_copy(mr, 0x100000 + 100, buf,
					     3 * PAGE_SIZE, SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), 0);
	KUNIT_EXPECT_EQ(test, memcmp(fb->store + PAGE_SIZE + 100, buf,
				     3 * PAGE_SIZE), 0);

	/* the exporter moves the buffer: the mapping goes, data stays */
	fake_move(fb);
	KUNIT_EXPECT_FALSE(test, mr->dmabuf_mapped);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_DMABUF_MOVES), 1);
	memset(buf, 0, 3 * PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, softmr_mr_copy(mr, 0x100000 + 100, buf,
					     3 * PAGE_SIZE, SOFTMR_FROM_MR,
					     IB_ACCESS_REMOTE_READ), 0);
	KUNIT_EXPECT_TRUE(test, mr->dmabuf_mapped);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_DMABUF_REMAPS), 1);
	for (i = 0; i < 3 * PAGE_SIZE; i++)
		if (buf[i] != (u8)(i * 13 + 1))
			break;
	KUNIT_EXPECT_EQ(test, i, 3 * PAGE_SIZE);

	/* an atomic after another move works on the new store */
	fake_move(fb);
	*(u64 *)(fb->store + PAGE_SIZE + 64) = 40;
	KUNIT_EXPECT_EQ(test, softmr_mr_atomic(mr, 0x100000 + 64, false, 2, 0,
					       &orig), 0);
	KUNIT_EXPECT_EQ(test, orig, 40);
	KUNIT_EXPECT_EQ(test, *(u64 *)(fb->store + PAGE_SIZE + 64), 42);

	/* bounds: the MR ends 8 pages after iova */
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, 0x100000 + 8 * PAGE_SIZE - 4,
					     buf, 8, SOFTMR_FROM_MR, 0),
			-EFAULT);

	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&mr->ibmr, NULL), 0);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_DMABUF_MRS), 0);
	/* the import is gone: pins balanced, a move reaches no one */
	KUNIT_EXPECT_EQ(test, fb->pins, 0);
	fake_move(fb);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_DMABUF_MOVES), 2);
}

struct mover {
	struct fake_buf *a, *b;
	struct completion done;
	bool stop;
};

static int mover_fn(void *data)
{
	struct mover *m = data;

	while (!READ_ONCE(m->stop)) {
		fake_move(m->a);
		fake_move(m->b);
		usleep_range(20, 50);
	}
	complete(&m->done);
	return 0;
}

/* MR-to-MR copies between two moving buffers never see stale memory. */
static void softmr_test_dmabuf_move_while_copying(struct kunit *test)
{
	struct dmabuf_env *e = dmabuf_env(test, "softmr_kt91");
	struct fake_buf *fa = fake_new(test, &fake_dynamic_ops);
	struct fake_buf *fb = fake_new(test, &fake_dynamic_ops);
	const size_t len = 5 * PAGE_SIZE + 123;
	u8 *pat = kunit_kzalloc(test, len, GFP_KERNEL);
	u8 *got = kunit_kzalloc(test, len, GFP_KERNEL);
	struct softmr_mr *ma, *mb;
	struct task_struct *t;
	struct mover m = { .a = fa, .b = fb };
	int err, iter, bad = 0;
	size_t i;

	KUNIT_ASSERT_NOT_NULL(test, pat);
	KUNIT_ASSERT_NOT_NULL(test, got);
	ma = dmabuf_reg(e, fa, 0, FAKE_SIZE, 0, RW, &err);
	KUNIT_ASSERT_NOT_NULL(test, ma);
	mb = dmabuf_reg(e, fb, 0, FAKE_SIZE, 0x10000000, RW, &err);
	KUNIT_ASSERT_NOT_NULL(test, mb);

	init_completion(&m.done);
	t = kthread_run(mover_fn, &m, "softmr_kt_mover");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	for (iter = 0; iter < 300; iter++) {
		size_t so = (iter * 1237) % (FAKE_SIZE - len);
		size_t doff = (iter * 3119) % (FAKE_SIZE - len);

		for (i = 0; i < len; i++)
			pat[i] = (u8)(i * 31 + iter);
		if (softmr_mr_copy(ma, so, pat, len, SOFTMR_TO_MR, 0) ||
		    softmr_mr_xfer(mb, 0x10000000 + doff, ma, so, len) ||
		    softmr_mr_copy(mb, 0x10000000 + doff, got, len,
				   SOFTMR_FROM_MR, 0) ||
		    memcmp(got, pat, len))
			bad++;
		if (iter % 16 == 0)
			usleep_range(50, 100);
	}
	WRITE_ONCE(m.stop, true);
	wait_for_completion(&m.done);

	KUNIT_EXPECT_EQ(test, bad, 0);
	KUNIT_EXPECT_GT(test, fa->moves, 0);
	KUNIT_EXPECT_GT(test, fb->moves, 0);
	KUNIT_EXPECT_GT(test, counter(e, SOFTMR_CNT_DMABUF_REMAPS), 0);
	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&ma->ibmr, NULL), 0);
	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&mb->ibmr, NULL), 0);
}

/* A static exporter is imported pinned and stays mapped. */
static void softmr_test_dmabuf_static_pinned(struct kunit *test)
{
	struct dmabuf_env *e = dmabuf_env(test, "softmr_kt92");
	struct fake_buf *fb = fake_new(test, &fake_static_ops);
	u8 data[64], back[64];
	struct softmr_mr *mr;
	int err;

	mr = dmabuf_reg(e, fb, 0, FAKE_SIZE, 0, RW, &err);
	KUNIT_ASSERT_NOT_NULL(test, mr);
	KUNIT_EXPECT_TRUE(test, mr->dmabuf_pinned);
	KUNIT_EXPECT_TRUE(test, mr->dmabuf_mapped);
	memset(data, 0x5a, sizeof(data));
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, FAKE_SIZE - 64, data, 64,
					     SOFTMR_TO_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, FAKE_SIZE - 64, back, 64,
					     SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, memcmp(back, data, 64), 0);
	KUNIT_EXPECT_EQ(test, memcmp(fb->store + FAKE_SIZE - 64, data, 64), 0);
	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&mr->ibmr, NULL), 0);
}

static void softmr_test_dmabuf_reg_errors(struct kunit *test)
{
	struct dmabuf_env *e = dmabuf_env(test, "softmr_kt93");
	struct fake_buf *fb = fake_new(test, &fake_dynamic_ops);
	int mrs = atomic_read(&e->sdev->mr_count);
	struct ib_mr *ibmr;
	int err;

	KUNIT_EXPECT_NULL(test, dmabuf_reg(e, fb, 0, FAKE_SIZE + 1, 0, RW,
					   &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, dmabuf_reg(e, fb, PAGE_SIZE, FAKE_SIZE, 0, RW,
					   &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, dmabuf_reg(e, fb, 0, 0, 0, RW, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, dmabuf_reg(e, fb, 0, PAGE_SIZE, 0,
					   RW | IB_ACCESS_ON_DEMAND, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, dmabuf_reg(e, fb, 0, PAGE_SIZE, 0,
					   IB_ACCESS_REMOTE_WRITE, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, dmabuf_reg(e, fb, 8, U64_MAX - 4, 0, RW,
					   &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	/* an fd that is not open */
	ibmr = softmr_reg_user_mr_dmabuf(e->pd, 0, PAGE_SIZE, 0, 1000000, RW,
					 NULL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(ibmr), -EBADF);
	/* nothing left behind */
	KUNIT_EXPECT_EQ(test, atomic_read(&e->sdev->mr_count), mrs);
	KUNIT_EXPECT_EQ(test, counter(e, SOFTMR_CNT_DMABUF_MRS), 0);
	KUNIT_EXPECT_EQ(test, fb->pins, 0);
}

static struct kunit_case softmr_dmabuf_cases[] = {
	KUNIT_CASE(softmr_test_dmabuf_access),
	KUNIT_CASE(softmr_test_dmabuf_move_while_copying),
	KUNIT_CASE(softmr_test_dmabuf_static_pinned),
	KUNIT_CASE(softmr_test_dmabuf_reg_errors),
	{}
};

static struct kunit_suite softmr_dmabuf_suite = {
	.name = "softmr_dmabuf",
	.test_cases = softmr_dmabuf_cases,
};

kunit_test_suite(softmr_dmabuf_suite);
