// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of completion queues: sizes and limits, posting and polling
 * in order, wrap-around, arming (next and solicited), missed events,
 * overflow (IB_EVENT_CQ_ERR), resize with completions waiting, a consumer
 * index scribbled on by "user space", and ib_alloc_cq() for kernel users.
 */

#include <kunit/test.h>

#include "softmr_kunit.h"

struct cq_env {
	int cq_base;	/* CQs ib_core's clients (QP1) hold */
	struct softmr_dev *sdev;
	int comp_calls;
	int err_events;
};

static void cq_comp(struct ib_cq *ibcq, void *ctx)
{
	((struct cq_env *)ctx)->comp_calls++;
}

static void cq_event(struct ib_event *ev, void *ctx)
{
	if (ev->event == IB_EVENT_CQ_ERR)
		((struct cq_env *)ctx)->err_events++;
}

static void cq_free(void *data)
{
	struct ib_cq *ibcq = data;

	softmr_destroy_cq(ibcq, NULL);
	kfree(ibcq);
}

/* A kernel CQ as ib_core builds one, with our handlers. */
static struct softmr_cq *cq_create(struct kunit *test, struct cq_env *e,
				   int cqe, int *err)
{
	struct ib_cq_init_attr attr = { .cqe = cqe };
	struct ib_device *ibdev = &e->sdev->ibdev;
	struct ib_cq *ibcq = rdma_zalloc_drv_obj(ibdev, ib_cq);

	KUNIT_ASSERT_NOT_NULL(test, ibcq);
	ibcq->device = ibdev;
	ibcq->comp_handler = cq_comp;
	ibcq->event_handler = cq_event;
	ibcq->cq_context = e;
	*err = softmr_create_cq(ibcq, &attr, NULL);
	if (*err) {
		kfree(ibcq);
		return NULL;
	}
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, cq_free,
							   ibcq));
	return to_scq(ibcq);
}

static struct cq_env *cq_env(struct kunit *test, const char *name)
{
	struct cq_env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, e);
	e->sdev = softmr_kunit_dev_add(test, name, init_net.loopback_dev);
	e->cq_base = atomic_read(&e->sdev->cq_count);
	return e;
}

static int post(struct softmr_cq *cq, u64 wr_id, bool solicited)
{
	struct ib_uverbs_wc wc = {
		.wr_id = wr_id,
		.status = IB_WC_SUCCESS,
		.opcode = IB_WC_RECV,
		.byte_len = (u32)wr_id * 3,
		.qp_num = 7,
	};

	return softmr_cq_post(cq, &wc, NULL, solicited);
}

