package io.pdconnector.testing;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Bytes that are a pure function of (seed, offset), so two processes agree on them without sharing any. */
public final class SeededBytes {

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;

    private SeededBytes() {
    }

    public static long word(long seed, long offset) {
        long z = seed * 0x9E3779B97F4A7C15L + offset;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** Fills a whole segment (length a multiple of 8) with the words of {@code seed}. */
    public static void fill(MemorySegment segment, long seed) {
        for (long off = 0; off < segment.byteSize(); off += 8) {
            segment.set(LONG, off, word(seed, off));
        }
    }

    /**
     * The first offset in {@code actual} (length {@code len}) that differs from what the source at
     * {@code sourceOffset} held under {@code seed}, or -1 when every byte matches.
     */
    public static long firstMismatch(MemorySegment actual, long at, long len, long seed, long sourceOffset) {
        for (long i = 0; i < len; i += 8) {
            if (actual.get(LONG, at + i) != word(seed, sourceOffset + i)) {
                return at + i;
            }
        }
        return -1;
    }
}
