/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Shared parts of the isolation tests (softmr_isolation, softmr_isolation_qp):
 * a root process sets up what only root can, forks an attacker that drops
 * to uid/gid 65534 and then serves as the victim: the attacker asks it over
 * a socket to create objects, hand over their keys, numbers and offsets,
 * and to check that its memory is unchanged.  Every check prints one line
 * "PASS rule: ..." or "FAIL rule: ..." naming the isolation rule it proves;
 * the counts live in a shared page, the exit status is the failures.
 */
#ifndef SOFTMR_ISOLATION_H
#define SOFTMR_ISOLATION_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <infiniband/verbs.h>
#include <rdma/softmr-abi.h>

/* the provider's objects: rings, the DM mapping, the doorbell file */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <infiniband/driver.h>
#include "../providers/softmr/softmr.h"
#pragma GCC diagnostic pop

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#define ISO_UID		65534
#define ISO_GID		65534
#define ISO_MTU		IBV_MTU_1024
#define ISO_RW		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
/* the victim's bytes: a pattern nobody else writes */
#define ISO_SECRET	0x5ec2e7u
#define ISO_MARKER	0x5ec2e75ec2e75ec2ull

/* ---- counting and reporting ---- */

struct iso_counts {
	int passed;
	int failed;
	int skipped;
};

static struct iso_counts *iso_cnt;

