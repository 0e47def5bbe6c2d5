package io.pdconnector.producer;

import java.util.concurrent.atomic.AtomicLong;

/** What the producer step loop counts; readable from any thread (metrics, tests). */
public final class ProducerCounters {

    public final AtomicLong leasesExported = new AtomicLong();
    public final AtomicLong exportsWithoutSlot = new AtomicLong();
    public final AtomicLong leasesExpired = new AtomicLong();
    /** Expired leases whose heartbeats asked to keep them past {@code pd.lease.max-lifetime} (also in expired). */
    public final AtomicLong leasesAtMaxLifetime = new AtomicLong();
    public final AtomicLong leasesAborted = new AtomicLong();
    /** Engine reservations taken back because their engine did not finish them in time. */
    public final AtomicLong reservationsAbandoned = new AtomicLong();
    public final AtomicLong leasesReleasedByReaders = new AtomicLong();
    public final AtomicLong staleNotifications = new AtomicLong();
    /**
     * Read notifications naming a lease P no longer holds (expired, aborted, or its id taken by a later
     * attempt): vLLM's {@code nixl_num_notifications_after_expiry}, per notification. Also counted stale.
     */
    public final AtomicLong notificationsAfterExpiry = new AtomicLong();
    public final AtomicLong duplicateNotifications = new AtomicLong();
    public final AtomicLong malformedNotifications = new AtomicLong();
    /**
     * Read notifications without a nonce for a lease with a slot (L11), and heartbeats for a live lease
     * whose nonce is missing or not the lease's (L12): a peer that knows the request id, not the nonce.
     */
    public final AtomicLong notificationsRefusedNonce = new AtomicLong();
    /** Read notifications claiming more readers than any TP mapping gives one prefill rank (L11). */
    public final AtomicLong notificationsRefusedConsumers = new AtomicLong();
    /** Notifications the transfer engine dropped unread: over {@code TransferAgent.MAX_NOTIFICATION_BYTES}. */
    public final AtomicLong droppedNotifications = new AtomicLong();
    public final AtomicLong heartbeatsApplied = new AtomicLong();
    public final AtomicLong heartbeatsIgnored = new AtomicLong();
    /** Requests failed by an unexpected exception in the step (a bug), answered 500; the loop went on. */
    public final AtomicLong requestsFailed = new AtomicLong();
    /** Grants of blocks and lease slots to an engine ({@link Credit}), and requests it committed to them. */
    public final AtomicLong creditsGranted = new AtomicLong();
    public final AtomicLong creditCommits = new AtomicLong();
    /** Grants taken back because their engine neither committed nor returned them in time. */
    public final AtomicLong creditsExpired = new AtomicLong();
    /** Grants taken back because their engine never heard the answer to the ask that made them. */
    public final AtomicLong creditsWithdrawn = new AtomicLong();
    /** Read notifications for a granted nonce that reached P before the engine's commit: counted at the commit. */
    public final AtomicLong earlyNotifications = new AtomicLong();
}
