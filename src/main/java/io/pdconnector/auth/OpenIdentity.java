package io.pdconnector.auth;

import io.pdconnector.config.AuthRole;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.security.runtime.QuarkusPrincipal;
import io.quarkus.security.runtime.QuarkusSecurityIdentity;
import java.util.Arrays;

/** The caller of every request while auth is off: it holds every role, so every endpoint stays open. */
final class OpenIdentity {

    static final SecurityIdentity INSTANCE = QuarkusSecurityIdentity.builder()
            .setPrincipal(new QuarkusPrincipal("auth-off"))
            .addRoles(new java.util.HashSet<>(Arrays.stream(AuthRole.values()).map(Enum::name).toList()))
            .build();

    private OpenIdentity() {
    }
}