static inline void iso_init(void)
{
	iso_cnt = mmap(NULL, sizeof(*iso_cnt), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (iso_cnt == MAP_FAILED) {
		perror("mmap");
		exit(100);
	}
	memset(iso_cnt, 0, sizeof(*iso_cnt));
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* One check: "PASS rule: text" or "FAIL rule: text". */
static inline __attribute__((format(printf, 3, 4)))
int iso_check(const char *rule, int ok, const char *fmt, ...)
{
	va_list ap;

	__atomic_fetch_add(ok ? &iso_cnt->passed : &iso_cnt->failed, 1,
			   __ATOMIC_SEQ_CST);
	printf("%s %s: ", ok ? "PASS" : "FAIL", rule);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return ok;
}

static inline __attribute__((format(printf, 2, 3)))
void iso_skip(const char *rule, const char *fmt, ...)
{
	va_list ap;

	__atomic_fetch_add(&iso_cnt->skipped, 1, __ATOMIC_SEQ_CST);
	printf("SKIP %s: ", rule);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline __attribute__((format(printf, 1, 2)))
void iso_info(const char *fmt, ...)
{
	va_list ap;

	printf("  ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline int iso_finish(const char *name)
{
	printf("%s: %d checks passed, %d failed, %d skipped\n", name,
	       iso_cnt->passed, iso_cnt->failed, iso_cnt->skipped);
	return iso_cnt->failed > 100 ? 100 : iso_cnt->failed;
}

/* ---- privileges ---- */

static inline int iso_cap_eff_zero(void)
{
	char line[256];
	int zero = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "CapEff:", 7))
			zero = strtoull(line + 7, NULL, 16) == 0;
	fclose(f);
	return zero;
}

/*
 * Become uid/gid 65534 for good: no supplementary groups, real, effective
 * and saved ids changed, no capabilities left, root not regainable.
 */
static inline int iso_drop_privileges(void)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (setgroups(0, NULL) || setresgid(ISO_GID, ISO_GID, ISO_GID) ||
	    setresuid(ISO_UID, ISO_UID, ISO_UID))
		return -1;
	if (getresuid(&r, &e, &s) || getresgid(&rg, &eg, &sg))
		return -1;
	if (r != ISO_UID || e != ISO_UID || s != ISO_UID || rg != ISO_GID ||
	    eg != ISO_GID || sg != ISO_GID || getgroups(0, NULL) != 0)
		return -1;
	if (setuid(0) == 0 || seteuid(0) == 0)
		return -1;
	return iso_cap_eff_zero() ? 0 : -1;
}

/* Root: no limit on pinned memory, inherited by the attacker. */
static inline void iso_unlimit_memlock(void)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

	setrlimit(RLIMIT_MEMLOCK, &rl);
}

/* ---- victim <-> attacker messages ---- */

struct iso_msg {
	uint32_t cmd;
	int32_t status;		/* reply: 0 or a positive errno */
	uint64_t v[40];
};

enum { ISO_CMD_EXIT = 0 };

static inline int iso_send(int fd, const struct iso_msg *m)
{
	return send(fd, m, sizeof(*m), MSG_NOSIGNAL) == sizeof(*m) ? 0 : -1;
}

static inline int iso_recv(int fd, struct iso_msg *m)
{
	ssize_t n = recv(fd, m, sizeof(*m), 0);

	return n == sizeof(*m) ? 0 : -1;
}

/* Ask the victim: @m->v are the arguments in and the answers out. */
static inline int iso_call(int fd, uint32_t cmd, struct iso_msg *m)
{
	m->cmd = cmd;
	m->status = 0;
	if (iso_send(fd, m) || iso_recv(fd, m)) {
		m->status = EPIPE;
		return -1;
	}
	return m->status ? -1 : 0;
}

/*
 * Fork the attacker: it closes every inherited descriptor but its end of
 * the socket and @keep_fd, drops its privileges, runs @fn and exits.  The
 * caller (root) then sets up the victim (@victim_init, after the fork, so
 * the attacker inherits none of its objects or mappings) and serves @serve
 * with the other end until the attacker sends ISO_CMD_EXIT or goes away.
 */
static inline void iso_run(void (*fn)(int sock),
			   void (*serve)(int sock, struct iso_msg *m),
			   int (*victim_init)(void), int keep_fd)
{
	struct iso_msg m;
	int sv[2], status, fd;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv)) {
		iso_check("setup", 0, "socketpair: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		iso_check("setup", 0, "fork: %s", strerror(errno));
		return;
	}
	if (!pid) {
		struct ibv_device **list;

		for (fd = 3; fd < 1024; fd++)
			if (fd != sv[1] && fd != keep_fd)
				close(fd);
		/*
		 * libibverbs reads its provider list and loads the providers
		 * at the first device list: do that while the rdma-core build
		 * (under root's home) is readable.  Nothing is opened yet.
		 */
		list = ibv_get_device_list(NULL);
		if (list)
			ibv_free_device_list(list);
		if (iso_drop_privileges()) {
			iso_check("privileges", 0,
				  "could not become uid/gid 65534: %s",
				  strerror(errno));
			_exit(1);
		}
		/* the victim dying must not leave us waiting for ever (set
		 * after the uid change, which clears it)
		 */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		iso_check("privileges", getuid() == ISO_UID &&
			  geteuid() == ISO_UID && getgid() == ISO_GID,
			  "the attacker runs as uid/gid 65534, no groups, no capabilities, root not regainable");
		fn(sv[1]);
		memset(&m, 0, sizeof(m));
		m.cmd = ISO_CMD_EXIT;
		iso_send(sv[1], &m);
		close(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	if (victim_init && victim_init())
		iso_check("setup", 0, "victim setup: %s", strerror(errno));
	while (!iso_recv(sv[0], &m) && m.cmd != ISO_CMD_EXIT) {
		m.status = 0;
		serve(sv[0], &m);
		if (iso_send(sv[0], &m))
			break;
	}
	close(sv[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		iso_check("attacker", 0,
			  "the attacker process ended badly (status %#x)",
			  status);
}

/* ---- devices and GIDs ---- */

static inline struct ibv_context *iso_open(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

/*
 * The RoCE v2 GID index of an IPv4 address of @ctx: @ip4 (4 bytes) or, with
 * NULL, the first IPv4 one.  -1 when there is none.
 */
static inline int iso_gid_v4(struct ibv_context *ctx, const uint8_t *ip4,
			     union ibv_gid *out)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	union ibv_gid gid;
	int i;

	for (i = 0; i < 64; i++) {
		enum ibv_gid_type_sysfs t;

		if (ibv_query_gid(ctx, 1, i, &gid))
			continue;
		if (memcmp(gid.raw, v4mapped, 12) ||
		    (ip4 && memcmp(gid.raw + 12, ip4, 4)))
			continue;
		if (ibv_query_gid_type(ctx, 1, i, &t) ||
		    t != IBV_GID_TYPE_SYSFS_ROCE_V2)
			continue;
		if (out)
			*out = gid;
		return i;
	}
	return -1;
}

static const uint8_t iso_localhost[4] = { 127, 0, 0, 1 };

/* ---- QPs ---- */

struct iso_qp {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static inline int iso_qp_new(struct ibv_context *ctx, struct ibv_pd *pd,
			     enum ibv_qp_type type, struct iso_qp *q)
{
	struct ibv_qp_init_attr init = {
		.qp_type = type,
		.cap = {
			.max_send_wr = 16, .max_recv_wr = 16,
			.max_send_sge = 4, .max_recv_sge = 4,
			.max_inline_data = 64,
		},
	};

	q->qp = NULL;
	q->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!q->cq)
		return -1;
	init.send_cq = init.recv_cq = q->cq;
	q->qp = ibv_create_qp(pd, &init);
	if (!q->qp) {
		int e = errno;

		ibv_destroy_cq(q->cq);
		q->cq = NULL;
		errno = e;
		return -1;
	}
	return 0;
}

static inline void iso_qp_free(struct iso_qp *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->cq)
		ibv_destroy_cq(q->cq);
	q->qp = NULL;
	q->cq = NULL;
}

/*
 * RESET -> INIT -> RTR -> RTS towards @dqpn at @dgid, sending from GID
 * @sgid_idx.  PSNs as given (the responder's rq_psn must equal what the
 * requester starts with, as in the IB spec).  Return: 0 or an errno.
 */
static inline int iso_connect(struct ibv_qp *qp, int sgid_idx,
			      const union ibv_gid *dgid, uint32_t dqpn,
			      uint32_t rq_psn, uint32_t sq_psn, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = access,
	};
	int err;

	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ISO_MTU;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = sgid_idx;
	a.ah_attr.grh.dgid = *dgid;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 8;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static inline int iso_reset(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static inline int iso_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &i))
		return -1;
	return a.qp_state;
}

/* Two RC QPs of one context connected to each other over @gid_idx. */
static inline int iso_rc_pair(struct ibv_context *ctx, struct ibv_pd *pd,
			      int gid_idx, struct iso_qp *a, struct iso_qp *b)
{
	union ibv_gid gid;
	int err;

	a->qp = b->qp = NULL;
	a->cq = b->cq = NULL;
	if (ibv_query_gid(ctx, 1, gid_idx, &gid))
		return errno ?: EINVAL;
	if (iso_qp_new(ctx, pd, IBV_QPT_RC, a) ||
	    iso_qp_new(ctx, pd, IBV_QPT_RC, b))
		return errno ?: ENOMEM;
	err = iso_connect(a->qp, gid_idx, &gid, b->qp->qp_num, 100, 200,
			  ISO_RW);
	if (!err)
		err = iso_connect(b->qp, gid_idx, &gid, a->qp->qp_num, 200,
				  100, ISO_RW);
	return err;
}

/* Wait up to 5 s for one completion; 0 when it came. */
static inline int iso_wait(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n == 1 ? 0 : -1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			return -1;
		usleep(200);
	}
}

