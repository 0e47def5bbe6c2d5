package io.pdconnector.testing;

import io.pdconnector.producer.Lease;
import io.pdconnector.producer.LeaseState;
import java.util.ArrayList;
import java.util.List;

/**
 * The events of a {@link TrailReplay} that issue #12 added to the model, and the checks that go with
 * them: heartbeats named by their nonce (hb_own_attempt, L12), a forged read notification without a
 * nonce (L11), the clock of {@code CFG_LIFE} (lifetime_bounded, L12), and a pull that ends early while
 * its READs are in flight (read_into_own_dblock, L13).
 */
final class ReplayTrustEvents {

    private final TrailReplay replay;
    private final ReplayChecks checks;

    ReplayTrustEvents(TrailReplay replay, ReplayChecks checks) {
        this.replay = replay;
        this.checks = checks;
    }

    /**
     * D's held heartbeats naming {@code at}'s lease (its id and nonce), or one sent now if D has none in
     * flight. hb_own_attempt: afterwards no lease's expiry moved but one a delivered heartbeat named, and
     * P applied exactly the entries that name a live lease with its nonce (an extension of a lease
     * exported moments ago moves nothing, so the count is what shows one applied to the wrong lease).
     */
    void heartbeat(ReplayAttempt at) {
        String entry = at.leaseRef();
        List<String> delivered = new ArrayList<>();
        int n = replay.cluster.engine.gates.deliver(h -> {
            boolean mine = h.text().startsWith("HB:") && List.of(h.text().substring(3).split(",")).contains(entry);
            if (mine) {
                delivered.addAll(List.of(h.text().substring(3).split(",")));
            }
            return mine;
        });
        if (n == 0) {
            replay.chaos().send(0, "HB:" + entry);
            delivered.add(entry);
        }
        replay.log.add("  heartbeat HB:" + entry + " of a" + at.index + " delivered (" + Math.max(n, 1)
                + " message(s))");
        long[] before = replay.expiries();
        long named = delivered.stream().filter(this::namesALiveLease).count();
        long applied = replay.p.counters().heartbeatsApplied.get();
        replay.stepP();
        checks.extendedOnlyByOwnHeartbeats(before, delivered);
        replay.require(replay.p.counters().heartbeatsApplied.get() - applied == named, "heartbeats " + delivered
                + " name " + named + " live lease(s) with their nonce, but P applied "
                + (replay.p.counters().heartbeatsApplied.get() - applied) + " (hb_own_attempt, L12)");
    }

    /** Whether {@code entry} ({@code <id>[:<nonce>]}) names a live lease with its nonce (none: a slotless one). */
    private boolean namesALiveLease(String entry) {
        String[] parts = entry.split(":");
        Lease l = replay.p.lease(parts[0]);
        long nonce = parts.length > 1 ? Long.parseLong(parts[1]) : 0;
        return l != null && l.isLive(replay.cluster.clock.millis()) && l.nonce() == nonce;
    }

    /** A read notification {@code <id>:1} without a nonce from a peer that knows only the id. */
    void forged(String requestId, int rank) {
        replay.chaos().send(rank, requestId + ":1");
        replay.log.add("  forged " + requestId + ":1 sent to rank " + rank);
        replay.stepP();
        replay.stepP();
    }

    /** The model's clock ticks: time moves on, P's reaper and D's heartbeats run; lifetime_bounded after. */
    void tick() {
        replay.cluster.clock.advance(TrailReplay.TICK);
        for (ReplayAttempt at : replay.attempts) {
            Lease l = at == null ? null : at.lease(replay.p);
            if (l != null && l.state() == LeaseState.EXPORTED
                    && l.expiresAtMillis() <= replay.cluster.clock.millis()) {
                at.lost = true;
                replay.log.add("  a" + at.index + "'s lease is due now: the reaper takes it");
            }
        }
        replay.stepP();
        replay.stepD();
        checks.livesNoLongerThan(TrailReplay.MAX_LIFETIME);
    }

    /** The pull ends before it is decided (the model's timeout, abort or producer gone): aborted here. */
    void endEarly(ReplayAttempt at) {
        at.endedEarly = true;
        if (at.pull == null) {
            replay.log.add("  Java has not started a" + at.index + "'s pull: nothing to abort");
            return;
        }
        replay.awaitD(replay.d.submitAbort(at.pull.pullId));
        replay.log.add("  Java: aborted " + at.pull.pullId + "; D holds " + replay.d.snapshot().quarantinedBlocks()
                + " block(s) in quarantine");
    }

    /**
     * A block READ of {@code at} lands on D rank {@code rank}. read_into_own_dblock for a pull that
     * ended early: D must still hold its blocks (L13), or the READ lands in blocks D may give away.
     */
    void landBlockRead(ReplayAttempt at, int rank) {
        if (at != null && at.endedEarly && at.pull != null && at.pull.decided()) {
            replay.require(replay.d.snapshot().quarantinedBlocks() > 0, at.pull.pullId + " ended with a block READ"
                    + " in flight and that READ lands now, but D no longer holds its blocks (read_into_own_dblock,"
                    + " L13): " + replay.d.snapshot());
        }
        int late = replay.cluster.engine.landCancelledReads();
        if (late > 0) {
            replay.log.add("  " + late + " READ(s) cancelled in flight landed now");
        }
        replay.land(ReadKind.BLOCK, rank);
    }
}
