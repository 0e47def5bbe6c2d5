package io.pdconnector.api.problem;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import io.pdconnector.error.ClientGoneException;
import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.PdException;
import io.pdconnector.error.PeerFailureException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.error.UntrustedPeerException;
import io.pdconnector.transfer.KvInDeviceMemoryException;
import jakarta.validation.ConstraintViolationException;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Request;
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

    /**
     * What nginx answers a client that closed its connection first: nobody reads it, but an access log
     * or an HTTP server metric must not count it as the service's failure (500) or overload (503).
     */
    static final int CLIENT_CLOSED_REQUEST = 499;

    /** The reason of a refused body: {@code BodyLimits}' own 413s and the HTTP layer's share it. */
    public static final String BODY_TOO_LARGE = "body-too-large";

    /** The one mapping of the domain's failures: the category decides the status, the exception the reason. */
    @ServerExceptionMapper
    public Response domain(PdException e, UriInfo uri) {
        if (e instanceof ClientGoneException) {
            LOG.debugf("%s: %s (answered %d to nobody)", uri == null ? "a request" : uri.getPath(), e.getMessage(),
                    CLIENT_CLOSED_REQUEST);
        }
        Problem located = problemOf(e);
        return e instanceof UnavailableException ? retryLater(located, uri) : respond(located, uri);
    }

    /** The problem document of a domain failure, also for one item of an engine batch. */
    public static Problem problemOf(PdException e) {
        Problem p = switch (e) {
            case InvalidInputException i -> Problem.of(400, i.reason(), "Invalid request", i.getMessage());
            case UnknownRequestException u -> Problem.of(404, u.reason(), "Unknown request", u.getMessage());
            case StateConflictException s -> Problem.of(409, s.reason(), "Request in the wrong state", s.getMessage());
            case IncompatiblePeerException i -> Problem.of(422, i.reason(), "Incompatible peer", i.getMessage());
            case UntrustedPeerException t -> Problem.of(409, t.reason(), "Untrusted peer", t.getMessage());
            case PeerFailureException f -> Problem.of(502, f.reason(), "Peer unreachable", f.getMessage());
            case UnavailableException u -> Problem.of(503, u.reason(), "Unavailable", u.getMessage());
            case ClientGoneException g -> Problem.of(CLIENT_CLOSED_REQUEST, g.reason(), "Client closed request",
                    g.getMessage());
        };
        return e.requestId() == null ? p : p.forRequest(e.requestId());
    }

    /** A host-memory path that reached a rank whose KV is in GPU memory; the resources refuse it earlier. */
    @ServerExceptionMapper
    public Response kvInGpuMemory(KvInDeviceMemoryException e, UriInfo uri) {
        return respond(HostKv.refused(e).problem(), uri);
    }

    @ServerExceptionMapper
    public Response validation(ConstraintViolationException e, UriInfo uri) {
        return respond(validationProblem(e), uri);
    }

    /** The problem of a body that breaks its constraints, with each field and its message. */
    public static Problem validationProblem(ConstraintViolationException e) {
        var violations = e.getConstraintViolations().stream()
                .map(v -> new Problem.Violation(leaf(v.getPropertyPath().toString()), v.getMessage()))
                .sorted(Comparator.comparing(Problem.Violation::field))
                .toList();
        String detail = violations.stream().map(v -> v.field() + ": " + v.message())
                .reduce((a, b) -> a + "; " + b).orElse("invalid input");
        return Problem.of(400, "validation-failed", "Invalid request", detail).withViolations(violations);
    }

    /**
     * A body that is not JSON, or JSON of the wrong shape for the endpoint (a field of the wrong type,
     * token_ids [false]): Jackson's exceptions are IOExceptions, which would otherwise get Quarkus's
     * default answer (400 without a body in production).
     */
    @ServerExceptionMapper
    public Response json(JsonProcessingException e, UriInfo uri) {
        return respond(Problem.of(400, "malformed-request", "Bad Request", unreadable(e)), uri);
    }

    /** As {@link #json}, ahead of Quarkus's own mapper for this subtype (which answers 400 without a problem). */
    @ServerExceptionMapper
    public Response mismatched(MismatchedInputException e, UriInfo uri) {
        return json(e, uri);
    }

    @ServerExceptionMapper
    public Response web(WebApplicationException e, UriInfo uri, Request request) {
        if (e.getCause() instanceof JsonProcessingException j && e.getResponse().getStatus() == 400) {
            return json(j, uri);
        }
        int status = e.getResponse().getStatus();
        String reason = status == 400 ? "malformed-request" : status == 404 ? "not-found"
                : status == 405 ? "method-not-allowed" : status == 413 ? BODY_TOO_LARGE
                : status == 415 ? "unsupported-media-type" : "http-" + status;
        String detail = e.getMessage() == null || e.getMessage().startsWith("HTTP " + status) ? switch (status) {
            case 400 -> "the request could not be read";
            case 404 -> "there is nothing at this path";
            case 405 -> "this path does not take " + (request == null ? "this method" : request.getMethod());
            case 415 -> "this path does not take this content type";
            default -> "HTTP " + status;
        } : e.getMessage();
        return respond(Problem.of(status, reason, e.getResponse().getStatusInfo().getReasonPhrase(), detail), uri);
    }

    @ServerExceptionMapper(priority = 10_000)
    public Response unexpected(RuntimeException e, UriInfo uri) {
        LOG.error("unexpected failure serving " + (uri == null ? "a request" : uri.getPath()), e);
        return respond(Problem.of(500, "internal-error", "Internal error",
                "the service failed unexpectedly; the log has the details"), uri);
    }

    /** What is wrong with an unreadable body, in one sentence: the field (JSON path) and Jackson's reason, bounded. */
    public static String unreadable(JsonProcessingException e) {
        String where = "";
        if (e instanceof JsonMappingException m && !m.getPath().isEmpty()) {
            StringBuilder path = new StringBuilder();
            for (JsonMappingException.Reference r : m.getPath()) {
                if (r.getFieldName() != null) {
                    path.append(path.isEmpty() ? "" : ".").append(r.getFieldName());
                } else if (r.getIndex() >= 0) {
                    path.append('[').append(r.getIndex()).append(']');
                }
            }
            where = path.isEmpty() ? "" : " at " + path;
        }
        String why = e.getOriginalMessage() == null ? "unreadable" : e.getOriginalMessage().strip();
        int newline = why.indexOf('\n');
        why = newline < 0 ? why : why.substring(0, newline);
        why = why.length() > 200 ? why.substring(0, 200) + "..." : why;
        return "the body is not the JSON this endpoint takes" + where + ": " + why;
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
