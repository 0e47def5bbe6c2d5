package io.pdconnector.router;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pdconnector.controlplane.InstanceRecord;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One attempt of a routed request: P's leg, then D's with P's {@code kv_transfer_params} verbatim; what it
 * answered (status, type, body or D's stream, each leg's time) is kept for the reply or the retry decision.
 */
final class RouteAttempt {
    private static final int MAX_REPLY_BYTES = 64 << 20;
    private static final String SSE = "text/event-stream";

    private final Legs legs;
    private final String path;
    private final ObjectNode client;
    private final boolean streamWanted;
    private final byte[] prefillBody;
    private final String id;
    private final Pick pick;
    private final ClientSignal signal;
    boolean prefillSent;
    int status;
    String contentType;
    byte[] body;
    BodyRelay stream;
    long prefillNanos;
    long decodeNanos;

    RouteAttempt(Legs legs, String path, ObjectNode client, boolean streamWanted, byte[] prefillBody, String id,
            Pick pick, ClientSignal signal) {
        this.legs = legs;
        this.path = path;
        this.client = client;
        this.streamWanted = streamWanted;
        this.prefillBody = prefillBody;
        this.id = id;
        this.pick = pick;
        this.signal = signal;
    }

    Optional<Failure> run() {
        JsonNode params;
        InstanceRecord p = pick.producer();
        long t0 = System.nanoTime();
        legs.inFlight().start(p.engineId());
        try {
            prefillSent = true;
            Duration timeout = legs.settings().prefillTimeout();
            HttpResponse<byte[]> r = await(legs.fleet().post(p, path, id, prefillBody, timeout), timeout, signal);
            keep(r.statusCode(), contentType(r), r.body());
            if (r.statusCode() != 200) {
                return Optional.of(failure(Failure.Leg.PREFILL));
            }
            params = legs.json().readTree(r.body()).get("kv_transfer_params");
            if (params == null || !params.isObject()) {
                return Optional.of(Failure.noAnswer(Failure.Leg.PREFILL, "P's reply carries no kv_transfer_params"));
            }
        } catch (IOException | TimeoutException e) {
            return Optional.of(Failure.noAnswer(Failure.Leg.PREFILL, e.toString()));
        } finally {
            legs.inFlight().end(p.engineId());
            prefillNanos = System.nanoTime() - t0;
            legs.meters().leg("prefill", prefillNanos);
        }
        return decode(params);
    }

    private Optional<Failure> decode(JsonNode params) {
        InstanceRecord d = pick.decoder();
        long t0 = System.nanoTime();
        long deadline = t0 + legs.settings().decodeTimeout().toNanos();
        legs.inFlight().start(d.engineId());
        try {
            Duration timeout = legs.settings().decodeTimeout();
            HttpResponse<Flow.Publisher<List<ByteBuffer>>> r = await(legs.fleet().open(d, path, id,
                    legs.bytes(LegBodies.decode(client, params)), timeout), timeout, signal);
            BodyRelay relay = new BodyRelay(deadline);
            signal.track(relay);
            r.body().subscribe(relay);
            if (r.statusCode() == 200 && streamWanted && contentType(r).startsWith(SSE)) {
                status = 200;
                contentType = contentType(r);
                stream = relay; // D decided the pull before its first byte: nothing after this is retried
                return Optional.empty();
            }
            keep(r.statusCode(), contentType(r), relay.readAll(MAX_REPLY_BYTES));
            return r.statusCode() == 200 ? Optional.empty() : Optional.of(failure(Failure.Leg.DECODE));
        } catch (IOException | TimeoutException e) {
            return Optional.of(Failure.noAnswer(Failure.Leg.DECODE, e.toString()));
        } finally {
            legs.inFlight().end(d.engineId());
            decodeNanos = System.nanoTime() - t0;
            legs.meters().leg("decode", decodeNanos);
        }
    }

    private void keep(int s, String ct, byte[] b) {
        status = s;
        contentType = ct;
        body = b;
    }

    private Failure failure(Failure.Leg leg) {
        String reason = null;
        try {
            JsonNode problem = legs.json().readTree(body);
            reason = problem != null && problem.path("reason").isTextual() ? problem.path("reason").asText() : null;
        } catch (IOException notJson) {
            // a reply without a problem document still has its status
        }
        return new Failure(leg, status, reason, "HTTP " + status);
    }

    /** prefill and pull (streaming) or decode (whole reply) of this attempt; the failed attempts' time as retries. */
    String timing(int retried, long retryNanos) {
        return String.format(java.util.Locale.ROOT, "prefill;dur=%.3f, %s;dur=%.3f, retries;dur=%.3f;desc=\"%d\"",
                prefillNanos / 1e6, stream != null ? "pull" : "decode", decodeNanos / 1e6, retryNanos / 1e6, retried);
    }

    /** Awaits one leg's call at most {@code timeout}; the call is cancelled when the client goes or time runs out. */
static <T> T await(CompletableFuture<T> call, Duration timeout, ClientSignal signal)
        throws IOException, TimeoutException {
    signal.track(call);
    try {
        return call.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
        call.cancel(true);
        throw e;
    } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        throw cause instanceof IOException io ? io : new IOException(String.valueOf(cause), cause);
    } catch (java.util.concurrent.CancellationException e) {
        throw new IOException("cancelled: the client went away", e);
    } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        call.cancel(true);
        throw new IOException("interrupted", e);
    }
}

    static String contentType(HttpResponse<?> r) {
        return r.headers().firstValue("Content-Type").orElse("application/octet-stream");
    }

    /** What every attempt of the router uses. */
    record Legs(RouterSettings settings, FleetClient fleet, InFlight inFlight, RouterMeters meters, ObjectMapper json) {
        byte[] bytes(JsonNode node) {
            try {
                return json.writeValueAsBytes(node);
            } catch (IOException e) {
                throw new IllegalStateException("a JSON tree did not serialize", e);
            }
        }
    }
}
