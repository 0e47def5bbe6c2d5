package io.pdconnector.nixl;

import static io.pdconnector.nixl.NativeChecks.check;

import io.pdconnector.transfer.RegisteredRegion;
import io.pdconnector.transfer.SharedFile;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One agent's registered memory: the helper maps it (anonymous or a shared file), NIXL registers it,
 * and on the way out it is deregistered and retired. Called only through {@link NixlAgent}, which
 * has already checked the calling thread.
 */
final class NixlMemory {

    /** Regions are allocated and mapped in whole pages (mmap's unit). */
    private static final long PAGE = 4096;

    private final HelperBindings native_;
    private final MemorySegment agent;
    private final NativeScratch scratch;
    private final NixlHandles handles;

    NixlMemory(HelperBindings bindings, MemorySegment agent, NativeScratch scratch, NixlHandles handles) {
        this.native_ = bindings;
        this.agent = agent;
        this.scratch = scratch;
        this.handles = handles;
    }

    RegisteredRegion allocate(String label, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("region " + label + " needs a positive size, got " + bytes);
        }
        long length = pages(bytes);
        MemorySegment out = scratch.out();
        check("pdx_mem_alloc(" + label + ")", native_.memAlloc(length, out));
        return register(label, out.get(ValueLayout.JAVA_LONG, 0), bytes, length, null);
    }

    RegisteredRegion allocateShared(String label, Path file, long bytes) {
        SharedFile.require(file, bytes);
        long length = pages(bytes);
        MemorySegment out = scratch.out();
        try (Arena arena = Arena.ofConfined()) {
            check("pdx_mem_map_file(" + file + ")", native_.memMapFile(arena.allocateFrom(file.toString()), length,
                    out));
        }
        return register(label, out.get(ValueLayout.JAVA_LONG, 0), bytes, length, file);
    }

    private static long pages(long bytes) {
        return (bytes + PAGE - 1) / PAGE * PAGE;
    }

    /** Registers memory the helper mapped; if registration fails the memory is released at once. */
    private NixlRegion register(String label, long address, long bytes, long length, Path file) {
        Arena arena = Arena.ofShared();
        MemorySegment segment = MemorySegment.ofAddress(address).reinterpret(bytes, arena, null);
        MemorySegment out;
        try {
            out = scratch.out();
            check("pdx_region_register(" + label + ")", native_.regionRegister(agent, address, length, out));
        } catch (RuntimeException e) {
            retire(arena, address, length, file, label);
            throw e;
        }
        NixlRegion region = new NixlRegion(label, segment, arena, out.get(ValueLayout.ADDRESS, 0), length, file);
        handles.add(region);
        return region;
    }

    /**
     * Deregisters, then retires the memory: Java access ends with the arena, and the range stays
     * mapped inaccessible (see memory.c) so a peer's late READ fails rather than returning bytes.
     */
    void deregister(RegisteredRegion region) {
        NixlRegion r = handles.takeRegion(region);
        try {
            check("pdx_region_deregister(" + r.label() + ")", native_.regionDeregister(agent, r.handle()));
        } finally {
            retire(r.arena(), r.segment().address(), r.mappedLength(), r.file(), r.label());
        }
    }

    /**
     * A shared file is unlinked while this mapping still holds its lock, so the path can only be taken
     * over by a new owner's fresh file, never while it is still ours; then the range is retired.
     */
    private void retire(Arena arena, long address, long length, Path file, String label) {
        arena.close();
        try {
            if (file != null) {
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unlink shared region file " + file, e);
        } finally {
            check("pdx_mem_retire(" + label + ")", native_.memRetire(address, length));
        }
    }
}
