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

    /**
     * What decode rank {@code decodeRank}'s READs of producer {@code peer}'s rank {@code prefillRank} take, as the
     * transfer library reported it: first known, or changed. {@code kvMemory} is the producer's ({@code host} or
     * {@code cuda}); {@code transport} the transports joined with {@code +}, or {@code undetermined}.
     */
    default void readTransport(String peer, int decodeRank, int prefillRank, String kvMemory, String transport) {
    }

    /** Producer {@code peer}'s handshake was dropped: what was reported for it no longer holds. */
    default void readTransportsForgotten(String peer) {
    }

    /** A pull was decided: {@code reason} null for a clean receive. */
    default void pullDecided(DeclineReason reason, boolean recomputed) {
    }
}
