/*
 * pdnixl: the narrow C surface that pd-connector binds through Java's FFM API.
 *
 * It wraps NIXL's C API (libnixl_capi) so that one downcall does one whole
 * operation: post a READ of a full descriptor list, drain every pending
 * notification into a caller-owned flat buffer, copy metadata into a caller
 * buffer. Handles are opaque; every function returns an int status (0 done,
 * 1 in progress, negative error) and writes its outputs last. Nothing here
 * starts a thread: NIXL's own progress thread is switched on or off by the
 * caller of pdx_agent_create.
 */
#ifndef PDNIXL_H
#define PDNIXL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes -1..-14 are NIXL's own (nixl_capi_status_t), passed through. */
#define PDX_OK                 0
#define PDX_IN_PROGRESS        1
#define PDX_MORE               2  /* pdx_notif_drain: buffer full, records remain */
#define PDX_ERR_NO_MEMORY   -100
#define PDX_ERR_BUFFER_SMALL -101
#define PDX_ERR_ARGUMENT    -102
#define PDX_ERR_IO          -103  /* pdx_mem_map_file: the file cannot be opened, locked or sized */
#define PDX_ERR_BUSY        -104  /* pdx_mem_map_file: another live mapping holds the file's lock */

typedef struct pdx_agent pdx_agent_t;
typedef struct pdx_region pdx_region_t;
typedef struct pdx_dlist pdx_dlist_t;
typedef struct pdx_xfer pdx_xfer_t;

/* The NIXL C API version this helper was compiled against is not known at run
 * time (the wheel exports no version call); this returns the helper's ABI
 * revision so the Java side can refuse a stale build. */
int pdx_abi_version(void);

/* ucx_threads: 0 for none, else that many UCX backend threads (NIXL's "num_threads"), at most
 * PDX_MAX_UCX_THREADS; ucx_split_batch: descriptors per batch those threads take (NIXL's
 * "split_batch_size"), 0 for NIXL's default. */
#define PDX_MAX_UCX_THREADS 64
int pdx_agent_create(const char *name, int progress_thread, uint64_t progress_delay_us, int ucx_threads,
                     int ucx_split_batch, pdx_agent_t **agent_out);
int pdx_agent_destroy(pdx_agent_t *agent);

/* Page-aligned anonymous memory for registration. len must be a multiple of the page size. */
int pdx_mem_alloc(uint64_t len, uint64_t *addr_out);
/* Frees the pages of [addr, addr+len) (from pdx_mem_alloc or pdx_mem_map_file) but keeps the range mapped inaccessible for the life of the
 * process, so a peer's late READ of it fails instead of returning whatever is mapped there next.
 * Call only after pdx_region_deregister. */
int pdx_mem_retire(uint64_t addr, uint64_t len);

/* Page-aligned memory backed by the file at path (absolute), shared with any local process that maps
 * the same file: their writes are what this process registers and peers READ. Creates the file
 * (mode 0600, no symlink followed; a file a dead owner left is unlinked, never truncated, since an
 * engine may still map it, and a new file takes its path), reserves len zeroed bytes (so a full tmpfs fails
 * here with PDX_ERR_NO_MEMORY, not with SIGBUS on a later write) and maps it MAP_SHARED. An exclusive
 * flock, held by the mapping itself, keeps a second live process from taking the same file
 * (PDX_ERR_BUSY); pdx_mem_retire releases it. The caller unlinks the file before retiring. */
int pdx_mem_map_file(const char *path, uint64_t len, uint64_t *addr_out);

/* Registers [addr, addr+len) as DRAM with the agent's UCX backend. */
int pdx_region_register(pdx_agent_t *agent, uint64_t addr, uint64_t len,
                        pdx_region_t **region_out);
int pdx_region_deregister(pdx_agent_t *agent, pdx_region_t *region);

/* Registers [addr, addr+len) of CUDA device dev_id (the ordinal in this process) as VRAM: memory the
 * caller allocated on the GPU and frees after pdx_region_deregister (vram.c). */
int pdx_region_register_vram(pdx_agent_t *agent, uint64_t addr, uint64_t len, int32_t dev_id,
                             pdx_region_t **region_out);

/* Copies the agent's metadata blob into buf. If cap is too small, returns
 * PDX_ERR_BUFFER_SMALL and still writes the needed size to len_out. */
int pdx_local_metadata(pdx_agent_t *agent, uint8_t *buf, uint64_t cap, uint64_t *len_out);

/* Loads a remote agent's metadata; writes its NUL-terminated name to name_out. */
int pdx_remote_load(pdx_agent_t *agent, const uint8_t *md, uint64_t len,
                    char *name_out, uint64_t name_cap);
int pdx_remote_invalidate(pdx_agent_t *agent, const char *remote_name);

/* Memory types of a descriptor list: host memory, or GPU memory (pd.kv.memory=vram). */
#define PDX_MEM_DRAM 0
#define PDX_MEM_VRAM 1

/* Prepares a descriptor list of n (addr, len) pairs, flat in descs[2n], all of one memory type.
 * remote_name NULL or "" prepares a local list. dev_id is NIXL's devId of every descriptor: 0 for
 * DRAM, the CUDA ordinal of the memory's GPU in its owner's process for VRAM (a remote list's must
 * be the ordinal the peer registered its pool with). Any other mem_type, or a DRAM list with a
 * dev_id other than 0, is PDX_ERR_ARGUMENT. */
int pdx_dlist_prepare(pdx_agent_t *agent, const char *remote_name, int32_t mem_type, int32_t dev_id,
                      const uint64_t *descs, uint32_t n, pdx_dlist_t **dlist_out);
int pdx_dlist_release(pdx_agent_t *agent, pdx_dlist_t *dlist);

/* Makes and posts one READ of n descriptor pairs chosen by index from two
 * prepared lists. notif may be NULL (no notification). On PDX_OK or
 * PDX_IN_PROGRESS *xfer_out owns the request; on error nothing is left. */
int pdx_read_post(pdx_agent_t *agent, pdx_dlist_t *local, const int32_t *local_idx,
                  pdx_dlist_t *remote, const int32_t *remote_idx, uint32_t n,
                  const uint8_t *notif, uint64_t notif_len, pdx_xfer_t **xfer_out);
int pdx_xfer_status(pdx_agent_t *agent, pdx_xfer_t *xfer);
/* Releases (and so cancels, if still active) a request. If NIXL refuses (a backend that cannot cancel
 * an active request), the request stays owned by the caller, who polls it and releases it again. */
int pdx_xfer_release(pdx_agent_t *agent, pdx_xfer_t *xfer);

int pdx_notif_send(pdx_agent_t *agent, const char *remote_name, const uint8_t *msg,
                   uint64_t len);

/* Drains received notifications into buf as records
 *   u32 agent_len, u32 msg_len, agent bytes, msg bytes
 * (host byte order, unpadded). Records that do not fit stay queued for the
 * next call, and the call returns PDX_MORE. A record larger than cap, which
 * no call could take, or one NIXL cannot hand out, is skipped and counted in
 * dropped_out instead. On error the rest of the batch is given up, so no
 * record can fail every later call. */
int pdx_notif_drain(pdx_agent_t *agent, uint8_t *buf, uint64_t cap, uint64_t *used_out,
                    uint32_t *count_out, uint32_t *dropped_out);

#ifdef __cplusplus
}
#endif
#endif
