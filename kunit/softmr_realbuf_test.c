// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests against the kernel's real exporters and DMA mapping, which
 * UML lacks: they run on the debug x86_64 kernel under QEMU
 * (scripts/kunit-qemu) and skip with the reason under UML.
 *
 * - a dma-buf MR over udmabuf: a shmem file sealed against shrinking (a
 *   memfd) turned into a dma-buf through /dev/udmabuf's UDMABUF_CREATE,
 *   data written through the MR read back through the exporter's own
 *   mmap, data written into the memfd read through the MR, and the
 *   attachment's scatterlist DMA-mapped for softmr's dma_device by the
 *   architecture's dma_ops;
 * - a dma-buf MR over a buffer of the system dma-heap (/dev/dma_heap/system);
 * - a kernel DMA MR over pages mapped with ib_dma_map_page() through the
 *   real dma_ops, reached by the engine's MR-to-MR copy and atomics.
 *
 * The device nodes are opened from the test thread (the VM's devtmpfs);
 * ioctl arguments live in a user mapping of the test (kunit_vm_mmap()).
 */

#include <kunit/test.h>
#include <linux/dma-buf.h>
#include <linux/dma-direct.h>
#include <uapi/linux/dma-heap.h>
#include <linux/dma-mapping.h>
#include <linux/fcntl.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mman.h>
#include <linux/scatterlist.h>
#include <linux/shmem_fs.h>
#include <linux/uaccess.h>
#include <linux/udmabuf.h>
#include <rdma/ib_umem.h>

#include "softmr_kunit.h"

#define RB_PAGES	16
#define RB_SIZE		(RB_PAGES * PAGE_SIZE)
#define RB_IOVA		0x7000000ULL
#define RB_DMA_ORDER	2
#define RB_DMA_SIZE	(PAGE_SIZE << RB_DMA_ORDER)
#define RW (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
	    IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

struct rb_env {
	struct softmr_dev *sdev;
	struct ib_pd *pd;
	unsigned long uarg;	/* a user page for ioctl arguments */
};

static struct rb_env *rb_env(struct kunit *test, const char *name)
{
	struct rb_env *e = kunit_kzalloc(test, sizeof(*e), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, e);
	e->sdev = softmr_kunit_dev_add(test, name, init_net.loopback_dev);
	e->pd = softmr_kunit_pd(test, e->sdev);
	e->uarg = kunit_vm_mmap(test, NULL, 0, PAGE_SIZE,
				PROT_READ | PROT_WRITE,
				MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(e->uarg));
	return e;
}

static void rb_fput(void *file)
{
	fput(file);
}

static void rb_close_fd(void *fd)
{
	close_fd((unsigned long)fd);
}

static void rb_dma_buf_put(void *db)
{
	dma_buf_put(db);
}

/* Close @fd (of this thread) when the test ends. */
static void rb_own_fd(struct kunit *test, int fd)
{
	void *arg = (void *)(unsigned long)fd;

	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, rb_close_fd, arg));
}

/* A device node of the VM's devtmpfs, closed when the test ends. */
static struct file *rb_open(struct kunit *test, const char *path, int flags)
{
	struct file *f = filp_open(path, flags, 0);

	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(f), "open %s: %d", path,
			       PTR_ERR_OR_ZERO(f));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rb_fput, f));
	return f;
}

/* Run @cmd of @f with @arg (@len bytes) copied in and out of user memory. */
static long rb_ioctl(struct kunit *test, struct rb_env *e, struct file *f,
		     unsigned int cmd, void *arg, size_t len)
{
	long ret;

	KUNIT_ASSERT_LE(test, len, PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, copy_to_user((void __user *)e->uarg, arg, len),
			0);
	ret = f->f_op->unlocked_ioctl(f, cmd, e->uarg);
	KUNIT_ASSERT_EQ(test, copy_from_user(arg, (void __user *)e->uarg, len),
			0);
	return ret;
}

