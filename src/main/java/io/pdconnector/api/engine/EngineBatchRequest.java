package io.pdconnector.api.engine;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.api.PromptInput;
import io.pdconnector.producer.GrantAsks;
import io.pdconnector.protocol.RequestIds;
import jakarta.validation.Valid;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Positive;
import jakarta.validation.constraints.Size;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/**
 * Engine -> P, once per engine step at most: what the engine's scheduler decided since its last batch.
 * Applied in this order: commits, aborts, returns, withdrawals, then the grant (so a return and a new
 * grant in one batch replace a grant). Each list may be empty or absent; {@code grant} absent asks for none.
 * {@code withdraw} names the {@code ask_id}s of earlier new-grant asks whose batch got no answer: P takes
 * back the grant each one made, or, if that ask has not reached P yet, refuses it when it does.
 */
public record EngineBatchRequest(
        @Valid GrantAsk grant,
        @Size(max = MAX_ITEMS) List<@NotNull @Valid CommitItem> commits,
        @Size(max = MAX_ITEMS) List<@NotBlank @Pattern(regexp = RequestIds.PATTERN) String> aborts,
        @Size(max = MAX_ITEMS) List<@NotBlank @Size(max = 64) String> returns,
        @Size(max = MAX_ITEMS) List<@NotBlank @Pattern(regexp = GrantAsks.ASK_ID_PATTERN) String> withdraw) {

    /** More than any engine step schedules (vLLM's max_num_seqs is at most a few thousand). */
    public static final int MAX_ITEMS = 4096;

    public EngineBatchRequest {
        commits = commits == null ? List.of() : commits;
        aborts = aborts == null ? List.of() : aborts;
        returns = returns == null ? List.of() : returns;
        withdraw = withdraw == null ? List.of() : withdraw;
    }

    /**
     * Up to {@code blocks} blocks and {@code leases} lease slots; P grants fewer when fewer are free. With
     * {@code extend}, into that open grant (the answer lists what was added), else a new grant, which
     * {@code ask_id} (the engine's own name for this ask, never used twice) lets the engine withdraw.
     */
    public record GrantAsk(@NotNull @Min(0) Integer blocks, @NotNull @Min(0) Integer leases,
            @Size(max = 64) String extend,
            @JsonProperty("ask_id") @Schema(pattern = GrantAsks.ASK_ID_SCHEMA_PATTERN) @Pattern(regexp = GrantAsks.ASK_ID_PATTERN)
            String askId) {
    }

    /**
     * A request bound to granted blocks and a granted slot: its KV is in the blocks. {@code lease_slot}
     * and {@code lease_nonce} are absent only on an instance without lease verification.
     */
    public record CommitItem(
            @JsonProperty("grant_id") @NotBlank @Size(max = 64) String grantId,
            @JsonProperty("request_id") @Schema(pattern = RequestIds.SCHEMA_PATTERN,
                    description = RequestIds.SCHEMA_DESCRIPTION) @NotBlank @Pattern(regexp = RequestIds.PATTERN)
            String requestId,
            @JsonProperty("num_tokens") @NotNull @Min(1) @Max(PromptInput.MAX_TOKENS) Integer numTokens,
            @JsonProperty("block_ids") @NotNull @Size(min = 1, max = PromptInput.MAX_TOKENS)
            List<@NotNull @Min(0) Integer> blockIds,
            @JsonProperty("lease_slot") @Min(0) Integer leaseSlot,
            @JsonProperty("lease_nonce") @Positive Long leaseNonce) {
    }
}
