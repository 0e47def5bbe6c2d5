package io.pdconnector.consumer;

import io.pdconnector.loop.StepObserver;

/** What D's step loop reports as it happens, for metrics; cheap and non-blocking (loop thread). */
public interface PullObserver extends StepObserver {

    PullObserver NONE = new PullObserver() { };

    /** A block READ completed: its bytes and descriptors, time in the post call and post to completion. */
    default void blockReadDone(long bytes, int descriptors, long postNanos, long transferNanos) {
    }

    /** A block READ failed at post or while polled. */
    default void blockReadFailed() {
    }

    /** A pull was decided: {@code reason} null for a clean receive. */
    default void pullDecided(DeclineReason reason, boolean recomputed) {
    }
}
