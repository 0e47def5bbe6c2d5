package io.pdconnector.producer;

/**
 * Takes back what nobody will release: an exported lease past its expiry (L8), its maximum lifetime
 * included (L12), and a reservation whose engine missed its finish deadline. Every lease is swept
 * every step, since expiries are not ordered: heartbeats move some of them later.
 */
final class Reaper {

    private final ProducerState state;
    private final LeaseExit exit;
    private final RequestGuard guard;

    Reaper(ProducerState state, LeaseExit exit, RequestGuard guard) {
        this.state = state;
        this.exit = exit;
        this.guard = guard;
    }

    int reap(long now) {
        int n = 0;
        for (Lease lease : state.leases.all()) {
            if (lease.anyRankHeld()) {
                n += guard.guard(lease.requestId(), null, () -> reap(lease, now));
            }
        }
        return n;
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
