package io.pdconnector.consumer;

import io.pdconnector.transfer.ReadRequest;
import io.pdconnector.transfer.TransferException;
import io.pdconnector.transfer.TransferStatus;
import java.util.ArrayList;
import java.util.List;

/**
 * L5: one slot READ per remote rank per step, shared by every pull on that rank whose block READs
 * have all completed, posted as a separate transfer after them. It is spun on, bounded, in the same
 * step; if still in flight it is polled again in the next, and no new one is posted meanwhile.
 * Every READ is polled until it ends (or times out), whether or not a pull still waits for it.
 * A pull whose slots are all in (or whose slot READ failed) is decided on its verdict (L7).
 */
final class SlotChecker {

    private final ConsumerState state;
    private final Decider decider;

    SlotChecker(ConsumerState state, Decider decider) {
        this.state = state;
        this.decider = decider;
    }

    int check(long now) {
        int n = 0;
        for (RemotePeer peer : state.peers.values()) {
            for (SlotChannel channel : peer.slotChannels()) {
                // a READ whose pulls were decided early (another rank's slot READ failed) is still polled to its end
                if (channel.inFlight() != null || !state.checking.isEmpty()) {
                    n += decider.guard(() -> abandon(channel, peer), () -> step(channel, peer, now));
                }
            }
        }
        return n + decideChecked();
    }

    private int decideChecked() {
        if (state.checking.isEmpty()) {
            return 0;
        }
        int n = 0;
        for (Pull pull : List.copyOf(state.checking)) {
            if (pull.slotsDecidable()) {
                n += decider.guard(pull, () -> {
                    state.checking.remove(pull);
                    decider.decide(pull, pull.slotVerdict());
                    return 1;
                });
            }
        }
        return n;
    }

    private int step(SlotChannel channel, RemotePeer peer, long now) {
        if (channel.inFlight() == null) {
            List<Pull> batch = batch(channel, peer);
            if (batch.isEmpty()) {
                return 0;
            }
            if (!post(channel, batch)) {
                return 1;
            }
        }
        boolean awaited = channel.inFlight().pulls().stream().anyMatch(p -> p.state() == PullState.CHECKING_SLOTS);
        boolean ended = spin(channel, awaited ? state.config.slotReadSpins() : 1, now);
        return awaited || ended ? 1 : 0;
    }

    /**
     * After a bug in this channel's step: its slot READ, if one is in flight, is released, and the
     * pulls it or the next one would have served are returned, to be failed.
     */
    private List<Pull> abandon(SlotChannel channel, RemotePeer peer) {
        SlotRead read = channel.inFlight();
        if (read == null) {
            return batch(channel, peer);
        }
        done(channel, read);
        return read.pulls().stream().filter(p -> !p.state().decided()).toList();
    }

    /** The checking pulls of {@code peer} still missing this rank's slot, as many as one READ lands. */
    private List<Pull> batch(SlotChannel channel, RemotePeer peer) {
        List<Pull> batch = new ArrayList<>();
        for (Pull pull : state.checking) {
            if (pull.peer() == peer && pull.needsSlot(channel.prefillRank()) && batch.size() < channel.capacity()) {
                batch.add(pull);
            }
        }
        return batch;
    }

    private boolean post(SlotChannel channel, List<Pull> batch) {
        int[] local = new int[batch.size()];
        int[] remote = new int[batch.size()];
        for (int i = 0; i < batch.size(); i++) {
            local[i] = i;
            remote[i] = batch.get(i).params().remoteLeaseSlot();
        }
        channel.clearLanding(batch.size());
        try {
            ReadRequest read = channel.reader().agent().postRead(channel.local(), local, channel.remote(), remote, null);
            // timed from when the post returned, not from the step's start: a post that hung must not use up the READ's time
            channel.inFlight(new SlotRead(read, List.copyOf(batch), state.clock.millis()));
            state.counters.slotReads.incrementAndGet();
            return true;
        } catch (TransferException e) {
            batch.forEach(Pull::slotReadFailed);
            return false;
        } finally {
            // what a failed post printed is this agent's too, not a later block READ's
            state.transports.postedSlots(channel.reader().agent());
        }
    }

    /**
     * Polls up to {@code spins} times; true once the READ ended (delivered or failed). A READ no
     * pull waits for any more (its pulls were decided when another rank's slot READ failed) is
     * polled once a step, so it neither spins nor keeps the loop busy, until it ends or times out.
     */
    private boolean spin(SlotChannel channel, int spins, long now) {
        SlotRead read = channel.inFlight();
        for (int i = 0; i < spins; i++) {
            state.counters.slotReadPolls.incrementAndGet();
            try {
                if (channel.reader().agent().status(read.request()) == TransferStatus.DONE) {
                    deliver(channel, read);
                    return true;
                }
            } catch (TransferException e) {
                fail(channel, read);
                return true;
            }
            Thread.onSpinWait();
        }
        if (now - read.postedAtMillis() >= state.config.pullTimeout().toMillis()) {
            fail(channel, read);
            return true;
        }
        return false;
    }

    private static void deliver(SlotChannel channel, SlotRead read) {
        for (int i = 0; i < read.pulls().size(); i++) {
            Pull pull = read.pulls().get(i);
            if (pull.state() == PullState.CHECKING_SLOTS) {
                pull.observeSlot(channel.prefillRank(), channel.landed(i));
            }
        }
        done(channel, read);
    }

    /** L7: a failed slot READ fails the load of every pull it was shared by. */
    private static void fail(SlotChannel channel, SlotRead read) {
        read.pulls().forEach(Pull::slotReadFailed);
        done(channel, read);
    }

    private static void done(SlotChannel channel, SlotRead read) {
        channel.reader().agent().release(read.request());
        channel.inFlight(null);
    }
}
