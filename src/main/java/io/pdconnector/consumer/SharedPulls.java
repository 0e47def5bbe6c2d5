package io.pdconnector.consumer;

import io.pdconnector.error.StateConflictException;
import java.util.Arrays;

/**
 * The commands of a pull D's tensor-parallel ranks share, on the loop thread. Each rank's engine
 * worker asks for the pull itself (workers share no HTTP call), yet D reads P once: the first rank's
 * ask starts the pull ({@link Arrival}), and the others join it here and get the same outcome. One
 * pull means one set of block READs and one lease-slot check covering every remote rank, exactly as a
 * router's pull. D's blocks are freed only when every rank has released them, as each rank copies
 * its own slice; a rank that releases an undecided pull aborts it for all, as a tensor-parallel
 * engine cannot decode from part of a pull. A refused command changes nothing.
 */
final class SharedPulls {

    /** A rank asked for, or released, a pull a router started without a decode rank. */
    static final String NOT_RANK_SHARED = "not-rank-shared";
    /** A rank asked for a pull it has already asked for. */
    static final String RANK_ALREADY_ASKED = "rank-already-asked";
    /** A rank asked for, or released, a pull it has already released. */
    static final String RANK_ALREADY_RELEASED = "rank-already-released";
    /** A rank asked for a pull with other kv_transfer_params or token ids than the one its id names. */
    static final String PULL_MISMATCH = "pull-mismatch";

    private final ConsumerState state;
    private final Decider decider;

    SharedPulls(ConsumerState state, Decider decider) {
        this.state = state;
        this.decider = decider;
    }

    /**
     * Rank {@code rank} asks for {@code pull}, which its request id names: it waits for the decision
     * with the others, or, decided, gets it at once (a declined pull the last rank is told of is
     * forgotten then).
     */
    void join(Pull pull, ConsumerCommand.Start s, int rank) {
        String id = pull.requestId();
        DecodeRanks ranks = pull.decodeRanks();
        if (ranks == null) {
            throw new StateConflictException(NOT_RANK_SHARED, id, "request " + id + " is being pulled by a caller"
                    + " without decode_rank; a decode rank cannot join that pull");
        }
        if (!pull.params().equals(s.params()) || !Arrays.equals(pull.tokens(), s.tokens())) {
            throw new StateConflictException(PULL_MISMATCH, id, "decode rank " + rank + " asked for request " + id
                    + " with other kv_transfer_params or token ids than the pull its other ranks share");
        }
        requireNotReleased(ranks, rank, id);
        if (ranks.state(rank) != DecodeRankState.ABSENT) {
            throw new StateConflictException(RANK_ALREADY_ASKED, id, "decode rank " + rank
                    + " has already asked for request " + id + "; each rank asks once");
        }
        state.counters.joins.incrementAndGet();
        if (pull.state().decided()) {
            ranks.moveTo(rank, DecodeRankState.ANSWERED);
            s.reply().complete(pull.outcome().seenFrom(System.nanoTime()));
            state.settle(pull);
        } else {
            ranks.await(rank, System.nanoTime(), s.reply());
        }
    }

    /**
     * Rank {@code rank} is done with {@code pull}: released once every rank is; an undecided pull is
     * aborted for every rank first, and stays known as declined for the ranks yet to ask.
     */
    Void release(Pull pull, int rank) {
        String id = pull.requestId();
        DecodeRanks ranks = pull.decodeRanks();
        if (ranks == null) {
            throw new StateConflictException(NOT_RANK_SHARED, id, "request " + id + " was pulled without"
                    + " decode_rank; release it without decode_rank");
        }
        requireNotReleased(ranks, rank, id);
        ranks.moveTo(rank, DecodeRankState.RELEASED);
        if (pull.state().decided()) {
            state.settle(pull);
        } else {
            decider.decide(pull, DeclineReason.ABORTED);
        }
        return null;
    }

    private static void requireNotReleased(DecodeRanks ranks, int rank, String id) {
        if (ranks.state(rank) == DecodeRankState.RELEASED) {
            throw new StateConflictException(RANK_ALREADY_RELEASED, id, "decode rank " + rank
                    + " has already released request " + id);
        }
    }
}
