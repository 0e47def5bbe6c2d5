package io.pdconnector.bench.load;

import org.HdrHistogram.Histogram;

/**
 * The raw NIXL READ baseline of one row: {@code reads} READs of the blocks of {@code concurrency}
 * prefilled requests, that many in flight, in {@code nanos} of wall time; latency from post to done.
 * {@code mismatchedBlocks} counts blocks whose bytes were not the reference KV of their prompt.
 */
public record RawReadResult(int concurrency, long reads, long bytes, long nanos, Histogram latency,
        long mismatchedBlocks) {

    public LatencySummary summary() {
        return LatencySummary.of(latency);
    }

    public double readsPerSecond() {
        return nanos == 0 ? Double.NaN : reads / (nanos / 1e9);
    }

    public double gigabytesPerSecond() {
        return nanos == 0 ? Double.NaN : bytes / (double) nanos;
    }
}
