package io.pdconnector.api;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pdconnector.auth.AuthRefusals;
import io.pdconnector.auth.TokenTable;
import io.pdconnector.config.AuthRole;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.PdException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.runtime.ConnectorRuntime;
import io.pdconnector.transfer.KvInDeviceMemoryException;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.validation.ConstraintViolationException;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import org.jboss.logging.Logger;

/**
 * What each request on the engine socket does: the engine's per-step batch on P ({@link EngineBatchResource}),
 * its two D-side calls of {@link ConsumerResource} (pull and release), each with the same checks, answers and
 * problems as over HTTP, and the hello that authenticates a connection when pd.auth is on. Runs on the connection's own thread, never on a step loop.
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
    private static final Logger LOG = Logger.getLogger(EngineSocketCalls.class);

    private final ConnectorRuntime runtime;
    private final RequestBodies bodies;
    private final TokenTable tokens;
    private final AuthRefusals refusals;

    EngineSocketCalls(ConnectorRuntime runtime, RequestBodies bodies, TokenTable tokens, AuthRefusals refusals) {
        this.runtime = runtime;
        this.bodies = bodies;
        this.tokens = tokens;
        this.refusals = refusals;
    }

    /** Whether a connection must say hello with the engine's token before anything else. */
    boolean helloRequired() {
        return tokens.enabled();
    }

    /** The first request of a connection when a hello is required: only a hello with an engine token passes. */
    Reply authenticate(JsonNode request) {
        if (!"hello".equals(request.path("op").asText())) {
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

    /** Any request of an authenticated (or auth-free) connection. */
    Reply handle(JsonNode request) {
        String op = request.path("op").asText();
        try {
            return switch (op) {
                case "hello" -> hello();
                case "pull" -> pull(request.get("body"));
                case "release" -> release(request);
                case "batch" -> batch(request.get("body"));
                default -> Reply.of(Problem.of(400, UNKNOWN_OP, "Invalid request", "the engine socket takes the ops"
                        + " hello, batch, pull and release; got " + (op.isEmpty() ? "no op" : "'" + op + "'")), false);
            };
        } catch (ProblemException e) {
            return Reply.of(e.problem(), false);
        } catch (PdException e) {
            return Reply.of(ProblemMappers.problemOf(e), false);
        } catch (ConstraintViolationException e) {
            return Reply.of(ProblemMappers.validationProblem(e), false);
        } catch (JsonProcessingException e) {
            return Reply.of(Problem.of(400, "malformed-request", "Bad Request", ProblemMappers.unreadable(e)), false);
        } catch (KvInDeviceMemoryException e) {
            return Reply.of(HostKv.refused(e).problem(), false);
        } catch (RuntimeException e) {
            LOG.error("unexpected failure serving the engine socket's " + op, e);
            return Reply.of(Problem.of(500, "internal-error", "Internal error",
                    "the service failed unexpectedly; the log has the details"), false);
        }
    }

    /** The protocol, and what this instance reads beyond it: an engine uses a feature only when it is named. */
    private static Reply hello() {
        return new Reply(200, Map.of("protocol", PROTOCOL, "features", List.of(PackedTokenIds.FEATURE)), false);
    }

    /**
     * As POST /v1/consumer/pull with decode_rank, without the checksum or reference options; the prompt may be
     * {@code token_ids_le32} ({@link PackedTokenIds}).
     */
    private Reply pull(JsonNode body) throws JsonProcessingException {
        if (!(body instanceof ObjectNode object)) {
            throw InvalidInputException.of("a pull carries its request as the object 'body', as POST"
                    + " /v1/consumer/pull takes it");
        }
        JsonNode packed = object.remove(PackedTokenIds.FIELD);
        PullRequest request = bodies.read(object, PullRequest.class);
        if (request.decodeRank() == null) {
            throw new InvalidInputException(ConsumerFacade.INVALID_DECODE_RANK, "a pull on the engine socket names"
                    + " its decode_rank: each of the engine's TP workers pulls for its own rank");
        }
        int[] tokenIds = request.tokenIds();
        if (packed != null) {
            if (tokenIds != null || request.prompt() != null) {
                throw InvalidInputException.of("give exactly one of prompt, token_ids and " + PackedTokenIds.FIELD);
            }
            tokenIds = PackedTokenIds.decode(packed);
        }
        ConsumerFacade consumer = consumer();
        KvTransferParams params = KvTransferParams.fromMap(request.kvTransferParams()).validateForPull();
        int[] prompt = PromptInput.tokens(request.prompt(), tokenIds);
        long start = System.nanoTime();
        PullOutcome outcome = RemotePull.pull(runtime.registry(), consumer, request.requestId(), prompt, params,
                OptionalInt.of(request.decodeRank()));
        return new Reply(200, PullReplies.reply(request.requestId(), outcome, start, false, false, null), false);
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

    /** As DELETE /v1/consumer/requests/{id}?decode_rank=r (null: for every rank). */
    private Reply release(JsonNode request) {
        JsonNode id = request.get("request_id");
        if (id == null || !id.isTextual()) {
            throw InvalidInputException.of("a release names its request_id");
        }
        JsonNode rank = request.get("decode_rank");
        ConsumerFacade consumer = consumer();
        if (rank == null || rank.isNull()) {
            consumer.abort(id.asText());
        } else if (rank.isInt()) {
            consumer.releaseRank(id.asText(), rank.asInt());
        } else {
            throw ConsumerResource.decodeRankNotANumber();
        }
        return new Reply(204, null, false);
    }

    private ConsumerFacade consumer() {
        return runtime.consumer().orElseThrow(() -> ProblemException.roleNotServed("consumer"));
    }

    private Reply refuse(String reason, int status, String detail) {
        refusals.refused(reason, ROLE);
        return Reply.of(Problem.of(status, reason, status == 401 ? "Unauthorized" : "Forbidden", detail), true);
    }
}
