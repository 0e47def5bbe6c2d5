package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 12, hole 4: a caller that gives up on its pull (its HTTP client went away, or it stopped
 * waiting) cancels the pull's future; D aborts that pull at once instead of reading KV nobody wants
 * and holding it until the retention runs out.
 */
class PullCallerGoneTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void aPullWhoseCallerCancelledIsAbortedAndItsBlocksComeBackWhenItsReadsEnd() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.steps(2);
        assertEquals(2, d.snapshot().blockReadsInFlight());

        pull.cancel(false);
        cluster.step();

        assertEquals(0, d.snapshot().pulls(), "the pull is gone at once");
        assertEquals(1, d.counters().callerGone.get(), "counted as a caller gone (pd_pulls_caller_gone_total)");
        assertEquals(3, d.snapshot().quarantinedBlocks(), "its blocks wait for its READs (L13): " + d.snapshot());
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitStatus("a")));
        assertEquals(2, d.counters().notificationsSent.get(), "each of P's ranks is told the pull was given up");
        assertEquals(1, d.counters().givenUpNotices.get());
        cluster.stepProducers();
        assertEquals(0, p.snapshot().liveLeases(), "P released its lease at once, not at expiry");
        cluster.engine.gates.open();
        cluster.stepConsumers();
        assertTrue(d.snapshot().idle(), "READs ended, blocks back: " + d.snapshot());
        cluster.assertNoLeak();
    }

    @Test
    void aPullCancelledBeforeItArrivesIsNeverStarted() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);

        pull.cancel(false);
        cluster.step();

        assertTrue(d.snapshot().idle(), d.snapshot().toString());
        assertEquals(0, d.counters().heartbeatsSent.get());
        assertEquals(1, d.counters().callerGone.get(), "counted as a caller gone (pd_pulls_caller_gone_total)");
        KvTransferParams b = cluster.prefill(p, "b", prompt(2, 10));
        assertEquals(PullState.RECEIVED, cluster.pull(d, "b", prompt(2, 10), b).state(), "the loop goes on");
        cluster.release(d, "b");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }
}
