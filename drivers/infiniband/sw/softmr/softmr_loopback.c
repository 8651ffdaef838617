// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The transport: how a requester reaches its responder.  softmr's only
 * transport today is the host itself: the destination GID names a softmr
 * device on this host (any of them, so two devices on two netdevs talk to
 * each other) and the QP number a QP on it.  The engine uses nothing but
 * softmr_xport_find_qp(); a RoCEv2 wire transport to other hosts would
 * answer the same question with a proxy for the remote QP.
 */

#include "softmr.h"

/**
 * softmr_xport_find_qp() - find the QP a message is for
 * @hint: the caller's cache of the last GID resolved, or NULL
 * @dgid: destination GID
 * @qpn: destination QP number (1: the device's GSI QP)
 * @self: a device the caller keeps registered (its own QP's), or NULL
 *
 * Resolving a GID searches every device's GID table; @hint remembers the
 * device found last for a GID (by pointer and ib_device index, checked
 * against the live device list before use) so that a stream of messages
 * to one peer resolves it once.  When the hint names @self, the list is
 * not even searched: a device with a QP in use cannot go away.
 *
 * Return: the QP with a reference (softmr_qp_put()), or NULL when no
 * softmr device here has the GID or no QP has the number.
 */
struct softmr_qp *softmr_xport_find_qp(struct softmr_xport_hint *hint,
				       const union ib_gid *dgid, u32 qpn,
				       struct softmr_dev *self)
{
	struct softmr_dev *sdev = NULL;
	struct softmr_qp *qp;
	bool hinted = hint && hint->sdev &&
		      !memcmp(&hint->dgid, dgid, sizeof(*dgid));

	if (hinted && hint->sdev == self)
		return softmr_qp_get(self, qpn);
	if (hinted)
		sdev = softmr_dev_try_get(hint->sdev, hint->index);
	if (!sdev) {
		sdev = softmr_dev_get_by_gid(dgid);
		if (!sdev)
			return NULL;
		if (hint) {
			hint->dgid = *dgid;
			hint->sdev = sdev;
			hint->index = sdev->ibdev.index;
		}
	}
	/* the QP's reference keeps its device registered */
	qp = softmr_qp_get(sdev, qpn);
	ib_device_put(&sdev->ibdev);
	return qp;
}
