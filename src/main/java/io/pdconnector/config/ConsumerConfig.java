package io.pdconnector.config;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.kv.ModelGeometry;
import java.time.Duration;
import java.util.Objects;

/**
 * A decode instance's settings. {@code slotReadSpins} bounds how many times a step polls a slot
 * READ before leaving it to the next step; {@code slotChecksPerRead} is how many pulls one slot
 * READ can serve.
 */
public record ConsumerConfig(
        String engineId,
        int tpSize,
        ModelGeometry geometry,
        int numBlocks,
        boolean leaseVerification,
        LoadFailurePolicy failurePolicy,
        Duration heartbeatInterval,
        Duration pullTimeout,
        int slotReadSpins,
        int slotChecksPerRead,
        int commandQueueCapacity) {

    public ConsumerConfig {
        Objects.requireNonNull(engineId, "engineId");
        Objects.requireNonNull(geometry, "geometry");
        Objects.requireNonNull(failurePolicy, "failurePolicy");
        geometry.headsPerRank(tpSize);
        positive("numBlocks", numBlocks);
        positive("slotReadSpins", slotReadSpins);
        positive("slotChecksPerRead", slotChecksPerRead);
        positive("commandQueueCapacity", commandQueueCapacity);
        if (heartbeatInterval.isNegative() || heartbeatInterval.isZero() || pullTimeout.isNegative()
                || pullTimeout.isZero()) {
            throw new IllegalArgumentException("heartbeatInterval and pullTimeout must be positive");
        }
    }

    /** Heartbeats every lease/6 of the default 30 s lease. */
    public static ConsumerConfig defaults(String engineId) {
        return new ConsumerConfig(engineId, 1, ModelGeometry.DEFAULT, 256, true, LoadFailurePolicy.FAIL,
                Duration.ofSeconds(5), Duration.ofSeconds(120), 10_000, 64, 1024);
    }

    public ConsumerConfig withTp(int tp) {
        return new ConsumerConfig(engineId, tp, geometry, numBlocks, leaseVerification, failurePolicy,
                heartbeatInterval, pullTimeout, slotReadSpins, slotChecksPerRead, commandQueueCapacity);
    }

    public ConsumerConfig withGeometry(ModelGeometry g) {
        return new ConsumerConfig(engineId, tpSize, g, numBlocks, leaseVerification, failurePolicy,
                heartbeatInterval, pullTimeout, slotReadSpins, slotChecksPerRead, commandQueueCapacity);
    }

    public ConsumerConfig withBlocks(int blocks) {
        return new ConsumerConfig(engineId, tpSize, geometry, blocks, leaseVerification, failurePolicy,
                heartbeatInterval, pullTimeout, slotReadSpins, slotChecksPerRead, commandQueueCapacity);
    }

    public ConsumerConfig withVerification(boolean on, LoadFailurePolicy policy) {
        return new ConsumerConfig(engineId, tpSize, geometry, numBlocks, on, policy,
                heartbeatInterval, pullTimeout, slotReadSpins, slotChecksPerRead, commandQueueCapacity);
    }

    public ConsumerConfig withTimeout(Duration timeout) {
        return new ConsumerConfig(engineId, tpSize, geometry, numBlocks, leaseVerification, failurePolicy,
                heartbeatInterval, timeout, slotReadSpins, slotChecksPerRead, commandQueueCapacity);
    }

    private static void positive(String name, int value) {
        if (value < 1) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }
}
