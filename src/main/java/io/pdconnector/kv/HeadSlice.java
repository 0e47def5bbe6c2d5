package io.pdconnector.kv;

/**
 * The heads one decoder rank reads from one prefill rank: global heads
 * {@code [firstHead, firstHead + heads)}, which lie in both ranks' ranges.
 */
public record HeadSlice(int decodeRank, int prefillRank, int firstHead, int heads) {

    /** Number of (offset, length) runs per block, and their layout on either side. */
    public int runsPerBlock(ModelGeometry g, int prefillTp, int decodeTp) {
        return coversWholeRank(g, prefillTp) && coversWholeRank(g, decodeTp) ? 1
                : g.layers() * g.attention().planes();
    }

    public long runBytes(ModelGeometry g, int prefillTp, int decodeTp) {
        return runsPerBlock(g, prefillTp, decodeTp) == 1 ? g.blockBytes(prefillTp) : heads * g.headRunBytes();
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
        if (runsPerBlock(g, prefillTp, decodeTp) == 1) {
            return 0;
        }
        int perRank = g.headsPerRank(tp);
        int localHead = firstHead - rank * perRank;
        return ((long) run * perRank + localHead) * g.headRunBytes();
    }

    private boolean coversWholeRank(ModelGeometry g, int tp) {
        return heads == g.headsPerRank(tp);
    }
}
