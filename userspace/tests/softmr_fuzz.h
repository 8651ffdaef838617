/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The machinery of softmr_fuzz: the PRNG, value generators, call
 * accounting, the kernel log watch and the "world", a set of verbs objects
 * built for one case and torn down whatever state the case left it in.
 *
 * Memory safety of the fuzzer itself: every address handed to the kernel
 * (SGEs, registrations, ioctl output pointers) is either inside memory the
 * fuzzer keeps as scratch (the arena, the output buffer, its rings) or
 * somewhere nothing is mapped (a reserved PROT_NONE hole, page 0, kernel
 * and non-canonical addresses).  An implicit ODP MR covers the whole
 * address space, so a random address could otherwise let the kernel
 * scribble over the fuzzer's heap or stack.
 */
#ifndef SOFTMR_FUZZ_H
#define SOFTMR_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>
#include <rdma/softmr-abi.h>

/* the provider's private structs, to reach the rings (as softmr_qp does) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "../providers/softmr/softmr.h"
#pragma GCC diagnostic pop

#define FZ_N(a)		(sizeof(a) / sizeof((a)[0]))
#define FZ_PAGE		4096UL

/* ---- PRNG: splitmix64, one stream per case ---------------------------- */

static uint64_t fz_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct fz_rng {
	uint64_t s;
};

static struct fz_rng fz_rng;	/* the running case's stream */

static void fz_seed_case(uint64_t seed, uint64_t n, uint64_t role)
{
	fz_rng.s = fz_mix(seed ^ fz_mix(n + 0x5eed) ^ (role << 56));
}

static uint64_t r64(void)
{
	fz_rng.s += 0x9e3779b97f4a7c15ULL;
	return fz_mix(fz_rng.s);
}

static uint32_t rnd(uint64_t n)
{
	return n ? (uint32_t)(r64() % n) : 0;
}

static bool pct(unsigned int p)
{
	return rnd(100) < p;
}

static bool one_in(unsigned int n)
{
	return rnd(n) == 0;
}

static uint32_t fz_u32(void)
{
	static const uint32_t v[] = {
		0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, 127, 128,
		255, 256, 511, 512, 513, 1023, 1024, 4095, 4096, 4097, 65535,
		65536, 0xffffff, 0x1000000, 0x7fffffff, 0x80000000,
		0xfffffffe, 0xffffffff,
	};

	switch (rnd(4)) {
	case 0:
		return (uint32_t)r64();
	case 1:
		return v[rnd(FZ_N(v))] + rnd(3) - 1;
	default:
		return v[rnd(FZ_N(v))];
	}
}

static uint64_t fz_u64(void)
{
	static const uint64_t v[] = {
		0, 1, 4095, 4096, 0xffffffffULL, 0x100000000ULL,
		1ULL << 46, (1ULL << 46) + 1, 1ULL << 47, 1ULL << 63,
		~0ULL, ~0ULL - 4095,
	};

	switch (rnd(3)) {
	case 0:
		return r64();
	case 1:
		return fz_u32();
	default:
		return v[rnd(FZ_N(v))];
	}
}

/* ---- run state --------------------------------------------------------- */

enum fz_kind { K_RING, K_VERBS, K_IOCTL, K_MM, K_FAULT, K_NUM };
static const char *const fz_kind_name[K_NUM] = {
	"ring", "verbs", "ioctl", "mm", "fault",
};

static struct {
	const char *dev_name;
	struct ibv_device *dev;
	uint64_t seed, start, cases, cur;
	double seconds;
	unsigned int kinds;
	bool until_gone, faults, verbose, keep_going, quiet;
	int kind;
	int progress_fd, kmsg_fd, fail_fd;
	int gid_index;
	union ibv_gid gid;
	bool gone;		/* the device went away */
	bool in_child;		/* a forked helper: no reports, no kmsg */
	unsigned long done, kind_done[K_NUM], reports, infos, failures;
	unsigned long calls_ok, calls_err;
	struct timespec t0;
} fz = { .progress_fd = -1, .kmsg_fd = -1, .fail_fd = -1 };

static double fz_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - fz.t0.tv_sec) + (t.tv_nsec - fz.t0.tv_nsec) / 1e9;
}

