package io.pdconnector.testing;

import io.pdconnector.config.ConsumerConfig;
import io.pdconnector.consumer.DeclineReason;
import io.pdconnector.consumer.PullOutcome;
import io.pdconnector.consumer.PullState;
import io.pdconnector.producer.Lease;
import io.pdconnector.producer.LeaseState;
import java.util.Arrays;
import java.util.concurrent.CompletionException;

/**
 * The lease model's properties, checked on the Java loops during a {@link TrailReplay}:
 * <ul>
 * <li>received_own_bytes: a RECEIVED pull holds exactly its own prompt's KV, when decided and
 *     again just before its KV is released (so a READ that landed after the decision is seen);</li>
 * <li>read_into_own_dblock: no pull is decided by the slot check while one of its block READs is
 *     still in flight (L9: the READ would land in blocks D may already have given away);</li>
 * <li>notif_own_attempt: a lease is released only by its own pull's notifications, its expiry,
 *     an abort or a restart, never by another attempt's notification;</li>
 * <li>no_spurious_decline: lease_mismatch only for a lease that was lost, transfer_failed only
 *     across a restart, slot_read_failed only after an injected slot READ failure, no_lease only
 *     without lease fields, aborted only for a pull the trail ended early;</li>
 * <li>hb_own_attempt: a heartbeat moves the expiry only of a lease it names with its nonce;</li>
 * <li>lifetime_bounded: no lease is live longer than its maximum lifetime after its export;</li>
 * <li>read_into_own_dblock for a pull that ended early (L13): see {@code TrailReplay#landBlockRead}.</li>
 * <li>the engine path (CFG_GRANT): see {@link ReplayGrantEvents}.</li>
 * </ul>
 * Drained (nothing held once traffic stops) is {@link Cluster#assertNoLeak} at the end.
 */
final class ReplayChecks {

    private final TrailReplay replay;
    int injectedSlotFailures;

    ReplayChecks(TrailReplay replay) {
        this.replay = replay;
    }

    void afterEvent() {
        for (ReplayPull run : replay.pulls) {
            if (run.decided() && !run.checked) {
                run.checked = true;
                run.outcome = run.future.join();
                replay.log.add("  Java: " + run);
                checkDecision(run);
            }
            if (run.checked && run.releaseWhenDecided && !run.released) {
                release(run);
            }
        }
    }

    void atEnd() {
        for (ReplayPull run : replay.pulls) {
            if (run.outcome.state() == PullState.RECEIVED && !run.released) {
                release(run);
            }
        }
    }

    private void checkDecision(ReplayPull run) {
        PullOutcome o = run.outcome;
        ReplayAttempt at = run.attempt;
        if (o.state() == PullState.RECEIVED) {
            replay.require(!run.cancelledReadsWhenDecided, run.pullId + " was RECEIVED while a block READ was still"
                    + " in flight (read_into_own_dblock, L9)");
            requireOwnBytes(run, "when decided");
            return;
        }
        replay.require(o.state() == PullState.DECLINED, run.pullId + " ended " + o.state());
        switch (o.reason()) {
            case LEASE_MISMATCH -> replay.require(at.lost, run.pullId + " was declined lease_mismatch though " + at
                    + "'s lease was never lost (no_spurious_decline)");
            case SLOT_READ_FAILED -> replay.require(injectedSlotFailures > 0, run.pullId + " was declined"
                    + " slot_read_failed without a failed slot READ");
            case NO_LEASE -> replay.require(!at.params.hasLease(), run.pullId + " was declined no_lease with lease"
                    + " fields");
            case TRANSFER_FAILED, PEER_RESTARTED, PEER_GONE -> replay.require(at.lost, run.pullId + " was declined "
                    + o.reason().wire() + " without a restart");
            case ABORTED -> replay.require(at.endedEarly, run.pullId + " was declined aborted, but the trail did"
                    + " not end it");
            case TIMEOUT -> replay.require(false, run.pullId + " was declined timeout, which no trail event causes");
        }
        if (o.reason().leaseCheckFailure() && o.reason() != DeclineReason.NO_LEASE) {
            replay.require(!run.cancelledReadsWhenDecided, run.pullId + " was decided by its slot check while a"
                    + " block READ was still in flight (L9)");
        }
    }

    private void release(ReplayPull run) {
        if (run.outcome.state() == PullState.RECEIVED) {
            requireOwnBytes(run, "before its KV is released");
            replay.awaitD(replay.d.submitRelease(run.pullId));
        }
        run.released = true;
    }

    /** Reads the KV as {@code GET .../kv} does; a RECEIVED pull D no longer holds breaks the property too. */
    private void requireOwnBytes(ReplayPull run, String when) {
        String broken = run.pullId + " is RECEIVED but does not hold " + run.attempt + "'s KV " + when;
        byte[] held;
        try {
            held = replay.awaitD(replay.d.submitReadKv(run.pullId));
        } catch (CompletionException e) {
            replay.require(false, broken + ": " + e.getCause().getMessage() + " (received_own_bytes)");
            return;
        }
        ConsumerConfig config = replay.d.config();
        replay.require(Arrays.equals(held, ReferenceKv.of(config.geometry(), run.attempt.tokens, config.tpSize())),
                broken + " (received_own_bytes)");
    }

    /**
     * hb_own_attempt, after a heartbeat was delivered: a lease whose expiry moved was named, with its
     * nonce, by one of the {@code delivered} entries ({@code <id>[:<nonce>]}).
     */
    void extendedOnlyByOwnHeartbeats(long[] before, java.util.List<String> delivered) {
        long[] after = replay.expiries();
        for (int i = 0; i < before.length; i++) {
            ReplayAttempt at = replay.attempts[i];
            if (before[i] >= 0 && after[i] > before[i]) {
                replay.require(delivered.contains(at.leaseRef()), at + "'s lease was extended by heartbeats "
                        + delivered + " that do not carry its nonce (hb_own_attempt, L12)");
            }
        }
    }

    /** lifetime_bounded: no lease is live longer than {@code max} after its export (L12). */
    void livesNoLongerThan(java.time.Duration max) {
        long now = replay.cluster.clock.millis();
        for (ReplayAttempt at : replay.attempts) {
            Lease lease = at == null ? null : at.lease(replay.p);
            if (lease != null && lease.isLive(now)) {
                replay.require(now - lease.exportedAtMillis() <= max.toMillis(), at + "'s lease is still live "
                        + (now - lease.exportedAtMillis()) + " ms after its export, past its maximum lifetime of "
                        + max + " (lifetime_bounded, L12)");
            }
        }
    }

    /** notif_own_attempt, after every producer step. */
    void afterProducerStep() {
        for (ReplayAttempt at : replay.attempts) {
            if (at == null || at.params == null || !at.params.hasLease() || at.lost || at.viaGrant && !at.committed) {
                continue; // before its commit a granted attempt has no lease on P (its early reads wait on the grant)
            }
            Lease lease = at.lease(replay.p);
            int own = at.deliveredTo.size();
            boolean released = lease == null || lease.state() != LeaseState.EXPORTED;
            replay.require(!released || own > 0 && (lease != null || own == TrailReplay.TP), at + "'s lease was"
                    + " released (" + (lease == null ? "freed" : lease.state()) + ") though it neither expired nor"
                    + " was aborted, and its own pull notified " + own + " rank(s): another attempt's notification"
                    + " released it (notif_own_attempt)");
        }
    }
}
