// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory windows, type 1 and type 2B: a window is a key that grants remote
 * access to a range of an MR (the MR needs IB_ACCESS_MW_BIND), with its own
 * rights, bound and re-bound by BIND_MW work requests of a QP of the
 * window's PD.  ibv_bind_mw() posts one for type 1 windows; type 2
 * windows are bound by posting one, are then tied to the binding QP (only
 * that QP reaches them, and only it invalidates them, by LOCAL_INV or a
 * peer's SEND_WITH_INV), and must be invalidated before they bind again.
 * Each bind gives the window a new key: same index, the low 8 bits chosen
 * by the consumer (ibv_inc_rkey()).
 *
 * A window's key-table entry is a struct softmr_mr of kind SOFTMR_MR_MW,
 * in the same table as MRs, so remote keys find windows and MRs alike
 * (softmr_rkey_get()); lkeys never reach a window (softmr_mr_get()).  The
 * entry's iova, length and access are the binding; its key is the bound
 * rkey, 0 while unbound.  A bound window holds a reference on its MR and
 * counts in the MR's mw_bound, and an MR with windows bound can be neither
 * deregistered nor re-registered (EBUSY).
 *
 * A remote access through a window is checked once under the window's
 * rwsem (softmr_mw_token(): key, QP for type 2, range, rights) and gets the
 * binding's token, a number that changes with every bind and unbind; data
 * movers then hold the rwsem for reading over each piece they copy, after
 * checking that the token is still the binding's and the piece inside it,
 * and access the MR with local rights (softmr_mw_copy(), softmr_mw_xfer(),
 * softmr_mw_atomic()).  Binds, invalidations and dealloc hold it for
 * writing: once one completes, no access through the old binding is
 * running or can start, even when the window is bound again under the same
 * key (to another QP).
 */

#include <linux/slab.h>

#include "softmr.h"

/* Rights a window may have (IB_ACCESS_LOCAL_WRITE is accepted, ignored). */
#define SOFTMR_MW_ACCESS (IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE | \
			  IB_ACCESS_REMOTE_ATOMIC | IB_ZERO_BASED)

/**
 * softmr_alloc_mw() - the alloc_mw verb
 * @ibmw: the ib_core MW (type and PD set)
 * @udata: user data (none is defined)
 *
 * Return: 0 with the window unbound and its first rkey in @ibmw, -EINVAL
 * for a type other than 1 or 2, -ENOMEM beyond max_mw.
 */
int softmr_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct softmr_dev *sdev = to_sdev(ibmw->device);
	struct softmr_mw *mw = to_smw(ibmw);
	struct softmr_mr *e;
	int err;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	e = softmr_mw_entry_create(sdev, ibmw->pd);
	if (IS_ERR(e))
		return PTR_ERR(e);
	init_rwsem(&mw->rwsem);
	e->mw = mw;
	mw->entry = e;
	mw->token = get_random_u32();
	err = softmr_mr_commit(e);
	if (err)
		return err;
	down_write(&mw->rwsem);
	mw->rkey = e->ibmr.lkey;
	up_write(&mw->rwsem);
	ibmw->rkey = e->ibmr.lkey;
	return 0;
}

/* A new binding token: never 0, never the last one. */
static void softmr_mw_new_token(struct softmr_mw *mw)
{
	if (!++mw->token)
		mw->token = 1;
}

/* Unbind @mw (its rwsem held for writing, or no lookup left). */
static void softmr_mw_unbind(struct softmr_mw *mw)
{
	struct softmr_mr *e = mw->entry, *parent = mw->parent;

	softmr_mw_new_token(mw);
	WRITE_ONCE(e->key, 0);
	WRITE_ONCE(e->length, 0);
	WRITE_ONCE(e->access, 0);
	if (!parent)
		return;
	mw->parent = NULL;
	spin_lock(&parent->mw_lock);
	parent->mw_bound--;
	spin_unlock(&parent->mw_lock);
	softmr_mr_put(parent);
}

/**
 * softmr_dealloc_mw() - the dealloc_mw verb
 * @ibmw: the window
 *
 * Its key stops reaching anything; waits for accesses through it.
 *
 * Return: 0.
 */
int softmr_dealloc_mw(struct ib_mw *ibmw)
{
	struct softmr_mw *mw = to_smw(ibmw);
	struct softmr_mr *e = mw->entry;

	softmr_mr_unpublish_wait(e);
	softmr_mw_unbind(mw);
	softmr_mr_free(e);
	return 0;
}

