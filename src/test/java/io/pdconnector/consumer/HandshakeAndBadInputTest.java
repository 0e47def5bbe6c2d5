package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.UntrustedPeerException;
import io.pdconnector.kv.KvDtype;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.HandshakeMetadata;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.ProducerIncarnation;
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
        HandshakeMetadata real = cluster.registry.lookup("p").orElseThrow().ranks().getFirst();
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
    void aDecoderOfAnotherKvDtypeOfTheSameWidthIsRefusedAtTheHandshakeNamingBoth() {
        ModelGeometry bf16 = new ModelGeometry(2, 2, 8, 4, 2, KvDtype.BFLOAT16);
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").geometry(bf16));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        ConsumerFixture fp16 = cluster.consumer(cluster.consumerConfig("d").geometry(
                new ModelGeometry(2, 2, 8, 4, 2, KvDtype.FLOAT16)));
        IncompatiblePeerException e = assertThrows(IncompatiblePeerException.class,
                () -> cluster.pull(fp16, "a", promptA, a));
        assertTrue(e.getMessage().contains("kvDtype=BFLOAT16") && e.getMessage().contains("kvDtype=FLOAT16"),
                e.getMessage());
        assertEquals(0, fp16.snapshot().peers(), "nothing was loaded for a refused peer");
        ConsumerFixture same = cluster.consumer(cluster.consumerConfig("d2").geometry(bf16));
        assertEquals(PullState.RECEIVED, cluster.pull(same, "a", promptA, a).state(), "the same type is taken");
        cluster.release(same, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    /** 64 layers: a decode rank reading half a prefill rank's heads needs 128 runs per block. */
    private static final ModelGeometry LAYERS_64 = new ModelGeometry(64, 2, 8, 4, 1);

    /** The real P's rank-0 metadata, republished as engine {@code engineId} declaring {@code numBlocks} blocks. */
    private HandshakeMetadata declaring(String engineId, int numBlocks, int slotCount) {
        HandshakeMetadata real = cluster.registry.lookup("p").orElseThrow().ranks().getFirst();
        HandshakeMetadata fake = new HandshakeMetadata(engineId, 0, 1, ProducerIncarnation.agentName(engineId, 0),
                real.agentMetadata(),
                real.kvBase(), (long) numBlocks * real.blockBytes(), real.geometry(), real.layout(), numBlocks,
                real.slotBase(), slotCount, real.connectorVersion(), real.compatHash());
        cluster.registry.publish(engineId, List.of(fake));
        return fake;
    }

    @Test
    void aPeerDeclaringHugeBlockOrSlotCountsIsRefusedBeforeAnythingIsLoadedAndANormalPeerStillWorks() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").geometry(LAYERS_64));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").geometry(LAYERS_64).tpSize(2));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        ConsumerSnapshot before = d.snapshot();

        // 2^24 blocks x 128 runs = 2^31 descriptors: int overflow, then an unbounded allocation on D's loop.
        declaring("huge", 1 << 24, 20);
        IncompatiblePeerException e = assertThrows(IncompatiblePeerException.class,
                () -> cluster.pull(d, "a", promptA, edit(a, "remote_engine_id", "huge")));
        assertTrue(e.getMessage().contains("16777216 KV blocks") && e.getMessage().contains("pd.consumer.max-peer-blocks"),
                e.getMessage());
        // Within the block cap, but 2^20 blocks x 128 runs is more descriptors than one list may hold.
        declaring("wide", 1 << 20, 20);
        e = assertThrows(IncompatiblePeerException.class,
                () -> cluster.pull(d, "a", promptA, edit(a, "remote_engine_id", "wide")));
        assertTrue(e.getMessage().contains("134217728 descriptors")
                && e.getMessage().contains("pd.consumer.max-peer-descriptors"), e.getMessage());
        // Lease slots are one descriptor each.
        declaring("slots", 16, 1 << 24);
        e = assertThrows(IncompatiblePeerException.class,
                () -> cluster.pull(d, "a", promptA, edit(a, "remote_engine_id", "slots")));
        assertTrue(e.getMessage().contains("16777216 lease slots"), e.getMessage());

        assertEquals(0, d.snapshot().peers(), "nothing was loaded for a refused peer");
        assertEquals(before.freeBlocks(), d.snapshot().freeBlocks());
        assertEquals(0, d.snapshot().pulls());
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state(), "the real 64-layer peer still works");
        assertTrue(cluster.matches(d, "a"));
        cluster.release(d, "a");
        cluster.steps(2);
        cluster.assertNoLeak();
    }

    @Test
    void theCapOnPeerBlocksIsThisInstancesSetting() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture strict = cluster.consumer(cluster.consumerConfig("d").maxPeerBlocks(8));
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        IncompatiblePeerException e = assertThrows(IncompatiblePeerException.class,
                () -> cluster.pull(strict, "a", promptA, a));
        assertTrue(e.getMessage().contains("16 KV blocks, more than the 8"), e.getMessage());
        assertEquals(0, strict.snapshot().peers());
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void paramsThatDoNotFitThePeerAreRejectedAndChangeNothing() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        ConsumerSnapshot before = d.snapshot();

        UntrustedPeerException unknown = assertThrows(UntrustedPeerException.class,
                () -> cluster.pull(d, "x", promptA, edit(a, "remote_engine_id", "nobody")));
        assertTrue(unknown.getMessage().contains("no producer nobody"), unknown.getMessage());
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
