package io.pdconnector.auth;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * {@code pd_auth_refused_total{reason, role}}: requests refused before they reached an endpoint.
 * {@code reason} is {@code unauthenticated} (401) or {@code forbidden} (403); {@code role} is what the
 * endpoint allows (its roles joined by {@code ,}), so a scan of the engine endpoints shows as such.
 */
@ApplicationScoped
public class AuthRefusals {

    public static final String UNAUTHENTICATED = "unauthenticated";
    public static final String FORBIDDEN = "forbidden";

    private final MeterRegistry registry;
    /** One counter per (reason, roles): the set is as small as the endpoints' annotations. */
    private final ConcurrentMap<String, Counter> counters = new ConcurrentHashMap<>();

    public AuthRefusals(MeterRegistry registry) {
        this.registry = registry;
    }

    public void refused(String reason, String roles) {
        counters.computeIfAbsent(reason + '\n' + roles, k -> Counter.builder("pd_auth_refused")
                .description("Requests refused for their credential: unauthenticated (401) or forbidden (403),"
                        + " by the roles the endpoint allows")
                .tag("reason", reason).tag("role", roles).register(registry)).increment();
    }
}
