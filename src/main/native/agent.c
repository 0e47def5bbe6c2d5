/* Agent lifetime, memory registration and metadata exchange. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pdnixl_internal.h"

int pdx_abi_version(void) { return PDX_ABI_VERSION; }

static int add_int_param(nixl_capi_params_t params, const char *key, int value)
{
    char text[12];
    snprintf(text, sizeof(text), "%d", value);
    return nixl_capi_params_add(params, key, text);
}

static int create_ucx_backend(pdx_agent_t *a, int ucx_threads, int ucx_split_batch)
{
    nixl_capi_mem_list_t mems = NULL;
    nixl_capi_params_t params = NULL;
    int rc = nixl_capi_get_plugin_params(a->agent, "UCX", &mems, &params);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto out;
    }
    /* The UCX backend's own threads split a transfer into batches of split_batch_size descriptors. */
    if (ucx_threads > 0) {
        rc = add_int_param(params, "num_threads", ucx_threads);
        if (rc != NIXL_CAPI_SUCCESS) {
            goto out;
        }
    }
    if (ucx_split_batch > 0) {
        rc = add_int_param(params, "split_batch_size", ucx_split_batch);
        if (rc != NIXL_CAPI_SUCCESS) {
            goto out;
        }
    }
    rc = nixl_capi_create_backend(a->agent, "UCX", params, &a->backend);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto out;
    }
    rc = nixl_capi_create_opt_args(&a->backend_args);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto out;
    }
    rc = nixl_capi_opt_args_add_backend(a->backend_args, a->backend);
out:
    nixl_capi_destroy_params(params);
    nixl_capi_destroy_mem_list(mems);
    return rc;
}

int pdx_agent_create(const char *name, int progress_thread, uint64_t progress_delay_us, int ucx_threads,
                     int ucx_split_batch, pdx_agent_t **agent_out)
{
    if (name == NULL || name[0] == '\0' || agent_out == NULL || ucx_threads < 0
            || ucx_threads > PDX_MAX_UCX_THREADS || ucx_split_batch < 0) {
        return PDX_ERR_ARGUMENT;
    }
    pdx_agent_t *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return PDX_ERR_NO_MEMORY;
    }
    nixl_capi_agent_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.enable_prog_thread = progress_thread != 0;
    cfg.num_workers = 1;
    cfg.pthr_delay_us = progress_delay_us;
    int rc = nixl_capi_create_configured_agent(name, &cfg, &a->agent);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_free;
    }
    rc = create_ucx_backend(a, ucx_threads, ucx_split_batch);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_agent;
    }
    rc = nixl_capi_create_notif_map(&a->notifs);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_agent;
    }
    *agent_out = a;
    return PDX_OK;

err_agent:
    nixl_capi_destroy_opt_args(a->backend_args);
    nixl_capi_destroy_backend(a->backend);
    nixl_capi_destroy_agent(a->agent);
err_free:
    free(a);
    return rc;
}

int pdx_agent_destroy(pdx_agent_t *a)
{
    if (a == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    nixl_capi_destroy_notif_map(a->notifs);
    nixl_capi_destroy_opt_args(a->backend_args);
    nixl_capi_destroy_backend(a->backend);
    int rc = nixl_capi_destroy_agent(a->agent);
    free(a);
    return rc;
}

int pdx_region_register(pdx_agent_t *a, uint64_t addr, uint64_t len, pdx_region_t **region_out)
{
    if (a == NULL || addr == 0 || len == 0 || region_out == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    pdx_region_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return PDX_ERR_NO_MEMORY;
    }
    int rc = nixl_capi_create_reg_dlist(NIXL_CAPI_MEM_DRAM, &r->dlist);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_free;
    }
    rc = nixl_capi_reg_dlist_add_desc(r->dlist, (uintptr_t)addr, (size_t)len, 0, NULL, 0);
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

int pdx_region_deregister(pdx_agent_t *a, pdx_region_t *r)
{
    if (a == NULL || r == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    int rc = nixl_capi_deregister_mem(a->agent, r->dlist, a->backend_args);
    nixl_capi_destroy_reg_dlist(r->dlist);
    free(r);
    return rc;
}

int pdx_local_metadata(pdx_agent_t *a, uint8_t *buf, uint64_t cap, uint64_t *len_out)
{
    if (a == NULL || len_out == NULL || (buf == NULL && cap != 0)) {
        return PDX_ERR_ARGUMENT;
    }
    void *md = NULL;
    size_t len = 0;
    int rc = nixl_capi_get_local_md(a->agent, &md, &len);
    if (rc != NIXL_CAPI_SUCCESS) {
        return rc;
    }
    if (len > cap) {
        rc = PDX_ERR_BUFFER_SMALL;
    } else {
        memcpy(buf, md, len);
    }
    free(md); /* 1.5.1 hands out malloc'd blobs and has no free call of its own */
    *len_out = len;
    return rc;
}

int pdx_remote_load(pdx_agent_t *a, const uint8_t *md, uint64_t len, char *name_out,
                    uint64_t name_cap)
{
    if (a == NULL || md == NULL || len == 0 || name_out == NULL || name_cap == 0) {
        return PDX_ERR_ARGUMENT;
    }
    char *name = NULL;
    int rc = nixl_capi_load_remote_md(a->agent, md, (size_t)len, &name);
    if (rc != NIXL_CAPI_SUCCESS) {
        return rc;
    }
    size_t n = strlen(name);
    if (n + 1 > name_cap) {
        rc = PDX_ERR_BUFFER_SMALL;
    } else {
        memcpy(name_out, name, n + 1);
    }
    free(name);
    return rc;
}

int pdx_remote_invalidate(pdx_agent_t *a, const char *remote_name)
{
    if (a == NULL || remote_name == NULL || remote_name[0] == '\0') {
        return PDX_ERR_ARGUMENT;
    }
    return nixl_capi_invalidate_remote_md(a->agent, remote_name);
}
