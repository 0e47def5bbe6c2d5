package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/**
 * D -> router or engine: {@code received} or {@code recomputed}; a declined pull is a 409 problem instead.
 * The KV is in D's local blocks {@code block_ids} until the pull is released ({@code DELETE
 * /v1/consumer/requests/{id}}, or {@code GET .../kv}, which returns it and releases) or
 * {@code pd.consumer.retention} passes: block {@code b} of rank {@code r} is {@code block_bytes} bytes at
 * byte {@code b * block_bytes} of {@code ranks[r].kv_file}, laid out as P's ({@code [layer][k|v][head][token][dim]}),
 * so an engine on D's host maps that file and reads the blocks in place, no KV in any HTTP body.
 * {@code kv_checksum} (CRC-32C of the pulled KV as {@code GET .../kv} returns it) is present only when asked
 * for ({@code ?kv_checksum=true}); {@code matches_reference} (whether those bytes are the reference engine's
 * KV of the prompt; null when the pull read nothing: {@code remote_block_ids: [[]]}) only with
 * {@code ?matches_reference=true}. {@code blocks_epoch}, present when D's KV files carry epoch tables, is the
 * epoch each of {@code block_ids} has in every rank's table (little-endian 64-bit words after the blocks, from
 * byte {@code region_bytes} of the file, one per block) for as long as the pull holds them: an engine that
 * reads the blocks and then finds their epochs unchanged read this pull's KV, without waiting for its release.
 * {@code timings}: {@code pull_ms} from the request reaching the resource
 * to its reply being built, then where that time went, each phase present only if the pull went through it:
 * {@code to_loop_ms} (checks, queue, D's loop picking it up), {@code queued_ms} (waiting for local blocks),
 * {@code post_ms} (posting the block READs; over shared memory the bytes move inside the post),
 * {@code read_ms} (until NIXL reports them done), {@code slot_check_ms} (the lease slot READ, compare,
 * notification), {@code to_reply_ms} (back to the request's thread), and {@code checksum_ms} (when asked).
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PullResponse(
        @JsonProperty("request_id") String requestId,
        String state,
        @Schema(nullable = true, description = "for recomputed: why the received KV was not used") String reason,
        @JsonProperty("block_ids") @Schema(description = "D's local blocks holding the KV, in prompt order")
        List<Integer> blockIds,
        @Schema(description = "the pull's KV in all: len(block_ids) x tp ranks x block_bytes") long bytes,
        @JsonProperty("block_bytes") @Schema(description = "one rank's slice of a block") long blockBytes,
        @Schema(description = "each decode rank's KV region, in rank order: block b of the rank is at byte"
                + " b * block_bytes of its kv_file (null when D keeps its KV in anonymous memory)")
        List<ReservationResponse.Rank> ranks,
        @JsonProperty("blocks_epoch") @Schema(nullable = true, description = "the blocks' epoch in each rank's"
                + " epoch table (8 bytes per block from byte region_bytes of its kv_file) while this pull holds"
                + " them; absent when D keeps its KV in anonymous memory or a VRAM pool") Long blocksEpoch,
        @JsonProperty("kv_checksum") @Schema(nullable = true, description = "crc32c:<8 hex digits> of the bytes"
                + " GET .../kv returns; only with ?kv_checksum=true") String kvChecksum,
        @JsonProperty("matches_reference") @Schema(nullable = true, description = "only with"
                + " ?matches_reference=true") Boolean matchesReference,
        Map<String, Double> timings) {
}
