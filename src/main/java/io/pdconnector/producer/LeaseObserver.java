package io.pdconnector.producer;

import io.pdconnector.loop.StepObserver;

/** What P's step loop reports as it happens, for metrics; cheap and non-blocking (loop thread). */
public interface LeaseObserver extends StepObserver {

    LeaseObserver NONE = new LeaseObserver() { };

    /** A lease ended (all readers, expiry or abort) after being held for {@code heldMillis} since export. */
    default void leaseReleased(long heldMillis) {
    }
}
