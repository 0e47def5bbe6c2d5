package io.pdconnector.bench.load;

import java.net.URI;
import org.HdrHistogram.Histogram;

/**
 * Round trips to endpoints of D that do no work of note, one at a time: {@code GET /v1/status}
 * (a blocking resource, dispatched to a worker thread as the pull is, that reads published gauges
 * without asking a step loop) and {@code GET /q/health/live}. What HTTP alone costs on this host.
 */
public final class TrivialHttp {

    /** Unrecorded round trips first: as many as the JIT needs to compile the path (50 left it cold). */
    static final int WARMUP = 1000;

    private TrivialHttp() {
    }

    public static TrivialHttpResult measure(Http http, URI service, int count, long maxNanos) throws Exception {
        return new TrivialHttpResult(LatencySummary.of(times(http, service, "/v1/status", count, maxNanos / 2)),
                LatencySummary.of(times(http, service, "/q/health/live", count, maxNanos / 2)));
    }

    private static Histogram times(Http http, URI service, String path, int count, long maxNanos) throws Exception {
        Histogram h = LatencySummary.newHistogram();
        int warmup = WARMUP;
        long end = System.nanoTime() + maxNanos;
        for (int i = 0; i < warmup + count && System.nanoTime() < end; i++) {
            long t0 = System.nanoTime();
            Http.Reply r = http.get(service, path);
            long t = System.nanoTime() - t0;
            if (r.status() != 200) {
                throw new IllegalStateException("GET " + service + path + " answered " + r.status());
            }
            if (i >= warmup) {
                h.recordValue(Math.max(1, t));
            }
        }
        return h;
    }
}
