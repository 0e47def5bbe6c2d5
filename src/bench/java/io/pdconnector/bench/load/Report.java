package io.pdconnector.bench.load;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The figures of a run, one a line: {@code name value unit}. Per row: counts, rate, bandwidth,
 * p50/p90/p99 of every leg, outcomes by kind; with the raw READ baseline its percentiles and the
 * ratios the targets are stated in; with {@code --compare verification} the on/off ratios.
 */
public final class Report {

    /** One printed figure. */
    public record Figure(String name, double value, String unit) {

        public String line() {
            boolean whole = unit.equals("requests") || unit.equals("count") || unit.equals("blocks");
            String v = Double.isNaN(value) ? "NaN"
                    : whole ? Long.toString(Math.round(value)) : String.format(Locale.ROOT, "%.3f", value);
            return name + " " + v + " " + unit;
        }
    }

    private final List<Figure> figures = new ArrayList<>();

    public List<Figure> figures() {
        return List.copyOf(figures);
    }

    public void add(String name, double value, String unit) {
        figures.add(new Figure(name, value, unit));
    }

    /** The value of the named figure; NaN if there is none. */
    public double value(String name) {
        return figures.stream().filter(f -> f.name().equals(name)).mapToDouble(Figure::value).findFirst()
                .orElse(Double.NaN);
    }

    public void print(PrintStream out) {
        figures.forEach(f -> out.println(f.line()));
    }

    /** Adds every figure of {@code rows} and, where a row has an on and an off pair, their ratios. */
    public static Report of(List<RowStats> rows) {
        Report r = new Report();
        rows.forEach(r::addRow);
        Map<String, RowStats> on = new LinkedHashMap<>();
        Map<String, RowStats> off = new LinkedHashMap<>();
        for (RowStats row : rows) {
            String key = "c" + row.concurrency + "_" + row.tokens.label();
            if (row.pair.equals("on")) {
                on.put(key, row);
            } else if (row.pair.equals("off")) {
                off.put(key, row);
            }
        }
        on.forEach((key, a) -> {
            RowStats b = off.get(key);
            if (b != null) {
                r.addComparison(key, a, b);
            }
        });
        return r;
    }

    private void addRow(RowStats row) {
        String p = row.label;
        add(p + "_requests", row.finished(), "requests");
        add(p + "_seconds", row.seconds(), "s");
        add(p + "_requests_per_s", row.requestsPerSecond(), "req/s");
        add(p + "_gb_per_s", row.gigabytesPerSecond(), "GB/s");
        for (String leg : RowStats.LEGS) {
            LatencySummary s = row.leg(leg);
            if (s.count() > 0) {
                for (int pct : new int[] {50, 90, 99}) {
                    add(p + "_" + leg + "_p" + pct, s.percentile(pct), "ms");
                }
            }
        }
        row.outcomes().forEach((kind, n) -> add(p + "_outcome_" + kind, n, "requests"));
        row.releaseFailures().forEach((kind, n) -> add(p + "_release_failed_" + kind, n, "requests"));
        RawReadResult raw = row.raw();
        if (raw != null) {
            LatencySummary s = raw.summary();
            add(p + "_raw_read_p50", s.p50(), "ms");
            add(p + "_raw_read_p90", s.p90(), "ms");
            add(p + "_raw_read_p99", s.p99(), "ms");
            add(p + "_raw_reads_per_s", raw.readsPerSecond(), "reads/s");
            add(p + "_raw_read_gb_per_s", raw.gigabytesPerSecond(), "GB/s");
            add(p + "_raw_read_mismatched_blocks", raw.mismatchedBlocks(), "blocks");
            double pull = row.leg("pull").p50();
            add(p + "_pull_p50_over_raw_read_p50", pull / s.p50(), "ratio");
            TrivialHttpResult trivial = row.trivial();
            if (trivial != null) {
                add(p + "_http_status_p50", trivial.status().p50(), "ms");
                add(p + "_http_live_p50", trivial.live().p50(), "ms");
                add(p + "_pull_p50_over_raw_read_plus_http_p50", pull / (s.p50() + trivial.status().p50()), "ratio");
            }
            add(p + "_requests_per_s_over_raw_reads_per_s", row.requestsPerSecond() / raw.readsPerSecond(), "ratio");
        }
    }

    private void addComparison(String key, RowStats on, RowStats off) {
        String p = "on_over_off_" + key;
        for (String leg : new String[] {"pull", "total"}) {
            for (int pct : new int[] {50, 99}) {
                add(p + "_" + leg + "_p" + pct, on.leg(leg).percentile(pct) / off.leg(leg).percentile(pct), "ratio");
            }
        }
        add(p + "_requests_per_s", on.requestsPerSecond() / off.requestsPerSecond(), "ratio");
    }
}
