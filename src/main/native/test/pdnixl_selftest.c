/* Two agents in one process: register, exchange metadata, READ with a
 * notification, check every byte and that the notification arrived. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../include/pdnixl.h"

#define CHECK(expr) do { int rc_ = (expr); if (rc_ < 0) { \
    fprintf(stderr, "FAIL %s:%d %s -> %d\n", __FILE__, __LINE__, #expr, rc_); exit(1); } } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
    enum { BLOCKS = 64, BLOCK = 16384 };
    pdx_agent_t *p = NULL, *d = NULL;
    CHECK(pdx_agent_create("selftest-p", 1, 0, &p));
    CHECK(pdx_agent_create("selftest-d", 1, 0, &d));
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
    CHECK(pdx_dlist_prepare(d, NULL, ldesc, BLOCKS, &ll));
    /* The remote list may need the connection to be set up: retry briefly. */
    int rc;
    double deadline = now_s() + 10;
    while ((rc = pdx_dlist_prepare(d, name, rdesc, BLOCKS, &rl)) < 0 && now_s() < deadline) {
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
    while (count == 0 && now_s() < deadline) {
        CHECK(pdx_notif_drain(p, buf, sizeof(buf), &used, &count));
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
    printf("1 passed, 0 failed\n");
    return 0;
}
