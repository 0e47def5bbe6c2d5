package io.pdconnector.loop;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Occupancy a step loop publishes at the end of every step, so metrics and status read it from any
 * thread without a round trip through the command queue.
 */
public final class LoopGauges {

    private volatile int blocksInUse;
    private volatile int blocksTotal;
    private volatile int slotsInUse;
    private volatile int slotsTotal;
    private volatile int liveRequests;
    private volatile int queued;
    private volatile int quarantined;
    private final AtomicLong commandsRefused = new AtomicLong();

    public void publish(int blocksInUse, int blocksTotal, int slotsInUse, int slotsTotal, int liveRequests,
            int queued) {
        this.blocksInUse = blocksInUse;
        this.blocksTotal = blocksTotal;
        this.slotsInUse = slotsInUse;
        this.slotsTotal = slotsTotal;
        this.liveRequests = liveRequests;
        this.queued = queued;
    }

    /** D only: blocks of ended pulls a READ may still write, held until it is terminal (L13). */
    public void publishQuarantined(int blocks) {
        this.quarantined = blocks;
    }

    /** A command the loop's full queue refused (503 queue-full); any thread. */
    void countRefused() {
        commandsRefused.incrementAndGet();
    }

    /** Commands refused since start because the loop's queue was full. */
    public long commandsRefused() {
        return commandsRefused.get();
    }

    public int quarantined() {
        return quarantined;
    }

    public int blocksInUse() {
        return blocksInUse;
    }

    public int blocksTotal() {
        return blocksTotal;
    }

    public int slotsInUse() {
        return slotsInUse;
    }

    public int slotsTotal() {
        return slotsTotal;
    }

    /** Leases held (P) or pulls not yet released (D). */
    public int liveRequests() {
        return liveRequests;
    }

    /** Commands waiting in the loop's queue. */
    public int queued() {
        return queued;
    }
}
