package io.pdconnector.producer;

import io.pdconnector.config.ProducerConfig;
import io.pdconnector.error.InvalidInputException;
import io.pdconnector.loop.CommandQueue;
import io.pdconnector.loop.Deadlines;
import io.pdconnector.protocol.KvTransferParams;
import io.pdconnector.protocol.RequestIds;
import io.pdconnector.protocol.TokenIds;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * How any thread asks P's step loop for something, and the only builder of {@link ProducerCommand}s.
 * Bad input is refused here, on the caller's thread (400), and queues nothing. Each operation comes
 * twice: {@code submitX} returns the loop's future (for a caller that steps the loop itself), and
 * {@code x} awaits it with the deadline (the HTTP layer).
 */
public final class ProducerFacade {

    private final CommandQueue<ProducerCommand> commands;
    private final ProducerConfig config;
    private final Duration deadline;

    public ProducerFacade(LeaseScheduler scheduler, Duration deadline) {
        this.commands = scheduler.commands();
        this.config = scheduler.config();
        this.deadline = deadline;
    }

    /** How long a caller waits for the loop's answer. */
    public Duration deadline() {
        return deadline;
    }

    /** Prefills {@code tokens} for a remote decoder; completes with the params to forward to D. */
    public CompletableFuture<KvTransferParams> submitPrefill(String requestId, int[] tokens) {
        RequestIds.require(requestId);
        requirePrompt(tokens);
        int[] copy = tokens.clone();
        return commands.submit(reply -> new ProducerCommand.Prefill(requestId, copy, reply));
    }

    public KvTransferParams prefill(String requestId, int[] tokens) {
        return Deadlines.await(submitPrefill(requestId, tokens), deadline, "prefill " + requestId);
    }

    /**
     * Reserves blocks (and a slot and nonce) for an engine that writes {@code numTokens} tokens of
     * KV itself; completes once every rank's slot holds the nonce, with where to write.
     */
    public CompletableFuture<Reservation> submitReserve(String requestId, int numTokens) {
        RequestIds.require(requestId);
        requireFits(numTokens);
        return commands.submit(reply -> new ProducerCommand.Reserve(requestId, numTokens, reply));
    }

    public Reservation reserve(String requestId, int numTokens) {
        return Deadlines.await(submitReserve(requestId, numTokens), deadline, "reserve " + requestId);
    }

    /** Copies an engine's uploaded KV into a reserved request's blocks (layout: {@link Reservation}). */
    public CompletableFuture<Void> submitWriteKv(String requestId, byte[] kv) {
        RequestIds.require(requestId);
        if (kv == null) {
            throw InvalidInputException.of("an upload needs a body");
        }
        return commands.submit(reply -> new ProducerCommand.WriteKv(requestId, kv, reply));
    }

    public void writeKv(String requestId, byte[] kv) {
        Deadlines.await(submitWriteKv(requestId, kv), deadline, "KV upload of " + requestId);
    }

    /** The engine wrote a reserved request's KV: exports its lease, as a prefill's is exported. */
    public CompletableFuture<KvTransferParams> submitFinish(String requestId) {
        RequestIds.require(requestId);
        return commands.submit(reply -> new ProducerCommand.Finish(requestId, reply));
    }

    public KvTransferParams finish(String requestId) {
        return Deadlines.await(submitFinish(requestId), deadline, "finish " + requestId);
    }

    public CompletableFuture<LeaseStatus> submitStatus(String requestId) {
        RequestIds.require(requestId);
        return commands.submit(reply -> new ProducerCommand.Status(requestId, reply));
    }

    public LeaseStatus status(String requestId) {
        return Deadlines.await(submitStatus(requestId), deadline, "status of " + requestId);
    }

    /**
     * Releases a request's lease now, as if it expired (an engine's unfinished request too): its
     * slot is zeroed first, so a late reader is declined.
     */
    public CompletableFuture<Void> submitAbort(String requestId) {
        RequestIds.require(requestId);
        return commands.submit(reply -> new ProducerCommand.Abort(requestId, reply));
    }

    public void abort(String requestId) {
        Deadlines.await(submitAbort(requestId), deadline, "abort " + requestId);
    }

