package io.pdconnector.cuda;

import io.pdconnector.transfer.DevicePool;
import io.pdconnector.transfer.PoolShare;

/**
 * One rank's KV pool with the GPU context it lives in: the one owner of both. {@link #close()} closes the
 * pool (deregister from NIXL, then free) and only then gives the context back; if the pool refuses
 * (NIXL kept the registration), the context stays retained too, and a later {@code close()} retries both.
 */
final class RankPool implements DevicePool {

    private final CudaDevice device;
    private final VramPool pool;
    private final long incarnation;

    RankPool(CudaDevice device, VramPool pool, long incarnation) {
        this.device = device;
        this.pool = pool;
        this.incarnation = incarnation;
    }

    @Override
    public long address() {
        return pool.address();
    }

    @Override
    public long bytes() {
        return pool.bytes();
    }

    @Override
    public int deviceOrdinal() {
        return pool.deviceOrdinal();
    }

    @Override
    public PoolShare share(int rank) {
        return new PoolShare(rank, pool.gpu().toString(), pool.bytes(), pool.ipcHandle(), incarnation);
    }

    @Override
    public void zero(long offset, long length) {
        pool.zero(offset, length);
    }

    @Override
    public void zero(long[] offsets, long length) {
        pool.zero(offsets, length);
    }

    @Override
    public void close() {
        pool.close();
        device.close();
    }

    @Override
    public String toString() {
        return pool + ", incarnation " + incarnation;
    }
}
