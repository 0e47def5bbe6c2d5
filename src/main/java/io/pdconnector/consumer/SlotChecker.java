package io.pdconnector.consumer;

import io.pdconnector.config.ConsumerConfig;
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
 */
final class SlotChecker {

    private SlotChecker() {
    }

    static int step(SlotChannel channel, List<Pull> checking, RemotePeer peer, long now, ConsumerConfig config,
            ConsumerCounters counters) {
        int q = channel.prefillRank();
        if (channel.inFlight() == null) {
            List<Pull> batch = new ArrayList<>();
            for (Pull pull : checking) {
                if (pull.peer() == peer && pull.needsSlot(q) && batch.size() < channel.capacity()) {
                    batch.add(pull);
                }
            }
            if (batch.isEmpty()) {
                return 0;
            }
            if (!post(channel, batch, now, counters)) {
                return 1;
            }
        }
        boolean awaited = channel.inFlight().pulls().stream().anyMatch(p -> p.state() == PullState.CHECKING_SLOTS);
        boolean ended = spin(channel, awaited ? config.slotReadSpins() : 1, now, config, counters);
        return awaited || ended ? 1 : 0;
    }

    private static boolean post(SlotChannel channel, List<Pull> batch, long now, ConsumerCounters counters) {
        int[] local = new int[batch.size()];
        int[] remote = new int[batch.size()];
        for (int i = 0; i < batch.size(); i++) {
            local[i] = i;
            remote[i] = batch.get(i).params().remoteLeaseSlot();
        }
        channel.clearLanding(batch.size());
        try {
            ReadRequest read = channel.reader().agent().postRead(channel.local(), local, channel.remote(), remote, null);
            channel.inFlight(new SlotRead(read, List.copyOf(batch), now));
            counters.slotReads.incrementAndGet();
            return true;
        } catch (TransferException e) {
            batch.forEach(Pull::slotReadFailed);
            return false;
        }
    }

    /**
     * Polls up to {@code spins} times; true once the READ ended (delivered or failed). A READ no
     * pull waits for any more (its pulls were decided when another rank's slot READ failed) is
     * polled once a step, so it neither spins nor keeps the loop busy, until it ends or times out.
     */
    private static boolean spin(SlotChannel channel, int spins, long now, ConsumerConfig config,
            ConsumerCounters counters) {
        SlotRead read = channel.inFlight();
        for (int i = 0; i < spins; i++) {
            counters.slotReadPolls.incrementAndGet();
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
        if (now - read.postedAtMillis() >= config.pullTimeout().toMillis()) {
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

    private static void fail(SlotChannel channel, SlotRead read) {
        read.pulls().forEach(Pull::slotReadFailed);
        done(channel, read);
    }

    private static void done(SlotChannel channel, SlotRead read) {
        channel.reader().agent().release(read.request());
        channel.inFlight(null);
    }
}
