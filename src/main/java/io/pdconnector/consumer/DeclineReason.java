package io.pdconnector.consumer;

/** Why a pull's KV was not used; {@link #wire()} is the machine-readable reason callers get. */
public enum DeclineReason {
    LEASE_MISMATCH("lease_mismatch", true),
    SLOT_READ_FAILED("slot_read_failed", true),
    NO_LEASE("no_lease", true),
    TRANSFER_FAILED("transfer_failed", false),
    TIMEOUT("timeout", false),
    ABORTED("aborted", false);

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
