package io.pdconnector.api.engine;

import static io.pdconnector.api.engine.EngineSocketOp.PULLS;
import static io.pdconnector.api.engine.EngineSocketOp.RELEASES;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.pdconnector.api.DecoderPulls;
import io.pdconnector.api.PullRequest;
import io.pdconnector.api.RequestBodies;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.loop.Deadlines;
import io.quarkus.runtime.annotations.RegisterForReflection;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * D's calls on the engine socket: one pull, and, with the feature {@value #FEATURE}, an engine step's pulls in
 * one request (each answered in its own frame as it is decided) and its releases in one request (one frame
 * answering each). Batched or not, a pull is the same pull: the same checks, reply and problems as
 * {@code POST /v1/consumer/pull} with {@code decode_rank}.
 */
@ApplicationScoped
class EngineSocketPulls {

    static final String FEATURE = "pull-batch";
    /** Far above one engine step's loads; a longer list is refused whole, nothing started. */
    static final int MAX_PULLS = 64;
    static final int MAX_RELEASES = 256;

    /** Where a batched op's reply frames go: {@code index} is the item's place in the request, null for the op. */
    interface Replies {
        void send(Integer index, EngineSocketCalls.Reply reply) throws IOException;
    }

    /** Op releases' answer: one result per release, in the request's order. */
    @RegisterForReflection
    record ReleaseResults(List<ReleaseResult> results) {
    }

    /** One release's status and, for a problem, its document. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @RegisterForReflection
    record ReleaseResult(int status, Object body) {
    }

    private final DecoderPulls decoder;
    private final RequestBodies bodies;

    EngineSocketPulls(DecoderPulls decoder, RequestBodies bodies) {
        this.decoder = decoder;
        this.bodies = bodies;
    }

    /** Op pull: one pull, waited for on the connection's thread. */
    EngineSocketCalls.Reply one(JsonNode body) throws JsonProcessingException {
        return answer(start(body));
    }

    /**
     * Op pulls: every pull of {@code request.pulls} starts at once; each is answered in a frame of its own, with
     * its index, as D decides it (a pull refused at once first), and a pull still undecided at
     * pd.http.request-deadline is aborted and answered 503. A list that is missing, empty or too long is one
     * frame without an index, nothing started. A connection that went away is noticed at the next answer written to
     * it; the undecided pulls are then aborted.
     */
    void pulls(JsonNode request, Replies replies) throws IOException {
        JsonNode list = request.get(PULLS.wire());
        if (list == null || !list.isArray() || list.isEmpty() || list.size() > MAX_PULLS) {
            replies.send(null, refusal(PULLS, MAX_PULLS));
            return;
        }
        int n = list.size();
        List<DecoderPulls.Submitted> started = new ArrayList<>(n);
        BlockingQueue<Integer> decided = new ArrayBlockingQueue<>(n);
        try {
            for (int i = 0; i < n; i++) {
                DecoderPulls.Submitted pull = startOrAnswer(list.get(i), i, replies);
                started.add(pull);
                if (pull != null) {
                    int index = i;
                    pull.outcome().whenComplete((outcome, failure) -> decided.add(index));
                }
            }
            if (started.stream().anyMatch(Objects::nonNull)) { // none: each was refused and answered already
                answerAsDecided(started, decided, replies, decoder.deadline(), this::answer);
            }
        } finally {
            started.forEach(pull -> {
                if (pull != null) {
                    pull.outcome().cancel(false);
                }
            });
        }
    }

    /** Op releases: each of {@code request.releases} as op release, answered in order in one frame. */
    EngineSocketCalls.Reply releases(JsonNode request) {
        JsonNode list = request.get(RELEASES.wire());
        if (list == null || !list.isArray() || list.isEmpty() || list.size() > MAX_RELEASES) {
            return refusal(RELEASES, MAX_RELEASES);
        }
        List<Object> submitted = new ArrayList<>(list.size()); // a future, or the problem that stopped it
        for (JsonNode item : list) {
            try {
                submitted.add(submitRelease(item));
            } catch (RuntimeException e) {
                submitted.add(EngineSocketProblems.of(e, RELEASES));
            }
        }
        long end = System.nanoTime() + decoder.deadline().toNanos(); // one deadline for them all
        List<ReleaseResult> results = new ArrayList<>(submitted.size());
        for (int i = 0; i < submitted.size(); i++) {
            EngineSocketCalls.Reply reply = submitted.get(i) instanceof CompletableFuture<?> release
                    ? released(release, Duration.ofNanos(Math.max(0, end - System.nanoTime())), list.get(i))
                    : (EngineSocketCalls.Reply) submitted.get(i);
            results.add(new ReleaseResult(reply.status(), reply.body()));
        }
        return new EngineSocketCalls.Reply(200, new ReleaseResults(results), false);
    }

