package io.pdconnector.producer;

import java.util.List;
import java.util.Map;

/** A consistent view of the producer's holdings, taken on the step loop. */
public record ProducerSnapshot(int freeBlocks, int totalBlocks, int freeSlots, int liveLeases,
        List<Integer> nonZeroSlotsPerRank, Map<String, LeaseState> leaseStates) {

    /** True when nothing is held: every block free, no lease, every slot zero on every rank. */
    public boolean idle() {
        return freeBlocks == totalBlocks && liveLeases == 0
                && nonZeroSlotsPerRank.stream().allMatch(n -> n == 0);
    }
}
