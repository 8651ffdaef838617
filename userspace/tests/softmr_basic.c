// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr_basic - the foundation seen from a libibverbs program: the device
 * opens through the softmr provider, reports honest attributes, allocates
 * and frees PDs, refuses what is not implemented with EOPNOTSUPP, and its
 * driver ioctl and status page behave (including their error answers).
 *
 * usage: softmr_basic [DEVICE]          run the checks (default softmr0)
 *        softmr_basic --hold DEVICE [gone]
 *                open the device, allocate a PD and map the status page,
 *                print "holding", wait for a line on stdin; with "gone"
 *                the device is expected to have been
 *                removed meanwhile: verbs then fail with EIO, while destroy
 *                verbs succeed (ib_core destroyed the objects already)
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/softmr-abi.h>

#include "softmr_test.h"

/* softmr's driver method, issued by hand to control every attribute. */
struct raw_cmd {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[3];
};

static int raw_query(struct ibv_context *ctx, void *resp, uint16_t resp_len,
		     int with_flags, uint64_t flags, int with_unknown,
		     uint16_t unknown_flags)
{
	struct raw_cmd c;
	int n = 0;

	memset(&c, 0, sizeof(c));
	c.hdr.object_id = UVERBS_OBJECT_DEVICE;
	c.hdr.method_id = SOFTMR_IB_METHOD_QUERY_DEVICE;
	c.hdr.driver_id = 0;	/* RDMA_DRIVER_UNKNOWN */
	c.attrs[n].attr_id = SOFTMR_IB_ATTR_QUERY_DEVICE_RESP;
	c.attrs[n].flags = UVERBS_ATTR_F_MANDATORY;
	c.attrs[n].len = resp_len;
	c.attrs[n].data = (uintptr_t)resp;
	n++;
	if (with_flags) {
		c.attrs[n].attr_id = SOFTMR_IB_ATTR_QUERY_DEVICE_FLAGS;
		c.attrs[n].len = sizeof(uint64_t);
		c.attrs[n].data = flags;
		n++;
	}
	if (with_unknown) {
		c.attrs[n].attr_id = (1U << UVERBS_ID_NS_SHIFT) | 0x77;
		c.attrs[n].flags = unknown_flags;
		c.attrs[n].len = sizeof(uint64_t);
		c.attrs[n].data = 1;
		n++;
	}
	c.hdr.num_attrs = n;
	c.hdr.length = sizeof(c.hdr) + n * sizeof(c.attrs[0]);
	return ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &c);
}

static void check_device(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int found_v4 = 0, i;

	CHECK(ibv_query_device_ex(ctx, NULL, &dx) == 0, "query_device_ex");
	CHECK(dx.orig_attr.vendor_id == 0xffffff, "vendor_id %#x",
	      dx.orig_attr.vendor_id);
	CHECK(dx.orig_attr.vendor_part_id == 0x5346, "vendor_part_id");
	CHECK(dx.orig_attr.phys_port_cnt == 1, "phys_port_cnt");
	CHECK(dx.orig_attr.max_pd == 65536, "max_pd %d", dx.orig_attr.max_pd);
	CHECK(!strcmp(dx.orig_attr.fw_ver, "0.1.0"), "fw_ver %s",
	      dx.orig_attr.fw_ver);
	CHECK(dx.orig_attr.node_guid != 0, "node_guid");
	CHECK(dx.orig_attr.max_qp == 0x10000 && dx.orig_attr.max_srq == 0x4000 &&
	      dx.orig_attr.max_qp_wr == 0x4000 &&
	      dx.orig_attr.max_sge == 32 && dx.orig_attr.max_srq_sge == 32,
	      "QP/SRQ limits: max_qp %d max_srq %d max_qp_wr %d max_sge %d",
	      dx.orig_attr.max_qp, dx.orig_attr.max_srq,
	      dx.orig_attr.max_qp_wr, dx.orig_attr.max_sge);
	CHECK(dx.orig_attr.max_cq == 0x4000 && dx.orig_attr.max_cqe == 0xfffff,
	      "max_cq %d max_cqe %d", dx.orig_attr.max_cq,
	      dx.orig_attr.max_cqe);
	CHECK(dx.orig_attr.max_mr == 0x100000, "max_mr %d",
	      dx.orig_attr.max_mr);
	CHECK(dx.orig_attr.max_mr_size == 1ULL << 46, "max_mr_size");
	if (st_kernel_before(6, 16)) {
		CHECK(dx.odp_caps.general_caps ==
		      (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT),
		      "ODP general caps");
		/* every operation works on ODP MRs */
		CHECK(dx.odp_caps.per_transport_caps.rc_odp_caps ==
		      (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		       IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		       IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV) &&
		      dx.odp_caps.per_transport_caps.ud_odp_caps ==
		      (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		       IBV_ODP_SUPPORT_SRQ_RECV), "per-transport ODP caps");
	} else {
		/* ODP is off from 6.16: every capability clear */
		CHECK(!dx.odp_caps.general_caps &&
		      !dx.odp_caps.per_transport_caps.rc_odp_caps &&
		      !dx.odp_caps.per_transport_caps.uc_odp_caps &&
		      !dx.odp_caps.per_transport_caps.ud_odp_caps,
		      "no ODP caps from 6.16");
	}
	CHECK(dx.orig_attr.atomic_cap == IBV_ATOMIC_GLOB, "atomics: GLOB");

	CHECK(ibv_query_port(ctx, 1, &pa) == 0, "query_port");
	CHECK(pa.state == IBV_PORT_ACTIVE, "port state %d", pa.state);
	CHECK(pa.link_layer == IBV_LINK_LAYER_ETHERNET, "link layer");
	CHECK(pa.active_mtu == IBV_MTU_4096, "active_mtu %d", pa.active_mtu);
	CHECK(pa.gid_tbl_len == 1024, "gid_tbl_len %d", pa.gid_tbl_len);
	CHECK(pa.pkey_tbl_len == 1, "pkey_tbl_len");
	errno = 0;
	CHECK_ERRNO(ibv_query_port(ctx, 2, &pa) != 0, EINVAL, "query port 2");

	/* RoCE GIDs from lo: ::ffff:127.0.0.1 must be among them */
	for (i = 0; i < 16; i++) {
		static const uint8_t v4[16] = { [10] = 0xff, [11] = 0xff,
						 127, 0, 0, 1 };
		if (ibv_query_gid(ctx, 1, i, &gid))
			break;
		if (!memcmp(gid.raw, v4, 16))
			found_v4 = 1;
	}
	CHECK(found_v4, "GID ::ffff:127.0.0.1 present");
}

