package io.pdconnector.reference;

import java.util.ArrayList;
import java.util.List;

/**
 * The reference engine's decode: {@code n} output tokens (words of a fixed list) drawn from a
 * seed that is a digest of the prompt's KV ({@link KvDigest}). Not a language model: it only has
 * to make the answer a function of the KV bytes the decoder actually holds, so that KV from another
 * prompt, or corrupted KV, shows as a different answer, and the same KV always gives the same one.
 * Token {@code i} does not depend on {@code n}, so a 1-token answer is the first token of a longer one.
 */
public final class ReferenceDecoder {

    private static final List<String> WORDS = List.of(
            "alpha", "amber", "anchor", "arrow", "aspen", "atlas", "autumn", "azure",
            "badger", "basalt", "beacon", "birch", "bison", "blossom", "boulder", "breeze",
            "cactus", "canyon", "cedar", "cinder", "clover", "comet", "coral", "crane",
            "delta", "desert", "dolphin", "dune", "eagle", "ember", "falcon", "fern",
            "fjord", "glacier", "granite", "harbor", "hazel", "heron", "island", "ivory",
            "jasper", "juniper", "kestrel", "lagoon", "lantern", "linden", "lotus", "maple",
            "meadow", "meteor", "nebula", "oasis", "orchid", "otter", "pebble", "prairie",
            "quartz", "raven", "ridge", "river", "sequoia", "summit", "tundra", "willow");

    private ReferenceDecoder() {
    }

    public static List<String> decode(long seed, int n) {
        if (n < 0) {
            throw new IllegalArgumentException("cannot decode " + n + " tokens");
        }
        List<String> words = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long z = mix(seed + (i + 1) * 0x9E3779B97F4A7C15L);
            words.add(WORDS.get((int) Long.remainderUnsigned(z, WORDS.size())));
        }
        return words;
    }

    /** SplitMix64's finaliser, as in {@link ReferenceEngine}. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
