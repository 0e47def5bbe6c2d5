/* Prepared descriptor lists and READ requests. */
#include <stdlib.h>

#include "pdnixl_internal.h"

/* NIXL's memory type for ours; -1 for none. */
static int nixl_mem_type(int32_t mem_type, int32_t dev_id)
{
    if (mem_type == PDX_MEM_DRAM && dev_id == 0) {
        return NIXL_CAPI_MEM_DRAM;
    }
    if (mem_type == PDX_MEM_VRAM && dev_id >= 0) {
        return NIXL_CAPI_MEM_VRAM;
    }
    return -1;
}

int pdx_dlist_prepare(pdx_agent_t *a, const char *remote_name, int32_t mem_type, int32_t dev_id,
                      const uint64_t *descs, uint32_t n, pdx_dlist_t **dlist_out)
{
    int nixl_type = nixl_mem_type(mem_type, dev_id);
    if (a == NULL || nixl_type < 0 || descs == NULL || n == 0 || dlist_out == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    pdx_dlist_t *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return PDX_ERR_NO_MEMORY;
    }
    nixl_capi_xfer_dlist_t list = NULL;
    int rc = nixl_capi_create_xfer_dlist(nixl_type, &list);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_free;
    }
    for (uint32_t i = 0; i < n; i++) {
        rc = nixl_capi_xfer_dlist_add_desc(list, (uintptr_t)descs[2 * i], (size_t)descs[2 * i + 1],
                                           (uint64_t)dev_id);
        if (rc != NIXL_CAPI_SUCCESS) {
            goto err_list;
        }
    }
    /* NIXL names the local side with the empty agent name. */
    const char *owner = remote_name == NULL ? "" : remote_name;
    rc = nixl_capi_prep_xfer_dlist(a->agent, owner, list, &d->handle, a->backend_args);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_list;
    }
    nixl_capi_destroy_xfer_dlist(list);
    d->count = n;
    *dlist_out = d;
    return PDX_OK;

err_list:
    nixl_capi_destroy_xfer_dlist(list);
err_free:
    free(d);
    return rc;
}

int pdx_dlist_release(pdx_agent_t *a, pdx_dlist_t *d)
{
    if (a == NULL || d == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    int rc = nixl_capi_release_xfer_dlist_handle(a->agent, d->handle);
    free(d);
    return rc;
}

static int indices_in_range(const int32_t *idx, uint32_t n, uint32_t count)
{
    for (uint32_t i = 0; i < n; i++) {
        if (idx[i] < 0 || (uint32_t)idx[i] >= count) {
            return 0;
        }
    }
    return 1;
}

static int make_read(pdx_agent_t *a, pdx_dlist_t *local, const int32_t *local_idx,
                     pdx_dlist_t *remote, const int32_t *remote_idx, uint32_t n,
                     const uint8_t *notif, uint64_t notif_len, nixl_capi_xfer_req_t *req)
{
    nixl_capi_opt_args_t args = NULL;
    int rc = nixl_capi_create_opt_args(&args);
    if (rc != NIXL_CAPI_SUCCESS) {
        return rc;
    }
    if (notif != NULL) {
        rc = nixl_capi_opt_args_set_notif_msg(args, notif, (size_t)notif_len);
        if (rc == NIXL_CAPI_SUCCESS) {
            rc = nixl_capi_opt_args_set_has_notif(args, true);
        }
        if (rc != NIXL_CAPI_SUCCESS) {
            goto out;
        }
    }
    rc = nixl_capi_make_xfer_req(a->agent, NIXL_CAPI_XFER_OP_READ, local->handle, local_idx, n,
                                 remote->handle, remote_idx, n, req, args);
out:
    nixl_capi_destroy_opt_args(args);
    return rc;
}

int pdx_read_post(pdx_agent_t *a, pdx_dlist_t *local, const int32_t *local_idx,
                  pdx_dlist_t *remote, const int32_t *remote_idx, uint32_t n,
                  const uint8_t *notif, uint64_t notif_len, pdx_xfer_t **xfer_out)
{
    if (a == NULL || local == NULL || remote == NULL || local_idx == NULL || remote_idx == NULL
        || n == 0 || xfer_out == NULL || (notif == NULL && notif_len != 0)) {
        return PDX_ERR_ARGUMENT;
    }
    if (!indices_in_range(local_idx, n, local->count) || !indices_in_range(remote_idx, n, remote->count)) {
        return PDX_ERR_ARGUMENT;
    }
    pdx_xfer_t *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        return PDX_ERR_NO_MEMORY;
    }
    int rc = make_read(a, local, local_idx, remote, remote_idx, n, notif, notif_len, &x->req);
    if (rc != NIXL_CAPI_SUCCESS) {
        goto err_free;
    }
    rc = nixl_capi_post_xfer_req(a->agent, x->req, NULL);
    if (rc != NIXL_CAPI_SUCCESS && rc != NIXL_CAPI_IN_PROG) {
        goto err_req;
    }
    *xfer_out = x;
    return rc;

err_req:
    nixl_capi_release_xfer_req(a->agent, x->req);
    nixl_capi_destroy_xfer_req(x->req);
err_free:
    free(x);
    return rc;
}

int pdx_xfer_status(pdx_agent_t *a, pdx_xfer_t *x)
{
    if (a == NULL || x == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    return nixl_capi_get_xfer_status(a->agent, x->req);
}

int pdx_xfer_release(pdx_agent_t *a, pdx_xfer_t *x)
{
    if (a == NULL || x == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    int rc = nixl_capi_release_xfer_req(a->agent, x->req);
    if (rc != NIXL_CAPI_SUCCESS) {
        /* NIXL refused (its backend cannot cancel a READ in flight) and still owns the request: keep
         * the handle, so the caller can poll it and release it again once it is terminal. */
        return rc;
    }
    int rc2 = nixl_capi_destroy_xfer_req(x->req);
    free(x);
    return rc2;
}
