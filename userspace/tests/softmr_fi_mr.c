// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * fi_mr_reg(3) and fi_mr_regattr(3) through Debian's libfabric verbs
 * provider on a softmr device, with the registrations used by RMA and
 * messages over a connected MSG endpoint pair in one process; data is
 * checked byte for byte, and the errors softmr returns reach libfabric's
 * caller as fi_mr_reg(3) says (a negative fi_errno).
 *
 * Usage: softmr_fi_mr DOMAIN ADDRESS  (e.g. softmr1 10.77.0.1: the verbs
 * provider's MSG endpoints need rdma_cm, which does not route over lo).
 *
 * FI_MR_DMABUF (struct fi_mr_dmabuf) came with libfabric 1.20; Debian 12
 * ships 1.17, whose verbs provider registers dma-bufs only for Level Zero
 * memory.  Without FI_MR_DMABUF in the headers that part is skipped and
 * says so.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include "softmr_test.h"

#define LEN	65536
#define SERVICE	"7471"

struct side {
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_pep *pep;
static struct side srv, cli;

static struct fi_info *hints(const char *dom)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->name = strdup(dom);
	h->fabric_attr->prov_name = strdup("verbs");
	return h;
}

/*
 * One event from @eq without waiting: its type, 0 when there is none yet
 * (reading also drives the verbs provider's address and route resolution),
 * -1 on an error event.
 */
static int eq_poll(struct fid_eq *eq, struct fi_info **info)
{
	struct fi_eq_cm_entry e = {};
	uint32_t ev;
	ssize_t n;

	n = fi_eq_read(eq, &ev, &e, sizeof(e), 0);
	if (n == -FI_EAGAIN)
		return 0;
	if (n < 0) {
		struct fi_eq_err_entry err = {};

		fi_eq_readerr(eq, &err, 0);
		printf("eq: %s (%s)\n", fi_strerror((int)-n),
		       fi_strerror(err.err));
		return -1;
	}
	if (info)
		*info = e.info;
	else
		fi_freeinfo(e.info);
	return (int)ev;
}

/*
 * One completion from @cq within 5 s: 0 for success, else the completion
 * error's err (positive fi_errno) or -1 when nothing came.
 */
static int cq_wait(struct fid_cq *cq, void *ctx)
{
	struct fi_cq_data_entry c;
	struct timespec t0, t;
	ssize_t n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = fi_cq_read(cq, &c, 1);
		if (n == 1)
			return c.op_context == ctx ? 0 : -1;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry e = {};

			fi_cq_readerr(cq, &e, 0);
			return e.err ? e.err : -1;
		}
		if (n != -FI_EAGAIN)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			return -1;
	}
}

static int side_open(struct side *s, struct fi_info *info)
{
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .size = 64 };

	if (fi_eq_open(fabric, &ea, &s->eq, NULL) ||
	    fi_cq_open(domain, &ca, &s->cq, NULL) ||
	    fi_endpoint(domain, info, &s->ep, NULL) ||
	    fi_ep_bind(s->ep, &s->eq->fid, 0) ||
	    fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(s->ep))
		return -1;
	return 0;
}

/* The server's endpoint for a connection request, accepted */
static int accept_req(struct fi_info *req)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .size = 64 };

	/* the accepted endpoint reports on the passive endpoint's EQ */
	if (fi_cq_open(domain, &ca, &srv.cq, NULL) ||
	    fi_endpoint(domain, req, &srv.ep, NULL) ||
	    fi_ep_bind(srv.ep, &srv.eq->fid, 0) ||
	    fi_ep_bind(srv.ep, &srv.cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(srv.ep) || fi_accept(srv.ep, NULL, 0))
		return -1;
	return 0;
}

