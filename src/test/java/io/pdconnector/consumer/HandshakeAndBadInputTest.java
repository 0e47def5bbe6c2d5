package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Bad params and incompatible peers get a clear error and change no state. */
class HandshakeAndBadInputTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    private static KvTransferParams edit(KvTransferParams p, String key, Object value) {
        Map<String, Object> m = new HashMap<>(p.toMap());
        m.put(key, value);
        return KvTransferParams.fromMap(m);
    }

    @Test
    void peerWithAnotherVersionOrGeometryIsRefusedWithAClearError() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        HandshakeMetadata real = cluster.registry.lookup("p").orElseThrow().getFirst();
        cluster.registry.publish("old", List.of(new HandshakeMetadata("old", 0, 1, real.agentName(),
                real.agentMetadata(), real.kvBase(), real.kvLength(), real.geometry(), "HND", real.numBlocks(),
                real.slotBase(), real.slotCount(), 14, real.geometry().compatHash(14))));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));

        IncompatiblePeerException e = assertThrows(IncompatiblePeerException.class,
                () -> cluster.pull(d, "a", promptA, edit(a, "remote_engine_id", "old")));
        assertTrue(e.getMessage().contains("version 14"), e.getMessage());

        ConsumerFixture other = cluster.consumer(cluster.consumerConfig("d2").geometry(new ModelGeometry(2, 2, 8, 4, 1)));
        e = assertThrows(IncompatiblePeerException.class, () -> cluster.pull(other, "a", prompt(1, 10), a));
        assertTrue(e.getMessage().contains("compatibility hash"), e.getMessage());
        assertEquals(0, d.snapshot().peers(), "nothing was loaded for a refused peer");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void paramsThatDoNotFitThePeerAreRejectedAndChangeNothing() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        ConsumerSnapshot before = d.snapshot();

        assertRejected(d, edit(a, "remote_engine_id", "nobody"), "unknown remote_engine_id");
        assertRejected(d, edit(a, "remote_block_ids", List.of(List.of(0, 1, 99))), "has 16 blocks");
        assertRejected(d, edit(a, "remote_lease_slot", 9_999), "outside");
        assertRejected(d, edit(a, "tp_size", 2), "tp_size");
        assertThrows(InvalidKvTransferParamsException.class, () -> d.submitPull("x", prompt(1, 9), a),
                "prompt length must match remote_num_tokens");
        assertThrows(InvalidInputException.class, () -> d.submitPull("bad:id", promptA, a));

        ConsumerSnapshot after = d.snapshot();
        assertEquals(before.freeBlocks(), after.freeBlocks());
        assertEquals(0, after.pulls());
        assertEquals(0, d.counters().heartbeatsSent.get(), "a rejected pull never heartbeats");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void badPrefillInputIsRejectedBeforeItReachesTheLoop() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        assertThrows(InvalidInputException.class, () -> p.facade().submitPrefill("a", new int[0]));
        assertThrows(InvalidInputException.class, () -> p.facade().submitPrefill("a,b", promptA));
        assertThrows(InvalidInputException.class, () -> p.facade().submitPrefill("a", new int[] {1, -1}));
        assertThrows(InvalidInputException.class, () -> p.facade().submitPrefill("a", new int[16 * 4 + 1]));
        cluster.assertNoLeak();
    }

    @Test
    void restartedProducerIsHandshakenAgainAndTheOldPeerReleased() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        assertEquals(io.pdconnector.consumer.PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());
        cluster.release(d, "a");
        cluster.steps(2);
        cluster.stop(p);

        ProducerFixture restarted = cluster.producer(cluster.producerConfig("p"));
        KvTransferParams b = cluster.prefill(restarted, "b", promptA);

        assertTrue(b.remoteLeaseNonce() > a.remoteLeaseNonce(), "a new epoch after the restart (L1)");
        assertEquals(io.pdconnector.consumer.PullState.RECEIVED, cluster.pull(d, "b", promptA, b).state());
        assertTrue(cluster.matches(d, "b"));
        assertEquals(2, d.counters().handshakes.get());
        cluster.release(d, "b");
        cluster.assertNoLeak();
    }

    private void assertRejected(ConsumerFixture d, KvTransferParams params, String message) {
        InvalidInputException e = assertThrows(InvalidInputException.class,
                () -> cluster.pull(d, "x", promptA, params));
        assertTrue(e.getMessage().contains(message), e.getMessage());
    }
}
