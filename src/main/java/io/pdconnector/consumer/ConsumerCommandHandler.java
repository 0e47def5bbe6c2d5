package io.pdconnector.consumer;

import io.pdconnector.error.PdException;
import io.pdconnector.error.StateConflictException;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Answers every {@link ConsumerCommand}, on the loop thread. A refusal the caller can act on (a
 * {@link PdException}) fails the command's reply and changes nothing; anything else is a bug: the
 * command's caller gets an internal error (500), an abort or release that was changing a pull fails
 * that pull through {@link Decider#fail}, and the step goes on. A new pull is
 * the exception: whatever fails its arrival, a peer's transfer error included, is its caller's answer
 * ({@link Arrival}).
 */
final class ConsumerCommandHandler {

    private final ConsumerState state;
    private final Arrival arrival;
    private final Decider decider;
    private final KvReadout readout;
    private final PeerHandshake handshake;
    private final SharedPulls shared;

    ConsumerCommandHandler(ConsumerState state, Arrival arrival, PeerHandshake handshake, Decider decider,
            KvReadout readout, SharedPulls shared) {
        this.state = state;
        this.arrival = arrival;
        this.handshake = handshake;
        this.decider = decider;
        this.readout = readout;
        this.shared = shared;
    }

    void handle(ConsumerCommand command, long now) {
        try {
            dispatch(command, now);
        } catch (RuntimeException | OutOfMemoryError e) {
            Pull changed = switch (command) {
                case ConsumerCommand.Abort a -> state.pulls.get(a.requestId());
                case ConsumerCommand.Release r -> state.pulls.get(r.requestId());
                case ConsumerCommand.ReleaseRank r -> state.pulls.get(r.requestId());
                default -> null;
            };
            if (changed != null) {
                decider.fail(changed, e);
            }
            command.reply().completeExceptionally(new IllegalStateException(command.getClass().getSimpleName()
                    + " failed on the step loop", e));
        }
    }

    private void dispatch(ConsumerCommand command, long now) {
        switch (command) {
            case ConsumerCommand.Start s -> arrival.arrive(s, now);
            case ConsumerCommand.Abort a -> answer(a.reply(), () -> abort(state.known(a.requestId())));
            case ConsumerCommand.Release r -> answer(r.reply(), () -> release(state.known(r.requestId())));
            case ConsumerCommand.ReleaseRank r -> answer(r.reply(),
                    () -> shared.release(state.known(r.requestId()), r.rank()));
            case ConsumerCommand.ReadKv r -> answer(r.reply(), () -> readout.read(state.known(r.requestId())));
            case ConsumerCommand.Status s -> answer(s.reply(), () -> state.known(s.requestId()).status(now));
            case ConsumerCommand.Snapshot s -> s.reply().complete(state.snapshot());
            case ConsumerCommand.PeerAnnounced a -> answer(a.reply(), () -> handshake.announced(a.incarnation()));
            case ConsumerCommand.PeerWithdrawn w -> answer(w.reply(), () -> handshake.withdrawn(w.engineId()));
        }
    }

    /**
     * An undecided pull is declined as aborted; a decided one is released. For a pull D's ranks share
     * this is for every rank at once; the aborted one stays known for the ranks yet to ask, as a decline.
     */
    private Void abort(Pull pull) {
        if (pull.state().decided()) {
            state.forget(pull);
        } else {
            decider.decide(pull, DeclineReason.ABORTED);
        }
        return null;
    }

    /** Decode is done with a decided pull's KV; an undecided pull is refused, as only an abort stops it. */
    private Void release(Pull pull) {
        if (!pull.state().decided()) {
            throw new StateConflictException(pull.requestId(), "request " + pull.requestId() + " is still "
                    + pull.state() + "; abort it instead");
        }
        state.forget(pull);
        return null;
    }

    private static <T> void answer(CompletableFuture<T> reply, Supplier<T> work) {
        T value;
        try {
            value = work.get();
        } catch (PdException e) {
            reply.completeExceptionally(e);
            return;
        }
        reply.complete(value);
    }
}
