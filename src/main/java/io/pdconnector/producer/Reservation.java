package io.pdconnector.producer;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * What an engine needs to write a reserved request's KV itself. Each rank's KV region is laid out
 * block after block ({@code blockBytes} each, block {@code b} at byte {@code b * blockBytes}); a
 * local engine maps {@link RankRegion#file}, any other uploads {@link #uploadBytes} bytes: for each
 * block of {@code blockIds} in order, each rank's {@code blockBytes} slice in rank order.
 */
public record Reservation(String requestId, int numTokens, int[] blockIds, boolean hasLease, long blockBytes,
        List<RankRegion> ranks) {

    /** One rank's KV region: its shared file (none when the region is anonymous memory) and size. */
    public record RankRegion(int rank, Optional<Path> file, long regionBytes) {
    }

    public Reservation {
        blockIds = blockIds.clone();
        ranks = List.copyOf(ranks);
    }

    @Override
    public int[] blockIds() {
        return blockIds.clone();
    }

    public long uploadBytes() {
        return blockIds.length * blockBytes * ranks.size();
    }
}
