package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.PdException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * A pull D's tensor-parallel ranks share: each rank's engine worker asks for it with its decode rank,
 * D reads P once (one block READ per P rank, one slot READ per P rank) and every rank gets the same
 * outcome; a rank asking after a decline gets that decline, never a second pull. P and D at TP 2.
 */
class SharedPullTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);
    private final ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2));

    @AfterEach
    void close() {
        cluster.close();
    }

    private ConsumerFixture decoder() {
        return cluster.consumer(cluster.consumerConfig("d").tpSize(2));
    }

    @Test
    void twoRanksJoinOnePullReadOnceAndGetTheSameBlocks() {
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> rank0 = d.submitPull("a", promptA, a, 0);
        cluster.step();
        CompletableFuture<PullOutcome> rank1 = d.submitPull("a", promptA, a, 1);
        cluster.step();
        assertFalse(rank1.isDone(), "the joiner waits for the decision with the rank that started the pull");

        cluster.engine.gates.open();
        PullOutcome first = cluster.await(rank0);
        PullOutcome joined = cluster.await(rank1);

        assertEquals(PullState.RECEIVED, first.state());
        assertEquals(PullState.RECEIVED, joined.state());
        assertArrayEquals(first.localBlockIds(), joined.localBlockIds(), "the same D blocks");
        assertEquals(2, cluster.engine.count("post block"), "one block READ per P rank, for both D ranks");
        assertEquals(2, cluster.engine.count("post slot"), "one slot READ per P rank: one check for both");
        assertEquals(1, d.counters().received.get());
        assertEquals(1, d.counters().joins.get());
        assertTrue(cluster.matches(d, "a"), "the reference KV of the prompt");
        release(d, "a", 0, 1);
        cluster.assertNoLeak();
    }

    @Test
    void aRankAskingAfterTheDecisionIsAnsweredAtOnceWithoutAnotherRead() {
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        PullOutcome first = cluster.await(d.submitPull("a", promptA, a, 1));
        long reads = cluster.engine.count("post ");

        PullOutcome late = cluster.await(d.submitPull("a", promptA, a, 0));

        assertEquals(PullState.RECEIVED, late.state());
        assertArrayEquals(first.localBlockIds(), late.localBlockIds());
        assertEquals(reads, cluster.engine.count("post "), "no READ of any kind for the late rank");
        release(d, "a", 0, 1);
        cluster.assertNoLeak();
    }

    @Test
    void aRankAskingAfterADeclineGetsTheSameDeclineAndNoSecondPullStarts() {
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.await(p.facade().submitAbort("a")); // P zeroes the slots: the lease check fails
        cluster.steps(2);
        assertDeclined(cluster.await(d.submitPull("a", promptA, a, 0)), "lease_mismatch");
        assertEquals(d.snapshot().totalBlocks(), d.snapshot().freeBlocks(), "a decline frees the blocks at once");
        assertEquals(1, d.snapshot().pulls(), "yet stays known for the rank yet to ask");
        long reads = cluster.engine.count("post ");

        assertDeclined(cluster.await(d.submitPull("a", promptA, a, 1)), "lease_mismatch");

        assertEquals(reads, cluster.engine.count("post "), "no second pull: no READ");
        assertEquals(1, d.counters().declined.get());
        assertEquals(1, d.counters().leaseCheckFailures.get());
        assertEquals(0, d.snapshot().pulls(), "forgotten once every rank has the answer");
        cluster.assertNoLeak();
    }

    @Test
    void aDeclineNoOtherRankAsksForIsForgottenAtTheRetentionWithoutCountingAsUnread() {
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.await(p.facade().submitAbort("a"));
        cluster.steps(2);
        assertDeclined(cluster.await(d.submitPull("a", promptA, a, 0)), "lease_mismatch");

        cluster.clock.advance(d.config().retention());
        cluster.step();

        assertEquals(0, d.snapshot().pulls());
        assertEquals(0, d.counters().expiredUnread.get(), "a decline held no KV to read");
        cluster.assertNoLeak();
    }

    @Test
    void aRecomputedPullIsHeldForEveryRankLikeAReceivedOne() {
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d", true, LoadFailurePolicy.RECOMPUTE).tpSize(2));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.await(p.facade().submitAbort("a"));
        cluster.steps(2);

        PullOutcome first = cluster.await(d.submitPull("a", promptA, a, 0));
        PullOutcome late = cluster.await(d.submitPull("a", promptA, a, 1));

        assertEquals(PullState.RECOMPUTED, first.state());
        assertEquals(PullState.RECOMPUTED, late.state());
        assertArrayEquals(first.localBlockIds(), late.localBlockIds());
        assertEquals(1, d.counters().recomputed.get());
        cluster.await(d.submitReleaseRank("a", 0));
        assertEquals(d.snapshot().totalBlocks() - 3, d.snapshot().freeBlocks(), "rank 1 still copies");
        cluster.await(d.submitReleaseRank("a", 1));
        cluster.assertNoLeak();
    }

    @Test
    void theSameRankAskingTwiceIsRefusedAndChangesNothing() {
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> rank0 = d.submitPull("a", promptA, a, 0);
        cluster.step();
        ConsumerSnapshot before = d.snapshot();

        assertRefused(SharedPulls.RANK_ALREADY_ASKED, () -> cluster.await(d.submitPull("a", promptA, a, 0)));

        assertEquals(before, d.snapshot());
        assertFalse(rank0.isDone(), "the pull goes on");
        cluster.engine.gates.open();
        assertEquals(PullState.RECEIVED, cluster.await(rank0).state());
        assertRefused(SharedPulls.RANK_ALREADY_ASKED, () -> cluster.await(d.submitPull("a", promptA, a, 0)));
        assertEquals(0, d.counters().joins.get());
        release(d, "a", 0, 1);
        cluster.assertNoLeak();
    }

    @Test
    void anAskWithOtherParamsOrTokensIsRefusedAndChangesNothing() {
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        PullOutcome first = cluster.await(d.submitPull("a", promptA, a, 0));
        Map<String, Object> other = new HashMap<>(a.toMap());
        other.put("remote_lease_nonce", a.remoteLeaseNonce() + 1);
        int[] otherPrompt = promptA.clone();
        otherPrompt[0]++;
        ConsumerSnapshot before = d.snapshot();

        assertRefused(SharedPulls.PULL_MISMATCH,
                () -> cluster.await(d.submitPull("a", promptA, KvTransferParams.fromMap(other), 1)));
        assertRefused(SharedPulls.PULL_MISMATCH, () -> cluster.await(d.submitPull("a", otherPrompt, a, 1)));

        assertEquals(before, d.snapshot());
        assertArrayEquals(first.localBlockIds(), cluster.await(d.submitPull("a", promptA, a, 1)).localBlockIds(),
                "rank 1 may still join with the pull's own params");
        release(d, "a", 0, 1);
        cluster.assertNoLeak();
    }

    @Test
    void routersAndRanksDoNotShareAPull() {
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        KvTransferParams b = cluster.prefill(p, "b", prompt(2, 10));
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());
        assertEquals(PullState.RECEIVED, cluster.await(d.submitPull("b", prompt(2, 10), b, 0)).state());
        ConsumerSnapshot before = d.snapshot();

        assertRefused(SharedPulls.NOT_RANK_SHARED, () -> cluster.await(d.submitPull("a", promptA, a, 1)));
        assertRefused(SharedPulls.NOT_RANK_SHARED, () -> cluster.await(d.submitReleaseRank("a", 0)));
        assertRefused("wrong-state", () -> cluster.pull(d, "b", prompt(2, 10), b));

        assertEquals(before, d.snapshot());
        cluster.release(d, "a");
        release(d, "b", 0, 1);
        cluster.assertNoLeak();
    }

    @Test
    void aDecodeRankOutsideTheDecodersRanksIsRefusedBeforeTheLoop() {
        ConsumerFixture d = decoder();
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        for (int rank : new int[] {-1, 2}) {
            assertRefused(ConsumerFacade.INVALID_DECODE_RANK,
                    () -> d.facade().submitPull("a", promptA, a, OptionalInt.of(rank)));
            assertRefused(ConsumerFacade.INVALID_DECODE_RANK, () -> d.submitReleaseRank("a", rank));
        }
        InvalidInputException e = assertThrows(InvalidInputException.class, () -> d.submitPull("a", promptA, a, 2));
        assertEquals("decode_rank 2 is not a rank of this decoder: pd.tp-size is 2, so it is 0 to 1", e.getMessage());

        assertEquals(0, d.doWork(), "nothing was queued");
        assertTrue(d.snapshot().idle());
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    private void release(ConsumerFixture d, String id, int... ranks) {
        for (int r : ranks) {
            cluster.await(d.submitReleaseRank(id, r));
        }
    }

    static void assertRefused(String reason, Executable call) {
        PdException e = assertThrows(PdException.class, call);
        assertEquals(reason, e.reason(), e.getMessage());
    }
}
