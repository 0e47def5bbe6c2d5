package io.pdconnector.consumer;

import io.pdconnector.loop.LoopCommand;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.ProducerIncarnation;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;

/**
 * What callers ask the consumer step loop to do; each carries the future it is answered through.
 * {@link ConsumerFacade} alone builds them, {@link ConsumerCommandHandler} alone answers them.
 */
sealed interface ConsumerCommand extends LoopCommand {

    /**
     * A pull, asked for by a router ({@code decodeRank} empty: one caller) or by one of D's ranks,
     * which starts the pull or joins the one another rank started.
     */
    record Start(String requestId, int[] tokens, KvTransferParams params, OptionalInt decodeRank,
            CompletableFuture<PullOutcome> reply) implements ConsumerCommand {
    }

    record Abort(String requestId, CompletableFuture<Void> reply) implements ConsumerCommand {
    }

    /** Decode is done with the pulled KV: free the local blocks. */
    record Release(String requestId, CompletableFuture<Void> reply) implements ConsumerCommand {
    }

    /** Decode rank {@code rank} is done with a pull its ranks share (an undecided one is aborted for all). */
    record ReleaseRank(String requestId, int rank, CompletableFuture<Void> reply) implements ConsumerCommand {
    }

    record ReadKv(String requestId, CompletableFuture<byte[]> reply) implements ConsumerCommand {
    }

    record Status(String requestId, CompletableFuture<PullStatus> reply) implements ConsumerCommand {
    }

    /** The registry announced a producer's (new) incarnation: handshake with it now, off any pull's path. */
    record PeerAnnounced(ProducerIncarnation incarnation, CompletableFuture<Void> reply) implements ConsumerCommand {
    }

    /** The registry no longer lists the producer: drop what D loaded for it. */
    record PeerWithdrawn(String engineId, CompletableFuture<Void> reply) implements ConsumerCommand {
    }

    record Snapshot(CompletableFuture<ConsumerSnapshot> reply) implements ConsumerCommand {
    }
}
