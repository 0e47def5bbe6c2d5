package io.pdconnector.scenario;

import static io.pdconnector.testing.Cluster.assertDeclined;
import static io.pdconnector.testing.Cluster.prompt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.consumer.ConsumerFixture;
import io.pdconnector.consumer.PullState;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.producer.LeaseState;
import io.pdconnector.producer.ProducerFixture;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.testing.Cluster;
import io.pdconnector.testing.RawPeer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Attempt 1 of request "r" lapses; attempt 2 reuses the id with another prompt. */
class RequestIdReuseTest {

    private final Cluster cluster = new Cluster();
    private final int[] prompt1 = prompt(1, 10);
    private final int[] prompt2 = prompt(2, 10);

    @AfterEach
    void close() {
        cluster.close();
    }

    @Test
    void lateReaderOfAttempt1IsDeclinedAndItsNotificationCannotReleaseAttempt2() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p").blocks(3, 2, 0));
        ConsumerFixture d = cluster.consumer(cluster.consumerConfig("d"));
        KvTransferParams attempt1 = cluster.prefill(p, "r", prompt1);
        cluster.lapseAll();
        KvTransferParams attempt2 = cluster.prefill(p, "r", prompt2);
        assertEquals(attempt1.remoteLeaseSlot(), attempt2.remoteLeaseSlot(), "same slot, reused");
        assertNotEquals(attempt1.remoteLeaseNonce(), attempt2.remoteLeaseNonce());

        assertDeclined(cluster.pull(d, "late", prompt1, attempt1), "lease_mismatch");

        RawPeer lateNotifier = cluster.rawPeer("late-notifier", "p");
        lateNotifier.send(0, "r:1:" + attempt1.remoteLeaseNonce());
        cluster.steps(2);
        assertEquals(1, p.counters().staleNotifications.get());
        assertEquals(LeaseState.EXPORTED, p.lease("r").state(), "attempt 2 is still held");
        assertEquals(attempt2.remoteLeaseNonce(), p.slotValue(0, attempt2.remoteLeaseSlot()));

        assertEquals(PullState.RECEIVED, cluster.pull(d, "current", prompt2, attempt2).state());
        assertTrue(cluster.matches(d, "current"));
        cluster.steps(2);
        assertNull(p.lease("r"), "attempt 2's own reader released it");
        cluster.release(d, "current");
        cluster.assertNoLeak();
    }

    @Test
    void malformedNotificationsAreCountedAndChangeNothing() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        KvTransferParams a = cluster.prefill(p, "r", prompt1);
        RawPeer rogue = cluster.rawPeer("rogue", "p");

        rogue.send(0, "garbage");
        rogue.send(0, "r:0:" + a.remoteLeaseNonce());
        rogue.send(0, "r:1:" + (1L << 53));
        rogue.send(0, "HB:r,bad:id");
        cluster.steps(2);

        assertEquals(4, p.counters().malformedNotifications.get());
        assertEquals(LeaseState.EXPORTED, p.lease("r").state());
        cluster.lapseAll();
        cluster.assertNoLeak();
    }

    @Test
    void anIdCannotBeReusedWhileItsLeaseIsHeld() {
        ProducerFixture p = cluster.producer(cluster.producerConfig("p"));
        cluster.prefill(p, "r", prompt1);

        StateConflictException e = org.junit.jupiter.api.Assertions.assertThrows(StateConflictException.class,
                () -> cluster.prefill(p, "r", prompt2));

        assertTrue(e.getMessage().contains("still holds a lease"), e.getMessage());
        cluster.lapseAll();
        cluster.assertNoLeak();
    }
}
