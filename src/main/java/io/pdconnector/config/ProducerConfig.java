package io.pdconnector.config;

import io.pdconnector.kv.ModelGeometry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A prefill instance's settings, built with {@link #builder} (the service builds them from
 * {@link PdConfig} in {@link ConnectorSettings}). {@code host}/{@code port} are where peers reach this
 * instance. {@code kvShmDir} null keeps each rank's KV in anonymous memory; otherwise it is a file there
 * a local engine can map ({@link #kvFile}). The lease settings are grouped in {@link LeaseSettings}; the
 * flat accessors ({@link #leaseDuration()} ...) read them.
 */
public record ProducerConfig(
        InstanceSettings instance,
        String host,
        int port,
        int numBlocks,
        int maxNumSeqs,
        Path kvShmDir,
        LeaseSettings lease,
        int commandQueueCapacity) implements InstanceScoped {

    public ProducerConfig {
        Objects.requireNonNull(instance, "instance");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(lease, "lease");
        kvShmDir = kvShmDir == null ? null : kvShmDir.toAbsolutePath();
        Require.positive("numBlocks", numBlocks);
        Require.positive("maxNumSeqs", maxNumSeqs);
        Require.positive("commandQueueCapacity", commandQueueCapacity);
    }

    /** Settings with every default ({@link Builder}) but the engine id and the nonce state directory. */
    public static Builder builder(String engineId, Path stateDir) {
        return new Builder(engineId, stateDir);
    }

    public static ProducerConfig defaults(String engineId, Path stateDir) {
        return builder(engineId, stateDir).build();
    }


    public Duration leaseDuration() {
        return lease.duration();
    }

    public boolean leaseVerification() {
        return lease.verification();
    }

    /** kv_lease_slots as configured; 0 means {@link #effectiveLeaseSlots()}'s default. */
    public int leaseSlots() {
        return lease.slots();
    }

    public Duration reservationTimeout() {
        return lease.reservationTimeout();
    }

    /** How long after its export a lease ends, whatever its heartbeats (L12). */
    public Duration leaseMaxLifetime() {
        return lease.maxLifetime();
    }

    public Path stateDir() {
        return lease.stateDir();
    }

    /** Rank {@code rank}'s KV file, {@code pd-<engine>-r<rank>.kv} in {@code kvShmDir}; empty without one. */
    public Optional<Path> kvFile(int rank) {
        return Optional.ofNullable(kvShmDir).map(dir -> dir.resolve("pd-" + engineId() + "-r" + rank + ".kv"));
    }

    /** Lease slots: as configured, or KV blocks + max_num_seqs, enough for every block-holding request
     * plus every request being scheduled. */
    public int effectiveLeaseSlots() {
        return leaseSlots() == 0 ? numBlocks + maxNumSeqs : leaseSlots();
    }

    /** Heartbeats extend a lease to now + 2/3 of its duration. */
    public long heartbeatExtensionMillis() {
        return leaseDuration().toMillis() * 2 / 3;
    }

    /**
     * Builds {@link ProducerConfig}s; the defaults are those of {@link PdConfig}: 127.0.0.1:8080, tp 1,
     * {@link ModelGeometry#DEFAULT}, 256 blocks, max_num_seqs 64, default lease slots, a 30 s verified
     * lease living at most 10 min, a 10 min reservation timeout, a command queue of 1024 and no KV file
     * directory.
     */
    public static final class Builder {

        private final String engineId;
        private Path stateDir;
        private String host = "127.0.0.1";
        private int port = 8080;
        private int tpSize = 1;
        private ModelGeometry geometry = ModelGeometry.DEFAULT;
        private int numBlocks = 256;
        private int maxNumSeqs = 64;
        private int leaseSlots = 0;
        private Duration leaseDuration = LeaseSettings.DEFAULT_DURATION;
        private boolean verification = true;
        private Duration reservationTimeout = LeaseSettings.DEFAULT_RESERVATION_TIMEOUT;
        private Duration maxLifetime = LeaseSettings.DEFAULT_MAX_LIFETIME;
        private int commandQueueCapacity = 1024;
        private Path kvShmDir;

        private Builder(String engineId, Path stateDir) {
            this.engineId = engineId;
            this.stateDir = stateDir;
        }

        /** Where peers reach this instance: {@code remote_host}/{@code remote_port} of its params. */
        public Builder advertised(String host, int port) {
            this.host = host;
            this.port = port;
            return this;
        }

        public Builder tpSize(int tpSize) {
            this.tpSize = tpSize;
            return this;
        }

        public Builder geometry(ModelGeometry geometry) {
            this.geometry = geometry;
            return this;
        }

        /** KV blocks per rank, vLLM's max_num_seqs, and lease slots (0 = blocks + max_num_seqs). */
        public Builder blocks(int numBlocks, int maxNumSeqs, int leaseSlots) {
            this.numBlocks = numBlocks;
            this.maxNumSeqs = maxNumSeqs;
            this.leaseSlots = leaseSlots;
            return this;
        }

        public Builder leaseDuration(Duration leaseDuration) {
            this.leaseDuration = leaseDuration;
            return this;
        }

        /** kv_lease_verification; off restores unverified pulls (L10). */
        public Builder verification(boolean on) {
            this.verification = on;
            return this;
        }

        public Builder reservationTimeout(Duration timeout) {
            this.reservationTimeout = timeout;
            return this;
        }

        /** No heartbeat extends a lease past this long after its export (L12). */
        public Builder leaseMaxLifetime(Duration maxLifetime) {
            this.maxLifetime = maxLifetime;
            return this;
        }

        public Builder stateDir(Path stateDir) {
            this.stateDir = stateDir;
            return this;
        }

        public Builder commandQueueCapacity(int capacity) {
            this.commandQueueCapacity = capacity;
            return this;
        }

        /** Keep each rank's KV in a file in {@code dir} (null: anonymous memory). */
        public Builder kvShmDir(Path dir) {
            this.kvShmDir = dir;
            return this;
        }

        public ProducerConfig build() {
            // the ranks P holds KV on, which is all the producer ever sees of its TP: one for MLA's latent
            return new ProducerConfig(new InstanceSettings(engineId, geometry.kvRanks(tpSize), geometry), host, port,
                    numBlocks, maxNumSeqs, kvShmDir,
                    new LeaseSettings(leaseDuration, verification, leaseSlots, reservationTimeout, maxLifetime,
                            stateDir),
                    commandQueueCapacity);
        }
    }
}
