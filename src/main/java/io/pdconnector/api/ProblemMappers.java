package io.pdconnector.api;

import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.PdException;
import io.pdconnector.error.PeerFailureException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.error.UnknownRequestException;
import jakarta.validation.ConstraintViolationException;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import java.util.Comparator;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/**
 * Every error the API gives, as problem JSON with a stable type per cause. Bad input is rejected
 * before it reaches a step loop, so none of these answers leaves state behind.
 */
public class ProblemMappers {

    private static final Logger LOG = Logger.getLogger(ProblemMappers.class);

    @ServerExceptionMapper
    public Response problem(ProblemException e, UriInfo uri) {
        return respond(e.problem(), uri);
    }

    /** The one mapping of the domain's failures: the category decides the status, the exception the reason. */
    @ServerExceptionMapper
    public Response domain(PdException e, UriInfo uri) {
        Problem p = switch (e) {
            case InvalidInputException i -> Problem.of(400, i.reason(), "Invalid request", i.getMessage());
            case UnknownRequestException u -> Problem.of(404, u.reason(), "Unknown request", u.getMessage());
            case StateConflictException s -> Problem.of(409, s.reason(), "Request in the wrong state", s.getMessage());
            case IncompatiblePeerException i -> Problem.of(422, i.reason(), "Incompatible peer", i.getMessage());
            case PeerFailureException f -> Problem.of(502, f.reason(), "Peer unreachable", f.getMessage());
            case UnavailableException u -> Problem.of(503, u.reason(), "Unavailable", u.getMessage());
        };
        Problem located = e.requestId() == null ? p : p.forRequest(e.requestId());
        return e instanceof UnavailableException ? retryLater(located, uri) : respond(located, uri);
    }

    @ServerExceptionMapper
    public Response validation(ConstraintViolationException e, UriInfo uri) {
        var violations = e.getConstraintViolations().stream()
                .map(v -> new Problem.Violation(leaf(v.getPropertyPath().toString()), v.getMessage()))
                .sorted(Comparator.comparing(Problem.Violation::field))
                .toList();
        String detail = violations.stream().map(v -> v.field() + ": " + v.message())
                .reduce((a, b) -> a + "; " + b).orElse("invalid input");
        return respond(Problem.of(400, "validation-failed", "Invalid request", detail).withViolations(violations), uri);
    }

    @ServerExceptionMapper
    public Response web(WebApplicationException e, UriInfo uri) {
        int status = e.getResponse().getStatus();
        String reason = status == 400 ? "malformed-request" : status == 404 ? "not-found"
                : status == 405 ? "method-not-allowed" : status == 413 ? BodyLimits.REASON
                : status == 415 ? "unsupported-media-type" : "http-" + status;
        return respond(Problem.of(status, reason, e.getResponse().getStatusInfo().getReasonPhrase(),
                e.getMessage() == null ? "HTTP " + status : e.getMessage()), uri);
    }

    @ServerExceptionMapper(priority = 10_000)
    public Response unexpected(RuntimeException e, UriInfo uri) {
        LOG.error("unexpected failure serving " + (uri == null ? "a request" : uri.getPath()), e);
        return respond(Problem.of(500, "internal-error", "Internal error",
                "the service failed unexpectedly; the log has the details"), uri);
    }

    private static Response retryLater(Problem p, UriInfo uri) {
        return Response.fromResponse(respond(p, uri)).header("Retry-After", "1").build();
    }

    static Response respond(Problem p, UriInfo uri) {
        Problem located = p.instance() == null && uri != null ? p.at(uri.getPath()) : p;
        return Response.status(located.status()).type(Problem.MEDIA_TYPE).entity(located).build();
    }

    /**
     * "prefill.request.requestId" -> "request_id": clients know the JSON field names (all snake_case),
     * not our method and parameter names.
     */
    private static String leaf(String path) {
        String[] parts = path.split("\\.");
        StringBuilder field = new StringBuilder();
        for (int i = 2; i < parts.length; i++) {
            field.append(field.isEmpty() ? "" : ".").append(parts[i]);
        }
        String name = field.isEmpty() ? path : field.toString();
        return name.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase(java.util.Locale.ROOT);
    }
}
