package io.pdconnector.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.util.HashMap;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The native API, as README "Using it" drives it: {@code POST /v1/producer/prefill} on P, P's
 * {@code kv_transfer_params} forwarded verbatim to {@code POST /v1/consumer/pull} on D, then D's
 * blocks released ({@code DELETE /v1/consumer/requests/{id}}, or {@code GET .../kv}, which returns the
 * bytes, checked against the pull's CRC-32C, and releases). A declined pull aborts P's request
 * ({@code DELETE /v1/producer/requests/{id}}), as a router should, so nothing is left held.
 */
public final class NativeClient implements LoadClient {

    private final Http http;
    private final URI producer;
    private final URI consumer;
    private final LoadOptions.Release release;

    public NativeClient(Http http, URI producer, URI consumer, LoadOptions.Release release) {
        this.http = http;
        this.producer = producer;
        this.consumer = consumer;
        this.release = release;
    }

    @Override
    public Prefilled prefill(Workload.Request request) {
        long t0 = System.nanoTime();
        try {
            Http.Reply p = http.post(producer, "/v1/producer/prefill", Map.of("request_id", request.id(), "token_ids",
                    request.tokens(), "kv_transfer_params", Map.of("do_remote_decode", true)));
            long t = System.nanoTime() - t0;
            if (p.status() != 200) {
                return new Prefilled(request, null, t, Result.failed("http:" + p.status(), t, -1, -1, null));
            }
            return new Prefilled(request, p.json().path("kv_transfer_params"), t, null);
        } catch (Exception e) {
            interruptedAgain(e);
            long t = System.nanoTime() - t0;
            return new Prefilled(request, null, t, Result.failed(Http.errorKind(e), t, -1, -1,
                    abortProducer(request.id())));
        }
    }

    @Override
    public Result finish(Prefilled prefilled) {
        String id = prefilled.request().id();
        long prefillNs = prefilled.prefillNs();
        long t1 = System.nanoTime();
        Http.Reply pulled;
        try {
            // the read-out is checked against the pull's checksum, which is computed only when asked for
            String pull = release == LoadOptions.Release.DELETE ? "/v1/consumer/pull" : "/v1/consumer/pull?kv_checksum=true";
            pulled = http.post(consumer, pull, Map.of("request_id", id, "token_ids",
                    prefilled.request().tokens(), "kv_transfer_params", prefilled.params()));
        } catch (Exception e) {
            interruptedAgain(e);
            long pull = System.nanoTime() - t1;
            return Result.failed(Http.errorKind(e), prefillNs, pull, -1, releaseBoth(id));
        }
        long t2 = System.nanoTime();
        if (pulled.status() != 200) {
            String outcome = pulled.status() == 409 ? "declined:" + pulled.reason() : "http:" + pulled.status();
            String failure = pulled.status() == 409 ? abortProducer(id) : releaseBoth(id);
            return Result.failed(outcome, prefillNs, t2 - t1, -1, failure);
        }
        JsonNode body = pulled.json();
        String state = body.path("state").asText("unknown");
        long bytes = body.path("bytes").asLong(0);
        JsonNode pullMs = body.path("timings").path("pull_ms");
        long inD = pullMs.isNumber() ? Math.round(pullMs.asDouble() * 1e6) : -1;
        String failure = releaseConsumer(id, bytes, body.path("kv_checksum").asText(""));
        long t3 = System.nanoTime();
        return new Result(state, prefillNs, t2 - t1, t3 - t2, prefillNs + (t3 - t1), bytes, inD,
                phases(body.path("timings")), failure);
    }

    /** Where D says the pull's time went: {@code timings.<phase>_ms} as leg {@code d_<phase>}, in nanoseconds. */
    private static Map<String, Long> phases(JsonNode timings) {
        Map<String, Long> out = new HashMap<>();
        for (String phase : RowStats.D_PHASES) {
            JsonNode ms = timings.path(phase + "_ms");
            if (ms.isNumber()) {
                out.put("d_" + phase, Math.round(ms.asDouble() * 1e6));
            }
        }
        return out;
    }

    /** Releases D's blocks of a received pull; the kind of failure, or null. */
    private String releaseConsumer(String id, long bytes, String checksum) {
        try {
            if (release == LoadOptions.Release.DELETE) {
                Http.Reply r = http.delete(consumer, "/v1/consumer/requests/" + id);
                return r.status() / 100 == 2 ? null : "release_http:" + r.status();
            }
            Http.Reply r = http.get(consumer, "/v1/consumer/requests/" + id + "/kv");
            if (r.status() != 200) {
                return "release_http:" + r.status();
            }
            if (r.body().length != bytes) {
                return "kv_length_mismatch";
            }
            CRC32C crc = new CRC32C();
            crc.update(r.body());
            return String.format("crc32c:%08x", crc.getValue()).equals(checksum) ? null : "kv_checksum_mismatch";
        } catch (Exception e) {
            interruptedAgain(e);
            return "release_" + Http.errorKind(e);
        }
    }

    /** After a pull that got no usable answer: release on D (abort if in flight) and abort on P. */
    private String releaseBoth(String id) {
        String d = deleteIgnoringUnknown(http, consumer, "/v1/consumer/requests/" + id);
        String p = abortProducer(id);
        return d != null ? d : p;
    }

    private String abortProducer(String id) {
        return deleteIgnoringUnknown(http, producer, "/v1/producer/requests/" + id);
    }

    /** DELETE; 2xx or 404 (nothing held there) is fine; otherwise the failure kind. */
    static String deleteIgnoringUnknown(Http http, URI base, String path) {
        try {
            Http.Reply r = http.delete(base, path);
            return r.status() / 100 == 2 || r.status() == 404 ? null : "release_http:" + r.status();
        } catch (Exception e) {
            interruptedAgain(e);
            return "release_" + Http.errorKind(e);
        }
    }

    static void interruptedAgain(Exception e) {
        if (e instanceof InterruptedException) {
            Thread.currentThread().interrupt();
        }
    }
}
