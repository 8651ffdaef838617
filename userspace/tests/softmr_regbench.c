// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_regbench [DEVICE] - registration cost by size for pinned, ODP and
 * implicit ODP MRs (ibv_reg_mr + ibv_dereg_mr, median of several runs), and
 * first-touch bandwidth: pinning (reg of untouched memory) against an ODP
 * prefetch of the same memory.  Prints a table; asserts nothing on time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median µs of reg+dereg; -1 on failure.  touch: populate first. */
static double reg_cost(struct ibv_pd *pd, size_t len, int access, int reps)
{
	double t[16];
	void *p;
	int i;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	for (i = 0; i < reps; i++) {
		double t0 = now_us();
		struct ibv_mr *mr = ibv_reg_mr(pd, p, len, access);

		if (!mr) {
			munmap(p, len);
			return -1;
		}
		ibv_dereg_mr(mr);
		t[i] = now_us() - t0;
	}
	munmap(p, len);
	qsort(t, reps, sizeof(t[0]), cmp);
	return t[reps / 2];
}

/* Median µs of an implicit ODP reg+dereg: it covers any size. */
static double implicit_cost(struct ibv_pd *pd, int access, int reps)
{
	double t[16];
	int i;

	for (i = 0; i < reps; i++) {
		double t0 = now_us();
		struct ibv_mr *mr = ibv_reg_mr(pd, NULL, SIZE_MAX, access);

		if (!mr)
			return -1;
		ibv_dereg_mr(mr);
		t[i] = now_us() - t0;
	}
	qsort(t, reps, sizeof(t[0]), cmp);
	return t[reps / 2];
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "softmr0";
	static const size_t sizes[] = { 4096, 65536, 1 << 20, 16 << 20,
					256 << 20, 1UL << 30 };
	int lw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	size_t len = 64 << 20;
	double t0, pin_us, odp_us;
	unsigned int i;
	int n;
	void *p;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < (unsigned int)n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (!ctx || !(pd = ibv_alloc_pd(ctx))) {
		fprintf(stderr, "cannot open %s\n", name);
		return 1;
	}

	printf("%-10s %14s %14s %14s\n", "size", "pinned us", "odp us",
	       "implicit us");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int reps = sizes[i] >= (256 << 20) ? 3 : 9;

		printf("%-10zu %14.1f %14.1f %14.1f\n", sizes[i],
		       reg_cost(pd, sizes[i], lw, reps),
		       reg_cost(pd, sizes[i], lw | IBV_ACCESS_ON_DEMAND, reps),
		       implicit_cost(pd, lw | IBV_ACCESS_ON_DEMAND, reps));
	}

	/* first touch of 64 MiB: pinning faults it in, ODP prefetch too */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t0 = now_us();
	mr = ibv_reg_mr(pd, p, len, lw);
	pin_us = now_us() - t0;
	if (mr)
		ibv_dereg_mr(mr);
	munmap(p, len);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mr = ibv_reg_mr(pd, p, len, lw | IBV_ACCESS_ON_DEMAND);
	if (mr) {
		struct ibv_sge sge = { (uintptr_t)p, (uint32_t)len, mr->lkey };

		t0 = now_us();
		n = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				  IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
		odp_us = n ? -1 : now_us() - t0;
		ibv_dereg_mr(mr);
	} else {
		odp_us = -1;
	}
	munmap(p, len);
	printf("first touch 64 MiB: pin %.0f MB/s, odp prefetch %.0f MB/s, "
	       "odp %.2f us/page\n", len / pin_us, len / odp_us,
	       odp_us / (len / 4096));
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
