package io.pdconnector.reference;

import io.pdconnector.kv.ModelGeometry;
import java.lang.foreign.MemorySegment;

/**
 * Deterministic KV bytes: every element is a fixed function of (token id, position, layer, K|V,
 * global head, dim), so any rank of any TP size can write or recompute its part, and a decoder can
 * check what it received. Token slots of a block past the prompt's end are zero.
 */
public final class ReferenceEngine {

    private final ModelGeometry geometry;

    public ReferenceEngine(ModelGeometry geometry) {
        this.geometry = geometry;
    }

    public ModelGeometry geometry() {
        return geometry;
    }

    /** The bytes block {@code blockIndex} of the prompt holds on {@code rank} of a {@code tp}-way instance. */
    public byte[] expectedBlock(int[] tokens, int blockIndex, int tp, int rank) {
        int perRank = geometry.headsPerRank(tp);
        int bt = geometry.blockTokens();
        int dim = geometry.headDim();
        int width = geometry.dtypeBytes();
        byte[] out = new byte[Math.toIntExact(geometry.blockBytes(tp))];
        int at = 0;
        for (int layer = 0; layer < geometry.layers(); layer++) {
            for (int kv = 0; kv < geometry.attention().planes(); kv++) {
                for (int h = 0; h < perRank; h++) {
                    int head = geometry.replicated() ? h : rank * perRank + h; // MLA: every rank the same latent
                    for (int t = 0; t < bt; t++) {
                        int pos = blockIndex * bt + t;
                        if (pos >= tokens.length) {
                            at += dim * width;
                            continue;
                        }
                        long seed = mix(tokens[pos], pos, layer, kv, head);
                        for (int d = 0; d < dim; d++) {
                            long v = finish(seed + d * 0x9E3779B97F4A7C15L);
                            for (int b = 0; b < width; b++) {
                                out[at++] = (byte) (v >>> (8 * b));
                            }
                        }
                    }
                }
            }
        }
        return out;
    }

    /** Writes the prompt's KV for {@code rank} into {@code blockIds} of a region laid out block after block. */
    public void write(MemorySegment region, int[] blockIds, int[] tokens, int tp, int rank) {
        checkBlocks(blockIds, tokens);
        long blockBytes = geometry.blockBytes(tp);
        for (int i = 0; i < blockIds.length; i++) {
            byte[] block = expectedBlock(tokens, i, tp, rank);
            MemorySegment.copy(MemorySegment.ofArray(block), 0, region, blockIds[i] * blockBytes, blockBytes);
        }
    }

    /** Whether {@code blockIds} of the region hold exactly the prompt's KV for {@code rank}. */
    public boolean matches(MemorySegment region, int[] blockIds, int[] tokens, int tp, int rank) {
        checkBlocks(blockIds, tokens);
        long blockBytes = geometry.blockBytes(tp);
        for (int i = 0; i < blockIds.length; i++) {
            MemorySegment actual = region.asSlice(blockIds[i] * blockBytes, blockBytes);
            if (actual.mismatch(MemorySegment.ofArray(expectedBlock(tokens, i, tp, rank))) != -1) {
                return false;
            }
        }
        return true;
    }

    private void checkBlocks(int[] blockIds, int[] tokens) {
        if (blockIds.length != geometry.blocksFor(tokens.length)) {
            throw new IllegalArgumentException(tokens.length + " tokens need " + geometry.blocksFor(tokens.length)
                    + " blocks of " + geometry.blockTokens() + ", got " + blockIds.length);
        }
    }

    private static long mix(int token, int pos, int layer, int kv, int head) {
        long h = (token + 0x632BE59BD9B4E019L) * 0xBF58476D1CE4E5B9L;
        h = finish(h ^ (pos * 0x94D049BB133111EBL));
        h = finish(h ^ ((long) layer << 20 | (long) kv << 19 | head));
        return h;
    }

    /** SplitMix64's finaliser: every input bit reaches every output bit. */
    private static long finish(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
