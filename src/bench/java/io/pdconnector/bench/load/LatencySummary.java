package io.pdconnector.bench.load;

import org.HdrHistogram.Histogram;

/** Percentiles of one latency histogram (recorded in nanoseconds), in milliseconds. */
public record LatencySummary(long count, double p50, double p90, double p99, double max, double mean) {

    public static final LatencySummary EMPTY = new LatencySummary(0, Double.NaN, Double.NaN, Double.NaN, Double.NaN,
            Double.NaN);

    /** The summary of {@code h}; {@link #EMPTY} when it holds nothing. */
    public static LatencySummary of(Histogram h) {
        if (h.getTotalCount() == 0) {
            return EMPTY;
        }
        return new LatencySummary(h.getTotalCount(), ms(h.getValueAtPercentile(50)), ms(h.getValueAtPercentile(90)),
                ms(h.getValueAtPercentile(99)), ms(h.getMaxValue()), h.getMean() / 1e6);
    }

    /** A histogram for nanosecond latencies from 1 ns to an hour, to 3 significant digits. */
    public static Histogram newHistogram() {
        return new Histogram(1, 3_600_000_000_000L, 3);
    }

    private static double ms(long nanos) {
        return nanos / 1e6;
    }

    public double percentile(int p) {
        return switch (p) {
            case 50 -> p50;
            case 90 -> p90;
            case 99 -> p99;
            default -> throw new IllegalArgumentException("p" + p);
        };
    }
}
