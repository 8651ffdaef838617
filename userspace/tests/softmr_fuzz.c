// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_fuzz - a seedable, reproducible, bounded fuzzer for what softmr
 * offers user space: its mapped work queue rings and doorbells, its driver
 * ioctl methods, the verbs with random arguments, memory going away under
 * registered MRs in two processes at once, and (on kernels that have it)
 * fault injection around registration and creation.
 *
 * usage: softmr_fuzz DEV [--seed S] [--start N] [--cases N] [--seconds T]
 *                        [--kinds ring,verbs,ioctl,mm,fault] [--remove]
 *                        [--progress FILE] [--keep-going] [--verbose]
 *
 * Cases are numbered from 0.  Case n draws its random numbers from a
 * stream of (seed, n) alone.  Cases come in rounds of FZ_ROUND: a round
 * has one kind and one world (a context with PDs, MRs of every kind, CQs,
 * QPs, an SRQ, AHs, DM) built from a stream of (seed, round), so case n
 * also depends on the cases of its round before it.  "--start N --cases 1"
 * therefore replays case N exactly: it builds N's round and runs the
 * round's cases before N first (not counted).  What a case is:
 *
 *   ring   one batch of 1..8 WQEs written into one mapped SQ/RQ/SRQ ring,
 *          the index games around it, the doorbells, a drain of the CQs
 *   ioctl  one RDMA_VERBS_IOCTL (a driver method, mutated)
 *   verbs  one verbs call with random arguments
 *   mm     one ring case while a thread and a forked child (with traffic
 *          to this process) unmap, zap, move and protect registered memory
 *   fault  one creation/registration verb with failslab, fail_page_alloc
 *          and fail_usercopy armed for this thread
 *
 * The verdict is the kernel log: any report (fz_bad in softmr_fuzz.h) is a
 * failure, printed with the seed, the case and the replay command.  Calls
 * may fail with any errno; one outside the expected set is printed once
 * per call as an info line.  Exit: 0 clean, 1 kernel report, 2 setup, 3
 * fuzzer crash or stall.
 */

#define _GNU_SOURCE
#include <getopt.h>
#include <sys/prctl.h>
#include <sys/random.h>

#include "softmr_fuzz_fault.h"
#include "softmr_fuzz_mm.h"

#define FZ_ROUND	128
#define FZ_STALL_S	300	/* one round taking longer: a stall */

static const unsigned int fz_weight[K_NUM] = {
	[K_RING] = 50, [K_VERBS] = 15, [K_IOCTL] = 15, [K_MM] = 8,
	[K_FAULT] = 12,
};

static const char *fz_progress_path;
static int fz_fd_floor;
static unsigned long fz_swept, fz_rounds, fz_round_fail;
static bool fz_ro_reported;

static void fz_usage(void)
{
	fprintf(stderr,
		"usage: softmr_fuzz DEV [--seed S] [--start N] [--cases N] [--seconds T]\n"
		"                       [--kinds ring,verbs,ioctl,mm,fault] [--remove]\n"
		"                       [--progress FILE] [--keep-going] [--verbose]\n");
	exit(2);
}

static void fz_replay_line(char *buf, size_t len, uint64_t n)
{
	snprintf(buf, len, "replay: softmr_fuzz %s --seed %#llx --start %llu --cases 1 --kinds %s\n",
		 fz.dev_name, (unsigned long long)fz.seed,
		 (unsigned long long)n, fz_kind_name[fz.kind]);
}

/*
 * SIGSEGV, SIGBUS, SIGALRM: say where, then die (a fault returns to the
 * faulting instruction with the default action: a core dump).
 */