    /** Op release: {@code decode_rank} null releases or aborts for every rank, as DELETE without it. */
    EngineSocketCalls.Reply release(JsonNode request) {
        return released(submitRelease(request), decoder.deadline(), request);
    }

    private CompletableFuture<Void> submitRelease(JsonNode request) {
        JsonNode id = request.get("request_id");
        if (id == null || !id.isTextual()) {
            throw InvalidInputException.of("a release names its request_id");
        }
        return decoder.submitRelease(id.asText(), DecoderPulls.decodeRank(request.get("decode_rank")));
    }

    private static EngineSocketCalls.Reply released(CompletableFuture<?> release, Duration deadline, JsonNode item) {
        try {
            Deadlines.await(release, deadline, "release of " + item.path("request_id").asText());
            return new EngineSocketCalls.Reply(204, null, false);
        } catch (RuntimeException e) {
            return EngineSocketProblems.of(e, RELEASES);
        }
    }

    /**
     * Sends each pull's answer as D decides it, then those still unanswered at {@code deadline} as
     * {@link ConsumerFacade#atDeadline} has them; an answer that fails is sent as its problem.
     */
    static void answerAsDecided(List<DecoderPulls.Submitted> started, BlockingQueue<Integer> decided, Replies replies,
            Duration deadline, Function<DecoderPulls.Submitted, EngineSocketCalls.Reply> answer) throws IOException {
        long end = System.nanoTime() + deadline.toNanos();
        boolean[] answered = new boolean[started.size()];
        long waiting = started.stream().filter(Objects::nonNull).count();
        try {
            for (; waiting > 0; waiting--) {
                Integer index = decided.poll(end - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (index == null) {
                    break;
                }
                answered[index] = true;
                replies.send(index, answered(answer, started.get(index)));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // shutting down: the finally of pulls() aborts what is undecided
            return;
        }
        for (int i = 0; i < started.size(); i++) {
            DecoderPulls.Submitted pull = started.get(i);
            if (pull != null && !answered[i]) {
                replies.send(i, answered(answer, new DecoderPulls.Submitted(pull.requestId(),
                        ConsumerFacade.atDeadline(pull.outcome(), pull.requestId(), deadline), pull.enteredAt())));
            }
        }
    }

    private static EngineSocketCalls.Reply answered(Function<DecoderPulls.Submitted, EngineSocketCalls.Reply> answer,
            DecoderPulls.Submitted pull) {
        try {
            return answer.apply(pull);
        } catch (RuntimeException e) {
            return EngineSocketProblems.of(e, PULLS);
        }
    }

    private DecoderPulls.Submitted startOrAnswer(JsonNode body, int index, Replies replies) throws IOException {
        try {
            return start(body);
        } catch (JsonProcessingException | RuntimeException e) {
            replies.send(index, EngineSocketProblems.of(e, PULLS));
            return null;
        }
    }

    /**
     * What only the socket's pull has: its decode_rank required (a TP worker pulls for its own rank), its token ids
     * perhaps packed; the rest is POST /v1/consumer/pull's.
     */
    private DecoderPulls.Submitted start(JsonNode body) throws JsonProcessingException {
        if (!(body instanceof ObjectNode object)) {
            throw InvalidInputException.of("a pull carries its request as an object, as POST /v1/consumer/pull"
                    + " takes it");
        }
        JsonNode packed = object.remove(PackedTokenIds.FIELD);
        PullRequest request = bodies.read(object, PullRequest.class);
        if (request.decodeRank() == null) {
            throw new InvalidInputException(ConsumerFacade.INVALID_DECODE_RANK, "a pull on the engine socket names"
                    + " its decode_rank: each of the engine's TP workers pulls for its own rank");
        }
        if (packed != null) {
            if (request.tokenIds() != null || request.prompt() != null) {
                throw InvalidInputException.of("give exactly one of prompt, token_ids and " + PackedTokenIds.FIELD);
            }
            request = new PullRequest(request.requestId(), null, PackedTokenIds.decode(packed),
                    request.kvTransferParams(), request.decodeRank(), request.vocabSize());
        }
        return decoder.submit(request, false, false);
    }

    private EngineSocketCalls.Reply answer(DecoderPulls.Submitted pull) {
        return new EngineSocketCalls.Reply(200, decoder.await(pull), false);
    }

    private static EngineSocketCalls.Reply refusal(EngineSocketOp op, int max) {
        return EngineSocketProblems.of(InvalidInputException.of("op " + op.wire() + " carries '" + op.wire()
                + "', a list of 1 to " + max + " items"), op);
    }
}
