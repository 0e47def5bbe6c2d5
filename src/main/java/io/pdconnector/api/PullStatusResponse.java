package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.consumer.PullStatus;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/**
 * One pull on D. {@code state}: queued, reading, checking_slots, received or recomputed (a declined
 * pull is answered with its reason and forgotten); {@code reason} why a recomputed pull's KV was not
 * used; {@code deadline_in_ms} until an undecided pull times out; {@code local_blocks} once assigned.
 */
public record PullStatusResponse(
        @JsonProperty("request_id") String requestId,
        String state,
        @Schema(nullable = true) String reason,
        @JsonProperty("deadline_in_ms") @Schema(nullable = true) Long deadlineInMs,
        @JsonProperty("local_blocks") @Schema(nullable = true) List<Integer> localBlocks) {

    static PullStatusResponse of(PullStatus s) {
        return new PullStatusResponse(s.requestId(), s.state().name().toLowerCase(Locale.ROOT),
                s.reason() == null ? null : s.reason().wire(), s.deadlineInMillis(),
                s.localBlocks() == null ? null : Arrays.stream(s.localBlocks()).boxed().toList());
    }
}
