package io.pdconnector.producer;

import io.pdconnector.protocol.LeaseNotification;

/**
 * What a prefill rank does with the notifications decoders send it. Heartbeats extend live leases
 * only (L8). A read notification counts only against the live lease it names: with a nonce, the
 * nonce must be the lease's, so a late reader of an earlier attempt with the same request id is
 * ignored and counted stale; without one (an unverifying decoder, L10) it is taken at its word.
 * Each distinct sender counts once, so a duplicated message cannot stand in for a second reader.
 */
final class NotificationInbox {

    /** Starts rank {@code rank}'s exit from {@code lease}: the owner queues the slot clear. */
    interface RankExit {
        void exit(Lease lease, int rank);
    }

    private final LeaseTable leases;
    private final ProducerCounters counters;
    private final long extensionMillis;
    private final RankExit rankExit;

    NotificationInbox(LeaseTable leases, ProducerCounters counters, long extensionMillis, RankExit rankExit) {
        this.leases = leases;
        this.counters = counters;
        this.extensionMillis = extensionMillis;
        this.rankExit = rankExit;
    }

    void accept(int rank, String from, byte[] message, long now) {
        switch (LeaseNotification.parse(message)) {
            case LeaseNotification.Heartbeat hb -> hb.requestIds().forEach(id -> heartbeat(id, now));
            case LeaseNotification.Read read -> onRead(rank, from, read);
            case LeaseNotification.Malformed m -> counters.malformedNotifications.incrementAndGet();
        }
    }

    private void heartbeat(String requestId, long now) {
        Lease lease = leases.find(requestId);
        boolean extended = lease != null && lease.extend(now, extensionMillis);
        (extended ? counters.heartbeatsApplied : counters.heartbeatsIgnored).incrementAndGet();
    }

    private void onRead(int rank, String from, LeaseNotification.Read read) {
        Lease lease = leases.find(read.requestId());
        boolean current = lease != null && lease.state().compareTo(LeaseState.EXPORTED) >= 0
                && (read.nonce() == LeaseNotification.NO_NONCE || lease.hasSlot() && read.nonce() == lease.nonce());
        if (!current) {
            counters.staleNotifications.incrementAndGet();
            return;
        }
        switch (lease.recordReader(rank, from, read.consumers())) {
            case DUPLICATE -> counters.duplicateNotifications.incrementAndGet();
            case COUNTED -> { }
            case RANK_COMPLETE -> {
                rankExit.exit(lease, rank);
                if (lease.allRanksExiting()) {
                    counters.leasesReleasedByReaders.incrementAndGet();
                }
            }
        }
    }
}
