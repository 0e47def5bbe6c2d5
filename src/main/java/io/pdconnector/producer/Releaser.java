package io.pdconnector.producer;

/**
 * Frees the leases every rank has finished sending: blocks back (L3: only once all ranks zeroed
 * their slot), then the slot back to the pool (L4: never before finished-sending, so a new lease
 * cannot be given a slot a reader may still find the old nonce in).
 */
final class Releaser {

    private final ProducerState state;

    Releaser(ProducerState state) {
        this.state = state;
    }

    int releaseFinished() {
        int n = 0;
        for (Lease lease : state.finishing) {
            if (lease.allRanksFinished()) {
                free(lease);
                n++;
            }
        }
        state.finishing.removeIf(l -> l.state() == LeaseState.FREED);
        return n;
    }

    private void free(Lease lease) {
        state.blocks.free(lease.blockIds());
        if (lease.hasSlot()) {
            state.slots.release(lease.slot());
        }
        if (lease.exportedAtMillis() >= 0) {
            state.observer.leaseReleased(state.clock.millis() - lease.exportedAtMillis());
        }
        lease.moveTo(LeaseState.FREED);
        state.leases.remove(lease);
    }
}