static void check_pds(struct ibv_context *ctx)
{
	struct softmr_query_device_resp resp;
	struct ibv_pd *pd[64];
	struct ibv_qp_init_attr qpa = {};
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[64];
	uint32_t base;
	int i, ok = 1;

	/* ib_core's MAD agent (QP1) holds a PD of its own */
	memset(&resp, 0, sizeof(resp));
	CHECK(raw_query(ctx, &resp, sizeof(resp), 0, 0, 0, 0) == 0,
	      "driver query: %s", strerror(errno));
	base = resp.pd_count;
	for (i = 0; i < 64; i++) {
		pd[i] = ibv_alloc_pd(ctx);
		ok &= pd[i] != NULL;
	}
	CHECK(ok, "64 PDs allocated");
	memset(&resp, 0, sizeof(resp));
	CHECK(raw_query(ctx, &resp, sizeof(resp), 0, 0, 0, 0) == 0,
	      "driver query: %s", strerror(errno));
	CHECK(resp.pd_count == base + 64, "pd_count %u (base %u)",
	      resp.pd_count, base);

	mr = ibv_reg_mr(pd[0], buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL, "reg_mr: %s", strerror(errno));
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
	/* a QP without CQs is refused; with them it is created */
	errno = 0;
	qpa.qp_type = IBV_QPT_RC;
	qpa.cap.max_send_wr = qpa.cap.max_recv_wr = 1;
	qp = ibv_create_qp(pd[0], &qpa);
	CHECK_ERRNO(qp == NULL, EINVAL, "create_qp without CQs");
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	CHECK(cq != NULL, "create_cq: %s", strerror(errno));
	if (cq) {
		qpa.send_cq = qpa.recv_cq = cq;
		qp = ibv_create_qp(pd[0], &qpa);
		CHECK(qp != NULL, "create_qp: %s", strerror(errno));
		if (qp)
			CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
		CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
	}

	for (i = 0; i < 64; i++)
		if (pd[i])
			CHECK(ibv_dealloc_pd(pd[i]) == 0, "dealloc_pd %d", i);
	memset(&resp, 0, sizeof(resp));
	CHECK(raw_query(ctx, &resp, sizeof(resp), 0, 0, 0, 0) == 0,
	      "driver query");
	CHECK(resp.pd_count == base, "pd_count back to %u (base %u)",
	      resp.pd_count, base);
}

