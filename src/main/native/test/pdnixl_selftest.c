/* Two agents in one process: register, exchange metadata, READ with a
 * notification, check every byte and that the notification arrived; a
 * notification larger than the drain buffer is dropped and counted, never
 * blocking the ones behind it. Then the file-backed memory a local engine
 * shares: zeroed, shared, locked, released. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../include/pdnixl.h"

#define CHECK(expr) do { int rc_ = (expr); if (rc_ < 0) { \
    fprintf(stderr, "FAIL %s:%d %s -> %d\n", __FILE__, __LINE__, #expr, rc_); exit(1); } } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* pdx_mem_map_file: the bytes another mapping of the file writes are the bytes at addr; a second
 * live mapping of the same path is refused; retiring releases the path for the next owner. */
static int map_file_test(void)
{
    enum { LEN = 8192 };
    char path[64];
    snprintf(path, sizeof(path), "/tmp/pdnixl-selftest-%d.kv", (int)getpid());
    uint64_t addr = 0, again = 0;
    CHECK(pdx_mem_map_file(path, LEN, &addr));
    uint8_t *mine = (uint8_t *)(uintptr_t)addr;
    if (mine[0] != 0 || mine[LEN - 1] != 0) {
        fprintf(stderr, "FAIL: a fresh file region is not zeroed\n");
        return 1;
    }
    int fd = open(path, O_RDWR);
    uint8_t *engine = fd < 0 ? MAP_FAILED : mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (engine == MAP_FAILED) {
        fprintf(stderr, "FAIL: cannot map %s a second time\n", path);
        return 1;
    }
    close(fd);
    memset(engine + 4096, 0x5a, 4096);
    if (mine[4096] != 0x5a || mine[LEN - 1] != 0x5a) {
        fprintf(stderr, "FAIL: a write through another mapping is not visible\n");
        return 1;
    }
    int rc = pdx_mem_map_file(path, LEN, &again);
    if (rc != PDX_ERR_BUSY || pdx_mem_map_file("relative.kv", LEN, &again) != PDX_ERR_ARGUMENT
            || pdx_mem_map_file(path, 100, &again) != PDX_ERR_ARGUMENT) {
        fprintf(stderr, "FAIL: a held file or bad arguments were not refused (%d)\n", rc);
        return 1;
    }
    munmap(engine, LEN);
    CHECK(pdx_mem_retire(addr, LEN));
    CHECK(pdx_mem_map_file(path, LEN, &again));
    CHECK(unlink(path));
    CHECK(pdx_mem_retire(again, LEN));
    return 0;
}

/* pdx_notif_drain: a record no buffer of cap could take is skipped and counted, not left under
 * the cursor to fail every later drain; a record that only does not fit what is left of the buffer
 * waits for the next call (PDX_MORE). */
static int drain_test(pdx_agent_t *p, pdx_agent_t *d, const char *p_name)
{
    enum { BIG = 100 * 1024 };
    static uint8_t big[BIG];
    const char *after = "after-1";
    memset(big, 'x', sizeof(big));
    CHECK(pdx_notif_send(d, p_name, big, sizeof(big)));
    CHECK(pdx_notif_send(d, p_name, (const uint8_t *)after, strlen(after)));
    CHECK(pdx_notif_send(d, p_name, (const uint8_t *)after, strlen(after)));
    usleep(500 * 1000); /* NIXL's progress thread collects all three: one drain call sees them together */

    uint8_t buf[64];
    const uint64_t one = 8 + strlen("selftest-d") + strlen(after); /* room for one small record */
    uint32_t got = 0, dropped = 0, more = 0;
    double deadline = now_s() + 10;
    while ((got < 2 || dropped < 1) && now_s() < deadline) {
        uint64_t used = 0;
        uint32_t count = 0, skipped = 0;
        int rc = pdx_notif_drain(p, buf, one, &used, &count, &skipped);
        CHECK(rc);
        if (used != count * one || (count == 1 && memcmp(buf + 8 + strlen("selftest-d"), after, strlen(after)) != 0)) {
            fprintf(stderr, "FAIL: drain wrote %llu bytes for %u records\n", (unsigned long long)used, count);
            return 1;
        }
        more += rc == PDX_MORE;
        got += count;
        dropped += skipped;
    }
    if (got != 2 || dropped != 1 || more == 0) {
        fprintf(stderr, "FAIL: drained %u, dropped %u, PDX_MORE %u times\n", got, dropped, more);
        return 1;
    }
    return 0;
}

