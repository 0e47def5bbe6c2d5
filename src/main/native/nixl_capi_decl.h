/*
 * Declarations of the libnixl_capi functions pdnixl calls. The NIXL wheel
 * installs no header, so the project declares what it binds, checked against
 * the symbols and calling conventions of the pinned wheel (nixl-cu12 1.5.1).
 * The ABI carries no stability promise: bumping the wheel means re-checking
 * every line here (see docs/internals.md, "Native layer").
 */
#ifndef PDNIXL_NIXL_CAPI_DECL_H
#define PDNIXL_NIXL_CAPI_DECL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int nixl_capi_status_t;
enum { NIXL_CAPI_SUCCESS = 0, NIXL_CAPI_IN_PROG = 1 };
enum { NIXL_CAPI_MEM_DRAM = 0, NIXL_CAPI_MEM_VRAM = 1 };
enum { NIXL_CAPI_XFER_OP_READ = 0 };

typedef struct nixl_capi_agent_s *nixl_capi_agent_t;
typedef struct nixl_capi_params_s *nixl_capi_params_t;
typedef struct nixl_capi_mem_list_s *nixl_capi_mem_list_t;
typedef struct nixl_capi_backend_s *nixl_capi_backend_t;
typedef struct nixl_capi_opt_args_s *nixl_capi_opt_args_t;
typedef struct nixl_capi_xfer_dlist_s *nixl_capi_xfer_dlist_t;
typedef struct nixl_capi_xfer_dlist_handle_s *nixl_capi_xfer_dlist_handle_t;
typedef struct nixl_capi_reg_dlist_s *nixl_capi_reg_dlist_t;
typedef struct nixl_capi_xfer_req_s *nixl_capi_xfer_req_t;
typedef struct nixl_capi_notif_map_s *nixl_capi_notif_map_t;

/* Layout read off nixl_capi_create_configured_agent in the 1.5.1 wheel: it
 * loads the two flags at offset 0, the listen port at 4, the sync mode at 8,
 * the two delays at 16 and 24 and the telemetry flag at 32. */
typedef struct {
    bool enable_prog_thread;
    bool enable_listen_thread;
    int32_t listen_port;
    int32_t thread_sync;
    uint32_t num_workers;
    uint64_t pthr_delay_us;
    uint64_t lthr_delay_us;
    bool capture_telemetry;
} nixl_capi_agent_config_t;

nixl_capi_status_t nixl_capi_create_configured_agent(const char *name,
                                                     const nixl_capi_agent_config_t *cfg,
                                                     nixl_capi_agent_t *agent);
nixl_capi_status_t nixl_capi_destroy_agent(nixl_capi_agent_t agent);
nixl_capi_status_t nixl_capi_get_local_md(nixl_capi_agent_t agent, void **data, size_t *len);
nixl_capi_status_t nixl_capi_load_remote_md(nixl_capi_agent_t agent, const void *data, size_t len,
                                            char **agent_name);
nixl_capi_status_t nixl_capi_invalidate_remote_md(nixl_capi_agent_t agent, const char *remote);

nixl_capi_status_t nixl_capi_get_plugin_params(nixl_capi_agent_t agent, const char *plugin,
                                               nixl_capi_mem_list_t *mems,
                                               nixl_capi_params_t *params);
nixl_capi_status_t nixl_capi_destroy_mem_list(nixl_capi_mem_list_t list);
nixl_capi_status_t nixl_capi_destroy_params(nixl_capi_params_t params);
nixl_capi_status_t nixl_capi_params_add(nixl_capi_params_t params, const char *key, const char *value);
nixl_capi_status_t nixl_capi_create_backend(nixl_capi_agent_t agent, const char *plugin,
                                            nixl_capi_params_t params,
                                            nixl_capi_backend_t *backend);
nixl_capi_status_t nixl_capi_destroy_backend(nixl_capi_backend_t backend);

nixl_capi_status_t nixl_capi_create_opt_args(nixl_capi_opt_args_t *args);
nixl_capi_status_t nixl_capi_destroy_opt_args(nixl_capi_opt_args_t args);
nixl_capi_status_t nixl_capi_opt_args_add_backend(nixl_capi_opt_args_t args,
                                                  nixl_capi_backend_t backend);
nixl_capi_status_t nixl_capi_opt_args_set_notif_msg(nixl_capi_opt_args_t args, const void *data,
                                                    size_t len);
