package io.pdconnector.reference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.pdconnector.kv.ModelGeometry;
import java.io.ByteArrayOutputStream;
import org.junit.jupiter.api.Test;

class KvDigestTest {

    private final ModelGeometry g = new ModelGeometry(2, 4, 8, 4, 2);
    private final ReferenceEngine engine = new ReferenceEngine(g);
    private final int[] tokens = {5, 6, 7, 8, 9, 10};

    @Test
    void aDecoderOfAnyTpSizeDigestsTheReferenceKvLikeTheReference() {
        long reference = KvDigest.ofReference(engine, tokens);
        for (int tp : new int[] {1, 2, 4}) {
            assertEquals(reference, KvDigest.ofRankSlices(readOut(tokens, tp), g, tp), "tp " + tp);
        }
    }

    @Test
    void oneChangedByteOrAnotherPromptChangesTheDigest() {
        byte[] kv = readOut(tokens, 2);
        long honest = KvDigest.ofRankSlices(kv, g, 2);
        kv[kv.length - 1 - 3 * g.dtypeBytes()] ^= 1;
        assertNotEquals(honest, KvDigest.ofRankSlices(kv, g, 2));
        int[] other = tokens.clone();
        other[0] = 4;
        assertNotEquals(honest, KvDigest.ofReference(engine, other));
    }

    @Test
    void bytesThatAreNotWholeBlocksAreRefused() {
        byte[] kv = readOut(tokens, 1);
        assertThrows(IllegalArgumentException.class,
                () -> KvDigest.ofRankSlices(java.util.Arrays.copyOf(kv, kv.length - 1), g, 1));
        assertThrows(IllegalArgumentException.class, () -> KvDigest.ofRankSlices(new byte[0], g, 1));
    }

    /** What a tp-way decoder's read-out holds after an honest pull: per block, each rank's slice in rank order. */
    private byte[] readOut(int[] prompt, int tp) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int b = 0; b < g.blocksFor(prompt.length); b++) {
            for (int r = 0; r < tp; r++) {
                out.writeBytes(engine.expectedBlock(prompt, b, tp, r));
            }
        }
        return out.toByteArray();
    }
}