static int read_test(void)
{
    enum { BLOCKS = 64, BLOCK = 16384 };
    pdx_agent_t *p = NULL, *d = NULL;
    CHECK(pdx_agent_create("selftest-p", 1, 0, 0, 0, &p));
    CHECK(pdx_agent_create("selftest-d", 1, 0, 2, 8, &d));
    uint8_t *src = aligned_alloc(4096, BLOCKS * BLOCK);
    uint8_t *dst = aligned_alloc(4096, BLOCKS * BLOCK);
    for (size_t i = 0; i < (size_t)BLOCKS * BLOCK; i++) {
        src[i] = (uint8_t)(i * 131 + 7);
    }
    memset(dst, 0, BLOCKS * BLOCK);
    pdx_region_t *rp = NULL, *rd = NULL;
    CHECK(pdx_region_register(p, (uint64_t)(uintptr_t)src, BLOCKS * BLOCK, &rp));
    CHECK(pdx_region_register(d, (uint64_t)(uintptr_t)dst, BLOCKS * BLOCK, &rd));

    uint8_t md[1 << 16];
    uint64_t md_len = 0;
    CHECK(pdx_local_metadata(p, md, sizeof(md), &md_len));
    char name[128];
    CHECK(pdx_remote_load(d, md, md_len, name, sizeof(name)));

    uint64_t ldesc[2 * BLOCKS], rdesc[2 * BLOCKS];
    int32_t idx[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        ldesc[2 * i] = (uint64_t)(uintptr_t)(dst + (size_t)i * BLOCK);
        rdesc[2 * i] = (uint64_t)(uintptr_t)(src + (size_t)i * BLOCK);
        ldesc[2 * i + 1] = rdesc[2 * i + 1] = BLOCK;
        idx[i] = i;
    }
    pdx_dlist_t *ll = NULL, *rl = NULL;
    CHECK(pdx_dlist_prepare(d, NULL, PDX_MEM_DRAM, 0, ldesc, BLOCKS, &ll));
    /* The remote list may need the connection to be set up: retry briefly. */
    int rc;
    double deadline = now_s() + 10;
    while ((rc = pdx_dlist_prepare(d, name, PDX_MEM_DRAM, 0, rdesc, BLOCKS, &rl)) < 0 && now_s() < deadline) {
    }
    CHECK(rc);
    pdx_xfer_t *x = NULL;
    const char *msg = "req-1:1:42";
    CHECK(rc = pdx_read_post(d, ll, idx, rl, idx, BLOCKS, (const uint8_t *)msg, strlen(msg), &x));
    deadline = now_s() + 10;
    while (rc == PDX_IN_PROGRESS && now_s() < deadline) {
        rc = pdx_xfer_status(d, x);
    }
    CHECK(rc);
    if (rc != PDX_OK || memcmp(src, dst, BLOCKS * BLOCK) != 0) {
        fprintf(stderr, "FAIL: read rc=%d or bytes differ\n", rc);
        return 1;
    }
    uint8_t buf[4096];
    uint64_t used = 0;
    uint32_t count = 0;
    deadline = now_s() + 10;
    uint32_t dropped = 0;
    while (count == 0 && now_s() < deadline) {
        CHECK(pdx_notif_drain(p, buf, sizeof(buf), &used, &count, &dropped));
    }
    if (count != 1) {
        fprintf(stderr, "FAIL: %u notifications\n", count);
        return 1;
    }
    uint32_t alen, mlen;
    memcpy(&alen, buf, 4);
    memcpy(&mlen, buf + 4, 4);
    if (mlen != strlen(msg) || memcmp(buf + 8 + alen, msg, mlen) != 0) {
        fprintf(stderr, "FAIL: notification text\n");
        return 1;
    }
    if (drain_test(p, d, name) != 0) {
        return 1;
    }
    CHECK(pdx_xfer_release(d, x));
    CHECK(pdx_dlist_release(d, rl));
    CHECK(pdx_dlist_release(d, ll));
    CHECK(pdx_remote_invalidate(d, name));
    CHECK(pdx_region_deregister(d, rd));
    CHECK(pdx_region_deregister(p, rp));
    CHECK(pdx_agent_destroy(d));
    CHECK(pdx_agent_destroy(p));
    free(src);
    free(dst);
    return 0;
}

int main(void)
{
    int failed = read_test() + map_file_test();
    printf("%d passed, %d failed\n", 2 - failed, failed);
    return failed == 0 ? 0 : 1;
}
