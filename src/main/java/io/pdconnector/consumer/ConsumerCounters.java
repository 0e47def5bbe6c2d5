package io.pdconnector.consumer;

import java.util.concurrent.atomic.AtomicLong;

/** What the consumer step loop counts; readable from any thread. */
public final class ConsumerCounters {

    public final AtomicLong received = new AtomicLong();
    public final AtomicLong declined = new AtomicLong();
    public final AtomicLong recomputed = new AtomicLong();
    /** L7: pulls whose lease check failed (mismatch, failed slot READ, missing lease fields). */
    public final AtomicLong leaseCheckFailures = new AtomicLong();
    public final AtomicLong slotReads = new AtomicLong();
    public final AtomicLong slotReadPolls = new AtomicLong();
    public final AtomicLong heartbeatsSent = new AtomicLong();
    public final AtomicLong notificationsSent = new AtomicLong();
    public final AtomicLong notificationFailures = new AtomicLong();
    public final AtomicLong handshakes = new AtomicLong();
    /** Release notifications for pulls D gave up (aborted, timed out), so P frees its lease before expiry. */
    public final AtomicLong givenUpNotices = new AtomicLong();
    /** Handshakes a pull had to wait for (the registry's announcement had not reached the loop yet). */
    public final AtomicLong handshakesOnPull = new AtomicLong();
    /** Producers refused at handshake: incompatible, over the limits, or claiming another engine's agent. */
    public final AtomicLong peersRefused = new AtomicLong();
    /** Handshaken producers dropped to keep at most pd.consumer.max-peers. */
    public final AtomicLong peersEvicted = new AtomicLong();
    /** Pulls failed by an unexpected exception in the step (a bug), answered 500; the loop went on. */
    public final AtomicLong pullsFailed = new AtomicLong();
    /** Pulls whose caller went away (its HTTP client disconnected) before they were decided: aborted, or never started. */
    public final AtomicLong callerGone = new AtomicLong();
    /** Decode ranks that joined a pull another of D's ranks started, instead of starting a second one. */
    public final AtomicLong joins = new AtomicLong();
    /** Decided pulls released by D after {@code pd.consumer.retention} because nobody read or released them. */
    public final AtomicLong expiredUnread = new AtomicLong();
    /** Block READs still in flight when their pull ended, held until NIXL reported them terminal (L13). */
    public final AtomicLong readsQuarantined = new AtomicLong();
    /** D blocks held back with such READs instead of being freed at once (L13). */
    public final AtomicLong blocksQuarantined = new AtomicLong();
}
