package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.NotificationSink;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * One loopback agent's notifications. The inbox is concurrent because peers deliver into it from
 * their own threads; only the owner drains it.
 */
final class LoopbackNotifications {

    private final String name;
    private final LoopbackPeers peers;
    private final Queue<Map.Entry<String, byte[]>> inbox = new ConcurrentLinkedQueue<>();

    LoopbackNotifications(String name, LoopbackPeers peers) {
        this.name = name;
        this.peers = peers;
    }

    void send(String remoteAgent, byte[] message) {
        if (message == null || message.length == 0) {
            throw new IllegalArgumentException("a notification must not be empty");
        }
        TransferException.checkNotificationSize("sendNotification", message);
        peers.require("sendNotification", remoteAgent).deliver(name, message.clone());
    }

    void receive(String from, byte[] message) {
        inbox.add(Map.entry(from, message));
    }

    /** Delivers what arrived, dropping (and reporting) any over the maximum, as NIXL's drain does. */
    int drain(NotificationSink sink) {
        int n = 0;
        int dropped = 0;
        try {
            for (Map.Entry<String, byte[]> e; (e = inbox.poll()) != null; ) {
                if (e.getValue().length > TransferAgent.MAX_NOTIFICATION_BYTES) {
                    dropped++;
                    continue;
                }
                sink.accept(e.getKey(), e.getValue());
                n++;
            }
        } finally {
            if (dropped > 0) {
                sink.dropped(dropped);
            }
        }
        return n;
    }
}
