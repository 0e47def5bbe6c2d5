package io.pdconnector.producer;

import java.util.concurrent.CompletableFuture;
import java.util.function.IntSupplier;
import org.jboss.logging.Logger;

/**
 * The one place P's step turns a bug into one request's failure. Commands and the per-lease phases
 * ({@link Admission}, {@link Exporter}, {@link Reaper}) run each request's share of their work
 * through {@link #guard}: an unexpected exception (or an {@link OutOfMemoryError}) fails that
 * request's caller with an internal error (500), releases its lease through the normal exit
 * ({@link LeaseExit}: slot zeroed on every rank, then blocks and slot back, L3/L4), and the step goes
 * on with the others.
 */
final class RequestGuard {

    private static final Logger LOG = Logger.getLogger(RequestGuard.class);

    private final ProducerState state;
    private final LeaseExit exit;

    RequestGuard(ProducerState state, LeaseExit exit) {
        this.state = state;
        this.exit = exit;
    }

    /**
     * Runs {@code work} (it returns how much it did); on a bug, fails {@code reply} (if any) and
     * releases the lease of {@code requestId} (if given and still held); counts 1.
     */
    int guard(String requestId, CompletableFuture<?> reply, IntSupplier work) {
        try {
            return work.getAsInt();
        } catch (RuntimeException | OutOfMemoryError e) {
            fail(requestId, reply, e);
            return 1;
        }
    }

    private void fail(String requestId, CompletableFuture<?> reply, Throwable cause) {
        LOG.errorf(cause, "request %s failed in the step of %s; it alone is failed and the loop goes on",
                requestId, state.config.engineId());
        state.counters.requestsFailed.incrementAndGet();
        if (reply != null) {
            reply.completeExceptionally(new IllegalStateException("request " + requestId
                    + " failed on the step loop", cause));
        }
        Lease lease = requestId == null ? null : state.leases.find(requestId);
        if (lease != null && lease.anyRankHeld()) {
            state.scheduled.remove(lease);
            state.ranks.forEach(r -> r.dropWrite(lease)); // its slot stays zero: the exit's clear comes first (L2)
            exit.allRanks(lease);
        }
    }
}