/* Completions that arrive within @ms milliseconds. */
static inline int iso_count_wc(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;
	int n = 0;

	usleep(ms * 1000);
	while (ibv_poll_cq(cq, 1, &wc) == 1)
		n++;
	return n;
}

/* Outcome of one operation: an ibv_wc_status, or one of these. */
#define ISO_SETUP_FAILED	(-3)	/* the QPs for it could not be made */
#define ISO_POST_REFUSED	(-2)	/* post_send itself failed */
#define ISO_NO_COMPLETION	(-1)

static inline const char *iso_st(int st)
{
	if (st == ISO_POST_REFUSED)
		return "post refused";
	if (st == ISO_NO_COMPLETION)
		return "no completion";
	if (st == ISO_SETUP_FAILED)
		return "setup failed";
	return ibv_wc_status_str(st);
}

/* Refused or completed in error: the attempt did not go through. */
static inline int iso_failed(int st)
{
	return st == ISO_POST_REFUSED || st >= 1;
}

/*
 * Post one signaled send WR on @q with a one-entry gather/scatter list and
 * return its completion status.  @op: IBV_WR_*; rdma and atomic fields as
 * the opcode needs.
 */
static inline int iso_op(struct iso_qp *q, enum ibv_wr_opcode op,
			 uint64_t laddr, uint32_t len, uint32_t lkey,
			 uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = { .addr = laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0x150,
		.sg_list = &s,
		.num_sge = len ? 1 : 0,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 0x1111;
		wr.wr.atomic.swap = 0x2222;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(q->qp, &wr, &bad))
		return ISO_POST_REFUSED;
	if (iso_wait(q->cq, &wc))
		return ISO_NO_COMPLETION;
	return wc.status;
}

static inline int iso_post_recv(struct ibv_qp *qp, uint64_t id, uint64_t addr,
				uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 },
			   *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* ---- memory ---- */

static inline void iso_fill(void *p, size_t n, uint32_t seed)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)((i * 131 + seed * 7 + (seed >> 8)) ^ (i >> 9));
}

static inline int iso_is_filled(const void *p, size_t n, uint32_t seed)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != (uint8_t)((i * 131 + seed * 7 + (seed >> 8)) ^
				      (i >> 9)))
			return 0;
	return 1;
}

/* The victim's memory: ISO_MARKER in every 8-byte word. */
static inline void iso_fill_secret(void *p, size_t n)
{
	uint64_t *w = p;
	size_t i;

	for (i = 0; i < n / 8; i++)
		w[i] = ISO_MARKER;
}

static inline int iso_is_secret(const void *p, size_t n)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < n / 8; i++)
		if (w[i] != ISO_MARKER)
			return 0;
	return 1;
}

/* Does @p hold any word of the victim's secret? */
static inline int iso_has_secret(const void *p, size_t n)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < n / 8; i++)
		if (w[i] == ISO_MARKER)
			return 1;
	return 0;
}

static inline void *iso_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* ---- mappings of the uverbs file ---- */

struct iso_map {
	uint64_t start, end, offset;
	int writable;
};

/* This process's mappings of /dev/infiniband/uverbs*: their number. */
static inline int iso_uverbs_maps(struct iso_map *m, int max)
{
	char line[512], perms[8];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;

		if (!strstr(line, "/dev/infiniband/uverbs"))
			continue;
		if (sscanf(line, "%llx-%llx %7s %llx", &s, &e, perms, &off) != 4)
			continue;
		m[n].start = s;
		m[n].end = e;
		m[n].offset = off;
		m[n].writable = perms[1] == 'w';
		n++;
	}
	fclose(f);
	return n;
}

#endif /* SOFTMR_ISOLATION_H */
