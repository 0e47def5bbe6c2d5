package io.pdconnector.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A block's layers by KV cache group: full attention first, then windows from the widest down, so that what a
 * block needs is a prefix; a window group's layers are read for a request's last ceil(window / block) + 1 blocks,
 * as the vLLM plugin keeps them.
 */
class KvGroupsTest {

    @Test
    void aBlockHoldsTheFullGroupsLayersFirstThenTheWindowsFromTheWidestDown() {
        KvGroups g = KvGroups.parse("window:64/5,full/6,window:512/3", 14);
        assertEquals(List.of(new KvGroups.Group(0, 6), new KvGroups.Group(512, 3), new KvGroups.Group(64, 5)),
                g.inBlockOrder());
        assertEquals(0, g.layersBefore(0));
        assertEquals(9, g.layersBefore(2));
        assertEquals(14, g.layersBefore(3));
    }

    @Test
    void aWindowGroupIsReadForTheRequestsLastBlocksItsWindowReaches() {
        KvGroups g = KvGroups.parse("window:64/1,full/1", 2);
        // 128-token blocks: a 64-token window reaches ceil(64 / 128) + 1 = 2 blocks
        assertArrayEquals(new int[] {1, 1, 1, 2, 2}, g.segmentsNeeded(5, 128));
        assertArrayEquals(new int[] {2}, g.segmentsNeeded(1, 128));
        // 16-token blocks: 5 blocks
        assertArrayEquals(new int[] {1, 2, 2, 2, 2, 2}, g.segmentsNeeded(6, 16));
        KvGroups two = KvGroups.parse("window:16/1,full/1,window:32/1", 3);
        assertArrayEquals(new int[] {1, 1, 1, 2, 3, 3}, two.segmentsNeeded(6, 16)); // 32 reaches 3 blocks, 16 two
        assertArrayEquals(new int[] {1, 1, 1}, KvGroups.whole(4).segmentsNeeded(3, 16));
    }

    @Test
    void groupsWhoseLayersAreNotTheModelsAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new ModelGeometry(2, 2, 8, 4, 2, null, KvAttention.MHA, "window:64/1,full/2"));
        assertTrue(e.getMessage().contains("hold 3 layers, the model 2"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> new ModelGeometry(2, 2, 8, 4, 2, null, KvAttention.MHA, "window:64,full"));
    }

    @Test
    void aWholeRankSliceReadsOneRunPerGroupAndAHeadSliceOneRunPerLayerAndPlaneInTheGroupsOrder() {
        ModelGeometry g = new ModelGeometry(3, 2, 8, 4, 2, null, KvAttention.MHA, "window:4/2,full/1");
        long layer = g.layerBytes(1, 1);
        HeadSlice whole = new HeadSlice(0, 0, 0, 2);
        assertEquals(2, whole.runsPerBlock(g, 1, 1));
        assertEquals(1, whole.runsOfSegments(g, 1, 1, 1));
        assertEquals(layer, whole.runBytes(g, 1, 1, 0), "the full group's one layer first");
        assertEquals(2 * layer, whole.runBytes(g, 1, 1, 1));
        assertEquals(layer, whole.prefillOffset(g, 1, 1, 1));
        HeadSlice half = new HeadSlice(1, 0, 1, 1); // D at TP 2 reads head 1 of P's rank 0
        assertEquals(6, half.runsPerBlock(g, 1, 2));
        assertEquals(2, half.runsOfSegments(g, 1, 2, 1), "the full group's layer: its K and V runs");
    }
}
