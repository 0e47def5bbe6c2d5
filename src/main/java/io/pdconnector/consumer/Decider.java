package io.pdconnector.consumer;

import io.pdconnector.config.LoadFailurePolicy;

/**
 * The one place a pull is decided. A clean pull notifies P, with the nonce when verifying, and
 * only here: after its slot check (L6). Anything else counts a lease-check failure when it is one
 * (L7) and applies {@code kv_load_failure_policy}. Either way the pull's READs are released, it
 * leaves its phase list and its heartbeats stop, and its caller gets the outcome.
 */
final class Decider {

    private final ConsumerState state;
    private final NotificationOutbox notices;

    Decider(ConsumerState state, NotificationOutbox notices) {
        this.state = state;
        this.notices = notices;
    }

    /** {@code reason} null: the pull is clean (its slots matched, or verification is off). */
    void decide(Pull pull, DeclineReason reason) {
        pull.releaseReads();
        state.unlist(pull);
        pull.peer().stopHeartbeating(pull);
        state.observer.pullDecided(reason, recomputes(pull, reason));
        if (reason == null) {
            notices.notifyRead(pull);
            pull.moveTo(PullState.RECEIVED, null);
            state.counters.received.incrementAndGet();
        } else {
            if (reason.leaseCheckFailure()) {
                state.counters.leaseCheckFailures.incrementAndGet();
            }
            applyPolicy(pull, reason);
        }
        pull.reply().complete(pull.outcome());
    }

    /**
     * Recompute needs local blocks to write into, and an aborted pull's caller wants no KV. The
     * observer is told the same answer the policy acts on.
     */
    private boolean recomputes(Pull pull, DeclineReason reason) {
        return reason != null && state.config.failurePolicy() == LoadFailurePolicy.RECOMPUTE
                && reason != DeclineReason.ABORTED && pull.localBlocks() != null;
    }

    /** A declined pull is forgotten at once: its caller has the reason, and nothing is left to release. */
    private void applyPolicy(Pull pull, DeclineReason reason) {
        if (recomputes(pull, reason)) {
            state.ranks.forEach(r -> r.recompute(state.reference, pull.localBlocks(), pull.tokens(),
                    state.config.tpSize()));
            pull.moveTo(PullState.RECOMPUTED, reason);
            state.counters.recomputed.incrementAndGet();
            return;
        }
        state.forget(pull);
        pull.moveTo(PullState.DECLINED, reason);
        state.counters.declined.incrementAndGet();
    }
}
