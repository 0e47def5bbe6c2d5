package io.pdconnector.producer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullState;
import io.pdconnector.error.PdException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 12: an unexpected exception while P's step handles one request (here the L2 check at an
 * engine's finish, which throws when a rank's slot lost the nonce) fails that request alone: its
 * caller gets an internal error (500), its lease is released through the normal exit (slot zeroed,
 * blocks and slot back), and the loop goes on serving the requests before and after it.
 */
class LeaseStepFailureTest {

    private final Cluster cluster = new Cluster();

    @AfterEach
    void close() {
        cluster.close();
    }

    /** One step, which must not throw: a step that throws stops the real loop for good. */
    private void stepSurviving() {
        try {
            cluster.step();
        } catch (Throwable t) {
            throw new AssertionError("the step loop died: " + t, t instanceof Error ? null : t);
        }
    }

    @Test
    void finishThatThrowsFailsThatRequestOnlyAndReleasesItsLease() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        int[] promptA = prompt(1, 10);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.await(p.facade().submitReserve("r", 10));
        int slot = p.lease("r").slot();
        cluster.engine.region("p-p1", "lease-slots").orElseThrow().segment()
                .set(ValueLayout.JAVA_LONG, (long) slot * Long.BYTES, 42L); // a stray write: rank 1 lost the nonce

        CompletableFuture<KvTransferParams> finish = p.facade().submitFinish("r");
        for (int i = 0; i < 5 && !finish.isDone(); i++) {
            stepSurviving();
        }
        assertTrue(finish.isCompletedExceptionally(), "the engine gets an answer, not a hang: " + finish);
        Throwable e = finish.exceptionNow();
        assertTrue(e instanceof RuntimeException && !(e instanceof PdException), "an internal error (500): " + e);
        assertEquals(1, p.counters().requestsFailed.get());
        stepSurviving();
        assertNull(p.lease("r"), "the failed request's lease was released, not left to its reservation timeout");
        assertEquals(0, p.slotValue(1, slot));

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());
        int[] promptB = prompt(2, 10);
        KvTransferParams b = cluster.prefill(p, "b", promptB);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "b", promptB, b).state(), "the loop goes on");
        cluster.release(d, "a");
        cluster.release(d, "b");
        cluster.assertNoLeak();
    }
}
