package io.pdconnector.bench.load;

/** Round trips, one at a time, to D's {@code GET /v1/status} and {@code GET /q/health/live}. */
public record TrivialHttpResult(LatencySummary status, LatencySummary live) {
}
