package io.pdconnector.nixl;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.Map;

/**
 * Reusable native argument buffers of one agent, so that a READ or a notification allocates nothing
 * per call. Owned by the agent's single caller thread; freed with the agent. Buffers only grow, by
 * doubling, so their total stays within twice the largest argument seen. The agent's collaborators
 * share one scratch: {@link #bytes} and {@link #buffer} are the same memory, so a segment is only good
 * until the next request for one, which single-thread confinement makes safe within one call.
 */
final class NativeScratch implements AutoCloseable {

    private final Arena arena = Arena.ofShared();
    private final MemorySegment out = arena.allocate(16, 8);
    private final Map<String, MemorySegment> names = new HashMap<>();
    private MemorySegment localIndices = MemorySegment.NULL;
    private MemorySegment remoteIndices = MemorySegment.NULL;
    private MemorySegment bytes = MemorySegment.NULL;

    /** 16 bytes of out-parameters (two 8-byte ones, or smaller ones packed), zeroed. */
    MemorySegment out() {
        out.fill((byte) 0);
        return out;
    }

    MemorySegment localIndices(int[] values) {
        localIndices = ensure(localIndices, 4L * values.length, 4);
        MemorySegment.copy(values, 0, localIndices, ValueLayout.JAVA_INT, 0, values.length);
        return localIndices;
    }

    MemorySegment remoteIndices(int[] values) {
        remoteIndices = ensure(remoteIndices, 4L * values.length, 4);
        MemorySegment.copy(values, 0, remoteIndices, ValueLayout.JAVA_INT, 0, values.length);
        return remoteIndices;
    }

    MemorySegment bytes(byte[] values) {
        bytes = ensure(bytes, Math.max(1, values.length), 8);
        MemorySegment.copy(values, 0, bytes, ValueLayout.JAVA_BYTE, 0, values.length);
        return bytes;
    }

    /** A buffer of at least {@code size} bytes whose content is the caller's to fill. */
    MemorySegment buffer(long size) {
        bytes = ensure(bytes, size, 8);
        return bytes;
    }

    /** A peer name as a C string, kept for the agent's life (peers are few and long-lived). */
    MemorySegment name(String name) {
        return names.computeIfAbsent(name, arena::allocateFrom);
    }

    private MemorySegment ensure(MemorySegment current, long size, long align) {
        if (current.byteSize() >= size) {
            return current;
        }
        long capacity = Math.max(size, Math.max(64, current.byteSize() * 2));
        return arena.allocate(capacity, align);
    }

    @Override
    public void close() {
        arena.close();
    }
}
