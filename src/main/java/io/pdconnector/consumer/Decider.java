package io.pdconnector.consumer;

import io.pdconnector.config.LoadFailurePolicy;
import java.util.Collection;
import java.util.List;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The one place a pull is decided. A clean pull notifies P, with the lease's nonce, and only here:
 * after its slot check (L6). Anything else counts a lease-check failure when it is one (L7) and
 * applies {@code kv_load_failure_policy}. Either way the pull leaves its phase list, its heartbeats
 * stop, and its callers (every decode rank waiting, when D's ranks share it) get the outcome; a READ
 * it still holds goes to the {@link Quarantine}, with its blocks if that READ is still in flight (L13).
 *
 * <p>It is also the one place a pull is failed by a bug: every phase runs each pull's share of its
 * work through {@link #guard}, so an unexpected exception (or an {@link OutOfMemoryError}) fails the
 * pulls that work was about, through {@link #fail}, and the step goes on with the others.
 */
final class Decider {

    private static final Logger LOG = Logger.getLogger(Decider.class);

    private final ConsumerState state;
    private final NotificationOutbox notices;

    Decider(ConsumerState state, NotificationOutbox notices) {
        this.state = state;
        this.notices = notices;
    }

    /** {@code reason} null: the pull is clean (its slots matched, or verification is off). */
    void decide(Pull pull, DeclineReason reason) {
        state.quarantine.takeOver(pull);
        state.unlist(pull);
        pull.peer().stopHeartbeating(pull);
        boolean recompute = recomputes(pull, reason);
        state.observer.pullDecided(reason, recompute);
        if (reason == null) {
            notices.notifyRead(pull);
            pull.moveTo(PullState.RECEIVED, null);
            state.counters.received.incrementAndGet();
        } else {
            if (reason.leaseCheckFailure()) {
                state.counters.leaseCheckFailures.incrementAndGet();
            }
            if (reason == DeclineReason.ABORTED || reason == DeclineReason.TIMEOUT) {
                notices.notifyGivenUp(pull);
            }
            applyPolicy(pull, reason, recompute);
        }
        if (pull.state() != PullState.DECLINED) {
            pull.exposeKv(state.exposeKv(pull));
        }
        pull.retainUntil(state.clock.millis() + state.config.retention().toMillis());
        pull.answerCallers();
        state.settle(pull);
    }

    /**
     * Runs one share of a phase's work (it returns how much it did). If it throws anything but a
     * transfer or domain error the phase already handles, every pull {@code involved} names (asked only
     * then, so it can release what the work held) fails alone and the step goes on; counts 1.
     */
    int guard(Supplier<? extends Collection<Pull>> involved, IntSupplier work) {
        try {
            return work.getAsInt();
        } catch (RuntimeException | OutOfMemoryError e) {
            List.copyOf(involved.get()).forEach(p -> fail(p, e));
            return 1;
        }
    }

    int guard(Pull pull, IntSupplier work) {
        return guard(() -> List.of(pull), work);
    }

    /**
     * A bug struck while the step handled this pull: a READ it still holds goes to the quarantine
     * (with its blocks if in flight, L13), it leaves its phase list, stops heartbeating and is
     * forgotten, P is not told it was read (its lease expires), and its caller gets an internal error
     * (500) instead of waiting for an answer.
     */
    void fail(Pull pull, Throwable cause) {
        boolean held = state.pulls.get(pull.requestId()) == pull;
        if (!held && pull.reply().isDone()) {
            return;
        }
        LOG.errorf(cause, "pull %s failed in the step of %s; it alone is failed and the loop goes on",
                pull.requestId(), state.config.engineId());
        state.counters.pullsFailed.incrementAndGet();
        state.quarantine.takeOver(pull);
        state.unlist(pull);
        pull.peer().stopHeartbeating(pull);
        if (held) {
            state.forget(pull);
        }
        if (!pull.state().decided()) {
            pull.moveTo(PullState.DECLINED, null);
        }
        pull.failCallers(new IllegalStateException("pull " + pull.requestId() + " failed on the step loop", cause));
    }

    /**
     * Recompute needs local blocks to write into, and an aborted pull's caller wants no KV. A pull
     * whose blocks a READ may still write (quarantined) recomputes into new ones if there are any.
     */
    private boolean recomputes(Pull pull, DeclineReason reason) {
        if (reason == null || state.config.failurePolicy() != LoadFailurePolicy.RECOMPUTE
                || reason == DeclineReason.ABORTED) {
            return false;
        }
        if (pull.localBlocks() == null && pull.blocksQuarantined()) {
            state.giveBlocks(pull);
        }
        return pull.localBlocks() != null;
    }

    /**
     * A declined pull is forgotten at once: its caller has the reason, and nothing is left to release.
     * One D's ranks share frees its blocks at once too, but stays known until every rank has the answer
     * ({@link ConsumerState#settle}), so that a rank asking later gets this decline, not a second pull.
     */
    private void applyPolicy(Pull pull, DeclineReason reason, boolean recompute) {
        if (recompute) {
            state.ranks.forEach(r -> r.recompute(state.reference, pull.localBlocks(), pull.tokens(),
                    state.config.tpSize()));
            pull.moveTo(PullState.RECOMPUTED, reason);
            state.counters.recomputed.incrementAndGet();
            return;
        }
        if (pull.decodeRanks() == null) {
            state.forget(pull);
        } else {
            state.freeBlocks(pull);
        }
        pull.moveTo(PullState.DECLINED, reason);
        state.counters.declined.incrementAndGet();
    }
}