static void fz_fatal(int sig, siginfo_t *si, void *uc)
{
	char buf[512];
	int n;

	(void)uc;
	n = snprintf(buf, sizeof(buf),
		     "FUZZER %s (address %p) in pid %d, seed %#llx case %llu (%s)%s\n",
		     sig == SIGALRM ? "STALL (a round ran for 300 s)" :
		     strsignal(sig), si ? si->si_addr : NULL, (int)getpid(),
		     (unsigned long long)fz.seed, (unsigned long long)fz.cur,
		     fz_kind_name[fz.kind],
		     fz.in_child ? " in the mm child" : "");
	(void)!write(1, buf, n);
	fz_replay_line(buf, sizeof(buf), fz.cur);
	(void)!write(1, buf, strlen(buf));
	if (fz.fail_fd >= 0)
		(void)!pwrite(fz.fail_fd, "0", 1, 0);
	if (sig == SIGALRM)
		_exit(3);
}

/* Where the campaign is, for a VM that dies: a file and the task name. */
static void fz_progress(uint64_t round)
{
	char buf[160], name[24];
	int n;

	snprintf(name, sizeof(name), "fz%llu",
		 (unsigned long long)(round * FZ_ROUND));
	name[15] = 0;
	prctl(PR_SET_NAME, name);
	if (fz.progress_fd < 0)
		return;
	n = snprintf(buf, sizeof(buf),
		     "seed %#llx round %llu cases %llu..%llu kind %s%-20s\n",
		     (unsigned long long)fz.seed, (unsigned long long)round,
		     (unsigned long long)(round * FZ_ROUND),
		     (unsigned long long)(round * FZ_ROUND + FZ_ROUND - 1),
		     fz_kind_name[fz.kind], "");
	(void)!pwrite(fz.progress_fd, buf, n, 0);
}

static int fz_pick_kind(void)
{
	unsigned int t = 0, r, k;

	for (k = 0; k < K_NUM; k++)
		if (fz.kinds & (1U << k))
			t += fz_weight[k];
	r = rnd(t);
	for (k = 0; k < K_NUM; k++) {
		if (!(fz.kinds & (1U << k)))
			continue;
		if (r < fz_weight[k])
			return k;
		r -= fz_weight[k];
	}
	return K_RING;
}

/* Is the device still there? */
static bool fz_dev_present(void)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", fz.dev_name);
	return !access(path, F_OK) || errno != ENOENT;
}

static bool fz_round_begin(uint64_t round)
{
	fz_seed_case(fz.seed, round, 0x77);
	fz.kind = fz_pick_kind();
	fz_progress(round);
	alarm(FZ_STALL_S);
	fz_arena_reset();
	fz_rounds++;
	if (!fz_world_build(fz.kind == K_MM)) {
		fz_round_fail++;
		/* a half-built world (a device going away): no case runs on it */
		fz_world_destroy();
		if (!fz_dev_present())
			fz.gone = true;
		return false;
	}
	if (fz.kind == K_MM)
		fz_mm_begin(round);
	if (fz.kind == K_FAULT)
		fz_fault_begin();
	return true;
}

/* Close what the round's calls left open (fds returned by ioctls...). */
static void fz_fd_sweep(void)
{
	int fd;

	for (fd = fz_fd_floor; fd < fz_fd_floor + 256; fd++)
		if (fcntl(fd, F_GETFD) >= 0) {
			close(fd);
			fz_swept++;
		}
}

static void fz_round_end(void)
{
	uintptr_t hole;
	unsigned int i;

	if (fz.kind == K_MM)
		fz_mm_end();
	if (fz.kind == K_FAULT)
		fz_fault_end();
	fz_world_destroy();
	fz_fd_sweep();
	alarm(0);
	hole = fz_arena_check();
	if (hole) {
		printf("FUZZER BUG: the arena has a hole or a foreign mapping at %#lx (seed %#llx, round of case %llu)\n",
		       (unsigned long)hole, (unsigned long long)fz.seed,
		       (unsigned long long)fz.cur);
		exit(3);
	}
	for (i = 0; i < FZ_PAGE; i++)
		if (fz_ro[i] != 0x5a)
			break;
	if (i < FZ_PAGE && !fz_ro_reported) {
		printf("MEMORY CORRUPTION: the read-only page changed (seed %#llx, in the round of case %llu)\n",
		       (unsigned long long)fz.seed,
		       (unsigned long long)fz.cur);
		fz.reports++;
		fz_ro_reported = true;
	}
}

