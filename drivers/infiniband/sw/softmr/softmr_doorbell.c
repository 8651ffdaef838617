// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The send doorbell file: a faster way to ring a user QP's send doorbell
 * than the uverbs POST_SEND write.  SOFTMR_IB_METHOD_DOORBELL_FD gives a
 * context a write-only file; write(fd, &qpn, 4) runs that QP's send queue
 * in the caller, exactly as the POST_SEND doorbell does, without the uverbs
 * command parsing and object lookup around it (most of a small message's
 * cost under emulation).
 *
 * The QP must belong to the context the file was made for; anything else
 * is EINVAL.  The file holds no reference on the context or the device: a
 * context going away (ibv_close_device, device removal) cuts the file
 * loose under its lock, and later writes get ENODEV.
 *
 * An open doorbell file holds the module (its write() is module code), so
 * rmmod answers "in use" while a process keeps a context open, where the
 * uverbs files alone would let it disassociate.  doorbell_file=0 turns the
 * files off (the method answers EOPNOTSUPP; the provider rings through
 * POST_SEND) for whoever needs that.
 */

#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#define UVERBS_MODULE_NAME softmr_ib
#include <rdma/uverbs_named_ioctl.h>
#include <rdma/uverbs_types.h>

#include "softmr.h"

static bool doorbell_file = true;
module_param(doorbell_file, bool, 0444);
MODULE_PARM_DESC(doorbell_file,
		 "give contexts a send doorbell file (faster small messages; holds the module while open)");

/**
 * struct softmr_doorbell - what a doorbell file reaches
 * @ref: the context's reference and each open file's
 * @lock: guards @sdev and @suc against the context going away
 * @sdev: the device, NULL once the context is gone
 * @suc: the context whose QPs may be rung
 */
struct softmr_doorbell {
	struct kref ref;
	struct mutex lock;		/* @sdev, @suc */
	struct softmr_dev *sdev;
	struct softmr_ucontext *suc;
};

static void softmr_doorbell_release(struct kref *ref)
{
	struct softmr_doorbell *db = container_of(ref, struct softmr_doorbell,
						  ref);

	mutex_destroy(&db->lock);
	kfree(db);
}

/* The QP @qpn of the file's context, referenced, or an ERR_PTR. */
static struct softmr_qp *softmr_doorbell_qp(struct softmr_doorbell *db,
					    u32 qpn)
{
	struct softmr_qp *qp = ERR_PTR(-ENODEV);

	mutex_lock(&db->lock);
	if (db->sdev) {
		qp = softmr_qp_get(db->sdev, qpn);
		if (!qp) {
			qp = ERR_PTR(-EINVAL);
		} else if (!qp->is_user || qp->owner != db->suc) {
			softmr_qp_put(qp);
			qp = ERR_PTR(-EINVAL);
		}
	}
	mutex_unlock(&db->lock);
	return qp;
}

static ssize_t softmr_doorbell_write(struct file *file, const char __user *buf,
				     size_t len, loff_t *pos)
{
	struct softmr_doorbell *db = file->private_data;
	struct softmr_qp *qp;
	u32 qpn;

	if (len != sizeof(qpn))
		return -EINVAL;
	if (copy_from_user(&qpn, buf, sizeof(qpn)))
		return -EFAULT;
	qp = softmr_doorbell_qp(db, qpn);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	softmr_qp_doorbell(qp);
	softmr_qp_put(qp);
	return len;
}

static int softmr_doorbell_file_release(struct inode *inode, struct file *file)
{
	struct softmr_doorbell *db = file->private_data;

	kref_put(&db->ref, softmr_doorbell_release);
	return 0;
}

static const struct file_operations softmr_doorbell_fops = {
	.owner = THIS_MODULE,
	.write = softmr_doorbell_write,
	.release = softmr_doorbell_file_release,
	.llseek = noop_llseek,
};

/**
 * softmr_doorbell_init() - a context's doorbell state
 * @suc: the new context
 *
 * Return: 0 or -ENOMEM.
 */
int softmr_doorbell_init(struct softmr_ucontext *suc)
{
	struct softmr_doorbell *db = kzalloc(sizeof(*db), GFP_KERNEL);

	if (!db)
		return -ENOMEM;
	kref_init(&db->ref);
	mutex_init(&db->lock);
	db->sdev = to_sdev(suc->ibuc.device);
	db->suc = suc;
	suc->doorbell = db;
	return 0;
}

/**
 * softmr_doorbell_cleanup() - cut a context's doorbell files loose
 * @suc: the context going away
 */
void softmr_doorbell_cleanup(struct softmr_ucontext *suc)
{
	struct softmr_doorbell *db = suc->doorbell;

	if (!db)
		return;
	mutex_lock(&db->lock);
	db->sdev = NULL;
	db->suc = NULL;
	mutex_unlock(&db->lock);
	suc->doorbell = NULL;
	kref_put(&db->ref, softmr_doorbell_release);
}

static int UVERBS_HANDLER(SOFTMR_IB_METHOD_DOORBELL_FD)(struct uverbs_attr_bundle *attrs)
{
	struct ib_ucontext *ibuc = ib_uverbs_get_ucontext(attrs);
	struct softmr_doorbell *db;
	struct file *file;
	s32 fd;
	int err;

	if (IS_ERR(ibuc))
		return PTR_ERR(ibuc);
	if (!doorbell_file)
		return -EOPNOTSUPP;
	db = to_suc(ibuc)->doorbell;
	kref_get(&db->ref);
	file = anon_inode_getfile("[softmr-doorbell]", &softmr_doorbell_fops,
				  db, O_WRONLY);
	if (IS_ERR(file)) {
		kref_put(&db->ref, softmr_doorbell_release);
		return PTR_ERR(file);
	}
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		fput(file);
		return fd;
	}
	err = uverbs_copy_to(attrs, SOFTMR_IB_ATTR_DOORBELL_FD, &fd,
			     sizeof(fd));
	if (err) {
		put_unused_fd(fd);
		fput(file);
		return err;
	}
	fd_install(fd, file);
	return 0;
}

DECLARE_UVERBS_NAMED_METHOD(SOFTMR_IB_METHOD_DOORBELL_FD,
			    UVERBS_ATTR_PTR_OUT(SOFTMR_IB_ATTR_DOORBELL_FD,
						UVERBS_ATTR_TYPE(s32),
						UA_MANDATORY));

ADD_UVERBS_METHODS(softmr_ib_doorbell, UVERBS_OBJECT_DEVICE,
		   &UVERBS_METHOD(SOFTMR_IB_METHOD_DOORBELL_FD));

const struct uapi_definition softmr_doorbell_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE, &softmr_ib_doorbell),
	{},
};
