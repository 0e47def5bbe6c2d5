package io.pdconnector.api.engine;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.transfer.PoolShare;
import java.util.Base64;
import java.util.List;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/**
 * This instance -> the engine beside it: the KV geometry it was configured with, so an engine checks
 * at start-up that its own KV cache has the same shape instead of exchanging wrong bytes later.
 * {@code role} says which sides it serves; {@code block} is the in-block order of one rank's slice;
 * {@code lease_verification} whether its leases have slots (an engine plugin's grants then carry them).
 * {@code pools}, only with {@code pd.kv.memory=vram} and only for the engine's token (docs/gpu.md): each
 * rank's KV pool in GPU memory, for the plugin to open over CUDA IPC.
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
        @Schema(description = "what a token's KV is in a layer (pd.model.attention): mha, a K and a V row per KV head;"
                + " mla, one latent row that every rank holds whole") String attention,
        @JsonProperty("kv_dtype") @JsonInclude(JsonInclude.Include.NON_NULL) @Schema(nullable = true, description =
                "the KV cache's element type by name (pd.model.kv-dtype: bfloat16, float16, float32, fp8_e4m3,"
                        + " fp8_e5m2); absent when only its width is configured") String kvDtype,
        @JsonProperty("kv_groups") @JsonInclude(JsonInclude.Include.NON_NULL) @Schema(nullable = true, description =
                "the KV cache groups (pd.model.kv-groups): full or window:<tokens>, then /<layers>, each, in order;"
                        + " absent for one group of full attention") String kvGroups,
        @JsonProperty("kv_scales") @JsonInclude(JsonInclude.Include.NON_NULL) @Schema(nullable = true, description =
                "a quantized cache's per-layer scales by fingerprint (pd.model.kv-scales: 16 hex digits); absent"
                        + " when every scale is 1.0 or the cache is not quantized") String kvScales,
        @JsonProperty("block_bytes") long blockBytes,
        String block,
        @JsonProperty("byte_order") String byteOrder,
        @JsonProperty("lease_verification") boolean leaseVerification,
        @JsonInclude(JsonInclude.Include.NON_NULL) List<Pool> pools,
        @JsonProperty("engine_socket") @JsonInclude(JsonInclude.Include.NON_NULL) @Schema(nullable = true,
                description = "the engine socket (pd.kv.engine-socket), where the engine's plugin sends P's"
                        + " batch and D's pulls and releases; absent when there is none") String engineSocket) {

    static KvLayoutResponse of(String engineId, String role, int tp, int numBlocks, ModelGeometry g,
            boolean leaseVerification) {
        return new KvLayoutResponse(engineId, role, tp, numBlocks, g.layers(), g.kvHeads(), g.headsPerRank(tp),
                g.headDim(), g.blockTokens(), g.dtypeBytes(), g.attention().wire(),
                g.kvDtype() == null ? null : g.kvDtype().wire(), g.kvGroups(), g.kvScales(), g.blockBytes(tp),
                g.replicated() ? "[layer][latent][token][dim], the same on every rank"
                        : "[layer][k|v][head][token][dim], the rank's heads only",
                "little-endian", leaseVerification, null, null);
    }

    /** The same layout with the ranks' VRAM pools, as the engine's plugin opens them. */
    KvLayoutResponse withPools(List<PoolShare> shares) {
        return new KvLayoutResponse(engineId, role, tpSize, numBlocks, layers, kvHeads, headsPerRank, headDim,
                blockTokens, dtypeBytes, attention, kvDtype, kvGroups, kvScales, blockBytes, block, byteOrder,
                leaseVerification, shares.stream().map(Pool::of).toList(), engineSocket);
    }

    /** The same layout naming the engine socket. */
    KvLayoutResponse withEngineSocket(String path) {
        return new KvLayoutResponse(engineId, role, tpSize, numBlocks, layers, kvHeads, headsPerRank, headDim,
                blockTokens, dtypeBytes, attention, kvDtype, kvGroups, kvScales, blockBytes, block, byteOrder,
                leaseVerification, pools, path);
    }

    /** One rank's pool: its GPU by UUID, its size, its 64-byte CUDA IPC handle (base64) and its incarnation. */
    public record Pool(
            int rank,
            @JsonProperty("gpu_uuid") String gpuUuid,
            long bytes,
            @JsonProperty("ipc_handle") String ipcHandle,
            long incarnation) {

        static Pool of(PoolShare s) {
            return new Pool(s.rank(), s.gpuUuid(), s.bytes(), Base64.getEncoder().encodeToString(s.ipcHandle()),
                    s.incarnation());
        }
    }
}
