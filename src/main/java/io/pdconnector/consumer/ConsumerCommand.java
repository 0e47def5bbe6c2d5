package io.pdconnector.consumer;

import io.pdconnector.loop.LoopCommand;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.ProducerIncarnation;
import java.util.concurrent.CompletableFuture;

/**
 * What callers ask the consumer step loop to do; each carries the future it is answered through.
 * {@link ConsumerFacade} alone builds them, {@link ConsumerCommandHandler} alone answers them.
 */
sealed interface ConsumerCommand extends LoopCommand {

    record Start(String requestId, int[] tokens, KvTransferParams params, CompletableFuture<PullOutcome> reply)
            implements ConsumerCommand {
    }

    record Abort(String requestId, CompletableFuture<Void> reply) implements ConsumerCommand {
    }

    /** Decode is done with the pulled KV: free the local blocks. */
    record Release(String requestId, CompletableFuture<Void> reply) implements ConsumerCommand {
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
