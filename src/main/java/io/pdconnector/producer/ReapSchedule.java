package io.pdconnector.producer;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * What the {@link Reaper} looks at, and when: the held leases that have a deadline (an expiry, a finish-by),
 * and the earliest deadline any of them may have reached. Only a {@link Lease} lowers it, in the one place
 * each of its deadlines is set, so no path that sets one can leave the reaper asleep past it; a heartbeat
 * only moves an expiry later, which leaves the bound valid (the sweep then finds nothing due and takes the
 * new earliest). Between deadlines the loop's steps do not walk the leases at all, and a sweep walks only
 * those with a deadline: an engine's grant keeps hundreds of placeholder leases in the table, which have
 * none (the grant's deadline governs them), and with them in it the sweep at each expiry was the largest
 * part of a plugin P's loop. Loop thread only.
 */
final class ReapSchedule {

    /** At most this: the first step sweeps. */
    private long earliestDueMillis = Long.MIN_VALUE;
    /** Every lease of the table that was given a deadline, until it leaves the table. */
    private final Set<Lease> timed = new LinkedHashSet<>();

    /** {@code lease}'s deadline was set to {@code dueMillis}; {@code Long.MAX_VALUE} is none. */
    void deadlineAt(Lease lease, long dueMillis) {
        earliestDueMillis = Math.min(earliestDueMillis, dueMillis);
        if (dueMillis != Long.MAX_VALUE) {
            timed.add(lease);
        }
    }

    /** {@code lease} left the table. */
    void forget(Lease lease) {
        timed.remove(lease);
    }

    /** The leases a sweep looks at, walked without a copy by one who changes nothing while walking. */
    Collection<Lease> timed() {
        return timed;
    }

    boolean sweepDue(long nowMillis) {
        return nowMillis >= earliestDueMillis;
    }

    /**
     * How long from {@code nowMillis} until a sweep is due: {@code 0} if it is, {@link Long#MAX_VALUE} if
     * no lease has a deadline. P's idle loop parks no longer, so an expiry is acted on when it comes.
     */
    long millisUntilDue(long nowMillis) {
        if (earliestDueMillis == Long.MAX_VALUE) {
            return Long.MAX_VALUE;
        }
        return nowMillis >= earliestDueMillis ? 0 : earliestDueMillis - nowMillis;
    }

    /** A sweep at {@code now} saw every held lease; the earliest deadline of those not yet due. */
    void swept(long nextDueMillis) {
        earliestDueMillis = nextDueMillis;
    }
}
