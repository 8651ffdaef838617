// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * softmr dma-buf MR test: buffers from udmabuf (a memfd turned into a
 * dma-buf) and from the system dma-heap registered with ibv_reg_dmabuf_mr()
 * and used by every RC operation (send/recv, write, read, atomics; data
 * checked through the CPU's own mapping of the same memory), a dma-buf MR
 * next to a plain MR in both directions (offset into the buffer, iova 0), the fd closed after registration,
 * and the registration errors: a range outside the buffer, a file that is
 * not a dma-buf, a closed fd, bad access flags, an iova whose page offset
 * differs from the offset's.  Device memory exported as a dma-buf
 * (ibv_dm_export_dmabuf_fd) takes the same tests after ibv_free_dm(): the
 * dma-buf keeps the memory, and a later allocation is zeroed.
 *
 * usage: softmr_dmabuf DEV
 */

#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/dma-buf.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>

#define BUF	(1 << 20)
#include "softmr_qp_util.h"

#define RW	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* A dma-buf of @size bytes and a CPU mapping of the same memory. */
struct dbuf {
	int fd;		/* the dma-buf */
	int memfd;	/* udmabuf: its memfd, else -1 */
	uint8_t *cpu;
	size_t size;
};

static int udmabuf_new(struct dbuf *d, size_t size)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC };
	int dev;

	d->fd = -1;
	d->size = size;
	d->memfd = memfd_create("softmr-udmabuf", MFD_ALLOW_SEALING);
	if (d->memfd < 0 || ftruncate(d->memfd, size) ||
	    fcntl(d->memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
		return -1;
	dev = open("/dev/udmabuf", O_RDWR);
	if (dev < 0)
		return -1;
	c.memfd = d->memfd;
	c.size = size;
	d->fd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	if (d->fd < 0)
		return -1;
	d->cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      d->memfd, 0);
	return d->cpu == MAP_FAILED ? -1 : 0;
}

static int heap_new(struct dbuf *d, size_t size)
{
	struct dma_heap_allocation_data a = {
		.len = size,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	d->fd = -1;
	d->memfd = -1;
	d->size = size;
	if (heap < 0)
		return -1;
	if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &a) < 0) {
		close(heap);
		return -1;
	}
	close(heap);
	d->fd = a.fd;
	d->cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd,
		      0);
	return d->cpu == MAP_FAILED ? -1 : 0;
}

/*
 * Device memory exported as a dma-buf; the DM is freed at once: the
 * dma-buf keeps the memory, and the tests then run on it.
 */
static int dm_new(struct dbuf *d, size_t size)
{
	struct ibv_alloc_dm_attr a = { .length = size };
	uint32_t pattern = 0x5eedf00d;
	struct ibv_dm *dm;
	uint32_t back = 0;

	d->fd = -1;
	d->memfd = -1;
	d->size = size;
	dm = ibv_alloc_dm(ctx, &a);
	if (!dm)
		return -1;
	CHECK(!ibv_memcpy_to_dm(dm, 4096, &pattern, sizeof(pattern)),
	      "memcpy_to_dm");
	d->fd = ibv_dm_export_dmabuf_fd(dm);
	CHECK(d->fd > 2, "ibv_dm_export_dmabuf_fd: %d (%s)", d->fd,
	      strerror(errno));
	if (d->fd >= 0) {
		d->cpu = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      d->fd, 0);
		CHECK(d->cpu != MAP_FAILED, "mmap of the DM dma-buf: %s",
		      strerror(errno));
		if (d->cpu != MAP_FAILED)
			memcpy(&back, d->cpu + 4096, sizeof(back));
		CHECK(back == pattern, "the dma-buf shows the DM's bytes");
		CHECK(mmap(NULL, size + 4096, PROT_READ, MAP_SHARED, d->fd,
			   0) == MAP_FAILED, "no mapping beyond the DM");
	}
	CHECK(!ibv_free_dm(dm), "free_dm while exported");
	return d->fd >= 0 && d->cpu != MAP_FAILED ? 0 : -1;
}

/* A new allocation never shows what an earlier one held. */
static void dm_reuse_zeroed(size_t size)
{
	struct ibv_alloc_dm_attr a = { .length = size };
	uint8_t *back = calloc(1, size);
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &a);
	size_t i;

	CHECK(dm && back, "alloc_dm after the export is gone");
	if (!dm || !back)
		goto out;
	CHECK(!ibv_memcpy_from_dm(back, dm, 0, size), "memcpy_from_dm");
	for (i = 0; i < size && !back[i]; i++)
		;
	CHECK(i == size, "fresh DM is zeroed (byte %zu)", i);
	ibv_free_dm(dm);
out:
	free(back);
}

