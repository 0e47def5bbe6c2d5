package io.pdconnector.router;

import io.pdconnector.config.PdConfig;
import java.time.Duration;
import java.util.Objects;

/** What the router runs with, mapped once from {@code pd.router.*}. */
public record RouterSettings(String policy, int maxRetries, Duration connectTimeout, Duration prefillTimeout,
        Duration decodeTimeout, Duration abortTimeout) {

    public RouterSettings {
        Objects.requireNonNull(policy, "policy");
        if (maxRetries < 0) {
            throw new IllegalArgumentException("maxRetries must not be negative, got " + maxRetries);
        }
    }

    public static RouterSettings from(PdConfig.Router c) {
        return new RouterSettings(c.policy(), c.maxRetries(), c.connectTimeout(), c.prefillTimeout(),
                c.decodeTimeout(), c.abortTimeout());
    }
}
