package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.producer.LeaseState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.RawPeer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 12, hole 3: what a peer that knows a request id but not its nonce can do to P's lease over
 * NIXL. L11: a read notification releases a lease with a slot only with its nonce, and claims no
 * more readers than a TP mapping can give one rank. L12: a heartbeat extends a lease only with its
 * nonce, and no heartbeat extends a lease past its maximum lifetime.
 */
class LeaseTrustRulesTest {

    private final Cluster cluster = new Cluster();
    private final int[] promptA = prompt(1, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    private ProducerFixture producer(int tp) {
        return cluster.producer(cluster.producerConfig("p").tpSize(tp));
    }

    @Test
    void L11_aReadNotificationWithoutTheNonceDoesNotReleaseALeaseWithASlot() {
        ProducerFixture p = producer(2);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        RawPeer rogue = cluster.rawPeer("rogue", "p");

        rogue.send(0, "a:1");
        rogue.send(1, "a:1");
        cluster.steps(3);

        assertEquals(LeaseState.EXPORTED, p.lease("a").state(), "a request id alone releases nothing");
        assertEquals(2, p.counters().notificationsRefusedNonce.get(), "both refusals counted");
        for (int rank = 0; rank < 2; rank++) {
            assertEquals(a.remoteLeaseNonce(), p.slotValue(rank, a.remoteLeaseSlot()), "rank " + rank);
        }
        RawPeer reader = cluster.rawPeer("reader", "p");
        reader.send(0, "a:1:" + a.remoteLeaseNonce());
        reader.send(1, "a:1:" + a.remoteLeaseNonce());
        cluster.steps(3);
        assertNull(p.lease("a"), "the reader with the nonce releases it");
        cluster.assertNoLeak();
    }

    @Test
    void L11_aReaderCannotClaimMoreConsumersThanATpMappingGivesOneRank() {
        ProducerFixture p = producer(1); // 2 KV heads on its one rank: at most 2 decode ranks read it
        KvTransferParams a = cluster.prefill(p, "a", promptA);

        for (int i = 0; i < 3; i++) {
            cluster.rawPeer("reader" + i, "p").send(0, "a:3:" + a.remoteLeaseNonce());
        }
        cluster.steps(3);

        assertEquals(LeaseState.EXPORTED, p.lease("a").state(), "3 readers of a rank holding 2 heads: refused");
        assertEquals(3, p.counters().notificationsRefusedConsumers.get());
        for (int i = 3; i < 5; i++) {
            cluster.rawPeer("reader" + i, "p").send(0, "a:2:" + a.remoteLeaseNonce());
        }
        cluster.steps(3);
        assertNull(p.lease("a"), "the 2 readers a mapping allows release it");
        cluster.assertNoLeak();
    }

    @Test
    void L12_aHeartbeatWithoutTheNonceDoesNotExtendALeaseWithASlot() {
        ProducerFixture p = producer(1);
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        RawPeer rogue = cluster.rawPeer("rogue", "p");

        for (int i = 0; i < 4; i++) {
            cluster.clock.advance(Duration.ofSeconds(8));
            rogue.send(0, "HB:a,a:" + (a.remoteLeaseNonce() + 1)); // no nonce, and another lease's
            cluster.step();
        }
        cluster.steps(2);

        assertNull(p.lease("a"), "expired 30 s after export: heartbeats without its nonce extended nothing");
        assertEquals(1, p.counters().leasesExpired.get());
        assertEquals(6, p.counters().notificationsRefusedNonce.get(), "2 refused a step while the lease was live");
        assertEquals(0, p.counters().heartbeatsApplied.get());
        cluster.assertNoLeak();
    }

    @Test
    void L12_aDecoderStuckPastTheMaximumLifetimeLosesTheLeaseAndIsDeclined() {
        ProducerFixture p = producer(1);
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d").pullTimeout(Duration.ofHours(1)));
        KvTransferParams a = cluster.prefill(p, "a", promptA);
        cluster.engine.gates.close(); // the block READ hangs; D heartbeats the lease all the while
        CompletableFuture<PullOutcome> pull = d.submitPull("a", promptA, a);
        cluster.steps(2);

        long nineMinutes = Duration.ofMinutes(9).toSeconds();
        for (long t = 0; t < nineMinutes; t += 5) {
            cluster.clock.advance(Duration.ofSeconds(5));
            cluster.step();
        }
        assertTrue(p.lease("a").isLive(cluster.clock.millis()), "D's heartbeats keep it for 9 minutes");
        for (long t = 0; t < 70; t += 5) {
            cluster.clock.advance(Duration.ofSeconds(5));
            cluster.step();
        }
        cluster.steps(2);

        assertNull(p.lease("a"), "10 minutes after export (pd.lease.max-lifetime) no heartbeat holds it any more");
        assertEquals(1, p.counters().leasesAtMaxLifetime.get());
        assertTrue(p.counters().heartbeatsApplied.get() > 100, "D's heartbeats, with the nonce, were applied");
        assertFalse(pull.isDone());
        cluster.engine.gates.open();
        assertDeclined(cluster.await(pull), "lease_mismatch");
        cluster.assertNoLeak();
    }
}
