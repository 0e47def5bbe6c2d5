package io.pdconnector.consumer;

/** A consistent view of what the consumer holds, taken on its step loop. */
public record ConsumerSnapshot(int freeBlocks, int totalBlocks, int pulls, int blockReadsInFlight,
        int slotReadsInFlight, int peers) {

    /** Nothing held beyond the peers' prepared lists: every block free, no pull, no READ. */
    public boolean idle() {
        return freeBlocks == totalBlocks && pulls == 0 && blockReadsInFlight == 0 && slotReadsInFlight == 0;
    }
}
