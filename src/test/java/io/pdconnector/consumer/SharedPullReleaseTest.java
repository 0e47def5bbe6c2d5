package io.pdconnector.consumer;

import static io.pdconnector.consumer.SharedPullTest.assertRefused;
import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The release of a pull D's ranks share: its D blocks are freed only once every rank has released
 * them (each rank copies its own slice); a rank releasing an undecided pull aborts it for every rank;
 * the retention frees what ranks never released; only the caller that started a pull aborts it by
 * going away. P and D at TP 2, 3 blocks a pull.
 */
class SharedPullReleaseTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);
    private final ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));
    private final ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").tpSize(2));

    @AfterEach
    void close() {
        cluster.close();
    }

    /** The READs are held back (gates closed); rank 0 starts the pull, rank 1 joins it; neither is answered yet. */
    private List<CompletableFuture<PullOutcome>> bothRanksAskWhileReadsAreHeld(KvTransferParams a) {
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> rank0 = d.submitPull("a", promptA, a, 0);
        cluster.step();
        CompletableFuture<PullOutcome> rank1 = d.submitPull("a", promptA, a, 1);
        cluster.step();
        return List.of(rank0, rank1);
    }

    /** Both ranks have the received pull; returns D's free blocks while it is held. */
    private int pulledByBothRanks(KvTransferParams a) {
        assertEquals(PullState.RECEIVED, cluster.await(d.submitPull("a", promptA, a, 0)).state());
        assertEquals(PullState.RECEIVED, cluster.await(d.submitPull("a", promptA, a, 1)).state());
        int held = d.snapshot().freeBlocks();
        assertEquals(d.snapshot().totalBlocks() - 3, held);
        return held;
    }

    @Test
    void theBlocksAreFreedOnlyWhenTheLastRankReleases() {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        int held = pulledByBothRanks(a);

        cluster.await(d.submitReleaseRank("a", 1));
        assertEquals(held, d.snapshot().freeBlocks(), "rank 0 still copies its slice");
        assertEquals(PullState.RECEIVED, cluster.await(d.submitStatus("a")).state());

        cluster.await(d.submitReleaseRank("a", 0));
        assertEquals(d.snapshot().totalBlocks(), d.snapshot().freeBlocks(), "the last release freed them");
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitStatus("a")));
        cluster.assertNoLeak();
    }

    @Test
    void aRankReleasingTwiceIsRefusedAndChangesNothing() {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        int held = pulledByBothRanks(a);
        cluster.await(d.submitReleaseRank("a", 0));

        assertRefused(SharedPulls.RANK_ALREADY_RELEASED, () -> cluster.await(d.submitReleaseRank("a", 0)));
        assertRefused(SharedPulls.RANK_ALREADY_RELEASED, () -> cluster.await(d.submitPull("a", promptA, a, 0)));

        assertEquals(held, d.snapshot().freeBlocks());
        cluster.await(d.submitReleaseRank("a", 1));
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitReleaseRank("a", 1)),
                "once every rank released, the pull is unknown");
        cluster.assertNoLeak();
    }

    @Test
    void aRanklessReleaseReleasesThePullForEveryRank() {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        pulledByBothRanks(a);

        cluster.await(d.submitAbort("a"));

        assertEquals(d.snapshot().totalBlocks(), d.snapshot().freeBlocks());
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitReleaseRank("a", 0)));
        cluster.assertNoLeak();
    }

    @Test
    void aRankReleasingAnUndecidedPullAbortsItForBothRanks() {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        List<CompletableFuture<PullOutcome>> asked = bothRanksAskWhileReadsAreHeld(a);
        CompletableFuture<PullOutcome> rank0 = asked.get(0);
        CompletableFuture<PullOutcome> rank1 = asked.get(1);

        cluster.await(d.submitReleaseRank("a", 1));

        assertDeclined(rank0.join(), "aborted");
        assertDeclined(rank1.join(), "aborted");
        assertEquals(0, d.snapshot().pulls(), "both ranks are done with it: forgotten");
        assertEquals(1, d.counters().givenUpNotices.get(), "P is told the pull was given up");
        cluster.engine.gates.open();
        cluster.stepConsumers();
        assertTrue(d.snapshot().idle(), "READs ended, blocks back: " + d.snapshot());
        cluster.assertNoLeak();
    }

    @Test
    void aRankAskingAfterAnotherRankAbortedThePullGetsTheAbortAndNoSecondPull() {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> rank0 = d.submitPull("a", promptA, a, 0);
        cluster.step();
        cluster.await(d.submitReleaseRank("a", 0));
        assertDeclined(rank0.join(), "aborted");
        cluster.engine.gates.open();
        cluster.stepConsumers();
        long reads = cluster.engine.count("post ");

        assertDeclined(cluster.await(d.submitPull("a", promptA, a, 1)), "aborted");

        assertEquals(reads, cluster.engine.count("post "), "no READ for the late rank");
        assertEquals(0, d.snapshot().pulls());
        cluster.assertNoLeak();
    }

    @Test
    void theRetentionFreesAPullOnlyOneRankReleased() {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        int held = pulledByBothRanks(a);
        cluster.await(d.submitReleaseRank("a", 0));

        cluster.clock.advance(d.config().retention().minusSeconds(1));
        cluster.step();
        assertEquals(held, d.snapshot().freeBlocks(), "held until the retention runs out");
        cluster.clock.advance(Duration.ofSeconds(1));
        cluster.step();

        assertEquals(d.snapshot().totalBlocks(), d.snapshot().freeBlocks(), "the blocks came back");
        assertEquals(1, d.counters().expiredUnread.get());
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitReleaseRank("a", 1)),
                "rank 1's release comes too late: 404, its copy cannot be trusted");
        cluster.assertNoLeak();
    }

    @Test
    void aJoinedRankWhoseCallerGoesAwayOnlyStopsWaiting() {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        List<CompletableFuture<PullOutcome>> asked = bothRanksAskWhileReadsAreHeld(a);
        CompletableFuture<PullOutcome> rank0 = asked.get(0);
        CompletableFuture<PullOutcome> rank1 = asked.get(1);

        rank1.cancel(false);
        cluster.step();
        cluster.engine.gates.open();

        assertEquals(PullState.RECEIVED, cluster.await(rank0).state(), "the pull went on");
        assertEquals(0, d.counters().callerGone.get());
        cluster.await(d.submitReleaseRank("a", 0));
        assertEquals(d.snapshot().totalBlocks() - 3, d.snapshot().freeBlocks(), "rank 1 did not release");
        cluster.await(d.submitReleaseRank("a", 1));
        cluster.assertNoLeak();
    }

    @Test
    void theCallerThatStartedThePullGoingAwayAbortsItForEveryRank() {
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        List<CompletableFuture<PullOutcome>> asked = bothRanksAskWhileReadsAreHeld(a);
        CompletableFuture<PullOutcome> rank0 = asked.get(0);
        CompletableFuture<PullOutcome> rank1 = asked.get(1);

        rank0.cancel(false);
        cluster.step();

        assertDeclined(rank1.join(), "aborted");
        assertEquals(1, d.counters().callerGone.get());
        assertEquals(0, d.snapshot().pulls(), "both ranks have the answer");
        assertEquals(1, d.counters().givenUpNotices.get(), "P is told the pull was given up");
        cluster.engine.gates.open();
        cluster.stepConsumers();
        cluster.assertNoLeak();
    }
}
