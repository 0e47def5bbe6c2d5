package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.producer.LeaseStatus;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/**
 * One request on P. {@code state}: writing (reserved, its engine has not finished), exported, or
 * releasing (slots being zeroed; a freed request is unknown). {@code slot} and {@code nonce} are
 * null without a lease slot; {@code expires_in_ms} is the lease clock once exported,
 * {@code finish_deadline_in_ms} the time an engine has left to finish; negative means due, reaped
 * in the next step.
 */
public record LeaseStatusResponse(
        @JsonProperty("request_id") String requestId,
        String state,
        @JsonProperty("num_tokens") int numTokens,
        @Schema(nullable = true) Integer slot,
        @Schema(nullable = true) Long nonce,
        @JsonProperty("expires_in_ms") @Schema(nullable = true) Long expiresInMs,
        @JsonProperty("finish_deadline_in_ms") @Schema(nullable = true) Long finishDeadlineInMs,
        @JsonProperty("block_ids") List<Integer> blockIds,
        @JsonProperty("ranks_finished") int ranksFinished,
        @JsonProperty("tp_size") int tpSize) {

    static LeaseStatusResponse of(LeaseStatus s) {
        return new LeaseStatusResponse(s.requestId(), s.state().name().toLowerCase(Locale.ROOT), s.numTokens(),
                s.slot(), s.nonce(), s.expiresInMillis(), s.finishInMillis(),
                Arrays.stream(s.blockIds()).boxed().toList(), s.ranksFinished(), s.ranks());
    }
}
