package io.pdconnector.router;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The router's meters: requests by outcome, retries by reason, aborts of P's lease by cause, and the
 * time of each leg ({@code prefill}, {@code decode}: to D's first byte when streaming, else its whole
 * reply) and of the whole request ({@code total}).
 */
final class RouterMeters {

    private final MeterRegistry registry;
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private final Map<String, Timer> legs = new ConcurrentHashMap<>();

    RouterMeters(MeterRegistry registry) {
        this.registry = registry;
        for (String reason : RetryPolicy.RETRIED_DECLINES) {
            retried(reason, 0);
        }
        retried(RetryPolicy.PREFILL_FAILED, 0);
        retried(RetryPolicy.DECODE_FAILED, 0);
    }

    void retried(String reason) {
        retried(reason, 1);
    }

    private void retried(String reason, int n) {
        counter("pd_router_retries", "reason", reason, "New attempts after a failed one, by the failure's reason")
                .increment(n);
    }

    void aborted(String cause) {
        counter("pd_router_aborts", "cause", cause, "Aborts of P's lease sent: D failed (decode), the prefill got no"
                + " answer (prefill), the client went away (client)").increment();
    }

    void request(boolean ok) {
        counter("pd_router_requests", "outcome", ok ? "ok" : "failed", "Requests routed, by outcome").increment();
    }

    void leg(String leg, long nanos) {
        legs.computeIfAbsent(leg, l -> Timer.builder("pd_router_leg").tag("leg", l)
                .description("Time of each leg a router sent (prefill, decode) and of whole requests (total)")
                .publishPercentileHistogram().register(registry)).record(nanos, TimeUnit.NANOSECONDS);
    }

    private Counter counter(String name, String tag, String value, String description) {
        return counters.computeIfAbsent(name + "/" + value, k -> Counter.builder(name).tag(tag, value)
                .description(description).register(registry));
    }
}
