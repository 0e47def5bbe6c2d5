package io.pdconnector.config;

import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;

/**
 * What this instance presents when it calls other instances: the {@code Authorization} header of a role,
 * made of that role's first configured token (the static registry store presents {@link AuthRole#peer},
 * a router {@link AuthRole#router}). Sent whenever a token is configured, whether or not this instance
 * checks tokens itself ({@code pd.auth.enabled}): a fleet turns auth on one instance at a time, and the
 * ones already checking must accept calls from the ones not yet checking.
 */
public final class ClientTokens {

    private final Map<AuthRole, String> first = new EnumMap<>(AuthRole.class);

    private ClientTokens(AuthConfig.Tokens tokens) {
        for (AuthRole role : AuthRole.values()) {
            role.tokens(tokens).stream().map(String::strip).filter(t -> !t.isEmpty()).findFirst()
                    .ifPresent(t -> first.put(role, t));
        }
    }

    public static ClientTokens from(AuthConfig auth) {
        return new ClientTokens(auth.tokens());
    }

    /** {@code Bearer <token>} for calls made as {@code role}; empty when no token is configured for it. */
    public Optional<String> authorization(AuthRole role) {
        return Optional.ofNullable(first.get(role)).map(t -> "Bearer " + t);
    }

    @Override
    public String toString() {
        return "ClientTokens" + first.keySet(); // never the tokens
    }
}
