package io.pdconnector.consumer;

/** Why a pull's KV was not used; {@link #wire()} is the machine-readable reason callers get. */
public enum DeclineReason {
    LEASE_MISMATCH("lease_mismatch", true),
    SLOT_READ_FAILED("slot_read_failed", true),
    NO_LEASE("no_lease", true),
    TRANSFER_FAILED("transfer_failed", false),
    TIMEOUT("timeout", false),
    ABORTED("aborted", false),
    /** The producer restarted (a new epoch) before the pull was decided: its old memory is gone. */
    PEER_RESTARTED("peer_restarted", false),
    /** The producer left the registry (withdrawn, or its record expired) before the pull was decided. */
    PEER_GONE("peer_gone", false);

    private final String wire;
    private final boolean leaseCheckFailure;

    DeclineReason(String wire, boolean leaseCheckFailure) {
        this.wire = wire;
        this.leaseCheckFailure = leaseCheckFailure;
    }

    public String wire() {
        return wire;
    }

    /** Counted in lease_check_failures (L7). */
    public boolean leaseCheckFailure() {
        return leaseCheckFailure;
    }
}