/* A connected pair: a passive endpoint, a client, the accepted server. */
static int connect_pair(const char *dom, const char *addr)
{
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_info *h = hints(dom), *si = NULL, *ci = NULL, *req = NULL;
	int ret = -1, cli_up = 0, srv_up = 0;
	struct timespec t0, t;

	if (!h)
		return -1;
	if (fi_getinfo(FI_VERSION(1, 5), addr, SERVICE, FI_SOURCE, h, &si) ||
	    fi_getinfo(FI_VERSION(1, 5), addr, SERVICE, 0, h, &ci)) {
		printf("fi_getinfo: no verbs MSG endpoint on %s\n", dom);
		goto out;
	}
	if (fi_fabric(si->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, si, &domain, NULL) ||
	    fi_eq_open(fabric, &ea, &srv.eq, NULL) ||
	    fi_passive_ep(fabric, si, &pep, NULL) ||
	    fi_pep_bind(pep, &srv.eq->fid, 0) || fi_listen(pep))
		goto out;
	if (side_open(&cli, ci) || fi_connect(cli.ep, ci->dest_addr, NULL, 0))
		goto out;
	/* one thread drives both sides: the client's EQ, the server's */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!cli_up || !srv_up) {
		int ev = eq_poll(cli.eq, NULL);

		if (ev < 0)
			goto out;
		cli_up |= ev == FI_CONNECTED;
		ev = eq_poll(srv.eq, req ? NULL : &req);
		if (ev < 0)
			goto out;
		srv_up |= ev == FI_CONNECTED;
		if (ev == FI_CONNREQ && accept_req(req))
			goto out;
		usleep(1000);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			printf("connection: no %s within 10 s\n",
			       !req ? "request" : "establishment");
			goto out;
		}
	}
	ret = 0;
out:
	fi_freeinfo(req);
	fi_freeinfo(ci);
	fi_freeinfo(si);
	fi_freeinfo(h);
	return ret;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed);
}

static struct fid_mr *reg(void *buf, size_t len, uint64_t access, int *err)
{
	struct fid_mr *mr = NULL;

	*err = fi_mr_reg(domain, buf, len, access, 0, 0, 0, &mr, NULL);
	return *err ? NULL : mr;
}

/* fi_mr_regattr with FI_HMEM_SYSTEM: the registration form HMEM users take */
static struct fid_mr *regattr_system(void *buf, size_t len, uint64_t access)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_mr_attr a = {
		.mr_iov = &iov, .iov_count = 1, .access = access,
		.iface = FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr = NULL;

	return fi_mr_regattr(domain, &a, 0, &mr) ? NULL : mr;
}

