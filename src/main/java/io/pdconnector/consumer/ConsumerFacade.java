package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.UnavailableException;
import io.pdconnector.loop.CommandQueue;
import io.pdconnector.loop.Deadlines;
import io.pdconnector.protocol.InvalidKvTransferParamsException;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.ProducerIncarnation;
import io.pdconnector.protocol.RequestIds;
import java.time.Duration;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;

/**
 * The only way into D's step loop, from any thread, and the only builder of its commands. Bad input
 * throws on the caller's thread and queues nothing. Each {@code submitX} returns the loop's answer
 * as a future (a test stepping the loop itself awaits it); each {@code x} waits for it with the
 * deadline, as the HTTP layer does.
 */
public final class ConsumerFacade {

    /** The reason a decode rank outside 0 to pd.tp-size - 1 is refused with (400). */
    public static final String INVALID_DECODE_RANK = "invalid-decode-rank";

    private final CommandQueue<ConsumerCommand> commands;
    private final ConsumerConfig config;
    private final Duration deadline;

    public ConsumerFacade(PullScheduler scheduler, Duration deadline) {
        this.commands = scheduler.commands();
        this.config = scheduler.config();
        this.deadline = deadline;
    }

    /**
     * Pulls the KV of {@code tokens} that P describes in {@code params}. What needs the peer
     * (unknown engine, version, ranges) fails the future, as does a request id already being pulled.
     * A caller that gives up cancels the future: the loop then aborts the pull if it is undecided (its
     * READs and blocks released; P's lease ends by expiry), and a decided one is left to the retention.
     */
    public CompletableFuture<PullOutcome> submitPull(String requestId, int[] tokens, KvTransferParams params) {
        return submitPull(requestId, tokens, params, OptionalInt.empty());
    }

    /**
     * As above, asked for by D's rank {@code decodeRank} (empty: a router's pull, one caller). The first
     * rank's ask starts the pull; another rank's ask with the same request id, params and tokens joins
     * it and gets the same outcome (at once if decided), so D reads P once for all its ranks. Refused
     * (409, nothing changed): the same rank asking twice, other params or tokens, a router's pull. A
     * rank that stops waiting does not abort a pull it joined; only the caller that started it does.
     */
    public CompletableFuture<PullOutcome> submitPull(String requestId, int[] tokens, KvTransferParams params,
            OptionalInt decodeRank) {
        RequestIds.require(requestId);
        if (params == null) {
            throw new InvalidKvTransferParamsException("kv_transfer_params is missing");
        }
        params.validateForPull();
        PullValidation.requirePrompt(config, tokens, params);
        decodeRank.ifPresent(this::requireDecodeRank);
        return commands.submit(reply -> new ConsumerCommand.Start(requestId, tokens.clone(), params, decodeRank,
                reply));
    }

    public PullOutcome pull(String requestId, int[] tokens, KvTransferParams params) {
        return await(submitPull(requestId, tokens, params), requestId);
    }

    /** How long a caller waits for the loop ({@code pd.http.request-deadline}). */
    public Duration deadline() {
        return deadline;
    }

    /** Waits for a submitted pull with the deadline, then as {@link #atDeadline}; a caller that gives up cancels it. */
    public PullOutcome await(CompletableFuture<PullOutcome> pull, String requestId) {
        try {
            return Deadlines.await(pull, deadline, "pull " + requestId);
        } catch (UnavailableException late) {
            if (!late.deadlineExceeded()) {
                throw late;
            }
            return Deadlines.await(atDeadline(pull, requestId, deadline), Duration.ZERO, "pull " + requestId);
        } finally {
            pull.cancel(false); // no effect once answered; otherwise the loop aborts the pull
        }
    }

