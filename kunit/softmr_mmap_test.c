// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests of user contexts and mmap entries: a context maps the device
 * status page into a real user mapping of the test thread (kunit_vm_mmap()
 * on a file whose mmap is softmr_mmap()), read-only, at exactly the offset
 * and length of its entry; removing the entry unpublishes the offset.
 * Device memory is a shared PFN mapping filled on fault, which
 * get_user_pages() cannot pin and whose VMA holds the memory.
 */

#include <kunit/test.h>
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/genalloc.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/uaccess.h>

#include "softmr_kunit.h"
/*
 * ib_uverbs' file object: a context's entries are inserted under its lock
 * (drivers/infiniband/core/uverbs.h, on the include path: see Makefile)
 */
#include "uverbs.h"

struct softmr_mmap_test_ctx {
	struct softmr_dev *sdev;
	struct softmr_ucontext *suc;
	struct file *file;
	bool ucontext_live;
};

static int softmr_test_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct softmr_mmap_test_ctx *ctx = file->private_data;

	return softmr_mmap(&ctx->suc->ibuc, vma);
}

static const struct file_operations softmr_test_fops = {
	.owner = THIS_MODULE,
	.mmap = softmr_test_file_mmap,
};

static void softmr_mmap_test_release(void *data)
{
	struct softmr_mmap_test_ctx *ctx = data;

	if (ctx->ucontext_live)
		softmr_dev_ops.dealloc_ucontext(&ctx->suc->ibuc);
	fput(ctx->file);
}

static void softmr_kunit_ucontext_free(void *data)
{
	struct softmr_ucontext *suc = data;

	xa_destroy(&suc->ibuc.mmap_xa);
}

/**
 * softmr_kunit_ucontext() - a user context as ib_uverbs sets one up
 * @test: the test; the context's mmap table goes with it
 * @sdev: the device
 *
 * The context is not allocated by the driver op: callers that need it run
 * softmr_dev_ops.alloc_ucontext themselves.
 *
 * Return: the context.
 */
struct softmr_ucontext *softmr_kunit_ucontext(struct kunit *test,
					      struct softmr_dev *sdev)
{
	struct softmr_ucontext *suc;
	struct ib_uverbs_file *ufile;

	suc = kunit_kzalloc(test, sizeof(*suc), GFP_KERNEL);
	ufile = kunit_kzalloc(test, sizeof(*ufile), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, suc);
	KUNIT_ASSERT_NOT_NULL(test, ufile);
	mutex_init(&ufile->umap_lock);
	INIT_LIST_HEAD(&ufile->umaps);
	suc->ibuc.device = &sdev->ibdev;
	suc->ibuc.ufile = ufile;
	xa_init_flags(&suc->ibuc.mmap_xa, XA_FLAGS_ALLOC);
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test,
						  softmr_kunit_ucontext_free,
						  suc));
	return suc;
}

/* A context with its status page entry and a file to mmap through. */
static struct softmr_mmap_test_ctx *ctx_create(struct kunit *test,
					       const char *name)
{
	struct softmr_mmap_test_ctx *ctx;
	struct ib_udata udata = {};

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	ctx->sdev = softmr_kunit_dev_add(test, name, init_net.loopback_dev);
	ctx->suc = softmr_kunit_ucontext(test, ctx->sdev);

	ctx->file = anon_inode_getfile("softmr-kunit", &softmr_test_fops, ctx,
				       O_RDWR);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ctx->file));

	KUNIT_ASSERT_EQ(test, softmr_dev_ops.alloc_ucontext(&ctx->suc->ibuc,
							    &udata), 0);
	ctx->ucontext_live = true;
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, softmr_mmap_test_release,
						  ctx));
	return ctx;
}

static unsigned long map(struct kunit *test, struct softmr_mmap_test_ctx *ctx,
			 unsigned long len, unsigned long prot, u64 offset)
{
	return kunit_vm_mmap(test, ctx->file, 0, len, prot, MAP_SHARED,
			     offset);
}

