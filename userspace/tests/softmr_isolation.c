// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_isolation - memory isolation against an unprivileged attacker.
 *
 * Runs as root: creates what only root can (a root-owned file the attacker
 * may only read, the udmabuf device node), forks the attacker, which drops
 * to uid/gid 65534 for good, and serves as the victim with its own context,
 * MR and device memory.  Each check prints "PASS rule: ..." or
 * "FAIL rule: ..."; the rules:
 *
 *  rereg   (1) pages pinned read-only never become writable: reg_mr with
 *              LOCAL_WRITE on a read-only file mapping fails; rereg_mr
 *              cannot add write access to an MR on it (or what it leaves
 *              cannot write); RDMA WRITE, SEND, atomics and RDMA READ into
 *              it fail with an error completion - pinned MAP_SHARED and
 *              MAP_PRIVATE, explicit ODP and implicit ODP - and the file's
 *              bytes (read() back) are unchanged.
 *  dm      (2) device memory: a mapping that outlives the DM (a forked
 *              child's, an imported context's) neither shows nor reaches
 *              the next allocation of the range by another process; an MR
 *              registered on the DM mapping is refused or does not reach it
 *              either; an exported dma-buf keeps the old allocation's bytes.
 *  keys    (3) lkeys and rkeys of another process, of another PD, freed and
 *              recycled keys reach nothing: error completions, memory
 *              unchanged.
 *  dmabuf  (8) a dma-buf MR keeps working after its fd is closed, for its
 *              own range only, and is unreachable after dereg.
 *
 * The exit status is the number of failed checks.
 *
 * usage: softmr_isolation [DEV]   (root; DEV defaults to softmr0)
 */

#include "softmr_isolation.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <linux/udmabuf.h>

#define PG		4096
#define RO_SIZE		(4 * PG)	/* the read-only files: 4 pages */
#define LBUF		(64 * 1024)	/* the attacker's own buffer */
#define HALF		(LBUF / 2)
#define DM_LEN		(2 * PG)

static const char *dev_name = "softmr0";
static char dir[64];
static char path_shared[128], path_private[128], path_odp[128],
	    path_implicit[128];
static int udmabuf_fd = -1, udmabuf_errno;

/* seeds of the files' contents */
enum { SEED_SHARED = 0x101, SEED_PRIVATE, SEED_ODP, SEED_IMPLICIT };

/* ---------------------------------------------------------------- victim */

enum {
	V_MR_INFO = 1,	/* out: addr, length, lkey, rkey of the victim's MR */
	V_MR_INTACT,	/* out: v[0] = the MR's memory is unchanged */
	V_DM_ALLOC,	/* in: v[0] length; allocate a DM, fill it with secrets */
	V_DM_INTACT,	/* out: v[0] = the DM holds only the secret */
	V_DM_FREE,
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_dm *dm;
	size_t dm_len;
} V;

static void victim_serve(int sock, struct iso_msg *m)
{
	uint8_t *tmp;

	(void)sock;
	if (!V.mr) {
		m->status = ENODEV;
		return;
	}
	switch (m->cmd) {
	case V_MR_INFO:
		m->v[0] = (uintptr_t)V.buf;
		m->v[1] = LBUF;
		m->v[2] = V.mr->lkey;
		m->v[3] = V.mr->rkey;
		break;
	case V_MR_INTACT:
		m->v[0] = iso_is_secret(V.buf, LBUF);
		break;
	case V_DM_ALLOC: {
		struct ibv_alloc_dm_attr a = { .length = m->v[0] };

		V.dm = ibv_alloc_dm(V.ctx, &a);
		if (!V.dm) {
			m->status = errno;
			break;
		}
		V.dm_len = m->v[0];
		tmp = malloc(V.dm_len);
		iso_fill_secret(tmp, V.dm_len);
		m->status = ibv_memcpy_to_dm(V.dm, 0, tmp, V.dm_len);
		free(tmp);
		break;
	}
	case V_DM_INTACT:
		tmp = malloc(V.dm_len);
		m->v[0] = V.dm && !ibv_memcpy_from_dm(tmp, V.dm, 0, V.dm_len) &&
			  iso_is_secret(tmp, V.dm_len);
		free(tmp);
		break;
	case V_DM_FREE:
		if (V.dm)
			m->status = ibv_free_dm(V.dm);
		V.dm = NULL;
		break;
	default:
		m->status = EINVAL;
	}
}

/* -------------------------------------------------------------- attacker */

static struct {
	int sock;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int gid;
	uint8_t *lbuf;		/* [0, HALF) source, [HALF, LBUF) sink */
	struct ibv_mr *lmr;
} A;

enum kind {
	K_WRITE,	/* RDMA WRITE into the target (rkey) */
	K_READ,		/* RDMA READ of the target (rkey) into our sink */
	K_ATOMIC,	/* fetch-and-add on the target (rkey) */
	K_SEND_INTO,	/* SEND whose receive WQE scatters into it (lkey) */
	K_SEND_FROM,	/* SEND gathered from the target (lkey) */
	K_READ_INTO,	/* RDMA READ of our source into the target (lkey) */
};

