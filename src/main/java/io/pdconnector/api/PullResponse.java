package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;

/**
 * D -> router: {@code received} or {@code recomputed}; a declined pull is a 409 problem instead.
 * {@code kv_checksum} is CRC-32C of the pulled KV as {@code GET .../kv} returns it;
 * {@code matches_reference} says whether those bytes are the reference engine's KV of the prompt (null
 * when the pull read nothing: {@code remote_block_ids: [[]]}).
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
