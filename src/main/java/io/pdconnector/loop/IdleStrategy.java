package io.pdconnector.loop;

import java.util.concurrent.locks.LockSupport;

/** Spin, then yield, then park with a growing pause: fast when busy, cheap when idle. */
public final class IdleStrategy {

    /** Idle steps that only spin: a command arriving within ~100 polls is picked up without a context switch. */
    private static final int SPINS = 100;
    /** Then idle steps that yield, letting HTTP and NIXL progress threads run before the loop parks. */
    private static final int YIELDS = 100;
    /** The first park, 1 us: about the cost of the park itself, doubled each idle step up to the maximum. */
    private static final long MIN_PARK_NS = 1_000;
    private final long maxParkNanos;
    private int idleSteps;
    private long parkNanos = MIN_PARK_NS;

    public IdleStrategy(long maxParkNanos) {
        this.maxParkNanos = maxParkNanos;
    }

    public void idle(int workCount) {
        if (workCount > 0) {
            idleSteps = 0;
            parkNanos = MIN_PARK_NS;
            return;
        }
        idleSteps++;
        if (idleSteps <= SPINS) {
            Thread.onSpinWait();
        } else if (idleSteps <= SPINS + YIELDS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(parkNanos);
            parkNanos = Math.min(parkNanos * 2, maxParkNanos);
        }
    }
}
