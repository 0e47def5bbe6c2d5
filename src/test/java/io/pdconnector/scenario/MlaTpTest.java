package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullState;
import io.pdconnector.kv.KvAttention;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.testing.Cluster;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * MLA's latent (one row per token and layer, every TP rank the same bytes) between instances of any TP sizes:
 * P holds it on one rank, every D rank reads it whole from there, P's lease counts exactly those readers, and
 * nothing else of P is read or held.
 */
class MlaTpTest {

    /** A DeepSeek-shaped latent, small: 2 layers, one 24-wide latent row per token, 4-token blocks. */
    private static final ModelGeometry MLA = new ModelGeometry(2, 1, 24, 4, 2, null, KvAttention.MLA);

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    private ProducerFixture producer(int tp) {
        return cluster.producer(cluster.producerConfig("p").geometry(MLA).tpSize(tp));
    }

    private ConsumerFixture consumer(int tp) {
        return cluster.consumer(cluster.consumerConfig("d").geometry(MLA).tpSize(tp));
    }

    @Test
    void prefillTp2DecodeTp1_theDecoderReadsTheOneRankPHoldsTheLatentOn() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = consumer(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        assertEquals(1, a.tpSize(), "an MLA producer publishes one rank whatever its TP");

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        assertTrue(cluster.matches(d, "a"), "D holds the latent of every layer and token");
        assertEquals(1, cluster.engine.count("notify d-d0->p-p0 a:1:" + a.remoteLeaseNonce()));
        assertEquals(0, cluster.engine.count("notify d-d0->p-p1"), "no second P rank exists to be read");
        cluster.steps(2);
        assertNull(p.lease("a"), "released once its one reader read");
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void prefillTp1DecodeTp2_everyDecodeRankReadsTheWholeLatentAndPCountsBoth() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = consumer(2);
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        assertTrue(cluster.matches(d, "a"), "each D rank holds the whole latent");
        byte[] held = cluster.await(d.submitReadKv("a"));
        int rankBlock = Math.toIntExact(MLA.blockBytes(2));
        assertArrayEquals(Arrays.copyOfRange(held, 0, rankBlock), Arrays.copyOfRange(held, rankBlock, 2 * rankBlock),
                "D's two ranks hold the same bytes");
        long nonce = a.remoteLeaseNonce();
        assertEquals(1, cluster.engine.count("notify d-d0->p-p0 a:2:" + nonce));
        assertEquals(1, cluster.engine.count("notify d-d1->p-p0 a:2:" + nonce));
        cluster.steps(2);
        assertNull(p.lease("a"), "released after both readers");
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void prefillTp2DecodeTp4_fourReadersOfOneRankAreBelieved() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = consumer(4);
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        assertTrue(cluster.matches(d, "a"));
        cluster.steps(2);
        assertEquals(0, p.counters().notificationsRefusedConsumers.get(), "four readers of one rank are MLA's");
        assertNull(p.lease("a"));
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void theLatentBlockIsOnePlanePerLayerTheSameOnEveryRank() {
        assertEquals(2L * 4 * 24 * 2, MLA.blockBytes(1), "layers x tokens x latent width x bytes");
        assertEquals(MLA.blockBytes(1), MLA.blockBytes(8), "a rank holds the whole latent at any TP");
        assertEquals(1, MLA.kvRanks(4));
        assertEquals(4, new ModelGeometry(2, 4, 24, 4, 2).kvRanks(4));
        ReferenceEngine reference = new ReferenceEngine(MLA);
        assertArrayEquals(reference.expectedBlock(promptA, 0, 1, 0), reference.expectedBlock(promptA, 0, 4, 3));
    }
}
