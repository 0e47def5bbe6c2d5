package io.pdconnector.nixl;

import io.pdconnector.transfer.RegisteredRegion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A registration and the arena of its memory: both end in {@link NixlAgent#deregister}. */
record NixlRegion(String label, MemorySegment segment, Arena arena, MemorySegment handle)
        implements RegisteredRegion {
}
