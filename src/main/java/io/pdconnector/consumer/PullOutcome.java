package io.pdconnector.consumer;

/**
 * How a pull ended. {@code reason} is null for a clean RECEIVED; for RECOMPUTED it says why the
 * received KV was not used. {@code localBlockIds} hold the KV until the caller releases the pull;
 * {@code kv} (null when declined) reads it in place, off the step loop; {@code timeline} says when it
 * passed each phase on the loop.
 */
public record PullOutcome(String requestId, PullState state, DeclineReason reason, int[] localBlockIds,
        PulledKv kv, PullTimeline timeline) {

    public PullOutcome {
        localBlockIds = localBlockIds.clone();
    }

    @Override
    public int[] localBlockIds() {
        return localBlockIds.clone();
    }

    /** The same outcome for a caller that arrived on the loop at {@code arrivedNanos} (a joining rank). */
    PullOutcome seenFrom(long arrivedNanos) {
        return new PullOutcome(requestId, state, reason, localBlockIds, kv, timeline.seenFrom(arrivedNanos));
    }
}