static const char *const kind_name[] = {
	[K_WRITE] = "RDMA WRITE into it",
	[K_READ] = "RDMA READ of it",
	[K_ATOMIC] = "atomic fetch-add on it",
	[K_SEND_INTO] = "SEND into it",
	[K_SEND_FROM] = "SEND from it",
	[K_READ_INTO] = "RDMA READ into it",
};

/*
 * One attempt on a target range with key @tkey through a fresh RC pair of
 * PD @pd (a is the requester, b the responder).  Return: a's completion
 * status (or ISO_*); *recv_ok is set when b's receive WQE completed
 * successfully.  The sink is zeroed first.
 */
static int attempt(struct ibv_pd *pd, enum kind k, uint64_t taddr,
		   uint32_t len, uint32_t tkey, int *recv_ok)
{
	uint8_t *src = A.lbuf, *sink = A.lbuf + HALF;
	uint32_t lkey = A.lmr->lkey;
	struct iso_qp a, b;
	struct ibv_wc wc;
	int st = ISO_SETUP_FAILED, err;

	*recv_ok = 0;
	iso_fill(src, HALF, 0xa77ac);
	memset(sink, 0, HALF);
	err = iso_rc_pair(A.ctx, pd, A.gid, &a, &b);
	if (err) {
		iso_check("setup", 0, "RC pair: %s", strerror(err));
		goto out;
	}
	switch (k) {
	case K_WRITE:
		st = iso_op(&a, IBV_WR_RDMA_WRITE, (uintptr_t)src, len, lkey,
			    taddr, tkey);
		break;
	case K_READ:
		st = iso_op(&a, IBV_WR_RDMA_READ, (uintptr_t)sink, len, lkey,
			    taddr, tkey);
		break;
	case K_ATOMIC:
		st = iso_op(&a, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)sink,
			    8, lkey, taddr, tkey);
		break;
	case K_SEND_INTO:
		if (iso_post_recv(b.qp, 7, taddr, len, tkey))
			break;
		st = iso_op(&a, IBV_WR_SEND, (uintptr_t)src, len, lkey, 0, 0);
		break;
	case K_SEND_FROM:
		if (iso_post_recv(b.qp, 7, (uintptr_t)sink, len, lkey))
			break;
		st = iso_op(&a, IBV_WR_SEND, taddr, len, tkey, 0, 0);
		break;
	case K_READ_INTO:
		st = iso_op(&a, IBV_WR_RDMA_READ, taddr, len, tkey,
			    (uintptr_t)src, A.lmr->rkey);
		break;
	}
	if (k == K_SEND_INTO || k == K_SEND_FROM) {
		usleep(20000);
		while (ibv_poll_cq(b.cq, 1, &wc) == 1)
			if (wc.status == IBV_WC_SUCCESS &&
			    wc.opcode == IBV_WC_RECV)
				*recv_ok = 1;
	}
out:
	iso_qp_free(&a);
	iso_qp_free(&b);
	return st;
}

/* The operation did not go through: refused or completed in error. */
static int denied(int st, int recv_ok)
{
	return iso_failed(st) && !recv_ok;
}

/* ------------------------------------------------------- rule 1: rereg */

/* The file's bytes (read back through read(), not the mapping) as made. */
static int file_unchanged(const char *path, uint32_t seed)
{
	uint8_t *want = malloc(RO_SIZE), *got = malloc(RO_SIZE);
	int fd = open(path, O_RDONLY), ok;

	iso_fill(want, RO_SIZE, seed);
	ok = fd >= 0 && pread(fd, got, RO_SIZE, 0) == RO_SIZE &&
	     !memcmp(want, got, RO_SIZE);
	if (fd >= 0)
		close(fd);
	free(want);
	free(got);
	return ok;
}

static int errno_denied(int e)
{
	return e == EFAULT || e == EACCES || e == EPERM;
}

/*
 * Every way of writing into @p (the file mapping) through @mr.  In a
 * MAP_PRIVATE mapping (@cow) the pinned pages are the process's own
 * copies (a long-term read-only pin of a private file mapping unshares
 * them): writes may land there, they must not reach the file.
 */
static void write_attempts(const char *what, struct ibv_pd *pd,
			   struct ibv_mr *mr, uint8_t *p, const char *path,
			   uint32_t seed, int cow)
{
	static const enum kind kinds[] = {
		K_WRITE, K_SEND_INTO, K_ATOMIC, K_READ_INTO,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		enum kind k = kinds[i];
		uint64_t t = (uintptr_t)p + i * PG;
		int recv_ok, st, same, no;

		st = attempt(pd, k, t, k == K_ATOMIC ? 8 : PG,
			     k == K_SEND_INTO || k == K_READ_INTO ?
			     mr->lkey : mr->rkey, &recv_ok);
		same = file_unchanged(path, seed);
		no = denied(st, recv_ok);
		iso_check("rereg", same && (no || cow),
			  "%s, %s: %s%s; the read-only file is %s", what,
			  kind_name[k], iso_st(st),
			  !no && cow ? " (into the process's private copy)" : "",
			  same ? "unchanged" : "MODIFIED");
	}
}

