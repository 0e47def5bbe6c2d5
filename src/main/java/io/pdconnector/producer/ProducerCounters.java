package io.pdconnector.producer;

import java.util.concurrent.atomic.AtomicLong;

/** What the producer step loop counts; readable from any thread (metrics, tests). */
public final class ProducerCounters {

    public final AtomicLong leasesExported = new AtomicLong();
    public final AtomicLong exportsWithoutSlot = new AtomicLong();
    public final AtomicLong leasesExpired = new AtomicLong();
    public final AtomicLong leasesAborted = new AtomicLong();
    /** Engine reservations taken back because their engine did not finish them in time. */
    public final AtomicLong reservationsAbandoned = new AtomicLong();
    public final AtomicLong leasesReleasedByReaders = new AtomicLong();
    public final AtomicLong staleNotifications = new AtomicLong();
    public final AtomicLong duplicateNotifications = new AtomicLong();
    public final AtomicLong malformedNotifications = new AtomicLong();
    /** Notifications the transfer engine dropped unread: over {@code TransferAgent.MAX_NOTIFICATION_BYTES}. */
    public final AtomicLong droppedNotifications = new AtomicLong();
    public final AtomicLong heartbeatsApplied = new AtomicLong();
    public final AtomicLong heartbeatsIgnored = new AtomicLong();
    /** Requests failed by an unexpected exception in the step (a bug), answered 500; the loop went on. */
    public final AtomicLong requestsFailed = new AtomicLong();
}
