/*
 * tests/vm/cxl_probe.c -- what persistent memory looks like to libpmem2 and
 * to the RDMA device, printed one fact a line (tests/vm/cxl.sh builds it on
 * the host and runs it in the CXL guest; plain libpmem2 and verbs, no pmrep):
 *
 *   cxl_probe PATH...     per PATH (a device DAX, or a file on a DAX file
 *                         system, created at 4 MiB if missing): the store
 *                         granularity libpmem2 reports, a store + persist
 *                         read back, pmem2_deep_flush, and ibv_reg_mr of the
 *                         mapping on RXE_DEV (rxe0) plain and with
 *                         IBV_ACCESS_ON_DEMAND
 *   cxl_probe --wipe DEV  zero all of DEV through its mapping (a device DAX
 *                         has no write(2)), persisted
 *
 * Exit 0 when every PATH mapped and read back what was stored (the facts
 * themselves -- granularity, deep flush, registration -- are reported, not
 * judged), 1 otherwise, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <libpmem2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_SIZE (4u << 20)

static const char *
gran_str(enum pmem2_granularity g)
{
	switch (g) {
	case PMEM2_GRANULARITY_BYTE: return "BYTE";
	case PMEM2_GRANULARITY_CACHE_LINE: return "CACHE_LINE";
	case PMEM2_GRANULARITY_PAGE: return "PAGE";
	}
	return "?";
}

static struct ibv_pd *
open_pd(struct ibv_context **ctxp)
{
	const char *want = getenv("RXE_DEV") ? getenv("RXE_DEV") : "rxe0";
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;
	for (int i = 0; list && i < n && !ctx; i++)
		if (strcmp(ibv_get_device_name(list[i]), want) == 0)
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		printf("  verbs: no device %s\n", want);
		return NULL;
	}
	struct ibv_device_attr_ex ax;
	memset(&ax, 0, sizeof(ax));
	if (ibv_query_device_ex(ctx, NULL, &ax) == 0)
		printf("  verbs: %s odp general_caps 0x%llx (rc caps 0x%x)\n", want,
				(unsigned long long)ax.odp_caps.general_caps,
				ax.odp_caps.per_transport_caps.rc_odp_caps);
	*ctxp = ctx;
	return ibv_alloc_pd(ctx);
}

static void
try_reg(struct ibv_pd *pd, void *addr, size_t len, int extra, const char *what)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | extra;
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, acc);
	if (mr) {
		printf("  ibv_reg_mr (%s): ok\n", what);
		ibv_dereg_mr(mr);
	} else {
		printf("  ibv_reg_mr (%s): failed: %s (errno %d)\n", what,
				strerror(errno), errno);
	}
}

static int
map_path(const char *path, int create, struct pmem2_map **mapp, int *fdp)
{
	int fd = open(path, O_RDWR | (create ? O_CREAT : 0), 0600);
	if (fd < 0) {
		printf("  open: %s\n", strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
			(errno = posix_fallocate(fd, 0, FILE_SIZE)) != 0) {
		printf("  posix_fallocate: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	struct pmem2_source *src = NULL;
	struct pmem2_config *cfg = NULL;
	int r = pmem2_source_from_fd(&src, fd);
	if (!r)
		r = pmem2_config_new(&cfg);
	if (!r)
		r = pmem2_config_set_required_store_granularity(cfg,
				PMEM2_GRANULARITY_PAGE);
	if (!r)
		r = pmem2_map_new(mapp, cfg, src);
	if (r) {
		printf("  pmem2: %s (%d)\n", pmem2_errormsg(), r);
		close(fd);
		fd = -1;
	}
	if (cfg)
		pmem2_config_delete(&cfg);
	if (src)
		pmem2_source_delete(&src);
	*fdp = fd;
	return r ? -1 : 0;
}

static int
probe(const char *path, struct ibv_pd *pd)
{
	struct pmem2_map *map = NULL;
	int fd;
	printf("== %s\n", path);
	if (map_path(path, 1, &map, &fd))
		return 1;
	char *a = pmem2_map_get_address(map);
	size_t len = pmem2_map_get_size(map);
	printf("  mapped %zu bytes; libpmem2 store granularity: %s\n", len,
			gran_str(pmem2_map_get_store_granularity(map)));

	/* a store, persisted, read back; the last page of the mapping */
	char *p = a + len - 4096;
	static const char pat[] = "pmrep cxl probe";
	pmem2_memcpy_fn mc = pmem2_get_memcpy_fn(map);
	mc(p, pat, sizeof(pat), 0);
	int ok = memcmp(p, pat, sizeof(pat)) == 0;
	printf("  store + persist at offset %zu read back: %s\n",
			(size_t)(p - a), ok ? "ok" : "MISMATCH");

	int r = pmem2_deep_flush(map, p, 4096);
	printf("  pmem2_deep_flush: %s\n", r == 0 ? "ok" : pmem2_errormsg());

	if (pd) {
		try_reg(pd, a, len, 0, "plain");
		try_reg(pd, a, len, IBV_ACCESS_ON_DEMAND, "IBV_ACCESS_ON_DEMAND");
	}
	pmem2_map_delete(&map);
	close(fd);
	return ok ? 0 : 1;
}

static int
wipe(const char *dev)
{
	struct pmem2_map *map = NULL;
	int fd;
	if (map_path(dev, 0, &map, &fd))
		return 1;
	pmem2_memset_fn ms = pmem2_get_memset_fn(map);
	size_t len = pmem2_map_get_size(map);
	ms(pmem2_map_get_address(map), 0, len, 0);
	pmem2_map_delete(&map);
	close(fd);
	printf("wiped %s (%zu bytes)\n", dev, len);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--wipe") == 0)
		return wipe(argv[2]);
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: cxl_probe PATH... | cxl_probe --wipe DEV\n");
		return 2;
	}
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = open_pd(&ctx);
	int bad = 0;
	for (int i = 1; i < argc; i++)
		bad |= probe(argv[i], pd);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	return bad;
}
