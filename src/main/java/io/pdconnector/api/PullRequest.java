package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import io.pdconnector.protocol.RequestIds;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/**
 * Router -> D: pull the KV P describes in {@code kv_transfer_params} (forwarded verbatim) for this prompt.
 * An engine worker of one of D's tensor-parallel ranks names its rank in {@code decode_rank}, so that
 * every rank's worker can ask for the same pull.
 */
public record PullRequest(
        @JsonProperty("request_id") @Schema(pattern = RequestIds.SCHEMA_PATTERN,
                description = RequestIds.SCHEMA_DESCRIPTION) @NotBlank @Pattern(regexp = RequestIds.PATTERN) String requestId,
        @Schema(minLength = 1, description = "the prompt as text; give exactly one of prompt and token_ids") String prompt,
        @JsonProperty("token_ids") @Schema(type = SchemaType.ARRAY, implementation = PullTokenIdSchema.class,
                minItems = 1, maxItems = TokenIdSchema.MAX_ITEMS) @JsonDeserialize(using = TokenIdArray.class) int[] tokenIds,
        @JsonProperty("kv_transfer_params") @NotNull Map<String, Object> kvTransferParams,
        @JsonProperty("decode_rank") @Schema(minimum = "0", nullable = true, description = "the D rank (0 to"
                + " pd.tp-size - 1, else 400 invalid-decode-rank) asking, when each of D's tensor-parallel ranks"
                + " asks for the pull itself: the first rank's ask starts the pull, the other ranks' asks with the"
                + " same request_id, kv_transfer_params and tokens join it and get the same answer; each rank then"
                + " releases with DELETE /v1/consumer/requests/{id}?decode_rank=r. Absent: one caller pulls for"
                + " every rank") Integer decodeRank,
        @JsonProperty("vocab_size") @Min(1) @Max(MAX_VOCAB) @Schema(nullable = true, description = "the vocabulary"
                + " size of the engine's model, which then bounds token_ids (an engine's pull: a gpt-oss or Gemma 3"
                + " prompt has ids the reference engine's 151,936 do not); absent: the reference engine's. Not with"
                + " matches_reference above 151,936 (400)") Integer vocabSize) {

    /** Above the largest vocabularies served (Gemma 3: 262,144) with room to spare. */
    static final int MAX_VOCAB = 1 << 24;
}
