package io.pdconnector.transfer;

/**
 * GPU memory registered with one agent as VRAM ({@link DeviceMemory#registerVram}). The agent neither
 * allocated it nor frees it: its owner (pd-connector's {@code io.pdconnector.cuda.VramPool}) deregisters
 * it here and then frees it. Java cannot read device memory, so unlike {@link RegisteredRegion} there is
 * no segment: only where the memory is.
 */
public interface DeviceRegion {

    String label();

    /** The device pointer (a CUdeviceptr) of the first byte. */
    long address();

    long length();

    /** The CUDA device ordinal in this process, NIXL's {@code devId} for VRAM descriptors. */
    int deviceOrdinal();
}
