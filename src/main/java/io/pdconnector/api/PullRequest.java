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

/** Router -> D: pull the KV P describes in {@code kv_transfer_params} (forwarded verbatim) for this prompt. */
public record PullRequest(
        @JsonProperty("request_id") @Schema(pattern = RequestIds.SCHEMA_PATTERN,
                description = RequestIds.SCHEMA_DESCRIPTION) @NotBlank @Pattern(regexp = RequestIds.PATTERN) String requestId,
        @Schema(minLength = 1, description = "the prompt as text; give exactly one of prompt and token_ids") String prompt,
        @JsonProperty("token_ids") @Schema(type = SchemaType.ARRAY, implementation = TokenIdSchema.class,
                minItems = 1, maxItems = TokenIdSchema.MAX_ITEMS) @JsonDeserialize(using = TokenIdArray.class) int[] tokenIds,
        @JsonProperty("kv_transfer_params") @NotNull Map<String, Object> kvTransferParams) {
}
