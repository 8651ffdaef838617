// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * User mappings of kernel memory through ib_core's rdma_user_mmap_entry:
 * an object that user space may map inserts an entry and hands the entry's
 * offset to user space, which passes it to mmap() on the uverbs fd.
 *
 * Two kinds of memory are mapped:
 *  - rings and the status page: vmalloc() memory, inserted page by page;
 *    every mapped page holds a reference, so a mapping that outlives its
 *    object keeps pages nobody else uses.  A ring belongs to its entry
 *    (softmr_mmap_entry_insert_ring()): the object removes the entry and
 *    the ring is freed with the entry's last reference, so an mmap() in
 *    flight (it holds the entry) never inserts freed pages.  The status
 *    page belongs to the device.  These entries are not tied to VMAs.
 *  - device memory: a PFN mapping (VM_PFNMAP), as a device's BAR is
 *    mapped, so get_user_pages() cannot pin it and no MR outlives the
 *    mapping.  Its pages are inserted on fault (softmr_dm_fault()), not by
 *    remap_pfn_range() at mmap() time: see there.  Every VMA holds a
 *    reference on the DM allocation's memory (its own vm_ops: open on
 *    fork, split and mremap takes one, close drops it; neither can fail),
 *    so the range returns to the pool only when the last VMA is gone.
 *    After a disassociation the mapping stays, with memory that no one
 *    else can get (the device and its pool are gone).  The VMAs hold the
 *    module too: their vm_ops are its code.
 *    (ib_core's rdma_user_mmap_io() is not used: its VMA tracking can fail
 *    on fork and leave an untracked mapping, and on 6.12 it orders the
 *    uverbs disassociation lock against mmap_lock both ways.)
 */

#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "softmr.h"

/**
 * struct softmr_mmap_entry - a mappable piece of kernel memory
 * @rdma_entry: ib_core's entry (offset, length, reference count)
 * @kaddr: start of the memory: vmalloc() memory, or @chunk's
 * @writable: whether user space may map it writable
 * @owns_mem: @kaddr is a ring the entry frees (vfree()) when it goes
 * @chunk: DM memory (PFN mapped) the entry keeps alive until its last
 *	mapping goes, or NULL
 */
