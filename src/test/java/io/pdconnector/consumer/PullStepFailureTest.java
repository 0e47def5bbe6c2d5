package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.PdException;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.Gates;
import io.pdconnector.testing.ReadKind;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 12: an unexpected exception (a bug's, not a transfer error) while D's step handles one pull
 * fails that pull alone: its caller gets an internal error (500) instead of a hang, its READs and
 * blocks are released, and the loop goes on serving the pulls before and after it.
 */
class PullStepFailureTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);
    private final int[] promptB = prompt(2, 10);
    private final int[] promptC = prompt(3, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    private void assertFailsOnlyB(Gates.At at, ReadKind kind, Throwable thrown) {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        KvTransferParams b = cluster.prefill(p, "b", promptB);
        KvTransferParams c = cluster.prefill(p, "c", promptC);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        cluster.engine.gates.crashNext(at, kind, "p-p1", thrown);
        CompletableFuture<PullOutcome> pullB = d.submitPull("b", promptB, b);
        for (int i = 0; i < 20 && !pullB.isDone(); i++) {
            stepSurviving();
        }
        assertTrue(pullB.isCompletedExceptionally(), "the caller gets an answer, not a hang: " + pullB);
        Throwable e = pullB.exceptionNow();
        assertTrue(e instanceof RuntimeException && !(e instanceof PdException),
                "the caller gets an internal error (500), not a domain answer: " + e);
        assertEquals(1, d.counters().pullsFailed.get());

        assertEquals(PullState.RECEIVED, cluster.pull(d, "c", promptC, c).state(), "the loop goes on");
        assertTrue(cluster.matches(d, "a"));
        assertTrue(cluster.matches(d, "c"));
        cluster.release(d, "a");
        cluster.release(d, "c");
        assertEquals(0, d.snapshot().pulls(), "the failed pull is forgotten");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    /** One step, which must not throw: a step that throws stops the real loop for good. */
    private void stepSurviving() {
        try {
            cluster.step();
        } catch (Throwable t) { // an OutOfMemoryError too, which JUnit would rethrow as unrecoverable
            throw new AssertionError("the step loop died: " + t, t instanceof Error ? null : t);
        }
    }

    @Test
    void blockReadPollThatThrowsFailsThatPullOnly() {
        assertFailsOnlyB(Gates.At.POLL, ReadKind.BLOCK, new IllegalStateException("injected bug"));
    }

    @Test
    void blockReadPostThatThrowsFailsThatPullOnly() {
        assertFailsOnlyB(Gates.At.POST, ReadKind.BLOCK, new IndexOutOfBoundsException("injected bug"));
    }

    @Test
    void slotReadPollOutOfMemoryFailsThatPullOnly() {
        assertFailsOnlyB(Gates.At.POLL, ReadKind.SLOT, new OutOfMemoryError("injected"));
    }

    @Test
    void slotReadPostThatThrowsFailsThatPullOnly() {
        assertFailsOnlyB(Gates.At.POST, ReadKind.SLOT, new IllegalArgumentException("injected bug"));
    }
}
