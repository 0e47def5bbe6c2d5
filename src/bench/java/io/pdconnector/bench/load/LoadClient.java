package io.pdconnector.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;

/**
 * Drives one request through P and D the way a router does, and says what happened. Never throws
 * for what the services answer: every answer (and every call that got none) is an outcome, and the
 * client releases what the request holds on either side whatever the outcome. A request is two
 * steps, {@link #prefill} on P and {@link #finish} on D (pull, then release), so that the prefills
 * can also be sent ahead of the pulls ({@code --prefill ahead}).
 */
public interface LoadClient {

    /** The P leg: returns P's params, or the request's failed result. */
    Prefilled prefill(Workload.Request request);

    /** The D leg of a prefilled request: pull, then release on D (or abort P's request). */
    Result finish(Prefilled prefilled);

    /** Both legs, one after the other. */
    default Result run(Workload.Request request) {
        Prefilled p = prefill(request);
        return p.failed() != null ? p.failed() : finish(p);
    }

    /**
     * A request after its P leg: P's {@code kv_transfer_params} and the leg's time, or (when the leg
     * failed) the request's result.
     */
    record Prefilled(Workload.Request request, JsonNode params, long prefillNs, Result failed) {
    }

    /**
     * What one request came to. Legs are nanoseconds, -1 when the leg did not run; {@code totalNs}
     * the sum of the legs that ran; {@code bytes} the KV bytes D pulled; {@code pullInD} D's own
     * {@code timings.pull_ms} in nanoseconds (-1 if not reported); {@code inDPhasesNs} the phases D
     * reported beside it, by leg name ({@link RowStats#D_PHASES}); {@code releaseFailure} the kind of a
     * failed release, or null.
     */
    record Result(String outcome, long prefillNs, long pullNs, long releaseNs, long totalNs, long bytes,
            long pullInDNs, Map<String, Long> inDPhasesNs, String releaseFailure) {

        public static final String RECEIVED = "received";
        public static final String RECOMPUTED = "recomputed";

        /** The request got its KV (received, or recomputed by D's policy). */
        public boolean succeeded() {
            return RECEIVED.equals(outcome) || RECOMPUTED.equals(outcome);
        }

        static Result failed(String outcome, long prefillNs, long pullNs, long releaseNs, String releaseFailure) {
            return new Result(outcome, prefillNs, pullNs, releaseNs, sum(prefillNs, pullNs, releaseNs), 0, -1,
                    Map.of(), releaseFailure);
        }

        static long sum(long... legs) {
            long total = 0;
            for (long leg : legs) {
                total += Math.max(0, leg);
            }
            return total;
        }
    }
}
