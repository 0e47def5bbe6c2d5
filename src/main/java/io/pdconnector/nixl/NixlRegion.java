package io.pdconnector.nixl;

import io.pdconnector.transfer.RegisteredRegion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A registration and its memory: the arena bounds Java's access, {@code mappedLength} (whole pages)
 * is what the helper mapped and retires. All of it ends in {@link NixlAgent#deregister}.
 */
record NixlRegion(String label, MemorySegment segment, Arena arena, MemorySegment handle, long mappedLength)
        implements RegisteredRegion {
}
