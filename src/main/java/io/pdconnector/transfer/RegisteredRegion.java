package io.pdconnector.transfer;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Memory registered with one agent. The segment's arena is closed by {@link TransferAgent#deregister},
 * so any later access fails instead of touching freed memory.
 */
public interface RegisteredRegion {

    String label();

    MemorySegment segment();

    /** The file a local process can map to reach this memory, for a region from {@code allocateShared}. */
    Optional<Path> sharedFile();

    default long address() {
        return segment().address();
    }

    default long length() {
        return segment().byteSize();
    }
}
