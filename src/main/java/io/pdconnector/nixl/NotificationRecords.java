package io.pdconnector.nixl;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.function.BiConsumer;

/** Parses the helper's flat drain buffer: {@code u32 agentLen, u32 msgLen, agent, msg} per record. */
final class NotificationRecords {

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED;

    private NotificationRecords() {
    }

    static void forEach(MemorySegment records, int count, BiConsumer<String, byte[]> sink) {
        long at = 0;
        for (int i = 0; i < count; i++) {
            int agentLen = records.get(U32, at);
            int msgLen = records.get(U32, at + 4);
            at += 8;
            String agent = new String(records.asSlice(at, agentLen).toArray(ValueLayout.JAVA_BYTE),
                    StandardCharsets.US_ASCII);
            at += agentLen;
            byte[] msg = records.asSlice(at, msgLen).toArray(ValueLayout.JAVA_BYTE);
            at += msgLen;
            sink.accept(agent, msg);
        }
        if (at != records.byteSize()) {
            throw new IllegalStateException("notification buffer holds " + records.byteSize()
                    + " bytes but its " + count + " records end at " + at);
        }
    }
}
