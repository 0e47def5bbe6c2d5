/* Notifications: send one, drain all pending into a flat caller buffer. */
#include <string.h>

#include "pdnixl_internal.h"

int pdx_notif_send(pdx_agent_t *a, const char *remote_name, const uint8_t *msg, uint64_t len)
{
    if (a == NULL || remote_name == NULL || remote_name[0] == '\0' || msg == NULL || len == 0) {
        return PDX_ERR_ARGUMENT;
    }
    return nixl_capi_gen_notif(a->agent, remote_name, msg, (size_t)len, a->backend_args);
}

static int refill(pdx_agent_t *a)
{
    int rc = nixl_capi_notif_map_clear(a->notifs);
    if (rc == NIXL_CAPI_SUCCESS) {
        rc = nixl_capi_get_notifs(a->agent, a->notifs, a->backend_args);
    }
    a->notif_agent_cursor = 0;
    a->notif_msg_cursor = 0;
    a->notifs_pending = rc == NIXL_CAPI_SUCCESS;
    return rc;
}

static uint64_t put_record(uint8_t *dst, const char *agent, uint32_t agent_len, const void *msg,
                           uint32_t msg_len)
{
    memcpy(dst, &agent_len, 4);
    memcpy(dst + 4, &msg_len, 4);
    memcpy(dst + 8, agent, agent_len);
    memcpy(dst + 8 + agent_len, msg, msg_len);
    return 8ull + agent_len + msg_len;
}

/* Copies records from the cursor on; stops when the buffer is full. A record that would not fit
 * even an empty buffer, whose length does not fit its u32 field, or that NIXL cannot hand out is
 * skipped and counted in *dropped, so it can never hold the cursor. Returns 1 when the map is
 * exhausted, 0 when records remain, <0 when an agent's entry cannot be read. */
static int copy_pending(pdx_agent_t *a, uint8_t *buf, uint64_t cap, uint64_t *used, uint32_t *count,
                        uint32_t *dropped)
{
    size_t agents = 0;
    int rc = nixl_capi_notif_map_size(a->notifs, &agents);
    if (rc != NIXL_CAPI_SUCCESS) {
        return rc;
    }
    for (; a->notif_agent_cursor < agents; a->notif_agent_cursor++, a->notif_msg_cursor = 0) {
        const char *agent = NULL;
        size_t msgs = 0;
        rc = nixl_capi_notif_map_get_agent_at(a->notifs, a->notif_agent_cursor, &agent);
        if (rc == NIXL_CAPI_SUCCESS) {
            rc = nixl_capi_notif_map_get_notifs_size(a->notifs, agent, &msgs);
        }
        if (rc != NIXL_CAPI_SUCCESS) {
            return rc;
        }
        size_t agent_len = strlen(agent);
        for (; a->notif_msg_cursor < msgs; a->notif_msg_cursor++) {
            const void *msg = NULL;
            size_t msg_len = 0;
            rc = nixl_capi_notif_map_get_notif(a->notifs, agent, a->notif_msg_cursor, &msg, &msg_len);
            uint64_t need = 8ull + agent_len + msg_len;
            if (rc != NIXL_CAPI_SUCCESS || need > cap || agent_len > UINT32_MAX || msg_len > UINT32_MAX
                    || (msg == NULL && msg_len > 0)) {
                (*dropped)++;
                continue;
            }
            if (*used + need > cap) {
                return 0;
            }
            *used += put_record(buf + *used, agent, (uint32_t)agent_len, msg, (uint32_t)msg_len);
            (*count)++;
        }
    }
    return 1;
}

int pdx_notif_drain(pdx_agent_t *a, uint8_t *buf, uint64_t cap, uint64_t *used_out,
                    uint32_t *count_out, uint32_t *dropped_out)
{
    if (a == NULL || buf == NULL || cap < 8 || used_out == NULL || count_out == NULL || dropped_out == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    uint64_t used = 0;
    uint32_t count = 0;
    uint32_t dropped = 0;
    int rc = PDX_OK;
    if (!a->notifs_pending) {
        rc = refill(a);
    }
    if (rc == PDX_OK) {
        rc = copy_pending(a, buf, cap, &used, &count, &dropped);
        if (rc == 1) {
            a->notifs_pending = 0;
            rc = PDX_OK;
        } else if (rc == 0) {
            rc = PDX_MORE;
        } else {
            a->notifs_pending = 0; /* the next call starts a fresh batch rather than failing here again */
        }
    }
    *used_out = used;
    *count_out = count;
    *dropped_out = dropped;
    return rc;
}
