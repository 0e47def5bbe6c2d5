package io.pdconnector.producer;

import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.reference.ReferenceEngine;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Starts the requests scheduled this step writing, and exports leases: the one way out of WRITING
 * but release. A prefill's KV is written by the reference engine and its lease exported at once;
 * an engine's reservation gets zeroed blocks and its answer, and is exported by its finish, through
 * the same L2 check.
 */
final class Exporter {

    private final ProducerState state;
    private final ReferenceEngine reference;
    private final RequestGuard guard;

    Exporter(ProducerState state, RequestGuard guard) {
        this.state = state;
        this.guard = guard;
        this.reference = new ReferenceEngine(state.config.geometry());
    }

    /** Requests scheduled this step had their slots written by every rank in {@link SlotOps} (L2). */
    int startWriting(long now) {
        int n = 0;
        for (Map.Entry<Lease, ProducerCommand.Admission> e : List.copyOf(state.scheduled.entrySet())) {
            ProducerCommand.Admission admission = e.getValue();
            n += guard.guard(admission.requestId(), admission.reply(), () -> {
                start(e.getKey(), admission, now);
                return 1;
            });
        }
        state.scheduled.clear();
        return n;
    }

    private void start(Lease lease, ProducerCommand.Admission admission, long now) {
        if (lease.hasSlot()) {
            requireSlotWrittenOnEveryRank(lease);
            lease.moveTo(LeaseState.SLOT_WRITTEN);
        }
        lease.startWriting(now + state.config.reservationTimeout().toMillis());
        switch (admission) {
            case ProducerCommand.Prefill p -> {
                state.ranks.forEach(r -> r.writeKv(reference, lease, p.tokens(), state.config.tpSize()));
                p.reply().complete(export(lease, now));
            }
            case ProducerCommand.Reserve r -> {
                state.ranks.forEach(rank -> rank.zeroBlocks(lease));
                r.reply().complete(reservationOf(lease));
            }
        }
    }

    /** The lease clock starts and the params go out; a lease without a slot is exported without lease fields (L4). */
    KvTransferParams export(Lease lease, long now) {
        if (lease.hasSlot()) {
            requireSlotWrittenOnEveryRank(lease);
        } else {
            state.counters.exportsWithoutSlot.incrementAndGet();
        }
        lease.startClock(now, now + state.config.leaseDuration().toMillis(),
                state.config.leaseMaxLifetime().toMillis());
        lease.moveTo(LeaseState.EXPORTED);
        state.counters.leasesExported.incrementAndGet();
        return paramsOf(lease);
    }

    /** L2, checked where it matters: no lease is exported unless every rank's slot holds its nonce. */
    void requireSlotWrittenOnEveryRank(Lease lease) {
        for (ProducerRank rank : state.ranks) {
            if (rank.slotValue(lease.slot()) != lease.nonce()) {
                throw new IllegalStateException("rank " + rank.rank() + " slot " + lease.slot() + " does not hold the"
                        + " nonce of lease " + lease.requestId() + " at export");
            }
        }
    }

    private Reservation reservationOf(Lease lease) {
        return new Reservation(lease.requestId(), lease.numTokens(), lease.blockIds(), lease.hasSlot(),
                state.ranks.getFirst().blockBytes(), state.ranks.stream().map(ProducerRank::region).toList());
    }

    private KvTransferParams paramsOf(Lease lease) {
        List<Integer> ids = Arrays.stream(lease.blockIds()).boxed().toList();
        var config = state.config;
        return new KvTransferParams(true, false, config.engineId(), lease.requestId(), List.of(ids), config.host(),
                config.port(), config.tpSize(), lease.numTokens(), KvTransferParams.PULL,
                lease.hasSlot() ? lease.slot() : null, lease.hasSlot() ? lease.nonce() : null, Map.of());
    }
}
