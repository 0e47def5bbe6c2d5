package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A pull's status, read on D's loop: state, reason, time left and local blocks at each stage. */
class PullStatusTest {

    private final Cluster cluster = new Cluster();
    private final int[] tokens = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void statusShowsAPullReadingThenReceivedWithItsLocalBlocks() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").pullTimeout(Duration.ofSeconds(20)));
        KvTransferParams a = cluster.prefill(p, "a", tokens);
        cluster.engine.gates.close();
        var pull = d.submitPull("a", tokens, a);
        cluster.steps(2);
        cluster.clock.advance(Duration.ofSeconds(5));

        PullStatus reading = cluster.await(d.submitStatus("a"));

        assertEquals(PullState.READING, reading.state());
        assertNull(reading.reason());
        assertEquals(15_000L, reading.deadlineInMillis());
        assertEquals(3, reading.localBlocks().length);

        cluster.engine.gates.open();
        PullOutcome outcome = cluster.await(pull);
        PullStatus received = cluster.await(d.submitStatus("a"));
        assertEquals(PullState.RECEIVED, received.state());
        assertNull(received.deadlineInMillis(), "a decided pull has no deadline left");
        assertArrayEquals(outcome.localBlockIds(), received.localBlocks());
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void aRecomputedPullKeepsItsReasonAndAnUnknownOrReleasedPullIsUnknown() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d", true, LoadFailurePolicy.RECOMPUTE));
        KvTransferParams a = cluster.prefill(p, "a", tokens);
        cluster.await(p.facade().submitAbort("a"));
        cluster.pull(d, "a", tokens, a);

        PullStatus recomputed = cluster.await(d.submitStatus("a"));

        assertEquals(PullState.RECOMPUTED, recomputed.state());
        assertEquals(DeclineReason.LEASE_MISMATCH, recomputed.reason());
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitStatus("nobody")));
        cluster.release(d, "a");
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitStatus("a")));
        cluster.assertNoLeak();
    }
}
