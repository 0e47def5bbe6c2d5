package io.pdconnector.config;

import io.pdconnector.kv.KvAttention;
import io.pdconnector.kv.KvDtype;
import io.pdconnector.kv.ModelGeometry;
import io.smallrye.config.WithDefault;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.Pattern;
import java.util.Optional;

/**
 * The {@code pd.model.*} settings of {@link PdConfig}: the model's KV geometry; default a Qwen2.5-0.5B-like model.
 * Both sides must agree (compat hash).
 */
public interface ModelConfig {
    @WithDefault("24") @Min(1) int layers();

    @WithDefault("2") @Min(1) int kvHeads();

    @WithDefault("64") @Min(1) int headDim();

    @WithDefault("16") @Min(1) int blockTokens();

    @WithDefault("2") @Min(1) @Max(8) int dtypeBytes();

    /**
     * The KV cache's element type by name ({@code bfloat16}, {@code float16}, {@code float32},
     * {@code fp8_e4m3}, {@code fp8_e5m2}; its width must be {@code dtype-bytes}): part of the handshake, so a
     * peer of another type is refused by name. Unset: peers agree on the width alone. The vLLM plugin
     * refuses a quantized (fp8) cache unless it is set.
     */
    Optional<@Pattern(regexp = KvDtype.NAMES) String> kvDtype();

    /**
     * What a token's KV is in a layer: {@code mha}, a K and a V row per KV head (GQA and MQA too), or
     * {@code mla}, DeepSeek's multi-head latent attention: one latent row ({@code kv-heads} 1, {@code head-dim}
     * {@code kv_lora_rank} plus the rope width, 576 for DeepSeek-V2/V3 and Kimi K2), the same on every TP rank.
     * Part of the handshake. With {@code mla} a producer holds the latent on one rank whatever
     * {@code pd.tp-size} (docs/vllm.md, "MLA").
     */
    @WithDefault("mha") @Pattern(regexp = KvAttention.NAMES) String attention();

    /**
     * The KV cache groups the engine keeps a request's blocks in, in order, where it has more than one group of
     * full attention: {@code full}, or {@code window:<tokens>} for a sliding-window group (vLLM's hybrid KV cache
     * manager), each followed by {@code /<layers>}, its number of layers (Gemma 3's and gpt-oss's
     * {@code window:<sliding_window>/<n>,full/<m>}). A pull reads a window group's layers of a request's last
     * {@code ceil(window / block-tokens) + 1} blocks only. Part of the handshake, so a peer of other groups is
     * refused; the vLLM plugin refuses a model of several groups unless it is set, and checks it against vLLM's.
     * Unset: one group of full attention.
     */
    Optional<@Pattern(regexp = ModelGeometry.KV_GROUPS) String> kvGroups();

    /**
     * A quantized (fp8) cache's per-layer K and V scales, which the engine multiplies the bytes by: {@code unit}
     * where every scale is 1.0 (vLLM's default when the checkpoint has none; the same as unset), else the 16 hex
     * digits the vLLM plugin names at start-up for the checkpoint's scales. Part of the handshake, so a peer under
     * other scales is refused; the vLLM plugin checks it against vLLM's. Needs {@code kv-dtype} fp8.
     */
    Optional<@Pattern(regexp = ModelGeometry.KV_SCALES) String> kvScales();
}
