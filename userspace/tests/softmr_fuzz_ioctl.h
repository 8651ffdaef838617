/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The ioctl kind: RDMA_VERBS_IOCTL on the context's command fd, built from
 * a template of a softmr driver method (or a core method softmr answers
 * for) and then mutated: attribute ids, lengths, flags, pointers, handles
 * and fds; sometimes a header or an attribute list that is pure garbage.
 * One case: one ioctl.
 *
 * Every attribute's data, whatever it was meant to be, is harmless as a
 * pointer (the output scratch, the SGE buffer, or fz_addr_ok()): a mutated
 * id may make any attribute an output the kernel writes through.  New objects and fds live until the round's
 * context is closed (fds by the sweep after the round).
 */
#ifndef SOFTMR_FUZZ_IOCTL_H
#define SOFTMR_FUZZ_IOCTL_H

#include <rdma/rdma_user_ioctl.h>
#include <rdma/ib_user_ioctl_cmds.h>

#include "softmr_fuzz_ring.h"

enum { A_IN, A_OUT, A_IDR, A_NEW, A_FD, A_CONST, A_SGES };

struct fz_attr_tmpl {
	uint16_t id;
	uint8_t kind;
	uint16_t len;
	uint16_t obj;		/* A_IDR: the object type */
	uint64_t val;		/* A_IN, A_CONST: a valid value */
};

struct fz_method_tmpl {
	const char *name;
	uint16_t obj, method;
	struct fz_attr_tmpl a[10];
};

#define NS(x)	((1U << UVERBS_ID_NS_SHIFT) + (x))

