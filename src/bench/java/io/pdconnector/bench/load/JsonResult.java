package io.pdconnector.bench.load;

import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** The run's result as one JSON document: options, machine, fleet, every row, every printed figure. */
public final class JsonResult {

    /** Width of the throughput-over-time buckets, in the JSON and the plot. */
    public static final long BUCKET_NANOS = 500_000_000L;

    private final ObjectNode root = Http.JSON.createObjectNode();

    public ObjectNode root() {
        return root;
    }

    public ObjectNode object(String name) {
        return root.putObject(name);
    }

    public void rows(List<RowStats> rows) {
        ArrayNode out = root.putArray("rows");
        for (RowStats row : rows) {
            ObjectNode r = out.addObject();
            r.put("label", row.label);
            r.put("pair", row.pair);
            r.put("concurrency", row.concurrency);
            r.put("tokens", row.tokens.toString());
            r.put("requests", row.finished());
            r.put("succeeded", row.succeeded());
            r.put("seconds", row.seconds());
            r.put("requests_per_s", row.requestsPerSecond());
            r.put("kv_bytes", row.bytes());
            r.put("gb_per_s", row.gigabytesPerSecond());
            ObjectNode legs = r.putObject("legs_ms");
            for (String leg : RowStats.LEGS) {
                LatencySummary s = row.leg(leg);
                if (s.count() > 0) {
                    legs.set(leg, summary(s));
                }
            }
            ObjectNode outcomes = r.putObject("outcomes");
            row.outcomes().forEach(outcomes::put);
            ObjectNode failures = r.putObject("release_failures");
            row.releaseFailures().forEach(failures::put);
            RawReadResult raw = row.raw();
            if (raw != null) {
                ObjectNode rr = r.putObject("raw_read");
                rr.put("concurrency", raw.concurrency());
                rr.put("reads", raw.reads());
                rr.put("kv_bytes", raw.bytes());
                rr.put("seconds", raw.nanos() / 1e9);
                rr.put("reads_per_s", raw.readsPerSecond());
                rr.put("gb_per_s", raw.gigabytesPerSecond());
                rr.put("mismatched_blocks", raw.mismatchedBlocks());
                rr.set("latency_ms", summary(raw.summary()));
            }
            TrivialHttpResult trivial = row.trivial();
            if (trivial != null) {
                ObjectNode t = r.putObject("trivial_http_ms");
                t.set("get_v1_status", summary(trivial.status()));
                t.set("get_q_health_live", summary(trivial.live()));
            }
            long[] times = row.finishTimes();
            ArrayNode chunks = r.putArray("chunks");
            for (long[] chunk : row.chunks()) {
                ObjectNode c = chunks.addObject();
                c.put("from_s", chunk[0] / 1e9);
                c.put("to_s", chunk[1] / 1e9);
                c.put("bucket_s", Math.min(BUCKET_NANOS, chunk[1] - chunk[0]) / 1e9);
                ArrayNode tp = c.putArray("requests_per_s");
                for (double v : RowStats.throughput(times, chunk[0], chunk[1], BUCKET_NANOS)) {
                    tp.add(v);
                }
            }
        }
    }

    public void figures(Report report) {
        ArrayNode out = root.putArray("figures");
        for (Report.Figure f : report.figures()) {
            ObjectNode n = out.addObject();
            n.put("name", f.name());
            n.put("value", f.value());
            n.put("unit", f.unit());
        }
    }

    public void map(String name, Map<String, ?> values) {
        ObjectNode n = root.putObject(name);
        values.forEach((k, v) -> n.putPOJO(k, v));
    }

    private static ObjectNode summary(LatencySummary s) {
        ObjectNode n = Http.JSON.createObjectNode();
        n.put("count", s.count());
        n.put("p50", s.p50());
        n.put("p90", s.p90());
        n.put("p99", s.p99());
        n.put("max", s.max());
        n.put("mean", s.mean());
        return n;
    }

    public void write(Path file) throws IOException {
        Files.createDirectories(file.getParent());
        Http.JSON.copy().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), root);
    }
}
