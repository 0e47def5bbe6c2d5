package io.pdconnector.testing;

import io.pdconnector.consumer.PullOutcome;
import java.util.concurrent.CompletableFuture;

/** One pull D was asked for during a replay (a retry after a restart is another one). */
final class ReplayPull {

    final ReplayAttempt attempt;
    final String pullId;
    final CompletableFuture<PullOutcome> future;
    PullOutcome outcome;
    int decidedAtStep = -1;
    /** A block READ was released before it was terminal in the step this pull was decided (L9). */
    boolean cancelledReadsWhenDecided;
    boolean checked;
    boolean releaseWhenDecided;
    boolean released;

    ReplayPull(ReplayAttempt attempt, String pullId, CompletableFuture<PullOutcome> future) {
        this.attempt = attempt;
        this.pullId = pullId;
        this.future = future;
    }

    boolean decided() {
        return future.isDone();
    }

    @Override
    public String toString() {
        return pullId + (outcome == null ? (decided() ? " decided" : " undecided") : " " + outcome.state()
                + (outcome.reason() == null ? "" : " " + outcome.reason().wire()));
    }
}
