// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_cq - completion queues through libibverbs: sizes and limits,
 * polling an empty ring without a system call, arming (next/solicited),
 * completion channels, resize up and down, bad comp_vector.
 *
 * usage: softmr_cq [DEVICE]
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "softmr_test.h"

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "softmr0";
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *cqs[3];
	struct ibv_wc wc[8];
	void *ev_ctx;
	int i, n;

	ctx = st_open_dev(name);
	CHECK(ctx != NULL, "open %s", name);
	if (!ctx)
		return st_finish("softmr_cq");

	/* sizes: the CQ holds at least what was asked */
	{
		static const int sizes[] = { 1, 100, 0xffff };

		for (i = 0; i < 3; i++) {
			cqs[i] = ibv_create_cq(ctx, sizes[i], NULL, NULL, 0);
			CHECK(cqs[i] != NULL, "create_cq %d: %s", sizes[i],
			      strerror(errno));
			if (cqs[i])
				CHECK(cqs[i]->cqe >= sizes[i], "cqe %d >= %d",
				      cqs[i]->cqe, sizes[i]);
		}
		for (i = 0; i < 3; i++)
			if (cqs[i]) {
				CHECK(ibv_poll_cq(cqs[i], 8, wc) == 0,
				      "empty CQ polls 0");
				CHECK(ibv_destroy_cq(cqs[i]) == 0, "destroy");
			}
	}
	errno = 0;
	cq = ibv_create_cq(ctx, 0x100000, NULL, NULL, 0);
	CHECK_ERRNO(cq == NULL, EINVAL, "cqe above max_cqe");
	errno = 0;
	cq = ibv_create_cq(ctx, 0, NULL, NULL, 0);
	CHECK_ERRNO(cq == NULL, EINVAL, "cqe 0");
	errno = 0;
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 1000);
	CHECK_ERRNO(cq == NULL, EINVAL, "comp_vector out of range");

	/* arming and a completion channel with no completion: no event */
	ch = ibv_create_comp_channel(ctx);
	CHECK(ch != NULL, "comp channel");
	cq = ch ? ibv_create_cq(ctx, 16, (void *)0x1234, ch, 1) : NULL;
	CHECK(cq != NULL, "create_cq with channel: %s", strerror(errno));
	if (cq) {
		n = ibv_req_notify_cq(cq, 0);
		CHECK(n == 0, "arm next: %d (%s)", n, strerror(n));
		n = ibv_req_notify_cq(cq, 1);
		CHECK(n == 0, "arm solicited: %d (%s)", n, strerror(n));
		fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
		errno = 0;
		CHECK_ERRNO(ibv_get_cq_event(ch, &cq, &ev_ctx) != 0, EAGAIN,
			    "no event without a completion");

		/* resize up and down; the CQ stays usable */
		CHECK(ibv_resize_cq(cq, 500) == 0, "resize to 500");
		CHECK(cq->cqe >= 500, "cqe after resize %d", cq->cqe);
		CHECK(ibv_poll_cq(cq, 8, wc) == 0, "poll after resize");
		CHECK(ibv_resize_cq(cq, 4) == 0, "resize to 4");
		CHECK(cq->cqe >= 4 && cq->cqe < 500, "cqe after shrink %d",
		      cq->cqe);
		CHECK(ibv_resize_cq(cq, 0x100000) == EINVAL,
		      "resize above max_cqe");
		CHECK(ibv_resize_cq(cq, 0) == EINVAL, "resize to 0");
		CHECK(ibv_poll_cq(cq, 8, wc) == 0, "poll after failed resize");
		CHECK(ibv_destroy_cq(cq) == 0, "destroy");
	}
	if (ch)
		CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy channel");

	/* many CQs, then all gone */
	{
		struct ibv_cq *many[256];

		for (i = 0; i < 256; i++)
			many[i] = ibv_create_cq(ctx, 64, NULL, NULL, 0);
		n = 0;
		for (i = 0; i < 256; i++)
			if (many[i])
				n += ibv_destroy_cq(many[i]) == 0;
		CHECK(n == 256, "256 CQs created and destroyed: %d", n);
	}

	CHECK(ibv_close_device(ctx) == 0, "close");
	return st_finish("softmr_cq");
}
