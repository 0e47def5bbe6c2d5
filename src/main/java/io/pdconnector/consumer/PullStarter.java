package io.pdconnector.consumer;

import java.util.List;

/**
 * Gives queued pulls local blocks, in arrival order, and posts their block READs on every source
 * rank without a notification (L6: P hears from D only after the slot check), each block without the layers of
 * the window groups that have left it ({@link io.pdconnector.kv.KvGroups}). The oldest pull waits
 * for enough free blocks; later ones do not overtake it.
 */
final class PullStarter {

    private final ConsumerState state;
    private final Decider decider;

    PullStarter(ConsumerState state, Decider decider) {
        this.state = state;
        this.decider = decider;
    }

    int startQueued() {
        int n = 0;
        while (!state.queued.isEmpty()) {
            Pull pull = state.queued.peek();
            if (!state.giveBlocks(pull)) {
                break;
            }
            state.queued.poll();
            int[] local = pull.localBlocks();
            n += decider.guard(pull, () -> start(pull, local));
        }
        return n;
    }

    /** A pull without lease fields is declined only now, so the recompute policy has blocks to write. */
    private int start(Pull pull, int[] local) {
        if (state.verification.missingLease(pull.params())) {
            decider.decide(pull, DeclineReason.NO_LEASE);
            return 1;
        }
        int[] segments = state.groups.segmentsNeeded(local.length, state.config.geometry().blockTokens());
        for (SliceChannel channel : local.length == 0 ? List.<SliceChannel>of() : pull.peer().slices()) {
            pull.addRead(BlockRead.post(channel, local, pull.remoteBlocks(), segments, state.observer));
            state.transports.posted(pull.peer(), channel);
        }
        pull.moveTo(PullState.READING, null);
        state.reading.add(pull);
        return 1;
    }
}