static const struct fz_method_tmpl fz_methods[] = {
	{ "softmr_query_device", UVERBS_OBJECT_DEVICE, NS(0),
	  { { NS(0), A_IN, 4, 0, 0 },
	    { NS(1), A_OUT, sizeof(struct softmr_query_device_resp), 0, 0 } } },
	{ "softmr_doorbell_fd", UVERBS_OBJECT_DEVICE, NS(1),
	  { { NS(0), A_OUT, 4, 0, 0 } } },
	{ "softmr_pd_query", UVERBS_OBJECT_PD, NS(0),
	  { { NS(0), A_IDR, 0, UVERBS_OBJECT_PD, 0 }, { NS(1), A_OUT, 4, 0, 0 } } },
	{ "softmr_dm_export", UVERBS_OBJECT_DM, NS(0),
	  { { NS(0), A_IDR, 0, UVERBS_OBJECT_DM, 0 }, { NS(1), A_OUT, 4, 0, 0 } } },
	{ "softmr_dm_query", UVERBS_OBJECT_DM, NS(1),
	  { { NS(0), A_IDR, 0, UVERBS_OBJECT_DM, 0 }, { NS(1), A_OUT, 8, 0, 0 },
	    { NS(2), A_OUT, 8, 0, 0 } } },
	{ "dm_alloc", UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
	  { { UVERBS_ATTR_ALLOC_DM_HANDLE, A_NEW, 0, 0, 0 },
	    { UVERBS_ATTR_ALLOC_DM_LENGTH, A_IN, 8, 0, 4096 },
	    { UVERBS_ATTR_ALLOC_DM_ALIGNMENT, A_IN, 4, 0, 12 },
	    { NS(0), A_OUT, 8, 0, 0 } } },
	{ "dm_free", UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE,
	  { { UVERBS_ATTR_FREE_DM_HANDLE, A_IDR, 0, UVERBS_OBJECT_DM, 0 } } },
	{ "dm_mr_reg", UVERBS_OBJECT_MR, UVERBS_METHOD_DM_MR_REG,
	  { { UVERBS_ATTR_REG_DM_MR_HANDLE, A_NEW, 0, 0, 0 },
	    { UVERBS_ATTR_REG_DM_MR_OFFSET, A_IN, 8, 0, 0 },
	    { UVERBS_ATTR_REG_DM_MR_LENGTH, A_IN, 8, 0, 4096 },
	    { UVERBS_ATTR_REG_DM_MR_PD_HANDLE, A_IDR, 0, UVERBS_OBJECT_PD, 0 },
	    { UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, A_IN, 4, 0, FZ_RW | IBV_ACCESS_ZERO_BASED },
	    { UVERBS_ATTR_REG_DM_MR_DM_HANDLE, A_IDR, 0, UVERBS_OBJECT_DM, 0 },
	    { UVERBS_ATTR_REG_DM_MR_RESP_LKEY, A_OUT, 4, 0, 0 },
	    { UVERBS_ATTR_REG_DM_MR_RESP_RKEY, A_OUT, 4, 0, 0 } } },
	{ "reg_dmabuf_mr", UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR,
	  { { UVERBS_ATTR_REG_DMABUF_MR_HANDLE, A_NEW, 0, 0, 0 },
	    { UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, A_IDR, 0, UVERBS_OBJECT_PD, 0 },
	    { UVERBS_ATTR_REG_DMABUF_MR_OFFSET, A_IN, 8, 0, 0 },
	    { UVERBS_ATTR_REG_DMABUF_MR_LENGTH, A_IN, 8, 0, 65536 },
	    { UVERBS_ATTR_REG_DMABUF_MR_IOVA, A_IN, 8, 0, 0 },
	    { UVERBS_ATTR_REG_DMABUF_MR_FD, A_FD, 4, 0, 0 },
	    { UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, A_IN, 4, 0, FZ_RW },
	    { UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, A_OUT, 4, 0, 0 },
	    { UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, A_OUT, 4, 0, 0 } } },
	{ "query_mr", UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR,
	  { { UVERBS_ATTR_QUERY_MR_HANDLE, A_IDR, 0, UVERBS_OBJECT_MR, 0 },
	    { UVERBS_ATTR_QUERY_MR_RESP_LKEY, A_OUT, 4, 0, 0 },
	    { UVERBS_ATTR_QUERY_MR_RESP_RKEY, A_OUT, 4, 0, 0 },
	    { UVERBS_ATTR_QUERY_MR_RESP_LENGTH, A_OUT, 8, 0, 0 },
	    { UVERBS_ATTR_QUERY_MR_RESP_IOVA, A_OUT, 8, 0, 0 } } },
	{ "advise_mr", UVERBS_OBJECT_MR, UVERBS_METHOD_ADVISE_MR,
	  { { UVERBS_ATTR_ADVISE_MR_PD_HANDLE, A_IDR, 0, UVERBS_OBJECT_PD, 0 },
	    { UVERBS_ATTR_ADVISE_MR_ADVICE, A_CONST, 8, 0, 1 },
	    { UVERBS_ATTR_ADVISE_MR_FLAGS, A_IN, 4, 0, 1 },
	    { UVERBS_ATTR_ADVISE_MR_SGE_LIST, A_SGES, 16, 0, 0 } } },
	{ "query_context", UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT,
	  { { UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, A_OUT, 4, 0, 0 },
	    { UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, A_OUT, 8, 0, 0 } } },
	{ "query_port", UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT,
	  { { UVERBS_ATTR_QUERY_PORT_PORT_NUM, A_CONST, 8, 0, 1 },
	    { UVERBS_ATTR_QUERY_PORT_RESP, A_OUT, 64, 0, 0 } } },
	{ "query_gid_entry", UVERBS_OBJECT_DEVICE,
	  UVERBS_METHOD_QUERY_GID_ENTRY,
	  { { UVERBS_ATTR_QUERY_GID_ENTRY_PORT, A_CONST, 8, 0, 1 },
	    { UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, A_CONST, 8, 0, 3 },
	    { UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, A_IN, 4, 0, 0 },
	    { UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, A_OUT, 32, 0, 0 } } },
	{ "query_gid_table", UVERBS_OBJECT_DEVICE,
	  UVERBS_METHOD_QUERY_GID_TABLE,
	  { { UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, A_CONST, 8, 0, 32 },
	    { UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, A_IN, 4, 0, 0 },
	    { UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, A_OUT, 32 * 16, 0, 0 },
	    { UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, A_OUT, 8, 0, 0 } } },
	{ "info_handles", UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INFO_HANDLES,
	  { { UVERBS_ATTR_INFO_OBJECT_ID, A_CONST, 8, 0, UVERBS_OBJECT_PD },
	    { UVERBS_ATTR_INFO_TOTAL_HANDLES, A_OUT, 4, 0, 0 },
	    { UVERBS_ATTR_INFO_HANDLES_LIST, A_OUT, 64, 0, 0 } } },
};

