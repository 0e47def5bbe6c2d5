package io.pdconnector.config;

import io.pdconnector.kv.ModelGeometry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A prefill instance's settings. {@code leaseSlots} 0 means the default, KV blocks + max_num_seqs:
 * enough for every block-holding request plus every request being scheduled. {@code kvShmDir} null
 * keeps each rank's KV in anonymous memory; otherwise it is a file there a local engine can map
 * ({@link #kvFile}). {@code reservationTimeout} is how long an engine may take between reserving a
 * request and finishing it before the request is taken back.
 */
public record ProducerConfig(
        String engineId,
        String host,
        int port,
        int tpSize,
        ModelGeometry geometry,
        int numBlocks,
        int maxNumSeqs,
        int leaseSlots,
        Duration leaseDuration,
        boolean leaseVerification,
        Path stateDir,
        int commandQueueCapacity,
        Path kvShmDir,
        Duration reservationTimeout) {

    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RESERVATION_TIMEOUT = Duration.ofMinutes(10);

    public ProducerConfig {
        Objects.requireNonNull(engineId, "engineId");
        Objects.requireNonNull(geometry, "geometry");
        Objects.requireNonNull(stateDir, "stateDir");
        Objects.requireNonNull(leaseDuration, "leaseDuration");
        Objects.requireNonNull(reservationTimeout, "reservationTimeout");
        kvShmDir = kvShmDir == null ? null : kvShmDir.toAbsolutePath();
        geometry.headsPerRank(tpSize);
        positive("numBlocks", numBlocks);
        positive("maxNumSeqs", maxNumSeqs);
        positive("commandQueueCapacity", commandQueueCapacity);
        if (leaseSlots < 0) {
            throw new IllegalArgumentException("leaseSlots must not be negative (0 = default), got " + leaseSlots);
        }
        if (leaseDuration.toMillis() < 3) {
            throw new IllegalArgumentException("leaseDuration must be at least 3 ms, got " + leaseDuration);
        }
        if (reservationTimeout.toMillis() < 1) {
            throw new IllegalArgumentException("reservationTimeout must be at least 1 ms, got " + reservationTimeout);
        }
    }

    public static ProducerConfig defaults(String engineId, Path stateDir) {
        return new ProducerConfig(engineId, "127.0.0.1", 8080, 1, ModelGeometry.DEFAULT, 256, 64, 0,
                DEFAULT_LEASE, true, stateDir, 1024, null, DEFAULT_RESERVATION_TIMEOUT);
    }

    /** Rank {@code rank}'s KV file, {@code pd-<engine>-r<rank>.kv} in {@code kvShmDir}; empty without one. */
    public Optional<Path> kvFile(int rank) {
        return Optional.ofNullable(kvShmDir).map(dir -> dir.resolve("pd-" + engineId + "-r" + rank + ".kv"));
    }

    public int effectiveLeaseSlots() {
        return leaseSlots == 0 ? numBlocks + maxNumSeqs : leaseSlots;
    }

    /** Heartbeats extend a lease to now + 2/3 of its duration. */
    public long heartbeatExtensionMillis() {
        return leaseDuration.toMillis() * 2 / 3;
    }

    public ProducerConfig withTp(int tp) {
        return new ProducerConfig(engineId, host, port, tp, geometry, numBlocks, maxNumSeqs, leaseSlots,
                leaseDuration, leaseVerification, stateDir, commandQueueCapacity, kvShmDir, reservationTimeout);
    }

    public ProducerConfig withGeometry(ModelGeometry g) {
        return new ProducerConfig(engineId, host, port, tpSize, g, numBlocks, maxNumSeqs, leaseSlots,
                leaseDuration, leaseVerification, stateDir, commandQueueCapacity, kvShmDir, reservationTimeout);
    }

    public ProducerConfig withBlocks(int blocks, int maxSeqs, int slots) {
        return new ProducerConfig(engineId, host, port, tpSize, geometry, blocks, maxSeqs, slots,
                leaseDuration, leaseVerification, stateDir, commandQueueCapacity, kvShmDir, reservationTimeout);
    }

    public ProducerConfig withVerification(boolean on) {
        return new ProducerConfig(engineId, host, port, tpSize, geometry, numBlocks, maxNumSeqs, leaseSlots,
                leaseDuration, on, stateDir, commandQueueCapacity, kvShmDir, reservationTimeout);
    }

    public ProducerConfig withQueueCapacity(int capacity) {
        return new ProducerConfig(engineId, host, port, tpSize, geometry, numBlocks, maxNumSeqs, leaseSlots,
                leaseDuration, leaseVerification, stateDir, capacity, kvShmDir, reservationTimeout);
    }

    public ProducerConfig withShmDir(Path dir) {
        return new ProducerConfig(engineId, host, port, tpSize, geometry, numBlocks, maxNumSeqs, leaseSlots,
                leaseDuration, leaseVerification, stateDir, commandQueueCapacity, dir, reservationTimeout);
    }

    public ProducerConfig withReservationTimeout(Duration timeout) {
        return new ProducerConfig(engineId, host, port, tpSize, geometry, numBlocks, maxNumSeqs, leaseSlots,
                leaseDuration, leaseVerification, stateDir, commandQueueCapacity, kvShmDir, timeout);
    }

    private static void positive(String name, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }
}
