package io.pdconnector.controlplane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.UntrustedPeerException;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.ProducerIncarnation;
import io.pdconnector.testing.ManualClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The view a store fills, what it announces to D, what D trusts, and how often this instance writes. */
class RegistryTest {

    private final ManualClock clock = new ManualClock();
    private final RegistryCounters counters = new RegistryCounters();
    private final List<String> heard = new ArrayList<>();
    private Registry registry;

    static InstanceRecord record(String engineId, String epoch, int port, boolean producer) {
        List<HandshakeMetadata> ranks = producer ? List.of(new HandshakeMetadata(engineId, 0, 1,
                ProducerIncarnation.agentName(engineId, 0), new byte[] {1}, 4096, 1 << 20, ModelGeometry.DEFAULT, "HND",
                4, 8192, 8, HandshakeMetadata.CONNECTOR_VERSION, "hash")) : List.of();
        return new InstanceRecord(engineId, producer ? "producer" : "consumer", "127.0.0.1", port, 1, epoch,
                HandshakeMetadata.CONNECTOR_VERSION, "hash", ranks, null, true, 0);
    }

    @BeforeEach
    void start() {
        registry = new Registry(new EmbeddedStore(counters), record("self", "s1", 8000, false), Duration.ofSeconds(1),
                counters, clock);
        registry.start();
        registry.subscribe(new Registry.ProducerListener() {
            @Override
            public void announced(ProducerIncarnation incarnation) {
                heard.add("announced " + incarnation.engineId() + "@" + incarnation.epoch());
            }

            @Override
            public void withdrawn(String engineId) {
                heard.add("withdrawn " + engineId);
            }
        });
    }

    @Test
    void aProducerIsAnnouncedOncePerEpochAndWithdrawnWhenItsRecordGoes() {
        registry.upsert(record("p", "e1", 9000, true));
        registry.upsert(record("p", "e1", 9000, true).with(new InstanceRecord.Capacity(1, 2, 3, 4), true, 5));
        registry.upsert(record("p", "e2", 9000, true));
        registry.upsert(record("d", "x", 9001, false));
        registry.remove("p");
        assertEquals(List.of("announced p@e1", "announced p@e2", "withdrawn p"), heard);
        assertTrue(registry.lookup("p").isEmpty());
        assertTrue(registry.lookup("d").isEmpty(), "a decoder is not a producer");
    }

    @Test
    void aFullViewAfterAReconnectDropsWhatIsNoLongerThereButNeverThisInstance() {
        registry.upsert(record("p", "e1", 9000, true));
        registry.upsert(record("q", "e1", 9002, true));
        registry.replaceAll(List.of(record("q", "e1", 9002, true)));
        assertEquals(List.of("q", "self"), registry.instances().stream().map(InstanceRecord::engineId).toList());
        assertTrue(heard.contains("withdrawn p"));
        registry.remove("self");
        assertEquals("self", registry.self().engineId());
        assertTrue(registry.instances().stream().anyMatch(r -> r.engineId().equals("self")));
    }

    @Test
    void anotherInstanceUnderThisEngineIdIsRefusedLoudly() {
        registry.upsert(record("self", "other-epoch", 9009, true));
        assertEquals(1, registry.refusals().get(Registry.DUPLICATE_ENGINE).get());
        assertEquals("s1", registry.self().epoch());
        assertTrue(registry.lookup("self").isEmpty());
    }

    private static KvTransferParams params(String engineId, String host, int port) {
        Map<String, Object> m = new HashMap<>();
        m.put("do_remote_prefill", true);
        m.put("remote_engine_id", engineId);
        m.put("remote_host", host);
        m.put("remote_port", port);
        m.put("remote_block_ids", List.of(List.of(0)));
        m.put("remote_num_tokens", 1);
        return KvTransferParams.fromMap(m);
    }

    @Test
    void dTrustsOnlyARegisteredProducerAtItsRecordedAddress() {
        registry.upsert(record("p", "e1", 9000, true));
        registry.requireTrusted(params("p", "127.0.0.1", 9000));

        UntrustedPeerException e = assertThrows(UntrustedPeerException.class,
                () -> registry.requireTrusted(params("ghost", "127.0.0.1", 9000)));
        assertEquals("unknown_peer", e.reason());
        e = assertThrows(UntrustedPeerException.class, () -> registry.requireTrusted(params("p", "127.0.0.2", 9000)));
        assertEquals("peer_mismatch", e.reason());
        e = assertThrows(UntrustedPeerException.class, () -> registry.requireTrusted(params("p", "127.0.0.1", 9001)));
        assertEquals("peer_mismatch", e.reason());
        assertEquals(1, registry.refusals().get("unknown_peer").get());
        assertEquals(2, registry.refusals().get("peer_mismatch").get());
    }

    @Test
    void capacityChangesAreWrittenAtMostOncePerMinimumInterval() {
        long before = counters.writes.get();
        assertFalse(registry.updateCapacity(new InstanceRecord.Capacity(1, 1, 1, 1), true), "just after the first write");
        clock.advance(Duration.ofSeconds(2));
        assertTrue(registry.updateCapacity(new InstanceRecord.Capacity(2, 1, 1, 1), true));
        assertFalse(registry.updateCapacity(new InstanceRecord.Capacity(3, 1, 1, 1), true), "within the interval");
        assertFalse(registry.updateCapacity(new InstanceRecord.Capacity(2, 1, 1, 1), true), "unchanged");
        clock.advance(Duration.ofMillis(1000));
        assertTrue(registry.updateCapacity(new InstanceRecord.Capacity(3, 1, 1, 1), true));
        assertEquals(new InstanceRecord.Capacity(3, 1, 1, 1), registry.self().capacity());
        assertEquals(2, counters.writes.get() - before);
    }
}
