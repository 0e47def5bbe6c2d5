package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.DeclineReason;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.kv.ModelGeometry;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The hole this product closes, on the default model geometry: P's lease lapses, its blocks go to
 * other prompts, and D pulls with the saved params.
 */
class SeedScenarioTest {

    private static final int TOKENS = 40; // 3 blocks of 16
    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, TOKENS);

    @AfterEach
    void close() {
        cluster.close();
    }

    private ProducerFixture smallProducer() {
        return cluster.producer(cluster.producerConfig("p").geometry(ModelGeometry.DEFAULT).blocks(6, 2, 0));
    }

    private ConsumerFixture decoder(boolean verify, LoadFailurePolicy policy) {
        return cluster.consumer(cluster.consumerConfig("d", verify, policy).geometry(ModelGeometry.DEFAULT));
    }

    /** Prefill A, let its lease lapse unheartbeaten, prefill others until A's blocks hold other KV. */
    private KvTransferParams lapseAndReuse(ProducerFixture p) {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.lapseAll();
        assertTrue(p.snapshot().idle(), "A's lease was reaped");
        KvTransferParams b = cluster.prefill(p, "b", prompt(2, TOKENS));
        cluster.prefill(p, "c", prompt(3, TOKENS));
        assertArrayEquals(a.blockIds(), b.blockIds(), "B reuses A's blocks");
        return a;
    }

    @Test
    void verificationOff_receivesSomeoneElsesKv() {
        ProducerFixture p = smallProducer();
        ConsumerFixture d = decoder(false, LoadFailurePolicy.FAIL);
        KvTransferParams a = lapseAndReuse(p);

        PullOutcome o = cluster.pull(d, "a", promptA, a);

        assertEquals(PullState.RECEIVED, o.state());
        assertFalse(cluster.matches(d, "a"), "unverified, D got B's KV and reported success");
        cluster.release(d, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void verificationOnWithFail_declinesLeaseMismatch() {
        ProducerFixture p = smallProducer();
        ConsumerFixture d = decoder(true, LoadFailurePolicy.FAIL);
        KvTransferParams a = lapseAndReuse(p);

        PullOutcome o = cluster.pull(d, "a", promptA, a);

        assertDeclined(o, "lease_mismatch");
        assertEquals(1, d.counters().leaseCheckFailures.get());
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void verificationOnWithRecompute_endsWithTheRightKv() {
        ProducerFixture p = smallProducer();
        ConsumerFixture d = decoder(true, LoadFailurePolicy.RECOMPUTE);
        KvTransferParams a = lapseAndReuse(p);

        PullOutcome o = cluster.pull(d, "a", promptA, a);

        assertEquals(PullState.RECOMPUTED, o.state());
        assertEquals(DeclineReason.LEASE_MISMATCH, o.reason());
        assertTrue(cluster.matches(d, "a"));
        cluster.release(d, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void controlWithoutWait_receivesTheRightKvAndReleasesP() {
        ProducerFixture p = smallProducer();
        ConsumerFixture d = decoder(true, LoadFailurePolicy.FAIL);
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        PullOutcome o = cluster.pull(d, "a", promptA, a);

        assertEquals(PullState.RECEIVED, o.state());
        assertTrue(cluster.matches(d, "a"));
        cluster.steps(2);
        assertTrue(p.snapshot().idle(), "the read notification released A without waiting for expiry");
        assertEquals(1, p.counters().leasesReleasedByReaders.get());
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }
}