static void softmr_test_status_mapping(struct kunit *test)
{
	struct softmr_mmap_test_ctx *ctx = ctx_create(test, "softmr_kt20");
	struct softmr_query_device_resp resp;
	struct softmr_status_page page;
	unsigned long uaddr;

	softmr_fill_query_device_resp(ctx->sdev, ctx->suc, &resp);
	KUNIT_EXPECT_TRUE(test, resp.features & SOFTMR_FEATURE_STATUS_PAGE);
	KUNIT_EXPECT_EQ(test, resp.status_mmap_size, PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, resp.status_mmap_offset % PAGE_SIZE, 0);

	uaddr = map(test, ctx, PAGE_SIZE, PROT_READ, resp.status_mmap_offset);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(uaddr));
	KUNIT_ASSERT_EQ(test, copy_from_user(&page, (void __user *)uaddr,
					     sizeof(page)), 0);
	KUNIT_EXPECT_EQ(test, page.abi_version, SOFTMR_UVERBS_ABI_VERSION);
	KUNIT_EXPECT_EQ(test, page.port_state, ctx->sdev->port_state);
	KUNIT_EXPECT_EQ(test, page.ifindex, init_net.loopback_dev->ifindex);
	KUNIT_EXPECT_EQ(test, page.seq % 2, 0);
	/* the same page the kernel writes, not a copy */
	KUNIT_EXPECT_EQ(test, page.seq, READ_ONCE(ctx->sdev->status->seq));
}

static void softmr_test_mapping_rules(struct kunit *test)
{
	struct softmr_mmap_test_ctx *ctx = ctx_create(test, "softmr_kt21");
	u64 off = rdma_user_mmap_get_offset(ctx->suc->status_entry);
	unsigned long uaddr;

	/* read-only memory cannot be mapped writable */
	uaddr = map(test, ctx, PAGE_SIZE, PROT_READ | PROT_WRITE, off);
	KUNIT_EXPECT_EQ(test, (long)uaddr, -EPERM);
	/* the length must be the entry's */
	uaddr = map(test, ctx, 2 * PAGE_SIZE, PROT_READ, off);
	KUNIT_EXPECT_EQ(test, (long)uaddr, -EINVAL);
	/* an offset no entry has */
	uaddr = map(test, ctx, PAGE_SIZE, PROT_READ, off + 16 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, (long)uaddr, -EINVAL);
	/* bad insert arguments */
	KUNIT_EXPECT_EQ(test, PTR_ERR(softmr_mmap_entry_insert(&ctx->suc->ibuc,
							       NULL, PAGE_SIZE,
							       false)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test,
			PTR_ERR(softmr_mmap_entry_insert(&ctx->suc->ibuc,
							 ctx->sdev->status, 0,
							 false)),
			-EINVAL);
}

/* Entries live from insert to remove; mappings outlive the entry safely. */
static void softmr_test_entry_lifecycle(struct kunit *test)
{
	struct softmr_mmap_test_ctx *ctx = ctx_create(test, "softmr_kt22");
	struct rdma_user_mmap_entry *e = ctx->suc->status_entry;
	u64 off = rdma_user_mmap_get_offset(e);
	struct rdma_user_mmap_entry *found;
	unsigned long uaddr;
	u32 abi = 0;

	found = rdma_user_mmap_entry_get_pgoff(&ctx->suc->ibuc,
					       off >> PAGE_SHIFT);
	KUNIT_ASSERT_PTR_EQ(test, found, e);
	KUNIT_EXPECT_EQ(test, kref_read(&e->ref), 2);
	rdma_user_mmap_entry_put(found);

	uaddr = map(test, ctx, PAGE_SIZE, PROT_READ, off);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(uaddr));

	/* the context goes away: its offset is no longer published */
	softmr_dev_ops.dealloc_ucontext(&ctx->suc->ibuc);
	ctx->ucontext_live = false;
	KUNIT_EXPECT_NULL(test,
			  rdma_user_mmap_entry_get_pgoff(&ctx->suc->ibuc,
							 off >> PAGE_SHIFT));
	KUNIT_EXPECT_TRUE(test, xa_empty(&ctx->suc->ibuc.mmap_xa));
	KUNIT_EXPECT_EQ(test, (long)map(test, ctx, PAGE_SIZE, PROT_READ, off),
			-EINVAL);
	/* an existing mapping still reads the (referenced) page */
	KUNIT_EXPECT_EQ(test, get_user(abi, (u32 __user *)uaddr), 0);
	KUNIT_EXPECT_EQ(test, abi, SOFTMR_UVERBS_ABI_VERSION);
}

/* The VMA's flags at @uaddr, 0 when nothing is mapped there. */
static unsigned long vma_flags_at(unsigned long uaddr)
{
	struct vm_area_struct *vma;
	unsigned long flags = 0;

	mmap_read_lock(current->mm);
	vma = vma_lookup(current->mm, uaddr);
	if (vma)
		flags = vma->vm_flags;
	mmap_read_unlock(current->mm);
	return flags;
}

