package io.pdconnector.nixl;

import io.pdconnector.transfer.DeviceRegion;
import java.lang.foreign.MemorySegment;

/** A VRAM registration: where the memory is, and the helper's region handle that ends in {@link NixlDeviceMemory#deregister}. */
record NixlDeviceRegion(String label, long address, long length, int deviceOrdinal, MemorySegment handle)
        implements DeviceRegion {
}