static struct ibv_sge fz_sgbuf[8];	/* ADVISE_MR's SGE list */

struct fz_ioctl_buf {
	struct ib_uverbs_ioctl_hdr hdr;
	struct ib_uverbs_attr attrs[16];
};

/* A handle of an object of @obj in the round's world, or a near miss. */
static uint32_t fz_handle(uint16_t obj)
{
	uint32_t h = rnd(8);

	switch (obj) {
	case UVERBS_OBJECT_PD:
		h = (rnd(2) ? W.pd : W.pd2)->handle;
		break;
	case UVERBS_OBJECT_DM:
		if (W.dm)
			h = container_of(W.dm, struct verbs_dm, dm)->handle;
		break;
	case UVERBS_OBJECT_MR: {
		struct fz_mr *m = fz_pick_mr(false);

		if (m->mr)
			h = m->mr->handle;
		break;
	}
	default:
		break;
	}
	switch (rnd(8)) {
	case 0:
		return fz_u32();
	case 1:
		return rnd(16);
	default:
		return h;
	}
}

/* An SGE list for ADVISE_MR in @sg (safe addresses); its byte length. */
static uint16_t fz_advise_sges(struct ibv_sge *sg, unsigned int max)
{
	unsigned int n = 1 + rnd(max), i;

	for (i = 0; i < n; i++) {
		struct fz_mr *m = fz_pick_mr(false);
		uint64_t a;
		uint32_t l;

		fz_range(m, rnd(2), &a, &l);
		sg[i].addr = a;
		sg[i].length = l;
		sg[i].lkey = fz_key(m, false, rnd(2));
	}
	return n * sizeof(*sg);
}

/* An output pointer: the scratch, rarely somewhere wild. */
static uint64_t fz_out_ptr(void)
{
	if (one_in(16))
		return fz_wild_addr();
	return (uintptr_t)fz_out + rnd(FZ_OUT_SIZE - 65536);
}

static void fz_fill_attr(struct ib_uverbs_attr *a, const struct fz_attr_tmpl *t)
{
	a->attr_id = t->id;
	a->len = t->len;
	a->flags = rnd(2) ? UVERBS_ATTR_F_MANDATORY : 0;
	switch (t->kind) {
	case A_IN:
		a->data = rnd(4) ? t->val : (rnd(2) ? fz_u64() : rnd(16));
		break;
	case A_SGES:
		a->len = fz_advise_sges(fz_sgbuf, 8);
		a->data = (uintptr_t)fz_sgbuf;
		break;
	case A_CONST:
		a->data = rnd(4) ? t->val : (rnd(2) ? rnd(4) : fz_u64());
		break;
	case A_OUT:
		a->data = fz_out_ptr();
		break;
	case A_IDR:
		a->len = 0;
		a->data = fz_handle(t->obj);
		break;
	case A_NEW:
		a->len = 0;
		a->data = 0;
		break;
	case A_FD:	/* a PTR_IN u32 holding an fd (REG_DMABUF_MR_FD) */
		a->data_s64 = rnd(4) && fz_dmabuf_fd >= 0 ? fz_dmabuf_fd :
			      (int64_t)rnd(32) - 2;
		break;
	}
}

/* Break one thing about an attribute. */
static void fz_mutate_attr(struct ib_uverbs_attr *a)
{
	switch (rnd(8)) {
	case 0:
		a->attr_id = one_in(2) ? NS(rnd(8)) : (uint16_t)fz_u32();
		break;
	case 1:
		a->len = one_in(2) ? rnd(80) : (uint16_t)fz_u32();
		break;
	case 2:
		a->flags = (uint16_t)fz_u32();
		break;
	case 3:
		a->attr_data.reserved = (uint16_t)fz_u32();
		break;
	case 4:
		a->data = fz_wild_addr();
		break;
	case 5:
		a->data = fz_out_ptr();
		break;
	case 6:
		a->data = fz_u64();
		break;
	default:
		a->attr_data.enum_data.elem_id = rnd(4);
		break;
	}
}

