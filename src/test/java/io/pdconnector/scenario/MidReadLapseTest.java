package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The lease lapses while D's block READs are in flight: loopback copies when a poll is let through
 * (the gates hold the READs, since D polls a READ in the step that posted it), so P can expire the
 * lease, free the blocks and refill them between D's post and that poll.
 */
class MidReadLapseTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    private PullOutcome pullAcrossALapse(ProducerFixture p, ConsumerFixture d) {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.engine.gates.close();
        cluster.step();
        assertTrue(cluster.engine.count("post block") > 0, "D posted its block READs");
        assertTrue(d.snapshot().blockReadsInFlight() > 0, "and they have not landed yet");

        cluster.clock.advance(Cluster.LEASE.plusSeconds(1));
        cluster.stepProducers();
        cluster.stepProducers();
        CompletableFuture<KvTransferParams> reuse = p.facade().submitPrefill("b", prompt(2, 10));
        cluster.stepProducers();
        assertArrayEquals(a.blockIds(), reuse.join().blockIds(), "B now owns the blocks D is reading");

        cluster.engine.gates.open();
        return cluster.await(pull);
    }

    @ParameterizedTest(name = "P TP{0}, D TP{1}")
    @CsvSource({"1,1", "2,1", "1,2"})
    void lapseDuringTheReadIsDeclined(int prefillTp, int decodeTp) {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(prefillTp).blocks(3, 2, 0));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").tpSize(decodeTp));

        assertDeclined(pullAcrossALapse(p, d), "lease_mismatch");

        assertEquals(1, d.counters().leaseCheckFailures.get());
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @ParameterizedTest(name = "P TP{0}, D TP{1}")
    @CsvSource({"1,1", "2,1", "1,2"})
    void withoutVerificationTheSameLapseDeliversForeignKv(int prefillTp, int decodeTp) {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(prefillTp).blocks(3, 2, 0));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d", false, LoadFailurePolicy.FAIL)
                .tpSize(decodeTp));

        assertEquals(PullState.RECEIVED, pullAcrossALapse(p, d).state());

        assertFalse(cluster.matches(d, "a"), "the bytes are B's, not A's");
        cluster.release(d, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }
}
