package io.pdconnector.controlplane;

import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import io.pdconnector.protocol.HandshakeMetadata;
import java.util.List;
import java.util.Objects;

/**
 * What the registry holds about one instance: who it is (engine id, role, the epoch of this start),
 * where its HTTP API is, what a decoder needs to read from it (its ranks' NIXL metadata and region
 * and slot descriptors), whether it is compatible, and how loaded it is. A producer's record has one
 * rank per TP rank, in rank order; a decoder's has none.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record InstanceRecord(
        String engineId,
        String role,
        String host,
        int port,
        int tpSize,
        String epoch,
        int connectorVersion,
        String compatHash,
        List<HandshakeMetadata> ranks,
        Capacity capacity,
        boolean ready,
        long publishedAtMillis) {

    public InstanceRecord {
        Objects.requireNonNull(engineId, "engineId");
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(epoch, "epoch");
        ranks = ranks == null ? List.of() : List.copyOf(ranks);
        capacity = capacity == null ? Capacity.UNKNOWN : capacity;
    }

    public boolean producer() {
        return !ranks.isEmpty();
    }

    /** The address peers reach its HTTP API at, {@code host:port} as a kv_transfer_params pair names it. */
    public String address() {
        return host + ":" + port;
    }

    /** The same record with new capacity and readiness, as republished on change. */
    public InstanceRecord with(Capacity newCapacity, boolean newReady, long now) {
        return new InstanceRecord(engineId, role, host, port, tpSize, epoch, connectorVersion, compatHash, ranks,
                newCapacity, newReady, now);
    }

    /** How loaded an instance is, for routers to choose by; -1 where the role has no such figure. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Capacity(int freeBlocks, int freeSlots, int liveLeases, int queueDepth) {
        public static final Capacity UNKNOWN = new Capacity(-1, -1, -1, -1);
    }
}
