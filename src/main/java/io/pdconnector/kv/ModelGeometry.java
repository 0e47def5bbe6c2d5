package io.pdconnector.kv;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The shape of one model's KV cache. {@code kvHeads} counts every KV head of the model; a rank of a
 * {@code tp}-way instance holds {@code kvHeads / tp} of them.
 *
 * <p>In-block layout of one rank (HND): {@code [layer][k|v][head][token][dim]}, each element
 * {@code dtypeBytes} little-endian. The heads of a rank are innermost-but-two, so a contiguous range
 * of heads is {@code layers * 2} contiguous runs per block, and all heads of a rank are one run.
 *
 * <p>With {@link KvAttention#MLA} a layer holds one plane, the latent ({@code kvHeads} 1, {@code headDim} its
 * width): {@code [layer][latent][token][dim]}, the same on every rank ({@link #kvRanks}).
 *
 * <p>{@code kvGroups} names the KV cache groups the engine keeps a request's blocks in, in order, each {@code full}
 * or {@code window:<tokens>} for a sliding-window group (whose older blocks the engine drops), then {@code /<layers>};
 * null where the engine has one group of full attention. With groups a block's layers lie by group
 * ({@link KvGroups}), and a reader reads a window group's layers of a request's last blocks only.
 *
 * <p>{@code kvScales} fingerprints a quantized (fp8) cache's per-layer K and V scales, which the engine multiplies
 * the bytes by: the same bytes under other scales are other values. Null where every scale is 1.0 (the engine's
 * default when the checkpoint has none) or the cache is not quantized.
 */
public record ModelGeometry(int layers, int kvHeads, int headDim, int blockTokens, int dtypeBytes, KvDtype kvDtype,
        KvAttention attention, String kvGroups, String kvScales) {

    /** The KV cache groups as the configuration takes them: each {@code full} or {@code window:<tokens>}. */
    public static final String KV_GROUPS =
            "(full|window:[1-9][0-9]{0,6})/[1-9][0-9]{0,3}(,(full|window:[1-9][0-9]{0,6})/[1-9][0-9]{0,3}){0,63}";

    /**
     * A quantized cache's scales as the configuration takes them: {@code unit} (every scale 1.0, as unset) or the
     * 16 hex digits the vLLM plugin prints for them.
     */
    public static final String KV_SCALES = "unit|[0-9a-f]{16}";

    public static final ModelGeometry DEFAULT = new ModelGeometry(24, 2, 64, 16, 2);

    /**
     * {@code kvDtype} names the element type, or is null where only its width was configured (then peers agree
     * on the width alone, as before names existed).
     */
    public ModelGeometry {
        attention = attention == null ? KvAttention.MHA : attention; // a record written before MLA existed
        requireRange("layers", layers, 1, 4096);
        requireRange("kvHeads", kvHeads, 1, 4096);
        requireRange("headDim", headDim, 1, 65536);
        requireRange("blockTokens", blockTokens, 1, 65536);
        if (dtypeBytes != 1 && dtypeBytes != 2 && dtypeBytes != 4) {
            throw new IllegalArgumentException("dtypeBytes must be 1, 2 or 4, got " + dtypeBytes);
        }
        if (kvDtype != null && kvDtype.bytes() != dtypeBytes) {
            throw new IllegalArgumentException("the KV dtype " + kvDtype.wire() + " is " + kvDtype.bytes()
                    + " bytes, not the " + dtypeBytes + " the geometry says");
        }
        if (attention == KvAttention.MLA && kvHeads != 1) {
            throw new IllegalArgumentException("an MLA cache has one latent head per token, not " + kvHeads
                    + " (kv-heads must be 1, head-dim the latent's width)");
        }
        if (kvGroups != null && !kvGroups.matches(KV_GROUPS)) {
            throw new IllegalArgumentException("KV cache groups " + kvGroups
                    + " are not a list of full/<layers> and window:<tokens>/<layers>");
        }
        if (kvGroups != null) {
            KvGroups.parse(kvGroups, layers); // refuses groups whose layers are not the model's
        }
        kvScales = "unit".equals(kvScales) ? null : kvScales; // unit scales hash and are written as no scales
        if (kvScales != null && !kvScales.matches(KV_SCALES)) {
            throw new IllegalArgumentException("KV scales " + kvScales + " are neither unit nor 16 hex digits");
        }
        if (kvScales != null && (kvDtype == null || !kvDtype.quantized())) {
            throw new IllegalArgumentException("KV scales " + kvScales + " belong to a quantized cache (kv-dtype "
                    + "fp8_e4m3 or fp8_e5m2), and the KV dtype is " + (kvDtype == null ? "unnamed" : kvDtype.wire()));
        }
    }

    /** A geometry whose quantized cache, if any, has unit scales. */
    public ModelGeometry(int layers, int kvHeads, int headDim, int blockTokens, int dtypeBytes, KvDtype kvDtype,
            KvAttention attention, String kvGroups) {
        this(layers, kvHeads, headDim, blockTokens, dtypeBytes, kvDtype, attention, kvGroups, null);
    }

    /** A geometry of one KV cache group of full attention (or of MLA). */
    public ModelGeometry(int layers, int kvHeads, int headDim, int blockTokens, int dtypeBytes, KvDtype kvDtype,
            KvAttention attention) {
        this(layers, kvHeads, headDim, blockTokens, dtypeBytes, kvDtype, attention, null);
    }

    /** A multi-head geometry whose element type is known by its width only. */
    public ModelGeometry(int layers, int kvHeads, int headDim, int blockTokens, int dtypeBytes) {
        this(layers, kvHeads, headDim, blockTokens, dtypeBytes, null, KvAttention.MHA);
    }

    /** A multi-head geometry. */
    public ModelGeometry(int layers, int kvHeads, int headDim, int blockTokens, int dtypeBytes, KvDtype kvDtype) {
        this(layers, kvHeads, headDim, blockTokens, dtypeBytes, kvDtype, KvAttention.MHA);
    }

    /** Whether every rank holds the whole KV (MLA's latent) rather than its share of the heads. */
    public boolean replicated() {
        return attention == KvAttention.MLA;
    }

    /** How many ranks of a {@code tp}-way prefill instance hold KV for decoders to read: one for MLA. */
    public int kvRanks(int tp) {
        headsPerRank(tp); // refuses a tp that does not divide the heads
        return replicated() ? 1 : tp;
    }

    /** How many decode ranks may read one prefill rank: each reads at least one of its heads; for MLA, all. */
    public int maxReadersPerRank(int tp, int maxDecodeTp) {
        return replicated() ? maxDecodeTp : headsPerRank(tp);
    }

    public int headsPerRank(int tp) {
        if (tp >= 1 && replicated()) {
            return kvHeads;
        }
        if (tp < 1 || kvHeads % tp != 0) {
            throw new IllegalArgumentException(
                    "tensor-parallel size " + tp + " does not divide the model's " + kvHeads + " KV heads");
        }
        return kvHeads / tp;
    }

    /** Bytes of one head's tokens in one (layer, K|V) of a block: the unit a head slice is made of. */
    public long headRunBytes() {
        return (long) blockTokens * headDim * dtypeBytes;
    }

    /** Bytes of one block on one rank of a {@code tp}-way instance. */
    public long blockBytes(int tp) {
        return layerBytes(layers, tp);
    }

    /** How a block's layers lie by KV cache group: one segment of every layer where the groups are unnamed. */
    public KvGroups groupLayout() {
        return kvGroups == null ? KvGroups.whole(layers) : KvGroups.parse(kvGroups, layers);
    }

    /** Bytes of {@code layers} layers of one block on one rank of a {@code tp}-way instance. */
    public long layerBytes(int layers, int tp) {
        return (long) layers * attention.planes() * headsPerRank(tp) * headRunBytes();
    }

    public int blocksFor(int tokens) {
        return (tokens + blockTokens - 1) / blockTokens;
    }

    /**
     * Hash over the geometry and the connector version: peers must agree on it to exchange KV. A named KV dtype
     * is part of it, MLA, named KV cache groups and a quantized cache's scales; an unnamed dtype, MHA, unnamed
     * groups and unit scales leave the hash as it was before each existed.
     */
    public String compatHash(int connectorVersion) {
        byte[] name = kvDtype == null ? new byte[0] : kvDtype.wire().getBytes(StandardCharsets.US_ASCII);
        byte[] kind = ((replicated() ? "/mla" : "") + (kvGroups == null ? "" : "/groups:" + kvGroups)
                + (kvScales == null ? "" : "/scales:" + kvScales))
                .getBytes(StandardCharsets.US_ASCII);
        ByteBuffer buf = ByteBuffer.allocate(6 * Integer.BYTES + 3 + name.length + kind.length);
        buf.putInt(layers).putInt(kvHeads).putInt(headDim).putInt(blockTokens).putInt(dtypeBytes)
                .putInt(connectorVersion).put((byte) 'H').put((byte) 'N').put((byte) 'D').put(name).put(kind);
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(buf.array());
            return HexFormat.of().formatHex(digest, 0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }

    private static void requireRange(String name, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], got " + value);
        }
    }
}
