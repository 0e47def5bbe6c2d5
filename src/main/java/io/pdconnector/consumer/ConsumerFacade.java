package io.pdconnector.consumer;

import io.pdconnector.loop.Deadlines;
import io.pdconnector.protocol.KvTransferParams;
import java.time.Duration;

/** What the HTTP layer calls on D: each call submits to the step loop and waits with a deadline. */
public final class ConsumerFacade {

    private final PullScheduler scheduler;
    private final Duration deadline;

    public ConsumerFacade(PullScheduler scheduler, Duration deadline) {
        this.scheduler = scheduler;
        this.deadline = deadline;
    }

    public PullOutcome pull(String requestId, int[] tokens, KvTransferParams params) {
        return Deadlines.await(scheduler.submitPull(requestId, tokens, params), deadline, "pull " + requestId);
    }

    public boolean matchesReference(String requestId) {
        return Deadlines.await(scheduler.submitMatchesReference(requestId), deadline, "check " + requestId);
    }

    /** The pulled KV bytes of a received or recomputed pull (see {@link PullScheduler#submitReadKv}). */
    public byte[] readKv(String requestId) {
        return Deadlines.await(scheduler.submitReadKv(requestId), deadline, "read KV of " + requestId);
    }

    public long kvChecksum(String requestId) {
        return Deadlines.await(scheduler.submitKvChecksum(requestId), deadline, "checksum of " + requestId);
    }

    public PullStatus status(String requestId) {
        return Deadlines.await(scheduler.submitStatus(requestId), deadline, "status of " + requestId);
    }

    public void finish(String requestId) {
        Deadlines.await(scheduler.submitFinish(requestId), deadline, "finish " + requestId);
    }

    public void abort(String requestId) {
        Deadlines.await(scheduler.submitAbort(requestId), deadline, "abort " + requestId);
    }
}
