package io.pdconnector.api.openai;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotNull;

/**
 * {@code POST /v1/completions}. {@code prompt} is a string or a list of token ids (or a list holding
 * exactly one of those); {@code kv_transfer_params} says which leg of a disaggregated request this is.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record CompletionRequest(
        String model,
        @NotNull(message = "is required: a string or a list of token ids") Object prompt,
        @JsonProperty("max_tokens") @Min(1) @Max(4096) Integer maxTokens,
        @Min(1) @Max(value = 1, message = "must be 1: one choice per request") Integer n,
        Boolean stream,
        @JsonProperty("stream_options") StreamOptions streamOptions,
        @JsonProperty("kv_transfer_params") Object kvTransferParams) implements OpenAiRequest {

    @Override
    public int outputTokens() {
        return maxTokens == null ? DEFAULT_MAX_TOKENS : maxTokens;
    }
}