struct softmr_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	void *kaddr;
	bool writable;
	bool owns_mem;
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
 * @kaddr: vmalloc() memory, page aligned
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

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
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
 * softmr_mmap_entry_insert_ring() - make a ring mappable, and its owner
 * @ibuc: the user context
 * @kaddr: vmalloc() memory, page aligned
 * @size: its length
 *
 * On success the entry owns the memory: release it only through
 * softmr_mmap_ring_free(), which frees it once no mmap() uses the entry.
 *
 * Return: the entry or an ERR_PTR (the memory is then the caller's).
 */
struct rdma_user_mmap_entry *
softmr_mmap_entry_insert_ring(struct ib_ucontext *ibuc, void *kaddr,
			      size_t size)
{
	struct rdma_user_mmap_entry *rdma_entry;

	rdma_entry = softmr_mmap_entry_insert(ibuc, kaddr, size, true);
	if (!IS_ERR(rdma_entry))
		to_smmap(rdma_entry)->owns_mem = true;
	return rdma_entry;
}

/**
 * softmr_mmap_ring_free() - free a ring, through its entry if it has one
 * @rdma_entry: the entry of softmr_mmap_entry_insert_ring(), or NULL
 * @kaddr: the ring
 */
void softmr_mmap_ring_free(struct rdma_user_mmap_entry *rdma_entry,
			   void *kaddr)
{
	if (rdma_entry)
		rdma_user_mmap_entry_remove(rdma_entry);
	else
		vfree(kaddr);
}

/**
 * softmr_mmap_entry_insert_dm() - make a DM allocation mappable
 * @ibuc: the owning context
 * @chunk: the allocation's memory; the caller's reference moves to the
 *	entry, which drops it when the entry is removed and unmapped
 *
 * Return: the entry or an ERR_PTR (the reference is then the caller's).
 */
struct rdma_user_mmap_entry *
softmr_mmap_entry_insert_dm(struct ib_ucontext *ibuc,
			    struct softmr_dm_chunk *chunk)
{
	struct rdma_user_mmap_entry *rdma_entry;

	rdma_entry = softmr_mmap_entry_insert(ibuc,
					      softmr_dm_chunk_kaddr(chunk),
					      chunk->size, true);
	if (!IS_ERR(rdma_entry))
		to_smmap(rdma_entry)->chunk = chunk;
	return rdma_entry;
}

static void softmr_dm_vma_open(struct vm_area_struct *vma)
{
	struct softmr_dm_chunk *chunk = vma->vm_private_data;

	__module_get(THIS_MODULE);
	kref_get(&chunk->ref);
}

static void softmr_dm_vma_close(struct vm_area_struct *vma)
{
	softmr_dm_chunk_put(vma->vm_private_data);
	module_put(THIS_MODULE);
}

/**
 * softmr_dm_fault() - the fault handler of DM mappings: insert one page
 * @vmf: the fault; the VMA's vm_private_data is the DM chunk and
 *	vmf->pgoff the page's index in it
 *
 * DM is a PFN mapping filled page by page here with vmf_insert_pfn(), not
 * at mmap() time with remap_pfn_range().  On x86, a remap_pfn_range() over
 * the whole VMA marks it for PAT tracking (VM_PAT), and when it fails part
 * way (a page table that cannot be allocated) the zap of the half-made
 * mapping asks PAT for the VMA's first PTE, finds none and WARNs
 * (get_pat_info() on 6.12).  A PFN inserted on fault is tracked per page
 * and never marks the VMA; a failed insertion fails only that fault.
 *
 * Return: VM_FAULT_NOPAGE with the page mapped, VM_FAULT_SIGBUS beyond the
 * chunk, VM_FAULT_OOM when a page table cannot be allocated.
 */
vm_fault_t softmr_dm_fault(struct vm_fault *vmf)
{
	struct softmr_dm_chunk *chunk = vmf->vma->vm_private_data;
	unsigned long pfn;

	if (vmf->pgoff >= chunk->size >> PAGE_SHIFT)
		return VM_FAULT_SIGBUS;
	pfn = PHYS_PFN(virt_to_phys(softmr_dm_chunk_kaddr(chunk)));
	return vmf_insert_pfn(vmf->vma, vmf->address, pfn + vmf->pgoff);
}

/**
 * softmr_dm_pfnmap() - make a VMA a PFN mapping of DM filled on fault
 * @vma: the shared mapping; its vm_pgoff must be the index in @chunk of its
 *	first page
 * @chunk: the memory
 * @ops: the VMA's operations, with softmr_dm_fault() as .fault
 *
 * Return: 0, or -EINVAL for a private (copy-on-write) mapping or one an
 * importer of an exported dma-buf already made VM_MIXEDMAP (PFN insertion
 * into such a VMA is a BUG).
 */
int softmr_dm_pfnmap(struct vm_area_struct *vma, struct softmr_dm_chunk *chunk,
		     const struct vm_operations_struct *ops)
{
	if (!(vma->vm_flags & VM_SHARED) || (vma->vm_flags & VM_MIXEDMAP))
		return -EINVAL;
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = chunk;
	vma->vm_ops = ops;
	return 0;
}

static const struct vm_operations_struct softmr_dm_vm_ops = {
	.open = softmr_dm_vma_open,
	.close = softmr_dm_vma_close,
	.fault = softmr_dm_fault,
};

/*
 * Map DM as a PFN mapping whose VMA holds the allocation's memory.  The
 * mmap offset named the entry; from here on vm_pgoff is the page index in
 * the chunk (as DRM's GEM mappings rebase it), which splits and mremap()
 * keep right.
 */
static int softmr_mmap_dm(struct vm_area_struct *vma,
			  struct softmr_dm_chunk *chunk)
{
	int err;

	vma->vm_pgoff = 0;
	err = softmr_dm_pfnmap(vma, chunk, &softmr_dm_vm_ops);
	if (err)
		return err;
	softmr_dm_vma_open(vma);
	return 0;
}

/* Insert every page of vmalloc() memory: each mapped page is referenced. */
static int softmr_mmap_vmalloc(struct vm_area_struct *vma, void *kaddr)
{
	unsigned long addr;
	int err;

	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	for (addr = vma->vm_start; addr < vma->vm_end; addr += PAGE_SIZE) {
		err = vm_insert_page(vma, addr, vmalloc_to_page(kaddr));
		if (err)
			return err;
		kaddr += PAGE_SIZE;
	}
	return 0;
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
	if (e->chunk)
		err = softmr_mmap_dm(vma, e->chunk);
	else
		err = softmr_mmap_vmalloc(vma, e->kaddr);
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
	if (e->owns_mem)
		vfree(e->kaddr);
	kfree(e);
}
