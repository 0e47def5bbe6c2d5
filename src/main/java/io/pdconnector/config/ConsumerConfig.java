package io.pdconnector.config;

import io.pdconnector.kv.ModelGeometry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A decode instance's settings, built with {@link #builder} (the service builds them from
 * {@link PdConfig} in {@link ConnectorSettings}). {@code slotReadSpins} bounds how many times a step
 * polls a slot READ before leaving it to the next step; {@code slotChecksPerRead} is how many pulls one
 * slot READ can serve. {@code kvShmDir} null keeps each rank's received KV in anonymous memory; otherwise
 * it is a file there that a local engine maps to read its pulls' blocks in place ({@link #kvFile}).
 */
public record ConsumerConfig(
        InstanceSettings instance,
        int numBlocks,
        boolean leaseVerification,
        LoadFailurePolicy failurePolicy,
        Duration heartbeatInterval,
        Duration pullTimeout,
        Duration retention,
        int slotReadSpins,
        int slotChecksPerRead,
        int maxPeerBlocks,
        int maxPeerDescriptors,
        int maxPeers,
        int commandQueueCapacity,
        Path kvShmDir,
        boolean vramHostPathAllowed) implements InstanceScoped {

    /** Lease duration / 6 of the default 30 s lease, as {@code pd.consumer.heartbeat-interval} defaults. */
    public static final Duration DEFAULT_HEARTBEAT = LeaseSettings.DEFAULT_DURATION.dividedBy(6);

    public ConsumerConfig {
        Objects.requireNonNull(instance, "instance");
        Objects.requireNonNull(failurePolicy, "failurePolicy");
        Require.positive("numBlocks", numBlocks);
        Require.positive("slotReadSpins", slotReadSpins);
        Require.positive("slotChecksPerRead", slotChecksPerRead);
        Require.positive("maxPeerBlocks", maxPeerBlocks);
        Require.positive("maxPeerDescriptors", maxPeerDescriptors);
        Require.positive("maxPeers", maxPeers);
        Require.positive("commandQueueCapacity", commandQueueCapacity);
        Require.positive("heartbeatInterval", heartbeatInterval);
        Require.positive("pullTimeout", pullTimeout);
        Require.positive("retention", retention);
        kvShmDir = kvShmDir == null ? null : kvShmDir.toAbsolutePath();
    }

    /** Settings with every default ({@link Builder}) but the engine id. */
    public static Builder builder(String engineId) {
        return new Builder(engineId);
    }

    public static ConsumerConfig defaults(String engineId) {
        return builder(engineId).build();
    }

    /**
     * Rank {@code rank}'s file of received KV, {@code pd-<engine>-d<rank>.kv} in {@code kvShmDir} (P's are
     * {@code -r<rank>}, so an instance serving both sides keeps two); empty without a directory.
     */
    public Optional<Path> kvFile(int rank) {
        return Optional.ofNullable(kvShmDir).map(dir -> dir.resolve("pd-" + engineId() + "-d" + rank + ".kv"));
    }


    /**
     * Builds {@link ConsumerConfig}s; the defaults are those of {@link PdConfig}: tp 1,
     * {@link ModelGeometry#DEFAULT}, 256 blocks, verified leases with policy {@code FAIL}, heartbeats
     * every 5 s, a 120 s pull timeout, a 60 s retention of decided KV, 1 slot READ poll per step, 64 slot
     * checks per READ, peers of at most 2^20 blocks and 2^22 descriptors per list, a command queue
     * of 1024 and no KV file directory.
     */
    public static final class Builder {

        private final String engineId;
        private int tpSize = 1;
        private ModelGeometry geometry = ModelGeometry.DEFAULT;
        private int numBlocks = 256;
        private boolean verification = true;
        private LoadFailurePolicy failurePolicy = LoadFailurePolicy.FAIL;
        private Duration heartbeatInterval = DEFAULT_HEARTBEAT;
        private Duration pullTimeout = Duration.ofSeconds(120);
        private Duration retention = Duration.ofSeconds(60);
        private int slotReadSpins = 1;
        private int slotChecksPerRead = 64;
        private int maxPeerBlocks = 1 << 20;
        private int maxPeerDescriptors = 1 << 22;
        private int maxPeers = 64;
        private int commandQueueCapacity = 1024;
        private Path kvShmDir;
        private boolean vramHostPathAllowed;

        private Builder(String engineId) {
            this.engineId = engineId;
        }

        public Builder tpSize(int tpSize) {
            this.tpSize = tpSize;
            return this;
        }

        public Builder geometry(ModelGeometry geometry) {
            this.geometry = geometry;
            return this;
        }

        /** KV blocks per rank. */
        public Builder blocks(int numBlocks) {
            this.numBlocks = numBlocks;
            return this;
        }

        /** kv_lease_verification; off restores unverified pulls (L10). */
        public Builder verification(boolean on) {
            this.verification = on;
            return this;
        }

        /** kv_load_failure_policy. */
        public Builder failurePolicy(LoadFailurePolicy policy) {
            this.failurePolicy = policy;
            return this;
        }

        public Builder heartbeatInterval(Duration interval) {
            this.heartbeatInterval = interval;
            return this;
        }

        public Builder pullTimeout(Duration timeout) {
            this.pullTimeout = timeout;
            return this;
        }

        /** How long a decided pull's KV is kept for decode before the loop releases it. */
        public Builder retention(Duration retention) {
            this.retention = retention;
            return this;
        }

        public Builder slotReadSpins(int spins) {
            this.slotReadSpins = spins;
            return this;
        }

        public Builder slotChecksPerRead(int checks) {
            this.slotChecksPerRead = checks;
            return this;
        }

        /** Most KV blocks a peer rank may declare; more is refused before anything is loaded. */
        public Builder maxPeerBlocks(int blocks) {
            this.maxPeerBlocks = blocks;
            return this;
        }

        /** Most descriptors one list prepared for a peer may hold (blocks x runs, or lease slots). */
        /** pd.consumer.max-peers: producers kept handshaken at once. */
        public Builder maxPeers(int peers) {
            this.maxPeers = peers;
            return this;
        }

        public Builder maxPeerDescriptors(int descriptors) {
            this.maxPeerDescriptors = descriptors;
            return this;
        }

        public Builder commandQueueCapacity(int capacity) {
            this.commandQueueCapacity = capacity;
            return this;
        }

        /** Keep each rank's received KV in a file in {@code dir} (null: anonymous memory). */
        public Builder kvShmDir(Path dir) {
            this.kvShmDir = dir;
            return this;
        }

        /** pd.kv.vram-host-path=allow: READs of a producer's GPU memory are served over a host path too. */
        public Builder vramHostPathAllowed(boolean allowed) {
            this.vramHostPathAllowed = allowed;
            return this;
        }

        public ConsumerConfig build() {
            return new ConsumerConfig(new InstanceSettings(engineId, tpSize, geometry), numBlocks, verification,
                    failurePolicy, heartbeatInterval, pullTimeout, retention, slotReadSpins, slotChecksPerRead,
                    maxPeerBlocks, maxPeerDescriptors, maxPeers, commandQueueCapacity, kvShmDir,
                    vramHostPathAllowed);
        }
    }
}
