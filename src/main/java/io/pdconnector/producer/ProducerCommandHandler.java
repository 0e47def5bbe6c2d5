package io.pdconnector.producer;

import io.pdconnector.error.InvalidInputException;
import io.pdconnector.error.PdException;
import io.pdconnector.error.StateConflictException;
import io.pdconnector.error.UnknownRequestException;
import java.util.concurrent.CompletableFuture;

/**
 * Answers the commands the step drains, on the loop thread. A new request is only queued for
 * {@link Admission}: blocks, slots and nonces are taken in the admission phase, never here. A bug
 * while answering one fails that command alone ({@link RequestGuard}).
 */
final class ProducerCommandHandler {

    private final ProducerState state;
    private final Exporter exporter;
    private final LeaseExit exit;
    private final RequestGuard guard;
    private final Credits credits;

    ProducerCommandHandler(ProducerState state, Exporter exporter, LeaseExit exit, RequestGuard guard,
            Credits credits) {
        this.state = state;
        this.exporter = exporter;
        this.exit = exit;
        this.guard = guard;
        this.credits = credits;
    }

    /** A bug while a command changes a lease releases that lease; a failed query changes nothing. */
    void handle(ProducerCommand command, long now) {
        String changes = switch (command) {
            case ProducerCommand.WriteKv w -> w.requestId();
            case ProducerCommand.Finish f -> f.requestId();
            case ProducerCommand.Abort a -> a.requestId();
            case ProducerCommand.CommitCredit c -> c.commit().requestId();
            default -> null;
        };
        guard.guard(changes, command.reply(), () -> {
            dispatch(command, now);
            return 1;
        });
    }

    private void dispatch(ProducerCommand command, long now) {
        switch (command) {
            case ProducerCommand.Admission a -> state.pending.add(a);
            case ProducerCommand.WriteKv w -> writeKv(w);
            case ProducerCommand.Finish f -> finish(f, now);
            case ProducerCommand.Status s -> status(s, now);
            case ProducerCommand.Abort a -> abort(a);
            case ProducerCommand.Grant g -> credits.request(g);
            case ProducerCommand.CommitCredit c -> commit(c, now);
            case ProducerCommand.ReturnCredit r -> credits.giveBack(r);
            case ProducerCommand.Withdraw w -> credits.withdraw(w, now);
            case ProducerCommand.Snapshot s -> s.reply().complete(state.snapshot());
        }
    }

    /** An upload must cover every block of every rank exactly; anything else changes nothing. */
    private void writeKv(ProducerCommand.WriteKv w) {
        Lease lease = writing(w.requestId(), "written", w.reply());
        if (lease == null) {
            return;
        }
        int ranks = state.ranks.size();
        long blockBytes = state.ranks.getFirst().blockBytes();
        long expected = lease.blockIds().length * blockBytes * ranks;
        if (w.kv().length != expected) {
            w.reply().completeExceptionally(InvalidInputException.of("an upload for " + w.requestId() + " is "
                    + expected + " bytes (" + lease.blockIds().length + " blocks x " + ranks + " ranks x "
                    + blockBytes + " bytes), got " + w.kv().length));
            return;
        }
        state.ranks.forEach(r -> r.copyUpload(lease, w.kv(), ranks));
        w.reply().complete(null);
    }

    /** An engine's finish exports its lease exactly as a prefill's is exported. */
    private void finish(ProducerCommand.Finish f, long now) {
        Lease lease = writing(f.requestId(), "finished", f.reply());
        if (lease != null) {
            f.reply().complete(exporter.export(lease, now));
        }
    }

    /**
     * The request's lease if its KV may still be written (WRITING); otherwise fails {@code reply}
     * and returns null: unknown is 404, any other state a conflict, since once exported a decoder
     * may be reading the blocks and once releasing they are no longer the request's.
     */
    private Lease writing(String requestId, String what, CompletableFuture<?> reply) {
        Lease lease = known(requestId, reply);
        if (lease != null && lease.state() != LeaseState.WRITING) {
            reply.completeExceptionally(new StateConflictException(requestId, "request " + requestId + " is "
                    + lease.state() + ": its KV can be " + what + " only while it is " + LeaseState.WRITING
                    + (lease.state() == LeaseState.EXPORTED ? " (it was finished already)" : "")));
            return null;
        }
        return lease;
    }

    /** A refused commit (wrong grant, blocks or slot) changes nothing and says why. */
    private void commit(ProducerCommand.CommitCredit c, long now) {
        try {
            c.reply().complete(credits.commit(c.commit(), now));
        } catch (PdException refused) {
            c.reply().completeExceptionally(refused);
        }
    }

    private void status(ProducerCommand.Status s, long now) {
        Lease lease = known(s.requestId(), s.reply());
        if (lease != null) {
            s.reply().complete(LeaseStatus.of(lease, now, state.ranks.size()));
        }
    }

    /** Releases the lease as if it expired; one already exiting is left to finish its exit. */
    private void abort(ProducerCommand.Abort a) {
        Lease lease = known(a.requestId(), a.reply());
        if (lease == null) {
            return;
        }
        if (lease.anyRankHeld()) {
            exit.allRanks(lease);
            state.counters.leasesAborted.incrementAndGet();
        }
        a.reply().complete(null);
    }

    /** The request's lease, or null with {@code reply} failed as unknown (404). */
    private Lease known(String requestId, CompletableFuture<?> reply) {
        Lease lease = state.leases.find(requestId);
        if (lease == null) {
            reply.completeExceptionally(new UnknownRequestException("producer", requestId));
        }
        return lease;
    }
}
