/* Private to the pdnixl objects: the structs behind the opaque handles. */
#ifndef PDNIXL_INTERNAL_H
#define PDNIXL_INTERNAL_H

#include "include/pdnixl.h"
#include "nixl_capi_decl.h"

#define PDX_ABI_VERSION 7

struct pdx_agent {
    nixl_capi_agent_t agent;
    nixl_capi_backend_t backend;
    nixl_capi_opt_args_t backend_args; /* names the UCX backend on every call */
    nixl_capi_notif_map_t notifs;      /* drained incrementally, see notif.c */
    size_t notif_agent_cursor;
    size_t notif_msg_cursor;
    int notifs_pending;
};

struct pdx_region {
    nixl_capi_reg_dlist_t dlist;
};

struct pdx_dlist {
    nixl_capi_xfer_dlist_handle_t handle;
    uint32_t count;
};

struct pdx_xfer {
    nixl_capi_xfer_req_t req;
};

#endif
