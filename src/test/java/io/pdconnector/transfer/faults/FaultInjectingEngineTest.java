package io.pdconnector.transfer.faults;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import java.time.Duration;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The fault-injecting decorator over the loopback engine, with P and D stepped by the test. */
class FaultInjectingEngineTest {

    private Cluster cluster;
    private FaultInjectingEngine faults;
    private final int[] tokens = prompt(3, 10);

    private void start(FaultPlan plan) {
        faults = new FaultInjectingEngine(new LoopbackTransferEngine(), plan);
        cluster = new Cluster(faults);
    }

    private static FaultPlan every(FaultPlan.Kind kind, OptionalInt rank, FaultPlan.Action action, Duration d) {
        return new FaultPlan(kind, rank, action, d, 0, 1, 1);
    }

    @AfterEach
    void close() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private PullOutcome pullOnce(int producerTp, String id) {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(producerTp));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").tpSize(1));
        KvTransferParams params = cluster.prefill(p, id, tokens);
        return cluster.pull(d, id, tokens, params);
    }

    @Test
    void aStruckBlockReadDeclinesThePullAsTransferFailedAndLeaksNothing() {
        start(every(FaultPlan.Kind.BLOCK, OptionalInt.empty(), FaultPlan.Action.FAIL, Duration.ZERO));
        assertDeclined(pullOnce(1, "a"), "transfer_failed");
        assertEquals(1, faults.struck());
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void aStruckSlotReadDeclinesThePullAsSlotReadFailed() {
        start(every(FaultPlan.Kind.SLOT, OptionalInt.empty(), FaultPlan.Action.FAIL, Duration.ZERO));
        assertDeclined(pullOnce(1, "a"), "slot_read_failed");
        assertEquals(1, faults.struck(), "only the slot READ was a candidate");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void onlyReadsFromTheConfiguredRankAreStruck() {
        start(every(FaultPlan.Kind.BLOCK, OptionalInt.of(1), FaultPlan.Action.FAIL, Duration.ZERO));
        assertDeclined(pullOnce(2, "a"), "transfer_failed");
        assertEquals(1, faults.struck(), "rank 0's READ passed, rank 1's was struck");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void aDelayedReadKeepsThePullReadingUntilItsDelayPassesThenItIsReceived() throws InterruptedException {
        // Long enough that the three steps below end inside it on a loaded machine (a JIT pass, a GC pause).
        start(every(FaultPlan.Kind.BLOCK, OptionalInt.empty(), FaultPlan.Action.DELAY, Duration.ofSeconds(2)));
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams params = cluster.prefill(p, "a", tokens);
        CompletableFuture<PullOutcome> pull = d.submitPull("a", tokens, params);
        cluster.steps(3);
        assertFalse(pull.isDone(), "the delayed READ is still reported in flight");
        assertEquals(1, d.snapshot().blockReadsInFlight());
        for (int i = 0; i < 500 && !pull.isDone(); i++) {
            Thread.sleep(10);
            cluster.steps(1);
        }
        assertEquals(PullState.RECEIVED, cluster.await(pull).state());
        assertTrue(cluster.matches(d, "a"), "the delayed READ's bytes are the prompt's KV");
        cluster.release(d, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void aHeldPostStallsItsCallerForTheDuration() {
        start(every(FaultPlan.Kind.SLOT, OptionalInt.empty(), FaultPlan.Action.HOLD, Duration.ofMillis(200)));
        long start = System.nanoTime();
        PullOutcome o = pullOnce(1, "a");
        assertEquals(PullState.RECEIVED, o.state(), "a hold delays, it does not fail");
        assertTrue(System.nanoTime() - start >= Duration.ofMillis(200).toNanos(), "the step stalled");
        assertEquals(1, faults.struck());
    }

    @Test
    void everyNthStrikesEveryNthCandidateAndProbabilityIsSeeded() {
        FaultInjectingEngine third = new FaultInjectingEngine(new LoopbackTransferEngine(),
                new FaultPlan(FaultPlan.Kind.ANY, OptionalInt.empty(), FaultPlan.Action.FAIL, Duration.ZERO, 0, 3, 1));
        int hits = 0;
        for (int i = 0; i < 9; i++) {
            hits += third.strikes(i % 2 == 0, 0) ? 1 : 0;
        }
        assertEquals(3, hits);
        third.close();
        assertEquals(draws(7), draws(7), "the same seed strikes the same READs");
    }

    private static String draws(long seed) {
        FaultInjectingEngine e = new FaultInjectingEngine(new LoopbackTransferEngine(),
                new FaultPlan(FaultPlan.Kind.ANY, OptionalInt.empty(), FaultPlan.Action.FAIL, Duration.ZERO, 0.5, 0, seed));
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < 64; i++) {
            b.append(e.strikes(false, 0) ? '1' : '0');
        }
        e.close();
        return b.toString();
    }

    @Test
    void aPlanWithoutExactlyOneChoiceOrWithBadNumbersIsRefusedNamingTheKey() {
        var e = assertThrows(IllegalArgumentException.class, () -> new FaultPlan(FaultPlan.Kind.ANY,
                OptionalInt.empty(), FaultPlan.Action.FAIL, Duration.ZERO, 0, 0, 1));
        assertTrue(e.getMessage().contains("pd.faults.every-nth"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new FaultPlan(FaultPlan.Kind.ANY, OptionalInt.empty(),
                FaultPlan.Action.FAIL, Duration.ZERO, 0.5, 2, 1));
        assertThrows(IllegalArgumentException.class, () -> new FaultPlan(FaultPlan.Kind.ANY, OptionalInt.empty(),
                FaultPlan.Action.FAIL, Duration.ZERO, 1.5, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new FaultPlan(FaultPlan.Kind.ANY, OptionalInt.of(-1),
                FaultPlan.Action.FAIL, Duration.ZERO, 0, 1, 1));
    }

    @Test
    void theSourceRankIsReadFromAProducersAgentName() {
        assertEquals(3, FaultInjectingAgent.sourceRank("prod-a-p3"));
        assertEquals(-1, FaultInjectingAgent.sourceRank("d-d0"));
        assertEquals(-1, FaultInjectingAgent.sourceRank("x-p"));
    }
}
