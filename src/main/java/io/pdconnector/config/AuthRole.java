package io.pdconnector.config;

import java.util.List;
import java.util.Optional;

/**
 * The callers pd-connector tells apart (docs/security.md, "Roles"). The string constants are the same
 * names, for {@code @RolesAllowed}, which takes only compile-time constants.
 */
public enum AuthRole {
    /** A router: prefill, pull, the OpenAI facade. */
    router,
    /** An inference engine beside this instance: reserve, write, finish, KV read-out. */
    engine,
    /** Another pd-connector instance: handshake and registry reads. */
    peer,
    /** A person or tool running the fleet: status, abort, release, the registry view. */
    operator;

    public static final String ROUTER = "router";
    public static final String ENGINE = "engine";
    public static final String PEER = "peer";
    public static final String OPERATOR = "operator";

    /** The tokens configured for this role ({@code pd.auth.tokens.<role>}), in their configured order. */
    public List<String> tokens(AuthConfig.Tokens tokens) {
        Optional<List<String>> list = switch (this) {
            case router -> tokens.router();
            case engine -> tokens.engine();
            case peer -> tokens.peer();
            case operator -> tokens.operator();
        };
        return list.orElse(List.of());
    }

    /** The configuration key of this role's tokens, for messages. */
    public String key() {
        return "pd.auth.tokens." + name();
    }
}
