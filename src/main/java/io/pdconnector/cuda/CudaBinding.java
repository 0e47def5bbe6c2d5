package io.pdconnector.cuda;

import java.lang.foreign.MemorySegment;

/**
 * The CUDA driver calls pd-connector makes, one method per downcall, each returning the raw
 * {@code CUresult}. Nothing here checks an argument or reads a status: {@link CudaDriver} checks every
 * argument before it calls, and turns every non-zero status into its typed {@link CudaException}.
 * Out-parameters are segments the caller allocated (in a confined arena that lives for the one call).
 * {@link LibCuda} binds libcuda.so.1 through FFM; the unit tests put a fake in its place.
 */
interface CudaBinding {

    int cuInit(int flags);

    int cuDriverGetVersion(MemorySegment versionOut);

    int cuDeviceGetCount(MemorySegment countOut);

    int cuDeviceGet(MemorySegment deviceOut, int ordinal);

    /** {@code cuDeviceGetUuid_v2}: 16 bytes (a MIG instance's own UUID where MIG is on). */
    int cuDeviceGetUuid(MemorySegment uuidOut, int device);

    int cuDeviceGetName(MemorySegment nameOut, int capacity, int device);

    int cuDevicePrimaryCtxRetain(MemorySegment contextOut, int device);

    /** {@code cuDevicePrimaryCtxRelease_v2}. */
    int cuDevicePrimaryCtxRelease(int device);

    int cuCtxSetCurrent(MemorySegment context);

    int cuCtxSynchronize();

    /** {@code cuMemAlloc_v2}. */
    int cuMemAlloc(MemorySegment pointerOut, long bytes);

    /** {@code cuMemFree_v2}. */
    int cuMemFree(long pointer);

    /** {@code cuMemsetD8_v2}. */
    int cuMemsetD8(long pointer, byte value, long count);

    /** {@code cuIpcGetMemHandle}: 64 bytes ({@code CUipcMemHandle}) another process opens. */
    int cuIpcGetMemHandle(MemorySegment handleOut, long pointer);

    /** {@code cuGetErrorName}: the driver's own name of a status; null if it knows none. */
    String errorName(int status);
}
