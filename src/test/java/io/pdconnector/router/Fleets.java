package io.pdconnector.router;

import io.pdconnector.controlplane.InstanceRecord;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.ProducerIncarnation;
import java.util.List;

/** Registry records for router tests: a P has a published rank, a D none. */
final class Fleets {

    private Fleets() {
    }

    static InstanceRecord producer(String id, int port, InstanceRecord.Capacity capacity) {
        List<HandshakeMetadata> ranks = List.of(new HandshakeMetadata(id, 0, 1, ProducerIncarnation.agentName(id, 0),
                new byte[] {1}, 4096, 1 << 20, ModelGeometry.DEFAULT, "HND", 4, 8192, 8,
                HandshakeMetadata.CONNECTOR_VERSION, "hash"));
        return new InstanceRecord(id, "producer", "127.0.0.1", port, 1, "e-" + id, HandshakeMetadata.CONNECTOR_VERSION,
                "hash", ranks, capacity, true, 0);
    }

    static InstanceRecord producer(String id, int port) {
        return producer(id, port, InstanceRecord.Capacity.UNKNOWN);
    }

    static InstanceRecord decoder(String id, int port, InstanceRecord.Capacity capacity) {
        return new InstanceRecord(id, "consumer", "127.0.0.1", port, 1, "e-" + id, HandshakeMetadata.CONNECTOR_VERSION,
                "hash", List.of(), capacity, true, 0);
    }

    static InstanceRecord decoder(String id, int port) {
        return decoder(id, port, InstanceRecord.Capacity.UNKNOWN);
    }

    /** free blocks, free slots, live leases, queue depth */
    static InstanceRecord.Capacity capacity(int freeBlocks, int queueDepth) {
        return new InstanceRecord.Capacity(freeBlocks, 10, 0, queueDepth);
    }
}
