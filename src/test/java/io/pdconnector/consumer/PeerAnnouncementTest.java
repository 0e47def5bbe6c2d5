package io.pdconnector.consumer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.error.UntrustedPeerException;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * D hears of producers from the registry: it handshakes when one is announced (so no pull pays for
 * first contact), replaces an incarnation when a new epoch is announced (invalidating the old agent
 * before anything is read from the new one), drops a producer that leaves, and keeps at most
 * pd.consumer.max-peers producers loaded.
 */
class PeerAnnouncementTest {

    private final Cluster cluster = new Cluster();

    @AfterEach
    void close() {
        cluster.close();
    }

    private void announce(ConsumerFixture d, String engineId) {
        cluster.await(d.facade().submitAnnounced(cluster.registry.lookup(engineId).orElseThrow()));
    }

    @Test
    void anAnnouncedProducerIsLoadedBeforeItsFirstPullWhichHandshakesNoMore() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        announce(d, "p");
        assertEquals(1, d.snapshot().peers());
        assertEquals(1, d.counters().handshakes.get());

        int[] tokens = prompt(1, 10);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", tokens, cluster.prefill(p, "a", tokens)).state());
        assertEquals(0, d.counters().handshakesOnPull.get(), "the first pull found the producer loaded");
        assertEquals(1, d.counters().handshakes.get());
        announce(d, "p"); // the same epoch again (a capacity update): nothing reloaded
        assertEquals(1, d.counters().handshakes.get());
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }

    @Test
    void aNewEpochDeclinesPullsInFlightAsPeerRestartedAndInvalidatesTheOldAgentBeforeAnyRead() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        int[] tokens = prompt(2, 10);
        KvTransferParams old = cluster.prefill(p, "a", tokens);
        cluster.engine.gates.close(); // the pull's READs stay in flight
        CompletableFuture<PullOutcome> inFlight = d.submitPull("a", tokens, old);
        cluster.steps(3);
        assertFalse(inFlight.isDone());

        cluster.stop(p);
        ProducerFixture restarted = cluster.producer(cluster.producerConfig("p"));
        int mark = cluster.engine.events.size();
        announce(d, "p");
        cluster.engine.gates.open();
        PullOutcome declined = cluster.await(inFlight);
        assertEquals(PullState.DECLINED, declined.state());
        assertEquals(DeclineReason.PEER_RESTARTED, declined.reason());

        List<String> after = List.copyOf(cluster.engine.events.subList(mark, cluster.engine.events.size()));
        int invalidated = after.indexOf("invalidate d-d0<-p-p0");
        int loaded = after.indexOf("load d-d0<-p-p0");
        assertTrue(invalidated >= 0 && loaded > invalidated, "old agent invalidated before the new one loaded: " + after);

        KvTransferParams fresh = cluster.prefill(restarted, "b", tokens);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "b", tokens, fresh).state());
        assertTrue(cluster.matches(d, "b"));
        cluster.release(d, "b");
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void aProducerThatLeavesIsDroppedAndItsPullsAreRefusedAsUnknown() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        announce(d, "p");
        int[] tokens = prompt(3, 10);
        KvTransferParams a = cluster.prefill(p, "a", tokens);
        cluster.registry.withdraw("p");
        cluster.await(d.facade().submitWithdrawn("p"));
        assertEquals(0, d.snapshot().peers(), "what D loaded for p is released");
        assertThrows(UntrustedPeerException.class, () -> cluster.pull(d, "a", tokens, a));
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void aProducerWhoseWithdrawalWasNeverHeardIsDroppedByTheNextPullFromIt() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        announce(d, "p");
        int[] tokens = prompt(5, 10);
        KvTransferParams a = cluster.prefill(p, "a", tokens);
        cluster.registry.withdraw("p"); // the announcement of it is lost (a full queue)
        assertThrows(UntrustedPeerException.class, () -> cluster.pull(d, "a", tokens, a));
        assertEquals(0, d.snapshot().peers(), "what D loaded for p is released");
        assertTrue(cluster.engine.events.contains("invalidate d-d0<-p-p0"));
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void atMostMaxPeersAreKeptLoadedAndTheLeastRecentlyUsedIdleOneGoes() {
        ProducerFixture p1 = cluster.producer(cluster.producerConfig("p1"));
        cluster.producer(cluster.producerConfig("p2"));
        cluster.producer(cluster.producerConfig("p3"));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").maxPeers(2));
        announce(d, "p1");
        announce(d, "p2");
        int[] tokens = prompt(4, 10);
        assertEquals(PullState.RECEIVED, cluster.pull(d, "a", tokens, cluster.prefill(p1, "a", tokens)).state());
        // p1 has a pull holding D's blocks, p2 is idle and least recently used: p2 goes
        announce(d, "p3");
        assertEquals(2, d.snapshot().peers());
        assertEquals(1, d.counters().peersEvicted.get());
        assertTrue(cluster.engine.events.contains("invalidate d-d0<-p2-p0"), "p2's agent released");
        assertFalse(cluster.engine.events.contains("invalidate d-d0<-p1-p0"), "p1 is in use");
        cluster.release(d, "a");
        cluster.assertNoLeak();
    }
}