static void test_errors(void)
{
	const uint64_t rw = FI_READ | FI_WRITE | FI_REMOTE_READ |
			    FI_REMOTE_WRITE;
	struct fid_mr *mr;
	uint8_t *p;
	int err;

	/* memory that is not mapped: ibv_reg_mr's EFAULT */
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	munmap(p, LEN);
	mr = reg(p, LEN, rw, &err);
	CHECK(!mr && err == -FI_EFAULT, "fi_mr_reg of unmapped memory: %s",
	      fi_strerror(-err));
	if (mr)
		fi_close(&mr->fid);

	/* read-only memory with remote write access: EFAULT too */
	p = mmap(NULL, LEN, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	mr = reg(p, LEN, FI_REMOTE_WRITE, &err);
	CHECK(!mr && err == -FI_EFAULT,
	      "fi_mr_reg of read-only memory for FI_REMOTE_WRITE: %s",
	      fi_strerror(-err));
	if (mr)
		fi_close(&mr->fid);
	/*
	 * (The verbs provider adds local write access to every registration
	 * of a domain without FI_LOCAL_MR, so read-only memory cannot be
	 * registered through it at all.)
	 */
	munmap(p, LEN);
}

int main(int argc, char **argv)
{
	const uint64_t rw = FI_READ | FI_WRITE | FI_REMOTE_READ |
			    FI_REMOTE_WRITE;
	uint8_t *a, *b, *c;
	struct fid_mr *ma, *mb, *mc, *mro;
	uint64_t kb, kc;
	int err, st;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DOMAIN ADDRESS\n", argv[0]);
		return 2;
	}
	/*
	 * Without this the verbs provider's registration cache registers
	 * every buffer with all access rights and hands out that key for
	 * any later fi_mr_reg() of the same memory, whatever it asked for:
	 * fi_mr_reg() then is ibv_reg_mr() with the access requested.
	 */
	setenv("FI_MR_CACHE_MAX_COUNT", "0", 1);
	if (connect_pair(argv[1], argv[2])) {
		printf("FAIL: no connected verbs MSG endpoints on %s\n",
		       argv[1]);
		return 1;
	}
	a = aligned_alloc(4096, LEN);
	b = aligned_alloc(4096, LEN);
	c = aligned_alloc(4096, LEN);
	if (!a || !b || !c)
		return 1;
	fill(a, LEN, 3);
	memset(b, 0, LEN);
	memset(c, 0, LEN);

	ma = reg(a, LEN, rw, &err);
	CHECK(ma, "fi_mr_reg: %s", fi_strerror(-err));
	mb = regattr_system(b, LEN, rw);
	CHECK(mb, "fi_mr_regattr FI_HMEM_SYSTEM");
	mc = reg(c, LEN, rw, &err);
	CHECK(mc, "fi_mr_reg: %s", fi_strerror(-err));
	if (!ma || !mb || !mc)
		return st_finish("softmr_fi_mr");
	kb = fi_mr_key(mb);
	kc = fi_mr_key(mc);
	CHECK(kb != FI_KEY_NOTAVAIL && kc != FI_KEY_NOTAVAIL && kb != kc,
	      "provider keys %#llx %#llx", (unsigned long long)kb,
	      (unsigned long long)kc);
	CHECK(fi_mr_desc(ma) && fi_mr_desc(mb), "descriptors");

	/* RMA write into the FI_HMEM_SYSTEM registration (virtual address) */
	st = fi_write(cli.ep, a, LEN, fi_mr_desc(ma), 0, (uintptr_t)b, kb, a);
	CHECK(!st && !cq_wait(cli.cq, a), "fi_write: %d", st);
	CHECK(!memcmp(a, b, LEN), "fi_write's data arrived");

	/* RMA read of part of it back into another registration */
	st = fi_read(cli.ep, c + 100, 5000, fi_mr_desc(mc), 0,
		     (uintptr_t)b + 300, kb, c);
	CHECK(!st && !cq_wait(cli.cq, c), "fi_read: %d", st);
	CHECK(!memcmp(c + 100, a + 300, 5000) && !c[99] && !c[5100],
	      "fi_read's data, and nothing around it");

	/* a message from the server into the client's registered buffer */
	memset(c, 0, LEN);
	fill(b, LEN, 11);
	st = fi_recv(cli.ep, c, LEN, fi_mr_desc(mc), 0, c);
	CHECK(!st, "fi_recv: %d", st);
	st = fi_send(srv.ep, b, 4096, fi_mr_desc(mb), 0, b);
	CHECK(!st && !cq_wait(srv.cq, b) && !cq_wait(cli.cq, c),
	      "fi_send / fi_recv: %d", st);
	CHECK(!memcmp(b, c, 4096) && !c[4096], "the message's data");

	test_errors();

	/*
	 * The access a registration grants is enforced: a remote write into
	 * a registration for remote reads completes in error (the
	 * connection is then in error: last).
	 */
	mro = reg(c, LEN, FI_REMOTE_READ, &err);
	CHECK(mro, "fi_mr_reg FI_REMOTE_READ: %s", fi_strerror(-err));
	if (mro) {
		memset(c, 0, LEN);
		st = fi_write(cli.ep, a, 64, fi_mr_desc(ma), 0, (uintptr_t)c,
			      fi_mr_key(mro), &mro);
		err = st ? -1 : cq_wait(cli.cq, &mro);
		CHECK(err > 0, "fi_write to a read-only registration: %d",
		      err);
		CHECK(!c[0] && !c[63], "nothing was written");
		fi_close(&mro->fid);
	}
#ifndef FI_MR_DMABUF
	SKIP("FI_MR_DMABUF: libfabric %d.%d has no FI_MR_DMABUF (1.20+)",
	     FI_MAJOR(fi_version()), FI_MINOR(fi_version()));
#endif
	fi_close(&ma->fid);
	fi_close(&mb->fid);
	fi_close(&mc->fid);
	fi_close(&cli.ep->fid);
	fi_close(&srv.ep->fid);
	fi_close(&pep->fid);
	fi_close(&cli.cq->fid);
	fi_close(&srv.cq->fid);
	fi_close(&cli.eq->fid);
	fi_close(&srv.eq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	return st_finish("softmr_fi_mr");
}
