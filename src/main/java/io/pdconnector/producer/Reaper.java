package io.pdconnector.producer;

/**
 * Takes back what nobody will release: an exported lease past its expiry (L8) and a reservation
 * whose engine missed its finish deadline. Every lease is swept every step, since expiries are not
 * ordered: heartbeats move some of them later.
 */
final class Reaper {

    private final ProducerState state;
    private final LeaseExit exit;

    Reaper(ProducerState state, LeaseExit exit) {
        this.state = state;
        this.exit = exit;
    }

    int reap(long now) {
        int n = 0;
        for (Lease lease : state.leases.all()) {
            if (!lease.anyRankHeld()) {
                continue;
            }
            if (lease.expired(now)) {
                exit.allRanks(lease);
                state.counters.leasesExpired.incrementAndGet();
                n++;
            } else if (lease.abandoned(now)) {
                exit.allRanks(lease);
                state.counters.reservationsAbandoned.incrementAndGet();
                n++;
            }
        }
        return n;
    }
}
