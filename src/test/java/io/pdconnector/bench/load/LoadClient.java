package io.pdconnector.bench.load;

/**
 * Drives one request through P and D the way a router does, and says what happened. Never throws
 * for what the services answer: every answer (and every call that got none) is an outcome, and the
 * client releases what the request holds on either side whatever the outcome.
 */
public interface LoadClient {

    Result run(Workload.Request request);

    /** The warm-up tag for the figures (native or openai). */
    String api();

    /**
     * What one request came to. Legs are nanoseconds, -1 when the leg did not run; {@code bytes} the
     * KV bytes D pulled; {@code pullInD} D's own {@code timings.pull_ms} in nanoseconds (-1 if not
     * reported); {@code releaseFailure} the kind of a failed release, or null.
     */
    record Result(String outcome, long prefillNs, long pullNs, long releaseNs, long totalNs, long bytes,
            long pullInDNs, String releaseFailure) {

        public static final String RECEIVED = "received";
        public static final String RECOMPUTED = "recomputed";

        /** The request got its KV (received, or recomputed by D's policy). */
        public boolean succeeded() {
            return RECEIVED.equals(outcome) || RECOMPUTED.equals(outcome);
        }

        static Result failed(String outcome, long prefillNs, long pullNs, long totalNs, String releaseFailure) {
            return new Result(outcome, prefillNs, pullNs, -1, totalNs, 0, -1, releaseFailure);
        }
    }
}
