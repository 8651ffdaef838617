// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_dm - device memory as ibv_alloc_dm(3) describes it: max_dm_size,
 * allocation, alignment, exhaustion (ENOMEM), memcpy round trips with
 * bounds checks, fresh allocations zeroed, reg_dm_mr's ZERO_BASED rule and
 * range checks, EBUSY on free while an MR uses the DM, and counters; the
 * DM mapping (a PFN mapping filled on fault) through fork, mprotect, a
 * hole, mremap, and ibv_reg_mr on it refused.
 *
 * usage: softmr_dm [DEVICE]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "softmr_test.h"
/* the provider's DM object: its mapping */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <infiniband/driver.h>
#include "../providers/softmr/softmr.h"
#pragma GCC diagnostic pop

#define PG 4096
#define MAP_PAGES 4

/* Page @i of the test pattern of seed @seed, at @p. */
static void fill(uint8_t *p, int i, uint8_t seed)
{
	int j;

	for (j = 0; j < PG; j++)
		p[j] = (uint8_t)(seed + i * 31 + j * 7);
}

static int same(const uint8_t *p, int i, uint8_t seed)
{
	uint8_t want[PG];

	fill(want, i, seed);
	return !memcmp(p, want, PG);
}

/*
 * The provider's mapping of a DM allocation: pages reach the same memory
 * as memcpy_to_dm, a forked child sees them (also the ones the parent never
 * touched) and writes back, mprotect keeps them, a hole in the middle
 * leaves the rest, mremap moves them, MAP_PRIVATE and ibv_reg_mr on the
 * mapping are refused.
 */
static void dm_mapping(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_alloc_dm_attr a = { .length = MAP_PAGES * PG };
	uint8_t buf[PG], *map, *moved;
	struct ibv_mr *mr;
	struct ibv_dm *dm;
	int i, st = -1;
	pid_t pid;

	dm = ibv_alloc_dm(ctx, &a);
	CHECK(dm != NULL, "alloc_dm %d pages: %s", MAP_PAGES, strerror(errno));
	if (!dm)
		return;
	map = to_sdm(dm)->addr;
	/* pages 0 and 1 by memcpy_to_dm, page 2 by a store */
	for (i = 0; i < 2; i++) {
		fill(buf, i, 0x31);
		ibv_memcpy_to_dm(dm, i * PG, buf, PG);
	}
	fill(map + 2 * PG, 2, 0x31);
	CHECK(same(map, 0, 0x31) && same(map + PG, 1, 0x31),
	      "the mapping shows what memcpy_to_dm wrote");
	CHECK(ibv_memcpy_from_dm(buf, dm, 2 * PG, PG) == 0 && same(buf, 2, 0x31),
	      "memcpy_from_dm shows what a store through the mapping wrote");

	/* fork: the child reads every page (3 never touched) and writes 3 */
	fflush(stdout);
	pid = fork();
	if (!pid) {
		int ok = same(map, 0, 0x31) && same(map + 2 * PG, 2, 0x31);

		for (i = 0; i < PG && ok; i++)
			ok = !map[3 * PG + i];
		fill(map + 3 * PG, 3, 0x47);
		_exit(ok ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      !WEXITSTATUS(st), "a forked child reads the mapping's pages");
	CHECK(same(map + 3 * PG, 3, 0x47),
	      "a forked child's store is in the shared DM");

	/* the mapping is not memory ibv_reg_mr can pin */
	errno = 0;
	mr = ibv_reg_mr(pd, map, MAP_PAGES * PG, IBV_ACCESS_LOCAL_WRITE);
	CHECK(!mr && errno == EFAULT, "ibv_reg_mr on the DM mapping: EFAULT (%s)",
	      mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);

	/* read-only and back */
	CHECK(mprotect(map, MAP_PAGES * PG, PROT_READ) == 0 &&
	      same(map + PG, 1, 0x31) &&
	      mprotect(map, MAP_PAGES * PG, PROT_READ | PROT_WRITE) == 0,
	      "mprotect read-only keeps the pages");
	map[5] = 0x99;
	CHECK(ibv_memcpy_from_dm(buf, dm, 0, 8) == 0 && buf[5] == 0x99,
	      "stores after mprotect read-write reach DM");
	map[5] = (uint8_t)(0x31 + 5 * 7);

	/*
	 * A hole in the middle, then the last two pages moved away; what is
	 * cut out is refilled with PROT_NONE so that nothing else lands in
	 * the range free_dm unmaps.
	 */
	CHECK(munmap(map + PG, PG) == 0 &&
	      mmap(map + PG, PG, PROT_NONE, MAP_FIXED | MAP_PRIVATE |
		   MAP_ANONYMOUS, -1, 0) == map + PG,
	      "munmap of one page of the mapping");
	CHECK(same(map, 0, 0x31) && same(map + 2 * PG, 2, 0x31),
	      "the pages beside the hole are intact");
	moved = mmap(NULL, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (moved != MAP_FAILED)
		moved = mremap(map + 2 * PG, 2 * PG, 2 * PG,
			       MREMAP_MAYMOVE | MREMAP_FIXED, moved);
	CHECK(moved != MAP_FAILED && moved != map + 2 * PG &&
	      same(moved, 2, 0x31) && same(moved + PG, 3, 0x47),
	      "mremap moves two pages with their bytes");
	if (moved != MAP_FAILED) {
		/* a store at the new address, then back where the provider reads */
		moved[PG] ^= 0xff;
		CHECK(mremap(moved, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED,
			     map + 2 * PG) == map + 2 * PG &&
		      ibv_memcpy_from_dm(buf, dm, 3 * PG, 8) == 0 &&
		      buf[0] == (uint8_t)~(uint8_t)(0x47 + 3 * 31),
		      "a store at the new address reaches DM; mremap moves it back");
	}
	CHECK(ibv_free_dm(dm) == 0, "free_dm after the mapping was cut up");
}

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
	dm_mapping(ctx, pd);
	CHECK(st_counter(name, "dm_bytes_in_use") == 0, "no DM in use");

	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	CHECK(ibv_close_device(ctx) == 0, "close");
	return st_finish("softmr_dm");
}
