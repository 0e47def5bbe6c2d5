package io.pdconnector.producer;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The producer's live leases by request id; a request id can be reused once its lease is freed. */
public final class LeaseTable {

    private final Map<String, Lease> byRequest = new LinkedHashMap<>();
    private final int rankCount;
    private final ReapSchedule reaping = new ReapSchedule();

    public LeaseTable(int rankCount) {
        this.rankCount = rankCount;
    }

    /** Which of the table's leases the reaper walks, and when; each lease reports its deadlines to it. */
    ReapSchedule reaping() {
        return reaping;
    }

    /** The caller ({@link Admission}) has refused an id that still holds a lease. */
    Lease reserve(String requestId, int[] blockIds, int numTokens, int slot, long nonce) {
        Lease lease = new Lease(requestId, blockIds, numTokens, slot, nonce, rankCount, reaping);
        byRequest.put(requestId, lease);
        return lease;
    }

    public Lease find(String requestId) {
        return byRequest.get(requestId);
    }

    boolean contains(String requestId) {
        return byRequest.containsKey(requestId);
    }

    /** A snapshot, so the caller may free leases while walking it. */
    List<Lease> all() {
        return new ArrayList<>(byRequest.values());
    }

    void remove(Lease lease) {
        boolean done = lease.state() == LeaseState.FREED || lease.state() == LeaseState.BOUND;
        if (!done || byRequest.get(lease.requestId()) != lease) {
            throw new IllegalStateException("only a freed or bound lease leaves the table: " + lease.requestId()
                    + " is " + lease.state());
        }
        byRequest.remove(lease.requestId());
        reaping.forget(lease);
    }

    public int size() {
        return byRequest.size();
    }
}
