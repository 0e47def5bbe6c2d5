package io.pdconnector.consumer;

/**
 * Where one of D's tensor-parallel ranks is with a pull its ranks share; {@link DecodeRanks#moveTo}
 * is the only place that changes it.
 */
enum DecodeRankState {
    /** Has neither asked for the pull nor released it. */
    ABSENT,
    /** Asked; waits for the decision. */
    WAITING,
    /** Has the outcome: if the pull was received, it copies its slice of the blocks now. */
    ANSWERED,
    /** Done with the pull (released it, or aborted it undecided): the pull holds nothing for it any more. */
    RELEASED;

    /** A rank may release without asking (its engine gave up on the request), never ask after releasing. */
    boolean canMoveTo(DecodeRankState next) {
        return switch (this) {
            case ABSENT -> next == WAITING || next == ANSWERED || next == RELEASED;
            case WAITING -> next == ANSWERED || next == RELEASED;
            case ANSWERED -> next == RELEASED;
            case RELEASED -> false;
        };
    }
}
