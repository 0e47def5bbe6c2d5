package io.pdconnector.api.problem;

import io.pdconnector.auth.AuthRefusals;
import io.pdconnector.auth.BearerMechanism;
import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.ForbiddenException;
import io.quarkus.security.UnauthorizedException;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.container.ResourceInfo;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/**
 * 401 and 403 as problem documents, counted. Both are answered before the endpoint runs and before its
 * body is read, so a refused request changes nothing.
 */
public class AuthProblemMappers {

    /** The roles of an endpoint that has none (denied to all, as an unannotated one is). */
    private static final String NONE = "none";
    private final AuthRefusals refusals;
    /** Endpoint method -> the roles it allows, as the metric and the 403 name them. */
    private final Map<Method, String> allowed = new ConcurrentHashMap<>();

    public AuthProblemMappers(AuthRefusals refusals) {
        this.refusals = refusals;
    }

    @ServerExceptionMapper
    public Response authenticationFailed(AuthenticationFailedException e, UriInfo uri, ResourceInfo resource) {
        Object sentence = e.getAttributes() == null ? null : e.getAttributes().get(BearerMechanism.REFUSAL);
        return unauthenticated(sentence == null ? "the credential presented was not accepted" : sentence.toString(),
                uri, resource);
    }

    /** An anonymous caller at an endpoint with roles; the bearer mechanism fails first, so this is a fallback. */
    @ServerExceptionMapper
    public Response unauthorized(UnauthorizedException e, UriInfo uri, ResourceInfo resource) {
        return unauthenticated("this endpoint needs an Authorization: Bearer <token> header", uri, resource);
    }

    @ServerExceptionMapper
    public Response forbidden(ForbiddenException e, UriInfo uri, ResourceInfo resource) {
        String roles = roles(resource);
        refusals.refused(AuthRefusals.FORBIDDEN, roles);
        String detail = roles.equals(NONE) ? "this endpoint is not open to any role"
                : "this endpoint is for the " + roles + " role" + (roles.contains(",") ? "s" : "")
                        + "; the token presented holds none of them";
        return ProblemMappers.respond(Problem.of(403, AuthRefusals.FORBIDDEN, "Forbidden", detail), uri);
    }

    private Response unauthenticated(String detail, UriInfo uri, ResourceInfo resource) {
        refusals.refused(AuthRefusals.UNAUTHENTICATED, roles(resource));
        return Response.fromResponse(ProblemMappers.respond(
                Problem.of(401, AuthRefusals.UNAUTHENTICATED, "Unauthenticated", detail), uri))
                .header(HttpHeaders.WWW_AUTHENTICATE, BearerMechanism.CHALLENGE).build();
    }

    private String roles(ResourceInfo resource) {
        Method method = resource == null ? null : resource.getResourceMethod();
        if (method == null) {
            return NONE;
        }
        return allowed.computeIfAbsent(method, m -> {
            RolesAllowed roles = m.getAnnotation(RolesAllowed.class);
            if (roles == null) {
                roles = resource.getResourceClass().getAnnotation(RolesAllowed.class);
            }
            return roles == null ? NONE : String.join(",", Arrays.stream(roles.value()).sorted().toList());
        });
    }
}
