package io.pdconnector.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ClientTokensTest {

    private static AuthConfig auth(boolean enabled, List<String> peer, List<String> router) {
        AuthConfig.Tokens tokens = new AuthConfig.Tokens() {
            @Override
            public Optional<List<String>> router() {
                return Optional.ofNullable(router);
            }

            @Override
            public Optional<List<String>> engine() {
                return Optional.empty();
            }

            @Override
            public Optional<List<String>> peer() {
                return Optional.ofNullable(peer);
            }

            @Override
            public Optional<List<String>> operator() {
                return Optional.empty();
            }
        };
        return new AuthConfig() {
            @Override
            public boolean enabled() {
                return enabled;
            }

            @Override
            public Tokens tokens() {
                return tokens;
            }

            @Override
            public boolean mtls() {
                return false;
            }
        };
    }

    @Test
    void theFirstTokenOfARoleIsPresentedWhetherOrNotThisInstanceChecksTokens() {
        for (boolean enabled : new boolean[] {true, false}) {
            ClientTokens t = ClientTokens.from(auth(enabled, List.of(" peer-new-0123456789abcdef", "peer-old-0123456789abcdef"),
                    List.of("router-0123456789abcdef")));
            assertEquals(Optional.of("Bearer peer-new-0123456789abcdef"), t.authorization(AuthRole.peer));
            assertEquals(Optional.of("Bearer router-0123456789abcdef"), t.authorization(AuthRole.router));
            assertEquals(Optional.empty(), t.authorization(AuthRole.engine));
            assertFalse(t.toString().contains("0123456789"), t.toString());
        }
    }
}