/* Is the running kernel older than @major.@minor? */
static int kernel_before(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma < major || (ma == major && mi < minor);
}

/*
 * Whether the device offers ODP: exactly on kernels before 6.16, where
 * softmr has it; without it ODP registration fails with EOPNOTSUPP.
 */
static int has_odp(void)
{
	struct ibv_device_attr_ex dx = {};
	int want = kernel_before(6, 16), have;
	struct ibv_mr *mr;

	if (ibv_query_device_ex(A.ctx, NULL, &dx))
		return 0;
	have = !!(dx.odp_caps.general_caps & IBV_ODP_SUPPORT);
	iso_check("rereg", have == want, "ODP %s on this kernel",
		  have ? "offered" : "not offered");
	if (!have) {
		mr = ibv_reg_mr(A.pd, A.lbuf, PG,
				IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
		iso_check("rereg", !mr && errno == EOPNOTSUPP,
			  "ODP reg_mr without ODP fails with EOPNOTSUPP (%s)",
			  mr ? "succeeded" : strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
	}
	return have;
}

/* Register @p without write access, then try to add it with rereg. */
static void rereg_case(const char *what, uint8_t *p, const char *path,
		       uint32_t seed, int odp, int cow)
{
	int base = odp ? IBV_ACCESS_ON_DEMAND : 0;
	struct ibv_mr *mr;
	int rc;

	mr = ibv_reg_mr(A.pd, p, RO_SIZE, base | IBV_ACCESS_LOCAL_WRITE);
	if (!odp) {
		iso_check("rereg", !mr && errno_denied(errno),
			  "%s: reg_mr with LOCAL_WRITE on the read-only mapping is refused (%s)",
			  what, mr ? "it succeeded" : strerror(errno));
	} else if (mr) {
		/* ODP registers without faulting: its writes must fail */
		iso_info("%s: ODP reg_mr with LOCAL_WRITE on the read-only mapping succeeded (ODP faults at use)",
			 what);
	}
	if (mr)
		ibv_dereg_mr(mr);

	mr = ibv_reg_mr(A.pd, p, RO_SIZE, base);
	if (!mr && errno == EFAULT && !odp && !cow && kernel_before(6, 2)) {
		/*
		 * Seen on Debian's 6.1: its ib_umem_get() refuses a read-only
		 * long-term pin of a shared file mapping.  Nothing is pinned,
		 * so nothing can become writable.
		 */
		iso_check("rereg", file_unchanged(path, seed),
			  "%s: reg_mr without write access is refused by this kernel's ib_umem_get (%s): nothing pinned",
			  what, strerror(errno));
		return;
	}
	if (!mr) {
		iso_check("rereg", 0, "%s: reg_mr without write access: %s",
			  what, strerror(errno));
		return;
	}
	errno = 0;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, A.pd, NULL, 0,
			  base | ISO_RW);
	if (rc)
		iso_check("rereg", errno_denied(errno),
			  "%s: rereg_mr adding LOCAL_WRITE|REMOTE_WRITE|REMOTE_ATOMIC to pages pinned read-only is refused (%s)",
			  what, strerror(errno));
	else
		iso_info("%s: rereg_mr granted write access on read-only pages (keys %#x); its writes must still not reach the file",
			 what, mr->rkey);
	write_attempts(what, A.pd, mr, p, path, seed, cow);
	if (odp && !rc) {
		struct ibv_sge s = { (uintptr_t)p, RO_SIZE, mr->lkey };

		rc = ibv_advise_mr(A.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				   IBV_ADVISE_MR_FLAG_FLUSH, &s, 1);
		iso_check("rereg", rc != 0 && file_unchanged(path, seed),
			  "%s: advise_mr PREFETCH_WRITE on the read-only mapping fails (%s)",
			  what, rc ? strerror(rc) : "it succeeded");
	}
	ibv_dereg_mr(mr);
}

static uint8_t *map_ro(const char *path, int flags, int *fd)
{
	void *p;

	*fd = open(path, O_RDONLY);
	if (*fd < 0)
		return NULL;
	p = mmap(NULL, RO_SIZE, PROT_READ, flags, *fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void test_rereg(void)
{
	struct ibv_mr *imr;
	uint8_t *p, *own;
	int fd, recv_ok, st;

	printf("-- rule 1 (rereg): pages pinned read-only stay read-only\n");
	fd = open(path_shared, O_RDWR);
	iso_check("rereg", fd < 0 && errno == EACCES,
		  "the attacker cannot open the root-owned 0644 file for writing (%s)",
		  fd < 0 ? strerror(errno) : "it can");
	if (fd >= 0)
		close(fd);
	/* the path works for the attacker's own memory */
	st = attempt(A.pd, K_WRITE, (uintptr_t)A.lbuf + HALF, PG,
		     A.lmr->rkey, &recv_ok);
	iso_check("rereg", st == IBV_WC_SUCCESS &&
		  !memcmp(A.lbuf, A.lbuf + HALF, PG),
		  "control: RDMA WRITE into the attacker's own MR works (%s)",
		  iso_st(st));

	p = map_ro(path_shared, MAP_SHARED, &fd);
	if (!p) {
		iso_check("rereg", 0, "map %s: %s", path_shared,
			  strerror(errno));
	} else {
		rereg_case("pinned MAP_SHARED", p, path_shared, SEED_SHARED, 0,
			   0);
		munmap(p, RO_SIZE);
		close(fd);
	}

	p = map_ro(path_private, MAP_PRIVATE, &fd);
	if (!p) {
		iso_check("rereg", 0, "map %s: %s", path_private,
			  strerror(errno));
	} else {
		rereg_case("pinned MAP_PRIVATE", p, path_private,
			   SEED_PRIVATE, 0, 1);
		munmap(p, RO_SIZE);
		close(fd);
	}

	if (!has_odp()) {
		iso_skip("rereg", "explicit and implicit ODP: no ODP on this kernel");
		return;
	}
	p = map_ro(path_odp, MAP_SHARED, &fd);
	if (!p) {
		iso_check("rereg", 0, "map %s: %s", path_odp, strerror(errno));
	} else {
		rereg_case("explicit ODP", p, path_odp, SEED_ODP, 1, 0);
		munmap(p, RO_SIZE);
		close(fd);
	}

	/* implicit ODP covers every address, the read-only file included */
	imr = ibv_reg_mr(A.pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ISO_RW);
	if (!imr) {
		iso_check("rereg", 0, "implicit ODP MR: %s", strerror(errno));
		return;
	}
	own = iso_alloc(PG);
	st = attempt(A.pd, K_WRITE, (uintptr_t)own, PG, imr->rkey, &recv_ok);
	iso_check("rereg", st == IBV_WC_SUCCESS && !memcmp(own, A.lbuf, PG),
		  "control: an implicit ODP MR writes into writable memory (%s)",
		  iso_st(st));
	munmap(own, PG);
	p = map_ro(path_implicit, MAP_SHARED, &fd);
	if (!p) {
		iso_check("rereg", 0, "map %s: %s", path_implicit,
			  strerror(errno));
	} else {
		write_attempts("implicit ODP", A.pd, imr, p, path_implicit,
			       SEED_IMPLICIT, 0);
		munmap(p, RO_SIZE);
		close(fd);
	}
	ibv_dereg_mr(imr);
}

/* ---------------------------------------------------------- rule 2: dm */

static struct ibv_dm *dm_alloc(struct ibv_context *ctx, size_t len)
{
	struct ibv_alloc_dm_attr a = { .length = len };

	return ibv_alloc_dm(ctx, &a);
}

/* An allocation of ours with known bytes (seed @seed). */
static struct ibv_dm *dm_mine(uint32_t seed)
{
	uint8_t tmp[DM_LEN];
	struct ibv_dm *dm = dm_alloc(A.ctx, DM_LEN);

	if (!dm) {
		iso_check("dm", 0, "alloc_dm: %s", strerror(errno));
		return NULL;
	}
	iso_fill(tmp, DM_LEN, seed);
	if (ibv_memcpy_to_dm(dm, 0, tmp, DM_LEN))
		iso_check("dm", 0, "memcpy_to_dm");
	return dm;
}

/* The victim allocates the range we just freed and writes its secret. */
static int victim_dm_alloc(void)
{
	struct iso_msg m = { .v = { DM_LEN } };

	if (iso_call(A.sock, V_DM_ALLOC, &m)) {
		iso_check("dm", 0, "the victim's alloc_dm: %s",
			  strerror(m.status));
		return -1;
	}
	return 0;
}

static int victim_dm_intact(void)
{
	struct iso_msg m = {};

	return !iso_call(A.sock, V_DM_INTACT, &m) && m.v[0];
}

static void victim_dm_free(void)
{
	struct iso_msg m = {};

	iso_call(A.sock, V_DM_FREE, &m);
}

static const char *bytes_seen(const uint8_t *b, size_t n, uint32_t seed)
{
	if (iso_has_secret(b, n))
		return "it shows the other process's secret";
	if (iso_is_filled(b, n, seed))
		return "it keeps the freed allocation's old bytes";
	return "neither the old bytes nor the secret";
}

/* A forked child keeps the mapping; the parent frees the DM. */
static void dm_fork_case(void)
{
	int go[2], res[2];
	uint8_t r[2] = {}, c = 0;
	struct ibv_dm *dm;
	pid_t pid;

	dm = dm_mine(0xd1);
	if (!dm || pipe(go) || pipe(res))
		return;
	fflush(stdout);
	pid = fork();
	if (!pid) {
		uint8_t tmp[DM_LEN];

		close(go[1]);
		close(res[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		ibv_memcpy_from_dm(tmp, dm, 0, DM_LEN);
		r[0] = iso_has_secret(tmp, DM_LEN);
		r[1] = iso_is_filled(tmp, DM_LEN, 0xd1);
		if (write(res[1], r, 2) != 2 || read(go[0], &c, 1) != 1)
			_exit(1);
		memset(tmp, 'Z', DM_LEN);
		ibv_memcpy_to_dm(dm, 0, tmp, DM_LEN);
		if (write(res[1], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(go[0]);
	close(res[1]);
	if (ibv_free_dm(dm))
		iso_check("dm", 0, "free_dm: %s", strerror(errno));
	if (!victim_dm_alloc()) {
		if (write(go[1], &c, 1) != 1 || read(res[0], r, 2) != 2)
			iso_check("dm", 0, "the child did not answer");
		iso_check("dm", !r[0],
			  "a forked child's mapping of a freed DM does not see the next allocation by another process (%s)",
			  r[0] ? "it shows the other process's secret" :
			  r[1] ? "it keeps the old bytes" : "other bytes");
		if (write(go[1], &c, 1) != 1 || read(res[0], &c, 1) != 1)
			iso_check("dm", 0, "the child did not answer");
		iso_check("dm", victim_dm_intact(),
			  "writes through that stale mapping do not reach the other process's DM");
		victim_dm_free();
	}
	close(go[1]);
	close(res[0]);
	waitpid(pid, NULL, 0);
}

/* A second context imports the DM; the first frees it. */
static void dm_import_case(void)
{
	struct ibv_context *ctx2;
	struct ibv_dm *dm, *dm2, *dm3;
	uint8_t tmp[DM_LEN];
	uint32_t handle;
	int fd;

	dm = dm_mine(0xd2);
	if (!dm)
		return;
	fd = dup(A.ctx->cmd_fd);
	ctx2 = fd >= 0 ? ibv_import_device(fd) : NULL;
	dm2 = ctx2 ? ibv_import_dm(ctx2, dm->handle) : NULL;
	if (!dm2) {
		iso_check("dm", 0, "ibv_import_device/ibv_import_dm: %s",
			  strerror(errno));
		ibv_free_dm(dm);
		if (ctx2)
			ibv_close_device(ctx2);
		return;
	}
	handle = dm->handle;
	if (ibv_free_dm(dm))
		iso_check("dm", 0, "free_dm: %s", strerror(errno));
	if (!victim_dm_alloc()) {
		memset(tmp, 0, sizeof(tmp));
		ibv_memcpy_from_dm(tmp, dm2, 0, DM_LEN);
		iso_check("dm", !iso_has_secret(tmp, DM_LEN),
			  "an imported context's mapping of a freed DM does not see the next allocation by another process (%s)",
			  bytes_seen(tmp, DM_LEN, 0xd2));
		memset(tmp, 'Y', DM_LEN);
		ibv_memcpy_to_dm(dm2, 0, tmp, DM_LEN);
		iso_check("dm", victim_dm_intact(),
			  "writes through the imported mapping do not reach the other process's DM");
		victim_dm_free();
	}
	ibv_unimport_dm(dm2);
	errno = 0;
	dm3 = ibv_import_dm(ctx2, handle);
	iso_check("dm", !dm3, "importing the freed DM's handle fails (%s)",
		  dm3 ? "it succeeded" : strerror(errno));
	if (dm3)
		ibv_unimport_dm(dm3);
	ibv_close_device(ctx2);
}

/* ibv_reg_mr on the DM's own mapping, then free_dm. */
static void dm_reg_mr_case(void)
{
	uint8_t *sink = A.lbuf + HALF;
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	void *addr;
	int st, recv_ok, err;

	dm = dm_mine(0xd3);
	if (!dm)
		return;
	addr = to_sdm(dm)->addr;
	mr = ibv_reg_mr(A.pd, addr, DM_LEN, ISO_RW);
	if (!mr) {
		iso_check("dm", errno_denied(errno),
			  "ibv_reg_mr on a DM mapping is refused (%s)",
			  strerror(errno));
		ibv_free_dm(dm);
		return;
	}
	iso_info("ibv_reg_mr on the DM mapping succeeded (rkey %#x); after free_dm it must not reach the range's next owner",
		 mr->rkey);
	err = ibv_free_dm(dm);
	if (err) {
		iso_check("dm", err == EBUSY,
			  "free_dm refused while an MR pins the DM's pages (%s)",
			  strerror(err));
		ibv_dereg_mr(mr);
		ibv_free_dm(dm);
		return;
	}
	if (!victim_dm_alloc()) {
		st = attempt(A.pd, K_READ, (uintptr_t)addr, DM_LEN, mr->rkey,
			     &recv_ok);
		iso_check("dm", !iso_has_secret(sink, DM_LEN),
			  "an MR on a freed DM's mapping does not read the next allocation by another process (%s, %s)",
			  iso_st(st), bytes_seen(sink, DM_LEN, 0xd3));
		st = attempt(A.pd, K_WRITE, (uintptr_t)addr, DM_LEN, mr->rkey,
			     &recv_ok);
		iso_check("dm", victim_dm_intact(),
			  "an MR on a freed DM's mapping does not write into another process's DM (%s)",
			  iso_st(st));
		victim_dm_free();
	}
	ibv_dereg_mr(mr);
}

/* An exported dma-buf keeps the old allocation, not the range. */
static void dm_export_case(void)
{
	uint8_t *sink = A.lbuf + HALF;
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	int fd, st, recv_ok;

	dm = dm_mine(0xd4);
	if (!dm)
		return;
	fd = ibv_dm_export_dmabuf_fd(dm);
	if (fd < 0) {
		iso_check("dm", 0, "ibv_dm_export_dmabuf_fd: %s",
			  strerror(errno));
		ibv_free_dm(dm);
		return;
	}
	if (ibv_free_dm(dm))
		iso_check("dm", 0, "free_dm: %s", strerror(errno));
	if (!victim_dm_alloc()) {
		mr = ibv_reg_dmabuf_mr(A.pd, 0, DM_LEN, 0, fd, ISO_RW);
		if (!mr) {
			iso_check("dm", 0, "reg_dmabuf_mr of the exported DM: %s",
				  strerror(errno));
		} else {
			st = attempt(A.pd, K_READ, 0, DM_LEN, mr->rkey,
				     &recv_ok);
			iso_check("dm", st == IBV_WC_SUCCESS &&
				  iso_is_filled(sink, DM_LEN, 0xd4),
				  "a dma-buf exported from a freed DM keeps its own bytes (%s, %s)",
				  iso_st(st), bytes_seen(sink, DM_LEN, 0xd4));
			st = attempt(A.pd, K_WRITE, 0, DM_LEN, mr->rkey,
				     &recv_ok);
			iso_check("dm", victim_dm_intact(),
				  "writes into that dma-buf do not reach the range's next owner (%s)",
				  iso_st(st));
			ibv_dereg_mr(mr);
		}
		victim_dm_free();
	}
	close(fd);
}

/* A port counter of the device (hw_counters are cached for 10 ms). */
static long long dev_counter(const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	usleep(30000);
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev_name,
		 name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void test_dm(void)
{
	long long used = dev_counter("dm_bytes_in_use");

	printf("-- rule 2 (dm): freed device memory is not reachable from old mappings\n");
	/* the victim's allocation must land on the range we free */
	iso_check("dm", used == 0,
		  "setup: no device memory in use on %s (%lld bytes), so the next allocation reuses a freed range",
		  dev_name, used);
	dm_fork_case();
	dm_import_case();
	dm_reg_mr_case();
	dm_export_case();
}

/* -------------------------------------------------------- rule 3: keys */

static int victim_mr_intact(void)
{
	struct iso_msg m = {};

	return !iso_call(A.sock, V_MR_INTACT, &m) && m.v[0];
}

/* Every use of a foreign key (@lkey, @rkey on [@addr, +@len)). */
static void foreign_key_attempts(const char *whose, uint64_t addr,
				 uint32_t lkey, uint32_t rkey,
				 int (*intact)(void *), void *arg)
{
	static const enum kind kinds[] = {
		K_WRITE, K_ATOMIC, K_READ, K_SEND_FROM, K_SEND_INTO,
		K_READ_INTO,
	};
	uint8_t *sink = A.lbuf + HALF;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		enum kind k = kinds[i];
		int rkey_op = k == K_WRITE || k == K_ATOMIC || k == K_READ;
		int recv_ok, st, same, leak;

		st = attempt(A.pd, k, addr, k == K_ATOMIC ? 8 : PG,
			     rkey_op ? rkey : lkey, &recv_ok);
		same = intact(arg);
		leak = iso_has_secret(sink, HALF);
		iso_check("keys", denied(st, recv_ok) && same && !leak,
			  "%s %s, %s: %s; target memory %s%s", whose,
			  rkey_op ? "rkey" : "lkey", kind_name[k], iso_st(st),
			  same ? "unchanged" : "MODIFIED",
			  leak ? ", its bytes LEAKED" : "");
	}
}

static int intact_victim(void *arg)
{
	(void)arg;
	return victim_mr_intact();
}

static int intact_own(void *arg)
{
	return iso_is_secret(arg, LBUF);
}

static void test_keys(void)
{
	struct iso_msg m = {};
	struct ibv_mr *mr2, *mr3, *mr4;
	struct ibv_pd *pd2;
	uint8_t *buf2, *buf3;
	uint32_t old;
	int i, reused = 0;

	printf("-- rule 3 (keys): foreign, freed and recycled keys reach nothing\n");
	if (iso_call(A.sock, V_MR_INFO, &m)) {
		iso_check("keys", 0, "victim MR info");
		return;
	}
	iso_info("the victim's MR: addr %#" PRIx64 " lkey %#" PRIx64
		 " rkey %#" PRIx64 " (given to the attacker)", m.v[0], m.v[2],
		 m.v[3]);
	foreign_key_attempts("another process's", m.v[0], m.v[2], m.v[3],
			     intact_victim, NULL);

	/* our own memory under another PD's keys (filled like a secret) */
	pd2 = ibv_alloc_pd(A.ctx);
	buf2 = iso_alloc(LBUF);
	mr2 = pd2 && buf2 ? ibv_reg_mr(pd2, buf2, LBUF, ISO_RW) : NULL;
	if (!mr2) {
		iso_check("keys", 0, "second PD and MR: %s", strerror(errno));
	} else {
		iso_fill_secret(buf2, LBUF);
		foreign_key_attempts("another PD's", (uintptr_t)buf2,
				     mr2->lkey, mr2->rkey, intact_own, buf2);
		ibv_dereg_mr(mr2);
	}
	if (pd2)
		ibv_dealloc_pd(pd2);

	/* a freed key, then the same buffer registered again many times */
	buf3 = iso_alloc(LBUF);
	mr3 = buf3 ? ibv_reg_mr(A.pd, buf3, LBUF, ISO_RW) : NULL;
	if (!mr3) {
		iso_check("keys", 0, "reg_mr: %s", strerror(errno));
		return;
	}
	iso_fill_secret(buf3, LBUF);
	old = mr3->rkey;
	ibv_dereg_mr(mr3);
	foreign_key_attempts("a freed", (uintptr_t)buf3, old, old,
			     intact_own, buf3);
	mr4 = NULL;
	for (i = 0; i < 64; i++) {
		if (mr4)
			ibv_dereg_mr(mr4);
		mr4 = ibv_reg_mr(A.pd, buf3, LBUF, ISO_RW);
		if (!mr4)
			break;
		reused |= mr4->lkey == old || mr4->rkey == old;
	}
	iso_check("keys", mr4 && !reused,
		  "64 new registrations of the same buffer never hand out the freed key %#x again",
		  old);
	if (mr4) {
		foreign_key_attempts("a recycled (freed, buffer registered again)",
				     (uintptr_t)buf3, old, old, intact_own,
				     buf3);
		ibv_dereg_mr(mr4);
	}
}

/* ------------------------------------------------------ rule 8: dmabuf */

static void test_dmabuf(void)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC };
	uint8_t *cpu, *snap;
	struct ibv_mr *mr;
	int memfd, fd, st, recv_ok;
	uint32_t rkey;

	printf("-- rule 8 (dmabuf): a dma-buf MR after its fd is closed\n");
	if (udmabuf_fd < 0) {
		iso_skip("dmabuf", "/dev/udmabuf is not available (%s)",
			 strerror(udmabuf_errno));
		return;
	}
	memfd = memfd_create("softmr-iso", MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, LBUF) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		iso_check("dmabuf", 0, "memfd: %s", strerror(errno));
		return;
	}
	c.memfd = memfd;
	c.size = LBUF;
	fd = ioctl(udmabuf_fd, UDMABUF_CREATE, &c);
	cpu = mmap(NULL, LBUF, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	snap = malloc(LBUF);
	if (fd < 0 || cpu == MAP_FAILED) {
		iso_check("dmabuf", 0, "udmabuf: %s", strerror(errno));
		return;
	}
	iso_fill_secret(cpu, LBUF);
	/* the MR covers the first half of the buffer only */
	mr = ibv_reg_dmabuf_mr(A.pd, 0, HALF, 0, fd, ISO_RW);
	if (!mr) {
		iso_check("dmabuf", 0, "reg_dmabuf_mr: %s", strerror(errno));
		close(fd);
		return;
	}
	close(fd);
	rkey = mr->rkey;

	st = attempt(A.pd, K_WRITE, 0, PG, rkey, &recv_ok);
	iso_check("dmabuf", st == IBV_WC_SUCCESS && !memcmp(cpu, A.lbuf, PG),
		  "control: RDMA WRITE into the dma-buf MR after its fd is closed works (%s)",
		  iso_st(st));
	memcpy(snap, cpu, LBUF);
	st = attempt(A.pd, K_WRITE, HALF, PG, rkey, &recv_ok);
	iso_check("dmabuf", denied(st, recv_ok) && !memcmp(snap, cpu, LBUF),
		  "RDMA WRITE past the MR's range (into the rest of the dma-buf): %s; memory %s",
		  iso_st(st), memcmp(snap, cpu, LBUF) ? "MODIFIED" : "unchanged");
	st = attempt(A.pd, K_READ, HALF - 8, 16, rkey, &recv_ok);
	iso_check("dmabuf", denied(st, recv_ok) &&
		  !iso_has_secret(A.lbuf + HALF, HALF),
		  "RDMA READ crossing the MR's end: %s", iso_st(st));
	ibv_dereg_mr(mr);
	memcpy(snap, cpu, LBUF);
	st = attempt(A.pd, K_WRITE, 0, PG, rkey, &recv_ok);
	iso_check("dmabuf", denied(st, recv_ok) && !memcmp(snap, cpu, LBUF),
		  "after dereg the old rkey %#x reaches nothing: %s; memory %s",
		  rkey, iso_st(st),
		  memcmp(snap, cpu, LBUF) ? "MODIFIED" : "unchanged");
	st = attempt(A.pd, K_READ, PG, PG, rkey, &recv_ok);
	iso_check("dmabuf", denied(st, recv_ok) &&
		  !iso_has_secret(A.lbuf + HALF, HALF),
		  "after dereg the old rkey reads nothing: %s", iso_st(st));
	st = attempt(A.pd, K_SEND_FROM, PG, PG, rkey, &recv_ok);
	iso_check("dmabuf", denied(st, recv_ok) &&
		  !iso_has_secret(A.lbuf + HALF, HALF),
		  "after dereg the old lkey gathers nothing: %s", iso_st(st));
	munmap(cpu, LBUF);
	close(memfd);
	free(snap);
}

static void attacker(int sock)
{
	A.sock = sock;
	A.ctx = iso_open(dev_name);
	A.pd = A.ctx ? ibv_alloc_pd(A.ctx) : NULL;
	A.gid = A.ctx ? iso_gid_v4(A.ctx, iso_localhost, NULL) : -1;
	A.lbuf = iso_alloc(LBUF);
	A.lmr = A.pd && A.lbuf ? ibv_reg_mr(A.pd, A.lbuf, LBUF, ISO_RW) : NULL;
	if (!A.lmr || A.gid < 0) {
		iso_check("setup", 0, "attacker context on %s: %s", dev_name,
			  strerror(errno));
		return;
	}
	test_rereg();
	test_dm();
	test_keys();
	test_dmabuf();
	ibv_dereg_mr(A.lmr);
	ibv_dealloc_pd(A.pd);
	ibv_close_device(A.ctx);
}

/* ------------------------------------------------------------- root */

static int make_ro_file(const char *path, uint32_t seed)
{
	uint8_t *b = malloc(RO_SIZE);
	int fd, ok;

	iso_fill(b, RO_SIZE, seed);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ok = fd >= 0 && write(fd, b, RO_SIZE) == RO_SIZE && !fchmod(fd, 0644);
	if (fd >= 0)
		close(fd);
	free(b);
	return ok ? 0 : -1;
}

static int root_setup(void)
{
	strcpy(dir, "/tmp/softmr-iso.XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755))
		return -1;
	snprintf(path_shared, sizeof(path_shared), "%s/ro-shared", dir);
	snprintf(path_private, sizeof(path_private), "%s/ro-private", dir);
	snprintf(path_odp, sizeof(path_odp), "%s/ro-odp", dir);
	snprintf(path_implicit, sizeof(path_implicit), "%s/ro-implicit", dir);
	if (make_ro_file(path_shared, SEED_SHARED) ||
	    make_ro_file(path_private, SEED_PRIVATE) ||
	    make_ro_file(path_odp, SEED_ODP) ||
	    make_ro_file(path_implicit, SEED_IMPLICIT))
		return -1;
	/* the attacker gets the node open; creating buffers is its own */
	udmabuf_fd = open("/dev/udmabuf", O_RDWR);
	udmabuf_errno = errno;
	iso_unlimit_memlock();
	return 0;
}

/* After the fork: the attacker inherits none of this. */
static int victim_init(void)
{
	V.ctx = iso_open(dev_name);
	V.pd = V.ctx ? ibv_alloc_pd(V.ctx) : NULL;
	V.buf = iso_alloc(LBUF);
	if (!V.pd || !V.buf)
		return -1;
	iso_fill_secret(V.buf, LBUF);
	V.mr = ibv_reg_mr(V.pd, V.buf, LBUF, ISO_RW);
	return V.mr ? 0 : -1;
}

static void root_cleanup(void)
{
	if (V.dm)
		ibv_free_dm(V.dm);
	if (V.mr)
		ibv_dereg_mr(V.mr);
	if (V.pd)
		ibv_dealloc_pd(V.pd);
	if (V.ctx)
		ibv_close_device(V.ctx);
	unlink(path_shared);
	unlink(path_private);
	unlink(path_odp);
	unlink(path_implicit);
	rmdir(dir);
	if (udmabuf_fd >= 0)
		close(udmabuf_fd);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		dev_name = argv[1];
	iso_init();
	if (geteuid() != 0) {
		iso_check("setup", 0, "must start as root (sets up, then drops to 65534)");
		return iso_finish("softmr_isolation");
	}
	if (root_setup()) {
		iso_check("setup", 0, "root setup on %s: %s", dev_name,
			  strerror(errno));
		root_cleanup();
		return iso_finish("softmr_isolation");
	}
	iso_run(attacker, victim_serve, victim_init, udmabuf_fd);
	root_cleanup();
	return iso_finish("softmr_isolation");
}
