package io.pdconnector.consumer;

import java.util.ArrayList;
import java.util.List;

/**
 * Polls the block READs of every READING pull. A pull moves on only once all its READs are
 * terminal (L9, {@link Pull#pollReads}), so no READ can still land in blocks D has given away:
 * one failed READ, or a peer refused for the path its READs took ({@link ReadTransports}), declines it as
 * transfer_failed; otherwise it waits for the slot check, or is
 * received at once without verification (L10).
 */
final class ReadPoller {

    private final ConsumerState state;
    private final Decider decider;
    /** The READING pulls at the start of a poll (polling moves them on); reused, so a step allocates nothing. */
    private final List<Pull> polled = new ArrayList<>();

    ReadPoller(ConsumerState state, Decider decider) {
        this.state = state;
        this.decider = decider;
    }

    int poll() {
        if (state.reading.isEmpty()) {
            return 0;
        }
        for (int i = 0; i < state.reading.size(); i++) {
            polled.add(state.reading.get(i));
        }
        try {
            int n = 0;
            for (int i = 0; i < polled.size(); i++) {
                Pull pull = polled.get(i);
                n += decider.guard(pull, () -> poll(pull));
            }
            return n;
        } finally {
            polled.clear();
        }
    }

    private int poll(Pull pull) {
        if (!pull.pollReads()) {
            return 0;
        }
        state.reading.remove(pull);
        readsEnded(pull);
        return 1;
    }

    private void readsEnded(Pull pull) {
        if (pull.anyReadFailed() || pull.peer().refusal() != null) {
            decider.decide(pull, DeclineReason.TRANSFER_FAILED);
        } else if (!state.verification.checksSlots()) {
            decider.decide(pull, null);
        } else {
            pull.moveTo(PullState.CHECKING_SLOTS, null);
            state.checking.add(pull);
        }
    }
}
