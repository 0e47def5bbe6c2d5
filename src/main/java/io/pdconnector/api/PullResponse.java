package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;

/** D -> router: {@code received} or {@code recomputed}; a declined pull is a 409 problem instead. */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PullResponse(
        @JsonProperty("request_id") String requestId,
        String state,
        String reason,
        @JsonProperty("block_ids") List<Integer> blockIds,
        long bytes,
        @JsonProperty("kv_checksum") String kvChecksum,
        Map<String, Double> timings) {
}