/* ---- call accounting ---------------------------------------------------- */

struct fz_stat {
	const char *name;
	unsigned long ok, err;
	int last_err;
	uint64_t seen[8];	/* errnos 0..511 already reported as info */
	bool seen_big;
};

static struct fz_stat fz_stats[192];
static unsigned int fz_nstats;

/*
 * Info lines are kept and printed between cases: while fault injection is
 * on, the fuzzer's own writes may fail.
 */
static char fz_info_buf[8192];
static size_t fz_info_len;

static void fz_info(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (fz.in_child || fz_info_len >= sizeof(fz_info_buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(fz_info_buf + fz_info_len,
		      sizeof(fz_info_buf) - fz_info_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		fz_info_len += (size_t)n;
	if (fz_info_len > sizeof(fz_info_buf) - 1)
		fz_info_len = sizeof(fz_info_buf) - 1;
	fz.infos++;
}

static void fz_flush_info(void)
{
	if (fz_info_len && !fz.quiet)
		fputs(fz_info_buf, stdout);
	fz_info_len = 0;
	fz_info_buf[0] = 0;
}

static bool fz_errno_expected(int e)
{
	switch (e) {
	case EPERM: case ENOENT: case ESRCH: case EINTR: case EIO: case ENXIO:
	case E2BIG: case EBADF: case EAGAIN: case ENOMEM: case EACCES:
	case EFAULT: case EBUSY: case EEXIST: case ENODEV: case EINVAL:
	case EMFILE: case ENOSPC: case ESPIPE: case ERANGE: case ENOSYS:
	case EMSGSIZE: case EPROTONOSUPPORT: case EOPNOTSUPP: case EOVERFLOW:
	case ENETUNREACH: case EADDRNOTAVAIL: case EPROTO: case ENOTTY:
	case ETIMEDOUT: case ENOTCONN: case ENOEXEC: case ENODATA:
		return true;
	}
	return false;
}

static struct fz_stat *fz_stat_of(const char *name)
{
	unsigned int i;

	for (i = 0; i < fz_nstats; i++)
		if (fz_stats[i].name == name)
			return &fz_stats[i];
	if (fz_nstats == FZ_N(fz_stats))
		return &fz_stats[fz_nstats - 1];
	fz_stats[fz_nstats].name = name;
	return &fz_stats[fz_nstats++];
}

/* Record one call: @err is 0 for success, else the errno it gave. */
static int fz_note(const char *name, int err)
{
	struct fz_stat *s = fz_stat_of(name);

	if (!err) {
		s->ok++;
		fz.calls_ok++;
		return 0;
	}
	s->err++;
	s->last_err = err;
	fz.calls_err++;
	if (fz_errno_expected(err))
		return err;
	if (err >= 0 && err < 512) {
		if (s->seen[err / 64] & (1ULL << (err % 64)))
			return err;
		s->seen[err / 64] |= 1ULL << (err % 64);
	} else {
		if (s->seen_big)
			return err;
		s->seen_big = true;
	}
	fz_info("info: seed %#llx case %llu: %s failed with errno %d (%s)\n",
		(unsigned long long)fz.seed, (unsigned long long)fz.cur, name,
		err, err ? strerror(err) : "no errno set");
	return err;
}

/* A verb returning 0 or an errno (or -1 with errno set). */
static int fz_rc(const char *name, int ret)
{
	if (ret == 0)
		return fz_note(name, 0);
	return fz_note(name, ret == -1 ? errno : (ret < 0 ? -ret : ret));
}

/* A verb returning an object or NULL with errno set. */
static void *fz_ptr(const char *name, void *p)
{
	int e = errno;

	fz_note(name, p ? 0 : e);
	return p;
}

/* A system call: -1 with errno, else success. */
static long fz_sys(const char *name, long ret)
{
	fz_note(name, ret < 0 ? errno : 0);
	return ret;
}

#define FZ_PTR(call)	({ errno = 0; fz_ptr(#call, (void *)(call)); })

/* ---- memory the fuzzer lends the kernel -------------------------------- */

#define FZ_SLOTS	16
#define FZ_SLOT		(1UL << 20)
#define FZ_MR_SLOTS	12		/* the rest: mremap() targets */
#define FZ_GUARD	(1UL << 20)
#define FZ_HOLE		(64UL << 20)

static uint8_t *fz_arena;	/* FZ_SLOTS slots between two guards */
static uint8_t *fz_hole;	/* PROT_NONE: nothing is ever mapped here */
static uint8_t *fz_ro;		/* one read-only page */
static uint8_t *fz_huge;	/* a 2 MiB hugetlb page, or NULL */
static uint8_t *fz_out;		/* 256 KiB of output scratch */
static uint8_t *fz_in;		/* 64 KiB of random input bytes */
static bool fz_low4g_free;	/* nothing is mapped below 4 GiB */
#define FZ_OUT_SIZE	(256UL << 10)
#define FZ_IN_SIZE	(64UL << 10)

static bool fz_low4g_check(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo;
	bool ok = f != NULL;

	while (f && fscanf(f, "%lx-%*x%*[^\n]", &lo) == 1)
		if (lo < (1UL << 32))
			ok = false;
	if (f)
		fclose(f);
	return ok;
}

static int fz_memory_init(void)
{
	uint8_t *r;

	r = mmap(NULL, FZ_SLOTS * FZ_SLOT + 2 * FZ_GUARD, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return -1;
	fz_arena = r + FZ_GUARD;
	fz_hole = mmap(NULL, FZ_HOLE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	fz_ro = mmap(NULL, FZ_PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fz_out = mmap(NULL, FZ_OUT_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fz_in = mmap(NULL, FZ_IN_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fz_hole == MAP_FAILED || fz_ro == MAP_FAILED ||
	    fz_out == MAP_FAILED || fz_in == MAP_FAILED)
		return -1;
	memset(fz_ro, 0x5a, FZ_PAGE);
	mprotect(fz_ro, FZ_PAGE, PROT_READ);
	fz_low4g_free = fz_low4g_check();
	fz_huge = mmap(NULL, 2UL << 20, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (fz_huge == MAP_FAILED)
		fz_huge = NULL;
	else
		memset(fz_huge, 0, 2UL << 20);
	return 0;
}

/* Fresh zeroed slots for a case: its contents do not depend on others. */
static void fz_arena_reset(void)
{
	mmap(fz_arena, FZ_SLOTS * FZ_SLOT, PROT_READ | PROT_WRITE,
	     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
}

static uint8_t *fz_slot(unsigned int i)
{
	return fz_arena + (size_t)i * FZ_SLOT;
}

/*
 * Is an access starting at @a harmless for the fuzzer's own memory?  True
 * for the low megabyte (never mapped: the programs are PIE) or, when
 * /proc/self/maps shows nothing there at the start, the low 4 GiB (the
 * kernel places mappings top-down, far above), the arena
 * with its PROT_NONE guards, the PROT_NONE hole, the read-only page and
 * anything at or above the end of user space.  An access that starts
 * there and runs on meets a PROT_NONE guard or an unmapped page before it
 * could reach live memory; the read-only page fails any write at its
 * first byte.  (Ring and DM mappings are not offered: a long access could
 * run from them into a neighbouring mapping.)
 */
static bool fz_addr_ok(uint64_t a)
{
	uintptr_t ar = (uintptr_t)fz_arena - FZ_GUARD;

	return a < (1UL << 20) || (fz_low4g_free && a < (1ULL << 32)) ||
	       (a >= ar && a < ar + FZ_SLOTS * FZ_SLOT + 2 * FZ_GUARD) ||
	       (a >= (uintptr_t)fz_hole && a < (uintptr_t)fz_hole + FZ_HOLE) ||
	       (a >= (uintptr_t)fz_ro && a < (uintptr_t)fz_ro + FZ_PAGE) ||
	       a >= 0x0000800000000000ULL;
}

/* An address where a kernel access can only fail or hit scratch memory. */
static uint64_t fz_wild_addr(void)
{
	switch (rnd(10)) {
	case 0:
		return 0;
	case 1:
		return rnd(FZ_PAGE);
	case 2:
		return (uintptr_t)fz_hole + rnd(FZ_HOLE);
	case 3:
		return (uintptr_t)fz_ro + rnd(FZ_PAGE);
	case 4:
		return 0xffff888000000000ULL + (r64() & 0xfffffff8ULL);
	case 5:
		return 0x8000000000000000ULL | r64();
	case 6:
		return ~0ULL - rnd(FZ_PAGE);
	case 7:
		return (uintptr_t)fz_arena - 1 - rnd(FZ_GUARD - 1);
	default:
		return (uintptr_t)fz_arena + rnd(FZ_SLOTS * FZ_SLOT);
	}
}

/* @a if an access there is harmless, else a wild address instead. */
static uint64_t fz_safe(uint64_t a)
{
	return fz_addr_ok(a) ? a : fz_wild_addr();
}

/*
 * The arena and its guards are one unbroken run of anonymous mappings: no
 * hole another mapping could have filled, no ring or file mapped inside.
 * Return: 0, or the address of the first problem.
 */
static uintptr_t fz_arena_check(void)
{
	uintptr_t lo = (uintptr_t)fz_arena - FZ_GUARD;
	uintptr_t hi = (uintptr_t)fz_arena + FZ_SLOTS * FZ_SLOT + FZ_GUARD;
	uintptr_t next = lo, bad = 0;
	unsigned long a, b, ino;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (!bad && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &a, &b, &ino) != 3)
			continue;
		if (b <= lo || a >= hi)
			continue;
		if (a > next || ino)
			bad = a > next ? next : a;
		next = b;
	}
	fclose(f);
	if (!bad && next < hi)
		bad = next;
	return bad;
}

/* A length: mostly small, sometimes huge. */
static uint32_t fz_len(void)
{
	switch (rnd(6)) {
	case 0:
		return fz_u32();
	case 1:
		return 0;
	default:
		return rnd(8192) + 1;
	}
}

/* ---- the kernel log ----------------------------------------------------- */

static const char *const fz_bad[] = {
	"BUG:", "WARNING:", "KASAN", "Oops", "general protection",
	"possible circular locking", "inconsistent lock state",
	"possible recursive locking", "list_add corruption",
	"list_del corruption", "sleeping function called from invalid context",
	"blocked for more than", "hung task", "UBSAN", "refcount_t:",
	"kernel BUG", "Unable to handle", "suspicious RCU usage",
	"Bad page state", "scheduling while atomic", "stack-protector",
	"Invalidate callback should not be called",
};

static void fz_kmsg_open(void)
{
	fz.kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fz.kmsg_fd >= 0)
		lseek(fz.kmsg_fd, 0, SEEK_END);
}

/*
 * New kernel log records since the last look; a line matching fz_bad is a
 * kernel report: print it and what follows it.  Return: reports seen.
 */
static int fz_kmsg_check(void)
{
	char buf[4096];
	int found = 0, tail = 0;

	if (fz.kmsg_fd < 0 || fz.in_child)
		return 0;
	for (;;) {
		ssize_t n = read(fz.kmsg_fd, buf, sizeof(buf) - 1);
		char *msg, *nl;
		unsigned int i;

		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			break;
		buf[n] = 0;
		msg = strchr(buf, ';');
		msg = msg ? msg + 1 : buf;
		nl = strchr(msg, '\n');
		if (nl)
			*nl = 0;
		for (i = 0; i < FZ_N(fz_bad); i++)
			if (strstr(msg, fz_bad[i]))
				break;
		if (i < FZ_N(fz_bad)) {
			if (!found++)
				printf("KERNEL REPORT in seed %#llx case %llu (%s):\n",
				       (unsigned long long)fz.seed,
				       (unsigned long long)fz.cur,
				       fz_kind_name[fz.kind]);
			tail = 60;
		}
		if (tail) {
			char *x;

			/* /dev/kmsg escapes a record's inner newlines */
			while ((x = strstr(msg, "\\x0a")))
				memcpy(x, "  \n ", 4);
			printf("  kernel: %s\n", msg);
			tail--;
		}
	}
	if (found)
		fflush(stdout);
	return found;
}

/* ---- fault injection ------------------------------------------------------ */

#define FZ_DEBUGFS	"/sys/kernel/debug"

static bool fz_write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok;
}

static bool fz_fault_available(void)
{
	return !access(FZ_DEBUGFS "/failslab/probability", W_OK);
}

/* Configure one fault attribute directory (probability 0 turns it off). */
static void fz_fault_attr(const char *dir, unsigned int prob,
			  unsigned int interval, int times)
{
	char path[128], v[32];

	snprintf(path, sizeof(path), FZ_DEBUGFS "/%s/task-filter", dir);
	if (!fz_write_file(path, "Y"))
		return;
	snprintf(v, sizeof(v), "%u", prob);
	snprintf(path, sizeof(path), FZ_DEBUGFS "/%s/probability", dir);
	fz_write_file(path, v);
	snprintf(v, sizeof(v), "%u", interval);
	snprintf(path, sizeof(path), FZ_DEBUGFS "/%s/interval", dir);
	fz_write_file(path, v);
	snprintf(v, sizeof(v), "%d", times);
	snprintf(path, sizeof(path), FZ_DEBUGFS "/%s/times", dir);
	fz_write_file(path, v);
	snprintf(path, sizeof(path), FZ_DEBUGFS "/%s/verbose", dir);
	fz_write_file(path, "0");
	snprintf(path, sizeof(path), FZ_DEBUGFS "/%s/space", dir);
	fz_write_file(path, "0");
	snprintf(path, sizeof(path), FZ_DEBUGFS "/%s/ignore-gfp-wait", dir);
	fz_write_file(path, "N");
	snprintf(path, sizeof(path), FZ_DEBUGFS "/%s/ignore-gfp-highmem", dir);
	fz_write_file(path, "N");
	snprintf(path, sizeof(path), FZ_DEBUGFS "/%s/min-order", dir);
	fz_write_file(path, "0");
}

static void fz_fault_off_all(void)
{
	fz_fault_attr("failslab", 0, 1, -1);
	fz_fault_attr("fail_page_alloc", 0, 1, -1);
	fz_fault_attr("fail_usercopy", 0, 1, -1);
}

/* Make this thread subject to the injected faults, or not. */
static void fz_fail_me(bool on)
{
	int i;

	if (fz.fail_fd < 0)
		return;
	/*
	 * The write itself may meet an injected usercopy fault: retry (the
	 * fault kind arms fail_usercopy with a finite "times").
	 */
	for (i = 0; i < 10000; i++)
		if (pwrite(fz.fail_fd, on ? "1" : "0", 1, 0) == 1)
			return;
	if (!on) {
		static const char msg[] = "FUZZER BUG: make-it-fail stays set\n";

		(void)!write(1, msg, sizeof(msg) - 1);
		_exit(3);
	}
}

/* ---- devices, GIDs ---------------------------------------------------------- */

static struct ibv_context *fz_open(void)
{
	struct ibv_context *ctx;

	if (!fz.dev || fz.gone)
		return NULL;
	errno = 0;
	ctx = ibv_open_device(fz.dev);
	fz_note("open_device", ctx ? 0 : errno);
	if (!ctx && access("/sys/class/infiniband", F_OK) == 0) {
		char path[256];

		/* only ENOENT: an injected fault may fail access() too */
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s",
			 fz.dev_name);
		if (access(path, F_OK) && errno == ENOENT)
			fz.gone = true;
	}
	return ctx;
}

/* The IPv4 RoCE v2 GID, else any RoCE v2 GID, else index 0. */
static void fz_find_gid(struct ibv_context *ctx)
{
	int i, v2 = -1, v4 = -1;
	union ibv_gid gid;

	for (i = 0; i < 32; i++) {
		enum ibv_gid_type_sysfs t;

		if (ibv_query_gid(ctx, 1, i, &gid) ||
		    ibv_query_gid_type(ctx, 1, i, &t) ||
		    t != IBV_GID_TYPE_SYSFS_ROCE_V2)
			continue;
		if (!memcmp(gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
			if (v4 < 0)
				v4 = i;
		} else if (v2 < 0 && (gid.raw[0] || gid.raw[1] || gid.raw[15])) {
			v2 = i;
		}
	}
	fz.gid_index = v4 >= 0 ? v4 : (v2 >= 0 ? v2 : 0);
	if (ibv_query_gid(ctx, 1, fz.gid_index, &fz.gid))
		memset(&fz.gid, 0, sizeof(fz.gid));
}

#endif /* SOFTMR_FUZZ_H */
