package io.pdconnector.api.openai;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotEmpty;
import jakarta.validation.constraints.NotNull;
import java.util.List;

/**
 * {@code POST /v1/chat/completions}. {@code max_completion_tokens} (OpenAI's newer name) wins over
 * {@code max_tokens} when both are given, as in vLLM; the routers set {@code max_tokens} to 1 on the P leg.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ChatCompletionRequest(
        String model,
        @NotEmpty(message = "must hold at least one message") List<@NotNull @Valid Message> messages,
        @JsonProperty("max_tokens") @Min(1) @Max(4096) Integer maxTokens,
        @JsonProperty("max_completion_tokens") @Min(1) @Max(4096) Integer maxCompletionTokens,
        @Min(1) @Max(value = 1, message = "must be 1: one choice per request") Integer n,
        Boolean stream,
        @JsonProperty("stream_options") StreamOptions streamOptions,
        @JsonProperty("kv_transfer_params") Object kvTransferParams) implements OpenAiRequest {

    @Override
    public int outputTokens() {
        if (maxCompletionTokens != null) {
            return maxCompletionTokens;
        }
        return maxTokens == null ? DEFAULT_MAX_TOKENS : maxTokens;
    }

    /** One chat message; {@code content} is a string, a list of text parts, or null. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record Message(@NotBlank String role, Object content) {
    }
}
