package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.protocol.LeaseNotification;
import io.pdconnector.transfer.TransferException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What D tells P: heartbeats for undecided pulls, batched per engine, and read notifications. A
 * failed send is counted, never fatal: P's lease expiry covers a lost message.
 */
final class NotificationOutbox {

    /** Keeps one heartbeat well inside a NIXL notification. */
    private static final int HEARTBEAT_BYTES = 4000;

    private final ConsumerConfig config;
    private final ConsumerCounters counters;

    NotificationOutbox(ConsumerState state) {
        this.config = state.config;
        this.counters = state.counters;
    }

    /**
     * Every peer whose heartbeat is due gets {@code HB:} messages on each of its ranks the pulls read,
     * each lease named with its nonce (L12).
     */
    int sendHeartbeats(Collection<RemotePeer> peers, long now) {
        int sent = 0;
        for (RemotePeer peer : peers) {
            if (peer.heartbeatDue(now)) {
                List<LeaseNotification.LeaseRef> leases = peer.undecided().stream()
                        .map(p -> new LeaseNotification.LeaseRef(p.remoteRequestId(),
                                LeaseVerification.nonceOf(p.params())))
                        .distinct().toList();
                for (int q = 0; q < peer.ranks().size(); q++) {
                    sent += sendHeartbeat(via(peer, q), leases);
                }
                peer.heartbeatSent(now, config.heartbeatInterval().toMillis());
            }
        }
        return sent;
    }

    /**
     * L6: sent only by {@link Decider#decide} for a clean pull, so after its slot check: each decode
     * rank tells each prefill rank it read how many readers to expect, with the lease's nonce (L11).
     */
    void notifyRead(Pull pull) {
        long nonce = LeaseVerification.nonceOf(pull.params());
        for (SliceChannel channel : pull.peer().slices()) {
            int q = channel.slice().prefillRank();
            byte[] message = new LeaseNotification.Read(pull.remoteRequestId(),
                    pull.peer().mapping().consumersOf(q), nonce).encode();
            send(channel, message, counters.notificationsSent);
        }
    }

    /**
     * D gave the pull up (aborted, timed out) and will use none of P's bytes: P may release the lease
     * now rather than at expiry (vLLM PR #41269). A READ still in flight keeps only D's quarantined
     * blocks, never P's, so P reusing its blocks at once cannot reach any KV D uses.
     */
    void notifyGivenUp(Pull pull) {
        notifyRead(pull);
        counters.givenUpNotices.incrementAndGet();
    }

    private static SliceChannel via(RemotePeer peer, int q) {
        return peer.slices().stream().filter(s -> s.slice().prefillRank() == q).findFirst().orElseThrow();
    }

    private int sendHeartbeat(SliceChannel via, List<LeaseNotification.LeaseRef> leases) {
        int sent = 0;
        List<LeaseNotification.LeaseRef> chunk = new ArrayList<>();
        int bytes = 0;
        for (LeaseNotification.LeaseRef lease : leases) {
            int entry = LeaseNotification.Heartbeat.entryBytes(lease);
            if (!chunk.isEmpty() && bytes + entry > HEARTBEAT_BYTES) {
                sent += send(via, new LeaseNotification.Heartbeat(chunk).encode(), counters.heartbeatsSent);
                chunk = new ArrayList<>();
                bytes = 0;
            }
            chunk.add(lease);
            bytes += entry;
        }
        if (!chunk.isEmpty()) {
            sent += send(via, new LeaseNotification.Heartbeat(chunk).encode(), counters.heartbeatsSent);
        }
        return sent;
    }

    private int send(SliceChannel via, byte[] message, AtomicLong counter) {
        try {
            via.rank().agent().sendNotification(via.remoteAgent(), message);
            counter.incrementAndGet();
            return 1;
        } catch (TransferException e) {
            counters.notificationFailures.incrementAndGet();
            return 0;
        }
    }
}
