package io.pdconnector.reference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.kv.TpMapping;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class ReferenceEngineTest {

    private final ModelGeometry g = new ModelGeometry(2, 4, 8, 4, 2);
    private final ReferenceEngine engine = new ReferenceEngine(g);
    private final int[] tokens = {5, 6, 7, 8, 9, 10};

    @Test
    void theDefaultGeometryIsTheDocumentedOne() {
        assertEquals(new ModelGeometry(24, 2, 64, 16, 2), ModelGeometry.DEFAULT);
        assertEquals(24L * 2 * 1 * 16 * 64 * 2, ModelGeometry.DEFAULT.blockBytes(2));
        assertThrows(IllegalArgumentException.class, () -> ModelGeometry.DEFAULT.blockBytes(4),
                "4 ranks cannot split 2 KV heads");
    }

    @Test
    void bytesDependOnTokenAndPositionAndPaddingIsZero() {
        byte[] a = engine.expectedBlock(tokens, 1, 1, 0);
        assertArrayEquals(a, engine.expectedBlock(tokens.clone(), 1, 1, 0));
        int[] other = tokens.clone();
        other[5] = 11;
        assertFalse(Arrays.equals(a, engine.expectedBlock(other, 1, 1, 0)));
        int tokenBytes = g.headDim() * g.dtypeBytes();
        int padStart = 2 * tokenBytes; // block 1 holds positions 4, 5; slots 2, 3 are past the prompt
        for (int i = padStart; i < 4 * tokenBytes; i++) {
            assertEquals(0, a[i]);
        }
    }

    /** A rank of a TP-2 instance holds exactly its heads' runs of the TP-1 block, in the HND layout. */
    @Test
    void tpRanksHoldHeadSlicesOfTheWholeBlock() {
        byte[] whole = engine.expectedBlock(tokens, 0, 1, 0);
        int run = (int) g.headRunBytes();
        for (int rank = 0; rank < 2; rank++) {
            byte[] part = engine.expectedBlock(tokens, 0, 2, rank);
            for (int lkv = 0; lkv < g.layers() * 2; lkv++) {
                for (int h = 0; h < 2; h++) {
                    int from = (lkv * 4 + rank * 2 + h) * run;
                    int to = (lkv * 2 + h) * run;
                    assertArrayEquals(Arrays.copyOfRange(whole, from, from + run), Arrays.copyOfRange(part, to, to + run));
                }
            }
        }
    }

    @Test
    void writeThenMatch() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = arena.allocate(4 * g.blockBytes(1));
            engine.write(region, new int[] {3, 1}, tokens, 1, 0);
            assertTrue(engine.matches(region, new int[] {3, 1}, tokens, 1, 0));
            assertFalse(engine.matches(region, new int[] {1, 3}, tokens, 1, 0));
        }
    }

    @Test
    void consumersCountPerPrefillRank() {
        assertEquals(2, new TpMapping(g, 1, 2).consumersOf(0));
        TpMapping down = new TpMapping(g, 4, 2);
        assertEquals(1, down.consumersOf(3));
        assertEquals(2, down.slices().stream().filter(s -> s.decodeRank() == 0).count());
        TpMapping up = new TpMapping(g, 2, 4);
        assertEquals(2, up.consumersOf(1));
        assertEquals(2, up.slotReaderOf(1), "P rank 1 holds heads 2-3, read by D ranks 2 and 3");
    }
}
