package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.protocol.RequestIds;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import java.util.Map;

/** Engine -> P: reserve blocks for {@code num_tokens} tokens of KV the engine writes itself. */
public record ReserveRequest(
        @JsonProperty("request_id") @NotBlank @Pattern(regexp = RequestIds.PATTERN) String requestId,
        @JsonProperty("num_tokens") @NotNull @Min(1) @Max(PromptInput.MAX_TOKENS) Integer numTokens,
        @JsonProperty("kv_transfer_params") @NotNull Map<String, Object> kvTransferParams) {
}
