package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.pdconnector.protocol.RequestIds;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.media.SchemaProperty;

/** Router -> P: prefill this prompt for a remote decoder ({@code do_remote_decode: true}). */
public record PrefillRequest(
        @JsonProperty("request_id") @Schema(pattern = RequestIds.SCHEMA_PATTERN,
                description = RequestIds.SCHEMA_DESCRIPTION) @NotBlank @Pattern(regexp = RequestIds.PATTERN) String requestId,
        @Schema(minLength = 1, description = "the prompt as text; give exactly one of prompt and token_ids") String prompt,
        @JsonProperty("token_ids") @Schema(type = SchemaType.ARRAY, implementation = TokenIdSchema.class,
                minItems = 1, maxItems = TokenIdSchema.MAX_ITEMS) @JsonDeserialize(using = TokenIdArray.class) int[] tokenIds,
        @JsonProperty("kv_transfer_params") @Schema(requiredProperties = "do_remote_decode",
                properties = @SchemaProperty(name = "do_remote_decode", type = SchemaType.BOOLEAN, enumeration = "true"))
        @NotNull Map<String, Object> kvTransferParams) {
}
