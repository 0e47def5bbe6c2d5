package io.pdconnector.transfer.loopback;

import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.BiConsumer;

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
        peers.require("sendNotification", remoteAgent).deliver(name, message.clone());
    }

    void receive(String from, byte[] message) {
        inbox.add(Map.entry(from, message));
    }

    int drain(BiConsumer<String, byte[]> sink) {
        int n = 0;
        for (Map.Entry<String, byte[]> e; (e = inbox.poll()) != null; n++) {
            sink.accept(e.getKey(), e.getValue());
        }
        return n;
    }
}