/*
 * Any attribute's data may be taken for an output pointer (an id mutated
 * into an output's, a length above 8): it must be harmless for @len bytes.
 */
static void fz_attr_harmless(struct ib_uverbs_attr *a)
{
	uint64_t d = a->data, l = a->len;

	if (fz_addr_ok(d))
		return;
	if (d >= (uintptr_t)fz_out && d + l <= (uintptr_t)fz_out + FZ_OUT_SIZE)
		return;
	if (d >= (uintptr_t)fz_sgbuf &&
	    d + l <= (uintptr_t)fz_sgbuf + sizeof(fz_sgbuf))
		return;
	a->data = fz_out_ptr();
}

static void fz_ioctl_case(void)
{
	struct fz_ioctl_buf b;
	const struct fz_method_tmpl *m = &fz_methods[rnd(FZ_N(fz_methods))];
	const char *name = m->name;
	unsigned int n = 0, i;
	int ret;

	memset(&b, 0, sizeof(b));
	b.hdr.object_id = m->obj;
	b.hdr.method_id = m->method;
	b.hdr.driver_id = RDMA_DRIVER_UNKNOWN;
	for (i = 0; i < FZ_N(m->a) && (m->a[i].id || m->a[i].kind); i++) {
		if (one_in(12))		/* leave one out */
			continue;
		fz_fill_attr(&b.attrs[n++], &m->a[i]);
	}
	if (m->a[0].id == 0 && m->a[0].kind == 0 && !m->a[0].len)
		n = 0;
	while (n < FZ_N(b.attrs) && one_in(6)) {	/* extra attributes */
		struct fz_attr_tmpl t = { .id = rnd(2) ? NS(rnd(4)) : rnd(12),
					  .kind = rnd(7), .len = rnd(2) ? 8 : 40,
					  .obj = rnd(16), .val = fz_u64() };

		fz_fill_attr(&b.attrs[n++], &t);
	}
	if (n && rnd(2)) {
		unsigned int k = 1 + rnd(3);

		while (k--)
			fz_mutate_attr(&b.attrs[rnd(n)]);
	}
	switch (rnd(24)) {	/* the header */
	case 0:
		b.hdr.object_id = rnd(2) ? rnd(24) : (uint16_t)fz_u32();
		name = "ioctl_random_object";
		break;
	case 1:
		b.hdr.method_id = rnd(2) ? NS(rnd(4)) : (uint16_t)fz_u32();
		name = "ioctl_random_method";
		break;
	case 2:
		b.hdr.driver_id = rnd(2) ? rnd(32) : fz_u32();
		break;
	case 3:
		b.hdr.reserved1 = fz_u64();
		break;
	case 4:
		b.hdr.reserved2 = fz_u32();
		break;
	case 5:	/* garbage attributes */
		memcpy(b.attrs, fz_in + rnd(FZ_IN_SIZE - sizeof(b.attrs)),
		       sizeof(b.attrs));
		n = rnd(FZ_N(b.attrs) + 1);
		for (i = 0; i < n; i++)
			fz_mutate_attr(&b.attrs[i]);
		name = "ioctl_garbage_attrs";
		break;
	default:
		break;
	}
	b.hdr.num_attrs = n;
	b.hdr.length = sizeof(b.hdr) + n * sizeof(b.attrs[0]);
	if (one_in(32))
		b.hdr.num_attrs = rnd(2) ? n + 1 + rnd(8) : (uint16_t)fz_u32();
	if (one_in(32))
		b.hdr.length = rnd(2) ? b.hdr.length + 8 * rnd(4) - 8 :
			       (uint16_t)fz_u32();
	if (b.hdr.length > sizeof(b))	/* the kernel reads what we say */
		b.hdr.length = sizeof(b);
	for (i = 0; i < FZ_N(b.attrs); i++)
		fz_attr_harmless(&b.attrs[i]);
	ret = ioctl(W.ctx->cmd_fd, RDMA_VERBS_IOCTL, &b);
	fz_sys(name, ret);
}

#endif /* SOFTMR_FUZZ_IOCTL_H */
