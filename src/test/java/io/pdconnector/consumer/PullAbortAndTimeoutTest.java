package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.producer.LeaseState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.ReadKind;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A pull that ends early gives back its READs and blocks, and does not tell P it read. */
class PullAbortAndTimeoutTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void abortReleasesInFlightReadsAndBlocks() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.engine.gates.close(); // loopback READs land when polled, in the step that posts them
        cluster.step();
        assertEquals(2, d.snapshot().blockReadsInFlight());

        cluster.engine.gates.open();
        cluster.await(d.submitAbort("a"));

        assertDeclined(pull.join(), "aborted");
        assertTrue(d.snapshot().idle(), d.snapshot().toString());
        assertEquals(LeaseState.EXPORTED, p.lease("a").state(), "P was not told anything was read");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void pullWhoseReadsNeverCompleteTimesOutAndCancelsThem() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").pullTimeout(Duration.ofSeconds(10)));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.steps(3);
        assertFalse(pull.isDone());

        cluster.clock.advance(Duration.ofSeconds(10));
        cluster.step();

        assertTimedOutAndNothingHeldOnceReadsLand(d, pull);
    }

    /**
     * A slot READ whose post hangs (a stuck call) until the pull's deadline has passed is not failed
     * in the next step as if it had been in flight all that time: the pull times out, as it did, and
     * nothing calls it a failed lease check. Found in CI, where FaultInjectionIT held a slot READ's post
     * for the pull timeout and the pull came back declined as slot_read_failed.
     */
    @Test
    void aSlotReadWhosePostHangsPastThePullsDeadline_thePullTimesOut_notAFailedSlotRead() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        Duration timeout = Duration.ofSeconds(10);
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").pullTimeout(timeout));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.hangNextPost(ReadKind.SLOT, "p-p0", () -> {
            cluster.clock.advance(timeout);
            cluster.engine.gates.close(); // and once posted, it stays in flight
        });
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.step();
        assertFalse(pull.isDone(), "the slot READ was posted, after its hang, and is in flight");

        cluster.step();

        assertTimedOutAndNothingHeldOnceReadsLand(d, pull);
    }

    /** Its answer is a timeout, not a lease check failure; once the READs still held land, nothing is held. */
    private void assertTimedOutAndNothingHeldOnceReadsLand(ConsumerFixture d, CompletableFuture<PullOutcome> pull) {
        assertDeclined(pull.join(), "timeout");
        assertEquals(0, d.counters().leaseCheckFailures.get(), "a timeout is not a lease check failure");
        cluster.engine.gates.open();
        cluster.lapseAll();
        cluster.assertNoLeak();
    }
}
