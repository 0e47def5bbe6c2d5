package io.pdconnector.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * libcuda.so.1 through FFM: the driver API's versioned symbols ({@code _v2} where the driver exports the
 * 64-bit variants), each bound once when the library is loaded ({@link CudaLoader}). A missing symbol
 * fails the load with {@link CudaUnavailableException}, never a later call.
 */
final class LibCuda implements CudaBinding {

    static final String LIBRARY = "libcuda.so.1";

    private final MethodHandle init;
    private final MethodHandle driverGetVersion;
    private final MethodHandle deviceGetCount;
    private final MethodHandle deviceGet;
    private final MethodHandle deviceGetUuid;
    private final MethodHandle deviceGetName;
    private final MethodHandle primaryCtxRetain;
    private final MethodHandle primaryCtxRelease;
    private final MethodHandle ctxSetCurrent;
    private final MethodHandle ctxSynchronize;
    private final MethodHandle memAlloc;
    private final MethodHandle memFree;
    private final MethodHandle memsetD8;
    private final MethodHandle ipcGetMemHandle;
    private final MethodHandle getErrorName;

    LibCuda(SymbolLookup lookup) {
        init = bind(lookup, "cuInit", JAVA_INT);
        driverGetVersion = bind(lookup, "cuDriverGetVersion", ADDRESS);
        deviceGetCount = bind(lookup, "cuDeviceGetCount", ADDRESS);
        deviceGet = bind(lookup, "cuDeviceGet", ADDRESS, JAVA_INT);
        deviceGetUuid = bind(lookup, "cuDeviceGetUuid_v2", ADDRESS, JAVA_INT);
        deviceGetName = bind(lookup, "cuDeviceGetName", ADDRESS, JAVA_INT, JAVA_INT);
        primaryCtxRetain = bind(lookup, "cuDevicePrimaryCtxRetain", ADDRESS, JAVA_INT);
        primaryCtxRelease = bind(lookup, "cuDevicePrimaryCtxRelease_v2", JAVA_INT);
        ctxSetCurrent = bind(lookup, "cuCtxSetCurrent", ADDRESS);
        ctxSynchronize = bind(lookup, "cuCtxSynchronize");
        memAlloc = bind(lookup, "cuMemAlloc_v2", ADDRESS, JAVA_LONG);
        memFree = bind(lookup, "cuMemFree_v2", JAVA_LONG);
        memsetD8 = bind(lookup, "cuMemsetD8_v2", JAVA_LONG, JAVA_BYTE, JAVA_LONG);
        ipcGetMemHandle = bind(lookup, "cuIpcGetMemHandle", ADDRESS, JAVA_LONG);
        getErrorName = bind(lookup, "cuGetErrorName", JAVA_INT, ADDRESS);
    }

    private static MethodHandle bind(SymbolLookup lookup, String name, MemoryLayout... args) {
        MemorySegment symbol = lookup.find(name).orElseThrow(() -> new CudaUnavailableException(
                LIBRARY + " has no symbol " + name + " (a driver older than CUDA 11.4?); pd.kv.memory=vram needs it"));
        return Linker.nativeLinker().downcallHandle(symbol, FunctionDescriptor.of(JAVA_INT, args));
    }

    @Override
    public int cuInit(int flags) {
        try {
            return (int) init.invokeExact(flags);
        } catch (Throwable t) {
            throw linkageFailure("cuInit", t);
        }
    }

    @Override
    public int cuDriverGetVersion(MemorySegment versionOut) {
        try {
            return (int) driverGetVersion.invokeExact(versionOut);
        } catch (Throwable t) {
            throw linkageFailure("cuDriverGetVersion", t);
        }
    }

    @Override
    public int cuDeviceGetCount(MemorySegment countOut) {
        try {
            return (int) deviceGetCount.invokeExact(countOut);
        } catch (Throwable t) {
            throw linkageFailure("cuDeviceGetCount", t);
        }
    }

    @Override
    public int cuDeviceGet(MemorySegment deviceOut, int ordinal) {
        try {
            return (int) deviceGet.invokeExact(deviceOut, ordinal);
        } catch (Throwable t) {
            throw linkageFailure("cuDeviceGet", t);
        }
    }

    @Override
    public int cuDeviceGetUuid(MemorySegment uuidOut, int device) {
        try {
            return (int) deviceGetUuid.invokeExact(uuidOut, device);
        } catch (Throwable t) {
            throw linkageFailure("cuDeviceGetUuid_v2", t);
        }
    }

    @Override
    public int cuDeviceGetName(MemorySegment nameOut, int capacity, int device) {
        try {
            return (int) deviceGetName.invokeExact(nameOut, capacity, device);
        } catch (Throwable t) {
            throw linkageFailure("cuDeviceGetName", t);
        }
    }

    @Override
    public int cuDevicePrimaryCtxRetain(MemorySegment contextOut, int device) {
        try {
            return (int) primaryCtxRetain.invokeExact(contextOut, device);
        } catch (Throwable t) {
            throw linkageFailure("cuDevicePrimaryCtxRetain", t);
        }
    }

    @Override
    public int cuDevicePrimaryCtxRelease(int device) {
        try {
            return (int) primaryCtxRelease.invokeExact(device);
        } catch (Throwable t) {
            throw linkageFailure("cuDevicePrimaryCtxRelease_v2", t);
        }
    }

    @Override
    public int cuCtxSetCurrent(MemorySegment context) {
        try {
            return (int) ctxSetCurrent.invokeExact(context);
        } catch (Throwable t) {
            throw linkageFailure("cuCtxSetCurrent", t);
        }
    }

    @Override
    public int cuCtxSynchronize() {
        try {
            return (int) ctxSynchronize.invokeExact();
        } catch (Throwable t) {
            throw linkageFailure("cuCtxSynchronize", t);
        }
    }

    @Override
    public int cuMemAlloc(MemorySegment pointerOut, long bytes) {
        try {
            return (int) memAlloc.invokeExact(pointerOut, bytes);
        } catch (Throwable t) {
            throw linkageFailure("cuMemAlloc_v2", t);
        }
    }

    @Override
    public int cuMemFree(long pointer) {
        try {
            return (int) memFree.invokeExact(pointer);
        } catch (Throwable t) {
            throw linkageFailure("cuMemFree_v2", t);
        }
    }

    @Override
    public int cuMemsetD8(long pointer, byte value, long count) {
        try {
            return (int) memsetD8.invokeExact(pointer, value, count);
        } catch (Throwable t) {
            throw linkageFailure("cuMemsetD8_v2", t);
        }
    }

    @Override
    public int cuIpcGetMemHandle(MemorySegment handleOut, long pointer) {
        try {
            return (int) ipcGetMemHandle.invokeExact(handleOut, pointer);
        } catch (Throwable t) {
            throw linkageFailure("cuIpcGetMemHandle", t);
        }
    }

    @Override
    public String errorName(int status) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = (int) getErrorName.invokeExact(status, out);
            MemorySegment name = out.get(ADDRESS, 0);
            // The driver's own static string: read up to its NUL, never freed.
            return rc != 0 || name.equals(MemorySegment.NULL) ? null : name.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return null;
        }
    }

    private static IllegalStateException linkageFailure(String call, Throwable t) {
        return new IllegalStateException("downcall " + call + " failed in the JVM, not in the CUDA driver", t);
    }
}
