package io.pdconnector.api;

import io.pdconnector.controlplane.IncompatiblePeerException;
import io.pdconnector.controlplane.PeerUnreachableException;
import io.pdconnector.lease.Deadlines;
import io.pdconnector.lease.RequestStateException;
import io.pdconnector.lease.SchedulerBusyException;
import io.pdconnector.lease.UnknownRequestException;
import io.pdconnector.producer.InvalidKvTransferParamsException;
import io.pdconnector.producer.ProducerCapacityException;
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

    @ServerExceptionMapper
    public Response unknownRequest(UnknownRequestException e, UriInfo uri) {
        return respond(Problem.of(404, "unknown-request", "Unknown request", e.getMessage())
                .forRequest(e.requestId()), uri);
    }

    @ServerExceptionMapper
    public Response wrongState(RequestStateException e, UriInfo uri) {
        return respond(Problem.of(409, "wrong-state", "Request in the wrong state", e.getMessage())
                .forRequest(e.requestId()), uri);
    }

    @ServerExceptionMapper
    public Response invalidParams(InvalidKvTransferParamsException e, UriInfo uri) {
        return respond(Problem.of(400, "invalid-kv-transfer-params", "Invalid kv_transfer_params", e.getMessage()), uri);
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
    public Response badArgument(IllegalArgumentException e, UriInfo uri) {
        return respond(Problem.of(400, "invalid-argument", "Invalid request", e.getMessage()), uri);
    }

    @ServerExceptionMapper
    public Response incompatiblePeer(IncompatiblePeerException e, UriInfo uri) {
        return respond(Problem.of(422, "incompatible-peer", "Incompatible peer", e.getMessage()), uri);
    }

    @ServerExceptionMapper
    public Response unreachablePeer(PeerUnreachableException e, UriInfo uri) {
        return respond(Problem.of(502, "peer-unreachable", "Peer unreachable", e.getMessage()), uri);
    }

    @ServerExceptionMapper
    public Response capacity(ProducerCapacityException e, UriInfo uri) {
        return retryLater(Problem.of(503, "no-free-blocks", "Out of KV blocks", e.getMessage()), uri);
    }

    @ServerExceptionMapper
    public Response busy(SchedulerBusyException e, UriInfo uri) {
        return retryLater(Problem.of(503, "queue-full", "Busy", e.getMessage()), uri);
    }

    @ServerExceptionMapper
    public Response deadline(Deadlines.StepLoopTimeoutException e, UriInfo uri) {
        return retryLater(Problem.of(503, "deadline-exceeded", "No answer in time", e.getMessage()), uri);
    }

    @ServerExceptionMapper
    public Response web(WebApplicationException e, UriInfo uri) {
        int status = e.getResponse().getStatus();
        String reason = status == 400 ? "malformed-request" : status == 404 ? "not-found"
                : status == 405 ? "method-not-allowed" : status == 415 ? "unsupported-media-type" : "http-" + status;
        return respond(Problem.of(status, reason, e.getResponse().getStatusInfo().getReasonPhrase(),
                e.getMessage() == null ? "HTTP " + status : e.getMessage()), uri);
    }

    @ServerExceptionMapper(priority = 10_000)
    public Response unexpected(RuntimeException e, UriInfo uri) {
        LOG.error("unexpected failure serving " + uri.getPath(), e);
        return respond(Problem.of(500, "internal-error", "Internal error", e.getClass().getSimpleName() + ": "
                + e.getMessage()), uri);
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
