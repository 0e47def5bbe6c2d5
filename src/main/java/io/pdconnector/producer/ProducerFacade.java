package io.pdconnector.producer;

import io.pdconnector.loop.Deadlines;
import io.pdconnector.protocol.KvTransferParams;
import java.time.Duration;

/** What the HTTP layer calls on P: each call submits to the step loop and waits with a deadline. */
public final class ProducerFacade {

    private final LeaseScheduler scheduler;
    private final Duration deadline;

    public ProducerFacade(LeaseScheduler scheduler, Duration deadline) {
        this.scheduler = scheduler;
        this.deadline = deadline;
    }

    /** Prefills the prompt for a remote decoder and returns the params to forward to it. */
    public KvTransferParams prefill(String requestId, int[] tokens) {
        return Deadlines.await(scheduler.submitPrefill(requestId, tokens), deadline, "prefill " + requestId);
    }

    /** Reserves blocks for an engine that writes the KV itself (see {@link LeaseScheduler#submitReserve}). */
    public Reservation reserve(String requestId, int numTokens) {
        return Deadlines.await(scheduler.submitReserve(requestId, numTokens), deadline, "reserve " + requestId);
    }

    /** Copies an engine's upload into the request's blocks. */
    public void writeKv(String requestId, byte[] kv) {
        Deadlines.await(scheduler.submitWriteKv(requestId, kv), deadline, "KV upload of " + requestId);
    }

    /** Exports a reserved request whose KV the engine wrote; returns the params to forward to D. */
    public KvTransferParams finish(String requestId) {
        return Deadlines.await(scheduler.submitFinish(requestId), deadline, "finish " + requestId);
    }

    public LeaseStatus status(String requestId) {
        return Deadlines.await(scheduler.submitStatus(requestId), deadline, "status of " + requestId);
    }

    /** Releases the request's blocks now: its slot is zeroed first, so a late reader is declined. */
    public void abort(String requestId) {
        Deadlines.await(scheduler.submitAbort(requestId), deadline, "abort " + requestId);
    }
}