nixl_capi_status_t nixl_capi_opt_args_set_has_notif(nixl_capi_opt_args_t args, bool has_notif);

/* In 1.5.1 the two list constructors take no "sorted" flag, and the reg
 * descriptor carries a metadata blob (NULL, 0 here). */
nixl_capi_status_t nixl_capi_create_reg_dlist(int mem_type, nixl_capi_reg_dlist_t *dlist);
nixl_capi_status_t nixl_capi_destroy_reg_dlist(nixl_capi_reg_dlist_t dlist);
nixl_capi_status_t nixl_capi_reg_dlist_add_desc(nixl_capi_reg_dlist_t dlist, uintptr_t addr,
                                                size_t len, uint64_t dev_id,
                                                const void *metadata, size_t metadata_len);
nixl_capi_status_t nixl_capi_register_mem(nixl_capi_agent_t agent, nixl_capi_reg_dlist_t dlist,
                                          nixl_capi_opt_args_t opt_args);
nixl_capi_status_t nixl_capi_deregister_mem(nixl_capi_agent_t agent, nixl_capi_reg_dlist_t dlist,
                                            nixl_capi_opt_args_t opt_args);

nixl_capi_status_t nixl_capi_create_xfer_dlist(int mem_type, nixl_capi_xfer_dlist_t *dlist);
nixl_capi_status_t nixl_capi_destroy_xfer_dlist(nixl_capi_xfer_dlist_t dlist);
nixl_capi_status_t nixl_capi_xfer_dlist_add_desc(nixl_capi_xfer_dlist_t dlist, uintptr_t addr,
                                                 size_t len, uint64_t dev_id);
nixl_capi_status_t nixl_capi_prep_xfer_dlist(nixl_capi_agent_t agent, const char *agent_name,
                                             nixl_capi_xfer_dlist_t descs,
                                             nixl_capi_xfer_dlist_handle_t *handle,
                                             nixl_capi_opt_args_t opt_args);
nixl_capi_status_t nixl_capi_release_xfer_dlist_handle(nixl_capi_agent_t agent,
                                                       nixl_capi_xfer_dlist_handle_t handle);
nixl_capi_status_t nixl_capi_make_xfer_req(nixl_capi_agent_t agent, int operation,
                                           nixl_capi_xfer_dlist_handle_t local_descs,
                                           const int *local_indices, size_t local_count,
                                           nixl_capi_xfer_dlist_handle_t remote_descs,
                                           const int *remote_indices, size_t remote_count,
                                           nixl_capi_xfer_req_t *req, nixl_capi_opt_args_t opt_args);
nixl_capi_status_t nixl_capi_post_xfer_req(nixl_capi_agent_t agent, nixl_capi_xfer_req_t req,
                                           nixl_capi_opt_args_t opt_args);
nixl_capi_status_t nixl_capi_get_xfer_status(nixl_capi_agent_t agent, nixl_capi_xfer_req_t req);
nixl_capi_status_t nixl_capi_release_xfer_req(nixl_capi_agent_t agent, nixl_capi_xfer_req_t req);
nixl_capi_status_t nixl_capi_destroy_xfer_req(nixl_capi_xfer_req_t req);

nixl_capi_status_t nixl_capi_create_notif_map(nixl_capi_notif_map_t *map);
nixl_capi_status_t nixl_capi_destroy_notif_map(nixl_capi_notif_map_t map);
nixl_capi_status_t nixl_capi_get_notifs(nixl_capi_agent_t agent, nixl_capi_notif_map_t map,
                                        nixl_capi_opt_args_t opt_args);
nixl_capi_status_t nixl_capi_notif_map_clear(nixl_capi_notif_map_t map);
nixl_capi_status_t nixl_capi_notif_map_size(nixl_capi_notif_map_t map, size_t *size);
nixl_capi_status_t nixl_capi_notif_map_get_agent_at(nixl_capi_notif_map_t map, size_t index,
                                                    const char **agent_name);
nixl_capi_status_t nixl_capi_notif_map_get_notifs_size(nixl_capi_notif_map_t map,
                                                       const char *agent_name, size_t *size);
nixl_capi_status_t nixl_capi_notif_map_get_notif(nixl_capi_notif_map_t map, const char *agent_name,
                                                 size_t index, const void **data, size_t *len);
nixl_capi_status_t nixl_capi_gen_notif(nixl_capi_agent_t agent, const char *remote_agent,
                                       const void *data, size_t len, nixl_capi_opt_args_t opt_args);

#endif