static void dbuf_free(struct dbuf *d)
{
	if (d->cpu && d->cpu != MAP_FAILED)
		munmap(d->cpu, d->size);
	if (d->fd >= 0)
		close(d->fd);
	if (d->memfd >= 0)
		close(d->memfd);
}

/* The CPU view, bracketed by DMA_BUF_IOCTL_SYNC as dma-buf users must. */
static void cpu_sync(struct dbuf *d, int end)
{
	struct dma_buf_sync s = {
		.flags = DMA_BUF_SYNC_RW |
			 (end ? DMA_BUF_SYNC_END : DMA_BUF_SYNC_START),
	};

	if (d->fd >= 0)
		ioctl(d->fd, DMA_BUF_IOCTL_SYNC, &s);
}

/* `rdma res show mr -dd` has a line with @mr's lkey and @what. */
static int restrack_shows(struct ibv_mr *mr, const char *what)
{
	char cmd[128], line[1024], key[32];
	int found = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma res show mr dev %s -dd",
		 ibv_get_device_name(ctx->device));
	snprintf(key, sizeof(key), "lkey 0x%x ", mr->lkey);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, key) && strstr(line, what))
			found = 1;
	pclose(f);
	return found;
}

/*
 * Every RC operation on a dma-buf MR whose iova is the CPU mapping's
 * address, so test_rc_ops() checks the data through that mapping.  The fd
 * is closed first: the MR keeps the buffer.
 */
static void test_ops(struct dbuf *d, const char *what)
{
	struct ibv_mr *mr;
	long long mrs = st_counter(ibv_get_device_name(ctx->device),
				   "dmabuf_mrs");

	mr = ibv_reg_dmabuf_mr(pd, 0, d->size, (uintptr_t)d->cpu, d->fd, RW);
	CHECK(mr != NULL, "%s: reg_dmabuf_mr: %s", what, strerror(errno));
	if (!mr)
		return;
	/* libibverbs reports the dma-buf offset as the MR's addr */
	CHECK(mr->lkey == mr->rkey && mr->length == d->size && !mr->addr,
	      "%s: MR attributes", what);
	CHECK(st_counter(ibv_get_device_name(ctx->device), "dmabuf_mrs") ==
	      mrs + 1, "%s: dmabuf_mrs counter", what);
	CHECK(restrack_shows(mr, "drv_kind dmabuf drv_import pinned"),
	      "%s: rdma res show mr marks the MR", what);
	close(d->fd);
	d->fd = -1;
	test_rc_ops(mr, d->cpu, what);
	CHECK(!ibv_dereg_mr(mr), "%s: dereg", what);
	CHECK(st_counter(ibv_get_device_name(ctx->device), "dmabuf_mrs") ==
	      mrs, "%s: dmabuf_mrs counter back", what);
}

/* A plain MR and a dma-buf MR (at an offset) in both directions. */
static void test_mixed(struct dbuf *d)
{
	struct end a = {}, b = {};
	uint8_t *plain = malloc(65536);
	struct ibv_mr *pm, *dm;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;

	printf("-- plain MR <-> dma-buf MR at an offset, iova 0\n");
	pm = ibv_reg_mr(pd, plain, 65536, RW);
	/* bytes 8192.. of the buffer, addressed from iova 0 */
	dm = ibv_reg_dmabuf_mr(pd, 8192, 65536, 0, d->fd, RW);
	CHECK(pm && dm, "MRs: %s", strerror(errno));
	if (!pm || !dm || make_rc_pair(&a, &b, RW, 7)) {
		CHECK(0, "setup");
		goto out;
	}

	fill(plain, 65536, 9);
	cpu_sync(d, 0);
	memset(d->cpu, 0, d->size);
	cpu_sync(d, 1);
	sge = (struct ibv_sge){ (uintptr_t)plain + 100, 30000, pm->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = 500;
	wr.wr.rdma.rkey = dm->rkey;
	CHECK(!post(a.qp, &wr), "post write");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS,
	      "write into the dma-buf MR: %s", ibv_wc_status_str(wc.status));
	cpu_sync(d, 0);
	CHECK(!memcmp(d->cpu + 8192 + 500, plain + 100, 30000),
	      "data at offset 8192 + 500");
	CHECK(d->cpu[8192 + 499] == 0 && d->cpu[8192 + 30500] == 0,
	      "nothing around it");
	cpu_sync(d, 1);

	/* the dma-buf MR as the local source of a write to the plain MR */
	memset(plain, 0, 65536);
	sge = (struct ibv_sge){ 500, 30000, dm->lkey };
	wr.wr.rdma.remote_addr = (uintptr_t)plain + 7;
	wr.wr.rdma.rkey = pm->rkey;
	wr.wr_id = 2;
	CHECK(!post(a.qp, &wr), "post write");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_SUCCESS,
	      "write from the dma-buf MR: %s", ibv_wc_status_str(wc.status));
	CHECK(!memcmp(plain + 7, d->cpu + 8192 + 500, 30000),
	      "data read out of the dma-buf");

	/* beyond the MR's 64 KiB: remote access error, nothing written */
	sge = (struct ibv_sge){ (uintptr_t)plain, 16, pm->lkey };
	wr.wr.rdma.remote_addr = 65536 - 8;
	wr.wr.rdma.rkey = dm->rkey;
	wr.wr_id = 3;
	CHECK(!post(a.qp, &wr), "post write");
	CHECK(!wait_wc(a.cq, &wc) && wc.status == IBV_WC_REM_ACCESS_ERR,
	      "write past the MR: %s", ibv_wc_status_str(wc.status));
	CHECK(d->cpu[8192 + 65536] == 0, "no byte past the MR");
