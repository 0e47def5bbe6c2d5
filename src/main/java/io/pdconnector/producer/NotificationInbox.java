package io.pdconnector.producer;

import io.pdconnector.config.PdConfig;
import io.pdconnector.protocol.LeaseNotification;
import io.pdconnector.transfer.NotificationSink;

/**
 * What a prefill rank does with the notifications decoders send it. Any peer can send any bytes and
 * request ids are no secret; the nonce is, so it is what a notification is believed by. Heartbeats
 * extend live leases only (L8), and only with the lease's nonce (L12). A read notification counts
 * only against the exported lease it names and with its nonce (L6, L11): a late reader of an
 * earlier attempt with the same request id is ignored and counted stale (and, as its lease is gone,
 * after expiry, as vLLM counts a reader that finished after P let go), one without a nonce is
 * refused unless the lease has no slot (and so no nonce), and one claiming more readers than any TP
 * mapping gives a rank is refused. Each distinct sender counts once, so a duplicated message cannot
 * stand in for a second reader. A read that names no lease but carries a nonce P granted an engine
 * ({@link Credits}) reached P before the engine's commit: it is kept and counted at the commit. What the engine dropped unread (over
 * {@code TransferAgent.MAX_NOTIFICATION_BYTES}) is counted too.
 */
final class NotificationInbox {

    private final ProducerState state;
    private final LeaseExit exit;
    private final Credits credits;
    private final long extensionMillis;
    /**
     * A decode rank reads at least one head, so no more decode ranks read one prefill rank than it has heads;
     * MLA's latent is read whole by every decode rank, so by at most the largest TP.
     */
    private final int maxConsumers;

    NotificationInbox(ProducerState state, LeaseExit exit, Credits credits) {
        this.state = state;
        this.exit = exit;
        this.credits = credits;
        credits.replayReadsWith((lease, read) -> count(lease, read.rank(), read.from(), read.consumers()));
        this.extensionMillis = state.config.heartbeatExtensionMillis();
        this.maxConsumers = state.config.geometry().maxReadersPerRank(state.config.tpSize(), PdConfig.MAX_TP_SIZE);
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
            case LeaseNotification.Heartbeat hb -> hb.leases().forEach(lease -> heartbeat(lease, now));
            case LeaseNotification.Read read -> onRead(rank, from, read);
            case LeaseNotification.Malformed m -> state.counters.malformedNotifications.incrementAndGet();
        }
    }

    private void heartbeat(LeaseNotification.LeaseRef named, long now) {
        Lease lease = state.leases.find(named.requestId());
        if (lease != null && lease.isLive(now) && named.nonce() != lease.nonce()) {
            state.counters.notificationsRefusedNonce.incrementAndGet();
            return;
        }
        boolean extended = lease != null && lease.extend(now, extensionMillis);
        (extended ? state.counters.heartbeatsApplied : state.counters.heartbeatsIgnored).incrementAndGet();
    }

    private void onRead(int rank, String from, LeaseNotification.Read read) {
        Lease lease = state.leases.find(read.requestId());
        if (lease == null && credits.stashEarlyRead(read.nonce(),
                new Credit.EarlyRead(read.requestId(), rank, from, read.consumers()))) {
            state.counters.earlyNotifications.incrementAndGet();
            return;
        }
        if (!isCurrent(lease, read)) {
            boolean unsigned = lease != null && lease.hasSlot() && read.nonce() == LeaseNotification.NO_NONCE;
            if (unsigned) {
                state.counters.notificationsRefusedNonce.incrementAndGet();
                return;
            }
            state.counters.staleNotifications.incrementAndGet();
            if (lease == null || lease.nonce() != read.nonce()) {
                state.counters.notificationsAfterExpiry.incrementAndGet();
            }
            return;
        }
        count(lease, rank, from, read.consumers());
    }

    /** A read of the lease it names, with its nonce: counted once per sender; the last one starts the rank's exit. */
    private void count(Lease lease, int rank, String from, int consumers) {
        if (consumers > maxConsumers) {
            state.counters.notificationsRefusedConsumers.incrementAndGet();
            return;
        }
        switch (lease.recordReader(rank, from, consumers)) {
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
     * (L6), so a reader of an earlier attempt cannot release this one; without a nonce only a lease
     * that has none, having no slot (L11).
     */
    private static boolean isCurrent(Lease lease, LeaseNotification.Read read) {
        return lease != null && lease.state().compareTo(LeaseState.EXPORTED) >= 0 && read.nonce() == lease.nonce();
    }
}
