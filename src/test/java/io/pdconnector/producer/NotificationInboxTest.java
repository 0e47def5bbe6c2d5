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
}
