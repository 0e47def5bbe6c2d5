package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.PdException;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A NIXL agent name belongs to one engine: a second engine whose record carries another engine's
 * agent (its name, or its metadata blob under a name of its own) is refused, and the refusal must
 * not touch the real owner's loaded agent. Before, the cleanup of the failed handshake invalidated
 * P's agent on D, and every later pull from P failed until D restarted.
 */
class AgentBindingTest {

    private final Cluster cluster = new Cluster();

    @AfterEach
    void close() {
        cluster.close();
    }

    private static KvTransferParams from(KvTransferParams p, String engineId) {
        Map<String, Object> m = new HashMap<>(p.toMap());
        m.put("remote_engine_id", engineId);
        return KvTransferParams.fromMap(m);
    }

    /** P's real rank-0 metadata under {@code engineId}, naming agent {@code agentName}, its KV base moved off. */
    private void impostor(String engineId, String agentName) {
        HandshakeMetadata real = cluster.registry.lookup("p").orElseThrow().ranks().getFirst();
        cluster.registry.publish(engineId, List.of(new HandshakeMetadata(engineId, 0, 1, agentName,
                real.agentMetadata(), real.kvBase() + (1L << 40), real.kvLength(), real.geometry(), real.layout(),
                real.numBlocks(), real.slotBase(), real.slotCount(), real.connectorVersion(), real.compatHash())));
    }

    @Test
    void anEngineClaimingAnotherEnginesAgentNameIsRefusedAndTheOwnerStillServes() {
        assertImpostorRefusedAndOwnerUnharmed("evil", "p-p0");
    }

    @Test
    void anEngineLoadingAnotherEnginesMetadataUnderItsOwnNameIsRefusedAndTheOwnerStillServes() {
        assertImpostorRefusedAndOwnerUnharmed("evil", "evil-p0");
    }

    private void assertImpostorRefusedAndOwnerUnharmed(String engineId, String agentName) {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        int[] first = prompt(1, 10);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", first, cluster.prefill(p, "a", first)).state());
        cluster.release(d, "a");

        impostor(engineId, agentName);
        int[] second = prompt(2, 10);
        KvTransferParams b = cluster.prefill(p, "b", second);
        PdException refused = assertThrows(PdException.class, () -> cluster.pull(d, "b", second, from(b, engineId)));
        assertTrue(refused.getMessage().contains("p-p0"), refused.getMessage());

        assertEquals(PullState.RECEIVED, cluster.pull(d, "b", second, b).state(),
                "P's agent on D survived the impostor's refusal");
        assertTrue(cluster.matches(d, "b"));
        cluster.release(d, "b");
        cluster.steps(2);
        cluster.assertNoLeak();
    }
}
