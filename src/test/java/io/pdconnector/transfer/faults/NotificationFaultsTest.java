package io.pdconnector.transfer.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.loopback.LoopbackTransferEngine;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Notification faults of the decorator: a sender's agent over loopback, a receiver that drains what arrives. */
class NotificationFaultsTest {

    private static final byte[] READ = "r1:1:77".getBytes(StandardCharsets.UTF_8);
    private static final byte[] HEARTBEAT = "HB:r1:77".getBytes(StandardCharsets.UTF_8);

    private FaultInjectingEngine engine;
    private FaultInjectingAgent sender;
    private TransferAgent receiver;
    private String receiverName;

    private void start(NotificationFaultPlan.Kind kind, Duration delay, NotificationFaultPlan.Action... actions) {
        engine = new FaultInjectingEngine(new LoopbackTransferEngine(), Optional.empty(),
                Optional.of(new NotificationFaultPlan(kind, List.of(actions), delay, 0, 1)), 3);
        sender = (FaultInjectingAgent) engine.createAgent("d-d0");
        receiver = engine.createAgent("p-p0");
        receiverName = sender.loadRemoteMetadata(receiver.localMetadata());
    }

    @AfterEach
    void close() {
        if (engine != null) {
            sender.invalidateRemote(receiverName);
            sender.close();
            receiver.close();
            engine.close();
        }
    }

    private List<String> received() {
        List<String> got = new ArrayList<>();
        receiver.drainNotifications((from, m) -> got.add(new String(m, StandardCharsets.UTF_8)));
        return got;
    }

    @Test
    void aDuplicatedNotificationArrivesTwiceAtOnce() {
        start(NotificationFaultPlan.Kind.READ, Duration.ofHours(1), NotificationFaultPlan.Action.DUPLICATE);
        sender.sendNotification(receiverName, READ);
        assertEquals(List.of("r1:1:77", "r1:1:77"), received());
        assertEquals(1, engine.notificationsStruck());
        assertEquals(0, sender.delayedNotifications());
    }

    @Test
    void aLateNotificationIsSentOnlyByTheFirstCallIntoTheAgentAfterItsDelay() throws InterruptedException {
        start(NotificationFaultPlan.Kind.HEARTBEAT, Duration.ofMillis(50), NotificationFaultPlan.Action.LATE);
        sender.sendNotification(receiverName, HEARTBEAT);
        assertEquals(List.of(), received(), "held back");
        assertEquals(1, sender.delayedNotifications());
        Thread.sleep(80);
        assertEquals(List.of(), received(), "no thread of the fault layer sends it");
        sender.drainNotifications((from, m) -> { });
        assertEquals(List.of("HB:r1:77"), received(), "the loop's next call into the agent sent it");
        assertEquals(0, sender.delayedNotifications());
    }

    @Test
    void aReplayedNotificationArrivesNowAndAgainAfterTheMessagesSentMeanwhile() throws InterruptedException {
        start(NotificationFaultPlan.Kind.ANY, Duration.ofMillis(50), NotificationFaultPlan.Action.REPLAY);
        sender.sendNotification(receiverName, HEARTBEAT);
        assertEquals(List.of("HB:r1:77"), received());
        Thread.sleep(80);
        sender.sendNotification(receiverName, READ); // struck too: sent now, its copy held
        assertEquals(List.of("HB:r1:77", "r1:1:77"), received(), "the heartbeat's copy comes after it was due");
        assertEquals(1, sender.delayedNotifications());
    }

    @Test
    void onlyTheConfiguredKindIsStruckAndActionsTakeTurns() {
        start(NotificationFaultPlan.Kind.READ, Duration.ofHours(1), NotificationFaultPlan.Action.DUPLICATE,
                NotificationFaultPlan.Action.LATE);
        sender.sendNotification(receiverName, HEARTBEAT);
        sender.sendNotification(receiverName, READ);
        sender.sendNotification(receiverName, READ);
        sender.sendNotification(receiverName, READ);
        assertEquals(List.of("HB:r1:77", "r1:1:77", "r1:1:77", "r1:1:77", "r1:1:77"), received(),
                "heartbeat untouched; duplicate, late (held), duplicate");
        assertEquals(3, engine.notificationsStruck());
        assertEquals(1, sender.delayedNotifications());
    }

    @Test
    void theDelayedListIsBoundedAStrikeBeyondItSendsTheMessageAsItIs() {
        start(NotificationFaultPlan.Kind.ANY, Duration.ofHours(1), NotificationFaultPlan.Action.LATE);
        for (int i = 0; i < DelayedNotifications.CAPACITY + 5; i++) {
            sender.sendNotification(receiverName, READ);
        }
        assertEquals(DelayedNotifications.CAPACITY, sender.delayedNotifications());
        assertEquals(5, received().size());
    }

    @Test
    void aLateCopyForAPeerThatLeftIsDroppedNotThrownIntoTheLoop() throws InterruptedException {
        start(NotificationFaultPlan.Kind.ANY, Duration.ofMillis(20), NotificationFaultPlan.Action.LATE);
        sender.sendNotification(receiverName, READ);
        sender.invalidateRemote(receiverName);
        Thread.sleep(40);
        sender.drainNotifications((from, m) -> { });
        assertEquals(0, sender.delayedNotifications());
        receiverName = sender.loadRemoteMetadata(receiver.localMetadata());
        assertEquals(List.of(), received());
    }

    @Test
    void badPlansAreRefusedNamingTheKey() {
        var noAction = assertThrows(IllegalArgumentException.class, () -> new NotificationFaultPlan(
                NotificationFaultPlan.Kind.ANY, List.of(), Duration.ZERO, 0, 1));
        assertTrue(noAction.getMessage().contains("pd.faults.notifications.actions"), noAction.getMessage());
        var negative = assertThrows(IllegalArgumentException.class, () -> new NotificationFaultPlan(
                NotificationFaultPlan.Kind.ANY, List.of(NotificationFaultPlan.Action.LATE), Duration.ofMillis(-1), 0, 1));
        assertTrue(negative.getMessage().contains("pd.faults.notifications.delay"), negative.getMessage());
        var both = assertThrows(IllegalArgumentException.class, () -> new NotificationFaultPlan(
                NotificationFaultPlan.Kind.ANY, List.of(NotificationFaultPlan.Action.LATE), Duration.ZERO, 0.5, 2));
        assertTrue(both.getMessage().contains("pd.faults.notifications.every-nth"), both.getMessage());
        var nothing = assertThrows(IllegalArgumentException.class,
                () -> new FaultInjectingEngine(new LoopbackTransferEngine(), Optional.empty(), Optional.empty(), 1));
        assertTrue(nothing.getMessage().contains("nothing to strike"), nothing.getMessage());
    }
}