static void check_driver_ioctl(struct ibv_context *ctx)
{
	struct softmr_query_device_resp resp;
	struct ibv_port_attr pa;
	volatile struct softmr_status_page *st;
	void *p;

	memset(&resp, 0xab, sizeof(resp));
	CHECK(raw_query(ctx, &resp, sizeof(resp), 1, 0, 0, 0) == 0,
	      "query with flags 0: %s", strerror(errno));
	CHECK(resp.abi_version == SOFTMR_UVERBS_ABI_VERSION, "abi %u",
	      resp.abi_version);
	CHECK(resp.max_pd == 65536, "max_pd");
	CHECK(resp.reserved == 0, "reserved zeroed");
	CHECK(resp.features & SOFTMR_FEATURE_STATUS_PAGE, "status feature");
	CHECK(resp.status_mmap_size == 4096, "status size");

	errno = 0;
	CHECK_ERRNO(raw_query(ctx, &resp, sizeof(resp), 1, 1, 0, 0) != 0,
		    EINVAL, "unknown flag bit");
	errno = 0;
	CHECK_ERRNO(raw_query(ctx, &resp, 8, 0, 0, 0, 0) != 0, EINVAL,
		    "response buffer too small");
	/* an unknown attribute the caller marks mandatory: the uverbs ABI
	 * answer is EPROTONOSUPPORT; an optional one is ignored */
	errno = 0;
	CHECK_ERRNO(raw_query(ctx, &resp, sizeof(resp), 0, 0, 1,
			      UVERBS_ATTR_F_MANDATORY) != 0,
		    EPROTONOSUPPORT, "unknown mandatory attribute");
	CHECK(raw_query(ctx, &resp, sizeof(resp), 0, 0, 1, 0) == 0,
	      "unknown optional attribute ignored");

	/* the status page: read-only, current, exactly one page */
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ctx->cmd_fd,
		 resp.status_mmap_offset);
	CHECK(p != MAP_FAILED, "map status page: %s", strerror(errno));
	if (p != MAP_FAILED) {
		st = p;
		CHECK(ibv_query_port(ctx, 1, &pa) == 0, "query_port");
		CHECK(st->abi_version == SOFTMR_UVERBS_ABI_VERSION,
		      "status abi");
		CHECK(st->seq % 2 == 0, "status seq even");
		CHECK(st->port_state == (uint32_t)pa.state, "status state %u",
		      st->port_state);
		CHECK(st->active_mtu == (uint32_t)pa.active_mtu, "status mtu");
		munmap(p, 4096);
	}
	errno = 0;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		 resp.status_mmap_offset);
	CHECK_ERRNO(p == MAP_FAILED, EPERM, "writable status mapping");
	errno = 0;
	p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, ctx->cmd_fd,
		 resp.status_mmap_offset);
	CHECK_ERRNO(p == MAP_FAILED, EINVAL, "two-page status mapping");
	errno = 0;
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ctx->cmd_fd,
		 resp.status_mmap_offset + (1 << 20));
	CHECK_ERRNO(p == MAP_FAILED, EINVAL, "unknown mmap offset");
}

static int hold(const char *dev, int expect_gone)
{
	struct softmr_query_device_resp resp;
	struct ibv_context *ctx = st_open_dev(dev);
	struct ibv_pd *pd, *pd2;
	struct ibv_port_attr pa;
	char line[16];
	void *p;
	int ret;

	if (!ctx) {
		perror("open");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	memset(&resp, 0, sizeof(resp));
	if (!pd || raw_query(ctx, &resp, sizeof(resp), 0, 0, 0, 0)) {
		perror("setup");
		return 1;
	}
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ctx->cmd_fd,
		 resp.status_mmap_offset);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	printf("holding %s\n", dev);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	/* a removed device: verbs fail cleanly with EIO, nothing crashes */
	ret = ibv_query_port(ctx, 1, &pa);
	if (expect_gone != (ret == EIO)) {
		printf("query_port: %d (%s), expected %s\n", ret, strerror(ret),
		       expect_gone ? "EIO" : "success");
		return 1;
	}
	pd2 = ibv_alloc_pd(ctx);
	if (expect_gone && (pd2 || errno != EIO)) {
		printf("alloc_pd after removal: %p, errno %d, expected EIO\n",
		       (void *)pd2, errno);
		return 1;
	}
	if (pd2)
		ibv_dealloc_pd(pd2);
	ret = ibv_dealloc_pd(pd);
	if (ret) {
		printf("dealloc_pd: %s\n", strerror(ret));
		return 1;
	}
	munmap(p, 4096);
	ibv_close_device(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "softmr0";
	struct ibv_context *ctx;

	if (argc >= 3 && !strcmp(argv[1], "--hold"))
		return hold(argv[2], argc > 3 && !strcmp(argv[3], "gone"));

	ctx = st_open_dev(dev);
	CHECK(ctx != NULL, "open %s: %s", dev, strerror(errno));
	if (!ctx)
		return st_finish("softmr_basic");
	check_device(ctx);
	check_pds(ctx);
	check_driver_ioctl(ctx);
	CHECK(ibv_close_device(ctx) == 0, "close");
	return st_finish("softmr_basic");
}
