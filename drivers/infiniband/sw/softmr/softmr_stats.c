// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Observability: device counters for `rdma statistic` (and
 * /sys/class/infiniband/DEV/ports/1/hw_counters), and the driver details
 * `rdma res show mr -dd` prints for each MR.
 */

#include <rdma/ib_umem_odp.h>
#include <rdma/restrack.h>

#include "softmr.h"

static const struct rdma_stat_desc softmr_counter_descs[] = {
	[SOFTMR_CNT_MR_REG].name = "mr_registrations",
	[SOFTMR_CNT_MR_DEREG].name = "mr_deregistrations",
	[SOFTMR_CNT_ODP_FAULTS].name = "odp_faults",
	[SOFTMR_CNT_ODP_FAULT_PAGES].name = "odp_fault_pages",
	[SOFTMR_CNT_ODP_INVALIDATIONS].name = "odp_invalidations",
	[SOFTMR_CNT_ODP_PREFETCHES].name = "odp_prefetches",
	[SOFTMR_CNT_ODP_PREFETCH_ERRORS].name = "odp_prefetch_errors",
	[SOFTMR_CNT_IMPLICIT_CHILDREN].name = "odp_implicit_children",
	[SOFTMR_CNT_IMPLICIT_CHILD_RELEASES].name = "odp_implicit_releases",
	[SOFTMR_CNT_DM_ALLOCS].name = "dm_allocations",
	[SOFTMR_CNT_DM_FREES].name = "dm_frees",
	[SOFTMR_CNT_DM_BYTES].name = "dm_bytes_in_use",
	[SOFTMR_CNT_DM_MRS].name = "dm_mr_registrations",
	[SOFTMR_CNT_SEND_WQES].name = "send_wqes",
	[SOFTMR_CNT_RECV_WQES].name = "recv_wqes",
	[SOFTMR_CNT_TX_BYTES].name = "tx_bytes",
	[SOFTMR_CNT_RNR_WAITS].name = "rnr_waits",
	[SOFTMR_CNT_ERR_COMPLETIONS].name = "error_completions",
	[SOFTMR_CNT_UD_DROPS].name = "ud_drops",
	[SOFTMR_CNT_DMABUF_MRS].name = "dmabuf_mrs",
	[SOFTMR_CNT_DMABUF_MOVES].name = "dmabuf_moves",
	[SOFTMR_CNT_DMABUF_REMAPS].name = "dmabuf_remaps",
	[SOFTMR_CNT_FAST_REGS].name = "fast_registrations",
	[SOFTMR_CNT_LOCAL_INVS].name = "local_invalidations",
	[SOFTMR_CNT_REMOTE_INVS].name = "remote_invalidations",
	[SOFTMR_CNT_MW_BINDS].name = "mw_binds",
	[SOFTMR_CNT_WIRE_TX_PACKETS].name = "wire_tx_packets",
	[SOFTMR_CNT_WIRE_RX_PACKETS].name = "wire_rx_packets",
	[SOFTMR_CNT_WIRE_RX_MALFORMED].name = "wire_rx_malformed",
	[SOFTMR_CNT_WIRE_RX_DROPPED].name = "wire_rx_dropped",
	[SOFTMR_CNT_WIRE_TIMEOUTS].name = "wire_timeouts",
	[SOFTMR_CNT_WIRE_NAKS_RCVD].name = "wire_naks_rcvd",
	[SOFTMR_CNT_WIRE_NAKS_SENT].name = "wire_naks_sent",
	[SOFTMR_CNT_WIRE_DUP_REQUESTS].name = "wire_dup_requests",
	[SOFTMR_CNT_SQ_POLLS].name = "sq_polls",
	[SOFTMR_CNT_SEND_DOORBELLS].name = "send_doorbells",
	[SOFTMR_CNT_SQ_FAST_WRITES].name = "sq_fast_writes",
	[SOFTMR_CNT_SQ_POLL_JOINS].name = "sq_poll_joins",
	[SOFTMR_CNT_RECV_DOORBELLS].name = "recv_doorbells",
	[SOFTMR_CNT_RNR_POLL_RESUMES].name = "rnr_poll_resumes",
	[SOFTMR_CNT_SQ_DEFER_KICKS].name = "sq_defer_kicks",
	[SOFTMR_CNT_SQ_FAST_SENDS].name = "sq_fast_sends",
};

static_assert(ARRAY_SIZE(softmr_counter_descs) == SOFTMR_NUM_COUNTERS);

struct rdma_hw_stats *softmr_alloc_hw_port_stats(struct ib_device *ibdev,
						 u32 port_num)
{
	return rdma_alloc_hw_stats_struct(softmr_counter_descs,
					  SOFTMR_NUM_COUNTERS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/**
 * softmr_counter_read() - a device counter's value
 * @sdev: the device
 * @c: the counter
 *
 * Return: the sum of the CPUs' shares (a moment's snapshot).
 */
s64 softmr_counter_read(struct softmr_dev *sdev, enum softmr_counter c)
{
	s64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(sdev->counters, cpu)->v[c]);
	return sum;
}

int softmr_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			u32 port_num, int index)
{
	struct softmr_dev *sdev = to_sdev(ibdev);
	int i;

	for (i = 0; i < SOFTMR_NUM_COUNTERS; i++)
		stats->value[i] = softmr_counter_read(sdev, i);
	return SOFTMR_NUM_COUNTERS;
}

static const char *const softmr_mr_kind_names[] = {
	[SOFTMR_MR_DMA] = "dma",
	[SOFTMR_MR_PINNED] = "pinned",
	[SOFTMR_MR_ODP] = "odp",
	[SOFTMR_MR_IMPLICIT] = "implicit",
	[SOFTMR_MR_DM] = "dm",
	[SOFTMR_MR_DMABUF] = "dmabuf",
	[SOFTMR_MR_FRMR] = "frmr",
	[SOFTMR_MR_MW] = "mw",
};

/**
 * softmr_fill_res_mr_entry() - driver details of an MR for restrack
 * @msg: the netlink message
 * @ibmr: the MR
 *
 * Return: 0 or -EMSGSIZE.
 */
int softmr_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct softmr_mr *mr = to_smr(ibmr);
	unsigned long index, children = 0;
	struct nlattr *table;
	void *child;

	table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_string(msg, "kind",
				      softmr_mr_kind_names[mr->kind]))
		goto err;
	if (mr->kind == SOFTMR_MR_ODP && !softmr_odp_chunked(mr) &&
	    rdma_nl_put_driver_u64(msg, "mapped_pages",
				   READ_ONCE(mr->odp->npages)))
		goto err;
	if (mr->kind == SOFTMR_MR_DMABUF &&
	    (rdma_nl_put_driver_string(msg, "import", mr->dmabuf_pinned ?
				       "pinned" : "dynamic") ||
	     rdma_nl_put_driver_u32(msg, "mapped",
				    READ_ONCE(mr->dmabuf_mapped))))
		goto err;
	/* chunked ODP: children only, which a release may free meanwhile */
	if (softmr_odp_chunked(mr)) {
		xa_for_each(&mr->children, index, child)
			children++;
		if (rdma_nl_put_driver_u64(msg, "children", children))
			goto err;
	}
	nla_nest_end(msg, table);
	return 0;
err:
	nla_nest_cancel(msg, table);
	return -EMSGSIZE;
}
