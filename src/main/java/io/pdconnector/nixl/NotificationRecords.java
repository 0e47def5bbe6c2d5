package io.pdconnector.nixl;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.function.BiConsumer;

/**
 * Parses the helper's flat drain buffer: {@code u32 agentLen, u32 msgLen, agent, msg} per record. A
 * record whose message is over the maximum is skipped, not delivered.
 */
final class NotificationRecords {

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED;

    private NotificationRecords() {
    }

    /** Hands {@code sink} each of the {@code count} records with at most {@code maxMessage} bytes; returns how many. */
    static int forEach(MemorySegment records, int count, int maxMessage, BiConsumer<String, byte[]> sink) {
        long at = 0;
        int delivered = 0;
        for (int i = 0; i < count; i++) {
            int agentLen = records.get(U32, at);
            int msgLen = records.get(U32, at + 4);
            at += 8;
            if (msgLen < 0 || msgLen > maxMessage) {
                at += agentLen + Integer.toUnsignedLong(msgLen);
                continue;
            }
            String agent = new String(records.asSlice(at, agentLen).toArray(ValueLayout.JAVA_BYTE),
                    StandardCharsets.US_ASCII);
            at += agentLen;
            byte[] msg = records.asSlice(at, msgLen).toArray(ValueLayout.JAVA_BYTE);
            at += msgLen;
            sink.accept(agent, msg);
            delivered++;
        }
        if (at != records.byteSize()) {
            throw new IllegalStateException("notification buffer holds " + records.byteSize()
                    + " bytes but its " + count + " records end at " + at);
        }
        return delivered;
    }
}
