package io.pdconnector.api.problem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.pdconnector.error.ClientGoneException;
import io.pdconnector.error.IncompatiblePeerException;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.PdException;
import io.pdconnector.error.PeerFailureException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.error.UnknownRequestException;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import jakarta.ws.rs.core.Response;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Each category of the error hierarchy has one status; a bug is a 500 that leaks nothing. */
class ProblemMappersTest {

    private final ProblemMappers mappers = new ProblemMappers();

    private record Case(PdException error, int status, String reason) {
    }

    @Test
    void everyCategoryMapsToItsStatusAndReason() {
        List<Case> cases = List.of(
                new Case(InvalidInputException.of("bad"), 400, "invalid-argument"),
                new Case(new InvalidKvTransferParamsException("bad"), 400, "invalid-kv-transfer-params"),
                new Case(new UnknownRequestException("producer", "r"), 404, "unknown-request"),
                new Case(new StateConflictException("r", "held"), 409, "wrong-state"),
                new Case(new IncompatiblePeerException("other model"), 422, "incompatible-peer"),
                new Case(new PeerFailureException("down", null), 502, "peer-unreachable"),
                new Case(UnavailableException.noFreeBlocks("full"), 503, "no-free-blocks"),
                new Case(UnavailableException.queueFull("loop", 4), 503, "queue-full"),
                new Case(UnavailableException.deadlineExceeded("late"), 503, "deadline-exceeded"),
                new Case(new ClientGoneException("r", "the caller went away"), 499, "client-gone"));
        for (Case c : cases) {
            Response r = mappers.domain(c.error(), null);
            Problem p = (Problem) r.getEntity();
            assertEquals(c.status(), r.getStatus(), c.reason());
            assertEquals(c.reason(), p.reason());
            assertEquals("urn:pd-connector:problem:" + c.reason(), p.type());
            assertEquals(c.error().getMessage(), p.detail());
            if (c.status() == 503) {
                assertEquals("1", r.getHeaderString("Retry-After"), c.reason());
            } else {
                assertNull(r.getHeaderString("Retry-After"), c.reason());
            }
        }
    }

    @Test
    void aRequestScopedFailureNamesTheRequest() {
        Problem p = (Problem) mappers.domain(new StateConflictException("req-7", "held"), null).getEntity();
        assertEquals("req-7", p.requestId());
    }

    @Test
    void anInternalIllegalArgumentIsA500ThatLeaksNoDetail() {
        Response r = mappers.unexpected(new IllegalArgumentException("slot 3 of /secret/path is odd"), null);
        Problem p = (Problem) r.getEntity();

        assertEquals(500, r.getStatus());
        assertEquals("internal-error", p.reason());
        assertFalse(p.detail().contains("secret"), p.detail());
        assertFalse(p.detail().contains("IllegalArgument"), p.detail());
    }
}
