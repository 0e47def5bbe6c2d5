package io.pdconnector.transfer.faults;

import java.time.Duration;
import java.util.OptionalInt;

/**
 * Which READs a {@link FaultInjectingEngine} strikes and how: off unless an operator configures it
 * ({@code pd.faults.*}), for fault tests against the packaged service.
 *
 * @param kind which READs are candidates: a peer's KV blocks, its lease slots, or any
 * @param sourceRank only READs from this rank of the peer (its agent {@code <engine>-p<rank>}), or any
 * @param action what a strike does
 * @param duration how long a {@link Action#DELAY} or {@link Action#HOLD} lasts
 * @param probability the chance each candidate is struck (0 when {@code everyNth} chooses)
 * @param everyNth every n-th candidate is struck, counted over the whole engine (0 when probability chooses)
 * @param seed of the random choice, so a run can be repeated
 */
public record FaultPlan(Kind kind, OptionalInt sourceRank, Action action, Duration duration, double probability,
        int everyNth, long seed) {

    /** Which READs. */
    public enum Kind {
        BLOCK, SLOT, ANY;

        boolean covers(boolean slotRead) {
            return this == ANY || (this == SLOT) == slotRead;
        }
    }

    /** What a struck READ does. */
    public enum Action {
        /** The READ fails: once its real transfer is terminal, its status throws (a backend error). */
        FAIL,
        /** The READ reports in progress for {@code duration} after its post, then its real status. */
        DELAY,
        /** The post blocks its caller, the step loop, for {@code duration}: a stalled loop. */
        HOLD
    }

    public FaultPlan {
        if (duration == null || duration.isNegative()) {
            throw new IllegalArgumentException("pd.faults.duration must not be negative, got " + duration);
        }
        Strikes.validate("pd.faults.", probability, everyNth);
        if (sourceRank.isPresent() && sourceRank.getAsInt() < 0) {
            throw new IllegalArgumentException("pd.faults.rank must not be negative, got " + sourceRank.getAsInt());
        }
    }

    @Override
    public String toString() {
        return action + " " + kind + " READs from " + (sourceRank.isPresent() ? "rank " + sourceRank.getAsInt()
                : "any rank") + (everyNth > 0 ? ", every " + everyNth + "th" : ", with probability " + probability)
                + (action == Action.FAIL ? "" : ", for " + duration.toMillis() + " ms") + ", seed " + seed;
    }
}
