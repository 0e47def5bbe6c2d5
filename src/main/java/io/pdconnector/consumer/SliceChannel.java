package io.pdconnector.consumer;

import io.pdconnector.kv.HeadSlice;
import io.pdconnector.transfer.PreparedDescriptors;

/**
 * The prepared lists one decode rank reads one prefill rank's head slice with: entry
 * {@code block * runs + run} of either list is that run of that block, so a READ's indices pair up.
 */
record SliceChannel(HeadSlice slice, ConsumerRank rank, String remoteAgent, int runs,
        PreparedDescriptors remote, PreparedDescriptors local) {

    /** The list entries of {@code blocks}: the block ids themselves when a block is one run (not to be changed). */
    int[] indices(int[] blocks) {
        if (runs == 1) {
            return blocks;
        }
        int[] out = new int[Math.multiplyExact(blocks.length, runs)];
        for (int i = 0; i < blocks.length; i++) {
            for (int r = 0; r < runs; r++) {
                out[i * runs + r] = blocks[i] * runs + r;
            }
        }
        return out;
    }

    void release() {
        rank.agent().release(remote);
        rank.agent().release(local);
    }
}
