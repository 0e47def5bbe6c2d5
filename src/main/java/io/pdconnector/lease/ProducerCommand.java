package io.pdconnector.lease;

import io.pdconnector.producer.KvTransferParams;
import java.util.concurrent.CompletableFuture;

/** What callers ask the producer step loop to do; each carries the future it is answered through. */
sealed interface ProducerCommand {

    CompletableFuture<?> reply();

    record Prefill(String requestId, int[] tokens, CompletableFuture<KvTransferParams> reply)
            implements ProducerCommand {
    }

    record Abort(String requestId, CompletableFuture<Void> reply) implements ProducerCommand {
    }

    record Snapshot(CompletableFuture<ProducerSnapshot> reply) implements ProducerCommand {
    }
}
