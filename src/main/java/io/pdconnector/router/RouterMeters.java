package io.pdconnector.router;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The router's meters: requests by outcome, retries by reason, aborts of P's lease by cause, and the
 * time of each leg ({@code prefill}, {@code decode}: to D's first byte when streaming, else its whole
 * reply) and of the whole request ({@code total}). Every series with a known label is registered at
 * start, at 0: a dashboard panel or an alert on a healthy router finds it before the first event.
 */
final class RouterMeters {

    private final MeterRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, Timer> legs = new ConcurrentHashMap<>();

    /** What a router aborts P's lease for: D failed, the prefill got no answer, the client went away. */
    static final List<String> ABORT_CAUSES = List.of("decode", "prefill", "client");
    static final List<String> LEGS = List.of("prefill", "decode", "total");

    RouterMeters(MeterRegistry registry) {
        this.registry = registry;
        for (String reason : RetryPolicy.RETRIED_DECLINES) {
            retried(reason, 0);
        }
        retried(RetryPolicy.VRAM_HOST_PATH, 0);
        retried(RetryPolicy.PREFILL_FAILED, 0);
        retried(RetryPolicy.DECODE_FAILED, 0);
        ABORT_CAUSES.forEach(cause -> aborted(cause, 0));
        for (boolean ok : new boolean[] {true, false}) {
            request(ok, 0);
        }
        LEGS.forEach(this::legTimer);
    }

    void retried(String reason) {
        retried(reason, 1);
    }

    private void retried(String reason, int n) {
        counter("pd_router_retries", "reason", reason, "New attempts after a failed one, by the failure's reason")
                .increment(n);
    }

    void aborted(String cause) {
        aborted(cause, 1);
    }

    private void aborted(String cause, int n) {
        counter("pd_router_aborts", "cause", cause, "Aborts of P's lease sent: D failed (decode), the prefill got no"
                + " answer (prefill), the client went away (client)").increment(n);
    }

    void request(boolean ok) {
        request(ok, 1);
    }

    private void request(boolean ok, int n) {
        counter("pd_router_requests", "outcome", ok ? "ok" : "failed", "Requests routed, by outcome").increment(n);
    }

    void leg(String leg, long nanos) {
        legTimer(leg).record(nanos, TimeUnit.NANOSECONDS);
    }

    private Timer legTimer(String leg) {
        return legs.computeIfAbsent(leg, l -> Timer.builder("pd_router_leg").tag("leg", l)
                .description("Time of each leg a router sent (prefill, decode) and of whole requests (total)")
                .publishPercentileHistogram().register(registry));
    }

    private Counter counter(String name, String tag, String value, String description) {
        return counters.computeIfAbsent(name + "/" + value, k -> Counter.builder(name).tag(tag, value)
                .description(description).register(registry));
    }
}
