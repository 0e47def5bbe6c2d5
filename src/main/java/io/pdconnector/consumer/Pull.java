package io.pdconnector.consumer;

import io.pdconnector.protocol.KvTransferParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One pull on D, owned by the consumer step loop: its local blocks, its READs, its slot observations,
 * and, when D's ranks share it, where each rank is with it ({@link DecodeRanks}).
 */
final class Pull {

    private static final long UNSEEN = -1;

    private final String requestId;
    private final int[] tokens;
    private final KvTransferParams params;
    private final RemotePeer peer;
    private final long deadlineMillis;
    private final CompletableFuture<PullOutcome> reply;
    /** Null for a router's pull: one caller, answered through {@link #reply}. */
    private final DecodeRanks decodeRanks;
    private final List<BlockRead> reads = new ArrayList<>();
    private final long[] observedSlots;
    /** {@code params.blockIds()}, once: every step a queued pull waits reads it. */
    private final int[] remoteBlocks;
    private final long arrivedNanos = System.nanoTime();
    private PullState state = PullState.QUEUED;
    private DeclineReason reason;
    private int[] localBlocks;
    /** The epoch its local blocks were stamped with ({@link ConsumerRank#stampEpochs}); 0 before it has any. */
    private long blocksEpoch;
    private PulledKv kv;
    private boolean blocksQuarantined;
    private boolean slotReadFailed;
    private long retainedUntilMillis = Long.MAX_VALUE;
    private long postStartedNanos;
    private long readsPostedNanos;
    private long readsDoneNanos;
    private long decidedNanos;

    Pull(String requestId, int[] tokens, KvTransferParams params, RemotePeer peer, long deadlineMillis,
            CompletableFuture<PullOutcome> reply, DecodeRanks decodeRanks) {
        this.requestId = requestId;
        this.tokens = tokens;
        this.params = params;
        this.peer = peer;
        this.deadlineMillis = deadlineMillis;
        this.reply = reply;
        this.decodeRanks = decodeRanks;
        this.observedSlots = new long[peer.ranks().size()];
        this.remoteBlocks = params.blockIds();
        Arrays.fill(observedSlots, UNSEEN);
    }

    /** The one place a pull changes state; an illegal transition is a bug and throws. */
    void moveTo(PullState next, DeclineReason why) {
        if (!state.canMoveTo(next)) {
            throw new IllegalStateException("pull " + requestId + " cannot move from " + state + " to " + next);
        }
        state = next;
        stamp(next);
        if (why != null) {
            reason = why;
        }
    }

    /** Measurement only: when the pull entered {@code next}, for its reply's timings. */
    private void stamp(PullState next) {
        long now = System.nanoTime();
        switch (next) {
            case READING -> readsPostedNanos = now;
            case CHECKING_SLOTS -> readsDoneNanos = now;
            case RECEIVED, DECLINED, RECOMPUTED -> decidedNanos = now;
            case QUEUED -> { }
        }
    }

    /** A decided pull's KV is kept for decode until then ({@code pd.consumer.retention}). */
    void retainUntil(long millis) {
        retainedUntilMillis = millis;
    }

    long retainedUntilMillis() {
        return retainedUntilMillis;
    }

    /** Its block READs are posted next: the {@code post} phase of its timeline starts here. */
    void assignBlocks(int[] blocks, long epoch) {
        this.localBlocks = blocks;
        this.blocksEpoch = epoch;
        postStartedNanos = System.nanoTime();
    }

    long blocksEpoch() {
        return blocksEpoch;
    }

    void addRead(BlockRead read) {
        reads.add(read);
    }

    /** Polls every unfinished READ; true once every READ is terminal (L9). */
    boolean pollReads() {
        boolean all = true;
        for (BlockRead r : reads) {
            all &= r.terminal() || r.poll();
        }
        return all;
    }

    boolean anyReadFailed() {
        return reads.stream().anyMatch(BlockRead::failed);
    }

    /** The READs whose handles are still held, which leave this pull ({@link Quarantine#takeOver}). */
    List<BlockRead> takeHeldReads() {
        List<BlockRead> held = reads.stream().filter(BlockRead::held).toList();
        reads.removeAll(held);
        return held;
    }

