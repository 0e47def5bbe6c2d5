package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullState;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.producer.LeaseState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.RawPeer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class HeterogeneousTpTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void prefillTp1DecodeTp2_eachDecodeRankReadsItsHeadsAndPExpectsTwoReaders() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(1));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").tpSize(2));
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        assertTrue(cluster.matches(d, "a"), "each D rank holds exactly its head of the reference KV");
        long nonce = a.remoteLeaseNonce();
        assertEquals(1, cluster.engine.count("notify d-d0->p-p0 a:2:" + nonce));
        assertEquals(1, cluster.engine.count("notify d-d1->p-p0 a:2:" + nonce));
        cluster.steps(2);
        assertNull(p.lease("a"), "released after both readers");
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void prefillTp2DecodeTp1_theDecodeRankReadsBothPrefillRanks() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").tpSize(1));
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        assertTrue(cluster.matches(d, "a"), "D's one rank holds both heads, each from its P rank");
        long nonce = a.remoteLeaseNonce();
        assertEquals(1, cluster.engine.count("notify d-d0->p-p0 a:1:" + nonce));
        assertEquals(1, cluster.engine.count("notify d-d0->p-p1 a:1:" + nonce));
        cluster.steps(2);
        assertNull(p.lease("a"));
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void prefillTp2DecodeTp4_withEightHeads() {
        ModelGeometry eightHeads = new ModelGeometry(3, 8, 16, 4, 2);
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").geometry(eightHeads).tpSize(2));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").geometry(eightHeads).tpSize(4));
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        assertTrue(cluster.matches(d, "a"));
        cluster.steps(2);
        assertNull(p.lease("a"));
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void aDuplicateNotificationFromOneReaderDoesNotCountAsTheSecondReader() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(1));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        RawPeer reader = cluster.rawPeer("reader-d0", "p");

        reader.send(0, "a:2:" + a.remoteLeaseNonce());
        reader.send(0, "a:2:" + a.remoteLeaseNonce());
        cluster.steps(2);

        assertEquals(1, p.counters().duplicateNotifications.get());
        assertEquals(LeaseState.EXPORTED, p.lease("a").state(), "one of two D ranks has read; P still holds");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }
}
