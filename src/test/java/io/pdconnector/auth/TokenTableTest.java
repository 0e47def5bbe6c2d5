package io.pdconnector.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pdconnector.config.AuthRole;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TokenTableTest {

    private static final String ROUTER = "router-0123456789abcdef";
    private static final String ENGINE = "engine-0123456789abcdef";
    private static final String PEER = "peer-0123456789abcdef";
    private static final String OPERATOR = "operator-0123456789abcdef";

    private static Map<AuthRole, List<String>> tokens() {
        Map<AuthRole, List<String>> m = new EnumMap<>(AuthRole.class);
        m.put(AuthRole.router, List.of(ROUTER));
        m.put(AuthRole.engine, List.of(ENGINE, "engine-next-0123456789abcdef"));
        m.put(AuthRole.peer, List.of(PEER, "shared-0123456789abcdef"));
        m.put(AuthRole.operator, List.of(OPERATOR, "shared-0123456789abcdef"));
        return m;
    }

    @Test
    void aTokenHoldsTheRolesItIsConfiguredForAndNoOther() {
        TokenTable t = TokenTable.of(true, tokens());
        assertEquals(Set.of(AuthRole.router), t.roles(ROUTER));
        assertEquals(Set.of(AuthRole.engine), t.roles("engine-next-0123456789abcdef"), "the second token of a rotation");
        assertEquals(Set.of(AuthRole.peer, AuthRole.operator), t.roles("shared-0123456789abcdef"));
        assertEquals(Set.of(), t.roles(ROUTER + "x"));
        assertEquals(Set.of(), t.roles(ROUTER.substring(1)));
        assertEquals(Set.of(), t.roles(""));
        assertEquals(Set.of(), t.roles(ROUTER.toUpperCase()), "tokens are case-sensitive");
    }

    @Test
    void withAuthOnEveryRoleNeedsATokenAndTheMessageNamesTheMissingOnes() {
        Map<AuthRole, List<String>> m = tokens();
        m.put(AuthRole.operator, List.of());
        m.put(AuthRole.peer, List.of(" "));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> TokenTable.of(true, m));
        assertTrue(e.getMessage().contains("pd.auth.tokens.operator is not set (env PD_AUTH_TOKENS_OPERATOR)"), e.getMessage());
        assertTrue(e.getMessage().contains("pd.auth.tokens.peer is not set"), e.getMessage());
        assertFalse(e.getMessage().contains("pd.auth.tokens.router"), e.getMessage());
        assertFalse(TokenTable.of(false, Map.of()).enabled(), "with auth off no token is needed");
    }

    @Test
    void weakOrPlaceholderTokensAreRefusedWithoutBeingEchoed() {
        for (String bad : List.of("short-token", "has a space 0123456789", "quote\"0123456789abcdef",
                "change-me-generate-with-openssl-rand-hex-32")) {
            Map<AuthRole, List<String>> m = tokens();
            m.put(AuthRole.engine, List.of(ENGINE, bad));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> TokenTable.of(true, m), bad);
            assertTrue(e.getMessage().contains("pd.auth.tokens.engine token 2 of 2"), e.getMessage());
            assertFalse(e.getMessage().contains(bad), "the message must not carry the token: " + e.getMessage());
            // a weak token is refused with auth off too: this instance would still present it to its peers
            assertThrows(IllegalStateException.class, () -> TokenTable.of(false, m), bad);
        }
    }
}
