package io.pdconnector.producer;

import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.RawPeer;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What reaches P's loop from peers outside the connector: counted, never fatal (issue 12). */
class NotificationInboxTest {

    private final LoopbackTransferEngine loopback = new LoopbackTransferEngine();
    private final Cluster cluster = new Cluster(loopback);

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void oversizedAndMalformedNotificationsAreCountedAndTheNextReadStillReleasesItsLease() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        KvTransferParams a = cluster.prefill(p, "a", prompt(1, 10));
        String agent = cluster.registry.lookup("p").orElseThrow().ranks().getFirst().agentName();
        RawPeer reader = cluster.rawPeer("reader", "p");

        loopback.deliverUnchecked("rogue", agent,
                "a:1:".repeat(TransferAgent.MAX_NOTIFICATION_BYTES / 4 + 1).getBytes(StandardCharsets.UTF_8));
        loopback.deliverUnchecked("rogue", agent, "a:many:readers".getBytes(StandardCharsets.UTF_8));
        reader.send(0, "a:1:" + a.remoteLeaseNonce());
        for (int i = 0; i < 2; i++) {
            assertDoesNotThrow(p::doWork, "step " + i);
        }

        assertEquals(1, p.counters().droppedNotifications.get(), "the oversized one was dropped and counted");
        assertEquals(1, p.counters().malformedNotifications.get(), "the malformed one was counted");
        assertNull(p.lease("a"), "the read notification after them released the lease");
        assertEquals(1, p.counters().leasesReleasedByReaders.get());
        cluster.assertNoLeak();
    }

    /**
     * vLLM's {@code nixl_num_notifications_after_expiry}: a read notification naming a lease P no longer
     * holds (expired, or its id now held by a later attempt) is counted once per notification; one for a
     * live lease, or refused for want of its nonce, is not.
     */
    @Test
    void readNotificationsForALeaseAlreadyGoneAreCountedAfterExpiry() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        KvTransferParams expired = cluster.prefill(p, "gone", prompt(1, 10));
        cluster.lapseAll();
        KvTransferParams earlier = cluster.prefill(p, "reused", prompt(2, 10));
        cluster.lapseAll();
        KvTransferParams later = cluster.prefill(p, "reused", prompt(3, 10));
        KvTransferParams live = cluster.prefill(p, "live", prompt(4, 10));
        RawPeer reader = cluster.rawPeer("reader", "p");

        reader.send(0, "gone:1:" + expired.remoteLeaseNonce());
        reader.send(0, "gone:1:" + expired.remoteLeaseNonce());
        reader.send(0, "reused:1:" + earlier.remoteLeaseNonce());
        reader.send(0, "live:1");
        cluster.steps(2);

        assertEquals(3, p.counters().notificationsAfterExpiry.get(),
                "twice for the expired lease, once for the earlier attempt of a reused id");
        assertEquals(1, p.counters().notificationsRefusedNonce.get(), "the unsigned one was refused instead");
        reader.send(0, "live:1:" + live.remoteLeaseNonce());
        reader.send(0, "reused:1:" + later.remoteLeaseNonce());
        cluster.steps(2);
        assertEquals(3, p.counters().notificationsAfterExpiry.get(), "a live lease's own readers are not counted");
        assertNull(p.lease("live"));
        assertNull(p.lease("reused"));
        cluster.assertNoLeak();
    }
}
