package io.pdconnector.api;

import io.pdconnector.api.problem.Problem;
import io.pdconnector.api.problem.ProblemException;
import io.pdconnector.consumer.ConsumerFacade;
import io.pdconnector.consumer.DeclineReason;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.controlplane.Registry;
import io.pdconnector.error.ClientGoneException;
import io.pdconnector.loop.Deadlines;
import io.pdconnector.protocol.KvTransferParams;
import io.smallrye.mutiny.Uni;
import java.time.Duration;
import java.util.OptionalInt;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.function.Consumer;

/**
 * A pull as every D-side API does it: the registry vouches for the producer at the address the
 * params give (else 409 unknown_peer or peer_mismatch, and nothing is contacted), the pull, and a
 * decline as a 409 problem with the machine-readable reason. A received or recomputed pull holds D's blocks until released.
 */
public final class RemotePull {

    private RemotePull() {
    }

    public static PullOutcome pull(Registry registry, ConsumerFacade consumer, String requestId, int[] tokens,
            KvTransferParams params) {
        return pull(registry, consumer, requestId, tokens, params, submitted -> { });
    }

    /**
     * As above; {@code submitted} gets the pull's future as soon as it is queued, so the caller can
     * cancel it when its own client goes away (the loop then aborts the pull).
     */
    public static PullOutcome pull(Registry registry, ConsumerFacade consumer, String requestId, int[] tokens,
            KvTransferParams params, Consumer<Future<?>> submitted) {
        registry.requireTrusted(params);
        CompletableFuture<PullOutcome> pull = consumer.submitPull(requestId, tokens, params);
        submitted.accept(pull);
        return decided(consumer.await(pull, requestId));
    }

    /**
     * As above, asked for by D's rank {@code decodeRank} when present (the pull D's ranks share), without waiting:
     * the pull's future, answered by D's loop (its outcome still to be {@link #decided}). */
    public static CompletableFuture<PullOutcome> submit(Registry registry, ConsumerFacade consumer, String requestId,
            int[] tokens, KvTransferParams params, OptionalInt decodeRank) {
        registry.requireTrusted(params);
        return consumer.submitPull(requestId, tokens, params, decodeRank);
    }

    /** The outcome of a received or recomputed pull; a declined one as its 409 problem. */
    public static PullOutcome decided(PullOutcome outcome) {
        if (outcome.state() == PullState.DECLINED) {
            throw declined(outcome);
        }
        return outcome;
    }

    /**
     * As {@link #pull}, without a waiting thread: the outcome is emitted on {@code replyOn} once D's
     * loop answers (never on the loop's own thread), a 503 {@code deadline-exceeded} at
     * {@code pd.http.request-deadline}. The pull is cancelled (the loop aborts it if undecided) when
     * its subscriber goes away or the deadline passes. A pull cancelled by {@code submitted}'s hook (its
     * HTTP client went away) ends as {@link ClientGoneException}: expected, answered to nobody.
     */
    public static Uni<PullOutcome> pullAsync(Registry registry, ConsumerFacade consumer, String requestId, int[] tokens,
            KvTransferParams params, Consumer<Future<?>> submitted, Executor replyOn) {
        return pullAsync(registry, consumer, requestId, tokens, params, OptionalInt.empty(), submitted, replyOn);
    }

    /**
     * As above, asked for by D's rank {@code decodeRank} when present: the pull D's ranks share
     * ({@link ConsumerFacade#submitPull(String, int[], KvTransferParams, OptionalInt)}). A rank that joined
     * the pull and goes away only stops waiting; the pull goes on for the others.
     */
    public static Uni<PullOutcome> pullAsync(Registry registry, ConsumerFacade consumer, String requestId, int[] tokens,
            KvTransferParams params, OptionalInt decodeRank, Consumer<Future<?>> submitted, Executor replyOn) {
        registry.requireTrusted(params);
        CompletableFuture<PullOutcome> pull = consumer.submitPull(requestId, tokens, params, decodeRank);
        submitted.accept(pull);
        Duration deadline = consumer.deadline();
        return Uni.createFrom().completionStage(pull)
                .ifNoItem().after(deadline).recoverWithUni(() -> atDeadline(pull, requestId, deadline))
                .onFailure(CancellationException.class).transform(cancelled -> new ClientGoneException(requestId,
                        "the caller of pull " + requestId + " went away before its answer; D aborts the pull"
                                + " unless the caller was a decode rank that joined it"))
                .onTermination().invoke(() -> pull.cancel(false)) // no effect once answered
                .emitOn(replyOn)
                .map(RemotePull::decided);
    }

    /**
     * A pull whose wait ran out: cancelled (the loop aborts it) and a 503; or, decided in that instant and too late
     * to cancel, its outcome, since a caller told 503 would never release the KV D holds for it.
     */
    public static Uni<PullOutcome> atDeadline(CompletableFuture<PullOutcome> pull, String requestId, Duration deadline) {
        if (pull.cancel(false)) {
            return Uni.createFrom().failure(Deadlines.noAnswer("pull " + requestId, deadline));
        }
        return Uni.createFrom().completionStage(pull);
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
