package io.pdconnector.auth;

import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.credential.TokenCredential;
import io.quarkus.security.identity.IdentityProviderManager;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.security.identity.request.AuthenticationRequest;
import io.quarkus.security.identity.request.TokenAuthenticationRequest;
import io.quarkus.vertx.http.runtime.security.ChallengeData;
import io.quarkus.vertx.http.runtime.security.HttpAuthenticationMechanism;
import io.quarkus.vertx.http.runtime.security.HttpCredentialTransport;
import io.quarkus.vertx.http.runtime.security.HttpSecurityUtils;
import io.smallrye.mutiny.Uni;
import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.Map;
import java.util.Set;

/**
 * Reads {@code Authorization: Bearer <token>} and hands the token to {@link TokenIdentityProvider}.
 * Quarkus calls it only for an endpoint that asks who the caller is ({@code @RolesAllowed}; authentication
 * is not proactive), so health, metrics and OpenAPI never see it. A missing or malformed header fails
 * here rather than passing as anonymous, so it is a 401 whatever else is configured. With auth off every
 * caller is {@link #OPEN}: the endpoints keep their annotations and stay open.
 */
@ApplicationScoped
public class BearerMechanism implements HttpAuthenticationMechanism {

    /** The challenge of every 401 (RFC 6750). */
    public static final String CHALLENGE = "Bearer realm=\"pd-connector\"";
    /** Marks the failures this mechanism and its provider raise, whose message is a sentence for the caller. */
    public static final String REFUSAL = "pd.auth.refusal";
    private static final String SCHEME = "bearer";

    private final TokenTable tokens;

    public BearerMechanism(TokenTable tokens) {
        this.tokens = tokens;
    }

    @Override
    public Uni<SecurityIdentity> authenticate(RoutingContext context, IdentityProviderManager identities) {
        if (!tokens.enabled()) {
            return Uni.createFrom().item(OpenIdentity.INSTANCE);
        }
        String header = context.request().getHeader(HttpHeaders.AUTHORIZATION);
        if (header == null || header.isBlank()) {
            return Uni.createFrom().failure(refusal("this endpoint needs an Authorization: Bearer <token> header"));
        }
        int space = header.indexOf(' ');
        String token = space < 0 ? "" : header.substring(space + 1).strip();
        if (space < 0 || !header.substring(0, space).equalsIgnoreCase(SCHEME) || !TokenTable.TOKEN68.matcher(token).matches()) {
            return Uni.createFrom().failure(refusal("the Authorization header is not Bearer <token>"));
        }
        AuthenticationRequest request = new TokenAuthenticationRequest(new TokenCredential(token, SCHEME));
        return identities.authenticate(HttpSecurityUtils.setRoutingContextAttribute(request, context));
    }

    static AuthenticationFailedException refusal(String sentence) {
        return new AuthenticationFailedException(sentence, Map.of(REFUSAL, sentence));
    }

    @Override
    public Uni<ChallengeData> getChallenge(RoutingContext context) {
        return Uni.createFrom().item(new ChallengeData(401, "WWW-Authenticate", CHALLENGE));
    }

    @Override
    public Set<Class<? extends AuthenticationRequest>> getCredentialTypes() {
        return Set.of(TokenAuthenticationRequest.class);
    }

    @Override
    public Uni<HttpCredentialTransport> getCredentialTransport(RoutingContext context) {
        return Uni.createFrom().item(new HttpCredentialTransport(HttpCredentialTransport.Type.AUTHORIZATION, SCHEME));
    }
}