static void fz_run_case(uint64_t n)
{
	fz.cur = n;
	fz_seed_case(fz.seed, n, 0);
	if (!W.ctx)
		return;
	switch (fz.kind) {
	case K_RING:
		fz_ring_case();
		break;
	case K_VERBS:
		fz_verbs_case();
		break;
	case K_IOCTL:
		fz_ioctl_case();
		break;
	case K_MM:
		fz_mm_case();
		break;
	case K_FAULT:
		fz_fault_case();
		break;
	}
}

/* After a case: its info lines, the kernel log.  False: stop. */
static bool fz_after_case(uint64_t n)
{
	char buf[512];

	fz_flush_info();
	if (!fz_kmsg_check())
		return true;
	fz.reports++;
	fz_replay_line(buf, sizeof(buf), n);
	printf("  (the report came during or after case %llu)\n  %s",
	       (unsigned long long)n, buf);
	fflush(stdout);
	return fz.keep_going;
}

static unsigned int fz_parse_kinds(const char *s)
{
	unsigned int m = 0, k;
	char *dup = strdup(s), *save = NULL, *t;

	for (t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < K_NUM; k++)
			if (!strcmp(t, fz_kind_name[k]))
				break;
		if (k == K_NUM) {
			fprintf(stderr, "softmr_fuzz: unknown kind %s\n", t);
			fz_usage();
		}
		m |= 1U << k;
	}
	free(dup);
	return m;
}

static void fz_parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "start", required_argument, NULL, 'n' },
		{ "cases", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 't' },
		{ "kinds", required_argument, NULL, 'k' },
		{ "remove", no_argument, NULL, 'r' },
		{ "progress", required_argument, NULL, 'p' },
		{ "keep-going", no_argument, NULL, 'g' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{}
	};
	bool seeded = false;
	int c;

	fz.cases = 10000;
	fz.kinds = (1U << K_NUM) - 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			fz.seed = strtoull(optarg, NULL, 0);
			seeded = true;
			break;
		case 'n':
			fz.start = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			fz.cases = strtoull(optarg, NULL, 0);
			break;
		case 't':
			fz.seconds = strtod(optarg, NULL);
			break;
		case 'k':
			fz.kinds = fz_parse_kinds(optarg);
			break;
		case 'r':
			fz.until_gone = true;
			break;
		case 'p':
			fz_progress_path = optarg;
			break;
		case 'g':
			fz.keep_going = true;
			break;
		case 'v':
			fz.verbose = true;
			break;
		case 'q':
			fz.quiet = true;
			break;
		default:
			fz_usage();
		}
	}
	if (optind != argc - 1 || !fz.kinds)
		fz_usage();
	/* a report during a removal must not hide whether the fuzzer stops */
	if (fz.until_gone)
		fz.keep_going = true;
	fz.dev_name = argv[optind];
	if (!seeded && getrandom(&fz.seed, sizeof(fz.seed), 0) !=
	    sizeof(fz.seed))
		fz.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
}