/* An fd of this thread for @f, closed when the test ends. */
static int rb_fd(struct kunit *test, struct file *f)
{
	int fd = get_unused_fd_flags(O_CLOEXEC);

	KUNIT_ASSERT_GE(test, fd, 0);
	fd_install(fd, get_file(f));
	rb_own_fd(test, fd);
	return fd;
}

/* The dma-buf behind @fd (a reference, dropped when the test ends). */
static struct dma_buf *rb_dma_buf(struct kunit *test, int fd)
{
	struct dma_buf *db = dma_buf_get(fd);

	KUNIT_ASSERT_FALSE(test, IS_ERR(db));
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, rb_dma_buf_put, db));
	return db;
}

static struct softmr_mr *rb_reg(struct rb_env *e, int fd, u64 offset,
				u64 len, int *err)
{
	struct ib_mr *ibmr = softmr_reg_user_mr_dmabuf(e->pd, offset, len,
						       RB_IOVA, fd, RW, NULL);

	*err = PTR_ERR_OR_ZERO(ibmr);
	return IS_ERR(ibmr) ? NULL : to_smr(ibmr);
}

static void rb_fill(u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(seed + i * 11 + (i >> 9));
}

/*
 * A memfd as memfd_create(MFD_ALLOW_SEALING) and F_ADD_SEALS(F_SEAL_SHRINK)
 * make it: a shmem file whose seals are only F_SEAL_SHRINK (udmabuf wants
 * that seal and refuses a write seal).  No other user sees it yet.
 */
static struct file *rb_memfd(struct kunit *test, loff_t size)
{
	struct file *f = shmem_file_setup("softmr-kunit-memfd", size,
					  VM_NORESERVE);

	KUNIT_ASSERT_FALSE(test, IS_ERR(f));
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, rb_fput, f));
	SHMEM_I(file_inode(f))->seals = F_SEAL_SHRINK;
	return f;
}

/* Every entry of the exporter's scatterlist: CPU page at its DMA address. */
static void rb_expect_dma_direct(struct kunit *test, struct device *dev,
				 struct sg_table *sgt, size_t len)
{
	struct scatterlist *sg;
	size_t mapped = 0;
	int i;

	for_each_sgtable_dma_sg(sgt, sg, i) {
		KUNIT_EXPECT_EQ(test, dma_to_phys(dev, sg_dma_address(sg)),
				sg_phys(sg));
		mapped += sg_dma_len(sg);
	}
	KUNIT_EXPECT_EQ(test, mapped, len);
}

/*
 * udmabuf: data through the MR lands in the memfd's pages, which the
 * exporter's mmap shows; data written into the memfd is what the MR reads.
 */
