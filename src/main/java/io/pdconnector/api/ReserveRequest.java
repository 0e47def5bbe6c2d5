package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.protocol.RequestIds;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.media.SchemaProperty;

/** Engine -> P: reserve blocks for {@code num_tokens} tokens of KV the engine writes itself. */
public record ReserveRequest(
        @JsonProperty("request_id") @Schema(pattern = RequestIds.SCHEMA_PATTERN,
                description = RequestIds.SCHEMA_DESCRIPTION) @NotBlank @Pattern(regexp = RequestIds.PATTERN) String requestId,
        @JsonProperty("num_tokens") @NotNull @Min(1) @Max(PromptInput.MAX_TOKENS) Integer numTokens,
        @JsonProperty("kv_transfer_params") @Schema(requiredProperties = "do_remote_decode",
                properties = @SchemaProperty(name = "do_remote_decode", type = SchemaType.BOOLEAN, enumeration = "true"))
        @NotNull Map<String, Object> kvTransferParams) {
}
