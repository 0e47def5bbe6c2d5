package io.pdconnector.api.engine;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The ops of the engine socket, by the name a request's {@code op} carries: one list, so the dispatch, the
 * per-op metric and the refusal of an unknown op cannot disagree on what the socket takes.
 */
enum EngineSocketOp {

    HELLO("hello"),
    BATCH("batch"),
    PULL("pull"),
    PULLS("pulls"),
    RELEASE("release"),
    RELEASES("releases");

    private final String wire;

    EngineSocketOp(String wire) {
        this.wire = wire;
    }

    /** The op's name in a request; for the batched ops also the name of the request's list. */
    String wire() {
        return wire;
    }

    /** The op {@code request} names; empty for none or one the socket does not take. */
    static Optional<EngineSocketOp> of(JsonNode request) {
        String name = request.path("op").asText();
        return Arrays.stream(values()).filter(op -> op.wire.equals(name)).findFirst();
    }

    /** "hello, batch, pull, pulls, release and releases": what an unknown op's refusal lists. */
    static String names() {
        List<String> names = Arrays.stream(values()).map(EngineSocketOp::wire).toList();
        return String.join(", ", names.subList(0, names.size() - 1)) + " and " + names.getLast();
    }
}
