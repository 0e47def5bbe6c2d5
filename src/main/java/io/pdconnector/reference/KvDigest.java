package io.pdconnector.reference;

import io.pdconnector.kv.ModelGeometry;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * A 64-bit digest of a prompt's KV in one canonical order ({@code [block][layer][k|v][head][token][dim]},
 * every head of the model): the order a 1-way instance holds it in. A {@code tp}-way decoder's bytes
 * are walked in that order too, so the digest, and any answer decoded from it, does not depend on
 * how P or D split the heads, only on the KV bytes themselves.
 */
public final class KvDigest {

    private KvDigest() {
    }

    /** The digest of the reference engine's KV of {@code tokens}: what an honest transfer delivers. */
    public static long ofReference(ReferenceEngine engine, int[] tokens) {
        MessageDigest sha = sha256();
        int blocks = engine.geometry().blocksFor(tokens.length);
        for (int b = 0; b < blocks; b++) {
            sha.update(engine.expectedBlock(tokens, b, 1, 0));
        }
        return seed(sha);
    }

    /**
     * The digest of KV laid out as a {@code tp}-way decoder reads it out: block after block and,
     * within a block, each rank's slice in rank order. With MLA every rank holds the whole latent: the
     * digest is rank 0's, and any other rank holding other bytes changes it.
     */
    public static long ofRankSlices(byte[] kv, ModelGeometry geometry, int tp) {
        if (geometry.replicated()) {
            return ofReplicas(kv, geometry, tp);
        }
        int perRank = geometry.headsPerRank(tp);
        long rankBlock = geometry.blockBytes(tp);
        long block = rankBlock * tp;
        if (kv.length == 0 || kv.length % block != 0) {
            throw new IllegalArgumentException(kv.length + " bytes are not whole blocks of " + block + " bytes");
        }
        int run = Math.toIntExact(geometry.headRunBytes());
        MessageDigest sha = sha256();
        for (long base = 0; base < kv.length; base += block) {
            for (int layer = 0; layer < geometry.layers(); layer++) {
                for (int kvPart = 0; kvPart < 2; kvPart++) {
                    for (int head = 0; head < geometry.kvHeads(); head++) {
                        int rank = head / perRank;
                        long inRank = ((long) (layer * 2 + kvPart) * perRank + head % perRank) * run;
                        sha.update(kv, Math.toIntExact(base + rank * rankBlock + inRank), run);
                    }
                }
            }
        }
        return seed(sha);
    }

    private static long ofReplicas(byte[] kv, ModelGeometry geometry, int tp) {
        int rankBlock = Math.toIntExact(geometry.blockBytes(tp));
        long block = (long) rankBlock * tp;
        if (kv.length == 0 || kv.length % block != 0) {
            throw new IllegalArgumentException(kv.length + " bytes are not whole blocks of " + block + " bytes");
        }
        MessageDigest sha = sha256();
        for (int base = 0; base < kv.length; base += Math.toIntExact(block)) {
            sha.update(kv, base, rankBlock);
            for (int rank = 1; rank < tp; rank++) {
                int at = base + rank * rankBlock;
                if (Arrays.mismatch(kv, base, base + rankBlock, kv, at, at + rankBlock) != -1) {
                    sha.update(kv, at, rankBlock);
                }
            }
        }
        return seed(sha);
    }

    private static long seed(MessageDigest sha) {
        byte[] d = sha.digest();
        long s = 0;
        for (int i = 0; i < Long.BYTES; i++) {
            s = s << 8 | (d[i] & 0xFF);
        }
        return s;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }
}
