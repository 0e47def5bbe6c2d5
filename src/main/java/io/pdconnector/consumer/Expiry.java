package io.pdconnector.consumer;

import java.util.List;

/** Declines, as timeout, every undecided pull past its deadline, whatever phase it waits in. */
final class Expiry {

    private final ConsumerState state;
    private final Decider decider;

    Expiry(ConsumerState state, Decider decider) {
        this.state = state;
        this.decider = decider;
    }

    int expire(long now) {
        int n = 0;
        for (Pull pull : List.copyOf(state.pulls.values())) {
            if (!pull.state().decided() && now >= pull.deadlineMillis()) {
                n += decider.guard(pull, () -> {
                    decider.decide(pull, DeclineReason.TIMEOUT);
                    return 1;
                });
            }
        }
        return n;
    }
}
