/* GPU memory registered with NIXL as VRAM (pd.kv.memory=vram).
 *
 * The helper never allocates or frees device memory: pd-connector's Java side allocates the pool
 * with the CUDA driver (io.pdconnector.cuda.VramPool, cuMemAlloc_v2 in the GPU's primary context),
 * registers it here, deregisters it with pdx_region_deregister (the descriptor list keeps the memory
 * type) and frees it itself, in that order. dev_id is the CUDA device ordinal in this process, as
 * NIXL's VRAM descriptors (addr, len, devId) take it. NIXL's UCX backend checks with ucp_mem_query
 * that UCX sees device memory at addr, and fails the registration otherwise. */
#include <stdlib.h>

#include "pdnixl_internal.h"

int pdx_region_register_vram(pdx_agent_t *a, uint64_t addr, uint64_t len, int32_t dev_id,
                             pdx_region_t **region_out)
{
    if (a == NULL || addr == 0 || len == 0 || dev_id < 0 || region_out == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    pdx_region_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return PDX_ERR_NO_MEMORY;
    }
    int rc = nixl_capi_create_reg_dlist(NIXL_CAPI_MEM_VRAM, &r->dlist);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_free;
    }
    rc = nixl_capi_reg_dlist_add_desc(r->dlist, (uintptr_t)addr, (size_t)len, (uint64_t)dev_id, NULL, 0);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_dlist;
    }
    rc = nixl_capi_register_mem(a->agent, r->dlist, a->backend_args);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_dlist;
    }
    *region_out = r;
    return PDX_OK;

err_dlist:
    nixl_capi_destroy_reg_dlist(r->dlist);
err_free:
    free(r);
    return rc;
}