static void softmr_test_udmabuf_mr(struct kunit *test)
{
	struct udmabuf_create create = {
		.flags = UDMABUF_FLAGS_CLOEXEC,
		.offset = 0,
		.size = RB_SIZE,
	};
	const size_t len = 3 * PAGE_SIZE + 300;
	struct file *memfd, *udev;
	struct softmr_mr *mr;
	struct dma_buf *db;
	struct rb_env *e;
	unsigned long map;
	u8 *pat, *got;
	loff_t pos;
	int fd, err;

	if (!IS_ENABLED(CONFIG_UDMABUF) || !IS_ENABLED(CONFIG_MEMFD_CREATE))
		kunit_skip(test,
			   "needs CONFIG_UDMABUF and CONFIG_MEMFD_CREATE (UML has neither): scripts/kunit-qemu runs it");

	e = rb_env(test, "softmr_kt100");
	pat = kunit_kmalloc(test, len, GFP_KERNEL);
	got = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pat);
	KUNIT_ASSERT_NOT_NULL(test, got);
	memfd = rb_memfd(test, RB_SIZE);
	udev = rb_open(test, "/dev/udmabuf", O_RDWR);

	/* without F_SEAL_SHRINK udmabuf refuses the memfd */
	create.memfd = rb_fd(test, memfd);
	SHMEM_I(file_inode(memfd))->seals = 0;
	KUNIT_EXPECT_EQ(test, rb_ioctl(test, e, udev, UDMABUF_CREATE, &create,
				       sizeof(create)), -EINVAL);
	SHMEM_I(file_inode(memfd))->seals = F_SEAL_SHRINK;
	fd = rb_ioctl(test, e, udev, UDMABUF_CREATE, &create, sizeof(create));
	KUNIT_ASSERT_GE_MSG(test, fd, 0, "UDMABUF_CREATE: %d", fd);
	rb_own_fd(test, fd);
	db = rb_dma_buf(test, fd);

	/* more than the buffer, or a range past its end: refused */
	KUNIT_EXPECT_NULL(test, rb_reg(e, fd, 0, RB_SIZE + PAGE_SIZE, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);
	KUNIT_EXPECT_NULL(test, rb_reg(e, fd, PAGE_SIZE, RB_SIZE, &err));
	KUNIT_EXPECT_EQ(test, err, -EINVAL);

	mr = rb_reg(e, fd, 0, RB_SIZE, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_ASSERT_NOT_NULL(test, mr);
	/* udmabuf cannot move its pages: a pinned, mapped import */
	KUNIT_EXPECT_EQ(test, mr->kind, SOFTMR_MR_DMABUF);
	KUNIT_EXPECT_TRUE(test, mr->dmabuf_pinned);
	KUNIT_EXPECT_TRUE(test, mr->dmabuf_mapped);
	/* the attachment is mapped for softmr's device by the dma_ops */
	KUNIT_EXPECT_PTR_EQ(test, mr->dmabuf->attach->dev,
			    e->sdev->ibdev.dma_device);
	rb_expect_dma_direct(test, e->sdev->ibdev.dma_device, mr->dmabuf->sgt,
			     RB_SIZE);

	/* through the MR, read back through the exporter's mmap */
	rb_fill(pat, len, 0x21);
	KUNIT_ASSERT_EQ(test, softmr_mr_copy(mr, RB_IOVA + 2 * PAGE_SIZE - 100,
					     pat, len, SOFTMR_TO_MR,
					     IB_ACCESS_REMOTE_WRITE), 0);
	map = kunit_vm_mmap(test, db->file, 0, RB_SIZE,
			    PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(map));
	KUNIT_ASSERT_EQ(test, copy_from_user(got, (void __user *)(map +
					     2 * PAGE_SIZE - 100), len), 0);
	KUNIT_EXPECT_EQ(test, memcmp(got, pat, len), 0);

	/* into the memfd, read through the MR */
	rb_fill(pat, len, 0x97);
	pos = 7 * PAGE_SIZE + 5;
	KUNIT_ASSERT_EQ(test, kernel_write(memfd, pat, len, &pos), (ssize_t)len);
	memset(got, 0, len);
	KUNIT_ASSERT_EQ(test, softmr_mr_copy(mr, RB_IOVA + 7 * PAGE_SIZE + 5,
					     got, len, SOFTMR_FROM_MR,
					     IB_ACCESS_REMOTE_READ), 0);
	KUNIT_EXPECT_EQ(test, memcmp(got, pat, len), 0);

	/* an access past the MR's end */
	KUNIT_EXPECT_EQ(test, softmr_mr_copy(mr, RB_IOVA + RB_SIZE - 8, got, 16,
					     SOFTMR_FROM_MR, 0), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&mr->ibmr, NULL), 0);
	KUNIT_EXPECT_EQ(test, softmr_counter_read(e->sdev, SOFTMR_CNT_DMABUF_MRS),
			0);
}

