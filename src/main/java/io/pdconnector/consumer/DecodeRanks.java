package io.pdconnector.consumer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The decode ranks sharing one pull, owned by the consumer step loop: where each rank is with it
 * ({@link DecodeRankState}) and the replies of the ranks that joined it while it was undecided. The
 * rank that started the pull is answered through the pull's own reply; the others through theirs,
 * here. A joiner whose caller went away is not noticed: it stops waiting, and its rank still counts
 * as asked (it is not released), so the other ranks are not affected.
 */
final class DecodeRanks {

    private record Joiner(long joinedNanos, CompletableFuture<PullOutcome> reply) {
    }

    private final DecodeRankState[] states;
    private final List<Joiner> joiners = new ArrayList<>();

    DecodeRanks(int tpSize, int first) {
        states = new DecodeRankState[tpSize];
        Arrays.fill(states, DecodeRankState.ABSENT);
        moveTo(first, DecodeRankState.WAITING);
    }

    DecodeRankState state(int rank) {
        return states[rank];
    }

    /** The one place a rank's state changes; an illegal transition is a bug and throws. */
    void moveTo(int rank, DecodeRankState next) {
        if (!states[rank].canMoveTo(next)) {
            throw new IllegalStateException("decode rank " + rank + " cannot move from " + states[rank] + " to "
                    + next);
        }
        states[rank] = next;
    }

    /** Rank {@code rank} joins the undecided pull; it is answered with the others at the decision. */
    void await(int rank, long joinedNanos, CompletableFuture<PullOutcome> reply) {
        moveTo(rank, DecodeRankState.WAITING);
        joiners.add(new Joiner(joinedNanos, reply));
    }

    /** The decision: every waiting rank has it now, each joiner's timings counted from its own arrival. */
    void answer(PullOutcome outcome) {
        for (int r = 0; r < states.length; r++) {
            if (states[r] == DecodeRankState.WAITING) {
                moveTo(r, DecodeRankState.ANSWERED);
            }
        }
        for (Joiner j : joiners) {
            j.reply().complete(outcome.seenFrom(j.joinedNanos()));
        }
        joiners.clear();
    }

    /** The pull failed (a bug, or shutdown): every joiner still waiting gets the error. */
    void fail(Throwable cause) {
        joiners.forEach(j -> j.reply().completeExceptionally(cause));
        joiners.clear();
    }

    /**
     * Whether a decided pull may be forgotten: every rank released it when it holds KV; when it holds
     * none (declined), once every rank has its answer too, so that no rank asking later would start a
     * second pull of the same prompt.
     */
    boolean done(boolean holdsKv) {
        for (DecodeRankState s : states) {
            boolean finished = holdsKv ? s == DecodeRankState.RELEASED
                    : s == DecodeRankState.ANSWERED || s == DecodeRankState.RELEASED;
            if (!finished) {
                return false;
            }
        }
        return true;
    }
}
