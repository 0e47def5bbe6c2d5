package io.pdconnector.auth;

import io.pdconnector.config.AuthRole;
import io.quarkus.security.identity.AuthenticationRequestContext;
import io.quarkus.security.identity.IdentityProvider;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.security.identity.request.TokenAuthenticationRequest;
import io.quarkus.security.runtime.QuarkusPrincipal;
import io.quarkus.security.runtime.QuarkusSecurityIdentity;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * A bearer token's roles, from {@link TokenTable}. The principal is named by the roles, not the token,
 * since principals are logged.
 */
@ApplicationScoped
public class TokenIdentityProvider implements IdentityProvider<TokenAuthenticationRequest> {

    private final TokenTable tokens;

    public TokenIdentityProvider(TokenTable tokens) {
        this.tokens = tokens;
    }

    @Override
    public Class<TokenAuthenticationRequest> getRequestType() {
        return TokenAuthenticationRequest.class;
    }

    @Override
    public Uni<SecurityIdentity> authenticate(TokenAuthenticationRequest request, AuthenticationRequestContext context) {
        Set<AuthRole> roles = tokens.roles(request.getToken().getToken());
        if (roles.isEmpty()) {
            return Uni.createFrom().failure(BearerMechanism.refusal("the bearer token is not one this instance accepts"));
        }
        Set<String> names = roles.stream().map(Enum::name).collect(Collectors.toSet());
        return Uni.createFrom().item(QuarkusSecurityIdentity.builder()
                .setPrincipal(new QuarkusPrincipal("token:" + String.join("+", names.stream().sorted().toList())))
                .addRoles(names)
                .addCredential(request.getToken())
                .build());
    }
}
