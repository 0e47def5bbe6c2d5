package io.pdconnector.transfer;

import java.util.Arrays;
import java.util.Objects;

/**
 * One rank's pool as the engine's plugin needs it to open it (docs/gpu.md, {@code /v1/kv-layout}): the GPU
 * by UUID (the plugin refuses a pool on a GPU that is not its own), the size, the 64-byte CUDA IPC handle and
 * the pool's incarnation, new for every pool made, so the plugin re-opens a pool that was made again.
 */
public record PoolShare(int rank, String gpuUuid, long bytes, byte[] ipcHandle, long incarnation) {

    public static final int IPC_HANDLE_BYTES = 64;

    public PoolShare {
        Objects.requireNonNull(gpuUuid, "gpuUuid");
        if (rank < 0 || bytes <= 0) {
            throw new IllegalArgumentException("a pool share needs a rank >= 0 and a positive size, got rank " + rank
                    + ", " + bytes + " bytes");
        }
        if (ipcHandle == null || ipcHandle.length != IPC_HANDLE_BYTES) {
            throw new IllegalArgumentException("a CUDA IPC handle is " + IPC_HANDLE_BYTES + " bytes");
        }
        ipcHandle = ipcHandle.clone();
    }

    @Override
    public byte[] ipcHandle() {
        return ipcHandle.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PoolShare p && rank == p.rank && bytes == p.bytes && incarnation == p.incarnation
                && gpuUuid.equals(p.gpuUuid) && Arrays.equals(ipcHandle, p.ipcHandle);
    }

    @Override
    public int hashCode() {
        return Objects.hash(rank, gpuUuid, bytes, incarnation, Arrays.hashCode(ipcHandle));
    }

    @Override
    public String toString() {
        return "PoolShare[rank=" + rank + ", gpu=" + gpuUuid + ", bytes=" + bytes + ", incarnation=" + incarnation
                + "]";
    }
}
