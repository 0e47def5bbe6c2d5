package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.RegisteredRegion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

record LoopbackRegion(String label, MemorySegment segment, Arena arena) implements RegisteredRegion {

    boolean contains(long address, long length) {
        return arena.scope().isAlive() && address >= segment.address()
                && address + length <= segment.address() + segment.byteSize();
    }
}
