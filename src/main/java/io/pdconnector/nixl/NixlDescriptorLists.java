package io.pdconnector.nixl;

import static io.pdconnector.nixl.NativeChecks.check;

import io.pdconnector.transfer.DescriptorList;
import io.pdconnector.transfer.MemoryType;
import io.pdconnector.transfer.PreparedDescriptors;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Prepared descriptor lists of one agent, its own memory's or a peer's. Each keeps its lengths in
 * Java so a READ's pairs are checked before the downcall. Called only through {@link NixlAgent}.
 */
final class NixlDescriptorLists {

    private final HelperBindings native_;
    private final MemorySegment agent;
    private final String name;
    private final NativeScratch scratch;
    private final NixlHandles handles;

    NixlDescriptorLists(HelperBindings bindings, MemorySegment agent, String name, NativeScratch scratch,
            NixlHandles handles) {
        this.native_ = bindings;
        this.agent = agent;
        this.name = name;
        this.scratch = scratch;
        this.handles = handles;
    }

    /** {@code remoteAgent} null prepares this agent's own memory; a peer's name must have been checked. */
    PreparedDescriptors prepare(String remoteAgent, DescriptorList descriptors) {
        if (descriptors.count() == 0) {
            throw new IllegalArgumentException("an empty descriptor list cannot be prepared");
        }
        long[] lengths = new long[descriptors.count()];
        for (int i = 0; i < lengths.length; i++) {
            lengths[i] = descriptors.length(i);
        }
        String owner = remoteAgent == null ? name : remoteAgent;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pairs = arena.allocateFrom(ValueLayout.JAVA_LONG, descriptors.flatPairs());
            MemorySegment remote = remoteAgent == null ? MemorySegment.NULL : scratch.name(remoteAgent);
            MemorySegment out = scratch.out();
            check("pdx_dlist_prepare(" + owner + ")", native_.dlistPrepare(agent, remote,
                    memType(descriptors.memoryType()), descriptors.deviceId(), pairs, descriptors.count(), out));
            NixlDescriptors d = new NixlDescriptors(owner, descriptors.count(), lengths,
                    out.get(ValueLayout.ADDRESS, 0));
            handles.add(d);
            return d;
        }
    }

    /** The helper's PDX_MEM_* code (pdnixl.h); the list itself has checked its device id against the type. */
    static int memType(MemoryType type) {
        return switch (type) {
            case DRAM -> 0;
            case VRAM -> 1;
        };
    }

    void release(PreparedDescriptors descriptors) {
        NixlDescriptors d = handles.takeDescriptors(descriptors);
        check("pdx_dlist_release(" + d.owner() + ")", native_.dlistRelease(agent, d.handle()));
    }
}
