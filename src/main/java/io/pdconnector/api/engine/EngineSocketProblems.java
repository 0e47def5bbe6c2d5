package io.pdconnector.api.engine;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.pdconnector.api.problem.HostKv;
import io.pdconnector.api.problem.Problem;
import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.api.problem.ProblemMappers;
import io.pdconnector.error.PdException;
import io.pdconnector.transfer.KvInDeviceMemoryException;
import jakarta.validation.ConstraintViolationException;
import org.jboss.logging.Logger;

/** A failed engine-socket request (or one item of a batched one) as the problem HTTP would have answered. */
final class EngineSocketProblems {

    private static final Logger LOG = Logger.getLogger(EngineSocketProblems.class);

    private EngineSocketProblems() {
    }

    /** The problem for {@code failure}; an unexpected one is logged with its stack and answered 500. */
    static EngineSocketCalls.Reply of(Exception failure, EngineSocketOp op) {
        Problem problem = switch (failure) {
            case ProblemException e -> e.problem();
            case PdException e -> ProblemMappers.problemOf(e);
            case ConstraintViolationException e -> ProblemMappers.validationProblem(e);
            case JsonProcessingException e -> Problem.of(400, "malformed-request", "Bad Request",
                    ProblemMappers.unreadable(e));
            case KvInDeviceMemoryException e -> HostKv.refused(e).problem();
            default -> {
                LOG.error("unexpected failure serving the engine socket's " + op.wire(), failure);
                yield Problem.of(500, "internal-error", "Internal error",
                        "the service failed unexpectedly; the log has the details");
            }
        };
        return EngineSocketCalls.Reply.of(problem, false);
    }
}
