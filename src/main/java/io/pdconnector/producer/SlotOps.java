package io.pdconnector.producer;

import java.util.List;
import java.util.Set;

/**
 * Every rank applies the slot operations queued since its last step, clears before writes (L2),
 * each in {@link ProducerRank#applySlotOps}. A lease a rank cleared joins {@code finishing}: that
 * rank has reported finished-sending (L3), and {@link Releaser} frees it once every rank has.
 */
final class SlotOps {

    private final List<ProducerRank> ranks;
    private final Set<Lease> finishing;

    SlotOps(List<ProducerRank> ranks, Set<Lease> finishing) {
        this.ranks = ranks;
        this.finishing = finishing;
    }

    int applyOnEveryRank() {
        int work = 0;
        for (ProducerRank rank : ranks) {
            work += rank.applySlotOps(finishing::add);
        }
        return work;
    }
}
