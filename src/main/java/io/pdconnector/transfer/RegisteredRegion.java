package io.pdconnector.transfer;

import java.lang.foreign.MemorySegment;

/**
 * Memory registered with one agent. The segment's arena is closed by {@link TransferAgent#deregister},
 * so any later access fails instead of touching freed memory.
 */
public interface RegisteredRegion {

    String label();

    MemorySegment segment();

    default long address() {
        return segment().address();
    }

    default long length() {
        return segment().byteSize();
    }
}
