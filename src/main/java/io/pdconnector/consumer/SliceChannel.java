package io.pdconnector.consumer;

import io.pdconnector.kv.HeadSlice;
import io.pdconnector.transfer.PreparedDescriptors;

/**
 * The prepared lists one decode rank reads one prefill rank's head slice with: entry
 * {@code block * runs + run} of either list is that run of that block, so a READ's indices pair up.
 * {@code runsOfSegments[k]} is how many leading runs of a block hold its first {@code k} KV cache group segments:
 * a block a window group has left is read without that group's layers. {@code minReadBytes} is its shortest run:
 * the smallest READ UCX is asked for on it.
 */
record SliceChannel(HeadSlice slice, ConsumerRank rank, String remoteAgent, int runs, int[] runsOfSegments,
        long minReadBytes, PreparedDescriptors remote, PreparedDescriptors local) {

    /**
     * The list entries of {@code blocks}, block {@code i} with its first {@code segments[i]} segments: the block
     * ids themselves when each is one whole run (not to be changed).
     */
    int[] indices(int[] blocks, int[] segments) {
        int whole = runsOfSegments[runsOfSegments.length - 1];
        int count = 0;
        boolean everyBlockWhole = true;
        for (int i = 0; i < blocks.length; i++) {
            int r = runsOfSegments[segments[i]];
            count = Math.addExact(count, r);
            everyBlockWhole &= r == whole;
        }
        if (runs == 1 && everyBlockWhole) {
            return blocks;
        }
        int[] out = new int[count];
        int n = 0;
        for (int i = 0; i < blocks.length; i++) {
            for (int r = 0; r < runsOfSegments[segments[i]]; r++) {
                out[n++] = blocks[i] * runs + r;
            }
        }
        return out;
    }

    void release() {
        rank.agent().release(remote);
        rank.agent().release(local);
    }
}