out:
	free_end(&a);
	free_end(&b);
	if (dm)
		CHECK(!ibv_dereg_mr(dm), "dereg dma-buf MR");
	if (pm)
		ibv_dereg_mr(pm);
	free(plain);
}

static void test_reg_errors(struct dbuf *d)
{
	int notdmabuf = memfd_create("plain", 0);
	int closed = dup(d->fd);

	printf("-- registration errors\n");
	close(closed);
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, 0, d->size + 4096, 0, d->fd, RW),
		    EINVAL, "length beyond the buffer");
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, d->size - 4096, 8192, 0, d->fd, RW),
		    EINVAL, "offset + length beyond the buffer");
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, 4096, UINT64_MAX - 100, 0, d->fd,
				       RW), EINVAL, "overflowing range");
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, 0, 0, 0, d->fd, RW), EINVAL,
		    "zero length");
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, 0, 4096, 0, notdmabuf, RW), EINVAL,
		    "a memfd is not a dma-buf");
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, 0, 4096, 0, closed, RW), EBADF,
		    "closed fd");
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, 0, 4096, 0, d->fd,
				       IBV_ACCESS_REMOTE_WRITE), EINVAL,
		    "remote write without local write");
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, 0, 4096, 0, d->fd,
				       RW | IBV_ACCESS_ON_DEMAND), EINVAL,
		    "ON_DEMAND has no meaning for a dma-buf");
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, 0, 4096, 0, d->fd,
				       RW | IBV_ACCESS_ZERO_BASED), EINVAL,
		    "ZERO_BASED is not a dma-buf MR flag (the iova says it)");
	errno = 0;
	CHECK_ERRNO(!ibv_reg_dmabuf_mr(pd, 0, 4096, 100, d->fd, RW), EINVAL,
		    "iova page offset differs from the offset's");
	close(notdmabuf);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "softmr0";
	struct dbuf u = { .fd = -1, .memfd = -1 }, h = u, m = u;

	if (st_setup(dev))
		return 1;
	if (!pd)
		return st_finish("softmr_dmabuf");

	/*
	 * Exporters the kernel may lack (Debian's 6.1 has neither udmabuf nor
	 * dma-heaps): skipped when their device is absent and
	 * SOFTMR_NO_UDMABUF / SOFTMR_NO_DMA_HEAP say the kernel has none
	 * (run-all reads the kernel's configuration); the DM dma-buf below
	 * is softmr's own exporter, on every kernel.
	 */
	if (access("/dev/udmabuf", F_OK) && getenv("SOFTMR_NO_UDMABUF"))
		printf("SKIP udmabuf: this kernel has no CONFIG_UDMABUF\n");
	else
		CHECK(!udmabuf_new(&u, BUF), "udmabuf: %s", strerror(errno));
	if (u.fd >= 0) {
		test_reg_errors(&u);
		test_mixed(&u);
		test_ops(&u, "udmabuf");
	}
	dbuf_free(&u);

	CHECK(!dm_new(&m, BUF), "DM exported as a dma-buf: %s",
	      strerror(errno));
	if (m.fd >= 0 && m.cpu != MAP_FAILED) {
		test_mixed(&m);
		test_ops(&m, "DM dma-buf");
	}
	dbuf_free(&m);
	dm_reuse_zeroed(BUF);

	if (access("/dev/dma_heap/system", F_OK) &&
	    getenv("SOFTMR_NO_DMA_HEAP"))
		printf("SKIP system dma-heap: this kernel has no CONFIG_DMABUF_HEAPS_SYSTEM\n");
	else
		CHECK(!heap_new(&h, BUF), "system dma-heap: %s",
		      strerror(errno));
	if (h.fd >= 0) {
		test_mixed(&h);
		test_ops(&h, "system dma-heap");
	}
	dbuf_free(&h);

	CHECK(!ibv_dealloc_pd(pd), "dealloc PD");
	ibv_close_device(ctx);
	return st_finish("softmr_dmabuf");
}