/* The device, its GID, the memory, the persistent fds. */
static int fz_setup(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct sigaction sa = { .sa_sigaction = fz_fatal,
				.sa_flags = SA_RESETHAND | SA_SIGINFO };
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), fz.dev_name))
			fz.dev = list[i];
	if (!fz.dev) {
		printf("fuzz: no device %s\n", fz.dev_name);
		return -1;
	}
	ctx = ibv_open_device(fz.dev);
	if (!ctx) {
		printf("fuzz: cannot open %s: %s\n", fz.dev_name,
		       strerror(errno));
		return -1;
	}
	fz_find_gid(ctx);
	ibv_close_device(ctx);
	if (fz_memory_init()) {
		printf("fuzz: no memory\n");
		return -1;
	}
	fz_seed_case(fz.seed, 0, 0xfe);
	for (i = 0; i < (int)(FZ_IN_SIZE / 8); i++)
		((uint64_t *)fz_in)[i] = r64();
	fz_dmabuf_init();
	if ((fz.kinds & (1U << K_FAULT)) && !fz_fault_init())
		fz.kinds &= ~(1U << K_FAULT);
	if (!fz.kinds)
		fz.kinds = 1U << K_RING;
	fz_kmsg_open();
	if (fz_progress_path)
		fz.progress_fd = open(fz_progress_path, O_WRONLY | O_CREAT |
				      O_TRUNC | O_CLOEXEC, 0644);
	/* above every fd open now (there may be holes below) */
	for (i = 0; i < 1024; i++)
		if (fcntl(i, F_GETFD) >= 0)
			fz_fd_floor = i + 1;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static void fz_summary(void)
{
	double t = fz_now();
	unsigned int k, i;

	printf("fuzz: seed %#llx: %lu cases in %.1f s, %.0f cases/min (",
	       (unsigned long long)fz.seed, fz.done, t,
	       t > 0 ? fz.done * 60.0 / t : 0.0);
	for (k = 0; k < K_NUM; k++)
		printf("%s%s %lu", k ? ", " : "", fz_kind_name[k],
		       fz.kind_done[k]);
	printf(")\n");
	printf("fuzz: %lu rounds (%lu without a world), %lu calls succeeded, %lu failed with an errno, %lu completions (%lu in error), %lu mm operations, %lu fds swept, %lu info lines\n",
	       fz_rounds, fz_round_fail, fz.calls_ok, fz.calls_err, W.wcs,
	       W.wc_err, fz_mm.ops, fz_swept, fz.infos);
	if (fz.verbose) {
		for (i = 0; i < fz_nstats; i++)
			printf("  %-40.40s %9lu ok %9lu errno (last %s)\n",
			       fz_stats[i].name, fz_stats[i].ok,
			       fz_stats[i].err, fz_stats[i].err ?
			       strerror(fz_stats[i].last_err) : "-");
		printf("  completions:");
		for (i = 0; i < 32; i++)
			if (fz_wc_status[i])
				printf(" %s %lu", ibv_wc_status_str(i),
				       fz_wc_status[i]);
		printf("\n");
	}
	printf("fuzz: %lu kernel reports\n", fz.reports);
}

int main(int argc, char **argv)
{
	uint64_t n, m, round = ~0ULL;
	unsigned long wcs = 0, wc_err = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	fz_parse(argc, argv);
	printf("fuzz: %s seed %#llx start %llu cases %llu seconds %.0f%s\n",
	       fz.dev_name, (unsigned long long)fz.seed,
	       (unsigned long long)fz.start, (unsigned long long)fz.cases,
	       fz.seconds, fz.until_gone ? " (until the device goes)" : "");
	if (fz_setup())
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &fz.t0);
	for (n = fz.start; fz.done < fz.cases; n++) {
		if (fz.seconds > 0 && fz_now() >= fz.seconds)
			break;
		if (n / FZ_ROUND != round) {
			if (round != ~0ULL) {
				fz_round_end();
				if (!fz_after_case(n - 1))
					break;
			}
			wcs += W.wcs;
			wc_err += W.wc_err;
			round = n / FZ_ROUND;
			fz_round_begin(round);
			if (fz.gone)
				break;
			/* a replay from inside a round: the round's start */
			for (m = round * FZ_ROUND; m < n; m++) {
				fz_run_case(m);
				fz_flush_info();
			}
		}
		fz_run_case(n);
		fz.done++;
		fz.kind_done[fz.kind]++;
		if (!fz_after_case(n))
			break;
	}
	if (round != ~0ULL && !fz.gone)
		fz_round_end();
	else if (fz.gone)
		fz_world_destroy();
	fz_after_case(n);
	W.wcs += wcs;
	W.wc_err += wc_err;
	fz_summary();
	if (fz.until_gone)
		printf("fuzz: device %s %s\n", fz.dev_name,
		       fz.gone ? "went away: the fuzzer saw errors and stopped" :
		       "is still there");
	return fz.reports ? 1 : 0;
}
