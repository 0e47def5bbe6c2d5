package io.pdconnector.loop;

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

    public void publish(int blocksInUse, int blocksTotal, int slotsInUse, int slotsTotal, int liveRequests,
            int queued) {
        this.blocksInUse = blocksInUse;
        this.blocksTotal = blocksTotal;
        this.slotsInUse = slotsInUse;
        this.slotsTotal = slotsTotal;
        this.liveRequests = liveRequests;
        this.queued = queued;
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
