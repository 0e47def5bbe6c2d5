package io.pdconnector.transfer;

/**
 * A rank's KV region in GPU memory under {@code pd.kv.memory=vram} (docs/gpu.md): allocated on the rank's
 * GPU, registered with the rank's agent as VRAM, shared with the engine's plugin over CUDA IPC. Its owner is
 * the rank that opened it through {@link KvPools}; {@link #close()} is its one release path (deregister from
 * NIXL, then free, then give the GPU's context back) and is called on the rank's step loop, whose agent
 * registered it. Java cannot read device memory, so there is no segment.
 */
public interface DevicePool extends AutoCloseable {

    /** The device pointer of the first byte, in this process. */
    long address();

    long bytes();

    /** The CUDA ordinal of the pool's GPU in this process: NIXL's {@code devId}. */
    int deviceOrdinal();

    /** What the plugin opens: the rank, its GPU's UUID, the size, the IPC handle and the incarnation. */
    PoolShare share(int rank);

    /** Zeroes {@code [offset, offset + length)} and waits until it is done (a reservation's fresh blocks). */
    void zero(long offset, long length);

    /**
     * Zeroes {@code length} bytes at each of {@code offsets} and waits once, when all are done (a reservation's
     * blocks: one wait per reservation, not per block). Checks every range before zeroing any.
     */
    default void zero(long[] offsets, long length) {
        for (long offset : offsets) {
            zero(offset, length);
        }
    }

    /** Deregisters, frees, releases the GPU; a refused step keeps what follows held and is retried next time. */
    @Override
    void close();
}
