package io.pdconnector.nixl;

import static io.pdconnector.nixl.NativeChecks.check;
import static io.pdconnector.nixl.NativeChecks.checkName;

import io.pdconnector.transfer.NotificationSink;
import io.pdconnector.transfer.TransferAgent;
import io.pdconnector.transfer.TransferException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** One agent's notifications, sent to peers and drained from NIXL. Called only through {@link NixlAgent}. */
final class NixlNotifications {

    /**
     * Scratch for one notification drain call; a fuller inbox is drained in more calls (DRAIN_MORE).
     * Twice the maximum notification, so a record of any peer name within the maximum fits; the
     * helper skips and counts a record larger than the whole buffer.
     */
    private static final int DRAIN_BUFFER = 2 * TransferAgent.MAX_NOTIFICATION_BYTES;
    /** pdnixl.h's PDX_MORE: the buffer filled up and records remain, so drain again. */
    private static final int DRAIN_MORE = 2;

    private final HelperBindings native_;
    private final MemorySegment agent;
    private final NativeScratch scratch;

    NixlNotifications(HelperBindings bindings, MemorySegment agent, NativeScratch scratch) {
        this.native_ = bindings;
        this.agent = agent;
        this.scratch = scratch;
    }

    void send(String remoteAgent, byte[] message) {
        checkName(remoteAgent);
        if (message == null || message.length == 0) {
            throw new IllegalArgumentException("a notification must not be empty");
        }
        if (message.length > TransferAgent.MAX_NOTIFICATION_BYTES) { // the label only when it is needed
            TransferException.checkNotificationSize("pdx_notif_send(" + remoteAgent + ")", message);
        }
        check("pdx_notif_send", remoteAgent,
                native_.notifSend(agent, scratch.name(remoteAgent), scratch.bytes(message), message.length));
    }

    /**
     * Drains in as many calls as it takes. A notification over the maximum is dropped: by the helper
     * when its record exceeds the whole buffer, here when it fits the buffer but not the maximum; the
     * sum is reported to a {@link NotificationSink} once, even if a call fails (the helper gives up
     * the rest of that batch, so the next drain starts clean).
     */
    int drain(NotificationSink sink) {
        int total = 0;
        int dropped = 0;
        MemorySegment buf = scratch.buffer(DRAIN_BUFFER);
        try {
            while (true) {
                MemorySegment out = scratch.out();
                int rc = native_.notifDrain(agent, buf, DRAIN_BUFFER, out, out.asSlice(8), out.asSlice(12));
                long used = out.get(ValueLayout.JAVA_LONG, 0);
                int count = out.get(ValueLayout.JAVA_INT, 8);
                dropped += out.get(ValueLayout.JAVA_INT, 12);
                int delivered = NotificationRecords.forEach(buf.asSlice(0, used), count,
                        TransferAgent.MAX_NOTIFICATION_BYTES, sink);
                total += delivered;
                dropped += count - delivered;
                if (check("pdx_notif_drain", rc) != DRAIN_MORE) { // after delivering what the failed call copied
                    return total;
                }
            }
        } finally {
            if (dropped > 0) {
                sink.dropped(dropped);
            }
        }
    }
}
