package io.pdconnector.producer;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * P's hold on one request's blocks for a remote decoder. Owned by the step loop; the slot and
 * blocks it names are released exactly once, when it reaches {@link LeaseState#FREED}.
 */
public final class Lease {

    /** What a read notification did to a rank's count. */
    public enum ReaderOutcome { COUNTED, RANK_COMPLETE, DUPLICATE }

    public static final int NO_SLOT = -1;

    private final ReapSchedule reaping;
    private final String requestId;
    private final int[] blockIds;
    private final int numTokens;
    private final int slot;
    private final long nonce;
    private final RankHold[] ranks;
    private final Set<String>[] readers;
    private LeaseState state = LeaseState.RESERVED;
    private long finishByMillis = Long.MAX_VALUE;
    private long expiresAtMillis = Long.MAX_VALUE;
    private long exportedAtMillis = -1;
    private long maxEndMillis = Long.MAX_VALUE;
    private boolean heldToMaxLifetime;

    /** A lease of no table (tests of one lease): nobody reaps it. */
    Lease(String requestId, int[] blockIds, int numTokens, int slot, long nonce, int rankCount) {
        this(requestId, blockIds, numTokens, slot, nonce, rankCount, new ReapSchedule());
    }

    @SuppressWarnings("unchecked")
    Lease(String requestId, int[] blockIds, int numTokens, int slot, long nonce, int rankCount,
            ReapSchedule reaping) {
        this.reaping = reaping;
        this.requestId = requestId;
        this.blockIds = blockIds.clone();
        this.numTokens = numTokens;
        this.slot = slot;
        this.nonce = nonce;
        this.ranks = new RankHold[rankCount];
        Arrays.fill(ranks, RankHold.HELD);
        this.readers = new Set[rankCount];
        for (int i = 0; i < rankCount; i++) {
            readers[i] = new HashSet<>();
        }
    }

    /** The one place a lease changes state; an illegal transition is a bug and throws. */
    void moveTo(LeaseState next) {
        if (!state.canMoveTo(next, hasSlot())) {
            throw new IllegalStateException("lease " + requestId + " cannot move from " + state + " to " + next
                    + (hasSlot() ? "" : " (it has no slot)"));
        }
        state = next;
    }

    public boolean isLive(long nowMillis) {
        return state == LeaseState.EXPORTED && nowMillis < expiresAtMillis;
    }

    /** Enters WRITING; an engine that has not finished by {@code finishBy} is presumed gone. */
    void startWriting(long finishBy) {
        moveTo(LeaseState.WRITING);
        this.finishByMillis = finishBy;
        reaping.deadlineAt(this, finishBy);
    }

    /** Whether the KV is still being written past its finish deadline: the reaper aborts it. */
    boolean abandoned(long nowMillis) {
        return state == LeaseState.WRITING && nowMillis >= finishByMillis;
    }

    public long finishByMillis() {
        return finishByMillis;
    }

    /** The lease clock starts at export; from then on it lives at most {@code maxLifetimeMillis} (L12). */
    void startClock(long now, long expiresAt, long maxLifetimeMillis) {
        this.exportedAtMillis = now;
        this.maxEndMillis = now + maxLifetimeMillis;
        this.expiresAtMillis = Math.min(expiresAt, maxEndMillis);
        reaping.deadlineAt(this, expiresAtMillis);
    }

    /** When the lease was exported, or -1 if it never was. */
    public long exportedAtMillis() {
        return exportedAtMillis;
    }

    /**
     * Heartbeat (L8): extends a live lease to max(expiry, now + extension); never revives one. L12: never
     * past its maximum lifetime, so a decoder that heartbeats and never reads holds P's blocks only so long.
     */
    boolean extend(long nowMillis, long extensionMillis) {
        if (!isLive(nowMillis)) {
            return false;
        }
        long wanted = nowMillis + extensionMillis;
        if (wanted > maxEndMillis) {
            heldToMaxLifetime = true;
        }
        expiresAtMillis = Math.max(expiresAtMillis, Math.min(wanted, maxEndMillis));
        return true;
    }

    /** Whether a heartbeat asked for more than the maximum lifetime: an expiry then ends it there. */
    boolean heldToMaxLifetime() {
        return heldToMaxLifetime;
    }

    boolean expired(long nowMillis) {
        return state != LeaseState.FREED && nowMillis >= expiresAtMillis;
    }

    /** The first moment {@link #expired} or {@link #abandoned} can hold, as their clocks stand now. */
    long reapableFromMillis() {
        return state == LeaseState.WRITING ? Math.min(expiresAtMillis, finishByMillis) : expiresAtMillis;
    }

    /** Counts a distinct reader of {@code rank}; a sender counted before is a duplicate. */
    ReaderOutcome recordReader(int rank, String sender, int consumers) {
        if (ranks[rank] != RankHold.HELD || !readers[rank].add(sender)) {
            return ReaderOutcome.DUPLICATE;
        }
        return readers[rank].size() >= consumers ? ReaderOutcome.RANK_COMPLETE : ReaderOutcome.COUNTED;
    }

    /** Marks {@code rank} as exiting; false if it already was. */
    boolean beginRankExit(int rank) {
        if (ranks[rank] != RankHold.HELD) {
            return false;
        }
        ranks[rank] = RankHold.CLEARING;
        return true;
    }

    void rankFinishedSending(int rank) {
        if (ranks[rank] != RankHold.CLEARING) {
            throw new IllegalStateException("rank " + rank + " of lease " + requestId
                    + " reported finished-sending without clearing its slot first");
        }
        ranks[rank] = RankHold.FINISHED;
    }

    boolean anyRankHeld() {
        for (RankHold r : ranks) { // the reaper asks this of every lease in every step: no stream
            if (r == RankHold.HELD) {
                return true;
            }
        }
        return false;
    }

    boolean allRanksExiting() {
        return !anyRankHeld();
    }

    boolean allRanksFinished() {
        return Arrays.stream(ranks).allMatch(r -> r == RankHold.FINISHED);
    }

    public RankHold rank(int rank) {
        return ranks[rank];
    }

    public String requestId() {
        return requestId;
    }

    public int[] blockIds() {
        return blockIds.clone();
    }

    public int numTokens() {
        return numTokens;
    }

    /** How many ranks have zeroed their slot and reported finished-sending. */
    public int ranksFinished() {
        return (int) Arrays.stream(ranks).filter(r -> r == RankHold.FINISHED).count();
    }

    public boolean hasSlot() {
        return slot != NO_SLOT;
    }

    public int slot() {
        return slot;
    }

    public long nonce() {
        return nonce;
    }

    public LeaseState state() {
        return state;
    }

    public long expiresAtMillis() {
        return expiresAtMillis;
    }
}
