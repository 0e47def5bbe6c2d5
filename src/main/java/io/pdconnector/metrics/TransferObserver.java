package io.pdconnector.metrics;

import io.pdconnector.consumer.DeclineReason;

/**
 * What the step loops report as it happens, for metrics. Called on a loop thread, so an
 * implementation must be cheap and must not block; every method has a no-op default.
 */
public interface TransferObserver {

    TransferObserver NONE = new TransferObserver() { };

    /** A block READ completed: its bytes and descriptors, time in the post call and post to completion. */
    default void blockReadDone(long bytes, int descriptors, long postNanos, long transferNanos) {
    }

    /** A block READ failed at post or while polled. */
    default void blockReadFailed() {
    }

    /** A pull was decided: {@code reason} null for a clean receive. */
    default void pullDecided(DeclineReason reason, boolean recomputed) {
    }

    /** A lease ended (all readers, expiry or abort) after being held for {@code heldMillis} since export. */
    default void leaseReleased(long heldMillis) {
    }

    /** One step of a loop that did work took {@code nanos}. */
    default void step(String loop, long nanos) {
    }
}