    /** The local blocks leave this pull: a READ may still land in them ({@link Quarantine}). */
    int[] surrenderBlocks() {
        int[] blocks = localBlocks;
        localBlocks = null;
        blocksQuarantined = blocks != null;
        return blocks;
    }

    /** Whether its blocks went to the quarantine, so it would need new ones to recompute into. */
    boolean blocksQuarantined() {
        return blocksQuarantined;
    }

    /** Shutdown only: every READ still held is cancelled; false if the engine refused one. */
    boolean cancelReads() {
        boolean all = true;
        for (BlockRead r : reads) {
            all &= r.cancel();
        }
        return all;
    }

    int readsInFlight() {
        return (int) reads.stream().filter(BlockRead::held).count();
    }

    void observeSlot(int prefillRank, long value) {
        observedSlots[prefillRank] = value;
    }

    void slotReadFailed() {
        slotReadFailed = true;
    }

    boolean needsSlot(int prefillRank) {
        return !slotReadFailed && observedSlots[prefillRank] == UNSEEN;
    }

    /** Whether every slot READ is in (or one failed), so the check can be decided. */
    boolean slotsDecidable() {
        return slotReadFailed || Arrays.stream(observedSlots).noneMatch(v -> v == UNSEEN);
    }

    /** L7: every source rank's slot must still hold this lease's nonce. */
    DeclineReason slotVerdict() {
        if (slotReadFailed) {
            return DeclineReason.SLOT_READ_FAILED;
        }
        long nonce = params.remoteLeaseNonce();
        return Arrays.stream(observedSlots).allMatch(v -> v == nonce) ? null : DeclineReason.LEASE_MISMATCH;
    }

    PullStatus status(long now) {
        return new PullStatus(requestId, state, reason, state.decided() ? null : deadlineMillis - now, localBlocks);
    }

    PullOutcome outcome() {
        return new PullOutcome(requestId, state, reason, localBlocks == null ? new int[0] : localBlocks, kv,
                new PullTimeline(arrivedNanos, postStartedNanos, readsPostedNanos, readsDoneNanos, decidedNanos));
    }

    /** The decision reaches every caller waiting for it: the one that started the pull, and joined ranks. */
    void answerCallers() {
        PullOutcome outcome = outcome();
        reply.complete(outcome);
        if (decodeRanks != null) {
            decodeRanks.answer(outcome);
        }
    }

    /** The pull failed (a bug, or shutdown): every caller waiting for it gets {@code cause}. */
    void failCallers(Throwable cause) {
        reply.completeExceptionally(cause);
        if (decodeRanks != null) {
            decodeRanks.fail(cause);
        }
    }

    /** The local blocks leave this pull, to be freed ({@link ConsumerState#freeBlocks}). */
    int[] dropBlocks() {
        int[] blocks = localBlocks;
        localBlocks = null;
        return blocks;
    }

    /** Decided with KV: callers may read it off the loop until the pull is released. */
    void exposeKv(PulledKv view) {
        this.kv = view;
    }

    /** The KV callers may read, or null (undecided, declined). */
    PulledKv kv() {
        return kv;
    }

    String requestId() {
        return requestId;
    }

    String remoteRequestId() {
        return params.remoteRequestId();
    }

    int[] tokens() {
        return tokens;
    }

    /** P's block ids this pull reads; not to be changed. */
    int[] remoteBlocks() {
        return remoteBlocks;
    }

    KvTransferParams params() {
        return params;
    }

    RemotePeer peer() {
        return peer;
    }

    long deadlineMillis() {
        return deadlineMillis;
    }

    /** The reply of the caller that started the pull; cancelled, it aborts the pull while undecided. */
    CompletableFuture<PullOutcome> reply() {
        return reply;
    }

    /** Null unless D's ranks share this pull (it was asked for with a decode rank). */
    DecodeRanks decodeRanks() {
        return decodeRanks;
    }

    PullState state() {
        return state;
    }

    int[] localBlocks() {
        return localBlocks;
    }
}
