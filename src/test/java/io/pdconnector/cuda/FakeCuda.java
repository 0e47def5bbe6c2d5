package io.pdconnector.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A CUDA driver in Java, in place of libcuda.so.1: GPUs with UUIDs and memory, primary-context retain
 * counts, allocations, and a log of every call in order. {@link #failNext} makes the next call of a name
 * return a chosen CUresult, so tests reach every error path and the status mapping.
 */
final class FakeCuda implements CudaBinding {

    record Gpu(GpuUuid uuid, String name, long memory) {
    }

    final List<Gpu> gpus = new ArrayList<>();
    final List<String> calls = new ArrayList<>();
    final Map<Integer, Integer> retains = new HashMap<>();
    final Map<Long, Long> allocations = new LinkedHashMap<>();
    private final Map<String, Integer> failures = new HashMap<>();
    private long nextPointer = 0x7f00_0000_0000L;
    long current;
    private final Map<Long, Long> allocationContext = new HashMap<>();
    /** The last cuMemsetD8's pointer and count. */
    long[] lastMemset;
    boolean initialised;

    static GpuUuid uuid(int n) {
        return GpuUuid.parse(String.format("GPU-%08x-0000-4000-8000-%012x", n, n));
    }

    FakeCuda withGpus(int n) {
        for (int i = 0; i < n; i++) {
            gpus.add(new Gpu(uuid(i + 1), "Fake H200 #" + i, 1L << 30));
        }
        return this;
    }

    void failNext(String call, int status) {
        failures.put(call, status);
    }

    private int enter(String call) {
        calls.add(call);
        Integer status = failures.remove(call);
        return status == null ? 0 : status;
    }

    long allocated() {
        return allocations.values().stream().mapToLong(Long::longValue).sum();
    }

    @Override
    public int cuInit(int flags) {
        int rc = enter("cuInit");
        initialised = rc == 0;
        return rc;
    }

    @Override
    public int cuDriverGetVersion(MemorySegment out) {
        int rc = enter("cuDriverGetVersion");
        out.set(JAVA_INT, 0, 12040);
        return rc;
    }

    @Override
    public int cuDeviceGetCount(MemorySegment out) {
        int rc = enter("cuDeviceGetCount");
        if (rc == 0) {
            out.set(JAVA_INT, 0, gpus.size());
        }
        return rc;
    }

    @Override
    public int cuDeviceGet(MemorySegment out, int ordinal) {
        int rc = enter("cuDeviceGet");
        if (rc != 0) {
            return rc;
        }
        if (ordinal >= gpus.size()) {
            return 101;
        }
        out.set(JAVA_INT, 0, 100 + ordinal); // CUdevice handles need not be ordinals
        return 0;
    }

    private Gpu gpu(int device) {
        int i = device - 100;
        return i >= 0 && i < gpus.size() ? gpus.get(i) : null;
    }

    @Override
    public int cuDeviceGetUuid(MemorySegment out, int device) {
        int rc = enter("cuDeviceGetUuid_v2");
        Gpu g = gpu(device);
        if (rc != 0 || g == null) {
            return rc != 0 ? rc : 101;
        }
        MemorySegment.copy(MemorySegment.ofArray(g.uuid().bytes()), 0, out, 0, 16);
        return 0;
    }

    @Override
    public int cuDeviceGetName(MemorySegment out, int capacity, int device) {
        int rc = enter("cuDeviceGetName");
        Gpu g = gpu(device);
        if (rc != 0 || g == null) {
            return rc != 0 ? rc : 101;
        }
        out.setString(0, g.name());
        return 0;
    }

    @Override
    public int cuDevicePrimaryCtxRetain(MemorySegment out, int device) {
        int rc = enter("cuDevicePrimaryCtxRetain");
        if (rc != 0 || gpu(device) == null) {
            return rc != 0 ? rc : 101;
        }
        retains.merge(device, 1, Integer::sum);
        out.set(ADDRESS, 0, MemorySegment.ofAddress(0xc0000L + device));
        return 0;
    }

    @Override
    public int cuDevicePrimaryCtxRelease(int device) {
        int rc = enter("cuDevicePrimaryCtxRelease_v2");
        if (rc == 0) {
            retains.merge(device, -1, Integer::sum);
            if (retains.get(device) == 0) {
                // the context goes, and every allocation made in it (and only those)
                long context = 0xc0000L + device;
                allocations.keySet().removeIf(p -> allocationContext.get(p) == context);
            }
        }
        return rc;
    }

    @Override
    public int cuCtxSetCurrent(MemorySegment context) {
        int rc = enter("cuCtxSetCurrent");
        if (rc == 0) {
            current = context.address();
        }
        return rc;
    }

    @Override
    public int cuCtxSynchronize() {
        return enter("cuCtxSynchronize");
    }

    @Override
    public int cuMemAlloc(MemorySegment out, long bytes) {
        int rc = enter("cuMemAlloc_v2");
        if (rc != 0) {
            return rc;
        }
        if (current == 0) {
            return 201;
        }
        if (allocated() + bytes > gpus.getFirst().memory()) {
            return 2;
        }
        long p = nextPointer;
        nextPointer += (bytes + 0xfffff) & ~0xfffffL;
        allocations.put(p, bytes);
        allocationContext.put(p, current);
        out.set(JAVA_LONG, 0, p);
        return 0;
    }

    @Override
    public int cuMemFree(long pointer) {
        int rc = enter("cuMemFree_v2");
        if (rc != 0) {
            return rc;
        }
        return allocations.remove(pointer) == null ? 1 : 0;
    }

    @Override
    public int cuMemsetD8(long pointer, byte value, long count) {
        int rc = enter("cuMemsetD8_v2");
        if (rc != 0) {
            return rc;
        }
        lastMemset = new long[] {pointer, count};
        // within one allocation, as the driver requires
        return allocations.entrySet().stream().anyMatch(a -> pointer >= a.getKey()
                && pointer + count <= a.getKey() + a.getValue()) ? 0 : 1;
    }

    @Override
    public int cuIpcGetMemHandle(MemorySegment out, long pointer) {
        int rc = enter("cuIpcGetMemHandle");
        if (rc != 0) {
            return rc;
        }
        if (!allocations.containsKey(pointer)) {
            return 1;
        }
        for (int i = 0; i < 64; i++) {
            out.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (pointer >>> (i % 8 * 8)));
        }
        return 0;
    }

    @Override
    public String errorName(int status) {
        return status == 12345 ? "CUDA_ERROR_FROM_A_NEWER_DRIVER" : null;
    }
}
