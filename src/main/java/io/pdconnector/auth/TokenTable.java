package io.pdconnector.auth;

import io.pdconnector.config.AuthRole;
import io.pdconnector.config.AuthConfig;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The configured bearer tokens, kept only as SHA-256 digests, and the roles a presented token holds.
 * A lookup compares the presented token's digest with every configured digest through
 * {@link MessageDigest#isEqual} and never stops early, so its time says nothing about how much of a
 * token was right, nor which role it matched. Comparing digests rather than the tokens also makes the
 * compared lengths equal whatever the caller sends.
 */
public final class TokenTable {

    /** RFC 6750's token68: what may follow {@code Bearer }. */
    static final Pattern TOKEN68 = Pattern.compile("[A-Za-z0-9._~+/-]+=*");
    /** Shorter tokens can be guessed; {@code openssl rand -hex 32} gives 64 characters. */
    static final int MIN_LENGTH = 16;
    /** k8s/base/auth-secret.yaml ships placeholders starting with this; one left in place must not become a token. */
    static final String PLACEHOLDER = "change-me";

    private final boolean enabled;
    private final Map<AuthRole, List<byte[]>> digests;

    private TokenTable(boolean enabled, Map<AuthRole, List<byte[]>> digests) {
        this.enabled = enabled;
        this.digests = digests;
    }

    public static TokenTable from(AuthConfig auth) {
        Map<AuthRole, List<String>> tokens = new EnumMap<>(AuthRole.class);
        for (AuthRole role : AuthRole.values()) {
            tokens.put(role, role.tokens(auth.tokens()));
        }
        return of(auth.enabled(), tokens);
    }

    /**
     * Checks every token (when auth is on, every role needs one) and keeps their digests. A refused
     * token is named by its role and position, never by its value: this message ends up in logs.
     */
    public static TokenTable of(boolean enabled, Map<AuthRole, List<String>> tokens) {
        Map<AuthRole, List<byte[]>> digests = new EnumMap<>(AuthRole.class);
        List<String> problems = new ArrayList<>();
        for (AuthRole role : AuthRole.values()) {
            List<String> list = tokens.getOrDefault(role, List.of()).stream().map(String::strip)
                    .filter(t -> !t.isEmpty()).toList();
            if (enabled && list.isEmpty()) {
                problems.add(role.key() + " is not set (env " + env(role) + ")");
            }
            List<byte[]> kept = new ArrayList<>();
            for (int i = 0; i < list.size(); i++) {
                String why = weakness(list.get(i));
                if (why != null) {
                    problems.add(role.key() + " token " + (i + 1) + " of " + list.size() + " " + why);
                } else {
                    kept.add(digest(list.get(i)));
                }
            }
            digests.put(role, List.copyOf(kept));
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException("pd.auth" + (enabled ? " is enabled but" : ":") + " "
                    + String.join("; ", problems) + ". Every role needs at least one token of " + MIN_LENGTH
                    + "+ characters (generate one with: openssl rand -hex 32); see docs/security.md, \"Tokens\"");
        }
        return new TokenTable(enabled, digests);
    }

    private static String weakness(String token) {
        if (token.length() < MIN_LENGTH) {
            return "is shorter than " + MIN_LENGTH + " characters";
        }
        if (!TOKEN68.matcher(token).matches()) {
            return "has characters a bearer token cannot carry (allowed: letters, digits, . _ ~ + / - and trailing =)";
        }
        if (token.regionMatches(true, 0, PLACEHOLDER, 0, PLACEHOLDER.length())) {
            return "is still the placeholder of k8s/base/auth-secret.yaml";
        }
        return null;
    }

    private static String env(AuthRole role) {
        return "PD_AUTH_TOKENS_" + role.name().toUpperCase(java.util.Locale.ROOT);
    }

    public boolean enabled() {
        return enabled;
    }

    /** The roles {@code token} was configured for; empty for a token no role has. */
    public Set<AuthRole> roles(String token) {
        byte[] presented = digest(token);
        Set<AuthRole> held = EnumSet.noneOf(AuthRole.class);
        for (Map.Entry<AuthRole, List<byte[]>> e : digests.entrySet()) {
            boolean match = false;
            for (byte[] configured : e.getValue()) {
                match |= MessageDigest.isEqual(configured, presented);
            }
            if (match) {
                held.add(e.getKey());
            }
        }
        return held;
    }

    private static byte[] digest(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }

    @Override
    public String toString() {
        return "TokenTable[enabled=" + enabled + "]";
    }
}
