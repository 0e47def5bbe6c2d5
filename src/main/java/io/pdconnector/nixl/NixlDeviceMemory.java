package io.pdconnector.nixl;

import static io.pdconnector.nixl.NativeChecks.check;

import io.pdconnector.transfer.DeviceRegion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Objects;
import java.util.Set;

/**
 * One agent's VRAM registrations (docs/gpu.md). The memory is never the agent's: it registers what the
 * caller allocated on a GPU and hands it back on deregistration, after which the caller frees it.
 * Arguments are checked here before the downcall; a handle is accepted back only if this agent holds
 * it. Called only through {@link NixlAgent}, which has already checked the calling thread.
 */
final class NixlDeviceMemory {

    private final HelperBindings native_;
    private final MemorySegment agent;
    private final NativeScratch scratch;
    private final Set<NixlDeviceRegion> regions = Collections.newSetFromMap(new IdentityHashMap<>());

    NixlDeviceMemory(HelperBindings bindings, MemorySegment agent, NativeScratch scratch) {
        this.native_ = bindings;
        this.agent = agent;
        this.scratch = scratch;
    }

    DeviceRegion register(String label, long address, long bytes, int deviceOrdinal) {
        checkArguments(label, address, bytes, deviceOrdinal);
        MemorySegment out = scratch.out();
        check("pdx_region_register_vram(" + label + ")",
                native_.regionRegisterVram(agent, address, bytes, deviceOrdinal, out));
        NixlDeviceRegion region = new NixlDeviceRegion(label, address, bytes, deviceOrdinal,
                out.get(ValueLayout.ADDRESS, 0));
        regions.add(region);
        return region;
    }

    void deregister(DeviceRegion region) {
        Objects.requireNonNull(region, "region");
        if (!(region instanceof NixlDeviceRegion r) || !regions.remove(r)) {
            throw new IllegalArgumentException("this VRAM region is not held by this agent (released twice, or another agent's)");
        }
        check("pdx_region_deregister(" + r.label() + ")", native_.regionDeregister(agent, r.handle()));
    }

    int count() {
        return regions.size();
    }

    static void checkArguments(String label, long address, long bytes, int deviceOrdinal) {
        if (label == null || label.isBlank()) {
            throw new IllegalArgumentException("a VRAM region needs a label");
        }
        if (address == 0) {
            throw new IllegalArgumentException("VRAM region " + label + ": null device pointer");
        }
        if (bytes <= 0) {
            throw new IllegalArgumentException("VRAM region " + label + " needs a positive size, got " + bytes);
        }
        if (Long.compareUnsigned(address, -1L - bytes) > 0) {
            throw new IllegalArgumentException("VRAM region " + label + " wraps around the address space");
        }
        if (deviceOrdinal < 0) {
            throw new IllegalArgumentException("VRAM region " + label + ": device ordinal must be >= 0, got "
                    + deviceOrdinal);
        }
    }
}
