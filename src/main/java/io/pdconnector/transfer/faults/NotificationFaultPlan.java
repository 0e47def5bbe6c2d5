package io.pdconnector.transfer.faults;

import java.time.Duration;
import java.util.List;

/**
 * Which notifications this instance sends a {@link FaultInjectingEngine} tampers with, and how: off unless
 * configured ({@code pd.faults.notifications.*}). A decoder's read notifications and heartbeats then reach
 * their producer twice, late, or again after a delay, as a network that duplicates and reorders would
 * deliver them; the producer must refuse or ignore the copies that no longer name a live lease.
 *
 * @param kind which notifications are candidates
 * @param actions what successive strikes do, in turn (the first strike the first action, and so on)
 * @param delay how long a {@link Action#LATE} or {@link Action#REPLAY} copy waits
 * @param probability the chance each candidate is struck (0 when {@code everyNth} chooses)
 * @param everyNth every n-th candidate is struck, counted over the whole engine (0 when probability chooses)
 */
public record NotificationFaultPlan(Kind kind, List<Action> actions, Duration delay, double probability,
        int everyNth) {

    /** Which notifications. */
    public enum Kind {
        /** A read notification {@code <id>:<consumers>[:<nonce>]} (also sent for a given-up pull). */
        READ,
        /** A heartbeat {@code HB:...}. */
        HEARTBEAT,
        ANY;

        boolean covers(boolean heartbeat) {
            return this == ANY || (this == HEARTBEAT) == heartbeat;
        }
    }

    /** What a struck notification does. */
    public enum Action {
        /** Sent twice at once. */
        DUPLICATE,
        /** Not sent now: sent once, {@code delay} later. */
        LATE,
        /** Sent now and once more {@code delay} later. */
        REPLAY
    }

    public NotificationFaultPlan {
        if (kind == null) {
            throw new IllegalArgumentException("pd.faults.notifications.kind must be read, heartbeat or any");
        }
        if (actions == null || actions.isEmpty() || actions.stream().anyMatch(java.util.Objects::isNull)) {
            throw new IllegalArgumentException("pd.faults.notifications.actions needs at least one of duplicate, "
                    + "late, replay; got " + actions);
        }
        actions = List.copyOf(actions);
        if (delay == null || delay.isNegative()) {
            throw new IllegalArgumentException("pd.faults.notifications.delay must not be negative, got " + delay);
        }
        Strikes.validate("pd.faults.notifications.", probability, everyNth);
    }

    @Override
    public String toString() {
        return actions + " on " + kind + " notifications" + (everyNth > 0 ? ", every " + everyNth + "th"
                : ", with probability " + probability) + ", copies " + delay.toMillis() + " ms late";
    }
}
