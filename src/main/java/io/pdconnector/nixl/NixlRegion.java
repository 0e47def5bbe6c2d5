package io.pdconnector.nixl;

import io.pdconnector.transfer.RegisteredRegion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A registration and its memory: the arena bounds Java's access, {@code mappedLength} (whole pages)
 * is what the helper mapped and retires, {@code file} (null for anonymous memory) is unlinked first.
 * All of it ends in {@link NixlMemory#deregister}.
 */
record NixlRegion(String label, MemorySegment segment, Arena arena, MemorySegment handle, long mappedLength,
        Path file) implements RegisteredRegion {

    @Override
    public Optional<Path> sharedFile() {
        return Optional.ofNullable(file);
    }
}
