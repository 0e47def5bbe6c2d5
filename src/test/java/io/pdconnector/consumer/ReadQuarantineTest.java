package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.ReadKind;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 12, hole 6 (L13): a pull that ends while one of its block READs is still in flight (timeout,
 * abort, its producer gone) answers at once, but its D blocks are not given to anyone else until
 * NIXL reports that READ terminal, or the producer's agent is gone: a cancel may "succeed" while
 * the bytes still land, and a READ NIXL cannot cancel must stay held.
 */
class ReadQuarantineTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);
    private final int[] promptB = prompt(2, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    /** Room for exactly one 10-token pull (3 blocks of 4 tokens). */
    private ConsumerFixture decoder() {
        return cluster.consumer(cluster.consumerConfig("d").blocks(3).pullTimeout(TIMEOUT));
    }

    @Test
    void L13_aTimedOutReadWhoseCancelLeaksCannotOverwriteTheNextPullsBlocks() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        KvTransferParams b = cluster.prefill(p, "b", promptB);
        cluster.engine.gates.leakCancels();
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> pullA = d.submitPull("a", promptA, a);
        cluster.steps(3);

        cluster.clock.advance(TIMEOUT);
        cluster.step();

        assertDeclined(pullA.join(), "timeout");
        assertEquals(3, d.snapshot().quarantinedBlocks(), "a's blocks wait for its READ: " + d.snapshot());
        CompletableFuture<PullOutcome> pullB = d.submitPull("b", promptB, b);
        cluster.steps(2);
        assertEquals(PullState.QUEUED, cluster.await(d.submitStatus("b")).state(),
                "b waits for blocks no READ may still write");
        cluster.engine.gates.open();
        assertEquals(PullState.RECEIVED, cluster.await(pullB).state());
        assertEquals(0, cluster.engine.landCancelledReads(), "no READ was cancelled in flight");
        assertTrue(cluster.matches(d, "b"), "b's KV is b's, whenever a's READ landed");
        assertEquals(3, d.counters().blocksQuarantined.get());
        assertEquals(1, d.counters().readsQuarantined.get());
        cluster.release(d, "b");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void L13_aReadOfAProducerThatLeftCannotOverwriteTheNextPullsBlocks() {
        ProducerFixture p1 = cluster.producer(cluster.producerConfig("p1"));
        ProducerFixture p2 = cluster.producer(cluster.producerConfig("p2"));
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p1, "a", promptA);
        KvTransferParams b = cluster.prefill(p2, "b", promptB);
        cluster.engine.gates.leakCancels();
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> pullA = d.submitPull("a", promptA, a);
        cluster.steps(3);

        cluster.await(d.facade().submitWithdrawn("p1"));

        assertDeclined(pullA.join(), "peer_gone");
        cluster.stepConsumers();
        assertEquals(0, d.snapshot().quarantinedBlocks(), "p1's agent is gone, and with it a's READ, though it"
                + " never landed: a's blocks are free again");
        CompletableFuture<PullOutcome> pullB = d.submitPull("b", promptB, b);
        cluster.engine.gates.open();
        assertEquals(PullState.RECEIVED, cluster.await(pullB).state());
        cluster.engine.landCancelledReads();
        assertTrue(cluster.matches(d, "b"), "b's KV is b's, whenever a's READ landed");
        cluster.release(d, "b");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void L13_aTimedOutPullUnderTheRecomputePolicyRecomputesIntoOtherBlocks() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d", true, LoadFailurePolicy.RECOMPUTE).blocks(6)
                .pullTimeout(TIMEOUT));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> pullA = d.submitPull("a", promptA, a);
        cluster.steps(3);
        int[] reading = cluster.await(d.submitStatus("a")).localBlocks();

        cluster.clock.advance(TIMEOUT);
        cluster.step();

        PullOutcome o = pullA.join();
        assertEquals(PullState.RECOMPUTED, o.state());
        assertTrue(Arrays.stream(o.localBlockIds()).noneMatch(b -> Arrays.stream(reading).anyMatch(r -> r == b)),
                "recomputed into blocks no READ writes: " + Arrays.toString(o.localBlockIds()) + " vs "
                        + Arrays.toString(reading));
        assertEquals(3, d.snapshot().quarantinedBlocks());
        assertTrue(cluster.matches(d, "a"));
        cluster.engine.gates.open();
        cluster.stepConsumers();
        assertEquals(0, d.snapshot().quarantinedBlocks(), "the READ ended: its blocks are free");
        assertTrue(cluster.matches(d, "a"), "the recomputed KV is untouched by the late READ");
        cluster.release(d, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void L13_aReadNixlCannotCancelDoesNotStopTheLoopAndIsReleasedOnceItEnds() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        KvTransferParams b = cluster.prefill(p, "b", promptB);
        cluster.engine.gates.refuseCancel(ReadKind.BLOCK, "p-p0");
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> pullA = d.submitPull("a", promptA, a);
        cluster.steps(3);

        cluster.clock.advance(TIMEOUT);
        assertDoesNotThrow(() -> cluster.step(), "the step loop goes on");

        assertDeclined(pullA.join(), "timeout");
        cluster.engine.gates.open();
        assertEquals(PullState.RECEIVED, cluster.pull(d, "b", promptB, b).state(), "the loop serves the next pull");
        assertTrue(cluster.matches(d, "b"));
        cluster.release(d, "b");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }
}
