package io.pdconnector.transfer.loopback;

import io.pdconnector.transfer.RegisteredRegion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.Optional;

/** Loopback memory: an arena's, or a shared file's whose {@code channel} holds the file's lock. */
record LoopbackRegion(String label, MemorySegment segment, Arena arena, Path file, FileChannel channel)
        implements RegisteredRegion {

    boolean contains(long address, long length) {
        return arena.scope().isAlive() && address >= segment.address()
                && address + length <= segment.address() + segment.byteSize();
    }

    @Override
    public Optional<Path> sharedFile() {
        return Optional.ofNullable(file);
    }
}
