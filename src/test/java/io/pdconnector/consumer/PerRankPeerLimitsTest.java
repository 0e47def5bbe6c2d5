package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 12: a peer's ranks may publish different sizes; a pull's block ids and lease slot are
 * checked against every rank, so one that fits rank 0 but not rank 1 is refused (400) and the loop
 * goes on serving other pulls.
 */
class PerRankPeerLimitsTest {

    private final Cluster cluster = new Cluster();
    /** 8 tokens = 2 blocks of {@link Cluster#SMALL}: "a" gets P's blocks 0-1 and slot 0, "b" blocks 2-3 and slot 1. */
    private final int[] promptA = prompt(1, 8);
    private final int[] promptB = prompt(2, 8);

    @AfterEach
    void close() {
        cluster.close();
    }

    /** Republishes P's metadata with rank 1 edited, as a peer with uneven ranks would publish it. */
    private void editRank1(UnaryOperator<HandshakeMetadata> edit) {
        List<HandshakeMetadata> ranks = new ArrayList<>(cluster.registry.lookup("p").orElseThrow().ranks());
        ranks.set(1, edit.apply(ranks.get(1)));
        cluster.registry.publish("p", ranks);
    }

    private static HandshakeMetadata withSizes(HandshakeMetadata m, int numBlocks, int slotCount) {
        return new HandshakeMetadata(m.engineId(), m.rank(), m.tpSize(), m.agentName(), m.agentMetadata(), m.kvBase(),
                m.kvLength(), m.geometry(), m.layout(), numBlocks, m.slotBase(), slotCount, m.connectorVersion(),
                m.compatHash());
    }

    @Test
    void blockIdBeyondAShorterRankIsRefusedAndTheLoopServesOthers() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        KvTransferParams b = cluster.prefill(p, "b", promptB);
        editRank1(m -> withSizes(m, 2, m.slotCount()));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));

        InvalidKvTransferParamsException e = assertThrows(InvalidKvTransferParamsException.class,
                () -> cluster.pull(d, "b", promptB, b));
        assertTrue(e.getMessage().contains("rank 1"), e.getMessage());

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());
        assertTrue(cluster.matches(d, "a"));
        cluster.release(d, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void leaseSlotBeyondAShorterRankIsRefusedAndTheLoopServesOthers() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        KvTransferParams b = cluster.prefill(p, "b", promptB);
        assertEquals(1, b.remoteLeaseSlot());
        editRank1(m -> withSizes(m, m.numBlocks(), 1));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));

        InvalidKvTransferParamsException e = assertThrows(InvalidKvTransferParamsException.class,
                () -> cluster.pull(d, "b", promptB, b));
        assertTrue(e.getMessage().contains("rank 1"), e.getMessage());

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());
        cluster.release(d, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }
}
