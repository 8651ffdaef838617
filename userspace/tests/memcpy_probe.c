// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * memcpy_probe SIZE [SECONDS] - single-thread memcpy bandwidth in MB/s for
 * SIZE-byte copies, the ceiling a one-copy software transport can reach.
 * Copies walk a 64 MiB source and destination so the caches do not flatter
 * large sizes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoul(argv[1], NULL, 0) : 65536;
	double secs = argc > 2 ? atof(argv[2]) : 1.0;
	size_t region = 64 << 20, off = 0;
	unsigned long long bytes = 0;
	char *src, *dst;
	double t0, t;

	if (!size || size > region)
		return 2;
	src = malloc(region);
	dst = malloc(region);
	if (!src || !dst)
		return 1;
	memset(src, 1, region);
	memset(dst, 2, region);
	t0 = now();
	do {
		for (int i = 0; i < 64; i++) {
			if (off + size > region)
				off = 0;
			memcpy(dst + off, src + off, size);
			off += size;
			bytes += size;
		}
		t = now() - t0;
	} while (t < secs);
	if (dst[region / 2] != 1 && bytes > region)
		return 1;
	printf("%.1f\n", bytes / t / 1e6);
	return 0;
}
