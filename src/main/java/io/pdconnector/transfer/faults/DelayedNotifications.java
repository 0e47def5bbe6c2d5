package io.pdconnector.transfer.faults;

import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * Notifications held back by a {@link NotificationFaultPlan}, each with the time it is due; confined to
 * its agent's loop. Bounded: when full, a strike that would hold one more is not applied (its message goes
 * out as it is), so a flood cannot grow it. A late copy the peer can no longer receive (its agent gone) is
 * dropped, as the network would drop it.
 */
final class DelayedNotifications {

    static final int CAPACITY = 256;

    private record Entry(long dueNanos, String remoteAgent, byte[] message) {
    }

    private final List<Entry> entries = new ArrayList<>();

    boolean hasRoom() {
        return entries.size() < CAPACITY;
    }

    void add(long dueNanos, String remoteAgent, byte[] message) {
        if (!hasRoom()) {
            throw new IllegalStateException("no room for a delayed notification");
        }
        entries.add(new Entry(dueNanos, remoteAgent, message.clone()));
    }

    /** Sends, in the order they were held, every entry due by {@code now}. */
    void sendDue(long now, TransferAgent agent) {
        if (entries.isEmpty()) {
            return;
        }
        for (Iterator<Entry> it = entries.iterator(); it.hasNext();) {
            Entry e = it.next();
            if (now - e.dueNanos() >= 0) {
                it.remove();
                try {
                    agent.sendNotification(e.remoteAgent(), e.message());
                } catch (TransferException lost) {
                    // the peer left or restarted since: a late copy is lost, like one on a cut link
                }
            }
        }
    }

    int size() {
        return entries.size();
    }
}