/* The system dma-heap: an MR over its buffer, both ways, and an MR copy. */
static void softmr_test_system_heap_mr(struct kunit *test)
{
	struct dma_heap_allocation_data alloc = {
		.len = RB_SIZE,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};
	const size_t len = 2 * PAGE_SIZE + 77;
	struct softmr_mr *mr, *mr2;
	struct file *heap;
	struct dma_buf *db;
	struct rb_env *e;
	unsigned long map;
	u8 *pat, *got;
	long ret;
	int fd, err;

	if (!IS_ENABLED(CONFIG_DMABUF_HEAPS_SYSTEM))
		kunit_skip(test,
			   "needs CONFIG_DMABUF_HEAPS_SYSTEM (not on UML): scripts/kunit-qemu runs it");

	e = rb_env(test, "softmr_kt101");
	pat = kunit_kmalloc(test, len, GFP_KERNEL);
	got = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pat);
	KUNIT_ASSERT_NOT_NULL(test, got);
	heap = rb_open(test, "/dev/dma_heap/system", O_RDONLY);
	ret = rb_ioctl(test, e, heap, DMA_HEAP_IOCTL_ALLOC, &alloc,
		       sizeof(alloc));
	KUNIT_ASSERT_EQ_MSG(test, ret, 0, "DMA_HEAP_IOCTL_ALLOC: %ld", ret);
	fd = alloc.fd;
	rb_own_fd(test, fd);
	db = rb_dma_buf(test, fd);
	KUNIT_EXPECT_EQ(test, db->size, RB_SIZE);

	mr = rb_reg(e, fd, 0, RB_SIZE, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_ASSERT_NOT_NULL(test, mr);
	KUNIT_EXPECT_TRUE(test, mr->dmabuf_pinned);
	rb_expect_dma_direct(test, e->sdev->ibdev.dma_device, mr->dmabuf->sgt,
			     RB_SIZE);
	/* a second MR over the second half of the same buffer */
	mr2 = rb_reg(e, fd, RB_SIZE / 2, RB_SIZE / 2, &err);
	KUNIT_ASSERT_EQ(test, err, 0);
	KUNIT_ASSERT_NOT_NULL(test, mr2);

	/* through the exporter's mmap, read through the MR */
	map = kunit_vm_mmap(test, db->file, 0, RB_SIZE,
			    PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(map));
	rb_fill(pat, len, 0x3c);
	KUNIT_ASSERT_EQ(test, copy_to_user((void __user *)(map + 1000), pat,
					   len), 0);
	KUNIT_ASSERT_EQ(test, softmr_mr_copy(mr, RB_IOVA + 1000, got, len,
					     SOFTMR_FROM_MR, 0), 0);
	KUNIT_EXPECT_EQ(test, memcmp(got, pat, len), 0);

	/* MR to MR (the engine's RDMA data path), seen in the mapping */
	KUNIT_ASSERT_EQ(test, softmr_mr_xfer(mr2, RB_IOVA + 3 * PAGE_SIZE + 9,
					     mr, RB_IOVA + 1000, len), 0);
	memset(got, 0, len);
	KUNIT_ASSERT_EQ(test, copy_from_user(got, (void __user *)(map +
					     RB_SIZE / 2 + 3 * PAGE_SIZE + 9),
					     len), 0);
	KUNIT_EXPECT_EQ(test, memcmp(got, pat, len), 0);
	/* the second MR ends where the buffer does */
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(mr2, RB_IOVA + RB_SIZE / 2 - 10,
					     mr, RB_IOVA, 20), -ENXIO);

	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&mr2->ibmr, NULL), 0);
	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&mr->ibmr, NULL), 0);
}

/*
 * Kernel DMA addresses from the architecture's dma_ops: four pages mapped
 * with ib_dma_map_page() for softmr's device, reached through a DMA MR by
 * the engine's MR-to-MR copy (across a page boundary) and an atomic,
 * against a pinned MR of user memory.
 */
