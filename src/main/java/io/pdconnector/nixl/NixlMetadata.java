package io.pdconnector.nixl;

import static io.pdconnector.nixl.NativeChecks.NAME_CAPACITY;
import static io.pdconnector.nixl.NativeChecks.check;
import static io.pdconnector.nixl.NativeChecks.checkName;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * One agent's metadata exchange: its own blob out, peers' blobs in, peers forgotten. Called only
 * through {@link NixlAgent}.
 */
final class NixlMetadata {

    /** Bound on an agent metadata blob, ours or a peer's: caps what a peer's handshake can make us allocate. */
    private static final int MAX_METADATA = 1 << 20;

    private final HelperBindings native_;
    private final MemorySegment agent;
    private final NativeScratch scratch;

    NixlMetadata(HelperBindings bindings, MemorySegment agent, NativeScratch scratch) {
        this.native_ = bindings;
        this.agent = agent;
        this.scratch = scratch;
    }

    byte[] local() {
        MemorySegment out = scratch.out();
        MemorySegment buf = scratch.buffer(MAX_METADATA);
        check("pdx_local_metadata", native_.localMetadata(agent, buf, MAX_METADATA, out));
        long len = out.get(ValueLayout.JAVA_LONG, 0);
        return buf.asSlice(0, len).toArray(ValueLayout.JAVA_BYTE);
    }

    String loadRemote(byte[] metadata) {
        Objects.requireNonNull(metadata, "metadata");
        if (metadata.length == 0 || metadata.length > MAX_METADATA) {
            throw new IllegalArgumentException("metadata blob of " + metadata.length + " bytes is not plausible");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment md = arena.allocateFrom(ValueLayout.JAVA_BYTE, metadata);
            MemorySegment nameOut = arena.allocate(NAME_CAPACITY);
            check("pdx_remote_load", native_.remoteLoad(agent, md, metadata.length, nameOut, NAME_CAPACITY));
            return nameOut.getString(0);
        }
    }

    void invalidateRemote(String remoteAgent) {
        checkName(remoteAgent);
        check("pdx_remote_invalidate(" + remoteAgent + ")",
                native_.remoteInvalidate(agent, scratch.name(remoteAgent)));
    }
}
