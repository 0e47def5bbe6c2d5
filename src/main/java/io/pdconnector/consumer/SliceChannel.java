package io.pdconnector.consumer;

import io.pdconnector.kv.HeadSlice;
import io.pdconnector.transfer.PreparedDescriptors;

/**
 * The prepared lists one decode rank reads one prefill rank's head slice with: entry
 * {@code block * runs + run} of either list is that run of that block, so a READ's indices pair up.
 */
record SliceChannel(HeadSlice slice, ConsumerRank rank, String remoteAgent, int runs,
        PreparedDescriptors remote, PreparedDescriptors local) {

    int[] indices(int[] blocks) {
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
