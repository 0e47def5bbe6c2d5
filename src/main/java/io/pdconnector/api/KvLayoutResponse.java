package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.kv.ModelGeometry;

/**
 * This instance -> the engine beside it: the KV geometry it was configured with, so an engine checks
 * at start-up that its own KV cache has the same shape instead of exchanging wrong bytes later.
 * {@code role} says which sides it serves; {@code block} is the in-block order of one rank's slice;
 * {@code lease_verification} whether its leases have slots (an engine plugin's grants then carry them).
 */
public record KvLayoutResponse(
        @JsonProperty("engine_id") String engineId,
        String role,
        @JsonProperty("tp_size") int tpSize,
        @JsonProperty("num_blocks") int numBlocks,
        int layers,
        @JsonProperty("kv_heads") int kvHeads,
        @JsonProperty("heads_per_rank") int headsPerRank,
        @JsonProperty("head_dim") int headDim,
        @JsonProperty("block_tokens") int blockTokens,
        @JsonProperty("dtype_bytes") int dtypeBytes,
        @JsonProperty("block_bytes") long blockBytes,
        String block,
        @JsonProperty("byte_order") String byteOrder,
        @JsonProperty("lease_verification") boolean leaseVerification) {

    static KvLayoutResponse of(String engineId, String role, int tp, int numBlocks, ModelGeometry g,
            boolean leaseVerification) {
        return new KvLayoutResponse(engineId, role, tp, numBlocks, g.layers(), g.kvHeads(), g.headsPerRank(tp),
                g.headDim(), g.blockTokens(), g.dtypeBytes(), g.blockBytes(tp),
                "[layer][k|v][head][token][dim], the rank's heads only", "little-endian", leaseVerification);
    }
}
