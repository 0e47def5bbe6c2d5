package io.pdconnector.api.engine;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pdconnector.api.RequestBodies;
import io.pdconnector.api.problem.Problem;
import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.auth.AuthRefusals;
import io.pdconnector.auth.TokenTable;
import io.pdconnector.config.AuthRole;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.runtime.ConnectorRuntime;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What each request on the engine socket does: the engine's per-step batch on P ({@link EngineBatchResource}),
 * its D-side calls ({@link EngineSocketPulls}), each with the same checks, answers and problems as over HTTP,
 * and the hello that authenticates a connection when pd.auth is on. Runs on the connection's own thread, never
 * on a step loop.
 */
@ApplicationScoped
class EngineSocketCalls {

    /** The answer to one request: an HTTP status and its body (null for 204); {@code close} ends the connection. */
    record Reply(int status, Object body, boolean close) {

        static Reply of(Problem problem, boolean close) {
            return new Reply(problem.status(), problem, close);
        }
    }

    static final String UNKNOWN_OP = "unknown-op";
    static final int PROTOCOL = 1;
    private static final String ROLE = AuthRole.ENGINE;

    private final ConnectorRuntime runtime;
    private final RequestBodies bodies;
    private final TokenTable tokens;
    private final AuthRefusals refusals;
    private final EngineSocketPulls pulls;

    EngineSocketCalls(ConnectorRuntime runtime, RequestBodies bodies, TokenTable tokens, AuthRefusals refusals,
            EngineSocketPulls pulls) {
        this.runtime = runtime;
        this.bodies = bodies;
        this.tokens = tokens;
        this.refusals = refusals;
        this.pulls = pulls;
    }

    /** Whether a connection must say hello with the engine's token before anything else. */
    boolean helloRequired() {
        return tokens.enabled();
    }

    /** The first request of a connection when a hello is required: only a hello with an engine token passes. */
    Reply authenticate(JsonNode request) {
        if (EngineSocketOp.of(request).orElse(null) != EngineSocketOp.HELLO) {
            return refuse(AuthRefusals.UNAUTHENTICATED, 401, "the first request on the engine socket must be a hello"
                    + " with the engine's token (pd.auth is on)");
        }
        JsonNode token = request.get("token");
        if (token == null || !token.isTextual() || token.asText().isEmpty()) {
            return refuse(AuthRefusals.UNAUTHENTICATED, 401, "the hello carries no token");
        }
        Set<AuthRole> roles = tokens.roles(token.asText());
        if (!roles.contains(AuthRole.engine)) {
            return roles.isEmpty()
                    ? refuse(AuthRefusals.UNAUTHENTICATED, 401, "the hello's token is not one this instance knows")
                    : refuse(AuthRefusals.FORBIDDEN, 403, "the hello's token is not an engine token"
                            + " (pd.auth.tokens.engine)");
        }
        return hello();
    }

    /** Any request of an authenticated (or auth-free) connection but op pulls ({@link EngineSocketPulls#pulls}). */
    Reply handle(JsonNode request) {
        EngineSocketOp op = EngineSocketOp.of(request).orElse(null);
        try {
            return switch (op) {
                case HELLO -> hello();
                case PULL -> pulls.one(request.get("body"));
                case RELEASE -> pulls.release(request);
                case RELEASES -> pulls.releases(request);
                case BATCH -> batch(request.get("body"));
                // its answers are frames of their own, so EngineSocketServer hands it to EngineSocketPulls first
                case PULLS -> throw new IllegalStateException("op pulls reached the one-answer dispatch");
                case null -> Reply.of(Problem.of(400, UNKNOWN_OP, "Invalid request", "the engine socket takes the ops "
                        + EngineSocketOp.names() + "; got " + named(request)), false);
            };
        } catch (JsonProcessingException | RuntimeException e) {
            return EngineSocketProblems.of(e, op); // a known op: an unknown one is answered without a failure
        }
    }

    private static String named(JsonNode request) {
        String name = request.path("op").asText();
        return name.isEmpty() ? "no op" : "'" + name + "'";
    }

    /** The protocol, and what this instance reads beyond it: an engine uses a feature only when it is named. */
    private static Reply hello() {
        return new Reply(200, Map.of("protocol", PROTOCOL, "features", List.of(PackedTokenIds.FEATURE,
                EngineSocketPulls.FEATURE)), false);
    }

    /** As POST /v1/producer/batch: an engine step's commits, aborts, returns and grant on P. */
    private Reply batch(JsonNode body) throws JsonProcessingException {
        if (!(body instanceof ObjectNode object)) {
            throw InvalidInputException.of("a batch carries its request as the object 'body', as POST"
                    + " /v1/producer/batch takes it");
        }
        EngineBatchRequest request = bodies.read(object, EngineBatchRequest.class);
        return new Reply(200, EngineBatches.run(runtime.producer()
                .orElseThrow(() -> ProblemException.roleNotServed("producer")), request), false);
    }

    private Reply refuse(String reason, int status, String detail) {
        refusals.refused(reason, ROLE);
        return Reply.of(Problem.of(status, reason, status == 401 ? "Unauthorized" : "Forbidden", detail), true);
    }
}