/*
 * May @qp bind a window over [addr, addr + len) of @parent with @access?
 * If so, count the binding in @parent.
 */
static bool softmr_mw_parent_bind(struct softmr_mr *parent,
				  struct softmr_qp *qp, u64 addr, u64 len,
				  int access)
{
	int pacc;
	bool ok;

	switch (parent->kind) {
	case SOFTMR_MR_PINNED:
	case SOFTMR_MR_ODP:
	case SOFTMR_MR_IMPLICIT:
	case SOFTMR_MR_DMABUF:
	case SOFTMR_MR_DM:
		break;
	default:
		return false;
	}
	spin_lock(&parent->mw_lock);
	pacc = READ_ONCE(parent->access);
	ok = !parent->mw_closed && parent->ibmr.pd == qp->ibqp.pd &&
	     (pacc & IB_ACCESS_MW_BIND) &&
	     /* C10-74: a writable window needs a locally writable MR */
	     (!(access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) ||
	      (pacc & IB_ACCESS_LOCAL_WRITE)) &&
	     !softmr_mr_check(parent, addr, len, 0);
	if (ok)
		parent->mw_bound++;
	spin_unlock(&parent->mw_lock);
	return ok;
}

/**
 * softmr_mw_bind() - execute a BIND_MW work request
 * @qp: the QP; its PD must be the window's and the MR's
 * @wqe: the WQE copy (wr.bind)
 *
 * Return: IB_WC_SUCCESS, or IB_WC_MW_BIND_ERR for a window of another PD,
 * a window key that is not the window's current one, a new key with another
 * index, rights a window cannot have, a zero-based type 1 window, a type 2
 * window that is bound or a zero-length one, or an MR that is of another
 * PD, lacks IB_ACCESS_MW_BIND (or local write for a writable window), does
 * not hold the range, or is being deregistered.
 */
enum ib_wc_status softmr_mw_bind(struct softmr_qp *qp,
				 const struct softmr_send_wqe *wqe)
{
	u32 old = wqe->wr.bind.mw_rkey, key = wqe->wr.bind.rkey;
	u64 addr = wqe->wr.bind.addr, len = wqe->wr.bind.length;
	int access = wqe->wr.bind.access & ~IB_ACCESS_LOCAL_WRITE;
	enum ib_wc_status st = IB_WC_MW_BIND_ERR;
	struct softmr_mr *e, *parent = NULL;
	struct softmr_mw *mw;
	bool type1;

	if ((old ^ key) >> SOFTMR_MR_KEY_BITS || (access & ~SOFTMR_MW_ACCESS))
		return st;
	e = softmr_mr_by_index(qp->sdev, key >> SOFTMR_MR_KEY_BITS);
	if (!e)
		return st;
	if (e->kind != SOFTMR_MR_MW || e->ibmr.pd != qp->ibqp.pd)
		goto put;
	mw = e->mw;
	type1 = mw->ibmw.type == IB_MW_TYPE_1;
	/* o10-36.2.2: type 1 is not zero based; o10-37.2.40: 2 has a length */
	if (type1 ? (access & IB_ZERO_BASED) : !len)
		goto put;
	if (len) {
		parent = softmr_mr_get(qp->sdev, wqe->wr.bind.mr_lkey);
		if (!parent)
			goto put;
	}
	down_write(&mw->rwsem);
	/* o10-37.2.30: a type 2 window binds only when invalid */
	if (mw->rkey != old || (!type1 && mw->parent))
		goto unlock;
	if (parent &&
	    !softmr_mw_parent_bind(parent, qp, addr, len, access))
		goto unlock;
	softmr_mw_unbind(mw);
	mw->parent = parent;		/* the lookup's reference moves */
	parent = NULL;
	mw->parent_addr = addr;
	mw->qp_serial = qp->serial;
	mw->rkey = key;
	softmr_mw_new_token(mw);
	WRITE_ONCE(e->iova, (access & IB_ZERO_BASED) ? 0 : addr);
	WRITE_ONCE(e->length, len);
	WRITE_ONCE(e->access, access);
	/* the binding before the key that reaches it */
	smp_store_release(&e->key, mw->parent ? key : 0);
	softmr_count(qp->sdev, SOFTMR_CNT_MW_BINDS, 1);
	st = IB_WC_SUCCESS;
unlock:
	up_write(&mw->rwsem);
	if (parent)
		softmr_mr_put(parent);
put:
	softmr_mr_put(e);
	return st;
}

