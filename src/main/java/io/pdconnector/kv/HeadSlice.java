package io.pdconnector.kv;

/**
 * The heads one decoder rank reads from one prefill rank: global heads
 * {@code [firstHead, firstHead + heads)}, which lie in both ranks' ranges.
 *
 * <p>A block is read as runs: one per KV cache group's segment ({@link KvGroups}) where the slice is every head of
 * both ranks, else one per layer and plane (the slice's heads of it). The runs of a block's first {@code k}
 * segments come first, so a block read without its stale window layers is a prefix of its runs.
 */
public record HeadSlice(int decodeRank, int prefillRank, int firstHead, int heads) {

    /** Number of (offset, length) runs per block, and their layout on either side. */
    public int runsPerBlock(ModelGeometry g, int prefillTp, int decodeTp) {
        return runsOfSegments(g, prefillTp, decodeTp, g.groupLayout().segments());
    }

    /** The runs of a block's first {@code segments} segments. */
    public int runsOfSegments(ModelGeometry g, int prefillTp, int decodeTp, int segments) {
        return wholeRanks(g, prefillTp, decodeTp) ? segments
                : g.groupLayout().layersBefore(segments) * g.attention().planes();
    }

    /** Bytes of run {@code run} of a block. */
    public long runBytes(ModelGeometry g, int prefillTp, int decodeTp, int run) {
        return wholeRanks(g, prefillTp, decodeTp) ? g.layerBytes(g.groupLayout().layersOf(run), prefillTp)
                : heads * g.headRunBytes();
    }

    /** Offset of run {@code run} inside a prefill rank's block. */
    public long prefillOffset(ModelGeometry g, int prefillTp, int decodeTp, int run) {
        return offset(g, prefillTp, prefillRank, run, prefillTp, decodeTp);
    }

    /** Offset of run {@code run} inside a decode rank's block. */
    public long decodeOffset(ModelGeometry g, int prefillTp, int decodeTp, int run) {
        return offset(g, decodeTp, decodeRank, run, prefillTp, decodeTp);
    }

    private long offset(ModelGeometry g, int tp, int rank, int run, int prefillTp, int decodeTp) {
        if (wholeRanks(g, prefillTp, decodeTp)) {
            return g.layerBytes(g.groupLayout().layersBefore(run), tp);
        }
        int perRank = g.headsPerRank(tp);
        int localHead = firstHead - rank * perRank;
        return ((long) run * perRank + localHead) * g.headRunBytes();
    }

    private boolean wholeRanks(ModelGeometry g, int prefillTp, int decodeTp) {
        return heads == g.headsPerRank(prefillTp) && heads == g.headsPerRank(decodeTp);
    }
}
