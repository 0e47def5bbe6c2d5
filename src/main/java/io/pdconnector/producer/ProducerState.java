package io.pdconnector.producer;

import io.pdconnector.config.ProducerConfig;
import io.pdconnector.memory.IndexPool;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the producer's phases share, owned by the step-loop thread. Requests move through it in
 * step order: {@link #pending} (admitted by a command) → {@link #scheduled} (blocks, slot and
 * nonce taken; slot writes queued) → a lease in {@link #leases} → {@link #finishing} (some rank
 * has cleared its slot) → freed.
 */
final class ProducerState {

    final ProducerConfig config;
    final InstantSource clock;
    final LeaseObserver observer;
    final ProducerCounters counters = new ProducerCounters();
    final IndexPool blocks;
    final IndexPool slots;
    final LeaseTable leases;
    final List<ProducerCommand.Admission> pending = new ArrayList<>();
    final Map<Lease, ProducerCommand.Admission> scheduled = new LinkedHashMap<>();
    final Set<Lease> finishing = new LinkedHashSet<>();
    /** Filled by open, in rank order, and emptied by close. */
    final List<ProducerRank> ranks = new ArrayList<>();
    /** Created by open: its epoch advances once per start (L1), not per construction. */
    NonceSource nonces;

    ProducerState(ProducerConfig config, InstantSource clock, LeaseObserver observer) {
        this.config = config;
        this.clock = clock;
        this.observer = observer;
        this.blocks = new IndexPool("block", config.numBlocks());
        this.slots = new IndexPool("slot", config.leaseVerification() ? config.effectiveLeaseSlots() : 0);
        this.leases = new LeaseTable(config.tpSize());
    }

    ProducerSnapshot snapshot() {
        Map<String, LeaseState> states = new LinkedHashMap<>();
        leases.all().forEach(l -> states.put(l.requestId(), l.state()));
        return new ProducerSnapshot(blocks.freeCount(), blocks.capacity(), slots.freeCount(), leases.size(),
                ranks.stream().map(ProducerRank::nonZeroSlots).toList(), states);
    }

    /** The lease a request holds, or null. */
    Lease lease(String requestId) {
        return leases.find(requestId);
    }

    /** What {@code rank}'s slot holds right now. */
    long slotValue(int rank, int slot) {
        return ranks.get(rank).slotValue(slot);
    }

    /** Handles (regions, lists, READs) held by each rank's agent. */
    List<Integer> openHandles() {
        return ranks.stream().map(ProducerRank::openHandles).toList();
    }
}