/*
 * DM: shared only; a PFN mapping (never marked for x86 PAT tracking, whose
 * cleanup of a half-made remap_pfn_range() WARNs) filled on fault, page by
 * page; get_user_pages() cannot pin it; the VMA keeps the range out of the
 * pool after dealloc_dm until it is unmapped.
 */
static void softmr_test_dm_mapping(struct kunit *test)
{
	struct softmr_mmap_test_ctx *ctx = ctx_create(test, "softmr_kt23");
	struct ib_dm_alloc_attr attr = { .length = 3 * PAGE_SIZE };
	unsigned long uaddr, flags, len = 3 * PAGE_SIZE;
	struct gen_pool *pool;
	struct softmr_dm *dm;
	struct ib_dm *ibdm;
	struct page *page;
	size_t avail;
	u32 v = 0;
	u8 *mem;
	u64 off;

	ibdm = softmr_alloc_dm(&ctx->sdev->ibdev, &ctx->suc->ibuc, &attr, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibdm));
	ibdm->device = &ctx->sdev->ibdev;
	ibdm->length = attr.length;
	dm = to_sdm(ibdm);
	mem = ctx->sdev->dm_mem + dm->offset;
	pool = dm->chunk->area->pool;
	off = rdma_user_mmap_get_offset(dm->mmap_entry);

	/* a private, copy-on-write mapping is refused */
	KUNIT_EXPECT_EQ(test, (long)kunit_vm_mmap(test, ctx->file, 0, len,
						  PROT_READ | PROT_WRITE,
						  MAP_PRIVATE, off), -EINVAL);

	uaddr = map(test, ctx, len, PROT_READ | PROT_WRITE, off);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(uaddr));
	flags = vma_flags_at(uaddr);
	KUNIT_EXPECT_TRUE(test, flags & VM_PFNMAP);
	KUNIT_EXPECT_TRUE(test, flags & VM_DONTEXPAND);
#ifdef CONFIG_X86
	KUNIT_EXPECT_FALSE(test, flags & VM_PAT);
#endif
	/* stores through the mapping land in DM, page by page as they fault */
	KUNIT_EXPECT_EQ(test, put_user(0x5eed0002U,
				       (u32 __user *)(uaddr + 2 * PAGE_SIZE + 8)),
			0);
	KUNIT_EXPECT_EQ(test, *(u32 *)(mem + 2 * PAGE_SIZE + 8), 0x5eed0002U);
	*(u32 *)(mem + PAGE_SIZE) = 0x5eed0001U;
	KUNIT_EXPECT_EQ(test, get_user(v, (u32 __user *)(uaddr + PAGE_SIZE)), 0);
	KUNIT_EXPECT_EQ(test, v, 0x5eed0001U);
	/* nothing can pin it */
	KUNIT_EXPECT_LT(test, pin_user_pages_fast(uaddr, 1,
						  FOLL_WRITE | FOLL_LONGTERM,
						  &page), 0);

	/* after dealloc_dm the mapping still holds the range */
	avail = gen_pool_avail(pool);
	KUNIT_EXPECT_EQ(test, softmr_dealloc_dm(ibdm, NULL), 0);
	KUNIT_EXPECT_EQ(test, gen_pool_avail(pool), avail);
	KUNIT_EXPECT_EQ(test, get_user(v, (u32 __user *)(uaddr + PAGE_SIZE)), 0);
	KUNIT_EXPECT_EQ(test, v, 0x5eed0001U);
	KUNIT_EXPECT_EQ(test, get_user(v, (u32 __user *)uaddr), 0);
	KUNIT_EXPECT_EQ(test, v, 0);
	/* the last mapping gone, the range is back in the pool */
	KUNIT_EXPECT_EQ(test, vm_munmap(uaddr, len), 0);
	KUNIT_EXPECT_EQ(test, gen_pool_avail(pool), avail + len);
}

static struct kunit_case softmr_mmap_cases[] = {
	KUNIT_CASE(softmr_test_status_mapping),
	KUNIT_CASE(softmr_test_mapping_rules),
	KUNIT_CASE(softmr_test_entry_lifecycle),
	KUNIT_CASE(softmr_test_dm_mapping),
	{}
};

static struct kunit_suite softmr_mmap_suite = {
	.name = "softmr_mmap",
	.test_cases = softmr_mmap_cases,
};

kunit_test_suite(softmr_mmap_suite);
