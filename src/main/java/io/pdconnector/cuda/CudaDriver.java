package io.pdconnector.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The CUDA driver as pd-connector uses it: every argument checked in Java before its downcall, every
 * error status turned into its typed {@link CudaException} (named as cuda.h names it). Out-parameters
 * live in a confined arena opened and closed around the one call, so no native memory outlives a call
 * here; what a call returns (a device pointer, a context, the 64 bytes of an IPC handle) is the
 * caller's to own. Thread-safe as the driver is; a context is current per thread ({@link #setCurrent}).
 */
public final class CudaDriver {

    /** {@code CUipcMemHandle}: 64 opaque bytes. */
    public static final int IPC_HANDLE_BYTES = 64;
    private static final int NAME_CAPACITY = 256;

    private final CudaBinding binding;

    CudaDriver(CudaBinding binding) {
        this.binding = Objects.requireNonNull(binding, "binding");
    }

    /**
     * The driver of this host (libcuda.so.1, loaded once), initialised. Throws {@link CudaUnavailableException}
     * with the sentence naming the library and {@code pd.kv.memory} where there is none.
     */
    public static CudaDriver load() {
        CudaDriver driver = new CudaDriver(CudaLoader.load());
        driver.init();
        return driver;
    }

    void init() {
        check("cuInit(0)", binding.cuInit(0));
    }

    /** CUDA_VERSION style: 12040 is 12.4. */
    public int driverVersion() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check("cuDriverGetVersion", binding.cuDriverGetVersion(out));
            return out.get(JAVA_INT, 0);
        }
    }

    public int deviceCount() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check("cuDeviceGetCount", binding.cuDeviceGetCount(out));
            int count = out.get(JAVA_INT, 0);
            if (count < 0) {
                throw new IllegalStateException("cuDeviceGetCount reported " + count + " devices");
            }
            return count;
        }
    }

    /** The CUdevice of ordinal {@code ordinal} (0 to {@link #deviceCount()} - 1, in this process's numbering). */
    public int device(int ordinal) {
        if (ordinal < 0) {
            throw new IllegalArgumentException("device ordinal must be >= 0, got " + ordinal);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check("cuDeviceGet(" + ordinal + ")", binding.cuDeviceGet(out, ordinal));
            return out.get(JAVA_INT, 0);
        }
    }

    public GpuUuid uuid(int device) {
        checkDevice(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(16);
            check("cuDeviceGetUuid_v2(device " + device + ")", binding.cuDeviceGetUuid(out, device));
            return new GpuUuid(out.toArray(JAVA_BYTE));
        }
    }

    public String name(int device) {
        checkDevice(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(NAME_CAPACITY);
            check("cuDeviceGetName(device " + device + ")", binding.cuDeviceGetName(out, NAME_CAPACITY, device));
            out.set(JAVA_BYTE, NAME_CAPACITY - 1, (byte) 0);
            return out.getString(0);
        }
    }

    /** Retains the device's primary context (the one the engine's CUDA runtime uses); returns its CUcontext. */
    public long retainPrimaryContext(int device) {
        checkDevice(device);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check("cuDevicePrimaryCtxRetain(device " + device + ")", binding.cuDevicePrimaryCtxRetain(out, device));
            long context = out.get(ADDRESS, 0).address();
            if (context == 0) {
                throw new IllegalStateException("cuDevicePrimaryCtxRetain(device " + device + ") returned no context");
            }
            return context;
        }
    }

    public void releasePrimaryContext(int device) {
        checkDevice(device);
        check("cuDevicePrimaryCtxRelease_v2(device " + device + ")", binding.cuDevicePrimaryCtxRelease(device));
    }

    /** Makes {@code context} current on the calling thread. */
    public void setCurrent(long context) {
        if (context == 0) {
            throw new IllegalArgumentException("null CUcontext");
        }
        check("cuCtxSetCurrent", binding.cuCtxSetCurrent(MemorySegment.ofAddress(context)));
    }

    /** Leaves the calling thread with no current context (before a primary context is released). */
    public void clearCurrent() {
        check("cuCtxSetCurrent(NULL)", binding.cuCtxSetCurrent(MemorySegment.NULL));
    }

    public void synchronize() {
        check("cuCtxSynchronize", binding.cuCtxSynchronize());
    }

    /** {@code bytes} of device memory in the current context; the returned pointer is the caller's to free. */
    public long alloc(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("cuMemAlloc_v2 needs a positive size, got " + bytes);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            check("cuMemAlloc_v2(" + bytes + " bytes)", binding.cuMemAlloc(out, bytes));
            long pointer = out.get(JAVA_LONG, 0);
            if (pointer == 0) {
                throw new IllegalStateException("cuMemAlloc_v2(" + bytes + " bytes) returned a null pointer");
            }
            return pointer;
        }
    }

    public void free(long pointer) {
        checkPointer("cuMemFree_v2", pointer);
        check("cuMemFree_v2(0x" + Long.toHexString(pointer) + ")", binding.cuMemFree(pointer));
    }

    /** Sets {@code count} bytes from {@code pointer} to {@code value} (0-255). */
    public void memset(long pointer, int value, long count) {
        checkPointer("cuMemsetD8_v2", pointer);
        if (value < 0 || value > 255) {
            throw new IllegalArgumentException("cuMemsetD8_v2 sets a byte, 0-255, got " + value);
        }
        if (count <= 0) {
            throw new IllegalArgumentException("cuMemsetD8_v2 needs a positive count, got " + count);
        }
        check("cuMemsetD8_v2(0x" + Long.toHexString(pointer) + ", " + count + " bytes)",
                binding.cuMemsetD8(pointer, (byte) value, count));
    }

    /** The legacy IPC handle of the allocation at {@code pointer}, copied out: 64 bytes another process opens. */
    public byte[] ipcHandle(long pointer) {
        checkPointer("cuIpcGetMemHandle", pointer);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(IPC_HANDLE_BYTES, 8);
            check("cuIpcGetMemHandle(0x" + Long.toHexString(pointer) + ")", binding.cuIpcGetMemHandle(out, pointer));
            return out.toArray(JAVA_BYTE);
        }
    }

    /** The CUDA name of {@code status}: the table's, else the driver's, else {@code CUresult <n>}. */
    String errorName(int status) {
        String known = CudaStatus.knownName(status);
        if (known != null) {
            return known;
        }
        String driver = binding.errorName(status);
        return driver != null ? driver : "CUresult " + status;
    }

    private void check(String call, int status) {
        if (status != CudaStatus.SUCCESS) {
            throw CudaException.of(call, status, errorName(status));
        }
    }

    private static void checkDevice(int device) {
        if (device < 0) {
            throw new IllegalArgumentException("CUdevice must be >= 0, got " + device);
        }
    }

    private static void checkPointer(String call, long pointer) {
        if (pointer == 0) {
            throw new IllegalArgumentException(call + ": null device pointer");
        }
    }
}
