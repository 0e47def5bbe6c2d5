package io.pdconnector.consumer;

/**
 * How a pull ended. {@code reason} is null for a clean RECEIVED; for RECOMPUTED it says why the
 * received KV was not used. {@code localBlockIds} hold the KV until the caller releases the pull.
 */
public record PullOutcome(String requestId, PullState state, DeclineReason reason, int[] localBlockIds) {

    public PullOutcome {
        localBlockIds = localBlockIds.clone();
    }

    @Override
    public int[] localBlockIds() {
        return localBlockIds.clone();
    }
}
