package io.pdconnector.producer;

import io.pdconnector.loop.LoopCommand;
import io.pdconnector.protocol.KvTransferParams;
import java.util.concurrent.CompletableFuture;

/**
 * What callers ask the producer step loop to do; each carries the future it is answered through.
 * Built only by {@link ProducerFacade} and answered only by {@link ProducerCommandHandler}, so a new
 * operation touches this interface, the facade and the handler, and nothing else.
 */
sealed interface ProducerCommand extends LoopCommand {

    /** A new request: it gets blocks, a slot and a nonce in the step that schedules it. */
    sealed interface Admission extends ProducerCommand {
        String requestId();

        int numTokens();
    }

    /** Reserve, write the reference engine's KV and export, all in one step. */
    record Prefill(String requestId, int[] tokens, CompletableFuture<KvTransferParams> reply) implements Admission {
        @Override
        public int numTokens() {
            return tokens.length;
        }
    }

    /** Reserve for an engine that writes the KV itself, then sends {@link Finish}. */
    record Reserve(String requestId, int numTokens, CompletableFuture<Reservation> reply) implements Admission {
    }

    /** An engine's KV, uploaded instead of written through the shared files (layout: {@link Reservation}). */
    record WriteKv(String requestId, byte[] kv, CompletableFuture<Void> reply) implements ProducerCommand {
    }

    /** The engine wrote the KV: export the lease. */
    record Finish(String requestId, CompletableFuture<KvTransferParams> reply) implements ProducerCommand {
    }

    record Status(String requestId, CompletableFuture<LeaseStatus> reply) implements ProducerCommand {
    }

    record Abort(String requestId, CompletableFuture<Void> reply) implements ProducerCommand {
    }

    /**
     * Blocks and lease slots for an engine to bind requests to itself ({@link Credit}): a new grant, or
     * more for the open grant {@code extend} names (null: a new one), so an engine tops up one grant
     * instead of splitting its credit over many.
     */
    record Grant(int blocks, int leases, String extend, String askId, CompletableFuture<CreditGrant> reply)
            implements ProducerCommand {
    }

    /**
     * Takes back the grant the engine's ask {@code askId} made, whose answer never reached it; completes with
     * whether P held one (if not, the ask is refused should it still come).
     */
    record Withdraw(String askId, CompletableFuture<Boolean> reply) implements ProducerCommand {
    }

    /** Binds a request to granted blocks and a granted slot and exports its lease. */
    record CommitCredit(Commit commit, CompletableFuture<KvTransferParams> reply) implements ProducerCommand {
    }

    /** The engine gives back what it did not commit of a grant; completes with whether P held it. */
    record ReturnCredit(String creditId, CompletableFuture<Boolean> reply) implements ProducerCommand {
    }

    record Snapshot(CompletableFuture<ProducerSnapshot> reply) implements ProducerCommand {
    }
}
