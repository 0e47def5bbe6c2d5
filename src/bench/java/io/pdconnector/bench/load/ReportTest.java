package io.pdconnector.bench.load;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

class ReportTest {

    private static final long MS = 1_000_000L;
    private static final TokenDistribution T32 = TokenDistribution.parse("32");

    /** Requests whose pull took 1..100 ms (prefill 1 ms, release 0.5 ms), 393,216 bytes each. */
    private static RowStats row(String pair, int c, double pullScale, long measuredMs) {
        RowStats s = new RowStats((pair.isEmpty() ? "" : pair + "_") + "c" + c + "_t32", pair, c, T32);
        for (int i = 1; i <= 100; i++) {
            long pull = Math.round(i * MS * pullScale);
            s.record(new LoadClient.Result("received", MS, pull, MS / 2, MS + pull + MS / 2, 393_216, pull / 2,
                    Map.of("d_post", pull / 4), null),
                    i * MS);
        }
        s.addChunk(0, measuredMs * MS, measuredMs * MS);
        return s;
    }

    @Test
    void percentiles_ofKnownLatencies_withinTheHistogramsResolution() {
        RowStats s = row("", 1, 1.0, 2_000);

        LatencySummary pull = s.leg("pull");
        assertEquals(100, pull.count());
        assertEquals(50.0, pull.p50(), 0.05); // 3 significant digits: within 0.1 %
        assertEquals(90.0, pull.p90(), 0.09);
        assertEquals(99.0, pull.p99(), 0.1);
        assertEquals(100.0, pull.max(), 0.1);
        assertEquals(50.5, pull.mean(), 0.06);
        assertEquals(1.0, s.leg("prefill").p50(), 0.001);
        assertEquals(0.5, s.leg("release").p99(), 0.001);
        assertEquals(51.5, s.leg("total").p50(), 0.06);
        assertEquals(25.0, s.leg("pull_in_d").p50(), 0.03);
        assertEquals(12.5, s.leg("d_post").p50(), 0.02);
        assertEquals(0, s.leg("d_read").count(), "a phase D did not report is not timed");
    }

    @Test
    void rates_areOverTheMeasuredTime_only() {
        RowStats s = row("", 16, 1.0, 2_000);
        s.record(new LoadClient.Result("declined:lease_mismatch", MS, MS, -1, 2 * MS, 0, -1, Map.of(), null), 200 * MS);
        s.record(new LoadClient.Result("http:503", MS, -1, -1, MS, 0, -1, Map.of(), "release_http:500"), 201 * MS);

        assertEquals(102, s.finished());
        assertEquals(100, s.succeeded());
        assertEquals(51.0, s.requestsPerSecond(), 1e-9, "102 requests in 2 s");
        assertEquals(100 * 393_216 / 2.0 / 1e9, s.gigabytesPerSecond(), 1e-12);
        assertEquals(100, s.leg("pull").count(), "failed requests are counted by outcome, not timed");
        assertEquals(Map.of("received", 100L, "declined:lease_mismatch", 1L, "http:503", 1L), s.outcomes());
        assertEquals(Map.of("release_http:500", 1L), s.releaseFailures());
    }

    @Test
    void throughputBuckets_countFinishesPerSecond_inWholeBucketsOfTheChunk() {
        long s = 1_000_000_000L;
        long[] finishes = {9 * s, 10 * s, 10 * s + 1, 10 * s + s / 4, 11 * s + s / 2, 12 * s + s / 4, 14 * s};

        assertArrayEquals(new double[] {6, 0, 0, 2}, RowStats.throughput(finishes, 10 * s, 12 * s + 4 * s / 10, s / 2),
                1e-9, "the finish at 9 s is before the chunk; 12.25 s is in its partial last bucket");
        assertArrayEquals(new double[] {8}, RowStats.throughput(finishes, 10 * s, 10 * s + s / 4, s), 1e-9,
                "a chunk shorter than a bucket is one bucket of its own width: 2 finishes in [10 s, 10.25 s)");
        assertEquals(0, RowStats.throughput(finishes, s, s, s).length);
    }

    @Test
    void report_printsEveryFigure_withRawReadRatios_andOnOffRatios() {
        RowStats on = row("on", 1, 1.2, 2_000);
        RowStats off = row("off", 1, 1.0, 2_500);
        Histogram raw = LatencySummary.newHistogram();
        for (int i = 0; i < 100; i++) {
            raw.recordValue(20 * MS);
        }
        on.raw(new RawReadResult(1, 100, 100 * 393_216L, 1_000 * MS, raw, 0));
        on.trivial(new TrivialHttpResult(new LatencySummary(10, 10.0, 11, 12, 13, 10), LatencySummary.EMPTY));

        Report r = Report.of(List.of(on, off));

        assertEquals(60.0, r.value("on_c1_t32_pull_p50"), 0.06);
        assertEquals(50.0, r.value("off_c1_t32_pull_p50"), 0.05);
        assertEquals(50.0, r.value("on_c1_t32_requests_per_s"), 1e-9);
        assertEquals(40.0, r.value("off_c1_t32_requests_per_s"), 1e-9);
        assertEquals(100.0, r.value("on_c1_t32_raw_reads_per_s"), 1e-9);
        assertEquals(20.0, r.value("on_c1_t32_raw_read_p50"), 0.02);
        assertEquals(3.0, r.value("on_c1_t32_pull_p50_over_raw_read_p50"), 0.005);
        assertEquals(2.0, r.value("on_c1_t32_pull_p50_over_raw_read_plus_http_p50"), 0.005, "60 / (20 + 10)");
        assertEquals(0.5, r.value("on_c1_t32_requests_per_s_over_raw_reads_per_s"), 1e-9);
        assertEquals(1.2, r.value("on_over_off_c1_t32_pull_p50"), 0.003);
        assertEquals(1.25, r.value("on_over_off_c1_t32_requests_per_s"), 1e-9);
        assertTrue(Double.isNaN(r.value("off_c1_t32_raw_read_p50")), "no raw READ for the off row");

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        r.print(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String printed = "\n" + bytes.toString(StandardCharsets.UTF_8);
        assertTrue(printed.contains("\non_c1_t32_requests 100 requests\n"), printed);
        assertTrue(printed.contains("\non_c1_t32_outcome_received 100 requests\n"), printed);
        assertTrue(printed.contains("\non_over_off_c1_t32_requests_per_s 1.250 ratio\n"), printed);
        for (String line : printed.strip().split("\n")) {
            assertEquals(3, line.split(" ").length, "name value unit: " + line);
        }
        assertFalse(printed.contains("release_failed"), printed);
    }
}
