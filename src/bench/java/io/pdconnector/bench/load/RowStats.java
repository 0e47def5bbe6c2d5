package io.pdconnector.bench.load;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.HdrHistogram.Histogram;

/**
 * Everything recorded for one row (one pair of services, one concurrency, one length distribution):
 * a latency histogram per leg (of requests that got their KV; the others are counted by outcome),
 * outcomes by kind, release failures, KV bytes, and when each request finished (for throughput over
 * time). The row's measured time is the sum of its chunks' wall times, so interleaved chunks of two
 * pairs do not count each other's time. Thread-safe.
 */
public final class RowStats {

    /** The legs, in the order they are printed. */
    public static final String[] LEGS = {"prefill", "pull", "release", "total", "pull_in_d", "d_to_loop", "d_queued",
        "d_post", "d_read", "d_slot_check", "d_to_reply", "d_checksum"};

    /** The phases of a pull D reports in its reply's {@code timings} ({@code <phase>_ms}), legs {@code d_<phase>}. */
    public static final String[] D_PHASES = {"to_loop", "queued", "post", "read", "slot_check", "to_reply", "checksum"};

    public final String label;
    public final String pair;
    public final int concurrency;
    public final TokenDistribution tokens;
    private final Map<String, Histogram> legs = new LinkedHashMap<>();
    private final Map<String, Long> outcomes = new TreeMap<>();
    private final Map<String, Long> releaseFailures = new TreeMap<>();
    private long bytes;
    private long finished;
    private long measuredNanos;
    private long[] finishedAt = new long[1024];
    private final List<long[]> chunks = new ArrayList<>();
    private RawReadResult raw;
    private TrivialHttpResult trivial;

    public RowStats(String label, String pair, int concurrency, TokenDistribution tokens) {
        this.label = label;
        this.pair = pair;
        this.concurrency = concurrency;
        this.tokens = tokens;
        for (String leg : LEGS) {
            legs.put(leg, LatencySummary.newHistogram());
        }
    }

    /** Records one request that finished at {@code atNanos} since the run started. */
    public synchronized void record(LoadClient.Result r, long atNanos) {
        outcomes.merge(r.outcome(), 1L, Long::sum);
        if (r.releaseFailure() != null) {
            releaseFailures.merge(r.releaseFailure(), 1L, Long::sum);
        }
        if (r.succeeded()) {
            add("prefill", r.prefillNs());
            add("pull", r.pullNs());
            add("release", r.releaseNs());
            add("total", r.totalNs());
            add("pull_in_d", r.pullInDNs());
            r.inDPhasesNs().forEach(this::add);
            bytes += r.bytes();
        }
        if (finished == finishedAt.length) {
            finishedAt = Arrays.copyOf(finishedAt, finishedAt.length * 2);
        }
        finishedAt[(int) finished++] = atNanos;
    }

    private void add(String leg, long nanos) {
        if (nanos >= 0) {
            legs.get(leg).recordValue(Math.max(1, nanos));
        }
    }

    /**
     * Adds one chunk of this row, from {@code start} to {@code end} nanoseconds since the run started,
     * of which {@code measured} count for the rates (all of it, unless the prefills went ahead).
     */
    public synchronized void addChunk(long start, long end, long measured) {
        chunks.add(new long[] {start, end});
        measuredNanos += measured;
    }

    public synchronized LatencySummary leg(String leg) {
        return LatencySummary.of(legs.get(leg));
    }

    /** A copy of the leg's histogram, for the CDF plot. */
    public synchronized Histogram histogram(String leg) {
        return legs.get(leg).copy();
    }

    public synchronized Map<String, Long> outcomes() {
        return new TreeMap<>(outcomes);
    }

    public synchronized Map<String, Long> releaseFailures() {
        return new TreeMap<>(releaseFailures);
    }

    public synchronized long finished() {
        return finished;
    }

    public synchronized long succeeded() {
        return outcomes.getOrDefault(LoadClient.Result.RECEIVED, 0L)
                + outcomes.getOrDefault(LoadClient.Result.RECOMPUTED, 0L);
    }

    public synchronized long bytes() {
        return bytes;
    }

    public synchronized double seconds() {
        return measuredNanos / 1e9;
    }

    /** Finished requests (any outcome) per second of the row's measured time. */
    public synchronized double requestsPerSecond() {
        return measuredNanos == 0 ? Double.NaN : finished / (measuredNanos / 1e9);
    }

    /** KV bytes pulled per second of the row's measured time, in GB/s (10^9 bytes). */
    public synchronized double gigabytesPerSecond() {
        return measuredNanos == 0 ? Double.NaN : bytes / (double) measuredNanos;
    }

    public synchronized void raw(RawReadResult result) {
        this.raw = result;
    }

    /** The raw READ baseline of this row, or null without --raw-read. */
    public synchronized RawReadResult raw() {
        return raw;
    }

    public synchronized void trivial(TrivialHttpResult result) {
        this.trivial = result;
    }

    /** The trivial HTTP round trips of this row, or null without --raw-read. */
    public synchronized TrivialHttpResult trivial() {
        return trivial;
    }

    /** When each request finished, in nanoseconds since the run started, sorted. */
    public synchronized long[] finishTimes() {
        long[] t = Arrays.copyOf(finishedAt, (int) finished);
        Arrays.sort(t);
        return t;
    }

    /**
     * Requests finished per second in consecutive whole buckets of {@code bucketNanos} from
     * {@code from} (bucket i starts at from + i * bucketNanos), counting the finishes in [from, to);
     * those after the last whole bucket are left out (a partial bucket would understate the rate),
     * unless the span is shorter than one bucket, which is then one bucket as wide as the span.
     */
    public static double[] throughput(long[] sortedFinishTimes, long from, long to, long bucketNanos) {
        long span = to - from;
        if (span <= 0) {
            return new double[0];
        }
        int buckets = (int) Math.max(1, span / bucketNanos);
        long width = Math.min(bucketNanos, span);
        double[] rate = new double[buckets];
        for (long t : sortedFinishTimes) {
            if (t >= from && t < to) {
                long b = (t - from) / width;
                if (b < buckets) {
                    rate[(int) b] += 1e9 / width;
                }
            }
        }
        return rate;
    }

    /** The row's chunks: {start, end} in nanoseconds since the run started, in order. */
    public synchronized List<long[]> chunks() {
        return chunks.stream().map(long[]::clone).toList();
    }
}
