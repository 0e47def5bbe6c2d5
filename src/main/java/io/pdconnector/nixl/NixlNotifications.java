package io.pdconnector.nixl;

import static io.pdconnector.nixl.NativeChecks.check;
import static io.pdconnector.nixl.NativeChecks.checkName;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.BiConsumer;

/** One agent's notifications, sent to peers and drained from NIXL. Called only through {@link NixlAgent}. */
final class NixlNotifications {

    /** Scratch for one notification drain call; a fuller inbox is drained in more calls (DRAIN_MORE). */
    private static final int DRAIN_BUFFER = 64 * 1024;
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
        check("pdx_notif_send(" + remoteAgent + ")",
                native_.notifSend(agent, scratch.name(remoteAgent), scratch.bytes(message), message.length));
    }

    int drain(BiConsumer<String, byte[]> sink) {
        int total = 0;
        MemorySegment buf = scratch.buffer(DRAIN_BUFFER);
        while (true) {
            MemorySegment out = scratch.out();
            int rc = check("pdx_notif_drain", native_.notifDrain(agent, buf, DRAIN_BUFFER, out, out.asSlice(8)));
            long used = out.get(ValueLayout.JAVA_LONG, 0);
            int count = out.get(ValueLayout.JAVA_INT, 8);
            NotificationRecords.forEach(buf.asSlice(0, used), count, sink);
            total += count;
            if (rc != DRAIN_MORE) {
                return total;
            }
        }
    }
}