    /**
     * Grants up to {@code blocks} blocks and {@code leases} lease slots (fewer if fewer are free) that the
     * engine binds requests to by itself ({@link #commit}); completes once every granted slot holds its nonce.
     */
    public CompletableFuture<CreditGrant> submitGrant(int blocks, int leases) {
        return submitGrant(blocks, leases, null);
    }

    /**
     * As {@link #submitGrant(int, int)}, into the open grant {@code extend} (same deadline); the answer lists
     * only what was added. A grant that is unknown, returned or expired is refused (409).
     */
    public CompletableFuture<CreditGrant> submitGrant(int blocks, int leases, String extend) {
        return submitGrant(blocks, leases, extend, null);
    }

    /**
     * As {@link #submitGrant(int, int, String)}; a new grant's ask may carry {@code askId}, the engine's own
     * name for it, so that {@link #submitWithdraw} can take the grant back if the answer never reaches the
     * engine. An ask id already used, or withdrawn, is refused (409).
     */
    public CompletableFuture<CreditGrant> submitGrant(int blocks, int leases, String extend, String askId) {
        if (blocks < 0 || leases < 0 || blocks > config.numBlocks() || leases > config.effectiveLeaseSlots()) {
            throw InvalidInputException.of("a grant asks for 0.." + config.numBlocks() + " blocks and 0.."
                    + config.effectiveLeaseSlots() + " lease slots, got " + blocks + " and " + leases);
        }
        GrantAsks.require(askId);
        if (askId != null && extend != null) {
            throw InvalidInputException.of("an ask id names an ask for a new grant; an extension whose answer is"
                    + " lost is taken back by returning grant " + extend);
        }
        return commands.submit(reply -> new ProducerCommand.Grant(blocks, leases, extend, askId, reply));
    }

    /**
     * Takes back the grant the ask {@code askId} made (true, once its unbound slots are zeroed), or, when P
     * has not seen that ask, answers false and refuses the ask if it comes within the reservation timeout.
     */
    public CompletableFuture<Boolean> submitWithdraw(String askId) {
        if (askId == null) {
            throw InvalidInputException.of("a withdrawal names the ask id of an ask for a new grant");
        }
        GrantAsks.require(askId);
        return commands.submit(reply -> new ProducerCommand.Withdraw(askId, reply));
    }

    public CreditGrant grant(int blocks, int leases) {
        return Deadlines.await(submitGrant(blocks, leases), deadline, "grant");
    }

    /** Binds a request to granted blocks and a granted slot and exports its lease (the params it returns). */
    public CompletableFuture<KvTransferParams> submitCommit(Commit commit) {
        RequestIds.require(commit.requestId());
        requireFits(commit.numTokens());
        if (commit.creditId() == null || commit.creditId().isBlank()) {
            throw InvalidInputException.of("a commit names the grant its blocks and slot came from");
        }
        return commands.submit(reply -> new ProducerCommand.CommitCredit(commit, reply));
    }

    public KvTransferParams commit(Commit commit) {
        return Deadlines.await(submitCommit(commit), deadline, "commit " + commit.requestId());
    }

    /** Gives back what was not committed of a grant: its slots are zeroed, then its blocks freed. */
    public CompletableFuture<Boolean> submitReturn(String creditId) {
        if (creditId == null || creditId.isBlank()) {
            throw InvalidInputException.of("a return names the grant");
        }
        return commands.submit(reply -> new ProducerCommand.ReturnCredit(creditId, reply));
    }

    public boolean returnCredit(String creditId) {
        return Deadlines.await(submitReturn(creditId), deadline, "return of grant " + creditId);
    }

    public CompletableFuture<ProducerSnapshot> submitSnapshot() {
        return commands.submit(ProducerCommand.Snapshot::new);
    }

    public ProducerSnapshot snapshot() {
        return Deadlines.await(submitSnapshot(), deadline, "producer snapshot");
    }

    private void requirePrompt(int[] tokens) {
        requireFits(TokenIds.require(tokens).length);
    }

    private void requireFits(int numTokens) {
        if (numTokens < 1) {
            throw InvalidInputException.of("a request needs at least one token, got " + numTokens);
        }
        long capacity = (long) config.numBlocks() * config.geometry().blockTokens();
        if (numTokens > capacity) {
            throw InvalidInputException.of("a prompt of " + numTokens + " tokens exceeds this instance's "
                    + capacity + "-token KV capacity");
        }
    }
}