/**
 * softmr_key_invalidate() - LOCAL_INV, or a peer's SEND_WITH_INV
 * @qp: the QP that invalidates (the responder for SEND_WITH_INV)
 * @key: the key to invalidate
 * @remote: from a peer's SEND_WITH_INV
 *
 * A fast-registration MR of @qp's PD, or a bound type 2 window bound to
 * @qp; type 1 windows are not invalidated (o10-37.2.26), they re-bind.
 *
 * Return: true when invalidated.
 */
bool softmr_key_invalidate(struct softmr_qp *qp, u32 key, bool remote)
{
	struct softmr_mr *e;
	struct softmr_mw *mw;
	bool ok = false;

	e = softmr_mr_by_index(qp->sdev, key >> SOFTMR_MR_KEY_BITS);
	if (!e)
		return false;
	if (e->kind == SOFTMR_MR_FRMR) {
		ok = softmr_frmr_invalidate_mr(e, qp->ibqp.pd, key);
		softmr_mr_put(e);
		return ok;
	}
	mw = e->mw;
	if (e->kind == SOFTMR_MR_MW && e->ibmr.pd == qp->ibqp.pd &&
	    mw->ibmw.type == IB_MW_TYPE_2) {
		down_write(&mw->rwsem);
		if (mw->parent && mw->rkey == key &&
		    mw->qp_serial == qp->serial) {
			softmr_mw_unbind(mw);
			ok = true;
		}
		up_write(&mw->rwsem);
	}
	softmr_mr_put(e);
	return ok;
}

/**
 * softmr_mw_token() - check a remote access through a window
 * @entry: the window's entry, from softmr_rkey_get() by @key
 * @key: the rkey
 * @qp: the responder QP
 * @iova: first byte
 * @len: bytes
 * @access: the remote rights the access needs
 *
 * Return: the binding's token, which the access carries instead of the key
 * to each piece it copies; 0 when the window is not bound under @key, is
 * a type 2 window bound to another QP, or the access is outside it or
 * beyond its rights.
 */
u32 softmr_mw_token(struct softmr_mr *entry, u32 key, struct softmr_qp *qp,
		    u64 iova, u64 len, int access)
{
	struct softmr_mw *mw = entry->mw;
	u32 token = 0;

	down_read(&mw->rwsem);
	if (key && READ_ONCE(entry->key) == key && mw->parent &&
	    (mw->ibmw.type == IB_MW_TYPE_1 || mw->qp_serial == qp->serial) &&
	    !softmr_mr_check(entry, iova, len, access))
		token = mw->token;
	up_read(&mw->rwsem);
	return token;
}

/*
 * Hold @e's binding for an access with @token (softmr_mw_token()) to
 * [iova, iova + len) with @access.  Return: the MR behind it (valid while
 * held), *@piova set to the address there; or NULL, nothing held.
 */
static struct softmr_mr *softmr_mw_hold(struct softmr_mr *e, u32 token,
					u64 iova, u64 len, int access,
					u64 *piova, int subclass)
{
	struct softmr_mw *mw = e->mw;

	down_read_nested(&mw->rwsem, subclass);
	if (token && mw->token == token && mw->parent &&
	    !softmr_mr_check(e, iova, len, access)) {
		*piova = mw->parent_addr + (iova - e->iova);
		return mw->parent;
	}
	up_read(&mw->rwsem);
	return NULL;
}

static void softmr_mw_unhold(struct softmr_mr *e)
{
	up_read(&e->mw->rwsem);
}

/**
 * softmr_mw_copy() - softmr_mr_copy_key() through a window
 * @entry: the window's entry, referenced
 * @key: the access's token (softmr_mw_token())
 * @iova: first byte, in the window's addressing
 * @buf: kernel buffer
 * @len: bytes
 * @dir: SOFTMR_TO_MR or SOFTMR_FROM_MR
 * @access: the remote rights the access needs
 *
 * Return: 0, -EFAULT when the binding no longer allows it, or the MR
 * copy's error.
 */
int softmr_mw_copy(struct softmr_mr *entry, u32 key, u64 iova, void *buf,
		   u64 len, enum softmr_copy_dir dir, int access)
{
	int pacc = dir == SOFTMR_TO_MR ? IB_ACCESS_LOCAL_WRITE : 0;
	struct softmr_mr *parent;
	u64 piova;
	int err;

	parent = softmr_mw_hold(entry, key, iova, len, access, &piova, 0);
	if (!parent)
		return -EFAULT;
	err = softmr_mr_check(parent, piova, len, pacc) ?:
	      softmr_mr_copy_key(parent, READ_ONCE(parent->key), piova, buf,
				 len, dir, pacc);
	softmr_mw_unhold(entry);
	return err;
}

