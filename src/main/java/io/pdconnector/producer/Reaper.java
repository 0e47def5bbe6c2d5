package io.pdconnector.producer;

import java.util.ArrayList;
import java.util.List;

/**
 * Takes back what nobody will release: an exported lease past its expiry (L8), its maximum lifetime
 * included (L12), and a reservation whose engine missed its finish deadline. Expiries are not ordered
 * (heartbeats move some of them later), so a sweep looks at every held lease with a deadline, but only
 * once the {@link ReapSchedule} says one may have come: between deadlines a step does not walk them. A
 * grant's placeholder leases have no deadline of their own and are not walked. A sweep only looks (no
 * copy, no allocation) and acts on the few it found due.
 */
final class Reaper {

    private final ProducerState state;
    private final LeaseExit exit;
    private final RequestGuard guard;
    /** The leases due this step, gathered before any is acted on (acting changes the table); reused. */
    private final List<Lease> due = new ArrayList<>();

    Reaper(ProducerState state, LeaseExit exit, RequestGuard guard) {
        this.state = state;
        this.exit = exit;
        this.guard = guard;
    }

    int reap(long now) {
        ReapSchedule schedule = state.leases.reaping();
        if (!schedule.sweepDue(now)) {
            return 0;
        }
        long next = Long.MAX_VALUE;
        for (Lease lease : schedule.timed()) {
            if (!lease.anyRankHeld()) {
                continue;
            }
            if (lease.expired(now) || lease.abandoned(now)) {
                due.add(lease);
            } else {
                next = Math.min(next, lease.reapableFromMillis());
            }
        }
        // before acting: a deadline set while acting lowers it again
        schedule.swept(next);
        if (due.isEmpty()) {
            return 0;
        }
        try {
            int n = 0;
            for (Lease lease : due) {
                n += guard.guard(lease.requestId(), null, () -> reap(lease, now));
            }
            return n;
        } finally {
            due.clear();
        }
    }

    private int reap(Lease lease, long now) {
        if (lease.expired(now)) {
            exit.allRanks(lease);
            state.counters.leasesExpired.incrementAndGet();
            if (lease.heldToMaxLifetime()) {
                state.counters.leasesAtMaxLifetime.incrementAndGet();
            }
            return 1;
        }
        if (lease.abandoned(now)) {
            exit.allRanks(lease);
            state.counters.reservationsAbandoned.incrementAndGet();
            return 1;
        }
        return 0;
    }
}
