package io.pdconnector.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.kv.ModelGeometry;

/**
 * How an engine lays out the KV it writes, in words and numbers: each rank's file holds its blocks
 * one after the other, and a block is {@code [layer][k|v][head][token][dim]} of that rank's heads,
 * every element {@code dtype_bytes} little-endian. The upload is the same blocks, ranks interleaved.
 */
public record KvLayout(
        String file,
        String block,
        String upload,
        int layers,
        @JsonProperty("heads_per_rank") int headsPerRank,
        @JsonProperty("head_dim") int headDim,
        @JsonProperty("block_tokens") int blockTokens,
        @JsonProperty("dtype_bytes") int dtypeBytes,
        @JsonProperty("byte_order") String byteOrder) {

    static KvLayout of(ModelGeometry g, int tp) {
        return new KvLayout("block-major: block b of a rank at byte b * block_bytes of its kv_file; a D file then"
                + " holds block b's epoch at byte region_bytes + 8 * b (64-bit, little-endian)",
                "[layer][k|v][head][token][dim], the rank's heads only; reserved blocks start zeroed",
                "for each block in block_ids order, each rank's block_bytes slice in rank order",
                g.layers(), g.headsPerRank(tp), g.headDim(), g.blockTokens(), g.dtypeBytes(), "little-endian");
    }
}
