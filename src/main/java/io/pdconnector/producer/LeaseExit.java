package io.pdconnector.producer;

import java.util.List;

/**
 * Starts a lease's exit on its ranks, whatever the cause (all readers, expiry, abort, shutdown).
 * L3: a rank only queues its slot clear here; it reports finished-sending in {@link SlotOps}, after
 * applying the clear, and the blocks wait for every rank ({@link Releaser}).
 */
final class LeaseExit {

    private final List<ProducerRank> ranks;

    LeaseExit(List<ProducerRank> ranks) {
        this.ranks = ranks;
    }

    void allRanks(Lease lease) {
        for (ProducerRank rank : ranks) {
            rank(lease, rank.rank());
        }
    }

    /** A rank already exiting is left alone, so a late reader cannot queue a second clear. */
    void rank(Lease lease, int rank) {
        if (lease.beginRankExit(rank)) {
            ranks.get(rank).queueClear(lease);
            if (lease.state() != LeaseState.RELEASING) {
                lease.moveTo(LeaseState.RELEASING);
            }
        }
    }
}
