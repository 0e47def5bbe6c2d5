package io.pdconnector.testing;

import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.reference.ReferenceEngine;
import java.io.ByteArrayOutputStream;

/**
 * The reference engine's KV of a prompt in the order {@code GET /v1/consumer/requests/{id}/kv}
 * returns a pulled KV (block by block, each rank's slice in rank order). Tests compare what D read
 * with it here rather than asking D's loop to recompute it: the loop has no such command, so that a
 * check no user needs never holds up every other pull.
 */
public final class ReferenceKv {

    private ReferenceKv() {
    }

    /** What a {@code tp}-way D that pulled {@code tokens} correctly holds. */
    public static byte[] of(ModelGeometry geometry, int[] tokens, int tp) {
        ReferenceEngine reference = new ReferenceEngine(geometry);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int block = 0; block < geometry.blocksFor(tokens.length); block++) {
            for (int rank = 0; rank < tp; rank++) {
                out.writeBytes(reference.expectedBlock(tokens, block, tp, rank));
            }
        }
        return out.toByteArray();
    }
}
