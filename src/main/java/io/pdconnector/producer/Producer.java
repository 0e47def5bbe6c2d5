package io.pdconnector.producer;

import io.pdconnector.lease.Deadlines;
import io.pdconnector.lease.LeaseScheduler;
import java.time.Duration;

/** What the HTTP layer calls on P: each call submits to the step loop and waits with a deadline. */
public final class Producer {

    private final LeaseScheduler scheduler;
    private final Duration deadline;

    public Producer(LeaseScheduler scheduler, Duration deadline) {
        this.scheduler = scheduler;
        this.deadline = deadline;
    }

    /** Prefills the prompt for a remote decoder and returns the params to forward to it. */
    public KvTransferParams prefill(String requestId, int[] tokens) {
        return Deadlines.await(scheduler.submitPrefill(requestId, tokens), deadline, "prefill " + requestId);
    }

    /** Releases the request's blocks now: its slot is zeroed first, so a late reader is declined. */
    public void abort(String requestId) {
        Deadlines.await(scheduler.submitAbort(requestId), deadline, "abort " + requestId);
    }
}