static void softmr_test_cq_sizes(struct kunit *test)
{
	struct cq_env *e = cq_env(test, "softmr_kt50");
	struct softmr_cq *cq;
	int err;

	cq = cq_create(test, e, 1, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_GE(test, cq->ibcq.cqe, 1);
	cq = cq_create(test, e, 100, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_EQ(test, cq->ibcq.cqe, 127);
	cq = cq_create(test, e, SOFTMR_MAX_CQE, &err);
	KUNIT_EXPECT_EQ(test, err, 0);
	KUNIT_EXPECT_NULL(test, cq_create(test, e, SOFTMR_MAX_CQE + 1, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, cq_create(test, e, 0, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, cq_create(test, e, -5, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_EQ(test, atomic_read(&e->sdev->cq_count), e->cq_base + 3);
}

static void softmr_test_cq_order_and_wrap(struct kunit *test)
{
	struct cq_env *e = cq_env(test, "softmr_kt51");
	struct ib_wc wc[4];
	struct softmr_cq *cq;
	u64 next = 0, id;
	int err, round, n, i;

	cq = cq_create(test, e, 3, &err);	/* 4 slots */
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_EQ(test, softmr_poll_cq(&cq->ibcq, 4, wc), 0);
	for (id = 0, round = 0; round < 10; round++) {
		for (i = 0; i < 3; i++)
			KUNIT_ASSERT_EQ(test, post(cq, id++, false), 0);
		n = softmr_poll_cq(&cq->ibcq, 2, wc);
		KUNIT_ASSERT_EQ(test, n, 2);
		n += softmr_poll_cq(&cq->ibcq, 2, wc + 2);
		KUNIT_ASSERT_EQ(test, n, 3);
		for (i = 0; i < 3; i++) {
			KUNIT_EXPECT_EQ(test, wc[i].wr_id, next);
			KUNIT_EXPECT_EQ(test, wc[i].byte_len, (u32)next * 3);
			KUNIT_EXPECT_EQ(test, wc[i].opcode, IB_WC_RECV);
			next++;
		}
	}
	KUNIT_EXPECT_EQ(test, cq->ring.hdr->producer, 30);
}

static void softmr_test_cq_arm(struct kunit *test)
{
	struct cq_env *e = cq_env(test, "softmr_kt52");
	struct ib_wc wc[8];
	struct softmr_cq *cq;
	int err;

	cq = cq_create(test, e, 16, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	/* not armed: no handler call */
	post(cq, 1, false);
	KUNIT_EXPECT_EQ(test, e->comp_calls, 0);
	/* armed for the next completion: one call, then disarmed */
	KUNIT_EXPECT_EQ(test, softmr_req_notify_cq(&cq->ibcq, IB_CQ_NEXT_COMP),
			0);
	post(cq, 2, false);
	post(cq, 3, false);
	KUNIT_EXPECT_EQ(test, e->comp_calls, 1);
	/* solicited only: an unsolicited completion does not call */
	softmr_req_notify_cq(&cq->ibcq, IB_CQ_SOLICITED);
	post(cq, 4, false);
	KUNIT_EXPECT_EQ(test, e->comp_calls, 1);
	post(cq, 5, true);
	KUNIT_EXPECT_EQ(test, e->comp_calls, 2);
	/* NEXT_COMP is not narrowed by a later SOLICITED request */
	softmr_req_notify_cq(&cq->ibcq, IB_CQ_NEXT_COMP);
	softmr_req_notify_cq(&cq->ibcq, IB_CQ_SOLICITED);
	post(cq, 6, false);
	KUNIT_EXPECT_EQ(test, e->comp_calls, 3);
	/* missed events are reported while completions wait */
	KUNIT_EXPECT_EQ(test, softmr_req_notify_cq(&cq->ibcq, IB_CQ_NEXT_COMP |
						   IB_CQ_REPORT_MISSED_EVENTS),
			1);
	KUNIT_EXPECT_EQ(test, softmr_poll_cq(&cq->ibcq, 8, wc), 6);
	KUNIT_EXPECT_EQ(test, softmr_req_notify_cq(&cq->ibcq, IB_CQ_NEXT_COMP |
						   IB_CQ_REPORT_MISSED_EVENTS),
			0);
}

static void softmr_test_cq_overflow(struct kunit *test)
{
	struct cq_env *e = cq_env(test, "softmr_kt53");
	struct ib_wc wc[8];
	struct softmr_cq *cq;
	int err, i;

	cq = cq_create(test, e, 3, &err);	/* 4 slots */
	KUNIT_ASSERT_EQ(test, err, 0);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, post(cq, i, false), 0);
	KUNIT_EXPECT_EQ(test, post(cq, 99, false), -EOVERFLOW);
	KUNIT_EXPECT_EQ(test, e->err_events, 1);
	/* nothing was overwritten */
	KUNIT_EXPECT_EQ(test, softmr_poll_cq(&cq->ibcq, 8, wc), 4);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, wc[i].wr_id, i);
}

/* A consumer index from user space is never used to index the ring. */
static void softmr_test_cq_bogus_consumer(struct kunit *test)
{
	struct cq_env *e = cq_env(test, "softmr_kt54");
	struct softmr_cq *cq;
	int err;

	cq = cq_create(test, e, 7, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_EXPECT_EQ(test, post(cq, 1, false), 0);
	WRITE_ONCE(cq->ring.hdr->consumer, 0x80000000);
	/* reads as full: the completion is dropped, memory stays intact */
	KUNIT_EXPECT_EQ(test, post(cq, 2, false), -EOVERFLOW);
	KUNIT_EXPECT_EQ(test, softmr_resize_cq(&cq->ibcq, 15, NULL), -EINVAL);
	WRITE_ONCE(cq->ring.hdr->consumer, 0);
	KUNIT_EXPECT_EQ(test, post(cq, 3, false), 0);
}

static void softmr_test_cq_resize(struct kunit *test)
{
	struct cq_env *e = cq_env(test, "softmr_kt55");
	struct ib_wc *wc = kunit_kcalloc(test, 64, sizeof(*wc), GFP_KERNEL);
	struct softmr_cq *cq;
	int err, i;

	KUNIT_ASSERT_NOT_NULL(test, wc);
	cq = cq_create(test, e, 7, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	for (i = 0; i < 6; i++)
		post(cq, i, false);
	KUNIT_EXPECT_EQ(test, softmr_poll_cq(&cq->ibcq, 2, wc), 2);
	/* grow with 4 waiting: they move, in order */
	KUNIT_EXPECT_EQ(test, softmr_resize_cq(&cq->ibcq, 40, NULL), 0);
	KUNIT_EXPECT_EQ(test, cq->ibcq.cqe, 63);
	for (i = 6; i < 40; i++)
		KUNIT_EXPECT_EQ(test, post(cq, i, false), 0);
	/* shrinking below what waits is refused */
	KUNIT_EXPECT_EQ(test, softmr_resize_cq(&cq->ibcq, 10, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, softmr_resize_cq(&cq->ibcq, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, softmr_poll_cq(&cq->ibcq, 64, wc), 38);
	for (i = 0; i < 38; i++)
		KUNIT_EXPECT_EQ(test, wc[i].wr_id, i + 2);
	KUNIT_EXPECT_EQ(test, softmr_resize_cq(&cq->ibcq, 10, NULL), 0);
	KUNIT_EXPECT_EQ(test, cq->ibcq.cqe, 15);
	KUNIT_EXPECT_EQ(test, softmr_poll_cq(&cq->ibcq, 64, wc), 0);
}

/* Kernel users allocate CQs through ib_alloc_cq() and poll them. */
static void softmr_test_cq_ib_alloc(struct kunit *test)
{
	struct cq_env *e = cq_env(test, "softmr_kt56");
	struct ib_wc wc[4];
	struct ib_cq *ibcq;

	ibcq = ib_alloc_cq(&e->sdev->ibdev, NULL, 32, 0, IB_POLL_DIRECT);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibcq));
	KUNIT_EXPECT_EQ(test, post(to_scq(ibcq), 42, false), 0);
	KUNIT_EXPECT_EQ(test, ib_poll_cq(ibcq, 4, wc), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 42);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_SUCCESS);
	ib_free_cq(ibcq);
	KUNIT_EXPECT_EQ(test, atomic_read(&e->sdev->cq_count), e->cq_base);
}

static struct kunit_case softmr_cq_cases[] = {
	KUNIT_CASE(softmr_test_cq_sizes),
	KUNIT_CASE(softmr_test_cq_order_and_wrap),
	KUNIT_CASE(softmr_test_cq_arm),
	KUNIT_CASE(softmr_test_cq_overflow),
	KUNIT_CASE(softmr_test_cq_bogus_consumer),
	KUNIT_CASE(softmr_test_cq_resize),
	KUNIT_CASE(softmr_test_cq_ib_alloc),
	{}
};

static struct kunit_suite softmr_cq_suite = {
	.name = "softmr_cq",
	.test_cases = softmr_cq_cases,
};

kunit_test_suite(softmr_cq_suite);
