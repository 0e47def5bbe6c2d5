package io.pdconnector.config;

import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Fault injection into this instance's own READs, for fault tests of the packaged service
 * (docs/hardening.md, "Processes killed, frozen and cut off"; keys: docs/configuration.md, "Fault
 * injection (tests only)"). Off by default; never enable it in a fleet that serves users.
 */
public interface FaultsConfig {
    /** Wraps the transfer engine in one that strikes READs as the keys below say. */
    @WithDefault("false")
    boolean enabled();

    /**
     * Which READs: {@code block} (a peer's KV), {@code slot} (its lease slots), {@code any}, or
     * {@code none} (only notifications are struck).
     */
    @WithDefault("any")
    ReadKind readKind();

    /** Only READs from this rank of the peer; any rank when unset. */
    Optional<Integer> rank();

    /**
     * {@code fail} (the READ fails once its transfer is terminal), {@code delay} (it reports in
     * progress for {@code duration}) or {@code hold} (its post stalls the step loop for {@code duration}).
     */
    @WithDefault("fail")
    Action action();

    @WithDefault("1s")
    Duration duration();

    /** The chance each candidate READ is struck; give this or {@code every-nth}, not both. */
    @WithDefault("0")
    double probability();

    /** Every n-th candidate READ is struck (counted over the instance); 0: use {@code probability}. */
    @WithDefault("0")
    int everyNth();

    /** Seed of the random choice, so a run repeats. */
    @WithDefault("12")
    long seed();

    /** Faults on the notifications this instance sends (a decoder's read notifications and heartbeats). */
    Notifications notifications();

    interface Notifications {
        /** {@code read} (read notifications), {@code heartbeat}, {@code any}, or {@code none} (off). */
        @WithDefault("none")
        NotificationKind kind();

        /**
         * What successive strikes do, in turn: {@code duplicate} (sent twice at once), {@code late} (sent
         * only, {@code delay} later), {@code replay} (sent now and again {@code delay} later).
         */
        @WithDefault("replay")
        List<NotificationAction> actions();

        @WithDefault("500ms")
        Duration delay();

        /** The chance each candidate notification is struck; give this or {@code every-nth}, not both. */
        @WithDefault("0")
        double probability();

        /** Every n-th candidate notification is struck (counted over the instance); 0: use {@code probability}. */
        @WithDefault("0")
        int everyNth();
    }

    enum ReadKind {
        block, slot, any, none
    }

    enum NotificationKind {
        read, heartbeat, any, none
    }

    enum NotificationAction {
        duplicate, late, replay
    }

    enum Action {
        fail, delay, hold
    }
}
