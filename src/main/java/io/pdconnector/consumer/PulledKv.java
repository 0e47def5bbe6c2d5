package io.pdconnector.consumer;

import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.transfer.RankKv;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32C;

/**
 * A decided pull's KV where it sits, in D's local blocks, for a caller's thread to read (the pull
 * reply's CRC-32C and reference check, when asked for), so that reading it costs the step loop nothing. The
 * order is {@link KvReadout}'s: block by block, each rank's slice in rank order. {@link #regions} say where
 * those blocks are for a local engine that maps D's KV files: it reads them in place until it releases the
 * pull (the loop keeps the blocks until then, or until {@code pd.consumer.retention} has passed), and
 * {@link #blocksEpoch} lets it check afterwards that no later pull had them meanwhile.
 *
 * <p>A reader {@link #pin}s it first and {@link #unpin}s it when done. The loop frees the blocks only
 * once it has {@link #retire}d it, which succeeds only while no reader holds a pin; until then the blocks
 * wait in {@link PinnedBlocks}. A pin taken after the retirement fails: the pull was released meanwhile.
 */
public final class PulledKv {

    private static final int RETIRED = -1;

    private final List<RankKv> ranks;
    private final List<KvRegion> regions;
    private final int[] blocks;
    private final int[] tokens;
    private final long rankBlockBytes;
    private final int tp;
    private final long blocksEpoch;
    /** Readers holding a pin, or {@link #RETIRED} once the loop has let the blocks go. */
    private final AtomicInteger pins = new AtomicInteger();

    PulledKv(List<RankKv> ranks, List<KvRegion> regions, int[] blocks, int[] tokens, long rankBlockBytes,
            long blocksEpoch) {
        this.ranks = List.copyOf(ranks);
        this.regions = List.copyOf(regions);
        this.blocks = blocks.clone();
        this.tokens = tokens;
        this.rankBlockBytes = rankBlockBytes;
        this.tp = ranks.size();
        this.blocksEpoch = blocksEpoch;
    }

    /**
     * The epoch every block of the pull has in each rank's epoch table while the pull holds it
     * ({@link ConsumerRank}); 0 when the regions have no table (anonymous memory, a VRAM pool).
     */
    public long blocksEpoch() {
        return blocksEpoch;
    }

    /** True if the KV can be read until {@link #unpin}; false once the pull was released. */
    public boolean pin() {
        for (int n; (n = pins.get()) != RETIRED;) {
            if (pins.compareAndSet(n, n + 1)) {
                return true;
            }
        }
        return false;
    }

    /** Ends a successful {@link #pin}: the loop may free the blocks from its next step on. */
    public void unpin() {
        if (pins.getAndDecrement() <= 0) {
            pins.incrementAndGet();
            throw new IllegalStateException("unpin without a pin");
        }
    }

    /** Loop thread: true if no reader holds a pin, and then none ever will; the blocks may be freed. */
    boolean retire() {
        return pins.get() == RETIRED || pins.compareAndSet(0, RETIRED);
    }

    /** Each decode rank's KV region, in rank order: its file (if shared) and size. */
    public List<KvRegion> regions() {
        return regions;
    }

    /** One rank's slice of a block: block {@code b} of a rank starts at byte {@code b * rankBlockBytes()}. */
    public long rankBlockBytes() {
        return rankBlockBytes;
    }

    /** Bytes in all: blocks × ranks × one rank's slice of a block. */
    public long bytes() {
        return (long) blocks.length * tp * rankBlockBytes;
    }

    /** CRC-32C of the bytes {@code GET .../kv} returns, read in place (Java's CRC32C is an intrinsic). */
    public long crc32c() {
        requirePinned();
        List<MemorySegment> host = host("a KV checksum");
        CRC32C crc = new CRC32C();
        for (int block : blocks) {
            for (MemorySegment rank : host) {
                crc.update(rank.asSlice(block * rankBlockBytes, rankBlockBytes).asByteBuffer());
            }
        }
        return crc.getValue();
    }

    /** Whether the blocks hold exactly {@code reference}'s KV of the pull's prompt, on every rank. */
    public boolean matches(ReferenceEngine reference) {
        requirePinned();
        List<MemorySegment> host = host("a reference check of pulled KV");
        for (int r = 0; r < tp; r++) {
            if (!reference.matches(host.get(r), blocks, tokens, tp, r)) {
                return false;
            }
        }
        return true;
    }

    /** A copy of the bytes, in {@link KvReadout}'s order. */
    public byte[] copy() {
        requirePinned();
        List<MemorySegment> host = host("a KV read-out");
        byte[] out = new byte[Math.toIntExact(bytes())];
        int at = 0;
        for (int block : blocks) {
            for (MemorySegment rank : host) {
                MemorySegment.copy(rank, ValueLayout.JAVA_BYTE, block * rankBlockBytes, out, at, (int) rankBlockBytes);
                at += (int) rankBlockBytes;
            }
        }
        return out;
    }

    /** Every rank's host bytes, or the refusal of a rank whose KV is in GPU memory, before anything is read. */
    private List<MemorySegment> host(String use) {
        return ranks.stream().map(r -> r.hostSegment(use)).toList();
    }

    private void requirePinned() {
        if (pins.get() <= 0) {
            throw new IllegalStateException("read the pulled KV only between pin() and unpin()");
        }
    }
}
