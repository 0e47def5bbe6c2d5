package io.pdconnector.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.pdconnector.api.problem.HostKv;
import io.pdconnector.api.problem.Problem;
import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.api.problem.WholeBlocks;
import io.pdconnector.config.PdConfig;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.consumer.DeclineReason;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.controlplane.Registry;
import io.pdconnector.error.ClientGoneException;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.reference.ReferenceEngine;
import io.pdconnector.runtime.ConnectorRuntime;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * D's pull, whichever door it comes in by ({@code POST /v1/consumer/pull}, the engine socket's ops pull and pulls,
 * the OpenAI facade's D leg): the request read once, the registry's word on the producer asked before anything is
 * submitted (else 409 unknown_peer or peer_mismatch, and nothing is contacted), and one deadline rule
 * ({@link ConsumerFacade#atDeadline}). The doors only carry the request in and the answer out, so none can skip
 * the trust check. A decline is a 409 problem with the machine-readable reason; a received or recomputed pull
 * holds D's blocks until released.
 */
@ApplicationScoped
public class DecoderPulls {

    /** A pull handed to D's loop; the reply's pull_ms counts from {@code enteredAt}. */
    public record Submitted(String requestId, CompletableFuture<PullOutcome> outcome, long enteredAt) {
    }

    private final Registry registry;
    private final Supplier<Optional<ConsumerFacade>> consumer;
    private final PdConfig config;
    private final ReferenceEngine reference;

    @Inject
    public DecoderPulls(ConnectorRuntime runtime) {
        this(runtime.registry(), runtime::consumer, runtime.config(), new ReferenceEngine(runtime.geometry()));
    }

    DecoderPulls(Registry registry, Supplier<Optional<ConsumerFacade>> consumer, PdConfig config,
            ReferenceEngine reference) {
        this.registry = registry;
        this.consumer = consumer;
        this.config = config;
        this.reference = reference;
    }

    /**
     * {@code request} (its constraints checked by its door) read and handed to D's loop, asked for by its
     * {@code decode_rank} when it names one. What the reply is to read in place (a checksum, a reference check) is
     * refused first on a decoder whose KV is in GPU memory, so such a refusal starts nothing.
     */
    public Submitted submit(PullRequest request, boolean checksum, boolean checkReference) {
        ConsumerFacade consumer = consumer();
        if (checksum || checkReference) {
            String use = checksum ? "a KV checksum" : "a reference check of pulled KV";
            HostKv.require(config, use);
            WholeBlocks.require(config, use);
        }
        KvTransferParams params = KvTransferParams.fromMap(request.kvTransferParams()).validateForPull();
        int[] tokens = PromptInput.tokens(request.prompt(), request.tokenIds(),
                PromptInput.pullVocabulary(request.vocabSize(), checkReference));
        long enteredAt = System.nanoTime();
        OptionalInt rank = request.decodeRank() == null ? OptionalInt.empty() : OptionalInt.of(request.decodeRank());
        return new Submitted(request.requestId(), trusted(consumer, request.requestId(), tokens, params, rank),
                enteredAt);
    }

    /**
     * The reply to {@code pull}, without a waiting thread: emitted on {@code replyOn} once D's loop answers (never
     * on the loop's own thread), or at {@code pd.http.request-deadline} by the deadline rule. The pull is cancelled
     * (the loop aborts it if undecided) when its subscriber goes away. A pull cancelled by its door (its HTTP client
     * went away) ends as {@link ClientGoneException}: expected, answered to nobody. A rank that joined a pull D's
     * ranks share and goes away only stops waiting; the pull goes on for the others.
     */
    public Uni<PullResponse> reply(Submitted pull, boolean checksum, boolean checkReference, Executor replyOn) {
        Duration deadline = consumer().deadline();
        CompletableFuture<PullOutcome> outcome = pull.outcome();
        return Uni.createFrom().completionStage(outcome)
                .ifNoItem().after(deadline).recoverWithUni(() -> Uni.createFrom().completionStage(
                        ConsumerFacade.atDeadline(outcome, pull.requestId(), deadline)))
                .onFailure(CancellationException.class).transform(cancelled -> new ClientGoneException(
                        pull.requestId(), "the caller of pull " + pull.requestId() + " went away before its answer;"
                                + " D aborts the pull unless the caller was a decode rank that joined it"))
                .onTermination().invoke(() -> outcome.cancel(false)) // no effect once answered
                .emitOn(replyOn)
                .map(DecoderPulls::decided)
                .map(decided -> PullReplies.reply(pull.requestId(), decided, pull.enteredAt(), checksum,
                        checkReference, reference));
    }

    /** The reply to {@code pull}, waited for on the caller's thread; a wait that ends undecided cancels the pull. */
    public PullResponse await(Submitted pull) {
        PullOutcome outcome = decided(consumer().await(pull.outcome(), pull.requestId()));
        return PullReplies.reply(pull.requestId(), outcome, pull.enteredAt(), false, false, null);
    }

    /** A pull of the OpenAI facade's D leg, waited for: its outcome, received or recomputed. */
    public PullOutcome pull(String requestId, int[] tokens, KvTransferParams params) {
        ConsumerFacade consumer = consumer();
        return decided(consumer.await(trusted(consumer, requestId, tokens, params, OptionalInt.empty()), requestId));
    }

    /** D's blocks of {@code requestId} released by rank {@code decodeRank}, or for every rank when empty. */
    public CompletableFuture<Void> submitRelease(String requestId, OptionalInt decodeRank) {
        ConsumerFacade consumer = consumer();
        return decodeRank.isEmpty() ? consumer.submitAbort(requestId)
                : consumer.submitReleaseRank(requestId, decodeRank.getAsInt());
    }

    /**
     * As {@link #submitRelease}, waited for, with {@code decodeRank} as a query parameter's text (null: every rank),
     * read here, not by JAX-RS, whose answer to a query parameter that is not a number is a 404.
     */
    public void release(String requestId, String decodeRank) {
        ConsumerFacade consumer = consumer();
        if (decodeRank == null) {
            consumer.abort(requestId);
            return;
        }
        int rank;
        try {
            rank = Integer.parseInt(decodeRank.strip());
        } catch (NumberFormatException e) {
            throw decodeRankNotANumber();
        }
        consumer.releaseRank(requestId, rank);
    }

    /** How long a door waits for D's loop ({@code pd.http.request-deadline}). */
    public Duration deadline() {
        return consumer().deadline();
    }

    /** A release's {@code decode_rank} as JSON: absent or null for every rank, else a whole number. */
    public static OptionalInt decodeRank(JsonNode rank) {
        if (rank == null || rank.isNull()) {
            return OptionalInt.empty();
        }
        if (!rank.isInt()) {
            throw decodeRankNotANumber();
        }
        return OptionalInt.of(rank.asInt());
    }

    /** The refusal of a decode_rank that is not a whole number, the same over HTTP and the engine socket. */
    private static InvalidInputException decodeRankNotANumber() {
        return new InvalidInputException(ConsumerFacade.INVALID_DECODE_RANK, "decode_rank is not a whole number;"
                + " it names one of this decoder's ranks, 0 to pd.tp-size - 1");
    }

    /** The only way a pull reaches D's loop: after the registry vouches for the producer at the params' address. */
    private CompletableFuture<PullOutcome> trusted(ConsumerFacade consumer, String requestId, int[] tokens,
            KvTransferParams params, OptionalInt decodeRank) {
        registry.requireTrusted(params);
        return consumer.submitPull(requestId, tokens, params, decodeRank);
    }

    private ConsumerFacade consumer() {
        return consumer.get().orElseThrow(() -> ProblemException.roleNotServed("consumer"));
    }

    /** The outcome of a received or recomputed pull; a declined one as its 409 problem. */
    static PullOutcome decided(PullOutcome outcome) {
        if (outcome.state() == PullState.DECLINED) {
            throw declined(outcome);
        }
        return outcome;
    }

    private static ProblemException declined(PullOutcome outcome) {
        String reason = outcome.reason().wire();
        return new ProblemException(Problem.of(409, reason, "Pull declined",
                "the pull of " + outcome.requestId() + " was declined: " + describe(outcome.reason()))
                .forRequest(outcome.requestId()));
    }

    private static String describe(DeclineReason reason) {
        return switch (reason) {
            case LEASE_MISMATCH -> "a lease slot no longer held the nonce, so P released the blocks before or during the READ";
            case SLOT_READ_FAILED -> "the READ of P's lease slots failed, so the KV cannot be proven to be P's";
            case NO_LEASE -> "the params carry no lease fields and this decoder verifies leases";
            case TRANSFER_FAILED -> "a block READ failed";
            case TIMEOUT -> "the pull was not decided before its deadline";
            case ABORTED -> "the pull was aborted";
            case PEER_RESTARTED -> "the producer restarted before the KV was verified; prefill again";
            case PEER_GONE -> "the producer left the registry before the KV was verified; prefill again";
        };
    }
}
