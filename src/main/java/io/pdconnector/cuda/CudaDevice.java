package io.pdconnector.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * One GPU, found by its UUID, with its primary context retained: the context the engine's CUDA runtime
 * uses on that GPU too, so what pd-connector allocates in it is ordinary {@code cuMemAlloc} memory the
 * plugin can open over CUDA IPC. The device owns the retain: {@link #close()} releases it once, and
 * refuses while a {@link VramPool} on it is still held (releasing the last retain destroys the context
 * and every allocation in it, which NIXL may still have registered).
 */
public final class CudaDevice implements AutoCloseable {

    private final CudaDriver driver;
    private final VisibleGpu gpu;
    private final long context;
    private int pools;
    private boolean closed;

    private CudaDevice(CudaDriver driver, VisibleGpu gpu, long context) {
        this.driver = driver;
        this.gpu = gpu;
        this.context = context;
    }

    /** Every GPU this process sees, in its ordinal order. */
    public static List<VisibleGpu> visible(CudaDriver driver) {
        int count = driver.deviceCount();
        List<VisibleGpu> gpus = new ArrayList<>(count);
        for (int ordinal = 0; ordinal < count; ordinal++) {
            int device = driver.device(ordinal);
            gpus.add(new VisibleGpu(ordinal, device, driver.uuid(device), driver.name(device)));
        }
        return List.copyOf(gpus);
    }

    /** Finds the selected GPU among the visible ones and retains its primary context. */
    public static CudaDevice open(CudaDriver driver, GpuSelector selector) {
        Objects.requireNonNull(selector, "selector");
        VisibleGpu gpu = selector.pick(visible(driver));
        return new CudaDevice(driver, gpu, driver.retainPrimaryContext(gpu.device()));
    }

    public GpuUuid uuid() {
        return gpu.uuid();
    }

    /** The CUDA ordinal in this process: NIXL's devId for the VRAM descriptors. */
    public int ordinal() {
        return gpu.ordinal();
    }

    public String name() {
        return gpu.name();
    }

    CudaDriver driver() {
        return driver;
    }

    /** Makes this GPU's primary context current on the calling thread (the driver's calls act on it). */
    synchronized void makeCurrent() {
        if (closed) {
            throw new IllegalStateException("GPU " + gpu.uuid() + " is closed");
        }
        driver.setCurrent(context);
    }

    synchronized void poolOpened() {
        if (closed) {
            throw new IllegalStateException("GPU " + gpu.uuid() + " is closed");
        }
        pools++;
    }

    synchronized void poolClosed() {
        pools--;
    }

    /** Pools on this GPU not yet closed (one whose release failed stays counted: its memory stays allocated). */
    public synchronized int openPools() {
        return pools;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (pools != 0) {
            throw new IllegalStateException("GPU " + gpu.uuid() + " still holds " + pools
                    + " VRAM pools; close them first (a pool whose deregistration failed keeps its memory, and so this "
                    + "context, for the life of the process)");
        }
        closed = true;
        driver.clearCurrent();
        driver.releasePrimaryContext(gpu.device());
    }

    @Override
    public String toString() {
        return gpu.toString();
    }
}
