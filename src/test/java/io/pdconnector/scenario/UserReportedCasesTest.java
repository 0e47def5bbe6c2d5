package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.producer.LeaseState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.ReadKind;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Failures users of other P/D connectors reported, each as the case pd-connector must get right
 * (named after the report): on loopback, producers and consumers stepped by the test.
 */
class UserReportedCasesTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    private ProducerFixture producer(int tp) {
        return cluster.producer(cluster.producerConfig("p").tpSize(tp));
    }

    private ConsumerFixture decoder(int tp) {
        return cluster.consumer(cluster.consumerConfig("d").tpSize(tp));
    }

    /**
     * vLLM PR #41269 (and #46283): a pull D gives up, aborted before or during its READs or timed out,
     * releases P's lease by notification at once, not only when the lease expires.
     */
    @Test
    void vllm41269_aPullAbortedOrTimedOutOnDReleasesPsLeaseByNotification() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = decoder(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close(); // a's READs stay in flight
        CompletableFuture<PullOutcome> pulling = d.submitPull("a", promptA, a);
        cluster.steps(3);
        assertEquals(1, p.snapshot().liveLeases());
        cluster.await(d.submitAbort("a"));
        assertDeclined(cluster.await(pulling), "aborted");
        cluster.steps(3);
        assertEquals(0, p.snapshot().liveLeases(), "the abort released P's lease, well before it expires");
        cluster.engine.gates.open();

        int[] promptB = prompt(2, 10);
        KvTransferParams b = cluster.prefill(p, "b", promptB);
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> slow = d.submitPull("b", promptB, b);
        cluster.steps(3);
        cluster.clock.advance(Duration.ofSeconds(121)); // D's pull timeout, with heartbeats keeping P's lease
        cluster.steps(3);
        assertDeclined(cluster.await(slow), "timeout");
        cluster.steps(3);
        assertEquals(0, p.snapshot().liveLeases(), "the timed-out pull released P's lease too");
        cluster.engine.gates.open();
        cluster.steps(3);
        cluster.assertNoLeak();
    }

    /**
     * vLLM PR #56640: when D's own prefix cache already holds the whole prompt, the pull has no block
     * to READ ({@code remote_block_ids: [[]]}). It is still decided: received only if P's lease slot
     * still holds the nonce (the slot READ), and P is told at once so it releases its blocks.
     */
    @Test
    void vllm56640_aPullThatNeedsNoReadIsStillDecidedAndReleasesP() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(1);
        KvTransferParams a = nothingToRead(cluster.prefill(p, "a", promptA));
        int before = cluster.engine.events.size();

        PullOutcome o = cluster.pull(d, "a", promptA, a);

        assertEquals(PullState.RECEIVED, o.state(), "decided, with its lease checked: " + o);
        assertEquals(0, o.localBlockIds().length, "nothing read, so no D block held");
        var events = cluster.engine.events.subList(before, cluster.engine.events.size());
        assertTrue(events.stream().noneMatch(e -> e.startsWith("post block")), "no block READ: " + events);
        assertEquals(2, events.stream().filter(e -> e.startsWith("post slot")).count(),
                "the slot of each of P's ranks was READ: " + events);
        cluster.steps(3);
        assertEquals(0, p.snapshot().liveLeases(), "P released at D's notification, not at expiry");
        cluster.release(d, "a");

        KvTransferParams b = nothingToRead(cluster.prefill(p, "b", promptA));
        cluster.lapseAll(); // b's lease lapses first: its slot no longer holds the nonce
        assertDeclined(cluster.pull(d, "b", promptA, b), "lease_mismatch");
        cluster.assertNoLeak();
    }

    /** The params as a decoder whose prefix cache holds the whole prompt forwards them. */
    private static KvTransferParams nothingToRead(KvTransferParams p) {
        return new KvTransferParams(p.doRemotePrefill(), p.doRemoteDecode(), p.remoteEngineId(),
                p.remoteRequestId(), java.util.List.of(java.util.List.of()), p.remoteHost(), p.remotePort(),
                p.tpSize(), p.remoteNumTokens(), p.transferMode(), p.remoteLeaseSlot(), p.remoteLeaseNonce(),
                p.extra());
    }

    /** vLLM #52234: a load that failed or was declined must never be answered with KV. */
    @Test
    void vllm52234_aFailedOrDeclinedLoadNeverAnswersWithKv() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = decoder(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.failNext(ReadKind.BLOCK, "p-p0");

        assertDeclined(cluster.pull(d, "a", promptA, a), "transfer_failed");
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitReadKv("a")),
                "a transfer-failed pull has no KV to read");

        cluster.lapseAll();
        KvTransferParams b = cluster.prefill(p, "b", promptA);
        cluster.lapseAll(); // b's lease lapses before the pull: its slot no longer holds its nonce
        assertDeclined(cluster.pull(d, "b", promptA, b), "lease_mismatch");
        assertThrows(UnknownRequestException.class, () -> cluster.await(d.submitReadKv("b")),
                "a declined pull has no KV to read");
        cluster.assertNoLeak();
    }

    /**
     * vLLM PR #56104: with several source ranks, the first failed READ must not release the pull's
     * blocks while a sibling READ may still write into them.
     */
    @Test
    void vllm56104_aFailedReadFromOneRankDoesNotReleaseBlocksWhileASiblingReadIsInFlight() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        int free = d.snapshot().freeBlocks();
        cluster.engine.gates.close();
        cluster.engine.gates.permit(ReadKind.BLOCK, "p-p0");
        cluster.engine.gates.failNext(ReadKind.BLOCK, "p-p0");
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.stepConsumers();
        cluster.stepConsumers();

        assertFalse(pull.isDone(), "rank 0's READ failed, rank 1's is still in flight: not decided yet");
        assertEquals(1, d.snapshot().blockReadsInFlight());
        assertTrue(d.snapshot().freeBlocks() < free, "the blocks rank 1 reads into are still the pull's");

        cluster.engine.gates.open();
        cluster.stepConsumers();
        assertDeclined(pull.join(), "transfer_failed");
        assertEquals(free, d.snapshot().freeBlocks(), "freed once every READ ended");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    /**
     * vLLM PR #43509: several pulls of one prefill (n > 1 on the router) leak none of the siblings'
     * blocks, on either side.
     */
    @Test
    void vllm43509_severalPullsOfOnePrefillLeakNoSiblingsBlocks() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = decoder(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        PullOutcome first = cluster.pull(d, "a-0", promptA, a);
        PullOutcome second = cluster.pull(d, "a-1", promptA, a);

        assertEquals(PullState.RECEIVED, first.state());
        assertTrue(second.state() == PullState.RECEIVED || second.reason() != null,
                "the sibling is received or declined, never left undecided: " + second);
        cluster.release(d, "a-0");
        if (second.state() == PullState.RECEIVED) {
            cluster.release(d, "a-1");
        }
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    /**
     * SGLang PR #31800, vLLM #50719: every waiting state has a deadline and a reported terminal
     * outcome; a READ that never completes ends as a timeout, and P takes its lease back at expiry.
     */
    @Test
    void sglang31800_aPullWhoseReadNeverEndsTimesOutAndPReapsTheLease() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").pullTimeout(Duration.ofSeconds(10)));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close();
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.steps(3);
        assertFalse(pull.isDone());

        cluster.clock.advance(Duration.ofSeconds(11));
        cluster.step();

        assertDeclined(pull.join(), "timeout");
        assertEquals(LeaseState.EXPORTED, p.lease("a").state(), "D stopped heartbeating; P keeps it until expiry");
        cluster.clock.advance(Cluster.LEASE);
        cluster.steps(3);
        assertNull(p.lease("a"), "expired and reaped");
        cluster.engine.gates.open();
        cluster.steps(2);
        cluster.assertNoLeak();
    }

    /**
     * vLLM #49238: a restarted P is never read through its dead agent: D drops the old incarnation
     * (invalidating its agent) before it loads the new one, and a pull of the old params is declined.
     */
    @Test
    void vllm49238_aRestartedProducerIsNeverReadThroughTheDeadAgent() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = decoder(1);
        KvTransferParams old = cluster.prefill(p, "a", promptA);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "warm", promptA, old).state());
        cluster.release(d, "warm");
        cluster.stop(p);
        ProducerFixture restarted = producer(1);
        int before = cluster.engine.events.size();

        PullOutcome o = cluster.pull(d, "a", promptA, old);

        assertTrue(o.reason() != null, "the old incarnation's params are not received: " + o);
        var after = cluster.engine.events.subList(before, cluster.engine.events.size());
        int invalidated = indexOf(after, "invalidate");
        int loaded = indexOf(after, "load");
        assertTrue(invalidated >= 0 && invalidated < loaded,
                "the dead agent is invalidated before the new one is loaded: " + after);
        KvTransferParams fresh = cluster.prefill(restarted, "b", promptA);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "b", promptA, fresh).state());
        cluster.release(d, "b");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    private static int indexOf(java.util.List<String> events, String prefix) {
        for (int i = 0; i < events.size(); i++) {
            if (events.get(i).startsWith(prefix)) {
                return i;
            }
        }
        return -1;
    }
}
