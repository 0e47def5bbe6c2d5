package io.pdconnector.producer;

/**
 * When the {@link Reaper} next needs to look at the lease table: the earliest deadline (an expiry, a
 * finish-by) any held lease may have reached. Only a {@link Lease} lowers it, in the one place each of
 * its deadlines is set, so no path that sets one can leave the reaper asleep past it; a heartbeat only
 * moves an expiry later, which leaves the bound valid (the sweep then finds nothing due and takes the
 * new earliest). Between deadlines the loop's steps do not walk the table at all: an engine's grant
 * keeps hundreds of placeholder leases there, and an idle loop steps about a thousand times a second.
 * Loop thread only.
 */
final class ReapSchedule {

    /** At most this: the first step sweeps. */
    private long earliestDueMillis = Long.MIN_VALUE;

    /** A lease's deadline was set to {@code dueMillis}. */
    void deadlineAt(long dueMillis) {
        earliestDueMillis = Math.min(earliestDueMillis, dueMillis);
    }

    boolean sweepDue(long nowMillis) {
        return nowMillis >= earliestDueMillis;
    }

    /** A sweep at {@code now} saw every held lease; the earliest deadline of those not yet due. */
    void swept(long nextDueMillis) {
        earliestDueMillis = nextDueMillis;
    }
}
