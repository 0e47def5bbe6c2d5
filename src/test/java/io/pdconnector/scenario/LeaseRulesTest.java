package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.LoadFailurePolicy;
import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.memory.SlotArray;
import io.pdconnector.producer.LeaseState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.RawPeer;
import io.pdconnector.testing.ReadKind;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** L2-L10 end to end: producers and consumers on loopback, stepped by the test. */
class LeaseRulesTest {

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

    @Test
    void L2_slotHoldsTheNonceOnEveryRankWhenParamsAreExported() {
        ProducerFixture p = producer(2);
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        assertEquals(LeaseState.EXPORTED, p.lease("a").state());
        assertEquals(16 + 4, cluster.registry.lookup("p").orElseThrow().ranks().getFirst().slotCount(),
                "kv_lease_slots defaults to blocks + max_num_seqs");
        for (int rank = 0; rank < 2; rank++) {
            assertEquals(a.remoteLeaseNonce(), p.slotValue(rank, a.remoteLeaseSlot()), "rank " + rank);
        }
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void L3_blocksAreFreedOnlyWhenEveryRankHasZeroedItsSlot() {
        ProducerFixture p = producer(2);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        RawPeer reader = cluster.rawPeer("reader", "p");
        int free = p.snapshot().freeBlocks();

        reader.send(0, "a:1:" + a.remoteLeaseNonce());
        cluster.steps(2);

        assertEquals(0, p.slotValue(0, a.remoteLeaseSlot()));
        assertEquals(a.remoteLeaseNonce(), p.slotValue(1, a.remoteLeaseSlot()), "rank 1 still holds");
        assertEquals(LeaseState.RELEASING, p.lease("a").state());
        assertEquals(free, p.snapshot().freeBlocks(), "blocks stay held while rank 1 has not finished");

        reader.send(1, "a:1:" + a.remoteLeaseNonce());
        cluster.steps(2);

        assertNull(p.lease("a"));
        cluster.assertNoLeak();
    }

    @Test
    void L3_expiryAndAbortZeroTheSlotsOnEveryRankAndFreeTheBlocks() {
        ProducerFixture p = producer(2);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        KvTransferParams b = cluster.prefill(p, "b", prompt(2, 10));

        cluster.await(p.facade().submitAbort("a"));
        cluster.steps(2);
        assertEquals(0, p.slotValue(0, a.remoteLeaseSlot()));
        assertEquals(0, p.slotValue(1, a.remoteLeaseSlot()));
        assertEquals(b.remoteLeaseNonce(), p.slotValue(1, b.remoteLeaseSlot()));

        cluster.lapseAll();
        assertEquals(1, p.counters().leasesAborted.get());
        assertEquals(1, p.counters().leasesExpired.get());
        cluster.assertNoLeak();
    }

    @Test
    void L4_requestWithoutAFreeSlotGetsNoLeaseFieldsAndAVerifyingDecoderDeclinesIt() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").blocks(16, 4, 1));
        ConsumerFixture d = decoder(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        KvTransferParams b = cluster.prefill(p, "b", prompt(2, 10));

        assertTrue(a.hasLease());
        assertFalse(b.hasLease());
        assertFalse(b.toMap().containsKey("remote_lease_nonce"));
        assertDeclined(cluster.pull(d, "b", prompt(2, 10), b), "no_lease");
        assertEquals(1, d.counters().leaseCheckFailures.get());
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        cluster.release(d, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void L4_slotReturnsToThePoolOnlyAfterEveryRankFinishedSending() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").tpSize(2).blocks(16, 4, 1));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        RawPeer reader = cluster.rawPeer("reader", "p");
        reader.send(0, "a:1:" + a.remoteLeaseNonce());
        cluster.steps(2);

        assertFalse(cluster.prefill(p, "b", prompt(2, 4)).hasLease(), "rank 1 still holds a's slot");

        reader.send(1, "a:1:" + a.remoteLeaseNonce());
        cluster.steps(2);
        KvTransferParams c = cluster.prefill(p, "c", prompt(3, 4));
        assertEquals(a.remoteLeaseSlot(), c.remoteLeaseSlot());
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void L5_oneSlotReadPerRemoteRankPerStepPostedAfterEveryBlockRead() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(1);
        List<KvTransferParams> params = List.of(cluster.prefill(p, "a", promptA),
                cluster.prefill(p, "b", prompt(2, 10)), cluster.prefill(p, "c", prompt(3, 10)));
        cluster.engine.events.clear();

        List<CompletableFuture<PullOutcome>> pulls = List.of(d.submitPull("a", promptA, params.get(0)),
                d.submitPull("b", prompt(2, 10), params.get(1)), d.submitPull("c", prompt(3, 10), params.get(2)));
        pulls.forEach(cluster::await);

        pulls.forEach(f -> assertEquals(PullState.RECEIVED, f.join().state()));
        assertEquals(2, cluster.engine.count("post slot"), "one slot READ per P rank for all three pulls");
        assertEquals(6, cluster.engine.count("status block d-d0"), "3 pulls x 2 source ranks, each polled once");
        int lastBlockDone = cluster.engine.events.lastIndexOf(cluster.engine.events.stream()
                .filter(e -> e.startsWith("status block")).reduce((x, y) -> y).orElseThrow());
        assertTrue(lastBlockDone < cluster.engine.indexOf("post slot"), "slots are read after the blocks");
        assertEquals(0, cluster.engine.count("post block d-d0->p-p0 n=3 notif"));
        for (String id : List.of("a", "b", "c")) {
            assertTrue(cluster.matches(d, id));
            cluster.release(d, id);
        }
        cluster.assertNoLeak();
    }

    @Test
    void L6_notificationCarriesTheNonceAndFollowsTheSlotCheck() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = decoder(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        int slotDone = cluster.engine.indexOf("status slot d-d0->p-p0 DONE");
        int notified = cluster.engine.indexOf("notify d-d0->p-p0 a:1:" + a.remoteLeaseNonce());
        assertTrue(slotDone >= 0 && notified > slotDone, cluster.engine.events.toString());
        assertTrue(cluster.engine.events.stream().noneMatch(e -> e.startsWith("post") && e.endsWith("notif")),
                "no READ carries a notification");
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void L6_declinedPullSendsNoReadNotification() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = decoder(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.await(p.facade().submitAbort("a"));
        cluster.steps(2);

        assertDeclined(cluster.pull(d, "a", promptA, a), "lease_mismatch");

        assertEquals(0, cluster.engine.count("notify d-d0->p-p0 a:"));
        cluster.assertNoLeak();
    }

    @Test
    void L7_failedSlotReadFailsTheLoadAndIsCounted() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = decoder(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.failNext(ReadKind.SLOT, "p-p0");

        assertDeclined(cluster.pull(d, "a", promptA, a), "slot_read_failed");

        assertEquals(1, d.counters().leaseCheckFailures.get());
        assertEquals(LeaseState.EXPORTED, p.lease("a").state(), "P was not told: it keeps the lease until expiry");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    /** Found by replaying the model's MUT_L9 trail: the other rank's READ was never polled again. */
    @Test
    void L7_aSlotReadStillInFlightWhenAnotherRanksFailedIsPolledToItsEnd() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(2);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close();
        cluster.engine.gates.permit(ReadKind.BLOCK, "p-p0");
        cluster.engine.gates.permit(ReadKind.BLOCK, "p-p1");
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.stepConsumers();
        cluster.stepConsumers();
        assertEquals(2, d.snapshot().slotReadsInFlight(), "both slot READs posted, neither landed");

        cluster.engine.gates.permit(ReadKind.SLOT, "p-p0");
        cluster.engine.gates.failNext(ReadKind.SLOT, "p-p0");
        cluster.stepConsumers();
        assertDeclined(pull.join(), "slot_read_failed");
        assertEquals(1, d.snapshot().slotReadsInFlight(), "rank 1's slot READ is still in flight");
        long polls = d.counters().slotReadPolls.get();
        assertEquals(0, d.doWork(), "a slot READ no pull waits for does not keep the loop busy");
        assertEquals(polls + 1, d.counters().slotReadPolls.get(), "it is polled once a step, not spun on");

        cluster.engine.gates.open();
        cluster.stepConsumers();
        assertEquals(0, d.snapshot().slotReadsInFlight(), "and is polled to its end though no pull waits for it");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void L7_recomputePolicyRecomputesAfterAFailedCheck() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d", true, LoadFailurePolicy.RECOMPUTE));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.failNext(ReadKind.SLOT, "p-p0");

        PullOutcome o = cluster.pull(d, "a", promptA, a);

        assertEquals(PullState.RECOMPUTED, o.state());
        assertEquals("slot_read_failed", o.reason().wire());
        assertTrue(cluster.matches(d, "a"));
        assertEquals(1, d.counters().leaseCheckFailures.get());
        cluster.release(d, "a");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void L8_heartbeatsKeepTheLeaseOfAQueuedPullAlive() {
        ProducerFixture p = producer(1);
        // decode holds "first" past the default retention: the pool stays full while "waiting" queues
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").blocks(3).retention(Duration.ofMinutes(5)));
        KvTransferParams first = cluster.prefill(p, "first", promptA);
        KvTransferParams waiting = cluster.prefill(p, "waiting", prompt(2, 10));
        cluster.pull(d, "first", promptA, first);
        CompletableFuture<PullOutcome> queued = d.submitPull("waiting", prompt(2, 10), waiting);

        for (int s = 0; s < 12; s++) {
            cluster.clock.advance(Duration.ofSeconds(5));
            cluster.steps(2);
        }

        assertFalse(queued.isDone(), "D has no free blocks: the pull is still queued after 60 s");
        assertEquals(LeaseState.EXPORTED, p.lease("waiting").state(), "heartbeats kept a 30 s lease for 60 s");
        assertTrue(p.counters().heartbeatsApplied.get() >= 10);
        cluster.release(d, "first");
        assertEquals(PullState.RECEIVED, cluster.await(queued).state());
        assertTrue(cluster.matches(d, "waiting"));
        long sent = d.counters().heartbeatsSent.get();
        cluster.clock.advance(Duration.ofSeconds(10));
        cluster.steps(2);
        assertEquals(sent, d.counters().heartbeatsSent.get(), "heartbeats stop once the pull is decided");
        cluster.release(d, "waiting");
        cluster.assertNoLeak();
    }

    /**
     * Heartbeats go out at the end of a step, for the pulls still undecided then: a pull whose READs and
     * slot check finish in its arrival step (over shared memory, most) costs P no heartbeat, only its read
     * notification, while a pull that waits for blocks is heartbeated in its arrival step all the same.
     */
    @Test
    void L8_aPullDecidedInItsArrivalStepSendsNoHeartbeat_aQueuedOneIsHeartbeatedInIt() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").blocks(3).retention(Duration.ofMinutes(5)));
        KvTransferParams first = cluster.prefill(p, "first", promptA);
        KvTransferParams waiting = cluster.prefill(p, "waiting", prompt(2, 10));

        CompletableFuture<PullOutcome> decided = d.submitPull("first", promptA, first);
        d.doWork();
        assertEquals(PullState.RECEIVED, decided.getNow(null).state(), "read and slot-checked in its arrival step");
        assertEquals(0, d.counters().heartbeatsSent.get(), "no heartbeat for a pull decided in its arrival step");

        CompletableFuture<PullOutcome> queued = d.submitPull("waiting", prompt(2, 10), waiting);
        d.doWork();
        assertFalse(queued.isDone(), "D has no free blocks: the pull waits");
        assertEquals(1, d.counters().heartbeatsSent.get(), "the waiting pull is heartbeated in its arrival step");
        cluster.steps(2);
        assertEquals(1, p.counters().heartbeatsApplied.get());

        cluster.release(d, "first");
        assertEquals(PullState.RECEIVED, cluster.await(queued).state());
        cluster.release(d, "waiting");
        cluster.assertNoLeak();
    }

    @Test
    void L8_heartbeatNeverRevivesAnExpiredLease() {
        ProducerFixture p = producer(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        RawPeer decoder = cluster.rawPeer("late-decoder", "p");
        cluster.clock.advance(Cluster.LEASE);

        decoder.send(0, "HB:a:" + a.remoteLeaseNonce());
        cluster.step();

        assertEquals(1, p.counters().heartbeatsIgnored.get(), "the lease's time was up when the heartbeat came");
        cluster.steps(2);
        assertNull(p.lease("a"));
        assertEquals(0, p.slotValue(0, a.remoteLeaseSlot()));
        decoder.send(0, "HB:a:" + a.remoteLeaseNonce());
        cluster.steps(2);
        assertEquals(2, p.counters().heartbeatsIgnored.get());
        assertNull(p.lease("a"), "a heartbeat does not bring a freed lease back");
        cluster.assertNoLeak();
    }

    @Test
    void L8_reaperSweepsEveryLeaseWhateverTheOrderOfExpiries() {
        ProducerFixture p = producer(1);
        RawPeer decoder = cluster.rawPeer("decoder", "p");
        KvTransferParams early = cluster.prefill(p, "early", promptA);
        cluster.clock.advance(Duration.ofSeconds(10));
        cluster.prefill(p, "late1", prompt(2, 4));
        cluster.prefill(p, "late2", prompt(3, 4));
        cluster.clock.advance(Duration.ofSeconds(15));
        decoder.send(0, "HB:early:" + early.remoteLeaseNonce());
        cluster.step();
        assertEquals(1, p.counters().heartbeatsApplied.get());

        cluster.clock.advance(Duration.ofSeconds(16));
        cluster.step();

        assertEquals(LeaseState.EXPORTED, p.lease("early").state(), "the oldest lease was extended past t+40");
        assertEquals(LeaseState.RELEASING, p.lease("late1").state(), "reaped in the same sweep");
        assertEquals(LeaseState.RELEASING, p.lease("late2").state(), "reaped in the same sweep");
        cluster.steps(2);
        assertNull(p.lease("late1"));
        cluster.clock.advance(Duration.ofSeconds(5));
        cluster.steps(2);
        assertNull(p.lease("early"));
        cluster.assertNoLeak();
    }

    @Test
    void L9_multiRankPullIsDecidedOnlyWhenEveryReadIsTerminal() {
        ProducerFixture p = producer(2);
        ConsumerFixture d = decoder(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close();
        cluster.engine.gates.permit(ReadKind.BLOCK, "p-p0");

        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.steps(5);

        assertFalse(pull.isDone());
        assertEquals(1, cluster.engine.count("status block d-d0->p-p0 DONE"), "rank 0's READ is done");
        assertEquals(0, cluster.engine.count("post slot"), "no slot READ while rank 1's READ is in flight");
        cluster.engine.gates.open();
        assertEquals(PullState.RECEIVED, cluster.await(pull).state());
        assertTrue(cluster.matches(d, "a"));
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void L10_verificationOffSkipsTheSlotReadAndStillNotifiesWithTheNonce() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d", false, LoadFailurePolicy.FAIL));
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", promptA, a).state());

        assertEquals(0, cluster.engine.count("post slot"));
        assertEquals(1, cluster.engine.events.stream()
                .filter(e -> e.equals("notify d-d0->p-p0 a:1:" + a.remoteLeaseNonce())).count(),
                "no slot READ, but the nonce releases the lease's slot (L11)");
        cluster.steps(2);
        assertNull(p.lease("a"), "P takes an unverified reader's word");
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void L10_producerThatCannotRegisterItsSlotsFailsToStart() {
        cluster.engine.refuseRegionLabel = SlotArray.LABEL;
        ProducerFixture p = new ProducerFixture(cluster.producerConfig("p").build(), cluster.engine, cluster.registry,
                cluster.clock);

        IllegalStateException e = assertThrows(IllegalStateException.class, p::open);

        assertTrue(e.getMessage().contains("cannot register its") && e.getMessage().contains("lease slots"),
                e.getMessage());
        assertTrue(cluster.registry.lookup("p").isEmpty(), "a failed start publishes nothing");
        ProducerFixture unverified = cluster.producer(cluster.producerConfig("p").verification(false));
        KvTransferParams a = cluster.prefill(unverified, "a", promptA);
        assertNull(a.remoteLeaseNonce(), "unverified, no lease fields");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }
}
