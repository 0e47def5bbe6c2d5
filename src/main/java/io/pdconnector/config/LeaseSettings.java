package io.pdconnector.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * P's lease settings. {@code slots} 0 means the default, KV blocks + max_num_seqs.
 * {@code reservationTimeout} is how long an engine may take between reserving a request and finishing
 * it before the request is taken back. {@code maxLifetime} is the longest a lease lives after its
 * export, however often it is heartbeated (L12): a decoder that heartbeats a lease it never reads
 * cannot hold P's blocks for good. {@code stateDir} keeps the nonce epoch (L1).
 */
public record LeaseSettings(Duration duration, boolean verification, int slots, Duration reservationTimeout,
        Duration maxLifetime, Path stateDir) {

    public static final Duration DEFAULT_DURATION = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RESERVATION_TIMEOUT = Duration.ofMinutes(10);
    public static final Duration DEFAULT_MAX_LIFETIME = Duration.ofMinutes(10);

    public LeaseSettings {
        Objects.requireNonNull(duration, "leaseDuration");
        Objects.requireNonNull(maxLifetime, "maxLifetime");
        Objects.requireNonNull(reservationTimeout, "reservationTimeout");
        Objects.requireNonNull(stateDir, "stateDir");
        if (slots < 0) {
            throw new IllegalArgumentException("leaseSlots must not be negative (0 = default), got " + slots);
        }
        if (duration.toMillis() < 3) {
            throw new IllegalArgumentException("leaseDuration must be at least 3 ms, got " + duration);
        }
        if (maxLifetime.compareTo(duration) < 0) {
            throw new IllegalArgumentException("a lease's maximum lifetime (" + maxLifetime
                    + ") must not be shorter than the lease (" + duration + ")");
        }
        if (reservationTimeout.toMillis() < 1) {
            throw new IllegalArgumentException("reservationTimeout must be at least 1 ms, got " + reservationTimeout);
        }
    }
}
