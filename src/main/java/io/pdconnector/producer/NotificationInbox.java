package io.pdconnector.producer;

import io.pdconnector.protocol.LeaseNotification;
import io.pdconnector.transfer.NotificationSink;

/**
 * What a prefill rank does with the notifications decoders send it. Heartbeats extend live leases
 * only (L8). A read notification counts only against the live lease it names: with a nonce, the
 * nonce must be the lease's, so a late reader of an earlier attempt with the same request id is
 * ignored and counted stale; without one (an unverifying decoder, L10) it is taken at its word.
 * Each distinct sender counts once, so a duplicated message cannot stand in for a second reader.
 * What the engine dropped unread (over {@code TransferAgent.MAX_NOTIFICATION_BYTES}) is counted too.
 */
final class NotificationInbox {

    private final ProducerState state;
    private final LeaseExit exit;
    private final long extensionMillis;

    NotificationInbox(ProducerState state, LeaseExit exit) {
        this.state = state;
        this.exit = exit;
        this.extensionMillis = state.config.heartbeatExtensionMillis();
    }

    /** Everything every rank's agent received since the last step. */
    int drain(long now) {
        int work = 0;
        for (ProducerRank rank : state.ranks) {
            work += rank.drainNotifications(sink(rank.rank(), now));
        }
        return work;
    }

    private NotificationSink sink(int rank, long now) {
        return new NotificationSink() {
            @Override
            public void accept(String from, byte[] message) {
                NotificationInbox.this.accept(rank, from, message, now);
            }

            @Override
            public void dropped(int count) {
                state.counters.droppedNotifications.addAndGet(count);
            }
        };
    }

    private void accept(int rank, String from, byte[] message, long now) {
        switch (LeaseNotification.parse(message)) {
            case LeaseNotification.Heartbeat hb -> hb.requestIds().forEach(id -> heartbeat(id, now));
            case LeaseNotification.Read read -> onRead(rank, from, read);
            case LeaseNotification.Malformed m -> state.counters.malformedNotifications.incrementAndGet();
        }
    }

    private void heartbeat(String requestId, long now) {
        Lease lease = state.leases.find(requestId);
        boolean extended = lease != null && lease.extend(now, extensionMillis);
        (extended ? state.counters.heartbeatsApplied : state.counters.heartbeatsIgnored).incrementAndGet();
    }

    private void onRead(int rank, String from, LeaseNotification.Read read) {
        Lease lease = state.leases.find(read.requestId());
        if (!isCurrent(lease, read)) {
            state.counters.staleNotifications.incrementAndGet();
            return;
        }
        switch (lease.recordReader(rank, from, read.consumers())) {
            case DUPLICATE -> state.counters.duplicateNotifications.incrementAndGet();
            case COUNTED -> { }
            case RANK_COMPLETE -> {
                exit.rank(lease, rank);
                if (lease.allRanksExiting()) {
                    state.counters.leasesReleasedByReaders.incrementAndGet();
                }
            }
        }
    }

    /**
     * Whether a read notification is for the lease the id holds now: exported, and with its nonce
     * (L6), so a reader of an earlier attempt cannot release this one.
     */
    private static boolean isCurrent(Lease lease, LeaseNotification.Read read) {
        return lease != null && lease.state().compareTo(LeaseState.EXPORTED) >= 0
                && (read.nonce() == LeaseNotification.NO_NONCE || lease.hasSlot() && read.nonce() == lease.nonce());
    }
}
