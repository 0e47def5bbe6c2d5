package io.pdconnector.api;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.Map;

/**
 * Auth on, a token per role; the engine's two tokens are a rotation in progress, and one token is
 * configured for both peer and operator.
 */
public class AuthOnProfile implements QuarkusTestProfile {

    public static final String ROUTER = "router-token-0123456789abcdef";
    public static final String ENGINE = "engine-old-0123456789abcdef";
    public static final String ENGINE_NEW = "engine-new-0123456789abcdef";
    static final String PEER = "peer-token-0123456789abcdef";
    static final String OPERATOR = "operator-token-0123456789abcdef";
    static final String PEER_AND_OPERATOR = "peer-and-operator-0123456789abcdef";

    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("pd.auth.enabled", "true",
                "pd.auth.tokens.router", ROUTER,
                "pd.auth.tokens.engine", ENGINE + "," + ENGINE_NEW,
                "pd.auth.tokens.peer", PEER + "," + PEER_AND_OPERATOR,
                "pd.auth.tokens.operator", OPERATOR + "," + PEER_AND_OPERATOR);
    }
}
