package io.pdconnector.consumer;

/**
 * One pull as D's step loop sees it. {@code reason} is set once a pull was declined or recomputed;
 * {@code deadlineInMillis} only while undecided (negative: timed out, declined in this step);
 * {@code localBlocks} is null until the pull got D's blocks.
 */
public record PullStatus(String requestId, PullState state, DeclineReason reason, Long deadlineInMillis,
        int[] localBlocks) {

    public PullStatus {
        localBlocks = localBlocks == null ? null : localBlocks.clone();
    }

    @Override
    public int[] localBlocks() {
        return localBlocks == null ? null : localBlocks.clone();
    }
}
