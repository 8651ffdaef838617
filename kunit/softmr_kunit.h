/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers shared by softmr's KUnit suites: devices created through the
 * same path `rdma link add` takes, released when the test ends.
 */

#ifndef SOFTMR_KUNIT_H
#define SOFTMR_KUNIT_H

#include <kunit/test.h>

#include "softmr.h"

struct softmr_dev *softmr_kunit_dev_add(struct kunit *test, const char *name,
					struct net_device *ndev);
void softmr_kunit_dev_del(const char *name);
bool softmr_kunit_dev_gone(const char *name);
struct ib_pd *softmr_kunit_pd_alloc(struct softmr_dev *sdev, int *err);
void softmr_kunit_pd_free(struct ib_pd *pd);
struct ib_pd *softmr_kunit_pd(struct kunit *test, struct softmr_dev *sdev);
struct softmr_ucontext *softmr_kunit_ucontext(struct kunit *test,
					      struct softmr_dev *sdev);
int softmr_kunit_dontneed(unsigned long addr, size_t len);

/*
 * The engine suites' environment (softmr_engine_test.c): a device on lo, a
 * PD with an unsafe global rkey, one CQ, two RC QPs connected to each
 * other and two DMA-mapped kernel buffers.
 */
#define SOFTMR_ENG_BUF		8192
#define SOFTMR_ENG_WAIT_MS	2000

struct softmr_eng_env {
	struct softmr_dev *sdev;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *a, *b;
	union ib_gid gid;
	u8 *abuf, *bbuf;
	u64 adma, bdma;
	struct ib_mr *atomic_mr;	/* remote atomic on everything */
	u32 sq_psn;			/* softmr_eng_connect()'s send PSN, 0: 1 */
};

struct softmr_eng_env *softmr_eng_env(struct kunit *test, const char *name,
				      u8 rnr_retry);
struct ib_qp *softmr_eng_qp(struct kunit *test, struct softmr_eng_env *e,
			    enum ib_qp_type type);
int softmr_eng_connect(struct softmr_eng_env *e, struct ib_qp *qp, u32 dqpn,
		       u8 rnr_retry, u8 min_rnr_timer);
bool softmr_eng_poll(struct softmr_eng_env *e, struct ib_wc *wc);
bool softmr_eng_poll_qp(struct kunit *test, struct softmr_eng_env *e,
			struct ib_qp *qp, struct ib_wc *wc);
int softmr_eng_send(struct softmr_eng_env *e, struct ib_qp *qp,
		    enum ib_wr_opcode op, u64 laddr, u32 len, u64 raddr,
		    u32 rkey, u64 wr_id);
int softmr_eng_recv(struct softmr_eng_env *e, struct ib_qp *qp, u64 addr,
		    u32 len, u64 wr_id);
void softmr_eng_fill(u8 *buf, size_t len, u8 seed);
enum ib_qp_state softmr_eng_state(struct ib_qp *qp);

#endif /* SOFTMR_KUNIT_H */