/**
 * softmr_mw_xfer() - softmr_mr_xfer_key() where either side is a window
 * @dst: destination MR or window entry, referenced
 * @dkey: the key @dst was found by (a window's: the access's token)
 * @daccess: rights the write needs
 * @diova: first destination byte
 * @src: source MR or window entry, referenced
 * @skey: the key @src was found by (a window's: the access's token)
 * @saccess: rights the read needs
 * @siova: first source byte
 * @len: bytes
 *
 * Two windows are held in address order (one, if they are the same).
 *
 * Return: as softmr_mr_xfer_key(): -EFAULT for the source, -ENXIO for the
 * destination.
 */
int softmr_mw_xfer(struct softmr_mr *dst, u32 dkey, int daccess, u64 diova,
		   struct softmr_mr *src, u32 skey, int saccess, u64 siova,
		   u64 len)
{
	bool dw = dst->kind == SOFTMR_MR_MW, sw = src->kind == SOFTMR_MR_MW;
	bool src_first = sw && (!dw || src < dst), dheld = false, sheld = false;
	struct softmr_mr *dm = dst, *sm = src;
	int err = 0;

	if (dw && sw && dst == src) {
		/* one window both ways: one hold, both checks */
		if (dkey != skey)
			return -EFAULT;
		dm = softmr_mw_hold(dst, dkey, diova, len, daccess, &diova, 0);
		if (!dm)
			return -ENXIO;
		dheld = true;
		if (softmr_mr_check(src, siova, len, saccess)) {
			err = -EFAULT;
			goto out;
		}
		siova = src->mw->parent_addr + (siova - src->iova);
		sm = dm;
	} else {
		if (src_first) {
			sm = softmr_mw_hold(src, skey, siova, len, saccess,
					    &siova, 0);
			if (!sm)
				return -EFAULT;
			sheld = true;
		}
		if (dw) {
			dm = softmr_mw_hold(dst, dkey, diova, len, daccess,
					    &diova, sheld ? SINGLE_DEPTH_NESTING :
					    0);
			if (!dm) {
				err = -ENXIO;
				goto out;
			}
			dheld = true;
		}
		if (sw && !sheld) {
			sm = softmr_mw_hold(src, skey, siova, len, saccess,
					    &siova, dheld ? SINGLE_DEPTH_NESTING :
					    0);
			if (!sm) {
				err = -EFAULT;
				goto out;
			}
			sheld = true;
		}
	}
	/* the MRs behind windows, with local rights */
	if (dw) {
		dkey = READ_ONCE(dm->key);
		daccess = IB_ACCESS_LOCAL_WRITE;
	}
	if (sw) {
		skey = READ_ONCE(sm->key);
		saccess = 0;
	}
	if (softmr_mr_check(sm, siova, len, saccess))
		err = -EFAULT;
	else if (softmr_mr_check(dm, diova, len, daccess))
		err = -ENXIO;
	else
		err = softmr_mr_xfer_key(dm, dkey, daccess, diova, sm, skey,
					 saccess, siova, len);
out:
	if (dheld)
		softmr_mw_unhold(dst);
	if (sheld)
		softmr_mw_unhold(src);
	return err;
}

/**
 * softmr_mw_atomic() - softmr_mr_atomic_key() through a window
 * @entry: the window's entry, referenced
 * @key: the access's token (softmr_mw_token())
 * @iova: the 8 bytes, in the window's addressing
 * @cmp_swap: compare-and-swap, or fetch-and-add
 * @compare_add: compare value or addend
 * @swap: swap value
 * @orig: the value before
 *
 * Return: as softmr_mr_atomic_key().
 */
int softmr_mw_atomic(struct softmr_mr *entry, u32 key, u64 iova,
		     bool cmp_swap, u64 compare_add, u64 swap, u64 *orig)
{
	struct softmr_mr *parent;
	u64 piova;
	int err;

	parent = softmr_mw_hold(entry, key, iova, sizeof(u64),
				IB_ACCESS_REMOTE_ATOMIC, &piova, 0);
	if (!parent)
		return -EFAULT;
	err = softmr_mr_check(parent, piova, sizeof(u64),
			      IB_ACCESS_LOCAL_WRITE) ?:
	      softmr_mr_atomic_key(parent, READ_ONCE(parent->key), piova,
				   cmp_swap, compare_add, swap, orig);
	softmr_mw_unhold(entry);
	return err;
}
