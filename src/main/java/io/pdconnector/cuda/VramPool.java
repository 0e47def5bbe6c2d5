package io.pdconnector.cuda;

import io.pdconnector.transfer.DeviceMemory;
import io.pdconnector.transfer.DeviceRegion;
import java.util.HexFormat;
import java.util.Objects;

/**
 * pd-connector's KV staging pool on the engine's GPU (docs/gpu.md): the pool owns one
 * {@code cuMemAlloc_v2} allocation in the GPU's primary context and its one NIXL VRAM registration.
 * Its life is, in this order and nothing else: allocate (zeroed), register with NIXL as VRAM, export
 * the CUDA IPC handle (64 bytes, copied out: no native memory is kept for it); then, in {@link #close()},
 * deregister and free. A step that fails while it is created undoes the steps before it in reverse.
 *
 * <p>{@link #close()} is the one release path. If NIXL refuses the deregistration, the memory is not
 * freed (a peer could otherwise READ whatever the driver puts there next) and the pool stays held:
 * {@code close()} throws, and a later {@code close()} tries again from where it stopped. The GPU's
 * {@link CudaDevice} refuses to close while a pool on it is held. The engine's plugin must have closed
 * its IPC mapping before the pool is freed (docs/gpu.md, "Lifetimes").
 */
public final class VramPool implements AutoCloseable {

    private enum State { ALLOCATED, REGISTERED, DEREGISTERED, FREED }

    private final CudaDevice device;
    private final DeviceMemory nixl;
    private final String label;
    private final long bytes;
    private final long pointer;
    private DeviceRegion region;
    private byte[] ipcHandle;
    private State state = State.ALLOCATED;

    private VramPool(CudaDevice device, DeviceMemory nixl, String label, long bytes, long pointer) {
        this.device = device;
        this.nixl = nixl;
        this.label = label;
        this.bytes = bytes;
        this.pointer = pointer;
    }

    /**
     * Allocates {@code bytes} on {@code device}, zeroes them, registers them with {@code nixl} as VRAM and
     * exports their IPC handle. On the calling thread, which must be the one {@code nixl}'s agent belongs to.
     */
    public static VramPool create(CudaDevice device, DeviceMemory nixl, String label, long bytes) {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(nixl, "nixl");
        if (label == null || label.isBlank()) {
            throw new IllegalArgumentException("a VRAM pool needs a label");
        }
        if (bytes <= 0) {
            throw new IllegalArgumentException("VRAM pool " + label + " needs a positive size, got " + bytes);
        }
        CudaDriver driver = device.driver();
        device.makeCurrent();
        long pointer = driver.alloc(bytes);
        VramPool pool;
        try {
            device.poolOpened();
            pool = new VramPool(device, nixl, label, bytes, pointer);
        } catch (RuntimeException e) {
            driver.free(pointer);
            throw e;
        }
        try {
            driver.memset(pointer, 0, bytes);
            driver.synchronize();
            pool.region = nixl.registerVram(label, pointer, bytes, device.ordinal());
            pool.state = State.REGISTERED;
            pool.ipcHandle = driver.ipcHandle(pointer);
            return pool;
        } catch (RuntimeException e) {
            try {
                pool.close();
            } catch (RuntimeException undo) {
                e.addSuppressed(undo);
            }
            throw e;
        }
    }

    public String label() {
        return label;
    }

    /** The device pointer of the pool's first byte (in this process; the plugin's mapping has its own). */
    public long address() {
        return pointer;
    }

    public long bytes() {
        return bytes;
    }

    public GpuUuid gpu() {
        return device.uuid();
    }

    public int deviceOrdinal() {
        return device.ordinal();
    }

    /** The 64-byte {@code CUipcMemHandle} the plugin opens (a copy); only while the pool is registered. */
    public synchronized byte[] ipcHandle() {
        if (state != State.REGISTERED || ipcHandle == null) {
            throw new IllegalStateException("VRAM pool " + label + " is " + state.name().toLowerCase() + ": no handle to share");
        }
        return ipcHandle.clone();
    }

    /**
     * Zeroes {@code [offset, offset + length)} of the pool and waits for it (a reservation's blocks, so an
     * engine's request never carries another's KV); on the calling thread, in the pool's context.
     */
    public void zero(long offset, long length) {
        zero(new long[] {offset}, length);
    }

    /** As {@link #zero(long, long)} for {@code length} bytes at each offset: every range checked first, one wait. */
    public synchronized void zero(long[] offsets, long length) {
        if (state != State.REGISTERED) {
            throw new IllegalStateException("VRAM pool " + label + " is " + state.name().toLowerCase()
                    + ": nothing to zero");
        }
        for (long offset : offsets) {
            if (offset < 0 || length <= 0 || offset > bytes - length) {
                throw new IllegalArgumentException("VRAM pool " + label + " has " + bytes + " bytes: cannot zero "
                        + length + " from " + offset);
            }
        }
        device.makeCurrent();
        for (long offset : offsets) {
            device.driver().memset(pointer + offset, 0, length);
        }
        device.driver().synchronize();
    }

    public synchronized boolean isOpen() {
        return state != State.FREED;
    }

    /** Deregisters from NIXL, then frees; see the class comment for a refused deregistration. Idempotent. */
    @Override
    public synchronized void close() {
        if (state == State.FREED) {
            return;
        }
        device.makeCurrent();
        if (state == State.REGISTERED) {
            nixl.deregisterVram(region);
            region = null;
            ipcHandle = null;
            state = State.DEREGISTERED;
        }
        device.driver().free(pointer);
        state = State.FREED;
        device.poolClosed();
    }

    @Override
    public synchronized String toString() {
        return "VRAM pool " + label + " (" + bytes + " bytes on " + device.uuid() + ", " + state.name().toLowerCase()
                + (ipcHandle == null ? "" : ", IPC handle " + HexFormat.of().formatHex(ipcHandle, 0, 8) + "...") + ")";
    }
}