    /**
     * The one rule for a pull whose wait ran out, whoever waited (a blocking caller, the HTTP pull's Uni, the engine
     * socket's op pulls): one still undecided is cancelled (the loop aborts it) and fails with the 503; one decided
     * in that instant, too late to cancel, keeps its outcome, since a caller told 503 would never release the KV D
     * holds for it.
     */
    public static CompletableFuture<PullOutcome> atDeadline(CompletableFuture<PullOutcome> pull, String requestId,
            Duration deadline) {
        return pull.cancel(false) ? CompletableFuture.failedFuture(Deadlines.noAnswer("pull " + requestId, deadline))
                : pull;
    }

    /**
     * The registry announced a producer's incarnation: the loop handshakes with it (loads its
     * metadata, prepares its lists) before a pull needs it; a new epoch replaces the old one. The
     * future fails if the producer is refused (incompatible, or claiming another engine's agent).
     */
    public CompletableFuture<Void> submitAnnounced(ProducerIncarnation incarnation) {
        return commands.submit(reply -> new ConsumerCommand.PeerAnnounced(incarnation, reply));
    }

    /** The registry no longer lists the producer: its undecided pulls are declined peer_gone. */
    public CompletableFuture<Void> submitWithdrawn(String engineId) {
        return commands.submit(reply -> new ConsumerCommand.PeerWithdrawn(engineId, reply));
    }

    /**
     * Declines an undecided pull as aborted (P is not told it was read); releases a decided one. A
     * pull D's ranks share is aborted or released for every rank.
     */
    public CompletableFuture<Void> submitAbort(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.Abort(RequestIds.require(requestId), reply));
    }

    public void abort(String requestId) {
        Deadlines.await(submitAbort(requestId), deadline, "abort " + requestId);
    }

    /**
     * D's rank {@code decodeRank} is done with a pull D's ranks share: its blocks are freed once every
     * rank is (the answer to the last rank's release means they are free). An undecided pull is aborted
     * for every rank. Refused (409, nothing changed): a rank releasing twice, a router's pull.
     */
    public CompletableFuture<Void> submitReleaseRank(String requestId, int decodeRank) {
        RequestIds.require(requestId);
        requireDecodeRank(decodeRank);
        return commands.submit(reply -> new ConsumerCommand.ReleaseRank(requestId, decodeRank, reply));
    }

    public void releaseRank(String requestId, int decodeRank) {
        Deadlines.await(submitReleaseRank(requestId, decodeRank), deadline, "release of rank " + decodeRank + " of "
                + requestId);
    }

    private void requireDecodeRank(int rank) {
        if (rank < 0 || rank >= config.tpSize()) {
            throw new InvalidInputException(INVALID_DECODE_RANK, "decode_rank " + rank + " is not a rank of this"
                    + " decoder: pd.tp-size is " + config.tpSize() + ", so it is 0 to " + (config.tpSize() - 1));
        }
    }

    /** Decode no longer needs a decided pull's KV: frees its local blocks. */
    public CompletableFuture<Void> submitRelease(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.Release(RequestIds.require(requestId), reply));
    }

    public void release(String requestId) {
        Deadlines.await(submitRelease(requestId), deadline, "release " + requestId);
    }

    /** A decided pull's KV bytes: for each local block, each rank's slice in rank order. */
    public CompletableFuture<byte[]> submitReadKv(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.ReadKv(RequestIds.require(requestId), reply));
    }

    public byte[] readKv(String requestId) {
        return Deadlines.await(submitReadKv(requestId), deadline, "read KV of " + requestId);
    }

    /**
     * Where a pull is; a declined pull is forgotten once answered (fail policy; one D's ranks share, once
     * every rank has its answer), so it is unknown here.
     */
    public CompletableFuture<PullStatus> submitStatus(String requestId) {
        return commands.submit(reply -> new ConsumerCommand.Status(RequestIds.require(requestId), reply));
    }

    public PullStatus status(String requestId) {
        return Deadlines.await(submitStatus(requestId), deadline, "status of " + requestId);
    }

    public CompletableFuture<ConsumerSnapshot> submitSnapshot() {
        return commands.submit(ConsumerCommand.Snapshot::new);
    }

    public ConsumerSnapshot snapshot() {
        return Deadlines.await(submitSnapshot(), deadline, "snapshot");
    }
}
