package io.pdconnector.consumer;

/**
 * A consistent view of what the consumer holds, taken on its step loop. {@code blockReadsInFlight}
 * counts every block READ handle held, the quarantine's too; {@code quarantinedBlocks} are blocks of
 * ended pulls that a READ may still write (L13).
 */
public record ConsumerSnapshot(int freeBlocks, int totalBlocks, int pulls, int blockReadsInFlight,
        int slotReadsInFlight, int peers, int quarantinedBlocks) {

    /** Nothing held beyond the peers' prepared lists: every block free, no pull, no READ. */
    public boolean idle() {
        return freeBlocks == totalBlocks && pulls == 0 && blockReadsInFlight == 0 && slotReadsInFlight == 0;
    }
}
