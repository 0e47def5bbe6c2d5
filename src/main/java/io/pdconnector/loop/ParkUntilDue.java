package io.pdconnector.loop;

import java.util.concurrent.locks.LockSupport;
import org.agrona.concurrent.IdleStrategy;

/**
 * The idle strategy of a worker that does not spin (P): after a step that did nothing, park the whole
 * pause at once, but not past the worker's next deadline ({@link StepWorker#nanosUntilDue}). Its commands
 * unpark it; its deadlines have no one to wake it, and with a fixed park an expired lease's slot outlived
 * the lease by up to the park (10 ms by default): a reader's slot READ in that window still found the
 * nonce. A deadline already due costs no park, so the step that acts on it comes at once; the worker's
 * step moves its deadline on, so this does not spin. Loop thread only.
 */
final class ParkUntilDue implements IdleStrategy {

    private final StepWorker worker;
    private final long parkNanos;

    ParkUntilDue(StepWorker worker, long parkNanos) {
        this.worker = worker;
        this.parkNanos = parkNanos;
    }

    @Override
    public void idle(int workCount) {
        if (workCount > 0) {
            return;
        }
        idle();
    }

    @Override
    public void idle() {
        long park = Math.min(parkNanos, worker.nanosUntilDue());
        if (park > 0) {
            LockSupport.parkNanos(park);
        }
    }

    @Override
    public void reset() {
    }

    @Override
    public String alias() {
        return "park-until-due";
    }
}