static void softmr_test_dma_map_page(struct kunit *test)
{
	const size_t len = PAGE_SIZE + 512;
	struct ib_device *ibdev;
	struct softmr_mr *dma, *umr;
	struct ib_mr *ibmr;
	struct rb_env *e;
	struct page *pages;
	unsigned long uaddr;
	u64 addr, orig, bad;
	u8 *pat, *got;

	if (IS_ENABLED(CONFIG_UML))
		kunit_skip(test,
			   "UML emulates DMA; needs an architecture's dma_ops: scripts/kunit-qemu runs it");

	e = rb_env(test, "softmr_kt102");
	ibdev = &e->sdev->ibdev;
	pat = kunit_kmalloc(test, len, GFP_KERNEL);
	got = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pat);
	KUNIT_ASSERT_NOT_NULL(test, got);
	pages = alloc_pages(GFP_KERNEL | __GFP_ZERO, RB_DMA_ORDER);
	KUNIT_ASSERT_NOT_NULL(test, pages);

	addr = ib_dma_map_page(ibdev, pages, 0, RB_DMA_SIZE, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(ibdev, addr)) {
		__free_pages(pages, RB_DMA_ORDER);
		KUNIT_FAIL_AND_ABORT(test, "ib_dma_map_page failed");
	}
	/* softmr's DMA MRs find the page again from the DMA address */
	KUNIT_EXPECT_EQ(test, dma_to_phys(ibdev->dma_device, addr),
			page_to_phys(pages));

	ibmr = softmr_get_dma_mr(e->pd, IB_ACCESS_LOCAL_WRITE);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	dma = to_smr(ibmr);
	uaddr = kunit_vm_mmap(test, NULL, 0, 4 * PAGE_SIZE,
			      PROT_READ | PROT_WRITE,
			      MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR_VALUE(uaddr));
	rb_fill(pat, len, 0x5d);
	KUNIT_ASSERT_EQ(test, copy_to_user((void __user *)uaddr + 64, pat, len),
			0);
	ibmr = softmr_reg_user_mr(e->pd, uaddr, 4 * PAGE_SIZE, uaddr,
				  IB_ACCESS_LOCAL_WRITE |
				  IB_ACCESS_REMOTE_WRITE |
				  IB_ACCESS_REMOTE_ATOMIC, NULL);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ibmr));
	umr = to_smr(ibmr);

	/* user memory into the mapped pages, then back elsewhere */
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(dma, addr + PAGE_SIZE - 256, umr,
					     uaddr + 64, len), 0);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(umr, uaddr + 2 * PAGE_SIZE, dma,
					     addr + PAGE_SIZE - 256, len), 0);
	KUNIT_EXPECT_EQ(test, copy_from_user(got, (void __user *)uaddr +
					     2 * PAGE_SIZE, len), 0);
	KUNIT_EXPECT_EQ(test, memcmp(got, pat, len), 0);

	/* an atomic on a DMA address */
	*(u64 *)(page_address(pages) + 8) = 1000;
	KUNIT_EXPECT_EQ(test, softmr_mr_atomic(dma, addr + 8, true, 1000, 77,
					       &orig), 0);
	KUNIT_EXPECT_EQ(test, orig, 1000);

	/* a DMA address with no memory behind it: neither read nor written */
	bad = phys_to_dma(ibdev->dma_device, 1ULL << 45);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(umr, uaddr, dma, bad, 64), -EFAULT);
	KUNIT_EXPECT_EQ(test, softmr_mr_xfer(dma, bad, umr, uaddr, 64), -ENXIO);

	ib_dma_unmap_page(ibdev, addr, RB_DMA_SIZE, DMA_BIDIRECTIONAL);
	/* after the unmap the CPU sees what the engine wrote */
	KUNIT_EXPECT_EQ(test, memcmp(page_address(pages) + PAGE_SIZE - 256, pat,
				     len), 0);
	KUNIT_EXPECT_EQ(test, *(u64 *)(page_address(pages) + 8), 77);
	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&umr->ibmr, NULL), 0);
	KUNIT_EXPECT_EQ(test, softmr_dereg_mr(&dma->ibmr, NULL), 0);
	__free_pages(pages, RB_DMA_ORDER);
}

static struct kunit_case softmr_realbuf_cases[] = {
	KUNIT_CASE(softmr_test_udmabuf_mr),
	KUNIT_CASE(softmr_test_system_heap_mr),
	KUNIT_CASE(softmr_test_dma_map_page),
	{}
};

static struct kunit_suite softmr_realbuf_suite = {
	.name = "softmr_realbuf",
	.test_cases = softmr_realbuf_cases,
};

kunit_test_suite(softmr_realbuf_suite);
