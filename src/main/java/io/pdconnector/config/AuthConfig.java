package io.pdconnector.config;

import io.smallrye.config.WithDefault;
import java.util.List;
import java.util.Optional;

/**
 * Who may call what (docs/security.md; its keys: docs/configuration.md, "Authentication"): a bearer token
 * per caller role, and mutual TLS as an option. Off by default, so a single instance started by hand, and
 * every test that does not ask for it, runs as before.
 */
public interface AuthConfig {
    /** On: every endpoint but health, metrics and OpenAPI needs a token of a role it allows. */
    @WithDefault("false")
    boolean enabled();

    Tokens tokens();

    /**
     * On: the HTTPS server refuses a client without a certificate that the TLS registry's trust store
     * ({@code quarkus.tls.trust-store.*}) trusts. The bearer token still decides the role.
     */
    @WithDefault("false")
    boolean mtls();

    /**
     * Tokens per role, comma-separated: several during a rotation (the first is the one this instance
     * presents to others). The same token under several roles grants all of them.
     */
    interface Tokens {
        Optional<List<String>> router();

        Optional<List<String>> engine();

        Optional<List<String>> peer();

        Optional<List<String>> operator();
    }
}
