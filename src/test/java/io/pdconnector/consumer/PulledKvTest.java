package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.testing.Cluster;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 13: the pull reply's CRC-32C and reference check read the KV in place on the caller's
 * thread ({@link PulledKv}), so the step loop never recomputes reference KV. A caller reading it holds
 * a pin; the blocks of a pull released meanwhile are freed only once the pin is gone.
 */
class PulledKvTest {

    private final Cluster cluster = new Cluster();
    private final int[] tokens = prompt(3, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void theReceivedKvReadInPlaceIsWhatGetKvReturnsAndTheReferenceKv() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").tpSize(2));
        PullOutcome outcome = cluster.pull(d, "a", tokens, cluster.prefill(p, "a", tokens));
        PulledKv kv = outcome.kv();
        byte[] loopCopy = cluster.await(d.submitReadKv("a"));

        assertTrue(kv.pin());
        try {
            CRC32C crc = new CRC32C();
            crc.update(loopCopy);
            assertEquals(crc.getValue(), kv.crc32c());
            assertArrayEquals(loopCopy, kv.copy());
            assertEquals(loopCopy.length, kv.bytes());
            assertTrue(kv.matches(new ReferenceEngine(Cluster.SMALL)));
        } finally {
            kv.unpin();
        }
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void anotherPromptsKvDoesNotMatch() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        int[] other = prompt(4, 10);
        KvTransferParams params = cluster.prefill(p, "a", other);
        PulledKv kv = cluster.pull(d, "a", tokens, params).kv(); // P's KV is of `other`, the pull says `tokens`
        assertTrue(kv.pin());
        try {
            assertFalse(kv.matches(new ReferenceEngine(Cluster.SMALL)));
        } finally {
            kv.unpin();
        }
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void blocksReleasedWhileACallerReadsThemAreFreedOnlyAfterItUnpins() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        PulledKv kv = cluster.pull(d, "a", tokens, cluster.prefill(p, "a", tokens)).kv();
        int total = d.snapshot().totalBlocks();
        assertTrue(kv.pin());

        cluster.release(d, "a");
        cluster.steps(3);
        assertEquals(total - 3, d.snapshot().freeBlocks(), "a block being read is not given to another pull");
        assertTrue(kv.matches(new ReferenceEngine(Cluster.SMALL)), "and still holds the pulled KV");

        kv.unpin();
        cluster.step();
        assertEquals(total, d.snapshot().freeBlocks(), "freed in the step after the reader let go");
        assertFalse(kv.pin(), "a released pull's KV can no longer be pinned");
        assertThrows(IllegalStateException.class, kv::crc32c);
        cluster.assertNoLeak();
    }

    @Test
    void aDeclinedPullExposesNoKv() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams params = cluster.prefill(p, "a", tokens);
        cluster.await(p.facade().submitAbort("a"));
        cluster.steps(2);
        PullOutcome outcome = cluster.pull(d, "a", tokens, params);
        assertEquals(PullState.DECLINED, outcome.state());
        assertNull(outcome.kv());
        cluster.assertNoLeak();
    }
}
