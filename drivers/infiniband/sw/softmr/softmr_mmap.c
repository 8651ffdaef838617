// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * User mappings of kernel memory through ib_core's rdma_user_mmap_entry:
 * an object that user space may map inserts an entry and hands the entry's
 * offset to user space, which passes it to mmap() on the uverbs fd.
 *
 * The memory must come from vmalloc_user() and outlive the entry; the
 * mapped pages stay referenced by the mapping, so freeing the memory while
 * a process still maps it is safe.  ib_core zaps every mapping of a context
 * that is disassociated.
 */

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "softmr.h"

/**
 * struct softmr_mmap_entry - a mappable piece of kernel memory
 * @rdma_entry: ib_core's entry (offset, length, reference count)
 * @kaddr: start of the vmalloc_user() memory
 * @writable: whether user space may map it writable
 * @chunk: DM memory the entry keeps alive until its last mapping goes, or
 *	NULL
 */
struct softmr_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	void *kaddr;
	bool writable;
	struct softmr_dm_chunk *chunk;
};

static struct softmr_mmap_entry *
to_smmap(struct rdma_user_mmap_entry *rdma_entry)
{
	return container_of(rdma_entry, struct softmr_mmap_entry, rdma_entry);
}

/**
 * softmr_mmap_entry_insert() - make kernel memory mappable by a context
 * @ibuc: the user context
 * @kaddr: vmalloc_user() memory, page aligned
 * @size: its length; rounded up to whole pages
 * @writable: allow PROT_WRITE mappings
 *
 * Return: the entry (its offset is rdma_user_mmap_get_offset()), or an
 * ERR_PTR.  Remove it with rdma_user_mmap_entry_remove().
 */
struct rdma_user_mmap_entry *
softmr_mmap_entry_insert(struct ib_ucontext *ibuc, void *kaddr, size_t size,
			 bool writable)
{
	struct softmr_mmap_entry *e;
	int err;

	if (!kaddr || !PAGE_ALIGNED(kaddr) || !size)
		return ERR_PTR(-EINVAL);

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->kaddr = kaddr;
	e->writable = writable;

	err = rdma_user_mmap_entry_insert(ibuc, &e->rdma_entry,
					  PAGE_ALIGN(size));
	if (err) {
		kfree(e);
		return ERR_PTR(err);
	}
	return &e->rdma_entry;
}

/**
 * softmr_mmap() - the mmap verb: map the entry named by the offset
 * @ibuc: the user context
 * @vma: the new mapping; its length must equal the entry's
 *
 * Return: 0, -EINVAL for an unknown offset or a wrong length, -EPERM for a
 * writable mapping of read-only memory.
 */
int softmr_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct softmr_mmap_entry *e;
	int err;

	rdma_entry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rdma_entry)
		return -EINVAL;
	e = to_smmap(rdma_entry);

	if (!e->writable) {
		if (vma->vm_flags & VM_WRITE) {
			err = -EPERM;
			goto out;
		}
		vm_flags_clear(vma, VM_MAYWRITE);
	}
	err = remap_vmalloc_range(vma, e->kaddr, 0);
out:
	rdma_user_mmap_entry_put(rdma_entry);
	return err;
}

/**
 * softmr_mmap_free() - the mmap_free verb: the entry's last reference is gone
 * @rdma_entry: the entry
 */
void softmr_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct softmr_mmap_entry *e = to_smmap(rdma_entry);

	if (e->chunk)
		softmr_dm_chunk_put(e->chunk);
	kfree(e);
}

/**
 * softmr_mmap_entry_hold_chunk() - keep DM memory while an entry lives
 * @rdma_entry: an entry of softmr_mmap_entry_insert(), not yet mapped
 * @chunk: the DM memory behind it; the caller's reference moves to the
 *	entry and is dropped when the entry's last mapping goes
 */
void softmr_mmap_entry_hold_chunk(struct rdma_user_mmap_entry *rdma_entry,
				  struct softmr_dm_chunk *chunk)
{
	to_smmap(rdma_entry)->chunk = chunk;
}
