package io.pdconnector.auth;

import io.pdconnector.config.PdConfig;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

/** Builds the token table at start-up, so a missing or weak token stops the service before it listens. */
public class AuthSetup {

    @Produces
    @Singleton
    @Startup
    TokenTable tokens(PdConfig config) {
        return TokenTable.from(config.auth());
    }
}
