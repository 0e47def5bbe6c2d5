package io.pdconnector.kv;

import java.util.ArrayList;
import java.util.List;

/**
 * Which heads each decode rank reads from which prefill rank. With more decode ranks than prefill
 * ranks, each decode rank reads its slice from one prefill rank; with fewer, it reads several. With
 * MLA every decode rank reads the whole latent from the one prefill rank that holds it
 * ({@link ModelGeometry#kvRanks}).
 */
public final class TpMapping {

    private final int prefillTp;
    private final int decodeTp;
    private final List<HeadSlice> slices;

    public TpMapping(ModelGeometry geometry, int prefillTp, int decodeTp) {
        this.prefillTp = prefillTp;
        this.decodeTp = decodeTp;
        if (geometry.replicated()) {
            if (prefillTp != 1) {
                throw new IllegalArgumentException("an MLA prefill instance holds its latent on one rank, not "
                        + prefillTp);
            }
            List<HeadSlice> all = new ArrayList<>();
            for (int d = 0; d < decodeTp; d++) {
                all.add(new HeadSlice(d, 0, 0, geometry.kvHeads()));
            }
            this.slices = List.copyOf(all);
            return;
        }
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
