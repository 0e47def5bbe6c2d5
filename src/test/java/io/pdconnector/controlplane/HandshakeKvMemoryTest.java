package io.pdconnector.controlplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.testing.Cluster;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Where a rank's KV is, in its handshake: a reader's descriptors must carry P's memory type and devId.
 * It survives the registry's codec, which writes a host-memory rank as before the fields existed (and reads
 * such a record as host memory); anything
 * but dram on device 0 or vram on a device >= 0 is refused as an incompatible peer.
 */
class HandshakeKvMemoryTest {

    private static final int V = HandshakeMetadata.CONNECTOR_VERSION;
    private final RecordCodec codec = new RecordCodec();

    private static HandshakeMetadata rank(String memory, int device) {
        return new HandshakeMetadata("p", 0, 1, "p-p0", new byte[] {1, 2}, 1 << 20, 8L * Cluster.SMALL.blockBytes(1),
                Cluster.SMALL, HandshakeMetadata.LAYOUT, 8, 0, 0, V, Cluster.SMALL.compatHash(V), memory, device);
    }

    private static InstanceRecord record(HandshakeMetadata m) {
        return new InstanceRecord("p", "producer", "127.0.0.1", 8080, 1, "e1", V, Cluster.SMALL.compatHash(V),
                List.of(m), InstanceRecord.Capacity.UNKNOWN, true, 1);
    }

    @Test
    void aVramRankKeepsItsDeviceThroughTheRegistry() {
        HandshakeMetadata m = codec.decode(codec.encode(record(rank(HandshakeMetadata.KV_VRAM, 2)))).ranks().getFirst();
        assertTrue(m.kvInVram());
        assertEquals(2, m.kvDevice());
        m.requireCompatible(Cluster.SMALL, V);
    }

    @Test
    void aHostMemoryRankIsWrittenAsBeforeAndARecordWithoutTheFieldsIsHostMemory() {
        String text = codec.toText(record(rank(HandshakeMetadata.KV_DRAM, 0)));
        assertFalse(text.contains("kvMemory") || text.contains("kvDevice"), "a dram rank's record is today's: " + text);
        String vram = codec.toText(record(rank(HandshakeMetadata.KV_VRAM, 2)));
        assertTrue(vram.contains("\"kvMemory\":\"vram\",\"kvDevice\":2"), vram);
        HandshakeMetadata m = codec.decode(text.getBytes(StandardCharsets.UTF_8)).ranks().getFirst();
        assertFalse(m.kvInVram());
        assertEquals(HandshakeMetadata.KV_DRAM, m.kvMemory());
        assertEquals(0, m.kvDevice());
        m.requireCompatible(Cluster.SMALL, V);
    }

    @Test
    void memoryThatCannotExistIsAnIncompatiblePeer() {
        for (HandshakeMetadata bad : List.of(rank("hbm", 0), rank(HandshakeMetadata.KV_DRAM, 1),
                rank(HandshakeMetadata.KV_VRAM, -1))) {
            IncompatiblePeerException e = assertThrows(IncompatiblePeerException.class,
                    () -> bad.requireCompatible(Cluster.SMALL, V));
            assertTrue(e.getMessage().contains("only dram (device 0) or vram"), e.getMessage());
        }
    }
}
