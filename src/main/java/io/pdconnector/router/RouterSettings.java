package io.pdconnector.router;

import io.pdconnector.config.PdConfig;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/** What the router runs with, mapped once from {@code pd.router.*}. */
public record RouterSettings(String policy, int maxRetries, Duration connectTimeout, Duration prefillTimeout,
        Duration decodeTimeout, Duration abortTimeout, Optional<String> authorization) {

    /** Without a credential: the fleet runs without authentication. */
    public RouterSettings(String policy, int maxRetries, Duration connectTimeout, Duration prefillTimeout,
            Duration decodeTimeout, Duration abortTimeout) {
        this(policy, maxRetries, connectTimeout, prefillTimeout, decodeTimeout, abortTimeout, Optional.empty());
    }

    public RouterSettings {
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(authorization, "authorization");
        if (maxRetries < 0) {
            throw new IllegalArgumentException("maxRetries must not be negative, got " + maxRetries);
        }
    }

    /** {@code authorization}: the router token this router presents to P and D (pd.auth.tokens.router). */
    public static RouterSettings from(PdConfig.Router c, Optional<String> authorization) {
        return new RouterSettings(c.policy(), c.maxRetries(), c.connectTimeout(), c.prefillTimeout(),
                c.decodeTimeout(), c.abortTimeout(), authorization);
    }
}
