package io.pdconnector.controlplane;

import java.util.concurrent.atomic.AtomicLong;

/** What the control plane did, for the metrics: counted here, read by the Prometheus registry. */
public final class RegistryCounters {
    /** Writes of this instance's record to the store. */
    public final AtomicLong writes = new AtomicLong();
    /** Changes the store pushed (puts and deletes), each counted once. */
    public final AtomicLong watchEvents = new AtomicLong();
    /** Times the store reconnected to its backend after losing it. */
    public final AtomicLong reconnects = new AtomicLong();
}
