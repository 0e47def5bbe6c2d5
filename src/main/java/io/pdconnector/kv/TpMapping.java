package io.pdconnector.kv;

import java.util.ArrayList;
import java.util.List;

/**
 * Which heads each decode rank reads from which prefill rank. With more decode ranks than prefill
 * ranks, each decode rank reads its slice from one prefill rank; with fewer, it reads several.
 */
public final class TpMapping {

    private final int prefillTp;
    private final int decodeTp;
    private final List<HeadSlice> slices;

    public TpMapping(ModelGeometry geometry, int prefillTp, int decodeTp) {
        this.prefillTp = prefillTp;
        this.decodeTp = decodeTp;
        int perP = geometry.headsPerRank(prefillTp);
        int perD = geometry.headsPerRank(decodeTp);
        List<HeadSlice> all = new ArrayList<>();
        for (int d = 0; d < decodeTp; d++) {
            for (int p = 0; p < prefillTp; p++) {
                int first = Math.max(d * perD, p * perP);
                int end = Math.min((d + 1) * perD, (p + 1) * perP);
                if (first < end) {
                    all.add(new HeadSlice(d, p, first, end - first));
                }
            }
        }
        this.slices = List.copyOf(all);
    }

    public int prefillTp() {
        return prefillTp;
    }

    public int decodeTp() {
        return decodeTp;
    }

    public List<HeadSlice> slices() {
        return slices;
    }

    /** How many decode ranks read prefill rank {@code p}: the consumers count of its notification. */
    public int consumersOf(int prefillRank) {
        return (int) slices.stream().filter(s -> s.prefillRank() == prefillRank).count();
    }

    /** The lowest decode rank reading prefill rank {@code p}; it posts that rank's slot READs. */
    public int slotReaderOf(int prefillRank) {
        return slices.stream().filter(s -> s.prefillRank() == prefillRank).mapToInt(HeadSlice::decodeRank)
                .min().orElseThrow();
    }
}
