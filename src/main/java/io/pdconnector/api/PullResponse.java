package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;

/**
 * D -> router: {@code received} or {@code recomputed}; a declined pull is a 409 problem instead.
 * {@code kv_checksum} is CRC-32C of the pulled KV as {@code GET .../kv} returns it;
 * {@code matches_reference} says whether those bytes are the reference engine's KV of the prompt (null
 * when the pull read nothing: {@code remote_block_ids: [[]]}). {@code timings}: {@code pull_ms} from the
 * request reaching the resource to its reply being built, then where that time went, each phase present only
 * if the pull went through it: {@code to_loop_ms} (checks, queue, D's loop picking it up), {@code queued_ms}
 * (waiting for local blocks), {@code post_ms} (posting the block READs; over shared memory the bytes move
 * inside the post), {@code read_ms} (until NIXL reports them done), {@code slot_check_ms} (the lease slot
 * READ, compare, notification), {@code to_reply_ms} (back to the request's thread), and {@code checksum_ms}.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PullResponse(
        @JsonProperty("request_id") String requestId,
        String state,
        String reason,
        @JsonProperty("block_ids") List<Integer> blockIds,
        long bytes,
        @JsonProperty("kv_checksum") String kvChecksum,
        @JsonProperty("matches_reference") Boolean matchesReference,
        Map<String, Double> timings) {
}
