package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Map;

/** P -> router: the params to forward verbatim to D, in vLLM's field names plus the lease fields. */
public record PrefillResponse(
        @JsonProperty("request_id") String requestId,
        @JsonProperty("num_tokens") int numTokens,
        @JsonProperty("kv_transfer_params") Map<String, Object> kvTransferParams) {
}
