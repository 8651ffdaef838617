// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_dm - device memory as ibv_alloc_dm(3) describes it: max_dm_size,
 * allocation, alignment, exhaustion (ENOMEM), memcpy round trips with
 * bounds checks, fresh allocations zeroed, reg_dm_mr's ZERO_BASED rule and
 * range checks, EBUSY on free while an MR uses the DM, and counters.
 *
 * usage: softmr_dm [DEVICE]
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "softmr_test.h"

static struct ibv_dm *alloc(struct ibv_context *ctx, size_t len, int align)
{
	struct ibv_alloc_dm_attr a = { .length = len, .log_align_req = align };

	return ibv_alloc_dm(ctx, &a);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "softmr0";
	int zb = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_context *ctx;
	struct ibv_device_attr_ex dx;
	struct ibv_dm *dm, *dms[8];
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	uint8_t in[256], out[256];
	long long allocs;
	size_t max;
	int i, ret;

	ctx = st_open_dev(name);
	CHECK(ctx != NULL, "open %s", name);
	if (!ctx)
		return st_finish("softmr_dm");
	pd = ibv_alloc_pd(ctx);
	CHECK(ibv_query_device_ex(ctx, NULL, &dx) == 0, "query_device_ex");
	max = dx.max_dm_size;
	CHECK(max == 4 << 20, "max_dm_size %zu", max);

	/* memcpy round trip, with bounds */
	allocs = st_counter(name, "dm_allocations");
	dm = alloc(ctx, 200, 0);
	CHECK(dm != NULL, "alloc_dm 200: %s", strerror(errno));
	if (!dm)
		return st_finish("softmr_dm");
	CHECK(st_counter(name, "dm_allocations") == allocs + 1, "counted");
	for (i = 0; i < 256; i++)
		in[i] = i * 13 + 1;
	CHECK(ibv_memcpy_to_dm(dm, 12, in, 148) == 0, "memcpy_to_dm");
	memset(out, 0, sizeof(out));
	CHECK(ibv_memcpy_from_dm(out, dm, 12, 148) == 0, "memcpy_from_dm");
	CHECK(!memcmp(in, out, 148), "round trip");
	CHECK(ibv_memcpy_from_dm(out, dm, 0, 12) == 0 && !out[0] && !out[11],
	      "fresh DM is zeroed");
	CHECK(ibv_memcpy_to_dm(dm, 100, in, 104) == EINVAL,
	      "memcpy_to_dm past the end");
	CHECK(ibv_memcpy_from_dm(out, dm, 204, 0) == EINVAL,
	      "memcpy_from_dm offset past the end");
	CHECK(ibv_memcpy_to_dm(dm, 200, in, 0) == 0, "empty copy at the end");
	/* 4-byte units, as on ConnectX */
	CHECK(ibv_memcpy_to_dm(dm, 2, in, 4) == EINVAL, "unaligned offset");
	CHECK(ibv_memcpy_from_dm(out, dm, 4, 6) == EINVAL, "unaligned length");

	/* reg_dm_mr: ZERO_BASED required, range inside the DM */
	errno = 0;
	mr = ibv_reg_dm_mr(pd, dm, 0, 100, IBV_ACCESS_LOCAL_WRITE);
	CHECK_ERRNO(mr == NULL, EINVAL, "reg_dm_mr without ZERO_BASED");
	errno = 0;
	mr = ibv_reg_dm_mr(pd, dm, 150, 100, zb);
	CHECK_ERRNO(mr == NULL, EINVAL, "reg_dm_mr beyond the DM");
	mr = ibv_reg_dm_mr(pd, dm, 0, 0, zb);
	CHECK(mr != NULL, "empty DM MR: %s", strerror(errno));
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "dereg empty DM MR");
	errno = 0;
	mr = ibv_reg_dm_mr(pd, dm, 0, 100, IBV_ACCESS_ZERO_BASED |
			   IBV_ACCESS_REMOTE_WRITE);
	CHECK_ERRNO(mr == NULL, EINVAL, "REMOTE_WRITE without LOCAL_WRITE");
	mr = ibv_reg_dm_mr(pd, dm, 8, 128, zb);
	CHECK(mr != NULL, "reg_dm_mr: %s", strerror(errno));
	if (mr) {
		CHECK(mr->lkey == mr->rkey, "lkey == rkey");
		ret = ibv_free_dm(dm);
		CHECK(ret == EBUSY, "free_dm with an MR: %s", strerror(ret));
		CHECK(ibv_memcpy_from_dm(out, dm, 12, 148) == 0 &&
		      !memcmp(in, out, 148), "DM intact after refused free");
		CHECK(ibv_dereg_mr(mr) == 0, "dereg DM MR");
	}
	CHECK(ibv_free_dm(dm) == 0, "free_dm");

	/* alignment: an aligned DM MR offset 0 is the aligned start */
	dm = alloc(ctx, 4096, 16);
	CHECK(dm != NULL, "alloc_dm aligned 64 KiB: %s", strerror(errno));
	if (dm)
		CHECK(ibv_free_dm(dm) == 0, "free aligned");
	errno = 0;
	dm = alloc(ctx, 4096, 40);
	CHECK_ERRNO(dm == NULL, EINVAL, "alignment above the DM size");
	errno = 0;
	dm = alloc(ctx, max + 1, 0);
	CHECK_ERRNO(dm == NULL, EINVAL, "length above max_dm_size");
	errno = 0;
	dm = alloc(ctx, 0, 0);
	CHECK_ERRNO(dm == NULL, EINVAL, "length 0");

	/* exhaustion: ENOMEM, and everything comes back */
	for (i = 0; i < 8; i++)
		dms[i] = alloc(ctx, max / 4, 0);
	CHECK(dms[0] && dms[1] && dms[2] && dms[3], "four quarters");
	CHECK(!dms[4] && errno == ENOMEM, "fifth quarter: ENOMEM (%s)",
	      strerror(errno));
	/* what one process wrote is not what the next allocation reads */
	if (dms[0]) {
		memset(in, 0xee, sizeof(in));
		ibv_memcpy_to_dm(dms[0], 0, in, sizeof(in));
	}
	for (i = 0; i < 8; i++)
		if (dms[i])
			CHECK(ibv_free_dm(dms[i]) == 0, "free quarter");
	dm = alloc(ctx, max, 0);
	CHECK(dm != NULL, "whole DM after frees: %s", strerror(errno));
	if (dm) {
		CHECK(ibv_memcpy_from_dm(out, dm, 0, sizeof(out)) == 0 &&
		      out[0] == 0 && out[255] == 0, "reallocated DM zeroed");
		CHECK(ibv_free_dm(dm) == 0, "free whole");
	}
	CHECK(st_counter(name, "dm_bytes_in_use") == 0, "no DM in use");

	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close");
	return st_finish("softmr_dm");
}
